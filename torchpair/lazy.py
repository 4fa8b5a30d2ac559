"""Lazy pairwise expressions: K = metric(X, Y) that is never materialized.

``tp.lazy(X, Y, metric, **params)`` returns a :class:`LazyPairwise`; each consumer
(``.matmul(V)``, ``.sum(dim)``, ...) is one native operator that streams over tiles of K with
O(tile) extra memory, forward and backward. ``tp.pairwise_expression(..., lazy=False)``
returns the materialized twin (:class:`DensePairwise`) with the same consumers.
"""
from __future__ import annotations

import torch

from . import _catalog, _params
from . import backends as _backends
from . import sequences as _sequences
from ._expression import DENSE_REDUCTIONS, PairwiseExpressionBase


#: Validation keys (LazyPairwise._validation_key) that passed the operator's check. The check
#: runs the operator on meta tensors, so its verdict depends on nothing else; on a small input
#: it costs more than the consumer itself, and a loop that builds the same expression on new
#: tensors of the same shapes (a training step) pays it once. Failures are not kept: a bad
#: expression raises every time. Bounded: cleared when full.
_VALIDATED: set = set()
_VALIDATED_LIMIT = 4096


def _broadcast_batch(x: torch.Tensor, y: torch.Tensor | None) -> torch.Size:
    if y is None:
        return x.shape[:-2]
    try:
        return _params.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except RuntimeError as exc:
        raise ValueError(
            f"torchpair.lazy: the batch dimensions of 'X' {tuple(x.shape[:-2])} and 'Y' {tuple(y.shape[:-2])} "
            "do not broadcast"
        ) from exc


class _PairwiseExpression(PairwiseExpressionBase):
    """What lazy and materialized expressions share: operands, shape, metadata."""

    _op = "lazy"

    def __init__(self, X, Y, metric, params, transposed=False):
        _params.check_operands(self._op, X, Y, metric)
        for name, t in (("X", X), ("Y", Y)):
            if t is not None and t.dim() < 2:
                raise ValueError(
                    f"torchpair.{self._op}: {name!r} must have shape [..., rows, features], got {tuple(t.shape)}"
                )
        self.X, self.Y, self.metric = X, Y, metric
        self.params = _params.normalize(self._op, params, X.device)
        self.transposed = transposed
        self._batch = _broadcast_batch(X, Y)

    @property
    def shape(self) -> torch.Size:
        n = self.X.shape[-2]
        m = (self.X if self.Y is None else self.Y).shape[-2]
        return torch.Size((*self._batch, *((m, n) if self.transposed else (n, m))))

    @property
    def device(self) -> torch.device:
        return self.X.device

    def _check_v(self, what: str, V, d: int = -1) -> None:
        """V of K @ V (d = -1) or of the column softmax (d = -2): rows, dtype, device."""
        rows = self.shape[-1] if d == -1 else self.shape[-2]
        if V.dim() == 0:
            raise ValueError(f"torchpair.{what}: 'V' must have shape [..., {rows}, C] or [{rows}], got a 0-d tensor")
        got = V.shape[0] if V.dim() == 1 else V.shape[-2]
        if got != rows:
            raise ValueError(f"torchpair.{what}: 'V' has {got} rows but the operator has {rows} "
                             f"(K is {tuple(self.shape)})")
        if V.device != self.device:
            raise ValueError(f"torchpair.{what}: 'V' is on {V.device} but 'X' is on {self.device}")
        if V.dtype != self.dtype:
            raise TypeError(f"torchpair.{what}: 'V' has dtype {V.dtype} but K has {self.dtype}")

    def __repr__(self) -> str:
        params = "".join(f", {k}={v!r}" if not isinstance(v, torch.Tensor) else f", {k}=<tensor>" for k, v in
                         self.params.items())
        kind = type(self).__name__
        return f"{kind}(shape={tuple(self.shape)}, metric={self.metric!r}{params}{', transposed' if self.transposed else ''})"


