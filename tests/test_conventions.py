"""The documented values and gradients at the non-differentiable and undefined points of
the numeric distances (docs/conventions.md), in both engines (small D: difference-based,
D > 16: GEMM) where a metric has both, and on the device-generic path."""
import math

import numpy as np
import pytest
import torch
from scipy.spatial import distance as ssd
from sklearn.metrics import pairwise as skp

import torchpair as tp

F64 = torch.float64


def grads(metric, x, y, index=(0, 0), **params):
    xr, yr = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    out = tp.pairwise(xr, yr, metric, **params)
    out[index].backward()
    return out.detach(), xr.grad, yr.grad


@pytest.fixture(params=["native", "generic"])
def engine(request, monkeypatch):
    if request.param == "generic":
        monkeypatch.setenv("TORCHPAIR_FORCE_GENERIC", "1")
    return request.param


@pytest.mark.parametrize("metric,params", [("euclidean", {}), ("cityblock", {}), ("chebyshev", {}),
                                           ("minkowski", {"p": 3.0}), ("minkowski", {"p": 1.5}),
                                           ("seuclidean", {"V": None}), ("mahalanobis", {"VI": None}),
                                           ("canberra", {}), ("braycurtis", {}), ("hellinger", {}),
                                           ("nan_euclidean", {}), ("snr", {})])
@pytest.mark.parametrize("d", [3, 20])
def test_zero_distance_has_zero_gradient(metric, params, d, engine):
    x = torch.rand(4, d, dtype=F64) + 0.5
    y = torch.cat([x[:1], torch.rand(3, d, dtype=F64) + 0.5])
    if "V" in params:
        params = {"V": torch.rand(d, dtype=F64) + 0.5}
    if "VI" in params:
        params = {"VI": torch.eye(d, dtype=F64) * 2}
    out, gx, gy = grads(metric, x, y, **params)
    gemm = metric == "mahalanobis" or (d > 16 and metric in ("euclidean", "seuclidean", "hellinger"))
    # difference-based kernels are exact; the GEMM form leaves rounding noise (sqrt of ~eps)
    assert out[0, 0] == 0 if not gemm else out[0, 0] < 1e-6
    assert torch.equal(gx, torch.zeros_like(x)) and torch.equal(gy, torch.zeros_like(y))


def test_cityblock_gradient_is_zero_at_equal_coordinates(engine):
    x = torch.tensor([[1.0, 2.0, 3.0]], dtype=F64)
    y = torch.tensor([[1.0, 0.0, 5.0]], dtype=F64)
    out, gx, gy = grads("cityblock", x, y)
    assert out.item() == 4.0
    assert gx.tolist() == [[0.0, 1.0, -1.0]] and gy.tolist() == [[0.0, -1.0, 1.0]]


def test_chebyshev_ties_split_the_gradient_evenly(engine):
    x = torch.tensor([[0.0, 0.0, 0.0, 1.0]], dtype=F64)
    y = torch.tensor([[2.0, -2.0, 1.0, 3.0]], dtype=F64)  # |diff| = 2, 2, 1, 2: three-way tie
    out, gx, gy = grads("chebyshev", x, y)
    assert out.item() == 2.0
    torch.testing.assert_close(gx, torch.tensor([[-1 / 3, 1 / 3, 0.0, -1 / 3]], dtype=F64))
    torch.testing.assert_close(gy, -gx)


def test_canberra_zero_over_zero_terms(engine):
    x = torch.tensor([[0.0, 1.0, 0.0]], dtype=F64)
    y = torch.tensor([[0.0, 3.0, 2.0]], dtype=F64)
    out, gx, gy = grads("canberra", x, y)
    assert out.item() == pytest.approx(ssd.canberra(x[0].numpy(), y[0].numpy()))  # the 0/0 term counts 0
    assert torch.isfinite(gx).all() and torch.isfinite(gy).all()
    assert gx[0, 0] == 0 and gy[0, 0] == 0


def test_braycurtis_both_rows_zero(engine):
    z = torch.zeros(1, 3, dtype=F64)
    y = torch.tensor([[1.0, 2.0, 0.0]], dtype=F64)
    out, gx, gy = grads("braycurtis", z, z.clone())
    assert out.item() == 0.0  # scipy: 0/0 = NaN
    assert torch.equal(gx, torch.zeros_like(z)) and torch.equal(gy, torch.zeros_like(z))
    out, gx, gy = grads("braycurtis", z, y)
    assert out.item() == ssd.braycurtis(z[0].numpy(), y[0].numpy()) == 1.0
    assert torch.isfinite(gx).all() and torch.isfinite(gy).all()


