"""Sharded lazy reductions over ``torch.distributed``.

Every rank of a process group holds a *shard* (a contiguous block of rows) of X and/or of Y;
the functions here compute what the single-process function computes on the concatenated
tensors::

    import torch.distributed as dist
    import torchpair.distributed as tpd

    dist.init_process_group("nccl")          # or "gloo" (CPU); same code path
    # every rank: the same queries Q, its own block of the database
    values, indices = tpd.knn(Q, Y_shard, k=10)              # indices = rows of cat(Y shards)
    out = tpd.lazy(Q, Y_shard, "rbf", gamma=0.5) @ V_shard   # sum over every shard, on every rank
    loss = tpd.mmd(X_shard, Y_shard, "rbf", gamma=0.5)       # both sets sharded
    loss.backward()                                          # collectives run in backward

Sharding (docs/scaling.md): shards are ordered by rank, so global row ``j`` of Y is row
``j - offset[r]`` of rank r's shard with ``offset[r] = sum(sizes[:r])``. Shards may have
different sizes, including 0; the sizes are exchanged (one ``all_gather``) when an
expression is built. An operand that is not sharded is *replicated*: every rank passes the
same full tensor.

Each rank runs the native streamed consumer (``tp.lazy(...).topk / .matmul / .sum /
.logsumexp``) on its shard and exchanges only reduced data: O(N·k) candidates for a top-k,
O(N·C) partial sums for a matmul, O(N) for a row reduction. When both operands of a
reduction are sharded the kept operand is all-gathered first (O(N·D)), never N x M.

Results: a reduction over a sharded axis is merged across ranks; if the kept axis is
replicated every rank gets the full result, if it is sharded every rank gets its own rows
("X-sharded results stay sharded"; an all-to-all sends each rank only its rows' partials).

Gradients (the Megatron convention): every rank must run backward through the same
outputs. A replicated output is assumed to receive the same gradient on every rank (each
rank computes the same loss from it, as single-process code does); a sharded output
receives the gradient of the rank's own rows. Then every rank gets exactly the
single-process gradient: the full gradient of each replicated input (X, Y, V, tensor
parameters; all-reduced in backward) and its own shard of the gradient of each sharded input.
The collectives in backward are ``all_reduce`` and ``all_gather`` through
``torch.distributed`` with the same group, so gloo (CPU) and NCCL (CUDA) run the same code.

``communication_stats()`` counts the bytes this rank received in the collectives (the cost
model of docs/scaling.md: ring all-reduce ``2 (W-1)/W · S``, all-gather ``(W-1) · S``).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from . import _catalog, _params
from ._expression import PairwiseExpressionBase
from .lazy import LazyPairwise

__all__ = [
    "ShardedPairwise",
    "communication_stats",
    "energy_distance",
    "knn",
    "lazy",
    "mmd",
    "reset_communication_stats",
]

_STATS = {"bytes_received": 0, "collectives": 0}


def communication_stats() -> dict:
    """``{"bytes_received": ..., "collectives": ...}`` for this rank since the last reset
    (forward and backward collectives of this module; the model of docs/scaling.md)."""
    return dict(_STATS)


def reset_communication_stats() -> None:
    _STATS["bytes_received"] = 0
    _STATS["collectives"] = 0


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _row_bytes(t: torch.Tensor) -> int:
    """Bytes of one row (dim 0) of t."""
    per = t.element_size()
    for s in t.shape[1:]:
        per *= s
    return per


# -- collectives ------------------------------------------------------------------------------
def _comm_device(*tensors) -> torch.device:
    """Where the argument-agreement exchange runs: the operands' device, or the CPU when an
    operand is on the meta device (no data: it cannot take part in a collective, and the
    local checks reject mixing it with real tensors)."""
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.device.type == "meta":
            return torch.device("cpu")
    return tensors[0].device
def _world(group) -> int:
    return dist.get_world_size(group)


def _rank(group) -> int:
    return dist.get_rank(group)


def _all_reduce(t: torch.Tensor, group, op=None) -> torch.Tensor:
    """Sum (or `op`) over ranks, into a new tensor."""
    out = t.detach().clone(memory_format=torch.contiguous_format)
    w = _world(group)
    if w > 1:
        dist.all_reduce(out, op=dist.ReduceOp.SUM if op is None else op, group=group)
        _STATS["bytes_received"] += int(2 * (w - 1) * _nbytes(out) // w)
        _STATS["collectives"] += 1
    return out


def _all_gather_rows(t: torch.Tensor, sizes: list[int], group) -> list[torch.Tensor]:
    """All ranks' blocks along dim 0 (block r has sizes[r] rows), in rank order. Blocks of
    different sizes are padded to the largest for the collective."""
    w = _world(group)
    if w == 1:
        return [t.detach()]
    width = max(sizes)
    rest = tuple(t.shape[1:])
    if width == 0:
        return [t.new_empty((0, *rest)) for _ in sizes]
    padded = t.detach().new_zeros((width, *rest))
    padded[: t.shape[0]] = t.detach()
    out = [torch.empty_like(padded) for _ in range(w)]
    dist.all_gather(out, padded, group=group)
    _STATS["bytes_received"] += (w - 1) * _nbytes(padded)
    _STATS["collectives"] += 1
    return [o[:s] for o, s in zip(out, sizes)]


class _EnterReplicated(torch.autograd.Function):
    """A replicated input entering rank-dependent work: identity forward, all-reduce of the
    gradient backward (every rank then holds the full gradient)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return _all_reduce(grad, ctx.group), None


