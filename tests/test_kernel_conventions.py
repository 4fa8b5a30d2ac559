"""The sklearn kernels at their non-differentiable and undefined points (docs/conventions.md,
"Kernels"), gradients with respect to per-feature length scales, and the parameter
conventions (defaults, integer degrees of negative bases). Oracles: sklearn and autograd
through dense torch formulas written with the same conventions."""
import numpy as np
import pytest
import torch
from sklearn.gaussian_process import kernels as gpk
from sklearn.metrics import pairwise as skp

import torchpair as tp

D64 = torch.float64


def grads(fn, *tensors):
    """Gradients of sum(fn(...) * w) for a fixed random w."""
    leaves = [t.detach().clone().requires_grad_(True) for t in tensors]
    out = fn(*leaves)
    w = torch.randn(out.shape, dtype=out.dtype, generator=torch.Generator().manual_seed(7))
    return torch.autograd.grad((out * w).sum(), leaves)


def both_paths(fn):
    """fn through the dense operator and through a lazy consumer (K @ I is K)."""
    return [
        lambda a, b: fn(a, b, lambda x, y, m, **p: tp.pairwise(x, y, m, **p)),
        lambda a, b: fn(a, b, lambda x, y, m, **p: tp.lazy(x, y, m, **p) @ torch.eye(y.shape[-2], dtype=y.dtype)),
    ]


# ---- laplacian at equal coordinates --------------------------------------------------------
def test_laplacian_equal_coordinates_gradient_is_zero_there():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 5, dtype=D64, generator=g)
    y = torch.randn(3, 5, dtype=D64, generator=g)
    y[0, :3] = x[0, :3]  # shared coordinates: |x_k - y_k| has a kink
    y[1] = x[1]          # an identical row
    ref = lambda a, b: torch.exp(-0.2 * (a[:, None] - b[None]).abs().sum(-1))  # noqa: E731  torch.abs' subgradient 0
    want = grads(ref, x, y)
    torch.testing.assert_close(tp.pairwise(x, y, "laplacian"), torch.from_numpy(skp.laplacian_kernel(x.numpy(), y.numpy())))
    for path in both_paths(lambda a, b, op: op(a, b, "laplacian", gamma=0.2)):
        got = grads(path, x, y)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b)


# ---- cosine_similarity with a zero-norm row ---------------------------------------------------
@pytest.mark.parametrize("d", [3, 20])
def test_cosine_similarity_zero_row(d):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, d, dtype=D64, generator=g)
    y = torch.randn(5, d, dtype=D64, generator=g)
    x[1] = 0
    y[2] = 0
    out = tp.pairwise(x, y, "cosine_similarity")
    torch.testing.assert_close(out, torch.from_numpy(skp.cosine_similarity(x.numpy(), y.numpy())))
    assert torch.all(out[1] == 0) and torch.all(out[:, 2] == 0)  # sklearn: 0

    def ref(a, b):  # the convention: a zero row is the zero vector, with gradient 0
        na, nb = a.norm(dim=-1, keepdim=True), b.norm(dim=-1, keepdim=True)
        ua = torch.where(na == 0, 0.0, a / torch.where(na == 0, 1.0, na))
        ub = torch.where(nb == 0, 0.0, b / torch.where(nb == 0, 1.0, nb))
        return ua @ ub.T

    want = grads(ref, x, y)
    assert torch.all(want[0][1] == 0) and torch.all(want[1][2] == 0)
    for path in both_paths(lambda a, b, op: op(a, b, "cosine_similarity")):
        got = grads(path, x, y)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b)
    # self-comparison with a zero row
    s = tp.pairwise(x, None, "cosine_similarity")
    torch.testing.assert_close(s, torch.from_numpy(skp.cosine_similarity(x.numpy())))
    (gx,) = grads(lambda a: tp.pairwise(a, None, "cosine_similarity"), x)
    assert torch.all(gx[1] == 0) and torch.isfinite(gx).all()


