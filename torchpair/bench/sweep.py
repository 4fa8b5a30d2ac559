"""The shape sweep: torchpair against the best installed peer on every shape of the sweep.

Each row is one shape. Every implementation of that shape (torchpair and each installed peer)
is timed in the same process: each gets one warm-up call (not timed), then repeats sized to a
time budget, run in interleaved rounds so that a slow phase of the machine falls on every
implementation alike (`measure_together`). The row reports torchpair's median, the fastest
peer and its median, and ratio = peer / torchpair (above 1: torchpair is faster). The last line is the
worst ratio of the run.

Peers that would take far longer than the row allows on its largest shapes (scipy and
scikit-learn's single-threaded paths, scikit-learn brute force at 1000 x 100000 x 784,
pykeops on the CPU) are skipped there; the row says so, with the peer's time measured on a
smaller case and its extrapolation to this one. A skipped peer is never counted as the best.

Two extra parts run fresh Python processes: ``first`` (the first call of each public entry
point after ``import torchpair``) and ``fresh`` (twelve successive calls on a large output in
a fresh process, the case where page faults on new memory show).

Used by ``python -m torchpair bench --sweep`` and ``benchmarks/bench_sweep.py``.
"""
from __future__ import annotations

import dataclasses
import datetime
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Callable

import torch

F32, F64 = torch.float32, torch.float64

#: the parts of the sweep, in run order (``--only`` takes a comma-separated subset)
PARTS = ("dense", "batched", "pdist", "lazy", "knn", "boolean", "seq", "emd", "first", "fresh")


@dataclasses.dataclass
class Peer:
    name: str
    make: Callable[[], Callable] | None  # returns the callable to time (imports inside)
    #: skip above this much work (the row's work units); None: never skipped
    max_work: float | None = None
    #: builds (fn, label, work) for a smaller case, timed when the peer is skipped here
    smaller: Callable[[], tuple] | None = None


@dataclasses.dataclass
class Row:
    part: str
    case: str
    ours: Callable
    peers: list
    work: float = 0.0
    #: the roofline lower bound of this shape in seconds (GEMM rate or memory bandwidth)
    bound_s: float | None = None
    bound_kind: str = ""


@dataclasses.dataclass
class Outcome:
    part: str
    case: str
    ours_s: float | None
    best: str | None = None
    best_s: float | None = None
    others: dict = dataclasses.field(default_factory=dict)
    notes: list = dataclasses.field(default_factory=list)
    bound_s: float | None = None
    bound_kind: str = ""

    @property
    def ratio(self) -> float | None:
        if self.ours_s and self.best_s:
            return self.best_s / self.ours_s
        return None


