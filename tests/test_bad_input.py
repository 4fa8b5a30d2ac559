"""Bad input raises ValueError/TypeError (or RuntimeError) whose message names the
offending argument; never a crash, never a silent wrong answer. One row per mistake."""
import pytest
import torch

import torchpair as tp

x = torch.randn(5, 3)
y = torch.randn(4, 3)
v = torch.randn(4, 2)
x64 = torch.randn(5, 3, dtype=torch.float64)

# (id, callable, exception, regex the message must match)
CASES = [
    ("feature-mismatch", lambda: tp.pairwise(x, torch.randn(4, 5)), ValueError, r"'x' has 3 features but 'y' has 5"),
    ("x-rank-1", lambda: tp.pairwise(torch.randn(5), y), ValueError, r"'x' must have shape \[\.\.\., rows, features\]"),
    ("y-rank-1", lambda: tp.pairwise(x, torch.randn(3)), ValueError, r"'y' must have shape"),
    ("x-rank-0", lambda: tp.pairwise(torch.tensor(1.0), y), ValueError, r"'x'"),
    ("x-int", lambda: tp.pairwise(torch.ones(5, 3, dtype=torch.int64), y), TypeError, r"floating-point 'x'"),
    ("y-int", lambda: tp.pairwise(x, torch.ones(4, 3, dtype=torch.int32)), TypeError, r"floating-point 'y'"),
    ("x-bool", lambda: tp.pairwise(torch.ones(5, 3, dtype=torch.bool), y), TypeError, r"'x'"),
    ("x-complex", lambda: tp.pairwise(torch.randn(5, 3, dtype=torch.complex64), y), TypeError, r"'x'"),
    ("mixed-dtypes", lambda: tp.pairwise(x64, y), TypeError, r"'x' has dtype .*Double.* but 'y' has .*Float"),
    ("different-devices", lambda: tp.pairwise(x, y.to("meta")), ValueError, r"'x' is on cpu but 'y' is on meta"),
    ("unknown-metric", lambda: tp.pairwise(x, y, "euclidian"), ValueError, r"unknown metric 'euclidian'.*'metric'"),
    ("metric-not-str", lambda: tp.pairwise(x, y, 3), TypeError, r"'metric'"),
    ("unknown-param", lambda: tp.pairwise(x, y, "rbf", gama=0.1), TypeError, r"unexpected keyword argument 'gama'.*gamma"),
    ("param-not-for-metric", lambda: tp.pairwise(x, y, "euclidean", gamma=0.1), ValueError,
     r"metric 'euclidean' does not take parameter 'gamma'"),
    ("negative-gamma", lambda: tp.pairwise(x, y, "rbf", gamma=-1.0), ValueError, r"'gamma'.*>= 0"),
    ("nan-gamma", lambda: tp.pairwise(x, y, "rbf", gamma=float("nan")), ValueError, r"'gamma'.*finite"),
    ("inf-gamma", lambda: tp.lazy(x, y, "rbf", gamma=float("inf")), ValueError, r"'gamma'.*finite"),
    ("gamma-str", lambda: tp.pairwise(x, y, "rbf", gamma="0.1"), TypeError, r"'gamma'"),
    ("gamma-vector", lambda: tp.pairwise(x, y, "rbf", gamma=torch.ones(3)), TypeError, r"'gamma'"),
    ("x-not-tensor", lambda: tp.pairwise([[1.0, 2.0]], y), TypeError, r"'X' must be a torch.Tensor"),
    ("v-wrong-rows", lambda: tp.lazy(x, y, "rbf") @ torch.randn(5, 2), ValueError, r"'v' has 5 rows but the operator has 4"),
    ("v-transposed-rows", lambda: tp.lazy(x, y, "rbf").T @ torch.randn(4, 2), ValueError, r"'v' has 4 rows"),
    ("v-dtype", lambda: tp.lazy(x, y, "rbf") @ v.double(), TypeError, r"'v' has dtype"),
    ("v-not-tensor", lambda: tp.lazy(x, y, "rbf").matmul([1.0]), TypeError, r"'V' must be a torch.Tensor"),
    ("v-scalar", lambda: tp.lazy(x, y, "rbf") @ torch.tensor(1.0), ValueError, r"'v'"),
    ("batch-mismatch", lambda: tp.pairwise(torch.randn(2, 5, 3), torch.randn(3, 4, 3)), ValueError,
     r"batch dimensions of 'x'.*and 'y'.*do not broadcast"),
    ("lazy-batch-mismatch", lambda: tp.lazy(torch.randn(2, 5, 3), torch.randn(3, 4, 3)), ValueError, r"batch dimensions"),
    ("sum-dim-out-of-range", lambda: tp.lazy(x, y).sum(2), ValueError, r"'dim' 2 is out of range"),
    ("sum-dim-batch", lambda: tp.lazy(torch.randn(2, 5, 3), None).sum(0), ValueError, r"'dim' must be one of the last two"),
    ("sum-dim-type", lambda: tp.lazy(x, y).sum("rows"), TypeError, r"'dim'"),
    ("lazy-flag", lambda: tp.pairwise_expression(x, y, "rbf", lazy="yes"), TypeError, r"'lazy'"),
    ("sparse-x", lambda: tp.pairwise(x.to_sparse(), y), ValueError, r"'x' must be a dense"),
    ("metric-info-unknown", lambda: tp.metric_info("nope"), ValueError, r"unknown metric 'nope'"),
    ("lazy-unknown-metric", lambda: tp.lazy(x, y, "nope"), ValueError, r"unknown metric 'nope'"),
    ("lazy-bad-param", lambda: tp.lazy(x, y, "euclidean", gamma=1.0), ValueError, r"does not take parameter 'gamma'"),
    # the core operators validate too (they are callable from Python and C++)
    ("core-unknown-kernel", lambda: torch.ops.torchpair._dense(x[None], y[None], None, None, "nope", [], False, False),
     ValueError, r"unknown engine kernel 'nope'.*'kernel'"),
    ("core-scalars", lambda: torch.ops.torchpair._dense(x[None], y[None], None, None, "rbf_direct", [], False, False),
     ValueError, r"takes 1 scalars.*'scalars'"),
    ("core-rank", lambda: torch.ops.torchpair._dense(x, y, None, None, "euclidean_direct", [], False, False),
     ValueError, r"'x' must have 3 dimensions"),
    ("core-side-shape", lambda: torch.ops.torchpair._dense(x[None], y[None], torch.ones(1, 4), None, "euclidean_gemm",
                                                          [], False, False), ValueError, r"'a' must have shape"),
    ("core-v-shape", lambda: torch.ops.torchpair._matmul(x[None], y[None], None, None, torch.ones(1, 5, 2),
                                                        "euclidean_direct", [], False, False), ValueError, r"'v' must have shape"),
    ("core-int", lambda: torch.ops.torchpair._row_reduce(x[None].int(), y[None].int(), None, None, "sum", "euclidean_direct", [],
                                                     False, False), TypeError, r"'x' must be float32 or float64"),
    ("core-dtype", lambda: torch.ops.torchpair._dense(x[None], y[None], None, None, "euclidean_direct", [], False, False,
                                                     torch.float64), ValueError, r"'dtype' must be None or"),
    ("core-symmetric-shapes", lambda: torch.ops.torchpair._dense(x[None], y[None], None, None, "euclidean_direct", [],
                                                                True, False), ValueError, r"'symmetric'"),
    # streamed consumers and set-level functions (issue 5)
    ("topk-negative-k", lambda: tp.lazy(x, y).topk(-1), ValueError, r"'k' must be >= 0"),
    ("topk-k-too-large", lambda: tp.lazy(x, y).topk(5), ValueError, r"'k' \(5\) must not exceed the size of dimension -1 \(4\)"),
    ("topk-k-too-large-cols", lambda: tp.lazy(x, y).topk(6, dim=-2), ValueError, r"'k' \(6\) must not exceed"),
    ("topk-k-float", lambda: tp.lazy(x, y).topk(2.0), TypeError, r"'k' must be an int"),
    ("topk-largest-type", lambda: tp.lazy(x, y).topk(2, largest="yes"), TypeError, r"'largest'"),
    ("topk-huge-k", lambda: tp.lazy(x, y).topk(2**62), ValueError, r"'k'"),
    ("min-dim-batch", lambda: tp.lazy(torch.randn(2, 5, 3), None).min(0), ValueError, r"'dim' must be one of the last two"),
    ("reduce-bad-reduction", lambda: torch.ops.torchpair.lazy_reduce(x, y, "rbf", "median"), ValueError, r"'reduction'"),
    ("reduce-bad-dim", lambda: torch.ops.torchpair.lazy_reduce(x, y, "rbf", "sum", 0), ValueError, r"'dim' must be -1"),
    ("topk-bad-nan", lambda: torch.ops.torchpair.lazy_topk(x, y, "rbf", 1, -1, True, True, False, "ignore"),
     ValueError, r"'nan'"),
    ("softmax-v-rows", lambda: tp.lazy(x, y).softmax_matmul(torch.randn(5, 2)), ValueError, r"'v' has 5 rows"),
    ("softmax-v-dtype", lambda: tp.lazy(x, y).softmax_matmul(v.double()), TypeError, r"'v' has dtype"),
    ("knn-k-too-large", lambda: tp.knn(x, y, 5), ValueError, r"'k' \(5\)"),
    ("knn-k-type", lambda: tp.knn(x, y, "3"), TypeError, r"'k' must be an int"),
    ("knn-feature-mismatch", lambda: tp.knn(x, torch.randn(4, 2), 1), ValueError, r"'x' has 3 features but 'y' has 2"),
    ("hausdorff-kernel", lambda: tp.hausdorff(x, y, "rbf"), ValueError, r"'metric' must be a distance"),
    ("hausdorff-directed-type", lambda: tp.hausdorff(x, y, directed=1), TypeError, r"'directed'"),
    ("chamfer-reduction", lambda: tp.chamfer(x, y, reduction="max"), ValueError, r"'reduction' must be"),
    ("mmd-distance", lambda: tp.mmd(x, y, "euclidean"), ValueError, r"'metric' must be a similarity"),
    ("mmd-unbiased-type", lambda: tp.mmd(x, y, unbiased="no"), TypeError, r"'unbiased'"),
    ("energy-kernel", lambda: tp.energy_distance(x, y, "rbf"), ValueError, r"'metric' must be a distance"),
    ("energy-y-rank", lambda: tp.energy_distance(x, torch.randn(4)), ValueError, r"'y' must have shape"),
    ("core-topk-k", lambda: torch.ops.torchpair._topk(x[None], y[None], None, None, 9, True, True, "euclidean_direct",
                                                     [], False, False), ValueError, r"'k' must be in \[0, 4\]"),
    ("core-reduce-reduction", lambda: torch.ops.torchpair._row_reduce(x[None], y[None], None, None, "max",
                                                                     "euclidean_direct", [], False, False),
     ValueError, r"'reduction' must be"),
    ("core-paired-shapes", lambda: torch.ops.torchpair._paired(x[None], y[None], None, None, None, "euclidean_direct",
                                                              []), ValueError, r"same shape"),
    ("core-paired-mask", lambda: torch.ops.torchpair._paired(x[None], x[None], None, None, torch.ones(1, 5),
                                                            "euclidean_direct", []), TypeError, r"'self_mask' must be bool"),
]

