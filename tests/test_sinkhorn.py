"""Entropic transport on dense costs (tp.sinkhorn, tp.sinkhorn2, tp.sinkhorn_unbalanced[2])
against POT, and against the exact solver as reg -> 0."""
import warnings

import numpy as np
import ot
import pytest
import torch

import torchpair as tp


def _problem(n=7, m=5, seed=0, batch=()):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*batch, n, 2, generator=g, dtype=torch.float64)
    y = torch.randn(*batch, m, 2, generator=g, dtype=torch.float64) + 0.5
    M = torch.cdist(x, y) ** 2
    a = torch.rand(*batch, n, generator=g, dtype=torch.float64) + 0.1
    b = torch.rand(*batch, m, generator=g, dtype=torch.float64) + 0.1
    return a / a.sum(-1, keepdim=True), b / b.sum(-1, keepdim=True), M


@pytest.mark.parametrize("reg", [0.05, 0.5, 2.0])
def test_sinkhorn2_matches_pot(reg):
    a, b, M = _problem()
    got = tp.sinkhorn2(a, b, M, reg, stopThr=1e-13, numItermax=100000)
    want = ot.sinkhorn2(a.numpy(), b.numpy(), M.numpy(), reg, stopThr=1e-13, numItermax=100000)
    want_log = ot.bregman.sinkhorn_log(a.numpy(), b.numpy(), M.numpy(), reg, stopThr=1e-13, numItermax=100000)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    plan = tp.sinkhorn(a, b, M, reg, stopThr=1e-13, numItermax=100000)
    np.testing.assert_allclose(plan.numpy(), want_log, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(plan.sum(-1).numpy(), a.numpy(), rtol=1e-9)


def test_sinkhorn_log_dict_matches_pot_iterations():
    a, b, M = _problem(seed=3)
    plan, log = tp.sinkhorn(a, b, M, 0.3, log=True, stopThr=1e-9)
    want, wlog = ot.sinkhorn(a.numpy(), b.numpy(), M.numpy(), 0.3, method="sinkhorn_log", log=True, stopThr=1e-9)
    assert log["niter"] == wlog["niter"]
    assert len(log["err"]) == len(wlog["err"])
    np.testing.assert_allclose(float(log["err"][-1]), float(wlog["err"][-1]), rtol=1e-5)
    assert float(log["err"][-1]) < 1e-9
    np.testing.assert_allclose(log["log_u"].numpy(), wlog["log_u"], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(plan.numpy(), want, rtol=1e-6, atol=1e-13)


def test_batched_and_float32():
    a, b, M = _problem(batch=(3, 2), seed=5)
    got = tp.sinkhorn2(a, b, M, 0.2, stopThr=1e-12, numItermax=100000)
    assert got.shape == (3, 2)
    for i in range(3):
        for j in range(2):
            want = ot.sinkhorn2(a[i, j].numpy(), b[i, j].numpy(), M[i, j].numpy(), 0.2, stopThr=1e-12,
                                numItermax=100000)
            np.testing.assert_allclose(got[i, j].item(), want, rtol=1e-6)
    # broadcast: one cost for a batch of weights
    got_b = tp.sinkhorn2(a[:, 0], b[:, 0], M[0, 0], 0.2, stopThr=1e-12, numItermax=100000)
    want0 = ot.sinkhorn2(a[1, 0].numpy(), b[1, 0].numpy(), M[0, 0].numpy(), 0.2, stopThr=1e-12, numItermax=100000)
    np.testing.assert_allclose(got_b[1].item(), want0, rtol=1e-6)
    got32 = tp.sinkhorn2(a[0, 0].float(), b[0, 0].float(), M[0, 0].float(), 0.2, stopThr=1e-6)
    assert got32.dtype == torch.float32
    np.testing.assert_allclose(got32.item(), got[0, 0].item(), rtol=1e-4)


def test_integer_weights_and_uniform_default():
    _, _, M = _problem(n=4, m=4)
    a = torch.tensor([1, 2, 3, 4])
    b = torch.tensor([4, 3, 2, 1])
    got = tp.sinkhorn2(a, b, M, 0.5, stopThr=1e-12)
    want = ot.sinkhorn2(a.double().numpy(), b.double().numpy(), M.numpy(), 0.5, stopThr=1e-12)
    np.testing.assert_allclose(got.item(), want, rtol=1e-6)
    got_u = tp.sinkhorn2(None, [], M, 0.5, stopThr=1e-12)
    want_u = ot.sinkhorn2([], [], M.numpy(), 0.5, stopThr=1e-12)
    np.testing.assert_allclose(got_u.item(), want_u, rtol=1e-6)


def test_reg_to_zero_tends_to_emd2():
    a, b, M = _problem(n=6, m=6, seed=7)
    exact = tp.emd2(a, b, M).item()
    gaps = [abs(tp.sinkhorn2(a, b, M, reg, stopThr=1e-11, numItermax=200000).item() - exact)
            for reg in (0.1, 0.01, 0.001)]
    assert gaps[2] < gaps[0]
    assert gaps[2] < 1e-3 * max(exact, 1.0)


def test_warning_when_not_converged():
    a, b, M = _problem()
    with pytest.warns(UserWarning, match="torchpair.sinkhorn2: Sinkhorn did not converge"):
        tp.sinkhorn2(a, b, M, 0.01, numItermax=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tp.sinkhorn2(a, b, M, 0.01, numItermax=3, warn=False)
        tp.sinkhorn2(a, b, M, 1.0)


def test_gradient_through_iterations_gradcheck():
    a, b, M = _problem(n=4, m=3, seed=2)
    a.requires_grad_()
    M.requires_grad_()
    torch.autograd.gradcheck(lambda a_, M_: tp.sinkhorn2(a_ / a_.sum(), b, M_, 0.5, numItermax=30, warn=False),
                             (a, M))


@pytest.mark.parametrize("reg_m", [0.5, 5.0, (1.0, float("inf"))])
@pytest.mark.parametrize("reg_type", ["kl", "entropy"])
def test_unbalanced_matches_pot(reg_m, reg_type):
    a, b, M = _problem(seed=11)
    M = M / M.max()  # costs of the order of reg: a plan of order 1
    a = a * 1.7  # unequal masses
    kw = dict(reg_type=reg_type, stopThr=1e-14, numItermax=100000)
    for rc in ("linear", "total"):
        got = tp.sinkhorn_unbalanced2(a, b, M, 0.3, reg_m, returnCost=rc, **kw)
        want = ot.unbalanced.sinkhorn_unbalanced2(a.numpy(), b.numpy(), M.numpy(), 0.3, reg_m, returnCost=rc, **kw)
        # POT's total cost (KL terms without their mass terms) can cancel to ~0: an absolute floor
        np.testing.assert_allclose(got.item(), float(want), rtol=1e-6, atol=1e-12 if rc == "total" else 0)
    plan = tp.sinkhorn_unbalanced(a, b, M, 0.3, reg_m, **kw)
    want = ot.unbalanced.sinkhorn_unbalanced(a.numpy(), b.numpy(), M.numpy(), 0.3, reg_m, **kw)
    np.testing.assert_allclose(plan.numpy(), want, rtol=1e-6, atol=1e-14)


def test_unbalanced_batched_and_log():
    a, b, M = _problem(seed=4, batch=(2,))
    M = M / M.max()
    cost, log = tp.sinkhorn_unbalanced2(a, b * 2, M, 0.2, 1.0, log=True, stopThr=1e-12, numItermax=10000)
    for i in range(2):
        want = ot.unbalanced.sinkhorn_unbalanced2(a[i].numpy(), 2 * b[i].numpy(), M[i].numpy(), 0.2, 1.0,
                                                  stopThr=1e-12, numItermax=10000)
        np.testing.assert_allclose(cost[i].item(), float(want), rtol=1e-6)
    assert float(log["err"][-1].max()) < 1e-12 and log["niter"] > 0
    with pytest.warns(UserWarning, match="did not converge"):
        tp.sinkhorn_unbalanced2(a, b, M, 0.01, 1.0, numItermax=2)


def test_inputs_not_modified():
    a, b, M = _problem()
    copies = [t.clone() for t in (a, b, M)]
    tp.sinkhorn2(a, b, M, 0.1, warn=False)
    tp.sinkhorn_unbalanced2(a, b, M, 0.1, 1.0, warn=False)
    for t, c in zip((a, b, M), copies):
        assert torch.equal(t, c)
