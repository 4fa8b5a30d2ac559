"""``torchpair demo``: each capability on data that ships with the install, with its result,
its time, and what the dense torch way would need in memory.

Data: scikit-learn's bundled handwritten digits (no download), generated point clouds, and a
generated word list with misspelled queries.
"""
from __future__ import annotations

import contextlib
import time

import torch

import torchpair as tp


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.1f} GiB" if n_bytes >= 2**28 else f"{n_bytes / 2**20:.1f} MiB"


@contextlib.contextmanager
def _step(number: int, title: str):
    print(f"\n[{number}] {title}", flush=True)
    t = time.perf_counter()
    yield
    print(f"    time: {time.perf_counter() - t:.2f} s", flush=True)


def _digits():
    from sklearn.datasets import load_digits

    data = load_digits()
    X = torch.tensor(data.data, dtype=torch.float32)
    y = torch.tensor(data.target)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    return X[perm], y[perm], data.images[perm.numpy()]


def knn_digits(X, y, k=5):
    n_train = 1200
    Xtr, ytr, Xte, yte = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    _, idx = tp.knn(Xte, Xtr, k)  # euclidean
    pred = torch.mode(ytr[idx], dim=1).values
    acc = (pred == yte).float().mean().item()
    print(f"    {k}-NN on digits: {len(Xte)} test images against {n_train} training images, accuracy {acc:.3f}")
    try:
        from sklearn.neighbors import KNeighborsClassifier

        ref = KNeighborsClassifier(k, algorithm="brute").fit(Xtr.numpy(), ytr.numpy()).score(Xte.numpy(), yte.numpy())
        print(f"    scikit-learn KNeighborsClassifier(brute) on the same split: accuracy {ref:.3f}")
    except ImportError:
        pass
    return acc


def kernel_regression(n):
    """Nadaraya-Watson regression on n points: f(x_i) = sum_j K_ij v_j / sum_j K_ij, streamed."""
    g = torch.Generator().manual_seed(1)
    Y = torch.rand(n, 3, generator=g) * 4 - 2
    v = torch.sin(2 * Y[:, 0]) + Y[:, 1] * Y[:, 2] + 0.1 * torch.randn(n, generator=g)
    X = torch.rand(n, 3, generator=g) * 4 - 2
    V = torch.stack([v, torch.ones_like(v)], 1)  # numerator and normaliser in one product
    gamma = 8.0
    t = time.perf_counter()
    num_den = tp.lazy(X, Y, "rbf", gamma=gamma) @ V
    elapsed = time.perf_counter() - t
    f = num_den[:, 0] / num_den[:, 1]
    truth = torch.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2]
    rmse = (f - truth).square().mean().sqrt().item()
    # spot check against the dense formula on a few rows
    rows = X[:8]
    dense = torch.exp(-gamma * torch.cdist(rows.double(), Y.double()) ** 2) @ V.double()
    err = ((num_den[:8].double() - dense).abs() / dense.abs()).max().item()
    print(f"    {n:,} x {n:,} rbf kernel product (D=3): {elapsed:.2f} s; regression RMSE vs the noiseless "
          f"function {rmse:.3f}; max relative error vs dense float64 on 8 rows {err:.1e}")
    print(f"    the dense torch way would materialise {_gib(4.0 * n * n)} (float32 N x M); torchpair used O(N + M)")


