"""The shared test tables. Every metric and every operator has rows here; the test modules
(test_parity, test_gradients, test_lazy, test_opcheck, test_compile_export, test_bad_input)
iterate over them. Adding a metric or an operator = adding rows, not tests.

Oracles are independent implementations (scipy, sklearn, POT, rapidfuzz, dense torch
formulas): never torchpair's own output.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np
import torch
from scipy.spatial import distance as ssd
from sklearn.metrics import pairwise as skp


# ---------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class MetricCase:
    metric: str
    params: dict
    #: numpy oracle: (X [n, d], Y [m, d]) -> [n, m], float64
    oracle: Callable[[np.ndarray, np.ndarray], np.ndarray]
    #: input domain: "real" (normal), "positive", "probability", ...
    domain: str = "real"
    differentiable: bool = True
    #: tolerances (float64 / float32)
    rtol64: float = 1e-10
    rtol32: float = 1e-5
    #: feature dims to test: small dims use the difference-based kernels, > 16 the GEMM ones
    dims: tuple = (1, 3, 17, 40)
    id: str = ""

    def __post_init__(self):
        if not self.id:
            extra = ",".join(f"{k}={v}" for k, v in self.params.items() if not isinstance(v, (np.ndarray, torch.Tensor)))
            self.id = self.metric + (f"[{extra}]" if extra else "")

    def sample(self, shape, dtype=torch.float64, generator=None):
        """Random inputs from the metric's domain."""
        x = torch.randn(*shape, dtype=torch.float64, generator=generator)
        if self.domain == "positive":
            x = x.abs() + 0.1
        elif self.domain == "probability":
            x = x.abs() + 0.05
            x = x / x.sum(-1, keepdim=True)
        elif self.domain == "boolean":  # 0/1 values (nonzero = True), density 0.5
            x = (torch.rand(*shape, dtype=torch.float64, generator=generator) < 0.5).double()
        elif self.domain == "categorical":  # small integers: many equal values
            x = torch.randint(0, 3, shape, generator=generator).double()
        return x.to(dtype)


def _rbf(gamma=None):
    return lambda x, y: skp.rbf_kernel(x, y, gamma=gamma)


METRIC_CASES: list[MetricCase] = [
    MetricCase("euclidean", {}, lambda x, y: ssd.cdist(x, y, "euclidean")),
    MetricCase("l2", {}, lambda x, y: ssd.cdist(x, y, "euclidean"), dims=(3, 40)),
    MetricCase("sqeuclidean", {}, lambda x, y: ssd.cdist(x, y, "sqeuclidean")),
    MetricCase("rbf", {}, _rbf()),
    MetricCase("rbf", {"gamma": 0.2}, _rbf(0.2)),
]

# ---- sklearn kernels and GP kernels ---------------------------------------------------------
def _gp(kernel_cls, **kw):
    """sklearn.gaussian_process.kernels.<kernel_cls>(**kw) as a pairwise oracle."""
    def oracle(x, y):
        from sklearn.gaussian_process import kernels as gpk
        return getattr(gpk, kernel_cls)(**kw)(x, y)
    return oracle


def _skk(metric, **kw):
    return lambda x, y: skp.pairwise_kernels(x, y, metric=metric, **kw)


