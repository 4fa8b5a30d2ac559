"""Boolean comparisons benchmark: bit-packed popcount engine vs scipy and torch.

    python benchmarks/bench_boolean.py [--quick] [--json out.json]

N = M = 2000 bool rows, D = 256 and D = 2048 (density 0.5), dense jaccard / dice / hamming
matrices: torchpair (float32 result) against scipy.spatial.distance.cdist on bool arrays
(float64, single-threaded C) and the torch matmul formulation (TT = X @ Y^T in float32 on
0/1 matrices, row sums, the same formula as torch ops; multi-threaded MKL). Also the lazy
top-10 tanimoto search (no N x M matrix) against dense torch + topk. One run, same process.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from _harness import machine, run, save, table  # noqa: E402

import torchpair as tp  # noqa: E402


def torch_matmul_counts(X, Y, metric):
    """The matmul formulation: counts from one float32 GEMM on the 0/1 matrices."""
    Xf, Yf = X.float(), Y.float()
    tt = Xf @ Yf.T
    nx, ny = Xf.sum(1, keepdim=True), Yf.sum(1).unsqueeze(0)
    ndiff = nx + ny - 2 * tt
    if metric == "jaccard":
        den = tt + ndiff
        return torch.where(den == 0, torch.zeros(()), ndiff / den)
    if metric == "dice":
        den = 2 * tt + ndiff
        return torch.where(den == 0, torch.zeros(()), ndiff / den)
    if metric == "hamming":
        return ndiff / X.shape[1]
    if metric == "tanimoto":
        den = tt + ndiff
        return torch.where(den == 0, torch.ones(()), tt / den)
    raise ValueError(metric)


def summary(results):
    """Per workload: torchpair's speed-up over each anchor, against the Boolean family's targets
    (>= 20x scipy, >= 2x the torch matmul formulation)."""
    by = {}
    for r in results:
        by.setdefault(r.workload, {})[r.impl] = r.median_s
    lines = ["| workload | torchpair (s) | speed-up vs scipy (target 20x) | speed-up vs torch matmul (target 2x) |",
             "|---|---:|---:|---:|"]
    for w, t in by.items():
        ours = t["torchpair"]
        sc = t.get("scipy cdist (bool)")
        mm = next(v for k, v in t.items() if k.startswith("torch matmul"))
        cell = lambda v, goal: "—" if v is None else f"{v / ours:.1f}x {'met' if v / ours >= goal else 'NOT met'}"
        lines.append(f"| {w} | {ours:.4f} | {cell(sc, 20)} | {cell(mm, 2)} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    repeat = 5
    n = 500 if args.quick else 2000
    results = []
    for d in (256, 2048):
        g = torch.Generator().manual_seed(d)
        X = torch.rand(n, d, generator=g) < 0.5
        Y = torch.rand(n, d, generator=g) < 0.5
        Xn, Yn = X.numpy(), Y.numpy()
        for metric in ("jaccard", "dice", "hamming"):
            w = f"{metric} N=M={n} D={d}"
            results.append(run(w, "torchpair", lambda: tp.cdist(X, Y, metric), repeat))
            results.append(run(w, "torch matmul counts (float32 GEMM)", lambda: torch_matmul_counts(X, Y, metric),
                               repeat))
            results.append(run(w, "scipy cdist (bool)", lambda: __import__("scipy.spatial.distance").spatial.distance
                               .cdist(Xn, Yn, metric), 1 if not args.quick else 1, warmup=0))
        w = f"tanimoto top-10 N=M={n} D={d}"
        results.append(run(w, "torchpair", lambda: tp.lazy(X, Y, "tanimoto").topk(10), repeat))
        results.append(run(w, "torch matmul counts + topk", lambda: torch_matmul_counts(X, Y, "tanimoto").topk(10),
                           repeat))
        # correctness of what was timed (not a test: the tests compare against scipy)
        ref = torch_matmul_counts(X, Y, "jaccard").double()
        assert torch.allclose(tp.cdist(X, Y, "jaccard").double(), ref, rtol=1e-5, atol=1e-6)
    print(machine())
    print(f"capability {torch.ops.torchpair._build_info()}")
    print(table(results))
    print()
    print(summary(results))
    if args.json:
        save(results, args.json)


if __name__ == "__main__":
    main()