# ---- issue 3b: kernel parameters ---------------------------------------------------------------
CASES += [
    ("poly-degree-below-1", lambda: tp.pairwise(x, y, "polynomial", degree=0.5), ValueError, r"'degree'.*>= 1"),
    ("poly-degree-nan", lambda: tp.pairwise(x, y, "poly", degree=float("nan")), ValueError, r"'degree'.*finite"),
    ("poly-negative-gamma", lambda: tp.pairwise(x, y, "polynomial", gamma=-0.1), ValueError, r"'gamma'.*>= 0"),
    ("poly-coef0-inf", lambda: tp.lazy(x, y, "polynomial", coef0=float("inf")), ValueError, r"'coef0'.*finite"),
    ("sigmoid-gamma-nan", lambda: tp.pairwise(x, y, "sigmoid", gamma=float("nan")), ValueError, r"'gamma'.*finite"),
    ("laplacian-negative-gamma", lambda: tp.pairwise(x, y, "laplacian", gamma=-2.0), ValueError, r"'gamma'"),
    ("linear-takes-nothing", lambda: tp.pairwise(x, y, "linear", gamma=1.0), ValueError,
     r"metric 'linear' does not take parameter 'gamma'"),
    ("chi2-negative-x", lambda: tp.pairwise(-x.abs(), y.abs(), "chi2"), ValueError, r"'x' contains negative values"),
    ("chi2-negative-y", lambda: tp.lazy(x.abs(), -y.abs(), "additive_chi2").sum(-1), ValueError,
     r"'y' contains negative values"),
    ("matern-nu-not-in-set", lambda: tp.pairwise(x, y, "matern", nu=1.0), ValueError, r"'nu'.*one of 0.5, 1.5, 2.5 or inf"),
    ("matern-nu-nan", lambda: tp.pairwise(x, y, "matern", nu=float("nan")), ValueError, r"'nu'"),
    ("matern-negative-length-scale", lambda: tp.pairwise(x, y, "matern", length_scale=-1.0), ValueError,
     r"'length_scale'.*> 0"),
    ("matern-zero-length-scale", lambda: tp.pairwise(x, y, "matern", length_scale=0.0), ValueError, r"'length_scale'"),
    ("matern-length-scale-inf", lambda: tp.pairwise(x, y, "matern", length_scale=float("inf")), ValueError,
     r"'length_scale'.*finite"),
    ("matern-length-scales-wrong-length", lambda: tp.pairwise(x, y, "matern", length_scale=[1.0, 2.0]), ValueError,
     r"'length_scales'.*one value per feature \(shape \[3\]\)"),
    ("matern-length-scales-2d", lambda: tp.pairwise(x, y, "matern", length_scales=torch.ones(1, 3)), ValueError,
     r"'length_scales'"),
    ("matern-length-scales-negative", lambda: tp.pairwise(x, y, "matern", length_scale=[1.0, -2.0, 1.0]), ValueError,
     r"'length_scales'.*> 0"),
    ("matern-length-scales-nan", lambda: tp.lazy(x, y, "matern", length_scale=[1.0, float("nan"), 1.0]).sum(),
     ValueError, r"'length_scales'.*finite"),
    ("matern-length-scales-complex", lambda: tp.pairwise(x, y, "matern", length_scales=torch.ones(3, dtype=torch.complex64)),
     TypeError, r"'length_scales'"),
    ("matern-both-length-scales", lambda: tp.pairwise(x, y, "matern", length_scale=1.0, length_scales=torch.ones(3)),
     ValueError, r"'length_scale'.*'length_scales'"),
    ("rq-per-feature", lambda: tp.pairwise(x, y, "rational_quadratic", length_scale=[1.0, 2.0, 3.0]), ValueError,
     r"'rational_quadratic' does not take parameter 'length_scales'"),
    ("rq-alpha-zero", lambda: tp.pairwise(x, y, "rational_quadratic", alpha=0.0), ValueError, r"'alpha'.*> 0"),
    ("rq-alpha-inf", lambda: tp.pairwise(x, y, "rational_quadratic", alpha=float("inf")), ValueError, r"'alpha'.*finite"),
]

