"""Lazy consumers against dense torch on the same expression (to_dense() then the torch
reduction), for every metric row, batched, transposed, and on the generic path."""
import pytest
import torch

import torchpair as tp
from cases import METRIC_CASES, METRIC_IDS, tolerances


def dense_ref(case, x, y):
    """The oracle's dense matrix, as a torch tensor (batch dims handled by the caller)."""
    from test_parity import oracle
    return oracle(case, x, y)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_matmul_and_sum(case, dtype):
    for d in (case.dims[0], case.dims[-1]):
        x, y = case.sample((37, d), dtype), case.sample((530, d), dtype)
        v = torch.randn(530, 3, dtype=dtype)
        ref = dense_ref(case, x, y)
        tol = tolerances(case, dtype)
        tol = {"rtol": tol["rtol"] * 10, "atol": tol["atol"] * 100}  # sums of hundreds of terms
        K = tp.lazy(x, y, case.metric, **case.params)
        assert K.shape == (37, 530)
        torch.testing.assert_close((K @ v).double(), ref @ v.double(), **tol)
        torch.testing.assert_close(K.matmul(v[:, 0]).double(), ref @ v[:, 0].double(), **tol)
        torch.testing.assert_close(K.sum(-1).double(), ref.sum(-1), **tol)
        torch.testing.assert_close(K.sum(1).double(), ref.sum(-1), **tol)
        torch.testing.assert_close(K.sum(-2).double(), ref.sum(-2), **tol)
        torch.testing.assert_close(K.sum().double(), ref.sum(), **tol)
        torch.testing.assert_close(K.to_dense().double(), ref, **tolerances(case, dtype))
        # the transposed operator
        w = torch.randn(37, 2, dtype=dtype)
        torch.testing.assert_close((K.T @ w).double(), ref.T @ w.double(), **tol)
        torch.testing.assert_close(K.T.sum(-1).double(), ref.sum(-2), **tol)
        assert K.T.shape == (530, 37)


@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_batched_broadcast_and_self(case):
    d = case.dims[-1]
    x, y = case.sample((2, 1, 8, d)), case.sample((3, 12, d))
    v = torch.randn(3, 12, 2, dtype=torch.float64)
    K = tp.lazy(x, y, case.metric, **case.params)
    assert K.shape == (2, 3, 8, 12)
    out = K @ v
    for i in range(2):
        for j in range(3):
            torch.testing.assert_close(out[i, j], dense_ref(case, x[i, 0], y[j]) @ v[j])
    xs = case.sample((25, d))
    S = tp.lazy(xs, None, case.metric, **case.params)
    from test_parity import self_oracle  # Y = None: scipy's squareform(pdist(xs)) (defaults from xs alone)
    torch.testing.assert_close(S.sum(-1), self_oracle(case, xs).sum(-1), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_generic_path(case, force_generic):
    d = case.dims[-1]
    x, y = case.sample((2, 9, d)), case.sample((2, 14, d))
    v = torch.randn(2, 14, 3, dtype=torch.float64)
    K = tp.lazy(x, y, case.metric, **case.params)
    for b in range(2):
        ref = dense_ref(case, x[b], y[b])
        torch.testing.assert_close((K @ v)[b], ref @ v[b])
        torch.testing.assert_close(K.sum(-2)[b], ref.sum(-2))


def test_empty():
    x, y = torch.randn(0, 4), torch.randn(6, 4)
    K = tp.lazy(x, y, "rbf")
    assert (K @ torch.randn(6, 2)).shape == (0, 2)
    assert K.sum(-2).shape == (6,) and torch.all(K.sum(-2) == 0)
    K2 = tp.lazy(y, x, "rbf")
    assert torch.equal(K2 @ torch.randn(0, 2), torch.zeros(6, 2))
    assert torch.equal(K2.sum(-1), torch.zeros(6))
    assert K2.sum().item() == 0


def test_dense_twin_matches_lazy():
    x, y, v = torch.randn(30, 5, dtype=torch.float64), torch.randn(20, 5, dtype=torch.float64), torch.randn(20, 2, dtype=torch.float64)
    lazy = tp.pairwise_expression(x, y, "rbf", lazy=True, gamma=0.5)
    dense = tp.pairwise_expression(x, y, "rbf", lazy=False, gamma=0.5)
    assert isinstance(lazy, tp.LazyPairwise) and isinstance(dense, tp.DensePairwise)
    ref = torch.exp(-0.5 * torch.cdist(x, y) ** 2)
    for e in (lazy, dense):
        torch.testing.assert_close(e @ v, ref @ v)
        torch.testing.assert_close(e.sum(-2), ref.sum(0))
        torch.testing.assert_close(e.T @ torch.ones(30, dtype=torch.float64), ref.sum(0))
        assert e.shape == (30, 20) and e.dtype == torch.float64
