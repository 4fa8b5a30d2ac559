"""Exact optimal transport (tp.emd, tp.emd2, tp.wasserstein) against independent oracles:
POT's ot.emd / ot.emd2 (its own network simplex), scipy.stats.wasserstein_distance (1-D),
LP optimality conditions (feasibility, complementary slackness, strong duality), finite
differences and torch.autograd.gradcheck."""
import warnings

import numpy as np
import ot
import pytest
import scipy.stats
import torch

import torchpair as tp

NO_LIMIT = 10**9  # POT's default numItermax (1e5) can stop early on the larger problems


def rng(seed):
    return np.random.default_rng(seed)


def random_problem(n, m, seed, weights="float", cost="float"):
    r = rng(seed)
    if weights == "float":
        a = r.random(n) + 0.05
        b = r.random(m) + 0.05
        a, b = a / a.sum(), b / b.sum()
    elif weights == "int":  # integer masses with equal totals
        a = r.integers(1, 10, n).astype(np.float64)
        b = r.multinomial(int(a.sum()), np.full(m, 1.0 / m)).astype(np.float64)  # may hold zeros
    elif weights == "uniform":
        a, b = np.full(n, 1.0 / n), np.full(m, 1.0 / m)
    if cost == "float":
        M = r.random((n, m))
    elif cost == "points":  # squared euclidean between 2-D points
        M = ot.dist(r.random((n, 2)), r.random((m, 2)))
    elif cost == "ties":  # many equal costs: a degenerate dual
        M = r.integers(0, 3, (n, m)).astype(np.float64)
    elif cost == "zero":
        M = np.zeros((n, m))
    return a, b, M


def solve(a, b, M, **kw):
    t = lambda x: None if x is None else torch.from_numpy(np.asarray(x, dtype=np.float64))  # noqa: E731
    plan, log = tp.emd(t(a), t(b), t(M), log=True, **kw)
    return plan.numpy(), log["cost"].item(), log["u"].numpy(), log["v"].numpy(), log["status"].item()