class LazyPairwise(_PairwiseExpression):
    """K = metric(X, Y) [..., N, M], never materialized. Consumers stream over tiles, through
    the current backend (``torchpair.backends.dispatch``: native operators unless inside
    ``tp.backend(...)``)."""

    _op = "lazy"

    def __init__(self, X, Y, metric, params, transposed=False):
        super().__init__(X, Y, metric, params, transposed)
        if not torch.compiler.is_compiling():
            self._validate()

    def _validate(self) -> None:
        # Run the operator's own validation (metric, parameters, dtypes, shapes) on meta
        # tensors now, so a bad expression fails where it is built, not at first use.
        key = self._validation_key()
        if key is not None and key in _VALIDATED:
            return

        def meta(t):
            return None if t is None else torch.empty(t.shape, dtype=t.dtype, device="meta")

        params = {k: meta(v) if isinstance(v, torch.Tensor) else v for k, v in self.params.items()}
        try:
            torch.ops.torchpair.lazy_reduce(meta(self.X), meta(self.Y), self.metric, "sum", -1, self.transposed,
                                            **params)
        except (ValueError, TypeError) as exc:  # name tp.lazy, not the operator run for the check
            raise _params.renamed(exc, self._op) from None
        if key is not None:
            if len(_VALIDATED) >= _VALIDATED_LIMIT:
                _VALIDATED.clear()
            _VALIDATED.add(key)

    def _validation_key(self):
        """What the meta-tensor check sees: the metric, the orientation, the operands' and
        tensor parameters' shapes and dtypes, the other parameters' values; None where a
        shape is symbolic or a value unhashable (the check then runs every time)."""
        def of(t):
            if t is None:
                return None
            shape = tuple(t.shape)
            if not all(type(s) is int for s in shape):
                raise TypeError("symbolic shape")
            return shape, t.dtype

        try:
            key = (self.metric, self.transposed, of(self.X), of(self.Y),
                   *((name, of(v) if isinstance(v, torch.Tensor) else v) for name, v in self.params.items()))
            hash(key)
        except TypeError:
            return None
        return key

    def _consume(self, consumer: str, *args, **kwargs):
        return _backends.dispatch(consumer, self, *args, **kwargs)

    @property
    def dtype(self) -> torch.dtype:
        Y = self.X if self.Y is None else self.Y
        return _catalog.info(self.metric).output_dtype(self.X.dtype, Y.dtype)

    @property
    def T(self) -> "LazyPairwise":
        e = object.__new__(LazyPairwise)
        e.__dict__.update(self.__dict__)
        e.transposed = not self.transposed
        return e

    def to_dense(self) -> torch.Tensor:
        """The materialized ``[..., N, M]`` tensor (this one does hold N x M)."""
        k = torch.ops.torchpair.pairwise(self.X, self.Y, self.metric, **self.params)
        return k.transpose(-1, -2) if self.transposed else k


class _Dense:
    """The core consumers on a materialized matrix (torch), in the native result layout."""

    @staticmethod
    def matmul(e, V):
        e._check_v("matmul", V)
        return torch.matmul(e.to_dense(), V)

    @staticmethod
    def reduce(e, reduction, dim, **args):
        return DENSE_REDUCTIONS[reduction](e.to_dense(), (-2, -1) if dim is None else dim, **args)

    @staticmethod
    def topk(e, k, dim, largest, nan):
        K = e.to_dense()
        if nan == "propagate":  # torch.min / torch.max: NaN propagates
            values, indices = (torch.max if largest else torch.min)(K, dim=dim, keepdim=True)
        else:
            values, indices = torch.topk(K, k, dim=dim, largest=largest, sorted=True)
        if dim == -2:  # the native layout: [..., rows, k]
            values, indices = values.transpose(-1, -2), indices.transpose(-1, -2)
        return values, indices

    @staticmethod
    def softmax_matmul(e, V, dim):
        e._check_v("softmax_matmul", V, dim)
        p = torch.softmax(e.to_dense(), dim=dim)
        return torch.matmul(p if dim == -1 else p.transpose(-1, -2), V)


class DensePairwise(_PairwiseExpression):
    """The materialized twin of :class:`LazyPairwise`: K is computed once, consumers use torch."""

    _op = "pairwise_expression"

    def __init__(self, X, Y, metric, params, transposed=False, dense=None):
        super().__init__(X, Y, metric, params, transposed)
        self._dense = dense if dense is not None else torch.ops.torchpair.pairwise(X, Y, metric, **self.params)

    def _consume(self, consumer: str, *args, **kwargs):
        return getattr(_Dense, consumer)(self, *args, **kwargs)

    @property
    def dtype(self) -> torch.dtype:
        return self._dense.dtype

    @property
    def T(self) -> "DensePairwise":
        return DensePairwise(self.X, self.Y, self.metric, self.params, not self.transposed, self._dense)

    def to_dense(self) -> torch.Tensor:
        return self._dense.transpose(-1, -2) if self.transposed else self._dense


def lazy(X: torch.Tensor, Y: torch.Tensor | None = None, metric: str = "euclidean", **params) -> LazyPairwise:
    """A lazy pairwise expression ``K = metric(X, Y)`` of shape ``[..., N, M]``.

    Consumers (``K @ V``, ``K.sum(dim)``, ...) stream over tiles and never hold N x M; their
    gradients stream too. ``Y=None`` compares X with itself. Sequence metrics (``tp.seq``)
    give a :class:`torchpair.sequences.LazySequences`.
    """
    if _sequences.routes("lazy", metric, X, params):  # token sequences (tp.seq)
        return _sequences.lazy(X, Y, metric, **params)
    return LazyPairwise(X, Y, metric, params)


def pairwise_expression(X: torch.Tensor, Y: torch.Tensor | None = None, metric: str = "euclidean",
                        lazy: bool = True, **params):
    """The Python twin of C++ ``tp::pairwise_expression(X, Y, metric, lazy, options)``:
    a :class:`LazyPairwise` (``lazy=True``) or a :class:`DensePairwise` with the same consumers."""
    if not isinstance(lazy, bool):
        raise TypeError(f"torchpair.pairwise_expression: 'lazy' must be a bool, got {type(lazy).__name__}")
    return LazyPairwise(X, Y, metric, params) if lazy else DensePairwise(X, Y, metric, params)
