"""The base class of every pairwise expression: the consumers, their argument checks and
their result layout, written once.

A subclass describes *where* K lives: ``shape``, ``dtype``, ``device``, ``to_dense()``, ``T``,
and one method, ``_consume(consumer, *args)``, that runs a *core consumer* and returns its
result in the native operators' layout:

======================================== ====================================================
core consumer and arguments              result
======================================== ====================================================
``"matmul", V``                          ``K @ V``
``"reduce", reduction, dim, **args``     a row reduction (or "mean") over dim -1 or -2; dim
                                         None: over both matrix dims, per batch element
                                         (``[...]``); ``args``: the reduction's own keyword
                                         arguments (those of ``lazy_reduce``)
``"topk", k, dim, largest, nan``         ``(values, indices)`` ``[..., rows, k]`` (k last for
                                         either dim), best first, ties to the lowest index;
                                         ``nan``: "largest" (torch.topk) or "propagate"
                                         (torch.min/max, k = 1)
``"softmax_matmul", V, dim``             ``sum_j softmax_j(K_ij) V_j`` (dim -1) or its column twin
======================================== ====================================================

:class:`torchpair.LazyPairwise` runs them through ``torchpair.backends.dispatch`` (native or a
registered backend), :class:`torchpair.DensePairwise` with torch on the materialized matrix,
the sharded expression (``torchpair.distributed``) by merging per-rank results, the sequence
expression (``tp.seq.lazy``) with the sequence operators. The public methods below check
their arguments (``k``, ``dim``, ``largest``, ``sorted``) and shape the result as torch does,
the same way for all four.

Adding a consumer: one public method here (its checks and result layout) calling
``self._consume("<name>", ...)``, plus that core consumer's implementation where each
subclass finds it (the native backend in ``torchpair/backends.py``, the dense table in
``torchpair/lazy.py``). A subclass that runs only some core consumers lists them in
``_consumers``; the other methods raise a clear ``NotImplementedError`` naming the method.

Adding a row reduction (one row of the native table, csrc/reductions/row_reductions.h): one
public method here calling ``self._consume("reduce", "<name>", dim, **arguments)`` and its
torch formula in :data:`DENSE_REDUCTIONS`; the backends and the dense expression need no
change. A reduction with arguments is its own entry in ``_consumers`` (a subclass that merges
partial results knows each one it merges: "reduce" covers sum, mean and logsumexp).
"""
from __future__ import annotations

import math
import numbers

import torch


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _dense_logsumexp(k, dims, scale=1.0, log_weight=None):
    if scale == 1.0 and log_weight is None:
        return torch.logsumexp(k, dims)
    arg = k * scale  # scale and log_weight come with an int dim (-1 or -2)
    if log_weight is not None:
        arg = arg + (log_weight.unsqueeze(-2) if dims == -1 else log_weight.unsqueeze(-1))
    return torch.logsumexp(arg, dims)


#: The row reductions on a materialized K: name -> fn(K, dims, **arguments), dims an int (-1 or
#: -2) or (-2, -1) for both matrix dims; the torch twins of the native ones
#: (``torchpair.lazy.DensePairwise``).
DENSE_REDUCTIONS = {
    "sum": lambda k, dims: k.sum(dims),
    "mean": lambda k, dims: k.mean(dims),
    "logsumexp": _dense_logsumexp,
    "count": lambda k, dims, threshold: (k <= threshold).sum(dims),
}