def check_optimal(a, b, M, plan, cost, u, v, scale=1.0):
    """Feasibility (marginals to 1e-12), dual feasibility, complementary slackness, strong duality."""
    tol = 1e-12 * max(scale, 1.0)
    assert (plan >= 0).all()
    np.testing.assert_allclose(plan.sum(1), a, rtol=0, atol=1e-12 * max(a.sum(), 1))
    np.testing.assert_allclose(plan.sum(0), b, rtol=0, atol=1e-12 * max(b.sum(), 1))
    slack = M - u[:, None] - v[None, :]
    cmax = max(np.abs(M).max(initial=0.0), 1.0)
    assert slack.min(initial=0.0) >= -1e-10 * cmax, "dual infeasible"
    assert np.abs(slack[plan > tol]).max(initial=0.0) <= 1e-10 * cmax, "complementary slackness violated"
    np.testing.assert_allclose(cost, (plan * M).sum(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(cost, a @ u + b @ v, rtol=1e-9, atol=1e-12 * cmax)


SIZES = [(1, 1), (1, 6), (6, 1), (2, 3), (7, 5), (20, 30), (64, 64), (150, 97), (300, 300), (1000, 600)]


@pytest.mark.parametrize("weights", ["float", "int", "uniform"])
@pytest.mark.parametrize("n,m", SIZES, ids=[f"{n}x{m}" for n, m in SIZES])
def test_cost_matches_pot_and_is_optimal(n, m, weights):
    a, b, M = random_problem(n, m, seed=n * 1000 + m, weights=weights, cost="points" if n > 100 else "float")
    plan, cost, u, v, status = solve(a, b, M)
    assert status == 0
    ref = ot.emd2(a, b, M, numItermax=NO_LIMIT)
    np.testing.assert_allclose(cost, ref, rtol=1e-9, atol=1e-15)
    check_optimal(a, b, M, plan, cost, u, v, scale=a.sum())


@pytest.mark.parametrize("cost", ["ties", "zero"])
@pytest.mark.parametrize("n,m", [(5, 5), (40, 25), (200, 200)])
def test_degenerate_costs(n, m, cost):
    a, b, M = random_problem(n, m, seed=7 + n, weights="uniform", cost=cost)
    plan, c, u, v, status = solve(a, b, M)
    assert status == 0
    np.testing.assert_allclose(c, ot.emd2(a, b, M, numItermax=NO_LIMIT), rtol=1e-9, atol=1e-15)
    check_optimal(a, b, M, plan, c, u, v)


def test_large_2000():
    a, b, M = random_problem(2000, 2000, seed=2000, weights="float", cost="points")
    plan, cost, u, v, status = solve(a, b, M)
    assert status == 0
    np.testing.assert_allclose(cost, ot.emd2(a, b, M, numItermax=NO_LIMIT), rtol=1e-9)
    check_optimal(a, b, M, plan, cost, u, v)


def test_zero_weights_and_duplicate_points():
    r = rng(3)
    X = r.random((12, 2))
    X[5] = X[2]  # duplicate points
    Y = np.concatenate([X[:4], r.random((6, 2))])  # shares points with X
    M = ot.dist(X, Y)
    a = r.random(12)
    a[[0, 7]] = 0
    b = r.random(10)
    b[[3, 9]] = 0
    a, b = a / a.sum(), b / b.sum()
    plan, cost, u, v, status = solve(a, b, M)
    np.testing.assert_allclose(cost, ot.emd2(a, b, M, numItermax=NO_LIMIT), rtol=1e-9)
    assert (plan[[0, 7]] == 0).all() and (plan[:, [3, 9]] == 0).all()
    check_optimal(a, b, M, plan, cost, u, v)  # duals of zero weights are feasible too


def test_all_mass_on_one_point_and_identical_sets():
    M = ot.dist(rng(1).random((6, 3)), rng(2).random((4, 3)))
    a = np.zeros(6)
    a[2] = 1.0
    b = np.full(4, 0.25)
    plan, cost, *_ = solve(a, b, M)
    np.testing.assert_allclose(cost, M[2].mean(), rtol=1e-12)
    X = rng(4).random((8, 2))
    plan, cost, *_ = solve(None, None, ot.dist(X, X))
    assert cost == 0.0
    np.testing.assert_allclose(plan, np.eye(8) / 8, atol=1e-15)


def test_emd_plan_matches_pot_when_unique():
    a, b, M = random_problem(30, 20, seed=11)
    plan, *_ = solve(a, b, M)
    np.testing.assert_allclose(plan, ot.emd(a, b, M, numItermax=NO_LIMIT), atol=1e-13)


def test_batched_and_broadcast():
    B, n, m = 6, 40, 30
    r = rng(5)
    M = r.random((B, n, m))
    a = r.random((B, n)) + 0.1
    a /= a.sum(-1, keepdims=True)
    b = np.full(m, 1.0 / m)  # broadcast over the batch
    cost = tp.emd2(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(M))
    assert cost.shape == (B,)
    ref = [ot.emd2(a[k], b, M[k], numItermax=NO_LIMIT) for k in range(B)]
    np.testing.assert_allclose(cost.numpy(), ref, rtol=1e-9)
    # two batch dims, a omitted
    M4 = torch.from_numpy(M.reshape(2, 3, n, m))
    cost4 = tp.emd2(None, torch.from_numpy(b), M4)
    ref4 = [ot.emd2(np.full(n, 1.0 / n), b, M[k], numItermax=NO_LIMIT) for k in range(B)]
    np.testing.assert_allclose(cost4.reshape(-1).numpy(), ref4, rtol=1e-9)


def test_float32_in_float32_out_and_inputs_unchanged():
    a, b, M = (torch.from_numpy(x).float() for x in random_problem(25, 17, seed=8))
    copies = [t.clone() for t in (a, b, M)]
    plan, log = tp.emd(a, b, M, log=True)
    assert plan.dtype == torch.float32 and log["cost"].dtype == torch.float32
    ref = ot.emd2(a.double().numpy(), b.double().numpy(), M.double().numpy(), numItermax=NO_LIMIT)
    np.testing.assert_allclose(log["cost"].item(), ref, rtol=1e-5)
    for t, c in zip((a, b, M), copies):
        assert torch.equal(t, c)


def test_max_iter_warns_and_reports_status():
    a, b, M = random_problem(50, 50, seed=12)
    with pytest.warns(UserWarning, match="max_iter"):
        plan, cost, u, v, status = solve(a, b, M, max_iter=3)
    assert status == 1
    # still a feasible plan
    np.testing.assert_allclose(plan.sum(1), a, atol=1e-12)
    np.testing.assert_allclose(plan.sum(0), b, atol=1e-12)
    assert cost >= ot.emd2(a, b, M, numItermax=NO_LIMIT) - 1e-12
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert solve(a, b, M)[4] == 0


def test_mass_tolerance_and_normalize():
    a, b, M = (torch.from_numpy(x) for x in random_problem(10, 8, seed=13))
    with pytest.raises(ValueError, match=r"'a' and 'b' must have the same total mass.*normalize=True"):
        tp.emd2(a, 2 * b, M)
    # within the tolerance b is rescaled to a's mass
    np.testing.assert_allclose(tp.emd2(a, b * (1 + 1e-9), M).item(), tp.emd2(a, b, M).item(), rtol=1e-8)
    # normalize=True: both rescaled to unit mass
    np.testing.assert_allclose(tp.emd2(3 * a, 2 * b, M, normalize=True).item(), tp.emd2(a, b, M).item(), rtol=1e-12)
    with pytest.raises(ValueError, match="same total mass"):
        tp.emd2(a, b * (1 + 1e-3), M, mass_tol=1e-4)
    tp.emd2(a, b * (1 + 1e-3), M, mass_tol=1e-2)


def test_empty_supports():
    M = torch.zeros(0, 4, dtype=torch.float64)
    # both empty: nothing to move
    plan, log = tp.emd(torch.zeros(0, dtype=torch.float64), torch.zeros(0, dtype=torch.float64),
                       torch.zeros(0, 0, dtype=torch.float64), log=True)
    assert plan.shape == (0, 0) and log["cost"].item() == 0
    # one side empty, the other with zero mass: cost 0, empty plan
    plan, log = tp.emd(torch.zeros(0, dtype=torch.float64), torch.zeros(4, dtype=torch.float64), M, log=True)
    assert plan.shape == (0, 4) and log["cost"].item() == 0
    # one side empty, the other with mass: a mass mismatch
    with pytest.raises(ValueError, match="same total mass"):
        tp.emd2(None, None, M)
    # a zero batch
    assert tp.emd2(None, None, torch.zeros(0, 3, 2)).shape == (0,)


# ---- gradients -------------------------------------------------------------------------
def test_gradients_match_pot():
    a, b, M = random_problem(12, 9, seed=21)
    ta, tb, tM = (torch.tensor(x, requires_grad=True) for x in (a, b, M))
    tp.emd2(ta, tb, tM).backward()
    pa, pb, pM = (torch.tensor(x, requires_grad=True) for x in (a, b, M))
    ot.emd2(pa, pb, pM, numItermax=NO_LIMIT).backward()
    np.testing.assert_allclose(tM.grad, pM.grad, atol=1e-13)
    np.testing.assert_allclose(ta.grad, pa.grad, atol=1e-10)
    np.testing.assert_allclose(tb.grad, pb.grad, atol=1e-10)
    np.testing.assert_allclose(ta.grad.sum().item(), 0, atol=1e-12)  # centred
    np.testing.assert_allclose(tb.grad.sum().item(), 0, atol=1e-12)


def test_gradients_finite_differences():
    a, b, M = (torch.tensor(x) for x in random_problem(9, 7, seed=22))
    a.requires_grad_(True)
    b.requires_grad_(True)
    M.requires_grad_(True)
    tp.emd2(a, b, M).backward()
    r = torch.Generator().manual_seed(0)
    eps = 1e-7
    with torch.no_grad():
        dM = torch.rand(M.shape, generator=r, dtype=torch.float64)
        fd = (tp.emd2(a, b, M + eps * dM) - tp.emd2(a, b, M - eps * dM)) / (2 * eps)
        np.testing.assert_allclose(fd.item(), (M.grad * dM).sum().item(), rtol=1e-6)
        # mass-preserving directions (the cost is defined on equal masses)
        da = torch.rand(a.shape, generator=r, dtype=torch.float64)
        da -= da.mean()
        fd = (tp.emd2(a + eps * da, b, M) - tp.emd2(a - eps * da, b, M)) / (2 * eps)
        np.testing.assert_allclose(fd.item(), (a.grad * da).sum().item(), rtol=1e-6)
        db = torch.rand(b.shape, generator=r, dtype=torch.float64)
        db -= db.mean()
        fd = (tp.emd2(a, b + eps * db, M) - tp.emd2(a, b - eps * db, M)) / (2 * eps)
        np.testing.assert_allclose(fd.item(), (b.grad * db).sum().item(), rtol=1e-6)


def test_gradcheck_cost_matrix_batched():
    a, b, M = (torch.tensor(x) for x in random_problem(6, 5, seed=23))
    M = torch.stack([M, M.flip(0)]).requires_grad_(True)
    torch.autograd.gradcheck(lambda M: tp.emd2(a, b, M), (M,), eps=1e-7, atol=1e-8)


def test_second_derivative_raises():
    a, b, M = (torch.tensor(x, requires_grad=True) for x in random_problem(5, 4, seed=24))
    (g,) = torch.autograd.grad(tp.emd2(a, b, M), M, create_graph=True)
    with pytest.raises(RuntimeError, match="second derivatives are not supported"):
        g.sum().backward()


# ---- wasserstein -----------------------------------------------------------------------
def test_wasserstein_1d_matches_scipy():
    r = rng(30)
    x, y = r.normal(size=40), r.normal(1.0, 2.0, size=25)
    wa, wb = r.random(40), r.random(25)
    w = tp.wasserstein(torch.tensor(x)[:, None], torch.tensor(y)[:, None], torch.tensor(wa / wa.sum()),
                       torch.tensor(wb / wb.sum()))
    np.testing.assert_allclose(w.item(), scipy.stats.wasserstein_distance(x, y, wa, wb), rtol=1e-9)


@pytest.mark.parametrize("metric,p,pot_metric", [("euclidean", 1, "euclidean"), ("euclidean", 2, "sqeuclidean"),
                                                 ("sqeuclidean", 1, "sqeuclidean"), ("sqeuclidean", 2, None)])
def test_wasserstein_matches_pot(metric, p, pot_metric):
    r = rng(31)
    X, Y = r.random((30, 3)), r.random((20, 3))
    C = ot.dist(X, Y, metric=pot_metric) if pot_metric else ot.dist(X, Y, metric="sqeuclidean") ** 2
    ref = ot.emd2([], [], C, numItermax=NO_LIMIT) ** (1 / p)
    w = tp.wasserstein(torch.tensor(X), torch.tensor(Y), metric=metric, p=p)
    np.testing.assert_allclose(w.item(), ref, rtol=1e-9)


def test_wasserstein_gradients():
    r = rng(33)
    X = torch.tensor(r.random((7, 2)), requires_grad=True)
    Y = torch.tensor(r.random((5, 2)), requires_grad=True)
    torch.autograd.gradcheck(lambda X, Y: tp.wasserstein(X, Y, p=2), (X, Y), eps=1e-7, atol=1e-7)
    # identical sets: W = 0, gradient 0 (not NaN)
    Z = torch.tensor(r.random((4, 2)), requires_grad=True)
    w = tp.wasserstein(Z, Z.detach().clone(), p=2)
    w.backward()
    assert w.item() == 0 and torch.equal(Z.grad, torch.zeros_like(Z))


# ---- compile / export / devices ----------------------------------------------------------
def test_compile_fullgraph_and_backward():
    torch._dynamo.reset()
    a, b, M = (torch.tensor(x) for x in random_problem(8, 6, seed=40))
    M.requires_grad_(True)
    f = torch.compile(lambda a, b, M: tp.emd2(a, b, M), fullgraph=True)
    cost = f(a, b, M)
    np.testing.assert_allclose(cost.item(), ot.emd2(a.numpy(), b.numpy(), M.detach().numpy()), rtol=1e-9)
    cost.backward()
    np.testing.assert_allclose(M.grad.numpy(), tp.emd(a, b, M.detach()).numpy(), atol=1e-15)
    X, Y = torch.rand(9, 2, dtype=torch.float64), torch.rand(7, 2, dtype=torch.float64)
    g = torch.compile(lambda X, Y: tp.wasserstein(X, Y, p=2), fullgraph=True)
    np.testing.assert_allclose(g(X, Y).item(), tp.wasserstein(X, Y, p=2).item(), rtol=1e-12)


def test_export_runs_the_cpu_solver():
    class W(torch.nn.Module):
        def forward(self, a, b, M):
            return tp.emd2(a, b, M)

    a, b, M = (torch.tensor(x) for x in random_problem(8, 6, seed=41))
    ep = torch.export.export(W(), (a, b, M))
    assert "torchpair._emd" in str(ep.graph) or "torchpair.emd" in str(ep.graph)
    a2, b2, M2 = (torch.tensor(x) for x in random_problem(8, 6, seed=42))
    np.testing.assert_allclose(ep.module()(a2, b2, M2).item(), ot.emd2(a2.numpy(), b2.numpy(), M2.numpy()),
                               rtol=1e-9)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_inputs_solved_on_cpu_returned_on_cuda():
    a, b, M = (torch.tensor(x) for x in random_problem(30, 20, seed=43))
    Mc = M.float().cuda().requires_grad_(True)
    cost = tp.emd2(a.float().cuda(), b.float().cuda(), Mc)
    assert cost.device.type == "cuda" and cost.dtype == torch.float32
    np.testing.assert_allclose(cost.item(), ot.emd2(a.numpy(), b.numpy(), M.numpy()), rtol=1e-5)
    cost.backward()
    assert Mc.grad.device.type == "cuda"
    np.testing.assert_allclose(Mc.grad.cpu().double().numpy(), tp.emd(a, b, M).numpy(), atol=1e-6)


# ---- bad input -------------------------------------------------------------------------
_a = torch.full((4,), 0.25, dtype=torch.float64)
_b = torch.full((3,), 1 / 3, dtype=torch.float64)
_M = torch.rand(4, 3, dtype=torch.float64)

BAD = [
    ("negative-a", lambda: tp.emd2(torch.tensor([0.5, 0.5, 0.5, -0.5], dtype=torch.float64), _b, _M), ValueError,
     r"'a' must be non-negative and finite"),
    ("negative-a-in-batch", lambda: tp.emd2(torch.full((4, 4), 0.25, dtype=torch.float64).index_put(
        (torch.tensor([3]), torch.tensor([2])), torch.tensor(-0.1, dtype=torch.float64)), _b, _M), ValueError,
     r"'a' must be non-negative and finite, got a\[3, 2\] = -0.1 \(problem 3"),
    ("nan-b", lambda: tp.emd2(_a, torch.tensor([0.5, float("nan"), 0.5], dtype=torch.float64), _M), ValueError,
     r"'b' must be non-negative and finite"),
    ("negative-M", lambda: tp.emd2(_a, _b, -_M), ValueError, r"'M' \(the cost\) must be non-negative"),
    ("inf-M", lambda: tp.emd2(_a, _b, _M.index_fill(0, torch.tensor([1]), float("inf"))), ValueError,
     r"'M' \(the cost\) must be non-negative and finite"),
    ("mass-mismatch", lambda: tp.emd2(_a, 2 * _b, _M), ValueError, r"'a' and 'b' must have the same total mass"),
    ("a-length", lambda: tp.emd2(torch.ones(3, dtype=torch.float64) / 3, _b, _M), ValueError,
     r"'a' has 3 entries but 'M' has 4 rows"),
    ("b-length", lambda: tp.emd2(_a, torch.ones(2, dtype=torch.float64) / 2, _M), ValueError,
     r"'b' has 2 entries but 'M' has 3 columns"),
    ("M-rank", lambda: tp.emd2(_a, _b, torch.rand(4, dtype=torch.float64)), ValueError, r"'M' must have shape"),
    ("M-int", lambda: tp.emd2(None, None, torch.ones(4, 3, dtype=torch.int64)), TypeError, r"'M' must be a floating"),
    ("a-bool", lambda: tp.emd2(torch.ones(4, dtype=torch.bool), _b, _M), TypeError,
     r"torchpair\.emd2: 'a' must be a real \(integer or floating\) tensor, got Bool"),
    ("b-complex", lambda: tp.emd(_a, torch.ones(3, dtype=torch.complex64), _M), TypeError,
     r"torchpair\.emd: 'b' must be a real"),
    ("a-not-tensor", lambda: tp.emd2([0.25] * 4, _b, _M), TypeError, r"'a' must be a torch.Tensor"),
    ("batch-mismatch", lambda: tp.emd2(torch.full((3, 4), 0.25, dtype=torch.float64), _b, _M.expand(2, 4, 3)),
     RuntimeError, r"size"),
    ("max-iter-negative", lambda: tp.emd2(_a, _b, _M, max_iter=-1), ValueError, r"'max_iter' must be >= 0"),
    ("max-iter-float", lambda: tp.emd2(_a, _b, _M, max_iter=1.5), TypeError, r"'max_iter' must be an int"),
    ("normalize-type", lambda: tp.emd2(_a, _b, _M, normalize=1), TypeError, r"'normalize' must be a bool"),
    ("mass-tol-negative", lambda: tp.emd2(_a, _b, _M, mass_tol=-1.0), ValueError, r"'mass_tol' must be"),
    ("normalize-zero-mass", lambda: tp.emd2(torch.zeros(4, dtype=torch.float64), _b, _M, normalize=True), ValueError,
     r"'a' must be non-negative and finite"),
    ("wasserstein-p", lambda: tp.wasserstein(torch.rand(3, 2), torch.rand(4, 2), p=0.5), ValueError,
     r"'p' \(the Wasserstein order\)"),
    ("wasserstein-kernel", lambda: tp.wasserstein(torch.rand(3, 2), torch.rand(4, 2), metric="rbf"), ValueError,
     r"'metric' must be a distance"),
    ("wasserstein-metric-p", lambda: tp.wasserstein(torch.rand(3, 2), torch.rand(4, 2), metric_p=3.0), TypeError,
     r"does not take parameter 'p'"),
    ("core-shapes", lambda: torch.ops.torchpair._emd(_a[None], _b[None], _M, -1, 1e-7), ValueError,
     r"expects a \[B, n\]"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.int16])
@pytest.mark.parametrize("cost_dtype", [torch.float64, torch.float32])
def test_integer_weights_are_histograms(dtype, cost_dtype):
    """Integer weights (counts) are accepted, as POT accepts them: the same plan and cost as
    ot.emd / ot.emd2 on the counts, in the promoted dtype (int weights, float cost: the cost's)."""
    r = rng(11)
    n, m = 7, 5
    a = r.integers(1, 9, n)
    b = r.multinomial(int(a.sum()), np.full(m, 1.0 / m))  # equal totals, may hold zeros
    M = r.random((n, m))
    ref_cost = ot.emd2(a, b, M, numItermax=NO_LIMIT)
    ref_plan = ot.emd(a, b, M, numItermax=NO_LIMIT)
    ta, tb, tM = torch.from_numpy(a).to(dtype), torch.from_numpy(b).to(dtype), torch.from_numpy(M).to(cost_dtype)
    ta0, tb0 = ta.clone(), tb.clone()
    cost = tp.emd2(ta, tb, tM)
    plan = tp.emd(ta, tb, tM)
    assert cost.dtype == cost_dtype and plan.dtype == cost_dtype
    tol = dict(rtol=1e-12, atol=1e-12) if cost_dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(cost.double(), torch.tensor(ref_cost, dtype=torch.float64), **tol)
    torch.testing.assert_close(plan.double().sum(1), torch.from_numpy(a).double(), **tol)
    torch.testing.assert_close(plan.double().sum(0), torch.from_numpy(b).double(), **tol)
    torch.testing.assert_close((plan.double() * torch.from_numpy(M)).sum(), torch.tensor(float((ref_plan * M).sum()),
                               dtype=torch.float64), **tol)
    assert torch.equal(ta, ta0) and torch.equal(tb, tb0)  # inputs untouched
    # normalize=True with counts: the distributions a / sum(a), b / sum(b)
    torch.testing.assert_close(tp.emd2(ta, tb, tM, normalize=True).double(),
                               torch.tensor(ot.emd2(a / a.sum(), b / b.sum(), M, numItermax=NO_LIMIT),
                                            dtype=torch.float64), **tol)


def test_integer_weights_in_wasserstein():
    """tp.wasserstein with integer point weights, against POT on the euclidean cost."""
    r = rng(12)
    X, Y = r.random((6, 2)), r.random((4, 2))
    a = r.integers(1, 5, 6)
    b = r.multinomial(int(a.sum()), np.full(4, 0.25))
    M = np.sqrt(((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1))
    out = tp.wasserstein(torch.from_numpy(X), torch.from_numpy(Y), torch.from_numpy(a), torch.from_numpy(b))
    torch.testing.assert_close(out, torch.tensor(ot.emd2(a, b, M, numItermax=NO_LIMIT), dtype=torch.float64),
                               rtol=1e-12, atol=1e-12)
