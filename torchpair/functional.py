"""Dense pairwise results: tp.pairwise / tp.cdist."""
from __future__ import annotations

import torch

from . import _fast, _params
from . import sequences as _sequences


def pairwise(X: torch.Tensor, Y: torch.Tensor | None = None, metric: str = "euclidean", **params) -> torch.Tensor:
    """Compare every row of ``X`` with every row of ``Y``.

    Args:
        X: ``[..., N, D]`` floating tensor.
        Y: ``[..., M, D]`` (batch dims broadcast with X), or None for X against itself
            (then self-comparisons on the diagonal are exact).
        metric: a name from :func:`torchpair.metrics` (scipy/sklearn names and aliases).
        **params: the metric's parameters (e.g. ``gamma`` for ``"rbf"``; sklearn defaults), and
            ``compute_mode`` (torch.cdist's values; ``"donot_use_mm_for_euclid_dist"``: exact
            zeros for equal rows in the euclidean family and cosine/correlation, see
            docs/contracts.md).

    Returns:
        ``[..., N, M]`` tensor, differentiable with respect to X and Y where the metric is.
    """
    return _pairwise("pairwise", X, Y, metric, params)


def cdist(XA: torch.Tensor, XB: torch.Tensor | None = None, metric: str = "euclidean", **params) -> torch.Tensor:
    """scipy's name for :func:`pairwise` (``scipy.spatial.distance.cdist(XA, XB, metric)``)."""
    return _pairwise("cdist", XA, XB, metric, params)


def _pairwise(name: str, X, Y, metric, params: dict) -> torch.Tensor:
    # errors name `name`, the function the user called, not the operator (or tp.seq) inside
    try:
        # A plain eager call: routes() and check_operands() below would pass it (without
        # keywords, only a sequence-only name routes to tp.seq).
        if not params and type(metric) is str and _fast.plain(X, Y) and metric not in _sequences.SEQUENCE_ONLY:
            return _fast.pairwise(X, Y, metric)
        if _sequences.routes(name, metric, X, params):  # token sequences (tp.seq)
            return _sequences.pairwise(X, Y, metric, **params)
        _params.check_operands(name, X, Y, metric)
        kwargs = _params.normalize(name, params, X.device) if params else {}
        return torch.ops.torchpair.pairwise.default(X, Y, metric, **kwargs)
    except (ValueError, TypeError) as exc:
        raise _params.renamed(exc, name) from None


def pdist(X: torch.Tensor, metric: str = "euclidean", **params) -> torch.Tensor:
    """Condensed distances between the rows of ``X`` (``scipy.spatial.distance.pdist``).

    Args:
        X: ``[..., N, D]`` floating tensor.
        metric: a name from :func:`torchpair.metrics`.
        **params: the metric's parameters.

    Returns:
        ``[..., N * (N - 1) // 2]``: ``K(x_i, x_j)`` for ``i < j`` in scipy's order (row-major
        upper triangle). Only that half is computed and stored; differentiable where the
        metric is.
    """
    try:
        if _sequences.routes("pdist", metric, X, params):  # token sequences (tp.seq)
            return _sequences.pdist(X, metric, **params)
        _params.check_operands("pdist", X, None, metric)
        kwargs = _params.normalize("pdist", params, X.device) if params else {}
        return torch.ops.torchpair.pdist.default(X, metric, **kwargs)
    except (ValueError, TypeError) as exc:
        raise _params.renamed(exc, "pdist") from None