# ---- chi2 / additive_chi2 at 0/0 -------------------------------------------------------------
@pytest.mark.parametrize("metric", ["chi2", "additive_chi2"])
def test_chi2_zero_over_zero(metric):
    g = torch.Generator().manual_seed(2)
    x = torch.rand(4, 6, dtype=D64, generator=g) + 0.1
    y = torch.rand(5, 6, dtype=D64, generator=g) + 0.1
    x[:, 0] = 0
    y[:, 0] = 0   # every pair has x_0 + y_0 = 0: the term is skipped (sklearn)
    x[1, 3] = 0   # a zero on one side only: an ordinary term
    y[2] = 0      # an all-zero row
    fn = getattr(skp, metric + "_kernel")
    out = tp.pairwise(x, y, metric)
    torch.testing.assert_close(out, torch.from_numpy(fn(x.numpy(), y.numpy())))

    def ref(a, b):
        s, t = a[:, None] + b[None], a[:, None] - b[None]
        term = torch.where(s == 0, 0.0, t * t / torch.where(s == 0, 1.0, s))
        acc = term.sum(-1)
        return torch.exp(-acc) if metric == "chi2" else -acc

    want = grads(ref, x, y)
    assert torch.all(want[0][:, 0] == 0) and torch.all(want[1][:, 0] == 0)
    for path in both_paths(lambda a, b, op: op(a, b, metric)):
        got = grads(path, x, y)
        for a, b in zip(got, want):
            assert torch.isfinite(a).all()
            torch.testing.assert_close(a, b)


def test_chi2_self_with_zeros_matches_sklearn():
    x = torch.rand(6, 4, dtype=D64)
    x[:, 1] = 0
    x[2] = 0
    for metric in ("chi2", "additive_chi2"):
        want = getattr(skp, metric + "_kernel")(x.numpy())
        torch.testing.assert_close(tp.pairwise(x, None, metric), torch.from_numpy(want))


# ---- matern at distance 0 ---------------------------------------------------------------------
@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5, float("inf")])
@pytest.mark.parametrize("d", [3, 20])
def test_matern_at_zero_distance(nu, d):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, d, dtype=D64, generator=g)
    y = torch.cat([x[:2], torch.randn(3, d, dtype=D64, generator=g)])
    out = tp.pairwise(x, y, "matern", nu=nu)
    want = gpk.Matern(length_scale=1.0, nu=nu)(x.numpy(), y.numpy())
    # the GEMM form (D > 16) computes d2 = 0 as rounding noise ~eps |x|^2: nu = 0.5 sees its
    # square root (~1e-8 |x|), as euclidean does; the difference-based form is exact
    tol = 1e-8 if d <= 16 else 4e-7
    torch.testing.assert_close(out, torch.from_numpy(want), rtol=1e-8, atol=tol)
    assert out[0, 0] == 1 and out[1, 1] == 1 or d > 16
    # the gradient of the pairs at distance 0 is 0 (nu = 0.5: the convention at the kink; the
    # others: the true gradient)
    for op in (tp.pairwise, lambda a, b, m, **p: tp.lazy(a, b, m, **p).to_dense()):
        xr, yr = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
        (op(xr, yr, "matern", nu=nu)[0, 0] + op(xr, yr, "matern", nu=nu)[1, 1]).backward()
        assert torch.equal(xr.grad, torch.zeros_like(x)) and torch.equal(yr.grad, torch.zeros_like(y))
    # self-comparisons: diagonal exactly 1, no gradient from it, finite gradients overall
    xs = x.clone().requires_grad_(True)
    s = tp.pairwise(xs, None, "matern", nu=nu)
    assert torch.all(s.diagonal() == 1)
    s.diagonal().sum().backward()
    assert torch.equal(xs.grad, torch.zeros_like(x))
    xs.grad = None
    (tp.lazy(xs, None, "matern", nu=nu) @ torch.ones(4, 1, dtype=D64)).sum().backward()
    assert torch.isfinite(xs.grad).all()