#: metrics whose features must be non-negative (sklearn raises otherwise)
NONNEGATIVE_METRICS = {"chi2", "additive_chi2"}
_LS3 = np.array([0.5, 1.0, 2.0])
_LS20 = np.linspace(0.5, 2.5, 20)
# linear/polynomial/sigmoid/cosine_similarity (GEMM) and laplacian/chi2 (elementwise) use one engine for
# every D: small dims suffice. matern/rational_quadratic switch at D = 16: their rows cover both sides.
METRIC_CASES += [
    MetricCase("linear", {}, _skk("linear"), dims=(1, 5)),
    MetricCase("polynomial", {}, _skk("polynomial"), dims=(1, 5)),
    MetricCase("poly", {"degree": 2, "gamma": 0.5, "coef0": 0.0}, _skk("poly", degree=2, gamma=0.5, coef0=0.0),
               dims=(3,)),
    MetricCase("polynomial", {"degree": 2.5, "coef0": 2.0}, _skk("polynomial", degree=2.5, coef0=2.0),
               domain="positive", rtol64=1e-8, dims=(4,)),
    MetricCase("sigmoid", {}, _skk("sigmoid"), rtol64=1e-8, dims=(1, 5)),
    MetricCase("sigmoid", {"gamma": 0.3, "coef0": -0.5}, _skk("sigmoid", gamma=0.3, coef0=-0.5), rtol64=1e-8,
               dims=(3,)),
    MetricCase("cosine_similarity", {}, lambda x, y: skp.cosine_similarity(x, y), dims=(1, 5)),
    MetricCase("laplacian", {}, _skk("laplacian"), rtol64=1e-8, dims=(1, 5)),
    MetricCase("laplacian", {"gamma": 0.7}, _skk("laplacian", gamma=0.7), rtol64=1e-8, dims=(3,)),
    MetricCase("chi2", {}, _skk("chi2"), domain="positive", rtol64=1e-8, dims=(1, 5)),
    MetricCase("chi2", {"gamma": 0.3}, _skk("chi2", gamma=0.3), domain="positive", rtol64=1e-8, dims=(3,)),
    MetricCase("additive_chi2", {}, _skk("additive_chi2"), domain="positive", dims=(1, 5)),
    MetricCase("matern", {}, _gp("Matern", length_scale=1.0, nu=1.5), rtol64=1e-8, dims=(1, 20)),
    MetricCase("matern", {"nu": 0.5, "length_scale": 2.0}, _gp("Matern", length_scale=2.0, nu=0.5), rtol64=1e-8,
               dims=(3, 20)),
    MetricCase("matern", {"nu": 2.5, "length_scale": 0.7}, _gp("Matern", length_scale=0.7, nu=2.5), rtol64=1e-8,
               dims=(20,)),
    MetricCase("matern", {"nu": float("inf"), "length_scale": 1.3}, _gp("Matern", length_scale=1.3, nu=float("inf")),
               rtol64=1e-8, dims=(20,)),
    MetricCase("matern", {"nu": 2.5, "length_scale": _LS3}, _gp("Matern", length_scale=_LS3, nu=2.5), rtol64=1e-8,
               dims=(3,), id="matern[nu=2.5,length_scale=per-feature-3]"),
    MetricCase("matern", {"nu": 1.5, "length_scale": torch.from_numpy(_LS20)}, _gp("Matern", length_scale=_LS20, nu=1.5),
               rtol64=1e-8, dims=(20,), id="matern[nu=1.5,length_scales=per-feature-20]"),
    MetricCase("rational_quadratic", {}, _gp("RationalQuadratic"), rtol64=1e-8, dims=(1, 20)),
    MetricCase("rational_quadratic", {"alpha": 0.4, "length_scale": 1.7},
               _gp("RationalQuadratic", alpha=0.4, length_scale=1.7), rtol64=1e-8, dims=(20,)),
    # exp_sine_squared: number parameters take the d2-kernel (difference-based up to 16 features, GEMM above);
    # tensor parameters the GEMM value kernel with the parameters as inputs, for every D
    MetricCase("exp_sine_squared", {}, _gp("ExpSineSquared"), rtol64=1e-8, dims=(1, 3, 20)),
    MetricCase("exp_sine_squared", {"length_scale": 0.7, "periodicity": 2.5},
               _gp("ExpSineSquared", length_scale=0.7, periodicity=2.5), rtol64=1e-8, dims=(2, 20)),
    MetricCase("exp_sine_squared", {"length_scales": torch.tensor(1.3, dtype=torch.float64),
                                    "periodicities": torch.tensor(0.8, dtype=torch.float64)},
               _gp("ExpSineSquared", length_scale=1.3, periodicity=0.8), rtol64=1e-8, dims=(1, 20),
               id="exp_sine_squared[tensor parameters]"),
]

METRIC_IDS = [c.id for c in METRIC_CASES]
DIFFERENTIABLE_CASES = [c for c in METRIC_CASES if c.differentiable]

# One metric per engine family and kind, for the tests that multiply metrics by consumers
# (gradchecks of every consumer): extend as families are added.
REPRESENTATIVE_METRICS = ["euclidean", "rbf", "polynomial"]
REPRESENTATIVE_CASES = [c for c in DIFFERENTIABLE_CASES if c.id in REPRESENTATIVE_METRICS]


def tolerances(case: MetricCase, dtype: torch.dtype) -> dict:
    return {"rtol": case.rtol64, "atol": case.rtol64 * 10} if dtype == torch.float64 else {
        "rtol": case.rtol32, "atol": case.rtol32 * 10}


# ---------------------------------------------------------------------------------------
# Operators (opcheck, compile/export). Each row builds sample args for one operator.
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class OpCase:
    op: str                       # qualified name, e.g. "torchpair::_dense"
    make_args: Callable[[torch.dtype], tuple]
    kwargs: dict = dataclasses.field(default_factory=dict)
    id: str = ""


def _core_args(kernel, scalars, d, dtype, with_sides, transposed=False, symmetric=False, v_cols=None):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, d, dtype=dtype, generator=g, requires_grad=True)
    y = x if symmetric else torch.randn(2, 7, d, dtype=dtype, generator=g, requires_grad=True)
    a = (x.detach() ** 2).sum(-1).requires_grad_(True) if with_sides else None
    b = a if (with_sides and symmetric) else ((y.detach() ** 2).sum(-1).requires_grad_(True) if with_sides else None)
    args = [x, y, a, b]
    if v_cols is not None:
        cols = x.shape[1] if transposed else y.shape[1]
        args.append(torch.randn(2, cols, v_cols, dtype=dtype, generator=g, requires_grad=True))
    return tuple(args + [kernel, list(scalars), symmetric, transposed, None])