class _SumReplicated(torch.autograd.Function):
    """Partial results summed over ranks into a replicated result: all-reduce forward,
    identity backward (the replicated result's gradient is the same on every rank)."""

    @staticmethod
    def forward(ctx, x, group):
        return _all_reduce(x, group)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def _all_to_all_rows(t: torch.Tensor, send_sizes: list[int], group) -> torch.Tensor:
    """Rows [sum(send_sizes), ...] -> block r (send_sizes[r] rows) goes to rank r; returns the
    blocks this rank receives, stacked in rank order: [W * n, ...] with n = send_sizes[rank]
    (every rank sends each rank that rank's own row count)."""
    w, r = _world(group), _rank(group)
    n = send_sizes[r]
    if w == 1:
        return t.detach().clone()
    t = t.detach().contiguous()
    out = t.new_empty((w * n, *t.shape[1:]))
    dist.all_to_all_single(out, t, output_split_sizes=[n] * w, input_split_sizes=list(send_sizes), group=group)
    _STATS["bytes_received"] += (w - 1) * n * _row_bytes(out)
    _STATS["collectives"] += 1
    return out


class _AllToAllRows(torch.autograd.Function):
    """Rows computed for every rank's kept rows -> each rank gets its own rows from every rank:
    ``[N, ...] -> [W * n_r, ...]`` (block s from rank s). Backward: the reverse all-to-all."""

    @staticmethod
    def forward(ctx, x, sizes, group):
        ctx.sizes, ctx.group = sizes, group
        return _all_to_all_rows(x, sizes, group)

    @staticmethod
    def backward(ctx, grad):
        w, r = _world(ctx.group), _rank(ctx.group)
        n = ctx.sizes[r]
        if w == 1:
            return grad, None, None
        grad = grad.contiguous()
        out = grad.new_empty((sum(ctx.sizes), *grad.shape[1:]))
        dist.all_to_all_single(out, grad, output_split_sizes=list(ctx.sizes), input_split_sizes=[n] * w,
                               group=ctx.group)
        _STATS["bytes_received"] += (sum(ctx.sizes) - n) * _row_bytes(out)
        _STATS["collectives"] += 1
        return out, None, None


def _sum_scatter_rows(partial, sizes, group):
    """Partial results over all kept rows, summed over ranks; each rank keeps its own rows."""
    blocks = _AllToAllRows.apply(partial, sizes, group)
    return blocks.reshape(_world(group), sizes[_rank(group)], *partial.shape[1:]).sum(0)


class _GatherRows(torch.autograd.Function):
    """All ranks' row blocks concatenated (dim 0). ``divergent``: the result feeds
    rank-dependent work, so the gradient of the own block is summed over ranks; else the
    result feeds the same (replicated) work on every rank and the own block's gradient is
    taken as is."""

    @staticmethod
    def forward(ctx, x, sizes, divergent, group):
        ctx.sizes, ctx.divergent, ctx.group = sizes, divergent, group
        return torch.cat(_all_gather_rows(x.contiguous(), sizes, group), 0)

    @staticmethod
    def backward(ctx, grad):
        if ctx.divergent:
            grad = _all_reduce(grad, ctx.group)
        r = _rank(ctx.group)
        start = sum(ctx.sizes[: r])
        return grad[start : start + ctx.sizes[r]], None, None, None


