"""Checks that run inside every spawned rank of tests/test_distributed.py (gloo, loopback).

Every rank builds the same full tensors (fixed seed), keeps its shard, calls
torchpair.distributed, and compares the result and the gradients with two references
computed on the full tensors in the same process: an independent dense torch formula
(torch.cdist, exp, torch.sort, autograd) and the single-process torchpair function. Each
check runs over several shard layouts, with unequal shards and a shard of size 0.
"""
from __future__ import annotations

import datetime
import json
import os
import time
import traceback

import torch
import torch.distributed as dist

# layouts: (sizes of X's shards, sizes of Y's shards) per world size
LAYOUTS = {
    1: [([7], [11])],
    2: [([4, 3], [6, 5]), ([7, 0], [0, 11]), ([2, 5], [10, 1])],
    3: [([2, 4, 1], [5, 0, 6]), ([0, 7, 0], [3, 4, 4])],
}
D = 3
GAMMA = 0.7
F64 = dict(rtol=1e-9, atol=1e-10)

CHECKS = []


def check(fn):
    CHECKS.append(fn.__name__)
    return fn


# -- helpers ---------------------------------------------------------------------------------
def dense(metric, x, y):
    """Independent dense formulas (no torchpair)."""
    if metric == "euclidean":
        d2 = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
        zero = d2 == 0  # gradient 0 at distance 0 (torchpair's convention); NaN propagates
        return torch.where(zero, torch.zeros_like(d2), torch.sqrt(torch.where(zero, torch.ones_like(d2), d2)))
    if metric == "sqeuclidean":
        return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    if metric == "rbf":
        return torch.exp(-GAMMA * ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1))
    raise KeyError(metric)


def params(metric):
    return {"gamma": GAMMA} if metric == "rbf" else {}


def full_data(n, m, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, D, generator=g, dtype=torch.float64) * scale
    y = torch.randn(m, D, generator=g, dtype=torch.float64) * scale + 0.2
    return x, y


def shard(t, sizes, rank):
    start = sum(sizes[:rank])
    return t[start : start + sizes[rank]]


def leaf(t):
    return t.detach().clone().requires_grad_(True)


def close(got, want, what, **tol):
    tol = tol or F64
    torch.testing.assert_close(got, want, msg=lambda m: f"{what}: {m}", equal_nan=True, **tol)


def equal(got, want, what):
    if not torch.equal(got, want):
        raise AssertionError(f"{what}: {got.tolist()} != {want.tolist()}")


def oracle_topk(K, k, largest):
    """Best first, ties to the lowest index, NaN ranks as the largest value (stable sort)."""
    idx = torch.sort(K.detach(), dim=-1, descending=largest, stable=True).indices[:, :k]
    return torch.gather(K, -1, idx), idx


def oracle_min(K, largest=False):
    """torch.min semantics made explicit: the first NaN if any, else the first best."""
    Kd = K.detach()
    is_nan = torch.isnan(Kd)
    best = Kd.max(-1, keepdim=True).values if largest else Kd.min(-1, keepdim=True).values
    first_best = (Kd == best).to(torch.int8).argmax(-1)
    idx = torch.where(is_nan.any(-1), is_nan.to(torch.int8).argmax(-1), first_best)
    return torch.gather(K, -1, idx[:, None])[:, 0], idx


class Case:
    """One layout: full tensors, this rank's shards (leaves), reference leaves."""

    def __init__(self, rank, world, xs, ys, x_sharded, y_sharded, seed=0, scale=1.0, c=2):
        self.rank, self.world = rank, world
        self.xs, self.ys = xs, ys
        self.x_sharded, self.y_sharded = x_sharded, y_sharded
        n, m = sum(xs), sum(ys)
        self.X, self.Y = full_data(n, m, seed, scale)
        g = torch.Generator().manual_seed(seed + 1)
        self.V = torch.randn(m, c, generator=g, dtype=torch.float64)
        self.Wn = torch.randn(n, c, generator=g, dtype=torch.float64)  # loss weights
        self.x = leaf(shard(self.X, xs, rank) if x_sharded else self.X)
        self.y = leaf(shard(self.Y, ys, rank) if y_sharded else self.Y)
        self.v = leaf(shard(self.V, ys, rank) if y_sharded else self.V)
        self.Xr, self.Yr, self.Vr = leaf(self.X), leaf(self.Y), leaf(self.V)

    def rows(self, t, sharded, sizes, dim=0):
        """This rank's part of a full tensor along `dim` (all of it if not sharded)."""
        if not sharded:
            return t
        start = sum(sizes[: self.rank])
        return t.narrow(dim, start, sizes[self.rank])

    def grads_match(self, what, tol=None, v=False):
        tol = tol or F64
        close(self.x.grad, self.rows(self.Xr.grad, self.x_sharded, self.xs), f"{what}: grad X", **tol)
        close(self.y.grad, self.rows(self.Yr.grad, self.y_sharded, self.ys), f"{what}: grad Y", **tol)
        if v:
            close(self.v.grad, self.rows(self.Vr.grad, self.y_sharded, self.ys), f"{what}: grad V", **tol)


