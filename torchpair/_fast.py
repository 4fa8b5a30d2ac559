"""Typed entry points (torchpair._C) for plain eager calls.

``torch.ops.torchpair.pairwise(...)`` is a boxed call: each schema argument (the operands,
the metric and the fifteen optional metric parameters) is parsed into an IValue and unboxed
again for the kernel, about half of a small call's cost (docs/performance.md, "Fixed cost of
a call"). ``_C.pairwise`` calls the same dispatcher operator unboxed, so every dispatch key
still applies (autograd, autocast, fake and Python dispatch modes, functorch transforms).
What it does not see is ``__torch_function__`` (tensor subclasses other than ``nn.Parameter``,
torch-function modes) and tracing by torch.compile / torch.export: those calls keep to
``torch.ops``.
"""
from __future__ import annotations

import torch

from . import _C  # needs libtorchpair.so, which torchpair/__init__ loads first

# nn.Parameter's __torch_function__ is torch's disabled one: its calls are plain calls.
_PLAIN = (torch.Tensor, torch.nn.Parameter)
_mode_enabled = torch._C._is_torch_function_mode_enabled


def plain(X, Y) -> bool:
    """Whether a call with operands X, Y (Y may be None) can take the typed entry point:
    eager, no torch-function mode, dense operands of a plain type."""
    return (not torch.compiler.is_compiling() and type(X) in _PLAIN and not X.is_nested
            and (Y is None or (type(Y) in _PLAIN and not Y.is_nested)) and not _mode_enabled())


pairwise = _C.pairwise
