"""torchpair: pairwise comparisons for PyTorch.

    import torchpair as tp
    D = tp.pairwise(X, Y, "euclidean")            # dense [..., N, M]
    K = tp.lazy(X, Y, "rbf", gamma=0.2)           # never materialized
    out = K @ V                                   # streamed [..., N, C], differentiable

Every numerical operation is a native PyTorch dispatcher operator (``torch.ops.torchpair``),
so the same call works in eager mode, under ``torch.compile(fullgraph=True)``, in
``torch.export`` / AOTInductor programs and from LibTorch C++ (``tp::pairwise_expression``).
"""
from __future__ import annotations

from pathlib import Path as _Path

import torch as _torch

from . import _native

_native.load(__path__)

from . import _meta  # noqa: E402,F401  (fake kernels for compile/export)
from ._catalog import metric_info, metrics  # noqa: E402
from .functional import cdist, pairwise  # noqa: E402
from .functional import pdist  # noqa: E402
from .lazy import DensePairwise, LazyPairwise, lazy, pairwise_expression  # noqa: E402
from . import _keops  # noqa: E402,F401  (registers the "keops" backend; pykeops is imported on use)
from .sets import chamfer, energy_distance, hausdorff, knn, mmd  # noqa: E402
from . import sequences as seq  # noqa: E402  (token sequences: edit distances)
from .sequences import encode  # noqa: E402
from . import _meta_transport  # noqa: E402,F401  (fake kernels of the transport operators)
from .transport import emd, emd2, wasserstein  # noqa: E402
from .entropic import sinkhorn, sinkhorn2, sinkhorn_unbalanced, sinkhorn_unbalanced2  # noqa: E402
from .divergence import sinkhorn_divergence  # noqa: E402
from .backends import backend, get_backend  # noqa: E402

from . import distributed  # noqa: E402  (tp.distributed: sharded reductions over torch.distributed)
from . import nn  # noqa: E402  (tp.nn: loss modules)

__version__ = "0.1.0"


def _package_dir_with(relative: str) -> str:
    for p in __path__:
        if (_Path(p) / relative).exists():
            return str(_Path(p))
    raise FileNotFoundError(f"torchpair: {relative} not found in {list(__path__)}")


#: The directory to put on CMAKE_PREFIX_PATH for ``find_package(torchpair CONFIG)``.
cmake_prefix_path: str = _package_dir_with("lib/cmake/torchpair")
#: Where the public C++ headers live (``#include <torchpair/torchpair.h>``).
include_dir: str = str(_Path(_package_dir_with("include/torchpair/torchpair.h")) / "include")
#: The loaded native library.
library_path: str = _native.library_path()

__all__ = [
    "backend",
    "get_backend",
    "DensePairwise",
    "LazyPairwise",
    "cdist",
    "chamfer",
    "energy_distance",
    "hausdorff",
    "knn",
    "mmd",
    "cmake_prefix_path",
    "include_dir",
    "lazy",
    "library_path",
    "metric_info",
    "metrics",
    "pairwise",
    "pairwise_expression",
    "seq",
    "encode",
    "pdist",
    "emd",
    "emd2",
    "wasserstein",
    "sinkhorn",
    "sinkhorn2",
    "sinkhorn_unbalanced",
    "sinkhorn_unbalanced2",
    "sinkhorn_divergence",
]
