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


#: Warm-up time before an implementation is timed (at least `warmup` calls, more until this
#: much time has passed). Two effects make whichever row comes first after another look slow:
#: BLAS worker threads busy-wait after a call (numpy's OpenBLAS for ~0.1 s), taking the cores
#: from the next implementation, which then runs several times slower; and an idle virtual CPU
#: takes a while to get back to full speed.
WARMUP_S = 0.3


def _timed_call(fn) -> float:
    """Wall time of one call, after collecting the previous calls' garbage."""
    gc.collect()
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def timeit(fn, repeat: int = 5, warmup: int = 1, budget_s: float | None = None) -> list[float]:
    """Wall times of `repeat` calls after a warm-up of `warmup` calls and at least WARMUP_S
    seconds (stops early past budget_s)."""
    start = time.perf_counter()
    calls = 0
    while calls < warmup or (time.perf_counter() - start < WARMUP_S and calls < 100):
        fn()
        calls += 1
    times = []
    start = time.perf_counter()
    for _ in range(repeat):
        times.append(_timed_call(fn))
        if budget_s is not None and time.perf_counter() - start > budget_s:
            break
    return times


def run(workload: str, impl: str, fn, repeat=5, warmup=1, budget_s=None, size=None) -> Result:
    """Times fn; an anchor that fails is reported in the result's note, never hidden."""
    try:
        times = timeit(fn, repeat=repeat, warmup=warmup, budget_s=budget_s)
        return Result(workload, impl, statistics.median(times), times, size=size)
    except Exception as exc:  # noqa: BLE001 - reported, not swallowed
        return Result(workload, impl, None, [], note=f"failed: {type(exc).__name__}: {exc}"[:200], size=size)


def run_interleaved(workload: str, fns: dict, repeat=5, warmup=1, size=None) -> list[Result]:
    """Times several implementations of one workload in rounds (one call of each per round),
    so a slow stretch of a noisy machine hits all of them alike; their ratios are what the
    x-GEMM targets compare. Use for implementations on torch's thread pool only: a numpy
    anchor's busy-waiting BLAS threads would slow the call after it (see WARMUP_S)."""
    try:
        for fn in fns.values():
            timeit(fn, repeat=0, warmup=warmup)
        times = {name: [] for name in fns}
        for _ in range(repeat):
            for name, fn in fns.items():
                times[name].append(_timed_call(fn))
        return [Result(workload, name, statistics.median(ts), ts, size=size) for name, ts in times.items()]
    except Exception as exc:  # noqa: BLE001 - reported, not swallowed
        note = f"failed: {type(exc).__name__}: {exc}"[:200]
        return [Result(workload, name, None, [], note=note, size=size) for name in fns]


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
