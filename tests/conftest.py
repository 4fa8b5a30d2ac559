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
