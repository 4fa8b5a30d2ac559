"""Loss modules for training: thin ``torch.nn.Module`` wrappers over the set-level functions.

Each module stores the function's options at construction and calls the function in
``forward(X, Y)`` (``SinkhornLoss`` also takes weights ``a``, ``b``), so gradients, batching,
compile and export are those of the function. ``reduction`` reduces over the batch
(leading) dimensions of the per-problem values: ``"mean"`` (default), ``"sum"`` or ``"none"``
(the ``[...]`` tensor of values).
"""
from __future__ import annotations

import torch

from .divergence import sinkhorn_divergence
from .sets import chamfer, energy_distance, hausdorff, mmd

__all__ = ["SinkhornLoss", "MMDLoss", "ChamferLoss", "EnergyLoss", "HausdorffLoss"]


def _check_reduction(module: str, reduction) -> str:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"torchpair.nn.{module}: 'reduction' must be \"mean\", \"sum\" or \"none\", got {reduction!r}")
    return reduction


def _reduce(values: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return values.mean()
    if reduction == "sum":
        return values.sum()
    return values


class _SetLoss(torch.nn.Module):
    def __init__(self, reduction: str, options: dict):
        super().__init__()
        self.reduction = _check_reduction(type(self).__name__, reduction)
        self.options = options

    def extra_repr(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"{opts}, reduction={self.reduction!r}" if opts else f"reduction={self.reduction!r}"


class SinkhornLoss(_SetLoss):
    """``tp.sinkhorn_divergence(X, Y, a, b, p, blur, scaling, reach, metric, **options)``
    (GeomLoss' ``SamplesLoss("sinkhorn")``), reduced over the batch."""

    def __init__(self, p: float = 2, blur: float = 0.05, scaling: float = 0.5, reach: float | None = None,
                 metric: str | None = None, reduction: str = "mean", **options):
        super().__init__(reduction, dict(p=p, blur=blur, scaling=scaling, reach=reach, metric=metric, **options))

    def forward(self, X: torch.Tensor, Y: torch.Tensor, a: torch.Tensor | None = None,
                b: torch.Tensor | None = None) -> torch.Tensor:
        return _reduce(sinkhorn_divergence(X, Y, a, b, **self.options), self.reduction)


class MMDLoss(_SetLoss):
    """Squared MMD ``tp.mmd(X, Y, metric, unbiased, **params)``, reduced over the batch."""

    def __init__(self, metric: str = "rbf", unbiased: bool = False, reduction: str = "mean", **params):
        super().__init__(reduction, dict(metric=metric, unbiased=unbiased, **params))

    def forward(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        return _reduce(mmd(X, Y, **self.options), self.reduction)


class ChamferLoss(_SetLoss):
    """``tp.chamfer(X, Y, metric, reduction=point_reduction, **params)`` (``point_reduction``:
    mean or sum over the points of each cloud), reduced over the batch by ``reduction``."""

    def __init__(self, metric: str = "sqeuclidean", point_reduction: str = "mean", reduction: str = "mean",
                 **params):
        super().__init__(reduction, dict(metric=metric, reduction=point_reduction, **params))

    def forward(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        return _reduce(chamfer(X, Y, **self.options), self.reduction)


class EnergyLoss(_SetLoss):
    """Energy distance ``tp.energy_distance(X, Y, metric, **params)``, reduced over the batch."""

    def __init__(self, metric: str = "euclidean", reduction: str = "mean", **params):
        super().__init__(reduction, dict(metric=metric, **params))

    def forward(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        return _reduce(energy_distance(X, Y, **self.options), self.reduction)


class HausdorffLoss(_SetLoss):
    """Hausdorff distance ``tp.hausdorff(X, Y, metric, directed, **params)``, reduced over the batch."""

    def __init__(self, metric: str = "euclidean", directed: bool = False, reduction: str = "mean", **params):
        super().__init__(reduction, dict(metric=metric, directed=directed, **params))

    def forward(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        return _reduce(hausdorff(X, Y, **self.options), self.reduction)
