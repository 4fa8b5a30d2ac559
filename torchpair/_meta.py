"""Fake (meta) kernels of the core operators, for torch.compile and torch.export.

They compute output shapes only (symbolic shapes welcome). The public operators are
CompositeImplicitAutograd and decompose into these, so they need none of their own.
"""
from __future__ import annotations

import json

import torch

# ---- every fake kernel checks that its tensors share one device ---------------------------
# A call that mixes devices (e.g. a cpu tensor and a meta tensor) dispatches to the Meta
# kernel, which would otherwise return a meta result silently. Checked by name here.
def _checked(fn, qualname):
    import functools

    op = qualname.split("::")[1]
    # the operator's own argument names (a fake may take some of them as *args)
    names = [a.name for a in getattr(torch.ops.torchpair, op).default._schema.arguments]

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        first = None
        for name, value in (*zip(names, args), *kwargs.items()):
            if isinstance(value, torch.Tensor):
                if first is None:
                    first = (name, value.device)
                elif value.device != first[1]:
                    raise ValueError(f"torchpair.{op}: {name!r} is on {value.device} but {first[0]!r} is on "
                                     f"{first[1]}; every tensor argument must be on one device")
        return fn(*args, **kwargs)

    return wrapper


def register_fake(qualname):
    """torch.library.register_fake with the one-device check above."""
    def deco(fn):
        torch.library.register_fake(qualname)(_checked(fn, qualname))
        return fn

    return deco


def _rows_cols(x, y, transposed):
    n, m = x.shape[1], y.shape[1]
    return (m, n) if transposed else (n, m)


def _value_dtype(x, dtype):
    """Tile values (and results) have `dtype`, or x's dtype when it is None."""
    return x.dtype if dtype is None else dtype


def _grads(x, y, a, b, dtype):
    """Gradients w.r.t. (x, y, a, b) in the value dtype; absent side features: empty."""
    vd = _value_dtype(x, dtype)

    def like(t):
        return x.new_empty((0,), dtype=vd) if t is None else t.new_empty(t.shape, dtype=vd)

    return like(x), like(y), like(a), like(b)


@register_fake("torchpair::_dense")
def _dense_fake(x, y, a, b, kernel, scalars, symmetric, transposed, dtype=None):
    torch._check(x.dim() == 3 and y.dim() == 3, lambda: "torchpair._dense: x and y must be 3-D")
    rows, cols = _rows_cols(x, y, transposed)
    return x.new_empty((x.shape[0], rows, cols), dtype=_value_dtype(x, dtype))


@register_fake("torchpair::_dense_backward")
def _dense_backward_fake(grad, x, y, a, b, kernel, scalars, symmetric, transposed, dtype, output_mask):
    return _grads(x, y, a, b, dtype)


@register_fake("torchpair::_matmul")
def _matmul_fake(x, y, a, b, v, kernel, scalars, symmetric, transposed, dtype=None):
    torch._check(v.dim() == 3, lambda: "torchpair._matmul: v must be 3-D")
    rows, _ = _rows_cols(x, y, transposed)
    return x.new_empty((x.shape[0], rows, v.shape[2]), dtype=_value_dtype(x, dtype))


@register_fake("torchpair::_matmul_backward")
def _matmul_backward_fake(grad, x, y, a, b, v, kernel, scalars, symmetric, transposed, dtype, output_mask):
    return (*_grads(x, y, a, b, dtype), torch.empty_like(v))


#: name -> fixed result dtype (None: the value dtype) of each row reduction, from the
#: native table (csrc/reductions/row_reductions.h)
_ROW_REDUCTION_DTYPES = {r["name"]: None if r["dtype"] is None else getattr(torch, r["dtype"])
                         for r in json.loads(torch.ops.torchpair._build_info())["row_reductions"]}


