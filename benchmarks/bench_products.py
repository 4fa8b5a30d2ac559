"""The plain product (`linear`: K = X Y^T) against `x @ y.T` over shapes, side by side.

    python benchmarks/bench_products.py [--repeat 15] [--threads 2] [--json out.json]

`linear` is the one metric whose torch formula is the GEMM itself, so this is the ratio of
our product (PanelGemm, csrc/cpu/panel_gemm.h, for 1-256 features on AVX2/AVX512; BLAS
above) to the BLAS call torch makes for the same product. Shapes: the catalog benchmarks'
shape (2000 x 2000 x 32) in float32 and float64, the feature counts around it (3 to 257: 257 is
past the kernel's limit, so it shows the BLAS path), tall and wide results, small ones where
the fixed cost of a call dominates (below 2^21 multiply-adds a source calls BLAS), and batches
of small matrices (against `x @ y.mT`, a batched GEMM). Both are timed in alternating rounds
(medians), in one process, on torch's thread pool.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _harness import machine, run_interleaved, save  # noqa: E402

import torchpair as tp  # noqa: E402

F32, F64 = torch.float32, torch.float64
SHAPES = [  # (batch or None, n, m, features, dtype)
    (None, 2000, 2000, 32, F32), (None, 2000, 2000, 32, F64),
    (None, 2000, 2000, 3, F32), (None, 2000, 2000, 8, F32), (None, 2000, 2000, 64, F32),
    (None, 2000, 2000, 128, F32), (None, 2000, 2000, 256, F32), (None, 2000, 2000, 257, F32),
    (None, 1000, 1000, 256, F64), (None, 20000, 200, 32, F32), (None, 200, 20000, 32, F32),
    (None, 1000, 1000, 32, F32), (None, 300, 300, 32, F32), (None, 100, 100, 32, F32), (None, 20, 20, 32, F32),
    (1000, 16, 16, 32, F32), (300, 64, 64, 32, F32), (100, 100, 100, 32, F32), (16, 300, 300, 32, F32),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"# linear against x @ y.T ({machine()}, capability {torch.backends.cpu.get_cpu_capability()})\n")
    print("| [batch x] n x m x features | dtype | torchpair (ms) | x @ y.T (ms) | x @ y.T / torchpair |")
    print("|---|---|---:|---:|---:|")
    gen = torch.Generator().manual_seed(0)
    results = []
    for batch, n, m, d, dtype in SHAPES:
        lead = () if batch is None else (batch,)
        x = torch.randn(*lead, n, d, generator=gen, dtype=dtype)
        y = torch.randn(*lead, m, d, generator=gen, dtype=dtype)
        workload = ("" if batch is None else f"{batch} x ") + f"{n} x {m} x {d}"
        rows = run_interleaved(workload, {"torchpair": lambda: tp.pairwise(x, y, "linear"), "x @ y.T": lambda: x @ y.mT},
                               repeat=args.repeat, warmup=3)
        results += rows
        ours, anchor = rows[0].median_s, rows[1].median_s
        ratio = f"{anchor / ours:.2f}x" if ours and anchor else rows[0].note or rows[1].note
        print(f"| {workload} | {str(dtype).replace('torch.', '')} | {ours * 1e3:.3f} | {anchor * 1e3:.3f} | {ratio} |",
              flush=True)
    if args.json:
        save(results, args.json)


if __name__ == "__main__":
    main()
