"""Headline workloads of the build that is imported, for before/after comparisons.

    python benchmarks/bench_regression.py [--repeat 7] [--json out.json]

Times each workload (median of `repeat` calls after one warm-up, and the first call of the
process separately) on the torchpair that `import torchpair` finds. To compare two builds,
run it under each (TORCHPAIR_LIBRARY selects a native library; an older checkout needs its
own Python package too) in alternation, several times, and compare medians: the machine's
noise is the floor of what a comparison can show.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

import torchpair as tp


def workloads():
    g = torch.Generator().manual_seed(0)

    def rn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g, dtype=dtype)

    X2k, Y2k = rn(2000, 32), rn(2000, 32)
    X20k3, Y20k3, V1 = rn(20000, 3), rn(20000, 3), rn(20000, 1)
    X10k, Y10k = rn(10000, 32), rn(10000, 32)
    P = rn(3000, 16, dtype=torch.float64)
    S1, S2 = rn(100, 8), rn(100, 8)
    Xg = rn(4000, 3).requires_grad_(True)
    Yg, Vg = rn(4000, 3), rn(4000, 4)
    Pg = rn(2000, 16, dtype=torch.float64).requires_grad_(True)
    return {
        "dense euclidean 2000x2000 D32": lambda: tp.pairwise(X2k, Y2k, "euclidean"),
        "dense rbf 2000x2000 D32": lambda: tp.pairwise(X2k, Y2k, "rbf"),
        "dense cityblock 2000x2000 D32": lambda: tp.pairwise(X2k, Y2k, "cityblock"),
        "dense linear 2000x2000 D32": lambda: tp.pairwise(X2k, Y2k, "linear"),
        "pdist euclidean 3000 D16 f64": lambda: tp.pdist(P, "euclidean"),
        "lazy rbf K@V 20000^2 D3 C1": lambda: tp.lazy(X20k3, Y20k3, "rbf") @ V1,
        "lazy logsumexp 20000^2 D3": lambda: tp.lazy(X20k3, Y20k3, "rbf").logsumexp(-1),
        "lazy softmax_matmul 20000^2 D3 C1": lambda: tp.lazy(X20k3, Y20k3, "rbf").softmax_matmul(V1),
        "knn k=10 10000^2 D32": lambda: tp.knn(X10k, Y10k, 10),
        "lazy sum 20000^2 D3": lambda: tp.lazy(X20k3, Y20k3, "euclidean").sum(-1),
        "matmul fwd+bwd 4000^2 D3 C4": lambda: torch.autograd.grad((tp.lazy(Xg, Yg, "rbf") @ Vg).sum(), Xg),
        "small pairwise rbf 100x100 D8": lambda: tp.pairwise(S1, S2, "rbf"),
        "logsumexp fwd+bwd 4000^2 D3": lambda: torch.autograd.grad(tp.lazy(Xg, Yg, "rbf").logsumexp(-1).sum(), Xg),
        "softmax_matmul fwd+bwd 4000^2 D3 C4": lambda: torch.autograd.grad(
            tp.lazy(Xg, Yg, "rbf").softmax_matmul(Vg).sum(), Xg),
        "pdist fwd+bwd 2000 D16 f64": lambda: torch.autograd.grad(tp.pdist(Pg, "euclidean").sum(), Pg),
        "chebyshev dense fwd+bwd 2000^2 D3": lambda: torch.autograd.grad(
            tp.pairwise(Xg[:2000], Yg[:2000], "chebyshev").sum(), Xg),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", default="", help="substring of the workload names to run")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    out = {}
    for name, fn in workloads().items():
        if args.only and args.only not in name:
            continue
        t0 = time.perf_counter()
        fn()
        first = time.perf_counter() - t0
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        out[name] = {"first_s": first, "median_s": statistics.median(times)}
        print(f"{name:40s} first {first * 1e3:9.2f} ms   median {statistics.median(times) * 1e3:9.2f} ms", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