# numeric distances and pdist (issue 3a)
CASES += [
    ("minkowski-negative-p", lambda: tp.pairwise(x, y, "minkowski", p=-1.0), ValueError, r"'p'.*>= 1"),
    ("minkowski-p-below-1", lambda: tp.pdist(x, "minkowski", p=0.5), ValueError, r"'p'.*>= 1"),
    ("minkowski-nan-p", lambda: tp.pairwise(x, y, "minkowski", p=float("nan")), ValueError, r"'p'"),
    ("minkowski-w-length", lambda: tp.pairwise(x, y, "minkowski", w=torch.ones(4)), ValueError, r"'w'.*shape"),
    ("minkowski-w-negative", lambda: tp.pairwise(x, y, "minkowski", w=torch.tensor([1.0, -1.0, 1.0])), ValueError,
     r"'w'.*>= 0"),
    ("minkowski-w-nan", lambda: tp.pairwise(x, y, "minkowski", w=torch.tensor([1.0, float("nan"), 1.0])), ValueError,
     r"'w'.*finite"),
    ("minkowski-w-int", lambda: tp.pairwise(x, y, "minkowski", w=torch.ones(3, dtype=torch.int64)), TypeError, r"'w'"),
    ("seuclidean-V-length", lambda: tp.pairwise(x, y, "seuclidean", V=torch.ones(2)), ValueError, r"'V'.*shape"),
    ("seuclidean-V-negative", lambda: tp.lazy(x, y, "seuclidean", V=-torch.ones(3)).sum(), ValueError, r"'V'.*>= 0"),
    ("seuclidean-V-inf", lambda: tp.pdist(x, "seuclidean", V=torch.full((3,), float("inf"))), ValueError,
     r"'V'.*finite"),
    ("mahalanobis-VI-not-square", lambda: tp.pairwise(x, y, "mahalanobis", VI=torch.ones(3, 2)), ValueError,
     r"'VI'.*shape"),
    ("mahalanobis-VI-wrong-size", lambda: tp.pairwise(x, y, "mahalanobis", VI=torch.eye(4)), ValueError, r"'VI'.*shape"),
    ("mahalanobis-VI-nan", lambda: tp.pairwise(x, y, "mahalanobis", VI=torch.eye(3) * float("nan")), ValueError,
     r"'VI'.*finite"),
    ("haversine-D", lambda: tp.pairwise(x, y, "haversine"), ValueError, r"haversine.*2 features.*'x'"),
    ("haversine-D-pdist", lambda: tp.pdist(x, "haversine"), ValueError, r"haversine.*2 features"),
    ("jensenshannon-base", lambda: tp.pairwise(x, y, "jensenshannon", base=1.0), ValueError, r"'base'"),
    ("jensenshannon-base-negative", lambda: tp.pairwise(x, y, "jensenshannon", base=-2.0), ValueError, r"'base'"),
    ("cosine-param", lambda: tp.pairwise(x, y, "cosine", p=2.0), ValueError, r"metric 'cosine' does not take parameter 'p'"),
    ("pdist-rank-1", lambda: tp.pdist(torch.randn(5)), ValueError, r"'x' must have shape"),
    ("pdist-int", lambda: tp.pdist(torch.ones(5, 3, dtype=torch.int64)), TypeError, r"floating-point 'x'"),
    ("pdist-unknown-metric", lambda: tp.pdist(x, "nope"), ValueError, r"unknown metric 'nope'"),
    ("pdist-not-tensor", lambda: tp.pdist([[1.0, 2.0]]), TypeError, r"'X' must be a torch.Tensor"),
    ("core-pdist-shapes", lambda: torch.ops.torchpair._pdist(x[None], y[None], None, None, "euclidean_direct", [],
                                                            False), ValueError, r"same shape"),
    ("core-pdist-grad-shape", lambda: torch.ops.torchpair._pdist_backward(torch.ones(1, 3), x[None], x[None], None,
                                                                         None, "euclidean_direct", [], True, None,
                                                                         [True] * 4), ValueError, r"'grad' must have shape"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_nan_data_propagates_not_crashes():
    xn = x.clone()
    xn[0, 0] = float("nan")
    out = tp.pairwise(xn, y)
    assert torch.isnan(out[0]).all() and torch.isfinite(out[1:]).all()
    assert torch.isnan((tp.lazy(xn, y, "rbf") @ v)[0]).all()
