"""torchpair.nn loss modules against their functional forms and independent oracles."""
import numpy as np
import pytest
import scipy.spatial.distance as ssd
import scipy.stats
import torch
from scipy.spatial.distance import directed_hausdorff

import torchpair as tp
import torchpair.nn as tpnn


def _batch(b=3, n=9, m=7, d=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, n, d, generator=g, dtype=torch.float64),
            torch.randn(b, m, d, generator=g, dtype=torch.float64) + 0.4)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_reductions_match_functions(reduction):
    X, Y = _batch()
    cases = [
        (tpnn.SinkhornLoss(blur=0.2, reduction=reduction), lambda: tp.sinkhorn_divergence(X, Y, blur=0.2)),
        (tpnn.MMDLoss(gamma=0.5, reduction=reduction), lambda: tp.mmd(X, Y, gamma=0.5)),
        (tpnn.ChamferLoss(point_reduction="sum", reduction=reduction), lambda: tp.chamfer(X, Y, reduction="sum")),
        (tpnn.EnergyLoss(reduction=reduction), lambda: tp.energy_distance(X, Y)),
        (tpnn.HausdorffLoss(directed=True, reduction=reduction), lambda: tp.hausdorff(X, Y, directed=True)),
    ]
    for module, function in cases:
        per = function()
        want = {"mean": per.mean(), "sum": per.sum(), "none": per}[reduction]
        torch.testing.assert_close(module(X, Y), want, rtol=1e-12, atol=1e-12)


def test_oracles():
    X, Y = _batch(seed=1)
    # dense torch / scipy formulas, one problem at a time
    gamma = 0.5
    want_mmd, want_ch, want_h = [], [], []
    for x, y in zip(X, Y):
        kxx = torch.exp(-gamma * torch.cdist(x, x) ** 2).mean()
        kyy = torch.exp(-gamma * torch.cdist(y, y) ** 2).mean()
        kxy = torch.exp(-gamma * torch.cdist(x, y) ** 2).mean()
        want_mmd.append(kxx + kyy - 2 * kxy)
        d2 = ssd.cdist(x.numpy(), y.numpy(), "sqeuclidean")
        want_ch.append(d2.min(1).mean() + d2.min(0).mean())
        want_h.append(max(directed_hausdorff(x.numpy(), y.numpy())[0], directed_hausdorff(y.numpy(), x.numpy())[0]))
    np.testing.assert_allclose(tpnn.MMDLoss(gamma=gamma, reduction="none")(X, Y).numpy(),
                               torch.stack(want_mmd).numpy(), rtol=1e-10)
    np.testing.assert_allclose(tpnn.ChamferLoss(reduction="none")(X, Y).numpy(), want_ch, rtol=1e-10)
    np.testing.assert_allclose(tpnn.HausdorffLoss(reduction="sum")(X, Y).item(), sum(want_h), rtol=1e-10)
    x1, y1 = X[..., :1], Y[..., :1]  # scipy.stats.energy_distance is 1-D
    want_e = [scipy.stats.energy_distance(x.ravel(), y.ravel()) for x, y in zip(x1.numpy(), y1.numpy())]
    # scipy's energy_distance is sqrt(2 E|X-Y| - E|X-X'| - E|Y-Y'|), as tp.energy_distance
    np.testing.assert_allclose(tpnn.EnergyLoss(reduction="none")(x1, y1).numpy(), want_e, rtol=1e-10)


def test_sinkhorn_loss_matches_geomloss_and_trains():
    geomloss = pytest.importorskip("geomloss")
    X, Y = _batch(seed=2)
    got = tpnn.SinkhornLoss(blur=0.1, scaling=0.7)(X, Y)
    want = geomloss.SamplesLoss("sinkhorn", blur=0.1, scaling=0.7, backend="tensorized")(X, Y).mean()
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-9)
    # a few gradient steps move X towards Y
    Xp = X.clone().requires_grad_()
    loss_fn = tpnn.SinkhornLoss(blur=0.1)
    opt = torch.optim.SGD([Xp], lr=2.0)
    first = None
    for _ in range(5):
        opt.zero_grad()
        loss = loss_fn(Xp, Y)
        first = loss.item() if first is None else first
        loss.backward()
        opt.step()
    assert loss_fn(Xp, Y).item() < 0.5 * first


def test_bad_reduction():
    with pytest.raises(ValueError, match=r"torchpair.nn.MMDLoss: 'reduction'"):
        tpnn.MMDLoss(reduction="avg")
    assert "blur=0.2" in repr(tpnn.SinkhornLoss(blur=0.2))
