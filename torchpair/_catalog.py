"""The metric catalog, read from the native library (its single source of truth).

The native ``torchpair::_catalog()`` operator returns every row as JSON (csrc/catalog/); this
module turns them into typed rows (:class:`MetricInfo`, :class:`Param`) once, at import, so
Python code asks the catalog questions (``info(name).is_boolean``,
``info(name).output_dtype(x.dtype, y.dtype)``, ``info(name).default("coef0")``) instead of
comparing strings or restating defaults. ``tp.metrics()`` / ``tp.metric_info()`` are the
public views.
"""
from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any, Optional

import torch

from . import backends as _backends


class Family(str, enum.Enum):
    DISTANCE = "distance"
    KERNEL = "kernel"
    BOOLEAN = "boolean"
    SEQUENCE = "sequence"


class OutputDtype(str, enum.Enum):
    INPUT = "input"                            # the operands' dtype
    FLOAT32_OR_FLOAT64 = "float32_or_float64"  # float64 if an input is float64, else float32
    BOOL = "bool"
    INT64_OR_FLOAT64 = "int64_or_float64"      # int64; float64 when normalized (sequences)
    FLOAT64 = "float64"


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    type: str            # "float", "tensor", "bool", "int[3]"
    default_doc: str     # the default, in words
    default: Any         # the default value; None when it depends on the data or means "none"
    doc: str


@dataclasses.dataclass(frozen=True)
class MetricInfo:
    """One catalog row."""

    name: str
    aliases: tuple[str, ...]
    family: Family
    kind: str            # "distance" or "similarity"
    params: tuple[Param, ...]
    differentiable: bool
    input: str           # accepted input dtypes, in words
    output: str          # output dtype, in words
    output_rule: OutputDtype
    doc: str
    row: dict = dataclasses.field(repr=False, compare=False)  # the native JSON row

    @property
    def is_boolean(self) -> bool:
        return self.family is Family.BOOLEAN

    @property
    def is_sequence(self) -> bool:
        return self.family is Family.SEQUENCE

    @property
    def is_similarity(self) -> bool:
        """Larger is closer (kernels, similarities): nearest neighbours are the largest values."""
        return self.kind == "similarity"

    @property
    def is_distance(self) -> bool:
        return self.kind == "distance"

    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def param(self, name: str) -> Optional[Param]:
        for p in self.params:
            if p.name == name:
                return p
        return None

    def default(self, name: str):
        """The default value of parameter ``name`` (None: data-dependent or "none")."""
        p = self.param(name)
        if p is None:
            raise KeyError(f"metric {self.name!r} has no parameter {name!r}")
        return p.default

    def output_dtype(self, *input_dtypes: torch.dtype, normalized: bool = False) -> torch.dtype:
        """The result dtype for operands of ``input_dtypes`` (x's first)."""
        rule = self.output_rule
        if rule is OutputDtype.BOOL:
            return torch.bool
        if rule is OutputDtype.FLOAT64:
            return torch.float64
        if rule is OutputDtype.INT64_OR_FLOAT64:
            return torch.float64 if normalized else torch.int64
        if rule is OutputDtype.FLOAT32_OR_FLOAT64:
            return torch.float64 if torch.float64 in input_dtypes else torch.float32
        return input_dtypes[0]

    def as_dict(self) -> dict:
        """The public ``tp.metric_info`` dictionary (a fresh copy)."""
        info = json.loads(json.dumps(self.row))
        info["keops"] = _backends.supports("keops", self.name)
        return info


def _parse(row: dict) -> MetricInfo:
    params = tuple(Param(p["name"], p["type"], p["default"], p.get("default_value"), p["doc"]) for p in row["params"])
    return MetricInfo(row["name"], tuple(row["aliases"]), Family(row["family"]), row["kind"], params,
                      row["differentiable"], row["input"], row["output"], OutputDtype(row["output_dtype"]), row["doc"],
                      row)


# Read once at import (the library is loaded by then). Plain dicts: torch.compile traces a
# lookup in them. A name in two families (``hamming``: Boolean and sequence) maps to the
# first row; ``info(name, family=...)`` picks another.
_ROWS: tuple[MetricInfo, ...] = tuple(_parse(r) for r in json.loads(torch.ops.torchpair._catalog()))
_BY_NAME: dict[str, MetricInfo] = {}
_BY_FAMILY: dict[tuple[str, Family], MetricInfo] = {}
for _row in _ROWS:
    for _name in (_row.name, *_row.aliases):
        _BY_NAME.setdefault(_name, _row)
        _BY_FAMILY.setdefault((_name, _row.family), _row)
del _row, _name


def _rows() -> tuple[dict, ...]:
    """The native JSON rows (read-only use)."""
    return tuple(r.row for r in _ROWS)


def _unknown(name: str, what: str = "metric") -> ValueError:
    return ValueError(f"torchpair.metric_info: unknown {what} {name!r}; valid metrics: {', '.join(metrics())}")


def info(name: str, family: Optional[str] = None) -> MetricInfo:
    """The typed row of ``name`` (a canonical name or an alias); with ``family``, the row of
    that family (``info("hamming", family="sequence")``). Unknown names raise ValueError."""
    row = _BY_NAME.get(name) if family is None else _BY_FAMILY.get((name, Family(family)))
    if row is None:
        raise _unknown(name) if family is None else _unknown(name, f"{family} metric")
    return row


def metrics(family: Optional[str] = None) -> list[str]:
    """Canonical names of every metric in the catalog (each name once; ``hamming`` is both a
    Boolean and a sequence metric), or of one ``family``: "distance", "kernel", "boolean",
    "sequence"."""
    if family is not None:
        if not isinstance(family, str) or family not in Family._value2member_map_:
            raise ValueError(f"torchpair.metrics: unknown family {family!r} (argument 'family'); valid families: "
                             f"{', '.join(f.value for f in Family)}")
        return [r.name for r in _ROWS if r.family.value == family]
    names: list[str] = []
    for r in _ROWS:
        if r.name not in names:
            names.append(r.name)
    return names


def metric_info(name: str, family: Optional[str] = None) -> dict:
    """Metadata of one metric (by name or alias): family ("distance", "kernel", "boolean",
    "sequence"), kind (distance/similarity), parameters with their defaults (``default`` in
    words, ``default_value`` as a value or None when it depends on the data), whether it is
    differentiable, accepted input and output dtypes (``output_dtype``: the rule), and whether
    ``tp.backend("keops")`` can run it (``"keops"``). ``hamming`` names the Boolean metric;
    ``family="sequence"`` gives the token-sequence one. Unknown names raise ValueError listing
    the valid ones."""
    if not isinstance(name, str):
        raise TypeError(f"torchpair.metric_info: 'name' must be a str, got {type(name).__name__}")
    if family is not None and (not isinstance(family, str) or family not in Family._value2member_map_):
        raise ValueError(f"torchpair.metric_info: unknown family {family!r} (argument 'family'); valid families: "
                         f"{', '.join(f.value for f in Family)}")
    return info(name, family).as_dict()