@pytest.mark.parametrize("metric", ["cosine", "correlation"])
@pytest.mark.parametrize("d", [3, 20])
def test_zero_norm_or_constant_row(metric, d, engine):
    x = torch.full((2, d), 2.0, dtype=F64) if metric == "correlation" else torch.zeros(2, d, dtype=F64)
    x[1] = torch.randn(d, dtype=F64)
    y = torch.randn(3, d, dtype=F64)
    out, gx, gy = grads(metric, x, y)
    # sklearn's cosine_distances: a zero row is at distance 1 from everything (scipy: NaN)
    torch.testing.assert_close(out[0], torch.ones(3, dtype=F64))
    assert torch.equal(gx[0], torch.zeros(d, dtype=F64)) and torch.equal(gy, torch.zeros_like(y))
    if metric == "cosine":
        torch.testing.assert_close(out, torch.from_numpy(skp.cosine_distances(x.numpy(), y.numpy())))
    # self-comparisons of the constant row are exact zeros
    assert tp.pairwise(x, None, metric)[0, 0] == 0


def test_jensenshannon_zero_probabilities(engine):
    x = torch.tensor([[0.0, 0.5, 0.5], [0.2, 0.0, 0.8]], dtype=F64)
    y = torch.tensor([[0.0, 0.3, 0.7], [1.0, 0.0, 0.0]], dtype=F64)
    xr = x.clone().requires_grad_(True)
    out = tp.pairwise(xr, y, "jensenshannon")
    torch.testing.assert_close(out.detach(), torch.from_numpy(ssd.cdist(x.numpy(), y.numpy(), "jensenshannon")))
    out.sum().backward()
    assert torch.isfinite(xr.grad).all()
    # p = q: distance 0, gradient 0
    out, gx, gy = grads("jensenshannon", x[:1], x[:1].clone())
    assert out.item() == 0 and torch.equal(gx, torch.zeros_like(gx))


_JS_NEG_X = [[1.0, -1.0, 2.0], [1.0, 2.0, -3.0], [-1.0, -1.0, -1.0], [1.0, -1.0, 0.0], [math.nan, -1.0, 1.0],
             [0.2, 0.3, 0.5], [1.0, 2.0, 3.0], [1.0, -0.0, 1.0], [-1e-300, 1.0, 1.0]]
_JS_NEG_Y = [[1.0, 1.0, 1.0], [0.5, 0.5, 0.0], [-1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 0.0, 5.0]]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_jensenshannon_negative_entries_give_inf_as_scipy(dtype, engine):
    """A row with a negative entry is not a probability vector: scipy's cdist and pdist give
    +inf for every pair with one (whatever the row's sum, also with a NaN in the row); -0.0 is
    not negative. torchpair gives the same numbers, the gradient 0 for those pairs."""
    xn, yn = np.array(_JS_NEG_X), np.array(_JS_NEG_Y)
    if dtype == torch.float32:
        xn[-1, 0] = -1e-30  # still negative in float32 (scipy casts float32 to float64 itself)
    ref = torch.from_numpy(ssd.cdist(xn, yn, "jensenshannon"))
    assert torch.isinf(ref).sum() > 10 and torch.isfinite(ref).sum() > 4  # the oracle covers both cases
    x, y = torch.from_numpy(xn).to(dtype), torch.from_numpy(yn).to(dtype)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == F64 else dict(rtol=1e-5, atol=1e-6)
    xr, yr = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    out = tp.pairwise(xr, yr, "jensenshannon")
    torch.testing.assert_close(out.detach().double(), ref, equal_nan=True, **tol)
    # base 2: the divergence divided by log 2 (inf stays inf)
    torch.testing.assert_close(tp.cdist(x, y, "jensenshannon", base=2.0).double(), ref / math.sqrt(math.log(2.0)),
                               equal_nan=True, **tol)
    finite = torch.isfinite(out.detach())
    torch.where(finite, out, torch.zeros_like(out)).sum().backward()
    negative_rows = (x < 0).any(-1)
    assert torch.isfinite(xr.grad).all() and torch.isfinite(yr.grad).all()
    assert torch.equal(xr.grad[negative_rows], torch.zeros_like(xr.grad[negative_rows]))
    # pdist (scipy's pdist); pairwise(X, None) is squareform(pdist(X)) off the diagonal, and
    # its diagonal is 0 for a probability row, inf for a row with a negative entry (as the
    # diagonal of scipy's cdist(X, X): such a row is at distance inf from everything)
    z = np.concatenate([xn, yn])
    ref_p = torch.from_numpy(ssd.pdist(z, "jensenshannon"))
    zt = torch.from_numpy(z).to(dtype)
    torch.testing.assert_close(tp.pdist(zt, "jensenshannon").double(), ref_p, equal_nan=True, **tol)
    square = torch.from_numpy(ssd.squareform(ssd.pdist(z, "jensenshannon")))
    square.diagonal().copy_(torch.from_numpy(ssd.cdist(z, z, "jensenshannon")).diagonal())
    torch.testing.assert_close(tp.pairwise(zt, None, "jensenshannon").double(), square, equal_nan=True, **tol)
    # the lazy consumers see the same values
    torch.testing.assert_close(tp.lazy(x, y, "jensenshannon").min(-1).values.double(), ref.min(-1).values,
                               equal_nan=True, **tol)