def cases(rank, world, **kw):
    for xs, ys in LAYOUTS[world]:
        for x_sh, y_sh in ((False, True), (True, False), (True, True)):
            yield Case(rank, world, xs, ys, x_sh, y_sh, **kw)


# -- checks ----------------------------------------------------------------------------------
@check
def check_knn(rank, world):
    import torchpair as tp
    import torchpair.distributed as tpd

    for c in cases(rank, world):
        for metric, k in (("euclidean", 3), ("rbf", 4), ("sqeuclidean", 11)):
            kk = min(k, sum(c.ys))
            got = tpd.knn(c.x, c.y, kk, metric, x_sharded=c.x_sharded, y_sharded=c.y_sharded, **params(metric))
            K = dense(metric, c.Xr, c.Yr)
            want_v, want_i = oracle_topk(K, kk, largest=(metric == "rbf"))
            tag = f"knn {metric} k={kk} layout {c.xs}/{c.ys} x_sharded={c.x_sharded} y_sharded={c.y_sharded}"
            close(got.values, c.rows(want_v, c.x_sharded, c.xs), tag)
            equal(got.indices, c.rows(want_i, c.x_sharded, c.xs), tag + " indices")
            single = tp.knn(c.X, c.Y, kk, metric, **params(metric))
            equal(got.indices, c.rows(single.indices, c.x_sharded, c.xs), tag + " vs tp.knn")
            # gradient of the selected values
            w = c.rows(c.Wn[:, :1].expand(-1, kk), c.x_sharded, c.xs)
            (got.values * w).sum().backward()
            (want_v * c.Wn[:, :1].expand(-1, kk)).sum().backward()
            c.grads_match(tag)
            for t in (c.x, c.y, c.Xr, c.Yr):
                t.grad = None


@check
def check_topk_columns_and_ties(rank, world):
    """topk / min / argmin along dim -2 (over X's rows) and along -1 with exact ties across
    shards (duplicated rows: the lowest global index wins) and NaN."""
    import torchpair.distributed as tpd

    for c in cases(rank, world, seed=3):
        # dim -2: the k best rows of X for every column
        n = sum(c.xs)
        k = min(2, n)
        e = tpd.lazy(c.x, c.y, "rbf", x_sharded=c.x_sharded, y_sharded=c.y_sharded, gamma=GAMMA)
        got = e.topk(k, dim=-2)
        Kt = dense("rbf", c.Xr, c.Yr).T
        wv, wi = oracle_topk(Kt, k, largest=True)
        tag = f"topk dim=-2 layout {c.xs}/{c.ys} x_sharded={c.x_sharded} y_sharded={c.y_sharded}"
        close(got.values, c.rows(wv, c.y_sharded, c.ys).T, tag)
        equal(got.indices, c.rows(wi, c.y_sharded, c.ys).T, tag)
        # sorted=False (torch.topk's argument): the same k entries in any order
        unsorted = e.topk(k, dim=-2, sorted=False)
        order = unsorted.values.detach().sort(dim=0, descending=True, stable=True).indices
        close(unsorted.values.gather(0, order), c.rows(wv, c.y_sharded, c.ys).T, tag + " sorted=False")
        mn = e.min(dim=-2)
        ov, oi = oracle_min(Kt)
        close(mn.values, c.rows(ov, c.y_sharded, c.ys), tag + " min")
        equal(e.argmin(dim=-2), c.rows(oi, c.y_sharded, c.ys), tag + " argmin")
        mx = e.max(dim=-1)
        ov, oi = oracle_min(dense("rbf", c.Xr, c.Yr), largest=True)
        close(mx.values, c.rows(ov, c.x_sharded, c.xs), tag + " max")
        equal(mx.indices, c.rows(oi, c.x_sharded, c.xs), tag + " argmax")

    for xs, ys in LAYOUTS[world]:
        # duplicates: every Y row equals the last one, so all distances tie; plus a NaN row
        m = sum(ys)
        X, Y = full_data(sum(xs), m, 5)
        Y = Y[-1:].expand(m, D).clone()
        for nan_row in (None, m - 1):
            Yn = Y.clone()
            if nan_row is not None:
                Yn[nan_row, 0] = float("nan")
            for x_sh in (False, True):
                x = shard(X, xs, rank) if x_sh else X
                y = shard(Yn, ys, rank)
                e = tpd.lazy(x, y, "euclidean", x_sharded=x_sh, y_sharded=True)
                K = dense("euclidean", X, Yn)
                tag = f"ties nan_row={nan_row} layout {xs}/{ys} x_sharded={x_sh}"
                want = oracle_min(K)
                rows = lambda t: shard(t, xs, rank) if x_sh else t  # noqa: E731
                close(e.min().values, rows(want[0]), tag + " min")
                equal(e.argmin(), rows(want[1]), tag + " argmin")
                k = min(3, m)
                tv, ti = e.topk(k, largest=False)
                wv, wi = oracle_topk(K, k, largest=False)
                close(tv, rows(wv), tag + " topk")
                equal(ti, rows(wi), tag + " topk indices")


