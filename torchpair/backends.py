"""Execution backends of the lazy consumers: ``"native"`` (default) and ``"keops"``.

    with tp.backend("keops"):            # or @tp.backend("keops") on a function
        out = tp.lazy(X, Y, "rbf") @ V   # runs through pykeops (LazyTensor reductions)

The choice is thread-local and nestable. Inside ``tp.backend("keops")`` every lazy consumer
(matmul, sum, mean, logsumexp, min/max/argmin/argmax, topk, softmax_matmul) and the set-level
functions (knn, hausdorff, chamfer, mmd, energy_distance) whose metric KeOps can express run
through pykeops, with gradients from KeOps' autodiff. Dense ops (``tp.pairwise``), compiled
and exported graphs, and the edge cases listed in docs/backends.md always run natively.
The metric -> KeOps formula table is ``torchpair._keops.TRANSLATIONS``.
"""
from __future__ import annotations

import contextlib
import threading

__all__ = ["KEOPS_METRICS", "backend", "get_backend"]

BACKENDS = ("native", "keops")

_state = threading.local()


def _stack() -> list:
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


def get_backend() -> str:
    """The backend of the current thread: ``"native"`` unless inside ``tp.backend(...)``."""
    stack = _stack()
    return stack[-1][0] if stack else "native"


def _current() -> tuple[str, bool]:
    """(name, strict) of the current thread."""
    stack = _stack()
    return stack[-1] if stack else ("native", False)


def _require_pykeops():
    try:
        import pykeops.torch  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "torchpair.backend('keops') needs the optional dependency pykeops, which could not be imported "
            f"({exc}); install it with: pip install torchpair[keops]"
        ) from exc
    return pykeops.torch


class backend(contextlib.ContextDecorator):  # noqa: N801 - a function-like context manager, as torch's
    """Run lazy consumers with the named backend in this thread (a context manager and a
    decorator; nestable).

    Args:
        name: ``"native"`` (the default engine) or ``"keops"`` (pykeops; ``pip install
            torchpair[keops]``).
        strict: with ``"keops"``: raise ``NotImplementedError`` for a metric (or parameter
            value, dtype or device) KeOps cannot handle, instead of running it natively with a
            one-time warning.
    """

    def __init__(self, name: str, strict: bool = False):
        if not isinstance(name, str):
            raise TypeError(f"torchpair.backend: 'name' must be a str, got {type(name).__name__}")
        if name not in BACKENDS:
            raise ValueError(f"torchpair.backend: unknown backend {name!r} (argument 'name'); valid backends: "
                             f"{', '.join(BACKENDS)}")
        if not isinstance(strict, bool):
            raise TypeError(f"torchpair.backend: 'strict' must be a bool, got {type(strict).__name__}")
        self.name, self.strict = name, strict

    def __enter__(self):
        if self.name == "keops":
            _require_pykeops()
        _stack().append((self.name, self.strict))
        return self

    def __exit__(self, *exc):
        _stack().pop()
        return False

    def __repr__(self) -> str:
        return f"torchpair.backend({self.name!r}, strict={self.strict})"


def __getattr__(name):
    if name == "KEOPS_METRICS":
        from ._keops import keops_metrics

        return keops_metrics()
    raise AttributeError(name)
