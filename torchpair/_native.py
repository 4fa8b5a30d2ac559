"""Loads libtorchpair.so after checking it matches the installed torch release.

The native library is built against one torch release (pinned in pyproject.toml) and only
works with it; loading it under another release could crash, so we refuse with a message
naming both versions instead.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

_LIBRARY_NAME = "libtorchpair.so"
_loaded_path: str | None = None


def _release(version: str) -> str:
    """'2.13.0+cpu' -> '2.13.0'."""
    return version.split("+", 1)[0]


def check_torch_version(built: str, installed: str) -> None:
    if _release(built) != _release(installed):
        raise ImportError(
            f"torchpair's native library was built against torch {_release(built)}, but torch "
            f"{installed} is installed. Install torch=={_release(built)} (pip install "
            f"torch=={_release(built)}) or rebuild torchpair against torch {_release(installed)}."
        )


def _candidates(package_paths) -> list[Path]:
    override = os.environ.get("TORCHPAIR_LIBRARY")
    if override:
        return [Path(override)]
    return [Path(p) / "lib" / _LIBRARY_NAME for p in package_paths]


def load(package_paths) -> str:
    """Checks the torch version and loads the library once; returns its path."""
    global _loaded_path
    if _loaded_path is not None:
        return _loaded_path
    try:
        from . import _build_config
    except ImportError as exc:  # pragma: no cover - only on a broken install
        raise ImportError(
            "torchpair is not built: run `make build` (or `pip install --no-build-isolation -e .`)"
        ) from exc
    check_torch_version(_build_config.TORCH_VERSION, torch.__version__)
    for path in _candidates(package_paths):
        if path.is_file():
            torch.ops.load_library(str(path))
            _loaded_path = str(path)
            return _loaded_path
    searched = ", ".join(str(p) for p in _candidates(package_paths))
    raise ImportError(f"torchpair: native library {_LIBRARY_NAME} not found (searched: {searched})")


def library_path() -> str:
    assert _loaded_path is not None
    return _loaded_path
