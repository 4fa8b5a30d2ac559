"""tp.sinkhorn_divergence / tp.nn.SinkhornLoss under CPU autocast and with reduced-precision
inputs (docs/contracts.md, "Precision and autocast"), and the fused CPU soft-min's exact
fallback (rows whose shifted sum leaves its exact range), against GeomLoss'
SamplesLoss("sinkhorn") (tensorized backend) as the oracle."""
import pytest
import torch

import torchpair as tp

geomloss = pytest.importorskip("geomloss")


def _clouds(n=40, m=35, d=3, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, d, generator=g, dtype=dtype), torch.rand(m, d, generator=g, dtype=dtype) * 0.8 + 0.1


def _geomloss(X, Y, a=None, b=None, **kw):
    loss = geomloss.SamplesLoss("sinkhorn", backend="tensorized", debias=True, **kw)
    X, Y = X.double(), Y.double()
    return loss(X, Y) if a is None else loss(a.double(), X, b.double(), Y)


KW = dict(p=2, blur=0.1, scaling=0.7)


def test_autocast_keeps_float32_inputs_in_float32():
    X, Y = _clouds()
    Xg = X.clone().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = tp.sinkhorn_divergence(Xg, Y, **KW)
    assert got.dtype == torch.float32
    Xr = X.double().requires_grad_()
    ref = _geomloss(Xr, Y, **KW)
    torch.testing.assert_close(got.double(), ref, rtol=2e-5, atol=1e-7)
    got.backward()
    ref.backward()
    assert Xg.grad.dtype == torch.float32
    torch.testing.assert_close(Xg.grad.double(), Xr.grad, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16])
def test_autocast_promotes_reduced_precision_points_to_float32(low):
    X, Y = _clouds()
    Xl, Yl = X.to(low), Y.to(low)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = tp.sinkhorn_divergence(Xl, Yl, **KW)
    assert got.dtype == torch.float32
    # computed in float32 on the (exactly representable) reduced-precision values
    torch.testing.assert_close(got.double(), _geomloss(Xl, Yl, **KW), rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16])
def test_reduced_precision_outside_autocast_is_computed_in_float32(low):
    X, Y = _clouds()
    Xl = X.to(low).requires_grad_()
    got = tp.sinkhorn_divergence(Xl, Y.to(low), **KW)
    assert got.dtype == low
    Xr = Xl.detach().double().requires_grad_()
    ref = _geomloss(Xr, Y.to(low), **KW)
    # float32 inside, rounded once to the input dtype at the end
    assert got.item() == ref.to(low).item() or abs(got.double() - ref).item() <= torch.finfo(low).eps * ref.item()
    got.backward()
    ref.backward()
    assert Xl.grad.dtype == low
    torch.testing.assert_close(Xl.grad.double(), Xr.grad, rtol=2 * torch.finfo(low).eps, atol=1e-6)


def test_sinkhorn_loss_in_an_autocast_training_step():
    # a linear layer runs in bfloat16 under autocast; the loss takes its output as float32
    torch.manual_seed(0)
    X, Y = _clouds(n=32, m=32)
    layer = torch.nn.Linear(3, 3)
    loss_fn = tp.nn.SinkhornLoss(**KW)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        Z = layer(X)
        assert Z.dtype == torch.bfloat16
        loss = loss_fn(Z, Y)
    assert loss.dtype == torch.float32
    loss.backward()
    assert layer.weight.grad.dtype == torch.float32 and torch.isfinite(layer.weight.grad).all()
    Zr = Z.detach().double().requires_grad_()
    ref = _geomloss(Zr, Y, **KW)
    torch.testing.assert_close(loss.double(), ref, rtol=2e-5, atol=1e-7)
    # the chain rule through the bfloat16 layer, with the oracle's gradient w.r.t. Z
    ref.backward()
    expected = (Zr.grad.to(torch.bfloat16).float().T @ X)
    torch.testing.assert_close(layer.weight.grad, expected, rtol=2e-2, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_large_epsilon_steps_and_uneven_weights(dtype):
    # scaling 0.1 divides eps by 100 per step and the weights span 30 orders of magnitude: the
    # previous potential is a poor shift for many rows, which then take the exact-maximum pass
    X, Y = _clouds(n=60, m=50, dtype=dtype, seed=3)
    g = torch.Generator().manual_seed(1)
    a = torch.exp(-70 * torch.rand(60, generator=g, dtype=torch.float64)).to(dtype)
    b = torch.exp(-70 * torch.rand(50, generator=g, dtype=torch.float64)).to(dtype)
    a, b = a / a.sum(), b / b.sum()
    kw = dict(p=2, blur=0.01, scaling=0.1)
    got = tp.sinkhorn_divergence(X, Y, a, b, **kw)
    ref = _geomloss(X, Y, a, b, **kw)
    rtol = 1e-4 if dtype == torch.float32 else 1e-9
    torch.testing.assert_close(got.double(), ref, rtol=rtol, atol=1e-9)
