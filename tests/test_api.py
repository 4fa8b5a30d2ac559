"""The package surface: catalog, version check, C++ package location, expression objects."""
import os
import subprocess
import sys

import pytest
import torch

import torchpair as tp
from torchpair import _native


def test_catalog():
    names = tp.metrics()
    assert {"euclidean", "sqeuclidean", "rbf"} <= set(names)
    info = tp.metric_info("rbf")
    assert info["kind"] == "similarity" and info["differentiable"]
    assert [p["name"] for p in info["params"]] == ["gamma"]
    assert info["params"][0]["default"] == "1 / n_features"
    assert tp.metric_info("l2")["name"] == "euclidean"
    info["name"] = "changed"
    assert tp.metric_info("rbf")["name"] == "rbf"


def test_version_mismatch_message_names_both_versions():
    with pytest.raises(ImportError, match=r"built against torch 2\.13\.0, but torch 2\.99\.1 is installed"):
        _native.check_torch_version("2.13.0", "2.99.1")
    _native.check_torch_version("2.13.0", "2.13.0+cpu")


def test_import_under_another_torch_fails_clearly():
    script = (
        "import torch; torch.__version__ = '2.14.0'\n"
        "try:\n    import torchpair\nexcept ImportError as e:\n    print(e)\n"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "built against torch 2.13.0, but torch 2.14.0 is installed" in r.stdout, r.stdout + r.stderr


def test_cmake_package_is_installed():
    assert os.path.isfile(os.path.join(tp.cmake_prefix_path, "lib", "cmake", "torchpair", "torchpairConfig.cmake"))
    assert os.path.isfile(os.path.join(tp.include_dir, "torchpair", "torchpair.h"))
    assert os.path.isfile(tp.library_path)


def test_library_links_no_python():
    out = subprocess.run(["ldd", tp.library_path], capture_output=True, text=True).stdout
    assert "libpython" not in out and "torch_python" not in out


def test_lazy_metadata():
    K = tp.lazy(torch.randn(2, 5, 3, dtype=torch.float64), torch.randn(7, 3, dtype=torch.float64), "rbf", gamma=0.5)
    assert K.shape == (2, 5, 7) and K.ndim == 3 and K.dtype == torch.float64 and K.device.type == "cpu"
    assert K.T.shape == (2, 7, 5) and K.size(-1) == 7
    assert "rbf" in repr(K) and "gamma=0.5" in repr(K)


def test_array_parameters_are_created_on_the_operands_device():
    # A numpy array or list given for a tensor parameter becomes a tensor on X's device
    # (not the CPU): checked with meta tensors here, the same code path as CUDA.
    import numpy as np
    x, y = torch.randn(5, 4, device="meta"), torch.randn(6, 4, device="meta")
    for metric, params in (("minkowski", {"p": 3.0, "w": np.ones(4)}), ("seuclidean", {"V": [1.0, 2.0, 3.0, 4.0]}),
                           ("matern", {"length_scale": np.ones(4)})):
        out = tp.pairwise(x, y, metric, **params)
        assert out.device.type == "meta" and out.shape == (5, 6)
        assert tp.lazy(x, y, metric, **params).shape == (5, 6)
    # a tensor the user passes stays where it is: a CPU tensor against meta operands is refused
    with pytest.raises(ValueError, match="'w'"):
        tp.pairwise(x, y, "minkowski", p=3.0, w=torch.ones(4))