def _connect(out: torch.Tensor, inputs) -> torch.Tensor:
    """Make `out` depend (with a zero gradient) on every input that requires grad, so each
    rank's autograd graph, and with it the sequence of collectives in backward, is the same
    even where a shard is empty and the local work short-circuits."""
    if not torch.is_grad_enabled() or not out.is_floating_point():
        return out
    links = [t.reshape(-1)[:0].sum().to(out.dtype) for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]
    for link in links:
        out = out + link
    return out


# -- the expression ---------------------------------------------------------------------------
class ShardedPairwise(PairwiseExpressionBase):
    """``K = metric(cat(X shards), cat(Y shards))`` with rows of X and/or Y sharded across
    the ranks of ``group``; built by :func:`lazy`. Consumers merge the per-rank streamed
    results (see the module docstring for the result layout and gradient convention). The
    consumers and their argument checks are those of every expression
    (``torchpair._expression.PairwiseExpressionBase``)."""

    _api = "distributed."
    _consumers = frozenset({"reduce", "topk", "matmul"})

    def __init__(self, X, Y, metric, params, x_sharded, y_sharded, group, transposed=False, _sizes=None):
        op = "distributed.lazy"
        _params.check_operands(op, X, Y, metric)
        for name, flag in (("x_sharded", x_sharded), ("y_sharded", y_sharded)):
            if not isinstance(flag, bool):
                raise TypeError(f"torchpair.{op}: {name!r} must be a bool, got {type(flag).__name__}")
        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError(f"torchpair.{op}: torch.distributed is not initialized "
                               "(call torch.distributed.init_process_group first)")
        if Y is None:  # K(X, X): the columns are the same (sharded or replicated) rows as X
            Y, y_sharded = X, x_sharded
        self.X, self.Y, self.metric = X, Y, metric
        self.params = _params.normalize(op, params, X.device)
        self.x_sharded, self.y_sharded = x_sharded, y_sharded
        self.group = group
        self.transposed = transposed
        self.world_size = _world(group)
        self.rank = _rank(group)
        if _sizes is not None:
            self.x_sizes, self.y_sizes = _sizes
            return
        # Validate locally, then agree: a rank that fails must not leave the others waiting.
        error = None
        try:
            for name, t in (("X", X), ("Y", Y)):
                if t.dim() != 2:
                    raise ValueError(f"torchpair.{op}: {name!r} must have shape [rows, features] (2-D), "
                                     f"got {tuple(t.shape)}")
            if X.device != Y.device:  # the checks below run on meta copies, which hide devices
                raise ValueError(f"torchpair.{op}: 'X' is on {X.device} but 'Y' is on {Y.device}")
            LazyPairwise(X, Y, metric, self.params, transposed)  # the operator's own checks (meta tensors)
        except (ValueError, TypeError, RuntimeError) as exc:
            error = exc
        local = torch.tensor([X.shape[0] if X.dim() == 2 else 0, Y.shape[0] if Y.dim() == 2 else 0,
                              X.shape[-1] if X.dim() else 0, Y.shape[-1] if Y.dim() else 0, int(error is None)],
                             dtype=torch.int64, device=_comm_device(X, Y))
        table = torch.stack(_all_gather_rows(local.unsqueeze(0), [1] * self.world_size, group)).reshape(-1, 5).cpu()
        if error is not None:
            raise error
        bad = [r for r in range(self.world_size) if table[r, 4] == 0]
        if bad:
            raise RuntimeError(f"torchpair.{op}: rank(s) {bad} rejected their shards ('X'/'Y'); see their errors")
        for name, col in (("X", 2), ("Y", 3)):
            dims = sorted(set(table[:, col].tolist()))
            if len(dims) > 1:
                raise ValueError(f"torchpair.{op}: {name!r} has a different number of features on different ranks: "
                                 f"{table[:, col].tolist()}")
        for name, flag, col in (("X", x_sharded, 0), ("Y", y_sharded, 1)):
            if not flag and len(set(table[:, col].tolist())) > 1:
                raise ValueError(f"torchpair.{op}: {name!r} is replicated (not sharded) but its number of rows "
                                 f"differs across ranks: {table[:, col].tolist()}")
        self.x_sizes = table[:, 0].tolist() if x_sharded else None
        self.y_sizes = table[:, 1].tolist() if y_sharded else None

    # -- metadata -------------------------------------------------------------------------
    @property
    def shape(self) -> torch.Size:
        n = sum(self.x_sizes) if self.x_sharded else self.X.shape[0]
        m = sum(self.y_sizes) if self.y_sharded else self.Y.shape[0]
        return torch.Size((m, n) if self.transposed else (n, m))

    @property
    def distributed(self) -> bool:
        return self.x_sharded or self.y_sharded

    @property
    def T(self) -> "ShardedPairwise":
        return ShardedPairwise(self.X, self.Y, self.metric, self.params, self.x_sharded, self.y_sharded, self.group,
                               not self.transposed, _sizes=(self.x_sizes, self.y_sizes))

    def __repr__(self) -> str:
        return (f"ShardedPairwise(shape={tuple(self.shape)}, metric={self.metric!r}, x_sharded={self.x_sharded}, "
                f"y_sharded={self.y_sharded}, world_size={self.world_size}{', transposed' if self.transposed else ''})")

    @property
    def dtype(self) -> torch.dtype:
        return _catalog.info(self.metric).output_dtype(self.X.dtype, self.Y.dtype)

    @property
    def device(self) -> torch.device:
        return self.X.device

    def to_dense(self) -> torch.Tensor:
        raise self._unsupported("to_dense")

    def _consume(self, consumer: str, *args):
        if consumer == "reduce":
            return self._reduce(*args)
        if consumer == "topk":
            return self._select(*args)
        return self._matmul(*args)  # "matmul"

    # -- plumbing -------------------------------------------------------------------------
    def _operand(self, name):
        """(tensor, sharded, sizes) of operand 'X' or 'Y'."""
        return (self.X, self.x_sharded, self.x_sizes) if name == "X" else (self.Y, self.y_sharded, self.y_sizes)

    def _axes(self, dim):
        """Names of the (reduced, kept) operands for a reduction over expression dim -1 / -2."""
        cols, rows = ("X", "Y") if self.transposed else ("Y", "X")
        return (cols, rows) if dim == -1 else (rows, cols)

    def _enter(self, t):
        """A replicated tensor entering rank-dependent work."""
        if isinstance(t, torch.Tensor) and self.distributed and t.requires_grad:
            return _EnterReplicated.apply(t, self.group)
        return t

    def _local(self, operands: dict) -> LazyPairwise:
        params = {k: self._enter(v) for k, v in self.params.items()}
        e = object.__new__(LazyPairwise)  # skip re-validation: checked when this expression was built
        e.X, e.Y, e.metric, e.params, e.transposed = operands["X"], operands["Y"], self.metric, params, self.transposed
        e._batch = torch.Size(())
        return e

    def _plan(self, reduced_name):
        """Local operands and the merge mode for a reduction over the `reduced_name` operand:
        'local' (the reduced operand is replicated), 'replicate' (it is sharded, the kept one
        replicated: merge into a full result on every rank) or 'scatter' (both sharded: the kept
        operand is gathered first, the merged result is split back into its shards)."""
        kept_name = "Y" if reduced_name == "X" else "X"
        red, red_sh, _ = self._operand(reduced_name)
        kept, kept_sh, kept_sizes = self._operand(kept_name)
        if not red_sh:
            mode = "local"
            ops = {reduced_name: self._enter(red), kept_name: kept if kept_sh else self._enter(kept)}
        elif not kept_sh:
            mode = "replicate"
            ops = {reduced_name: red, kept_name: self._enter(kept)}
        else:
            mode = "scatter"
            ops = {reduced_name: red, kept_name: _GatherRows.apply(kept, kept_sizes, True, self.group)}
        return mode, ops, kept_sizes

    @staticmethod
    def _used(ops: dict, local: LazyPairwise, *extra):
        """The tensors the local work reads (after _enter / gathering), for _connect."""
        return [*ops.values(), *local.params.values(), *extra]

    def _agree(self, error: Exception | None) -> None:
        """Raise on every rank if any rank found an error (so none waits in a collective)."""
        flag = torch.tensor([0 if error is None else 1], dtype=torch.int64, device=self.X.device)
        if self.distributed:
            flag = _all_reduce(flag, self.group, dist.ReduceOp.MAX)
        if error is not None:
            raise error
        if int(flag.item()):
            raise RuntimeError("torchpair.distributed: another rank rejected its arguments; see its error")

    def _merge_sum(self, partial, mode, kept_sizes):
        if mode == "local":
            return partial
        if mode == "replicate":
            return _SumReplicated.apply(partial, self.group)
        return _sum_scatter_rows(partial, kept_sizes, self.group)

    # -- sums -----------------------------------------------------------------------------
    def _full_reduce_operands(self):
        """Operands for a reduction over both axes: if both are sharded the smaller is gathered."""
        if self.x_sharded and self.y_sharded:
            if sum(self.x_sizes) <= sum(self.y_sizes):
                return {"X": _GatherRows.apply(self.X, self.x_sizes, True, self.group), "Y": self.Y}
            return {"X": self.X, "Y": _GatherRows.apply(self.Y, self.y_sizes, True, self.group)}
        return {"X": self.X if self.x_sharded else self._enter(self.X),
                "Y": self.Y if self.y_sharded else self._enter(self.Y)}

    def _reduce(self, reduction, dim):
        """The "reduce" core consumer, merged across ranks (dim None: both axes)."""
        if reduction == "mean":  # the global sum divided by the global count (NaN over an empty set)
            n, m = self.shape
            count = n * m if dim is None else (m if dim == -1 else n)
            total = self._reduce("sum", dim)
            return total / count if count else total * float("nan")
        if dim is None:
            ops = self._full_reduce_operands()
            local = self._local(ops)
            partial = _connect(local._consume("reduce", reduction, None), self._used(ops, local))
            if not self.distributed:
                return partial
            if reduction == "sum":
                return _SumReplicated.apply(partial, self.group)
            return _merge_logsumexp(partial, "replicate", None, self.group)
        reduced, _ = self._axes(dim)
        mode, ops, kept_sizes = self._plan(reduced)
        local = self._local(ops)
        partial = _connect(local._consume("reduce", reduction, dim), self._used(ops, local))
        if reduction == "sum":
            return self._merge_sum(partial, mode, kept_sizes)
        if mode == "local":
            return partial
        return _merge_logsumexp(partial, mode, kept_sizes, self.group)

    def matmul(self, V: torch.Tensor) -> torch.Tensor:
        """``K @ V``: V's rows go with K's columns, so V is sharded exactly when the column
        operand is (each rank passes the V rows of its column shard); result ``[N, C]`` (or
        ``[N]``), replicated or sharded like the row operand."""
        return super().matmul(V)

    def _matmul(self, V):
        error = None
        try:
            cols, _ = self._axes(-1)
            col_t = self._operand(cols)[0]
            if V.dim() not in (1, 2) or V.shape[0] != col_t.shape[0]:
                raise ValueError(f"torchpair.distributed.matmul: 'V' must have shape [{col_t.shape[0]}] or "
                                 f"[{col_t.shape[0]}, C] on this rank (the local rows of K's columns), "
                                 f"got {tuple(V.shape)}")
        except (TypeError, ValueError) as exc:
            error = exc
        self._agree(error)
        cols, _ = self._axes(-1)
        mode, ops, kept_sizes = self._plan(cols)
        v = V if self._operand(cols)[1] else self._enter(V)
        local = self._local(ops)
        partial = _connect(local._consume("matmul", v), self._used(ops, local, v))
        return self._merge_sum(partial, mode, kept_sizes)

    # -- selections -----------------------------------------------------------------------
    def _select(self, k, dim, largest, nan):
        """The "topk" core consumer merged across ranks: ``(values [n_kept, k], global
        indices)`` (arguments already checked by the base class, the same on every rank)."""
        reduced, _ = self._axes(dim)
        mode, ops, kept_sizes = self._plan(reduced)
        red_t, red_sh, red_sizes = self._operand(reduced)
        local_k = min(k, red_t.shape[0])
        local = self._local(ops)
        values, indices = torch.ops.torchpair.lazy_topk(
            ops["X"], ops["Y"], self.metric, local_k, dim, largest, True, self.transposed, nan, **local.params)
        values = _connect(values, self._used(ops, local))
        if mode == "local":
            return values, indices
        # global indices: offset by the rows of the reduced operand held by lower ranks
        offsets = [sum(red_sizes[:r]) for r in range(self.world_size)]
        indices = indices + offsets[self.rank]
        ks = [min(k, s) for s in red_sizes]
        n_kept = values.shape[0]
        pad_v = torch.cat([values, values.new_zeros((n_kept, k - local_k))], 1) if local_k < k else values
        pad_i = torch.cat([indices, indices.new_zeros((n_kept, k - local_k))], 1) if local_k < k else indices
        # [W * n_kept, k] after the gather; the row blocks are the ranks
        # [W * n_rows, k]: block r holds rank r's candidates for the rows this rank returns
        if mode == "replicate":
            all_v = _GatherRows.apply(pad_v, [n_kept] * self.world_size, False, self.group)
            all_i = torch.cat(_all_gather_rows(pad_i, [n_kept] * self.world_size, self.group), 0)
            n_rows = n_kept
        else:  # every rank computed candidates for all rows; each gets those of its own rows
            all_v = _AllToAllRows.apply(pad_v, kept_sizes, self.group)
            all_i = _all_to_all_rows(pad_i, kept_sizes, self.group)
            n_rows = kept_sizes[self.rank]
        cand_v = torch.cat([all_v[r * n_rows: (r + 1) * n_rows, : ks[r]] for r in range(self.world_size)], 1)
        cand_i = torch.cat([all_i[r * n_rows: (r + 1) * n_rows, : ks[r]] for r in range(self.world_size)], 1)
        return _merge_topk(cand_v, cand_i, k, largest, nan)


