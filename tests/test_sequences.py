"""Token sequences (tp.seq): parity with rapidfuzz.distance.* (exact for integer distances,
1e-12 for floats), exhaustive short strings, lengths crossing the 64-token word boundary,
pdist / lazy top-k against orderings of the rapidfuzz matrix, routing, contract and bad
input. The oracle is always rapidfuzz (an independent C++ implementation), never torchpair.
"""
from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
import torch
from rapidfuzz import process
from rapidfuzz.distance import (OSA, DamerauLevenshtein, Hamming, Indel, Jaro, JaroWinkler, LCSseq, Levenshtein,
                                Postfix, Prefix)

import torchpair as tp

SCORERS = {
    "levenshtein": Levenshtein, "osa": OSA, "damerau_levenshtein": DamerauLevenshtein, "indel": Indel,
    "lcs": LCSseq, "hamming": Hamming, "jaro": Jaro, "jaro_winkler": JaroWinkler, "prefix": Prefix,
    "postfix": Postfix,
}
FLOATING = {"jaro", "jaro_winkler"}

# (metric, tp params, rapidfuzz kwargs)
CASES = [
    ("levenshtein", {}, {}),
    ("levenshtein", {"weights": (1, 1, 2)}, {"weights": (1, 1, 2)}),
    ("levenshtein", {"weights": (2, 2, 2)}, {"weights": (2, 2, 2)}),
    ("levenshtein", {"weights": (1, 2, 3)}, {"weights": (1, 2, 3)}),
    ("levenshtein", {"weights": (3, 1, 1)}, {"weights": (3, 1, 1)}),
    ("levenshtein", {"weights": (2, 2, 1)}, {"weights": (2, 2, 1)}),
    ("osa", {}, {}),
    ("damerau_levenshtein", {}, {}),
    ("indel", {}, {}),
    ("lcs", {}, {}),
    ("hamming", {"pad": True}, {"pad": True}),
    ("jaro", {}, {}),
    ("jaro_winkler", {}, {}),
    ("jaro_winkler", {"prefix_weight": 0.25}, {"prefix_weight": 0.25}),
    ("prefix", {}, {}),
    ("postfix", {}, {}),
]
CASE_IDS = [m + ("[" + ",".join(f"{k}={v}" for k, v in p.items()) + "]" if p else "") for m, p, _ in CASES]


def oracle(metric, a, b, normalized=False, **kw):
    """The rapidfuzz matrix (float64), computed pair by pair by rapidfuzz's own cdist."""
    sc = SCORERS[metric]
    scorer = sc.normalized_distance if (normalized or metric in FLOATING) else sc.distance
    dtype = np.float64 if (normalized or metric in FLOATING) else np.int64
    return process.cdist(a, b, scorer=scorer, scorer_kwargs=kw, dtype=dtype, workers=1)


def check(got, want, floating):
    got = got.numpy()
    if floating:
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    else:
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)


def rand_strings(rng, n, lo, hi, alphabet):
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi))) for _ in range(n)]


UNICODE = [chr(c) for c in itertools.chain(range(0x20, 0x7f), range(0xa1, 0x17f), range(0x391, 0x3c9),
                                           range(0x4e00, 0x4e40), range(0x1f600, 0x1f640))]

DATASETS = {
    # name: (n, m, min length, max length, alphabet)
    "small-alphabet": (14, 11, 0, 12, "abc"),
    "large-alphabet": (12, 10, 0, 30, UNICODE),
    "crossing-64": (9, 8, 55, 140, "abcd"),
    "long-unicode": (6, 7, 0, 300, UNICODE[:40]),
    # past the longest pattern of a SIMD group (512 tokens): single-row units
    "very-long": (3, 2, 480, 600, "abc"),
}