# ---- per-feature length scales -------------------------------------------------------------------
@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5, float("inf")])
@pytest.mark.parametrize("d", [3, 20])
def test_matern_length_scales_gradcheck(nu, d):
    g = torch.Generator().manual_seed(4)
    x = torch.randn(5, d, dtype=D64, generator=g, requires_grad=True)
    y = torch.randn(6, d, dtype=D64, generator=g, requires_grad=True)
    ls = (torch.rand(d, dtype=D64, generator=g) + 0.5).requires_grad_(True)
    v = torch.randn(6, 2, dtype=D64, generator=g)
    assert torch.autograd.gradcheck(lambda a, b, l: tp.pairwise(a, b, "matern", nu=nu, length_scales=l), (x, y, ls))
    assert torch.autograd.gradcheck(lambda a, b, l: tp.lazy(a, b, "matern", nu=nu, length_scale=l) @ v, (x, y, ls))
    assert torch.autograd.gradcheck(lambda a, l: tp.lazy(a, None, "matern", nu=nu, length_scales=l).sum(-1), (x, ls))
    # a 0-d tensor length scale is isotropic and differentiable too
    ls0 = torch.tensor(1.3, dtype=D64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, l: tp.pairwise(a, y.detach(), "matern", nu=nu, length_scales=l), (x, ls0))
    torch.testing.assert_close(tp.pairwise(x, y, "matern", nu=nu, length_scales=ls0),
                               tp.pairwise(x, y, "matern", nu=nu, length_scale=1.3))


def test_matern_length_scales_against_dense_torch_gradient():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(7, 4, dtype=D64, generator=g)
    y = torch.randn(8, 4, dtype=D64, generator=g)
    ls = torch.rand(4, dtype=D64, generator=g) + 0.5

    def ref(a, b, l):
        d = torch.cdist(a / l, b / l)
        t = 5 ** 0.5 * d
        return (1 + t + t * t / 3) * torch.exp(-t)

    want = grads(ref, x, y, ls)
    got = grads(lambda a, b, l: tp.pairwise(a, b, "matern", nu=2.5, length_scales=l), x, y, ls)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)


def test_float32_input_with_float64_length_scales():
    x, y = torch.randn(5, 3), torch.randn(4, 3)
    ls = np.array([0.5, 1.0, 2.0])
    out = tp.pairwise(x, y, "matern", nu=0.5, length_scale=ls)
    assert out.dtype == torch.float32
    want = gpk.Matern(length_scale=ls, nu=0.5)(x.double().numpy(), y.double().numpy())
    torch.testing.assert_close(out.double(), torch.from_numpy(want), rtol=1e-5, atol=1e-5)


# ---- polynomial -------------------------------------------------------------------------------
@pytest.mark.parametrize("degree", [1, 2, 3, 4, 7])
def test_polynomial_integer_degree_of_negative_bases(degree):
    """Integer degrees are exact powers: negative bases keep their sign (numpy agrees)."""
    g = torch.Generator().manual_seed(6)
    x = torch.randn(6, 20, dtype=D64, generator=g)
    y = torch.randn(7, 20, dtype=D64, generator=g)
    out = tp.pairwise(x, y, "polynomial", degree=degree, gamma=1.0, coef0=-1.0)
    want = skp.polynomial_kernel(x.numpy(), y.numpy(), degree=degree, gamma=1.0, coef0=-1.0)
    assert ((x @ y.T - 1.0) < 0).any()  # some bases are negative
    torch.testing.assert_close(out, torch.from_numpy(want), rtol=1e-10, atol=1e-10)
    got = grads(lambda a, b: tp.lazy(a, b, "polynomial", degree=degree, gamma=1.0, coef0=-1.0).to_dense(), x, y)
    want_g = grads(lambda a, b: (a @ b.T - 1.0) ** degree, x, y)
    for a, b in zip(got, want_g):
        torch.testing.assert_close(a, b)


