"""Runs workloads and writes ``report.md`` plus one PNG plot (time vs size) per workload."""
from __future__ import annotations

import datetime
import os
import sys

from .harness import Result, machine, run
from .workloads import WORKLOADS, Workload


def run_workloads(names: list[str], quick: bool, progress: bool = True) -> list[Result]:
    plan = [(WORKLOADS[n], size) for n in names for size in (WORKLOADS[n].quick_sizes if quick else WORKLOADS[n].sizes)]
    repeat, budget = (3, 10.0) if quick else (5, 60.0)
    try:
        from tqdm import tqdm
        bar = tqdm(plan, desc="bench", unit="case", disable=not progress, file=sys.stderr)
    except ImportError:  # progress is a nicety; the report does not depend on it
        bar = plan
    results: list[Result] = []
    for workload, size in bar:
        if hasattr(bar, "set_postfix_str"):
            bar.set_postfix_str(f"{workload.name} n={size}")
        label = f"{workload.name} n={size}"
        for impl in workload.setup(size):
            if impl.fn is None:
                results.append(Result(workload.name, impl.name, None, note=impl.note, size=size))
                continue
            r = run(label, impl.name, impl.fn, repeat=max(1, round(repeat * impl.repeat_scale)), budget_s=budget,
                    size=size)
            r.workload = workload.name
            results.append(r)
    return results


def _ratio(r: Result, ref: float | None) -> str:
    if r.median_s is None or not ref:
        return "—"
    return f"{r.median_s / ref:.2f}x"


def markdown(results: list[Result], quick: bool) -> str:
    from torchpair import __version__

    out = [
        "# torchpair benchmark report",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
        f"- machine: {machine()}",
        f"- torchpair {__version__}; mode: {'quick' if quick else 'full'}",
        "- median wall time of repeats; 'vs torchpair' is the anchor's time divided by torchpair's "
        "(above 1x: torchpair is faster).",
        "",
    ]
    for name in dict.fromkeys(r.workload for r in results):
        w: Workload = WORKLOADS[name]
        rows = [r for r in results if r.workload == name]
        out += [f"## {w.title}", "", f"![{name}]({name}.png)", "",
                f"| {w.size_label} | implementation | median (s) | vs torchpair |", "|---:|---|---:|---:|"]
        for size in dict.fromkeys(r.size for r in rows):
            same = [r for r in rows if r.size == size]
            ref = next((r.median_s for r in same if r.impl == "torchpair"), None)
            for r in same:
                t = f"{r.median_s:.4f}" if r.median_s is not None else r.note
                out.append(f"| {size} | {r.impl} | {t} | {_ratio(r, ref)} |")
        out.append("")
    return "\n".join(out)


def plot(results: list[Result], out_dir: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for name in dict.fromkeys(r.workload for r in results):
        w = WORKLOADS[name]
        rows = [r for r in results if r.workload == name and r.median_s is not None]
        fig, ax = plt.subplots(figsize=(6, 4))
        for impl in dict.fromkeys(r.impl for r in rows):
            pts = sorted((r.size, r.median_s) for r in rows if r.impl == impl)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=impl,
                    linewidth=2.5 if impl == "torchpair" else 1.2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(w.size_label)
        ax.set_ylabel("median time (s)")
        ax.set_title(w.title, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{name}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
