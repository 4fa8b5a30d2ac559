"""Entropic optimal transport on a given cost matrix: ``tp.sinkhorn``, ``tp.sinkhorn2``,
``tp.sinkhorn_unbalanced``, ``tp.sinkhorn_unbalanced2`` (POT's signatures and numbers).

Every solver iterates in the log domain (POT's ``ot.sinkhorn_log`` and the log-domain form
of ``ot.unbalanced.sinkhorn_knopp_unbalanced``), so small ``reg`` neither underflows nor
overflows. Problems are batched over the leading dimensions of ``a [..., n]``, ``b [..., m]``
and ``M [..., n, m]`` (broadcast); the stopping test needs every problem of the batch to
pass. Gradients flow through the iterations (autograd, as POT's torch backend). The lazy,
never-materialized Sinkhorn divergence on point clouds is ``tp.sinkhorn_divergence``
(torchpair/divergence.py). Conventions: docs/conventions.md, "Entropic optimal transport".
"""
from __future__ import annotations

import math
import numbers
import warnings

import torch

from . import _params


_NOT_CONVERGED = ("Sinkhorn did not converge. You might want to increase the number of iterations `numItermax` or "
                  "the regularization parameter `reg`.")


def _positive(op: str, name: str, value) -> float:
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not torch.compiler.is_compiling():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"torchpair.{op}: {name!r} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"torchpair.{op}: {name!r} must be finite and > 0, got {value}")
    return value


