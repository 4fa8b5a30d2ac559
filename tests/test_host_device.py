"""The metric definitions as device code (csrc/metrics/host_device.h, TP_HOST_DEVICE).

1. tests/cuda/device_metrics_check.cu compiles with ``nvcc -c``: a __global__ kernel per engine
   kernel of csrc/metrics/kernel_list.h evaluates the definition's value and gradient on
   float and double through the scalar path (no ATen: only c10/macros from torch's include
   directory). A host-only call in a definition (an undeclared-for-device function, std::vector,
   TORCH_CHECK, ATen) fails the compile. Skipped, with the reason, where no nvcc is found:
   $TORCHPAIR_NVCC, $CUDA_HOME/bin/nvcc, nvcc on PATH, or the PyPI wheel nvidia-cuda-nvcc in
   this environment (``pip install nvidia-cuda-nvcc``).
2. The same file compiled by the host C++ compiler with the scalar vocabulary only: the scalar
   path the device runs, evaluated on the CPU (the CPU engines evaluate the definitions on
   Vectorized<T>, never on plain T), against scipy's values and autograd through dense torch
   formulas.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.spatial import distance as ssd

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "cuda" / "device_metrics_check.cu"
TORCH_INCLUDE = Path(torch.__file__).parent / "include"


def find_nvcc() -> str | None:
    for cand in (os.environ.get("TORCHPAIR_NVCC"),
                 *(os.path.join(h, "bin", "nvcc") for h in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"))
                   if h),
                 shutil.which("nvcc")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    spec = importlib.util.find_spec("nvidia")  # the nvidia-cuda-nvcc wheel: nvidia/cu13/bin/nvcc
    for base in (spec.submodule_search_locations or []) if spec else []:
        for cand in sorted(glob.glob(os.path.join(base, "cu*", "bin", "nvcc"))) + [
                os.path.join(base, "cuda_nvcc", "bin", "nvcc")]:
            if os.path.isfile(cand) and os.access(cand, os.X_OK):
                return cand
    return None


def nvcc_compile_command(nvcc: str, out: Path) -> list[str]:
    return [nvcc, "-std=c++17", "-c", "-I", str(ROOT / "csrc"), "-I", str(TORCH_INCLUDE),
            "--Werror", "cross-execution-space-call", "-o", str(out), str(SOURCE)]


def test_metric_definitions_compile_for_the_device(tmp_path):
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("no nvcc (set TORCHPAIR_NVCC or CUDA_HOME, put nvcc on PATH, or "
                    "pip install nvidia-cuda-nvcc): the device compile of the metric definitions is not checked")
    r = subprocess.run(nvcc_compile_command(nvcc, tmp_path / "device_metrics_check.o"), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, f"nvcc failed:\n{r.stdout}\n{r.stderr}"
    # the warnings nvcc gives for host/device mismatches it does not treat as errors
    assert "warning" not in r.stderr.lower(), r.stderr


def test_device_compile_rejects_a_host_only_call(tmp_path):
    """The check can fail: a TP_HOST_DEVICE definition calling a host function does not compile."""
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("no nvcc (see test_metric_definitions_compile_for_the_device)")
    bad = tmp_path / "bad.cu"
    bad.write_text(
        '#include "metrics/elementwise.h"\n'
        "double host_only(double);\n"
        "struct Bad { template <class V> TP_HOST_DEVICE static V finalize(const V* acc) "
        "{ return V(host_only(acc[0])); } };\n"
        "__global__ void k(float* o) { o[0] = Bad::finalize(o); }\n")
    cmd = nvcc_compile_command(nvcc, tmp_path / "bad.o")
    cmd[-1] = str(bad)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode != 0 and "host_only" in r.stderr, r.stderr


# ---- the scalar path on the host ------------------------------------------------------------
@pytest.fixture(scope="module")
def scalar_check(tmp_path_factory) -> Path:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path_factory.mktemp("scalar") / "device_metrics_check"
    r = subprocess.run([cxx, "-std=c++17", "-O1", "-x", "c++", "-DTP_SCALAR_MATH_ONLY", "-DTP_DEVICE_CHECK_MAIN",
                        "-I", str(ROOT / "csrc"), "-I", str(TORCH_INCLUDE), str(SOURCE), "-o", str(exe)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"host compile failed:\n{r.stdout}\n{r.stderr}"
    return exe


def run_scalar(exe: Path, kernel: str, dtype: str, d: int, scalars, rows: np.ndarray) -> np.ndarray:
    text = "\n".join(" ".join(repr(float(v)) for v in row) for row in rows) + "\n"
    r = subprocess.run([str(exe), kernel, dtype, str(d), *(repr(float(s)) for s in scalars)], input=text,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return np.array([[float(v) for v in line.split()] for line in r.stdout.splitlines()])


def _torch_dist(x, y):
    return ((x - y) ** 2).sum(-1).sqrt()


# (kernel id, scalars, scipy/sklearn oracle of the value on paired rows, dense torch formula)
ELEMENTWISE = [
    ("euclidean_direct", [], lambda x, y: ssd.cdist(x, y, "euclidean"), _torch_dist),
    ("sqeuclidean_direct", [], lambda x, y: ssd.cdist(x, y, "sqeuclidean"), lambda x, y: ((x - y) ** 2).sum(-1)),
    ("cityblock_direct", [], lambda x, y: ssd.cdist(x, y, "cityblock"), lambda x, y: (x - y).abs().sum(-1)),
    ("minkowski_direct", [3.0], lambda x, y: ssd.cdist(x, y, "minkowski", p=3.0),
     lambda x, y: ((x - y).abs() ** 3).sum(-1) ** (1 / 3)),
    ("canberra_direct", [], lambda x, y: ssd.cdist(x, y, "canberra"),
     lambda x, y: ((x - y).abs() / (x.abs() + y.abs())).sum(-1)),
    ("braycurtis_direct", [], lambda x, y: ssd.cdist(x, y, "braycurtis"),
     lambda x, y: (x - y).abs().sum(-1) / (x + y).abs().sum(-1)),
    ("rbf_direct", [0.3], lambda x, y: np.exp(-0.3 * ssd.cdist(x, y, "sqeuclidean")),
     lambda x, y: torch.exp(-0.3 * ((x - y) ** 2).sum(-1))),
    ("exp_sine_squared_direct", [2 / 0.8 ** 2, np.pi / 1.7],
     lambda x, y: __import__("sklearn.gaussian_process.kernels", fromlist=["x"]).ExpSineSquared(0.8, 1.7)(x, y),
     lambda x, y: torch.exp(-2 * torch.sin(np.pi * _torch_dist(x, y) / 1.7) ** 2 / 0.8 ** 2)),
]


@pytest.mark.parametrize("dtype", ["double", "float"])
@pytest.mark.parametrize("kernel,scalars,oracle,formula", ELEMENTWISE, ids=[c[0] for c in ELEMENTWISE])
def test_scalar_path_against_scipy(scalar_check, kernel, scalars, oracle, formula, dtype):
    g = torch.Generator().manual_seed(21)
    d = 4
    x = torch.randn(12, d, dtype=torch.float64, generator=g)
    y = torch.randn(12, d, dtype=torch.float64, generator=g)
    if dtype == "float":  # the inputs the float path sees
        x, y = x.float().double(), y.float().double()
    out = run_scalar(scalar_check, kernel, dtype, d, scalars, torch.cat([x, y], 1).numpy())
    want = np.diag(oracle(x.numpy(), y.numpy()))
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "double" else dict(rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(out[:, 0], want, **tol)
    xr, yr = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    gx, gy = torch.autograd.grad(formula(xr, yr).sum(), (xr, yr))
    gtol = dict(rtol=1e-10, atol=1e-12) if dtype == "double" else dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[:, 1:1 + d], gx.numpy(), **gtol)
    np.testing.assert_allclose(out[:, 1 + d:], gy.numpy(), **gtol)


def test_scalar_path_distance_zero_and_inner_product(scalar_check):
    x = np.array([[0.5, -1.0, 2.0]])
    out = run_scalar(scalar_check, "euclidean_direct", "double", 3, [], np.concatenate([x, x], 1))
    assert out[0, 0] == 0 and np.all(out[0, 1:] == 0)  # the convention: gradient 0 at distance 0
    out = run_scalar(scalar_check, "exp_sine_squared_direct", "double", 3, [2.0, np.pi], np.concatenate([x, x], 1))
    assert out[0, 0] == 1 and np.all(out[0, 1:] == 0)
    # euclidean_gemm at (g, a, b) = (x.y, |x|^2, |y|^2): h = |x - y|, dh/dd2 = 1 / (2 |x - y|)
    g = torch.Generator().manual_seed(22)
    x, y = torch.randn(6, 5, dtype=torch.float64, generator=g), torch.randn(6, 5, dtype=torch.float64, generator=g)
    rows = torch.stack([(x * y).sum(-1), (x * x).sum(-1), (y * y).sum(-1)], 1).numpy()
    out = run_scalar(scalar_check, "euclidean_gemm", "double", 0, [], rows)
    dist = np.diag(ssd.cdist(x.numpy(), y.numpy()))
    np.testing.assert_allclose(out[:, 0], dist, rtol=1e-12)
    np.testing.assert_allclose(out[:, 1], 0.5 / dist, rtol=1e-12)
    # cosine_gemm (side features: inverse norms): 1 - g a b, its partials, self value 0
    rows = torch.stack([(x * y).sum(-1), 1 / x.norm(dim=-1), 1 / y.norm(dim=-1)], 1).numpy()
    out = run_scalar(scalar_check, "cosine_gemm", "double", 0, [], rows)
    np.testing.assert_allclose(out[:, 0], np.diag(ssd.cdist(x.numpy(), y.numpy(), "cosine")), rtol=1e-12)
    np.testing.assert_allclose(out[:, 1], -rows[:, 1] * rows[:, 2], rtol=1e-12)
    assert np.all(out[:, 4] == 0)