@check
def check_sum_mean_matmul(rank, world):
    import torchpair as tp
    import torchpair.distributed as tpd

    for c in cases(rank, world, seed=7):
        for metric in ("rbf", "euclidean"):
            K = dense(metric, c.Xr, c.Yr)
            e = tpd.lazy(c.x, c.y, metric, x_sharded=c.x_sharded, y_sharded=c.y_sharded, **params(metric))
            base = f"{metric} layout {c.xs}/{c.ys} x_sharded={c.x_sharded} y_sharded={c.y_sharded}"
            n, m = sum(c.xs), sum(c.ys)
            # each consumer: (distributed result, full reference, sharded like, loss weights)
            consumers = [
                ("sum -1", e.sum(-1), K.sum(-1), (c.x_sharded, c.xs), c.Wn[:, 0]),
                ("sum -2", e.sum(-2), K.sum(-2), (c.y_sharded, c.ys), c.V[:, 0]),
                ("sum None", e.sum(), K.sum(), (False, None), torch.tensor(1.3, dtype=torch.float64)),
                ("mean -1", e.mean(-1), K.mean(-1), (c.x_sharded, c.xs), c.Wn[:, 1]),
                ("mean None", e.mean(), K.mean(), (False, None), torch.tensor(0.7, dtype=torch.float64)),
                ("matmul", e @ c.v, K @ c.Vr, (c.x_sharded, c.xs), c.Wn),
                ("matmul 1-D", e.matmul(c.v[:, 0]), K @ c.Vr[:, 0], (c.x_sharded, c.xs), c.Wn[:, 0]),
                ("T @ W", e.T @ c.rows(c.Wn, c.x_sharded, c.xs), K.T @ c.Wn, (c.y_sharded, c.ys),
                 c.V),
            ]
            for name, got, want, (sh, sizes), w in consumers:
                tag = f"{name} {base}"
                want_local = c.rows(want, sh, sizes)
                close(got, want_local, tag)
                (got * c.rows(w, sh, sizes)).sum().backward()
                (want * w).sum().backward(retain_graph=True)
                c.grads_match(tag, v=name.startswith("matmul"))
                for t in (c.x, c.y, c.v, c.Xr, c.Yr, c.Vr):
                    t.grad = None
            # and the single-process operator on the full tensors
            close(e.sum(-1).detach(), c.rows(tp.lazy(c.X, c.Y, metric, **params(metric)).sum(-1), c.x_sharded, c.xs),
                  base + " vs tp.lazy")


