"""Fake (meta) kernels of the core operators, for torch.compile and torch.export.

They compute output shapes only (symbolic shapes welcome). The public operators are
CompositeImplicitAutograd and decompose into these, so they need none of their own.
"""
from __future__ import annotations

import torch


def _rows_cols(x, y, transpose):
    n, m = x.shape[1], y.shape[1]
    return (m, n) if transpose else (n, m)


def _like_or_empty(t, x):
    return torch.empty_like(t) if t is not None else x.new_empty((0,))


@torch.library.register_fake("torchpair::_dense")
def _dense_fake(x, y, a, b, kernel, scalars, symmetric, transpose):
    torch._check(x.dim() == 3 and y.dim() == 3, lambda: "torchpair._dense: x and y must be 3-D")
    rows, cols = _rows_cols(x, y, transpose)
    return x.new_empty((x.shape[0], rows, cols))


@torch.library.register_fake("torchpair::_dense_backward")
def _dense_backward_fake(grad, x, y, a, b, kernel, scalars, symmetric, transpose, output_mask):
    return torch.empty_like(x), torch.empty_like(y), _like_or_empty(a, x), _like_or_empty(b, x)


@torch.library.register_fake("torchpair::_matmul")
def _matmul_fake(x, y, a, b, v, kernel, scalars, symmetric, transpose):
    torch._check(v.dim() == 3, lambda: "torchpair._matmul: v must be 3-D")
    rows, _ = _rows_cols(x, y, transpose)
    return x.new_empty((x.shape[0], rows, v.shape[2]))


@torch.library.register_fake("torchpair::_matmul_backward")
def _matmul_backward_fake(grad, x, y, a, b, v, kernel, scalars, symmetric, transpose, output_mask):
    return (
        torch.empty_like(x),
        torch.empty_like(y),
        _like_or_empty(a, x),
        _like_or_empty(b, x),
        torch.empty_like(v),
    )


@torch.library.register_fake("torchpair::_row_sum")
def _row_sum_fake(x, y, a, b, kernel, scalars, symmetric, transpose):
    rows, _ = _rows_cols(x, y, transpose)
    return x.new_empty((x.shape[0], rows))


@torch.library.register_fake("torchpair::_row_sum_backward")
def _row_sum_backward_fake(grad, x, y, a, b, kernel, scalars, symmetric, transpose, output_mask):
    return torch.empty_like(x), torch.empty_like(y), _like_or_empty(a, x), _like_or_empty(b, x)
