"""Execution backends of the lazy consumers: a registry with one dispatch point.

    with tp.backend("keops"):            # or @tp.backend("keops") on a function
        out = tp.lazy(X, Y, "rbf") @ V   # runs through pykeops (LazyTensor reductions)

The choice is thread-local and nestable. A backend is an object registered under a name
(:func:`register_backend`) with one method per *core consumer* it implements:

==================== ==============================================================================
method               arguments -> result (the native operator's result layout)
==================== ==============================================================================
``matmul``           ``(expr, V)`` -> K @ V
``reduce``           ``(expr, reduction, dim, **args)`` -> a row reduction (or "mean") over dim
                     -1, -2 or None (None: per batch element, ``[...]``); ``args``: the
                     reduction's own keyword arguments (those of ``lazy_reduce``), none for
                     sum, mean and the plain logsumexp
``topk``             ``(expr, k, dim, largest, nan)`` -> ``(values, indices)`` ``[..., rows, k]``
``softmax_matmul``   ``(expr, V, dim)``
``knn``              ``(X, Y, k, metric, params)`` -> ``(values, indices)``
``hausdorff``        ``(X, Y, metric, directed, params)``
``chamfer``          ``(X, Y, metric, reduction, params)``
``mmd``              ``(X, Y, metric, unbiased, params)``
``energy_distance``  ``(X, Y, metric, params)``
==================== ==============================================================================

``expr`` is a :class:`torchpair.LazyPairwise` (operands ``X``, ``Y``, ``metric``, ``params``,
``transposed``). A method may return None to decline one call (then the native backend runs
it); a missing method declines every call of that consumer. Every consumer of
``torchpair/lazy.py`` and ``torchpair/sets.py`` goes through :func:`dispatch`, the only
place that chooses; no consumer knows which backends exist.

A backend that implements only some reductions returns None for the others.

``"native"`` (the dispatcher operators of libtorchpair) is always registered; ``"keops"`` is
registered by ``torchpair/_keops.py`` (pykeops, an optional dependency). Compiled and exported
graphs always run natively: :func:`dispatch` checks ``torch.compiler.is_compiling()`` before
the thread-local state, so dynamo never traces it.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Optional

import torch

__all__ = ["backend", "get_backend", "register_backend", "registered_backends", "supports"]

#: The consumers a backend may implement (a method of that name on the backend object).
CONSUMERS = ("matmul", "reduce", "topk", "softmax_matmul", "knn", "hausdorff", "chamfer", "mmd", "energy_distance")


class _Native:
    """The native backend: the torchpair dispatcher operators (csrc/ops)."""

    @staticmethod
    def matmul(e, V):
        return torch.ops.torchpair.lazy_matmul(e.X, e.Y, V, e.metric, e.transposed, **e.params)

    @staticmethod
    def reduce(e, reduction, dim, **args):
        return torch.ops.torchpair.lazy_reduce(e.X, e.Y, e.metric, reduction, dim, e.transposed, **args, **e.params)

    @staticmethod
    def topk(e, k, dim, largest, nan):
        return torch.ops.torchpair.lazy_topk(e.X, e.Y, e.metric, k, dim, largest, True, e.transposed, nan,
                                            **e.params)

    @staticmethod
    def softmax_matmul(e, V, dim):
        return torch.ops.torchpair.lazy_softmax_matmul(e.X, e.Y, V, e.metric, dim, e.transposed, **e.params)

    @staticmethod
    def knn(X, Y, k, metric, params):
        return torch.ops.torchpair.knn(X, Y, k, metric, **params)

    @staticmethod
    def hausdorff(X, Y, metric, directed, params):
        return torch.ops.torchpair.hausdorff(X, Y, metric, directed, **params)

    @staticmethod
    def chamfer(X, Y, metric, reduction, params):
        return torch.ops.torchpair.chamfer(X, Y, metric, reduction, **params)

    @staticmethod
    def mmd(X, Y, metric, unbiased, params):
        return torch.ops.torchpair.mmd(X, Y, metric, unbiased, **params)

    @staticmethod
    def energy_distance(X, Y, metric, params):
        return torch.ops.torchpair.energy_distance(X, Y, metric, **params)

    @staticmethod
    def supports(metric: str) -> bool:
        return True


class _Entry:
    __slots__ = ("impl", "on_enter")

    def __init__(self, impl, on_enter):
        self.impl, self.on_enter = impl, on_enter


_REGISTRY: dict[str, _Entry] = {"native": _Entry(_Native(), None)}
_NATIVE = _REGISTRY["native"].impl

_state = threading.local()


def register_backend(name: str, impl: Any, on_enter: Optional[Callable[[], None]] = None) -> None:
    """Register ``impl`` (an object with some of the methods in :data:`CONSUMERS`, and
    optionally ``supports(metric) -> bool`` for ``tp.metric_info``) as backend ``name``.
    ``on_enter`` runs when ``tp.backend(name)`` is entered (e.g. to import an optional
    dependency with a clear error). Registering a name again replaces it; ``"native"`` cannot
    be replaced."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"torchpair.register_backend: 'name' must be a non-empty str, got {name!r}")
    if name == "native":
        raise ValueError("torchpair.register_backend: 'native' is built in and cannot be replaced (argument 'name')")
    _REGISTRY[name] = _Entry(impl, on_enter)


