"""Edit distances between token sequences (rapidfuzz semantics): ``tp.seq``.

    import torchpair as tp
    (a, la), (b, lb) = tp.encode(["kitten", "sitting"], ["mitten", "fitting", ""])
    D = tp.seq.pairwise(a, b, "levenshtein", x_lengths=la, y_lengths=lb)     # int64 [2, 3]
    v, i = tp.seq.lazy(a, b, "jaro_winkler", x_lengths=la, y_lengths=lb).topk(2, largest=False)

Inputs are integer tensors ``[..., N, L]`` of token ids (any integer dtype) whose valid
lengths are given by ``x_lengths``/``y_lengths`` (``[..., N]``) or, when absent, by the first
``pad_id`` token of each row (default ``-1``; no pad token: the whole row). The two sides may
have different ``L``; batch dims broadcast.

Metrics (rapidfuzz.distance names in snake case):

==================== ======================================== =====================================
metric               parameters                                raw distance / normalized by
==================== ======================================== =====================================
levenshtein          ``weights=(insertion, deletion,           weighted edit distance / rapidfuzz's
                     substitution)``, non-negative ints,       maximum for the weights
                     default (1, 1, 1)
osa                                                            optimal string alignment / max(len)
damerau_levenshtein                                            unrestricted Damerau / max(len)
indel                                                          insertions + deletions / len1 + len2
lcs                                                            max(len) - LCS / max(len)
hamming              ``pad=False``: equal lengths required;    differing positions (+ length
                     ``pad=True`` counts the length difference difference) / max(len)
jaro                                                           1 - Jaro similarity (float)
jaro_winkler         ``prefix_weight=0.1``                     1 - Jaro-Winkler similarity (float)
prefix                                                         max(len) - common prefix / max(len)
postfix                                                        max(len) - common suffix / max(len)
==================== ======================================== =====================================

Raw distances are int64; ``normalized=True`` gives rapidfuzz's normalized distance in
[0, 1] as float64 (0 when both sequences are empty); jaro and jaro_winkler are always float64
(their raw and normalized distances coincide). Nothing is differentiable; autocast does not
apply. ``tp.pairwise``/``tp.cdist``/``tp.lazy`` route here for these metric names (see
:func:`routes` for the one ambiguous name, ``hamming``).
"""
from __future__ import annotations

import numbers

import torch

from . import _meta_sequences  # noqa: F401  (fake kernels)

METRICS: tuple[str, ...] = ("levenshtein", "osa", "damerau_levenshtein", "indel", "lcs", "hamming", "jaro",
                            "jaro_winkler", "prefix", "postfix")
#: Metric names that exist only for sequences (``hamming`` also names the numeric metric).
SEQUENCE_ONLY: frozenset = frozenset(METRICS) - {"hamming"}
_FLOATING = frozenset({"jaro", "jaro_winkler"})
_METRIC_PARAMS = {"levenshtein": ("weights",), "hamming": ("pad",), "jaro_winkler": ("prefix_weight",)}
#: Keyword arguments that only the sequence API takes (used to route ``tp.pairwise``).
SEQUENCE_KWARGS = frozenset({"x_lengths", "y_lengths", "lengths", "pad_id", "normalized", "weights", "pad"})


# ---------------------------------------------------------------------------------------
# encode
# ---------------------------------------------------------------------------------------
_NEXT = object()  # the vocabulary's key for the next free id


