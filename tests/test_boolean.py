"""Boolean and equality comparisons against scipy / sklearn / numpy: exact counts,
densities 0.01-0.99, D from 1 to 1000 (multiples of 64 and not), batched, non-contiguous,
mixed dtypes; 0/0 conventions; hamming / equal on integer and float values (weighted);
no gradients; lazy top-k / min / argmin against the dense oracle; the generic path;
autocast; compile and export. The generic tables in cases.py add these metrics to
test_parity / test_lazy / test_consumers / test_opcheck too."""
import numpy as np
import pytest
import torch
from scipy.spatial import distance as ssd

import torchpair as tp
from cases import BOOLEAN_ORACLES

METRICS = sorted(BOOLEAN_ORACLES)
DENSITIES = [0.01, 0.1, 0.5, 0.9, 0.99]
DIMS = [1, 7, 63, 64, 65, 200, 1000]


def bits(shape, density, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g) < density


def ref(metric, x, y=None):
    xn = x.numpy() if x.dtype == torch.bool else x.double().numpy()
    yn = xn if y is None else (y.numpy() if y.dtype == torch.bool else y.double().numpy())
    return torch.from_numpy(np.ascontiguousarray(BOOLEAN_ORACLES[metric](xn, yn)))


def check(out, want, rtol=1e-12):
    if out.dtype == torch.bool:
        assert torch.equal(out, want.bool())
    else:
        torch.testing.assert_close(out.double(), want, rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("metric", METRICS)
def test_scipy_parity_densities_and_dims(metric):
    """float64 results (y given as float64 0/1) at rtol 1e-12; float32 results from bool inputs."""
    for i, d in enumerate(DIMS):
        for j, p in enumerate(DENSITIES):
            x, y = bits((9, d), p, seed=10 * i + j), bits((31, d), p, seed=100 + 10 * i + j)
            want = ref(metric, x, y)
            out64 = tp.cdist(x, y.double(), metric)
            assert out64.dtype == (torch.bool if metric == "equal" else torch.float64)
            check(out64, want)
            out32 = tp.pairwise(x, y, metric)
            assert out32.dtype == (torch.bool if metric == "equal" else torch.float32)
            check(out32, want, rtol=1e-6)


@pytest.mark.parametrize("metric", METRICS)
def test_counts_exact_on_special_rows(metric):
    """all-False and all-True rows (the 0/0 cases), next to random rows."""
    d = 130
    x = torch.cat([torch.zeros(2, d, dtype=torch.bool), torch.ones(2, d, dtype=torch.bool), bits((5, d), 0.5)])
    check(tp.pairwise(x, x.double(), metric), ref(metric, x, x))
    check(tp.pairwise(x, None, metric), ref(metric, x, x), rtol=1e-6)


@pytest.mark.parametrize("metric", [m for m in METRICS if m not in ("hamming", "equal")])
def test_nonzero_means_true(metric):
    """int8 / int64 / float inputs (any nonzero value, NaN included) act as their nonzero
    pattern for the Boolean dissimilarities; hamming / equal compare values (own tests)."""
    b = bits((12, 70), 0.4)
    vals = torch.randn(12, 70).abs() + 0.5
    as_float = torch.where(b, vals, torch.zeros(()))
    as_float[0, b[0].nonzero()[0]] = float("nan")
    want = ref(metric, b, b)
    for x in (b.to(torch.int8), b.long() * -7, as_float, as_float.double()):
        check(tp.pairwise(x, b.double(), metric), want)


@pytest.mark.parametrize("metric", METRICS)
def test_batched_broadcast_non_contiguous(metric):
    x = bits((3, 1, 6, 2 * 90), 0.3)[..., ::2]  # strided features
    y = bits((2, 22, 90), 0.6, seed=1)[:, ::2]   # strided rows
    assert not x.is_contiguous() and not y.is_contiguous()
    out = tp.pairwise(x, y.double(), metric)
    assert out.shape == (3, 2, 6, 11)
    for i in range(3):
        for j in range(2):
            check(out[i, j], ref(metric, x[i, 0], y[j]))


@pytest.mark.parametrize("metric", METRICS)
def test_zero_features(metric):
    """D = 0: every 0/0 has the value documented in docs/conventions.md."""
    x, y = torch.zeros(3, 0, dtype=torch.bool), torch.zeros(4, 0, dtype=torch.bool)
    documented = {"kulczynski1": float("inf"), "tanimoto": 1.0, "equal": True}
    out = tp.pairwise(x, y, metric)
    assert out.shape == (3, 4)
    want = documented.get(metric, 0.0)
    assert torch.all(out == want), (metric, out)


def test_all_false_conventions():
    """Two all-False rows: scipy's value where finite (jaccard 0, yule 0, russellrao 1,
    rogerstanimoto 0, hamming 0); otherwise torchpair's documented choice."""
    z = torch.zeros(1, 50, dtype=torch.bool)
    want = {"dice": 0.0, "jaccard": 0.0, "kulczynski1": float("inf"), "rogerstanimoto": 0.0, "russellrao": 1.0,
            "sokalmichener": 0.0, "sokalsneath": 0.0, "yule": 0.0, "tanimoto": 1.0, "hamming": 0.0,
            "matching": 0.0}
    for metric, value in want.items():
        assert tp.pairwise(z, z, metric).item() == value, metric
        finite = np.isfinite(ssd.cdist(z.numpy(), z.numpy(), metric)).all() if metric in (
            "jaccard", "yule", "russellrao", "rogerstanimoto", "hamming") else False
        if finite:
            assert ssd.cdist(z.numpy(), z.numpy(), metric)[0, 0] == value
    assert tp.pairwise(z, z, "equal").item() is True


# ---- hamming / equal on values (the equality engine) -----------------------------------
@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.float16,
                                   torch.bfloat16, torch.float32, torch.float64], ids=str)
