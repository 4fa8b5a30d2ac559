"""Lazy pairwise expressions: K = metric(X, Y) that is never materialized.

``tp.lazy(X, Y, metric, **params)`` returns a :class:`LazyPairwise`; each consumer
(``.matmul(V)``, ``.sum(dim)``, ...) is one native operator that streams over tiles of K with
O(tile) extra memory, forward and backward. ``tp.pairwise_expression(..., lazy=False)``
returns the materialized twin (:class:`DensePairwise`) with the same consumers.
"""
from __future__ import annotations

import torch

from . import _keops, _params
from . import sequences as _sequences


def _broadcast_batch(x: torch.Tensor, y: torch.Tensor | None) -> torch.Size:
    if y is None:
        return x.shape[:-2]
    try:
        return torch.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except RuntimeError as exc:
        raise ValueError(
            f"torchpair.lazy: the batch dimensions of 'X' {tuple(x.shape[:-2])} and 'Y' {tuple(y.shape[:-2])} "
            "do not broadcast"
        ) from exc


def _moveaxis_result(kind, values, indices, dim, ndim, squeeze=False):
    """The operator returns [..., rows, k] for the reduced dim; put k where dim was (as
    torch.topk does) or drop it (torch.min/max)."""
    d = dim % ndim
    if squeeze:
        return kind((values.squeeze(-1), indices.squeeze(-1)))
    if d == ndim - 2:  # reduced over rows: [..., M, k] -> [..., k, M]
        values, indices = values.transpose(-1, -2), indices.transpose(-1, -2)
    return kind((values, indices))