def _merge_logsumexp(partial, mode, kept_sizes, group):
    """log(sum_r exp(partial_r)) without overflow, through the native online-logsumexp
    definition. Replicated result: m = max_r partial_r (all-reduce, no gradient: the result
    does not depend on it), each rank's sum under m (all-reduce), then its logsumexp.
    Row-scattered result: each rank receives its rows' partials from every rank (all-to-all)
    and merges them locally."""
    ops = torch.ops.torchpair
    if mode != "replicate":
        blocks = _AllToAllRows.apply(partial, kept_sizes, group)
        return ops._logsumexp_merge(blocks.reshape(_world(group), kept_sizes[_rank(group)], *partial.shape[1:]), 0)
    m = _all_reduce(partial.detach(), group, dist.ReduceOp.MAX)
    s = _SumReplicated.apply(ops._logsumexp_raise(partial, m), group)
    return ops._logsumexp_finalize(s, m)


def _merge_topk(cand_v, cand_i, k, largest, nan):
    """The k best of per-rank candidate lists, ties to the lowest global index, through the
    native top-k ordering rule. nan="largest": NaN ranks above everything; "propagate"
    (k == 1): a row with NaN gives its first NaN."""
    return torch.ops.torchpair._merge_topk(cand_v, cand_i, k, largest, largest or nan == "propagate")