def test_polynomial_fractional_degree_negative_base_is_nan_like_numpy():
    x = torch.tensor([[1.0, 0.0]], dtype=D64)
    y = torch.tensor([[-3.0, 0.0], [2.0, 1.0]], dtype=D64)
    out = tp.pairwise(x, y, "polynomial", degree=1.5, gamma=1.0, coef0=0.0)
    with np.errstate(invalid="ignore"):
        want = skp.polynomial_kernel(x.numpy(), y.numpy(), degree=1.5, gamma=1.0, coef0=0.0)
    assert np.isnan(want[0, 0]) and torch.isnan(out[0, 0])
    torch.testing.assert_close(out[0, 1], torch.tensor(want[0, 1], dtype=D64))


def test_defaults_follow_sklearn():
    info = {m["name"]: m for m in map(tp.metric_info, tp.metrics())}
    assert tp.metric_info("poly")["name"] == "polynomial"
    defaults = {p["name"]: p["default"] for p in info["polynomial"]["params"]}
    assert defaults == {"degree": "3", "gamma": "1 / n_features", "coef0": "1"}
    x, y = torch.randn(5, 7, dtype=D64), torch.randn(6, 7, dtype=D64)
    xn, yn = x.numpy(), y.numpy()
    for metric, want in [
        ("polynomial", skp.polynomial_kernel(xn, yn)),
        ("sigmoid", skp.sigmoid_kernel(xn, yn)),
        ("laplacian", skp.laplacian_kernel(xn, yn)),
        ("chi2", skp.chi2_kernel(np.abs(xn), np.abs(yn))),
        ("matern", gpk.Matern()(xn, yn)),
        ("rational_quadratic", gpk.RationalQuadratic()(xn, yn)),
    ]:
        a, b = (x.abs(), y.abs()) if metric == "chi2" else (x, y)
        torch.testing.assert_close(tp.pairwise(a, b, metric), torch.from_numpy(want), rtol=1e-8, atol=1e-8)


def test_kernels_are_similarities_for_knn():
    """Kernels rank by largest value in knn (kind 'similarity')."""
    x, y = torch.randn(5, 4, dtype=D64), torch.randn(9, 4, dtype=D64)
    for metric in ("linear", "polynomial", "sigmoid", "cosine_similarity", "laplacian", "matern", "rational_quadratic"):
        assert tp.metric_info(metric)["kind"] == "similarity"
        vals, idx = tp.knn(x, y, 3, metric)
        want = tp.pairwise(x, y, metric).topk(3, dim=-1)
        torch.testing.assert_close(vals, want.values)


# ---- compile / export (data-dependent checks are skipped while tracing) --------------------------
def test_compile_fullgraph_kernels_and_length_scales():
    torch._dynamo.reset()
    g = torch.Generator().manual_seed(8)
    x, y = torch.rand(9, 4, generator=g, dtype=D64), torch.rand(7, 4, generator=g, dtype=D64)
    v = torch.randn(7, 2, generator=g, dtype=D64)
    ls = (torch.rand(4, generator=g, dtype=D64) + 0.5).requires_grad_(True)

    def f(a, b, c, l):
        return (tp.pairwise(a, b, "chi2"), tp.lazy(a, b, "polynomial", degree=2).matmul(c),
                tp.lazy(a, b, "matern", nu=2.5, length_scales=l).matmul(c), tp.lazy(a, None, "cosine_similarity").sum(-1))

    got = torch.compile(f, fullgraph=True)(x, y, v, ls)
    want = f(x, y, v, ls)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
    (gl,) = torch.autograd.grad(got[2].sum(), ls)
    (wl,) = torch.autograd.grad(want[2].sum(), ls)
    torch.testing.assert_close(gl, wl)
    torch.testing.assert_close(want[0], torch.from_numpy(skp.chi2_kernel(x.numpy(), y.numpy())))


