"""Exact discrete optimal transport: ``tp.emd``, ``tp.emd2``, ``tp.wasserstein``.

The solver is a native network simplex (``torch.ops.torchpair.emd`` -> ``_emd``) that runs
on the CPU in float64; CUDA (or any other device) inputs are copied to the CPU, solved, and
the results returned on the input device and dtype. ``B`` problems given as ``a [B, n]``,
``b [B, m]``, ``M [B, n, m]`` (any leading batch dimensions, broadcast) are solved in
parallel across cores. Conventions (mass tolerance, zero weights, empty supports,
``max_iter``): docs/conventions.md.
"""
from __future__ import annotations

import math
import numbers
import warnings

import torch

from . import _params
from . import _catalog
from .functional import pairwise



def _check(op, a, b, M, max_iter, normalize, mass_tol):
    for name, value, optional in (("a", a, True), ("b", b, True), ("M", M, False)):
        _params.check_tensor(op, name, value, optional=optional)
    if max_iter is not None and (isinstance(max_iter, bool) or not isinstance(max_iter, int)):
        raise TypeError(f"torchpair.{op}: 'max_iter' must be an int or None, got {type(max_iter).__name__}")
    if not isinstance(normalize, bool):
        raise TypeError(f"torchpair.{op}: 'normalize' must be a bool, got {type(normalize).__name__}")
    if mass_tol is not None and (isinstance(mass_tol, bool) or not isinstance(mass_tol, numbers.Real)):
        raise TypeError(f"torchpair.{op}: 'mass_tol' must be a real number or None, got {type(mass_tol).__name__}")
    return None if mass_tol is None else float(mass_tol)


def _solve(op, a, b, M, max_iter, normalize, mass_tol, log=False):
    mass_tol = _check(op, a, b, M, max_iter, normalize, mass_tol)
    if not isinstance(log, bool):
        raise TypeError(f"torchpair.{op}: 'log' must be a bool, got {type(log).__name__}")
    # A TORCH_WARN from a torch.ops call does not reach Python's warnings module: in eager
    # mode warn here; in captured graphs the operator warns itself (TORCH_WARN).
    compiling = torch.compiler.is_compiling()
    out = torch.ops.torchpair.emd(a, b, M, max_iter, normalize, mass_tol, compiling)
    if not compiling:
        stopped = int((out[4] != 0).sum())
        if stopped:
            warnings.warn(
                f"torchpair.{op}: the network simplex stopped at max_iter = {max_iter} pivots before optimality in "
                f"{stopped} of {out[4].numel()} problem(s); the plan is feasible but may not be optimal (status 1 in "
                "the returned log). Raise max_iter (None: no limit).",
                UserWarning,
                stacklevel=3,
            )
    return out


def emd(a, b, M, max_iter: int | None = None, normalize: bool = False, mass_tol: float | None = None,
        log: bool = False):
    """The exact optimal transport plan between weights ``a`` and ``b`` for the cost ``M``.

    Args:
        a: ``[..., n]`` non-negative weights of the rows of M, or None (uniform ``1/n``).
        b: ``[..., m]`` non-negative weights of the columns, or None (uniform ``1/m``).
        M: ``[..., n, m]`` non-negative finite cost. Leading dimensions of a, b, M broadcast;
            each problem is solved independently (in parallel across cores).
        max_iter: pivot limit of the network simplex per problem (None: no limit). When it is
            reached a warning is issued and the status of that problem is 1.
        normalize: rescale a and b to unit mass first (otherwise their masses must agree within
            ``mass_tol``, relative; default 1e-7 in float64, 1e-4 in float32, 1e-2 in half types).
        log: also return a dict with ``cost``, the duals ``u`` ``[..., n]`` and ``v``
            ``[..., m]`` (``u_i + v_j <= M_ij``, equality where the plan is positive) and
            ``status`` (0 optimal, 1 stopped at max_iter).

    Returns:
        the plan ``[..., n, m]`` (rows sum to a, columns to b), in the promoted dtype of the
        inputs, on M's device; with ``log=True`` also the dict.
    """
    plan, cost, u, v, status = _solve("emd", a, b, M, max_iter, normalize, mass_tol, log)
    if log:
        return plan, {"cost": cost, "u": u, "v": v, "status": status}
    return plan


