"""The count consumer (``K.count(threshold, dim)``) and the scaled, weighted logsumexp
(``K.logsumexp(dim, scale=, log_weight=)``), on the native CPU engines and on the
device-generic path, against scipy / scikit-learn / dense float64 oracles."""
import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist
from scipy.special import logsumexp as sp_logsumexp
from sklearn.neighbors import NearestNeighbors

import torchpair as tp

ENGINES = ["native", "generic"]


@pytest.fixture(params=ENGINES)
def engine(request, monkeypatch):
    if request.param == "generic":
        monkeypatch.setenv("TORCHPAIR_FORCE_GENERIC", "1")
    return request.param


def _data(dtype, b=(), n=300, m=200, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*b, n, d, generator=g, dtype=dtype), torch.randn(*b, m, d, generator=g, dtype=dtype))


# ---- count -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "cosine", "chebyshev"])
def test_count_matches_scipy(engine, dtype, metric):
    X, Y = _data(dtype)
    D = cdist(X.double().numpy(), Y.double().numpy(), metric)
    # a threshold in the widest gap between neighbouring values near the 40% quantile, so no
    # entry lies within rounding of it (those could fall either way in float32)
    v = np.sort(D.ravel())
    i = int(0.4 * v.size)
    j = i + int(np.argmax(np.diff(v[i:i + 400])))
    t = float((v[j] + v[j + 1]) / 2)
    assert v[j + 1] - v[j] > 1e-5 * max(1.0, abs(t))
    K = tp.lazy(X, Y, metric)
    rows, cols = K.count(t), K.count(t, dim=-2)
    assert rows.dtype == torch.int64 and rows.shape == (300,) and cols.shape == (200,)
    np.testing.assert_array_equal(rows.numpy(), (D <= t).sum(1))
    np.testing.assert_array_equal(cols.numpy(), (D <= t).sum(0))
    np.testing.assert_array_equal(K.T.count(t).numpy(), (D <= t).sum(0))
    np.testing.assert_array_equal(tp.pairwise_expression(X, Y, metric, lazy=False).count(t).numpy(), (D <= t).sum(1))


def test_count_radius_neighbours_as_sklearn(engine):
    X, _ = _data(torch.float64, n=400, d=3)
    nn = NearestNeighbors(radius=0.8).fit(X.numpy())
    counts = np.array([len(i) for i in nn.radius_neighbors(X.numpy(), return_distance=False)])
    np.testing.assert_array_equal(tp.lazy(X, None, "euclidean").count(0.8).numpy(), counts)


def test_count_batched_and_nan(engine):
    X, Y = _data(torch.float64, b=(2, 3), n=40, m=30)
    X[0, 1, 5, 2] = float("nan")  # a NaN row: its comparisons are NaN and never count
    D = torch.cdist(X, Y)
    got = tp.lazy(X, Y, "sqeuclidean").count(4.0)
    torch.testing.assert_close(got, (D.square() <= 4.0).sum(-1))
    assert got[0, 1, 5] == 0
    # Y broadcast over X's batch
    got = tp.lazy(X, Y[0, 0], "euclidean").count(2.0, dim=-2)
    torch.testing.assert_close(got, (torch.cdist(X, Y[0, 0].expand(2, 3, 30, 5)) <= 2.0).sum(-2))


def test_count_similarity_metric_and_threshold_semantics(engine):
    X, Y = _data(torch.float64, n=50, m=60)
    K = torch.exp(-0.5 * torch.cdist(X, Y).square())
    got = tp.lazy(X, Y, "rbf", gamma=0.5).count(0.1)
    torch.testing.assert_close(got, (K <= 0.1).sum(-1))  # "<= threshold" whatever the metric's kind


def test_count_is_not_differentiable():
    X, Y = _data(torch.float64, n=20, m=10)
    X.requires_grad_(True)
    c = tp.lazy(X, Y, "euclidean").count(2.0)
    assert c.dtype == torch.int64 and not c.requires_grad and c.grad_fn is None


