"""The debiased Sinkhorn divergence between point clouds, streamed: ``tp.sinkhorn_divergence``.

GeomLoss' ``SamplesLoss("sinkhorn", debias=True)`` (names, defaults, epsilon schedule and
iteration order), with every soft-min ``f_i = -eps log sum_j exp(h_j - C(x_i, y_j) / eps)``
computed by the lazy engine's scaled, weighted logsumexp, so no N x M matrix exists, forward
or backward. Conventions: docs/conventions.md, "Entropic optimal transport".
"""
from __future__ import annotations

import math
import numbers
import warnings

import torch

from . import _params
from .entropic import _flag, _positive


def sinkhorn_divergence(X: torch.Tensor, Y: torch.Tensor, a: torch.Tensor | None = None,
                        b: torch.Tensor | None = None, p: float = 2, blur: float = 0.05, scaling: float = 0.5,
                        reach: float | None = None, metric: str | None = None, *, diameter: float | None = None,
                        debias: bool = True, tol: float | None = None, max_iter: int = 1000,
                        unrolled: bool = False, log: bool = False, mass_tol: float | None = None,
                        metric_p: float | None = None, **params):
    """The Sinkhorn divergence ``S_eps(a, b) = OT_eps(a, b) - OT_eps(a, a)/2 - OT_eps(b, b)/2``
    between the weighted point clouds ``X [..., N, D]`` (weights ``a [..., N]``, default
    uniform) and ``Y [..., M, D]`` (``b [..., M]``), without an N x M matrix.

    GeomLoss' ``SamplesLoss("sinkhorn", p, blur, reach, diameter, scaling, debias)``: the cost is
    ``|x - y|^p / p`` (``metric=None``, p = 1 or 2) or any numeric catalog metric with its
    ``**params``; ``eps = blur^p``; eps-scaling from ``diameter^p`` down to ``blur^p`` by a
    factor ``scaling^p`` per iteration (GeomLoss' schedule and symmetric, averaged updates);
    ``reach`` (``rho = reach^p``) makes the transport unbalanced (KL marginal penalties).
    ``diameter`` defaults to the diagonal of the bounding box of X and Y (metric=None) or
    the largest cost between them (a streamed max; raised to 1/p). The minkowski exponent,
    whose name clashes with ``p``, is ``metric_p``.

    Args:
        debias: False gives the raw ``OT_eps(a, b)``.
        tol: None runs GeomLoss' schedule exactly. A number: after it, keep iterating at
            ``eps = blur^p`` until the marginal error (below) is under ``tol`` in every
            problem, at most ``max_iter`` more iterations, warning if it is not reached.
            Under torch.compile / torch.export the early stop is disabled: all ``max_iter``
            run (and ``diameter`` must be given, since the schedule length depends on it).
        unrolled: False (default): gradients through the converged potentials (one last
            extrapolation with the weights and the other potential detached: the envelope
            theorem, as GeomLoss). True: autograd through every iteration.
        log: also return a dict with ``niter`` (iterations run), ``err`` (``[...]``, the L1
            marginal error of the last iteration, the fixed-point residual for ``reach``)
            and the potentials ``f_ba``, ``g_ab`` (and ``f_aa``, ``g_bb``).
        mass_tol: relative tolerance of the balanced mass check (1e-7 float64, 1e-4 otherwise).

    One native operator (``torch.ops.torchpair.sinkhorn_divergence``, csrc/ops/sinkhorn.cpp)
    runs the loop, in eager mode, compiled, exported and from C++ (``tp::sinkhorn_divergence``).

    Returns:
        ``[...]`` (the broadcast batch of X and Y), differentiable w.r.t. X, Y, a and b.
    """
    op = "sinkhorn_divergence"
    _params.check_operands(op, X, Y, metric or "sqeuclidean", y_optional=False)
    for name, t in (("X", X), ("Y", Y)):
        if t.dim() < 2:
            raise ValueError(f"torchpair.{op}: {name!r} must have shape [..., rows, features], got {tuple(t.shape)}")
    if not X.is_floating_point() or not Y.is_floating_point():
        raise TypeError(f"torchpair.{op}: 'X' and 'Y' must be floating tensors, got {X.dtype} and {Y.dtype}")
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"torchpair.{op}: 'p' must be a real number, got {type(p).__name__}")
    p = float(p)
    if metric is None and p not in (1.0, 2.0):
        raise ValueError(f"torchpair.{op}: with metric=None the cost is |x - y|^p / p for p = 1 or 2 (GeomLoss), "
                         f"got p = {p}; pass a catalog metric for another cost")
    if not (math.isfinite(p) and p > 0):
        raise ValueError(f"torchpair.{op}: 'p' must be finite and > 0, got {p}")
    blur = _positive(op, "blur", blur)
    if isinstance(scaling, bool) or not isinstance(scaling, numbers.Real) or not 0 < float(scaling) < 1:
        raise ValueError(f"torchpair.{op}: 'scaling' must be a number in (0, 1), got {scaling!r}")
    scaling = float(scaling)
    rho = None if reach is None else _positive(op, "reach", reach) ** p
    for name, value in (("debias", debias), ("unrolled", unrolled), ("log", log)):
        _flag(op, name, value)
    if tol is not None:
        tol = _positive(op, "tol", tol)
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 0:
        raise ValueError(f"torchpair.{op}: 'max_iter' must be an int >= 0, got {max_iter!r}")
    if metric is not None and not isinstance(metric, str):
        raise TypeError(f"torchpair.{op}: 'metric' must be a str or None, got {type(metric).__name__}")
    if metric_p is not None:  # the minkowski exponent (p is the transport exponent)
        params["p"] = metric_p
    kw = _params.normalize(op, params, X.device) if params else {}
    if metric is None and kw:
        raise TypeError(f"torchpair.{op}: metric parameters {sorted(kw)} need a 'metric' (metric=None is "
                        "|x - y|^p / p)")
    for name, w in (("a", a), ("b", b)):
        if w is not None and not isinstance(w, torch.Tensor):
            raise TypeError(f"torchpair.{op}: {name!r} must be a tensor or None, got {type(w).__name__}")
    if diameter is not None:
        diameter = _positive(op, "diameter", diameter)
    if mass_tol is not None:
        mass_tol = _positive(op, "mass_tol", mass_tol)
    eager = not torch.compiler.is_compiling()
    if not eager and diameter is None:
        raise ValueError(f"torchpair.{op}: under torch.compile / torch.export pass 'diameter' (the length of the "
                         "epsilon schedule depends on it, and it is data-dependent otherwise)")
    value, err, niter, f_ba, g_ab, f_aa, g_bb = torch.ops.torchpair.sinkhorn_divergence(
        X, Y, a, b, exponent=p, blur=blur, scaling=scaling, reach=reach, metric=metric, diameter=diameter,
        debias=debias, tol=tol, max_iter=max_iter, unrolled=unrolled, eager=eager, mass_tol=mass_tol, warn=False,
        **kw)
    # the operator's TORCH_WARN would not reach the warnings module: warn here
    if eager and tol is not None and not bool((err < tol).all()):
        warnings.warn(f"torchpair.{op}: the marginal error {float(err.max()):.3g} is still above tol = {tol:g} "
                      f"after max_iter = {max_iter} iterations at eps = blur^p; raise max_iter or blur", UserWarning,
                      stacklevel=2)
    if log:
        info = {"niter": int(niter) if eager else niter, "err": err, "f_ba": f_ba, "g_ab": g_ab}
        if debias:
            info.update(f_aa=f_aa, g_bb=g_bb)
        return value, info
    return value
