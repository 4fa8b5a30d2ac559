"""The Boolean popcount engine's ISA paths side by side.

    python benchmarks/bench_boolean_paths.py [--threads T]

jaccard, N = M = 2000 bool rows, D = 256 and 2048: torchpair with each path this machine can
run (TORCHPAIR_POPCOUNT=scalar|avx2|avx512) and the torch matmul formulation, one run.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _harness import machine, run, table  # noqa: E402
from bench_boolean import torch_matmul_counts  # noqa: E402

import torchpair as tp  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    results = []
    paths = json.loads(torch.ops.torchpair._build_info())["popcount_paths"]
    for d in (256, 2048):
        g = torch.Generator().manual_seed(d)
        X = torch.rand(2000, d, generator=g) < 0.5
        Y = torch.rand(2000, d, generator=g) < 0.5
        w = f"jaccard N=M=2000 D={d}"
        for path in reversed(paths):
            os.environ["TORCHPAIR_POPCOUNT"] = path
            results.append(run(w, "torchpair" if path == paths[-1] else f"torchpair {path} path",
                               lambda: tp.cdist(X, Y, "jaccard"), 7))
        os.environ.pop("TORCHPAIR_POPCOUNT")
        results.append(run(w, "torch matmul counts (float32 GEMM)", lambda: torch_matmul_counts(X, Y, "jaccard"), 7))
    print(machine())
    print(f"threads {torch.get_num_threads()}")
    print(table(results))


if __name__ == "__main__":
    main()
