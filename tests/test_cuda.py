"""torchpair on CUDA tensors (the device-generic engines) against independent oracles:
scipy.spatial.distance cdist/pdist, sklearn.metrics.pairwise and sklearn.neighbors, scipy's
directed_hausdorff / energy_distance / wasserstein_distance / linprog, dense torch formulas
evaluated on the CPU in float64, a pure-Python Levenshtein DP, and
torch.autograd.gradcheck on CUDA float64. Never torchpair's own CPU output.

The whole module is skipped without a CUDA device. It imports only torch, numpy, scipy,
scikit-learn and pytest (no POT, rapidfuzz or pykeops), so it runs on a bare GPU machine.

    python -m pytest -q tests/test_cuda.py                   # on a GPU machine
    python -m pytest -q tests/test_cuda.py -k "not compile"  # without the torch.compile tests

Dry run without a GPU: TORCHPAIR_TEST_DEVICE=cpu runs every test on CPU tensors instead, with
TORCHPAIR_FORCE_GENERIC=1 set for each test, so the CPU takes the same device-generic engines
that CUDA tensors take (how this file's own logic is checked on machines without a GPU):

    TORCHPAIR_TEST_DEVICE=cpu python -m pytest -q tests/test_cuda.py
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch
from scipy.optimize import linprog
from scipy.spatial import distance as ssd
from scipy.stats import energy_distance as scipy_energy
from scipy.stats import wasserstein_distance as scipy_wasserstein
from sklearn.metrics import pairwise as skp
from sklearn.neighbors import NearestNeighbors

import torchpair as tp
from cases import METRIC_CASES, rbf_mmd_reference

DEVICE = os.environ.get("TORCHPAIR_TEST_DEVICE", "cuda")
#: a device that is not DEVICE, for the mixed-device errors
OTHER = "cpu" if DEVICE != "cpu" else "meta"

pytestmark = pytest.mark.skipif(DEVICE.startswith("cuda") and not torch.cuda.is_available(),
                                reason="needs a CUDA device")

D64, D32 = torch.float64, torch.float32
#: float32 tolerances: the CPU parity tests' ones times this (cuBLAS sums in another order)
F32_SLACK = 10.0


@pytest.fixture(autouse=True)
def _generic_engines(monkeypatch):
    # CUDA tensors always take the device-generic engines; on the CPU dry run, ask for them.
    monkeypatch.setenv("TORCHPAIR_FORCE_GENERIC", "1")
    yield


def dev(t):
    return t.to(DEVICE)


def on_device(params):
    """Tensor (and array) parameters as tensors on DEVICE (test_array_parameters checks arrays)."""
    return {k: (torch.as_tensor(v, device=DEVICE) if isinstance(v, (torch.Tensor, np.ndarray)) else v)
            for k, v in params.items()}


def cpu64(t):
    return t.detach().to("cpu", torch.float64)


def tol(case, dtype, rscale=1.0, ascale=1.0):
    r = case.rtol64 if dtype == D64 else case.rtol32 * F32_SLACK
    return {"rtol": r * rscale, "atol": r * 10 * ascale}


def check_out(out, dtype, shape):
    assert out.device.type == torch.device(DEVICE).type, out.device
    assert out.dtype == dtype and tuple(out.shape) == tuple(shape)


# ---------------------------------------------------------------------------------------
# (a) dense: tp.pairwise / tp.cdist against scipy / sklearn
# ---------------------------------------------------------------------------------------
CASE_IDS = [
    "euclidean", "sqeuclidean", "cityblock", "chebyshev", "minkowski[p=3.0]", "minkowski[p=1.5]", "minkowski[p=3,w]",
    "cosine", "correlation", "canberra", "braycurtis", "seuclidean", "seuclidean[V]", "mahalanobis",
    "mahalanobis[VI]", "jensenshannon", "haversine", "nan_euclidean", "hellinger", "snr",
    "rbf", "rbf[gamma=0.2]", "laplacian[gamma=0.7]", "linear", "polynomial", "polynomial[degree=2.5,coef0=2.0]",
    "sigmoid[gamma=0.3,coef0=-0.5]", "cosine_similarity", "chi2", "additive_chi2", "matern",
    "matern[nu=2.5,length_scale=per-feature-3]", "matern[nu=1.5,length_scales=per-feature-20]",
    "rational_quadratic[alpha=0.4,length_scale=1.7]", "exp_sine_squared[length_scale=0.7,periodicity=2.5]",
    "exp_sine_squared[tensor parameters]",
    "hamming", "jaccard", "dice", "yule", "tanimoto", "hamming[values]",
]
_BY_ID = {c.id: c for c in METRIC_CASES}
CASES = [_BY_ID[i] for i in CASE_IDS]  # KeyError here = a renamed row in cases.py
DIFF_IDS = ["euclidean", "rbf[gamma=0.2]", "cityblock", "cosine", "polynomial", "seuclidean", "mahalanobis[VI]",
            "matern[nu=2.5,length_scale=per-feature-3]", "laplacian[gamma=0.7]", "correlation", "chi2",
            "exp_sine_squared[tensor parameters]"]


def oracle(case, x, y=None):
    xn = cpu64(x).numpy()
    if y is None and case.metric in ("seuclidean", "mahalanobis") and not case.params:
        # Y = None: the defaults come from x alone (scipy's squareform(pdist(x)), not cdist(x, x))
        return torch.from_numpy(ssd.squareform(ssd.pdist(xn, case.metric)))
    yn = xn if y is None else cpu64(y).numpy()
    return torch.from_numpy(np.ascontiguousarray(case.oracle(xn, yn)))


@pytest.mark.parametrize("dtype", [D64, D32], ids=str)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_pairwise_and_cdist(case, dtype):
    for d in sorted({case.dims[0], case.dims[-1]}):
        x, y = dev(case.sample((13, d), dtype)), dev(case.sample((300, d), dtype))
        params = on_device(case.params)
        out = tp.pairwise(x, y, case.metric, **params)
        check_out(out, dtype, (13, 300))
        torch.testing.assert_close(cpu64(out), oracle(case, x, y), **tol(case, dtype))
        out = tp.cdist(y, x, case.metric, **params)
        check_out(out, dtype, (300, 13))
        torch.testing.assert_close(cpu64(out), oracle(case, y, x), **tol(case, dtype))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_self_batched_broadcast(case):
    d = case.dims[-1]
    params = on_device(case.params)
    x = dev(case.sample((40, d)))
    out = tp.pairwise(x, None, case.metric, **params)
    check_out(out, D64, (40, 40))
    torch.testing.assert_close(cpu64(out), oracle(case, x), **tol(case, D64))
    if tp.metric_info(case.metric)["kind"] == "distance":
        assert torch.all(out.diagonal() == 0), "self-distances must be exactly zero"
    xb, yb = dev(case.sample((3, 1, 9, d))), dev(case.sample((2, 11, d)))
    out = tp.pairwise(xb, yb, case.metric, **params)
    check_out(out, D64, (3, 2, 9, 11))
    for i in range(3):
        for j in range(2):
            torch.testing.assert_close(cpu64(out[i, j]), oracle(case, xb[i, 0], yb[j]), **tol(case, D64))


def test_non_contiguous_and_empty():
    case = _BY_ID["euclidean"]
    x = dev(torch.randn(30, 80, dtype=D64))[:, 1::2]
    y = dev(torch.randn(50, 40, dtype=D64))[::2]
    assert not x.is_contiguous() and not y.is_contiguous()
    torch.testing.assert_close(cpu64(tp.pairwise(x, y)), oracle(case, x, y), **tol(case, D64))
    for n, m in [(0, 5), (5, 0)]:
        out = tp.pairwise(dev(torch.randn(n, 4)), dev(torch.randn(m, 4)), "rbf")
        check_out(out, D32, (n, m))


def test_array_parameters():
    """A numpy array parameter has no device: it is taken on x's device (docs/contracts.md: "pass
    an array or tensor"). Fails on CUDA if arrays are only converted with torch.as_tensor (CPU)."""
    g = torch.Generator().manual_seed(9)
    x, y = torch.randn(7, 3, dtype=D64, generator=g), torch.randn(5, 3, dtype=D64, generator=g)
    ls, w, V = np.array([0.5, 1.0, 2.0]), np.array([0.5, 2.0, 1.0]), np.array([0.5, 2.0, 1.5])
    for metric, params, want in [
        ("matern", {"nu": 2.5, "length_scale": ls}, _BY_ID["matern[nu=2.5,length_scale=per-feature-3]"].oracle),
        ("minkowski", {"p": 3.0, "w": w}, lambda a, b: ssd.cdist(a, b, "minkowski", p=3.0, w=w)),
        ("seuclidean", {"V": V}, lambda a, b: ssd.cdist(a, b, "seuclidean", V=V)),
    ]:
        out = tp.pairwise(dev(x), dev(y), metric, **params)
        torch.testing.assert_close(cpu64(out), torch.from_numpy(want(x.numpy(), y.numpy())), rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("metric", ["jaccard", "hamming", "dice", "russellrao", "equal"])
def test_boolean_tensors(metric):
    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(20, 130, generator=g) < 0.4, torch.rand(35, 130, generator=g) < 0.4
    out = tp.pairwise(dev(x), dev(y), metric)
    if metric == "equal":  # a bool result
        y[3] = x[5]  # one equal pair
        out = tp.pairwise(dev(x), dev(y), metric)
        check_out(out, torch.bool, (20, 35))
        assert torch.equal(out.cpu(), (x[:, None, :] == y[None, :, :]).all(-1)) and out[5, 3]
        return
    check_out(out, D32, (20, 35))
    want = torch.from_numpy(ssd.cdist(x.numpy(), y.numpy(), metric))
    torch.testing.assert_close(cpu64(out), want, rtol=1e-6, atol=1e-6)
    out64 = tp.pairwise(dev(x), dev(y.double()), metric)
    check_out(out64, D64, (20, 35))
    torch.testing.assert_close(cpu64(out64), want, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------
# (b) pdist against scipy's pdist (or the oracle's upper triangle)
# ---------------------------------------------------------------------------------------
PDIST_SCIPY = {"euclidean": {}, "sqeuclidean": {}, "cityblock": {}, "chebyshev": {}, "minkowski": {"p": 3.0},
               "cosine": {}, "correlation": {}, "canberra": {}, "braycurtis": {}, "seuclidean": {},
               "jensenshannon": {}}


@pytest.mark.parametrize("dtype", [D64, D32], ids=str)
@pytest.mark.parametrize("metric", list(PDIST_SCIPY))
def test_pdist_against_scipy(metric, dtype):
    params = PDIST_SCIPY[metric]
    for n, d in [(2, 3), (300, 5), (70, 40)]:
        x = torch.randn(n, d, dtype=D64)
        if metric == "jensenshannon":
            x = x.abs() + 0.05
            x = x / x.sum(-1, keepdim=True)
        x = x.to(dtype)
        out = tp.pdist(dev(x), metric, **params)
        check_out(out, dtype, (n * (n - 1) // 2,))
        want = torch.from_numpy(ssd.pdist(x.double().numpy(), metric, **params))
        r = 1e-8 if dtype == D64 else 1e-5 * F32_SLACK
        torch.testing.assert_close(cpu64(out), want, rtol=r, atol=10 * r)


@pytest.mark.parametrize("case_id", ["rbf[gamma=0.2]", "matern", "jaccard", "mahalanobis[VI]"])
def test_pdist_upper_triangle_batched(case_id):
    case = _BY_ID[case_id]
    d = case.dims[-1]
    x = dev(case.sample((2, 3, 41, d)))
    out = tp.pdist(x, case.metric, **on_device(case.params))
    check_out(out, D64, (2, 3, 41 * 40 // 2))
    i, j = np.triu_indices(41, 1)
    for a in range(2):
        for b in range(3):
            full = oracle(case, x[a, b]).numpy()
            torch.testing.assert_close(cpu64(out[a, b]), torch.from_numpy(np.ascontiguousarray(full[i, j])),
                                       **tol(case, D64))


# ---------------------------------------------------------------------------------------
# (c) lazy consumers against dense float64 torch on the oracle's matrix
# ---------------------------------------------------------------------------------------
LAZY_IDS = ["euclidean", "rbf[gamma=0.2]", "cityblock", "cosine", "polynomial", "laplacian[gamma=0.7]",
            "matern[nu=1.5,length_scales=per-feature-20]", "jaccard"]


@pytest.mark.parametrize("dtype", [D64, D32], ids=str)
@pytest.mark.parametrize("case_id", LAZY_IDS)
def test_lazy_consumers(case_id, dtype):
    case = _BY_ID[case_id]
    for d in sorted({case.dims[0], case.dims[-1]}):
        xc, yc = case.sample((37, d), dtype), case.sample((530, d), dtype)
        vc, wc = torch.randn(530, 3, dtype=dtype), torch.randn(37, 2, dtype=dtype)
        ref = oracle(case, xc, yc)
        v, w = vc.double(), wc.double()
        K = tp.lazy(dev(xc), dev(yc), case.metric, **on_device(case.params))
        assert K.shape == (37, 530) and K.device.type == torch.device(DEVICE).type
        t1, tn = tol(case, dtype), tol(case, dtype, rscale=10, ascale=100)  # sums of hundreds of terms

        def close(got, want, t=tn):
            assert got.device.type == torch.device(DEVICE).type
            torch.testing.assert_close(cpu64(got), want, **t)

        out = K @ dev(vc)
        check_out(out, dtype, (37, 3))
        close(out, ref @ v)
        close(K.matmul(dev(vc[:, 0])), ref @ v[:, 0])
        close(K.T @ dev(wc), ref.T @ w)
        close(K.sum(-1), ref.sum(-1))
        close(K.sum(-2), ref.sum(-2))
        close(K.sum(), ref.sum())
        close(K.mean(-1), ref.mean(-1))
        close(K.to_dense(), ref, t1)
        for dim in (-1, -2):
            close(K.logsumexp(dim), torch.logsumexp(ref, dim))
            for name in ("min", "max"):
                got, want = getattr(K, name)(dim), getattr(torch, name)(ref, dim=dim)
                close(got.values, want.values, t1)
                picked = ref.gather(dim, cpu64(got.indices).long().unsqueeze(dim)).squeeze(dim)
                torch.testing.assert_close(picked, want.values, **t1)
                # the same index wherever no other entry is within tolerance of the extremum
                # (exact ties: cosine at D = 1, jaccard; near ties: float32 rounding)
                best = want.values.unsqueeze(dim)
                near = (ref - best).abs() <= t1["atol"] + t1["rtol"] * best.abs()
                unique = near.sum(dim) == 1
                assert torch.equal(got.indices.cpu()[unique], want.indices[unique])
                assert torch.equal(getattr(K, "arg" + name)(dim), got.indices)
            for k, largest in [(1, True), (5, False)]:
                got = K.topk(k, dim=dim, largest=largest)
                want = torch.topk(ref, k, dim=dim, largest=largest)
                assert got.indices.dtype == torch.int64 and got.values.shape == want.values.shape
                close(got.values, want.values, t1)
                torch.testing.assert_close(ref.gather(dim, got.indices.cpu()), want.values, **t1)
        close(K.softmax_matmul(dev(vc)), torch.softmax(ref, -1) @ v)
        close(K.softmax_matmul(dev(wc), dim=-2), torch.softmax(ref, -2).T @ w)


def test_lazy_batched_broadcast_and_self():
    case = _BY_ID["rbf[gamma=0.2]"]
    x, y = case.sample((2, 1, 8, 20)), case.sample((3, 12, 20))
    v = torch.randn(3, 12, 2, dtype=D64)
    K = tp.lazy(dev(x), dev(y), case.metric, **case.params)
    assert K.shape == (2, 3, 8, 12)
    out, lse = K @ dev(v), K.logsumexp(-1)
    for i in range(2):
        for j in range(3):
            ref = oracle(case, x[i, 0], y[j])
            torch.testing.assert_close(cpu64(out[i, j]), ref @ v[j], rtol=1e-9, atol=1e-9)
            torch.testing.assert_close(cpu64(lse[i, j]), torch.logsumexp(ref, -1), rtol=1e-9, atol=1e-9)
    xs = case.sample((25, 20))
    S = tp.lazy(dev(xs), None, case.metric, **case.params)
    torch.testing.assert_close(cpu64(S.sum(-1)), oracle(case, xs).sum(-1), rtol=1e-9, atol=1e-9)


def test_large_lazy_matmul_against_dense_torch():
    """Many tiles in both directions (float32 RBF, the README's example at a testable size)."""
    g = torch.Generator().manual_seed(2)
    x, y, v = torch.randn(3000, 3, generator=g), torch.randn(5000, 3, generator=g), torch.randn(5000, 2, generator=g)
    out = tp.lazy(dev(x), dev(y), "rbf", gamma=0.5) @ dev(v)
    ref = torch.exp(-0.5 * torch.cdist(x.double(), y.double()) ** 2) @ v.double()
    torch.testing.assert_close(cpu64(out), ref, rtol=1e-4, atol=1e-3)


# ---------------------------------------------------------------------------------------
# (d) gradients: gradcheck on DEVICE float64, and against autograd through dense torch
# ---------------------------------------------------------------------------------------
def gradcheck(fn, inputs, fast_mode=True, nondet_tol=0.0):
    return torch.autograd.gradcheck(fn, inputs, fast_mode=fast_mode, nondet_tol=nondet_tol)


def grad_inputs(case, d, batch=()):
    g = torch.Generator().manual_seed(3)
    x = dev(case.sample((*batch, 6, d), generator=g)).requires_grad_(True)
    y = dev(case.sample((*batch, 9, d), generator=g)).requires_grad_(True)
    v = dev(torch.randn(*batch, 9, 2, dtype=D64, generator=g)).requires_grad_(True)
    return x, y, v


@pytest.mark.parametrize("case_id", DIFF_IDS)
def test_gradcheck_pairwise_and_pdist(case_id):
    case = _BY_ID[case_id]
    params = on_device(case.params)
    d = case.dims[0]
    x, y, _ = grad_inputs(case, d, (2,))
    # the full Jacobian where it is small; random projections of it (fast mode) otherwise
    assert gradcheck(lambda a, b: tp.pairwise(a, b, case.metric, **params), (x, y), fast_mode=d > 5)
    assert gradcheck(lambda a: tp.pairwise(a, None, case.metric, **params), (x,))
    assert gradcheck(lambda a: tp.pdist(a, case.metric, **params), (x,))


LAZY_GRADS = {
    "matmul": lambda K, v: K @ v,
    "T-matmul": lambda K, v: K.T @ v[..., :6, :],
    "sum-rows": lambda K, v: K.sum(-1),
    "sum-cols": lambda K, v: K.sum(-2),
    "logsumexp": lambda K, v: K.logsumexp(-1),
    "softmax_matmul": lambda K, v: K.softmax_matmul(v),
    "topk-values": lambda K, v: K.topk(3, largest=False).values,
    "min-values-cols": lambda K, v: K.min(-2).values,
}


@pytest.mark.parametrize("consumer", list(LAZY_GRADS))
@pytest.mark.parametrize("case_id", ["euclidean", "rbf[gamma=0.2]", "polynomial"])
def test_gradcheck_lazy_consumers(case_id, consumer):
    case, fn = _BY_ID[case_id], LAZY_GRADS[consumer]
    x, y, v = grad_inputs(case, case.dims[-1], (2,))
    # Selections (topk / min values) reach the selected rows through gather, whose backward
    # is a scatter-add: on CUDA it accumulates with atomics, so two backward passes agree to
    # rounding, not bit for bit (docs/contracts.md); the deterministic test below pins that.
    tol = 1e-12 if consumer in SELECTIONS else 0.0
    assert gradcheck(lambda a, b, c: fn(tp.lazy(a, b, case.metric, **case.params), c), (x, y, v), nondet_tol=tol)


SELECTIONS = ("topk-values", "min-values-cols")


@pytest.mark.parametrize("consumer", SELECTIONS)
def test_selection_gradients_are_bitwise_reproducible_in_deterministic_mode(consumer, monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # what deterministic cuBLAS asks for
    case, fn = _BY_ID["euclidean"], LAZY_GRADS[consumer]
    x, y, v = grad_inputs(case, case.dims[-1], (2,))
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        assert gradcheck(lambda a, b, c: fn(tp.lazy(a, b, case.metric, **case.params), c), (x, y, v))
    finally:
        torch.use_deterministic_algorithms(previous)


def test_gradcheck_tensor_parameter():
    """Matern's per-feature length scales (a tensor parameter on the device) get gradients."""
    g = torch.Generator().manual_seed(4)
    x = dev(torch.randn(5, 3, dtype=D64, generator=g)).requires_grad_(True)
    y = dev(torch.randn(7, 3, dtype=D64, generator=g)).requires_grad_(True)
    ls = dev(torch.tensor([0.5, 1.0, 2.0], dtype=D64)).requires_grad_(True)
    assert gradcheck(lambda a, b, s: tp.pairwise(a, b, "matern", nu=2.5, length_scale=s), (x, y, ls), fast_mode=False)


def test_gradients_match_dense_torch():
    g = torch.Generator().manual_seed(5)
    x, y, v = torch.randn(50, 20, dtype=D64, generator=g), torch.randn(40, 20, dtype=D64, generator=g), \
        torch.randn(40, 3, dtype=D64, generator=g)
    w = torch.randn(50, 3, dtype=D64, generator=g)
    leaves = [dev(t).detach().clone().requires_grad_(True) for t in (x, y, v)]
    out = tp.lazy(leaves[0], leaves[1], "rbf", gamma=0.1).matmul(leaves[2])
    got = torch.autograd.grad((out.to("cpu") * w).sum(), leaves)
    ref_leaves = [t.detach().clone().requires_grad_(True) for t in (x, y, v)]
    ref = torch.exp(-0.1 * ((ref_leaves[0][:, None] - ref_leaves[1][None]) ** 2).sum(-1)) @ ref_leaves[2]
    want = torch.autograd.grad((ref * w).sum(), ref_leaves)
    for a, b, leaf in zip(got, want, leaves):
        assert a.device == leaf.device
        torch.testing.assert_close(cpu64(a), b)


def test_second_derivative_raises():
    x = dev(torch.randn(4, 3, dtype=D64)).requires_grad_(True)
    y = dev(torch.randn(5, 3, dtype=D64))
    (g,) = torch.autograd.grad(tp.pairwise(x, y, "rbf").sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="second derivatives are not supported"):
        g.sum().backward()


# ---------------------------------------------------------------------------------------
# (e) set-level consumers
# ---------------------------------------------------------------------------------------
def set_data(n=60, m=80, d=5, seed=0, dtype=D64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=dtype), torch.randn(m, d, generator=g, dtype=dtype) + 0.3


@pytest.mark.parametrize("d", [3, 32])
def test_knn_against_sklearn(d):
    x, y = set_data(d=d)
    got = tp.knn(dev(x), dev(y), 7)
    check_out(got.values, D64, (60, 7))
    dist, idx = NearestNeighbors(n_neighbors=7, algorithm="brute").fit(y.numpy()).kneighbors(x.numpy())
    np.testing.assert_allclose(got.values.cpu().numpy(), dist, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(got.indices.cpu().numpy(), idx)
    sq = tp.knn(dev(x), dev(y), 3, metric="sqeuclidean")
    np.testing.assert_allclose(sq.values.cpu().numpy(), dist[:, :3] ** 2, rtol=1e-10, atol=1e-10)
    sim = tp.knn(dev(x.float()), dev(y.float()), 3, metric="rbf", gamma=0.5)
    ref = torch.from_numpy(skp.rbf_kernel(x.numpy(), y.numpy(), gamma=0.5))
    want = ref.topk(3)
    torch.testing.assert_close(cpu64(sim.values), want.values, rtol=1e-5, atol=1e-6)
    # float32: the chosen neighbours' exact values are the top values (near ties may swap)
    torch.testing.assert_close(ref.gather(1, sim.indices.cpu()), want.values, rtol=1e-5, atol=1e-6)


def test_knn_self_and_batched():
    x, _ = set_data()
    got = tp.knn(dev(x), None, 2)
    assert torch.equal(got.indices[:, 0].cpu(), torch.arange(60)) and torch.all(got.values[:, 0] == 0)
    xb = torch.stack([set_data(seed=s)[0] for s in range(3)])
    yb = torch.stack([set_data(seed=s)[1] for s in range(3)])
    got = tp.knn(dev(xb), dev(yb), 5)
    for b in range(3):
        want = torch.cdist(xb[b], yb[b]).topk(5, largest=False)
        torch.testing.assert_close(cpu64(got.values[b]), want.values)
        assert torch.equal(got.indices[b].cpu(), want.indices)


@pytest.mark.parametrize("d", [2, 24])
def test_hausdorff_and_chamfer(d):
    x, y = set_data(d=d)
    xn, yn = x.numpy(), y.numpy()
    h = tp.hausdorff(dev(x), dev(y), directed=True)
    assert h.device.type == torch.device(DEVICE).type
    assert math.isclose(h.item(), ssd.directed_hausdorff(xn, yn)[0], rel_tol=1e-12)
    both = max(ssd.directed_hausdorff(xn, yn)[0], ssd.directed_hausdorff(yn, xn)[0])
    assert math.isclose(tp.hausdorff(dev(x), dev(y)).item(), both, rel_tol=1e-12)
    for metric in ("sqeuclidean", "euclidean"):
        c = ssd.cdist(xn, yn, metric)
        assert math.isclose(tp.chamfer(dev(x), dev(y), metric).item(), c.min(1).mean() + c.min(0).mean(),
                            rel_tol=1e-12)
        assert math.isclose(tp.chamfer(dev(x), dev(y), metric, reduction="sum").item(),
                            c.min(1).sum() + c.min(0).sum(), rel_tol=1e-12)


@pytest.mark.parametrize("unbiased", [False, True])
def test_mmd_against_dense_formula(unbiased):
    x, y = set_data()
    want = rbf_mmd_reference(x.numpy(), y.numpy(), 0.25, unbiased)
    got = tp.mmd(dev(x), dev(y), gamma=0.25, unbiased=unbiased)
    assert got.device.type == torch.device(DEVICE).type
    assert math.isclose(got.item(), want, rel_tol=1e-9, abs_tol=1e-12)


def test_energy_distance():
    g = torch.Generator().manual_seed(3)
    u, v = torch.randn(40, 1, generator=g, dtype=D64), torch.randn(55, 1, generator=g, dtype=D64)
    assert math.isclose(tp.energy_distance(dev(u), dev(v)).item(), scipy_energy(u[:, 0].numpy(), v[:, 0].numpy()),
                        rel_tol=1e-10)
    x, y = set_data()
    want = math.sqrt(2 * ssd.cdist(x.numpy(), y.numpy()).mean() - ssd.cdist(x.numpy(), x.numpy()).mean()
                     - ssd.cdist(y.numpy(), y.numpy()).mean())
    assert math.isclose(tp.energy_distance(dev(x), dev(y)).item(), want, rel_tol=1e-10)


SET_GRADS = {
    "knn": lambda a, b: tp.knn(a, b, 3).values,
    "hausdorff": lambda a, b: tp.hausdorff(a, b),
    "chamfer": lambda a, b: tp.chamfer(a, b),
    "mmd-unbiased": lambda a, b: tp.mmd(a, b, unbiased=True, gamma=0.4),
    "energy_distance": lambda a, b: tp.energy_distance(a, b),
}


@pytest.mark.parametrize("name", list(SET_GRADS))
def test_gradcheck_set_level(name):
    g = torch.Generator().manual_seed(5)
    x = dev(torch.randn(2, 7, 3, dtype=D64, generator=g)).requires_grad_(True)
    y = dev(torch.randn(2, 9, 3, dtype=D64, generator=g)).requires_grad_(True)
    assert gradcheck(SET_GRADS[name], (x, y), fast_mode=False)


# ---------------------------------------------------------------------------------------
# (f) autocast and reduced precision
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("low", [torch.float16, torch.bfloat16], ids=str)
def test_autocast_promotes_to_float32(low):
    g = torch.Generator().manual_seed(6)
    x, y, v = (torch.randn(*s, generator=g).to(low) for s in [(30, 20), (25, 20), (25, 3)])
    d_ref = torch.cdist(x.double(), y.double())
    mm_ref = torch.exp(-0.5 * d_ref ** 2) @ v.double()
    with torch.autocast(torch.device(DEVICE).type, dtype=low):
        d = tp.pairwise(dev(x), dev(y), "euclidean")
        mm = tp.lazy(dev(x), dev(y), "rbf", gamma=0.5) @ dev(v)
        s = tp.lazy(dev(x), None, "sqeuclidean").sum(-1)
        d32 = tp.pairwise(dev(x.float()), dev(y.float()), "euclidean")  # float32 stays float32
    for t in (d, mm, s, d32):
        assert t.dtype == D32 and t.device.type == torch.device(DEVICE).type
    torch.testing.assert_close(cpu64(d), d_ref, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(cpu64(d32), d_ref, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(cpu64(mm), mm_ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(cpu64(s), (torch.cdist(x.double(), x.double()) ** 2).sum(-1), rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("low", [torch.float16, torch.bfloat16], ids=str)
def test_reduced_precision_outside_autocast(low):
    x, y = torch.randn(30, 20).to(low), torch.randn(25, 20).to(low)
    out = tp.pairwise(dev(x), dev(y), "euclidean")
    check_out(out, low, (30, 25))
    ref = torch.cdist(x.double(), y.double()).to(low).double()
    eps = torch.finfo(low).eps
    torch.testing.assert_close(cpu64(out), ref, rtol=2 * eps, atol=2 * eps)
    xg = dev(x).requires_grad_(True)
    (tp.lazy(xg, dev(y), "rbf") @ dev(torch.ones(25, 1, dtype=low))).sum().backward()
    assert xg.grad.dtype == low and xg.grad.device.type == torch.device(DEVICE).type
    assert torch.isfinite(xg.grad.float()).all()


# ---------------------------------------------------------------------------------------
# (g) bad input: mixed devices
# ---------------------------------------------------------------------------------------
def test_mixed_devices_raise_naming_the_arguments():
    x, y = torch.randn(5, 3), torch.randn(4, 3)
    pairs = r"'x'.*'y'|'y'.*'x'"
    with pytest.raises(ValueError, match=pairs):
        tp.pairwise(dev(x), y.to(OTHER))
    with pytest.raises(ValueError, match=pairs):
        tp.pairwise(x.to(OTHER), dev(y))
    with pytest.raises(ValueError, match=pairs):
        tp.cdist(dev(x), y.to(OTHER), "cityblock")
    with pytest.raises(ValueError, match=pairs):
        tp.lazy(dev(x), y.to(OTHER), "rbf").sum(-1)
    with pytest.raises(ValueError, match=pairs):
        tp.knn(dev(x), y.to(OTHER), 2)
    with pytest.raises(ValueError, match=r"'[vV]'"):
        tp.lazy(dev(x), dev(y), "rbf") @ torch.randn(4, 2).to(OTHER)
    with pytest.raises(ValueError, match=r"'w'"):
        tp.pairwise(dev(x), dev(y), "minkowski", p=3.0, w=torch.ones(3).to(OTHER))
    with pytest.raises(ValueError, match=r"'[xX]'.*'[yY]'|'[yY]'.*'[xX]'"):
        tp.seq.pairwise(dev(torch.ones(2, 3, dtype=torch.long)), torch.ones(2, 3, dtype=torch.long).to(OTHER))


# ---------------------------------------------------------------------------------------
# (h) torch.compile(fullgraph=True) on DEVICE tensors (exclude with -k "not compile")
# ---------------------------------------------------------------------------------------
def test_compile_fullgraph_matches_eager_and_dense():
    torch._dynamo.reset()

    # K.matmul(v), not `K @ v`: dynamo does not trace LazyPairwise.__matmul__ with
    # fullgraph=True (a graph break; on the CPU too, torch 2.13)
    def f(x, y, v):
        return (tp.pairwise(x, y, "euclidean"), tp.lazy(x, y, "rbf", gamma=0.2).matmul(v),
                tp.lazy(x, None, "cosine").sum(-1))

    cf = torch.compile(f, fullgraph=True)
    g = torch.Generator().manual_seed(7)
    x, y, v = torch.randn(40, 5, generator=g), torch.randn(30, 5, generator=g), torch.randn(30, 3, generator=g)
    got, eager = cf(dev(x), dev(y), dev(v)), f(dev(x), dev(y), dev(v))
    d_ref = torch.cdist(x.double(), y.double())
    refs = (d_ref, torch.exp(-0.2 * d_ref ** 2) @ v.double(),
            torch.from_numpy(ssd.cdist(x.double().numpy(), x.double().numpy(), "cosine")).sum(-1))
    for a, b, ref in zip(got, eager, refs):
        assert a.device.type == torch.device(DEVICE).type and a.dtype == D32
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(cpu64(a), ref, rtol=1e-4, atol=1e-4)


def test_compile_backward():
    torch._dynamo.reset()

    @torch.compile(fullgraph=True)
    def f(x, y, v):
        return tp.lazy(x, y, "rbf", gamma=0.2).matmul(v)

    g = torch.Generator().manual_seed(8)
    x, y, v = torch.randn(40, 5, generator=g), torch.randn(30, 5, generator=g), torch.randn(30, 3, generator=g)
    xd = dev(x).detach().clone().requires_grad_(True)
    f(xd, dev(y), dev(v)).sum().backward()
    xr = x.detach().double().requires_grad_(True)
    (torch.exp(-0.2 * torch.cdist(xr, y.double()) ** 2) @ v.double()).sum().backward()
    assert xd.grad.device.type == torch.device(DEVICE).type
    torch.testing.assert_close(cpu64(xd.grad), xr.grad, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------
# token sequences (CPU engines; device tensors are copied there and back) vs a Python DP
# ---------------------------------------------------------------------------------------
def levenshtein_dp(a, b, weights=(1, 1, 1)):
    """Weighted Levenshtein distance turning a into b (insertion, deletion, substitution)."""
    ins, dele, sub = weights
    prev = [j * ins for j in range(len(b) + 1)]
    for i in range(1, len(a) + 1):
        cur = [i * dele] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + dele, cur[j - 1] + ins, prev[j - 1] + (0 if a[i - 1] == b[j - 1] else sub))
        prev = cur
    return prev[-1]


def random_sequences(n, max_len, seed, vocab=4):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, max_len + 1, (n,), generator=g)
    tokens = torch.randint(0, vocab, (n, max_len), generator=g)
    tokens[torch.arange(max_len)[None, :] >= lengths[:, None]] = -1  # the default pad id
    return tokens, [tokens[i, :lengths[i]].tolist() for i in range(n)]


@pytest.mark.parametrize("weights", [(1, 1, 1), (1, 2, 3)])
def test_levenshtein_against_python_dp(weights):
    x, xs = random_sequences(12, 70, seed=1)  # lengths across the 64-token word boundary
    y, ys = random_sequences(9, 66, seed=2)
    want = torch.tensor([[levenshtein_dp(a, b, weights) for b in ys] for a in xs], dtype=torch.int64)
    out = tp.seq.pairwise(dev(x), dev(y), "levenshtein", weights=weights)
    check_out(out, torch.int64, (12, 9))
    assert torch.equal(out.cpu(), want)
    # the catalog's entry point routes the name to tp.seq
    assert torch.equal(tp.pairwise(dev(x), dev(y), "levenshtein", weights=weights).cpu(), want)
    if weights == (1, 1, 1):
        i, j = np.triu_indices(12, 1)
        pd = tp.seq.pdist(dev(x), "levenshtein")
        check_out(pd, torch.int64, (66,))
        want_self = torch.tensor([[levenshtein_dp(a, b) for b in xs] for a in xs])
        assert torch.equal(pd.cpu(), want_self[i, j])
        top = tp.seq.lazy(dev(x), dev(y), "levenshtein").topk(3, largest=False)
        assert top.values.device.type == torch.device(DEVICE).type
        assert torch.equal(top.values.cpu(), want.sort(dim=-1, stable=True).values[:, :3])
        assert torch.equal(want.gather(1, top.indices.cpu()), top.values.cpu())
        norm = tp.seq.pairwise(dev(x), dev(y), "levenshtein", normalized=True)
        lx = torch.tensor([len(a) for a in xs])[:, None]
        ly = torch.tensor([len(b) for b in ys])[None, :]
        mx = torch.maximum(lx, ly).double()
        want_norm = torch.where(mx > 0, want.double() / mx.clamp_min(1), torch.zeros(()).double())
        check_out(norm, D64, (12, 9))
        torch.testing.assert_close(norm.cpu(), want_norm, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------
# exact optimal transport (solved on the CPU, returned on the device) vs scipy
# ---------------------------------------------------------------------------------------
def test_emd2_against_linprog():
    r = np.random.default_rng(11)
    n, m = 8, 6
    a, b = r.random(n) + 0.1, r.random(m) + 0.1
    a, b, M = a / a.sum(), b / b.sum(), r.random((n, m))
    A = np.vstack([np.kron(np.eye(n), np.ones(m)), np.kron(np.ones(n), np.eye(m))])
    lp = linprog(M.ravel(), A_eq=A, b_eq=np.concatenate([a, b]), bounds=(0, None), method="highs")
    assert lp.status == 0
    Md = dev(torch.tensor(M)).requires_grad_(True)
    cost = tp.emd2(dev(torch.tensor(a)), dev(torch.tensor(b)), Md)
    assert cost.device.type == torch.device(DEVICE).type and cost.dtype == D64
    assert math.isclose(cost.item(), lp.fun, rel_tol=1e-9)
    cost.backward()  # d cost / d M = the optimal plan: feasible, and its cost is the optimum
    plan = cpu64(Md.grad).numpy()
    assert Md.grad.device == Md.device
    np.testing.assert_allclose(plan.sum(1), a, atol=1e-9)
    np.testing.assert_allclose(plan.sum(0), b, atol=1e-9)
    assert plan.min() >= -1e-12 and math.isclose((plan * M).sum(), lp.fun, rel_tol=1e-9)
    c32 = tp.emd2(dev(torch.tensor(a).float()), dev(torch.tensor(b).float()), dev(torch.tensor(M).float()))
    assert c32.dtype == D32 and math.isclose(c32.item(), lp.fun, rel_tol=1e-5)


def test_wasserstein_1d_against_scipy():
    g = torch.Generator().manual_seed(12)
    u, v = torch.randn(30, 1, dtype=D64, generator=g), torch.randn(45, 1, dtype=D64, generator=g) + 0.5
    got = tp.wasserstein(dev(u), dev(v), p=1)
    assert got.device.type == torch.device(DEVICE).type
    assert math.isclose(got.item(), scipy_wasserstein(u[:, 0].numpy(), v[:, 0].numpy()), rel_tol=1e-9)