def registered_backends() -> tuple[str, ...]:
    """The names :func:`backend` accepts, ``"native"`` first."""
    return tuple(_REGISTRY)


def supports(name: str, metric: str) -> bool:
    """Whether backend ``name`` can run ``metric`` (canonical name) at all."""
    entry = _REGISTRY.get(name)
    fn = getattr(entry.impl, "supports", None) if entry is not None else None
    return bool(fn(metric)) if fn is not None else False


def _stack() -> list:
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


def get_backend() -> str:
    """The backend of the current thread: ``"native"`` unless inside ``tp.backend(...)``."""
    stack = _stack()
    return stack[-1][0] if stack else "native"


def current() -> tuple[str, bool]:
    """(name, strict) of the current thread."""
    stack = _stack()
    return stack[-1] if stack else ("native", False)


def dispatch(consumer: str, *args, **kwargs):
    """Run core consumer ``consumer`` with the current thread's backend; the native backend
    runs it when the chosen one declines (returns None or lacks the method), and always while
    compiling or exporting."""
    if not torch.compiler.is_compiling():
        stack = getattr(_state, "stack", None)
        if stack and stack[-1][0] != "native":
            fn = getattr(_REGISTRY[stack[-1][0]].impl, consumer, None)
            if fn is not None:
                out = fn(*args, **kwargs)
                if out is not None:
                    return out
    return getattr(_NATIVE, consumer)(*args, **kwargs)


class backend(contextlib.ContextDecorator):  # noqa: N801 - a function-like context manager, as torch's
    """Run lazy consumers with the named backend in this thread (a context manager and a
    decorator; nestable).

    Args:
        name: ``"native"`` (the default engine), ``"keops"`` (pykeops; ``pip install
            torchpair[keops]``) or another registered name (:func:`registered_backends`).
        strict: with a non-native backend: raise ``NotImplementedError`` for a metric (or
            parameter value, dtype or device) it cannot handle, instead of running it natively
            with a one-time warning.
    """

    def __init__(self, name: str, strict: bool = False):
        if not isinstance(name, str):
            raise TypeError(f"torchpair.backend: 'name' must be a str, got {type(name).__name__}")
        if name not in _REGISTRY:
            raise ValueError(f"torchpair.backend: unknown backend {name!r} (argument 'name'); valid backends: "
                             f"{', '.join(_REGISTRY)}")
        if not isinstance(strict, bool):
            raise TypeError(f"torchpair.backend: 'strict' must be a bool, got {type(strict).__name__}")
        self.name, self.strict = name, strict

    def __enter__(self):
        on_enter = _REGISTRY[self.name].on_enter
        if on_enter is not None:
            on_enter()
        _stack().append((self.name, self.strict))
        return self

    def __exit__(self, *exc):
        _stack().pop()
        return False

    def __repr__(self) -> str:
        return f"torchpair.backend({self.name!r}, strict={self.strict})"


def __getattr__(name):
    if name == "KEOPS_METRICS":  # the metrics the registered "keops" backend translates
        entry = _REGISTRY.get("keops")
        return list(entry.impl.metrics()) if entry is not None else []
    if name == "BACKENDS":
        return registered_backends()
    raise AttributeError(name)