def test_hamming_values_vs_scipy(dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, 4, (17, 45), generator=g).to(dtype)
    y = torch.randint(0, 4, (23, 45), generator=g).to(dtype)
    want = torch.from_numpy(ssd.cdist(x.double().numpy(), y.double().numpy(), "hamming"))
    out = tp.pairwise(x, y, "hamming")
    assert out.dtype == (torch.float64 if dtype == torch.float64 else torch.float32)
    check(out, want, rtol=1e-6)
    check(tp.pairwise(x, y.double(), "hamming"), want)
    check(tp.pairwise(x, None, "hamming").double(), torch.from_numpy(ssd.squareform(ssd.pdist(
        x.double().numpy(), "hamming"))), rtol=1e-6)
    eq = tp.pairwise(x, y, "equal")
    assert eq.dtype == torch.bool and torch.equal(eq, (x[:, None] == y[None]).all(-1))


def test_hamming_int64_beyond_float64():
    """64-bit integers are compared exactly (values 2^53 apart by 1 differ)."""
    base = 2**62
    x = torch.tensor([[base, base + 1, 5], [base + 1, base + 1, 5], [-base, 0, 5]], dtype=torch.int64)
    y = torch.tensor([[base + 1, base + 1, 5], [base, base + 1, 6]], dtype=torch.int64)
    # numpy's u != v on the int64 values (scipy's cdist would convert them to float64 first)
    want = (x.numpy()[:, None, :] != y.numpy()[None, :, :]).mean(-1)
    assert ssd.hamming(x[0].numpy(), y[0].numpy()) == want[0, 0]
    check(tp.pairwise(x, y, "hamming").double(), torch.from_numpy(want), rtol=1e-6)
    assert torch.equal(tp.pairwise(x, y, "equal"), (x[:, None] == y[None]).all(-1))
    assert torch.equal(tp.pairwise(x, None, "equal"), (x[:, None] == x[None]).all(-1))


def test_hamming_float_special_values():
    """NaN != NaN and -0 == 0, as numpy's u != v (scipy)."""
    nan = float("nan")
    x = torch.tensor([[nan, 0.0, 1.0], [1.0, -0.0, 2.0]], dtype=torch.float64)
    y = torch.tensor([[nan, -0.0, 1.0], [1.0, 0.0, 2.0]], dtype=torch.float64)
    check(tp.pairwise(x, y, "hamming"), torch.from_numpy(ssd.cdist(x.numpy(), y.numpy(), "hamming")))
    assert torch.equal(tp.pairwise(x, y, "equal"), torch.tensor([[False, False], [False, True]]))


