"""The expression classes share one base (argument checks, result layout, tensor-like
reductions), every consumer goes through the backend registry's one dispatch point, and the
catalog rows are typed (sequence metrics included).

Oracles: dense torch formulas (textbook rbf / euclidean in float64) and rapidfuzz.
"""
from __future__ import annotations

import math

import pytest
import torch

import torchpair as tp
from torchpair import _catalog, backends
from torchpair._expression import PairwiseExpressionBase
from torchpair.distributed import ShardedPairwise
from torchpair.sequences import LazySequences

G = 0.3


def rbf(x, y):
    """exp(-G |x - y|^2), the textbook formula in float64."""
    return torch.exp(-G * ((x.double().unsqueeze(-2) - y.double().unsqueeze(-3)) ** 2).sum(-1))


def _data(batch=(2, 3), n=5, m=7, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*batch, n, d, generator=g, dtype=torch.float64),
            torch.randn(*batch, m, d, generator=g, dtype=torch.float64))


# ---------------------------------------------------------------------------------------
# tensor-like reductions: no dim = every dimension, batch included (torch.Tensor.sum())
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("lazy", [True, False], ids=["lazy", "dense"])
@pytest.mark.parametrize("batch", [(), (3,), (2, 3)], ids=str)
@pytest.mark.parametrize("transposed", [False, True], ids=["K", "K.T"])
def test_no_dim_reductions_cover_the_batch(lazy, batch, transposed):
    x, y = _data(batch)
    xr, yr = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    K = tp.pairwise_expression(xr, yr, "rbf", lazy=lazy, gamma=G)
    K = K.T if transposed else K
    ref = rbf(x, y)
    ref = ref.transpose(-1, -2) if transposed else ref
    for name, want in (("sum", ref.sum()), ("mean", ref.mean()), ("logsumexp", torch.logsumexp(ref.flatten(), 0))):
        got = getattr(K, name)()
        assert got.shape == torch.Size([]), name
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12, msg=name)
    # the gradient of the full sum: d/dx sum_ij exp(-G |x_i - y_j|^2), against autograd on the formula
    K.sum().backward()
    xo, yo = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    rbf(xo, yo).sum().backward()
    torch.testing.assert_close(xr.grad, xo.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(yr.grad, yo.grad, rtol=1e-10, atol=1e-12)


def test_no_dim_reductions_broadcast_and_empty_batch():
    x, y = _data((2, 1))
    y = y[0]  # [7, 4] against [2, 1, 5, 4]: batch (2, 1)
    K = tp.lazy(x, y, "rbf", gamma=G)
    torch.testing.assert_close(K.sum(), rbf(x, y).sum(), rtol=1e-12, atol=1e-12)
    # an empty batch: sum 0, mean NaN, logsumexp -inf (torch's values over no entries)
    e = tp.lazy(torch.empty(0, 3, 2, dtype=torch.float64), torch.randn(4, 2, dtype=torch.float64), "rbf")
    ref = torch.empty(0, 3, 4, dtype=torch.float64)
    assert e.sum().item() == ref.sum().item() == 0
    assert math.isnan(e.mean().item()) and math.isnan(ref.mean().item())
    assert e.logsumexp().item() == torch.logsumexp(ref.flatten(), 0).item() == -math.inf


def test_dim_reductions_unchanged():
    x, y = _data((2,))
    K = tp.lazy(x, y, "rbf", gamma=G)
    ref = rbf(x, y)
    for dim in (-1, -2, 2, 1):
        torch.testing.assert_close(K.sum(dim), ref.sum(dim), rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(K.logsumexp(dim), torch.logsumexp(ref, dim), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------
# one base class, one set of argument checks
# ---------------------------------------------------------------------------------------
@pytest.fixture
def group(tmp_path):
    import torch.distributed as dist
    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("torch.distributed with gloo is not available")
    if dist.is_initialized():
        yield
        return
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def _expressions():
    x, y = _data((), n=5, m=7)
    tok_x = torch.randint(0, 4, (5, 6))
    tok_y = torch.randint(0, 4, (7, 6))
    return {
        "lazy": (tp.lazy(x, y, "rbf", gamma=G), "torchpair.topk", rbf(x, y)),
        "dense": (tp.pairwise_expression(x, y, "rbf", lazy=False, gamma=G), "torchpair.topk", rbf(x, y)),
        "sequence": (tp.seq.lazy(tok_x, tok_y, "levenshtein"), "torchpair.seq.lazy.topk", None),
        "sharded": (lambda: tp.distributed.lazy(x, y, "rbf", gamma=G), "torchpair.distributed.topk", rbf(x, y)),
    }


def test_every_expression_class_shares_the_base():
    for cls in (tp.LazyPairwise, tp.DensePairwise, LazySequences, ShardedPairwise):
        assert issubclass(cls, PairwiseExpressionBase)
        # the consumers and their checks are defined once, in the base class
        for name in ("topk", "min", "max", "argmin", "argmax", "sum", "mean", "logsumexp", "softmax_matmul",
                     "_check_dim", "_check_k"):
            assert getattr(cls, name) is getattr(PairwiseExpressionBase, name), (cls, name)


@pytest.mark.parametrize("which", ["lazy", "dense", "sequence", "sharded"])
def test_shared_argument_checks(which, request):
    if which == "sharded":
        request.getfixturevalue("group")
    e, fn, _ = _expressions()[which]
    e = e() if callable(e) else e
    for call, exc, words in (
        (lambda: e.topk(1.0), TypeError, ["'k'"]),
        (lambda: e.topk(True), TypeError, ["'k'"]),
        (lambda: e.topk(-1), ValueError, ["'k'", ">= 0"]),
        (lambda: e.topk(8), ValueError, ["'k'", "(8)"]),
        (lambda: e.topk(1, dim=0.5), TypeError, ["'dim'"]),
        (lambda: e.topk(1, dim=2), ValueError, ["'dim'"]),
        (lambda: e.topk(1, largest=1), TypeError, ["'largest'"]),
        (lambda: e.topk(1, sorted=None), TypeError, ["'sorted'"]),
    ):
        with pytest.raises(exc) as info:
            call()
        msg = str(info.value)
        assert msg.startswith(fn + ":"), msg
        assert all(w in msg for w in words), msg


@pytest.mark.parametrize("which", ["lazy", "dense", "sharded"])
def test_topk_sorted_argument(which, request):
    """sorted=True: best first; sorted=False: the same k entries (any order), as torch.topk."""
    if which == "sharded":
        request.getfixturevalue("group")
    e, _, ref = _expressions()[which]
    e = e() if callable(e) else e
    for dim in (-1, -2):
        for largest in (True, False):
            want = torch.topk(ref, 3, dim=dim, largest=largest, sorted=True)
            got = e.topk(3, dim=dim, largest=largest, sorted=True)
            torch.testing.assert_close(got.values, want.values)
            torch.testing.assert_close(got.indices, want.indices)
            loose = e.topk(3, dim=dim, largest=largest, sorted=False)
            torch.testing.assert_close(loose.values.sort(dim, descending=largest).values, want.values)


def test_sequence_expression_consumers():
    """LazySequences streams the selections (rapidfuzz oracle) and rejects the other consumers
    with a clear error naming the method."""
    rapidfuzz = pytest.importorskip("rapidfuzz")
    (a, la), (b, lb) = tp.encode(["kitten", "sitting", "mitten"], ["fitting", "kit", "", "smitten"])
    e = tp.seq.lazy(a, b, "levenshtein", x_lengths=la, y_lengths=lb)
    words_a, words_b = ["kitten", "sitting", "mitten"], ["fitting", "kit", "", "smitten"]
    ref = torch.tensor([[rapidfuzz.distance.Levenshtein.distance(p, q) for q in words_b] for p in words_a])
    assert torch.equal(e.to_dense(), ref)
    assert torch.equal(e.T.to_dense(), ref.T)
    assert torch.equal(e.min(-2).values, ref.min(0).values)
    assert torch.equal(e.T.min(-1).values, ref.min(0).values)
    assert torch.equal(e.T.argmin(-2), ref.argmin(1))
    for call, name in ((lambda: e.sum(), "sum"), (lambda: e.mean(-1), "mean"), (lambda: e @ ref.double().T, "matmul"),
                       (lambda: e.softmax_matmul(ref.double().T), "softmax_matmul")):
        with pytest.raises(NotImplementedError, match=rf"torchpair\.seq\.lazy\.{name}: LazySequences does not"):
            call()


# ---------------------------------------------------------------------------------------
# the backend registry: one dispatch point
# ---------------------------------------------------------------------------------------
class _Recorder:
    """A backend that records each core consumer and declines (native runs it) or answers."""

    def __init__(self, answer=None):
        self.calls, self.answer = [], answer

    def __getattr__(self, name):
        if name not in backends.CONSUMERS:
            raise AttributeError(name)

        def consumer(*args):
            self.calls.append(name)
            return self.answer
        return consumer


@pytest.fixture
def recorder():
    rec = _Recorder()
    backends.register_backend("recorder", rec)
    yield rec
    backends._REGISTRY.pop("recorder")


def test_every_consumer_goes_through_dispatch(recorder):
    x, y = _data((), n=6, m=9)
    v = torch.randn(9, 2, dtype=torch.float64)
    K = tp.lazy(x, y, "rbf", gamma=G)
    ref = rbf(x, y)
    with tp.backend("recorder"):
        assert tp.get_backend() == "recorder"
        # declined: the native backend answers, with the native (correct) values
        torch.testing.assert_close(K @ v, ref @ v)
        torch.testing.assert_close(K.sum(-1), ref.sum(-1))
        torch.testing.assert_close(K.mean(), ref.mean())
        torch.testing.assert_close(K.logsumexp(-2), torch.logsumexp(ref, -2))
        torch.testing.assert_close(K.topk(2).values, torch.topk(ref, 2).values)
        assert torch.equal(K.argmin(-2), ref.argmin(-2))
        torch.testing.assert_close(K.softmax_matmul(v), torch.softmax(ref, -1) @ v)
        assert torch.equal(tp.knn(x, y, 2, "rbf", gamma=G).indices, torch.topk(ref, 2).indices)
        tp.hausdorff(x, y)
        tp.chamfer(x, y)
        tp.mmd(x, y, gamma=G)
        tp.energy_distance(x, y)
    assert recorder.calls == ["matmul", "reduce", "reduce", "reduce", "topk", "topk", "softmax_matmul", "knn",
                              "hausdorff", "chamfer", "mmd", "energy_distance"]
    # outside the context nothing is dispatched to it; compiled code never is
    K.sum()
    assert len(recorder.calls) == 12


def test_a_backend_answer_is_used():
    sentinel = torch.tensor(123.0)
    backends.register_backend("answer", _Recorder(answer=sentinel))
    try:
        K = tp.lazy(torch.randn(3, 2), torch.randn(4, 2), "rbf")
        with tp.backend("answer"):
            assert K.sum(-1) is sentinel
            assert tp.hausdorff(torch.randn(3, 2), torch.randn(4, 2)) is sentinel
    finally:
        backends._REGISTRY.pop("answer")


def test_registry_errors():
    with pytest.raises(ValueError, match="'native'"):
        backends.register_backend("native", object())
    with pytest.raises(TypeError, match="'name'"):
        backends.register_backend("", object())
    with pytest.raises(ValueError, match=r"unknown backend 'nope'.*native, keops"):
        tp.backend("nope")
    assert backends.registered_backends()[:2] == ("native", "keops")


def test_consumers_do_not_know_keops():
    """No consumer module names the KeOps backend: it registers itself."""
    import pathlib
    root = pathlib.Path(tp.__file__).parent
    for name in ("lazy.py", "sets.py", "distributed.py", "sequences.py", "_expression.py", "functional.py"):
        text = (root / name).read_text()
        assert "_keops" not in text and "keops" not in text.lower().replace("keops'", ""), name


# ---------------------------------------------------------------------------------------
# typed catalog rows; sequence metrics in the catalog
# ---------------------------------------------------------------------------------------
SEQUENCE = ("levenshtein", "osa", "damerau_levenshtein", "indel", "lcs", "hamming", "jaro", "jaro_winkler", "prefix",
            "postfix")


def test_sequence_metrics_are_catalog_rows():
    names = tp.metrics()
    assert len(names) == len(set(names))
    for m in SEQUENCE:
        assert m in names
    assert tp.metrics(family="sequence") == list(SEQUENCE)
    assert tp.seq.METRICS == SEQUENCE
    lev = tp.metric_info("levenshtein")
    assert lev["family"] == "sequence" and lev["kind"] == "distance" and lev["differentiable"] is False
    assert [(p["name"], p["default_value"]) for p in lev["params"]] == [("weights", [1, 1, 1])]
    jw = tp.metric_info("jaro_winkler")
    assert [(p["name"], p["default_value"]) for p in jw["params"]] == [("prefix_weight", 0.1)]
    # hamming: the Boolean metric by default, the sequence one by family
    assert tp.metric_info("hamming")["family"] == "boolean"
    seq_h = tp.metric_info("hamming", family="sequence")
    assert seq_h["family"] == "sequence" and [p["name"] for p in seq_h["params"]] == ["pad"]
    with pytest.raises(ValueError, match="'family'"):
        tp.metrics(family="strings")
    with pytest.raises(ValueError, match="unknown sequence metric 'euclidean'"):
        tp.metric_info("euclidean", family="sequence")


def test_sequence_defaults_match_rapidfuzz():
    """The catalog's defaults are the ones the operators use and rapidfuzz's."""
    rapidfuzz = pytest.importorskip("rapidfuzz")
    words_a, words_b = ["martha", "dwayne", "dixon"], ["marhta", "duane", "dicksonx", ""]
    (a, la), (b, lb) = tp.encode(words_a, words_b)
    jw = tp.seq.pairwise(a, b, "jaro_winkler", x_lengths=la, y_lengths=lb)
    pw = _catalog.info("jaro_winkler", family="sequence").default("prefix_weight")
    ref = torch.tensor([[rapidfuzz.distance.JaroWinkler.distance(p, q, prefix_weight=pw) for q in words_b]
                        for p in words_a], dtype=torch.float64)
    torch.testing.assert_close(jw, ref, rtol=0, atol=1e-12)
    assert jw.dtype == _catalog.info("jaro_winkler", family="sequence").output_dtype()


def test_sequence_parameters_checked_in_one_place():
    """Values are checked by the catalog's native resolve (csrc/catalog/sequences.cpp), named
    after the public function the user called."""
    a = torch.randint(0, 5, (3, 6))
    for call, fn, words in (
        (lambda: tp.seq.pairwise(a, a, "levenshtein", weights=(1, -1, 1)), "torchpair.seq.pairwise", "'weights'"),
        (lambda: tp.seq.pdist(a, "jaro_winkler", prefix_weight=1.5), "torchpair.seq.pdist", "'prefix_weight'"),
        (lambda: tp.seq.lazy(a, a, "jaro_winkler", prefix_weight=-0.5), "torchpair.seq.lazy", "'prefix_weight'"),
        (lambda: tp.pairwise(a, a, "jaro_winkler", prefix_weight=float("nan")), "torchpair.seq.pairwise",
         "'prefix_weight'"),
    ):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value).startswith(fn + ":") and words in str(info.value), str(info.value)
    with pytest.raises(TypeError, match=r"torchpair\.seq\.pairwise: 'weights' must be a tuple of 3 ints"):
        tp.seq.pairwise(a, a, "levenshtein", weights=(1, 2))
    with pytest.raises(TypeError, match=r"torchpair\.seq\.pairwise: 'pad' must be a bool"):
        tp.seq.pairwise(a, a, "hamming", pad=1)


def test_typed_rows():
    assert _catalog.info("equal").is_boolean and _catalog.info("equal").output_dtype(torch.int64) == torch.bool
    info = _catalog.info("jaccard")
    assert info.is_boolean and info.output_dtype(torch.bool, torch.float64) == torch.float64
    assert info.output_dtype(torch.bool, torch.int32) == torch.float32
    assert _catalog.info("rbf").output_dtype(torch.float64) == torch.float64 and _catalog.info("rbf").is_similarity
    assert _catalog.info("l2").name == "euclidean" and _catalog.info("euclidean").is_distance
    assert _catalog.info("polynomial").default("coef0") == 1 and _catalog.info("polynomial").default("degree") == 3
    assert _catalog.info("rbf").default("gamma") is None  # 1 / n_features: depends on the data
    lev = _catalog.info("levenshtein")
    assert lev.is_sequence and lev.output_dtype(normalized=False) == torch.int64
    assert lev.output_dtype(normalized=True) == torch.float64
    # the dtype a lazy expression reports is the catalog's rule, and the result's dtype
    for metric, x in (("equal", torch.randint(0, 2, (3, 4))), ("jaccard", torch.rand(3, 4) > 0.5),
                      ("rbf", torch.randn(3, 4, dtype=torch.float64))):
        assert tp.lazy(x, x, metric).dtype == tp.pairwise(x, x, metric).dtype
