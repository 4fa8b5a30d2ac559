"""Streamed consumers benchmark: kNN and the lazy reductions, side by side.

    python benchmarks/bench_consumers.py [--quick] [--json out.json]

kNN k=10, N=M=20000, D=32, float32: torchpair against sklearn NearestNeighbors(brute) and its
ArgKmin reduction, pykeops argKmin (CPU) and chunked torch.cdist + topk. logsumexp,
softmax_matmul, min/argmin, sum and the backward of matmul against pykeops, same sizes.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _harness import machine, run, save, table  # noqa: E402

import torchpair as tp  # noqa: E402


def knn(results, n, d, k, repeat):
    torch.manual_seed(0)
    X, Y = torch.randn(n, d), torch.randn(n, d)
    w = f"kNN k={k} N=M={n} D={d}"
    results.append(run(w, "torchpair", lambda: tp.knn(X, Y, k), repeat))

    def chunked():
        out = []
        for i in range(0, n, 2048):
            out.append(torch.cdist(X[i:i + 2048], Y).topk(k, largest=False))
        return out

    results.append(run(w, "chunked torch.cdist + topk", chunked, repeat))
    try:
        from sklearn.neighbors import NearestNeighbors
        Xn, Yn = X.numpy(), Y.numpy()
        nn = NearestNeighbors(n_neighbors=k, algorithm="brute", n_jobs=2).fit(Yn)
        results.append(run(w, "sklearn NearestNeighbors(brute)", lambda: nn.kneighbors(Xn), repeat))
        try:
            from sklearn.metrics._pairwise_distances_reduction import ArgKmin
            results.append(run(w, "sklearn ArgKmin", lambda: ArgKmin.compute(Xn, Yn, k, metric="euclidean",
                                                                               return_distance=True), repeat))
        except ImportError:
            pass
    except ImportError:
        pass
    try:
        from pykeops.torch import LazyTensor

        def keops():
            D2 = ((LazyTensor(X[:, None, :]) - LazyTensor(Y[None, :, :])) ** 2).sum(-1)
            return D2.Kmin_argKmin(k, dim=1)

        results.append(run(w, "pykeops Kmin_argKmin", keops, max(1, repeat // 2), budget_s=120))
    except ImportError:
        pass


def reductions(results, n, d, c, repeat):
    torch.manual_seed(0)
    g = 1.0 / d
    X, Y, V = torch.randn(n, d), torch.randn(n, d), torch.randn(n, c)
    K = tp.lazy(X, Y, "rbf", gamma=g)
    ours = {
        "logsumexp": lambda: K.logsumexp(-1),
        "softmax_matmul": lambda: K.softmax_matmul(V),
        "sum": lambda: K.sum(-1),
        "min/argmin": lambda: K.min(-1),
    }
    try:
        from pykeops.torch import LazyTensor
        x, y = LazyTensor(X[:, None, :]), LazyTensor(Y[None, :, :])
        Kk = (-g * ((x - y) ** 2).sum(-1)).exp()
        keops = {
            "logsumexp": lambda: Kk.logsumexp(dim=1),
            "softmax_matmul": lambda: Kk.sumsoftmaxweight(LazyTensor(V[None, :, :]), dim=1),
            "sum": lambda: Kk.sum(dim=1),
            "min/argmin": lambda: Kk.min_argmin(dim=1),
        }
    except ImportError:
        keops = {}
    for name, fn in ours.items():
        w = f"lazy rbf {name} N=M={n} D={d}" + (f" C={c}" if name == "softmax_matmul" else "")
        results.append(run(w, "torchpair", fn, repeat))
        if name in keops:
            results.append(run(w, "pykeops", keops[name], max(1, repeat // 2), budget_s=120))

    Xg, Yg, Vg = (t.clone().requires_grad_(True) for t in (X, Y, V))

    def step(build):
        def f():
            for t in (Xg, Yg, Vg):
                t.grad = None
            build().sum().backward()
        return f

    w = f"lazy rbf matmul fwd+bwd N=M={n} D={d} C={c}"
    results.append(run(w, "torchpair", step(lambda: tp.lazy(Xg, Yg, "rbf", gamma=g) @ Vg), repeat))
    if keops:
        from pykeops.torch import LazyTensor
        results.append(run(w, "pykeops", step(lambda: (-g * ((LazyTensor(Xg[:, None, :]) - LazyTensor(Yg[None, :, :]))
                                                            ** 2).sum(-1)).exp() @ Vg), max(1, repeat // 2),
                           budget_s=240))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    ap.add_argument("--json", help="also write the raw results here")
    args = ap.parse_args(argv)
    n, repeat = (4000, 3) if args.quick else (20000, 5)
    results = []
    knn(results, n, 32, 10, repeat)
    reductions(results, n, 32, 4, repeat)
    print(f"machine: {machine()}\n")
    print(table(results))
    if args.json:
        save(results, args.json)


if __name__ == "__main__":
    main()