class PairwiseExpressionBase:
    """What every pairwise expression shares: metadata, argument checks and the consumers.

    ``_api`` is the public name prefix used in error messages (``torchpair.<_api><method>``).
    """

    _api = ""
    #: the core consumers the subclass runs (None: all of them)
    _consumers: frozenset | None = None

    # -- what a subclass provides ---------------------------------------------------------
    @property
    def shape(self) -> torch.Size:  # pragma: no cover - abstract
        raise NotImplementedError

    def _consume(self, consumer: str, *args, **kwargs):
        raise self._unsupported(consumer)

    def _unsupported(self, method: str) -> NotImplementedError:
        return NotImplementedError(f"{self._fn(method)}: {type(self).__name__} does not support {method}() "
                                   "(it streams only " + ", ".join(sorted(self._consumers or ())) + ")")

    def _require(self, method: str, consumer: str) -> None:
        """A public method needs core consumer ``consumer``: a clear error, before any argument
        check, when this expression does not run it."""
        if self._consumers is not None and consumer not in self._consumers:
            raise self._unsupported(method)

    # -- metadata -------------------------------------------------------------------------
    def _fn(self, what: str) -> str:
        return f"torchpair.{self._api}{what}"

    def size(self, dim: int | None = None):
        if dim is None:
            return self.shape
        if not _is_int(dim):
            raise TypeError(f"{self._fn('size')}: 'dim' must be an int or None, got {type(dim).__name__}")
        if not -self.ndim <= dim < self.ndim:
            raise ValueError(f"{self._fn('size')}: 'dim' {dim} is out of range for a {self.ndim}-D expression")
        return self.shape[dim]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return self.ndim

    def __matmul__(self, V):
        return self.matmul(V)

    def mT(self):  # noqa: N802 - torch's name (a method here, as the C++ API's t())
        return self.T

    # -- argument checks (one definition for every expression) ----------------------------
    def _check_dim(self, dim, what: str, allow_none: bool = False):
        """-1 (per row) or -2 (per column) for one of the last two dims; None if allowed."""
        if dim is None and allow_none:
            return None
        if not _is_int(dim):
            raise TypeError(f"{self._fn(what)}: 'dim' must be an int{' or None' if allow_none else ''}, "
                            f"got {type(dim).__name__}")
        nd = self.ndim
        if not -nd <= dim < nd:
            raise ValueError(f"{self._fn(what)}: 'dim' {dim} is out of range for a {nd}-D expression")
        d = int(dim) % nd
        if d < nd - 2:
            raise ValueError(f"{self._fn(what)}: 'dim' must be one of the last two dimensions (-1 per row, -2 per "
                             f"column), got {dim}")
        return d - nd

    def _check_bool(self, value, name: str, what: str) -> None:
        if not isinstance(value, bool):
            raise TypeError(f"{self._fn(what)}: {name!r} must be a bool, got {type(value).__name__}")

    def _check_k(self, k, what: str, d: int) -> int:
        if not _is_int(k):
            raise TypeError(f"{self._fn(what)}: 'k' must be an int, got {type(k).__name__}")
        size = self.shape[d]
        if k < 0:
            raise ValueError(f"{self._fn(what)}: 'k' must be >= 0, got {k}")
        if k > size:
            raise ValueError(f"{self._fn(what)}: 'k' ({k}) must not exceed the size of dimension {d} ({size})")
        return int(k)

    def _check_nonempty(self, what: str, d: int) -> None:
        if self.shape[d] == 0:
            raise ValueError(f"{self._fn(what)}: cannot reduce over 'dim' {d}, which has size 0 (no {what} of an "
                             "empty set)")

    def _check_tensor(self, what: str, name: str, value) -> None:
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{self._fn(what)}: {name!r} must be a torch.Tensor, got {type(value).__name__}")
        if value.is_nested or value.layout != torch.strided:
            got = "a nested tensor" if value.is_nested else f"layout {value.layout}"
            raise TypeError(f"{self._fn(what)}: {name!r} must be a dense (strided) tensor, got {got}")

    # -- consumers --------------------------------------------------------------------------
    def matmul(self, V: torch.Tensor) -> torch.Tensor:
        """K @ V: ``V [..., M, C]`` (or ``[M]``) -> ``[..., N, C]`` (or ``[..., N]``)."""
        self._require("matmul", "matmul")
        self._check_tensor("matmul", "V", V)
        return self._consume("matmul", V)

    def _reduction(self, reduction: str, dim):
        self._require(reduction, "reduce")
        d = self._check_dim(dim, reduction, allow_none=True)
        out = self._consume("reduce", reduction, d)
        if d is None and out.dim() > 0:  # every dimension, batch included (torch.Tensor.sum())
            if reduction == "sum":
                return out.sum()
            if reduction == "mean":  # every batch element has the same number of entries
                return out.mean()
            return torch.logsumexp(out.reshape(-1), 0)
        return out

    def sum(self, dim: int | None = None) -> torch.Tensor:
        """Sum over ``dim`` (-1: per row ``[..., N]``; -2: per column ``[..., M]``); None: over
        every dimension, batch included (a 0-d tensor, as ``torch.Tensor.sum()``)."""
        return self._reduction("sum", dim)

    def mean(self, dim: int | None = None) -> torch.Tensor:
        """Mean over ``dim`` (-1, -2, or None for every dimension, batch included); NaN over an
        empty set, as torch.mean."""
        return self._reduction("mean", dim)

    def logsumexp(self, dim: int | None = None, *, scale: float = 1.0,
                  log_weight: torch.Tensor | None = None) -> torch.Tensor:
        """``log(sum(exp(K)))`` over ``dim`` (-1, -2, or None for every dimension, batch
        included), computed online (stable); -inf over an empty set.

        With ``scale`` and/or ``log_weight`` (``[..., L]``, L the size of the reduced dimension;
        they need ``dim``): ``log(sum_j exp(scale * K_ij + log_weight_j))``, a weighted softmin
        or softmax normaliser (a log-domain Sinkhorn half-step is ``scale = -1/eps``,
        ``log_weight = log b + g / eps``). Differentiable w.r.t. X, Y and ``log_weight``."""
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
            raise TypeError(f"{self._fn('logsumexp')}: 'scale' must be a float, got {type(scale).__name__}")
        if scale == 1.0 and log_weight is None:
            return self._reduction("logsumexp", dim)
        self._require("logsumexp", "weighted_logsumexp")
        if not math.isfinite(scale):
            raise ValueError(f"{self._fn('logsumexp')}: 'scale' must be finite, got {scale}")
        if dim is None:
            raise ValueError(f"{self._fn('logsumexp')}: 'scale' and 'log_weight' need 'dim' (-1 or -2)")
        d = self._check_dim(dim, "logsumexp")
        if log_weight is not None:
            self._check_tensor("logsumexp", "log_weight", log_weight)
            L = self.shape[d]
            if log_weight.dim() == 0 or log_weight.shape[-1] != L:
                got = "a 0-d tensor" if log_weight.dim() == 0 else f"{log_weight.shape[-1]} entries"
                raise ValueError(f"{self._fn('logsumexp')}: 'log_weight' has {got} but the reduced dimension has {L}")
        return self._consume("reduce", "logsumexp", d, scale=float(scale), log_weight=log_weight)

    def count(self, threshold: float, dim: int = -1) -> torch.Tensor:
        """How many entries along ``dim`` are ``<= threshold`` (-1: per row ``[..., N]``; -2: per
        column ``[..., M]``), int64, streamed: radius-neighbour counts, DBSCAN core points,
        correlation sums. NaN entries never count. Not differentiable (an integer result)."""
        self._require("count", "count")
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
            raise TypeError(f"{self._fn('count')}: 'threshold' must be a float, got {type(threshold).__name__}")
        return self._consume("reduce", "count", self._check_dim(dim, "count"), threshold=float(threshold))

    @staticmethod
    def _place(kind, values, indices, d: int):
        """[..., rows, k] -> k where dim was (as torch.topk puts it)."""
        if d == -2:
            values, indices = values.transpose(-1, -2), indices.transpose(-1, -2)
        return kind((values, indices))

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
        """The k largest (or smallest) entries along ``dim``, like ``torch.topk``: returns
        ``(values, indices)`` with k in place of ``dim``, best first, ties to the lowest index,
        NaN ranks as the largest value. Results are always sorted (``sorted=False`` allows any
        order, so a sorted result is one). Values are differentiable where the metric is."""
        self._require("topk", "topk")
        d = self._check_dim(dim, "topk")
        self._check_bool(largest, "largest", "topk")
        self._check_bool(sorted, "sorted", "topk")
        k = self._check_k(k, "topk", d)
        values, indices = self._consume("topk", k, d, largest, "largest")
        return self._place(torch.return_types.topk, values, indices, d)

    def _extreme(self, kind, what: str, dim, largest: bool):
        self._require(what, "topk")
        d = self._check_dim(dim, what)
        self._check_nonempty(what, d)
        values, indices = self._consume("topk", 1, d, largest, "propagate")
        return kind((values.squeeze(-1), indices.squeeze(-1)))

    def min(self, dim: int = -1):
        """``(values, indices)`` of the minimum along ``dim``, like ``torch.min(K, dim)``:
        lowest index on ties, NaN propagates (a row with NaN gives NaN and its index)."""
        return self._extreme(torch.return_types.min, "min", dim, False)

    def max(self, dim: int = -1):
        """``(values, indices)`` of the maximum along ``dim``, like ``torch.max(K, dim)``."""
        return self._extreme(torch.return_types.max, "max", dim, True)

    def argmin(self, dim: int = -1) -> torch.Tensor:
        return self.min(dim).indices

    def argmax(self, dim: int = -1) -> torch.Tensor:
        return self.max(dim).indices

    def softmax_matmul(self, V: torch.Tensor, dim: int = -1) -> torch.Tensor:
        """``sum_j softmax_j(K_ij) V_j`` (dim -1), streamed with an online softmax — attention and
        Nadaraya-Watson estimators without N x M. With dim -2 the softmax runs down the
        columns: ``sum_i softmax_i(K_ij) V_i``."""
        self._require("softmax_matmul", "softmax_matmul")
        self._check_tensor("softmax_matmul", "V", V)
        d = self._check_dim(dim, "softmax_matmul")
        return self._consume("softmax_matmul", V, d)