@pytest.mark.parametrize("data", list(DATASETS), ids=list(DATASETS))
@pytest.mark.parametrize("normalized", [False, True], ids=["raw", "normalized"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_parity_random(case, normalized, data):
    metric, params, kw = case
    n, m, lo, hi, alphabet = DATASETS[data]
    rng = random.Random(hash((metric, data)) & 0xFFFF)
    a = rand_strings(rng, n, lo, hi, alphabet)
    b = rand_strings(rng, m, lo, hi, alphabet)
    if data == "crossing-64":  # every length around the word boundaries
        a = a + ["ab" * 31 + "c", "abcd" * 16, "abcd" * 16 + "a", "a" * 128, "b" * 129]
    (xa, la), (xb, lb) = tp.encode(a, b)
    got = tp.seq.pairwise(xa, xb, metric, x_lengths=la, y_lengths=lb, normalized=normalized, **params)
    check(got, oracle(metric, a, b, normalized, **kw), normalized or metric in FLOATING)


def _all_strings(alphabet="abc", max_len=4):
    out = [""]
    for L in range(1, max_len + 1):
        out += ["".join(t) for t in itertools.product(alphabet, repeat=L)]
    return out


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_exhaustive_short_strings(case):
    """All pairs of strings of length <= 4 over a 3-letter alphabet (121 x 121)."""
    metric, params, kw = case
    s = _all_strings()
    x, lx = tp.encode(s)
    for normalized in (False, True):
        got = tp.seq.pairwise(x, None, metric, x_lengths=lx, normalized=normalized, **params)
        check(got, oracle(metric, s, s, normalized, **kw), normalized or metric in FLOATING)


def test_hamming_equal_lengths_without_pad():
    rng = random.Random(3)
    a, b = rand_strings(rng, 9, 7, 7, "abcd"), rand_strings(rng, 6, 7, 7, "abcd")
    (xa, la), (xb, lb) = tp.encode(a, b)
    check(tp.seq.pairwise(xa, xb, "hamming", x_lengths=la, y_lengths=lb), oracle("hamming", a, b, pad=False), False)
    check(tp.seq.pairwise(xa, xb, "hamming", x_lengths=la, y_lengths=lb, normalized=True),
          oracle("hamming", a, b, True, pad=False), True)


def test_lists_of_ints_and_hashables():
    rng = random.Random(5)
    a = [[rng.choice([1, 2, 3, 10**12, -7]) for _ in range(rng.randint(0, 70))] for _ in range(8)]
    b = [[rng.choice([1, 2, 3, 10**12, -7]) for _ in range(rng.randint(0, 70))] for _ in range(5)]
    (xa, la), (xb, lb) = tp.encode(a, b)
    for metric in ("levenshtein", "osa", "damerau_levenshtein", "indel", "lcs", "jaro_winkler", "prefix"):
        check(tp.seq.pairwise(xa, xb, metric, x_lengths=la, y_lengths=lb), oracle(metric, a, b),
              metric in FLOATING)
    # words as tokens
    wa = [s.split() for s in ["the cat sat", "a cat sat on the mat", ""]]
    wb = [s.split() for s in ["the mat sat", "cat"]]
    (xa, la), (xb, lb) = tp.encode(wa, wb)
    check(tp.seq.pairwise(xa, xb, "levenshtein", x_lengths=la, y_lengths=lb), oracle("levenshtein", wa, wb), False)


def test_raw_token_ids_any_integer_dtype_and_pad():
    """Token ids straight from tensors (large, negative, any integer dtype), lengths from
    the pad id, and the two sides with different L."""
    g = torch.Generator().manual_seed(0)
    for dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8):
        hi = 100 if dtype in (torch.int8, torch.uint8) else 5000
        x = torch.randint(0, hi, (6, 80), generator=g).to(dtype)
        y = torch.randint(0, hi, (5, 70), generator=g).to(dtype)
        x[:, :40] = x[:, :40] % 4  # plenty of matches
        y[:, :40] = y[:, :40] % 4
        lx = torch.randint(0, 81, (6,), generator=g)
        ly = torch.randint(0, 71, (5,), generator=g)
        a = [x[i, : lx[i]].tolist() for i in range(6)]
        b = [y[j, : ly[j]].tolist() for j in range(5)]
        for metric in ("levenshtein", "lcs", "osa", "jaro"):
            check(tp.seq.pairwise(x, y, metric, x_lengths=lx, y_lengths=ly), oracle(metric, a, b),
                  metric in FLOATING)
        if dtype != torch.uint8:  # pad id -1: tokens after the first pad are ignored
            xp = x.clone().to(torch.int64)
            for i in range(6):
                xp[i, lx[i]:] = -1
            if lx[0] < 79:
                xp[0, -1] = 3  # after the first pad: ignored
            check(tp.seq.pairwise(xp, y, "levenshtein", y_lengths=ly), oracle("levenshtein", a, b), False)


def test_batch_dims_broadcast():
    rng = random.Random(7)
    A = [[rand_strings(rng, 4, 0, 20, "abc") for _ in range(3)] for _ in range(2)]  # [2, 3] batch of 4 strings
    B = [rand_strings(rng, 5, 0, 20, "abc")]  # batch [1] -> broadcasts
    flat_a = [s for r in A for q in r for s in q]
    (xa, la), (xb, lb) = tp.encode(flat_a, B[0])
    L = xa.shape[-1]
    xa, la = xa.reshape(2, 3, 4, L), la.reshape(2, 3, 4)
    got = tp.seq.pairwise(xa, xb[None], "levenshtein", x_lengths=la, y_lengths=lb[None])
    assert got.shape == (2, 3, 4, 5)
    for i in range(2):
        for j in range(3):
            check(got[i, j], oracle("levenshtein", A[i][j], B[0]), False)


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in ("levenshtein", "jaro_winkler", "lcs", "osa")][:5],
                         ids=lambda c: c[0] + str(c[1]))