# ---- timing -------------------------------------------------------------------------------
def _time_call(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def measure(fn, budget_s: float, max_repeat: int | None = None, min_repeat: int = 3) -> tuple[float, int]:
    """(median seconds, repeats): one warm-up call, then repeats that fit budget_s at the
    fastest probe call's time (`_probe`; at least one; at least min_repeat when a call is short; at most max_repeat, by default 7 for calls
    of a millisecond or more and 101 below: a call of microseconds varies by tens of percent
    from one call to the next, and a median of 7 of them by about as much). Garbage is
    collected once, before the warm-up, not before every call: a collection frees memory
    glibc then returns to the OS, and the next call of any library (a small result,
    `torch.empty` alike) pays page faults for it that a user's loop never sees."""
    gc.collect()
    first = _time_call(fn)  # warm-up: one-time costs (imports, compilation, allocator growth)
    times = _probe(fn)
    want = _want(min(times), budget_s, max_repeat, min_repeat)
    while len(times) < want:
        times.append(_time_call(fn))
    del first
    return statistics.median(times), len(times)


#: calls shorter than this get a second untimed call after a pause and three probe calls
#: (below): a worker thread left idle through the pause can take scheduler ticks to wake on
#: a virtual machine, for the first calls that use it, whatever library makes them
#: (docs/performance.md, "Shape sweep"); a longer call hides that cost
SHORT_CALL_S = 0.05


def _probe(fn) -> list:
    """The first timed calls after the warm-up: one, or three for a short call. The number of
    repeats is sized from the fastest of them, so that one slow call does not cut a short
    call's repeats to those of a long one."""
    times = [_time_call(fn)]
    if times[0] < SHORT_CALL_S:
        times += [_time_call(fn), _time_call(fn)]
    return times


def _settle(fn) -> None:
    """Untimed calls after a pause: one, or two for a short call (see SHORT_CALL_S)."""
    if _time_call(fn) < SHORT_CALL_S:
        fn()


def _fmt_s(s: float | None) -> str:
    if s is None:
        return "—"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def _want(call_s: float, budget_s: float, max_repeat: int | None = None, min_repeat: int = 3) -> int:
    """How many timed calls fit budget_s, from the time of one call (the fastest probe call:
    the rule of `measure`)."""
    if max_repeat is None:
        max_repeat = 7 if call_s >= 1e-3 else 101
    want = max(1, min(max_repeat, int(budget_s / max(call_s, 1e-6))))
    if call_s < budget_s / min_repeat:
        want = max(want, min_repeat)
    return want


#: interleaved rounds per row, and the pause before an implementation takes over from another:
#: longer than OpenBLAS's threads keep polling for work after a call (2^28 cycles by default;
#: numpy's BLAS, under scikit-learn), which stalls the next call of an OpenMP library
ROUNDS, SWITCH_PAUSE_S = 3, 0.12


def measure_together(fns: dict, budgets: dict) -> tuple[dict, dict]:
    """Time several implementations of one shape in interleaved rounds: ({name: median
    seconds}, {name: error}). Each gets its warm-up and the number of repeats `measure` would
    give it, spread over up to ROUNDS rounds (one that gets fewer calls runs in the first rounds
    only); every round runs each implementation's share in turn, the order reversed every other
    round. A machine whose speed drifts over seconds (another tenant, the clock) then slows
    every implementation of the row alike, where timing them one after another let a slow phase
    land on one side only. Where one implementation takes over from another (its warm-up
    included), a pause and one untimed call (two for a short call) come first: the other
    library's threads may still be polling for work (BLAS and OpenMP pools do for a while after
    a call) and its data holds the caches, costs a user's loop over one library never pays."""
    gc.collect()
    times, wants, errors = {}, {}, {}
    for name, fn in fns.items():
        try:
            time.sleep(SWITCH_PAUSE_S)
            _settle(fn)  # warm-up: one-time costs (imports, compilation, allocator growth)
            probe = _probe(fn)
        except Exception as exc:  # noqa: BLE001 - reported by the caller
            errors[name] = exc
            continue
        times[name], wants[name] = probe, _want(min(probe), budgets[name])
    rounds = min(ROUNDS, max(wants.values(), default=1))
    order, last = list(times), (list(times) or [None])[-1]
    for r in range(rounds):
        for name in (order if r % 2 == 0 else order[::-1]):
            share = -(-wants[name] * (r + 1) // rounds)  # ceil: the last round reaches want
            if name in errors or len(times[name]) >= share:
                continue
            try:
                if name != last:
                    time.sleep(SWITCH_PAUSE_S)
                    _settle(fns[name])
                    last = name
                while len(times[name]) < share:
                    times[name].append(_time_call(fns[name]))
            except Exception as exc:  # noqa: BLE001
                errors[name] = exc
    return {n: statistics.median(t) for n, t in times.items() if n not in errors}, errors


def run_row(row: Row, budget_s: float, log=None) -> Outcome:
    out = Outcome(row.part, row.case, None, bound_s=row.bound_s, bound_kind=row.bound_kind)
    ours = "torchpair"
    fns, budgets = {ours: row.ours}, {ours: budget_s}
    for p in row.peers:
        if p.make is None:
            out.notes.append(p.name if p.name.endswith(" only)") else f"{p.name}: not installed")
            continue
        if p.max_work is not None and row.work > p.max_work:
            note = f"{p.name}: skipped (too slow here)"
            if p.smaller is not None:
                try:
                    fn, label, work = p.smaller()
                    t = _time_call(fn)
                    note += f"; {_fmt_s(t)} at {label}, ~{_fmt_s(t * row.work / work)} extrapolated"
                except Exception as exc:  # noqa: BLE001
                    note += f"; smaller case failed: {type(exc).__name__}"
            out.notes.append(note)
            continue
        try:
            fns[p.name] = p.make()
        except ImportError:
            out.notes.append(f"{p.name}: not installed")
            continue
        except Exception as exc:  # noqa: BLE001
            out.notes.append(f"{p.name} failed: {type(exc).__name__}: {exc}"[:160])
            continue
        budgets[p.name] = budget_s * (0.5 if p.max_work is not None else 1.0)
    medians, errors = measure_together(fns, budgets)
    del fns
    for name, exc in errors.items():
        if isinstance(exc, ImportError) and name != ours:
            out.notes.append(f"{name}: not installed")
        else:
            out.notes.append(f"{name} failed: {type(exc).__name__}: {exc}"[:160])
    out.ours_s = medians.pop(ours, None)
    for name, s in medians.items():
        out.others[name] = s
        if out.best_s is None or s < out.best_s:
            out.best, out.best_s = name, s
    if log:
        r = out.ratio
        log(f"{row.part:8} {row.case:44} tp {_fmt_s(out.ours_s):>9}  best {out.best or '-'} "
            f"{_fmt_s(out.best_s)}  ratio {'—' if r is None else f'{r:.2f}'}")
    return out


# ---- the machine's roofline ---------------------------------------------------------------
_ROOF: dict = {}


def roofline() -> dict:
    """Measured GEMM rate (float32, float64: the faster of the installed BLAS and torchpair's
    own product kernel on a 2048-cubed product) and memory write+read bandwidth of this
    machine."""
    if _ROOF:
        return _ROOF
    import torchpair as tp

    for dt in (F32, F64):
        a = torch.randn(2048, 2048, dtype=dt)
        t_blas, _ = measure(lambda: a @ a, 0.5)
        t_ours, _ = measure(lambda: tp.pairwise(a, a, "linear"), 0.5)
        _ROOF[dt] = 2 * 2048**3 / min(t_blas, t_ours)
    buf = torch.empty(2**26)  # 256 MB
    src = torch.ones(2**26)
    t, _ = measure(lambda: buf.copy_(src), 0.5)
    _ROOF["bw"] = 2 * buf.nbytes / t
    return _ROOF


def _gemm_bound(flops: float, out_bytes: float, dtype) -> tuple[float, str]:
    r = roofline()
    g, m = flops / r[dtype], out_bytes / r["bw"]
    return (g, "GEMM") if g >= m else (m, "memory")


# ---- data ---------------------------------------------------------------------------------
def _randn(*shape, dtype=F32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _peer(name, make, **kw) -> Peer:
    return Peer(name, make, **kw)


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _chunks(n: int, per_row: int, limit: int = 2**24) -> int:
    """Rows per chunk so a chunk's temporary holds at most `limit` elements."""
    return max(1, min(n, limit // max(per_row, 1)))


# ---- dense --------------------------------------------------------------------------------
DENSE_METRICS = ("euclidean", "sqeuclidean", "cosine", "cityblock")
DENSE_SHAPES = ((64, 64), (1000, 1000), (4000, 4000), (200, 20000))
DENSE_D = (3, 64, 512)


def _torch_formula(metric, X, Y):
    """The torch formula a user would write (a GEMM expansion for the inner-product family,
    the broadcast |x - y| sum in row chunks for cityblock)."""
    if metric in ("euclidean", "sqeuclidean"):
        def f():
            d2 = (X * X).sum(1, keepdim=True) - 2 * X @ Y.T + (Y * Y).sum(1)
            d2.clamp_(min=0)
            return d2.sqrt_() if metric == "euclidean" else d2
        return f
    if metric == "cosine":
        def f():
            xn = X / X.norm(dim=1, keepdim=True)
            yn = Y / Y.norm(dim=1, keepdim=True)
            return 1 - xn @ yn.T
        return f
    step = _chunks(X.shape[0], Y.shape[0] * X.shape[1])

    def f():
        return torch.cat([(X[i:i + step, None] - Y[None]).abs().sum(-1) for i in range(0, X.shape[0], step)])
    return f


def dense_rows() -> list[Row]:
    import torchpair as tp

    rows = []
    for dtype in (F32, F64):
        for d in DENSE_D:
            for n, m in DENSE_SHAPES:
                X, Y = _randn(n, d, dtype=dtype, seed=1), _randn(m, d, dtype=dtype, seed=2)
                Xn, Yn = X.numpy(), Y.numpy()
                for metric in DENSE_METRICS:
                    work = float(n) * m * d
                    peers = []
                    if metric in ("euclidean", "cityblock", "sqeuclidean"):
                        p = {"euclidean": 2.0, "cityblock": 1.0, "sqeuclidean": 2.0}[metric]
                        sq = metric == "sqeuclidean"
                        peers.append(_peer("torch.cdist" + ("**2" if sq else ""),
                                           lambda X=X, Y=Y, p=p, sq=sq: (lambda: torch.cdist(X, Y, p=p) ** 2) if sq
                                           else (lambda: torch.cdist(X, Y, p=p))))
                    if metric == "cityblock":
                        # the broadcast formula moves D values per pair through memory
                        def small(X=X, Y=Y):
                            k = max(1, min(X.shape[0], int(1e9 / (Y.shape[0] * X.shape[1]))))
                            return (_torch_formula("cityblock", X[:k], Y), f"{k}x{Y.shape[0]}",
                                    float(k) * Y.shape[0] * X.shape[1])
                        peers.append(Peer("torch formula", lambda X=X, Y=Y: _torch_formula("cityblock", X, Y),
                                          max_work=1.1e9, smaller=small))
                    else:
                        peers.append(_peer("torch formula", lambda metric=metric, X=X, Y=Y: _torch_formula(metric, X, Y)))
                    # scipy's cdist is single-threaded and scalar: skipped past ~2e8 multiply-adds
                    peers.append(_scipy_cdist(metric, Xn, Yn, work))
                    peers.append(_sklearn_pairwise(metric, Xn, Yn, work))
                    flops = 2 * work if metric != "cityblock" else 3 * work
                    bound = _gemm_bound(flops, n * m * X.element_size(), dtype) if metric != "cityblock" else (None, "")
                    rows.append(Row("dense", f"{metric} {n}x{m} D={d} {str(dtype)[6:]}",
                                    lambda X=X, Y=Y, metric=metric: tp.pairwise(X, Y, metric), peers, work,
                                    bound[0], bound[1]))
    return rows


def _smaller_cdist(call, Xn, Yn):
    def make():
        k = max(1, min(Xn.shape[0], int(2e8 / (Yn.shape[0] * Xn.shape[1]))))
        return (lambda: call(Xn[:k], Yn)), f"{k}x{Yn.shape[0]}", float(k) * Yn.shape[0] * Xn.shape[1]
    return make


def _scipy_cdist(metric, Xn, Yn, work) -> Peer:
    if not _installed("scipy"):
        return Peer("scipy cdist", None)

    def call(a, b):
        from scipy.spatial.distance import cdist

        return cdist(a, b, metric)
    return Peer("scipy cdist", lambda: (lambda: call(Xn, Yn)), max_work=2e8, smaller=_smaller_cdist(call, Xn, Yn))


def _sklearn_pairwise(metric, Xn, Yn, work) -> Peer:
    if not _installed("sklearn"):
        return Peer("sklearn pairwise_distances", None)

    def call(a, b):
        from sklearn.metrics import pairwise_distances

        if metric == "sqeuclidean":
            from sklearn.metrics.pairwise import euclidean_distances

            return euclidean_distances(a, b, squared=True)
        return pairwise_distances(a, b, metric=metric, n_jobs=-1 if metric == "cityblock" else None)
    # scikit-learn's cityblock goes through scipy (in parallel chunks): as slow as scipy
    cap = 4e8 if metric == "cityblock" else None
    return Peer("sklearn pairwise_distances", lambda: (lambda: call(Xn, Yn)), max_work=cap,
                smaller=_smaller_cdist(call, Xn, Yn) if cap else None)


# ---- batched ------------------------------------------------------------------------------
def batched_rows() -> list[Row]:
    import torchpair as tp

    rows = []
    for b, n, m in ((2000, 10, 12), (64, 500, 500)):
        for d in (8, 64):
            X, Y = _randn(b, n, d, seed=1), _randn(b, m, d, seed=2)

            def formula(X=X, Y=Y):
                d2 = torch.baddbmm((Y * Y).sum(-1)[:, None, :], X, Y.mT, alpha=-2).add_((X * X).sum(-1)[..., None])
                return d2.clamp_(min=0).sqrt_()
            bound = _gemm_bound(2.0 * b * n * m * d, 4.0 * b * n * m, F32)
            rows.append(Row("batched", f"euclidean {b}x({n}x{m}) D={d}", lambda X=X, Y=Y: tp.pairwise(X, Y),
                            [_peer("torch.cdist", lambda X=X, Y=Y: (lambda: torch.cdist(X, Y))),
                             _peer("torch formula", lambda f=formula: f)], float(b) * n * m * d, *bound))
    return rows


# ---- pdist --------------------------------------------------------------------------------
def pdist_rows() -> list[Row]:
    import torchpair as tp

    rows = []
    for dtype in (F64, F32):
        for n in (500, 3000):
            for d in (3, 16, 128):
                X = _randn(n, d, dtype=dtype, seed=3)
                Xn = X.numpy()
                peers = [_peer("torch.nn.functional.pdist", lambda X=X: (lambda: torch.nn.functional.pdist(X)))]
                if _installed("scipy"):
                    def scipy(Xn=Xn):
                        from scipy.spatial.distance import pdist

                        return lambda: pdist(Xn, "euclidean")
                    peers.append(_peer("scipy pdist", scipy))
                else:
                    peers.append(Peer("scipy pdist", None))
                pairs = n * (n - 1) / 2
                bound = _gemm_bound(d * n * n * 1.0, pairs * X.element_size(), dtype)
                rows.append(Row("pdist", f"euclidean n={n} D={d} {str(dtype)[6:]}",
                                lambda X=X: tp.pdist(X, "euclidean"), peers, pairs * d, *bound))
    return rows


# ---- lazy ---------------------------------------------------------------------------------
LAZY_N = 20000
LAZY_D = (3, 16, 64)
LAZY_C = (1, 2, 3, 4, 8, 16, 32)
#: small problems, where the torch formula holds N x M easily and a call's fixed cost shows:
#: N = M at D = 16, C = 1 (pykeops reuses its 20000^2 modules of that D and C)
LAZY_SMALL_N, LAZY_SMALL_D = (100, 300, 1000), 16
#: pykeops compiles one module per (formula, D, C) on the CPU: it runs at these C only
KEOPS_C = (1, 8)


def _chunked_rbf(X, Y, g, consume):
    """consume(K rows) over row chunks of the rbf kernel K = exp(-g |x - y|^2), concatenated."""
    step = _chunks(X.shape[0], Y.shape[0], 2**23)

    def f():
        return torch.cat([consume(torch.cdist(X[i:i + step], Y).square_().mul_(-g).exp_())
                          for i in range(0, X.shape[0], step)])
    return f


def _lazy_case(what, X, Y, V, g, chunked):
    """(ours, the torch formula, pykeops' maker) for one lazy row on the rbf kernel K =
    exp(-g |x - y|^2): K @ V, softmax_matmul (softmax of K's rows, then @ V) or logsumexp of
    K's rows — the same values on every side (tests/test_bench_sweep.py). The torch formula
    walks row chunks (`chunked`) or holds the whole matrix."""
    import torchpair as tp

    def kd():
        from pykeops.torch import LazyTensor

        return (-g * ((LazyTensor(X[:, None, :]) - LazyTensor(Y[None, :, :])) ** 2).sum(-1)).exp()
    if what == "matmul":
        ours = lambda: tp.lazy(X, Y, "rbf", gamma=g) @ V  # noqa: E731
        consume = lambda K: K @ V  # noqa: E731
        kf = lambda: (lambda K=kd(): (lambda: K @ V))()  # noqa: E731
    elif what == "softmax_matmul":
        ours = lambda: tp.lazy(X, Y, "rbf", gamma=g).softmax_matmul(V)  # noqa: E731
        consume = lambda K: torch.softmax(K, -1) @ V  # noqa: E731

        def kf():
            from pykeops.torch import LazyTensor

            K, Vk = kd(), LazyTensor(V[None, :, :])
            return lambda: K.sumsoftmaxweight(Vk, dim=1)
    else:
        ours = lambda: tp.lazy(X, Y, "rbf", gamma=g).logsumexp(-1)  # noqa: E731
        consume = lambda K: K.logsumexp(-1)  # noqa: E731
        kf = lambda: (lambda K=kd(): (lambda: K.logsumexp(dim=1)))()  # noqa: E731
    if chunked:
        torch_f = _chunked_rbf(X, Y, g, consume)
    else:
        torch_f = lambda: consume(torch.cdist(X, Y).square_().mul_(-g).exp_())  # noqa: E731
    return ours, torch_f, kf


def lazy_rows() -> list[Row]:
    keops = _installed("pykeops")
    rows = []
    n = LAZY_N
    for d in LAZY_D:
        X, Y = _randn(n, d, seed=4), _randn(n, d, seed=5)
        pairs = float(n) * n
        for what in ("matmul", "softmax_matmul", "logsumexp"):
            for c in (LAZY_C if what != "logsumexp" else (None,)):
                V = _randn(n, c, seed=6) if c else None
                ours, torch_f, kf = _lazy_case(what, X, Y, V, 1.0 / d, chunked=True)
                peers = [_peer("chunked torch formula", lambda f=torch_f: f)]
                if not keops:
                    peers.append(Peer("pykeops", None))
                elif c is None or c in KEOPS_C:
                    peers.append(Peer("pykeops", kf, max_work=None))
                else:  # a row note, never a time: one compiled module per (D, C)
                    peers.append(Peer(f"pykeops (run at C = {', '.join(map(str, KEOPS_C))} only)", None))
                rows.append(Row("lazy", f"{what} {n}^2 D={d}" + (f" C={c}" if c else ""), ours, peers,
                                pairs * (d + (c or 1))))
    d = LAZY_SMALL_D
    for n in LAZY_SMALL_N:
        X, Y, V = _randn(n, d, seed=4), _randn(n, d, seed=5), _randn(n, 1, seed=6)
        for what in ("matmul", "softmax_matmul", "logsumexp"):
            ours, torch_f, kf = _lazy_case(what, X, Y, V, 1.0 / d, chunked=False)
            peers = [_peer("torch formula", lambda f=torch_f: f),
                     Peer("pykeops", kf, max_work=None) if keops else Peer("pykeops", None)]
            rows.append(Row("lazy", f"{what} {n}^2 D={d}" + (" C=1" if what != "logsumexp" else ""), ours, peers,
                            float(n) * n * (d + 1)))
    return rows


# ---- kNN ----------------------------------------------------------------------------------
KNN_SHAPES = ((300, 300), (1000, 1000), (1000, 100000), (20000, 20000))
KNN_D = (3, 32, 128, 784)
KNN_K = (1, 10, 100)


def knn_rows() -> list[Row]:
    import torchpair as tp

    rows = []
    for n, m in KNN_SHAPES:
        for d in KNN_D:
            X, Y = _randn(n, d, seed=7), _randn(m, d, seed=8)
            Xn, Yn = X.numpy(), Y.numpy()
            for k in KNN_K:
                step = _chunks(n, m, 2**24)

                def chunked(X=X, Y=Y, k=k, step=step):
                    return lambda: [torch.cdist(X[i:i + step], Y).topk(k, largest=False) for i in range(0, n, step)]
                peers = [_peer("chunked torch cdist+topk", chunked)]
                if _installed("faiss"):
                    def faiss_flat(Xn=Xn, Yn=Yn, k=k, d=d):
                        import faiss

                        index = faiss.IndexFlatL2(d)
                        index.add(Yn)
                        return lambda: index.search(Xn, k)
                    peers.append(_peer("faiss IndexFlatL2", faiss_flat))
                else:
                    peers.append(Peer("faiss IndexFlatL2", None))
                if _installed("sklearn"):
                    def brute(Xn=Xn, Yn=Yn, k=k):
                        from sklearn.neighbors import NearestNeighbors

                        nn_ = NearestNeighbors(n_neighbors=k, algorithm="brute", n_jobs=-1).fit(Yn)
                        return lambda: nn_.kneighbors(Xn)

                    def brute_small(Xn=Xn, Yn=Yn, k=k, d=d):
                        from sklearn.neighbors import NearestNeighbors

                        q = Xn[:200]
                        nn_ = NearestNeighbors(n_neighbors=k, algorithm="brute", n_jobs=-1).fit(Yn)
                        return (lambda: nn_.kneighbors(q)), f"200x{Yn.shape[0]}", 200.0 * Yn.shape[0] * d
                    peers.append(Peer("sklearn brute", brute, max_work=5e10, smaller=brute_small))
                else:
                    peers.append(Peer("sklearn brute", None))
                bound = _gemm_bound(2.0 * n * m * d, 0, F32)
                rows.append(Row("knn", f"k={k} {n}x{m} D={d}", lambda X=X, Y=Y, k=k: tp.knn(X, Y, k), peers,
                                float(n) * m * d, *bound))
    return rows


# ---- boolean, sequences, transport --------------------------------------------------------
def boolean_rows() -> list[Row]:
    import torchpair as tp

    rows = []
    n = 2000
    for d in (64, 1024):
        g = torch.Generator().manual_seed(9)
        X, Y = torch.rand(n, d, generator=g) < 0.3, torch.rand(n, d, generator=g) < 0.3
        Xn, Yn = X.numpy(), Y.numpy()
        for metric in ("jaccard", "hamming"):
            def counting(X=X, Y=Y, metric=metric):
                a, b = X.float(), Y.float()

                def f():
                    tt = a @ b.T
                    sa, sb = a.sum(1, keepdim=True), b.sum(1)[None]
                    if metric == "hamming":
                        return (sa + sb - 2 * tt) / a.shape[1]
                    union = sa + sb - tt
                    return torch.where(union > 0, (union - tt) / union, torch.zeros_like(union))
                return f
            peers = [_peer("torch matmul counting", counting)]
            if _installed("scipy"):
                def call(a, b, metric=metric):
                    from scipy.spatial.distance import cdist

                    return cdist(a, b, metric)
                # scipy's Boolean cdist is scalar: skipped past 3e8 pair-features
                peers.append(Peer("scipy cdist", lambda call=call, Xn=Xn, Yn=Yn: (lambda: call(Xn, Yn)), max_work=3e8,
                                  smaller=_smaller_cdist(call, Xn, Yn)))
            rows.append(Row("boolean", f"{metric} {n}x{n} D={d}", lambda X=X, Y=Y, metric=metric: tp.pairwise(X, Y, metric),
                            peers, float(n) * n * d))
    return rows


def _words(count, lo, hi, seed):
    g = torch.Generator().manual_seed(seed)
    alphabet = "abcdefghijklmnopqrst"
    lengths = torch.randint(lo, hi + 1, (count,), generator=g).tolist()
    return ["".join(alphabet[int(i)] for i in torch.randint(20, (L,), generator=g)) for L in lengths]


def seq_rows() -> list[Row]:
    import torchpair as tp

    rows = []
    for (lo, hi), n in (((5, 40), 2000), ((200, 1000), 200)):
        a, b = _words(n, lo, hi, 10), _words(n, lo, hi, 11)
        (x, lx), (y, ly) = tp.encode(a, b)
        peers = []
        if _installed("rapidfuzz"):
            def rf(a=a, b=b):
                from rapidfuzz import process
                from rapidfuzz.distance import Levenshtein

                return lambda: process.cdist(a, b, scorer=Levenshtein.distance, workers=-1)
            peers.append(_peer("rapidfuzz cdist (workers=-1)", rf))
        else:
            peers.append(Peer("rapidfuzz cdist (workers=-1)", None))
        rows.append(Row("seq", f"levenshtein {n}x{n} len {lo}-{hi}",
                        lambda x=x, y=y, lx=lx, ly=ly: tp.seq.pairwise(x, y, "levenshtein", x_lengths=lx, y_lengths=ly),
                        peers, float(n) * n * (hi + lo) ** 2 / 4))
    return rows


def emd_rows() -> list[Row]:
    import torchpair as tp

    rows = []
    for n in (100, 2000, 5000):
        g = torch.Generator().manual_seed(12)
        X, Y = torch.rand(n, 2, generator=g, dtype=F64), torch.rand(n, 2, generator=g, dtype=F64)
        M = tp.pairwise(X, Y, "sqeuclidean")
        a = torch.full((n,), 1.0 / n, dtype=F64)
        Mn, an = M.numpy(), a.numpy()
        peers = []
        if _installed("ot"):
            def pot(an=an, Mn=Mn):
                import ot

                return lambda: ot.emd2(an, an, Mn, numItermax=10**8)
            peers.append(_peer("POT ot.emd2", pot))
        else:
            peers.append(Peer("POT ot.emd2", None))
        rows.append(Row("emd", f"emd2 n=m={n}", lambda a=a, M=M: tp.emd2(a, a, M), peers, float(n) * n))
    return rows


ROW_BUILDERS = {"dense": dense_rows, "batched": batched_rows, "pdist": pdist_rows, "lazy": lazy_rows,
                "knn": knn_rows, "boolean": boolean_rows, "seq": seq_rows, "emd": emd_rows}


# ---- fresh processes ----------------------------------------------------------------------
#: the first call of each public entry point on a plain 2-D float32 input, in a fresh process
FIRST_CALLS = {
    "pairwise": "tp.pairwise(X, Y, 'euclidean')",
    "pairwise rbf": "tp.pairwise(X, Y, 'rbf', gamma=0.5)",
    "pdist": "tp.pdist(X, 'euclidean')",
    "lazy @ V": "tp.lazy(X, Y, 'rbf', gamma=0.5) @ V",
    "lazy sum": "tp.lazy(X, Y, 'rbf', gamma=0.5).sum(-1)",
    "lazy logsumexp": "tp.lazy(X, Y, 'rbf', gamma=0.5).logsumexp(-1)",
    "lazy softmax_matmul": "tp.lazy(X, Y, 'rbf', gamma=0.5).softmax_matmul(V)",
    "knn": "tp.knn(X, Y, 5)",
    "pairwise jaccard (bool)": "tp.pairwise(X > 0, Y > 0, 'jaccard')",
    "seq.pairwise": "tp.seq.pairwise(S, S, 'levenshtein')",
    "emd2": "tp.emd2(a, a, tp.pairwise(X, Y, 'sqeuclidean'))",
}

_FIRST_SCRIPT = r"""
import sys, time, json
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
import torchpair as tp
t2 = time.perf_counter()
g = torch.Generator().manual_seed(0)
X, Y, V = torch.randn(100, 8, generator=g), torch.randn(100, 8, generator=g), torch.randn(100, 2, generator=g)
S = torch.randint(0, 20, (50, 12), generator=g)
a = torch.full((100,), 0.01)
t3 = time.perf_counter()
CALL
t4 = time.perf_counter()
CALL
t5 = time.perf_counter()
print(json.dumps({"import_torch": t1 - t0, "import_torchpair": t2 - t1, "first": t4 - t3, "second": t5 - t4,
                  "sympy": "sympy" in sys.modules}))
"""


def _fresh_process(script: str) -> dict:
    """The JSON line a script prints last, run in a fresh interpreter ({"error": ...} if it fails)."""
    try:
        res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
        return json.loads(res.stdout.strip().splitlines()[-1])
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"[:120]}


#: fresh processes per entry point: one first call varies by 10-40x from one process to the
#: next on a noisy host (a page-cache miss, a descheduled thread), so each time is a median
FIRST_PROCESSES = 3


def first_calls(log=None) -> list[dict]:
    """Per entry point, the median of each time over FIRST_PROCESSES fresh processes (run in
    rounds over the entry points), the slowest first call, and whether any imported sympy."""
    runs = {name: [] for name in FIRST_CALLS}
    for _ in range(FIRST_PROCESSES):
        for name, call in FIRST_CALLS.items():
            runs[name].append(_fresh_process(_FIRST_SCRIPT.replace("CALL", call)))
    out = []
    for name, ds in runs.items():
        errors = [d["error"] for d in ds if "error" in d]
        if errors:
            d = {"error": errors[0]}
        else:
            d = {key: statistics.median(x[key] for x in ds) for key in ("import_torch", "import_torchpair", "first",
                                                                       "second")}
            d["first_max"] = max(x["first"] for x in ds)
            d["sympy"] = any(x["sympy"] for x in ds)
        d["entry"] = name
        out.append(d)
        if log:
            log(f"first    {name:26} " + (d.get("error") or f"import {d['import_torchpair'] * 1e3:.0f} ms, first "
                f"{d['first'] * 1e3:.1f} ms (max {d['first_max'] * 1e3:.1f}), second {d['second'] * 1e3:.2f} ms, "
                f"sympy {d['sympy']}"))
    return out


#: twelve successive calls in a fresh process on a large output
FRESH_CASES = {
    "torchpair pairwise euclidean 4000x4000 D=64 float32": ("torch.randn(4000, 64), torch.randn(4000, 64)",
                                                           "tp.pairwise(X, Y, 'euclidean')"),
    "torch.cdist 4000x4000 D=64 float32": ("torch.randn(4000, 64), torch.randn(4000, 64)", "torch.cdist(X, Y)"),
    "torchpair pdist 3000 D=16 float64": ("torch.randn(3000, 16, dtype=torch.float64), None",
                                          "tp.pdist(X, 'euclidean')"),
    "scipy pdist 3000 D=16 float64": ("torch.randn(3000, 16, dtype=torch.float64), None",
                                      "__import__('scipy.spatial.distance').spatial.distance.pdist(X.numpy())"),
}

_FRESH_SCRIPT = r"""
import time, json, resource
import torch
import torchpair as tp
torch.manual_seed(0)
X, Y = DATA
ts, faults = [], []
for _ in range(12):
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t = time.perf_counter()
    out = CALL
    ts.append(time.perf_counter() - t)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0)
    del out
print(json.dumps({"times": ts, "faults": faults}))
"""


def fresh_sequences(log=None) -> list[dict]:
    out = []
    for name, (data, call) in FRESH_CASES.items():
        d = _fresh_process(_FRESH_SCRIPT.replace("DATA", data).replace("CALL", call))
        d["case"] = name
        out.append(d)
        if log:
            log(f"fresh    {name:52} " + (d.get("error") or " ".join(f"{t * 1e3:.0f}" for t in d["times"]) + " ms"))
    return out


# ---- the run and its report ---------------------------------------------------------------
def run_sweep(parts, budget_s: float = 1.0, log=print) -> dict:
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise ValueError(f"unknown part {unknown[0]!r}; valid: {', '.join(PARTS)}")
    started = time.perf_counter()
    results = {"outcomes": [], "first": None, "fresh": None, "roofline": None, "seconds": {}}
    needs_roof = any(p in parts for p in ("dense", "batched", "pdist", "knn"))
    if needs_roof:
        r = roofline()
        results["roofline"] = {"gemm_f32_gflops": r[F32] / 1e9, "gemm_f64_gflops": r[F64] / 1e9,
                               "copy_gbs": r["bw"] / 1e9}
    for part in PARTS:
        if part not in parts:
            continue
        t = time.perf_counter()
        if part == "first":
            results["first"] = first_calls(log)
        elif part == "fresh":
            results["fresh"] = fresh_sequences(log)
        else:
            for row in ROW_BUILDERS[part]():
                results["outcomes"].append(run_row(row, budget_s, log))
        results["seconds"][part] = time.perf_counter() - t
    results["seconds"]["total"] = time.perf_counter() - started
    return results


def _machine() -> str:
    import platform

    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads, capability {torch.backends.cpu.get_cpu_capability()}")


def markdown(results: dict) -> str:
    import torchpair as tp

    lines = ["# torchpair shape sweep", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
             f"- machine: {_machine()}; torchpair {tp.__version__}",
             "- each row: one warm-up call each, then the median of repeats run in interleaved rounds "
             "(torchpair and its peers in turn); ratio = best peer / torchpair (above 1: torchpair is faster)."]
    roof = results.get("roofline")
    if roof:
        lines.append(f"- roofline of this machine: GEMM {roof['gemm_f32_gflops']:.0f} GFLOP/s float32, "
                     f"{roof['gemm_f64_gflops']:.0f} GFLOP/s float64; memory copy {roof['copy_gbs']:.1f} GB/s. "
                     "'bound' is the shape's lower bound from these (GEMM flops or output bytes).")
    secs = results.get("seconds", {})
    if secs:
        lines.append("- run time: " + ", ".join(f"{k} {v:.0f} s" for k, v in secs.items()))
    outs = results["outcomes"]
    if outs:
        lines += ["", "| part | case | torchpair | best peer | peer time | ratio | bound | other peers, notes |",
                  "|---|---|---:|---|---:|---:|---:|---|"]
        for o in outs:
            r = o.ratio
            bound = f"{_fmt_s(o.bound_s)} ({o.bound_kind})" if o.bound_s else ""
            other = [f"{k} {_fmt_s(v)}" for k, v in o.others.items() if k != o.best] + o.notes
            lines.append(f"| {o.part} | {o.case} | {_fmt_s(o.ours_s)} | {o.best or '—'} | {_fmt_s(o.best_s)} | "
                         f"{'—' if r is None else f'{r:.2f}x'} | {bound} | {'; '.join(other)} |")
        rated = [o for o in outs if o.ratio is not None]
        if rated:
            worst = min(rated, key=lambda o: o.ratio)
            lines += ["", f"**Worst ratio: {worst.ratio:.2f}x** ({worst.part}: {worst.case}, against {worst.best}; "
                          f"{sum(o.ratio < 1 for o in rated)} of {len(rated)} rows below 1.0x)"]
    if results.get("first"):
        lines += ["", "## First call in a fresh process (100 x 100, D = 8, float32)", "",
                  f"Medians of {FIRST_PROCESSES} fresh processes per entry point (the slowest first call beside it).",
                  "", "| entry point | import torchpair | first call (slowest) | second call | sympy imported |",
                  "|---|---:|---:|---:|---|"]
        for d in results["first"]:
            if "error" in d:
                lines.append(f"| {d['entry']} | {d['error']} | | | |")
            else:
                slowest = f" ({_fmt_s(d['first_max'])})" if "first_max" in d else ""
                lines.append(f"| {d['entry']} | {_fmt_s(d['import_torchpair'])} | {_fmt_s(d['first'])}{slowest} | "
                             f"{_fmt_s(d['second'])} | {'yes' if d['sympy'] else 'no'} |")
    if results.get("fresh"):
        lines += ["", "## Twelve calls in a fresh process (ms; minor page faults per call)", ""]
        for d in results["fresh"]:
            if "error" in d:
                lines.append(f"- {d['case']}: {d['error']}")
            else:
                lines.append(f"- {d['case']}: " + ", ".join(f"{t * 1e3:.0f}" for t in d["times"]) +
                             " (faults " + ", ".join(str(f) for f in d["faults"]) + ")")
    return "\n".join(lines)


def plot(results: dict, path: str) -> str | None:
    """Ratio per row, one panel per part: the path, "" when no row has a ratio, None where
    matplotlib is not installed."""
    if not any(o.ratio is not None for o in results["outcomes"]):
        return ""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    outs = [o for o in results["outcomes"] if o.ratio is not None]
    parts = list(dict.fromkeys(o.part for o in outs))
    fig, axes = plt.subplots(len(parts), 1, figsize=(10, 1.2 + 0.16 * len(outs) + 0.6 * len(parts)), squeeze=False,
                             gridspec_kw={"height_ratios": [max(2, sum(o.part == p for o in outs)) for p in parts]})
    lo = min(0.5, min(o.ratio for o in outs) / 1.3)
    hi = max(2.0, max(o.ratio for o in outs) * 1.3)
    for ax, part in zip(axes[:, 0], parts):
        rows = [o for o in outs if o.part == part]
        ratios = [o.ratio for o in rows]
        # bars from 1.0 (parity) to the ratio: right = torchpair faster, left = the peer faster
        ax.barh(range(len(rows)), [r - 1.0 for r in ratios], left=1.0,
                color=["tab:red" if r < 1 else "tab:green" for r in ratios])
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xlim(lo, hi)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([o.case for o in rows], fontsize=5)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_title(f"{part}: best peer time / torchpair time", fontsize=8)
        ax.tick_params(axis="x", labelsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def to_json(results: dict) -> dict:
    d = dict(results)
    d["outcomes"] = [dataclasses.asdict(o) | {"ratio": o.ratio} for o in results["outcomes"]]
    return d


def write(results: dict, out_dir: str) -> tuple[str, str | None]:
    """Writes sweep.md, sweep.json and sweep.png (when matplotlib is installed) to out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    text = markdown(results)
    png = plot(results, os.path.join(out_dir, "sweep.png"))
    if png:
        text += "\n\n![shape sweep](sweep.png)\n"
    elif png is None:
        text += "\n\n(no plot: matplotlib is not installed)\n"
    md = os.path.join(out_dir, "sweep.md")
    with open(md, "w") as f:
        f.write(text)
    with open(os.path.join(out_dir, "sweep.json"), "w") as f:
        json.dump(to_json(results), f, indent=1, default=str)
    return md, png