class _PairwiseExpression:
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

    # -- metadata -----------------------------------------------------------------------
    @property
    def shape(self) -> torch.Size:
        n = self.X.shape[-2]
        m = (self.X if self.Y is None else self.Y).shape[-2]
        return torch.Size((*self._batch, *((m, n) if self.transposed else (n, m))))

    def size(self, dim: int | None = None):
        if dim is None:
            return self.shape
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"torchpair.size: 'dim' must be an int or None, got {type(dim).__name__}")
        if not -self.ndim <= dim < self.ndim:
            raise ValueError(f"torchpair.size: 'dim' {dim} is out of range for a {self.ndim}-D expression")
        return self.shape[dim]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return self.ndim

    @property
    def device(self) -> torch.device:
        return self.X.device

    def _normalize_dim(self, dim: int, what: str) -> int:
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"torchpair.{what}: 'dim' must be an int or None, got {type(dim).__name__}")
        nd = self.ndim
        if not -nd <= dim < nd:
            raise ValueError(f"torchpair.{what}: 'dim' {dim} is out of range for a {nd}-D expression")
        d = dim % nd
        if d < nd - 2:
            raise ValueError(
                f"torchpair.{what}: 'dim' must be one of the last two dimensions (-1 per row, -2 per column), "
                f"got {dim}"
            )
        return d - nd

    def __matmul__(self, V):
        return self.matmul(V)

    def mT(self):  # noqa: N802 - torch's name
        return self.T

    def _check_topk_args(self, what: str, k, dim: int, largest) -> int:
        """k, largest and dim of a selection consumer (the lazy operator's checks, in Python)."""
        if not isinstance(k, int) or isinstance(k, bool):
            raise TypeError(f"torchpair.{what}: 'k' must be an int, got {type(k).__name__}")
        if not isinstance(largest, bool):
            raise TypeError(f"torchpair.{what}: 'largest' must be a bool, got {type(largest).__name__}")
        d = self._normalize_dim(dim, what)
        size = self.shape[d]
        if k < 0:
            raise ValueError(f"torchpair.{what}: 'k' must be >= 0, got {k}")
        if k > size:
            raise ValueError(f"torchpair.{what}: 'k' ({k}) must not exceed the size of dimension {d} ({size})")
        return d

    def _check_nonempty(self, what: str, d: int) -> None:
        if self.shape[d] == 0:
            raise ValueError(f"torchpair.{what}: cannot reduce over 'dim' {d}, which has size 0 (no {what} of an "
                             "empty set)")

    def _check_v(self, what: str, V, d: int = -1) -> None:
        """V of K @ V (d = -1) or of the column softmax (d = -2): rows, dtype, device."""
        _params.check_tensor(what, "V", V)
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
    """K = metric(X, Y) [..., N, M], never materialized. Consumers stream over tiles."""

    _op = "lazy"

    def __init__(self, X, Y, metric, params, transposed=False):
        super().__init__(X, Y, metric, params, transposed)
        if not torch.compiler.is_compiling():
            self._validate()

    def _validate(self) -> None:
        # Run the operator's own validation (metric, parameters, dtypes, shapes) on meta
        # tensors now, so a bad expression fails where it is built, not at first use.
        def meta(t):
            return None if t is None else torch.empty(t.shape, dtype=t.dtype, device="meta")

        params = {k: meta(v) if isinstance(v, torch.Tensor) else v for k, v in self.params.items()}
        try:
            torch.ops.torchpair.lazy_reduce(meta(self.X), meta(self.Y), self.metric, "sum", -1, self.transposed,
                                            **params)
        except (ValueError, TypeError) as exc:  # name tp.lazy, not the operator run for the check
            raise _params.renamed(exc, self._op) from None

    @property
    def dtype(self) -> torch.dtype:
        from ._catalog import metric_info
        info = metric_info(self.metric)
        if info["family"] == "boolean":  # docs/contracts.md: float32, float64 if an input is, bool for `equal`
            if info["output"] == "bool":
                return torch.bool
            dtypes = {self.X.dtype, (self.X if self.Y is None else self.Y).dtype}
            return torch.float64 if torch.float64 in dtypes else torch.float32
        return self.X.dtype

    @property
    def T(self) -> "LazyPairwise":
        e = object.__new__(LazyPairwise)
        e.__dict__.update(self.__dict__)
        e.transposed = not self.transposed
        return e

    def mT(self) -> "LazyPairwise":  # noqa: N802 - torch's name
        return self.T

    def matmul(self, V: torch.Tensor) -> torch.Tensor:
        """K @ V: ``V [..., M, C]`` (or ``[M]``) -> ``[..., N, C]`` (or ``[..., N]``), streamed."""
        _params.check_tensor("matmul", "V", V)
        if _keops.requested() and (out := _keops.matmul(self, V)) is not None:
            return out
        return torch.ops.torchpair.lazy_matmul(self.X, self.Y, V, self.metric, self.transposed, **self.params)

    def _reduce(self, reduction: str, dim: int | None) -> torch.Tensor:
        d = None if dim is None else self._normalize_dim(dim, reduction)
        if _keops.requested() and (out := _keops.reduce(self, reduction, d)) is not None:
            return out
        return torch.ops.torchpair.lazy_reduce(self.X, self.Y, self.metric, reduction, d, self.transposed,
                                              **self.params)

    def sum(self, dim: int | None = None) -> torch.Tensor:
        """Sum over ``dim`` (-1: per row ``[..., N]``; -2: per column ``[..., M]``; None: all)."""
        return self._reduce("sum", dim)

    def mean(self, dim: int | None = None) -> torch.Tensor:
        """Mean over ``dim`` (-1, -2 or None for all); NaN over an empty set, as torch.mean."""
        return self._reduce("mean", dim)

    def logsumexp(self, dim: int | None = None) -> torch.Tensor:
        """``log(sum(exp(K)))`` over ``dim``, computed online (stable); -inf over an empty set."""
        return self._reduce("logsumexp", dim)

    def _topk(self, what: str, k, dim: int, largest: bool, nan: str):
        if not isinstance(k, int) or isinstance(k, bool):
            raise TypeError(f"torchpair.{what}: 'k' must be an int, got {type(k).__name__}")
        if not isinstance(largest, bool):
            raise TypeError(f"torchpair.{what}: 'largest' must be a bool, got {type(largest).__name__}")
        d = self._normalize_dim(dim, what)
        if _keops.requested() and (out := _keops.topk(self, k, d, largest, nan)) is not None:
            return out
        return torch.ops.torchpair.lazy_topk(self.X, self.Y, self.metric, k, d, largest, True, self.transposed, nan,
                                            **self.params)

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
        """The k largest (or smallest) entries along ``dim``, like ``torch.topk``: returns
        ``(values, indices)`` of shape ``[..., k]`` in place of ``dim``, best first. Ties go to
        the lowest index; NaN ranks as the largest value. Values are differentiable."""
        if not isinstance(sorted, bool):
            raise TypeError(f"torchpair.topk: 'sorted' must be a bool, got {type(sorted).__name__}")
        values, indices = self._topk("topk", k, dim, largest, "largest")
        return _moveaxis_result(torch.return_types.topk, values, indices, dim, self.ndim)

    def min(self, dim: int = -1):
        """``(values, indices)`` of the minimum along ``dim``, like ``torch.min(K, dim)``:
        lowest index on ties, NaN propagates (a row with NaN gives NaN and its index)."""
        self._check_nonempty("min", self._normalize_dim(dim, "min"))
        values, indices = self._topk("min", 1, dim, False, "propagate")
        return _moveaxis_result(torch.return_types.min, values, indices, dim, self.ndim, squeeze=True)

    def max(self, dim: int = -1):
        """``(values, indices)`` of the maximum along ``dim``, like ``torch.max(K, dim)``."""
        self._check_nonempty("max", self._normalize_dim(dim, "max"))
        values, indices = self._topk("max", 1, dim, True, "propagate")
        return _moveaxis_result(torch.return_types.max, values, indices, dim, self.ndim, squeeze=True)

    def argmin(self, dim: int = -1) -> torch.Tensor:
        return self.min(dim).indices

    def argmax(self, dim: int = -1) -> torch.Tensor:
        return self.max(dim).indices

    def softmax_matmul(self, V: torch.Tensor, dim: int = -1) -> torch.Tensor:
        """``sum_j softmax_j(K_ij) V_j`` (dim -1), streamed with an online softmax — attention and
        Nadaraya-Watson estimators without N x M. With dim -2 the softmax runs down the
        columns: ``sum_i softmax_i(K_ij) V_i``."""
        _params.check_tensor("softmax_matmul", "V", V)
        d = self._normalize_dim(dim, "softmax_matmul")
        if _keops.requested() and (out := _keops.softmax_matmul(self, V, d)) is not None:
            return out
        return torch.ops.torchpair.lazy_softmax_matmul(self.X, self.Y, V, self.metric, d, self.transposed,
                                                      **self.params)

    def to_dense(self) -> torch.Tensor:
        """The materialized ``[..., N, M]`` tensor (this one does hold N x M)."""
        k = torch.ops.torchpair.pairwise(self.X, self.Y, self.metric, **self.params)
        return k.transpose(-1, -2) if self.transposed else k


