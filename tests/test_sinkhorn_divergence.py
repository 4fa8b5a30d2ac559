"""The streamed Sinkhorn divergence (tp.sinkhorn_divergence) against GeomLoss'
SamplesLoss("sinkhorn", debias=True) (tensorized backend), dense oracles and gradcheck."""
import warnings

import numpy as np
import pytest
import torch

import torchpair as tp

geomloss = pytest.importorskip("geomloss")


def _clouds(n=30, m=25, d=3, seed=0, batch=(), dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(*batch, n, d, generator=g, dtype=dtype)
    Y = torch.randn(*batch, m, d, generator=g, dtype=dtype) * 0.8 + 0.3
    a = torch.rand(*batch, n, generator=g, dtype=dtype) + 0.2
    b = torch.rand(*batch, m, generator=g, dtype=dtype) + 0.2
    return X, Y, a / a.sum(-1, keepdim=True), b / b.sum(-1, keepdim=True)


def _exact_distance(x, y):
    return torch.cdist(x, y, compute_mode="donot_use_mm_for_euclid_dist")


def _geomloss(X, Y, a=None, b=None, **kw):
    if kw.get("p") == 1:
        # GeomLoss' tensorized p = 1 cost is sqrt(max(|x - y|^2, 1e-8)) (its self-distances are
        # 1e-4); its KeOps backend and torchpair use |x - y| exactly: give it the exact cost
        kw["cost"] = _exact_distance
    loss = geomloss.SamplesLoss("sinkhorn", backend="tensorized", debias=True, **kw)
    return loss(X, Y) if a is None else loss(a, X, b, Y)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("blur,scaling", [(0.05, 0.5), (0.3, 0.9), (0.01, 0.7)])
def test_matches_geomloss(p, blur, scaling):
    X, Y, a, b = _clouds()
    got = tp.sinkhorn_divergence(X, Y, p=p, blur=blur, scaling=scaling)
    want = _geomloss(X, Y, p=p, blur=blur, scaling=scaling)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-9)
    got_w = tp.sinkhorn_divergence(X, Y, a, b, p=p, blur=blur, scaling=scaling)
    want_w = _geomloss(X, Y, a, b, p=p, blur=blur, scaling=scaling)
    np.testing.assert_allclose(got_w.item(), want_w.item(), rtol=1e-9)


def test_gradients_match_geomloss():
    X, Y, a, b = _clouds(seed=1)
    ins = [t.clone().requires_grad_() for t in (X, Y, a, b)]
    ref = [t.clone().requires_grad_() for t in (X, Y, a, b)]
    got = tp.sinkhorn_divergence(ins[0], ins[1], ins[2], ins[3], blur=0.1, scaling=0.8)
    want = _geomloss(ref[0], ref[1], ref[2], ref[3], blur=0.1, scaling=0.8)
    got.backward()
    want.backward()
    for g, w in zip(ins, ref):
        np.testing.assert_allclose(g.grad.numpy(), w.grad.numpy(), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("reach", [0.5, 2.0])
def test_unbalanced_matches_geomloss(reach):
    X, Y, a, b = _clouds(seed=2)
    b = b * 1.5
    ins = [t.clone().requires_grad_() for t in (X, Y, a, b)]
    ref = [t.clone().requires_grad_() for t in (X, Y, a, b)]
    got = tp.sinkhorn_divergence(*ins, blur=0.1, scaling=0.7, reach=reach)
    want = _geomloss(ref[0], ref[1], ref[2], ref[3], blur=0.1, scaling=0.7, reach=reach)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-9)
    got.backward()
    want.backward()
    for g, w in zip(ins, ref):
        np.testing.assert_allclose(g.grad.numpy(), w.grad.numpy(), rtol=1e-7, atol=1e-10)


def test_batched_matches_geomloss_and_broadcasts():
    X, Y, a, b = _clouds(batch=(3,), seed=3)
    got = tp.sinkhorn_divergence(X, Y, a, b, blur=0.1)
    want = _geomloss(X, Y, a, b, blur=0.1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9)
    # one Y for every X of the batch: each problem as its own call
    got_b = tp.sinkhorn_divergence(X, Y[0], blur=0.1, diameter=5.0)
    for i in range(3):
        one = tp.sinkhorn_divergence(X[i], Y[0], blur=0.1, diameter=5.0)
        np.testing.assert_allclose(got_b[i].item(), one.item(), rtol=1e-10)


def test_float32_matches_float64():
    X, Y, _, _ = _clouds(seed=4)
    got = tp.sinkhorn_divergence(X.float(), Y.float(), blur=0.1)
    assert got.dtype == torch.float32
    np.testing.assert_allclose(got.item(), tp.sinkhorn_divergence(X, Y, blur=0.1).item(), rtol=1e-4)


def test_nonnegative_and_zero_for_identical():
    for seed in range(3):
        X, Y, a, b = _clouds(seed=seed)
        assert tp.sinkhorn_divergence(X, Y, a, b, blur=0.2).item() >= 0
    X, _, a, _ = _clouds(seed=5)
    same = tp.sinkhorn_divergence(X, X.clone(), a, a.clone(), blur=0.5, tol=1e-12, max_iter=5000)
    assert abs(same.item()) < 1e-10


