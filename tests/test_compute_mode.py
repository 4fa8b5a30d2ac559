"""compute_mode (torch.cdist's engine switch) against scipy: "donot_use_mm_for_euclid_dist"
gives exactly 0 for equal rows passed as separate X and Y (scipy's cdist does), for the
squared-distance family and cosine / correlation; "use_mm_for_euclid_dist" forces the GEMM
form; the default's documented bound for equal rows (docs/contracts.md, "compute_mode")."""
import numpy as np
import pytest
import scipy.spatial.distance as ssd
import torch

import torchpair as tp

EXACT = "donot_use_mm_for_euclid_dist"
GEMM = "use_mm_for_euclid_dist"
DEFAULT = "use_mm_for_euclid_dist_if_necessary"

# metric -> (params, scipy oracle on float64 numpy arrays)
FAMILY = {
    "euclidean": ({}, lambda a, b: ssd.cdist(a, b, "euclidean")),
    "sqeuclidean": ({}, lambda a, b: ssd.cdist(a, b, "sqeuclidean")),
    "seuclidean": ({"V": None}, None),  # V filled per test (scipy's default differs with stacking)
    "minkowski": ({"p": 2.0}, lambda a, b: ssd.cdist(a, b, "minkowski", p=2.0)),
    "hellinger": ({}, lambda a, b: np.sqrt(0.5 * ((np.sqrt(a)[:, None] - np.sqrt(b)[None]) ** 2).sum(-1))),
    "cosine": ({}, lambda a, b: ssd.cdist(a, b, "cosine")),
    "correlation": ({}, lambda a, b: ssd.cdist(a, b, "correlation")),
}


def _data(n, d, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, d, dtype=torch.float64, generator=g) * 3 + 0.5  # positive: hellinger's domain
    return x.to(dtype)


def _params_and_oracle(metric, d):
    params, oracle = FAMILY[metric]
    if metric == "seuclidean":
        V = np.linspace(0.5, 2.0, d)
        return {"V": torch.from_numpy(V)}, lambda a, b: ssd.cdist(a, b, "seuclidean", V=V)
    return dict(params), oracle


@pytest.mark.parametrize("metric", list(FAMILY))
@pytest.mark.parametrize("d", [3, 40, 300])
def test_exact_mode_equal_rows_are_exactly_zero(metric, d):
    """Rows equal in X and Y (separate tensors): exactly 0 in the exact mode, as scipy."""
    params, oracle = _params_and_oracle(metric, d)
    x = _data(9, d, torch.float64)
    y = torch.cat([x[3:7].clone(), _data(5, d, torch.float64, seed=1)])  # y[0:4] == x[3:7]
    ref = torch.from_numpy(oracle(x.numpy(), y.numpy()))
    # scipy: exact zeros (cosine / correlation: zero or within a few eps, 1 - u.v / (|u| |v|))
    assert (ref[3:7, :4].diagonal() <= (0 if metric not in ("cosine", "correlation") else 4e-16)).all()
    if metric == "seuclidean":
        params = {"V": params["V"]}
    out = tp.cdist(x, y, metric, compute_mode=EXACT, **params)
    assert torch.equal(out[3:7, :4].diagonal(), torch.zeros(4, dtype=torch.float64)), out[3:7, :4].diagonal()
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    # every mode agrees with scipy elsewhere
    for mode in (GEMM, DEFAULT):
        torch.testing.assert_close(tp.cdist(x, y, metric, compute_mode=mode, **params), ref, rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "correlation"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exact_mode_every_consumer(metric, dtype):
    """pdist, lazy consumers, knn take compute_mode too: exact zeros where rows coincide."""
    x = _data(12, 40, dtype)
    y = x.flip(0).clone()  # y[j] == x[11 - j]
    oracle = FAMILY[metric][1]
    ref = torch.from_numpy(oracle(x.double().numpy(), y.double().numpy()))
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-5)
    K = tp.lazy(x, y, metric, compute_mode=EXACT)
    V = torch.linspace(-1, 1, 24, dtype=dtype).reshape(12, 2)
    torch.testing.assert_close((K @ V).double(), ref @ V.double(), **tol)
    values, indices = K.topk(1, largest=False)
    assert torch.equal(values[:, 0], torch.zeros(12, dtype=dtype))
    assert torch.equal(indices[:, 0], torch.arange(11, -1, -1))
    knn = tp.knn(x, y, 1, metric, compute_mode=EXACT)
    assert torch.equal(knn.values[:, 0], torch.zeros(12, dtype=dtype))
    z = torch.cat([x, x[:3].clone()])  # rows 12..14 repeat rows 0..2
    p = tp.pdist(z, metric, compute_mode=EXACT)
    ref_p = torch.from_numpy(ssd.pdist(z.double().numpy(), metric))
    torch.testing.assert_close(p.double(), ref_p, **tol)
    n = z.shape[0]
    same = [n * i - i * (i + 1) // 2 + (12 + i - i - 1) for i in range(3)]  # condensed (i, 12 + i)
    assert torch.equal(p[same], torch.zeros(3, dtype=dtype)) and (p[[k for k in range(len(p)) if k not in same]] > 0).all()


def test_exact_mode_cosine_zero_rows():
    """A zero row: distance 1 to a nonzero row (sklearn, as the default); two zero rows are
    equal rows, so 0 in the exact mode (the default gives 1, sklearn's cosine_distances)."""
    x = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]], dtype=torch.float64)
    y = torch.tensor([[0.0, 0.0, 0.0], [3.0, 2.0, 1.0], [1.0, 2.0, 3.0]], dtype=torch.float64)
    from sklearn.metrics.pairwise import cosine_distances
    sk = torch.from_numpy(cosine_distances(x.numpy(), y.numpy()))
    out = tp.cdist(x, y, "cosine", compute_mode=EXACT)
    torch.testing.assert_close(out[:, 1:], sk[:, 1:], rtol=1e-12, atol=1e-12)
    assert out[1, 0] == 1 and out[0, 0] == 0 and out[1, 2] == 0
    assert tp.cdist(x, y, "cosine")[0, 0] == 1
    xr = x.clone().requires_grad_(True)
    tp.cdist(xr, y, "cosine", compute_mode=EXACT)[0].sum().backward()
    assert torch.equal(xr.grad[0], torch.zeros(3, dtype=torch.float64))  # the zero row: gradient 0