def test_export_matern_with_length_scales():
    class M(torch.nn.Module):
        def forward(self, a, b, l):
            return tp.lazy(a, b, "matern", nu=0.5, length_scales=l).sum(-1)

    g = torch.Generator().manual_seed(9)
    x, y, ls = torch.randn(6, 3, generator=g), torch.randn(5, 3, generator=g), torch.rand(3, generator=g) + 0.5
    ep = torch.export.export(M(), (x, y, ls))
    torch.testing.assert_close(ep.module()(x, y, ls), M()(x, y, ls))
    want = gpk.Matern(length_scale=ls.double().numpy(), nu=0.5)(x.double().numpy(), y.double().numpy()).sum(-1)
    torch.testing.assert_close(ep.module()(x, y, ls).double(), torch.from_numpy(want), rtol=1e-5, atol=1e-5)


# ---- exp_sine_squared: parameters as inputs, distance 0 -------------------------------------
def _ess_params(ls, per, requires_grad=True):
    return (torch.tensor(ls, dtype=D64, requires_grad=requires_grad),
            torch.tensor(per, dtype=D64, requires_grad=requires_grad))


@pytest.mark.parametrize("d", [1, 3, 20])
def test_exp_sine_squared_parameter_gradients_match_sklearn(d):
    """sklearn's eval_gradient gives dK/dlog(theta); dK/dtheta = that / theta."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(7, d, dtype=D64, generator=g)
    x[3] = x[1]  # a pair at distance 0 off the diagonal
    ls0, per0 = 0.9, 1.6
    K, dK = gpk.ExpSineSquared(length_scale=ls0, periodicity=per0)(x.numpy(), eval_gradient=True)
    w = torch.randn(7, 7, dtype=D64, generator=g)
    ls, per = _ess_params(ls0, per0)
    for make in (lambda: tp.pairwise(x, None, "exp_sine_squared", length_scale=ls, periodicity=per),
                 lambda: tp.lazy(x, None, "exp_sine_squared", length_scale=ls, periodicity=per) @ torch.eye(7, dtype=D64),
                 lambda: torch.from_numpy(_squareform(tp.pdist(x, "exp_sine_squared", length_scale=ls,
                                                               periodicity=per)))):
        out = make()
        torch.testing.assert_close(out.detach(), torch.from_numpy(K), rtol=1e-10, atol=1e-12)
        if not out.requires_grad:  # the pdist row's squareform goes through numpy
            continue
        got = torch.autograd.grad((out * w).sum(), (ls, per))
        for i, theta in enumerate((ls0, per0)):
            want = (torch.from_numpy(dK[..., i]) / theta * w).sum()
            torch.testing.assert_close(got[i], want, rtol=1e-9, atol=1e-12)


def _squareform(condensed):
    from scipy.spatial.distance import squareform
    s = squareform(condensed.detach().numpy(), checks=False)
    np.fill_diagonal(s, 1.0)  # a kernel's self-similarity; pdist holds the pairs only
    return s


@pytest.mark.parametrize("d", [1, 20])
def test_exp_sine_squared_pdist_parameter_gradient(d):
    g = torch.Generator().manual_seed(12)
    x = torch.randn(6, d, dtype=D64, generator=g)
    ls0, per0 = 1.2, 0.7
    _, dK = gpk.ExpSineSquared(length_scale=ls0, periodicity=per0)(x.numpy(), eval_gradient=True)
    iu = np.triu_indices(6, 1)
    w = torch.randn(len(iu[0]), dtype=D64, generator=g)
    ls, per = _ess_params(ls0, per0)
    got = torch.autograd.grad((tp.pdist(x, "exp_sine_squared", length_scale=ls, periodicity=per) * w).sum(), (ls, per))
    for i, theta in enumerate((ls0, per0)):
        torch.testing.assert_close(got[i], (torch.from_numpy(dK[..., i][iu]) / theta * w).sum(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("d", [2, 20])
def test_exp_sine_squared_gradcheck_all_inputs(d):
    g = torch.Generator().manual_seed(13)
    x = torch.randn(5, d, dtype=D64, generator=g, requires_grad=True)
    y = torch.randn(6, d, dtype=D64, generator=g, requires_grad=True)
    v = torch.randn(6, 2, dtype=D64, generator=g)
    ls, per = _ess_params(0.8, 1.9)
    f = lambda a, b, l, p: tp.pairwise(a, b, "exp_sine_squared", length_scale=l, periodicity=p)  # noqa: E731
    assert torch.autograd.gradcheck(f, (x, y, ls, per))
    m = lambda a, b, l, p: tp.lazy(a, b, "exp_sine_squared", length_scale=l, periodicity=p) @ v  # noqa: E731
    assert torch.autograd.gradcheck(m, (x, y, ls, per))
    s = lambda a, l, p: tp.lazy(a, None, "exp_sine_squared", length_scale=l, periodicity=p).logsumexp(-1)  # noqa: E731
    assert torch.autograd.gradcheck(s, (x, ls, per))
    # one parameter a tensor, the other a number
    assert torch.autograd.gradcheck(lambda a, p: tp.pairwise(a, y.detach(), "exp_sine_squared", periodicity=p,
                                                             length_scale=0.6), (x, per))


@pytest.mark.parametrize("d", [1, 3, 20])
def test_exp_sine_squared_lazy_consumers_with_tensor_parameters_match_dense(d):
    g = torch.Generator().manual_seed(14)
    x = torch.randn(2, 9, d, dtype=D64, generator=g)
    y = torch.randn(2, 8, d, dtype=D64, generator=g)
    v = torch.randn(2, 8, 3, dtype=D64, generator=g)
    ls, per = _ess_params(0.9, 2.2, requires_grad=False)
    params = {"length_scales": ls, "periodicities": per}  # the tensor path without grad
    K = torch.from_numpy(np.stack([gpk.ExpSineSquared(0.9, 2.2)(a.numpy(), b.numpy()) for a, b in zip(x, y)]))
    L = tp.lazy(x, y, "exp_sine_squared", **params)
    torch.testing.assert_close(L @ v, K @ v)
    torch.testing.assert_close(L.sum(-1), K.sum(-1))
    torch.testing.assert_close(L.sum(-2), K.sum(-2))
    vals, idx = L.topk(3, dim=-1)
    torch.testing.assert_close(vals, K.topk(3, dim=-1).values)
    torch.testing.assert_close(tp.pairwise(x, y, "exp_sine_squared", **params), K)


@pytest.mark.parametrize("d", [1, 3, 20])
@pytest.mark.parametrize("tensor_params", [False, True])
def test_exp_sine_squared_at_zero_distance(d, tensor_params):
    """k = 1 at d = 0; the gradient there is 0 w.r.t. x, y (the factor x - y) and the parameters
    (sin(0) = 0), as euclidean's convention."""
    g = torch.Generator().manual_seed(15)
    x = torch.randn(4, d, dtype=D64, generator=g)
    y = torch.cat([x[:2], torch.randn(3, d, dtype=D64, generator=g)])
    ls, per = _ess_params(0.7, 1.3, requires_grad=tensor_params)
    params = {"length_scale": ls, "periodicity": per} if tensor_params else {"length_scale": 0.7, "periodicity": 1.3}
    want = gpk.ExpSineSquared(0.7, 1.3)(x.numpy(), y.numpy())
    out = tp.pairwise(x, y, "exp_sine_squared", **params)
    torch.testing.assert_close(out.detach(), torch.from_numpy(want), rtol=1e-8, atol=1e-8)
    xr, yr = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    o = tp.pairwise(xr, yr, "exp_sine_squared", **params)
    leaves = (xr, yr, ls, per) if tensor_params else (xr, yr)
    got = torch.autograd.grad(o[0, 0] + o[1, 1], leaves)
    for t in got:
        if tensor_params:  # the GEMM form: d2 of equal rows is rounding noise ~eps |u|^2
            assert t.abs().max() < 1e-12
        else:
            assert torch.equal(t, torch.zeros_like(t))
    # the diagonal of a self-comparison: exactly 1, no gradient
    xs = x.clone().requires_grad_(True)
    s = tp.pairwise(xs, None, "exp_sine_squared", **params)
    assert torch.all(s.diagonal() == 1)
    got = torch.autograd.grad(s.diagonal().sum(), (xs, ls, per) if tensor_params else (xs,))
    for t in got:
        assert torch.equal(t, torch.zeros_like(t))


