"""tp.backend("keops"): every lazy consumer and set-level function x every KeOps-translatable
metric of the catalog against the native engine (an independent implementation: torchpair's
C++ kernels vs pykeops' generated code), values and gradients; the backend context (thread
locality, nesting, decorator, bad names, missing pykeops); fallback and strict mode; dense,
compiled and exported calls stay native.

pykeops compiles every new formula with g++ on first use (seconds to minutes on a busy CPU
machine). The formulas are cached under build/keops (tests/conftest.py), and the tests share
formulas: the same shapes (N, M, D, C) and the same reductions everywhere, gradients only where
they test something new. The default run is the CI subset; TORCHPAIR_KEOPS_FULL=1 (`make
test-keops-full`) runs the whole product (see FULL below and docs/backends.md).
"""
from __future__ import annotations

import os
import sys
import threading
import warnings

import pytest
import torch

import torchpair as tp
from torchpair import _keops
from torchpair.backends import KEOPS_METRICS

import pykeops.config as _pykeops_config  # noqa: E402

# Test-only: compile KeOps formulas without optimisation or link-time optimisation (-O3
# -flto=auto multiply each pybind11 module's compile time; the test shapes are tiny).
# Without -ffast-math or FMA-capable -march flags the floating-point results are the same.
_pykeops_config.pykeops_base.cpp_flags = (_pykeops_config.pykeops_base.cpp_flags.replace(" -flto=auto", "")
                                          .replace(" -O3", " -O0"))

PRESENT = [m for m in KEOPS_METRICS if m in tp.metrics()]
#: The whole consumer x metric matrix compiles ~20 KeOps formulas per metric (each one g++
#: run): TORCHPAIR_KEOPS_FULL=1 (`make test-keops-full`) runs every consumer on every metric
#: case below, in float64 and float32, with gradients w.r.t. every operand, and every
#: translation against scipy/sklearn. The default (CI) run covers, with few distinct formulas:
#: every metric case by `K @ V` (value, gradient w.r.t. X) in float64; every consumer on rbf
#: (values and gradients) in float64 and float32; the distance-only consumers on euclidean.
FULL = os.environ.get("TORCHPAIR_KEOPS_FULL", "") not in ("", "0")
NOT_TRANSLATABLE = [m for m in tp.metrics() if m not in KEOPS_METRICS]

#: parameters and input domain per metric (defaults otherwise; sklearn/scipy conventions)
PARAMS = {"rbf": {"gamma": 0.3}, "minkowski": {"p": 3}, "polynomial": {"degree": 2, "gamma": 0.5},
          "sigmoid": {"gamma": 0.4, "coef0": 0.2}, "laplacian": {"gamma": 0.5}, "matern": {"nu": 2.5},
          "rational_quadratic": {"alpha": 1.5, "length_scale": 1.2}}
#: further cases: each is another KeOps formula (matern's nu, a fractional power) or another
#: preprocessing (per-feature length scales) of a translation
VARIANTS = {
    "matern_nu0.5": ("matern", {"nu": 0.5, "length_scale": 0.8}),
    "matern_nu1.5": ("matern", {"nu": 1.5}),
    "matern_nuinf": ("matern", {"nu": float("inf"), "length_scale": 1.3}),
    "matern_ls": ("matern", {"nu": 2.5, "length_scales": (0.7, 1.1, 1.6)}),
    "minkowski_p1.5": ("minkowski", {"p": 1.5}),
    "minkowski_pinf": ("minkowski", {"p": float("inf")}),
    "polynomial_deg2.5": ("polynomial", {"degree": 2.5, "gamma": 0.1, "coef0": 2.0}),
    # prepared engine calls (torchpair::_prepare): minkowski with weights runs the p-kernels on
    # scaled operands, seuclidean above 16 features the GEMM kernel with side features
    "minkowski_w": ("minkowski", {"p": 3.0, "w": (0.5, 1.0, 2.0)}),
}
#: case id -> (metric, params)
CASES = {m: (m, PARAMS.get(m, {})) for m in PRESENT}
CASES.update({k: v for k, v in VARIANTS.items() if v[0] in PRESENT})
MATRIX_METRICS = list(CASES) if FULL else [m for m in ("rbf", "euclidean") if m in PRESENT]
POSITIVE = ("chi2", "additive_chi2", "hellinger")

