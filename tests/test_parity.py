"""Dense results against scipy/sklearn on random, batched, broadcast, non-contiguous,
empty and self inputs, for every metric row in cases.METRIC_CASES, in both engines
(difference-based for small D, GEMM for large D) and on the device-generic path."""
import numpy as np
import pytest
import torch

import torchpair as tp
from cases import METRIC_CASES, METRIC_IDS, NONNEGATIVE_METRICS, tolerances

DTYPES = [torch.float64, torch.float32]


def oracle(case, x, y=None):
    xn = x.detach().double().numpy()
    yn = xn if y is None else y.detach().double().numpy()
    return torch.from_numpy(np.ascontiguousarray(case.oracle(xn, yn)))


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
        check(case, out, oracle(case, x), dtype)
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
        check(case, tp.pairwise(x[0], None, case.metric, **case.params), oracle(case, x[0]), torch.float64)


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
