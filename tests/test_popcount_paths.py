"""The Boolean popcount engine's ISA paths: every path this machine can
run (scalar, AVX2 nibble-LUT, AVX512-VPOPCNTDQ; TORCHPAIR_POPCOUNT picks one) against scipy
on random bits with D not a multiple of 64, register-block and panel tails (rows not a
multiple of the row block, columns not a multiple of 16), word counts across the AVX2 byte
counters' 31-word flush; and every path equal to the scalar path bit for bit."""
import json

import numpy as np
import pytest
import torch
from scipy.spatial import distance as ssd

import torchpair as tp
from cases import BOOLEAN_ORACLES  # scipy on the bits, with the documented 0/0 values

PATHS = json.loads(torch.ops.torchpair._build_info())["popcount_paths"]
METRICS = ["jaccard", "dice", "hamming", "yule", "russellrao", "rogerstanimoto", "tanimoto", "kulczynski1"]
DIMS = [1, 63, 65, 130, 1000, 1985, 4100]  # words 1, 1, 2, 3, 16, 32 (> 31), 65 (> 62)


def bits(shape, density, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g) < density


def use_path(monkeypatch, path):
    monkeypatch.setenv("TORCHPAIR_POPCOUNT", path)
    assert json.loads(torch.ops.torchpair._build_info())["popcount"] == path


def test_paths_listed():
    assert PATHS[0] == "scalar" and set(PATHS) <= {"scalar", "avx2", "avx512"}
    flags = open("/proc/cpuinfo").read() if __import__("os").path.exists("/proc/cpuinfo") else ""
    if " avx512_vpopcntdq" in flags and torch.backends.cpu.get_cpu_capability() == "AVX512":
        assert PATHS[-1] == "avx512"


@pytest.mark.parametrize("path", PATHS)
def test_path_matches_scipy_and_scalar(path, monkeypatch):
    for i, d in enumerate(DIMS):
        x, y = bits((13, d), 0.3 + 0.05 * i, seed=i), bits((37, d), 0.5, seed=50 + i)
        xn, yn = x.numpy(), y.numpy()
        for metric in METRICS:
            use_path(monkeypatch, path)
            got64 = tp.cdist(x, y.double(), metric)
            got32 = tp.cdist(x, y, metric)
            swapped = tp.cdist(y, x.double(), metric)  # rows and columns swapped
            want = torch.from_numpy(BOOLEAN_ORACLES[metric](xn, yn))
            torch.testing.assert_close(got64, want, rtol=1e-12, atol=0, equal_nan=True)
            torch.testing.assert_close(got32.double(), want, rtol=1e-6, atol=0, equal_nan=True)
            torch.testing.assert_close(swapped, want.T, rtol=1e-12, atol=0, equal_nan=True)
            use_path(monkeypatch, "scalar")
            assert torch.equal(got64, tp.cdist(x, y.double(), metric))


@pytest.mark.parametrize("path", PATHS)
def test_path_pdist_and_topk(path, monkeypatch):
    use_path(monkeypatch, path)
    x = bits((41, 333), 0.4, seed=3)
    xn = x.numpy()
    torch.testing.assert_close(tp.pdist(x.double(), "jaccard"), torch.from_numpy(ssd.pdist(xn, "jaccard")),
                               rtol=1e-12, atol=0)
    y = bits((29, 333), 0.4, seed=4)
    d = torch.from_numpy(ssd.cdist(xn, y.numpy(), "hamming"))
    v, _ = tp.lazy(x, y.double(), "hamming").topk(5, largest=False)
    torch.testing.assert_close(v, d.topk(5, largest=False).values, rtol=1e-12, atol=0)


def test_bad_path_name(monkeypatch):
    monkeypatch.setenv("TORCHPAIR_POPCOUNT", "sse9")
    with pytest.raises(ValueError, match="TORCHPAIR_POPCOUNT"):
        tp.cdist(bits((3, 10), 0.5, 0), bits((4, 10), 0.5, 1), "jaccard")