def test_pdist(case):
    metric, params, kw = case
    rng = random.Random(11)
    a = rand_strings(rng, 23, 0, 90, "abcde")
    x, lx = tp.encode(a)
    full = oracle(metric, a, a, **kw)
    iu = np.triu_indices(len(a), 1)  # scipy's condensed order
    got = tp.seq.pdist(x, metric, lengths=lx, **params)
    check(got, full[iu], metric in FLOATING)
    # batched, and normalized
    xb = torch.stack([x, x.flip(0)])
    lb = torch.stack([lx, lx.flip(0)])
    got = tp.seq.pdist(xb, metric, lengths=lb, normalized=True, **params)
    fulln = oracle(metric, a, a, True, **kw)
    check(got[0], fulln[iu], True)
    fr = oracle(metric, a[::-1], a[::-1], True, **kw)
    check(got[1], fr[iu], True)
    assert tp.seq.pdist(x[:1], metric, lengths=lx[:1], **params).shape == (0,)


def _stable_topk(D, k, largest, axis):
    order = np.argsort(-D if largest else D, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(D, idx, axis=axis), idx


@pytest.mark.parametrize("metric,params,kw", [CASES[0], CASES[3], CASES[7], CASES[12], CASES[9]],
                         ids=["levenshtein", "levenshtein-w123", "damerau", "jaro_winkler", "lcs"])
def test_lazy_topk_min(metric, params, kw):
    rng = random.Random(13)
    a = rand_strings(rng, 17, 0, 80, "abcd")
    b = rand_strings(rng, 29, 0, 80, "abcd")
    (xa, la), (xb, lb) = tp.encode(a, b)
    K = tp.seq.lazy(xa, xb, metric, x_lengths=la, y_lengths=lb, **params)
    assert K.shape == (17, 29)
    D = oracle(metric, a, b, **kw)
    fl = metric in FLOATING
    for largest in (False, True):
        for dim, axis in ((-1, 1), (-2, 0)):
            k = 4
            v, i = K.topk(k, dim=dim, largest=largest)
            wv, wi = _stable_topk(D, k, largest, axis)
            check(v, wv, fl)
            np.testing.assert_array_equal(i.numpy(), wi)
    v, i = K.min(-1)
    wv, wi = _stable_topk(D, 1, False, 1)
    check(v, wv[:, 0], fl)
    np.testing.assert_array_equal(i.numpy(), wi[:, 0])
    np.testing.assert_array_equal(K.argmin(-2).numpy(), np.argmin(D, axis=0))
    np.testing.assert_array_equal(K.argmax(-1).numpy(), np.argmax(D, axis=1))
    check(K.max(-2).values, D.max(axis=0), fl)
    check(K.to_dense(), D, fl)
    # normalized and all k
    Kn = tp.seq.lazy(xa, xb, metric, x_lengths=la, y_lengths=lb, normalized=True, **params)
    v, i = Kn.topk(29, largest=False)
    wv, wi = _stable_topk(oracle(metric, a, b, True, **kw), 29, False, 1)
    check(v, wv, True)
    np.testing.assert_array_equal(i.numpy(), wi)
    assert Kn.topk(0)[0].shape == (17, 0)


@pytest.mark.parametrize("metric,normalized", [("levenshtein", False), ("lcs", False), ("levenshtein", True),
                                               ("jaro_winkler", False)])
@pytest.mark.parametrize("k", [1, 7, 24, 25, 60])
def test_topk_many_ties_match_a_stable_sort(metric, normalized, k):
    # short strings of a two-letter alphabet: a row of 300 columns holds a few distinct
    # distances, so most candidates tie with the bar; with 300 > 2k columns the selection is
    # cut back (past 24 kept) several times per row
    rng = random.Random(k)
    a = rand_strings(rng, 9, 0, 10, "ab")
    b = rand_strings(rng, 300, 0, 10, "ab")
    (xa, la), (xb, lb) = tp.encode(a, b)
    K = tp.seq.lazy(xa, xb, metric, x_lengths=la, y_lengths=lb, normalized=normalized)
    D = oracle(metric, a, b, normalized)
    floating = normalized or metric in FLOATING
    for largest in (False, True):
        v, i = K.topk(k, largest=largest)
        wv, wi = _stable_topk(D, k, largest, 1)
        check(v, wv, floating)
        np.testing.assert_array_equal(i.numpy(), wi)


def test_routing_from_pairwise_cdist_lazy():
    rng = random.Random(17)
    a, b = rand_strings(rng, 5, 0, 10, "ab"), rand_strings(rng, 4, 0, 10, "ab")
    (xa, la), (xb, lb) = tp.encode(a, b)
    want = oracle("levenshtein", a, b)
    check(tp.pairwise(xa, xb, "levenshtein", x_lengths=la, y_lengths=lb), want, False)
    check(tp.cdist(xa, xb, "levenshtein"), want, False)  # lengths from the pad id -1
    v, i = tp.lazy(xa, xb, "levenshtein").min(-1)
    check(v, want.min(1), False)
    check(tp.pairwise(xa, xb, "hamming", pad=True), oracle("hamming", a, b, pad=True), False)
    check(tp.pairwise(xa, xb, "hamming", pad_id=-1, pad=True), oracle("hamming", a, b, pad=True), False)
    # without a sequence keyword, integer tensors get scipy's numeric Hamming distance
    from scipy.spatial.distance import cdist as _cdist

    xs, ys = xa[:, :5], xb[:, :5]
    torch.testing.assert_close(tp.pairwise(xs, ys, "hamming").double(),
                               torch.from_numpy(_cdist(xs.numpy(), ys.numpy(), "hamming")))


def test_encode():
    (xa, la), (xb, lb) = tp.encode(["héllo", "", "😀a"], ["a😀", "hello"])
    assert xa.dtype == torch.long and xa.shape == (3, 5) and la.tolist() == [5, 0, 2]
    assert xb.shape == (2, 5) and lb.tolist() == [2, 5]
    assert (xa[1] == -1).all() and (xa[2, 2:] == -1).all()
    # one vocabulary: equal characters get equal ids on both sides
    assert xa[2, 0] == xb[1 - 1, 1] and xa[2, 1] == xb[0, 0]
    assert xa[0, 0] == xb[1, 0] and xa[0, 1] != xb[1, 1]
    x, lx = tp.encode([[1, 2], (2, "w")], pad_id=0)
    assert x.tolist() == [[1, 2], [2, 3]] and lx.tolist() == [2, 2]  # ids skip the pad id
    x, lx = tp.encode([])
    assert x.shape == (0, 0) and lx.shape == (0,)
    with pytest.raises(TypeError, match="'a'"):
        tp.encode("abc")
    with pytest.raises(TypeError, match=r"a\[1\]"):
        tp.encode(["ab", 3])
    with pytest.raises(TypeError, match="unhashable"):
        tp.encode([[[1]]])


def test_contract_no_grad_no_autocast_inputs_unchanged():
    (xa, la), (xb, lb) = tp.encode(["kitten", "sitting"], ["mitten", ""])
    xa0, la0 = xa.clone(), la.clone()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        d = tp.seq.pairwise(xa, xb, "jaro", x_lengths=la, y_lengths=lb)
        r = tp.seq.pairwise(xa, xb, "levenshtein", x_lengths=la, y_lengths=lb, normalized=True)
    assert d.dtype == torch.float64 and r.dtype == torch.float64
    assert not d.requires_grad and not r.requires_grad
    check(r, oracle("levenshtein", ["kitten", "sitting"], ["mitten", ""], True), True)
    assert torch.equal(xa, xa0) and torch.equal(la, la0)
    # empty sides
    e = tp.seq.pairwise(xa[:0], xb, "levenshtein", x_lengths=la[:0], y_lengths=lb)
    assert e.shape == (0, 2) and e.dtype == torch.long


def test_compile_and_export():
    torch._dynamo.reset()

    class Search(torch.nn.Module):
        def forward(self, x, y):
            K = tp.seq.lazy(x, y, "levenshtein")  # lengths from the pad id
            v, i = K.topk(2, largest=False)
            return tp.seq.pairwise(x, y, "jaro_winkler"), v, i, tp.seq.pdist(x, "indel", normalized=True)

    (xa, la), (xb, lb) = tp.encode(["kitten", "sitting", "bitten", "", "mitt"], ["mitten", "fitting", "kit"])
    eager = Search()(xa, xb)
    compiled = torch.compile(Search(), fullgraph=True)(xa, xb)
    for e, c in zip(eager, compiled):
        assert torch.equal(e, c)
    D = oracle("jaro_winkler", ["kitten", "sitting", "bitten", "", "mitt"], ["mitten", "fitting", "kit"])
    check(compiled[0], D, True)
    ep = torch.export.export(Search(), (xa, xb))
    for e, c in zip(eager, ep.module()(xa, xb)):
        assert torch.equal(e, c)


def test_engine_paths_linear_scan_and_damerau():
    """The engines' special paths against rapidfuzz: the vectorized linear scans (prefix /
    postfix common runs past their 16-position layout, every column tail of a SIMD vector),
    Damerau-Levenshtein groups in int16 lanes, int32 lanes (ids past int16) and rank-mapped
    ids (past int32), full and partial groups, in dense, pdist and top-k."""
    rng = random.Random(23)
    stems = ["", "abcabcabcabcabcabcab", "x" * 70, "abababababababababababababab"]

    def stemmed(n):  # shared stems at both ends: common prefixes / postfixes of 0-98 tokens
        out = []
        for _ in range(n):
            s = rng.choice(stems) + "".join(rng.choice("abcx") for _ in range(rng.randint(0, 6)))
            out.append(s + rng.choice(stems) if rng.random() < 0.5 else s)
        return out

    a, b = stemmed(41), stemmed(37)
    (xa, la), (xb, lb) = tp.encode(a, b)
    iu = np.triu_indices(len(a), 1)
    for metric, kw in (("prefix", {}), ("postfix", {}), ("hamming", {"pad": True}), ("damerau_levenshtein", {})):
        for normalized in (False, True):
            want = oracle(metric, a, b, normalized, **kw)
            check(tp.seq.pairwise(xa, xb, metric, x_lengths=la, y_lengths=lb, normalized=normalized, **kw), want,
                  normalized)
            check(tp.seq.pdist(xa, metric, lengths=la, normalized=normalized, **kw),
                  oracle(metric, a, a, normalized, **kw)[iu], normalized)
        v, i = tp.seq.lazy(xa, xb, metric, x_lengths=la, y_lengths=lb, **kw).topk(3, largest=False)
        wv, wi = _stable_topk(oracle(metric, a, b, **kw), 3, False, 1)
        check(v, wv, False)
        np.testing.assert_array_equal(i.numpy(), wi)
    # token ids past int16 (int32 lanes) and past int32 (ranked ids), 70 rows: full and partial groups
    for base in (40000, 10**12):
        toks = [base + 7 * q for q in range(5)] + [-base, 0]
        a = [[rng.choice(toks) for _ in range(rng.randint(0, 45))] for _ in range(70)]
        b = [[rng.choice(toks) for _ in range(rng.randint(0, 45))] for _ in range(19)]
        a[0], b[0] = b[1] + [toks[0]], b[1] + [toks[1]]  # a long common prefix
        L = 46
        x = torch.tensor([s + [-1] * (L - len(s)) for s in a])
        y = torch.tensor([s + [-1] * (L - len(s)) for s in b])
        lx, ly = torch.tensor([len(s) for s in a]), torch.tensor([len(s) for s in b])
        for metric, kw in (("prefix", {}), ("postfix", {}), ("hamming", {"pad": True}),
                           ("damerau_levenshtein", {})):
            check(tp.seq.pairwise(x, y, metric, x_lengths=lx, y_lengths=ly, **kw), oracle(metric, a, b, **kw), False)


def test_parallel_calls():
    """Calls large enough to be split over threads (the engines run sub-millisecond calls on
    the calling thread): the dynamic task queue, against rapidfuzz."""
    threads = torch.get_num_threads()
    torch.set_num_threads(max(2, threads))
    try:
        rng = random.Random(29)
        a, b = rand_strings(rng, 1200, 5, 40, "abcdefghij"), rand_strings(rng, 1100, 5, 40, "abcdefghij")
        (xa, la), (xb, lb) = tp.encode(a, b)
        for rows, metric, kw in ((1200, "prefix", {}), (1200, "postfix", {}), (1200, "hamming", {"pad": True}),
                                 (600, "levenshtein", {}), (600, "jaro_winkler", {}),
                                 (300, "damerau_levenshtein", {})):
            n, m = rows, rows - 100
            want = oracle(metric, a[:n], b[:m], **kw)
            check(tp.seq.pairwise(xa[:n], xb[:m], metric, x_lengths=la[:n], y_lengths=lb[:m], **kw), want,
                  metric in FLOATING)
            v, i = tp.seq.lazy(xa[:n], xb[:m], metric, x_lengths=la[:n], y_lengths=lb[:m], **kw).min(-1)
            np.testing.assert_array_equal(i.numpy(), np.argmin(want, axis=1))
        iu = np.triu_indices(len(a), 1)
        check(tp.seq.pdist(xa, "prefix", lengths=la), oracle("prefix", a, a)[iu], False)
    finally:
        torch.set_num_threads(threads)


# ---- bad input ------------------------------------------------------------------------
def _tok():
    return tp.encode(["abc", "de"], ["abcd"])


@pytest.mark.parametrize("call,exc,match", [
    (lambda: tp.seq.pairwise(_tok()[0][0].double(), None), TypeError, "'X' must hold integer"),
    (lambda: tp.seq.pairwise(_tok()[0][0], _tok()[1][0].float()), TypeError, "'Y' must hold integer"),
    (lambda: tp.seq.pairwise(_tok()[0][0].bool(), None), TypeError, "'X' must hold integer"),
    (lambda: tp.seq.pairwise([[1, 2]], None), TypeError, "'X' must be a torch.Tensor"),
    (lambda: tp.seq.pairwise(torch.tensor([1, 2]), None), ValueError, "'X' must have shape"),
    (lambda: tp.seq.pairwise(_tok()[0][0], None, x_lengths=torch.tensor([4, 1])), ValueError, "'x_lengths'"),
    (lambda: tp.seq.pairwise(_tok()[0][0], None, x_lengths=torch.tensor([-1, 1])), ValueError,
     "'x_lengths' must be non-negative"),
    (lambda: tp.seq.pairwise(_tok()[0][0], _tok()[1][0], y_lengths=torch.tensor([5])), ValueError, "'y_lengths'"),
    (lambda: tp.seq.pairwise(_tok()[0][0], None, x_lengths=torch.tensor([1, 1, 1])), ValueError,
     "'x_lengths' must have shape"),
    (lambda: tp.seq.pairwise(_tok()[0][0], None, x_lengths=torch.tensor([1.0, 1.0])), TypeError, "'x_lengths'"),
    (lambda: tp.seq.pairwise(_tok()[0][0].expand(2, 2, 3), _tok()[1][0].expand(3, 1, 4)), ValueError,
     "batch dims"),
    (lambda: tp.seq.pairwise(_tok()[0][0], None, "levenstein"), ValueError, "unknown sequence metric"),
    (lambda: tp.seq.pairwise(_tok()[0][0], None, "levenshtein", weights=(1, -1, 1)), ValueError, "'weights'"),
    (lambda: tp.seq.pairwise(_tok()[0][0], None, "levenshtein", weights=(1, 1.5, 1)), TypeError, "'weights'"),
    (lambda: tp.seq.pairwise(_tok()[0][0], None, "levenshtein", weights=(1, 1)), TypeError, "'weights'"),
    (lambda: tp.seq.pairwise(_tok()[0][0], None, "osa", weights=(1, 1, 1)), TypeError, "'weights'"),
    (lambda: tp.seq.pairwise(_tok()[0][0], None, "jaro_winkler", prefix_weight=1.5), ValueError,
     "'prefix_weight'"),
    (lambda: tp.seq.pairwise(_tok()[0][0], None, "hamming"), ValueError, "pad=True"),
    (lambda: tp.seq.pairwise(_tok()[0][0], None, normalized=1), TypeError, "'normalized'"),
    (lambda: tp.seq.pairwise(_tok()[0][0], None, pad_id=1.5), TypeError, "'pad_id'"),
    (lambda: tp.seq.lazy(_tok()[0][0], _tok()[1][0]).topk(2), ValueError, "'k'"),
    (lambda: tp.seq.lazy(_tok()[0][0], _tok()[1][0]).topk(1, dim=0 + 5), ValueError, "'dim'"),
    (lambda: tp.seq.pdist(_tok()[0][0], lengths=torch.tensor([9, 1])), ValueError, "torchpair.seq.pdist: 'lengths' has a length 9"),
    # the core operators validate too
    (lambda: torch.ops.torchpair._seq_dense(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.long),
                                            torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.long),
                                            "levenshtein", [1., 1., 1.], False), TypeError, "'x' must hold integer"),
    (lambda: torch.ops.torchpair._seq_dense(torch.zeros(1, 2, 3, dtype=torch.long),
                                            torch.zeros(1, 2, dtype=torch.long),
                                            torch.zeros(2, 2, 3, dtype=torch.long),
                                            torch.zeros(2, 2, dtype=torch.long),
                                            "levenshtein", [1., 1., 1.], False), ValueError, "batch size"),
    (lambda: torch.ops.torchpair._seq_dense(torch.zeros(1, 2, 3, dtype=torch.long),
                                            torch.zeros(1, 2, dtype=torch.long),
                                            torch.zeros(1, 2, 3, dtype=torch.long),
                                            torch.zeros(1, 2, dtype=torch.long),
                                            "levenshtein", [1., 1.], False), ValueError, "scalars"),
    (lambda: torch.ops.torchpair._seq_pdist(torch.zeros(1, 2, 3, dtype=torch.long),
                                            torch.zeros(1, 3, dtype=torch.long), "lcs", [], False), ValueError,
     "'x_lengths' must have shape"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_every_cpu_capability():
    """The engines are compiled per CPU capability (DEFAULT, AVX2, AVX512: 4 or 8 SIMD lanes
    per group); each one against rapidfuzz, in a fresh process per capability."""
    import os
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent("""
        import random, numpy as np, torch, torchpair as tp
        from rapidfuzz import process
        from rapidfuzz.distance import (Levenshtein, OSA, Indel, JaroWinkler, LCSseq, DamerauLevenshtein, Hamming,
                                        Prefix, Postfix)
        rng = random.Random(0)
        def strings(n, lo, hi):
            return ["".join(rng.choice("abcd") for _ in range(rng.randint(lo, hi))) for _ in range(n)]
        a = strings(11, 0, 70) + strings(5, 100, 300)
        b = strings(9, 0, 70) + strings(3, 100, 300)
        (xa, la), (xb, lb) = tp.encode(a, b)
        for metric, sc in [("levenshtein", Levenshtein), ("osa", OSA), ("indel", Indel), ("lcs", LCSseq),
                           ("jaro_winkler", JaroWinkler), ("damerau_levenshtein", DamerauLevenshtein),
                           ("hamming", Hamming), ("prefix", Prefix), ("postfix", Postfix)]:
            fl = metric == "jaro_winkler"
            kw = {"pad": True} if metric == "hamming" else {}
            want = process.cdist(a, b, scorer=sc.normalized_distance if fl else sc.distance,
                                 dtype=np.float64 if fl else np.int64, workers=1, scorer_kwargs=kw)
            got = tp.seq.pairwise(xa, xb, metric, x_lengths=la, y_lengths=lb, **kw).numpy()
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12) if fl else np.testing.assert_array_equal(got, want)
            v, i = tp.seq.lazy(xa, xb, metric, x_lengths=la, y_lengths=lb, **kw).min(-1)
            np.testing.assert_array_equal(i.numpy(), np.argmin(want, axis=1))
            iu = np.triu_indices(len(a), 1)
            wp = process.cdist(a, a, scorer=sc.normalized_distance if fl else sc.distance,
                               dtype=np.float64 if fl else np.int64, workers=1, scorer_kwargs=kw)[iu]
            gp = tp.seq.pdist(xa, metric, lengths=la, **kw).numpy()
            np.testing.assert_allclose(gp, wp, rtol=0, atol=1e-12) if fl else np.testing.assert_array_equal(gp, wp)
        print("ok", torch.backends.cpu.get_cpu_capability())
    """)
    for cap in ("default", "avx2"):
        env = dict(os.environ, ATEN_CPU_CAPABILITY=cap)
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "ok" in r.stdout