def test_mahalanobis_singular_covariance():
    """Fewer rows than features: the covariance is singular; the default VI is its
    pseudo-inverse (scipy's inverse fails)."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(4, 6, dtype=F64, generator=g), torch.randn(3, 6, dtype=F64, generator=g)
    out = tp.pairwise(x, y, "mahalanobis")
    z = np.vstack([x.numpy(), y.numpy()])
    vi = np.linalg.pinv(np.cov(z.T))
    ref = ssd.cdist(x.numpy(), y.numpy(), "mahalanobis", VI=vi)
    torch.testing.assert_close(out, torch.from_numpy(ref), rtol=1e-7, atol=1e-7)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize("requires_grad", [False, True])  # native preparation / ATen composition
def test_mahalanobis_near_singular_covariance_is_pseudo_inverted(dtype, requires_grad):
    """A positive definite covariance with an eigenvalue under the pseudo-inverse's cutoff
    (eps * D times the largest) has that direction dropped, as numpy's pinv with that cutoff
    does, not inverted. The rows are columns of a Hadamard matrix (the third scaled by a power
    of two), so the covariance is exactly diagonal in both dtypes: its Cholesky factorisation
    succeeds, and only the native path's certificate stops the inverse being used. A
    well-conditioned covariance gives scipy's default, its inverse."""
    h = np.array([[1.0]])
    for _ in range(3):
        h = np.block([[h, h], [h, -h]])
    z = h[:, 1:4].copy()  # 8 rows, 3 orthogonal zero-mean columns: cov = diag(8/7, 8/7, 8/7 s^2)
    eps = np.finfo(np.float32 if dtype == torch.float32 else np.float64).eps
    z[:, 2] *= 2.0 ** (-12 if dtype == torch.float32 else -26)  # s^2 < eps * D
    cov = np.cov(z.T)
    assert np.count_nonzero(cov - np.diag(np.diag(cov))) == 0 and cov[2, 2] < eps * 3 * cov[0, 0]
    x, y = torch.from_numpy(z[:4]), torch.from_numpy(z[4:])
    ref = ssd.cdist(z[:4], z[4:], "mahalanobis", VI=np.linalg.pinv(cov, rcond=eps * 3, hermitian=True))
    inv_ref = ssd.cdist(z[:4], z[4:], "mahalanobis", VI=np.linalg.inv(cov))
    assert not np.allclose(inv_ref, ref, rtol=0.1)
    out = tp.pairwise(x.to(dtype).requires_grad_(requires_grad), y.to(dtype), "mahalanobis").detach()
    tol = 1e-5 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(out.double(), torch.from_numpy(ref), rtol=tol, atol=tol)
    # well-conditioned: scipy's default VI (np.linalg.inv of the covariance)
    g = torch.Generator().manual_seed(3)
    x2, y2 = torch.randn(40, 6, dtype=F64, generator=g), torch.randn(30, 6, dtype=F64, generator=g)
    ref2 = ssd.cdist(x2.numpy(), y2.numpy(), "mahalanobis")
    out2 = tp.pairwise(x2.to(dtype).requires_grad_(requires_grad), y2.to(dtype), "mahalanobis").detach()
    torch.testing.assert_close(out2.double(), torch.from_numpy(ref2), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize("requires_grad", [False, True])  # native preparation / ATen composition
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_mahalanobis_non_finite_data_gives_nan(dtype, requires_grad, bad):
    """A NaN or inf anywhere in the stacked rows makes the covariance, hence VI, non-finite:
    every distance is NaN, as scipy's (torchpair does not hand such a matrix to LAPACK, which
    fails to converge on it)."""
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(7, 5, dtype=dtype, generator=g), torch.randn(6, 5, dtype=dtype, generator=g)
    x[2, 3] = bad
    ref = ssd.cdist(x.double().numpy(), y.double().numpy(), "mahalanobis")
    assert np.isnan(ref).all()
    out = tp.pairwise(x.clone().requires_grad_(requires_grad), y, "mahalanobis")
    assert torch.isnan(out).all()
    assert torch.isnan(tp.pdist(x.clone().requires_grad_(requires_grad), "mahalanobis")).all()
    assert not torch.isnan(y).any() and x[2, 3].item() != 0  # inputs untouched


def test_seuclidean_zero_variance_drops_the_feature(engine):
    x = torch.randn(5, 4, dtype=F64)
    y = torch.randn(6, 4, dtype=F64)
    x[:, 2] = 1.5
    y[:, 2] = 1.5  # a constant feature: variance 0
    xr = x.clone().requires_grad_(True)
    out = tp.pairwise(xr, y, "seuclidean")
    keep = [0, 1, 3]
    ref = ssd.cdist(x[:, keep].numpy(), y[:, keep].numpy(), "seuclidean")  # scipy itself: NaN
    torch.testing.assert_close(out.detach(), torch.from_numpy(ref))
    out.sum().backward()
    assert torch.isfinite(xr.grad).all()


def test_haversine_antipodes(engine):
    x = torch.tensor([[0.3, 0.2]], dtype=F64)
    y = torch.tensor([[-0.3, 0.2 - math.pi]], dtype=F64)
    out, gx, gy = grads("haversine", x, y)
    torch.testing.assert_close(out, torch.tensor([[math.pi]], dtype=F64))
    assert torch.equal(gx, torch.zeros_like(gx)) and torch.equal(gy, torch.zeros_like(gy))


def test_nan_euclidean_missing_coordinates(engine):
    x = torch.tensor([[1.0, float("nan"), 3.0], [float("nan")] * 3], dtype=F64)
    y = torch.tensor([[2.0, 5.0, float("nan")], [0.0, 1.0, 2.0]], dtype=F64)
    xr = x.clone().requires_grad_(True)
    out = tp.pairwise(xr, y, "nan_euclidean")
    torch.testing.assert_close(out.detach(), torch.from_numpy(skp.nan_euclidean_distances(x.numpy(), y.numpy())),
                               equal_nan=True)
    assert torch.isnan(out[1]).all()  # no coordinate present: NaN (sklearn)
    out[0].sum().backward()
    assert xr.grad[0, 1] == 0 and torch.isfinite(xr.grad[0]).all()


def test_minkowski_weight_gradient():
    """Gradients with respect to w, V and VI (tensor parameters) against gradcheck."""
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(4, 5, dtype=F64, generator=g), torch.randn(3, 5, dtype=F64, generator=g)
    w = (torch.rand(5, dtype=F64, generator=g) + 0.5).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda w_: tp.pairwise(x, y, "minkowski", p=3.0, w=w_), (w,))
    assert torch.autograd.gradcheck(lambda w_: tp.pdist(x, "minkowski", p=1.5, w=w_), (w,))
    V = (torch.rand(5, dtype=F64, generator=g) + 0.5).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda v_: tp.pairwise(x, y, "seuclidean", V=v_), (V,))
    a = torch.randn(5, 5, dtype=F64, generator=g)
    VI = (a @ a.T + torch.eye(5, dtype=F64)).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda v_: tp.pairwise(x, y, "mahalanobis", VI=v_), (VI,))
    assert torch.autograd.gradcheck(lambda v_: tp.lazy(x, y, "mahalanobis", VI=v_).sum(-1), (VI,))


