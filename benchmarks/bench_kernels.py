"""Kernel benchmark: dense N x M kernel matrices (sklearn and GP kernels), float32, side by side.

    python benchmarks/bench_kernels.py [--n 2000] [--d 32] [--repeat 7] [--only rbf,matern] [--json out.json]

For every sklearn kernel (and the GP kernels): torchpair `tp.pairwise`, sklearn
`pairwise_kernels(n_jobs=2)` (sklearn.gaussian_process kernels for matern /
rational_quadratic, which have no n_jobs), and the torch formula most users write (GEMM-based
where one exists, broadcasting `(x[:, None] - y[None])` otherwise). Also the machine's
float32 GEMM (`X @ Y.T`, the same N x M x D product) and each inner-product kernel's time
relative to it ("x GEMM", target at most 2x; the GEMM-family kernels, their torch formula and
the GEMM are timed in alternating rounds, so the ratios share the machine's noise). Kernels
have no scipy implementation: sklearn is the reference library of the ">= 3x" target. Medians
of repeats, all in one process.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from _harness import machine, run, run_interleaved, save, table  # noqa: E402
from bench_catalog import GEMM_IMPL, gemm_table, targets  # noqa: E402

import torchpair as tp  # noqa: E402


def torch_formulas(d):
    g = 1.0 / d
    s3, s5 = 3 ** 0.5, 5 ** 0.5

    def chi_terms(x, y):
        s, t = x[:, None] + y[None], x[:, None] - y[None]
        return torch.where(s == 0, 0.0, t * t / torch.where(s == 0, 1.0, s)).sum(-1)

    def matern15(x, y):
        t = s3 * torch.cdist(x, y)
        return (1 + t) * torch.exp(-t)

    return {
        "linear": lambda x, y: x @ y.T,
        "polynomial": lambda x, y: (g * (x @ y.T) + 1.0) ** 3,
        "sigmoid": lambda x, y: torch.tanh(g * (x @ y.T) + 1.0),
        "cosine_similarity": lambda x, y: torch.nn.functional.normalize(x, dim=-1) @ torch.nn.functional.normalize(y, dim=-1).T,
        "rbf": lambda x, y: torch.exp(-g * torch.cdist(x, y) ** 2),
        "laplacian": lambda x, y: torch.exp(-g * (x[:, None] - y[None]).abs().sum(-1)),
        "chi2": lambda x, y: torch.exp(-chi_terms(x, y)),
        "additive_chi2": lambda x, y: -chi_terms(x, y),
        "matern": matern15,
        "rational_quadratic": lambda x, y: 1.0 / (1.0 + 0.5 * torch.cdist(x, y) ** 2),
    }


# Kernels computed from one GEMM per tile (the "x GEMM" rows).
GEMM_KERNELS = {"linear", "polynomial", "sigmoid", "cosine_similarity", "rbf", "matern", "rational_quadratic"}


def sklearn_call(metric, xn, yn):
    from sklearn.metrics.pairwise import pairwise_kernels
    if metric == "matern":
        from sklearn.gaussian_process.kernels import Matern
        return lambda: Matern(length_scale=1.0, nu=1.5)(xn, yn)
    if metric == "rational_quadratic":
        from sklearn.gaussian_process.kernels import RationalQuadratic
        return lambda: RationalQuadratic()(xn, yn)
    name = "cosine" if metric == "cosine_similarity" else metric
    return lambda: pairwise_kernels(xn, yn, metric=name, n_jobs=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", "--metrics", dest="only", default="", help="comma-separated kernels (default: all)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    n, d = args.n, args.d
    torch.manual_seed(0)
    X, Y = torch.randn(n, d), torch.randn(n, d)
    Xp, Yp = X.abs(), Y.abs()  # chi2 kernels need non-negative features
    formulas = torch_formulas(d)
    metrics = args.only.split(",") if args.only else list(formulas)
    unknown = [m for m in metrics if m not in formulas]
    if unknown:
        ap.error(f"--only: no benchmark row for {unknown}; rows: {list(formulas)}")
    results = []
    w_gemm = f"float32 GEMM X @ Y.T N=M={n} D={d}"
    results.append(run(w_gemm, "torch matmul", lambda: X @ Y.T, args.repeat * 3))
    gemm_s = results[-1].median_s
    for metric in metrics:
        x, y = (Xp, Yp) if "chi2" in metric else (X, Y)
        xn, yn = x.numpy(), y.numpy()
        w = f"{metric} N=M={n} D={d} float32"
        ours = lambda: tp.pairwise(x, y, metric)  # noqa: E731
        formula = lambda: formulas[metric](x, y)  # noqa: E731
        if metric in GEMM_KERNELS:  # in rounds with the torch formula and the same-shape GEMM
            results.extend(run_interleaved(w, {"torchpair": ours, "torch formula": formula, GEMM_IMPL: lambda: x @ y.T},
                                           args.repeat * 2))
        else:
            results.append(run(w, "torchpair", ours, args.repeat))
            results.append(run(w, "torch formula", formula, args.repeat))
        results.append(run(w, "sklearn", sklearn_call(metric, xn, yn), max(1, args.repeat // 2), budget_s=60))
    print(f"# kernels, {machine()}")
    print(table(results))
    print()
    print(f"float32 GEMM X @ Y.T: {gemm_s:.5f} s = {2 * n * n * d / gemm_s / 1e9:.1f} GFLOP/s\n")
    print(gemm_table(results, results[0], GEMM_KERNELS))
    print("\nTargets (reference = sklearn; kernels have no scipy implementation):\n")
    print(targets(results))
    if args.json:
        save(results, args.json)


if __name__ == "__main__":
    main()
