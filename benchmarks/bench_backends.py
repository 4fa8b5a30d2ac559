"""The same lazy calls under tp.backend("native") and tp.backend("keops").

    python benchmarks/bench_backends.py [--quick] [--device cpu|cuda] [--json out.json]

rbf kernel sums K @ V (forward, and forward + backward), logsumexp, softmax_matmul, min and
kNN k=10, and euclidean Chamfer, at N = M (20000 by default, 4000 with --quick), D = 32,
float32. Each call is timed under both backends in the same process (medians of repeats; the
table's ratio is keops time / native time). KeOps compiles each formula once on first use:
the warm-up call pays that, the timed calls do not. On a machine with a GPU, --device cuda
runs the same calls on CUDA tensors.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _harness import machine, run, save, table  # noqa: E402

import torchpair as tp  # noqa: E402

try:
    import pykeops.config as _pykeops_config

    # KeOps compiles each formula as one translation unit: link-time optimisation only adds
    # compile time (there is no other unit to inline across); -O3 stays.
    _pykeops_config.pykeops_base.cpp_flags = _pykeops_config.pykeops_base.cpp_flags.replace(" -flto=auto", "")
except ImportError:  # the keops rows then report the ImportError
    pass


def _calls(X, Y, V):
    def kv():
        return tp.lazy(X, Y, "rbf", gamma=0.1) @ V

    def kv_backward():
        x, y, v = (t.detach().requires_grad_(True) for t in (X, Y, V))
        (tp.lazy(x, y, "rbf", gamma=0.1) @ v).sum().backward()

    return {
        "rbf K @ V": kv,
        "rbf K @ V forward+backward": kv_backward,
        "rbf logsumexp(-1)": lambda: tp.lazy(X, Y, "rbf", gamma=0.1).logsumexp(-1),
        "rbf softmax_matmul(V)": lambda: tp.lazy(X, Y, "rbf", gamma=0.1).softmax_matmul(V),
        "euclidean min(-1)": lambda: tp.lazy(X, Y, "euclidean").min(-1),
        "kNN k=10 euclidean": lambda: tp.knn(X, Y, 10),
        "chamfer sqeuclidean": lambda: tp.chamfer(X, Y),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    n = args.n or (4000 if args.quick else 20000)
    d, c = 32, 8
    g = torch.Generator().manual_seed(0)
    X, Y = torch.randn(n, d, generator=g), torch.randn(n, d, generator=g)
    V = torch.randn(n, c, generator=g)
    X, Y, V = (t.to(args.device) for t in (X, Y, V))
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    results = []
    for name, fn in _calls(X, Y, V).items():
        w = f"{name} N=M={n} D={d}"
        for backend in ("native", "keops"):
            def timed(fn=fn, backend=backend):
                with tp.backend(backend, strict=True):
                    fn()
                sync()

            results.append(run(w, backend, timed, repeat=args.repeat, warmup=1, budget_s=300))
            r = results[-1]
            print(f"{w} [{backend}]: {r.median_s if r.median_s is not None else r.note}", file=sys.stderr, flush=True)
    print(f"# tp.backend: native vs keops ({machine()}, device {args.device})\n")
    print(table(results, reference="native").replace("time vs torchpair", "time vs native"))
    if args.json:
        save(results, args.json)


if __name__ == "__main__":
    main()