def _lse_weight(dtype, cols):
    """Log-weights of the columns of a weighted logsumexp, [2, cols], differentiable."""
    return torch.randn(2, cols, dtype=dtype, generator=torch.Generator().manual_seed(3), requires_grad=True)


def _public_args(dtype, with_y=True, v=False, dim=False):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 5, 4, dtype=dtype, generator=g, requires_grad=True)
    y = torch.randn(2, 6, 4, dtype=dtype, generator=g, requires_grad=True) if with_y else None
    args = [x, y]
    if v:
        args.append(torch.randn(2, 6 if with_y else 5, 3, dtype=dtype, generator=g, requires_grad=True))
    args.append("rbf")
    if dim:
        args.append(-1)
    return tuple(args)


def _insert(args, position, *values):
    """args with `values` inserted before index `position` (the core ops put consumer
    arguments between the operands and the engine arguments)."""
    return tuple(args[:position]) + values + tuple(args[position:])


OP_CASES: list[OpCase] = []
# One kernel per engine family: opcheck tests the registrations (schema, autograd, fake,
# AOT dispatch), the numbers are checked by the parity tests.
for _kernel, _scalars, _sides in [
    ("euclidean_direct", [], False),
    ("rbf_gemm", [0.5], True),
    ("polynomial_gemm", [0.5, 1.0, 3.0], False),
]:
    _d = 20 if _sides else 3
    for _t in (False, True):
        _mk = lambda dt, k=_kernel, s=_scalars, d=_d, sd=_sides, t=_t, **kw: _core_args(k, s, d, dt, sd, t, **kw)  # noqa: E731
        _id = f"{_kernel}-t{int(_t)}"
        OP_CASES += [
            OpCase("torchpair::_dense", lambda dt, mk=_mk: mk(dt), id=f"_dense-{_id}"),
            OpCase("torchpair::_matmul", lambda dt, mk=_mk: mk(dt, v_cols=3), id=f"_matmul-{_id}"),
            OpCase("torchpair::_row_reduce", lambda dt, mk=_mk: _insert(mk(dt), 4, "sum"), id=f"_row_reduce-sum-{_id}"),
            OpCase("torchpair::_row_reduce", lambda dt, mk=_mk: _insert(mk(dt), 4, "logsumexp"),
                   id=f"_row_reduce-lse-{_id}"),
            OpCase("torchpair::_row_reduce", lambda dt, mk=_mk, t=_t: (*_insert(mk(dt), 4, "logsumexp"), -0.7,
                                                                   _lse_weight(dt, 5 if t else 7), 0.0),
                   id=f"_row_reduce-weighted-lse-{_id}"),
            OpCase("torchpair::_row_reduce", lambda dt, mk=_mk: (*_insert(mk(dt), 4, "count"), 1.0, None, 0.5),
                   id=f"_row_reduce-count-{_id}"),
            OpCase("torchpair::_topk", lambda dt, mk=_mk: _insert(mk(dt), 4, 3, False, False), id=f"_topk-{_id}"),
            OpCase("torchpair::_softmax_matmul", lambda dt, mk=_mk: mk(dt, v_cols=2), id=f"_softmax_matmul-{_id}"),
        ]
    _pd = 20 if _sides else 3
    OP_CASES.append(OpCase("torchpair::_paired", lambda dt, k=_kernel, s=_scalars, d=_pd, sd=_sides:
                           _paired_args(k, s, d, dt, sd), id=f"_paired-{_kernel}"))


def _paired_args(kernel, scalars, d, dtype, with_sides):
    g = torch.Generator().manual_seed(4)
    x = torch.randn(2, 6, d, dtype=dtype, generator=g, requires_grad=True)
    y = torch.randn(2, 6, d, dtype=dtype, generator=g, requires_grad=True)
    a = (x.detach() ** 2).sum(-1).requires_grad_(True) if with_sides else None
    b = (y.detach() ** 2).sum(-1).requires_grad_(True) if with_sides else None
    mask = torch.zeros(2, 6, dtype=torch.bool)
    mask[:, 0] = True
    return x, y, a, b, mask, kernel, list(scalars), None