# -- entry points -----------------------------------------------------------------------------
def lazy(X: torch.Tensor, Y: torch.Tensor | None = None, metric: str = "euclidean", *, x_sharded: bool = False,
         y_sharded: bool = True, group=None, **params) -> ShardedPairwise:
    """A sharded lazy expression over the ranks of ``group`` (default: the world group).

    ``x_sharded`` / ``y_sharded`` say whether each rank passes its own block of rows of X / Y
    (blocks concatenated in rank order) or the same full tensor. ``Y=None`` compares X with
    itself (Y is then sharded like X). Building it exchanges the shard sizes (one all-gather),
    so every rank of the group must call it, and every consumer, in the same order."""
    return ShardedPairwise(X, Y, metric, params, x_sharded, y_sharded, group)


def _info(op, metric):
    _params.check_metric(op, metric)
    try:
        return _catalog.info(metric)
    except ValueError as exc:
        raise ValueError(f"torchpair.distributed.{op}: 'metric': {exc}") from None


def knn(X: torch.Tensor, Y: torch.Tensor | None, k: int, metric: str = "euclidean", *, x_sharded: bool = False,
        y_sharded: bool = True, group=None, **params):
    """The k nearest rows of the (sharded) database Y for every query row of X, like
    ``tp.knn``: ``(values, indices)`` ``[N, k]``, nearest first, ties to the lowest index;
    indices are rows of the concatenated Y shards. Default layout: X replicated (the same
    queries on every rank), Y sharded; with ``x_sharded=True`` each rank gets the neighbours
    of its own queries."""
    largest = _info("knn", metric).is_similarity
    e = lazy(X, Y, metric, x_sharded=x_sharded, y_sharded=y_sharded, group=group, **params)
    return e.topk(k, -1, largest)


