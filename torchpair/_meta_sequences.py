"""Fake (meta) kernels of the token-sequence operators (shapes and dtypes only)."""
from __future__ import annotations

import torch

from ._meta import register_fake  # with the one-device check

_FLOATING = ("jaro", "jaro_winkler")


def _dtype(metric, normalized):
    return torch.float64 if (normalized or metric in _FLOATING) else torch.long


@register_fake("torchpair::_seq_dense")
def _seq_dense_fake(x, x_lengths, y, y_lengths, metric, scalars, normalized):
    torch._check(x.dim() == 3 and y.dim() == 3, lambda: "torchpair._seq_dense: x and y must be 3-D")
    return x.new_empty((x.shape[0], x.shape[1], y.shape[1]), dtype=_dtype(metric, normalized))


@register_fake("torchpair::_seq_pdist")
def _seq_pdist_fake(x, x_lengths, metric, scalars, normalized):
    torch._check(x.dim() == 3, lambda: "torchpair._seq_pdist: x must be 3-D")
    n = x.shape[1]
    return x.new_empty((x.shape[0], n * (n - 1) // 2), dtype=_dtype(metric, normalized))


@register_fake("torchpair::_seq_topk")
def _seq_topk_fake(x, x_lengths, y, y_lengths, metric, scalars, normalized, k, largest):
    torch._check(0 <= k, lambda: "torchpair._seq_topk: k must be >= 0")
    torch._check(k <= y.shape[1], lambda: "torchpair._seq_topk: k must not exceed the number of columns")
    shape = (x.shape[0], x.shape[1], k)
    return x.new_empty(shape, dtype=_dtype(metric, normalized)), x.new_empty(shape, dtype=torch.long)