def test_count_empty_and_bad_input():
    X, Y = _data(torch.float64, n=5, m=0)
    assert tp.lazy(X, Y, "euclidean").count(1.0).tolist() == [0] * 5
    K = tp.lazy(*_data(torch.float64, n=5, m=4), "euclidean")
    with pytest.raises(TypeError, match="torchpair.count: 'threshold'"):
        K.count("1")
    with pytest.raises(ValueError, match="dim"):
        K.count(1.0, dim=2)
    with pytest.raises(ValueError, match="threshold"):
        torch.ops.torchpair.lazy_reduce(K.X, K.Y, "euclidean", "count", -1)
    with pytest.raises(ValueError, match="threshold"):
        torch.ops.torchpair.lazy_reduce(K.X, K.Y, "euclidean", "sum", -1, threshold=1.0)


# ---- scaled, weighted logsumexp --------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean", "cityblock", "rbf"])
def test_weighted_logsumexp_matches_scipy(engine, dtype, metric):
    X, Y = _data(dtype)
    g = torch.Generator().manual_seed(3)
    b = torch.rand(200, generator=g, dtype=torch.float64) + 0.1  # positive weights of the columns
    a = torch.rand(300, generator=g, dtype=torch.float64) + 0.1
    scipy_metric = {"rbf": None}.get(metric, metric)
    if scipy_metric is None:
        D = np.exp(-cdist(X.double().numpy(), Y.double().numpy(), "sqeuclidean") / 5)
    else:
        D = cdist(X.double().numpy(), Y.double().numpy(), scipy_metric)
    K = tp.lazy(X, Y, metric)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    got = K.logsumexp(-1, scale=-0.7, log_weight=b.log().to(dtype))
    np.testing.assert_allclose(got.double().numpy(), sp_logsumexp(-0.7 * D, b=b.numpy()[None, :], axis=1), **tol)
    got = K.logsumexp(-2, scale=2.0, log_weight=a.log().to(dtype))
    np.testing.assert_allclose(got.double().numpy(), sp_logsumexp(2.0 * D, b=a.numpy()[:, None], axis=0), **tol)
    got = K.T.logsumexp(-1, scale=-1.5)
    np.testing.assert_allclose(got.double().numpy(), sp_logsumexp(-1.5 * D, axis=0), **tol)


def test_weighted_logsumexp_batched_broadcast_weight(engine):
    X, Y = _data(torch.float64, b=(2,), n=30, m=20)
    w = torch.randn(20, dtype=torch.float64)  # broadcast over the batch
    D = torch.cdist(X, Y)
    got = tp.lazy(X, Y, "euclidean").logsumexp(-1, scale=-3.0, log_weight=w)
    torch.testing.assert_close(got, torch.logsumexp(-3.0 * D + w, -1))
    # -inf weights drop columns; all -inf gives -inf, with zero gradients
    w = torch.full((2, 20), float("-inf"), dtype=torch.float64)
    w[0, :5] = 0.0
    got = tp.lazy(X, Y, "euclidean").logsumexp(-1, scale=-3.0, log_weight=w)
    torch.testing.assert_close(got[0], torch.logsumexp(-3.0 * D[0, :, :5], -1))
    assert torch.isneginf(got[1]).all()


