"""The torchpair command line: ``python -m torchpair`` (or the ``torchpair`` script).

    torchpair demo                      what torchpair does, on data that ships with the install
    torchpair bench [--quick] [--out DIR] [--workload NAME ...]
                                        torchpair side by side with torch/scipy/sklearn/pykeops/...
    torchpair bench --sweep [--only PARTS] [--out DIR]
                                        the shape sweep: torchpair against the best installed peer
                                        on every shape (sweep.md, sweep.json, sweep.png)
    torchpair info                      versions, build, backends and the metric catalog

Errors a user can cause (an unknown workload, an unwritable --out) are one line on stderr and
exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys


class CLIError(Exception):
    """A user error, reported as one line."""


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="torchpair", description="torchpair: pairwise comparisons for PyTorch.")
    sub = ap.add_subparsers(dest="command", metavar="{demo,bench,info}")
    sub.required = True

    demo = sub.add_parser("demo", help="a two-minute tour on bundled data (what `make demo` runs)",
                          description="Runs each capability on data that ships with the install (scikit-learn's "
                                      "digits, generated point clouds and words) and prints results and timings.")
    demo.add_argument("--quick", action="store_true", help="smaller problem sizes (for tests)")

    bench = sub.add_parser("bench", help="side-by-side benchmark report with plots",
                           description="Times torchpair and every installed anchor on the same workloads; writes "
                                       "report.md and one PNG plot per workload.")
    bench.add_argument("--quick", action="store_true", help="small sizes, few repeats (under 3 minutes)")
    bench.add_argument("--out", default="torchpair-bench", help="output directory (default: ./torchpair-bench)")
    bench.add_argument("--workload", action="append", metavar="NAME",
                       help="run only this workload (repeatable); see --list")
    bench.add_argument("--list", action="store_true", help="list the workloads and exit")
    bench.add_argument("--no-progress", action="store_true", help="no progress bar")
    bench.add_argument("--sweep", action="store_true",
                       help="the shape sweep instead: torchpair against the best installed peer on every shape "
                            "(writes sweep.md, sweep.json and sweep.png to --out)")
    bench.add_argument("--only", metavar="PARTS",
                       help="with --sweep: comma-separated parts to run (default: all; see --list)")
    bench.add_argument("--budget", type=float, default=1.0, metavar="S",
                       help="with --sweep: timed seconds per implementation and row (default 1.0)")

    info = sub.add_parser("info", help="versions, build, backends and the metric catalog",
                          description="Prints torchpair's and torch's versions, how the native library was built, "
                                      "which backends are available and the metric catalog.")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    return ap


# ---- info ------------------------------------------------------------------------------
def _keops_status() -> str:
    # Metadata only: importing pykeops prints its CUDA probe to stdout and would spoil --json.
    import importlib.metadata

    try:
        return f"installed (pykeops {importlib.metadata.version('pykeops')}; CPU mode compiles with g++)"
    except importlib.metadata.PackageNotFoundError:
        return "not installed (pip install torchpair[keops])"


def info_data() -> dict:
    import torch

    import torchpair as tp

    build = json.loads(torch.ops.torchpair._build_info())
    rows = []
    for name in tp.metrics():
        m = tp.metric_info(name)
        rows.append({"name": m["name"], "aliases": m.get("aliases", []), "family": m.get("family"),
                     "kind": m.get("kind"), "differentiable": m.get("differentiable"),
                     "keops": m.get("keops", False)})
    return {
        "torchpair": tp.__version__,
        "torch": torch.__version__,
        "library": tp.library_path,
        "build": build,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "backends": {"native CPU": "available",
                     "CUDA": "available" if torch.cuda.is_available() else "not available (no CUDA device/build)",
                     "KeOps": _keops_status()},
        "metrics": rows,
    }


def cmd_info(args) -> int:
    d = info_data()
    if args.json:
        print(json.dumps(d, indent=1))
        return 0
    print(f"torchpair {d['torchpair']}  (torch {d['torch']}, CPU capability {d['cpu_capability']}, "
          f"{d['threads']} threads)")
    print(f"native library: {d['library']}")
    print("build: " + ", ".join(f"{k}={v}" for k, v in d["build"].items()))
    print("backends:")
    for k, v in d["backends"].items():
        print(f"  {k:<11} {v}")
    print(f"\nmetric catalog ({len(d['metrics'])} metrics):")
    header = ("name", "aliases", "family", "kind", "differentiable", "keops")
    table = [header] + [(m["name"], ",".join(m["aliases"]) or "-", m["family"], m["kind"],
                         "yes" if m["differentiable"] else "no", "yes" if m["keops"] else "no") for m in d["metrics"]]
    widths = [max(len(str(r[i])) for r in table) for i in range(len(header))]
    for i, r in enumerate(table):
        print(("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths))).rstrip())
        if i == 0:
            print("  " + "  ".join("-" * w for w in widths))
    return 0


# ---- bench -----------------------------------------------------------------------------
def cmd_bench(args) -> int:
    from .bench import WORKLOADS
    from .bench.report import markdown, plot, run_workloads

    if args.sweep or args.only:
        return _cmd_sweep(args)
    if args.list:
        for w in WORKLOADS.values():
            print(f"{w.name:<26} {w.title}")
        return 0
    names = args.workload or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise CLIError(f"unknown workload {unknown[0]!r} (argument --workload); valid: {', '.join(WORKLOADS)}")
    _check_writable(args.out)
    results = run_workloads(names, quick=args.quick, progress=not args.no_progress)
    report = markdown(results, quick=args.quick)
    plots = plot(results, args.out)
    path = os.path.join(args.out, "report.md")
    with open(path, "w") as f:
        f.write(report + "\n")
    print(report)
    print(f"\nwrote {path} and {len(plots)} plot(s) in {args.out}")
    return 0


def _cmd_sweep(args) -> int:
    from .bench import sweep

    if args.list:
        print(" ".join(sweep.PARTS))
        return 0
    if not args.sweep:
        raise CLIError("--only needs --sweep")
    parts = [p.strip() for p in args.only.split(",") if p.strip()] if args.only else list(sweep.PARTS)
    unknown = [p for p in parts if p not in sweep.PARTS]
    if unknown or not parts:
        raise CLIError(f"unknown part {(unknown or [''])[0]!r} (argument --only); valid: {','.join(sweep.PARTS)}")
    if not args.budget > 0:
        raise CLIError(f"--budget must be positive, got {args.budget}")
    out = args.out if args.out != "torchpair-bench" else "torchpair-sweep"
    _check_writable(out)
    log = (lambda line: print(line, file=sys.stderr, flush=True)) if not args.no_progress else None
    results = sweep.run_sweep(parts, budget_s=args.budget, log=log)
    md, png = sweep.write(results, out)
    with open(md) as f:
        print(f.read())
    print(f"wrote {md}" + (f" and {png}" if png else " (no plot: matplotlib is not installed)" if png is None else ""))
    return 0


def _check_writable(out: str) -> None:
    try:
        os.makedirs(out, exist_ok=True)
        probe = os.path.join(out, ".torchpair-write-test")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as exc:
        raise CLIError(f"cannot write to --out {out!r}: {exc.strerror or exc}") from None


def cmd_demo(args) -> int:
    from .demo import run_demo

    run_demo(quick=args.quick)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return {"demo": cmd_demo, "bench": cmd_bench, "info": cmd_info}[args.command](args)
    except CLIError as exc:
        print(f"torchpair {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
