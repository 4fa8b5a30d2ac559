"""Keyword parameters of the torchpair operators.

The parameter list is read from the native operator schema, so Python never keeps a second
copy of it: scalar parameters (floats, structural constants in captured graphs), tensor
parameters (inputs, differentiable where the metric is) and string options (``compute_mode``,
structural too).
"""
from __future__ import annotations

import difflib
import functools
import numbers
import re

import torch


def _read_schema() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    schema = torch.ops.torchpair.pairwise.default._schema
    scalars, tensors, strings = [], [], []
    for arg in schema.arguments:
        if not arg.kwarg_only:
            continue
        elem = arg.type.getElementType() if isinstance(arg.type, torch.OptionalType) else arg.type
        if isinstance(elem, torch.TensorType):
            tensors.append(arg.name)
        elif isinstance(elem, torch.StringType):
            strings.append(arg.name)
        else:
            scalars.append(arg.name)
    return tuple(scalars), tuple(tensors), tuple(strings)


# Read once at import (the library is loaded by then); plain constants for torch.compile.
SCALAR_PARAMS, TENSOR_PARAMS, STRING_PARAMS = _read_schema()


#: Scalar parameters with a tensor twin in the schema. sklearn's length_scale is a float or
#: one value per feature (an array); a 0-d tensor that requires grad (or any tensor while
#: compiling) is an input too, so the parameter is differentiable where the metric allows it.
TENSOR_TWINS = {"length_scale": "length_scales", "periodicity": "periodicities"}


def _to_twin(value) -> bool:
    if isinstance(value, numbers.Real) or not _is_array_like(value):  # numbers, numpy scalars included
        return False
    if isinstance(value, torch.Tensor) and value.dim() == 0:
        return value.requires_grad or torch.compiler.is_compiling()
    return True


def _is_array_like(value) -> bool:
    return isinstance(value, torch.Tensor) or hasattr(value, "__array__") or isinstance(value, (list, tuple))


def normalize(op: str, params: dict, device: torch.device | None = None) -> dict:
    """Validates keyword names and value types; returns the kwargs for the operator.

    Unknown names raise TypeError (with a suggestion), like any Python function. Whether the
    chosen metric takes a parameter, and its allowed values, is checked by the operator.
    Array-like tensor parameters (numpy arrays, lists) become tensors on ``device`` (the
    operands' device); a tensor passed in stays where it is.
    """
    if not isinstance(params, dict):
        raise TypeError(f"torchpair.{op}: 'params' must be a dict of the metric's parameters, got {type(params).__name__}")
    scalars, tensors = SCALAR_PARAMS, TENSOR_PARAMS
    out = {}
    for name, value in params.items():
        if value is None:
            continue
        if name in TENSOR_TWINS and _to_twin(value):
            name = TENSOR_TWINS[name]
        if name in scalars:
            if isinstance(value, torch.Tensor):
                if value.dim() == 0 and not value.requires_grad and not torch.compiler.is_compiling():
                    value = value.item()
                else:
                    raise TypeError(
                        f"torchpair.{op}: parameter {name!r} must be a Python number (scalar parameters are "
                        f"structural constants), got a tensor of shape {tuple(value.shape)}"
                    )
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"torchpair.{op}: parameter {name!r} must be a real number, got {type(value).__name__}")
            out[name] = float(value)
        elif name in STRING_PARAMS:  # compute_mode: its values are checked by the operator
            if not isinstance(value, str):
                raise TypeError(f"torchpair.{op}: {name!r} must be a str, got {type(value).__name__}")
            out[name] = value
        elif name in tensors:
            if not isinstance(value, torch.Tensor):
                if not _is_array_like(value) and not isinstance(value, numbers.Real):
                    raise TypeError(
                        f"torchpair.{op}: parameter {name!r} must be a tensor or array, got {type(value).__name__}"
                    )
                value = torch.as_tensor(value, device=device)
            out[name] = value
        else:
            known = scalars + tensors + STRING_PARAMS
            hint = difflib.get_close_matches(name, known, n=1)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else f"; valid parameters: {', '.join(known)}"
            raise TypeError(f"torchpair.{op}() got an unexpected keyword argument {name!r}{suggestion}")
    return out