def _then_schema_arguments(op):
    """The fake's signature: its named parameters, then the operator's remaining schema
    arguments (the row reductions' own, generated from the native table), which it takes as
    ``*arguments``."""
    import inspect

    def deco(fn):
        P = inspect.Parameter
        head = [p for p in inspect.signature(fn).parameters.values() if p.kind is P.POSITIONAL_OR_KEYWORD]
        tail = [P(a.name, P.POSITIONAL_OR_KEYWORD, default=a.default_value if a.has_default_value() else P.empty)
                for a in getattr(torch.ops.torchpair, op).default._schema.arguments[len(head):]]
        fn.__signature__ = inspect.Signature(head + tail)
        return fn

    return deco


@register_fake("torchpair::_row_reduce")
@_then_schema_arguments("_row_reduce")
def _row_reduce_fake(x, y, a, b, reduction, kernel, scalars, symmetric, transposed, dtype=None, *arguments,
                     **keywords):
    rows, _ = _rows_cols(x, y, transposed)
    out_dtype = _ROW_REDUCTION_DTYPES.get(reduction) or _value_dtype(x, dtype)
    return x.new_empty((x.shape[0], rows), dtype=out_dtype)


@register_fake("torchpair::_row_reduce_backward")
def _row_reduce_backward_fake(grad, x, y, a, b, reduction, result, kernel, scalars, symmetric, transposed, dtype,
                              scale, weight, output_mask):
    dw = torch.empty_like(weight) if weight is not None else x.new_empty((0,), dtype=_value_dtype(x, dtype))
    return (*_grads(x, y, a, b, dtype), dw)


@register_fake("torchpair::_topk")
def _topk_fake(x, y, a, b, k, largest, nan_first, kernel, scalars, symmetric, transposed, dtype=None):
    rows, cols = _rows_cols(x, y, transposed)
    torch._check(0 <= k, lambda: "torchpair._topk: k must be >= 0")
    torch._check(k <= cols, lambda: "torchpair._topk: k must not exceed the number of columns")
    vd = _value_dtype(x, dtype)
    return x.new_empty((x.shape[0], rows, k), dtype=vd), x.new_empty((x.shape[0], rows, k), dtype=torch.long)


@register_fake("torchpair::_softmax_matmul")
def _softmax_matmul_fake(x, y, a, b, v, kernel, scalars, symmetric, transposed, dtype=None):
    rows, _ = _rows_cols(x, y, transposed)
    vd = _value_dtype(x, dtype)
    return x.new_empty((x.shape[0], rows, v.shape[2]), dtype=vd), x.new_empty((x.shape[0], rows), dtype=vd)


@register_fake("torchpair::_softmax_matmul_backward")
def _softmax_matmul_backward_fake(grad, x, y, a, b, v, out, lse, kernel, scalars, symmetric, transposed, dtype,
                                  output_mask):
    return (*_grads(x, y, a, b, dtype), torch.empty_like(v))


@register_fake("torchpair::_paired")
def _paired_fake(x, y, a, b, self_mask, kernel, scalars, dtype=None):
    return x.new_empty((x.shape[0], x.shape[1]), dtype=_value_dtype(x, dtype))


@register_fake("torchpair::_paired_backward")
def _paired_backward_fake(grad, x, y, a, b, self_mask, kernel, scalars, dtype, output_mask):
    return _grads(x, y, a, b, dtype)


# ---- pdist: condensed upper triangle ------------------------------------------------------
@register_fake("torchpair::_pdist")
def _pdist_fake(x, y, a, b, kernel, scalars, symmetric, dtype=None):
    torch._check(x.dim() == 3 and y.dim() == 3, lambda: "torchpair._pdist: x and y must be 3-D")
    n = x.shape[1]
    return x.new_empty((x.shape[0], n * (n - 1) // 2), dtype=_value_dtype(x, dtype))


@register_fake("torchpair::_pdist_backward")
def _pdist_backward_fake(grad, x, y, a, b, kernel, scalars, symmetric, dtype, output_mask):
    return _grads(x, y, a, b, dtype)