class DensePairwise(_PairwiseExpression):
    """The materialized twin of :class:`LazyPairwise`: K is computed once, consumers use torch."""

    _op = "pairwise_expression"

    def __init__(self, X, Y, metric, params, transposed=False, dense=None):
        super().__init__(X, Y, metric, params, transposed)
        self._dense = dense if dense is not None else torch.ops.torchpair.pairwise(X, Y, metric, **self.params)

    @property
    def dtype(self) -> torch.dtype:
        return self._dense.dtype

    @property
    def T(self) -> "DensePairwise":
        return DensePairwise(self.X, self.Y, self.metric, self.params, not self.transposed, self._dense)

    def to_dense(self) -> torch.Tensor:
        return self._dense.transpose(-1, -2) if self.transposed else self._dense

    def matmul(self, V: torch.Tensor) -> torch.Tensor:
        self._check_v("matmul", V)
        return torch.matmul(self.to_dense(), V)

    def sum(self, dim: int | None = None) -> torch.Tensor:
        k = self.to_dense()
        return k.sum(dim=(-2, -1)) if dim is None else k.sum(self._normalize_dim(dim, "sum"))

    def mean(self, dim: int | None = None) -> torch.Tensor:
        k = self.to_dense()
        return k.mean(dim=(-2, -1)) if dim is None else k.mean(self._normalize_dim(dim, "mean"))

    def logsumexp(self, dim: int | None = None) -> torch.Tensor:
        k = self.to_dense()
        return torch.logsumexp(k, dim=(-2, -1)) if dim is None else torch.logsumexp(k, self._normalize_dim(dim, "logsumexp"))

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
        if not isinstance(sorted, bool):
            raise TypeError(f"torchpair.topk: 'sorted' must be a bool, got {type(sorted).__name__}")
        d = self._check_topk_args("topk", k, dim, largest)
        return torch.topk(self.to_dense(), k, dim=d, largest=largest, sorted=sorted)

    def min(self, dim: int = -1):
        d = self._normalize_dim(dim, "min")
        self._check_nonempty("min", d)
        return torch.min(self.to_dense(), dim=d)

    def max(self, dim: int = -1):
        d = self._normalize_dim(dim, "max")
        self._check_nonempty("max", d)
        return torch.max(self.to_dense(), dim=d)

    def argmin(self, dim: int = -1) -> torch.Tensor:
        return self.min(dim).indices

    def argmax(self, dim: int = -1) -> torch.Tensor:
        return self.max(dim).indices

    def softmax_matmul(self, V: torch.Tensor, dim: int = -1) -> torch.Tensor:
        _params.check_tensor("softmax_matmul", "V", V)
        d = self._normalize_dim(dim, "softmax_matmul")
        self._check_v("softmax_matmul", V, d)
        p = torch.softmax(self.to_dense(), dim=d)
        return torch.matmul(p if d == -1 else p.transpose(-1, -2), V)


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