N, M, D, C = 7, 6, 3, 2


def _data(metric, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        t = torch.randn(*shape, generator=g, dtype=torch.float64)
        return (t.abs() + 0.1 if metric in POSITIVE else t).to(dtype)

    return r(N, D), r(M, D), r(M, C), r(N, C)


def _kind(metric):
    return tp.metric_info(metric)["kind"]


@pytest.fixture
def sweeps(monkeypatch):
    """Counts the KeOps sweeps, to prove which backend ran."""
    count = {"n": 0}
    init = _keops._Sweep.__init__

    def counting(self, *a, **k):
        count["n"] += 1
        init(self, *a, **k)

    monkeypatch.setattr(_keops._Sweep, "__init__", counting)
    return count


# ---------------------------------------------------------------------------------------
# Consumers: name -> (fn(X, Y, V, W, metric, params) -> tensor or tuple, applies(metric))
# ---------------------------------------------------------------------------------------
def _lazy(X, Y, metric, params):
    return tp.lazy(X, Y, metric, **params)


CONSUMERS = {
    "matmul": lambda X, Y, V, W, m, p: _lazy(X, Y, m, p) @ V,
    "sum": lambda X, Y, V, W, m, p: _lazy(X, Y, m, p).sum(-1),
    "sum_cols": lambda X, Y, V, W, m, p: _lazy(X, Y, m, p).sum(-2),
    "mean_all": lambda X, Y, V, W, m, p: _lazy(X, Y, m, p).mean(),
    "T_sum": lambda X, Y, V, W, m, p: _lazy(X, Y, m, p).T.sum(-1),
    "logsumexp": lambda X, Y, V, W, m, p: _lazy(X, Y, m, p).logsumexp(-1),
    "logsumexp_all": lambda X, Y, V, W, m, p: _lazy(X, Y, m, p).logsumexp(),
    "min": lambda X, Y, V, W, m, p: tuple(_lazy(X, Y, m, p).min(-1)),
    "max": lambda X, Y, V, W, m, p: tuple(_lazy(X, Y, m, p).max(-1)),
    "argmin": lambda X, Y, V, W, m, p: _lazy(X, Y, m, p).argmin(-1),
    "argmax": lambda X, Y, V, W, m, p: _lazy(X, Y, m, p).argmax(-1),
    "topk": lambda X, Y, V, W, m, p: tuple(_lazy(X, Y, m, p).topk(3)),
    "topk_smallest": lambda X, Y, V, W, m, p: tuple(_lazy(X, Y, m, p).topk(3, largest=False)),
    "softmax_matmul": lambda X, Y, V, W, m, p: _lazy(X, Y, m, p).softmax_matmul(V),
    "softmax_matmul_cols": lambda X, Y, V, W, m, p: _lazy(X, Y, m, p).softmax_matmul(W, dim=-2),
    "self_sum": lambda X, Y, V, W, m, p: _lazy(X, None, m, p).sum(-1),
    "knn": lambda X, Y, V, W, m, p: tuple(tp.knn(X, Y, 2, m, **p)),
    "hausdorff": lambda X, Y, V, W, m, p: tp.hausdorff(X, Y, m, **p),
    "chamfer": lambda X, Y, V, W, m, p: tp.chamfer(X, Y, m, **p),
    "energy_distance": lambda X, Y, V, W, m, p: tp.energy_distance(X, Y, m, **p),
    "mmd": lambda X, Y, V, W, m, p: tp.mmd(X, Y, m, **p),
    "mmd_unbiased": lambda X, Y, V, W, m, p: tp.mmd(X, Y, m, unbiased=True, **p),
}
DISTANCE_ONLY = ("hausdorff", "chamfer", "energy_distance")
KERNEL_ONLY = ("mmd", "mmd_unbiased")


def _applies(consumer, metric):
    metric = CASES[metric][0] if metric in CASES else metric
    if consumer in DISTANCE_ONLY:
        return _kind(metric) == "distance"
    if consumer in KERNEL_ONLY:
        return _kind(metric) == "similarity"
    return True


def _params(case, dtype):
    metric, params = CASES[case]
    # a tuple stands for a tensor parameter (per-feature length scales) in the data's dtype
    return metric, {k: torch.tensor(v, dtype=dtype) if isinstance(v, tuple) else v for k, v in params.items()}


def _run(consumer, case, dtype, backend, wrt):
    metric, params = _params(case, dtype)
    X, Y, V, W = _data(metric, dtype)
    leaves = [t.requires_grad_(name in wrt) for name, t in zip("XYVW", (X, Y, V, W))]
    with tp.backend(backend):
        out = CONSUMERS[consumer](X, Y, V, W, metric, params)
    outs = out if isinstance(out, tuple) else (out,)
    grads = None
    if wrt and any(o.is_floating_point() and o.requires_grad for o in outs):  # argmin/argmax: indices only
        g = torch.Generator().manual_seed(1)
        loss = sum((o * torch.randn(o.shape, generator=g, dtype=o.dtype)).sum() for o in outs
                   if o.is_floating_point())
        wanted = [t for t in leaves if t.requires_grad]
        got = dict(zip([id(t) for t in wanted], torch.autograd.grad(loss, wanted, allow_unused=True)))
        grads = [got.get(id(t)) if t.requires_grad else None for t in leaves]
    return outs, grads


def _compare(consumer, case, dtype, wrt, sweeps):
    rtol = 1e-9 if dtype == torch.float64 else 1e-4
    native, gn = _run(consumer, case, dtype, "native", wrt)
    assert sweeps["n"] == 0
    keops, gk = _run(consumer, case, dtype, "keops", wrt)
    assert sweeps["n"] > 0, "the keops backend did not run"
    for a, b in zip(keops, native):
        if a.is_floating_point():
            torch.testing.assert_close(a, b, rtol=rtol, atol=rtol * max(1.0, b.abs().max().item()))
        else:
            assert torch.equal(a, b), f"{consumer}: indices differ"
    if gn is not None:
        for name, a, b in zip("XYVW", gk, gn):
            if name not in wrt:
                continue
            if b is None:
                assert a is None or not a.any(), f"{consumer}: keops gives a gradient for {name}, native none"
                continue
            assert a is not None, f"{consumer}: native gives a gradient for {name}, keops none"
            torch.testing.assert_close(a, b, rtol=rtol, atol=rtol * max(1.0, b.abs().max().item()),
                                       msg=lambda s: f"{consumer}: gradient w.r.t. {name}: {s}")


def _ids(rows):
    return ["-".join(str(v) for v in r[:2]) for r in rows]


# default: every consumer on rbf; on euclidean the distance-only ones and the distance ranking;
# every other metric case K @ V with the gradient w.r.t. X (2 formulas per case)
_EUCLIDEAN_DEFAULT = ("matmul", "min", "knn", "self_sum") + DISTANCE_ONLY
_MATRIX = [(m, c, "XYVW") for m in MATRIX_METRICS for c in CONSUMERS
           if _applies(c, CASES[m][0]) and (FULL or m != "euclidean" or c in _EUCLIDEAN_DEFAULT)]
# minkowski p = 1.5 also w.r.t. V: its per-coordinate zero guard must differentiate against a
# variable of another dimension (KeOps rejected the IfElse form there; torchpair/_keops.py _pow)
_MATRIX += [(m, "matmul", "XYVW" if m == "minkowski_p1.5" else "X") for m in CASES if m not in MATRIX_METRICS]


@pytest.mark.parametrize("case,consumer,wrt", _MATRIX, ids=_ids(_MATRIX))
def test_keops_equals_native_float64(case, consumer, wrt, sweeps):
    _compare(consumer, case, torch.float64, wrt, sweeps)


# float32: every consumer on rbf by default, values (K @ V also gradients; the gradient
# formulas of the other consumers are float64-tested); every case with gradients in the full run
_MATRIX32 = [(m, c, "XYVW" if FULL or c == "matmul" else "") for m in (list(CASES) if FULL else ["rbf"])
             for c in CONSUMERS if _applies(c, CASES[m][0])]


@pytest.mark.parametrize("case,consumer,wrt", _MATRIX32, ids=_ids(_MATRIX32))
def test_keops_equals_native_float32(case, consumer, wrt, sweeps):
    _compare(consumer, case, torch.float32, wrt, sweeps)


def test_keops_batched_broadcast(sweeps):
    g = torch.Generator().manual_seed(3)
    X = torch.randn(2, 1, 5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    Y = torch.randn(3, 4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    V = torch.randn(4, 2, generator=g, dtype=torch.float64, requires_grad=True)
    results = []
    for name in ("native", "keops"):
        with tp.backend(name):
            K = tp.lazy(X, Y, "rbf", gamma=0.3)
            out = K @ V
            vals = K.max(-1)
            loss = (out ** 2).sum() + vals.values.sum()
        results.append((out, vals.indices, torch.autograd.grad(loss, (X, Y, V))))
    assert sweeps["n"] > 0
    (o1, i1, g1), (o2, i2, g2) = results
    assert o1.shape == (2, 3, 5, 2)
    torch.testing.assert_close(o2, o1, rtol=1e-9, atol=1e-12)
    assert torch.equal(i1, i2)
    for a, b in zip(g2, g1):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------------------
# The backend context
# ---------------------------------------------------------------------------------------
def test_context_nesting_and_decorator():
    assert tp.get_backend() == "native"
    with tp.backend("keops"):
        assert tp.get_backend() == "keops"
        with tp.backend("native"):
            assert tp.get_backend() == "native"
        assert tp.get_backend() == "keops"
    assert tp.get_backend() == "native"

    @tp.backend("keops")
    def inner():
        return tp.get_backend()

    assert inner() == "keops" and inner() == "keops"
    assert tp.get_backend() == "native"
    with pytest.raises(RuntimeError, match="boom"):
        with tp.backend("keops"):
            raise RuntimeError("boom")
    assert tp.get_backend() == "native"


def test_bad_backend_names():
    with pytest.raises(ValueError, match=r"unknown backend 'cuda'.*'name'.*native, keops"):
        tp.backend("cuda")
    with pytest.raises(TypeError, match="'name' must be a str"):
        tp.backend(None)
    with pytest.raises(TypeError, match="'strict' must be a bool"):
        tp.backend("keops", strict="yes")


def test_thread_local():
    barrier = threading.Barrier(2)
    seen, errors = {}, []

    def keops_thread():
        try:
            with tp.backend("keops"):
                barrier.wait(timeout=30)
                seen["keops"] = tp.get_backend()
                barrier.wait(timeout=30)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    def other_thread():
        try:
            barrier.wait(timeout=30)  # the first thread is inside its context now
            seen["other"] = tp.get_backend()
            with tp.backend("native"):
                seen["other_nested"] = tp.get_backend()
            barrier.wait(timeout=30)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=keops_thread), threading.Thread(target=other_thread)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert seen == {"keops": "keops", "other": "native", "other_nested": "native"}
    assert tp.get_backend() == "native"


def test_missing_pykeops_raises_with_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "pykeops", None)
    monkeypatch.setitem(sys.modules, "pykeops.torch", None)
    with pytest.raises(ImportError, match=r"pip install torchpair\[keops\]"):
        with tp.backend("keops"):
            pass
    assert tp.get_backend() == "native"
    with tp.backend("native"):  # the native backend never needs pykeops
        pass


def test_metric_info_keops_field():
    for m in tp.metrics():
        info = tp.metric_info(m)
        assert info["keops"] is (m in KEOPS_METRICS)
    assert tp.metric_info("l2")["keops"] is True  # aliases resolve


# ---------------------------------------------------------------------------------------
# Fallback, strict mode, native-only paths
# ---------------------------------------------------------------------------------------
def _untranslatable(monkeypatch, kernels=("sqeuclidean_direct", "sqeuclidean_gemm")):
    """sqeuclidean's engine kernels lose their formulas (the other kernels keep theirs)."""
    monkeypatch.setattr(_keops, "KERNEL_TRANSLATIONS",
                        {k: v for k, v in _keops.KERNEL_TRANSLATIONS.items() if k not in kernels})
    monkeypatch.setattr(_keops, "_PREPARED_SUPPORT", {})
    monkeypatch.setattr(_keops, "_warned", set())


def test_fallback_warns_once_and_matches_native(monkeypatch, sweeps):
    _untranslatable(monkeypatch)
    X, Y, V, _ = _data("sqeuclidean", torch.float64)
    native = tp.lazy(X, Y, "sqeuclidean") @ V
    with tp.backend("keops"):
        with pytest.warns(_keops.KeOpsFallbackWarning, match="'sqeuclidean'.*no KeOps translation"):
            out = tp.lazy(X, Y, "sqeuclidean") @ V
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            again = tp.lazy(X, Y, "sqeuclidean").sum(-1)  # once only
            tp.chamfer(X, Y, "sqeuclidean")
    assert sweeps["n"] == 0
    torch.testing.assert_close(out, native, rtol=0, atol=0)
    torch.testing.assert_close(again, tp.lazy(X, Y, "sqeuclidean").sum(-1), rtol=0, atol=0)


def test_strict_raises(monkeypatch):
    _untranslatable(monkeypatch)
    X, Y, V, _ = _data("sqeuclidean", torch.float64)
    with tp.backend("keops", strict=True):
        for call in (lambda: tp.lazy(X, Y, "sqeuclidean") @ V, lambda: tp.lazy(X, Y, "sqeuclidean").topk(2),
                     lambda: tp.knn(X, Y, 2, "sqeuclidean"), lambda: tp.energy_distance(X, Y, "sqeuclidean")):
            with pytest.raises(NotImplementedError, match="strict=True.*'sqeuclidean'.*'metric'"):
                call()
        # a float16 input cannot run under KeOps on CPU either
        with pytest.raises(NotImplementedError, match="float16.*'X'"):
            tp.lazy(X.half(), Y.half(), "rbf").sum(-1)


@pytest.mark.parametrize("metric", [m for m in NOT_TRANSLATABLE if "float32/float64" in tp.metric_info(m)["input"]])
def test_catalog_metrics_without_translation_run_natively(metric, monkeypatch):
    monkeypatch.setattr(_keops, "_warned", set())
    X, Y, V, _ = _data(metric, torch.float64)
    X, Y = X.abs() + 0.1, Y.abs() + 0.1
    if metric == "haversine":
        X, Y = X[:, :2], Y[:, :2]
    native = tp.lazy(X, Y, metric) @ V
    with tp.backend("keops"):
        with pytest.warns(_keops.KeOpsFallbackWarning):
            out = tp.lazy(X, Y, metric) @ V
    torch.testing.assert_close(out, native, rtol=0, atol=0, equal_nan=True)
    with tp.backend("keops", strict=True), pytest.raises(NotImplementedError, match=metric):
        tp.lazy(X, Y, metric) @ V


def test_dense_ops_stay_native(sweeps):
    X, Y, V, _ = _data("rbf", torch.float64)
    with tp.backend("keops", strict=True):
        dense = tp.pairwise(X, Y, "rbf")
        expr = tp.pairwise_expression(X, Y, "rbf", lazy=False)
        out = expr @ V
        lazy_dense = tp.lazy(X, Y, "rbf").to_dense()
    assert sweeps["n"] == 0
    torch.testing.assert_close(out, dense @ V)
    torch.testing.assert_close(lazy_dense, dense)


def test_edge_cases_keep_native_conventions(sweeps):
    X, Y, V, _ = _data("euclidean", torch.float64)
    with tp.backend("keops", strict=True):
        empty = tp.lazy(X[:0], Y, "euclidean").sum(-1)
        m0 = tp.lazy(X, Y[:0], "euclidean") @ V[:0]
        Xn = X.clone()
        Xn[2, 1] = float("nan")
        mins = tp.lazy(Xn, Y, "euclidean").min(-1)
        h = tp.hausdorff(X[:0], Y, "euclidean", directed=True)
    assert sweeps["n"] == 0
    assert empty.shape == (0,)
    assert torch.equal(m0, torch.zeros(N, C, dtype=torch.float64))
    assert torch.isnan(mins.values[2]) and not torch.isnan(mins.values[[0, 1, 3]]).any()
    assert h.item() == 0.0


def test_bad_input_same_errors_under_keops():
    X, Y, V, _ = _data("rbf", torch.float64)
    with tp.backend("keops"):
        with pytest.raises(ValueError):
            tp.lazy(X, Y, "rbf") @ V[:3]
        with pytest.raises(ValueError, match="'k'"):
            tp.lazy(X, Y, "rbf").topk(M + 1)
        with pytest.raises(ValueError, match="gamma"):
            tp.lazy(X, Y, "rbf", gamma=-1.0)
        with pytest.raises(ValueError, match="'metric'"):
            tp.mmd(X, Y, "euclidean")
        with pytest.raises(ValueError, match="'metric'"):
            tp.lazy(X, Y, "no_such_metric")
    # inputs are never modified
    X2, Y2, V2, _ = _data("rbf", torch.float64)
    assert torch.equal(X, X2) and torch.equal(Y, Y2) and torch.equal(V, V2)


# ---------------------------------------------------------------------------------------
# Compiled and exported graphs are native, even inside the keops context
# ---------------------------------------------------------------------------------------
class Query(torch.nn.Module):
    def forward(self, X, Y, V):
        K = tp.lazy(X, Y, metric="rbf", gamma=0.2)
        return K.matmul(V)  # the seed's example


def _call_targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_compile_and_export_inside_keops_context_are_native(sweeps):
    X, Y, V, _ = _data("rbf", torch.float32)
    expected = Query()(X, Y, V)
    graphs = []

    def recording_backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    with tp.backend("keops"):
        compiled = torch.compile(Query(), backend=recording_backend, fullgraph=True)(X, Y, V)
        ep = torch.export.export(Query(), (X, Y, V))
        exported = ep.module()(X, Y, V)
    assert sweeps["n"] == 0
    torch.testing.assert_close(compiled, expected)
    torch.testing.assert_close(exported, expected)
    for targets in (_call_targets(graphs[0]), _call_targets(ep.graph_module)):
        ops = [str(t) for t in targets if "torchpair" in str(t)]
        assert ops, f"no torchpair operator in the captured graph: {targets}"
        others = [str(t) for t in targets if "torchpair" not in str(t)]
        # besides torchpair operators only shape bookkeeping (dynamo records broadcast_shapes)
        assert all("broadcast_shapes" in o for o in others), others
        assert not any("keops" in str(t).lower() for t in targets)


# ---------------------------------------------------------------------------------------
# Every translated metric against scipy / sklearn through its prepared engine kernel (one KeOps
# formula each: K @ I gives the dense matrix; rbf only by default, every case with
# TORCHPAIR_KEOPS_FULL=1)
# ---------------------------------------------------------------------------------------
def _oracles():
    import numpy as np
    from scipy.spatial import distance as ssd
    from sklearn.gaussian_process import kernels as gpk
    from sklearn.metrics import pairwise as skp

    def cos_dist(x, y):  # sklearn's cosine_distances (zero rows: distance 1)
        return np.clip(skp.cosine_distances(x, y), 0, 2)

    return {
        "euclidean": ({}, lambda x, y: ssd.cdist(x, y, "euclidean")),
        "sqeuclidean": ({}, lambda x, y: ssd.cdist(x, y, "sqeuclidean")),
        "rbf": ({"gamma": 0.3}, lambda x, y: skp.rbf_kernel(x, y, gamma=0.3)),
        "cityblock": ({}, lambda x, y: ssd.cdist(x, y, "cityblock")),
        "chebyshev": ({}, lambda x, y: ssd.cdist(x, y, "chebyshev")),
        "minkowski": ({"p": 3.0}, lambda x, y: ssd.cdist(x, y, "minkowski", p=3)),
        "cosine": ({}, cos_dist),
        "correlation": ({}, lambda x, y: ssd.cdist(x, y, "correlation")),
        "linear": ({}, skp.linear_kernel),
        "polynomial": ({"degree": 3.0, "gamma": 0.5, "coef0": 1.0},
                       lambda x, y: skp.polynomial_kernel(x, y, degree=3, gamma=0.5, coef0=1.0)),
        "sigmoid": ({"gamma": 0.4, "coef0": 0.2}, lambda x, y: skp.sigmoid_kernel(x, y, gamma=0.4, coef0=0.2)),
        "cosine_similarity": ({}, skp.cosine_similarity),
        "laplacian": ({"gamma": 0.5}, lambda x, y: skp.laplacian_kernel(x, y, gamma=0.5)),
        "chi2": ({"gamma": 0.7}, lambda x, y: skp.chi2_kernel(x, y, gamma=0.7)),
        "additive_chi2": ({}, skp.additive_chi2_kernel),
        "matern": ({"nu": 2.5, "length_scale": 1.3}, lambda x, y: gpk.Matern(length_scale=1.3, nu=2.5)(x, y)),
        "rational_quadratic": ({"alpha": 1.5, "length_scale": 1.2},
                               lambda x, y: gpk.RationalQuadratic(length_scale=1.2, alpha=1.5)(x, y)),
        "exp_sine_squared": ({"length_scale": 1.3, "periodicity": 2.1},
                             lambda x, y: gpk.ExpSineSquared(length_scale=1.3, periodicity=2.1)(x, y)),
        # the variants (case id -> metric, params, oracle)
        "matern_nu0.5": ("matern", {"nu": 0.5, "length_scale": 0.8},
                         lambda x, y: gpk.Matern(length_scale=0.8, nu=0.5)(x, y)),
        "matern_nu1.5": ("matern", {"nu": 1.5}, lambda x, y: gpk.Matern(length_scale=1.0, nu=1.5)(x, y)),
        "matern_nuinf": ("matern", {"nu": float("inf"), "length_scale": 1.3},
                         lambda x, y: gpk.Matern(length_scale=1.3, nu=np.inf)(x, y)),
        "matern_ls": ("matern", {"nu": 2.5, "length_scales": torch.tensor([0.7, 1.1, 1.6], dtype=torch.float64)},
                      lambda x, y: gpk.Matern(length_scale=[0.7, 1.1, 1.6], nu=2.5)(x, y)),
        "minkowski_p1.5": ("minkowski", {"p": 1.5}, lambda x, y: ssd.cdist(x, y, "minkowski", p=1.5)),
        "minkowski_pinf": ("minkowski", {"p": float("inf")}, lambda x, y: ssd.cdist(x, y, "chebyshev")),
        "polynomial_deg2.5": ("polynomial", {"degree": 2.5, "gamma": 0.1, "coef0": 2.0},
                              lambda x, y: skp.polynomial_kernel(x, y, degree=2.5, gamma=0.1, coef0=2.0)),
    }


_ORACLE_METRICS = {  # case id -> metric (the oracles above; evaluated without importing scipy)
    **{m: m for m in ("euclidean", "sqeuclidean", "rbf", "cityblock", "chebyshev", "minkowski", "cosine",
                      "correlation", "linear", "polynomial", "sigmoid", "cosine_similarity", "laplacian", "chi2",
                      "additive_chi2", "matern", "rational_quadratic", "exp_sine_squared")},
    **{v: VARIANTS[v][0] for v in VARIANTS if v != "minkowski_w"},
}
_ORACLE_CASES = [c for c, m in _ORACLE_METRICS.items() if m in KEOPS_METRICS]


@pytest.mark.parametrize("case", _ORACLE_CASES if FULL else ["rbf"])
def test_translation_matches_scipy_sklearn(case, sweeps):
    """The KeOps formula of the metric's prepared engine kernel (K @ I gives the dense matrix)."""
    entry = _oracles()[case]
    metric, params, oracle = entry if len(entry) == 3 else (case, *entry)
    X, Y, _, _ = _data(metric, torch.float64)
    with tp.backend("keops", strict=True):
        dense = tp.lazy(X, Y, metric, **params) @ torch.eye(M, dtype=torch.float64)
    assert sweeps["n"] == 1, "the keops backend did not run"
    expected = torch.from_numpy(oracle(X.numpy(), Y.numpy()))
    torch.testing.assert_close(dense, expected, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------------------
# Metrics whose preparation is more than the operands: the prepared engine call (torchpair::_prepare)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("metric,d", [("mahalanobis", 3), ("seuclidean", 20)])
def test_prepared_engine_kernels_match_scipy(metric, d, sweeps):
    """mahalanobis (euclidean_gemm on x VI and y with side features) and seuclidean above 16
    features (euclidean_gemm on scaled operands) run on KeOps, against scipy's cdist; the
    gradient w.r.t. X and the tensor parameter matches the native engine's."""
    import numpy as np
    from scipy.spatial import distance as ssd

    g = torch.Generator().manual_seed(4)
    # more than 25 rows: the default takes the GEMM form above 16 features only then
    n, m = 30, 28
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    Y = torch.randn(m, d, generator=g, dtype=torch.float64)
    if metric == "mahalanobis":
        cov = np.cov(np.vstack([X.numpy(), Y.numpy()]).T)
        param = {"VI": torch.from_numpy(np.linalg.inv(cov))}
        oracle = ssd.cdist(X.numpy(), Y.numpy(), "mahalanobis", VI=param["VI"].numpy())
    else:
        param = {"V": torch.rand(d, generator=g, dtype=torch.float64) + 0.5}
        oracle = ssd.cdist(X.numpy(), Y.numpy(), "seuclidean", V=param["V"].numpy())
    name = next(iter(param))
    eye = torch.eye(m, dtype=torch.float64)
    with tp.backend("keops", strict=True):
        dense = tp.lazy(X, Y, metric, **param) @ eye
    assert sweeps["n"] == 1, "the keops backend did not run"
    torch.testing.assert_close(dense, torch.from_numpy(oracle), rtol=1e-9, atol=1e-10)

    V = torch.randn(m, C, generator=g, dtype=torch.float64)
    grads = {}
    for backend in ("native", "keops"):
        x, p = X.clone().requires_grad_(True), param[name].clone().requires_grad_(True)
        with tp.backend(backend):
            out = tp.lazy(x, Y, metric, **{name: p}) @ V
        grads[backend] = torch.autograd.grad(out.square().sum(), (x, p))
    for a, b in zip(grads["keops"], grads["native"]):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-9)


def test_prepared_kernel_support_is_listed():
    assert {"mahalanobis", "seuclidean", "hellinger"} <= set(KEOPS_METRICS)
    assert tp.metric_info("mahalanobis")["keops"] is True
    assert tp.metric_info("braycurtis")["keops"] is False  # braycurtis_direct has no KeOps formula


def test_translations_are_engine_kernels_only():
    """The KeOps table is keyed by engine kernel ids (csrc/metrics/kernel_list.h), not metrics:
    no metric-level table, and every translated kernel is one the engine defines."""
    import pathlib
    import re

    header = pathlib.Path(__file__).resolve().parents[1] / "csrc" / "metrics" / "kernel_list.h"
    kernel_ids = set(re.findall(r"^\s*_\((\w+),", header.read_text(), re.M))
    assert "rbf_direct" in kernel_ids and "packed_dice" in kernel_ids  # the header parsed
    assert set(_keops.KERNEL_TRANSLATIONS) <= kernel_ids
    assert not hasattr(_keops, "TRANSLATIONS")
    assert not set(_keops.KERNEL_TRANSLATIONS) & set(tp.metrics())