def mmd_digits(X, y):
    gamma = 1.0 / (X.shape[1] * X.var().item())
    pairs = [(0, 0), (1, 7), (3, 8), (0, 1)]
    for a, b in pairs:
        A, B = X[y == a], X[y == b]
        if a == b:  # two halves of one class: close to zero
            A, B = A[: len(A) // 2], A[len(A) // 2:]
        val = tp.mmd(A, B, "rbf", gamma=gamma).item()
        print(f"    MMD^2(digit {a}, digit {b}) = {val:.4f}" + ("   (two halves of one class)" if a == b else ""))


def emd_digits(X, y, images):
    if not hasattr(tp, "emd2"):
        print("    skipped: exact optimal transport (tp.emd2) is not in this build")
        return
    coords = torch.stack(torch.meshgrid(torch.arange(8.0), torch.arange(8.0), indexing="ij"), -1).reshape(64, 2)
    M = tp.pairwise(coords.double(), coords.double(), "euclidean")

    def hist(i):
        h = torch.tensor(images[i], dtype=torch.float64).reshape(64)
        return h / h.sum()

    i1, j1, k0 = [int(torch.nonzero(y == c)[r]) for c, r in ((1, 0), (1, 1), (0, 0))]
    for a, b, label in ((i1, j1, "a '1' and another '1'"), (i1, k0, "a '1' and a '0'")):
        cost = tp.emd2(hist(a), hist(b), M).item()
        line = f"    earth mover's distance between {label}: {cost:.4f} pixels"
        try:
            import ot

            line += f"   (POT ot.emd2: {ot.emd2(hist(a).numpy(), hist(b).numpy(), M.numpy()):.4f})"
        except ImportError:
            pass
        print(line)


def _words(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    onsets = ["b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "br", "st", "tr", "pl"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou"]
    codas = ["", "", "n", "r", "s", "t", "l"]
    words = set()
    while len(words) < n:
        k = int(torch.randint(2, 4, (1,), generator=g))
        w = "".join(onsets[int(torch.randint(len(onsets), (1,), generator=g))] +
                    vowels[int(torch.randint(len(vowels), (1,), generator=g))] +
                    codas[int(torch.randint(len(codas), (1,), generator=g))] for _ in range(k))
        words.add(w)
    return sorted(words)


def _misspell(word, g):
    letters = "abcdefghijklmnopqrstuvwxyz"
    chars = list(word)
    pos = int(torch.randint(len(chars), (1,), generator=g))
    op = int(torch.randint(3, (1,), generator=g))
    c = letters[int(torch.randint(26, (1,), generator=g))]
    if op == 0:
        chars[pos] = c
    elif op == 1:
        chars.insert(pos, c)
    elif len(chars) > 1:
        del chars[pos]
    return "".join(chars)


def nearest_words(n_vocab, n_queries):
    vocab = _words(n_vocab)
    g = torch.Generator().manual_seed(2)
    picks = torch.randint(len(vocab), (n_queries,), generator=g).tolist()
    queries = [_misspell(vocab[i], g) for i in picks]
    (q, lq), (v, lv) = tp.encode(queries, vocab)
    t = time.perf_counter()
    dist, idx = tp.seq.lazy(q, v, "levenshtein", x_lengths=lq, y_lengths=lv).topk(3, largest=False)
    elapsed = time.perf_counter() - t
    # the misspelled word's source is one edit away: it must be among the nearest (ties possible)
    found = sum(int(dist[i, 0]) <= 1 and picks[i] in idx[i].tolist() or int(dist[i, 0]) == 0 for i in range(n_queries))
    print(f"    {n_queries} misspelled queries against {len(vocab):,} words, 3 nearest by Levenshtein distance "
          f"(streamed top-k): {elapsed:.2f} s")
    for i in range(3):
        near = ", ".join(f"{vocab[j]} ({int(d)})" for d, j in zip(dist[i].tolist(), idx[i].tolist()))
        print(f"    {queries[i]!r:>16} -> {near}")
    print(f"    the source word is among the 3 nearest for {found}/{n_queries} queries")
    try:
        from rapidfuzz.distance import Levenshtein

        ref = min(Levenshtein.distance(queries[0], w) for w in vocab)
        print(f"    rapidfuzz check, query 0: nearest distance {ref} (torchpair {int(dist[0, 0])})")
    except ImportError:
        pass
    print(f"    the dense way would materialise {_gib(8.0 * n_queries * len(vocab))} (int64 N x M)")


def compiled_query(n=2000):
    class Query(torch.nn.Module):
        def forward(self, X, Y, V):
            K = tp.lazy(X, Y, metric="rbf", gamma=0.2)
            return K.matmul(V)

    g = torch.Generator().manual_seed(3)
    X, Y, V = torch.randn(n, 16, generator=g), torch.randn(n, 16, generator=g), torch.randn(n, 4, generator=g)
    eager = Query()(X, Y, V)
    compiled = torch.compile(Query(), fullgraph=True)(X, Y, V)
    exported = torch.export.export(Query(), (X, Y, V))
    ops = sorted({str(node.target) for node in exported.graph.nodes if node.op == "call_function"})
    out = exported.module()(X, Y, V)
    print(f"    torch.compile(fullgraph=True): max |compiled - eager| = {(compiled - eager).abs().max().item():.1e}")
    print(f"    torch.export graph calls: {', '.join(ops)}; max |exported - eager| = "
          f"{(out - eager).abs().max().item():.1e}")


def run_demo(quick: bool = False) -> None:
    torch.manual_seed(0)
    print(f"torchpair {tp.__version__} demo (torch {torch.__version__}, {torch.get_num_threads()} threads)")
    X, y, images = _digits()
    with _step(1, "k-nearest-neighbour classification of handwritten digits (tp.knn)"):
        knn_digits(X, y)
    n = 20_000 if quick else 100_000
    with _step(2, "kernel regression with a lazy kernel product too large for memory (tp.lazy(...) @ V)"):
        kernel_regression(n)
    with _step(3, "maximum mean discrepancy between digit classes (tp.mmd)"):
        mmd_digits(X, y)
    with _step(4, "exact earth mover's distance between two digit images (tp.emd2)"):
        emd_digits(X, y, images)
    with _step(5, "nearest words by edit distance, without an N x M matrix"):
        nearest_words(2_000 if quick else 20_000, 50 if quick else 200)
    with _step(6, "the seed's Query compiled with fullgraph=True and exported"):
        compiled_query(500 if quick else 2000)
