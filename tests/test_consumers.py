"""Streamed consumers (mean, logsumexp, min/max/argmin/argmax, topk, softmax_matmul) against
dense torch on the oracle's matrix, for every metric row, both orientations, batched,
transposed, on the device-generic path; ties, NaN and empty inputs."""
import pytest
import torch

import torchpair as tp
from cases import METRIC_CASES, METRIC_IDS, tolerances
from test_parity import oracle, self_oracle

DIMS = [-1, -2]


def setup(case, n=23, m=301, dtype=torch.float64, d=None):
    d = case.dims[-1] if d is None else d
    x, y = case.sample((n, d), dtype), case.sample((m, d), dtype)
    return x, y, oracle(case, x, y).to(dtype), tp.lazy(x, y, case.metric, **case.params)


def tol(case, dtype, scale=10):
    t = tolerances(case, dtype)
    return {"rtol": t["rtol"] * scale, "atol": t["atol"] * scale}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_reductions(case, dtype):
    for d in (case.dims[0], case.dims[-1]):
        x, y, ref, K = setup(case, dtype=dtype, d=d)
        for dim in DIMS:
            torch.testing.assert_close(K.mean(dim), ref.mean(dim), **tol(case, dtype))
            torch.testing.assert_close(K.logsumexp(dim), torch.logsumexp(ref, dim), **tol(case, dtype))
        torch.testing.assert_close(K.mean(), ref.mean(), **tol(case, dtype))
        torch.testing.assert_close(K.logsumexp(), torch.logsumexp(ref.flatten(), 0), **tol(case, dtype))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_min_max_topk(case, dtype):
    for d in (case.dims[0], case.dims[-1]):
        x, y, ref, K = setup(case, dtype=dtype, d=d)
        for dim in DIMS:
            for name in ("min", "max"):
                got, want = getattr(K, name)(dim), getattr(torch, name)(ref, dim=dim)
                torch.testing.assert_close(got.values, want.values, **tolerances(case, dtype))
                # indices agree except where the oracle and we see a near-tie differently
                picked = ref.gather(dim, got.indices.unsqueeze(dim)).squeeze(dim)
                torch.testing.assert_close(picked, want.values, **tolerances(case, dtype))
                assert torch.equal(getattr(K, "arg" + name)(dim), got.indices)
            for k, largest in [(1, True), (5, False), (17, True)]:
                got = K.topk(k, dim=dim, largest=largest)
                want = torch.topk(ref, k, dim=dim, largest=largest)
                assert got.values.shape == want.values.shape and got.indices.dtype == torch.int64
                torch.testing.assert_close(got.values, want.values, **tolerances(case, dtype))
                torch.testing.assert_close(ref.gather(dim, got.indices), want.values, **tolerances(case, dtype))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_softmax_matmul(case, dtype):
    for d in (case.dims[0], case.dims[-1]):
        x, y, ref, K = setup(case, dtype=dtype, d=d)
        v = torch.randn(ref.shape[1], 4, dtype=dtype)
        w = torch.randn(ref.shape[0], 2, dtype=dtype)
        torch.testing.assert_close(K.softmax_matmul(v), torch.softmax(ref, -1) @ v, **tol(case, dtype))
        torch.testing.assert_close(K.softmax_matmul(v[:, 0]), torch.softmax(ref, -1) @ v[:, 0], **tol(case, dtype))
        torch.testing.assert_close(K.softmax_matmul(w, dim=-2), torch.softmax(ref, -2).T @ w, **tol(case, dtype))


@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_batched_transposed_and_self(case):
    d = case.dims[-1]
    x, y = case.sample((2, 1, 9, d)), case.sample((3, 40, d))
    K = tp.lazy(x, y, case.metric, **case.params)
    ref = torch.stack([torch.stack([oracle(case, x[i, 0], y[j]) for j in range(3)]) for i in range(2)])
    torch.testing.assert_close(K.logsumexp(-1), torch.logsumexp(ref, -1))
    torch.testing.assert_close(K.topk(4, largest=False).values, ref.topk(4, largest=False).values)
    torch.testing.assert_close(K.T.min(-1).values, ref.transpose(-1, -2).min(-1).values)
    torch.testing.assert_close(K.T.max(-2).values, ref.transpose(-1, -2).max(-2).values)
    v = torch.randn(2, 1, 9, 3, dtype=torch.float64)
    torch.testing.assert_close(K.T.softmax_matmul(v), torch.softmax(ref.transpose(-1, -2), -1) @ v)
    xs = case.sample((30, d))
    S = tp.lazy(xs, None, case.metric, **case.params)
    refs = self_oracle(case, xs)  # Y = None: scipy's squareform(pdist(xs))
    torch.testing.assert_close(S.topk(3, largest=False).values, refs.topk(3, largest=False).values)
    torch.testing.assert_close(S.mean(-2), refs.mean(-2))