@pytest.mark.parametrize("metric,d", [("euclidean", 20), ("sqeuclidean", 20), ("cosine", 5), ("correlation", 5),
                                      ("rbf", 20)])
def test_exact_mode_gradients(metric, d):
    x = _data(4, d, torch.float64).requires_grad_(True)
    y = _data(3, d, torch.float64, seed=3).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: tp.cdist(a, b, metric, compute_mode=EXACT), (x, y))
    assert torch.autograd.gradcheck(lambda a: tp.lazy(a, y, metric, compute_mode=EXACT).sum(-1), (x,))


def test_use_mm_forces_gemm_below_16_features():
    """use_mm_for_euclid_dist: the GEMM form at D = 3 too (close to scipy, not exact for
    equal rows); the default runs the direct kernel there (exact)."""
    x = _data(50, 3, torch.float64) * 1e3
    y = x.clone()
    ref = torch.from_numpy(ssd.cdist(x.numpy(), y.numpy()))
    gemm = tp.cdist(x, y, compute_mode=GEMM)
    torch.testing.assert_close(gemm, ref, rtol=1e-9, atol=1e-3)  # the bound: sqrt((D + 3) eps 2|x - c|^2)
    assert torch.equal(tp.cdist(x, y).diagonal(), torch.zeros(50, dtype=torch.float64))
    assert (gemm.diagonal() != 0).any()  # the GEMM form's rounding: the mode did switch


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("rows", [25, 26])
def test_default_mode_small_problems_take_the_exact_kernel(dtype, rows):
    """torch.cdist's rule: with at most 25 rows on both sides the default takes the
    difference-based kernel at any D, so rows equal in X and Y give scipy's exact 0 (batched
    too); with 26 rows on a side it is the GEMM form, within the bound below."""
    d = 64
    eps = torch.finfo(dtype).eps
    g = torch.Generator().manual_seed(rows)
    x = torch.randn(3, rows, d, dtype=torch.float64, generator=g).to(dtype)
    y = x.flip(1).clone()  # y[:, j] == x[:, rows - 1 - j]
    out = tp.cdist(x, y, "euclidean")
    same = out.flip(-1).diagonal(dim1=-2, dim2=-1)
    ref = ssd.cdist(x[0].double().numpy(), y[0].double().numpy(), "euclidean")
    assert (np.fliplr(ref).diagonal() == 0).all()
    # the GEMM form's documented bound for equal rows (below), c the mean of Y's rows
    c = y.double().mean(1, keepdim=True)
    bound = torch.sqrt((d + 3) * eps * 2 * ((x.double() - c) ** 2).sum(-1))
    torch.testing.assert_close(out[0].double(), torch.from_numpy(ref), rtol=4 * eps, atol=bound.max().item())
    if rows <= 25:
        assert torch.equal(same, torch.zeros_like(same)), same
    else:  # the GEMM form: within the bound, and not exactly 0 for every pair at D = 64
        assert (same.double() <= bound).all(), same
        assert (same > 0).any(), same


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("d", [17, 64, 1000])
def test_default_mode_bound_for_equal_rows(dtype, d):
    """The documented bound of the default (GEMM, D > 16) path for rows equal in X and Y:
    euclidean <= sqrt((D + 3) eps (|x - c|^2 + |y - c|^2)) with c the mean of Y's rows;
    cosine, correlation <= (D + 4) eps (eps: the dtype's machine epsilon)."""
    eps = torch.finfo(dtype).eps
    g = torch.Generator().manual_seed(d)
    x = (torch.randn(40, d, dtype=torch.float64, generator=g) * 10 + 3).to(dtype)
    y = torch.cat([x, (torch.randn(10, d, dtype=torch.float64, generator=g)).to(dtype)])
    c = y.double().mean(0)
    sq = ((x.double() - c) ** 2).sum(-1)
    bound = torch.sqrt((d + 3) * eps * 2 * sq)
    diag = tp.cdist(x, y).double()[:, :40].diagonal()
    assert (diag <= bound).all(), (diag / bound).max()
    for metric in ("cosine", "correlation"):
        diag = tp.cdist(x, y, metric).double()[:, :40].diagonal()
        assert (diag.abs() <= (d + 4) * eps).all(), (diag.abs().max() / eps)


