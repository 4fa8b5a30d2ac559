"""Set-level consumers: k-nearest neighbours, Hausdorff, Chamfer, MMD and energy distance.

Each is one native operator built on the streamed consumers, so none holds an N x M matrix,
forward or backward, and each is differentiable with respect to X and Y. Leading (batch)
dimensions of X and Y broadcast. Conventions for empty sets: docs/conventions.md. Each runs
through the current backend (``torchpair.backends.dispatch``).
"""
from __future__ import annotations

import torch

from . import _params
from .backends import dispatch


@_params.public("knn")
def knn(X: torch.Tensor, Y: torch.Tensor | None, k: int, metric: str = "euclidean", **params):
    """The k nearest rows of Y for every row of X: ``(values, indices)`` of shape ``[..., N, k]``,
    nearest first (smallest distance, or largest similarity for a kernel). Ties go to the
    lowest index. ``Y=None`` searches X itself (each point is its own nearest neighbour)."""
    _params.check_operands("knn", X, Y, metric)
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"torchpair.knn: 'k' must be an int, got {type(k).__name__}")
    p = _params.normalize("knn", params, X.device)
    return torch.return_types.topk(dispatch("knn", X, Y, k, metric, p))


@_params.public("hausdorff")
def hausdorff(X: torch.Tensor, Y: torch.Tensor, metric: str = "euclidean", directed: bool = False, **params):
    """Hausdorff distance between the row sets X and Y: ``max_i min_j d(x_i, y_j)`` when
    ``directed`` (scipy's ``directed_hausdorff`` value), else the max of both directions."""
    _params.check_operands("hausdorff", X, Y, metric, y_optional=False)
    if not isinstance(directed, bool):
        raise TypeError(f"torchpair.hausdorff: 'directed' must be a bool, got {type(directed).__name__}")
    p = _params.normalize("hausdorff", params, X.device)
    return dispatch("hausdorff", X, Y, metric, directed, p)


@_params.public("chamfer")
def chamfer(X: torch.Tensor, Y: torch.Tensor, metric: str = "sqeuclidean", reduction: str = "mean", **params):
    """Chamfer distance: ``mean_i min_j d(x_i, y_j) + mean_j min_i d(x_i, y_j)`` (``reduction=
    "sum"``: sums instead of means), as point-cloud losses use it."""
    _params.check_operands("chamfer", X, Y, metric, y_optional=False)
    if not isinstance(reduction, str):
        raise TypeError(f"torchpair.chamfer: 'reduction' must be \"mean\" or \"sum\", got {type(reduction).__name__}")
    p = _params.normalize("chamfer", params, X.device)
    return dispatch("chamfer", X, Y, metric, reduction, p)


@_params.public("mmd")
def mmd(X: torch.Tensor, Y: torch.Tensor, metric: str = "rbf", unbiased: bool = False, **params):
    """Squared maximum mean discrepancy with any kernel of the catalog:
    ``E k(x, x') + E k(y, y') - 2 E k(x, y)`` (V-statistics; ``unbiased=True``: U-statistics,
    the within-set means leave out the diagonal)."""
    _params.check_operands("mmd", X, Y, metric, y_optional=False)
    if not isinstance(unbiased, bool):
        raise TypeError(f"torchpair.mmd: 'unbiased' must be a bool, got {type(unbiased).__name__}")
    p = _params.normalize("mmd", params, X.device)
    return dispatch("mmd", X, Y, metric, unbiased, p)


@_params.public("energy_distance")
def energy_distance(X: torch.Tensor, Y: torch.Tensor, metric: str = "euclidean", **params):
    """Energy distance ``sqrt(2 E d(X, Y) - E d(X, X') - E d(Y, Y'))`` (scipy.stats'
    ``energy_distance`` in 1-D; V-statistics)."""
    _params.check_operands("energy_distance", X, Y, metric, y_optional=False)
    p = _params.normalize("energy_distance", params, X.device)
    return dispatch("energy_distance", X, Y, metric, p)