def _count(op: str, name: str, value, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"torchpair.{op}: {name!r} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"torchpair.{op}: {name!r} must be >= {minimum}, got {value}")
    return value


def _flag(op: str, name: str, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"torchpair.{op}: {name!r} must be a bool, got {type(value).__name__}")
    return value


def _as_tensor(op: str, name: str, value, device) -> torch.Tensor | None:
    """None or an empty sequence: uniform weights (POT's convention); array-likes: a tensor."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)) and len(value) == 0:
        return None
    if not isinstance(value, torch.Tensor):
        if hasattr(value, "__array__") or isinstance(value, (list, tuple)):
            try:
                value = torch.as_tensor(value, device=device)
            except (TypeError, ValueError, RuntimeError) as exc:
                raise TypeError(f"torchpair.{op}: {name!r} must be a tensor of numbers: {exc}") from None
        else:
            raise TypeError(f"torchpair.{op}: {name!r} must be a tensor, got {type(value).__name__}")
    return value


def _result_dtype(*tensors) -> torch.dtype:
    """The promoted floating dtype of the inputs (integer or bool inputs count as the default
    float dtype; half types are computed in float32)."""
    dtype = None
    for t in tensors:
        if t is None:
            continue
        d = t.dtype if t.is_floating_point() else torch.get_default_dtype()
        dtype = d if dtype is None else torch.promote_types(dtype, d)
    if dtype in (torch.float16, torch.bfloat16):
        dtype = torch.float32
    return dtype


def _default_mass_tol(dtype: torch.dtype) -> float:
    return 1e-7 if dtype == torch.float64 else 1e-4


def _check_weights(op: str, name: str, w: torch.Tensor) -> None:
    if torch.compiler.is_compiling() or w.device.type == "meta" or w.numel() == 0:
        return
    bad = ~torch.isfinite(w) | (w < 0)
    if bool(bad.any()):
        idx = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(f"torchpair.{op}: {name!r} must be non-negative and finite, got {w[idx].item()} at index "
                         f"{idx}")


def _prepare(op: str, a, b, M, balanced: bool, mass_tol):
    """Validated a [..., n], b [..., m], M [..., n, m] in one floating dtype, broadcast to one
    batch shape."""
    if not isinstance(M, torch.Tensor):
        if hasattr(M, "__array__") or isinstance(M, (list, tuple)):
            M = torch.as_tensor(M)
        else:
            raise TypeError(f"torchpair.{op}: 'M' must be a tensor, got {type(M).__name__}")
    if M.dim() < 2:
        raise ValueError(f"torchpair.{op}: 'M' must have shape [..., n, m], got {tuple(M.shape)}")
    if M.is_complex() or M.dtype == torch.bool:
        raise TypeError(f"torchpair.{op}: 'M' must be a real tensor, got {M.dtype}")
    a = _as_tensor(op, "a", a, M.device)
    b = _as_tensor(op, "b", b, M.device)
    n, m = M.shape[-2], M.shape[-1]
    for name, w, size in (("a", a, n), ("b", b, m)):
        if w is None:
            continue
        if w.is_complex() or w.dtype == torch.bool:
            raise TypeError(f"torchpair.{op}: {name!r} must be a real tensor, got {w.dtype}")
        if w.dim() < 1 or w.shape[-1] != size:
            side = "rows" if name == "a" else "columns"
            raise ValueError(f"torchpair.{op}: {name!r} must have shape [..., {size}] (the {side} of 'M' "
                             f"{tuple(M.shape)}), got {tuple(w.shape)}")
        if w.device != M.device:
            raise ValueError(f"torchpair.{op}: {name!r} is on {w.device} but 'M' is on {M.device}")
    dtype = _result_dtype(a, b, M)
    M = M.to(dtype)
    a = torch.full((n,), 1.0 / n if n else 0.0, dtype=dtype, device=M.device) if a is None else a.to(dtype)
    b = torch.full((m,), 1.0 / m if m else 0.0, dtype=dtype, device=M.device) if b is None else b.to(dtype)
    try:
        batch = _params.broadcast_shapes(a.shape[:-1], b.shape[:-1], M.shape[:-2])
    except RuntimeError:
        raise ValueError(f"torchpair.{op}: the batch dimensions of 'a' {tuple(a.shape[:-1])}, 'b' "
                         f"{tuple(b.shape[:-1])} and 'M' {tuple(M.shape[:-2])} do not broadcast") from None
    _check_weights(op, "a", a)
    _check_weights(op, "b", b)
    if not torch.compiler.is_compiling() and M.device.type != "meta" and M.numel() and \
            not bool(torch.isfinite(M).all()):
        idx = tuple(int(i) for i in (~torch.isfinite(M)).nonzero()[0])
        raise ValueError(f"torchpair.{op}: 'M' must be finite, got {M[idx].item()} at index {idx}")
    if balanced and not torch.compiler.is_compiling() and M.device.type != "meta":
        tol = _default_mass_tol(dtype) if mass_tol is None else float(mass_tol)
        sa, sb = a.sum(-1), b.sum(-1)
        off = (sa - sb).abs() > tol * torch.maximum(sa, sb)
        if bool(off.any()):
            first = tuple(int(i) for i in off.nonzero()[0]) if off.dim() else ()
            raise ValueError(
                f"torchpair.{op}: 'a' and 'b' must have the same total mass for balanced transport, got sum(a) = "
                f"{sa[first].item():.10g} and sum(b) = {sb[first].item():.10g}"
                f"{f' in problem {first}' if first else ''} (relative tolerance mass_tol = {tol:g}); normalize them, "
                "or use tp.sinkhorn_unbalanced")
    a = a.expand(*batch, n)
    b = b.expand(*batch, m)
    M = M.expand(*batch, n, m)
    return a, b, M


def _warmstart(op, warmstart, a, b):
    if warmstart is None:
        return torch.zeros_like(a), torch.zeros_like(b)
    if not isinstance(warmstart, (tuple, list)) or len(warmstart) != 2:
        raise TypeError(f"torchpair.{op}: 'warmstart' must be a pair (log_u, log_v) of tensors or None")
    u, v = (torch.as_tensor(w, dtype=a.dtype, device=a.device) for w in warmstart)
    return u.expand_as(a).clone(), v.expand_as(b).clone()


def _sinkhorn_log(op, a, b, M, reg, numItermax, stopThr, warn, warmstart):
    """POT's ot.bregman.sinkhorn_log, batched: v then u, the column-marginal error (2-norm)
    every 10 iterations."""
    Mr = -M / reg
    u, v = _warmstart(op, warmstart, a, b)
    loga, logb = a.log(), b.log()
    errs = []
    tracing = torch.compiler.is_compiling()
    ii = -1
    converged = numItermax == 0
    for ii in range(numItermax):
        v = logb - torch.logsumexp(Mr + u.unsqueeze(-1), -2)
        u = loga - torch.logsumexp(Mr + v.unsqueeze(-2), -1)
        if ii % 10 == 0 and not tracing:
            marginal = torch.exp(Mr + u.unsqueeze(-1) + v.unsqueeze(-2)).sum(-2)
            err = torch.linalg.vector_norm(marginal - b, dim=-1)
            errs.append(err.detach())
            if bool((err < stopThr).all()):
                converged = True
                break
    if not converged and not tracing and warn and M.numel():
        warnings.warn(f"torchpair.{op}: {_NOT_CONVERGED}", UserWarning, stacklevel=4)
    plan = torch.exp(Mr + u.unsqueeze(-1) + v.unsqueeze(-2))
    # zero total mass (including empty supports): the plan is 0, not 0 * exp(nan)
    zero = (a.sum(-1) == 0) | (b.sum(-1) == 0)
    plan = torch.where(zero[..., None, None], torch.zeros_like(plan), plan)
    return plan, {"niter": ii, "err": errs, "log_u": u, "log_v": v, "u": u.exp(), "v": v.exp()}


def _method(op, method):
    if not isinstance(method, str):
        raise TypeError(f"torchpair.{op}: 'method' must be a str, got {type(method).__name__}")
    if method.lower() not in ("sinkhorn", "sinkhorn_log"):
        raise ValueError(f"torchpair.{op}: 'method' must be \"sinkhorn\" or \"sinkhorn_log\" (both run the "
                         f"log-domain iterations), got {method!r}")


def _balanced(op, a, b, M, reg, method, numItermax, stopThr, log, warn, warmstart, mass_tol):
    reg = _positive(op, "reg", reg)
    _method(op, method)
    _count(op, "numItermax", numItermax)
    stopThr = float(_positive(op, "stopThr", stopThr))
    _flag(op, "log", log)
    _flag(op, "warn", warn)
    a, b, M = _prepare(op, a, b, M, True, mass_tol)
    return _sinkhorn_log(op, a, b, M, reg, numItermax, stopThr, warn, warmstart), M


def sinkhorn(a, b, M, reg, method: str = "sinkhorn_log", numItermax: int = 1000, stopThr: float = 1e-9,
             verbose: bool = False, log: bool = False, warn: bool = True, warmstart=None,
             mass_tol: float | None = None):
    """The entropic optimal transport plan (POT's ``ot.sinkhorn`` / ``ot.sinkhorn_log``):
    ``argmin_P <P, M> - reg * H(P)`` with ``P 1 = a``, ``P^T 1 = b``.

    Args:
        a: ``[..., n]`` non-negative weights (None or ``[]``: uniform ``1/n``); integer
            weights are converted to the floating dtype.
        b: ``[..., m]`` likewise (uniform ``1/m``). ``sum(a)`` must equal ``sum(b)`` within
            ``mass_tol`` (relative; 1e-7 in float64, 1e-4 otherwise), else ``ValueError``.
        M: ``[..., n, m]`` finite cost. Leading dimensions of a, b, M broadcast.
        reg: the entropic regularization (> 0).
        method: ``"sinkhorn_log"`` or ``"sinkhorn"``; both run the log-domain iterations
            (at convergence POT's two methods give the same numbers).
        numItermax: the iteration limit. stopThr: stop when the 2-norm of the column-marginal
            error, checked every 10 iterations as POT, is below it in every problem.
        log: also return a dict with ``niter`` (index of the last iteration, as POT), ``err``
            (the list of checked errors, each a tensor ``[...]``), ``log_u``, ``log_v``,
            ``u``, ``v``.
        warn: warn when ``numItermax`` is reached without convergence (the default here and
            in :func:`sinkhorn2`).
        warmstart: initial ``(log_u, log_v)``.

    Returns:
        the plan ``[..., n, m]``, differentiable through the iterations.
    """
    (plan, info), _ = _balanced("sinkhorn", a, b, M, reg, method, numItermax, stopThr, log, warn, warmstart,
                                mass_tol)
    return (plan, info) if log else plan


def sinkhorn2(a, b, M, reg, method: str = "sinkhorn_log", numItermax: int = 1000, stopThr: float = 1e-9,
              verbose: bool = False, log: bool = False, warn: bool = True, warmstart=None,
              mass_tol: float | None = None):
    """The linear cost ``<P, M>`` of the entropic plan (POT's ``ot.sinkhorn2``), ``[...]``.
    Arguments and ``log`` as :func:`sinkhorn` (the dict also holds the ``plan``).
    Differentiable w.r.t. a, b and M through the iterations."""
    (plan, info), M = _balanced("sinkhorn2", a, b, M, reg, method, numItermax, stopThr, log, warn, warmstart,
                                mass_tol)
    cost = (plan * M).sum((-2, -1))
    if log:
        info["plan"] = plan
        return cost, info
    return cost


def _reg_m_pair(op, reg_m):
    if isinstance(reg_m, (tuple, list)):
        if len(reg_m) not in (1, 2):
            raise ValueError(f"torchpair.{op}: 'reg_m' must be a number or a pair of numbers, got {len(reg_m)} values")
        pair = (reg_m[0], reg_m[-1])
    else:
        pair = (reg_m, reg_m)
    out = []
    for value in pair:
        if isinstance(value, torch.Tensor) and value.dim() == 0 and not torch.compiler.is_compiling():
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"torchpair.{op}: 'reg_m' must be a real number (or a pair), got {type(value).__name__}")
        value = float(value)
        if not value > 0:
            raise ValueError(f"torchpair.{op}: 'reg_m' must be > 0 (inf: that marginal is enforced), got {value}")
        out.append(value)
    return out


def _plogq(p, q):
    """POT's kl_div terms ``p log(p / q + 1e-16)``, 0 where p is 0 (also where q is 0 there)."""
    pos = p > 0
    return torch.where(pos, p * torch.log(torch.where(pos, p / q, torch.ones_like(p)) + 1e-16), torch.zeros_like(p))


def _unbalanced(op, a, b, M, reg, reg_m, reg_type, numItermax, stopThr, warn, warmstart):
    """Log-domain form of POT's sinkhorn_knopp_unbalanced: u = (a / K v)^fi1, v = (b / K^T u)^fi2
    with K = exp(-M / reg) * c (c = a b^T for reg_type "kl", 1 for "entropy"), u first, and
    POT's relative change of u and v as the error, every iteration."""
    reg = _positive(op, "reg", reg)
    rm1, rm2 = _reg_m_pair(op, reg_m)
    if not isinstance(reg_type, str) or reg_type.lower() not in ("kl", "entropy"):
        raise ValueError(f"torchpair.{op}: 'reg_type' must be \"kl\" or \"entropy\", got {reg_type!r}")
    _count(op, "numItermax", numItermax)
    stopThr = _positive(op, "stopThr", stopThr)
    _flag(op, "warn", warn)
    a, b, M = _prepare(op, a, b, M, False, None)
    fi1 = 1.0 if math.isinf(rm1) else rm1 / (rm1 + reg)
    fi2 = 1.0 if math.isinf(rm2) else rm2 / (rm2 + reg)
    loga, logb = a.log(), b.log()
    kl = reg_type.lower() == "kl"
    ca, cb = (loga, logb) if kl else (torch.zeros_like(a), torch.zeros_like(b))
    # log a - log c_a: exactly 0 for "kl" (also where a_i = 0, where the difference is -inf - -inf)
    da, db = (torch.zeros_like(a), torch.zeros_like(b)) if kl else (loga, logb)
    # log K_ij = -M_ij / reg + ca_i + cb_j; u_i = (a_i / (K v)_i)^fi1 in the log domain
    Mr = -M / reg
    u, v = _warmstart(op, warmstart, a, b)
    errs = []
    tracing = torch.compiler.is_compiling()
    converged = numItermax == 0
    i = -1
    for i in range(numItermax):
        uprev, vprev = u, v
        u = fi1 * (da - torch.logsumexp(Mr + (cb + v).unsqueeze(-2), -1))
        v = fi2 * (db - torch.logsumexp(Mr + (ca + u).unsqueeze(-1), -2))
        if not tracing:
            eu, ev, pu, pv = u.exp(), v.exp(), uprev.exp(), vprev.exp()
            one = torch.ones((), dtype=u.dtype, device=u.device)
            err_u = (eu - pu).abs().amax(-1) / torch.maximum(torch.maximum(eu.abs().amax(-1), pu.abs().amax(-1)), one)
            err_v = (ev - pv).abs().amax(-1) / torch.maximum(torch.maximum(ev.abs().amax(-1), pv.abs().amax(-1)), one)
            err = 0.5 * (err_u + err_v)
            errs.append(err.detach())
            if bool((err < stopThr).all()):
                converged = True
                break
    if not converged and not tracing and warn and M.numel():
        warnings.warn(f"torchpair.{op}: {_NOT_CONVERGED}", UserWarning, stacklevel=3)
    logK = Mr + ca.unsqueeze(-1) + cb.unsqueeze(-2)
    plan = torch.exp(u.unsqueeze(-1) + logK + v.unsqueeze(-2))
    plan = torch.where(torch.isnan(plan), torch.zeros_like(plan), plan)
    linear = (plan * M).sum((-2, -1))
    c = torch.exp(ca.unsqueeze(-1) + cb.unsqueeze(-2))
    # POT's formula, with 0 log(.) = 0 where the plan (a marginal) is 0
    total = linear + reg * _plogq(plan, c).sum((-2, -1))
    if not math.isinf(rm1):
        p1 = plan.sum(-1)
        total = total + rm1 * _plogq(p1, a).sum(-1)
    if not math.isinf(rm2):
        p2 = plan.sum(-2)
        total = total + rm2 * _plogq(p2, b).sum(-1)
    info = {"niter": i, "err": errs, "logu": u, "logv": v, "cost": linear, "total_cost": total}
    return plan, info


def sinkhorn_unbalanced(a, b, M, reg, reg_m, method: str = "sinkhorn", reg_type: str = "kl", c=None,
                        warmstart=None, numItermax: int = 1000, stopThr: float = 1e-6, verbose: bool = False,
                        log: bool = False, warn: bool = True):
    """Unbalanced entropic transport plan (POT's ``ot.unbalanced.sinkhorn_unbalanced``):
    ``argmin_P <P, M> + reg KL(P | c) + reg_m1 KL(P 1 | a) + reg_m2 KL(P^T 1 | b)`` with
    ``c = a b^T`` (``reg_type="kl"``, POT's default) or ``1`` (``"entropy"``).

    ``reg_m`` is a number or a pair ``(reg_m1, reg_m2)``; ``inf`` enforces that marginal.
    Masses need not agree. The iterations are the log-domain form of POT's
    ``sinkhorn_knopp_unbalanced`` (same fixed point, no underflow); ``stopThr`` bounds POT's
    error (relative change of the scalings, every iteration). ``log=True`` also returns a dict
    with ``niter``, ``err`` (list of tensors ``[...]``), ``logu``, ``logv``, ``cost`` (linear)
    and ``total_cost`` (POT's formula). Batched over leading dims; warns when ``numItermax``
    is reached without convergence.
    """
    if c is not None:
        raise ValueError("torchpair.sinkhorn_unbalanced: a custom reference measure 'c' is not supported "
                         "(reg_type \"kl\" uses c = a b^T, \"entropy\" c = 1)")
    _method("sinkhorn_unbalanced", method)
    _flag("sinkhorn_unbalanced", "log", log)
    plan, info = _unbalanced("sinkhorn_unbalanced", a, b, M, reg, reg_m, reg_type, numItermax, stopThr, warn,
                             warmstart)
    return (plan, info) if log else plan


def sinkhorn_unbalanced2(a, b, M, reg, reg_m, method: str = "sinkhorn", reg_type: str = "kl", c=None,
                         warmstart=None, returnCost: str = "linear", numItermax: int = 1000, stopThr: float = 1e-6,
                         verbose: bool = False, log: bool = False, warn: bool = True):
    """The cost of :func:`sinkhorn_unbalanced` (POT's ``ot.unbalanced.sinkhorn_unbalanced2``):
    ``returnCost="linear"`` gives ``<P, M>``, ``"total"`` the full objective (POT's formula)."""
    op = "sinkhorn_unbalanced2"
    if c is not None:
        raise ValueError(f"torchpair.{op}: a custom reference measure 'c' is not supported "
                         "(reg_type \"kl\" uses c = a b^T, \"entropy\" c = 1)")
    _method(op, method)
    _flag(op, "log", log)
    if returnCost not in ("linear", "total"):
        raise ValueError(f"torchpair.{op}: 'returnCost' must be \"linear\" or \"total\", got {returnCost!r}")
    plan, info = _unbalanced(op, a, b, M, reg, reg_m, reg_type, numItermax, stopThr, warn, warmstart)
    cost = info["cost"] if returnCost == "linear" else info["total_cost"]
    if log:
        info["plan"] = plan
        return cost, info
    return cost