@check
def check_logsumexp(rank, world):
    """Stable merge: distances scaled so that exp overflows float64 without it."""
    import torchpair as tp
    import torchpair.distributed as tpd

    for scale in (1.0, 300.0):
        for c in cases(rank, world, seed=11, scale=scale):
            K = dense("euclidean", c.Xr, c.Yr)
            e = tpd.lazy(c.x, c.y, "euclidean", x_sharded=c.x_sharded, y_sharded=c.y_sharded)
            base = f"logsumexp scale={scale} layout {c.xs}/{c.ys} x_sharded={c.x_sharded} y_sharded={c.y_sharded}"
            consumers = [
                ("-1", e.logsumexp(-1), torch.logsumexp(K, -1), (c.x_sharded, c.xs), c.Wn[:, 0]),
                ("-2", e.logsumexp(-2), torch.logsumexp(K, -2), (c.y_sharded, c.ys), c.V[:, 0]),
                ("None", e.logsumexp(), torch.logsumexp(K, (0, 1)), (False, None),
                 torch.tensor(0.9, dtype=torch.float64)),
            ]
            for name, got, want, (sh, sizes), w in consumers:
                tag = f"{name} {base}"
                if not torch.isfinite(want).all():
                    raise AssertionError(f"{tag}: reference not finite")
                close(got, c.rows(want, sh, sizes), tag)
                (got * c.rows(w, sh, sizes)).sum().backward()
                (want * w).sum().backward(retain_graph=True)
                c.grads_match(tag)
                for t in (c.x, c.y, c.Xr, c.Yr):
                    t.grad = None
            single = tp.lazy(c.X, c.Y, "euclidean").logsumexp(-1)
            close(e.logsumexp(-1).detach(), c.rows(single, c.x_sharded, c.xs), base + " vs tp.lazy")
    # an empty reduced set gives -inf everywhere (every shard of Y empty is impossible in a
    # layout with rows, so reduce over X's rows of a Y-only expression with X empty)
    x = torch.zeros(0, D, dtype=torch.float64)
    y = torch.randn(3, D, dtype=torch.float64)
    got = tpd.lazy(x, y, "rbf", x_sharded=True, y_sharded=False, gamma=GAMMA).logsumexp(-2)
    equal(got, torch.full((3,), float("-inf"), dtype=torch.float64), "logsumexp over an empty sharded set")


@check
def check_mmd_energy(rank, world):
    import torchpair as tp
    import torchpair.distributed as tpd

    for xs, ys in LAYOUTS[world]:
        X, Y = full_data(sum(xs), sum(ys), 13)
        for x_sh, y_sh in ((True, True), (False, True), (True, False)):
            x = leaf(shard(X, xs, rank) if x_sh else X)
            y = leaf(shard(Y, ys, rank) if y_sh else Y)
            Xr, Yr = leaf(X), leaf(Y)
            n, m = sum(xs), sum(ys)
            tag = f"layout {xs}/{ys} x_sharded={x_sh} y_sharded={y_sh}"
            for unbiased in (False, True):
                got = tpd.mmd(x, y, "rbf", unbiased, x_sharded=x_sh, y_sharded=y_sh, gamma=GAMMA)
                kxx, kyy, kxy = dense("rbf", Xr, Xr), dense("rbf", Yr, Yr), dense("rbf", Xr, Yr)
                if unbiased:
                    want = ((kxx.sum() - kxx.diagonal().sum()) / (n * (n - 1)) +
                            (kyy.sum() - kyy.diagonal().sum()) / (m * (m - 1)) - 2 * kxy.mean())
                else:
                    want = kxx.mean() + kyy.mean() - 2 * kxy.mean()
                close(got, want, f"mmd unbiased={unbiased} {tag}")
                close(got.detach(), tp.mmd(X, Y, "rbf", unbiased, gamma=GAMMA), f"mmd vs tp.mmd {tag}")
                (2.5 * got).backward()
                (2.5 * want).backward()
                close(x.grad, shard(Xr.grad, xs, rank) if x_sh else Xr.grad, f"mmd grad X {tag}")
                close(y.grad, shard(Yr.grad, ys, rank) if y_sh else Yr.grad, f"mmd grad Y {tag}")
                for t in (x, y, Xr, Yr):
                    t.grad = None
            got = tpd.energy_distance(x, y, x_sharded=x_sh, y_sharded=y_sh)
            want = torch.sqrt(2 * dense("euclidean", Xr, Yr).mean() - dense("euclidean", Xr, Xr).mean()
                              - dense("euclidean", Yr, Yr).mean())
            close(got, want, f"energy {tag}")
            close(got.detach(), tp.energy_distance(X, Y), f"energy vs tp.energy_distance {tag}")
            got.backward()
            want.backward()
            close(x.grad, shard(Xr.grad, xs, rank) if x_sh else Xr.grad, f"energy grad X {tag}")
            close(y.grad, shard(Yr.grad, ys, rank) if y_sh else Yr.grad, f"energy grad Y {tag}")


