"""The KeOps backend: the engine kernel -> KeOps formula table and the consumers built on it.

A call runs the catalog's own preparation (``torchpair::_prepare``, the step the native
operators run: parameter defaults and checks, normalisation, centring, scaling, whitening;
differentiable), and :data:`KERNEL_TRANSLATIONS` turns the prepared engine kernel (its id and
resolved scalars) into a :class:`Formula`: a function of two pykeops ``LazyTensor`` rows of the
prepared operands (and, for the GEMM-form kernels, their side features) giving ``K(x, y)``.
No metric name or parameter default appears here. Scalars enter as KeOps parameters (``Pm``),
so one compiled formula serves every value of gamma, coef0, ... ; only structural values
(integer exponents, matern's nu) change the formula. The consumers reduce that formula with
pykeops (Sum, LogSumExp, ArgKMin) over the operand being reduced, and pykeops differentiates it.

Everything here is reached only inside ``tp.backend("keops")``; see torchpair/backends.py and
docs/backends.md for when a call still runs natively.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Callable, Optional

import torch

from . import _catalog, _params
from . import backends as _backends
from .lazy import LazyPairwise


class KeOpsFallbackWarning(UserWarning):
    """A call inside ``tp.backend("keops")`` runs natively (its metric, parameters, dtype or
    device cannot run under KeOps). Shown once per metric and reason."""


# ---------------------------------------------------------------------------------------
# The translation table: one KeOps formula per engine kernel (csrc/metrics/kernel_list.h)
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Formula:
    #: K(x', y') from two LazyTensor rows of the prepared operands and the parameter
    #: LazyTensors in ``c`` (with ``sides``: fn(x, y, c, a, b), a and b the side features)
    fn: Callable
    #: scalar parameters, passed to KeOps as parameters (one formula for every value)
    consts: tuple = ()
    #: fn takes the prepared side features of the GEMM-form kernels
    sides: bool = False


def _sqdist(x, y):
    return ((x - y) ** 2).sum(-1)


def _sqrt0(s):
    # sqrt with value and derivative 0 at 0 (KeOps' Rsqrt(0) is 0): the native convention
    return s * s.rsqrt()


def _l1(x, y):
    return (x - y).abs().sum(-1)


def _dot(x, y):
    return (x * y).sum(-1)


def _tanh(z):
    # KeOps has no tanh: each branch is written where its exponential cannot overflow, and
    # IfElse selects (its derivative selects too, so the unused branch never leaks inf/NaN)
    e_neg, e_pos = (-2 * z).exp(), (2 * z).exp()
    return z.ifelse((1 - e_neg) / (1 + e_neg), (e_pos - 1) / (e_pos + 1))


def _int_power(v: float) -> Optional[int]:
    # integers are exact for negative bases (as the native engine, up to 1024)
    return int(v) if float(v).is_integer() and 1 <= v <= 1024 else None


def _powf(base, exponent: float):
    # KeOps' Powf evaluates C's float powf, also for float64 data (1e-7 relative error):
    # exp(e log b) keeps the data's precision (and gives NaN for a negative base, as numpy)
    return (base.log() * float(exponent)).exp()


def _ipow(base, n: int):
    # base ** n by squarings and products: exact for any sign, in the data's precision (KeOps'
    # Pow calls powf on GPUs, float precision even for float64)
    result = None
    while n:
        if n & 1:
            result = base if result is None else result * base
        n >>= 1
        if n:
            base = base ** 2  # Square
    return result


def _pow(base, exponent: float):
    """base ** exponent: Pow (exact, any sign) for integers, else exp(p log b), with 0 at a zero
    base (value and derivative; the derivative of exp(p log b) is NaN at 0) and NaN for a
    negative one (numpy's float power).

    The zero base is masked arithmetically, not by IfElse: base may be a vector, and KeOps
    differentiates IfElse(f, a, b) into IfElse(f, a', b'), whose derivatives have the
    differentiation variable's dimension. Against a variable of another dimension than f
    (V in K @ V) that IfElse is rejected ("dimensions are not compatible for
    VectorizedScalarOp"); Step differentiates to a plain zero."""
    n = _int_power(exponent)
    if n is not None:
        return _ipow(base, n)
    zero = (-base).step() * base.step()  # 1 exactly where base == 0
    return (1 - zero) * _powf(base + zero, exponent)  # log(1) = 0 there: finite, masked


# ---- the squared-distance kernels: value = h(d2) -------------------------------------
# Each exists in two engine forms (csrc/catalog/prepare.cpp, distance_family): `*_direct`
# on the operands, d2 = |x - y|^2, and `*_gemm` on prepared operands with side features,
# d2 = max(a + b - 2 x'.y', 0). The GEMM form is translated as that form, not as |x' - y'|^2:
# its operands need not be one transformation of x and y (mahalanobis prepares x VI and y,
# with a = x VI x^T), and per pair it costs what the difference form costs (one multiply-add
# per feature, plus two side-feature reads), so KeOps gives the native engine's numbers
# (its GEMM rounding bound included) at no extra cost. Small D gets the direct kernels.
def _direct_d2(x, y, a, b):
    return _sqdist(x, y)


def _gemm_d2(x, y, a, b):
    return (a + b - 2 * _dot(x, y)).relu()


def _h_euclidean(s):
    return lambda d2, c: _sqrt0(d2), ()


def _h_sqeuclidean(s):
    return lambda d2, c: d2, ()


def _h_rbf(s):  # scalars [gamma]
    return lambda d2, c: (-c[0] * d2).exp(), (s[0],)


_SQRT3, _SQRT5 = math.sqrt(3.0), math.sqrt(5.0)


def _h_matern(s):  # scalars [nu, 1 / length_scale^2]; nu selects the formula
    nu = float(s[0])
    if nu == 0.5:
        return lambda d2, c: (-_sqrt0(c[0] * d2)).exp(), (s[1],)
    if nu == 1.5:
        def h15(d2, c):
            t = c[1] * _sqrt0(c[0] * d2)
            return (1 + t) * (-t).exp()
        return h15, (s[1], _SQRT3)
    if nu == 2.5:
        def h25(d2, c):
            r2 = c[0] * d2
            t = c[1] * _sqrt0(r2)
            return (1 + t + c[2] * r2) * (-t).exp()
        return h25, (s[1], _SQRT5, 5.0 / 3.0)
    if math.isinf(nu):
        return lambda d2, c: (-0.5 * c[0] * d2).exp(), (s[1],)
    return f"engine kernel matern with nu={nu} has no KeOps translation"


def _h_rational_quadratic(s):  # scalars [alpha, 1 / length_scale^2]
    alpha = float(s[0])
    # (1 + d2 / (2 alpha length_scale^2))^(-alpha), base >= 1; alpha shapes the formula
    return lambda d2, c: _powf(1 + c[0] * d2, -alpha), (float(s[1]) / (2.0 * alpha),)


def _h_exp_sine_squared(s):  # scalars [gamma, omega]
    def h(d2, c):
        t = (c[1] * _sqrt0(d2)).sin()
        return (-c[0] * t * t).exp()
    return h, (s[0], s[1])


def _distance_kernel(h_of, gemm: bool):
    def translate(scalars):
        h = h_of(scalars)
        if isinstance(h, str):
            return h
        fn, consts = h
        d2 = _gemm_d2 if gemm else _direct_d2
        if gemm:
            return Formula(lambda x, y, c, a, b: fn(d2(x, y, a, b), c), consts, sides=True)
        return Formula(lambda x, y, c: fn(d2(x, y, None, None), c), consts)
    return translate


# ---- the other kernels ------------------------------------------------------------------
def _minkowski(s):  # scalars [p]
    p = float(s[0])

    def fn(x, y, c):
        t = _pow((x - y).abs(), p).sum(-1)
        return (-t).ifelse(0 * t, _powf(t, 1.0 / p))  # derivative 0 at distance 0

    return Formula(fn)


def _polynomial(s):  # scalars [gamma, coef0, degree]; the degree shapes the formula
    degree = float(s[2])
    n = _int_power(degree)
    if n is not None:
        return Formula(lambda x, y, c: _ipow(c[0] * _dot(x, y) + c[1], n), (s[0], s[1]))
    # a fractional power of a negative base is NaN, as numpy's float power
    return Formula(lambda x, y, c: _powf(c[0] * _dot(x, y) + c[1], degree), (s[0], s[1]))


def _cosine_gemm(s):
    # 1 - x.y a b, clamped to [0, 2]; a, b = 1 / |row| (0 for a zero row: distance 1)
    return Formula(lambda x, y, c, a, b: 2 - (2 - (1 - _dot(x, y) * a * b).relu()).relu(), sides=True)


#: engine kernel id -> translate(scalars) -> Formula, or a str saying why these scalars have
#: no translation. The operands, side features and scalars are the prepare step's
#: (torchpair::_prepare, the catalog's own preparation): metrics, parameter defaults, checks
#: and operand transformations (normalisation, centring, scaling, whitening) never appear
#: here. Kernels missing here run natively (with KeOpsFallbackWarning): chi2/additive_chi2,
#: whose 0/0 guard (IfElse with a scalar Zero branch against a D-vector) KeOps cannot
#: differentiate ("dimensions are not compatible for VectorizedScalarOp"); cosine_direct
#: (explicit compute_mode only, which runs natively); the Boolean and remaining scipy kernels.
KERNEL_TRANSLATIONS: dict[str, Callable] = {
    "euclidean_direct": _distance_kernel(_h_euclidean, gemm=False),
    "euclidean_gemm": _distance_kernel(_h_euclidean, gemm=True),
    "sqeuclidean_direct": _distance_kernel(_h_sqeuclidean, gemm=False),
    "sqeuclidean_gemm": _distance_kernel(_h_sqeuclidean, gemm=True),
    "rbf_direct": _distance_kernel(_h_rbf, gemm=False),
    "rbf_gemm": _distance_kernel(_h_rbf, gemm=True),
    "matern_direct": _distance_kernel(_h_matern, gemm=False),
    "matern_gemm": _distance_kernel(_h_matern, gemm=True),
    "rational_quadratic_direct": _distance_kernel(_h_rational_quadratic, gemm=False),
    "rational_quadratic_gemm": _distance_kernel(_h_rational_quadratic, gemm=True),
    "exp_sine_squared_direct": _distance_kernel(_h_exp_sine_squared, gemm=False),
    "exp_sine_squared_gemm": _distance_kernel(_h_exp_sine_squared, gemm=True),
    "cityblock_direct": lambda s: Formula(lambda x, y, c: _l1(x, y)),
    "chebyshev_direct": lambda s: Formula(lambda x, y, c: (x - y).abs().max(-1)),
    "minkowski_direct": _minkowski,
    "laplacian_direct": lambda s: Formula(lambda x, y, c: (-c[0] * _l1(x, y)).exp(), (s[0],)),
    # the inner-product kernels are one dot product per pair in either form
    "linear_gemm": lambda s: Formula(lambda x, y, c: _dot(x, y)),
    "polynomial_gemm": _polynomial,
    "sigmoid_gemm": lambda s: Formula(lambda x, y, c: _tanh(c[0] * _dot(x, y) + c[1]), (s[0], s[1])),
    "cosine_gemm": _cosine_gemm,
}


def _prepared(X, Y, metric, params):
    """(x', y', a, b, kernel, scalars) of torchpair::_prepare on [B, n, d] operands."""
    return torch.ops.torchpair._prepare(X, Y, metric, **params)


_PREPARED_SUPPORT: dict = {}


def _prepared_support(name: str) -> bool:
    """Whether a metric prepares into translated engine kernels (probed once per metric with
    its default parameters, on both engine forms: 2 features, and 17 features with more rows
    than the difference-based kernel takes by default)."""
    if name not in _PREPARED_SUPPORT:
        info = _catalog.info(name)
        ok = not info.is_boolean and not info.is_sequence
        g = torch.Generator().manual_seed(0)
        for d in (2, 17):
            if not ok:
                break
            x = torch.rand(1, 32, d, generator=g, dtype=torch.float64) + 0.1
            try:
                prepared = _prepared(x, x + 0.05, name, {})
            except (ValueError, TypeError, RuntimeError):
                ok = False
                break
            entry = KERNEL_TRANSLATIONS.get(prepared[4])
            ok = entry is not None and not isinstance(entry(prepared[5]), str)
        _PREPARED_SUPPORT[name] = ok
    return _PREPARED_SUPPORT[name]


def keops_metrics() -> list[str]:
    """Canonical names of the catalog metrics the KeOps backend runs: those whose prepared
    engine call (default parameters) is a kernel of :data:`KERNEL_TRANSLATIONS`."""
    return [m for m in _catalog.metrics() if _prepared_support(m)]


# ---------------------------------------------------------------------------------------
# When to use KeOps
# ---------------------------------------------------------------------------------------
def _tracing(tensors) -> bool:
    is_exporting = getattr(torch.compiler, "is_exporting", None)
    if is_exporting is not None and is_exporting():
        return True
    if torch.fx._symbolic_trace.is_fx_symbolic_tracing():
        return True
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    if _get_current_dispatch_mode() is not None:
        return True
    # fake, functional, proxy and other subclass tensors belong to tracers
    return any(t is not None and type(t) not in (torch.Tensor, torch.nn.Parameter) for t in tensors)


_warned: set = set()


def _decline(reason: str, strict: bool):
    if strict:
        raise NotImplementedError(f"torchpair.backend('keops', strict=True): {reason}")
    if reason not in _warned:
        _warned.add(reason)
        warnings.warn(f"torchpair: {reason}; running it with the native backend (shown once)", KeOpsFallbackWarning,
                      stacklevel=4)
    return None


def _canonical(metric: str) -> str:
    return _catalog.info(metric).name


def _meta(t):
    return None if t is None else torch.empty(t.shape, dtype=t.dtype, device="meta")


def _meta_params(params):
    return {k: _meta(v) if isinstance(v, torch.Tensor) else v for k, v in params.items()}


@dataclasses.dataclass
class _Plan:
    formula: Formula
    X: torch.Tensor
    Y: torch.Tensor  # X itself for Y=None
    a: Optional[torch.Tensor] = None  # side features of X's rows [..., n, 1] (engine-kernel plans)
    b: Optional[torch.Tensor] = None  # of Y's rows [..., m, 1]


def _plan(X, Y, metric, params, others=(), selection=False) -> Optional[_Plan]:
    """The KeOps plan of one call, or None to run natively. Arguments are already validated
    (by the native operator on meta tensors)."""
    _, strict = _backends.current()
    tensors = (X, Y, *others, *(v for v in params.values() if isinstance(v, torch.Tensor)))
    if _tracing(tensors):
        return None
    if params.get("compute_mode") not in (None, "use_mm_for_euclid_dist_if_necessary"):
        return None  # an explicit engine choice (docs/contracts.md, compute_mode) runs the native kernels
    name = _canonical(metric)
    if not _prepared_support(name):
        return _decline(f"metric {name!r} (argument 'metric') has no KeOps translation", strict)
    if X.dtype not in (torch.float32, torch.float64):
        return _decline(f"dtype {X.dtype} (argument 'X') is not run by the KeOps backend (float32/float64 only)",
                        strict)
    if X.device.type not in ("cpu", "cuda"):
        return _decline(f"device {X.device} (argument 'X') is not run by the KeOps backend (cpu/cuda only)", strict)
    if torch.is_autocast_enabled(X.device.type):
        return None
    Yv = X if Y is None else Y
    # empty sets and D = 0 keep the native conventions (KeOps needs non-empty operands)
    if X.numel() == 0 or Yv.numel() == 0 or any(t.numel() == 0 for t in others if t is not None):
        return None
    if selection and not (torch.isfinite(X).all() and torch.isfinite(Yv).all()):
        return None  # NaN ranking (torch.topk / torch.min conventions) is native
    tensor_params = {k: v for k, v in params.items() if isinstance(v, torch.Tensor)}
    if tensor_params:
        # the native operator checks tensor parameter values (shape, sign, finiteness) on one pair
        with torch.no_grad():
            torch.ops.torchpair.pairwise(X.detach()[..., :1, :], Yv.detach()[..., :1, :], metric,
                                         **{k: (v.detach() if isinstance(v, torch.Tensor) else v)
                                            for k, v in params.items()})
    return _kernel_plan(X, Y, name, params, others, strict)


def _kernel_plan(X, Y, name, params, others, strict) -> Optional[_Plan]:
    """The plan of a metric through its prepared engine call (operands broadcast to the
    call's batch, flattened for torchpair::_prepare, and given the batch back)."""
    batch = _batch(X, Y, *(t if t.dim() >= 2 else t[:, None] for t in others if t is not None))
    n, m = X.shape[-2], (X if Y is None else Y).shape[-2]
    xf = _flat(X, batch, n)
    yf = None if Y is None else _flat(Y, batch, m)
    x2, y2, a, b, kernel, scalars = _prepared(xf, yf, name, params)
    entry = KERNEL_TRANSLATIONS.get(kernel)
    if entry is None:
        return _decline(f"metric {name!r} (argument 'metric') prepares engine kernel {kernel!r}, which has "
                        "no KeOps translation", strict)
    formula = entry(scalars)
    if isinstance(formula, str):
        return _decline(formula, strict)

    def unflat(t, rows):
        return None if t is None else t.reshape(*batch, rows, -1)

    return _Plan(formula, unflat(x2, n), unflat(y2, m), unflat(a, n), unflat(b, m))


# ---------------------------------------------------------------------------------------
# pykeops plumbing
# ---------------------------------------------------------------------------------------
def _LazyTensor():
    from pykeops.torch import LazyTensor

    return LazyTensor


def _flat(t: torch.Tensor, batch, rows: int) -> torch.Tensor:
    """[..., rows, F] broadcast to ``batch`` and flattened to [B, rows, F] (contiguous)."""
    t = t.expand(*batch, rows, t.shape[-1])
    return t.reshape(-1, rows, t.shape[-1]).contiguous()


class _Sweep:
    """K between the rows operand (KeOps i) and the reduced operand (KeOps j), batch flattened."""

    def __init__(self, plan: _Plan, over: str, batch, V: Optional[torch.Tensor] = None):
        LT = _LazyTensor()
        f = plan.formula
        rows, cols = (plan.X, plan.Y) if over == "y" else (plan.Y, plan.X)
        self.batch = torch.Size(batch)
        self.n, self.m = rows.shape[-2], cols.shape[-2]
        self.rows = _flat(rows, batch, self.n)
        self.cols = _flat(cols, batch, self.m)
        self.B = self.rows.shape[0]
        self.dtype, self.device = self.rows.dtype, self.rows.device
        self.formula, self.over = f, over
        # side features (engine-kernel plans): [B, rows, 1]
        if f.sides:
            ra, cb = (plan.a, plan.b) if over == "y" else (plan.b, plan.a)
            self.row_side, self.col_side = _flat(ra, batch, self.n), _flat(cb, batch, self.m)
        else:
            self.row_side = self.col_side = None
        ri = LT(self.rows[:, :, None, :])
        cj = LT(self.cols[:, None, :, :])
        rs = None if self.row_side is None else LT(self.row_side[:, :, None, :])
        cs = None if self.col_side is None else LT(self.col_side[:, None, :, :])
        self.K = self.apply(ri, cj, rs, cs)
        self.V = None if V is None else LT(_flat(V, batch, self.m)[:, None, :, :])

    def const(self, value: float):
        return _LazyTensor()(torch.full((self.B, 1, 1, 1), float(value), dtype=self.dtype, device=self.device))

    def apply(self, r, c, rs=None, cs=None):
        """K of rows r and columns c (rs, cs: their side features), in X, Y order."""
        consts = [self.const(v) for v in self.formula.consts]
        if self.formula.sides:
            return (self.formula.fn(r, c, consts, rs, cs) if self.over == "y"
                    else self.formula.fn(c, r, consts, cs, rs))
        return self.formula.fn(r, c, consts) if self.over == "y" else self.formula.fn(c, r, consts)

    def paired(self, idx: torch.Tensor) -> torch.Tensor:
        """K(rows_b,i, cols_b,idx[b,i,k]) -> [B, n, k], differentiable (through pykeops)."""
        LT = _LazyTensor()
        B, n, k = idx.shape
        d = self.rows.shape[-1]
        r = self.rows[:, :, None, :].expand(B, n, k, d).reshape(B, n * k, 1, d)
        c = torch.gather(self.cols, 1, idx.reshape(B, n * k, 1).expand(B, n * k, d)).reshape(B, n * k, 1, d)
        rs = cs = None
        if self.row_side is not None:
            rs = LT(self.row_side[:, :, None, :].expand(B, n, k, 1).reshape(B, n * k, 1, 1))
            cs = LT(torch.gather(self.col_side, 1, idx.reshape(B, n * k, 1)).reshape(B, n * k, 1, 1))
        one = LT(torch.ones((B, 1, 1, 1), dtype=self.dtype, device=self.device))
        # a one-column reduction evaluates the formula on the matched rows (both KeOps "i")
        return (self.apply(LT(r), LT(c), rs, cs) * one).sum(2).reshape(B, n, k)


def _over(dim: int, transposed: bool) -> str:
    """The operand reduced by a consumer over ``dim`` (-1 or -2) of the presented expression."""
    return "y" if (dim == -1) != transposed else "x"


def _batch(*tensors):
    return _params.broadcast_shapes(*(t.shape[:-2] for t in tensors if t is not None))


# ---------------------------------------------------------------------------------------
# Consumers (reached through torchpair.backends.dispatch; None means "run natively")
# ---------------------------------------------------------------------------------------
def matmul(e, V):
    out = torch.ops.torchpair.lazy_matmul(_meta(e.X), _meta(e.Y), _meta(V), e.metric, e.transposed,
                                          **_meta_params(e.params))
    plan = _plan(e.X, e.Y, e.metric, e.params, (V,))
    if plan is None:
        return None
    over = _over(-1, e.transposed)
    V2 = V[:, None] if V.dim() == 1 else V
    s = _Sweep(plan, over, _batch(plan.X, plan.Y, V2), V2)
    return (s.K * s.V).sum(2).reshape(out.shape)


def reduce(e, reduction, dim, **args):
    if args or reduction not in ("sum", "mean", "logsumexp"):
        return None  # declined: reductions with arguments, and those not translated, run natively
    out = torch.ops.torchpair.lazy_reduce(_meta(e.X), _meta(e.Y), e.metric, reduction, dim, e.transposed,
                                          **_meta_params(e.params))
    plan = _plan(e.X, e.Y, e.metric, e.params)
    if plan is None:
        return None
    s = _Sweep(plan, _over(-1 if dim is None else dim, e.transposed), _batch(plan.X, plan.Y))
    if reduction == "logsumexp":
        r = s.K.logsumexp(2).squeeze(-1)
        r = torch.logsumexp(r, -1) if dim is None else r
    else:
        r = s.K.sum(2).squeeze(-1)
        if dim is None:
            r = r.sum(-1)
        if reduction == "mean":
            r = r / (s.m * (s.n if dim is None else 1))
    return r.reshape(out.shape)


def topk(e, k, dim, largest, nan):
    """[..., rows, k] values and indices (lazy.py moves k where ``dim`` was)."""
    v, i = torch.ops.torchpair.lazy_topk(_meta(e.X), _meta(e.Y), e.metric, k, dim, largest, True, e.transposed,
                                         nan, **_meta_params(e.params))
    if k == 0:
        return None
    plan = _plan(e.X, e.Y, e.metric, e.params, selection=True)
    if plan is None:
        return None
    s = _Sweep(plan, _over(dim, e.transposed), _batch(plan.X, plan.Y))
    idx = (-s.K if largest else s.K).argKmin(k, dim=2).long()  # best first; ties: lowest index
    return s.paired(idx).reshape(v.shape), idx.reshape(i.shape)


def softmax_matmul(e, V, dim):
    out = torch.ops.torchpair.lazy_softmax_matmul(_meta(e.X), _meta(e.Y), _meta(V), e.metric, dim, e.transposed,
                                                  **_meta_params(e.params))
    plan = _plan(e.X, e.Y, e.metric, e.params, (V,))
    if plan is None:
        return None
    V2 = V[:, None] if V.dim() == 1 else V
    s = _Sweep(plan, _over(dim, e.transposed), _batch(plan.X, plan.Y, V2), V2)
    lse = s.K.logsumexp(2)  # [B, n, 1]
    L = _LazyTensor()(lse[:, :, None, :])
    return ((s.K - L).exp() * s.V).sum(2).reshape(out.shape)


# ---- set-level functions: the native compositions (csrc/ops/sets.cpp) on KeOps consumers --
def _lazy(X, Y, metric, params):
    return LazyPairwise(X, Y, metric, params)


def _translatable(X, Y, metric, params) -> bool:
    return _plan(X, Y, metric, params) is not None


def _nearest(e, dim):
    r = topk(e, 1, dim, False, "propagate")
    if r is None:
        return None
    return r[0].squeeze(-1)


def knn(X, Y, k, metric, params):
    torch.ops.torchpair.knn(_meta(X), _meta(Y), k, metric, **_meta_params(params))
    if k == 0:
        return None
    e = _lazy(X, Y, metric, params)
    largest = _catalog.info(metric).is_similarity
    return topk(e, k, -1, largest, "largest")


def hausdorff(X, Y, metric, directed, params):
    torch.ops.torchpair.hausdorff(_meta(X), _meta(Y), metric, directed, **_meta_params(params))
    if not _translatable(X, Y, metric, params) or not (torch.isfinite(X).all() and torch.isfinite(Y).all()):
        return None
    e = _lazy(X, Y, metric, params)
    forward = _nearest(e, -1).amax(-1)
    if directed:
        return forward
    return torch.maximum(forward, _nearest(e, -2).amax(-1))


def chamfer(X, Y, metric, reduction, params):
    torch.ops.torchpair.chamfer(_meta(X), _meta(Y), metric, reduction, **_meta_params(params))
    if not _translatable(X, Y, metric, params) or not (torch.isfinite(X).all() and torch.isfinite(Y).all()):
        return None
    e = _lazy(X, Y, metric, params)
    a, b = _nearest(e, -1), _nearest(e, -2)
    return a.mean(-1) + b.mean(-1) if reduction == "mean" else a.sum(-1) + b.sum(-1)


def _self_values(X, metric, params):
    """K(x_i, x_i) [..., N] through KeOps."""
    plan = _plan(X, None, metric, params)
    s = _Sweep(plan, "y", X.shape[:-2])
    idx = torch.arange(s.n, device=X.device).view(1, s.n, 1).expand(s.B, s.n, 1)
    return s.paired(idx).reshape(*X.shape[:-2], s.n)


def mmd(X, Y, metric, unbiased, params):
    torch.ops.torchpair.mmd(_meta(X), _meta(Y), metric, unbiased, **_meta_params(params))
    if not _translatable(X, Y, metric, params):
        return None
    kxy = reduce(_lazy(X, Y, metric, params), "mean", None)
    if not unbiased:
        return (reduce(_lazy(X, None, metric, params), "mean", None) +
                reduce(_lazy(Y, None, metric, params), "mean", None) - 2 * kxy)

    def within(S):
        n = S.shape[-2]
        total = reduce(_lazy(S, None, metric, params), "sum", None)
        return (total - _self_values(S, metric, params).sum(-1)) / (n * (n - 1))

    return within(X) + within(Y) - 2 * kxy


def energy_distance(X, Y, metric, params):
    torch.ops.torchpair.energy_distance(_meta(X), _meta(Y), metric, **_meta_params(params))
    if not _translatable(X, Y, metric, params):
        return None
    e2 = (2 * reduce(_lazy(X, Y, metric, params), "mean", None) -
          reduce(_lazy(X, None, metric, params), "mean", None) -
          reduce(_lazy(Y, None, metric, params), "mean", None))
    positive = e2 > 0
    return torch.where(positive, torch.sqrt(torch.where(positive, e2, torch.ones_like(e2))), torch.zeros_like(e2))


# ---------------------------------------------------------------------------------------
# Registration (torchpair/backends.py calls these through its one dispatch point)
# ---------------------------------------------------------------------------------------
def _require_pykeops():
    try:
        import pykeops.torch  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "torchpair.backend('keops') needs the optional dependency pykeops, which could not be imported "
            f"({exc}); install it with: pip install torchpair[keops]"
        ) from exc


class _KeOpsBackend:
    matmul = staticmethod(matmul)
    reduce = staticmethod(reduce)
    topk = staticmethod(topk)
    softmax_matmul = staticmethod(softmax_matmul)
    knn = staticmethod(knn)
    hausdorff = staticmethod(hausdorff)
    chamfer = staticmethod(chamfer)
    mmd = staticmethod(mmd)
    energy_distance = staticmethod(energy_distance)
    metrics = staticmethod(keops_metrics)

    @staticmethod
    def supports(metric: str) -> bool:
        return metric in _catalog.metrics() and _prepared_support(metric)


_backends.register_backend("keops", _KeOpsBackend(), on_enter=_require_pykeops)
