"""Selections of the few smallest squared distances (kNN, lazy min/argmin, Hausdorff) through the
register tile's d2 filter (csrc/cpu/sources.h, SmallestD2: a tile whose rows hold nothing below
their bars is never turned into values), against float64 oracles of the difference form
sum_k (x_k - y_k)^2 under a stable sort, in every CPU capability (each in a fresh process), with
the column operand packed whole and packed per tile.

The shapes cross the edges of the filter: row remainders of the 6-row register tile, the last
(partial) column panel, the 512-column tiles, several feature blocks (256 float32 / 128 float64
features), the diagonal of a self-comparison, exact ties (duplicated points, ranked by column),
points equal to a query (their GEMM-form d2 rounds to either side of 0 and is clamped), the
transposed walk (min over dim -2), k at the largest value that selects this way (16) and past it,
and non-finite inputs (which the filter leaves to the unfiltered ranking).
"""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

SELECTION_CHECK = textwrap.dedent("""
    import numpy as np, torch, torchpair as tp
    from scipy.spatial.distance import directed_hausdorff

    def oracle(x, y):
        # the difference form, in float64
        x, y = x.double(), y.double()
        return torch.cdist(x, y, compute_mode="donot_use_mm_for_euclid_dist") ** 2

    def bound(x, y, rows, cols, dtype):
        # the GEMM form's rounding: a few units of |x|^2 + |y|^2 (float32) or less
        scale = 1e-13 if dtype == torch.float64 else 1e-5
        sx, sy = (x.double() ** 2).sum(-1), (y.double() ** 2).sum(-1)
        return scale * (1.0 + sx[rows] + sy[cols])

    def check_knn(x, y, k, exact, metric="sqeuclidean", self_=False):
        got = tp.knn(x, None if self_ else y, k, metric=metric)
        d2 = oracle(x, x if self_ else y)
        if self_:
            d2.fill_diagonal_(0.0)  # the exact self-comparison
        order = torch.sort(d2, dim=-1, stable=True).indices[:, :k]
        want = d2.gather(-1, order)
        tol = bound(x, x if self_ else y, torch.arange(len(x))[:, None], order, x.dtype)
        assert got.values.dtype == x.dtype and got.indices.dtype == torch.int64
        # euclidean values are compared squared: near 0 the square root magnifies the
        # GEMM form's rounding of d2 (docs/contracts.md)
        values = got.values.double() ** 2 if metric == "euclidean" else got.values.double()
        assert bool(((values - want).abs() <= tol).all()), (values - want).abs().max()
        if exact:
            assert torch.equal(got.indices, order), (got.indices != order).sum()
        else:
            # float32: near-ties may swap; the chosen columns must be k distinct columns whose
            # true distances are the k smallest (within the rounding of the GEMM form)
            chosen = d2.gather(-1, got.indices)
            assert bool(((chosen - want).abs() <= tol).all())
            assert bool((got.indices.sort(-1).values.diff(dim=-1) > 0).all())

    g = torch.Generator().manual_seed(3)
    for dtype in (torch.float64, torch.float32):
        exact = dtype == torch.float64
        for n, m, d in [(301, 9000, 32), (67, 8193, 17), (130, 8250, 300), (64, 9001, 200)]:
            x = torch.randn(n, d, generator=g, dtype=dtype)
            y = torch.randn(m, d, generator=g, dtype=dtype) + 0.25
            # exact ties: columns 5, 700 and 8190 are one point (the three nearest of row 0);
            # columns 9 and 4000 hold query row 2 itself
            y[[5, 700, 8190]] = x[0] + 1e-3
            y[[9, 4000]] = x[2]
            y[m - 1] = x[n - 1]  # in the last, partial column panel
            for k in (1, 3, 16, 17):
                check_knn(x, y, k, exact)
            check_knn(x, y, 2, exact, metric="euclidean")
            top = tp.knn(x, y, 3)
            assert top.indices[0].tolist()[:3] == [5, 700, 8190]
            assert top.indices[2].tolist()[:2] == [9, 4000]
            # the transposed walk: the nearest row of x for every column of y
            d2 = oracle(x, y)
            mn = tp.lazy(x, y, "sqeuclidean").min(dim=-2)
            want = torch.sort(d2, dim=0, stable=True).indices[0]
            if exact:
                assert torch.equal(mn.indices, want)
            tol = bound(x, y, want, torch.arange(m), dtype)
            assert bool(((mn.values.double() - d2.min(0).values).abs() <= tol).all())
            # Hausdorff (its nearest-point searches are selections of k = 1)
            h = tp.hausdorff(x, y, directed=True).item()
            ref = directed_hausdorff(x.double().numpy(), y.double().numpy())[0]
            assert abs(h - ref) <= (1e-12 if exact else 1e-4) * (1 + ref), (h, ref)
        # a self-comparison: the diagonal (the point itself, exactly 0) lies inside the tiles
        x = torch.randn(1500, 40, generator=g, dtype=dtype)
        check_knn(x, None, 2, exact, self_=True)
        top = tp.knn(x, None, 2)
        assert torch.equal(top.indices[:, 0], torch.arange(1500)) and bool((top.values[:, 0] == 0).all())
        # non-finite inputs: NaN ranks last (torch.topk), inf is the largest number
        x = torch.randn(100, 24, generator=g, dtype=dtype)
        y = torch.randn(9000, 24, generator=g, dtype=dtype)
        y[3, 1] = float("nan")
        y[40, 2] = float("inf")
        x[5, 0] = float("nan")
        got = tp.knn(x, y, 4, metric="sqeuclidean")
        d2 = oracle(x, y)
        order = torch.sort(d2, dim=-1, stable=True).indices[:, :4]
        assert torch.equal(got.indices[torch.arange(100) != 5], order[torch.arange(100) != 5])
        assert torch.isnan(got.values[5]).all() and got.indices[5].tolist() == [0, 1, 2, 3]
    print("ok", torch.backends.cpu.get_cpu_capability())
""")


def _capabilities():
    best = torch.backends.cpu.get_cpu_capability()
    order = ["DEFAULT", "AVX2", "AVX512"]
    return order[: order.index(best) + 1] if best in order else ["DEFAULT"]


# max_packed "0": every column block packed per tile (the path of operands past 256 MiB)
RUNS = [(cap, "default") for cap in _capabilities()] + [
    (cap, "0") for cap in _capabilities() if cap != "DEFAULT"
]


@pytest.mark.parametrize("capability,max_packed", RUNS)
def test_smallest_selections_match_a_stable_sort(capability, max_packed):
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability.lower())
    if max_packed != "default":
        env["TORCHPAIR_PANEL_GEMM_MAX_PACKED_BYTES"] = max_packed
    out = subprocess.run([sys.executable, "-c", SELECTION_CHECK], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["ok", capability]
