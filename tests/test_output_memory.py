"""Large results reuse freed result memory (csrc/engines/output_memory.cpp): a call after the
previous result was freed writes into resident pages instead of faulting in fresh ones, and
the result is an ordinary tensor (values, resize, numpy, pickling) all the same."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist, pdist

import torchpair as tp

FAULTS = r"""
import resource, sys, torch, torchpair as tp
X, Y = torch.randn(3000, 16), torch.randn(3000, 16)
Z = torch.randn(3500, 8, dtype=torch.float64)
A, B = torch.randn(1000, 512), torch.randn(1000, 512)
g = torch.Generator().manual_seed(0)
S = torch.randint(0, 50, (2000, 24), generator=g)
L = torch.randint(5, 25, (2000,), generator=g)
def faults(f):
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    out = f()
    n = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0
    del out
    return n
for f in (lambda: tp.pairwise(X, Y), lambda: tp.pdist(Z), lambda: tp.pairwise(A, B),
          lambda: tp.seq.pairwise(S, S, "levenshtein", x_lengths=L, y_lengths=L)):
    print(" ".join(str(faults(f)) for _ in range(4)))
"""


def _faults(env_extra):
    env = dict(os.environ, **env_extra)
    r = subprocess.run([sys.executable, "-c", FAULTS], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return [[int(v) for v in line.split()] for line in r.stdout.strip().splitlines()]


def test_a_freed_result_is_reused_without_page_faults():
    # 36 MB dense and 49 MB condensed results (4 KiB pages: ~8800 and ~12000 faults a call). Above glibc's
    # largest mmap threshold (32 MiB), freed memory goes back to the OS. The third: a 4 MB result and
    # two 2 MB centred operands, which glibc takes from the top of its heap and trims back to the OS on
    # free, about every other call. The fourth: a 32 MB edit-distance matrix (int64), just under
    # glibc's largest threshold, trimmed the same way.
    large, condensed, mid, sequences = _faults({"TORCHPAIR_OUTPUT_CACHE_BYTES": str(256 << 20)})
    for first, *later in (large, condensed, sequences):
        assert first > 5000
        assert max(later) < first / 10, (first, later)
    assert mid[0] > 1000 and max(mid[1:]) < 100, mid


def test_the_cache_can_be_disabled():
    large, condensed, _, _ = _faults({"TORCHPAIR_OUTPUT_CACHE_BYTES": "0"})
    for calls in (large, condensed):
        assert min(calls) > 5000, calls


def test_reused_memory_gives_correct_ordinary_tensors():
    g = torch.Generator().manual_seed(0)
    X, Y = torch.randn(1100, 12, generator=g, dtype=torch.float64), torch.randn(900, 12, generator=g,
                                                                                dtype=torch.float64)
    first = tp.pairwise(X, Y, "cityblock")
    ptr = first.data_ptr()
    del first
    second = tp.pairwise(X, Y, "euclidean")  # same size: the freed block
    assert second.data_ptr() == ptr
    np.testing.assert_allclose(second.numpy(), cdist(X.numpy(), Y.numpy()), rtol=1e-12, atol=1e-12)
    kept = tp.pairwise(X, Y, "euclidean")  # `second` is alive: fresh memory, not an alias
    assert kept.data_ptr() != second.data_ptr()
    torch.testing.assert_close(kept, second)
    assert torch.equal(pickle.loads(pickle.dumps(second)), second)
    before = kept.clone()
    kept.resize_(2000, 1000)  # the storage grows through the cache's allocator (.numpy() would pin it)
    assert kept.shape == (2000, 1000)
    torch.testing.assert_close(kept.reshape(-1)[: before.numel()], before.reshape(-1), rtol=0, atol=0)
    P = tp.pdist(X, "sqeuclidean")
    np.testing.assert_allclose(P.numpy(), pdist(X.numpy(), "sqeuclidean"), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [10, 120])  # results below 128 KiB
def test_small_results_are_plain_allocations(n):
    X, Y = torch.randn(n, 4, dtype=torch.float64), torch.randn(n + 3, 4, dtype=torch.float64)
    np.testing.assert_allclose(tp.pairwise(X, Y).numpy(), cdist(X.numpy(), Y.numpy()), rtol=1e-12, atol=1e-12)
