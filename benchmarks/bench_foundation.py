"""Foundation benchmark: lazy rbf matmul and dense euclidean, side by side with the anchors.

    python benchmarks/bench_foundation.py [--quick] [--json out.json]

Lazy rbf matmul, float32, N = M = 20000, (D=3, C=1) and (D=64, C=16), forward and
forward+backward, against pykeops (CPU) and dense torch (exp(-g cdist^2) @ V); dense euclidean
N = M = 4000, D = 64 against torch.cdist and sklearn pairwise_distances. Medians of repeats.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _harness import machine, run, save, table  # noqa: E402

import torchpair as tp  # noqa: E402


def lazy_rbf(results, n, d, c, repeat):
    g = 1.0 / d
    torch.manual_seed(0)
    X, Y, V = torch.randn(n, d), torch.randn(n, d), torch.randn(n, c)
    w = f"lazy rbf matmul N=M={n} D={d} C={c}"

    def ours():
        return tp.lazy(X, Y, "rbf", gamma=g) @ V

    def dense():
        return torch.exp(-g * torch.cdist(X, Y) ** 2) @ V

    results.append(run(w + " fwd", "torchpair", ours, repeat))
    results.append(run(w + " fwd", "dense torch", dense, max(1, repeat // 2)))
    try:
        from pykeops.torch import LazyTensor

        def keops():
            x, y = LazyTensor(X[:, None, :]), LazyTensor(Y[None, :, :])
            return (-g * ((x - y) ** 2).sum(-1)).exp() @ V

        results.append(run(w + " fwd", "pykeops", keops, max(1, repeat // 2), budget_s=120))
    except ImportError:
        keops = None

    Xg, Yg, Vg = (t.clone().requires_grad_(True) for t in (X, Y, V))

    def backward(fn_builder):
        def step():
            for t in (Xg, Yg, Vg):
                t.grad = None
            fn_builder().sum().backward()
        return step

    results.append(run(w + " fwd+bwd", "torchpair", backward(lambda: tp.lazy(Xg, Yg, "rbf", gamma=g) @ Vg), repeat))
    results.append(run(w + " fwd+bwd", "dense torch",
                       backward(lambda: torch.exp(-g * torch.cdist(Xg, Yg) ** 2) @ Vg), max(1, repeat // 2)))
    if keops is not None:
        from pykeops.torch import LazyTensor

        def keops_graph():
            x, y = LazyTensor(Xg[:, None, :]), LazyTensor(Yg[None, :, :])
            return (-g * ((x - y) ** 2).sum(-1)).exp() @ Vg

        results.append(run(w + " fwd+bwd", "pykeops", backward(keops_graph), max(1, repeat // 2), budget_s=240))


def dense_euclidean(results, n, d, repeat):
    torch.manual_seed(0)
    X, Y = torch.randn(n, d), torch.randn(n, d)
    w = f"dense euclidean N=M={n} D={d}"
    results.append(run(w, "torchpair", lambda: tp.pairwise(X, Y, "euclidean"), repeat))
    results.append(run(w, "torch.cdist", lambda: torch.cdist(X, Y), repeat))
    try:
        from sklearn.metrics import pairwise_distances
        Xn, Yn = X.numpy(), Y.numpy()
        results.append(run(w, "sklearn pairwise_distances (n_jobs=2)",
                           lambda: pairwise_distances(Xn, Yn, metric="euclidean", n_jobs=2), repeat))
        from scipy.spatial.distance import cdist
        results.append(run(w, "scipy cdist", lambda: cdist(Xn, Yn, "euclidean"), max(1, repeat // 2)))
    except ImportError:
        pass


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    ap.add_argument("--json", help="also write the raw results here")
    args = ap.parse_args(argv)
    n_lazy, n_dense, repeat = (5000, 2000, 3) if args.quick else (20000, 4000, 5)
    results = []
    lazy_rbf(results, n_lazy, 3, 1, repeat)
    lazy_rbf(results, n_lazy, 64, 16, repeat)
    dense_euclidean(results, n_dense, 64, repeat)
    print(f"machine: {machine()}\n")
    print(table(results))
    if args.json:
        save(results, args.json)


if __name__ == "__main__":
    main()