def test_bad_compute_mode():
    x = torch.rand(3, 2)
    with pytest.raises(ValueError, match=r"torchpair\.cdist: 'compute_mode' must be .*got \"exact\""):
        tp.cdist(x, x, compute_mode="exact")
    with pytest.raises(TypeError, match=r"torchpair\.pairwise: 'compute_mode' must be a str"):
        tp.pairwise(x, x, compute_mode=1)
    with pytest.raises(ValueError, match=r"torchpair\.lazy: 'compute_mode'"):
        tp.lazy(x, x, compute_mode="nope")


def test_compute_mode_under_compile():
    """A structural constant of the captured graph, as the metric name."""
    x = _data(6, 20, torch.float64)
    y = torch.cat([x[:2].clone(), _data(3, 20, torch.float64, seed=2)])
    f = torch.compile(lambda a, b: tp.cdist(a, b, "cosine", compute_mode=EXACT), fullgraph=True, backend="eager")
    out = f(x, y)
    assert torch.equal(out[:2, :2].diagonal(), torch.zeros(2, dtype=torch.float64))
    torch.testing.assert_close(out, torch.from_numpy(ssd.cdist(x.numpy(), y.numpy(), "cosine")), rtol=1e-12,
                               atol=1e-12)


def test_keops_backend_runs_an_explicit_mode_natively():
    """Under tp.backend("keops", strict=True) an explicit compute_mode runs the native kernels
    (KeOps has one form per metric): exact zeros, and no KeOps decline error."""
    pytest.importorskip("pykeops")
    x = _data(8, 30, torch.float64)
    y = x.flip(0).clone()
    V = torch.ones(8, 1, dtype=torch.float64)
    with tp.backend("keops", strict=True):
        for metric in ("euclidean", "cosine"):
            K = tp.lazy(x, y, metric, compute_mode=EXACT)
            assert torch.equal(K.min(-1).values, torch.zeros(8, dtype=torch.float64))
            ref = torch.from_numpy(ssd.cdist(x.numpy(), y.numpy(), metric))
            torch.testing.assert_close(K @ V, ref @ V, rtol=1e-12, atol=1e-12)