@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_generic_path(case, force_generic):
    for d in (case.dims[0], case.dims[-1]):
        x, y, ref, K = setup(case, n=9, m=40, d=d)
        torch.testing.assert_close(K.logsumexp(-2), torch.logsumexp(ref, -2))
        torch.testing.assert_close(K.mean(-1), ref.mean(-1))
        got = K.topk(5, largest=False)
        torch.testing.assert_close(got.values, ref.topk(5, largest=False).values)
        torch.testing.assert_close(K.max(-2).values, ref.max(-2).values)
        v = torch.randn(40, 3, dtype=torch.float64)
        torch.testing.assert_close(K.softmax_matmul(v), torch.softmax(ref, -1) @ v)


@pytest.mark.parametrize("generic", [False, True], ids=["native", "generic"])
def test_ties_resolve_to_lowest_index(generic, monkeypatch):
    if generic:
        monkeypatch.setenv("TORCHPAIR_FORCE_GENERIC", "1")
    x = torch.tensor([[0.0, 0.0], [5.0, 5.0]], dtype=torch.float64)
    # columns 1, 3, 600 are the same point; columns 0 and 2 are equidistant copies
    y = torch.randn(700, 2, dtype=torch.float64) * 10 + 50
    y[[1, 3, 600]] = torch.tensor([1.0, 0.0], dtype=torch.float64)
    y[[2, 5]] = torch.tensor([0.0, -1.0], dtype=torch.float64)
    K = tp.lazy(x, y, "euclidean")
    assert K.argmin(-1)[0].item() == 1
    top = K.topk(5, largest=False)
    assert top.indices[0].tolist() == [1, 2, 3, 5, 600]
    assert K.T.argmin(-2)[1].item() == 1  # dim=-2 of K^T: over K's columns


@pytest.mark.parametrize("k", [1, 7, 24, 25, 64])
@pytest.mark.parametrize("largest", [False, True])
def test_topk_many_ties_and_nans_match_a_stable_sort(k, largest):
    """Long rows (many selection rounds per row) full of exact ties and NaN: the k best under
    torch's stable sort (ties to the lowest column, NaN the largest value). k up to 24 keeps
    its candidates sorted, larger k cuts a buffer of 2k (csrc/cpu/consumers_cpu.cpp, TopkRow):
    both sides of that edge."""
    g = torch.Generator().manual_seed(k)
    x = torch.randint(0, 4, (37, 2), generator=g).double()
    y = torch.randint(0, 4, (3000, 2), generator=g).double()  # 16 distinct points: ties everywhere
    y[torch.randperm(3000, generator=g)[:150], 1] = float("nan")
    D = ((x[:, None] - y[None]) ** 2).sum(-1)
    order = torch.sort(D, dim=-1, stable=True, descending=largest).indices[:, :k]
    top = tp.lazy(x, y, "sqeuclidean").topk(k, largest=largest)
    assert torch.equal(top.indices, order)
    torch.testing.assert_close(top.values, D.gather(-1, order), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("k", [25, 100, 250])
@pytest.mark.parametrize("largest", [False, True])
def test_topk_signed_zeros_infinities_and_ties_match_a_stable_sort(dtype, k, largest):
    """Past k = 24 a full buffer is cut by buckets of the values' order (csrc/cpu/
    consumers_cpu.cpp, TopkRow): -0 and +0 are one value (the lower column first), infinities
    are the ends, runs of equal values straddle the bucket the k-th best falls in. K = x y^T
    with one feature is every product exactly; the oracle is torch's stable sort."""
    g = torch.Generator().manual_seed(k)
    pool = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), 1.0, -1.0, 0.5, 3.0], dtype=torch.float64)
    y = torch.cat([pool[torch.randint(0, len(pool), (900,), generator=g)],
                   torch.randn(1100, generator=g, dtype=torch.float64)])[torch.randperm(2000, generator=g)]
    x = torch.tensor([1.0, -1.0, 2.0, -3.0], dtype=torch.float64)
    K = x[:, None] * y[None, :]  # exact: one product per entry; x has no 0, so no 0 * inf
    assert not torch.isnan(K).any() and bool((K == float("inf")).any()) and bool((K == 0).any())
    order = torch.sort(K, dim=-1, stable=True, descending=largest).indices[:, :k]
    top = tp.lazy(x[:, None].to(dtype), y[:, None].to(dtype), "linear").topk(k, largest=largest)
    assert torch.equal(top.indices, order)
    torch.testing.assert_close(top.values.double(), K.gather(-1, order))