@check
def check_communication_volume(rank, world):
    """The bytes each rank receives follow the cost model of docs/scaling.md and never
    scale with N x M."""
    import torchpair.distributed as tpd

    n, m, k, c = 40, 900, 5, 3
    X, Y = full_data(n, m, 17)
    sizes = [m // world + (1 if r < m % world else 0) for r in range(world)]
    y = shard(Y, sizes, rank)
    e = tpd.lazy(X, y, "euclidean")
    tpd.reset_communication_stats()
    tpd.knn(X, y, k)
    got = tpd.communication_stats()["bytes_received"]
    # values (float64) and indices (int64) of the other ranks; the shard-size exchange
    want = (world - 1) * n * k * (8 + 8) + (world - 1) * 5 * 8
    if got != want:
        raise AssertionError(f"knn bytes received {got} != model {want}")
    V = torch.randn(sizes[rank], c, dtype=torch.float64)
    tpd.reset_communication_stats()
    e.matmul(V)
    got = tpd.communication_stats()["bytes_received"]
    want = 2 * (world - 1) * n * c * 8 // world + 2 * (world - 1) * 8 // world  # partial sums; agreement flag
    if got != want:
        raise AssertionError(f"matmul bytes received {got} != model {want}")
    if got >= n * m * 8:
        raise AssertionError("matmul exchanged N x M data")
    # both sharded: X is gathered (padded to the largest shard), then each rank receives only
    # its own rows' candidates from every other rank (all-to-all)
    xs = [n // world + (1 if r < n % world else 0) for r in range(world)]
    x = shard(X, xs, rank)
    tpd.reset_communication_stats()
    tpd.knn(x, y, k, x_sharded=True)
    got = tpd.communication_stats()["bytes_received"]
    want = (world - 1) * 5 * 8 + (world - 1) * max(xs) * D * 8 + (world - 1) * xs[rank] * k * (8 + 8)
    if got != want:
        raise AssertionError(f"both-sharded knn bytes received {got} != model {want}")


@check
def check_bad_input(rank, world):
    """Bad input on one rank raises on every rank (none is left waiting) with a clear message."""
    import torchpair.distributed as tpd

    X, Y = full_data(5, 6, 19)

    def expect(fn, exc, words):
        try:
            fn()
        except exc as e:
            if not all(w in str(e) for w in words):
                raise AssertionError(f"message {str(e)!r} lacks {words}") from e
            return
        raise AssertionError(f"no {exc.__name__} raised for {words}")

    # a rank with a different number of features
    y_bad = Y[:, :2] if rank == world - 1 else Y
    expect(lambda: tpd.lazy(X, y_bad, "euclidean"), (ValueError, RuntimeError), ["torchpair."])
    # a replicated X with different rows on different ranks
    x_bad = X[: 5 - rank]
    expect(lambda: tpd.lazy(x_bad, Y, "euclidean"), ValueError, ["'X'", "replicated"])
    e = tpd.lazy(X, Y, "euclidean")
    # V with the wrong number of rows on one rank only
    v_bad = torch.randn(6 + (1 if rank == 0 else 0), 2, dtype=torch.float64)
    expect(lambda: e @ v_bad, (ValueError, RuntimeError), ["torchpair.distributed", "'V'" if rank == 0 else "rank"])
    expect(lambda: e.topk(6 * world + 1), ValueError, ["'k'"])
    expect(lambda: e.topk(1, sorted=1), TypeError, ["torchpair.distributed.topk", "'sorted'"])
    expect(lambda: e.sum(dim=2), ValueError, ["'dim'"])
    expect(lambda: tpd.mmd(X, Y, "euclidean"), ValueError, ["'metric'"])
    expect(lambda: tpd.knn(X, Y, 2, "nope"), ValueError, ["'metric'"])
    # the group still works afterwards
    out = e.sum(-1)
    close(out, dense("euclidean", X, Y).sum(-1) * world, "after errors")


# -- driver ----------------------------------------------------------------------------------
def worker(rank, world, port, out_dir):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    results = {}
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=60))
        import torchpair  # noqa: F401

        only = os.environ.get("TORCHPAIR_DIST_CHECKS")
        for name in CHECKS:
            if only and name not in only.split(","):
                continue
            t0 = time.perf_counter()
            try:
                globals()[name](rank, world)
                results[name] = "ok"
                results[name + ":seconds"] = round(time.perf_counter() - t0, 2)
            except Exception:  # noqa: BLE001 - reported to the parent
                results[name] = traceback.format_exc()
            dist.barrier()  # a rank stuck in a collective times out here, and the run stops
    except Exception:  # noqa: BLE001
        results["setup"] = traceback.format_exc()
    finally:
        with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
            json.dump(results, f)
        if dist.is_initialized():
            dist.destroy_process_group()
