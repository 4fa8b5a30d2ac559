"""Reliability at scale and under concurrency: 64-bit indexing past 2**31 pairs, thread safety,
no leaks over many calls, run-to-run determinism. Oracles are closed forms and serial runs."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest
import torch

import torchpair as tp


def _closed_form_sqeuclidean_sum(x, y):
    """sum_ij (x_i - y_j)^2 for 1-D x [N], y [M] = M sum x^2 + N sum y^2 - 2 sum x sum y."""
    n, m = x.shape[-1], y.shape[-1]
    return m * (x * x).sum(-1) + n * (y * y).sum(-1) - 2 * x.sum(-1) * y.sum(-1)


@pytest.mark.slow
def test_lazy_sum_past_2_pow_31_pairs():
    # N*M = 2.31e9 > 2**31: a 32-bit pair index would wrap; the closed form is exact.
    n = m = 48_000
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, 1, dtype=torch.float64, generator=g)
    y = torch.rand(m, 1, dtype=torch.float64, generator=g)
    assert n * m > 2**31
    total = tp.lazy(x, y, "sqeuclidean").sum()
    expected = _closed_form_sqeuclidean_sum(x[:, 0], y[:, 0])
    torch.testing.assert_close(total, expected, rtol=1e-9, atol=0)


@pytest.mark.slow
def test_batched_lazy_sum_past_2_pow_31_pairs():
    # B*N*M = 2.19e9 > 2**31 across the batch (offsets b*N*M must be 64-bit).
    b, n, m = 3, 27_000, 27_000
    g = torch.Generator().manual_seed(1)
    x = torch.rand(b, n, 1, dtype=torch.float64, generator=g)
    y = torch.rand(b, m, 1, dtype=torch.float64, generator=g)
    assert b * n * m > 2**31
    per_row = tp.lazy(x, y, "sqeuclidean").sum(-1)  # [b, n]
    expected = m * x[..., 0] ** 2 + (y[..., 0] ** 2).sum(-1, keepdim=True) - 2 * x[..., 0] * y[..., 0].sum(-1, keepdim=True)
    torch.testing.assert_close(per_row, expected, rtol=1e-9, atol=1e-6)


def _workloads():
    g = torch.Generator().manual_seed(2)
    X, Y, V = torch.randn(300, 8, generator=g), torch.randn(400, 8, generator=g), torch.randn(400, 3, generator=g)
    return [
        lambda: tp.pairwise(X, Y, "euclidean"),
        lambda: tp.lazy(X, Y, "rbf", gamma=0.3) @ V,
        lambda: tp.lazy(X, Y, "rbf").logsumexp(-1),
        lambda: tp.lazy(X, Y, "euclidean").topk(5, largest=False)[1],
        lambda: tp.lazy(X, Y, "rbf").softmax_matmul(V),
        lambda: tp.knn(X, Y, 3)[0],
        lambda: tp.mmd(X, Y[:300]),
    ]


def test_concurrent_python_threads_match_serial():
    work = _workloads()
    serial = [f() for f in work]
    errors, results = [], {}

    def worker(t):
        try:
            for rep in range(3):
                for i, f in enumerate(work):
                    results[(t, rep, i)] = f()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not any(th.is_alive() for th in threads), "a worker thread hung"
    assert not errors, errors
    for (t, rep, i), out in results.items():
        assert torch.equal(out, serial[i]), (t, rep, i)


def test_backward_in_concurrent_threads():
    g = torch.Generator().manual_seed(3)
    X, Y, V = torch.randn(200, 5, generator=g), torch.randn(250, 5, generator=g), torch.randn(250, 2, generator=g)

    def grad():
        x = X.clone().requires_grad_(True)
        (tp.lazy(x, Y, "rbf") @ V).square().sum().backward()
        return x.grad

    ref = grad()
    outs, errors = [], []

    def worker():
        try:
            for _ in range(3):
                outs.append(grad())
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not errors, errors
    assert len(outs) == 9 and all(torch.equal(o, ref) for o in outs)


def test_run_to_run_determinism():
    work = _workloads()
    first = [f() for f in work]
    for _ in range(2):
        for f, ref in zip(work, first):
            assert torch.equal(f(), ref)


_LEAK_SCRIPT = textwrap.dedent("""
    import resource, sys, torch, torchpair as tp
    torch.set_num_threads(1)
    X, Y, V = torch.randn(40, 6), torch.randn(50, 6), torch.randn(50, 2)
    Xg = X.clone().requires_grad_(True)
    def once():
        tp.pairwise(X, Y, "euclidean")
        tp.lazy(X, Y, "rbf") @ V
        tp.lazy(X, Y, "rbf").logsumexp(-1)
        tp.lazy(X, Y, "sqeuclidean").topk(3, largest=False)
        tp.lazy(X, Y, "rbf").softmax_matmul(V)
        tp.knn(X, Y, 2)
        tp.mmd(X, Y)
        (tp.lazy(Xg, Y, "rbf") @ V).sum().backward()
        Xg.grad = None
    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20
    for _ in range(1000):
        once()
    before = rss_mb()
    for _ in range(10000):
        once()
    print(before, rss_mb())
""")


@pytest.mark.slow
def test_ten_thousand_calls_do_not_grow_rss():
    r = subprocess.run([sys.executable, "-c", _LEAK_SCRIPT], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    before, after = map(float, r.stdout.split())
    # every op above, 10,000 times: a leak of even 100 bytes per call would show as > 8 MB
    assert after - before < 8.0, (before, after)
