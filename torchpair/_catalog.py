"""The metric catalog, read from the native library (its single source of truth)."""
from __future__ import annotations

import functools
import json

import torch


@functools.lru_cache(maxsize=None)
def _rows() -> tuple[dict, ...]:
    return tuple(json.loads(torch.ops.torchpair._catalog()))


def metrics() -> list[str]:
    """Canonical names of every metric in the catalog."""
    return [row["name"] for row in _rows()]


def metric_info(name: str) -> dict:
    """Metadata of one metric (by name or alias): family, kind (distance/similarity),
    parameters with their defaults, whether it is differentiable, accepted input and output
    dtypes, and whether ``tp.backend("keops")`` can run it (``"keops"``). Unknown names raise ValueError listing the valid ones."""
    if not isinstance(name, str):
        raise TypeError(f"torchpair.metric_info: 'name' must be a str, got {type(name).__name__}")
    for row in _rows():
        if name == row["name"] or name in row["aliases"]:
            info = json.loads(json.dumps(row))  # a copy the caller may modify
            from ._keops import TRANSLATIONS  # the KeOps backend's table (torchpair/_keops.py)

            info["keops"] = info["name"] in TRANSLATIONS
            return info
    raise ValueError(f"torchpair.metric_info: unknown metric {name!r}; valid metrics: {', '.join(metrics())}")
