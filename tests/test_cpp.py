"""The LibTorch C++ API and the installed CMake package, from C++.

Configures tests/cpp/ (which also builds examples/cpp/) with CMake + Ninja against the
INSTALLED package (only ``torchpair.cmake_prefix_path`` on CMAKE_PREFIX_PATH; nothing from
the build tree) into build/cpp_tests, builds it once per session (incrementally), writes the
reference tensors (inputs, independent oracles, and the Python API's results) with
torch.save, and runs the C++ test executable case by case. The C++ side compares every
result with both references (tests/cpp/test_api.cpp).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from scipy.spatial.distance import directed_hausdorff

import torchpair as tp

from _cppbuild import BUILD, ROOT, build, run as _run

CASES = ["seed", "consumers", "params_and_batches", "sets", "gradients", "autocast", "bad_input"]


# ---- reference tensors -------------------------------------------------------------------

def _sqdist(x, y):
    return ((x.unsqueeze(-2) - y.unsqueeze(-3)) ** 2).sum(-1)


def _rbf(x, y, gamma):
    return torch.exp(-gamma * _sqdist(x, y))


def references() -> dict[str, torch.Tensor]:
    """Inputs ("in/..."), independent oracles ("oracle/...": dense torch formulas, scipy) and
    the Python API's results ("python/...") for every result the C++ tests compute."""
    g = torch.Generator().manual_seed(7)
    d = torch.float64
    X, Y = torch.randn(7, 4, generator=g, dtype=d), torch.randn(9, 4, generator=g, dtype=d)
    V, W = torch.randn(9, 3, generator=g, dtype=d), torch.randn(7, 2, generator=g, dtype=d)
    Xb, Yb = torch.randn(2, 5, 3, generator=g, dtype=d), torch.randn(6, 3, generator=g, dtype=d)
    A, B = torch.randn(12, 3, generator=g, dtype=d), torch.randn(10, 3, generator=g, dtype=d) + 0.5
    refs = {f"in/{k}": v for k, v in dict(X=X, Y=Y, V=V, W=W, Xb=Xb, Yb=Yb, A=A, B=B).items()}
    oracle, python = {}, {}

    # seed
    K02 = _rbf(X, Y, 0.2)
    oracle["seed"], python["seed"] = K02 @ V, tp.lazy(X, Y, "rbf", gamma=0.2).matmul(V)
    oracle["seed_dense"], python["seed_dense"] = K02, tp.pairwise(X, Y, "rbf", gamma=0.2)

    # consumers (rbf, gamma 0.5)
    K = _rbf(X, Y, 0.5)
    L = tp.lazy(X, Y, "rbf", gamma=0.5)
    tk, tkp = torch.topk(K, 3, dim=-1, largest=False), L.topk(3, largest=False)
    tc, tcp = torch.topk(K, 2, dim=-2), L.topk(2, dim=-2)
    mn, mnp = torch.min(K, -1), L.min(-1)
    mx, mxp = torch.max(K, -2), L.max(-2)
    for name, o, p in [
        ("dense", K, L.to_dense()),
        ("sum_rows", K.sum(-1), L.sum(-1)),
        ("sum_cols", K.sum(-2), L.sum(-2)),
        ("sum_all", K.sum(), L.sum()),
        ("mean_rows", K.mean(1), L.mean(1)),
        ("mean_all", K.mean(), L.mean()),
        ("logsumexp_cols", torch.logsumexp(K, -2), L.logsumexp(-2)),
        ("logsumexp_all", torch.logsumexp(K.reshape(-1), 0), L.logsumexp()),
        ("topk_values", tk.values, tkp.values), ("topk_indices", tk.indices, tkp.indices),
        ("topk_cols_values", tc.values, tcp.values), ("topk_cols_indices", tc.indices, tcp.indices),
        ("min_values", mn.values, mnp.values), ("min_indices", mn.indices, mnp.indices),
        ("max_cols_values", mx.values, mxp.values), ("max_cols_indices", mx.indices, mxp.indices),
        ("argmax_rows", K.argmax(-1), L.argmax(-1)),
        ("softmax_matmul", torch.softmax(K, -1) @ V, L.softmax_matmul(V)),
        ("softmax_matmul_cols", torch.softmax(K, -2).T @ W, L.softmax_matmul(W, dim=-2)),
        ("t_matmul", K.T @ W, L.T.matmul(W)),
        ("t_dense", K.T, L.T.to_dense()),
        ("count_rows", (K <= 0.3).sum(-1), L.count(0.3)),
        ("count_cols", (K <= 0.3).sum(-2), L.count(0.3, dim=-2)),
        ("lse_weighted", torch.logsumexp(-2.5 * K + V[:, 0], -1), L.logsumexp(-1, scale=-2.5, log_weight=V[:, 0])),
        # parameters, aliases, batches, Y = X
        ("rbf_default_gamma", _rbf(X, Y, 1 / 4), tp.pairwise(X, Y, "rbf")),
        ("rbf_default_gamma_sum", _rbf(X, Y, 1 / 4).sum(-1), tp.lazy(X, Y, "rbf").sum(-1)),
        ("l2_alias", _sqdist(X, Y).sqrt(), tp.pairwise(X, Y, "l2")),
        ("batched", _sqdist(Xb, Yb), tp.pairwise(Xb, Yb, "sqeuclidean")),
        ("batched_min", _sqdist(Xb, Yb).min(-1).values, tp.lazy(Xb, Yb, "sqeuclidean").min(-1).values),
        # no dim: every dimension, batch included (torch.Tensor.sum()), lazy and materialized
        ("batched_sum_all", _sqdist(Xb, Yb).sum(), tp.lazy(Xb, Yb, "sqeuclidean").sum()),
        ("batched_mean_all", _sqdist(Xb, Yb).mean(), tp.lazy(Xb, Yb, "sqeuclidean").mean()),
        ("batched_logsumexp_all", torch.logsumexp(_sqdist(Xb, Yb).reshape(-1), 0),
         tp.lazy(Xb, Yb, "sqeuclidean").logsumexp()),
        ("batched_dense_sum_all", _sqdist(Xb, Yb).sum(),
         tp.pairwise_expression(Xb, Yb, "sqeuclidean", lazy=False).sum()),
        ("self_euclidean", _sqdist(X, X).sqrt(), tp.pairwise(X, None, "euclidean")),
        ("self_euclidean_sum", _sqdist(X, X).sqrt().sum(-1), tp.lazy(X, None, "euclidean").sum(-1)),
    ]:
        oracle[name], python[name] = o, p

    # set-level functions
    DAB = _sqdist(A, B)
    knn = torch.topk(DAB.sqrt(), 3, dim=-1, largest=False)
    knnp = tp.knn(A, B, 3)
    h_ab, h_ba = directed_hausdorff(A.numpy(), B.numpy())[0], directed_hausdorff(B.numpy(), A.numpy())[0]

    def mmd(a, b, gamma, unbiased=False):
        kxx, kyy, kxy = _rbf(a, a, gamma), _rbf(b, b, gamma), _rbf(a, b, gamma)
        if not unbiased:
            return kxx.mean() + kyy.mean() - 2 * kxy.mean()
        n, m = len(a), len(b)
        return ((kxx.sum() - kxx.diagonal().sum()) / (n * (n - 1)) + (kyy.sum() - kyy.diagonal().sum()) / (m * (m - 1))
                - 2 * kxy.mean())

    energy = torch.sqrt(2 * DAB.sqrt().mean() - _sqdist(A, A).sqrt().mean() - _sqdist(B, B).sqrt().mean())
    for name, o, p in [
        ("knn_values", knn.values, knnp.values), ("knn_indices", knn.indices, knnp.indices),
        ("hausdorff", torch.tensor(max(h_ab, h_ba), dtype=d), tp.hausdorff(A, B)),
        ("hausdorff_directed", torch.tensor(h_ab, dtype=d), tp.hausdorff(A, B, directed=True)),
        ("chamfer", DAB.min(1).values.mean() + DAB.min(0).values.mean(), tp.chamfer(A, B)),
        ("chamfer_sum", DAB.min(1).values.sum() + DAB.min(0).values.sum(), tp.chamfer(A, B, reduction="sum")),
        ("mmd", mmd(A, B, 1 / 3), tp.mmd(A, B)),
        ("mmd_unbiased", mmd(A, B, 0.3, True), tp.mmd(A, B, "rbf", unbiased=True, gamma=0.3)),
        ("energy_distance", energy, tp.energy_distance(A, B)),
    ]:
        oracle[name], python[name] = o, p

    # pdist, a tensor parameter (minkowski weights), exact transport: scipy and POT oracles
    import ot
    from scipy.spatial.distance import cdist as _cdist, pdist as _pdist

    w = torch.rand(3, generator=g, dtype=d) + 0.5
    refs["in/w"] = w
    a, b = torch.rand(12, generator=g, dtype=d) + 0.1, torch.rand(10, generator=g, dtype=d) + 0.1
    a, b = a / a.sum(), b / b.sum()
    refs["in/a"], refs["in/b"] = a, b
    M = torch.from_numpy(_cdist(A.numpy(), B.numpy(), "sqeuclidean"))
    for name, o, p in [
        ("pdist", torch.from_numpy(_pdist(A.numpy(), "euclidean")), tp.pdist(A)),
        ("pdist_cityblock", torch.from_numpy(_pdist(A.numpy(), "cityblock")), tp.pdist(A, "cityblock")),
        ("minkowski_w", torch.from_numpy(_cdist(A.numpy(), B.numpy(), "minkowski", p=3, w=w.numpy())),
         tp.pairwise(A, B, "minkowski", p=3, w=w)),
        ("emd2", torch.tensor(ot.emd2(a.numpy(), b.numpy(), M.numpy()), dtype=d), tp.emd2(a, b, M)),
        ("emd_plan_marginal", a, tp.emd(a, b, M).sum(-1)),
    ]:
        oracle[name], python[name] = o, p

    # the Sinkhorn divergence: GeomLoss' SamplesLoss("sinkhorn") (tensorized) as the oracle
    import geomloss
    for name, o, p in [
        ("sinkhorn_divergence", geomloss.SamplesLoss("sinkhorn", blur=0.3, backend="tensorized")(A, B),
         tp.sinkhorn_divergence(A, B, blur=0.3)),
        ("sinkhorn_divergence_weighted",
         geomloss.SamplesLoss("sinkhorn", blur=0.2, scaling=0.8, reach=1.0, backend="tensorized")(a, A, b, B),
         tp.sinkhorn_divergence(A, B, a, b, blur=0.2, scaling=0.8, reach=1.0)),
    ]:
        oracle[name], python[name] = o, p

    # token sequences: rapidfuzz oracles
    from rapidfuzz import process
    from rapidfuzz.distance import JaroWinkler, Levenshtein

    words_a = ["kitten", "sitting", "", "flaw", "lawn", "intention"]
    words_b = ["mitten", "fitting", "execution", "law", "a"]
    (sx, sxl), (sy, syl) = tp.encode(words_a, words_b)
    refs.update({"in/sx": sx, "in/sxl": sxl, "in/sy": sy, "in/syl": syl})
    lev = torch.from_numpy(process.cdist(words_a, words_b, scorer=Levenshtein.distance)).long()
    lev_w = torch.from_numpy(process.cdist(words_a, words_b, scorer=Levenshtein.distance, scorer_kwargs={
        "weights": (1, 2, 3)})).long()
    jw = torch.from_numpy(process.cdist(words_a, words_b, scorer=JaroWinkler.distance, dtype="float64"))
    lev_self = torch.from_numpy(process.cdist(words_a, words_a, scorer=Levenshtein.distance)).long()
    iu = torch.triu_indices(len(words_a), len(words_a), 1)
    near = torch.sort(lev, dim=1, stable=True)
    for name, o, p in [
        ("seq_levenshtein", lev, tp.seq.pairwise(sx, sy, "levenshtein", x_lengths=sxl, y_lengths=syl)),
        ("seq_levenshtein_weights", lev_w,
         tp.seq.pairwise(sx, sy, "levenshtein", x_lengths=sxl, y_lengths=syl, weights=(1, 2, 3))),
        ("seq_jaro_winkler", jw, tp.seq.pairwise(sx, sy, "jaro_winkler", x_lengths=sxl, y_lengths=syl)),
        ("seq_pdist", lev_self[iu[0], iu[1]], tp.seq.pdist(sx, "levenshtein", lengths=sxl)),
        ("seq_topk_values", near.values[:, :2], tp.seq.lazy(sx, sy, "levenshtein", x_lengths=sxl,
                                                            y_lengths=syl).topk(2, largest=False).values),
        ("seq_topk_indices", near.indices[:, :2], tp.seq.lazy(sx, sy, "levenshtein", x_lengths=sxl,
                                                              y_lengths=syl).topk(2, largest=False).indices),
    ]:
        oracle[name], python[name] = o, p

    # gradients: autograd through the dense formulas vs through the Python API
    def grads(f, *inputs):
        inputs = [t.clone().requires_grad_(True) for t in inputs]
        return torch.autograd.grad(f(*inputs), inputs)

    seed_loss = lambda x, v: ((_rbf(x, Y, 0.2) @ v) ** 2).sum()  # noqa: E731
    seed_loss_tp = lambda x, v: (tp.lazy(x, Y, "rbf", gamma=0.2).matmul(v) ** 2).sum()  # noqa: E731
    (oracle["grad_seed_x"], oracle["grad_seed_v"]), (python["grad_seed_x"], python["grad_seed_v"]) = (
        grads(seed_loss, X, V), grads(seed_loss_tp, X, V))
    oracle["grad_mmd_a"], = grads(lambda a: mmd(a, B, 1 / 3), A)
    python["grad_mmd_a"], = grads(lambda a: tp.mmd(a, B), A)
    oracle["grad_softmax_x"], = grads(lambda x: (torch.softmax(_rbf(x, Y, 0.5), -1) @ V).sum(), X)
    python["grad_softmax_x"], = grads(lambda x: tp.lazy(x, Y, "rbf", gamma=0.5).softmax_matmul(V).sum(), X)
    oracle["grad_topk_x"], = grads(lambda x: torch.topk(_rbf(x, Y, 0.5), 3, largest=False).values.sum(), X)
    python["grad_topk_x"], = grads(lambda x: tp.lazy(x, Y, "rbf", gamma=0.5).topk(3, largest=False).values.sum(), X)

    # autocast: bfloat16 inputs (values exactly representable) run in float32
    Xh, Yh, Vh = (t.float().bfloat16().float() for t in (X, Y, V))
    refs.update({"in/Xh": Xh, "in/Yh": Yh, "in/Vh": Vh})
    oracle["autocast_seed"], oracle["autocast_sum"] = _rbf(Xh, Yh, 0.2) @ Vh, _rbf(Xh, Yh, 0.2).sum(-1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        Lh = tp.lazy(Xh.bfloat16(), Yh.bfloat16(), "rbf", gamma=0.2)
        python["autocast_seed"], python["autocast_sum"] = Lh.matmul(Vh.bfloat16()), Lh.sum(-1)

    assert oracle.keys() == python.keys()
    refs.update({f"oracle/{k}": v for k, v in oracle.items()})
    refs.update({f"python/{k}": v for k, v in python.items()})
    # plain, contiguous, detached tensors (torch::pickle_load reads them in C++)
    return {k: torch.as_tensor(v).detach().clone().contiguous() for k, v in refs.items()}


@pytest.fixture(scope="module")
def cpp_build():
    BUILD.mkdir(parents=True, exist_ok=True)
    refs_path = BUILD / "refs.pt"  # also what ctest in build/cpp_tests runs on
    torch.save(references(), refs_path)
    return build(), refs_path


def test_cmake_prefix_path_is_outside_the_build_tree():
    prefix = Path(tp.cmake_prefix_path).resolve()
    assert (prefix / "lib" / "cmake" / "torchpair" / "torchpairConfig.cmake").is_file()
    assert (prefix / "include" / "torchpair" / "torchpair.h").is_file()
    assert not prefix.is_relative_to((ROOT / "build").resolve()), prefix
    # printed by `python -c "import torchpair; print(torchpair.cmake_prefix_path)"`
    r = _run([sys.executable, "-c", "import torchpair; print(torchpair.cmake_prefix_path)"])
    assert r.returncode == 0 and r.stdout.strip() == tp.cmake_prefix_path, r.stderr


@pytest.mark.parametrize("case", CASES)
def test_cpp(cpp_build, case):
    build, refs = cpp_build
    r = _run([build / "torchpair_cpp_tests", refs, case], timeout=300)
    assert r.returncode == 0 and "1 passed, 0 failed" in r.stdout, r.stdout + r.stderr


def test_cpp_unknown_reference_fails(cpp_build, tmp_path):
    """The C++ comparison cannot pass by omission: a missing reference is a failure."""
    build, _ = cpp_build
    refs = references()
    del refs["oracle/seed"]
    torch.save(refs, tmp_path / "partial.pt")
    r = _run([build / "torchpair_cpp_tests", tmp_path / "partial.pt", "seed"], timeout=300)
    assert r.returncode == 1 and "'oracle/seed' is missing" in r.stdout, r.stdout + r.stderr


def test_cpp_wrong_reference_fails(cpp_build, tmp_path):
    build, _ = cpp_build
    refs = references()
    refs["python/seed"] = refs["python/seed"] + 1e-6
    torch.save(refs, tmp_path / "wrong.pt")
    r = _run([build / "torchpair_cpp_tests", tmp_path / "wrong.pt", "seed"], timeout=300)
    assert r.returncode == 1 and "seed: differs from python/" in r.stdout, r.stdout + r.stderr


def test_example_program(cpp_build):
    build, _ = cpp_build
    r = _run([build / "examples" / "torchpair_example"], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[1000, 4]" in r.stdout and "max |difference| from the dense formula" in r.stdout, r.stdout
