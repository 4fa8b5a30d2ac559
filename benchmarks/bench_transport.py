"""Exact optimal transport benchmark: tp.emd2 against POT's ot.emd2, side by side.

    python benchmarks/bench_transport.py [--quick] [--json out.json]

n = m in {500, 1000, 2000, 4000}: 2-D uniform points, squared-euclidean cost, uniform weights,
float64, one problem (torchpair's solver is single-threaded per problem). Batched: B = 64
problems of n = m = 200: one tp.emd2 call (the problems in parallel across cores) against a
Python loop over ot.emd2. POT gets numItermax = 1e9 so both solve to optimality (its default
1e5 stops early from n = 2000 on); the costs are checked to agree to 1e-9.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from _harness import Result, machine, save, table  # noqa: E402

import torchpair as tp  # noqa: E402

NO_LIMIT = 10**9
CPU = []  # the same calls measured in process CPU time (a fairer measure on a busy machine)


def run(workload, impl, fn, repeat):
    """Median wall time (the harness's measure) and median process CPU time of the same calls."""
    import gc
    import statistics
    import time
    fn()
    wall, cpu = [], []
    for _ in range(repeat):
        gc.collect()
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    CPU.append(Result(workload, impl, statistics.median(cpu), cpu))
    return Result(workload, impl, statistics.median(wall), wall)


def problem(n, seed, B=None):
    r = np.random.default_rng(seed)
    shape = (n, 2) if B is None else (B, n, 2)
    X, Y = r.random(shape), r.random(shape)
    M = ((X[..., :, None, :] - Y[..., None, :, :]) ** 2).sum(-1)
    return np.ascontiguousarray(M)


def single(results, n, repeat):
    import ot
    M = problem(n, seed=n)
    a = np.full(n, 1.0 / n)
    Mt, at = torch.from_numpy(M), torch.from_numpy(a)
    ours, ref = tp.emd2(at, at, Mt).item(), ot.emd2(a, a, M, numItermax=NO_LIMIT)
    assert abs(ours - ref) <= 1e-9 * abs(ref), (ours, ref)
    w = f"emd2 n=m={n} 2-D sqeuclidean float64"
    results.append(run(w, "torchpair", lambda: tp.emd2(at, at, Mt), repeat))
    results.append(run(w, "POT ot.emd2", lambda: ot.emd2(a, a, M, numItermax=NO_LIMIT), repeat))


def batched(results, B, n, repeat):
    import ot
    M = problem(n, seed=B, B=B)
    a = np.full(n, 1.0 / n)
    Mt, at = torch.from_numpy(M), torch.from_numpy(a)
    ours = tp.emd2(at, at, Mt).numpy()
    ref = np.array([ot.emd2(a, a, M[k], numItermax=NO_LIMIT) for k in range(B)])
    np.testing.assert_allclose(ours, ref, rtol=1e-9)
    w = f"emd2 batch B={B} n=m={n} float64"
    results.append(run(w, "torchpair", lambda: tp.emd2(at, at, Mt), repeat))
    results.append(run(w, "POT ot.emd2 loop", lambda: [ot.emd2(a, a, M[k], numItermax=NO_LIMIT) for k in range(B)],
                       repeat))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = [500, 1000] if args.quick else [500, 1000, 2000, 4000]
    results = []
    for n in sizes:
        single(results, n, 3 if n >= 4000 else args.repeat)
    batched(results, 64, 200, args.repeat)
    print(machine())
    print("wall time:")
    print(table(results))
    print("process CPU time (all threads):")
    print(table(CPU))
    if args.json:
        save(results + CPU, args.json)


if __name__ == "__main__":
    main()
