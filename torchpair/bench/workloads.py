"""The workloads ``python -m torchpair bench`` runs: one entry per job a user would switch for,
each with torchpair and every anchor that does the same job.

A workload builds, for one problem size, the list of implementations to time. Anchors import
their library inside ``_anchor``: one that is not installed becomes a "skipped" row in the
report, never a silently missing one.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch

import torchpair as tp


@dataclasses.dataclass
class Impl:
    name: str
    fn: Callable[[], Any] | None = None
    note: str = ""
    #: anchors much slower than torchpair run fewer repeats
    repeat_scale: float = 1.0


@dataclasses.dataclass
class Workload:
    name: str
    title: str
    sizes: tuple
    quick_sizes: tuple
    setup: Callable[[int], list]
    size_label: str = "N = M"


def _anchor(package: str, name: str, make: Callable[[], Callable], repeat_scale: float = 0.5) -> Impl:
    try:
        return Impl(name, make(), repeat_scale=repeat_scale)
    except ImportError:
        return Impl(name, None, note=f"skipped: {package} not installed")


def _data(*shapes, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g, dtype=dtype) for s in shapes]


def _keops_sqdist(X, Y):
    from pykeops.torch import LazyTensor

    return ((LazyTensor(X[:, None, :]) - LazyTensor(Y[None, :, :])) ** 2).sum(-1)


# ---- workloads ----------------------------------------------------------------------------
def _lazy_rbf_matmul(n, d=3, c=1):
    X, Y, V = _data((n, d), (n, d), (n, c))
    g = 1.0 / d

    def keops():
        K = (-g * _keops_sqdist(X, Y)).exp()
        return lambda: K @ V

    return [
        Impl("torchpair", lambda: tp.lazy(X, Y, "rbf", gamma=g) @ V),
        Impl("dense torch", lambda: torch.exp(-g * torch.cdist(X, Y) ** 2) @ V, repeat_scale=0.5),
        _anchor("pykeops", "pykeops", keops),
    ]


def _lazy_rbf_matmul_backward(n, d=64, c=16):
    X, Y, V = (t.requires_grad_(True) for t in _data((n, d), (n, d), (n, c)))
    g = 1.0 / d

    def step(build):
        def f():
            for t in (X, Y, V):
                t.grad = None
            build().sum().backward()
        return f

    def keops():
        return step(lambda: (-g * _keops_sqdist(X, Y)).exp() @ V)

    return [
        Impl("torchpair", step(lambda: tp.lazy(X, Y, "rbf", gamma=g) @ V)),
        Impl("dense torch", step(lambda: torch.exp(-g * torch.cdist(X, Y) ** 2) @ V), repeat_scale=0.5),
        _anchor("pykeops", "pykeops", keops),
    ]


def _dense_euclidean(n, d=64):
    X, Y = _data((n, d), (n, d))
    Xn, Yn = X.numpy(), Y.numpy()

    def sklearn():
        from sklearn.metrics import pairwise_distances

        return lambda: pairwise_distances(Xn, Yn, metric="euclidean", n_jobs=2)

    def scipy():
        from scipy.spatial.distance import cdist

        return lambda: cdist(Xn, Yn, "euclidean")

    return [
        Impl("torchpair", lambda: tp.pairwise(X, Y, "euclidean")),
        Impl("torch.cdist", lambda: torch.cdist(X, Y)),
        _anchor("scikit-learn", "sklearn pairwise_distances (n_jobs=2)", sklearn),
        _anchor("scipy", "scipy cdist", scipy),
    ]


def _knn(n, d=32, k=10):
    X, Y = _data((n, d), (n, d))
    Xn, Yn = X.numpy(), Y.numpy()

    def chunked():
        return [torch.cdist(X[i:i + 2048], Y).topk(k, largest=False) for i in range(0, n, 2048)]

    def argkmin():
        from sklearn.metrics._pairwise_distances_reduction import ArgKmin

        return lambda: ArgKmin.compute(Xn, Yn, k, metric="euclidean", return_distance=True)

    def keops():
        D2 = _keops_sqdist(X, Y)
        return lambda: D2.Kmin_argKmin(k, dim=1)

    return [
        Impl("torchpair", lambda: tp.knn(X, Y, k)),
        Impl("chunked torch.cdist + topk", chunked),
        _anchor("scikit-learn", "sklearn ArgKmin", argkmin),
        _anchor("pykeops", "pykeops Kmin_argKmin", keops),
    ]


def _lazy_logsumexp(n, d=32):
    X, Y = _data((n, d), (n, d))
    g = 1.0 / d

    def keops():
        K = (-g * _keops_sqdist(X, Y)).exp()  # the rbf values, as the other two reduce
        return lambda: K.logsumexp(dim=1)

    return [
        Impl("torchpair", lambda: tp.lazy(X, Y, "rbf", gamma=g).logsumexp(-1)),
        Impl("dense torch", lambda: torch.exp(-g * torch.cdist(X, Y) ** 2).logsumexp(-1), repeat_scale=0.5),
        _anchor("pykeops", "pykeops", keops),
    ]


def _softmax_matmul(n, d=32, c=8):
    X, Y, V = _data((n, d), (n, d), (n, c))
    g = 1.0 / d

    def keops():
        from pykeops.torch import LazyTensor

        K = (-g * _keops_sqdist(X, Y)).exp()
        Vk = LazyTensor(V[None, :, :])
        return lambda: K.sumsoftmaxweight(Vk, dim=1)

    return [
        Impl("torchpair", lambda: tp.lazy(X, Y, "rbf", gamma=g).softmax_matmul(V)),
        Impl("dense torch", lambda: torch.softmax(torch.exp(-g * torch.cdist(X, Y) ** 2), -1) @ V, repeat_scale=0.5),
        _anchor("pykeops", "pykeops", keops),
    ]


def _dense_cityblock(n, d=32):
    X, Y = _data((n, d), (n, d))
    Xn, Yn = X.numpy(), Y.numpy()

    def scipy():
        from scipy.spatial.distance import cdist

        return lambda: cdist(Xn, Yn, "cityblock")

    def sklearn():
        from sklearn.metrics import pairwise_distances

        return lambda: pairwise_distances(Xn, Yn, metric="cityblock", n_jobs=2)

    return [
        Impl("torchpair", lambda: tp.pairwise(X, Y, "cityblock")),
        Impl("torch.cdist(p=1)", lambda: torch.cdist(X, Y, p=1)),
        Impl("torch broadcasting", lambda: (X[:, None] - Y[None]).abs().sum(-1), repeat_scale=0.5),
        _anchor("scipy", "scipy cdist", scipy),
        _anchor("scikit-learn", "sklearn pairwise_distances (n_jobs=2)", sklearn),
    ]


def _pdist(n, d=32):
    (X,) = _data((n, d))
    Xn = X.numpy()

    def scipy():
        from scipy.spatial.distance import pdist

        return lambda: pdist(Xn, "euclidean")

    return [
        Impl("torchpair", lambda: tp.pdist(X, "euclidean")),
        Impl("torch.pdist", lambda: torch.pdist(X)),
        _anchor("scipy", "scipy pdist", scipy),
    ]


def _tanimoto(n, d=1024):
    g = torch.Generator().manual_seed(0)
    X, Y = torch.rand(n, d, generator=g) < 0.2, torch.rand(n, d, generator=g) < 0.2
    Xn, Yn = X.numpy(), Y.numpy()

    def matmul_counting():
        a, b = X.float(), Y.float()
        tt = a @ b.T
        return tt / (a.sum(1, keepdim=True) + b.sum(1)[None] - tt)

    def scipy():
        from scipy.spatial.distance import cdist

        return lambda: 1.0 - cdist(Xn, Yn, "jaccard")

    return [
        Impl("torchpair", lambda: tp.pairwise(X, Y, "tanimoto")),
        Impl("torch matmul counting", matmul_counting),
        _anchor("scipy", "scipy cdist (1 - jaccard)", scipy, repeat_scale=0.34),
    ]


def _levenshtein(n):
    g = torch.Generator().manual_seed(0)
    alphabet = "abcdefghijklmnopqrst"
    words = ["".join(alphabet[int(i)] for i in torch.randint(20, (int(L),), generator=g))
             for L in torch.randint(5, 41, (2 * n,), generator=g)]
    a, b = words[:n], words[n:]
    (x, lx), (y, ly) = tp.encode(a, b)

    def rapidfuzz():
        from rapidfuzz import process
        from rapidfuzz.distance import Levenshtein

        return lambda: process.cdist(a, b, scorer=Levenshtein.distance, workers=-1)

    return [
        Impl("torchpair", lambda: tp.seq.pairwise(x, y, "levenshtein", x_lengths=lx, y_lengths=ly)),
        _anchor("rapidfuzz", "rapidfuzz process.cdist (workers=-1)", rapidfuzz),
    ]


def _emd2(n):
    g = torch.Generator().manual_seed(0)
    X, Y = torch.rand(n, 2, generator=g, dtype=torch.float64), torch.rand(n, 2, generator=g, dtype=torch.float64)
    M = tp.pairwise(X, Y, "sqeuclidean")
    a = torch.full((n,), 1.0 / n, dtype=torch.float64)
    Mn, an = M.numpy(), a.numpy()

    def pot():
        import ot

        return lambda: ot.emd2(an, an, Mn, numItermax=10**8)

    return [
        Impl("torchpair", lambda: tp.emd2(a, a, M)),
        _anchor("POT", "POT ot.emd2", pot),
    ]


WORKLOADS: dict[str, Workload] = {w.name: w for w in [
    Workload("lazy-rbf-matmul", "lazy rbf kernel product K @ V (D=3, C=1, float32)",
             (5000, 10000, 20000), (2000, 5000), _lazy_rbf_matmul),
    Workload("lazy-rbf-matmul-backward", "lazy rbf K @ V forward + backward (D=64, C=16, float32)",
             (2500, 5000, 10000), (1000, 2500), _lazy_rbf_matmul_backward),
    Workload("dense-euclidean", "dense euclidean distance matrix (D=64, float32)",
             (1000, 2000, 4000), (500, 1000), _dense_euclidean),
    Workload("knn", "k-nearest neighbours, k=10 (D=32, float32)",
             (5000, 10000, 20000), (2000, 4000), _knn),
    Workload("lazy-logsumexp", "lazy rbf logsumexp over rows (D=32, float32)",
             (5000, 10000, 20000), (2000, 4000), _lazy_logsumexp),
    Workload("softmax-matmul", "softmax(K) @ V, streamed (D=32, C=8, float32)",
             (5000, 10000, 20000), (2000, 4000), _softmax_matmul),
    Workload("dense-cityblock", "dense cityblock (L1) distance matrix (D=32, float32)",
             (500, 1000, 2000), (250, 500), _dense_cityblock),
    Workload("pdist", "condensed euclidean pdist (D=32, float32)", (1000, 2000, 4000), (500, 1000), _pdist,
             size_label="N"),
    Workload("tanimoto", "Tanimoto similarity of bit vectors (D=1024, density 0.2)",
             (500, 1000, 2000), (250, 500), _tanimoto),
    Workload("levenshtein", "Levenshtein distance matrix, strings of length 5-40, 20 letters",
             (500, 1000, 2000), (250, 500), _levenshtein),
    Workload("emd2", "exact optimal transport cost, 2-D points, sqeuclidean cost (float64)",
             (250, 500, 1000), (100, 250), _emd2, size_label="n = m"),
]}
