"""Autocast: float16/bfloat16 inputs are promoted to float32 under CPU autocast; outside
autocast they are computed in float32 and returned in their own dtype."""
import pytest
import torch

import torchpair as tp


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16], ids=str)
def test_cpu_autocast_promotes_to_float32(low):
    x, y, v = torch.randn(30, 20), torch.randn(25, 20), torch.randn(25, 3)
    xl, yl, vl = x.to(low), y.to(low), v.to(low)
    ref_dense = tp.pairwise(xl.float(), yl.float(), "euclidean")
    ref_mm = tp.lazy(xl.float(), yl.float(), "rbf") @ vl.float()
    with torch.autocast("cpu", dtype=low):
        d = tp.pairwise(xl, yl, "euclidean")
        mm = tp.lazy(xl, yl, "rbf") @ vl
        s = tp.lazy(xl, None, "sqeuclidean").sum(-1)
        # float32 inputs stay float32 and are not downcast inside (e.g. in the GEMM)
        d32 = tp.pairwise(x, y, "euclidean")
    assert d.dtype == mm.dtype == s.dtype == d32.dtype == torch.float32
    torch.testing.assert_close(d, ref_dense)
    torch.testing.assert_close(mm, ref_mm)
    torch.testing.assert_close(d32, tp.pairwise(x, y, "euclidean"))


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16], ids=str)
def test_reduced_precision_outside_autocast(low):
    x, y = torch.randn(30, 20).to(low), torch.randn(25, 20).to(low)
    out = tp.pairwise(x, y, "euclidean")
    assert out.dtype == low
    torch.testing.assert_close(out.float(), tp.pairwise(x.float(), y.float(), "euclidean").to(low).float())
    xg = x.clone().requires_grad_(True)
    (tp.lazy(xg, y, "rbf") @ torch.ones(25, 1, dtype=low)).sum().backward()
    assert xg.grad.dtype == low


def test_autocast_backward():
    x = torch.randn(10, 5).bfloat16().requires_grad_(True)
    y = torch.randn(8, 5).bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = tp.lazy(x, y, "rbf").sum()
    out.backward()
    assert x.grad is not None and x.grad.dtype == torch.bfloat16 and torch.isfinite(x.grad.float()).all()
