"""Entropic transport benchmark: tp.sinkhorn_divergence against GeomLoss and POT, side by side.

    python benchmarks/bench_sinkhorn.py [--quick] [--repeat R] [--peer-repeat R] [--json out.json]
                                        [--large [N ...]]

N = M in {2000, 5000}, D = 3, float32, uniform weights, blur 0.05, scaling 0.9, p = 2:
- the debiased divergence, and the divergence plus its gradient w.r.t. X, with torchpair
  (streamed), GeomLoss SamplesLoss("sinkhorn") tensorized (dense N x M) and online (KeOps,
  when pykeops is installed and compiles);
- POT's ot.bregman.sinkhorn_log on the dense cost |x - y|^2 / 2 with eps = blur^2 and the
  same number of iterations as the divergence's eps-scaling schedule (stopThr=0, so every
  iteration runs), for the OT(a, b) term alone.
One table: every workload's rows give each implementation's median and its time divided by
torchpair's (the speed-up). The peers are slow at N = 5000 (tens of seconds a call), so they
run --peer-repeat times there (default 1, no warm-up call); torchpair runs --repeat times.
--large [N ...] (off by default; N = M = 100,000 without a value, e.g. `--large 20000 50000
100000` for the scaling): torchpair only (the dense peers would need 40 GB per cost matrix at
100,000), time and peak resident memory of the divergence and of the divergence plus its
gradient, each in a fresh subprocess
(its VmHWM from /proc/self/status: getrusage's maxrss survives exec and would report the
parent; tracemalloc does not see torch's allocations).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from _harness import Result, machine, run, save, table  # noqa: E402

import torchpair as tp  # noqa: E402

BLUR, SCALING = 0.05, 0.9


def clouds(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 3, generator=g), torch.rand(n, 3, generator=g) * 0.9 + 0.05


def schedule_len(X, Y):
    _, log = tp.sinkhorn_divergence(X, Y, blur=BLUR, scaling=SCALING, log=True)
    return log["niter"]


def compare(results, n, repeat, peer_repeat):
    X, Y = clouds(n, seed=n)
    w = f"N=M={n} D=3 float32"
    ours = tp.sinkhorn_divergence(X, Y, blur=BLUR, scaling=SCALING)

    def with_grad(fn):
        def go():
            x = X.clone().requires_grad_()
            fn(x).backward()
        return go

    results.append(run(f"divergence {w}", "torchpair", lambda: tp.sinkhorn_divergence(X, Y, blur=BLUR,
                                                                                      scaling=SCALING), repeat))
    results.append(run(f"divergence+grad {w}", "torchpair",
                       with_grad(lambda x: tp.sinkhorn_divergence(x, Y, blur=BLUR, scaling=SCALING)), repeat))
    # the peers take tens of seconds per call at N = 5000: fewer calls, no warm-up there
    peer = dict(repeat=repeat, warmup=1) if n < 5000 else dict(repeat=peer_repeat, warmup=0)
    try:
        import geomloss
    except ImportError:
        geomloss = None
    if geomloss is not None:
        backends = ["tensorized"]
        try:
            import pykeops  # noqa: F401
            backends.append("online")
        except ImportError:
            pass
        for backend in backends:
            loss = geomloss.SamplesLoss("sinkhorn", p=2, blur=BLUR, scaling=SCALING, backend=backend)
            try:
                ref = loss(X, Y).item()
            except Exception as exc:  # KeOps may fail to compile on this machine
                print(f"GeomLoss {backend}: skipped ({type(exc).__name__}: {exc})")
                continue
            print(f"{w}: torchpair {ours.item():.7g}, GeomLoss {backend} {ref:.7g}")
            results.append(run(f"divergence {w}", f"GeomLoss {backend}", lambda: loss(X, Y), **peer))
            results.append(run(f"divergence+grad {w}", f"GeomLoss {backend}", with_grad(lambda x: loss(x, Y)),
                               **peer))
    try:
        import ot
    except ImportError:
        return
    iters = schedule_len(X, Y)
    C = (torch.cdist(X, Y) ** 2 / 2).numpy()
    a = np.full(n, 1.0 / n, dtype=np.float32)
    results.append(run(f"OT(a,b) {iters} iterations eps={BLUR}^2 {w}", "POT sinkhorn_log (dense cost)",
                       lambda: ot.bregman.sinkhorn_log(a, a, C, BLUR ** 2, numItermax=iters, stopThr=0.0,
                                                      warn=False), **peer))
    results.append(run(f"OT(a,b) {iters} iterations eps={BLUR}^2 {w}", "torchpair",
                       lambda: tp.sinkhorn_divergence(X, Y, blur=BLUR, scaling=SCALING, debias=False), repeat))


LARGE = textwrap.dedent("""
    import json, sys, time, torch, torchpair as tp
    n, grad = int(sys.argv[1]), sys.argv[2] == "1"
    g = torch.Generator().manual_seed(0)
    X, Y = torch.rand(n, 3, generator=g), torch.rand(n, 3, generator=g)
    X.requires_grad_(grad)
    t = time.perf_counter()
    v = tp.sinkhorn_divergence(X, Y, blur=%r, scaling=%r)
    if grad:
        v.backward()
    dt = time.perf_counter() - t
    # VmHWM: this process's own peak (ru_maxrss survives exec, so it would report the
    # benchmark's parent process, which held the dense peers' matrices, when that was larger)
    hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
    print(json.dumps({"seconds": dt, "maxrss_mib": hwm / 1024, "value": v.item()}))
""" % (BLUR, SCALING))


def large(n):
    rows = []
    for grad in (False, True):
        out = subprocess.run([sys.executable, "-c", LARGE, str(n), "1" if grad else "0"], capture_output=True,
                             text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append((f"divergence{'+grad' if grad else ''} N=M={n} D=3 float32", r))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="N = M = 2000 only")
    parser.add_argument("--large", type=int, nargs="*", metavar="N",
                        help="also time torchpair alone at N = M (default 100,000): time and peak memory")
    parser.add_argument("--repeat", type=int, default=3, help="calls of torchpair per workload")
    parser.add_argument("--peer-repeat", type=int, default=1, help="calls of each peer per workload at N = 5000")
    parser.add_argument("--json")
    args = parser.parse_args()
    results = []
    for n in ([2000] if args.quick else [2000, 5000]):
        compare(results, n, args.repeat, args.peer_repeat)
    print(machine())
    print(table(results))
    if args.large is not None:
        print("| workload | torchpair (s) | peak RSS (MiB) |")
        print("|---|---:|---:|")
        for n in args.large or [100_000]:
            for workload, r in large(n):
                print(f"| {workload} | {r['seconds']:.2f} | {r['maxrss_mib']:.0f} |")
    if args.json:
        save(results, args.json)


if __name__ == "__main__":
    main()
