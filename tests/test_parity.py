"""Dense results against scipy/sklearn on random, batched, broadcast, non-contiguous,
empty and self inputs, for every metric row in cases.METRIC_CASES, in both engines
(difference-based for small D, GEMM for large D) and on the device-generic path."""
import numpy as np
import pytest
import scipy.spatial.distance as ssd
import torch

import torchpair as tp
from cases import METRIC_CASES, METRIC_IDS, NONNEGATIVE_METRICS, tolerances

DTYPES = [torch.float64, torch.float32]


def oracle(case, x, y=None):
    xn = x.detach().double().numpy()
    yn = xn if y is None else y.detach().double().numpy()
    return torch.from_numpy(np.ascontiguousarray(case.oracle(xn, yn)))


def self_oracle(case, x):
    """The oracle of pairwise(x, None): scipy's squareform(pdist(x)), whose data-dependent
    defaults (seuclidean's V, mahalanobis' VI) come from x alone, unlike cdist(x, x)."""
    if case.metric in ("seuclidean", "mahalanobis") and not case.params:
        xn = x.detach().double().numpy()
        return torch.from_numpy(ssd.squareform(ssd.pdist(xn, case.metric)))
    return oracle(case, x)


def check(case, out, ref, dtype):
    assert out.dtype == dtype
    torch.testing.assert_close(out.double(), ref, **tolerances(case, dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_random(case, dtype):
    for d in case.dims:
        x = case.sample((13, d), dtype)
        y = case.sample((300, d), dtype)  # more columns than one tile
        check(case, tp.pairwise(x, y, case.metric, **case.params), oracle(case, x, y), dtype)
        check(case, tp.cdist(y, x, case.metric, **case.params), oracle(case, y, x), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_self(case, dtype):
    for d in case.dims:
        x = case.sample((70, d), dtype)
        out = tp.pairwise(x, None, case.metric, **case.params)
        check(case, out, self_oracle(case, x), dtype)
        if tp.metric_info(case.metric)["kind"] == "distance":
            assert torch.all(out.diagonal() == 0), "self-distances must be exactly zero"


@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_batched_and_broadcast(case):
    d = case.dims[-1]
    x = case.sample((3, 1, 9, d))
    y = case.sample((2, 11, d))
    out = tp.pairwise(x, y, case.metric, **case.params)
    assert out.shape == (3, 2, 9, 11)
    for i in range(3):
        for j in range(2):
            check(case, out[i, j], oracle(case, x[i, 0], y[j]), torch.float64)


@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_non_contiguous(case):
    for d in (case.dims[0], case.dims[-1]):
        x = case.sample((30, 2 * d))[:, 1::2]  # strided features
        y = case.sample((50, d))[::2]          # strided rows
        assert not x.is_contiguous() and not y.is_contiguous()
        check(case, tp.pairwise(x, y, case.metric, **case.params), oracle(case, x, y), torch.float64)


@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_empty(case):
    d = case.dims[-1]
    for n, m in [(0, 5), (5, 0), (0, 0)]:
        out = tp.pairwise(case.sample((n, d)), case.sample((m, d)), case.metric, **case.params)
        assert out.shape == (n, m)
    assert tp.pairwise(case.sample((0, 4, d)), case.sample((0, 3, d)), case.metric, **case.params).shape == (0, 4, 3)


@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_generic_path(case, force_generic):
    """The device-generic engines (what CUDA tensors run) against the same oracles."""
    for d in (case.dims[0], case.dims[-1]):
        x, y = case.sample((2, 9, d)), case.sample((2, 14, d))
        out = tp.pairwise(x, y, case.metric, **case.params)
        for b in range(2):
            check(case, out[b], oracle(case, x[b], y[b]), torch.float64)
        check(case, tp.pairwise(x[0], None, case.metric, **case.params), self_oracle(case, x[0]), torch.float64)


def test_inputs_not_modified():
    x = torch.randn(20, 30, dtype=torch.float64)
    y = torch.randn(10, 30, dtype=torch.float64)
    for metric in tp.metrics():
        if tp.metric_info(metric)["family"] == "sequence":  # token ids, not features: tests/test_sequences.py
            continue
        a, b = (x.abs(), y.abs()) if metric in NONNEGATIVE_METRICS else (x, y)
        if metric == "haversine":  # D = 2
            a, b = a[:, :2], b[:, :2]
        ac, bc = a.clone(), b.clone()
        tp.pairwise(a, b, metric)
        tp.lazy(a, b, metric).sum(-1)
        assert torch.equal(a, ac) and torch.equal(b, bc)


def test_far_from_origin_is_accurate():
    """The GEMM form centres its operands: data far from the origin keeps its precision."""
    x = torch.randn(50, 40) + 1000.0
    y = torch.randn(60, 40) + 1000.0
    ref = oracle(METRIC_CASES[0], x, y)
    torch.testing.assert_close(tp.pairwise(x, y).double(), ref, rtol=1e-5, atol=1e-5)


def test_far_from_origin_tall_operand_any_thread_count():
    """The centre of a tall operand is summed in fixed chunks of rows on every thread
    (csrc/cpu/prepare_cpu.cpp): as accurate far from the origin, and the same bits with one
    thread or two."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(30, 40, generator=g) + 1000.0
    y = torch.randn(9000, 40, generator=g) + 1000.0  # 360,000 values: two chunks
    ref = oracle(METRIC_CASES[0], x, y)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = tp.pairwise(x, y)
        torch.set_num_threads(2)
        two = tp.pairwise(x, y)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, two)
    torch.testing.assert_close(two.double(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("engine", ["native", "generic"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("metric", ["chebyshev", "cityblock", "minkowski"])
def test_nan_feature_anywhere_propagates(metric, dtype, engine, monkeypatch):
    if engine == "generic":
        monkeypatch.setenv("TORCHPAIR_FORCE_GENERIC", "1")
    # The direct engine reduces features in registers (a running max for chebyshev): a NaN
    # at any feature position, on either side, must give NaN for that pair. scipy's
    # chebyshev loop skips NaN features (`d > max` is false for NaN) and returns a finite
    # value; torchpair propagates NaN (docs/conventions.md), so its oracle is numpy's max.
    from scipy.spatial.distance import cdist as scipy_cdist

    def cdist(a, b, metric, **kw):
        if metric == "chebyshev":
            return np.abs(a[:, None, :] - b[None, :, :]).max(-1)
        return scipy_cdist(a, b, metric, **kw)
    g = torch.Generator().manual_seed(7)
    d = 11
    x = torch.randn(9, d, generator=g, dtype=dtype)
    y = torch.randn(37, d, generator=g, dtype=dtype)  # a partial column vector at the end
    for k in range(d):
        x[k % 9, k] = float("nan")
    y[5, 0] = y[20, d - 1] = y[36, d // 2] = float("nan")
    kw = {"p": 3.0} if metric == "minkowski" else {}
    ref = torch.from_numpy(cdist(x.double().numpy(), y.double().numpy(), metric, **kw))
    i, j = torch.triu_indices(37, 37, 1)
    ref_pdist = torch.from_numpy(cdist(y.double().numpy(), y.double().numpy(), metric, **kw))[i, j]
    for out, expected in ((tp.pairwise(x, y, metric, **kw), ref), (tp.pdist(y, metric, **kw), ref_pdist)):
        assert torch.equal(torch.isnan(out), torch.isnan(expected))
        torch.testing.assert_close(out.double(), expected, equal_nan=True, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("metric", ["seuclidean", "mahalanobis"])
@pytest.mark.parametrize("grad", [False, True], ids=["native-prepare", "autograd-prepare"])
def test_self_comparison_defaults_come_from_x_alone(metric, grad):
    """pairwise(X, None) equals squareform(pdist(X)) (scipy) and sklearn's
    pairwise_distances(X, metric): the default V / VI come from X alone, for the dense result
    and every lazy consumer; two sets keep scipy's cdist statistics of [X; Y] (also X twice)."""
    from sklearn.metrics import pairwise_distances

    g = torch.Generator().manual_seed(5)
    x = torch.randn(5, 3, dtype=torch.float64, generator=g)
    y = torch.randn(7, 3, dtype=torch.float64, generator=g)
    xn, yn = x.numpy(), y.numpy()
    ref = torch.from_numpy(ssd.squareform(ssd.pdist(xn, metric)))
    torch.testing.assert_close(torch.from_numpy(pairwise_distances(xn, metric=metric)), ref, rtol=1e-12, atol=1e-12)
    xr = x.clone().requires_grad_(grad)
    close = dict(rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(tp.pairwise(xr, None, metric).detach(), ref, **close)
    torch.testing.assert_close(torch.from_numpy(ssd.squareform(tp.pdist(xr, metric).detach().numpy())), ref, **close)
    V = torch.linspace(-1.0, 1.0, 10, dtype=torch.float64).reshape(5, 2)
    K = tp.lazy(xr, None, metric)
    torch.testing.assert_close((K @ V).detach(), ref @ V, **close)
    torch.testing.assert_close(K.sum(-1).detach(), ref.sum(-1), **close)
    torch.testing.assert_close(K.topk(2, largest=False).values.detach(), ref.topk(2, largest=False).values, **close)
    torch.testing.assert_close(tp.knn(xr, None, 3, metric).values.detach(), ref.topk(3, largest=False).values, **close)
    # two sets: scipy's cdist (the stacked rows), X passed twice included
    torch.testing.assert_close(tp.pairwise(xr, y, metric).detach(), torch.from_numpy(ssd.cdist(xn, yn, metric)),
                               **close)
    twice = torch.from_numpy(ssd.cdist(xn, xn, metric))
    got = tp.pairwise(xr, x, metric).detach()
    off = ~torch.eye(5, dtype=torch.bool)
    torch.testing.assert_close(got[off], twice[off], **close)
    # X twice is two sets, not a self-comparison: mahalanobis is always the GEMM form, whose
    # equal rows come within its bound of scipy's 0 (docs/contracts.md): sqrt((D + 3) eps
    # (a + b)), a = b the whitened squared norm of the row about the centre (X's mean)
    if metric == "mahalanobis":
        z = np.vstack([xn, xn])
        VI = np.linalg.inv(np.cov(z.T))
        xc = xn - xn.mean(0)
        norm2 = torch.from_numpy(np.einsum("ij,jk,ik->i", xc, VI, xc))
        bound = torch.sqrt((3 + 3) * torch.finfo(torch.float64).eps * 2 * norm2)
        assert bool((got.diagonal() <= bound).all()), (got.diagonal(), bound)
    else:
        torch.testing.assert_close(got.diagonal(), twice.diagonal(), **close)
    assert (twice - ref).abs().max() > 1e-3  # the two conventions differ (by ~6% at n = 5)


@pytest.mark.parametrize("metric", ["seuclidean", "mahalanobis"])
def test_self_comparison_defaults_generic_path(metric, force_generic):
    x = torch.randn(2, 6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    for b in range(2):
        ref = torch.from_numpy(ssd.squareform(ssd.pdist(x[b].numpy(), metric)))
        torch.testing.assert_close(tp.pairwise(x, None, metric)[b], ref, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close((tp.lazy(x, None, metric) @ torch.ones(6, 1, dtype=torch.float64))[b, :, 0],
                                   ref.sum(-1), rtol=1e-10, atol=1e-12)