def _encode_one(seqs, vocab: dict, name: str, pad_id: int):
    if isinstance(seqs, (str, bytes)) or not hasattr(seqs, "__iter__"):
        raise TypeError(f"torchpair.encode: {name!r} must be a list of strings or of sequences of hashables, "
                        f"got {type(seqs).__name__}")
    rows = []
    for k, s in enumerate(seqs):
        if isinstance(s, str):
            items = list(s)  # one token per Unicode code point
        elif isinstance(s, (bytes, bytearray)):
            items = list(s)
        elif hasattr(s, "__iter__"):
            items = list(s)
        else:
            raise TypeError(f"torchpair.encode: {name}[{k}] must be a string or a sequence of hashables, "
                            f"got {type(s).__name__}")
        ids = []
        for item in items:
            try:
                tok = vocab.get(item)
            except TypeError:
                raise TypeError(f"torchpair.encode: {name}[{k}] holds an unhashable item of type "
                                f"{type(item).__name__}") from None
            if tok is None:
                tok = vocab.setdefault(_NEXT, 0)
                if tok == pad_id:  # never hand out the pad id
                    tok += 1
                vocab[_NEXT] = tok + 1
                vocab[item] = tok
            ids.append(tok)
        rows.append(ids)
    L = max((len(r) for r in rows), default=0)
    tokens = torch.full((len(rows), L), pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            tokens[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    lengths = torch.tensor([len(r) for r in rows], dtype=torch.long)
    return tokens, lengths


def encode(a, b=None, *, pad_id: int = -1):
    """Token ids for lists of sequences, with one vocabulary shared by both sides.

    Args:
        a: a list of Python strings (one token per Unicode code point) or of sequences of
            hashables (e.g. lists of ints or of words).
        b: optionally a second such list, encoded with the same vocabulary.
        pad_id: the id filling rows past their length (never used as a token id).

    Returns:
        ``(tokens, lengths)``: int64 ``[N, L]`` (L the longest sequence) and int64 ``[N]``;
        with ``b``: ``((tokens_a, lengths_a), (tokens_b, lengths_b))``.
    """
    if not isinstance(pad_id, numbers.Integral) or isinstance(pad_id, bool):
        raise TypeError(f"torchpair.encode: 'pad_id' must be an int, got {type(pad_id).__name__}")
    vocab: dict = {}
    first = _encode_one(a, vocab, "a", int(pad_id))
    if b is None:
        return first
    return first, _encode_one(b, vocab, "b", int(pad_id))


# ---------------------------------------------------------------------------------------
# argument handling
# ---------------------------------------------------------------------------------------
def _check_metric(op: str, metric) -> str:
    if not isinstance(metric, str):
        raise TypeError(f"torchpair.{op}: 'metric' must be a sequence metric name (str), got {type(metric).__name__}")
    if metric not in METRICS:
        raise ValueError(f"torchpair.{op}: unknown sequence metric {metric!r} (argument 'metric'); "
                         f"one of {', '.join(METRICS)}")
    return metric


def _scalars(op: str, metric: str, params: dict) -> list:
    allowed = _METRIC_PARAMS.get(metric, ())
    for name in params:
        if name not in allowed:
            takes = f"takes only {', '.join(repr(a) for a in allowed)}" if allowed else "takes no parameters"
            raise TypeError(f"torchpair.{op}: metric {metric!r} {takes}; got an unexpected keyword argument {name!r}")
    if metric == "levenshtein":
        w = params.get("weights", (1, 1, 1))
        if w is None:
            w = (1, 1, 1)
        if not isinstance(w, (tuple, list)) or len(w) != 3:
            raise TypeError(f"torchpair.{op}: 'weights' must be a tuple (insertion, deletion, substitution), got {w!r}")
        for v in w:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise TypeError(f"torchpair.{op}: 'weights' must hold ints, got {w!r}")
            if v < 0:
                raise ValueError(f"torchpair.{op}: 'weights' must be non-negative, got {w!r}")
        return [float(v) for v in w]
    if metric == "hamming":
        pad = params.get("pad", False)
        if not isinstance(pad, bool):
            raise TypeError(f"torchpair.{op}: 'pad' must be a bool, got {type(pad).__name__}")
        return [1.0 if pad else 0.0]
    if metric == "jaro_winkler":
        pw = params.get("prefix_weight", 0.1)
        if pw is None:
            pw = 0.1
        if isinstance(pw, bool) or not isinstance(pw, numbers.Real):
            raise TypeError(f"torchpair.{op}: 'prefix_weight' must be a real number, got {type(pw).__name__}")
        if not 0.0 <= float(pw) <= 1.0:
            raise ValueError(f"torchpair.{op}: 'prefix_weight' must be in [0, 1], got {pw}")
        return [float(pw)]
    return []


def _check_tokens(op: str, name: str, X) -> None:
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"torchpair.{op}: {name!r} must be a torch.Tensor of token ids, got {type(X).__name__} "
                        "(tp.encode turns lists of strings into tokens and lengths)")
    if X.dtype == torch.bool or X.dtype.is_floating_point or X.dtype.is_complex:
        raise TypeError(f"torchpair.{op}: {name!r} must hold integer token ids, got dtype {X.dtype}")
    if X.dim() < 2:
        raise ValueError(f"torchpair.{op}: {name!r} must have shape [..., rows, length], got {tuple(X.shape)}")


def _lengths(op: str, name: str, X: torch.Tensor, lengths, lengths_name: str, pad_id) -> torch.Tensor:
    if lengths is None:
        if isinstance(pad_id, bool) or not isinstance(pad_id, numbers.Integral):
            raise TypeError(f"torchpair.{op}: 'pad_id' must be an int, got {type(pad_id).__name__}")
        L = X.shape[-1]
        is_pad = X == pad_id
        first = torch.argmax(is_pad.to(torch.uint8), dim=-1)
        return torch.where(is_pad.any(dim=-1), first, torch.full_like(first, L))
    if not isinstance(lengths, torch.Tensor):
        raise TypeError(f"torchpair.{op}: {lengths_name!r} must be a torch.Tensor, got {type(lengths).__name__}")
    if lengths.dtype == torch.bool or lengths.dtype.is_floating_point or lengths.dtype.is_complex:
        raise TypeError(f"torchpair.{op}: {lengths_name!r} must be an integer tensor, got dtype {lengths.dtype}")
    if tuple(lengths.shape) != tuple(X.shape[:-1]):
        raise ValueError(f"torchpair.{op}: {lengths_name!r} must have shape {tuple(X.shape[:-1])} "
                         f"({name!r} without its last dim), got {tuple(lengths.shape)}")
    if lengths.device != X.device:
        raise ValueError(f"torchpair.{op}: {lengths_name!r} is on {lengths.device} but {name!r} is on {X.device}")
    return lengths.to(torch.long)


def _flatten(X: torch.Tensor, lx: torch.Tensor, batch) -> tuple[torch.Tensor, torch.Tensor]:
    B = 1
    for b in batch:
        B = B * b
    X = X.expand(*batch, X.shape[-2], X.shape[-1]).reshape(B, X.shape[-2], X.shape[-1])
    lx = lx.expand(*batch, lx.shape[-1]).reshape(B, lx.shape[-1])
    return X, lx


def _prepare(op, X, Y, metric, x_lengths, y_lengths, pad_id, normalized, params):
    metric = _check_metric(op, metric)
    if not isinstance(normalized, bool):
        raise TypeError(f"torchpair.{op}: 'normalized' must be a bool, got {type(normalized).__name__}")
    scalars = _scalars(op, metric, params)
    _check_tokens(op, "X", X)
    lx = _lengths(op, "X", X, x_lengths, "x_lengths", pad_id)
    if Y is None:
        if y_lengths is not None:
            raise ValueError(f"torchpair.{op}: 'y_lengths' given without 'Y'")
        Y, ly = X, lx
    else:
        _check_tokens(op, "Y", Y)
        if Y.device != X.device:
            raise ValueError(f"torchpair.{op}: 'X' is on {X.device} but 'Y' is on {Y.device}")
        ly = _lengths(op, "Y", Y, y_lengths, "y_lengths", pad_id)
    try:
        batch = torch.broadcast_shapes(X.shape[:-2], Y.shape[:-2])
    except RuntimeError:
        raise ValueError(f"torchpair.{op}: the batch dims of 'X' {tuple(X.shape[:-2])} and 'Y' "
                         f"{tuple(Y.shape[:-2])} do not broadcast") from None
    x3, lx3 = _flatten(X, lx, batch)
    y3, ly3 = _flatten(Y, ly, batch)
    return metric, scalars, x3, lx3, y3, ly3, tuple(batch)


def _swap_weights(metric: str, scalars: list) -> list:
    """The scalars of the transposed comparison d(y, x) (insertion and deletion swap)."""
    return [scalars[1], scalars[0], scalars[2]] if metric == "levenshtein" else scalars


# ---------------------------------------------------------------------------------------
# dense
# ---------------------------------------------------------------------------------------
def pairwise(X: torch.Tensor, Y: torch.Tensor | None = None, metric: str = "levenshtein", *,
             x_lengths: torch.Tensor | None = None, y_lengths: torch.Tensor | None = None, pad_id: int = -1,
             normalized: bool = False, **params) -> torch.Tensor:
    """Edit distances between every sequence of ``X`` and every sequence of ``Y``.

    Args:
        X: integer token ids ``[..., N, Lx]``.
        Y: ``[..., M, Ly]`` (batch dims broadcast with X), or None for X against itself.
        metric: one of :data:`METRICS`.
        x_lengths, y_lengths: ``[..., N]`` / ``[..., M]`` valid lengths (default: up to the
            first ``pad_id`` token).
        pad_id: the padding token id used when lengths are not given.
        normalized: rapidfuzz's normalized distance (float64 in [0, 1]).
        **params: ``weights`` (levenshtein), ``pad`` (hamming), ``prefix_weight`` (jaro_winkler).

    Returns:
        ``[..., N, M]``: int64 raw distances, float64 when normalized or for jaro/jaro_winkler.
    """
    metric, scalars, x, lx, y, ly, batch = _prepare("seq.pairwise", X, Y, metric, x_lengths, y_lengths, pad_id,
                                                    normalized, params)
    out = torch.ops.torchpair._seq_dense(x, lx, y, ly, metric, scalars, normalized)
    return out.reshape(*batch, out.shape[-2], out.shape[-1])


def cdist(XA: torch.Tensor, XB: torch.Tensor | None = None, metric: str = "levenshtein", **kwargs) -> torch.Tensor:
    """scipy's name for :func:`pairwise`."""
    return pairwise(XA, XB, metric, **kwargs)


def pdist(X: torch.Tensor, metric: str = "levenshtein", *, lengths: torch.Tensor | None = None, pad_id: int = -1,
          normalized: bool = False, **params) -> torch.Tensor:
    """Condensed distances ``d(X_i, X_j)`` for ``i < j`` in scipy's order: ``[..., N (N - 1) / 2]``."""
    metric, scalars, x, lx, _, _, batch = _prepare("seq.pdist", X, None, metric, lengths, None, pad_id, normalized,
                                                   params)
    out = torch.ops.torchpair._seq_pdist(x, lx, metric, scalars, normalized)
    return out.reshape(*batch, out.shape[-1])


# ---------------------------------------------------------------------------------------
# lazy: nearest sequences without the N x M matrix
# ---------------------------------------------------------------------------------------
class LazySequences:
    """``K = metric(X, Y)`` of shape ``[..., N, M]`` over token sequences, never materialized
    by its consumers: ``topk``, ``min``/``max``, ``argmin``/``argmax`` stream over the pairs
    with a bounded heap per row (O(N k) memory). ``to_dense()`` builds the matrix."""

    def __init__(self, X, Y, metric, x_lengths=None, y_lengths=None, pad_id=-1, normalized=False, **params):
        (self.metric, self._scalars, self._x, self._lx, self._y, self._ly,
         self._batch) = _prepare("seq.lazy", X, Y, metric, x_lengths, y_lengths, pad_id, normalized, params)
        self.normalized = normalized

    @property
    def shape(self) -> torch.Size:
        return torch.Size((*self._batch, self._x.shape[1], self._y.shape[1]))

    @property
    def dtype(self) -> torch.dtype:
        return torch.float64 if (self.normalized or self.metric in _FLOATING) else torch.long

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[dim]

    def to_dense(self) -> torch.Tensor:
        out = torch.ops.torchpair._seq_dense(self._x, self._lx, self._y, self._ly, self.metric, self._scalars,
                                             self.normalized)
        return out.reshape(self.shape)

    def _dim(self, dim, what: str) -> int:
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
            raise TypeError(f"torchpair.seq.lazy.{what}: 'dim' must be an int, got {type(dim).__name__}")
        nd = len(self.shape)
        if dim not in (-1, -2, nd - 1, nd - 2):
            raise ValueError(f"torchpair.seq.lazy.{what}: 'dim' must be -1 (per row) or -2 (per column), got {dim}")
        return -1 if dim in (-1, nd - 1) else -2

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
        """torch.topk over ``dim`` (``largest=False``: the k nearest sequences); ties rank the
        lower index first; always sorted."""
        d = self._dim(dim, "topk")
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise TypeError(f"torchpair.seq.lazy.topk: 'k' must be an int, got {type(k).__name__}")
        if not isinstance(largest, bool):
            raise TypeError(f"torchpair.seq.lazy.topk: 'largest' must be a bool, got {type(largest).__name__}")
        if d == -1:
            v, i = torch.ops.torchpair._seq_topk(self._x, self._lx, self._y, self._ly, self.metric, self._scalars,
                                                 self.normalized, int(k), largest)
            shape = (*self._batch, self._x.shape[1], int(k))
            return torch.return_types.topk((v.reshape(shape), i.reshape(shape)))
        v, i = torch.ops.torchpair._seq_topk(self._y, self._ly, self._x, self._lx, self.metric,
                                             _swap_weights(self.metric, self._scalars), self.normalized, int(k),
                                             largest)
        shape = (*self._batch, self._y.shape[1], int(k))
        return torch.return_types.topk((v.reshape(shape).transpose(-1, -2), i.reshape(shape).transpose(-1, -2)))

    def min(self, dim: int = -1):
        v, i = self.topk(1, dim, largest=False)
        d = self._dim(dim, "min")
        return torch.return_types.min((v.squeeze(d), i.squeeze(d)))

    def max(self, dim: int = -1):
        v, i = self.topk(1, dim, largest=True)
        d = self._dim(dim, "max")
        return torch.return_types.max((v.squeeze(d), i.squeeze(d)))

    def argmin(self, dim: int = -1) -> torch.Tensor:
        return self.min(dim).indices

    def argmax(self, dim: int = -1) -> torch.Tensor:
        return self.max(dim).indices

    def __repr__(self) -> str:
        return f"LazySequences(metric={self.metric!r}, shape={tuple(self.shape)}, dtype={self.dtype})"


def lazy(X: torch.Tensor, Y: torch.Tensor | None = None, metric: str = "levenshtein", **kwargs) -> LazySequences:
    """A lazy ``[..., N, M]`` matrix of sequence distances (see :class:`LazySequences`)."""
    return LazySequences(X, Y, metric, **kwargs)


# ---------------------------------------------------------------------------------------
# routing from tp.pairwise / tp.cdist / tp.lazy
# ---------------------------------------------------------------------------------------
def routes(op: str, metric, X, params: dict) -> bool:
    """Whether a ``tp.<op>`` call is a sequence comparison.

    Sequence-only names always route here. ``hamming`` names both the numeric metric and the
    sequence one: integer ``X`` with any sequence keyword (``x_lengths``, ``y_lengths``,
    ``pad_id``, ``pad``, ``normalized``) is the sequence metric; integer ``X`` without one is
    ambiguous and raises; floating/bool ``X`` is the numeric metric."""
    if not isinstance(metric, str):
        return False
    if metric in SEQUENCE_ONLY:
        return True
    if metric == "hamming" and isinstance(X, torch.Tensor) and not (X.dtype.is_floating_point or X.dtype.is_complex
                                                                    or X.dtype == torch.bool):
        if SEQUENCE_KWARGS & set(params):
            return True
        raise TypeError(
            f"torchpair.{op}: metric 'hamming' with integer X of dtype {X.dtype} is ambiguous: pass x_lengths=/"
            "pad_id= (or call tp.seq.pairwise) for the sequence Hamming distance of token ids, or a floating/bool "
            "X for the numeric (scipy) Hamming distance")
    return False