@pytest.mark.parametrize("buffer", ["one_pass", "two_pass"])
def test_weighted_logsumexp_gradcheck(engine, buffer, monkeypatch):
    if buffer == "two_pass":
        monkeypatch.setenv("TORCHPAIR_BACKWARD_BUFFER_BYTES", "0")
    g = torch.Generator().manual_seed(5)
    X = torch.randn(2, 7, 3, generator=g, dtype=torch.float64, requires_grad=True)
    Y = torch.randn(2, 6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    wy = torch.randn(2, 6, generator=g, dtype=torch.float64, requires_grad=True)
    wx = torch.randn(2, 7, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda X, Y, w: tp.lazy(X, Y, "sqeuclidean").logsumexp(-1, scale=-0.8, log_weight=w), (X, Y, wy))
    assert torch.autograd.gradcheck(
        lambda X, Y, w: tp.lazy(X, Y, "euclidean").logsumexp(-2, scale=-1.3, log_weight=w), (X, Y, wx))
    assert torch.autograd.gradcheck(
        lambda Y, w: tp.lazy(X.detach(), Y, "rbf").T.logsumexp(-1, scale=2.0, log_weight=w), (Y, wx))
    assert torch.autograd.gradcheck(
        lambda w: tp.lazy(X.detach(), Y.detach(), "cityblock").logsumexp(-1, scale=-0.5, log_weight=w), (wy,))


def test_weighted_logsumexp_bad_input():
    K = tp.lazy(*_data(torch.float64, n=5, m=4), "euclidean")
    with pytest.raises(ValueError, match="'log_weight' has 3 entries"):
        K.logsumexp(-1, log_weight=torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="need 'dim'"):
        K.logsumexp(scale=2.0)
    with pytest.raises(ValueError, match="'scale' must be finite"):
        K.logsumexp(-1, scale=float("nan"))
    with pytest.raises(TypeError, match="'log_weight' must be floating"):
        torch.ops.torchpair.lazy_reduce(K.X, K.Y, "euclidean", "logsumexp", -1, log_weight=torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="\"logsumexp\" only"):
        torch.ops.torchpair.lazy_reduce(K.X, K.Y, "euclidean", "sum", -1, scale=2.0)


# ---- compile / export ---------------------------------------------------------------------------

def test_count_and_weighted_logsumexp_compile_and_export():
    class M(torch.nn.Module):
        def forward(self, X, Y, w):
            K = tp.lazy(X, Y, "euclidean")
            return K.count(1.5), K.logsumexp(-1, scale=-2.0, log_weight=w)

    X, Y = _data(torch.float64, n=30, m=20)
    w = torch.randn(20, dtype=torch.float64)
    D = torch.cdist(X, Y)
    ref = ((D <= 1.5).sum(-1), torch.logsumexp(-2.0 * D + w, -1))
    for out in (torch.compile(M(), fullgraph=True)(X, Y, w), torch.export.export(M(), (X, Y, w)).module()(X, Y, w)):
        torch.testing.assert_close(out[0], ref[0])
        torch.testing.assert_close(out[1], ref[1])


# ---- merges of partial results (the distributed merge's native definitions) ---------------

def test_logsumexp_merge_matches_torch():
    g = torch.Generator().manual_seed(3)
    parts = torch.randn(4, 7, 3, generator=g, dtype=torch.float64) * 50
    parts[1, 2] = -float("inf")  # one empty partial
    parts[:, 5] = -float("inf")  # a row empty on every rank
    parts[2, 6, 1] = -1e6  # below exp's range relative to the others
    want = torch.logsumexp(parts, 0)
    torch.testing.assert_close(torch.ops.torchpair._logsumexp_merge(parts, 0), want, rtol=1e-12, atol=0)
    # the same through a shared maximum (the replicated distributed merge): sums under m, added
    m = parts.amax(0)
    sums = torch.ops.torchpair._logsumexp_raise(parts, m).sum(0)
    torch.testing.assert_close(torch.ops.torchpair._logsumexp_finalize(sums, m), want, rtol=1e-12, atol=0)


def test_logsumexp_merge_gradients():
    g = torch.Generator().manual_seed(4)
    parts = torch.randn(3, 5, generator=g, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(lambda p: torch.ops.torchpair._logsumexp_merge(p, 0), (parts,))

    def through_max(p):
        m = p.detach().amax(0)
        return torch.ops.torchpair._logsumexp_finalize(torch.ops.torchpair._logsumexp_raise(p, m).sum(0), m)

    torch.autograd.gradcheck(through_max, (parts,))
    want = torch.autograd.grad(torch.logsumexp(parts, 0).sum(), parts)[0]
    got = torch.autograd.grad(through_max(parts).sum(), parts)[0]
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("largest", [False, True])
@pytest.mark.parametrize("nan_first", [False, True])
def test_merge_topk_matches_sorted_order(largest, nan_first):
    g = torch.Generator().manual_seed(5)
    values = torch.randint(0, 6, (4, 30), generator=g).double()  # many ties
    values[0, 3] = values[2, 17] = values[2, 4] = float("nan")
    indices = torch.randperm(30, generator=g).expand(4, 30).contiguous()  # candidates out of index order
    got_v, got_i = torch.ops.torchpair._merge_topk(values, indices, 7, largest, nan_first)
    for r in range(4):
        # oracle: Python's sort on (NaN class, value, index)
        items = [(v, i) for v, i in zip(values[r].tolist(), indices[r].tolist())]

        def key(t):
            v, i = t
            nan = v != v
            return (0 if nan == nan_first else 1, 0.0 if nan else (-v if largest else v), i)

        best = sorted(items, key=key)[:7]
        assert got_i[r].tolist() == [i for _, i in best]
        torch.testing.assert_close(got_v[r], torch.tensor([v for v, _ in best], dtype=torch.float64),
                                   equal_nan=True)