def _set_pair(op, X, Y, metric, want, x_sharded, y_sharded, group, params):
    _params.check_tensor(f"distributed.{op}", "X", X)
    _params.check_tensor(f"distributed.{op}", "Y", Y)
    kind = _info(op, metric).kind
    if kind != want:
        why = "MMD is defined by a kernel" if op == "mmd" else "the energy distance is defined from distances"
        raise ValueError(f"torchpair.distributed.{op}: 'metric' must be a {want} ({why}), got {metric!r} "
                         f"which is a {kind}")
    exy = lazy(X, Y, metric, x_sharded=x_sharded, y_sharded=y_sharded, group=group, **params)
    exx = lazy(X, None, metric, x_sharded=x_sharded, group=group, **params)
    eyy = lazy(Y, None, metric, x_sharded=y_sharded, group=group, **params)
    n, m = exy.shape
    return exy, exx, eyy, n, m


def mmd(X: torch.Tensor, Y: torch.Tensor, metric: str = "rbf", unbiased: bool = False, *, x_sharded: bool = True,
        y_sharded: bool = True, group=None, **params) -> torch.Tensor:
    """Squared MMD between the sample sets X and Y (each sharded by rows, or replicated), the
    value of ``tp.mmd`` on the concatenated shards, on every rank; differentiable."""
    if not isinstance(unbiased, bool):
        raise TypeError(f"torchpair.distributed.mmd: 'unbiased' must be a bool, got {type(unbiased).__name__}")
    exy, exx, eyy, n, m = _set_pair("mmd", X, Y, metric, "similarity", x_sharded, y_sharded, group, params)
    need = 2 if unbiased else 1
    for name, count in (("X", n), ("Y", m)):
        if count < need:
            raise ValueError(f"torchpair.distributed.mmd: {name!r} needs at least {need} samples"
                             f"{' (unbiased)' if unbiased else ''} in all, got {count}")
    kxy = exy.sum() / (n * m)
    if not unbiased:
        return exx.sum() / (n * n) + eyy.sum() / (m * m) - 2 * kxy

    def within(e, S, sharded, count):
        # the diagonal K(s_i, s_i): each rank its own rows (a batch of 1 x 1 comparisons)
        s = S if sharded else e._enter(S)
        local_params = e._local({"X": s, "Y": s}).params
        diag = torch.ops.torchpair.pairwise(s.unsqueeze(-2), s.unsqueeze(-2), metric, **local_params)
        diag = _connect(diag.sum(), [s])
        if sharded:
            diag = _SumReplicated.apply(diag, e.group)
        return (e.sum() - diag) / (count * (count - 1))

    return within(exx, X, x_sharded, n) + within(eyy, Y, y_sharded, m) - 2 * kxy


def energy_distance(X: torch.Tensor, Y: torch.Tensor, metric: str = "euclidean", *, x_sharded: bool = True,
                    y_sharded: bool = True, group=None, **params) -> torch.Tensor:
    """Energy distance ``sqrt(2 E d(X, Y) - E d(X, X') - E d(Y, Y'))`` of the concatenated
    shards (``tp.energy_distance``'s value), on every rank; differentiable (gradient 0 where
    the value is 0)."""
    exy, exx, eyy, n, m = _set_pair("energy_distance", X, Y, metric, "distance", x_sharded, y_sharded, group, params)
    for name, count in (("X", n), ("Y", m)):
        if count < 1:
            raise ValueError(f"torchpair.distributed.energy_distance: {name!r} needs at least 1 sample in all, got 0")
    e2 = 2 * exy.sum() / (n * m) - exx.sum() / (n * n) - eyy.sum() / (m * m)
    positive = e2 > 0
    # NaN (NaN or inf in the data) propagates, as in tp.energy_distance
    rest = torch.where(torch.isnan(e2), e2, torch.zeros_like(e2))
    return torch.where(positive, torch.sqrt(torch.where(positive, e2, torch.ones_like(e2))), rest)