def test_converged_value_against_dense_pot():
    """With tol the loop runs to convergence; OT_eps of GeomLoss' convention is POT's
    entropic objective with the KL to a (x) b; its debiased combination is checked against
    POT's ot.sinkhorn on the dense costs."""
    ot = pytest.importorskip("ot")
    X, Y, a, b = _clouds(n=12, m=9, seed=6)
    eps = 0.3 ** 2
    got = tp.sinkhorn_divergence(X, Y, a, b, blur=0.3, tol=1e-13, max_iter=100000)

    def ot_eps(u, x, v, y):
        C = (torch.cdist(x, y) ** 2 / 2).numpy()
        P = ot.sinkhorn(u.numpy(), v.numpy(), C, eps, method="sinkhorn_log", stopThr=1e-14, numItermax=100000)
        kl = np.sum(P * np.log(P / np.outer(u.numpy(), v.numpy())))
        return np.sum(P * C) + eps * kl

    want = ot_eps(a, X, b, Y) - 0.5 * ot_eps(a, X, a, X) - 0.5 * ot_eps(b, Y, b, Y)
    np.testing.assert_allclose(got.item(), want, rtol=1e-7)


def test_gradcheck_converged_envelope_and_unrolled():
    X, Y, a, b = _clouds(n=5, m=4, d=2, seed=7)
    ins = tuple(t.clone().requires_grad_() for t in (X, Y, a, b))

    def converged(x, y, u, v):
        return tp.sinkhorn_divergence(x, y, u, v / v.sum() * u.sum(), blur=0.5, tol=1e-14, max_iter=10000,
                                      diameter=4.0)

    torch.autograd.gradcheck(converged, ins, atol=1e-6)

    def unrolled(x, y, u, v):
        return tp.sinkhorn_divergence(x, y, u, v / v.sum() * u.sum(), blur=0.2, scaling=0.6, diameter=4.0,
                                      unrolled=True)

    torch.autograd.gradcheck(unrolled, ins)


def test_log_and_tolerance_warning():
    X, Y, a, b = _clouds(seed=8)
    from geomloss._legacy.sinkhorn_divergence import epsilon_schedule, max_diameter
    value, log = tp.sinkhorn_divergence(X, Y, blur=0.05, log=True)
    schedule = epsilon_schedule(2, max_diameter(X, Y), 0.05, 0.5)
    assert log["niter"] == len(schedule) and log["err"].shape == ()
    _, log = tp.sinkhorn_divergence(X, Y, blur=0.5, tol=1e-10, max_iter=5000, log=True)
    assert float(log["err"]) < 1e-10 and log["niter"] > len(epsilon_schedule(2, max_diameter(X, Y), 0.5, 0.5))
    with pytest.warns(UserWarning, match="tol"):
        tp.sinkhorn_divergence(X, Y, blur=0.01, tol=1e-12, max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tp.sinkhorn_divergence(X, Y, blur=0.5, tol=1e-6)


def test_inputs_not_modified():
    X, Y, a, b = _clouds(seed=9)
    copies = [t.clone() for t in (X, Y, a, b)]
    tp.sinkhorn_divergence(X, Y, a, b)
    for t, c in zip((X, Y, a, b), copies):
        assert torch.equal(t, c)


@pytest.mark.parametrize("metric,cost,p", [
    ("cityblock", lambda x, y: torch.cdist(x, y, p=1), 1),
    ("sqeuclidean", lambda x, y: torch.cdist(x, y) ** 2, 2),
    ("minkowski", lambda x, y: torch.cdist(x, y, p=3), 1),
])
def test_catalog_metric_cost_matches_geomloss_custom_cost(metric, cost, p):
    X, Y, a, b = _clouds(seed=10)
    kw = {"metric_p": 3} if metric == "minkowski" else {}
    ins = [t.clone().requires_grad_() for t in (X, Y)]
    ref = [t.clone().requires_grad_() for t in (X, Y)]
    got = tp.sinkhorn_divergence(ins[0], ins[1], a, b, p=p, blur=0.3, scaling=0.8, metric=metric, diameter=6.0, **kw)
    loss = geomloss.SamplesLoss("sinkhorn", p=p, blur=0.3, scaling=0.8, diameter=6.0, backend="tensorized",
                                cost=lambda x, y: cost(x, y))
    want = loss(a, ref[0], b, ref[1])
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-9)
    got.backward()
    want.backward()
    for g, w in zip(ins, ref):
        np.testing.assert_allclose(g.grad.numpy(), w.grad.numpy(), rtol=1e-7, atol=1e-10)


def test_default_diameter_of_a_catalog_metric_is_the_largest_cost():
    X, Y, _, _ = _clouds(seed=11)
    largest = torch.cdist(X, Y, p=1).max().item()
    got = tp.sinkhorn_divergence(X, Y, p=1, blur=0.2, metric="cityblock")
    want = tp.sinkhorn_divergence(X, Y, p=1, blur=0.2, metric="cityblock", diameter=largest)
    assert got.item() == want.item()


def test_empty_sets_follow_the_exact_solver():
    X, Y, _, _ = _clouds(seed=12)
    assert tp.sinkhorn_divergence(X[:0], Y[:0]).item() == 0.0
    with pytest.raises(ValueError, match=r"'a' and 'b'"):
        tp.sinkhorn_divergence(X[:0], Y)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_weighted_logsumexp_whose_first_tile_is_far_below_zero(dtype):
    """Small eps: every scale * K + w of a row can be far below -709 (double) or -88 (float);
    the streamed logsumexp must stay finite (dense torch.logsumexp is the oracle)."""
    g = torch.Generator().manual_seed(0)
    X, Y = torch.randn(30, 3, generator=g, dtype=dtype), torch.randn(25, 3, generator=g, dtype=dtype)
    w = torch.randn(25, generator=g, dtype=dtype)
    for scale in (-200.0, -2000.0):
        got = tp.lazy(X, Y, "sqeuclidean").logsumexp(-1, scale=scale, log_weight=w)
        want = torch.logsumexp(scale * torch.cdist(X.double(), Y.double()) ** 2 + w.double(), -1)
        assert torch.isfinite(got).all()
        np.testing.assert_allclose(got.double().numpy(), want.numpy(), rtol=1e-5 if dtype == torch.float32 else 1e-10)