def emd2(a, b, M, max_iter: int | None = None, normalize: bool = False, mass_tol: float | None = None,
         log: bool = False):
    """The optimal transport cost ``min_P <P, M>`` (POT's ``ot.emd2``), ``[...]``.

    Differentiable with respect to ``M`` (gradient: the optimal plan), ``a`` and ``b`` (the
    dual potentials, each centred to sum 0, as POT). Arguments as :func:`emd`; with
    ``log=True`` also a dict with ``plan``, ``u``, ``v`` and ``status``.
    """
    plan, cost, u, v, status = _solve("emd2", a, b, M, max_iter, normalize, mass_tol, log)
    if log:
        return cost, {"plan": plan, "u": u, "v": v, "status": status}
    return cost


def _root(cost, p):
    """cost ** (1/p) with gradient 0 at cost 0 (where the true one is unbounded)."""
    if p == 1:
        return cost
    positive = cost > 0
    return torch.where(positive, torch.where(positive, cost, torch.ones_like(cost)) ** (1.0 / p),
                       torch.zeros_like(cost))


def wasserstein(X, Y, a=None, b=None, metric: str = "euclidean", p: float = 1, *, max_iter: int | None = None,
                normalize: bool = False, mass_tol: float | None = None, metric_p: float | None = None, **params):
    """The p-Wasserstein distance ``W_p = (min_P <P, d(X, Y)^p>)^(1/p)`` between the weighted
    point sets ``X [..., n, D]`` (weights ``a [..., n]``, default uniform) and
    ``Y [..., m, D]`` (``b [..., m]``), with the ground distance ``d`` any distance metric of
    the catalog (``**params`` are its parameters; the minkowski exponent, whose name clashes
    with the Wasserstein order ``p``, is ``metric_p``).

    Differentiable with respect to X and Y (through the cost, whose gradient is the optimal
    plan), a and b (the centred duals). At ``W_p = 0`` with ``p > 1`` the gradient of the root
    is taken as 0.
    """
    _params.check_operands("wasserstein", X, Y, metric, y_optional=False)
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"torchpair.wasserstein: 'p' must be a real number, got {type(p).__name__}")
    if not (math.isfinite(p) and p >= 1):
        raise ValueError(f"torchpair.wasserstein: 'p' (the Wasserstein order) must be finite and >= 1, got {p}")
    info = _catalog.info(metric)  # the unknown-name error
    kind = info.kind
    if not info.is_distance:
        raise ValueError(f"torchpair.wasserstein: 'metric' must be a distance (the ground cost), got {metric!r} "
                         f"which is a {kind}")
    if metric_p is not None:
        if isinstance(metric_p, bool) or not isinstance(metric_p, numbers.Real):
            raise TypeError(f"torchpair.wasserstein: 'metric_p' (the minkowski exponent) must be a real number, got "
                            f"{type(metric_p).__name__}")
        if not metric_p >= 1:  # NaN too
            raise ValueError(f"torchpair.wasserstein: 'metric_p' (the minkowski exponent) must be >= 1 (or inf), "
                             f"got {metric_p}")
        params["p"] = metric_p
    d = pairwise(X, Y, metric, **params)
    if not torch.compiler.is_compiling() and d.device.type != "meta" and not bool(torch.isfinite(d).all()):
        # the solver would reject the cost 'M', which the caller never passed: name X and Y
        raise ValueError("torchpair.wasserstein: the ground cost d(X, Y) has NaN or infinite entries; 'X' and 'Y' "
                         "must be finite")
    cost = d if p == 1 else d ** p
    w = emd2(a, b, cost, max_iter=max_iter, normalize=normalize, mass_tol=mass_tol)
    return _root(w, float(p))
