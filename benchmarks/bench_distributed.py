"""Sharded kNN and kernel sums on 1 and W processes (gloo over loopback, CPU).

    .venv/bin/python benchmarks/bench_distributed.py [--world 2] [--threads 2] [--quick]

The same workloads run (a) in one process on the full database with ``--threads`` threads
(``tp.knn``, ``tp.lazy(...) @ V``) and (b) on ``--world`` processes with ``--threads /
world`` threads each, every rank holding an equal shard of the database (``tpd.knn``,
``tpd.lazy(...) @ V``), so both use the same cores. Reported: medians of repeats (the W-process
time is the slowest rank's median, barrier-synchronised), the speed-up, the bytes each rank
received (``tpd.communication_stats``) and the cost model's prediction (docs/scaling.md).
The W-process results are checked against the one-process results.
"""
from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import socket
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))


def workloads(quick: bool):
    if quick:
        return {"knn": dict(n=500, m=40_000, d=32, k=10), "kernel_sum": dict(n=1_000, m=40_000, d=16, c=4)}
    return {"knn": dict(n=2_000, m=200_000, d=32, k=10), "kernel_sum": dict(n=4_000, m=100_000, d=16, c=4)}


def data(w, seed=0):
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(w["n"], w["d"], generator=g)
    y = torch.randn(w["m"], w["d"], generator=g)
    v = torch.randn(w["m"], w.get("c", 1), generator=g)
    return x, y, v


def timed(fn, repeat, sync=None):
    """(median wall seconds, median CPU seconds of this process, last output)."""
    fn()  # warm-up
    times, cpu = [], []
    for _ in range(repeat):
        if sync:
            sync()
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        cpu.append(time.process_time() - c)
        if sync:
            sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times), statistics.median(cpu), out


def single(args, out_path):
    import torch

    import torchpair as tp

    torch.set_num_threads(args.threads)
    res = {}
    for name, w in workloads(args.quick).items():
        x, y, v = data(w)
        if name == "knn":
            fn = lambda: tp.knn(x, y, w["k"])  # noqa: E731
        else:
            fn = lambda: tp.lazy(x, y, "rbf", gamma=0.1) @ v  # noqa: E731
        t, c, out = timed(fn, args.repeat)
        res[name] = {"median_s": t, "cpu_s": c}
        torch.save(tuple(out) if name == "knn" else out, out_path + f".{name}.pt")
    with open(out_path, "w") as f:
        json.dump(res, f)


def rank_main(rank, world, port, args, ref_path, out_path):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(max(1, args.threads // world))
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=300))
    import torchpair.distributed as tpd

    res = {}
    for name, w in workloads(args.quick).items():
        x, y, v = data(w)
        sizes = [w["m"] // world + (1 if r < w["m"] % world else 0) for r in range(world)]
        start = sum(sizes[:rank])
        ys, vs = y[start: start + sizes[rank]].contiguous(), v[start: start + sizes[rank]].contiguous()
        if name == "knn":
            fn = lambda: tpd.knn(x, ys, w["k"])  # noqa: E731
        else:
            e = tpd.lazy(x, ys, "rbf", gamma=0.1)
            fn = lambda: e @ vs  # noqa: E731
        fn()
        tpd.reset_communication_stats()
        fn()
        stats = tpd.communication_stats()
        t, c, out = timed(fn, args.repeat, sync=dist.barrier)
        ref = torch.load(ref_path + f".{name}.pt")
        if name == "knn":
            ok = bool(torch.equal(out.indices, ref[1])) and bool(torch.allclose(out.values, ref[0], 1e-5, 1e-5))
        else:
            ok = bool(torch.allclose(out, ref, rtol=1e-4, atol=1e-3))
        res[name] = {"median_s": t, "cpu_s": c, "bytes_received": stats["bytes_received"],
                     "collectives": stats["collectives"],
                     "matches_single_process": ok}
    all_res = [None] * world
    dist.all_gather_object(all_res, res)
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(all_res, f)
    dist.destroy_process_group()


def model_bytes(name, w, world):
    """docs/scaling.md: bytes received per rank (float32 values, int64 indices)."""
    size_exchange = (world - 1) * 5 * 8  # per expression built
    if name == "knn":
        return (world - 1) * w["n"] * w["k"] * (4 + 8) + size_exchange
    return 2 * (world - 1) * w["n"] * w["c"] * 4 // world + 2 * (world - 1) * 8 // world  # partial sums; flag


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="total threads (1 process) = sum over the W processes")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        ref_path = os.path.join(tmp, "single.json")
        p = ctx.Process(target=single, args=(args, ref_path))
        p.start()
        p.join()
        one = json.load(open(ref_path))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        out_path = os.path.join(tmp, "multi.json")
        procs = [ctx.Process(target=rank_main, args=(r, args.world, port, args, ref_path, out_path))
                 for r in range(args.world)]
        for q in procs:
            q.start()
        for q in procs:
            q.join(1800)
        multi = json.load(open(out_path))
    import torch

    print(f"# bench_distributed: {os.cpu_count()} cores, torch {torch.__version__}, {args.threads} threads in all, "
          f"world {args.world}, {'quick' if args.quick else 'full'} sizes; measured {time.strftime('%Y-%m-%d %H:%M')}")
    print("| workload | shape | 1 process (s) | %d processes (s) | speed-up | CPU s: 1 process / busiest rank | "
          "bytes received per rank | model | matches 1-process |" % args.world)
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for name, w in workloads(args.quick).items():
        t1 = one[name]["median_s"]
        tw = max(r[name]["median_s"] for r in multi)
        b = max(r[name]["bytes_received"] for r in multi)
        ok = all(r[name]["matches_single_process"] for r in multi)
        c1, cw = one[name]["cpu_s"], max(r[name]["cpu_s"] for r in multi)
        shape = ", ".join(f"{k}={v}" for k, v in w.items())
        print(f"| {name} | {shape} | {t1:.4f} | {tw:.4f} | {t1 / tw:.2f}x | {c1:.3f} / {cw:.3f} ({c1 / cw:.2f}x) | {b} | "
              f"{model_bytes(name, w, args.world)} | "
              f"{ok} |")


if __name__ == "__main__":
    main()
