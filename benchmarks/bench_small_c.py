"""Small-C products: lazy rbf `K @ V` and `softmax_matmul` (forward, and forward + backward)
for C = 1..32, the register path against the GEMM path in one process, interleaved.

    python benchmarks/bench_small_c.py [--n 20000] [--d 3 16] [--c 1 2 3 4 8 16 32]
        [--dtype float32 float64] [--consumer matmul softmax_matmul] [--backward] [--repeat 5]

TORCHPAIR_SMALL_PRODUCT_MAX picks the path per call (0: every C through the GEMM, as before
the register path; unset: the default cut-over). Each repeat times both paths back to back,
so a loaded machine slows both alike; the table gives medians, the ratio GEMM / registers,
and time(C) / time(C = 1) of the register path (the target: at most 1 + 0.25 (C - 1) for
C <= 8, and no C above time(C = 16)).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

import torchpair as tp

PATHS = {"registers": None, "gemm": "0"}


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def set_path(value):
    if value is None:
        os.environ.pop("TORCHPAIR_SMALL_PRODUCT_MAX", None)
    else:
        os.environ["TORCHPAIR_SMALL_PRODUCT_MAX"] = value


def workload(consumer, n, d, c, dtype, backward):
    torch.manual_seed(0)
    X, Y = torch.randn(n, d, dtype=dtype), torch.randn(n, d, dtype=dtype)
    V = torch.randn(n, c, dtype=dtype, requires_grad=backward)
    Xg = X.requires_grad_(backward)
    K = tp.lazy(Xg, Y, "rbf", gamma=1.0 / d)

    def fwd():
        return K @ V if consumer == "matmul" else K.softmax_matmul(V)

    if not backward:
        return lambda: fwd()

    def fwd_bwd():
        out = fwd()
        torch.autograd.grad(out, (Xg, V), torch.ones_like(out))

    return fwd_bwd


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--d", type=int, nargs="+", default=[3, 16])
    p.add_argument("--c", type=int, nargs="+", default=[1, 2, 3, 4, 8, 16, 32])
    p.add_argument("--dtype", nargs="+", default=["float32"])
    p.add_argument("--consumer", nargs="+", default=["matmul"])
    p.add_argument("--backward", action="store_true", help="time forward + backward (dX, dV)")
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args()
    print(f"# n = m = {a.n}, threads = {torch.get_num_threads()}, repeat = {a.repeat}, "
          f"{'forward + backward' if a.backward else 'forward'}")
    print("| consumer | dtype | D | C | registers (s) | GEMM (s) | GEMM / registers | registers: t(C) / t(1) |")
    print("|---|---|---|---|---|---|---|---|")
    for consumer in a.consumer:
        for dt in a.dtype:
            dtype = getattr(torch, dt)
            for d in a.d:
                base = None
                for c in a.c:
                    fn = workload(consumer, a.n, d, c, dtype, a.backward)
                    times = {k: [] for k in PATHS}
                    for k, v in PATHS.items():  # warm-up, both paths
                        set_path(v)
                        fn()
                    for _ in range(a.repeat):
                        for k, v in PATHS.items():
                            set_path(v)
                            times[k].append(timed(fn))
                    set_path(None)
                    med = {k: statistics.median(v) for k, v in times.items()}
                    if c == 1 or base is None:
                        base = med["registers"] if c == 1 else None
                    rel = f"{med['registers'] / base:.2f}" if base else "-"
                    print(f"| {consumer} | {dt} | {d} | {c} | {med['registers']:.4f} | {med['gemm']:.4f} | "
                          f"{med['gemm'] / med['registers']:.2f}x | {rel} |", flush=True)


if __name__ == "__main__":
    main()
