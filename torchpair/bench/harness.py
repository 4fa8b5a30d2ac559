"""Timing helpers: medians of repeats, side-by-side tables with ratios.

Every workload runs torchpair and its anchors in the same process, one after another, so the
ratios compare like with like on a noisy machine.
"""
from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import time
from dataclasses import dataclass, field

import torch


@dataclass
class Result:
    workload: str
    impl: str
    median_s: float | None
    times: list = field(default_factory=list)
    note: str = ""
    size: int | None = None


def timeit(fn, repeat: int = 5, warmup: int = 1, budget_s: float | None = None) -> list[float]:
    """Wall times of `repeat` calls after `warmup` calls (stops early past budget_s)."""
    for _ in range(warmup):
        fn()
    times = []
    start = time.perf_counter()
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if budget_s is not None and time.perf_counter() - start > budget_s:
            break
    return times


#: Pause before each implementation is timed. BLAS worker threads busy-wait after a call
#: (numpy's OpenBLAS for ~0.1 s): on a 2-core machine the next implementation timed would
#: share its cores with them, so whichever row follows a numpy/sklearn anchor looked slower
#: (tp.pairwise linear, 2000 x 2000 x 32: 8.1 ms right after a numpy GEMM, 2.5 ms 0.3 s later).
SETTLE_S = 0.3


def run(workload: str, impl: str, fn, repeat=5, warmup=1, budget_s=None, size=None) -> Result:
    """Times fn; an anchor that fails is reported in the result's note, never hidden."""
    time.sleep(SETTLE_S)
    try:
        times = timeit(fn, repeat=repeat, warmup=warmup, budget_s=budget_s)
        return Result(workload, impl, statistics.median(times), times, size=size)
    except Exception as exc:  # noqa: BLE001 - reported, not swallowed
        return Result(workload, impl, None, [], note=f"failed: {type(exc).__name__}: {exc}"[:200], size=size)


def machine() -> str:
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads")


def table(results: list[Result], reference: str = "torchpair") -> str:
    """Markdown table: one row per (workload, impl), with impl time / torchpair time."""
    lines = ["| workload | implementation | median (s) | time vs torchpair |", "|---|---|---:|---:|"]
    by_workload: dict[str, list[Result]] = {}
    for r in results:
        by_workload.setdefault(r.workload, []).append(r)
    for w, rows in by_workload.items():
        ref = next((r.median_s for r in rows if r.impl == reference and r.median_s), None)
        for r in rows:
            if r.median_s is None:
                lines.append(f"| {w} | {r.impl} | — | {r.note} |")
                continue
            ratio = f"{r.median_s / ref:.2f}x" if ref else "—"
            lines.append(f"| {w} | {r.impl} | {r.median_s:.4f} | {ratio} |")
    return "\n".join(lines)


def save(results: list[Result], path: str) -> None:
    with open(path, "w") as f:
        json.dump([r.__dict__ for r in results], f, indent=1)