@pytest.mark.parametrize("name", ["length_scale", "periodicity"])
@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan")])
def test_exp_sine_squared_rejects_bad_parameters(name, bad):
    x = torch.randn(3, 2, dtype=D64)
    with pytest.raises(ValueError, match=f"torchpair.pairwise: parameter '{name}' of metric 'exp_sine_squared' must"):
        tp.pairwise(x, x, "exp_sine_squared", **{name: bad})
    t = torch.tensor(bad, dtype=D64, requires_grad=True)
    with pytest.raises(ValueError, match=f"torchpair.* parameter '{name}' of metric 'exp_sine_squared' must be finite"):
        tp.lazy(x, x, "exp_sine_squared", **{name: t}) @ torch.ones(3, 1, dtype=D64)
    with pytest.raises(ValueError, match=f"parameter '{name}' of metric 'exp_sine_squared' must be one value"):
        tp.pairwise(x, x, "exp_sine_squared", **{name: torch.ones(2, dtype=D64, requires_grad=True)})


def test_exp_sine_squared_defaults_and_info():
    x = torch.randn(5, 3, dtype=D64)
    torch.testing.assert_close(tp.pairwise(x, None, "exp_sine_squared"),
                               torch.from_numpy(gpk.ExpSineSquared()(x.numpy())))
    info = tp.metric_info("exp_sine_squared")
    assert {p["name"]: p["default"] for p in info["params"]}["periodicity"] == "1"
    with pytest.raises((TypeError, ValueError), match="does not take parameter 'nu'"):
        tp.pairwise(x, None, "exp_sine_squared", nu=1.5)