@pytest.mark.parametrize("generic", [False, True])
def test_weighted_hamming_vs_scipy(generic, monkeypatch):
    if generic:
        monkeypatch.setenv("TORCHPAIR_FORCE_GENERIC", "1")
    g = torch.Generator().manual_seed(5)
    for dtype in (torch.bool, torch.int64, torch.float32, torch.float64):
        x = torch.randint(0, 3, (2, 11, 40), generator=g).to(dtype)
        y = torch.randint(0, 3, (2, 19, 40), generator=g).to(dtype)
        w = torch.rand(40, generator=g, dtype=torch.float64) * 3
        w[::7] = 0
        out = tp.pairwise(x, y, "hamming", w=w)
        for b in range(2):
            want = ssd.cdist(x[b].double().numpy(), y[b].double().numpy(), "hamming", w=w.numpy())
            check(out[b].double(), torch.from_numpy(want), rtol=1e-12 if dtype == torch.float64 else 1e-6)
        selfw = tp.pairwise(x[0], None, "hamming", w=w.float())
        want = ssd.squareform(ssd.pdist(x[0].double().numpy(), "hamming", w=w.numpy()))
        check(selfw.double(), torch.from_numpy(want), rtol=1e-6)


def test_weights_summing_to_zero_give_zero():
    x, y = torch.randint(0, 2, (3, 4)), torch.randint(0, 2, (2, 4))
    assert torch.all(tp.pairwise(x, y, "hamming", w=torch.zeros(4)) == 0)


# ---- contracts ----------------------------------------------------------------------------
@pytest.mark.parametrize("metric", METRICS)
def test_no_gradient(metric):
    """Results never carry a gradient, whatever the inputs' requires_grad (like torch.argmax)."""
    x = torch.randint(0, 2, (6, 70)).double().requires_grad_(True)
    y = torch.randint(0, 2, (5, 70)).double().requires_grad_(True)
    for out in (tp.pairwise(x, y, metric), tp.pairwise(x, None, metric), tp.lazy(x, y, metric).sum(-1),
                tp.lazy(x, y, metric).topk(2).values, tp.lazy(x, y, metric).min(-2).values,
                tp.lazy(x, y, metric) @ torch.randn(5, 2, dtype=torch.float64)):
        assert not out.requires_grad and out.grad_fn is None
    if metric == "hamming":
        out = tp.pairwise(x, y, metric, w=torch.ones(70, dtype=torch.float64, requires_grad=True))
        assert not out.requires_grad and out.grad_fn is None


def test_autocast_changes_nothing():
    x, y = bits((7, 100), 0.3), bits((9, 100), 0.3, seed=2)
    xv, yv = torch.randint(0, 3, (7, 10)).float(), torch.randint(0, 3, (9, 10)).float()
    for metric in METRICS:
        want = tp.pairwise(x, y, metric)
        want_v = tp.pairwise(xv, yv, "hamming")
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = tp.pairwise(x, y, metric)
            got_v = tp.pairwise(xv, yv, "hamming")
        assert got.dtype == want.dtype and torch.equal(got, want)
        assert got_v.dtype == want_v.dtype and torch.equal(got_v, want_v)


def test_metadata():
    for metric in METRICS:
        info = tp.metric_info(metric)
        assert info["family"] == "boolean" and not info["differentiable"]
    assert tp.metric_info("equal")["output"] == "bool"
    assert tp.metric_info("tanimoto")["kind"] == "similarity"
    assert [p["name"] for p in tp.metric_info("hamming")["params"]] == ["w"]


# ---- lazy consumers: nearest-fingerprint search without the N x M matrix ----------------
@pytest.mark.parametrize("generic", [False, True])
@pytest.mark.parametrize("metric", ["tanimoto", "jaccard", "dice", "russellrao", "kulczynski1", "hamming",
                                    "sokalsneath"])
def test_lazy_topk_min_argmin(metric, generic, monkeypatch):
    if generic:
        monkeypatch.setenv("TORCHPAIR_FORCE_GENERIC", "1")
    x, y = bits((2, 13, 200), 0.2), bits((2, 600, 200), 0.2, seed=4)
    want = torch.stack([ref(metric, x[b], y[b]) for b in range(2)])
    K = tp.lazy(x, y.double(), metric)
    for dim in (-1, -2):
        for k, largest in ((1, True), (7, False), (5, True)):
            got = K.topk(k, dim=dim, largest=largest)
            w = torch.topk(want, k, dim=dim, largest=largest)
            torch.testing.assert_close(got.values, w.values, rtol=1e-12, atol=0)
            # ties: any index with the k-th best value is right
            torch.testing.assert_close(want.gather(dim, got.indices), w.values, rtol=1e-12, atol=0)
        mn = K.min(dim)
        torch.testing.assert_close(mn.values, want.min(dim).values, rtol=1e-12, atol=0)
        assert torch.equal(K.argmin(dim), mn.indices)
        # lowest index on ties
        first = (want == want.min(dim, keepdim=True).values).int().argmax(dim)
        assert torch.equal(mn.indices, first)


