"""Builds tests/cpp/ (and examples/cpp/) against the INSTALLED torchpair CMake package, once
per test session, incrementally: CMake + Ninja from the environment, only
``torchpair.cmake_prefix_path`` on CMAKE_PREFIX_PATH (nothing from the build tree), into
build/cpp_tests. Used by test_cpp.py and test_deployment.py."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import torchpair as tp

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "cpp_tests"
_built = False


def run(cmd, timeout=900, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)


def tool(name: str) -> str:
    """CMake and Ninja from the environment's bin directory (requirements-dev.txt), else PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is required to build the C++ tests (pip install {name})")
    return found


def build() -> Path:
    """Configures (first time) and builds tests/cpp; returns the build directory."""
    global _built
    if _built:
        return BUILD
    BUILD.mkdir(parents=True, exist_ok=True)
    cache = BUILD / "CMakeCache.txt"
    if not cache.exists() or tp.cmake_prefix_path not in cache.read_text():
        r = run([tool("cmake"), "-S", ROOT / "tests" / "cpp", "-B", BUILD, "-G", "Ninja",
                 f"-DCMAKE_MAKE_PROGRAM={tool('ninja')}", f"-DCMAKE_PREFIX_PATH={tp.cmake_prefix_path}",
                 "-DCMAKE_BUILD_TYPE=Release", f"-DTORCHPAIR_TEST_REFS={BUILD / 'refs.pt'}"])
        assert r.returncode == 0, f"cmake configure failed:\n{r.stdout}\n{r.stderr}"
    # From scratch this compiles several LibTorch translation units, which on a small, loaded
    # CI machine takes longer than the default 15 minutes.
    r = run([tool("cmake"), "--build", BUILD, "--", f"-j{min(4, os.cpu_count() or 1)}"], timeout=2400)
    assert r.returncode == 0, f"cmake build failed:\n{r.stdout}\n{r.stderr}"
    _built = True
    return BUILD
