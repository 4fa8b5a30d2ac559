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
        K = -g * _keops_sqdist(X, Y)
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
]}
