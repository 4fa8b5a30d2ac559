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

# ---- issue 3b: sklearn kernels and GP kernels ------------------------------------------------
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


def _core_args(kernel, scalars, d, dtype, with_sides, transpose=False, symmetric=False, v_cols=None):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, d, dtype=dtype, generator=g, requires_grad=True)
    y = x if symmetric else torch.randn(2, 7, d, dtype=dtype, generator=g, requires_grad=True)
    a = (x.detach() ** 2).sum(-1).requires_grad_(True) if with_sides else None
    b = a if (with_sides and symmetric) else ((y.detach() ** 2).sum(-1).requires_grad_(True) if with_sides else None)
    args = [x, y, a, b]
    if v_cols is not None:
        cols = x.shape[1] if transpose else y.shape[1]
        args.append(torch.randn(2, cols, v_cols, dtype=dtype, generator=g, requires_grad=True))
    return tuple(args + [kernel, list(scalars), symmetric, transpose, None])


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
    if name == "_row_reduce":  # (..., reduction, result, engine...)
        detached = _insert(detached, 5, out)
    if name == "_softmax_matmul":  # (..., v, out, lse, engine...)
        detached = _insert(detached, 5, out[0], out[1])
    return (grad, *detached, [True] * nmask)


_BACKWARD = {"_dense": 4, "_row_reduce": 4, "_matmul": 5, "_softmax_matmul": 5, "_paired": 4}
for _case in list(OP_CASES):
    _name = _case.op.split("::")[1]
    if _name in _BACKWARD:
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
