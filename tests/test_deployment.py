"""Deployment: the seed's Query exported with torch.export, compiled with AOTInductor
(torch._inductor.aoti_compile_and_package) once per session, and run
  - from Python (torch._inductor.aoti_load_package),
  - from a C++ program (torch::inductor::AOTIModelPackageLoader, tests/cpp/aoti_run.cpp) that
    loads libtorchpair.so (dlopen, or linked: aoti_run_linked), with dynamic N and M,
  - from the same C++ program WITHOUT the native library: a clear error naming the missing
    operator, never a crash or a wrong answer.
(torch.export.save -> torch.export.load in a fresh process: test_compile_export.py.)
"""
from __future__ import annotations

import re
import sys

import pytest
import torch

import torchpair as tp

from _cppbuild import BUILD, build, run


class Query(torch.nn.Module):
    def forward(self, X, Y, V):
        K = tp.lazy(X, Y, metric="rbf", gamma=0.2)
        return K.matmul(V)  # X:[N,D], Y:[M,D], V:[M,C] -> [N,C]


def reference(X, Y, V):
    """Independent oracle: the dense formula."""
    return torch.exp(-0.2 * ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)) @ V


def data(n, m, d=5, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g), torch.randn(m, d, generator=g), torch.randn(m, c, generator=g)


@pytest.fixture(scope="module")
def package():
    """The AOTInductor package (compiled once: Inductor's C++ compile is slow) and a data file for the C++
    runner with shapes other than the example's (N and M are dynamic)."""
    BUILD.mkdir(parents=True, exist_ok=True)
    X, Y, V = data(16, 12)
    N, M = torch.export.Dim("N", min=2), torch.export.Dim("M", min=2)
    ep = torch.export.export(Query(), (X, Y, V), dynamic_shapes=({0: N}, {0: M}, {0: M}))
    path = BUILD / "query.pt2"
    if path.exists():
        path.unlink()
    torch._inductor.aoti_compile_and_package(ep, package_path=str(path))
    X2, Y2, V2 = data(23, 31, seed=1)
    data_path = BUILD / "query_data.pt"
    torch.save({"in0": X2, "in1": Y2, "in2": V2, "expected": reference(X2, Y2, V2)}, data_path)
    return path, data_path


def test_aoti_package_runs_in_python(package):
    path, _ = package
    runner = torch._inductor.aoti_load_package(str(path))
    for n, m in [(16, 12), (5, 40)]:
        X, Y, V = data(n, m, seed=n)
        torch.testing.assert_close(runner(X, Y, V), reference(X, Y, V), rtol=1e-5, atol=1e-5)


def test_aoti_package_runs_from_cpp_with_the_native_library(package):
    path, data_path = package
    exe = build() / "aoti_run"
    r = run([exe, path, data_path, tp.library_path], timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("OK shape [23, 3]"), r.stdout + r.stderr


def test_aoti_package_runs_from_cpp_linked_with_torchpair(package):
    path, data_path = package
    r = run([build() / "aoti_run_linked", path, data_path], timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("OK shape [23, 3]"), r.stdout + r.stderr
    assert "linked with torchpair" in r.stderr


def test_aoti_package_without_the_native_library_fails_clearly(package):
    path, data_path = package
    exe = build() / "aoti_run"
    r = run([exe, path, data_path], timeout=300)
    # an orderly failure (exit 1, not a signal) whose message names the missing torchpair operator
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert re.search(r"the package failed to run: Could not find schema for torchpair::\w+", r.stderr), r.stderr
    assert "OK" not in r.stdout


def test_aoti_package_in_a_fresh_python_process_needs_torchpair(package):
    """Without `import torchpair` the package fails to load naming the operator; with it, it runs."""
    path, data_path = package
    script = (
        "import sys, torch\n"
        "if sys.argv[1] == 'with': import torchpair\n"
        f"d = torch.load({str(data_path)!r})\n"
        "try:\n"
        f"    runner = torch._inductor.aoti_load_package({str(path)!r})\n"
        "except RuntimeError as e:\n"
        "    print('FAILED:', e); sys.exit(3)\n"
        "torch.testing.assert_close(runner(d['in0'], d['in1'], d['in2']), d['expected'], rtol=1e-5, atol=1e-5)\n"
        "print('OK')\n"
    )
    without = run([sys.executable, "-c", script, "without"], timeout=300)
    assert without.returncode == 3 and "Could not find schema for torchpair::" in without.stdout, (
        without.stdout + without.stderr)
    with_ = run([sys.executable, "-c", script, "with"], timeout=300)
    assert with_.returncode == 0 and "OK" in with_.stdout, with_.stdout + with_.stderr