def _backward_args(case, nmask, dtype):
    """Arguments of a backward operator: the forward's, a random upstream gradient, and the
    forward results the backward needs (logsumexp, softmax)."""
    args = case.make_args(dtype)
    name = case.op.split("::")[1]
    with torch.no_grad():
        out = getattr(torch.ops.torchpair, name)(*args)
    first = out[0] if isinstance(out, tuple) else out
    grad = torch.randn(first.shape, dtype=dtype, generator=torch.Generator().manual_seed(2))
    detached = [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
    if name == "_row_reduce":  # (..., reduction, result, engine..., dtype, scale, weight)
        scale_weight = detached[10:12] if len(detached) > 10 else [1.0, None]
        detached = list(_insert(detached[:10], 5, out)) + scale_weight
    if name == "_softmax_matmul":  # (..., v, out, lse, engine...)
        detached = _insert(detached, 5, out[0], out[1])
    return (grad, *detached, [True] * nmask)


_BACKWARD = {"_dense": 4, "_row_reduce": 5, "_matmul": 5, "_softmax_matmul": 5, "_paired": 4}
for _case in list(OP_CASES):
    _name = _case.op.split("::")[1]
    if _name in _BACKWARD and "-count-" not in _case.id:  # a count has no backward
        OP_CASES.append(OpCase(_case.op + "_backward", lambda dt, c=_case, n=_BACKWARD[_name]: _backward_args(c, n, dt),
                               id=_case.id.replace(_name, _name + "_backward", 1)))


def _set_args(dtype):
    g = torch.Generator().manual_seed(5)
    return (torch.randn(2, 5, 3, dtype=dtype, generator=g, requires_grad=True),
            torch.randn(2, 6, 3, dtype=dtype, generator=g, requires_grad=True))


OP_CASES += [
    OpCase("torchpair::pairwise", lambda dt: _public_args(dt), {"gamma": 0.3}, id="pairwise"),
    OpCase("torchpair::pairwise", lambda dt: _public_args(dt, with_y=False), id="pairwise-self"),
    OpCase("torchpair::lazy_matmul", lambda dt: _public_args(dt, v=True), id="lazy_matmul"),
    OpCase("torchpair::lazy_reduce", lambda dt: (*_public_args(dt), "logsumexp", -1), id="lazy_reduce"),
    OpCase("torchpair::lazy_reduce", lambda dt: (*_public_args(dt), "mean", None), id="lazy_reduce-all"),
    OpCase("torchpair::lazy_reduce", lambda dt: (*_public_args(dt), "logsumexp", -1, False, -0.7, _lse_weight(dt, 6)),
           id="lazy_reduce-weighted-lse"),
    OpCase("torchpair::lazy_reduce", lambda dt: (*_public_args(dt), "count", -2, False, 1.0, None, 0.5),
           id="lazy_reduce-count"),
    OpCase("torchpair::lazy_topk", lambda dt: (*_public_args(dt), 2, -1, False), id="lazy_topk"),
    OpCase("torchpair::lazy_topk", lambda dt: (*_public_args(dt, with_y=False), 1, -2, True, True, False, "propagate"),
           id="lazy_topk-self-cols"),
    OpCase("torchpair::lazy_softmax_matmul", lambda dt: _public_args(dt, v=True), id="lazy_softmax_matmul"),
    OpCase("torchpair::knn", lambda dt: (*_set_args(dt), 2), id="knn"),
    OpCase("torchpair::hausdorff", lambda dt: _set_args(dt), id="hausdorff"),
    OpCase("torchpair::chamfer", lambda dt: _set_args(dt), id="chamfer"),
    OpCase("torchpair::mmd", lambda dt: _set_args(dt), {"gamma": 0.5}, id="mmd"),
    OpCase("torchpair::mmd", lambda dt: (*_set_args(dt), "rbf", True), id="mmd-unbiased"),
    OpCase("torchpair::energy_distance", lambda dt: _set_args(dt), id="energy_distance"),
]


# ---- token sequences (tp.seq): integer operands, dtype-independent rows ------------------
def _seq_args(with_y=True, long=False):
    g = torch.Generator().manual_seed(6)
    L = 70 if long else 9
    x = torch.randint(0, 4, (2, 5, L), generator=g, dtype=torch.int32)
    xl = torch.randint(0, L + 1, (2, 5), generator=g)
    if not with_y:
        return x, xl
    y = torch.randint(0, 4, (2, 6, L + 3), generator=g)
    yl = torch.randint(0, L + 4, (2, 6), generator=g)
    return x, xl, y, yl


OP_CASES += [
    OpCase("torchpair::_seq_dense", lambda dt: (*_seq_args(), "levenshtein", [1.0, 1.0, 1.0], False),
           id="_seq_dense-levenshtein"),
    OpCase("torchpair::_seq_dense", lambda dt: (*_seq_args(long=True), "jaro_winkler", [0.1], True),
           id="_seq_dense-jaro_winkler-long"),
    OpCase("torchpair::_seq_pdist", lambda dt: (*_seq_args(with_y=False), "osa", [], True), id="_seq_pdist-osa"),
    OpCase("torchpair::_seq_topk", lambda dt: (*_seq_args(), "indel", [], False, 3, False), id="_seq_topk-indel"),
]


# ---------------------------------------------------------------------------------------
# Numeric distances: scipy / sklearn oracles, independent numpy formulas where
# neither library has the metric (hellinger as gensim defines it, snr as
# pytorch-metric-learning's SNRDistance).
# ---------------------------------------------------------------------------------------
def _cd(metric, **kw):
    return lambda x, y: ssd.cdist(x, y, metric, **kw)


def _hellinger_np(x, y):
    return np.sqrt(0.5 * ((np.sqrt(x)[:, None, :] - np.sqrt(y)[None, :, :]) ** 2).sum(-1))


def _snr_np(x, y):
    return np.var(x[:, None, :] - y[None, :, :], axis=-1, ddof=1) / np.var(x, axis=-1, ddof=1)[:, None]


def _spd(d, seed):
    g = np.random.default_rng(seed)
    a = g.standard_normal((d, d))
    return a @ a.T / d + np.eye(d)


_W5 = np.array([0.5, 2.0, 1.0, 0.25, 3.0])
_V4 = np.array([0.5, 2.0, 1.5, 0.2])
_VI20 = _spd(20, 7)

DISTANCE_CASES: list[MetricCase] = [
    MetricCase("cityblock", {}, _cd("cityblock")),
    MetricCase("manhattan", {}, _cd("cityblock"), dims=(3,)),
    MetricCase("l1", {}, _cd("cityblock"), dims=(3,)),
    MetricCase("chebyshev", {}, _cd("chebyshev")),
    MetricCase("linf", {}, _cd("chebyshev"), dims=(3,)),
    MetricCase("minkowski", {}, _cd("minkowski"), dims=(3, 40)),
    MetricCase("minkowski", {"p": 3.0}, _cd("minkowski", p=3.0), rtol64=1e-8),
    MetricCase("minkowski", {"p": 1.5}, _cd("minkowski", p=1.5), rtol64=1e-8, dims=(1, 17)),
    MetricCase("minkowski", {"p": 1.0}, _cd("minkowski", p=1.0), dims=(3,)),
    MetricCase("minkowski", {"p": float("inf")}, _cd("chebyshev"), dims=(3,)),
    MetricCase("minkowski", {"p": 3.0, "w": torch.tensor(_W5)}, _cd("minkowski", p=3.0, w=_W5), rtol64=1e-8,
               dims=(5,), id="minkowski[p=3,w]"),
    MetricCase("minkowski", {"p": 2.0, "w": torch.tensor(_W5)}, _cd("minkowski", p=2.0, w=_W5), dims=(5,),
               id="minkowski[p=2,w]"),
    MetricCase("seuclidean", {}, _cd("seuclidean"), rtol64=1e-9),
    MetricCase("seuclidean", {"V": torch.tensor(_V4)}, _cd("seuclidean", V=_V4), dims=(4,), id="seuclidean[V]"),
    MetricCase("mahalanobis", {}, _cd("mahalanobis"), dims=(1, 3, 5), rtol64=1e-8, rtol32=1e-4),
    MetricCase("mahalanobis", {"VI": torch.tensor(_VI20)}, _cd("mahalanobis", VI=_VI20), dims=(20,),
               rtol64=1e-9, id="mahalanobis[VI]"),
    MetricCase("cosine", {}, _cd("cosine")),
    MetricCase("correlation", {}, _cd("correlation"), dims=(2, 3, 17, 40)),
    MetricCase("braycurtis", {}, _cd("braycurtis"), domain="positive"),
    MetricCase("braycurtis", {}, _cd("braycurtis"), dims=(3, 17), id="braycurtis[real]"),
    MetricCase("canberra", {}, _cd("canberra")),
    # D = 1 left out: scipy's rounding gives sqrt(-1e-17) = NaN there (torchpair clamps at 0)
    MetricCase("jensenshannon", {}, _cd("jensenshannon"), domain="probability", rtol64=1e-8, dims=(2, 3, 17, 40)),
    MetricCase("jensenshannon", {"base": 2.0},
               lambda x, y: ssd.cdist(x, y, lambda u, v: ssd.jensenshannon(u, v, base=2.0)),
               domain="probability", rtol64=1e-8,
               dims=(3, 17)),
    MetricCase("haversine", {}, lambda x, y: skp.haversine_distances(x, y), dims=(2,), rtol64=1e-8),
    MetricCase("nan_euclidean", {}, lambda x, y: skp.nan_euclidean_distances(x, y), rtol64=1e-8),
    MetricCase("hellinger", {}, _hellinger_np, domain="positive"),
    MetricCase("snr", {}, _snr_np, dims=(2, 3, 17, 40), rtol64=1e-9),
]
METRIC_CASES += DISTANCE_CASES
METRIC_IDS = [c.id for c in METRIC_CASES]
DIFFERENTIABLE_CASES = [c for c in METRIC_CASES if c.differentiable]
REPRESENTATIVE_METRICS += ["cityblock", "chebyshev", "cosine"]
REPRESENTATIVE_CASES = [c for c in DIFFERENTIABLE_CASES if c.id in REPRESENTATIVE_METRICS]


# ---- pdist: the public operator and the condensed core operator ---------------------------
def _pdist_core_args(kernel, scalars, d, dtype, with_sides, symmetric):
    g = torch.Generator().manual_seed(6)
    x = torch.randn(2, 6, d, dtype=dtype, generator=g, requires_grad=True)
    y = x if symmetric else torch.randn(2, 6, d, dtype=dtype, generator=g, requires_grad=True)
    a = (x.detach() ** 2).sum(-1).requires_grad_(True) if with_sides else None
    b = (y.detach() ** 2).sum(-1).requires_grad_(True) if with_sides else None
    return x, y, a, b, kernel, list(scalars), symmetric, None


def _pdist_backward_args(make, dtype):
    args = make(dtype)
    with torch.no_grad():
        out = torch.ops.torchpair._pdist(*args)
    grad = torch.randn(out.shape, dtype=dtype, generator=torch.Generator().manual_seed(2))
    return (grad, *[a.detach() if isinstance(a, torch.Tensor) else a for a in args], [True] * 4)


for _kernel, _scalars, _sides, _sym in [("euclidean_direct", [], False, True), ("rbf_gemm", [0.5], True, False),
                                        ("chebyshev_direct", [], False, False)]:
    _mk = lambda dt, k=_kernel, s=_scalars, sd=_sides, sy=_sym: _pdist_core_args(k, s, 20 if sd else 3, dt, sd, sy)  # noqa: E731
    OP_CASES.append(OpCase("torchpair::_pdist", _mk, id=f"_pdist-{_kernel}"))
    OP_CASES.append(OpCase("torchpair::_pdist_backward", lambda dt, mk=_mk: _pdist_backward_args(mk, dt),
                           id=f"_pdist_backward-{_kernel}"))
OP_CASES += [
    OpCase("torchpair::pdist", lambda dt: (_public_args(dt, with_y=False)[0], "rbf"), {"gamma": 0.3}, id="pdist"),
    OpCase("torchpair::pdist", lambda dt: (_public_args(dt, with_y=False)[0], "cosine"), id="pdist-cosine"),
    OpCase("torchpair::pdist", lambda dt: (_public_args(dt, with_y=False)[0], "minkowski"), {"p": 3.0},
           id="pdist-minkowski"),
    OpCase("torchpair::pairwise", lambda dt: (*_public_args(dt)[:2], "mahalanobis"),
           {"VI": torch.eye(4, dtype=torch.float64)}, id="pairwise-mahalanobis-VI"),
    OpCase("torchpair::pairwise", lambda dt: (*_public_args(dt)[:2], "seuclidean"), id="pairwise-seuclidean"),
]


# ---- merges of partial reductions (the distributed merge) ---------------------------------
def _merge_args(dtype, shape=(3, 4, 5)):
    g = torch.Generator().manual_seed(12)
    return torch.randn(*shape, dtype=dtype, generator=g, requires_grad=True)


OP_CASES += [
    OpCase("torchpair::_merge_topk", lambda dt: (_merge_args(dt, (4, 6)), torch.randperm(6).expand(4, 6).contiguous(),
                                                 3, False, True), id="_merge_topk"),
    OpCase("torchpair::_logsumexp_merge", lambda dt: (_merge_args(dt), 0), id="_logsumexp_merge"),
    OpCase("torchpair::_logsumexp_raise", lambda dt: (_merge_args(dt, (4, 5)), _merge_args(dt, (4, 5)).detach() + 3),
           id="_logsumexp_raise"),
    OpCase("torchpair::_logsumexp_finalize", lambda dt: (_merge_args(dt, (4, 5)).exp().detach().requires_grad_(True),
                                                         _merge_args(dt, (4, 5)).detach()), id="_logsumexp_finalize"),
]


# ---- exact optimal transport: emd, _emd, _emd_backward -----------------------------------
def _emd_args(dtype, public=False):
    g = torch.Generator().manual_seed(9)
    a = torch.rand(2, 5, dtype=torch.float64, generator=g) + 0.1
    b = torch.rand(2, 4, dtype=torch.float64, generator=g) + 0.1
    a, b = a / a.sum(-1, keepdim=True), b / b.sum(-1, keepdim=True)
    M = torch.rand(2, 5, 4, dtype=torch.float64, generator=g)
    a, b, M = (t.to(dtype).requires_grad_(True) for t in (a, b, M))
    # float32 weights do not sum to exactly 1: the core op gets a float32-sized mass tolerance
    return (a, b, M) if public else (a, b, M, -1, 1e-4)


def _emd_backward_args(dtype):
    a, b, M, max_iter, tol = _emd_args(dtype)
    with torch.no_grad():
        plan, _, u, v, _ = torch.ops.torchpair._emd(a, b, M, max_iter, tol)
    grad = torch.randn(2, dtype=dtype, generator=torch.Generator().manual_seed(3))
    return grad, plan, u, v, [True, True, True]


OP_CASES += [
    OpCase("torchpair::emd", lambda dt: _emd_args(dt, public=True), id="emd"),
    OpCase("torchpair::_emd", _emd_args, id="_emd"),
    OpCase("torchpair::_emd_backward", _emd_backward_args, id="_emd_backward"),
]


# ---- the Sinkhorn divergence (eager=False: no host syncs, as when traced) -------------------
def _sinkhorn_args(dtype):
    g = torch.Generator().manual_seed(11)
    X = torch.randn(2, 6, 3, dtype=dtype, generator=g).requires_grad_(True)
    Y = torch.randn(2, 5, 3, dtype=dtype, generator=g).requires_grad_(True)
    a = torch.full((2, 6), 1 / 6, dtype=dtype).requires_grad_(True)
    b = torch.full((2, 5), 1 / 5, dtype=dtype).requires_grad_(True)
    return X, Y, a, b


OP_CASES += [
    OpCase("torchpair::sinkhorn_divergence", _sinkhorn_args, {"blur": 0.5, "diameter": 4.0, "eager": False},
           id="sinkhorn_divergence"),
    OpCase("torchpair::sinkhorn_divergence", _sinkhorn_args,
           {"blur": 0.5, "diameter": 4.0, "eager": False, "unrolled": True, "reach": 1.0, "metric": "cityblock",
            "tol": 1e-3, "max_iter": 3}, id="sinkhorn_divergence-unrolled-unbalanced-cityblock"),
]


# ---------------------------------------------------------------------------------------
# Boolean family: scipy / sklearn on the inputs' nonzero patterns (or values).
# ---------------------------------------------------------------------------------------
def _on_bools(metric):
    """scipy on the nonzero patterns; where scipy's value is NaN (0/0: two all-False rows for
    dice / sokalsneath, D = 0), torchpair's documented convention: 0 (docs/conventions.md)."""
    def oracle(x, y):
        with np.errstate(divide="ignore", invalid="ignore"):
            r = ssd.cdist(x != 0, y != 0, metric) if x.shape[1] else np.full((x.shape[0], y.shape[0]), np.nan)
        return np.where(np.isnan(r), 0.0, r)
    return oracle


def _counts(x, y):
    """TT, TF, FT, FF of every pair, float64 (numpy; scipy's definitions)."""
    xb, yb = (x != 0).astype(np.float64), (y != 0).astype(np.float64)
    tt = xb @ yb.T
    tf = xb @ (1 - yb).T
    ft = (1 - xb) @ yb.T
    ff = (1 - xb) @ (1 - yb).T
    return tt, tf, ft, ff


def kulczynski1_oracle(x, y):
    """scipy <= 1.13's kulczynski1, TT / (TF + FT) (removed from scipy 1.14); +inf where
    TF + FT = 0 (torchpair's convention)."""
    tt, tf, ft, _ = _counts(x, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(tf + ft == 0, np.inf, tt / (tf + ft))


def sokalmichener_oracle(x, y):
    """scipy <= 1.13's sokalmichener, R / (S + R), R = 2 (TF + FT), S = TT + FF."""
    tt, tf, ft, ff = _counts(x, y)
    r = 2 * (tf + ft)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(tt + ff + r == 0, 0.0, r / (tt + ff + r))


def tanimoto_oracle(x, y):
    return 1.0 - ssd.cdist(x != 0, y != 0, "jaccard")


def matching_oracle(x, y):
    from sklearn.metrics import DistanceMetric
    return DistanceMetric.get_metric("matching").pairwise((x != 0).astype(np.float64), (y != 0).astype(np.float64))


def equal_oracle(x, y):
    return (x[:, None, :] == y[None, :, :]).all(-1).astype(np.float64)


_BOOL_DIMS = (1, 63, 65, 130)
# rows that also run through every generic test (parity, lazy consumers, compile): their
# self-comparisons are 0 (distances) and their values finite
BOOLEAN_METRIC_CASES: list[MetricCase] = [
    MetricCase(m, {}, _on_bools(m), domain="boolean", differentiable=False, rtol64=1e-12, rtol32=1e-6, dims=_BOOL_DIMS)
    for m in ("dice", "jaccard", "rogerstanimoto", "sokalsneath", "yule", "hamming")
] + [
    MetricCase("sokalmichener", {}, sokalmichener_oracle, domain="boolean", differentiable=False, rtol64=1e-12,
               rtol32=1e-6, dims=_BOOL_DIMS),
    MetricCase("tanimoto", {}, tanimoto_oracle, domain="boolean", differentiable=False, rtol64=1e-12, rtol32=1e-6,
               dims=_BOOL_DIMS),
    MetricCase("matching", {}, matching_oracle, domain="boolean", differentiable=False, rtol64=1e-12, rtol32=1e-6,
               dims=_BOOL_DIMS),
    # hamming on values (the equality engine), unweighted and weighted
    MetricCase("hamming", {}, lambda x, y: ssd.cdist(x, y, "hamming"), domain="categorical", differentiable=False,
               rtol64=1e-12, rtol32=1e-6, dims=(1, 5, 33), id="hamming[values]"),
]
METRIC_CASES += BOOLEAN_METRIC_CASES
METRIC_IDS = [c.id for c in METRIC_CASES]
# every scipy-parity row of the Boolean family, including those whose self-comparisons are
# not 0 (russellrao) or not finite (kulczynski1): tests/test_boolean.py
BOOLEAN_ORACLES = {
    "dice": _on_bools("dice"),
    "jaccard": _on_bools("jaccard"),
    "kulczynski1": kulczynski1_oracle,
    "rogerstanimoto": _on_bools("rogerstanimoto"),
    "russellrao": _on_bools("russellrao"),
    "sokalmichener": sokalmichener_oracle,
    "sokalsneath": _on_bools("sokalsneath"),
    "yule": _on_bools("yule"),
    "tanimoto": tanimoto_oracle,
    "hamming": _on_bools("hamming"),
    "matching": matching_oracle,
    "equal": equal_oracle,
}


def _packed_args(kernel, dtype, d_features=70, symmetric=False, v_cols=None, transposed=False):
    """Core-op arguments of a bit-packed kernel: int64 words [2, n, ceil(D / 64)]."""
    g = torch.Generator().manual_seed(7)
    words = (d_features + 63) // 64
    def rows(n):
        w = torch.randint(-2**62, 2**62, (2, n, words), generator=g, dtype=torch.int64)
        if d_features % 64:  # features beyond D are 0
            w[..., -1] &= (1 << (d_features % 64)) - 1
        return w
    x = rows(5)
    y = x if symmetric else rows(7)
    args = [x, y, None, None]
    if v_cols is not None:
        args.append(torch.randn(2, 5 if transposed else 7, v_cols, dtype=dtype, generator=g))
    return tuple(args + [kernel, [float(d_features)], symmetric, transposed, dtype])


def _equality_args(dtype, weighted=False, v_cols=None):
    g = torch.Generator().manual_seed(8)
    x = torch.randint(0, 3, (2, 5, 6), generator=g).double()
    y = torch.randint(0, 3, (2, 7, 6), generator=g).double()
    if weighted:
        w = torch.rand(6, generator=g, dtype=torch.float64)
        x, y = torch.cat([x, w.expand(2, 5, 6)], -1), torch.cat([y, w.expand(2, 7, 6)], -1)
    args = [x, y, None, None]
    if v_cols is not None:
        args.append(torch.randn(2, 7, v_cols, dtype=dtype, generator=g))
    return tuple(args + ["equality_hamming", [1.0 if weighted else 0.0], False, False, dtype])


def _bool_public(dtype, metric="jaccard"):
    g = torch.Generator().manual_seed(9)
    return (torch.rand(2, 5, 70, generator=g) < 0.3, (torch.rand(2, 6, 70, generator=g) < 0.3).to(dtype), metric)


OP_CASES += [
    OpCase("torchpair::_dense", lambda dt: _packed_args("packed_jaccard", dt), id="_dense-packed_jaccard"),
    OpCase("torchpair::_dense", lambda dt: _packed_args("packed_yule", dt, symmetric=True, transposed=True),
           id="_dense-packed_yule-self-t1"),
    OpCase("torchpair::_matmul", lambda dt: _packed_args("packed_dice", dt, v_cols=3), id="_matmul-packed_dice"),
    OpCase("torchpair::_row_reduce", lambda dt: _insert(_packed_args("packed_hamming", dt), 4, "logsumexp"),
           id="_row_reduce-packed_hamming"),
    OpCase("torchpair::_topk", lambda dt: _insert(_packed_args("packed_tanimoto", dt), 4, 3, True, True),
           id="_topk-packed_tanimoto"),
    OpCase("torchpair::_softmax_matmul", lambda dt: _packed_args("packed_russellrao", dt, v_cols=2),
           id="_softmax_matmul-packed_russellrao"),
    OpCase("torchpair::_paired", lambda dt: (*_packed_args("packed_jaccard", dt, symmetric=True)[:4], None,
                                             "packed_jaccard", [70.0], dt), id="_paired-packed_jaccard"),
    OpCase("torchpair::_dense", lambda dt: _equality_args(dt), id="_dense-equality_hamming"),
    OpCase("torchpair::_dense", lambda dt: _equality_args(dt, weighted=True), id="_dense-equality_hamming-w"),
    OpCase("torchpair::_matmul", lambda dt: _equality_args(dt, v_cols=2), id="_matmul-equality_hamming"),
    OpCase("torchpair::pairwise", lambda dt: _bool_public(dt), id="pairwise-jaccard"),
    OpCase("torchpair::pairwise", lambda dt: _bool_public(dt, "equal"), id="pairwise-equal"),
    OpCase("torchpair::pairwise", lambda dt: (torch.randint(0, 3, (2, 5, 4)).to(dt), None, "hamming"),
           {"w": torch.tensor([1.0, 2.0, 0.5, 1.0], dtype=torch.float64)}, id="pairwise-hamming-w"),
    OpCase("torchpair::lazy_topk", lambda dt: (*_bool_public(dt, "tanimoto"), 2, -1, True), id="lazy_topk-tanimoto"),
]


def rbf_mmd_reference(x: np.ndarray, y: np.ndarray, gamma: float, unbiased: bool) -> float:
    """Squared MMD with sklearn's RBF kernel, from the three dense Gram matrices (the
    unbiased estimate leaves the diagonals of K(x, x) and K(y, y) out)."""
    kxx, kyy, kxy = (skp.rbf_kernel(a, b, gamma=gamma) for a, b in [(x, x), (y, y), (x, y)])
    n, m = len(x), len(y)
    if unbiased:
        return float((kxx.sum() - np.trace(kxx)) / (n * (n - 1)) + (kyy.sum() - np.trace(kyy)) / (m * (m - 1))
                     - 2 * kxy.mean())
    return float(kxx.mean() + kyy.mean() - 2 * kxy.mean())
