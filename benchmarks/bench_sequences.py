"""Token-sequence edit distances benchmark: tp.seq.pairwise against
rapidfuzz.process.cdist(workers=-1) and a Python loop over editdistance, in one run.

    python benchmarks/bench_sequences.py [--quick] [--json out.json] [--metrics a,b]

Workloads: 2000 x 2000 strings of length 5-40 over a 20-letter alphabet, and 500 x 500 of
length 200-300 (same alphabet). Every metric against rapidfuzz's cdist with all cores
(its normalized_distance/distance scorer, dtype matching torchpair's output); Levenshtein
also against a Python double loop over editdistance.eval, run on a subsample of rows and
extrapolated to the full matrix (said so in the table). Damerau-Levenshtein (O(len^2) per
pair in both libraries) runs the first 500 (short) / 100 (long) rows against all columns in
both libraries, one repeat, no warm-up. Encoding (tp.encode) is not timed;
rapidfuzz gets Python strings, its native input.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from _harness import Result, machine, run, save, table  # noqa: E402

import torchpair as tp  # noqa: E402

METRICS = ["levenshtein", "osa", "damerau_levenshtein", "indel", "lcs", "hamming", "jaro", "jaro_winkler",
           "prefix", "postfix"]


def scorer(metric):
    from rapidfuzz.distance import (OSA, DamerauLevenshtein, Hamming, Indel, Jaro, JaroWinkler, LCSseq,
                                    Levenshtein, Postfix, Prefix)
    m = {"levenshtein": Levenshtein, "osa": OSA, "damerau_levenshtein": DamerauLevenshtein, "indel": Indel,
         "lcs": LCSseq, "hamming": Hamming, "jaro": Jaro, "jaro_winkler": JaroWinkler, "prefix": Prefix,
         "postfix": Postfix}[metric]
    return (m.normalized_distance, np.float64) if metric in ("jaro", "jaro_winkler") else (m.distance, np.int64)


def strings(n, lo, hi, seed):
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrst"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi))) for _ in range(n)]


def workload(results, n, lo, hi, metrics, repeat, loop_rows, dl_rows=100):
    a, b = strings(n, lo, hi, 1), strings(n, lo, hi, 2)
    (xa, la), (xb, lb) = tp.encode(a, b)
    from rapidfuzz import process
    for metric in metrics:
        rows = n
        if metric == "damerau_levenshtein":
            # O(len^2) per pair in both libraries (no bit-parallel algorithm): the first
            # `dl_rows` rows against all columns, for both, said so in the workload name
            rows = min(n, dl_rows)
        w = f"{metric} {rows}x{n} len {lo}-{hi}"
        params = {"pad": True} if metric == "hamming" else {}
        xr, lr, ar = xa[:rows], la[:rows], a[:rows]
        rep = 1 if rows != n else repeat
        wu = 0 if rows != n else 1
        results.append(run(w, "torchpair", lambda: tp.seq.pairwise(xr, xb, metric, x_lengths=lr, y_lengths=lb,
                                                                    **params), rep, warmup=wu))
        fn, dt = scorer(metric)
        results.append(run(w, "rapidfuzz cdist(workers=-1)",
                           lambda: process.cdist(ar, b, scorer=fn, dtype=dt, workers=-1), rep, warmup=wu))
        if metric == "levenshtein":
            try:
                import editdistance
            except ImportError as exc:
                results.append(Result(w, "editdistance loop", None, note=f"failed: {exc}"))
                continue
            rows = a[:loop_rows]
            t = time.perf_counter()
            _ = [[editdistance.eval(s, u) for u in b] for s in rows]
            dt_loop = (time.perf_counter() - t) * (len(a) / len(rows))
            results.append(Result(w, f"editdistance loop ({loop_rows} rows, extrapolated)", dt_loop, [dt_loop]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes (smoke test)")
    ap.add_argument("--json")
    ap.add_argument("--metrics", default=",".join(METRICS))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    metrics = args.metrics.split(",")
    results: list[Result] = []
    scale = 4 if args.quick else 1
    workload(results, 2000 // scale, 5, 40, metrics, args.repeat, loop_rows=40 // scale, dl_rows=500 // scale)
    workload(results, 500 // scale, 200, 300, metrics, args.repeat, loop_rows=10 // scale, dl_rows=100 // scale)
    print(f"# {machine()}")
    print(table(results))
    if args.json:
        save(results, args.json)


if __name__ == "__main__":
    main()
