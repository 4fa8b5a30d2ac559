"""Numeric catalog benchmark: every metric, dense N = M = 2000, D = 32, float32.

    python benchmarks/bench_catalog.py [--quick] [--repeat 7] [--only cosine,canberra] [--json out.json]

Each metric row runs torchpair's dense tp.pairwise and, side by side in the same process,
scipy's cdist, sklearn's pairwise_distances / pairwise_kernels (n_jobs=2), torch.cdist where
it computes the metric, and the plain torch broadcasting formula most users write. Then
tp.pdist against scipy's pdist, and the machine's measured float32 GEMM (`X @ Y.T`, the same
[N, D] x [D, M] product, timed in the same run): the yardstick of the inner-product family,
whose rows get an "x GEMM" ratio (target: at most 2x).

Table driven: a metric joins by adding one Row (name, params, anchors).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Callable

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from _harness import machine, run, run_interleaved, save, table  # noqa: E402

import torchpair as tp  # noqa: E402


@dataclasses.dataclass
class Row:
    metric: str
    params: dict = dataclasses.field(default_factory=dict)
    scipy: str | None = None             # scipy cdist/pdist name (None: scipy lacks it)
    scipy_params: dict = dataclasses.field(default_factory=dict)
    sklearn: str | None = None           # sklearn pairwise_distances / pairwise_kernels name
    sklearn_kernel: bool = False
    cdist_p: float | None = None         # torch.cdist computes it with this p
    broadcast: Callable | None = None    # (x [N,1,D], y [1,M,D]) -> [N, M], the plain torch formula
    domain: str = "real"
    d: int = 32


def _cos(x, y):
    return 1 - (x * y).sum(-1) / (x.norm(dim=-1) * y.norm(dim=-1))


def _corr(x, y):
    return _cos(x - x.mean(-1, keepdim=True), y - y.mean(-1, keepdim=True))


def _mahalanobis(x, y):
    # scipy's default VI (inverse covariance of the stacked rows), then the broadcast form
    vi = torch.linalg.inv(torch.cov(torch.cat([x, y]).T))
    diff = x[:, None] - y[None]
    return ((diff @ vi) * diff).sum(-1).sqrt()


def _js(x, y):
    p, q = x / x.sum(-1, keepdim=True), y / y.sum(-1, keepdim=True)
    m = (p + q) / 2
    return (0.5 * (torch.special.xlogy(p, p / m) + torch.special.xlogy(q, q / m)).sum(-1)).sqrt()


def _haversine(x, y):
    dlat, dlon = y[..., 0] - x[..., 0], y[..., 1] - x[..., 1]
    a = torch.sin(dlat / 2) ** 2 + torch.cos(x[..., 0]) * torch.cos(y[..., 0]) * torch.sin(dlon / 2) ** 2
    return 2 * torch.asin(a.sqrt())


V32 = np.linspace(0.5, 2.0, 32)
ROWS: list[Row] = [
    Row("euclidean", scipy="euclidean", sklearn="euclidean", cdist_p=2.0,
        broadcast=lambda x, y: ((x - y) ** 2).sum(-1).sqrt()),
    Row("sqeuclidean", scipy="sqeuclidean", sklearn="sqeuclidean", broadcast=lambda x, y: ((x - y) ** 2).sum(-1)),
    Row("cityblock", scipy="cityblock", sklearn="cityblock", cdist_p=1.0, broadcast=lambda x, y: (x - y).abs().sum(-1)),
    Row("chebyshev", scipy="chebyshev", sklearn="chebyshev", cdist_p=float("inf"),
        broadcast=lambda x, y: (x - y).abs().amax(-1)),
    Row("minkowski", {"p": 3.0}, scipy="minkowski", scipy_params={"p": 3.0}, sklearn="minkowski", cdist_p=3.0,
        broadcast=lambda x, y: ((x - y).abs() ** 3).sum(-1) ** (1 / 3)),
    Row("seuclidean", {"V": torch.tensor(V32, dtype=torch.float32)}, scipy="seuclidean", scipy_params={"V": V32},
        broadcast=lambda x, y: (((x - y) ** 2) / torch.tensor(V32, dtype=x.dtype)).sum(-1).sqrt()),
    Row("mahalanobis", scipy="mahalanobis", broadcast=lambda x, y: _mahalanobis(x[:, 0], y[0])),
    Row("cosine", scipy="cosine", sklearn="cosine", broadcast=_cos),
    Row("correlation", scipy="correlation", sklearn="correlation", broadcast=_corr),
    Row("braycurtis", scipy="braycurtis", sklearn="braycurtis",
        broadcast=lambda x, y: (x - y).abs().sum(-1) / (x + y).abs().sum(-1)),
    Row("canberra", scipy="canberra", sklearn="canberra",
        broadcast=lambda x, y: ((x - y).abs() / (x.abs() + y.abs())).sum(-1)),
    Row("jensenshannon", scipy="jensenshannon", domain="positive", broadcast=_js),
    Row("haversine", sklearn="haversine", d=2, broadcast=_haversine),
    Row("nan_euclidean", sklearn="nan_euclidean", broadcast=lambda x, y: ((x - y) ** 2).sum(-1).sqrt()),
    Row("hellinger", domain="positive",
        broadcast=lambda x, y: (0.5 * ((x.sqrt() - y.sqrt()) ** 2).sum(-1)).sqrt()),
    Row("snr", broadcast=lambda x, y: (x - y).var(-1) / x.var(-1).unsqueeze(-1)),
    Row("rbf", {"gamma": 1 / 32}, sklearn="rbf", sklearn_kernel=True,
        broadcast=lambda x, y: torch.exp(-((x - y) ** 2).sum(-1) / 32)),
]


def data(row: Row, n: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(n, row.d, generator=g, dtype=dtype), torch.randn(n, row.d, generator=g, dtype=dtype)
    if row.domain == "positive":
        x, y = x.abs() + 0.05, y.abs() + 0.05
    return x, y


def metric_rows(results, rows, n, repeat):
    from scipy.spatial import distance as ssd
    from sklearn.metrics import pairwise as skp

    for row in rows:
        x, y = data(row, n)
        xn, yn = x.numpy(), y.numpy()
        w = f"{row.metric} N=M={n} D={row.d}"
        ours = lambda: tp.pairwise(x, y, row.metric, **row.params)  # noqa: E731
        if row.metric in GEMM_FAMILY:  # timed in rounds with the same-shape GEMM it is compared to
            results.extend(run_interleaved(w, {"torchpair": ours, GEMM_IMPL: lambda: x @ y.T}, repeat * 2))
        else:
            results.append(run(w, "torchpair", ours, repeat))
        if row.scipy:
            results.append(run(w, "scipy cdist", lambda: ssd.cdist(xn, yn, row.scipy, **row.scipy_params),
                               max(1, repeat // 2), budget_s=30))
        if row.sklearn:
            if row.sklearn_kernel:
                fn = lambda: skp.pairwise_kernels(xn, yn, metric=row.sklearn, n_jobs=2, **row.params)  # noqa: E731
            else:
                fn = lambda: skp.pairwise_distances(xn, yn, metric=row.sklearn, n_jobs=2)  # noqa: E731
            results.append(run(w, "sklearn (n_jobs=2)", fn, max(1, repeat // 2), budget_s=30))
        if row.cdist_p is not None:
            results.append(run(w, "torch.cdist", lambda: torch.cdist(x, y, p=row.cdist_p), repeat))
        if row.broadcast is not None:
            results.append(run(w, "torch broadcasting", lambda: row.broadcast(x[:, None], y[None]),
                               max(1, repeat // 2), budget_s=30))


def pdist_rows(results, rows, n, repeat):
    from scipy.spatial import distance as ssd

    for row in rows:
        if not row.scipy:
            continue
        x, _ = data(row, n)
        xn = x.numpy()
        w = f"pdist {row.metric} N={n} D={row.d}"
        results.append(run(w, "torchpair", lambda: tp.pdist(x, row.metric, **row.params), repeat))
        results.append(run(w, "scipy pdist", lambda: ssd.pdist(xn, row.scipy, **row.scipy_params),
                           max(1, repeat // 2), budget_s=30))
        if row.cdist_p is not None:
            results.append(run(w, "torch.nn.functional.pdist", lambda: torch.nn.functional.pdist(x, p=row.cdist_p),
                               max(1, repeat // 2), budget_s=30))


# The inner-product family (computed from one GEMM per tile): "x GEMM" rows.
GEMM_FAMILY = {"euclidean", "sqeuclidean", "cosine", "correlation", "linear", "polynomial", "sigmoid", "rbf",
               "mahalanobis", "seuclidean", "cosine_similarity", "matern", "rational_quadratic"}


def gemm_line(n, d, repeat):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, d, generator=g), torch.randn(n, d, generator=g)
    r = run(f"float32 GEMM X @ Y.T N=M={n} D={d}", "torch matmul", lambda: a @ b.T, repeat * 3)
    flops = 2.0 * n * n * d
    return r, flops / r.median_s / 1e9


#: the same-shape GEMM timed in rounds with each inner-product metric (run_interleaved)
GEMM_IMPL = "GEMM X @ Y.T (same rounds)"


def gemm_table(results, gemm, family) -> str:
    """The inner-product family's torchpair times as multiples of the GEMM time measured in the
    same rounds (the run's single GEMM line where a workload has none)."""
    lines = ["| workload | torchpair (s) | GEMM (s) | x GEMM | within 2x GEMM |", "|---|---:|---:|---:|---|"]
    same_rounds = {r.workload: r.median_s for r in results if r.impl == GEMM_IMPL and r.median_s}
    for r in results:
        metric = r.workload.split(" ")[0]
        if r.impl == "torchpair" and r.median_s and metric in family:
            g = same_rounds.get(r.workload, gemm.median_s)
            ratio = r.median_s / g
            lines.append(f"| {r.workload} | {r.median_s:.4f} | {g:.4f} | {ratio:.2f}x | "
                         f"{'yes' if ratio <= 2.0 else 'no'} |")
    return "\n".join(lines)


def targets(results, scipy_factor=3.0) -> str:
    """Per metric: torchpair vs the reference library (>= 3x faster) and vs torch broadcasting."""
    lines = ["| workload | reference | ref / torchpair | >= 3x | broadcasting / torchpair | >= 1x |",
             "|---|---|---:|---|---:|---|"]
    by: dict[str, dict[str, float]] = {}
    for r in results:
        if r.median_s:
            by.setdefault(r.workload, {})[r.impl] = r.median_s
    for w, impls in by.items():
        ours = impls.get("torchpair")
        if not ours:
            continue
        ref_name = next((k for k in ("scipy cdist", "scipy pdist", "sklearn (n_jobs=2)", "sklearn") if k in impls),
                        None)
        ref = f"{impls[ref_name] / ours:.2f}x" if ref_name else "—"
        ok_ref = ("yes" if impls[ref_name] / ours >= scipy_factor else "no") if ref_name else "—"
        bname = next((k for k in ("torch broadcasting", "torch formula") if k in impls), None)
        bro = f"{impls[bname] / ours:.2f}x" if bname else "—"
        ok_b = ("yes" if impls[bname] >= ours else "no") if bname else "—"
        lines.append(f"| {w} | {ref_name or '—'} | {ref} | {ok_ref} | {bro} | {ok_b} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=0, help="timed calls per implementation (default 7; 3 with --quick)")
    ap.add_argument("--only", default="", help="comma-separated metrics (default: every metric)")
    ap.add_argument("--no-pdist", action="store_true")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    n = 500 if args.quick else 2000
    repeat = args.repeat or (3 if args.quick else 7)
    rows = [r for r in ROWS if r.metric in tp.metrics()]
    if args.only:
        wanted = args.only.split(",")
        unknown = [m for m in wanted if m not in {r.metric for r in ROWS}]
        if unknown:
            ap.error(f"--only: no benchmark row for {unknown}; rows: {[r.metric for r in ROWS]}")
        rows = [r for r in rows if r.metric in wanted]
    print(f"# torchpair catalog benchmark: {machine()}\n")
    gemm, gflops = gemm_line(n, 32, repeat)
    results = [gemm]
    metric_rows(results, rows, n, repeat)
    if not args.no_pdist:
        pdist_rows(results, rows, n, repeat)
    print(table(results))
    print(f"\nfloat32 GEMM X @ Y.T [{n}x32]x[32x{n}]: {gemm.median_s:.5f} s = {gflops:.1f} GFLOP/s\n")
    print(gemm_table(results, gemm, GEMM_FAMILY))
    print("\nTargets (reference = scipy where it has the metric, else sklearn):\n")
    print(targets(results))
    if args.json:
        save(results, args.json)


if __name__ == "__main__":
    main()
