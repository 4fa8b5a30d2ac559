import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

import torchpair  # noqa: E402,F401  (loads the native library once for every test)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield


@pytest.fixture
def force_generic(monkeypatch):
    """Run the device-generic engines (ATen on tiles) on CPU tensors."""
    monkeypatch.setenv("TORCHPAIR_FORCE_GENERIC", "1")
    yield


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running checks in subprocesses")


# KeOps (tp.backend("keops") tests) compiles each formula once and caches it here, so reruns
# are fast; set before pykeops is first imported.
os.environ.setdefault("KEOPS_CACHE_FOLDER", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                         "build", "keops"))

# Inductor's on-disk caches (FX graph, AOT autograd) do not key on a custom operator's schema:
# a graph compiled against an earlier build of libtorchpair would be replayed with the old
# argument list. One cache folder per native library build (size and mtime) keeps reruns fast
# and never mixes builds.
_lib = os.stat(torchpair._native.library_path())
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "inductor",
    f"{_lib.st_size}-{int(_lib.st_mtime)}"))