def test_exp_sine_squared_compile_and_export_with_tensor_parameters():
    torch._dynamo.reset()
    g = torch.Generator().manual_seed(16)
    x, y = torch.randn(9, 2, generator=g, dtype=D64), torch.randn(7, 2, generator=g, dtype=D64)
    v = torch.randn(7, 2, generator=g, dtype=D64)
    ls, per = _ess_params(0.8, 1.7)

    def f(a, b, c, l, p):
        return tp.lazy(a, b, "exp_sine_squared", length_scale=l, periodicity=p).matmul(c)

    got = torch.compile(f, fullgraph=True)(x, y, v, ls, per)
    want = torch.from_numpy(gpk.ExpSineSquared(0.8, 1.7)(x.numpy(), y.numpy())) @ v
    torch.testing.assert_close(got, want)
    gw = torch.autograd.grad(f(x, y, v, ls, per).sum(), (ls, per))
    for a, b in zip(torch.autograd.grad(got.sum(), (ls, per)), gw):
        torch.testing.assert_close(a, b)

    class M(torch.nn.Module):
        def forward(self, a, b, l, p):
            return tp.pairwise(a, b, "exp_sine_squared", length_scales=l, periodicities=p)

    ep = torch.export.export(M(), (x, y, ls.detach(), per.detach()))
    torch.testing.assert_close(ep.module()(x, y, ls.detach(), per.detach()),
                               torch.from_numpy(gpk.ExpSineSquared(0.8, 1.7)(x.numpy(), y.numpy())))


def test_length_scale_tensor_requiring_grad_is_an_input():
    """A 0-d tensor that requires grad, passed as length_scale, is differentiable (matern: the
    length_scales slot); one that does not is a number."""
    g = torch.Generator().manual_seed(17)
    x = torch.randn(4, 3, dtype=D64, generator=g, requires_grad=True)
    ls = torch.tensor(1.3, dtype=D64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, l: tp.pairwise(a, None, "matern", nu=2.5, length_scale=l), (x, ls))
    torch.testing.assert_close(tp.pairwise(x, None, "matern", nu=2.5, length_scale=torch.tensor(1.3)),
                               torch.from_numpy(gpk.Matern(1.3, nu=2.5)(x.detach().numpy())))