@pytest.mark.parametrize("generic", [False, True], ids=["native", "generic"])
def test_nan_handling_matches_torch(generic, monkeypatch):
    if generic:
        monkeypatch.setenv("TORCHPAIR_FORCE_GENERIC", "1")
    x = torch.randn(4, 3, dtype=torch.float64)
    y = torch.randn(50, 3, dtype=torch.float64)
    y[7, 0] = float("nan")   # column 7 is NaN for every row
    x[2, 1] = float("nan")   # row 2 is NaN everywhere
    K, D = tp.lazy(x, y, "sqeuclidean"), torch.cdist(x, y) ** 2
    D[:, 7] = float("nan")
    D[2, :] = float("nan")
    for name in ("min", "max"):
        got, want = getattr(K, name)(-1), getattr(torch, name)(D, -1)
        torch.testing.assert_close(got.values, want.values, equal_nan=True)
        assert torch.equal(got.indices, want.indices)
    # topk: NaN is the largest value (first with largest=True, last otherwise)
    top = K.topk(3, largest=True)
    assert top.indices[0, 0].item() == 7 and torch.isnan(top.values[0, 0])
    bottom = K.topk(49, largest=False)
    assert 7 not in bottom.indices[0].tolist()
    assert torch.isnan(K.logsumexp(-1)).tolist() == [True] * 4
    assert torch.isnan(K.mean(-2)).all()  # row 2 is NaN in every column


def test_empty():
    x, y = torch.randn(0, 3), torch.randn(5, 3)
    K = tp.lazy(x, y, "rbf")
    assert K.logsumexp(-1).shape == (0,) and K.topk(2).values.shape == (0, 2)
    assert torch.isneginf(K.logsumexp(-2)).all() and torch.isnan(K.mean(-2)).all()
    assert K.softmax_matmul(torch.randn(5, 2)).shape == (0, 2)
    assert torch.equal(K.softmax_matmul(torch.randn(0, 2), dim=-2), torch.zeros(5, 2))
    assert K.topk(0, dim=-2).values.shape == (0, 5)


def test_dense_twin_agrees():
    x, y = torch.randn(20, 4, dtype=torch.float64), torch.randn(30, 4, dtype=torch.float64)
    lazy, dense = tp.pairwise_expression(x, y, "rbf"), tp.pairwise_expression(x, y, "rbf", lazy=False)
    v = torch.randn(30, 2, dtype=torch.float64)
    for name, args in [("mean", (-1,)), ("logsumexp", (-2,)), ("logsumexp", ()), ("softmax_matmul", (v,))]:
        torch.testing.assert_close(getattr(lazy, name)(*args), getattr(dense, name)(*args))
    for name in ("min", "max"):
        a, b = getattr(lazy, name)(-2), getattr(dense, name)(-2)
        torch.testing.assert_close(a.values, b.values)
        assert torch.equal(a.indices, b.indices)
    a, b = lazy.topk(4, dim=-2, largest=False), dense.topk(4, dim=-2, largest=False)
    torch.testing.assert_close(a.values, b.values)
    assert torch.equal(a.indices, b.indices)


@pytest.mark.parametrize("rows", [300, 600, 1500])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_a_walk_of_few_row_blocks_is_split_by_shape_not_threads(rows, dtype):
    # a walk of a few row blocks is evened out (csrc/cpu/sweep.h,
    # walk_row_blocks): the consumers' results stay those of the dense float64 formula, and
    # the same bits on one thread or two
    g = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, 24, generator=g, dtype=dtype)
    y = torch.randn(700, 24, generator=g, dtype=dtype)
    v = torch.randn(700, 3, generator=g, dtype=dtype)
    d2 = ((x.double()[:, None] - y.double()[None]) ** 2).sum(-1)
    Kref = torch.exp(-0.05 * d2)

    def run():
        K = tp.lazy(x, y, "rbf", gamma=0.05)
        return [K @ v, K.logsumexp(-1), K.softmax_matmul(v), *tp.knn(x, y, 10), tp.pairwise(x, y, "sqeuclidean")]

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = run()
        torch.set_num_threads(2)
        two = run()
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(one, two):
        assert torch.equal(a, b)
    t = {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {"rtol": 1e-10, "atol": 1e-10}
    mm, lse, smm, kv, ki, dense = two
    torch.testing.assert_close(mm.double(), Kref @ v.double(), **t)
    torch.testing.assert_close(lse.double(), torch.logsumexp(Kref, -1), **t)
    torch.testing.assert_close(smm.double(), torch.softmax(Kref, -1) @ v.double(), **t)
    torch.testing.assert_close(dense.double(), d2, rtol=t["rtol"], atol=t["atol"] * 100)
    wv, wi = d2.sqrt().topk(10, largest=False)
    torch.testing.assert_close(kv.double(), wv, **t)
    assert (ki == wi).float().mean() > 0.999  # float32 rounding may swap near-ties