def check_tensor(op: str, name: str, value, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"torchpair.{op}: {name!r} must be a torch.Tensor, got {type(value).__name__}")
    check_layout(op, name, value)


def check_layout(op: str, name: str, value: torch.Tensor) -> None:
    """A nested tensor is a TypeError naming the argument (a tensor's layout is part of its
    type, as its dtype); torch's own error for one ("NestedTensorImpl doesn't support sizes")
    names neither the argument nor the function. Sparse layouts are rejected the same way by
    the operators."""
    if value.is_nested:
        raise TypeError(f"torchpair.{op}: {name!r} must be a dense (strided) tensor, got a nested tensor; pad it "
                        "to one (torch.nested.to_padded_tensor) or compare its components one by one")


def check_metric(op: str, metric) -> None:
    if not isinstance(metric, str):
        raise TypeError(f"torchpair.{op}: 'metric' must be a metric name (str), got {type(metric).__name__}")


def check_operands(op: str, X, Y, metric, y_optional: bool = True) -> None:
    """check_tensor(X), check_tensor(Y) and check_metric, in that order, for every public entry
    point that takes operands and a metric: the common (valid) case is a single test, so the
    per-call cost of the Python layer stays small."""
    if isinstance(X, torch.Tensor) and isinstance(metric, str) and not X.is_nested and (
            (isinstance(Y, torch.Tensor) and not Y.is_nested) or (Y is None and y_optional)):
        return
    check_tensor(op, "X", X)
    check_tensor(op, "Y", Y, optional=y_optional)
    check_metric(op, metric)


def broadcast_shapes(*shapes) -> torch.Size:
    """``torch.broadcast_shapes`` of batch shapes. Plain int shapes are broadcast here:
    torch's first call imports sympy, a cost a plain call must not pay; under
    torch.compile (symbolic shapes) torch's does it. Raises
    RuntimeError where the shapes do not broadcast, as torch does."""
    if torch.compiler.is_compiling() or not all(type(s) is int for shape in shapes for s in shape):
        return torch.broadcast_shapes(*shapes)
    ndim = 0
    for shape in shapes:
        ndim = len(shape) if len(shape) > ndim else ndim
    out = [1] * ndim
    for shape in shapes:
        for i, s in enumerate(shape, ndim - len(shape)):
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
            if s != 1:
                if out[i] != 1 and out[i] != s:
                    raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: {shapes}")
                out[i] = s
    return torch.Size(out)


# "torchpair.<name>: ..." (argument errors) or "torchpair.<name>() got ..." (keywords)
_PREFIX = re.compile(r"torchpair\.[A-Za-z_][\w.]*(: |\(\) )")


def public(name: str):
    """Decorator: the function's ValueError / TypeError name ``torchpair.<name>`` (see
    :func:`renamed`), for public functions that run operators or other public functions."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except (ValueError, TypeError) as exc:
                raise renamed(exc, name) from None
        return wrapper
    return deco


def renamed(exc: BaseException, public: str) -> BaseException:
    """``exc`` naming the public function the user called: a ValueError / TypeError from an
    operator (``torchpair._seq_pdist: ...``, ``torchpair.lazy_reduce: ...``) or from another
    public function used inside (``torchpair.emd: ...`` under ``tp.wasserstein``) becomes
    ``torchpair.<public>: ...``, the same type and text otherwise. Used as

        try: ...
        except (ValueError, TypeError) as exc:
            raise _params.renamed(exc, "seq.pdist") from None

    (a try block costs nothing until something raises)."""
    if type(exc) not in (ValueError, TypeError) or len(exc.args) != 1 or not isinstance(exc.args[0], str):
        return exc
    message = exc.args[0]
    match = _PREFIX.match(message)
    if match is None:
        return exc
    head = f"torchpair.{public}{match.group(1)}"
    if match.group(0) == head:
        return exc
    return type(exc)(head + message[match.end():]).with_traceback(exc.__traceback__)