def test_lazy_dtype():
    x = bits((4, 10), 0.5)
    assert tp.lazy(x, None, "jaccard").dtype == torch.float32 == tp.pairwise(x, None, "jaccard").dtype
    assert tp.lazy(x, x.double(), "dice").dtype == torch.float64
    assert tp.lazy(x, None, "equal").dtype == torch.bool


def test_lazy_equal_and_self():
    x = bits((40, 33), 0.5)
    x[5] = x[17]
    x[30] = x[17]
    E = tp.lazy(x, None, "equal")
    want = (x[:, None] == x[None]).all(-1)
    assert torch.equal(E.to_dense(), want)
    v = E.max(-1)
    assert v.values.dtype == torch.bool and torch.all(v.values)
    assert torch.equal(E.sum(-1), want.sum(-1).float())  # how many rows each row equals


def test_knn_tanimoto():
    x, y = bits((9, 256), 0.1), bits((300, 256), 0.1, seed=6)
    values, idx = tp.knn(x, y, 4, metric="tanimoto")  # similarity: largest first
    want = 1.0 - ssd.cdist(x.numpy(), y.numpy(), "jaccard")
    np.testing.assert_allclose(values.double().numpy(), -np.sort(-want, axis=1)[:, :4], rtol=1e-6)


@pytest.mark.parametrize("metric", METRICS)
def test_generic_path_parity(metric, force_generic):
    x, y = bits((2, 9, 130), 0.3), bits((2, 14, 130), 0.3, seed=8)
    out = tp.pairwise(x, y.double(), metric)
    for b in range(2):
        check(out[b], ref(metric, x[b], y[b]))
    check(tp.pairwise(x[0], None, metric), ref(metric, x[0], x[0]), rtol=1e-6)


# ---- compile / export -------------------------------------------------------------------
def test_compile_fullgraph_boolean():
    torch._dynamo.reset()

    @torch.compile(fullgraph=True)
    def f(x, y, xv, yv, w):
        return (tp.pairwise(x, y, "jaccard"), tp.lazy(x, y, "tanimoto").topk(3), tp.pairwise(x, None, "equal"),
                tp.pairwise(xv, yv, "hamming", w=w))

    x, y = bits((8, 100), 0.3), bits((20, 100), 0.3, seed=1)
    xv, yv = torch.randint(0, 3, (8, 12)), torch.randint(0, 3, (20, 12))
    w = torch.rand(12)
    d, (tv, ti), e, h = f(x, y, xv, yv, w)
    check(d, ref("jaccard", x, y), rtol=1e-6)
    torch.testing.assert_close(tv.double(), ref("tanimoto", x, y).topk(3).values, rtol=1e-6, atol=0)
    assert torch.equal(e, (x[:, None] == x[None]).all(-1))
    want = ssd.cdist(xv.double().numpy(), yv.double().numpy(), "hamming", w=w.double().numpy())
    torch.testing.assert_close(h.double(), torch.from_numpy(want), rtol=1e-6, atol=1e-7)


def test_export_boolean():
    class M(torch.nn.Module):
        def forward(self, x, y):
            return tp.lazy(x, y, "tanimoto").topk(2).indices, tp.pairwise(x, y, "dice")

    x, y = bits((6, 70), 0.3), bits((10, 70), 0.3, seed=1)
    ep = torch.export.export(M(), (x, y))
    idx, dice = ep.module()(x, y)
    eidx, edice = M()(x, y)
    assert torch.equal(idx, eidx) and torch.equal(dice, edice)
    check(dice, ref("dice", x, y), rtol=1e-6)