@pytest.mark.parametrize("metric", ["cosine", "correlation", "cosine_similarity"])
@pytest.mark.parametrize("consumer", ["dense", "lazy"])
def test_cosine_family_self_comparisons(metric, consumer, engine):
    """Y = None: the normalisation is the GEMM epilogue (side features 1 / |row|); exact
    self-comparisons are 0 with gradient 0 for the distances (the zero / constant row
    included), and the kernel matches sklearn everywhere (a zero row: 0, also with itself)."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(6, 20, dtype=F64, generator=g)
    x[2] = 0.0 if metric != "correlation" else 1.5  # zero norm (after centring for correlation)
    xr = x.clone().requires_grad_(True)
    if consumer == "dense":
        out = tp.pairwise(xr, None, metric)
    else:
        out = tp.lazy(xr, None, metric) @ torch.eye(6, dtype=F64)
    if metric == "cosine_similarity":
        ref = skp.cosine_similarity(x.numpy())
    else:
        xn = x.numpy() - (x.numpy().mean(1, keepdims=True) if metric == "correlation" else 0.0)
        ref = np.clip(skp.cosine_distances(xn), 0, 2)
        np.fill_diagonal(ref, 0.0)
        assert torch.equal(out.detach().diagonal(), torch.zeros(6, dtype=F64))
    torch.testing.assert_close(out.detach(), torch.from_numpy(ref), rtol=1e-10, atol=1e-12)
    out.diagonal().sum().backward()
    if metric != "cosine_similarity":
        assert torch.equal(xr.grad, torch.zeros_like(x))
    else:  # d(x.x / |x|^2)/dx = 0 analytically; the zero row's gradient is 0 by convention
        torch.testing.assert_close(xr.grad, torch.zeros_like(x), rtol=0, atol=1e-12)