# ---- bad input ----------------------------------------------------------------------------
BAD = [
    ("complex", lambda: tp.pairwise(torch.randn(3, 4, dtype=torch.complex64), None, "jaccard"), TypeError,
     r"bool, integer or floating 'x'"),
    ("w-for-dice", lambda: tp.pairwise(bits((3, 4), .5), None, "dice", w=torch.ones(4)), TypeError,
     r"metric 'dice' does not take parameter 'w'"),
    ("w-shape", lambda: tp.pairwise(bits((3, 4), .5), None, "hamming", w=torch.ones(5)), ValueError,
     r"'w' of metric 'hamming' must have shape \[4\]"),
    ("w-negative", lambda: tp.pairwise(bits((3, 4), .5), None, "hamming", w=torch.tensor([1., -1, 1, 1])),
     ValueError, r"'w'.*>= 0"),
    ("w-nan", lambda: tp.pairwise(bits((3, 4), .5), None, "hamming", w=torch.tensor([1., float("nan"), 1, 1])),
     ValueError, r"'w'.*finite"),
    ("w-complex", lambda: tp.pairwise(bits((3, 4), .5), None, "hamming", w=torch.ones(4, dtype=torch.complex64)),
     TypeError, r"'w'.*real"),
    ("feature-mismatch", lambda: tp.pairwise(bits((3, 4), .5), bits((3, 5), .5), "jaccard"), ValueError,
     r"'x' has 4 features but 'y' has 5"),
    ("v-int", lambda: tp.lazy(bits((3, 4), .5), None, "jaccard") @ torch.ones(3, 2, dtype=torch.int64), TypeError,
     r"'v' must be floating"),
    ("core-packed-D", lambda: torch.ops.torchpair._dense(torch.zeros(1, 2, 1, dtype=torch.int64),
                                                         torch.zeros(1, 2, 1, dtype=torch.int64), None, None,
                                                         "packed_jaccard", [65.0], False, False, torch.float32),
     ValueError, r"'scalars'"),
    ("core-packed-dtype", lambda: torch.ops.torchpair._dense(torch.zeros(1, 2, 1), torch.zeros(1, 2, 1), None, None,
                                                             "packed_jaccard", [10.0], False, False, torch.float32),
     TypeError, r"'x' must have dtype Long"),
    ("core-packed-no-dtype", lambda: torch.ops.torchpair._dense(torch.zeros(1, 2, 1, dtype=torch.int64),
                                                                torch.zeros(1, 2, 1, dtype=torch.int64), None, None,
                                                                "packed_jaccard", [10.0], False, False),
     ValueError, r"'dtype'"),
    ("core-equality-weighted-odd", lambda: torch.ops.torchpair._dense(torch.zeros(1, 2, 3, dtype=torch.float64),
                                                                      torch.zeros(1, 2, 3, dtype=torch.float64), None,
                                                                      None, "equality_hamming", [1.0], False, False,
                                                                      torch.float64), ValueError, r"'scalars'"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_backward_through_core_raises():
    """Calling the backward of a packed kernel directly is a clear error, not a crash."""
    x = torch.zeros(1, 2, 1, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="not differentiable"):
        torch.ops.torchpair._dense_backward(torch.ones(1, 2, 2), x, x, None, None, "packed_jaccard", [10.0], False,
                                            False, torch.float32, [True, True, False, False])


# ---- pdist: the condensed triangle of the Boolean and equality engines (scipy's pdist) ------
@pytest.mark.parametrize("metric", ["dice", "jaccard", "rogerstanimoto", "russellrao", "sokalsneath", "yule",
                                    "hamming", "equal"])
@pytest.mark.parametrize("d", [1, 64, 130])
def test_pdist_matches_scipy(metric, d):
    from scipy.spatial.distance import pdist as scipy_pdist

    g = torch.Generator().manual_seed(d)
    x = torch.rand(2, 25, d, generator=g) < 0.4
    out = tp.pdist(x, metric)
    assert out.shape == (2, 25 * 24 // 2)
    for b in range(2):
        ref = scipy_pdist(x[b].numpy(), "hamming" if metric == "equal" else metric)
        if metric == "equal":
            assert out.dtype == torch.bool and torch.equal(out[b], torch.from_numpy(ref == 0))
        else:
            assert out.dtype == torch.float32
            ours, finite = out[b].double().numpy(), np.isfinite(ref)
            np.testing.assert_allclose(ours[finite], ref[finite], rtol=1e-6, atol=1e-7)
            # scipy's 0/0 (two all-False rows): torchpair's documented value, 0 for identical rows
            assert (ours[~finite] == 0).all()


def test_pdist_integer_hamming_and_sequences_route():
    from scipy.spatial.distance import pdist as scipy_pdist

    xi = torch.randint(0, 3, (20, 6), generator=torch.Generator().manual_seed(1))
    np.testing.assert_allclose(tp.pdist(xi, "hamming").double().numpy(), scipy_pdist(xi.numpy(), "hamming"))
    tokens, lengths = tp.encode(["kitten", "sitting", "mitten"])
    assert tp.pdist(tokens, "levenshtein", lengths=lengths).tolist() == [3, 1, 3]  # rapidfuzz's values
