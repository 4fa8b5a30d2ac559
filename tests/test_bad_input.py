"""The bad-input catalogue: for every public function, every lazy-expression
consumer and every ``torch.ops.torchpair`` operator, the wrong things users do.

Each row is one call and one expectation:

* ``raises``: the exact exception type (``type(exc) is ...``, not a subclass) and a regex the
  message must match; the regex names the offending argument.
* ``oracle``: the input is odd but valid (non-contiguous, stride-0 expanded, empty, zero
  features, NaN/inf data, float16, ...), so the call must give the right answer: compared with
  a dense torch formula, scipy, POT or rapidfuzz computed independently of torchpair.

For every row the inputs are checked to be unmodified afterwards: every tensor a row builds
(through ``T.*``, which snapshots it on creation) and every module-level fixture tensor.
``test_every_public_api_has_rows`` enumerates the public surface programmatically
(``torchpair.__all__``, ``tp.seq.*``, ``tp.distributed.*``, the methods of the expression
classes, every ``torchpair::`` operator registered with the dispatcher) and fails when one has
no row: new API must add rows here. The catalogue is documented in docs/contracts.md ("Errors").
"""
from __future__ import annotations

import dataclasses
import inspect
import math
import os
import tempfile

import numpy as np
import pytest
import torch
import torch.distributed as dist

import torchpair as tp
import torchpair.distributed as tpd
from torchpair.distributed import ShardedPairwise
from torchpair.sequences import LazySequences


# ---------------------------------------------------------------------------------------
# tracked tensors: every tensor a row creates is snapshotted when it is created
# ---------------------------------------------------------------------------------------
_MADE: list = []


def _snap(t):
    if not isinstance(t, torch.Tensor) or t.device.type == "meta" or t.layout != torch.strided or t.is_nested:
        return None
    return (t.detach().clone(), t.shape, t.stride(), t.dtype, t.requires_grad, t.grad)


def _unchanged(t, snap, what):
    if snap is None:
        return
    ref, shape, stride, dtype, rg, grad = snap
    assert t.shape == shape and t.stride() == stride and t.dtype == dtype, f"{what}: metadata was modified"
    assert t.requires_grad == rg and t.grad is grad, f"{what}: requires_grad / grad was modified"
    if dtype.is_floating_point or dtype.is_complex:
        torch.testing.assert_close(t.detach(), ref, rtol=0, atol=0, equal_nan=True, msg=f"{what} was modified")
    else:
        assert torch.equal(t.detach(), ref), f"{what} was modified"


class _Tracked:
    """``T.randn(...)`` etc.: torch factories whose results are snapshotted for the row."""

    def __getattr__(self, name):
        factory = getattr(torch, name)

        def make(*args, **kwargs):
            t = factory(*args, **kwargs)
            _MADE.append((t, _snap(t)))
            return t

        return make


T = _Tracked()


def _nested(layout=torch.strided):
    """A nested tensor of two [rows, 3] components (torch.nested): not a dense operand."""
    return torch.nested.nested_tensor([torch.randn(5, 3), torch.randn(4, 3)], layout=layout)


def track(t):
    """Snapshot a tensor a row derives (e.g. a view with odd strides)."""
    _MADE.append((t, _snap(t)))
    return t


torch.manual_seed(0)
x = T.randn(5, 3)
y = T.randn(4, 3)
v = T.randn(4, 2)
x64 = T.randn(5, 3, dtype=torch.float64)

# (id, callable, exception, regex the message must match)
CASES = [
    ("feature-mismatch", lambda: tp.pairwise(x, T.randn(4, 5)), ValueError, r"'x' has 3 features but 'y' has 5"),
    ("x-rank-1", lambda: tp.pairwise(T.randn(5), y), ValueError, r"'x' must have shape \[\.\.\., rows, features\]"),
    ("y-rank-1", lambda: tp.pairwise(x, T.randn(3)), ValueError, r"'y' must have shape"),
    ("x-rank-0", lambda: tp.pairwise(T.tensor(1.0), y), ValueError, r"'x'"),
    ("x-int", lambda: tp.pairwise(T.ones(5, 3, dtype=torch.int64), y), TypeError, r"floating-point 'x'"),
    ("y-int", lambda: tp.pairwise(x, T.ones(4, 3, dtype=torch.int32)), TypeError, r"floating-point 'y'"),
    ("x-bool", lambda: tp.pairwise(T.ones(5, 3, dtype=torch.bool), y), TypeError, r"'x'"),
    ("x-complex", lambda: tp.pairwise(T.randn(5, 3, dtype=torch.complex64), y), TypeError, r"'x'"),
    ("mixed-dtypes", lambda: tp.pairwise(x64, y), TypeError, r"'x' has dtype .*Double.* but 'y' has .*Float"),
    ("different-devices", lambda: tp.pairwise(x, y.to("meta")), ValueError, r"'x' is on cpu but 'y' is on meta"),
    ("unknown-metric", lambda: tp.pairwise(x, y, "euclidian"), ValueError, r"unknown metric 'euclidian'.*'metric'"),
    ("metric-not-str", lambda: tp.pairwise(x, y, 3), TypeError, r"'metric'"),
    ("unknown-param", lambda: tp.pairwise(x, y, "rbf", gama=0.1), TypeError, r"unexpected keyword argument 'gama'.*gamma"),
    ("param-not-for-metric", lambda: tp.pairwise(x, y, "euclidean", gamma=0.1), TypeError,
     r"metric 'euclidean' does not take parameter 'gamma'"),
    ("negative-gamma", lambda: tp.pairwise(x, y, "rbf", gamma=-1.0), ValueError, r"'gamma'.*>= 0"),
    ("nan-gamma", lambda: tp.pairwise(x, y, "rbf", gamma=float("nan")), ValueError, r"'gamma'.*finite"),
    ("inf-gamma", lambda: tp.lazy(x, y, "rbf", gamma=float("inf")), ValueError, r"'gamma'.*finite"),
    ("gamma-str", lambda: tp.pairwise(x, y, "rbf", gamma="0.1"), TypeError, r"'gamma'"),
    ("gamma-vector", lambda: tp.pairwise(x, y, "rbf", gamma=T.ones(3)), TypeError, r"'gamma'"),
    ("x-not-tensor", lambda: tp.pairwise([[1.0, 2.0]], y), TypeError, r"'X' must be a torch.Tensor"),
    ("v-wrong-rows", lambda: tp.lazy(x, y, "rbf") @ T.randn(5, 2), ValueError, r"'v' has 5 rows but the operator has 4"),
    ("v-transposed-rows", lambda: tp.lazy(x, y, "rbf").T @ T.randn(4, 2), ValueError, r"'v' has 4 rows"),
    ("v-dtype", lambda: tp.lazy(x, y, "rbf") @ v.double(), TypeError, r"'v' has dtype"),
    ("v-not-tensor", lambda: tp.lazy(x, y, "rbf").matmul([1.0]), TypeError, r"'V' must be a torch.Tensor"),
    ("v-scalar", lambda: tp.lazy(x, y, "rbf") @ T.tensor(1.0), ValueError, r"'v'"),
    ("batch-mismatch", lambda: tp.pairwise(T.randn(2, 5, 3), T.randn(3, 4, 3)), ValueError,
     r"batch dimensions of 'x'.*and 'y'.*do not broadcast"),
    ("lazy-batch-mismatch", lambda: tp.lazy(T.randn(2, 5, 3), T.randn(3, 4, 3)), ValueError, r"batch dimensions"),
    ("sum-dim-out-of-range", lambda: tp.lazy(x, y).sum(2), ValueError, r"'dim' 2 is out of range"),
    ("sum-dim-batch", lambda: tp.lazy(T.randn(2, 5, 3), None).sum(0), ValueError, r"'dim' must be one of the last two"),
    ("sum-dim-type", lambda: tp.lazy(x, y).sum("rows"), TypeError, r"'dim'"),
    ("lazy-flag", lambda: tp.pairwise_expression(x, y, "rbf", lazy="yes"), TypeError, r"'lazy'"),
    ("sparse-x", lambda: tp.pairwise(x.to_sparse(), y), TypeError, r"'x' must be a dense"),
    ("metric-info-unknown", lambda: tp.metric_info("nope"), ValueError, r"unknown metric 'nope'"),
    # nested tensors (torch.nested) anywhere a tensor is taken: TypeError naming the argument
    ("nested-v", lambda: tp.lazy(x, y, "rbf") @ _nested(), TypeError, r"'V' must be a dense.*nested"),
    ("nested-seq-tokens", lambda: tp.seq.pairwise(torch.nested.nested_tensor([torch.ones(2, 3, dtype=torch.long)])),
     TypeError, r"torchpair\.seq\.pairwise: 'X' must be a dense.*nested"),
    ("nested-seq-lengths", lambda: tp.seq.pdist(torch.ones(2, 3, dtype=torch.long), lengths=torch.nested.nested_tensor(
        [torch.ones(2, dtype=torch.long)])), TypeError, r"torchpair\.seq\.pdist: 'lengths' must be a dense"),
    ("nested-emd-M", lambda: tp.emd2(None, None, _nested()), TypeError, r"torchpair\.emd2: 'M' must be a dense"),
    ("nested-emd-a", lambda: tp.emd(_nested(), None, T.rand(2, 3)), TypeError, r"torchpair\.emd: 'a' must be a dense"),
    ("nested-op-x", lambda: torch.ops.torchpair.pairwise(_nested(), None, "euclidean"), TypeError,
     r"torchpair\.pairwise: 'x' must be a dense.*nested"),
    ("nested-op-pdist", lambda: torch.ops.torchpair.pdist(_nested(), "cosine"), TypeError, r"'x' must be a dense"),
    ("nested-op-emd-M", lambda: torch.ops.torchpair.emd(None, None, _nested()), TypeError, r"'M' must be a dense"),
    ("nested-op-hausdorff", lambda: torch.ops.torchpair.hausdorff(x, _nested()), TypeError, r"'y' must be a dense"),
    ("lazy-unknown-metric", lambda: tp.lazy(x, y, "nope"), ValueError, r"unknown metric 'nope'"),
    ("lazy-bad-param", lambda: tp.lazy(x, y, "euclidean", gamma=1.0), TypeError, r"does not take parameter 'gamma'"),
    # the core operators validate too (they are callable from Python and C++)
    ("core-unknown-kernel", lambda: torch.ops.torchpair._dense(x[None], y[None], None, None, "nope", [], False, False),
     ValueError, r"unknown engine kernel 'nope'.*'kernel'"),
    ("core-scalars", lambda: torch.ops.torchpair._dense(x[None], y[None], None, None, "rbf_direct", [], False, False),
     ValueError, r"takes 1 scalars.*'scalars'"),
    ("core-rank", lambda: torch.ops.torchpair._dense(x, y, None, None, "euclidean_direct", [], False, False),
     ValueError, r"'x' must have 3 dimensions"),
    ("core-side-shape", lambda: torch.ops.torchpair._dense(x[None], y[None], T.ones(1, 4), None, "euclidean_gemm",
                                                          [], False, False), ValueError, r"'a' must have shape"),
    ("core-v-shape", lambda: torch.ops.torchpair._matmul(x[None], y[None], None, None, T.ones(1, 5, 2),
                                                        "euclidean_direct", [], False, False), ValueError, r"'v' must have shape"),
    ("core-int", lambda: torch.ops.torchpair._row_reduce(x[None].int(), y[None].int(), None, None, "sum", "euclidean_direct", [],
                                                     False, False), TypeError, r"'x' must be float32 or float64"),
    ("core-dtype", lambda: torch.ops.torchpair._dense(x[None], y[None], None, None, "euclidean_direct", [], False, False,
                                                     torch.float64), ValueError, r"'dtype' must be None or"),
    ("core-symmetric-shapes", lambda: torch.ops.torchpair._dense(x[None], y[None], None, None, "euclidean_direct", [],
                                                                True, False), ValueError, r"'symmetric'"),
    # streamed consumers and set-level functions
    ("topk-negative-k", lambda: tp.lazy(x, y).topk(-1), ValueError, r"'k' must be >= 0"),
    ("topk-k-too-large", lambda: tp.lazy(x, y).topk(5), ValueError, r"'k' \(5\) must not exceed the size of dimension -1 \(4\)"),
    ("topk-k-too-large-cols", lambda: tp.lazy(x, y).topk(6, dim=-2), ValueError, r"'k' \(6\) must not exceed"),
    ("topk-k-float", lambda: tp.lazy(x, y).topk(2.0), TypeError, r"'k' must be an int"),
    ("topk-largest-type", lambda: tp.lazy(x, y).topk(2, largest="yes"), TypeError, r"'largest'"),
    ("topk-huge-k", lambda: tp.lazy(x, y).topk(2**62), ValueError, r"'k'"),
    ("min-dim-batch", lambda: tp.lazy(T.randn(2, 5, 3), None).min(0), ValueError, r"'dim' must be one of the last two"),
    ("reduce-bad-reduction", lambda: torch.ops.torchpair.lazy_reduce(x, y, "rbf", "median"), ValueError, r"'reduction'"),
    ("reduce-bad-dim", lambda: torch.ops.torchpair.lazy_reduce(x, y, "rbf", "sum", 0), ValueError, r"'dim' must be -1"),
    ("topk-bad-nan", lambda: torch.ops.torchpair.lazy_topk(x, y, "rbf", 1, -1, True, True, False, "ignore"),
     ValueError, r"'nan'"),
    ("softmax-v-rows", lambda: tp.lazy(x, y).softmax_matmul(T.randn(5, 2)), ValueError, r"'v' has 5 rows"),
    ("softmax-v-dtype", lambda: tp.lazy(x, y).softmax_matmul(v.double()), TypeError, r"'v' has dtype"),
    ("knn-k-too-large", lambda: tp.knn(x, y, 5), ValueError, r"'k' \(5\)"),
    ("knn-k-type", lambda: tp.knn(x, y, "3"), TypeError, r"'k' must be an int"),
    ("knn-feature-mismatch", lambda: tp.knn(x, T.randn(4, 2), 1), ValueError, r"'x' has 3 features but 'y' has 2"),
    ("hausdorff-kernel", lambda: tp.hausdorff(x, y, "rbf"), ValueError, r"'metric' must be a distance"),
    ("hausdorff-directed-type", lambda: tp.hausdorff(x, y, directed=1), TypeError, r"'directed'"),
    ("chamfer-reduction", lambda: tp.chamfer(x, y, reduction="max"), ValueError, r"'reduction' must be"),
    ("mmd-distance", lambda: tp.mmd(x, y, "euclidean"), ValueError, r"'metric' must be a similarity"),
    ("mmd-unbiased-type", lambda: tp.mmd(x, y, unbiased="no"), TypeError, r"'unbiased'"),
    ("energy-kernel", lambda: tp.energy_distance(x, y, "rbf"), ValueError, r"'metric' must be a distance"),
    ("energy-y-rank", lambda: tp.energy_distance(x, T.randn(4)), ValueError, r"'y' must have shape"),
    ("core-topk-k", lambda: torch.ops.torchpair._topk(x[None], y[None], None, None, 9, True, True, "euclidean_direct",
                                                     [], False, False), ValueError, r"'k' must be in \[0, 4\]"),
    ("core-reduce-reduction", lambda: torch.ops.torchpair._row_reduce(x[None], y[None], None, None, "max",
                                                                     "euclidean_direct", [], False, False),
     ValueError, r"'reduction' must be"),
    ("core-paired-shapes", lambda: torch.ops.torchpair._paired(x[None], y[None], None, None, None, "euclidean_direct",
                                                              []), ValueError, r"same shape"),
    ("core-paired-mask", lambda: torch.ops.torchpair._paired(x[None], x[None], None, None, T.ones(1, 5),
                                                            "euclidean_direct", []), TypeError, r"'self_mask' must be bool"),
]

# ---- kernel parameters ---------------------------------------------------------------
CASES += [
    ("poly-degree-below-1", lambda: tp.pairwise(x, y, "polynomial", degree=0.5), ValueError, r"'degree'.*>= 1"),
    ("poly-degree-nan", lambda: tp.pairwise(x, y, "poly", degree=float("nan")), ValueError, r"'degree'.*finite"),
    ("poly-negative-gamma", lambda: tp.pairwise(x, y, "polynomial", gamma=-0.1), ValueError, r"'gamma'.*>= 0"),
    ("poly-coef0-inf", lambda: tp.lazy(x, y, "polynomial", coef0=float("inf")), ValueError, r"'coef0'.*finite"),
    ("sigmoid-gamma-nan", lambda: tp.pairwise(x, y, "sigmoid", gamma=float("nan")), ValueError, r"'gamma'.*finite"),
    ("laplacian-negative-gamma", lambda: tp.pairwise(x, y, "laplacian", gamma=-2.0), ValueError, r"'gamma'"),
    ("linear-takes-nothing", lambda: tp.pairwise(x, y, "linear", gamma=1.0), TypeError,
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
    ("matern-length-scales-2d", lambda: tp.pairwise(x, y, "matern", length_scales=T.ones(1, 3)), ValueError,
     r"'length_scales'"),
    ("matern-length-scales-negative", lambda: tp.pairwise(x, y, "matern", length_scale=[1.0, -2.0, 1.0]), ValueError,
     r"'length_scales'.*> 0"),
    ("matern-length-scales-nan", lambda: tp.lazy(x, y, "matern", length_scale=[1.0, float("nan"), 1.0]).sum(),
     ValueError, r"'length_scales'.*finite"),
    ("matern-length-scales-complex", lambda: tp.pairwise(x, y, "matern", length_scales=T.ones(3, dtype=torch.complex64)),
     TypeError, r"'length_scales'"),
    ("matern-both-length-scales", lambda: tp.pairwise(x, y, "matern", length_scale=1.0, length_scales=T.ones(3)),
     ValueError, r"'length_scale'.*'length_scales'"),
    ("rq-per-feature", lambda: tp.pairwise(x, y, "rational_quadratic", length_scale=[1.0, 2.0, 3.0]), TypeError,
     r"'rational_quadratic' does not take parameter 'length_scales'"),
    ("rq-alpha-zero", lambda: tp.pairwise(x, y, "rational_quadratic", alpha=0.0), ValueError, r"'alpha'.*> 0"),
    ("rq-alpha-inf", lambda: tp.pairwise(x, y, "rational_quadratic", alpha=float("inf")), ValueError, r"'alpha'.*finite"),
]

# numeric distances and pdist
CASES += [
    ("minkowski-negative-p", lambda: tp.pairwise(x, y, "minkowski", p=-1.0), ValueError, r"'p'.*>= 1"),
    ("minkowski-p-below-1", lambda: tp.pdist(x, "minkowski", p=0.5), ValueError, r"'p'.*>= 1"),
    ("minkowski-nan-p", lambda: tp.pairwise(x, y, "minkowski", p=float("nan")), ValueError, r"'p'"),
    ("minkowski-w-length", lambda: tp.pairwise(x, y, "minkowski", w=T.ones(4)), ValueError, r"'w'.*shape"),
    ("minkowski-w-negative", lambda: tp.pairwise(x, y, "minkowski", w=T.tensor([1.0, -1.0, 1.0])), ValueError,
     r"'w'.*>= 0"),
    ("minkowski-w-nan", lambda: tp.pairwise(x, y, "minkowski", w=T.tensor([1.0, float("nan"), 1.0])), ValueError,
     r"'w'.*finite"),
    ("minkowski-w-int", lambda: tp.pairwise(x, y, "minkowski", w=T.ones(3, dtype=torch.int64)), TypeError, r"'w'"),
    ("seuclidean-V-length", lambda: tp.pairwise(x, y, "seuclidean", V=T.ones(2)), ValueError, r"'V'.*shape"),
    ("seuclidean-V-negative", lambda: tp.lazy(x, y, "seuclidean", V=-T.ones(3)).sum(), ValueError, r"'V'.*>= 0"),
    ("seuclidean-V-inf", lambda: tp.pdist(x, "seuclidean", V=T.full((3,), float("inf"))), ValueError,
     r"'V'.*finite"),
    ("mahalanobis-VI-not-square", lambda: tp.pairwise(x, y, "mahalanobis", VI=T.ones(3, 2)), ValueError,
     r"'VI'.*shape"),
    ("mahalanobis-VI-wrong-size", lambda: tp.pairwise(x, y, "mahalanobis", VI=T.eye(4)), ValueError, r"'VI'.*shape"),
    ("mahalanobis-VI-nan", lambda: tp.pairwise(x, y, "mahalanobis", VI=T.eye(3) * float("nan")), ValueError,
     r"'VI'.*finite"),
    ("haversine-D", lambda: tp.pairwise(x, y, "haversine"), ValueError, r"haversine.*2 features.*'x'"),
    ("haversine-D-pdist", lambda: tp.pdist(x, "haversine"), ValueError, r"haversine.*2 features"),
    ("jensenshannon-base", lambda: tp.pairwise(x, y, "jensenshannon", base=1.0), ValueError, r"'base'"),
    ("jensenshannon-base-negative", lambda: tp.pairwise(x, y, "jensenshannon", base=-2.0), ValueError, r"'base'"),
    ("cosine-param", lambda: tp.pairwise(x, y, "cosine", p=2.0), TypeError, r"metric 'cosine' does not take parameter 'p'"),
    ("pdist-rank-1", lambda: tp.pdist(T.randn(5)), ValueError, r"'x' must have shape"),
    ("pdist-int", lambda: tp.pdist(T.ones(5, 3, dtype=torch.int64)), TypeError, r"floating-point 'x'"),
    ("pdist-unknown-metric", lambda: tp.pdist(x, "nope"), ValueError, r"unknown metric 'nope'"),
    ("pdist-not-tensor", lambda: tp.pdist([[1.0, 2.0]]), TypeError, r"'X' must be a torch.Tensor"),
    ("core-pdist-shapes", lambda: torch.ops.torchpair._pdist(x[None], y[None], None, None, "euclidean_direct", [],
                                                            False), ValueError, r"same shape"),
    ("core-pdist-grad-shape", lambda: torch.ops.torchpair._pdist_backward(T.ones(1, 3), x[None], x[None], None,
                                                                         None, "euclidean_direct", [], True, None,
                                                                         [True] * 4), ValueError, r"'grad' must have shape"),
]




# ---------------------------------------------------------------------------------------
# rows
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class Row:
    api: str                      # the public function / consumer / operator exercised
    kind: str                     # the wrong-input class
    call: object                  # () -> result
    raises: type | None = None    # exact exception type ...
    match: str | None = None      # ... and a regex its message must match (names the argument)
    oracle: object = None         # or: () -> the expected result (valid-but-odd input)
    compare: str = "close"        # "close", "select:<dim>:<largest>" (values + gathered indices), "exact"
    tol: tuple = (1e-5, 1e-6)     # (rtol, atol) for "close"
    id: str = ""
    needs_group: bool = False     # tp.distributed rows run inside a one-process gloo group
    dist_uninitialized: bool = False


ROWS: list[Row] = []


def raises(api, kind, call, exc, match, **kw):
    ROWS.append(Row(api, kind, call, raises=exc, match=match, **kw))


def gives(api, kind, call, oracle, **kw):
    ROWS.append(Row(api, kind, call, oracle=oracle, **kw))


# ---------------------------------------------------------------------------------------
# independent oracles (dense torch formulas; scipy / POT / rapidfuzz below)
# ---------------------------------------------------------------------------------------
G = 0.5  # the rbf gamma of the kernel rows


def d_(X, Y):
    """Euclidean distances by the textbook formula, in float64 (then cast back)."""
    X64, Y64 = X.detach().double(), Y.detach().double()
    return ((X64.unsqueeze(-2) - Y64.unsqueeze(-3)) ** 2).sum(-1).sqrt()


def k_(X, Y):
    X64, Y64 = X.detach().double(), Y.detach().double()
    return torch.exp(-G * ((X64.unsqueeze(-2) - Y64.unsqueeze(-3)) ** 2).sum(-1))


def v_for(m, dtype=torch.float32):
    """A fixed V with m rows (created fresh, tracked)."""
    return track(torch.linspace(-1.0, 1.0, 2 * m, dtype=dtype).reshape(m, 2))


def condensed(D):
    n = D.shape[-1]
    iu = torch.triu_indices(n, n, 1)
    return D[..., iu[0], iu[1]]


def _cast(expected, like):
    if isinstance(like, torch.Tensor) and isinstance(expected, torch.Tensor) and like.dtype.is_floating_point:
        return expected.to(like.dtype)
    return expected


def _select_check(out, dense, dim, largest, k=None, rtol=1e-5, atol=1e-6):
    """(values, indices) of a top-k / min / max along `dim` of the dense oracle matrix:
    the values must be torch's (topk NaN-as-largest / min-max NaN-propagating conventions are
    the oracle's too) and every returned index must point at its value (ties may pick either)."""
    values, indices = out
    values = values.double()
    if k is None:  # min / max: the reduced dim is dropped
        ref = (torch.max if largest else torch.min)(dense, dim=dim).values
        got = torch.gather(dense, dim, indices.unsqueeze(dim)).squeeze(dim)
    else:
        ref = torch.topk(dense, k, dim=dim, largest=largest).values
        got = torch.gather(dense, dim, indices)
    torch.testing.assert_close(values, ref, rtol=rtol, atol=atol, equal_nan=True, check_dtype=False)
    torch.testing.assert_close(got, values, rtol=rtol, atol=atol, equal_nan=True, check_dtype=False)


def _compare(row, out, expected):
    rtol, atol = row.tol
    if row.compare.startswith("select"):
        _, dim, largest, k = row.compare.split(":")
        _select_check(out, expected, int(dim), largest == "1", None if k == "-" else int(k), rtol, atol)
        return
    if row.compare == "argselect":  # indices only: they must point at the extreme value
        dense, dim, largest = expected
        ref = (torch.max if largest else torch.min)(dense, dim=dim).values
        got = torch.gather(dense, dim, out.unsqueeze(dim)).squeeze(dim)
        torch.testing.assert_close(got, ref, rtol=rtol, atol=atol, equal_nan=True)
        return
    if row.compare == "pair":  # tuples of tensors (None where the operator returns an undefined gradient)
        assert len(out) == len(expected), (len(out), len(expected))
        for o, e in zip(out, expected):
            if e is None:
                assert o is None or o.numel() == 0 or not o.any(), o
                continue
            assert tuple(o.shape) == tuple(e.shape), (tuple(o.shape), tuple(e.shape))
            torch.testing.assert_close(o.double(), e.double(), rtol=rtol, atol=atol, equal_nan=True)
        return
    if row.compare == "exact":
        if isinstance(expected, (tuple, list)):
            assert len(out) == len(expected)
            for o, e in zip(out, expected):
                assert type(o) is type(e) and (o == e if not isinstance(o, torch.Tensor) else torch.equal(o, e)), (o, e)
        elif isinstance(expected, torch.Tensor):
            assert out.dtype == expected.dtype and torch.equal(out, expected), (out, expected)
        else:
            assert out == expected, (out, expected)
        return
    if isinstance(expected, np.ndarray) or isinstance(expected, (float, int)):
        expected = torch.as_tensor(expected)
    assert isinstance(out, torch.Tensor), type(out)
    assert tuple(out.shape) == tuple(expected.shape), (tuple(out.shape), tuple(expected.shape))
    torch.testing.assert_close(out.double() if out.dtype.is_floating_point else out,
                               expected.double() if expected.dtype.is_floating_point else expected,
                               rtol=rtol, atol=atol, equal_nan=True, check_dtype=False)


# ---------------------------------------------------------------------------------------
# generated rows: every numeric data API x every wrong-input class that applies
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class Spec:
    api: str
    call: object                   # (X, Y, metric, **params) -> result
    oracle: object                 # (X, Y) -> expected (dense matrix for "select" rows)
    metric: str = "euclidean"
    params: dict = dataclasses.field(default_factory=dict)
    compare: str = "close"
    x_only: bool = False           # pdist: Y is not an argument
    batched: bool = True           # leading batch dims are supported
    empty_x: object = "oracle"     # "oracle", ("raises", exc, regex) or a callable giving the expected value
    empty_y: object = "oracle"
    zero_features: object = "oracle"
    nan_data: object = "oracle"
    inf_data: object = "oracle"
    group: bool = False            # tp.distributed


def _vm(Y):
    if not isinstance(Y, torch.Tensor) or Y.is_nested or Y.dim() < 2:  # the row is about a bad Y: any V
        return v_for(4)
    return v_for(Y.shape[-2], Y.dtype if Y.dtype.is_floating_point and Y.device.type == "cpu" else torch.float32)


def _vo(Y):
    return torch.linspace(-1.0, 1.0, 2 * Y.shape[-2], dtype=torch.float64).reshape(Y.shape[-2], 2)


def _hausdorff(X, Y):
    d = d_(X, Y)
    return torch.maximum(d.amin(-1).amax(-1), d.amin(-2).amax(-1))


def _chamfer(X, Y):
    d2 = d_(X, Y) ** 2
    return d2.amin(-1).mean(-1) + d2.amin(-2).mean(-1)


def _mmd(X, Y):
    return k_(X, X).mean((-2, -1)) + k_(Y, Y).mean((-2, -1)) - 2 * k_(X, Y).mean((-2, -1))


def _energy(X, Y):
    return (2 * d_(X, Y).mean((-2, -1)) - d_(X, X).mean((-2, -1)) - d_(Y, Y).mean((-2, -1))).clamp_min(0).sqrt()


def _w1(X, Y):
    import ot

    n, m = X.shape[-2], Y.shape[-2]
    return torch.tensor(ot.emd2(np.full(n, 1.0 / n), np.full(m, 1.0 / m), d_(X, Y).numpy()))


INF = lambda X, Y: torch.tensor(math.inf, dtype=torch.float64)  # noqa: E731
ZERO_K = ("raises", ValueError, r"'k'")
NEEDS_ROWS = ("raises", ValueError, r"'[xXyY]'")

_E = "euclidean"
_K = dict(metric="rbf", params={"gamma": G})


def _lazy_specs(prefix, make, group=False):
    """The consumers of an expression class; make(X, Y, metric, **params) builds it."""
    b = not group
    return [
        Spec(f"{prefix}.matmul", lambda X, Y, m, **p: make(X, Y, m, **p).matmul(_vm(Y)),
             lambda X, Y: k_(X, Y) @ _vo(Y), batched=b, group=group, **_K),
        Spec(f"{prefix}.__matmul__", lambda X, Y, m, **p: make(X, Y, m, **p) @ _vm(Y),
             lambda X, Y: k_(X, Y) @ _vo(Y), batched=b, group=group, **_K),
        Spec(f"{prefix}.sum", lambda X, Y, m, **p: make(X, Y, m, **p).sum(-1), lambda X, Y: k_(X, Y).sum(-1),
             batched=b, group=group, **_K),
        Spec(f"{prefix}.mean", lambda X, Y, m, **p: make(X, Y, m, **p).mean(-2), lambda X, Y: k_(X, Y).mean(-2),
             batched=b, group=group, **_K),
        Spec(f"{prefix}.logsumexp", lambda X, Y, m, **p: make(X, Y, m, **p).logsumexp(-1),
             lambda X, Y: torch.logsumexp(k_(X, Y), -1), batched=b, group=group, **_K),
        Spec(f"{prefix}.topk", lambda X, Y, m, **p: make(X, Y, m, **p).topk(2, largest=False), d_, _E,
             compare="select:-1:0:2", empty_y=ZERO_K, batched=b, group=group),
        Spec(f"{prefix}.min", lambda X, Y, m, **p: make(X, Y, m, **p).min(-1), d_, _E, compare="select:-1:0:-",
             empty_y=("raises", ValueError, r"'dim'|'k'"), batched=b, group=group),
        Spec(f"{prefix}.max", lambda X, Y, m, **p: make(X, Y, m, **p).max(-2), d_, _E, compare="select:-2:1:-",
             empty_x=("raises", ValueError, r"'dim'|'k'"), batched=b, group=group),
        Spec(f"{prefix}.argmin", lambda X, Y, m, **p: make(X, Y, m, **p).argmin(-1),
             lambda X, Y: (d_(X, Y), -1, False), _E, compare="argselect",
             empty_y=("raises", ValueError, r"'dim'|'k'"), batched=b, group=group),
        Spec(f"{prefix}.argmax", lambda X, Y, m, **p: make(X, Y, m, **p).argmax(-2),
             lambda X, Y: (k_(X, Y), -2, True), compare="argselect",
             empty_x=("raises", ValueError, r"'dim'|'k'"), batched=b, group=group, **_K),
    ]


def _dense_specs(prefix, make):
    return [
        Spec(f"{prefix}.softmax_matmul", lambda X, Y, m, **p: make(X, Y, m, **p).softmax_matmul(_vm(Y)),
             lambda X, Y: torch.softmax(k_(X, Y), -1) @ _vo(Y), **_K),
        Spec(f"{prefix}.to_dense", lambda X, Y, m, **p: make(X, Y, m, **p).to_dense(), k_, **_K),
    ]


def _lazy(X, Y, m, **p):
    return tp.lazy(X, Y, m, **p)


def _dense_expr(X, Y, m, **p):
    return tp.pairwise_expression(X, Y, m, lazy=False, **p)


def _sharded(X, Y, m, **p):
    return tpd.lazy(X, Y, m, **p)


_ops = torch.ops.torchpair
SPECS = [
    Spec("tp.pairwise", lambda X, Y, m, **p: tp.pairwise(X, Y, m, **p), d_),
    Spec("tp.cdist", lambda X, Y, m, **p: tp.cdist(X, Y, m, **p), d_),
    Spec("tp.pdist", lambda X, Y, m, **p: tp.pdist(X, m, **p), lambda X, Y: condensed(d_(X, X)), x_only=True),
    # no dim: every dimension, batch included (torch.Tensor.sum())
    Spec("tp.lazy", lambda X, Y, m, **p: tp.lazy(X, Y, m, **p).sum(None), lambda X, Y: k_(X, Y).sum(), **_K),
    Spec("tp.pairwise_expression", lambda X, Y, m, **p: tp.pairwise_expression(X, Y, m, **p).sum(-2),
         lambda X, Y: k_(X, Y).sum(-2), **_K),
    Spec("tp.LazyPairwise", lambda X, Y, m, **p: tp.LazyPairwise(X, Y, m, p).sum(-1), lambda X, Y: k_(X, Y).sum(-1),
         **_K),
    Spec("tp.DensePairwise", lambda X, Y, m, **p: tp.DensePairwise(X, Y, m, p).to_dense(), k_, **_K),
    *_lazy_specs("LazyPairwise", _lazy),
    *_dense_specs("LazyPairwise", _lazy),
    *_lazy_specs("DensePairwise", _dense_expr),
    *_dense_specs("DensePairwise", _dense_expr),
    Spec("tp.knn", lambda X, Y, m, **p: tp.knn(X, Y, 2, m, **p), d_, compare="select:-1:0:2", empty_y=ZERO_K),
    Spec("tp.hausdorff", lambda X, Y, m, **p: tp.hausdorff(X, Y, m, **p), _hausdorff, empty_x=INF, empty_y=INF),
    Spec("tp.chamfer", lambda X, Y, m, **p: tp.chamfer(X, Y, m, **p), _chamfer, "sqeuclidean", empty_x=INF,
         empty_y=INF),
    Spec("tp.mmd", lambda X, Y, m, **p: tp.mmd(X, Y, m, **p), _mmd, empty_x=NEEDS_ROWS, empty_y=NEEDS_ROWS, **_K),
    Spec("tp.energy_distance", lambda X, Y, m, **p: tp.energy_distance(X, Y, m, **p), _energy, empty_x=NEEDS_ROWS,
         empty_y=NEEDS_ROWS),
    Spec("tp.wasserstein", lambda X, Y, m, **p: tp.wasserstein(X, Y, metric=m, **p), _w1, batched=False,
         empty_x=("raises", ValueError, r"'a' and 'b'"), empty_y=("raises", ValueError, r"'a' and 'b'"),
         nan_data=("raises", ValueError, r"'X' and 'Y' must be finite"),
         inf_data=("raises", ValueError, r"'X' and 'Y' must be finite")),
    # the public operators (lower-case argument names; torch parses the keyword arguments)
    Spec("torchpair::pairwise", lambda X, Y, m, **p: _ops.pairwise(X, Y, m, **p), d_),
    Spec("torchpair::pdist", lambda X, Y, m, **p: _ops.pdist(X, m, **p), lambda X, Y: condensed(d_(X, X)),
         x_only=True),
    Spec("torchpair::lazy_matmul", lambda X, Y, m, **p: _ops.lazy_matmul(X, Y, _vm(Y), m, **p),
         lambda X, Y: k_(X, Y) @ _vo(Y), **_K),
    Spec("torchpair::lazy_reduce", lambda X, Y, m, **p: _ops.lazy_reduce(X, Y, m, "logsumexp", -2, **p),
         lambda X, Y: torch.logsumexp(k_(X, Y), -2), **_K),
    Spec("torchpair::lazy_topk", lambda X, Y, m, **p: _ops.lazy_topk(X, Y, m, 2, -1, False, **p), d_,
         compare="select:-1:0:2", empty_y=ZERO_K),
    Spec("torchpair::lazy_softmax_matmul", lambda X, Y, m, **p: _ops.lazy_softmax_matmul(X, Y, _vm(Y), m, **p),
         lambda X, Y: torch.softmax(k_(X, Y), -1) @ _vo(Y), **_K),
    Spec("torchpair::knn", lambda X, Y, m, **p: _ops.knn(X, Y, 2, m, **p), d_, compare="select:-1:0:2",
         empty_y=ZERO_K),
    Spec("torchpair::hausdorff", lambda X, Y, m, **p: _ops.hausdorff(X, Y, m, **p), _hausdorff, empty_x=INF,
         empty_y=INF),
    Spec("torchpair::chamfer", lambda X, Y, m, **p: _ops.chamfer(X, Y, m, **p), _chamfer, "sqeuclidean",
         empty_x=INF, empty_y=INF),
    Spec("torchpair::mmd", lambda X, Y, m, **p: _ops.mmd(X, Y, m, **p), _mmd, empty_x=NEEDS_ROWS,
         empty_y=NEEDS_ROWS, **_K),
    Spec("torchpair::energy_distance", lambda X, Y, m, **p: _ops.energy_distance(X, Y, m, **p), _energy,
         empty_x=NEEDS_ROWS, empty_y=NEEDS_ROWS),
    # tp.distributed (a one-process gloo group: the same values as the single-process functions)
    Spec("tp.distributed.lazy", lambda X, Y, m, **p: tpd.lazy(X, Y, m, **p).sum(None),
         lambda X, Y: k_(X, Y).sum((-2, -1)), batched=False, group=True, **_K),
    Spec("tp.distributed.ShardedPairwise", lambda X, Y, m, **p: ShardedPairwise(X, Y, m, p, False, True, None).sum(-1),
         lambda X, Y: k_(X, Y).sum(-1), batched=False, group=True, **_K),
    *_lazy_specs("ShardedPairwise", _sharded, group=True),
    Spec("tp.distributed.knn", lambda X, Y, m, **p: tpd.knn(X, Y, 2, m, **p), d_, compare="select:-1:0:2",
         empty_y=ZERO_K, batched=False, group=True),
    Spec("tp.distributed.mmd", lambda X, Y, m, **p: tpd.mmd(X, Y, m, **p), _mmd, empty_x=NEEDS_ROWS,
         empty_y=NEEDS_ROWS, batched=False, group=True, **_K),
    Spec("tp.distributed.energy_distance", lambda X, Y, m, **p: tpd.energy_distance(X, Y, m, **p), _energy,
         empty_x=NEEDS_ROWS, empty_y=NEEDS_ROWS, batched=False, group=True),
]

_XN = r"'[xX]'"
_YN = r"'[yY]'"


def _with(spec, kind, exc, match, metric=None, **params):
    def call(s=spec, metric=metric, params=params):
        X, Y = T.randn(5, 3), T.randn(4, 3)
        return s.call(X, Y, s.metric if metric is None else metric, **({**s.params, **params}))
    raises(spec.api, kind, call, exc, match, needs_group=spec.group)


def _valued(shape, index, value):
    t = torch.randn(*shape)
    t[index] = value
    return track(t)


for _s in SPECS:
    _rows_before = len(ROWS)
    # -- valid-but-odd inputs: the right answer ---------------------------------------------
    _cases = [
        ("non-contiguous", lambda: (track(T.randn(3, 5).t()), track(T.randn(4, 6)[:, ::2])), "oracle"),
        ("expanded-stride-0", lambda: (track(T.randn(1, 3).expand(5, 3)), track(T.randn(4, 1).expand(4, 3))), "oracle"),
        ("empty-x", lambda: (T.randn(0, 3), T.randn(4, 3)), _s.empty_x),
        ("zero-features", lambda: (T.randn(5, 0), T.randn(4, 0)), _s.zero_features),
        ("nan-in-data", lambda: (_valued((5, 3), (0, 0), math.nan), T.randn(4, 3)), _s.nan_data),
        ("inf-in-data", lambda: (_valued((5, 3), (1, 1), math.inf), T.randn(4, 3)), _s.inf_data),
        ("float16", lambda: (T.randn(5, 3, dtype=torch.float16), T.randn(4, 3, dtype=torch.float16)), "oracle"),
    ]
    if not _s.x_only:
        _cases.append(("empty-y", lambda: (T.randn(5, 3), T.randn(0, 3)), _s.empty_y))
    if _s.batched:
        _cases.append(("expanded-batch", lambda: (track(T.randn(5, 3).expand(2, 5, 3)),
                                                  track(T.randn(2, 1, 4, 3)[:, 0])), "oracle"))
        _cases.append(("empty-batch", lambda: (T.randn(0, 5, 3), T.randn(0, 4, 3)), "oracle"))
    for _kind, _make, _how in _cases:
        _box = {}

        def call(s=_s, make=_make, box=_box):
            X, Y = make()
            box["inputs"] = (X, Y)
            return s.call(X, Y, s.metric, **s.params)

        def expected(s=_s, box=_box, how=_how):
            X, Y = box["inputs"]
            return s.oracle(X, Y) if how == "oracle" else how(X, Y)

        if isinstance(_how, tuple):
            raises(_s.api, _kind, call, _how[1], _how[2], needs_group=_s.group)
        else:
            gives(_s.api, _kind, call, expected, compare=_s.compare if _how == "oracle" else "close",
                  tol=(1e-2, 1e-2) if _kind == "float16" else (1e-5, 1e-6), needs_group=_s.group)

    # -- wrong ranks, shapes, dtypes, devices, types ---------------------------------------
    _bad = [
        ("x-rank-1", lambda: (T.randn(3), T.randn(4, 3)), ValueError, _XN),
        ("x-rank-0", lambda: (T.tensor(1.0), T.randn(4, 3)), ValueError, _XN),
        ("x-int", lambda: (T.ones(5, 3, dtype=torch.int64), T.randn(4, 3)), TypeError, _XN),
        ("x-bool", lambda: (T.ones(5, 3, dtype=torch.bool), T.randn(4, 3)), TypeError, _XN),
        ("x-complex", lambda: (T.randn(5, 3, dtype=torch.complex64), T.randn(4, 3)), TypeError, _XN),
        ("x-not-tensor", lambda: ([[1.0, 2.0, 3.0]], T.randn(4, 3)), TypeError, _XN),
        ("x-sparse", lambda: (track(T.randn(5, 3).to_sparse()), T.randn(4, 3)), TypeError, _XN),
        ("x-nested", lambda: (_nested(), T.randn(4, 3)), TypeError, _XN + ".*nested"),
        ("x-nested-jagged", lambda: (_nested(torch.jagged), T.randn(4, 3)), TypeError, _XN),
    ]
    if not _s.x_only:
        _bad.append(("x-meta", lambda: (T.randn(5, 3, device="meta"), T.randn(4, 3)), ValueError, _XN + ".*" + _YN))
    if not _s.x_only:
        _bad += [
            ("y-rank-1", lambda: (T.randn(5, 3), T.randn(3)), ValueError, _YN),
            ("y-int", lambda: (T.randn(5, 3), T.ones(4, 3, dtype=torch.int32)), TypeError, _YN),
            ("y-nested", lambda: (T.randn(5, 3), _nested()), TypeError, _YN + ".*nested"),
            ("y-not-tensor", lambda: (T.randn(5, 3), "y"), TypeError, _YN),
            ("feature-mismatch", lambda: (T.randn(5, 3), T.randn(4, 4)), ValueError,
             _XN + r" has 3 features but " + _YN + " has 4"),
            ("mixed-dtypes", lambda: (T.randn(5, 3, dtype=torch.float64), T.randn(4, 3)), TypeError,
             _XN + ".*" + _YN),
            ("y-meta", lambda: (T.randn(5, 3), T.randn(4, 3, device="meta")), ValueError, _XN + ".*" + _YN),
        ]
        if _s.batched:
            _bad.append(("batch-mismatch", lambda: (T.randn(2, 5, 3), T.randn(3, 4, 3)), ValueError,
                         "batch dim.*" + _XN + ".*" + _YN))
        elif _s.group:
            _bad.append(("x-rank-3", lambda: (T.randn(2, 5, 3), T.randn(4, 3)), ValueError, _XN))
    for _kind, _make, _exc, _match in _bad:
        if _kind.endswith("not-tensor") and _s.api.startswith("torchpair::"):
            _exc, _match = RuntimeError, r"Expected a value of type '(Optional\[)?Tensor\]?' for argument '[xy]'"

        def call(s=_s, make=_make):
            X, Y = make()
            return s.call(X, Y, s.metric, **s.params)

        raises(_s.api, _kind, call, _exc, _match, needs_group=_s.group)

    # -- metric names, keywords, parameter types and values ---------------------------------
    _op = _s.api.startswith("torchpair::")
    _with(_s, "unknown-metric", ValueError, r"unknown metric 'euclidian'", metric="euclidian")
    _with(_s, "metric-not-str", TypeError if not _op else RuntimeError, r"metric", metric=3)
    _kernel = _s.metric == "rbf"
    _pm, _pn = ("rbf", "gamma") if _kernel else ("minkowski", "p")
    if _s.api == "tp.wasserstein":
        _pm, _pn = "minkowski", "metric_p"
    _with(_s, "misspelled-keyword", TypeError if not _op else RuntimeError, r"'?gama'?", metric=_pm, gama=0.1)
    _with(_s, "param-wrong-type", TypeError if not _op else RuntimeError, _pn, metric=_pm, **{_pn: "2"})
    _with(_s, "param-nan", ValueError, f"'{_pn}'", metric=_pm, **{_pn: math.nan})
    _with(_s, "param-inf", ValueError, f"'{_pn}'", metric=_pm, **{_pn: -math.inf})
    for _r in ROWS[_rows_before:]:
        _r.id = f"{_r.api}-{_r.kind}"


# ---------------------------------------------------------------------------------------
# hand-written rows: k, dims, flags, the expression classes' other methods
# ---------------------------------------------------------------------------------------
def _x():
    return T.randn(5, 3)


def _y():
    return T.randn(4, 3)


for _api, _mk in (("LazyPairwise", lambda: tp.lazy(_x(), _y())),
                  ("DensePairwise", lambda: tp.pairwise_expression(_x(), _y(), lazy=False))):
    raises(f"{_api}.topk", "k-negative", lambda mk=_mk: mk().topk(-1), ValueError, r"'k' must be >= 0")
    raises(f"{_api}.topk", "k-too-large", lambda mk=_mk: mk().topk(5), ValueError,
           r"'k' \(5\) must not exceed the size of dimension -1 \(4\)")
    raises(f"{_api}.topk", "k-huge", lambda mk=_mk: mk().topk(2 ** 62), ValueError, r"'k'")
    raises(f"{_api}.topk", "k-float", lambda mk=_mk: mk().topk(2.0), TypeError, r"'k' must be an int")
    raises(f"{_api}.topk", "k-bool", lambda mk=_mk: mk().topk(True), TypeError, r"'k' must be an int")
    raises(f"{_api}.topk", "k-tensor", lambda mk=_mk: mk().topk(T.tensor(2)), TypeError, r"'k' must be an int")
    raises(f"{_api}.topk", "largest-not-bool", lambda mk=_mk: mk().topk(2, largest="yes"), TypeError, r"'largest'")
    raises(f"{_api}.topk", "sorted-not-bool", lambda mk=_mk: mk().topk(2, sorted=None), TypeError, r"'sorted'")
    raises(f"{_api}.topk", "dim-out-of-range", lambda mk=_mk: mk().topk(2, dim=2), ValueError, r"'dim' 2 is out of range")
    gives(f"{_api}.topk", "k-zero", lambda mk=_mk: mk().topk(0).values, lambda: torch.empty(5, 0))
    raises(f"{_api}.sum", "dim-not-int", lambda mk=_mk: mk().sum("rows"), TypeError, r"'dim'")
    raises(f"{_api}.sum", "dim-out-of-range", lambda mk=_mk: mk().sum(-3), ValueError, r"'dim' -3 is out of range")
    raises(f"{_api}.mean", "dim-float", lambda mk=_mk: mk().mean(1.0), TypeError, r"'dim'")
    raises(f"{_api}.logsumexp", "dim-bool", lambda mk=_mk: mk().logsumexp(True), TypeError, r"'dim'")
    raises(f"{_api}.logsumexp", "log_weight-rows", lambda mk=_mk: mk().logsumexp(-1, log_weight=T.zeros(3)),
           ValueError, r"'log_weight' has 3 entries")
    raises(f"{_api}.logsumexp", "scale-nan", lambda mk=_mk: mk().logsumexp(-1, scale=float("nan")), ValueError,
           r"'scale' must be finite")
    raises(f"{_api}.count", "threshold-str", lambda mk=_mk: mk().count("1"), TypeError, r"'threshold'")
    raises(f"{_api}.count", "threshold-none", lambda mk=_mk: mk().count(None), TypeError, r"'threshold'")
    raises(f"{_api}.count", "dim-out-of-range", lambda mk=_mk: mk().count(1.0, dim=2), ValueError,
           r"'dim' 2 is out of range")
    raises(f"{_api}.count", "dim-float", lambda mk=_mk: mk().count(1.0, dim=1.0), TypeError, r"'dim'")
    raises(f"{_api}.min", "dim-out-of-range", lambda mk=_mk: mk().min(5), ValueError, r"'dim' 5 is out of range")
    raises(f"{_api}.max", "dim-str", lambda mk=_mk: mk().max("x"), TypeError, r"'dim'")
    raises(f"{_api}.argmin", "dim-none", lambda mk=_mk: mk().argmin(None), TypeError, r"'dim'")
    raises(f"{_api}.argmax", "dim-out-of-range", lambda mk=_mk: mk().argmax(-3), ValueError, r"'dim'")
    raises(f"{_api}.softmax_matmul", "dim-out-of-range", lambda mk=_mk: mk().softmax_matmul(T.randn(4, 2), dim=3),
           ValueError, r"'dim'")
    raises(f"{_api}.softmax_matmul", "v-wrong-rows", lambda mk=_mk: mk().softmax_matmul(T.randn(5, 2)), ValueError,
           r"'[vV]'")
    raises(f"{_api}.softmax_matmul", "v-not-tensor", lambda mk=_mk: mk().softmax_matmul([1.0]), TypeError, r"'V'")
    raises(f"{_api}.matmul", "v-not-tensor", lambda mk=_mk: mk().matmul(3.0), TypeError, r"'V'")
    raises(f"{_api}.matmul", "v-wrong-rows", lambda mk=_mk: mk().matmul(T.randn(5, 2)), ValueError, r"'[vV]'")
    raises(f"{_api}.matmul", "v-int", lambda mk=_mk: mk().matmul(T.ones(4, 2, dtype=torch.int64)), TypeError, r"'[vV]'")
    raises(f"{_api}.matmul", "v-meta", lambda mk=_mk: mk().matmul(T.randn(4, 2, device="meta")), ValueError, r"'[vV]'")
    raises(f"{_api}.__matmul__", "v-rank-0", lambda mk=_mk: mk() @ T.tensor(1.0), ValueError, r"'[vV]'")
    _box = {}

    def _vec_call(mk=_mk, box=_box):
        e = mk()
        box["e"] = e
        return e.matmul(T.ones(4))

    gives(f"{_api}.matmul", "v-vector (1-D V gives [N])", _vec_call,
          lambda box=_box: d_(box["e"].X, box["e"].Y) @ torch.ones(4, dtype=torch.float64))
    gives(f"{_api}.size", "dim-none-and-int", lambda mk=_mk: (mk().size(), mk().size(-1)),
          lambda: (torch.Size([5, 4]), 4), compare="exact")
    raises(f"{_api}.size", "dim-out-of-range", lambda mk=_mk: mk().size(2), ValueError, r"'dim'")
    raises(f"{_api}.size", "dim-str", lambda mk=_mk: mk().size("a"), TypeError, r"'dim'")
    gives(f"{_api}.dim", "no-arguments", lambda mk=_mk: mk().dim(), lambda: 2, compare="exact")
    raises(f"{_api}.dim", "unexpected-argument", lambda mk=_mk: mk().dim(0), TypeError, r"dim\(\) takes 1 positional")
    gives(f"{_api}.mT", "transposed-shape", lambda mk=_mk: mk().mT().shape, lambda: torch.Size([4, 5]), compare="exact")
    raises(f"{_api}.to_dense", "unexpected-argument", lambda mk=_mk: mk().to_dense(torch.float64), TypeError,
           r"to_dense\(\) takes 1 positional")

raises("tp.pairwise_expression", "lazy-not-bool", lambda: tp.pairwise_expression(_x(), _y(), "rbf", lazy="yes"),
       TypeError, r"'lazy'")
raises("tp.LazyPairwise", "params-not-dict", lambda: tp.LazyPairwise(_x(), _y(), "rbf", [("gamma", 1.0)]), TypeError,
       r"'params'")
raises("tp.DensePairwise", "params-not-dict", lambda: tp.DensePairwise(_x(), _y(), "rbf", None), TypeError,
       r"'params'")

# ---- set-level functions: k, flags, metric kinds ---------------------------------------------
raises("tp.knn", "k-negative", lambda: tp.knn(_x(), _y(), -1), ValueError, r"'k'")
raises("tp.knn", "k-too-large", lambda: tp.knn(_x(), _y(), 5), ValueError, r"'k' \(5\)")
raises("tp.knn", "k-huge", lambda: tp.knn(_x(), _y(), 2 ** 62), ValueError, r"'k'")
raises("tp.knn", "k-str", lambda: tp.knn(_x(), _y(), "3"), TypeError, r"'k' must be an int")
raises("tp.knn", "k-bool", lambda: tp.knn(_x(), _y(), True), TypeError, r"'k' must be an int")
gives("tp.knn", "k-zero", lambda: tp.knn(_x(), _y(), 0).indices, lambda: torch.empty(5, 0, dtype=torch.int64),
      compare="exact")
gives("tp.knn", "y-none (self search: each point is its own nearest)", lambda: tp.knn(_x(), None, 1).indices,
      lambda: torch.arange(5).unsqueeze(-1), compare="exact")
raises("torchpair::knn", "k-negative", lambda: _ops.knn(_x(), _y(), -2), ValueError, r"'k'")
raises("torchpair::knn", "k-huge", lambda: _ops.knn(_x(), _y(), 2 ** 62), ValueError, r"'k'")
raises("tp.hausdorff", "directed-not-bool", lambda: tp.hausdorff(_x(), _y(), directed=1), TypeError, r"'directed'")
raises("tp.hausdorff", "kernel-metric", lambda: tp.hausdorff(_x(), _y(), "rbf"), ValueError,
       r"'metric' must be a distance")
raises("tp.hausdorff", "y-none", lambda: tp.hausdorff(_x(), None), TypeError, r"'Y'")
raises("tp.chamfer", "reduction-value", lambda: tp.chamfer(_x(), _y(), reduction="max"), ValueError, r"'reduction'")
raises("tp.chamfer", "reduction-type", lambda: tp.chamfer(_x(), _y(), reduction=None), TypeError, r"'reduction'")
raises("torchpair::chamfer", "reduction-value", lambda: _ops.chamfer(_x(), _y(), "sqeuclidean", "median"), ValueError,
       r"'reduction'")
raises("tp.mmd", "unbiased-not-bool", lambda: tp.mmd(_x(), _y(), unbiased="no"), TypeError, r"'unbiased'")
raises("tp.mmd", "distance-metric", lambda: tp.mmd(_x(), _y(), "euclidean"), ValueError, r"'metric' must be a similarity")
raises("tp.mmd", "unbiased-one-sample", lambda: tp.mmd(T.randn(1, 3), _y(), unbiased=True), ValueError, r"'x'")
raises("tp.energy_distance", "kernel-metric", lambda: tp.energy_distance(_x(), _y(), "rbf"), ValueError,
       r"'metric' must be a distance")
raises("torchpair::hausdorff", "kernel-metric", lambda: _ops.hausdorff(_x(), _y(), "rbf"), ValueError, r"'metric'")
raises("torchpair::mmd", "distance-metric", lambda: _ops.mmd(_x(), _y(), "cityblock"), ValueError, r"'metric'")
raises("torchpair::energy_distance", "kernel-metric", lambda: _ops.energy_distance(_x(), _y(), "linear"), ValueError,
       r"'metric'")
raises("torchpair::lazy_topk", "k-too-large", lambda: _ops.lazy_topk(_x(), _y(), "rbf", 9), ValueError, r"'k'")
raises("torchpair::lazy_topk", "k-negative", lambda: _ops.lazy_topk(_x(), _y(), "rbf", -3), ValueError, r"'k'")
raises("torchpair::lazy_topk", "dim-batch", lambda: _ops.lazy_topk(_x(), _y(), "rbf", 1, 0), ValueError, r"'dim'")
raises("torchpair::lazy_topk", "nan-option", lambda: _ops.lazy_topk(_x(), _y(), "rbf", 1, -1, True, True, False, "max"),
       ValueError, r"'nan'")
raises("torchpair::lazy_reduce", "reduction-value", lambda: _ops.lazy_reduce(_x(), _y(), "rbf", "median"), ValueError,
       r"'reduction'")
raises("torchpair::lazy_reduce", "dim-value", lambda: _ops.lazy_reduce(_x(), _y(), "rbf", "sum", 3), ValueError,
       r"'dim'")
raises("torchpair::lazy_matmul", "v-wrong-rows", lambda: _ops.lazy_matmul(_x(), _y(), T.randn(5, 2), "rbf"),
       ValueError, r"'v'")
raises("torchpair::lazy_softmax_matmul", "dim-value", lambda: _ops.lazy_softmax_matmul(_x(), _y(), T.randn(4, 2),
                                                                                      "rbf", 1), ValueError, r"'dim'")
raises("torchpair::lazy_softmax_matmul", "v-wrong-dtype",
       lambda: _ops.lazy_softmax_matmul(_x(), _y(), T.randn(4, 2, dtype=torch.float64), "rbf"), TypeError, r"'v'")

# requires_grad on inputs a result cannot depend on differentiably
gives("tp.pairwise", "requires-grad-on-boolean-metric (no grad_fn, scipy's values)",
      lambda: tp.pairwise(T.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]], requires_grad=True),
                          T.tensor([[1.0, 1.0, 0.0]]), "jaccard").requires_grad,
      lambda: False, compare="exact")
gives("tp.knn", "requires-grad: the indices carry no gradient",
      lambda: tp.knn(T.randn(5, 3, requires_grad=True), _y(), 2).indices.requires_grad, lambda: False, compare="exact")

gives("LazyPairwise.argmin", "requires-grad: indices carry no gradient",
      lambda: tp.lazy(T.randn(5, 3, requires_grad=True), _y()).argmin(-1).requires_grad, lambda: False, compare="exact")
gives("torchpair::_topk", "requires-grad: the core top-k is not differentiable (no grad_fn on its outputs)",
      lambda: [t.grad_fn is None for t in _ops._topk(T.randn(1, 5, 3, requires_grad=True), _y3(), None, None, 2, True,
                                                     True, "euclidean_direct", [], False, False)],
      lambda: [True, True], compare="exact")
gives("tp.emd", "requires-grad on M: the plan carries no gradient",
      lambda: tp.emd(None, None, T.rand(4, 3, dtype=torch.float64, requires_grad=True)).requires_grad, lambda: False,
      compare="exact")
gives("tp.emd2", "requires-grad on M: the duals and status carry no gradient",
      lambda: [tp.emd2(None, None, T.rand(4, 3, dtype=torch.float64, requires_grad=True), log=True)[1][k].requires_grad
               for k in ("plan", "u", "v", "status")], lambda: [False] * 4, compare="exact")

# ---- catalog / backend helpers --------------------------------------------------------------
gives("tp.metrics", "no-arguments (a list of names, euclidean among them)", lambda: "euclidean" in tp.metrics(),
      lambda: True, compare="exact")
raises("tp.metrics", "unexpected-argument", lambda: tp.metrics("distance", "kernel"), TypeError,
       r"metrics\(\) takes from 0 to 1 positional")
raises("tp.metrics", "unknown-family", lambda: tp.metrics("strings"), ValueError, r"unknown family 'strings'.*'family'")
gives("tp.metrics", "family (the sequence metrics)", lambda: tp.metrics(family="sequence")[:2],
      lambda: ["levenshtein", "osa"], compare="exact")
raises("tp.metric_info", "unknown-family", lambda: tp.metric_info("hamming", family="bits"), ValueError, r"'family'")
raises("tp.metric_info", "not-in-family", lambda: tp.metric_info("rbf", family="sequence"), ValueError,
       r"unknown sequence metric 'rbf'")
raises("tp.metric_info", "unknown-metric", lambda: tp.metric_info("euclidian"), ValueError, r"unknown metric 'euclidian'")
raises("tp.metric_info", "name-not-str", lambda: tp.metric_info(None), TypeError, r"'name'")
raises("tp.backend", "unknown-backend", lambda: tp.backend("cuda"), ValueError, r"unknown backend 'cuda'.*'name'")
raises("tp.backend", "name-not-str", lambda: tp.backend(1), TypeError, r"'name'")
raises("tp.backend", "strict-not-bool", lambda: tp.backend("native", strict="yes"), TypeError, r"'strict'")
gives("tp.get_backend", "no-arguments", lambda: tp.get_backend(), lambda: "native", compare="exact")
raises("tp.get_backend", "unexpected-argument", lambda: tp.get_backend("keops"), TypeError,
       r"get_backend\(\) takes 0 positional")
def _native_block():
    with tp.backend("native", strict=True):
        return tp.get_backend()


gives("tp.backend", "native-strict (valid)", _native_block, lambda: "native", compare="exact")


# ---------------------------------------------------------------------------------------
# core operators (engine operands [B, n, d], kernel ids)
# ---------------------------------------------------------------------------------------
def _x3():
    return T.randn(1, 5, 3)


def _y3():
    return T.randn(1, 4, 3)


def _like(x, y):
    """_pdist rows: a valid row's y (any [B, 4, D] of x's kind) is replaced by x itself."""
    return (y.dim() == 3 and y.shape[0] == x.shape[0] and y.shape[-2] == 4 and y.shape[-1] == x.shape[-1]
            and y.dtype == x.dtype and y.device == x.device)


def _v3(y):
    return _vm(y).expand(y.shape[0], -1, -1) if y.dim() == 3 else _vm(y)


_CORE = {
    "torchpair::_dense": (lambda x, y: _ops._dense(x, y, None, None, "euclidean_direct", [], False, False), d_, "close"),
    "torchpair::_matmul": (lambda x, y: _ops._matmul(x, y, None, None, _v3(y), "rbf_direct", [G], False, False),
                           lambda x, y: k_(x, y) @ _vo(y), "close"),
    "torchpair::_row_reduce": (lambda x, y: _ops._row_reduce(x, y, None, None, "sum", "rbf_direct", [G], False, False),
                               lambda x, y: k_(x, y).sum(-1), "close"),
    "torchpair::_topk": (lambda x, y: _ops._topk(x, y, None, None, 2, False, False, "euclidean_direct", [], False,
                                                 False), d_, "select:-1:0:2"),
    "torchpair::_softmax_matmul": (lambda x, y: _ops._softmax_matmul(x, y, None, None, _v3(y), "rbf_direct", [G],
                                                                     False, False)[0],
                                   lambda x, y: torch.softmax(k_(x, y), -1) @ _vo(y), "close"),
    "torchpair::_pdist": (lambda x, y: _ops._pdist(x, x if _like(x, y) else y, None, None, "euclidean_direct", [],
                                                   False),
                          lambda x, y: condensed(d_(x, x)), "close"),
}
for _api, (_call, _oracle, _cmp) in _CORE.items():
    for _kind, _make in (("non-contiguous", lambda: (track(T.randn(1, 3, 5).transpose(1, 2)),
                                                     track(T.randn(1, 4, 6)[..., ::2]))),
                         ("expanded-stride-0", lambda: (track(T.randn(1, 1, 3).expand(1, 5, 3)),
                                                        track(T.randn(4, 1).expand(2, 4, 3)[:1]))),
                         ("empty-x", lambda: (T.randn(1, 0, 3), T.randn(1, 4, 3))),
                         ("zero-features", lambda: (T.randn(1, 5, 0), T.randn(1, 4, 0))),
                         ("empty-batch", lambda: (T.randn(0, 5, 3), T.randn(0, 4, 3)))):
        _box = {}

        def call(c=_call, make=_make, box=_box):
            box["in"] = make()
            return c(*box["in"])

        gives(_api, _kind, call, lambda o=_oracle, box=_box: o(*box["in"]), compare=_cmp)
    for _kind, _make, _exc, _match in (
        ("x-rank-2", lambda: (T.randn(5, 3), T.randn(1, 4, 3)), ValueError, r"'x' must have 3 dimensions"),
        ("x-int", lambda: (T.ones(1, 5, 3, dtype=torch.int64), T.ones(1, 4, 3, dtype=torch.int64)), TypeError, r"'x'"),
        ("x-float16", lambda: (T.randn(1, 5, 3, dtype=torch.float16), T.randn(1, 4, 3, dtype=torch.float16)),
         TypeError, r"'x'"),
        ("y-meta", lambda: (T.randn(1, 5, 3), T.randn(1, 4, 3, device="meta")), ValueError, r"'x'.*'y'|'y'.*'x'"),
        ("mixed-dtypes", lambda: (T.randn(1, 5, 3, dtype=torch.float64), T.randn(1, 4, 3)), TypeError, r"'y'"),
        ("feature-mismatch", lambda: (T.randn(1, 5, 3), T.randn(1, 4, 2)), ValueError, r"'y'"),
        ("batch-mismatch", lambda: (T.randn(2, 5, 3), T.randn(3, 4, 3)), ValueError, r"'y'"),
    ):
        if _api == "torchpair::_pdist" and _kind in ("feature-mismatch", "batch-mismatch"):
            _match = r"'x' and 'y' must have the same|'x' has 3 features but 'y' has 2"
        raises(_api, _kind, lambda c=_call, make=_make: c(*make()), _exc, _match)
    raises(_api, "unknown-kernel", lambda api=_api: getattr(_ops, api.split("::")[1])(*_core_args_with_kernel(api, "nope")),
           ValueError, r"unknown engine kernel 'nope'.*'kernel'")


def _core_args_with_kernel(api, kernel):
    x, y, v = _x3(), _y3(), T.randn(1, 4, 2)
    name = api.split("::")[1]
    return {
        "_dense": (x, y, None, None, kernel, [], False, False),
        "_matmul": (x, y, None, None, v, kernel, [], False, False),
        "_row_reduce": (x, y, None, None, "sum", kernel, [], False, False),
        "_topk": (x, y, None, None, 2, False, False, kernel, [], False, False),
        "_softmax_matmul": (x, y, None, None, v, kernel, [], False, False),
        "_pdist": (x, x, None, None, kernel, [], False),
        "_paired": (x, x, None, None, None, kernel, []),
    }[name]


# _paired: matched rows
_pb = {}


def _paired_nc(box=_pb):
    box["in"] = (track(T.randn(1, 3, 5).transpose(1, 2)), track(T.randn(1, 5, 6)[..., ::2]))
    return _ops._paired(*box["in"], None, None, None, "euclidean_direct", [])


gives("torchpair::_paired", "non-contiguous", _paired_nc,
      lambda box=_pb: ((box["in"][0].double() - box["in"][1].double()) ** 2).sum(-1).sqrt())
gives("torchpair::_paired", "empty-rows", lambda: _ops._paired(T.randn(1, 0, 3), T.randn(1, 0, 3), None, None, None,
                                                               "euclidean_direct", []), lambda: torch.empty(1, 0))
raises("torchpair::_paired", "unknown-kernel", lambda: _ops._paired(*_core_args_with_kernel("::_paired", "nope")),
       ValueError, r"unknown engine kernel 'nope'")
raises("torchpair::_paired", "x-meta", lambda: _ops._paired(T.randn(1, 5, 3, device="meta"), T.randn(1, 5, 3), None,
                                                            None, None, "euclidean_direct", []), ValueError, r"'y'|'x'")
raises("torchpair::_paired", "self-mask-shape", lambda: _ops._paired(_x3(), _x3(), None, None,
                                                                     T.ones(1, 4, dtype=torch.bool),
                                                                     "euclidean_direct", []), ValueError, r"'self_mask'")
raises("torchpair::_dense", "scalars-count", lambda: _ops._dense(_x3(), _y3(), None, None, "rbf_direct", [1.0, 2.0],
                                                                 False, False), ValueError, r"'scalars'")
gives("torchpair::_dense", "scalars-nan (core ops do not check values: NaN results, no crash)",
      lambda: _ops._dense(_x3(), _y3(), None, None, "rbf_direct", [math.nan], False, False),
      lambda: torch.full((1, 5, 4), math.nan))
raises("torchpair::_topk", "k-negative", lambda: _ops._topk(_x3(), _y3(), None, None, -1, True, True,
                                                            "euclidean_direct", [], False, False), ValueError, r"'k'")
raises("torchpair::_topk", "k-huge", lambda: _ops._topk(_x3(), _y3(), None, None, 2 ** 62, True, True,
                                                        "euclidean_direct", [], False, False), ValueError, r"'k'")
raises("torchpair::_softmax_matmul", "v-rows", lambda: _ops._softmax_matmul(_x3(), _y3(), None, None, T.randn(1, 5, 2),
                                                                            "rbf_direct", [G], False, False),
       ValueError, r"'v'")
raises("torchpair::_matmul", "v-dtype", lambda: _ops._matmul(_x3(), _y3(), None, None,
                                                             T.randn(1, 4, 2, dtype=torch.float64), "rbf_direct", [G],
                                                             False, False), TypeError, r"'v'")


# backward operators: the upstream gradient's shape, the mask; a valid call with an odd layout
def _bw(name, grad, extra=(), mask=4, kernel="euclidean_direct", scalars=()):
    x, y = _x3(), _y3()
    head = {"_dense_backward": (), "_matmul_backward": (T.randn(1, 4, 2),),
            "_row_reduce_backward": ("sum", T.randn(1, 5)), "_softmax_matmul_backward": ()}[name]
    if name == "_softmax_matmul_backward":
        v = T.randn(1, 4, 2)
        out, lse = _ops._softmax_matmul(x, y, None, None, v, "rbf_direct", [G], False, False)
        head = (v, out, lse)
        kernel, scalars = "rbf_direct", (G,)
    tail = (1.0, None) if name == "_row_reduce_backward" else ()
    return getattr(_ops, name)(grad, x, y, None, None, *head, kernel, list(scalars), False, False, None, *tail,
                               [True] * (5 if name == "_row_reduce_backward" else mask))


raises("torchpair::_dense_backward", "grad-shape", lambda: _bw("_dense_backward", T.randn(1, 5, 5)), ValueError,
       r"'grad'")
raises("torchpair::_dense_backward", "grad-int", lambda: _bw("_dense_backward", T.ones(1, 5, 4, dtype=torch.int64)),
       TypeError, r"'grad'")
raises("torchpair::_dense_backward", "grad-meta", lambda: _bw("_dense_backward", T.randn(1, 5, 4, device="meta")),
       ValueError, r"'grad'")
raises("torchpair::_matmul_backward", "grad-shape", lambda: _bw("_matmul_backward", T.randn(1, 5, 3), mask=5),
       ValueError, r"'grad'")
raises("torchpair::_row_reduce_backward", "grad-shape", lambda: _bw("_row_reduce_backward", T.randn(1, 4)),
       ValueError, r"'grad'")
raises("torchpair::_softmax_matmul_backward", "grad-shape",
       lambda: _bw("_softmax_matmul_backward", T.randn(1, 5, 3), mask=5), ValueError, r"'grad'")
raises("torchpair::_paired_backward", "grad-shape",
       lambda: _ops._paired_backward(T.randn(1, 4), _x3(), _x3(), None, None, None, "euclidean_direct", [], None,
                                     [True] * 4), ValueError, r"'grad'")
raises("torchpair::_pdist_backward", "grad-shape",
       lambda: _ops._pdist_backward(T.randn(1, 3), _x3(), _x3(), None, None, "euclidean_direct", [], True, None,
                                    [True] * 4), ValueError, r"'grad'")
_db = {}


def _dense_bw_nc(box=_db):
    x, y = T.randn(1, 5, 3), T.randn(1, 4, 3)
    grad = track(T.randn(1, 4, 5).transpose(1, 2))  # non-contiguous upstream gradient
    box["in"] = (x, y, grad)
    return _ops._dense_backward(grad, x, y, None, None, "euclidean_direct", [], False, False, None,
                                [True, True, False, False])[:2]


def _dense_bw_oracle(box=_db):
    x, y, grad = (t.double().requires_grad_(True) for t in box["in"])
    return torch.autograd.grad((((x.unsqueeze(-2) - y.unsqueeze(-3)) ** 2).sum(-1).sqrt() * grad.detach()).sum(), (x, y))


gives("torchpair::_dense_backward", "non-contiguous-grad (gradients of the dense formula)", _dense_bw_nc,
      _dense_bw_oracle, compare="pair")
_mb = {}


def _matmul_bw_nc(box=_mb):
    x, y = T.randn(1, 5, 3), T.randn(1, 4, 3)
    v = track(T.randn(1, 2, 4).transpose(1, 2))
    grad = track(T.randn(1, 2, 5).transpose(1, 2))
    box["in"] = (x, y, v, grad)
    return _ops._matmul_backward(grad, x, y, None, None, v, "rbf_direct", [G], False, False, None,
                                 [True, True, False, False, True])


def _matmul_bw_oracle(box=_mb):
    x, y, v, grad = (t.double().requires_grad_(True) for t in box["in"])
    out = torch.exp(-G * ((x.unsqueeze(-2) - y.unsqueeze(-3)) ** 2).sum(-1)) @ v
    gx, gy, gv = torch.autograd.grad((out * grad.detach()).sum(), (x, y, v))
    return gx, gy, None, None, gv


gives("torchpair::_matmul_backward", "non-contiguous v and grad (gradients of the dense formula)", _matmul_bw_nc,
      _matmul_bw_oracle, compare="pair")
gives("torchpair::_row_reduce_backward", "empty-rows", lambda: _ops._row_reduce_backward(
    T.randn(1, 0), T.randn(1, 0, 3), T.randn(1, 4, 3), None, None, "sum", T.randn(1, 0), "rbf_direct", [G], False,
    False, None, 1.0, None, [True, True, False, False, False])[:2], lambda: (torch.empty(1, 0, 3), torch.zeros(1, 4, 3)), compare="pair")
gives("torchpair::_softmax_matmul_backward", "empty-rows", lambda: _softmax_bw_empty(),
      lambda: (torch.empty(1, 0, 3), torch.zeros(1, 4, 3), None, None, torch.zeros(1, 4, 2)), compare="pair")


def _softmax_bw_empty():
    x, y, v = T.randn(1, 0, 3), T.randn(1, 4, 3), T.randn(1, 4, 2)
    out, lse = _ops._softmax_matmul(x, y, None, None, v, "rbf_direct", [G], False, False)
    return _ops._softmax_matmul_backward(T.randn(1, 0, 2), x, y, None, None, v, out, lse, "rbf_direct", [G], False,
                                         False, None, [True, True, False, False, True])


gives("torchpair::_paired_backward", "empty-rows", lambda: _ops._paired_backward(
    T.randn(1, 0), T.randn(1, 0, 3), T.randn(1, 0, 3), None, None, None, "euclidean_direct", [], None,
    [True, True, False, False])[:2], lambda: (torch.empty(1, 0, 3), torch.empty(1, 0, 3)), compare="pair")
gives("torchpair::_pdist_backward", "single-row (no pairs: zero gradient)", lambda: _ops._pdist_backward(
    T.randn(1, 0), T.ones(1, 1, 3), T.ones(1, 1, 3), None, None, "euclidean_direct", [], True, None,
    [True, True, False, False])[:2], lambda: (torch.zeros(1, 1, 3), torch.zeros(1, 1, 3)), compare="pair")

# introspection operators take no arguments
gives("torchpair::_catalog", "no-arguments (JSON listing euclidean)", lambda: '"euclidean"' in _ops._catalog(),
      lambda: True, compare="exact")
raises("torchpair::_catalog", "unexpected-argument", lambda: _ops._catalog("x"), RuntimeError, r"_catalog")
# the prepared engine call (the KeOps backend translates engine kernels through it)
gives("torchpair::_prepare", "rbf (kernel id and the default gamma = 1 / D)",
      lambda: tuple(_ops._prepare(_x()[None], _y()[None], "rbf")[4:]), lambda: ("rbf_direct", [1 / 3]), compare="exact")
gives("torchpair::_prepare", "y-none (the operands are x)", lambda: _ops._prepare(_x()[None], None, "sqeuclidean")[1].shape,
      lambda: torch.Size([1, 5, 3]), compare="exact")
raises("torchpair::_prepare", "x-2d", lambda: _ops._prepare(_x(), None, "rbf"), ValueError, r"'x'")
raises("torchpair::_prepare", "batch-mismatch", lambda: _ops._prepare(_x()[None].expand(2, 5, 3), _y()[None], "rbf"),
       ValueError, r"'x' and 'y'")
raises("torchpair::_prepare", "x-int", lambda: _ops._prepare(T.ones(1, 5, 3, dtype=torch.int64), None, "rbf"),
       TypeError, r"'x'")
raises("torchpair::_prepare", "unknown-metric", lambda: _ops._prepare(_x()[None], None, "euclidian"), ValueError,
       r"'metric'")
raises("torchpair::_prepare", "param-not-taken", lambda: _ops._prepare(_x()[None], None, "rbf", p=1.0), TypeError,
       r"'p'")
raises("torchpair::_prepare", "gamma-negative", lambda: _ops._prepare(_x()[None], None, "rbf", gamma=-1.0), ValueError,
       r"'gamma'")
# merges of partial reductions (the distributed merge)
gives("torchpair::_merge_topk", "k-best (ties to the lower index)",
      lambda: _ops._merge_topk(T.tensor([[2.0, 1.0, 1.0]]), T.tensor([[0, 5, 3]]), 2, False, True)[1],
      lambda: torch.tensor([[3, 5]]), compare="exact")
raises("torchpair::_merge_topk", "k-too-large", lambda: _ops._merge_topk(T.ones(1, 3), T.zeros(1, 3, dtype=torch.long),
       4, False, True), ValueError, r"'k'")
raises("torchpair::_merge_topk", "shape-mismatch", lambda: _ops._merge_topk(T.ones(1, 3), T.zeros(1, 2, dtype=torch.long),
       1, False, True), ValueError, r"'values' and 'indices'")
raises("torchpair::_merge_topk", "indices-float", lambda: _ops._merge_topk(T.ones(1, 3), T.zeros(1, 3), 1, False, True),
       TypeError, r"'indices'")
gives("torchpair::_logsumexp_merge", "partials (torch.logsumexp)",
      lambda: _ops._logsumexp_merge(T.tensor([[0.0, -float("inf")], [1.0, -float("inf")]]), 0),
      lambda: torch.logsumexp(torch.tensor([[0.0, -float("inf")], [1.0, -float("inf")]]), 0))
raises("torchpair::_logsumexp_merge", "dim-out-of-range", lambda: _ops._logsumexp_merge(T.ones(2, 3), 2), ValueError,
       r"'dim'")
raises("torchpair::_logsumexp_merge", "partials-int", lambda: _ops._logsumexp_merge(T.ones(2, 3, dtype=torch.long), 0),
       TypeError, r"'partials'")
gives("torchpair::_logsumexp_raise", "sum-under-a-larger-max", lambda: _ops._logsumexp_raise(T.tensor([0.0]),
      T.tensor([1.0])), lambda: torch.exp(torch.tensor([-1.0])))
raises("torchpair::_logsumexp_raise", "shape-mismatch", lambda: _ops._logsumexp_raise(T.ones(2), T.ones(3)),
       ValueError, r"'max' must broadcast")
gives("torchpair::_logsumexp_finalize", "log(sum) + max", lambda: _ops._logsumexp_finalize(T.tensor([2.0]),
      T.tensor([1.0])), lambda: torch.log(torch.tensor([2.0])) + 1)
raises("torchpair::_logsumexp_finalize", "max-int", lambda: _ops._logsumexp_finalize(T.ones(2),
       T.ones(2, dtype=torch.long)), TypeError, r"'max'")
gives("torchpair::_build_info", "no-arguments (JSON)", lambda: _ops._build_info().startswith("{"), lambda: True,
      compare="exact")
raises("torchpair::_build_info", "unexpected-argument", lambda: _ops._build_info(1), RuntimeError, r"_build_info")


# ---------------------------------------------------------------------------------------
# token sequences (tp.seq): rapidfuzz is the oracle
# ---------------------------------------------------------------------------------------
def _lev(X, Y, lx=None, ly=None, pad_id=-1):
    from rapidfuzz.distance import Levenshtein

    def rows(t, lengths):
        t = t.reshape(t.shape[:-1].numel(), t.shape[-1])
        out = []
        for i, r in enumerate(t.tolist()):
            n = len(r) if lengths is None else int(lengths.reshape(-1)[i])
            if lengths is None and pad_id in r:
                n = r.index(pad_id)
            out.append(r[:n])
        return out

    a, b = rows(X, lx), rows(Y, ly)
    D = torch.tensor([[Levenshtein.distance(p, q) for q in b] for p in a], dtype=torch.int64)
    return D.reshape(*X.shape[:-1], Y.shape[-2])


def _tok(n, L, hi=4):
    return T.randint(0, hi, (n, L))


_SEQ = {
    "tp.seq.pairwise": lambda X, Y, **k: tp.seq.pairwise(X, Y, "levenshtein", **k),
    "tp.seq.cdist": lambda X, Y, **k: tp.seq.cdist(X, Y, "levenshtein", **k),
    "tp.seq.lazy": lambda X, Y, **k: tp.seq.lazy(X, Y, "levenshtein", **k).to_dense(),
    "tp.seq.LazySequences": lambda X, Y, **k: LazySequences(X, Y, "levenshtein", **k).to_dense(),
    "LazySequences.to_dense": lambda X, Y, **k: tp.seq.lazy(X, Y, "levenshtein", **k).to_dense(),
    "tp.pairwise (sequence metric)": lambda X, Y, **k: tp.pairwise(X, Y, "levenshtein", **k),
    "torchpair::_seq_dense": lambda X, Y, **k: _ops._seq_dense(
        X[None], T.full((1, X.shape[0]), X.shape[-1]), Y[None], T.full((1, Y.shape[0]), Y.shape[-1]), "levenshtein",
        [1.0, 1.0, 1.0], False)[0],
}
for _api, _f in _SEQ.items():
    _api = _api.split(" ")[0] if _api.startswith("torchpair") else _api
    for _kind, _make in (
        ("non-contiguous", lambda: (track(T.randint(0, 4, (6, 5)).t()), track(T.randint(0, 4, (4, 12))[:, ::2]))),
        ("expanded-stride-0", lambda: (track(T.randint(0, 4, (1, 6)).expand(5, 6)), _tok(4, 6))),
        ("empty-x", lambda: (_tok(0, 6), _tok(4, 6))),
        ("zero-length", lambda: (_tok(5, 0), _tok(4, 6))),
        ("int8-tokens", lambda: (T.randint(0, 4, (5, 6), dtype=torch.int8), _tok(4, 7))),
    ):
        _box = {}

        def call(f=_f, make=_make, box=_box):
            box["in"] = make()
            return f(*box["in"])

        gives(_api, _kind, call, lambda box=_box: _lev(*box["in"]), compare="exact")
    for _kind, _make, _exc, _match in (
        ("x-float", lambda: (T.rand(5, 6), _tok(4, 6)), TypeError, r"'[xX]'"),
        ("x-bool", lambda: (T.ones(5, 6, dtype=torch.bool), _tok(4, 6)), TypeError, r"'[xX]'"),
        ("x-complex", lambda: (T.ones(5, 6, dtype=torch.complex64), _tok(4, 6)), TypeError, r"'[xX]'"),
        ("x-rank-1", lambda: (_tok(5, 6)[0], _tok(4, 6)), ValueError, r"'[xX]'"),
        ("y-meta", lambda: (_tok(5, 6), T.randint(0, 4, (4, 6), device="meta")), ValueError,
         r"'[xX]'.*'[yY]'|'[yY]'.*'[xX]'"),
        ("x-not-tensor", lambda: ([[1, 2]], _tok(4, 6)), TypeError, r"'[xX]'"),
    ):
        if _api == "torchpair::_seq_dense" and _kind == "x-not-tensor":
            continue
        raises(_api, _kind, lambda f=_f, make=_make: f(*make()), _exc, _match)
    if not _api.startswith("torchpair"):
        raises(_api, "x-lengths-float", lambda f=_f: f(_tok(5, 6), _tok(4, 6), x_lengths=T.ones(5)), TypeError,
               r"'x_lengths'")
        raises(_api, "x-lengths-shape", lambda f=_f: f(_tok(5, 6), _tok(4, 6), x_lengths=T.ones(4, dtype=torch.int64)),
               ValueError, r"'x_lengths'")
        raises(_api, "y-lengths-too-long", lambda f=_f: f(_tok(5, 6), _tok(4, 6), y_lengths=T.full((4,), 7)),
               ValueError, r"'y_lengths'|'y'")
        raises(_api, "y-lengths-negative", lambda f=_f: f(_tok(5, 6), _tok(4, 6), y_lengths=T.full((4,), -1)),
               ValueError, r"'y_lengths'|'y'")
        raises(_api, "pad-id-not-int", lambda f=_f: f(_tok(5, 6), _tok(4, 6), pad_id=0.5), TypeError, r"'pad_id'")
        raises(_api, "normalized-not-bool", lambda f=_f: f(_tok(5, 6), _tok(4, 6), normalized="yes"), TypeError,
               r"'normalized'")
        raises(_api, "misspelled-keyword", lambda f=_f: f(_tok(5, 6), _tok(4, 6), weigths=(1, 1, 1)), TypeError,
               r"'weigths'")
        raises(_api, "weights-wrong-type", lambda f=_f: f(_tok(5, 6), _tok(4, 6), weights=(1.5, 1, 1)), TypeError,
               r"'weights'")
        raises(_api, "weights-negative", lambda f=_f: f(_tok(5, 6), _tok(4, 6), weights=(1, -1, 1)), ValueError,
               r"'weights'")
        raises(_api, "batch-mismatch", lambda f=_f: f(T.randint(0, 4, (2, 5, 6)), T.randint(0, 4, (3, 4, 6))),
               ValueError, r"batch dim.*'X'.*'Y'")
        _box = {}

        def _lengths_call(f=_f, box=_box):
            X, Y, lx, ly = _tok(5, 6), _tok(4, 7), T.randint(0, 7, (5,)), T.randint(0, 8, (4,))
            box["in"] = (X, Y, lx, ly)
            return f(X, Y, x_lengths=lx, y_lengths=ly)

        gives(_api, "lengths (valid; tokens past a length are ignored)", _lengths_call,
              lambda box=_box: _lev(*box["in"]), compare="exact")

for _api, _f in (("tp.seq.pdist", lambda X, **k: tp.seq.pdist(X, "levenshtein", **k)),
                 ("tp.pdist (sequence metric)", lambda X, **k: tp.pdist(X, "levenshtein", **k)),
                 ("torchpair::_seq_pdist", lambda X, **k: _ops._seq_pdist(X[None], T.full((1, X.shape[0]), X.shape[-1]),
                                                                          "levenshtein", [1.0, 1.0, 1.0], False)[0])):
    _api = _api.split(" ")[0]
    for _kind, _make in (("non-contiguous", lambda: track(T.randint(0, 4, (6, 5)).t())),
                         ("empty", lambda: _tok(0, 6)), ("zero-length", lambda: _tok(5, 0))):
        _box = {}

        def call(f=_f, make=_make, box=_box):
            box["in"] = make()
            return f(box["in"])

        gives(_api, _kind, call, lambda box=_box: condensed(_lev(box["in"], box["in"])), compare="exact")
    raises(_api, "x-float", lambda f=_f: f(T.rand(5, 6)), TypeError, r"'[xX]'")
    raises(_api, "x-rank-1", lambda f=_f: f(_tok(5, 6)[0]), ValueError, r"'[xX]'")
    if not _api.startswith("torchpair"):
        raises(_api, "lengths-shape", lambda f=_f: f(_tok(5, 6), lengths=T.ones(3, dtype=torch.int64)), ValueError,
               r"'lengths'")
        raises(_api, "y-lengths-not-taken", lambda f=_f: f(_tok(5, 6), y_lengths=T.ones(5, dtype=torch.int64)),
               TypeError, r"'y_lengths'")

raises("tp.seq.pairwise", "unknown-metric", lambda: tp.seq.pairwise(_tok(5, 6), _tok(4, 6), "levenstein"), ValueError,
       r"unknown sequence metric 'levenstein'.*'metric'")
raises("tp.seq.pairwise", "metric-not-str", lambda: tp.seq.pairwise(_tok(5, 6), _tok(4, 6), 1), TypeError, r"'metric'")
raises("tp.seq.pairwise", "param-not-taken", lambda: tp.seq.pairwise(_tok(5, 6), _tok(4, 6), "osa", pad=True),
       TypeError, r"'pad'")
raises("tp.seq.pairwise", "prefix-weight-range", lambda: tp.seq.pairwise(_tok(5, 6), _tok(4, 6), "jaro_winkler",
                                                                         prefix_weight=1.5), ValueError, r"'prefix_weight'")
raises("tp.seq.pairwise", "prefix-weight-nan", lambda: tp.seq.pairwise(_tok(5, 6), _tok(4, 6), "jaro_winkler",
                                                                       prefix_weight=math.nan), ValueError,
       r"'prefix_weight'")
raises("tp.seq.pairwise", "hamming-unequal-lengths", lambda: tp.seq.pairwise(_tok(5, 6), _tok(4, 7), "hamming"),
       ValueError, r"pad=True")
# the function the user called, never the operator inside (torchpair._seq_pdist) or its
# argument names ('x_lengths' of 'x')
raises("tp.seq.pdist", "lengths-too-long", lambda: tp.seq.pdist(_tok(3, 6), lengths=T.tensor([2, 7, 1])), ValueError,
       r"^torchpair\.seq\.pdist: 'lengths' has a length 7 longer than the sequences of 'X' \(6 tokens\)")
raises("tp.seq.pdist", "lengths-negative", lambda: tp.seq.pdist(_tok(3, 6), lengths=T.tensor([2, -1, 1])), ValueError,
       r"^torchpair\.seq\.pdist: 'lengths' must be non-negative")
raises("tp.seq.pdist", "hamming-unequal-lengths", lambda: tp.seq.pdist(_tok(3, 6), "hamming",
                                                                       lengths=T.tensor([2, 3, 3])),
       ValueError, r"^torchpair\.seq\.pdist: metric 'hamming' needs sequences of equal length")
raises("tp.seq.cdist", "y-lengths-too-long", lambda: tp.seq.cdist(_tok(3, 6), _tok(2, 4), y_lengths=T.tensor([5, 1])),
       ValueError, r"^torchpair\.seq\.cdist: 'y_lengths' has a length 5 longer than the sequences of 'Y'")
raises("tp.pairwise", "sequence-lengths-too-long", lambda: tp.pairwise(_tok(3, 6), None, "osa",
                                                                       x_lengths=T.tensor([9, 1, 1])),
       ValueError, r"^torchpair\.pairwise: 'x_lengths' has a length 9")
raises("tp.cdist", "param-not-for-metric-named-cdist", lambda: tp.cdist(x, x, "euclidean", p=1.0), TypeError,
       r"^torchpair\.cdist: metric 'euclidean' does not take parameter 'p'")
raises("tp.wasserstein", "feature-mismatch-named-wasserstein", lambda: tp.wasserstein(x, T.randn(4, 2)), ValueError,
       r"^torchpair\.wasserstein: 'x' has 3 features but 'y' has 2")
raises("tp.emd2", "M-int-named-emd2", lambda: tp.emd2(None, None, T.ones(3, 2, dtype=torch.int64)), TypeError,
       r"^torchpair\.emd2: 'M' must be a floating")
raises("tp.lazy", "param-named-lazy", lambda: tp.lazy(x, y, "cosine", gamma=1.0), TypeError,
       r"^torchpair\.lazy: metric 'cosine' does not take parameter 'gamma'")
raises("tp.seq.pairwise", "y-lengths-without-y", lambda: tp.seq.pairwise(_tok(5, 6), None,
                                                                         y_lengths=T.ones(5, dtype=torch.int64)),
       ValueError, r"'y_lengths'")
raises("tp.seq.pairwise", "x-requires-grad-float", lambda: tp.seq.pairwise(T.rand(5, 6, requires_grad=True), _tok(4, 6)),
       TypeError, r"'X'")
gives("tp.seq.pairwise", "int64-max-tokens (any integer value)", lambda: tp.seq.pairwise(
    T.tensor([[2 ** 62, 1, -5]]), T.tensor([[2 ** 62, -5, 7]]), pad_id=-(2 ** 63)), lambda: torch.tensor([[2]]),
    compare="exact")

for _api, _mk in (("LazySequences", lambda: tp.seq.lazy(_tok(5, 6), _tok(4, 6))),):
    raises(f"{_api}.topk", "k-negative", lambda mk=_mk: mk().topk(-1), ValueError, r"'k'")
    raises(f"{_api}.topk", "k-too-large", lambda mk=_mk: mk().topk(5), ValueError, r"'k'")
    raises(f"{_api}.topk", "k-huge", lambda mk=_mk: mk().topk(2 ** 62), ValueError, r"'k'")
    raises(f"{_api}.topk", "k-float", lambda mk=_mk: mk().topk(1.5), TypeError, r"'k'")
    raises(f"{_api}.topk", "largest-not-bool", lambda mk=_mk: mk().topk(1, largest=None), TypeError, r"'largest'")
    raises(f"{_api}.topk", "sorted-not-bool", lambda mk=_mk: mk().topk(1, sorted="no"), TypeError, r"'sorted'")
    raises(f"{_api}.topk", "dim-batch", lambda mk=_mk: mk().topk(1, dim=0 - 3), ValueError, r"'dim'")
    raises(f"{_api}.min", "dim-str", lambda mk=_mk: mk().min("a"), TypeError, r"'dim'")
    raises(f"{_api}.max", "dim-out-of-range", lambda mk=_mk: mk().max(2), ValueError, r"'dim'")
    raises(f"{_api}.argmin", "dim-float", lambda mk=_mk: mk().argmin(1.0), TypeError, r"'dim'")
    raises(f"{_api}.argmax", "dim-out-of-range", lambda mk=_mk: mk().argmax(-3), ValueError, r"'dim'")
    raises(f"{_api}.size", "dim-out-of-range", lambda mk=_mk: mk().size(2), ValueError, r"'dim'")
    raises(f"{_api}.size", "dim-str", lambda mk=_mk: mk().size("a"), TypeError, r"'dim'")
    raises(f"{_api}.to_dense", "unexpected-argument", lambda mk=_mk: mk().to_dense(1), TypeError, r"to_dense\(\)")
    raises(f"{_api}.count", "not-streamed", lambda mk=_mk: mk().count(1.0), NotImplementedError, r"count")
    for _kind, _call, _cmp, _k in (("topk", lambda e: e.topk(2, largest=False), "select:-1:0:2", None),
                                   ("min", lambda e: e.min(-2), "select:-2:0:-", None),
                                   ("max", lambda e: e.max(-1), "select:-1:1:-", None),
                                   ("argmin", lambda e: e.argmin(-1), "argselect", (-1, False)),
                                   ("argmax", lambda e: e.argmax(-2), "argselect", (-2, True))):
        _box = {}

        def call(c=_call, box=_box):
            X, Y = track(T.randint(0, 4, (6, 5)).t()), track(T.randint(0, 4, (1, 6)).expand(4, 6))
            box["in"] = (X, Y)
            return c(tp.seq.lazy(X, Y))

        def expected(box=_box, k=_k):
            D = _lev(*box["in"]).double()
            return D if k is None else (D, *k)

        gives(f"{_api}.{_kind}", "non-contiguous and expanded tokens", call, expected, compare=_cmp)
    gives(f"{_api}.topk", "k-zero", lambda mk=_mk: mk().topk(0).values, lambda: torch.empty(5, 0, dtype=torch.int64),
          compare="exact")
    gives(f"{_api}.size", "dim-none-and-int", lambda mk=_mk: (mk().size(), mk().size(-2)),
          lambda: (torch.Size([5, 4]), 5), compare="exact")
    # the consumers of the base class that sequence expressions do not stream: a clear error
    for _name, _call in (("sum", lambda e: e.sum()), ("mean", lambda e: e.mean(-1)),
                         ("logsumexp", lambda e: e.logsumexp(-2)), ("matmul", lambda e: e.matmul(T.ones(4))),
                         ("__matmul__", lambda e: e @ T.ones(4, 2)),
                         ("softmax_matmul", lambda e: e.softmax_matmul(T.ones(4, 2)))):
        raises(f"{_api}.{_name}", "not-streamed", lambda mk=_mk, c=_call: c(mk()), NotImplementedError,
               r"torchpair\.seq\.lazy\.(sum|mean|logsumexp|matmul|softmax_matmul): LazySequences does not")
    gives(f"{_api}.dim", "no-arguments", lambda mk=_mk: mk().dim(), lambda: 2, compare="exact")
    gives(f"{_api}.mT", "transposed-shape", lambda mk=_mk: mk().mT().shape, lambda: torch.Size([4, 5]), compare="exact")
raises("torchpair::_seq_topk", "k-too-large", lambda: _ops._seq_topk(_tok(1, 6)[None], T.full((1, 1), 6), _tok(2, 6)[None],
                                                                    T.full((1, 2), 6), "osa", [], False, 3, False),
       ValueError, r"'k'")
raises("torchpair::_seq_topk", "lengths-negative", lambda: _ops._seq_topk(_tok(1, 6)[None], T.full((1, 1), -1),
                                                                         _tok(2, 6)[None], T.full((1, 2), 6), "osa",
                                                                         [], False, 1, False), ValueError, r"'x_lengths'")
_sb = {}


def _seq_topk_nc(box=_sb):
    X, Y = track(T.randint(0, 4, (6, 5)).t()), track(T.randint(0, 4, (4, 12))[:, ::2])
    box["in"] = (X, Y)
    v, i = _ops._seq_topk(X[None], T.full((1, 5), 6), Y[None], T.full((1, 4), 6), "levenshtein", [1.0, 1.0, 1.0], False,
                          2, False)
    return v[0], i[0]


gives("torchpair::_seq_topk", "non-contiguous tokens", _seq_topk_nc, lambda box=_sb: _lev(*box["in"]).double(),
      compare="select:-1:0:2")
raises("torchpair::_seq_dense", "unknown-metric", lambda: _ops._seq_dense(_tok(1, 6)[None], T.full((1, 1), 6),
                                                                         _tok(2, 6)[None], T.full((1, 2), 6), "nope",
                                                                         [], False), ValueError, r"'metric'|'nope'")
raises("torchpair::_seq_dense", "lengths-too-long", lambda: _ops._seq_dense(_tok(1, 6)[None], T.full((1, 1), 7),
                                                                           _tok(2, 6)[None], T.full((1, 2), 6),
                                                                           "osa", [], False), ValueError, r"'x_lengths'")
raises("torchpair::_seq_dense", "lengths-float", lambda: _ops._seq_dense(_tok(1, 6)[None], T.full((1, 1), 6.0),
                                                                        _tok(2, 6)[None], T.full((1, 2), 6), "osa",
                                                                        [], False), TypeError, r"'x_lengths'")
raises("torchpair::_seq_dense", "scalars-count", lambda: _ops._seq_dense(_tok(1, 6)[None], T.full((1, 1), 6),
                                                                        _tok(2, 6)[None], T.full((1, 2), 6),
                                                                        "levenshtein", [1.0], False), ValueError,
       r"'scalars'")
raises("torchpair::_seq_pdist", "lengths-shape", lambda: _ops._seq_pdist(_tok(3, 6)[None], T.full((1, 2), 6), "osa", [],
                                                                        False), ValueError, r"'x_lengths'")

# encode / routes
gives("tp.encode", "empty lists (valid: empty tokens)", lambda: tp.encode([])[0].shape, lambda: torch.Size([0, 0]),
      compare="exact")
raises("tp.encode", "a-is-a-string", lambda: tp.encode("abc"), TypeError, r"'a'")
raises("tp.encode", "b-not-iterable", lambda: tp.encode(["ab"], 3), TypeError, r"'b'")
raises("tp.encode", "unhashable-item", lambda: tp.encode([[["x"]]]), TypeError, r"a\[0\]")
raises("tp.encode", "pad-id-float", lambda: tp.encode(["ab"], pad_id=0.5), TypeError, r"'pad_id'")
raises("tp.seq.encode", "item-not-sequence", lambda: tp.seq.encode([1, 2]), TypeError, r"a\[0\]")
gives("tp.seq.routes", "metric-not-str (not a sequence call)", lambda: tp.seq.routes("pairwise", 3, _x(), {}),
      lambda: False, compare="exact")
gives("tp.seq.routes", "float X with hamming (numeric)", lambda: tp.seq.routes("pairwise", "hamming", _x(),
                                                                              {"pad": True}), lambda: False,
      compare="exact")

# ---------------------------------------------------------------------------------------
# exact optimal transport: POT is the oracle
# ---------------------------------------------------------------------------------------
def _ab_M(n=4, m=3, dtype=torch.float64):
    a = T.full((n,), 1.0 / n, dtype=dtype)
    b = T.full((m,), 1.0 / m, dtype=dtype)
    M = T.rand(n, m, dtype=dtype)
    return a, b, M


def _pot(a, b, M):
    import ot

    return torch.tensor(ot.emd2(a.double().contiguous().numpy(), b.double().contiguous().numpy(),
                                M.double().contiguous().numpy()))


for _api, _f, _out in (("tp.emd", lambda a, b, M, **k: tp.emd(a, b, M, **k), "plan"),
                       ("tp.emd2", lambda a, b, M, **k: tp.emd2(a, b, M, **k), "cost"),
                       ("torchpair::emd", lambda a, b, M, **k: _ops.emd(a, b, M, **k), "tuple"),
                       ("torchpair::_emd", lambda a, b, M, **k: tuple(t[0] for t in _ops._emd(
                           (a if a is not None else torch.full((M.shape[-2],), 1.0 / M.shape[-2], dtype=M.dtype))[None],
                           (b if b is not None else torch.full((M.shape[-1],), 1.0 / M.shape[-1], dtype=M.dtype))[None],
                           M[None], -1, 1e-4)), "tuple")):
    def _cost(out, M, kind=_out):
        if kind == "plan":
            return (out * M).sum((-2, -1))
        if kind == "cost":
            return out
        return out[1]

    for _kind, _make in (
        ("non-contiguous-M", lambda: (*_ab_M()[:2], track(T.rand(3, 4, dtype=torch.float64).t()))),
        ("expanded-M", lambda: (*_ab_M()[:2], track(T.rand(1, 3, dtype=torch.float64).expand(4, 3)))),
        ("non-contiguous-a", lambda: (track(T.full((8,), 0.25, dtype=torch.float64)[::2]), *_ab_M()[1:])),
        ("float32", lambda: _ab_M(dtype=torch.float32)),
        ("uniform-weights (None)", lambda: (None, None, T.rand(4, 3, dtype=torch.float64))),
    ):
        _box = {}

        def call(f=_f, make=_make, box=_box, cost=_cost):
            box["in"] = make()
            return cost(f(*box["in"]), box["in"][2])

        def expected(box=_box):
            a, b, M = box["in"]
            a = torch.full((M.shape[-2],), 1.0 / M.shape[-2], dtype=torch.float64) if a is None else a
            b = torch.full((M.shape[-1],), 1.0 / M.shape[-1], dtype=torch.float64) if b is None else b
            return _pot(a, b, M)

        gives(_api, _kind, call, expected, tol=(1e-5, 1e-6))
    for _kind, _make, _exc, _match in (
        ("M-rank-1", lambda: (*_ab_M()[:2], T.rand(4, dtype=torch.float64)), ValueError, r"'M'"),
        ("M-shape", lambda: (*_ab_M()[:2], T.rand(4, 5, dtype=torch.float64)), ValueError, r"'M'|'b'"),
        ("a-negative", lambda: (T.tensor([0.5, 0.5, 0.5, -0.5], dtype=torch.float64), *_ab_M()[1:]), ValueError, r"'a'"),
        ("M-nan", lambda: (*_ab_M()[:2], T.tensor([[math.nan, 1, 1]] * 4, dtype=torch.float64)), ValueError, r"'M'"),
        ("M-negative", lambda: (*_ab_M()[:2], -T.ones(4, 3, dtype=torch.float64)), ValueError, r"'M'"),
        ("M-int", lambda: (*_ab_M()[:2], T.ones(4, 3, dtype=torch.int64)), TypeError, r"'M'"),
        ("M-complex", lambda: (*_ab_M()[:2], T.ones(4, 3, dtype=torch.complex128)), TypeError, r"'M'"),
        ("a-bool", lambda: (T.ones(4, dtype=torch.bool), *_ab_M()[1:]), TypeError, r"'a'"),
        ("M-meta", lambda: (*_ab_M()[:2], T.ones(4, 3, dtype=torch.float64, device="meta")), ValueError, r"'M'|'a'"),
        ("mass-mismatch", lambda: (T.ones(4, dtype=torch.float64), *_ab_M()[1:]), ValueError, r"'a' and 'b'"),
        ("b-inf", lambda: (_ab_M()[0], T.tensor([math.inf, 0, 0], dtype=torch.float64), _ab_M()[2]), ValueError, r"'b'"),
    ):
        if _api == "torchpair::_emd" and _kind in ("M-shape", "M-rank-1"):
            _match = r"'M'|'b'|'a'"
        raises(_api, _kind, lambda f=_f, make=_make: f(*make()), _exc, _match)
    if _api == "torchpair::emd":  # torch's schema parser: RuntimeError naming the argument
        raises(_api, "M-not-tensor", lambda f=_f: f(None, None, [[1.0]]), RuntimeError, r"argument 'M'")
        raises(_api, "max-iter-float", lambda f=_f: f(*_ab_M(), max_iter=10.5), RuntimeError, r"argument 'max_iter'")
        raises(_api, "max-iter-negative", lambda f=_f: f(*_ab_M(), max_iter=-1), ValueError, r"'max_iter'")
        raises(_api, "mass-tol-negative", lambda f=_f: f(*_ab_M(), mass_tol=-1.0), ValueError, r"'mass_tol'")
        raises(_api, "mass-tol-nan", lambda f=_f: f(*_ab_M(), mass_tol=math.nan), ValueError, r"'mass_tol'")
    if _api.startswith("tp."):
        raises(_api, "M-not-tensor", lambda f=_f: f(None, None, [[1.0]]), TypeError, r"'M'")
        raises(_api, "max-iter-float", lambda f=_f: f(*_ab_M(), max_iter=10.5), TypeError, r"'max_iter'")
        raises(_api, "max-iter-negative", lambda f=_f: f(*_ab_M(), max_iter=-1), ValueError, r"'max_iter'")
        raises(_api, "normalize-not-bool", lambda f=_f: f(*_ab_M(), normalize=1), TypeError, r"'normalize'")
        raises(_api, "mass-tol-negative", lambda f=_f: f(*_ab_M(), mass_tol=-1.0), ValueError, r"'mass_tol'")
        raises(_api, "mass-tol-nan", lambda f=_f: f(*_ab_M(), mass_tol=math.nan), ValueError, r"'mass_tol'")
raises("tp.emd", "misspelled-keyword", lambda: tp.emd(*_ab_M(), maxiter=3), TypeError, r"'maxiter'")
raises("tp.emd2", "log-not-bool", lambda: tp.emd2(*_ab_M(), log="yes"), TypeError, r"'log'")
raises("torchpair::_emd_backward", "grad-shape", lambda: _emd_bw(T.randn(3)), ValueError, r"'grad'")
raises("torchpair::_emd_backward", "grad-int", lambda: _emd_bw(T.ones(1, dtype=torch.int64)), TypeError, r"'grad'")


def _emd_bw(grad):
    a, b, M = _ab_M()
    plan, _, u, v, _ = _ops._emd(a[None], b[None], M[None], -1, 1e-7)
    return _ops._emd_backward(grad, plan, u, v, [True, True, True])


_eb = {}


def _emd_bw_valid(box=_eb):
    a, b, M = _ab_M()
    plan, _, u, v, _ = _ops._emd(a[None], b[None], M[None], -1, 1e-7)
    box["plan"] = plan
    return _ops._emd_backward(track(T.tensor([2.0], dtype=torch.float64).expand(1)), plan, u, v,
                              [False, False, True])[2]


gives("torchpair::_emd_backward", "gradient w.r.t. M is grad x plan", _emd_bw_valid, lambda box=_eb: 2.0 * box["plan"])
raises("tp.wasserstein", "p-below-1", lambda: tp.wasserstein(_x(), _y(), p=0.5), ValueError, r"'p'")
raises("tp.wasserstein", "p-not-number", lambda: tp.wasserstein(_x(), _y(), p="2"), TypeError, r"'p'")
raises("tp.wasserstein", "kernel-metric", lambda: tp.wasserstein(_x(), _y(), metric="rbf"), ValueError, r"'metric'")
raises("tp.wasserstein", "a-wrong-length", lambda: tp.wasserstein(_x(), _y(), a=T.full((4,), 0.25)), ValueError,
       r"'a'|'M'")


# ---------------------------------------------------------------------------------------
# entropic transport: POT (dense costs) and GeomLoss (the divergence) are the oracles
# ---------------------------------------------------------------------------------------
def _pot_entropic(a, b, M, reg, reg_m=None):
    import ot

    a, b, M = (t.double().contiguous().numpy() for t in (a, b, M))
    if reg_m is None:
        return torch.tensor(ot.sinkhorn2(a, b, M, reg, stopThr=1e-12, numItermax=100000))
    return torch.tensor(float(ot.unbalanced.sinkhorn_unbalanced2(a, b, M, reg, reg_m, stopThr=1e-12,
                                                                  numItermax=100000)))


_SK = dict(stopThr=1e-12, numItermax=100000)
for _api, _f, _unb in (
        ("tp.sinkhorn", lambda a, b, M, reg, **k: (tp.sinkhorn(a, b, M, reg, **_SK, **k) * M).sum((-2, -1)), False),
        ("tp.sinkhorn2", lambda a, b, M, reg, **k: tp.sinkhorn2(a, b, M, reg, **_SK, **k), False),
        ("tp.sinkhorn_unbalanced", lambda a, b, M, reg, **k: (tp.sinkhorn_unbalanced(a, b, M, reg, 0.7, **_SK, **k)
                                                              * M).sum((-2, -1)), True),
        ("tp.sinkhorn_unbalanced2", lambda a, b, M, reg, **k: tp.sinkhorn_unbalanced2(a, b, M, reg, 0.7, **_SK, **k),
         True)):
    for _kind, _make in (
        ("non-contiguous-M", lambda: (*_ab_M()[:2], track(T.rand(3, 4, dtype=torch.float64).t()))),
        ("expanded-M", lambda: (*_ab_M()[:2], track(T.rand(1, 3, dtype=torch.float64).expand(4, 3)))),
        ("non-contiguous-a", lambda: (track(T.full((8,), 0.25, dtype=torch.float64)[::2]), *_ab_M()[1:])),
        ("float32", lambda: _ab_M(dtype=torch.float32)),
        ("integer weights", lambda: (T.tensor([1, 1, 1, 1]), T.tensor([1, 2, 1]) * 4 // 3, _ab_M()[2])),
        ("uniform-weights (None)", lambda: (None, None, T.rand(4, 3, dtype=torch.float64))),
        ("zero weight", lambda: (T.tensor([0.5, 0.0, 0.25, 0.25], dtype=torch.float64), *_ab_M()[1:]))):
        _box = {}

        def call(f=_f, make=_make, box=_box):
            box["in"] = make()
            return f(*box["in"], 0.5)

        def expected(box=_box, unb=_unb):
            a, b, M = box["in"]
            a = torch.full((M.shape[-2],), 1.0 / M.shape[-2], dtype=torch.float64) if a is None else a
            b = torch.full((M.shape[-1],), 1.0 / M.shape[-1], dtype=torch.float64) if b is None else b
            keep = a > 0  # zero-weight rows carry no mass (POT's unbalanced solver divides 0 by 0 there)
            return _pot_entropic(a[keep], b, M[keep], 0.5, 0.7 if unb else None)

        if _kind == "integer weights" and not _unb:
            continue  # masses 4 and 4 // 3 * ... differ: the balanced rows below cover the mass check
        gives(_api, _kind, call, expected, tol=(1e-5, 1e-6))
    _bad = [
        ("M-rank-1", lambda: (*_ab_M()[:2], T.rand(4, dtype=torch.float64), 0.5), ValueError, r"'M'"),
        ("M-shape", lambda: (*_ab_M()[:2], T.rand(4, 5, dtype=torch.float64), 0.5), ValueError, r"'b'"),
        ("a-negative", lambda: (T.tensor([0.5, 0.5, 0.5, -0.5], dtype=torch.float64), *_ab_M()[1:], 0.5),
         ValueError, r"'a'"),
        ("b-inf", lambda: (_ab_M()[0], T.tensor([math.inf, 0, 0], dtype=torch.float64), _ab_M()[2], 0.5),
         ValueError, r"'b'"),
        ("M-nan", lambda: (*_ab_M()[:2], T.tensor([[math.nan, 1, 1]] * 4, dtype=torch.float64), 0.5), ValueError,
         r"'M'"),
        ("M-inf", lambda: (*_ab_M()[:2], T.tensor([[math.inf, 1, 1]] * 4, dtype=torch.float64), 0.5), ValueError,
         r"'M'"),
        ("M-complex", lambda: (*_ab_M()[:2], T.ones(4, 3, dtype=torch.complex128), 0.5), TypeError, r"'M'"),
        ("M-not-tensor", lambda: (None, None, "M", 0.5), TypeError, r"'M'"),
        ("a-bool", lambda: (T.ones(4, dtype=torch.bool), *_ab_M()[1:], 0.5), TypeError, r"'a'"),
        ("reg-zero", lambda: (*_ab_M(), 0.0), ValueError, r"'reg'"),
        ("reg-negative", lambda: (*_ab_M(), -1.0), ValueError, r"'reg'"),
        ("reg-nan", lambda: (*_ab_M(), math.nan), ValueError, r"'reg'"),
        ("reg-not-number", lambda: (*_ab_M(), "0.1"), TypeError, r"'reg'"),
        ("batch-mismatch", lambda: (T.full((2, 4), 0.25, dtype=torch.float64), T.full((3, 3), 1 / 3,
                                    dtype=torch.float64), _ab_M()[2], 0.5), ValueError, r"batch"),
    ]
    if not _unb:
        _bad += [
            ("mass-mismatch", lambda: (T.ones(4, dtype=torch.float64), *_ab_M()[1:], 0.5), ValueError,
             r"'a' and 'b'.*sum\(a\) = 4 and sum\(b\) = 1"),
            ("empty-n-uniform", lambda: (None, None, T.rand(0, 3, dtype=torch.float64), 0.5), ValueError,
             r"'a' and 'b'"),
        ]
    for _kind, _make, _exc, _match in _bad:
        raises(_api, _kind, lambda f=_f, make=_make: f(*make()), _exc, _match)
    _direct = {"tp.sinkhorn": tp.sinkhorn, "tp.sinkhorn2": tp.sinkhorn2,
               "tp.sinkhorn_unbalanced": lambda *a, **k: tp.sinkhorn_unbalanced(*a, 0.7, **k),
               "tp.sinkhorn_unbalanced2": lambda *a, **k: tp.sinkhorn_unbalanced2(*a, 0.7, **k)}[_api]
    raises(_api, "numItermax-float", lambda g=_direct: g(*_ab_M(), 0.5, numItermax=1.5), TypeError, r"'numItermax'")
    raises(_api, "stopThr-negative", lambda g=_direct: g(*_ab_M(), 0.5, stopThr=-1.0), ValueError, r"'stopThr'")
    raises(_api, "misspelled-keyword", lambda g=_direct: g(*_ab_M(), 0.5, numIterMax=10), TypeError, r"'numIterMax'")
    if not _unb:
        gives(_api, "empty both sides: cost 0", lambda f=_f: f(None, None, T.rand(0, 0, dtype=torch.float64), 0.5),
              lambda: torch.tensor(0.0, dtype=torch.float64))
        raises(_api, "method-unknown", lambda: tp.sinkhorn(*_ab_M(), 0.5, method="greenkhorn"), ValueError, r"'method'")
    else:
        raises(_api, "reg_m-zero", lambda: tp.sinkhorn_unbalanced2(*_ab_M(), 0.5, 0.0), ValueError, r"'reg_m'")
        raises(_api, "reg_type-unknown", lambda: tp.sinkhorn_unbalanced(*_ab_M(), 0.5, 1.0, reg_type="tv"), ValueError,
               r"'reg_type'")


def _clouds(n=6, m=5, dtype=torch.float64):
    return T.randn(n, 3, dtype=dtype), T.randn(m, 3, dtype=dtype) + 0.3


def _geomloss(X, Y, a=None, b=None, **kw):
    import geomloss

    loss = geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw)
    X, Y = X.double().contiguous(), Y.double().contiguous()
    return loss(X, Y) if a is None else loss(a.double().contiguous(), X, b.double().contiguous(), Y)


for _api, _f in (("tp.sinkhorn_divergence", lambda X, Y, a=None, b=None, **k: tp.sinkhorn_divergence(X, Y, a, b, **k)),
                 ("torchpair::sinkhorn_divergence",
                  lambda X, Y, a=None, b=None, **k: _ops.sinkhorn_divergence(X, Y, a, b, **k)[0])):
    for _kind, _make, _kw in (
        ("non-contiguous-X", lambda: (track(T.randn(3, 6, dtype=torch.float64).t()), _clouds()[1]), {}),
        ("expanded-Y", lambda: (_clouds()[0], track(T.randn(1, 3, dtype=torch.float64).expand(5, 3))), {}),
        ("float32", lambda: _clouds(dtype=torch.float32), {}),
        ("weights", lambda: (*_clouds(), track(T.full((6,), 1 / 6, dtype=torch.float64)),
                             T.tensor([0.1, 0.2, 0.3, 0.2, 0.2], dtype=torch.float64)), {}),
        ("zero weight", lambda: (*_clouds(), T.tensor([0.5, 0, 0.1, 0.1, 0.1, 0.2], dtype=torch.float64),
                                 T.full((5,), 0.2, dtype=torch.float64)), {}),
        ("unbalanced masses", lambda: (*_clouds(), T.full((6,), 0.5, dtype=torch.float64),
                                       T.full((5,), 0.2, dtype=torch.float64)), {"reach": 1.0})):
        _box = {}

        def call(f=_f, make=_make, box=_box, kw=_kw):
            box["in"] = make()
            return f(*box["in"], blur=0.3, **kw)

        def expected(box=_box, kw=_kw):
            return _geomloss(*box["in"], blur=0.3, **kw)

        gives(_api, _kind, call, expected, tol=(1e-5, 1e-6))
    gives(_api, "NaN in X propagates", lambda f=_f: f(T.tensor([[math.nan, 0, 0], [1.0, 0, 0]]),
                                                        T.ones(2, 3), diameter=2.0),
          lambda: torch.tensor(math.nan))
    gives(_api, "empty both sides: 0", lambda f=_f: f(T.zeros(0, 3), T.zeros(0, 3)), lambda: torch.tensor(0.0))
    for _kind, _call, _exc, _match in (
        ("blur-zero", lambda f=_f: f(*_clouds(), blur=0.0), ValueError, r"'blur'"),
        ("blur-negative", lambda f=_f: f(*_clouds(), blur=-0.1), ValueError, r"'blur'"),
        ("scaling-one", lambda f=_f: f(*_clouds(), scaling=1.0), ValueError, r"'scaling'"),
        ("reach-zero", lambda f=_f: f(*_clouds(), reach=0.0), ValueError, r"'reach'"),
        ("diameter-negative", lambda f=_f: f(*_clouds(), diameter=-1.0), ValueError, r"'diameter'"),
        ("tol-zero", lambda f=_f: f(*_clouds(), tol=0.0), ValueError, r"'tol'"),
        ("a-negative", lambda f=_f: f(*_clouds(), T.tensor([0.5, 0.5, 0.5, -0.5, 0, 0], dtype=torch.float64),
                                      T.full((5,), 0.2, dtype=torch.float64)), ValueError, r"'a'"),
        ("b-nan", lambda f=_f: f(*_clouds(), T.full((6,), 1 / 6, dtype=torch.float64),
                                 T.tensor([math.nan, 0.2, 0.2, 0.2, 0.2], dtype=torch.float64)), ValueError, r"'b'"),
        ("a-wrong-length", lambda f=_f: f(*_clouds(), T.full((4,), 0.25, dtype=torch.float64)), ValueError, r"'a'"),
        ("mass-mismatch", lambda f=_f: f(*_clouds(), T.ones(6, dtype=torch.float64),
                                         T.full((5,), 0.2, dtype=torch.float64)), ValueError,
         r"'a' and 'b'.*sum\(a\) = 6.*sum\(b\) = 1"),
        ("empty-X-uniform", lambda f=_f: f(T.zeros(0, 3), T.ones(2, 3)), ValueError, r"'a' and 'b'"),
        ("unknown-metric", lambda f=_f: f(*_clouds(), metric="nonesuch"), ValueError, r"nonesuch"),
        ("X-int", lambda f=_f: f(T.ones(4, 3, dtype=torch.int64), T.ones(2, 3)), TypeError, r"'X'"),
    ):
        raises(_api, _kind, _call, _exc, _match)
    if _api.startswith("tp."):
        raises(_api, "p-3-without-metric", lambda: tp.sinkhorn_divergence(*_clouds(), p=3), ValueError, r"'p'|p = 3")
        raises(_api, "params-without-metric", lambda: tp.sinkhorn_divergence(*_clouds(), gamma=0.5), TypeError,
               r"metric")
        raises(_api, "misspelled-keyword", lambda: tp.sinkhorn_divergence(*_clouds(), blurr=0.1), TypeError,
               r"'blurr'")
        raises(_api, "unrolled-not-bool", lambda: tp.sinkhorn_divergence(*_clouds(), unrolled=1), TypeError,
               r"'unrolled'")
    else:
        raises(_api, "exponent-3-without-metric", lambda: _ops.sinkhorn_divergence(*_clouds(), exponent=3.0),
               ValueError, r"p = 3")


# ---------------------------------------------------------------------------------------
# tp.distributed: flags, k, the process group
# ---------------------------------------------------------------------------------------
def _grp(api, kind, call, exc=None, match=None, oracle=None, **kw):
    if exc is not None:
        raises(api, kind, call, exc, match, needs_group=True, **kw)
    else:
        gives(api, kind, call, oracle, needs_group=True, **kw)


_grp("tp.distributed.lazy", "x-sharded-not-bool", lambda: tpd.lazy(_x(), _y(), x_sharded="yes"), TypeError,
     r"'x_sharded'")
_grp("tp.distributed.lazy", "y-sharded-not-bool", lambda: tpd.lazy(_x(), _y(), y_sharded=1), TypeError, r"'y_sharded'")
_grp("tp.distributed.knn", "k-negative", lambda: tpd.knn(_x(), _y(), -1), ValueError, r"'k'")
_grp("tp.distributed.knn", "k-too-large", lambda: tpd.knn(_x(), _y(), 5), ValueError, r"'k'")
_grp("tp.distributed.knn", "k-huge", lambda: tpd.knn(_x(), _y(), 2 ** 62), ValueError, r"'k'")
_grp("tp.distributed.knn", "k-float", lambda: tpd.knn(_x(), _y(), 1.0), TypeError, r"'k'")
_grp("tp.distributed.mmd", "unbiased-not-bool", lambda: tpd.mmd(_x(), _y(), unbiased=0), TypeError, r"'unbiased'")
_grp("tp.distributed.mmd", "distance-metric", lambda: tpd.mmd(_x(), _y(), "euclidean"), ValueError, r"'metric'")
_grp("tp.distributed.energy_distance", "kernel-metric", lambda: tpd.energy_distance(_x(), _y(), "rbf"), ValueError,
     r"'metric'")
_grp("ShardedPairwise.topk", "largest-not-bool", lambda: tpd.lazy(_x(), _y()).topk(1, largest="no"), TypeError,
     r"'largest'")
_grp("ShardedPairwise.topk", "k-zero", lambda: tpd.lazy(_x(), _y()).topk(0).values, oracle=lambda: torch.empty(5, 0))
_grp("ShardedPairwise.sum", "dim-str", lambda: tpd.lazy(_x(), _y()).sum("a"), TypeError, r"'dim'")
_grp("ShardedPairwise.logsumexp", "dim-batch", lambda: tpd.lazy(_x(), _y()).logsumexp(2), ValueError, r"'dim'")
_grp("ShardedPairwise.mean", "dim-float", lambda: tpd.lazy(_x(), _y()).mean(0.5), TypeError, r"'dim'")
_grp("ShardedPairwise.matmul", "v-not-tensor", lambda: tpd.lazy(_x(), _y()).matmul([1.0]), TypeError, r"'V'")
_grp("ShardedPairwise.matmul", "v-wrong-rows", lambda: tpd.lazy(_x(), _y()).matmul(T.randn(5, 2)), ValueError, r"'V'|'v'")
_grp("ShardedPairwise.min", "dim-out-of-range", lambda: tpd.lazy(_x(), _y()).min(3), ValueError, r"'dim'")
_grp("ShardedPairwise.argmax", "dim-none", lambda: tpd.lazy(_x(), _y()).argmax(None), TypeError, r"'dim'")
_grp("ShardedPairwise.topk", "sorted-not-bool", lambda: tpd.lazy(_x(), _y()).topk(1, sorted="no"), TypeError,
     r"torchpair\.distributed\.topk: 'sorted'")
_grp("ShardedPairwise.softmax_matmul", "not-streamed", lambda: tpd.lazy(_x(), _y()).softmax_matmul(T.randn(4, 2)),
     NotImplementedError, r"torchpair\.distributed\.softmax_matmul: ShardedPairwise does not")
_grp("ShardedPairwise.count", "not-streamed", lambda: tpd.lazy(_x(), _y()).count(1.0), NotImplementedError,
     r"torchpair\.distributed\.count: ShardedPairwise does not")
_grp("ShardedPairwise.to_dense", "not-streamed", lambda: tpd.lazy(_x(), _y()).to_dense(), NotImplementedError,
     r"torchpair\.distributed\.to_dense")
_grp("ShardedPairwise.size", "dim-out-of-range", lambda: tpd.lazy(_x(), _y()).size(2), ValueError, r"'dim'")
_grp("ShardedPairwise.dim", "no-arguments", lambda: tpd.lazy(_x(), _y()).dim(), oracle=lambda: 2, compare="exact")
_grp("ShardedPairwise.mT", "transposed-shape", lambda: tpd.lazy(_x(), _y()).mT().shape,
     oracle=lambda: torch.Size([4, 5]), compare="exact")
_grp("tp.distributed.ShardedPairwise", "params-not-dict", lambda: ShardedPairwise(_x(), _y(), "rbf", None, False, True,
                                                                                  None), TypeError, r"'params'")
gives("tp.distributed.communication_stats", "no-arguments (a dict of counters)",
      lambda: sorted(tpd.communication_stats()), lambda: ["bytes_received", "collectives"], compare="exact")
raises("tp.distributed.communication_stats", "unexpected-argument", lambda: tpd.communication_stats(0), TypeError,
       r"communication_stats\(\) takes 0 positional")
gives("tp.distributed.reset_communication_stats", "no-arguments", lambda: tpd.reset_communication_stats(),
      lambda: None, compare="exact")
raises("tp.distributed.reset_communication_stats", "unexpected-argument", lambda: tpd.reset_communication_stats(1),
       TypeError, r"reset_communication_stats\(\) takes 0 positional")
for _api, _call in (("tp.distributed.lazy", lambda: tpd.lazy(_x(), _y())),
                    ("tp.distributed.knn", lambda: tpd.knn(_x(), _y(), 1)),
                    ("tp.distributed.mmd", lambda: tpd.mmd(_x(), _y())),
                    ("tp.distributed.energy_distance", lambda: tpd.energy_distance(_x(), _y()))):
    ROWS.append(Row(_api, "no-process-group", _call, raises=RuntimeError, match=r"not initialized",
                    dist_uninitialized=True))


# ---------------------------------------------------------------------------------------
# the rows of the earlier per-subsystem list (kept verbatim, now with the same checks)
# ---------------------------------------------------------------------------------------
for _id, _call, _exc, _match in CASES:
    ROWS.append(Row("(listed)", "listed", _call, raises=_exc, match=_match, id=f"listed-{_id}"))

for _r in ROWS:
    if not _r.id:
        _r.id = f"{_r.api}-{_r.kind}"
_seen: dict = {}
for _r in ROWS:
    n = _seen.get(_r.id, 0)
    _seen[_r.id] = n + 1
    if n:
        _r.id = f"{_r.id}-{n + 1}"

FIXTURES = {k: (v, _snap(v)) for k, v in list(globals().items()) if isinstance(v, torch.Tensor)}


# ---------------------------------------------------------------------------------------
# the public surface, enumerated
# ---------------------------------------------------------------------------------------
EXPRESSION_CLASSES = (tp.LazyPairwise, tp.DensePairwise, LazySequences, ShardedPairwise)


def public_apis() -> set[str]:
    names = set()
    for n in tp.__all__:
        obj = getattr(tp, n)
        if inspect.ismodule(obj):
            continue
        if callable(obj):
            names.add(f"tp.{n}")
    for n, obj in vars(tp.seq).items():
        if not n.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj)) and \
                obj.__module__ == tp.seq.__name__:
            names.add(f"tp.seq.{n}")
    for n in tpd.__all__:
        if callable(getattr(tpd, n)):
            names.add(f"tp.distributed.{n}")
    for cls in EXPRESSION_CLASSES:
        for n, obj in inspect.getmembers(cls):
            if inspect.isfunction(obj) and (not n.startswith("_") or n == "__matmul__"):
                names.add(f"{cls.__name__}.{n}")
    for op in torch._C._dispatch_get_all_op_names():
        if op.startswith("torchpair::"):
            names.add(op)
    return names


def test_every_public_api_has_rows():
    covered = {r.api for r in ROWS}
    missing = sorted(public_apis() - covered)
    assert not missing, f"public functions / operators without bad-input rows: {missing}"
    assert len(public_apis()) > 60  # the enumeration itself works (ops, methods, modules)


def test_catalogue_size():
    """The count is reported in docs/contracts.md; rows never shrink silently."""
    assert len(ROWS) >= 2500, len(ROWS)


# ---------------------------------------------------------------------------------------
# running a row
# ---------------------------------------------------------------------------------------
@pytest.fixture
def process_group(tmp_path):
    if dist.is_initialized():
        yield
        return
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


# Public functions whose errors must name exactly themselves (``torchpair.<name>: ...``), not
# an operator or another public function they call (docs/contracts.md, "Errors").
NAMED = {f"tp.{n}": n for n in ("pairwise", "cdist", "pdist", "knn", "hausdorff", "chamfer", "mmd",
                                 "energy_distance", "emd", "emd2", "wasserstein")}
NAMED.update({f"tp.seq.{n}": f"seq.{n}" for n in ("pairwise", "cdist", "pdist")})


def _check_names_the_function(row, message: str) -> None:
    if row.api.startswith("torchpair::") or row.api == "(listed)":  # operator calls name the operator
        return
    assert "torchpair._" not in message, f"{row.api}: the message names an internal operator: {message}"
    name = NAMED.get(row.api)
    if name is not None and message.startswith("torchpair."):
        assert message.startswith((f"torchpair.{name}: ", f"torchpair.{name}() ")), \
            f"{row.api}: the message names another function: {message}"


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_catalogue(row, request):
    if row.needs_group:
        if not (dist.is_available() and dist.is_gloo_available()):
            pytest.skip("torch.distributed with gloo is not available")
        request.getfixturevalue("process_group")
    if row.dist_uninitialized:
        assert not dist.is_initialized()
    _MADE.clear()
    if row.raises is not None:
        with pytest.raises(Exception) as info:
            row.call()
        assert type(info.value) is row.raises, f"expected {row.raises.__name__}, got {type(info.value).__name__}: " \
                                               f"{info.value}"
        assert info.match(row.match)
        _check_names_the_function(row, str(info.value))
    else:
        out = row.call()
        _compare(row, out, row.oracle())
        if row.kind == "float16":  # computed in float32, returned in the input dtype (contracts.md)
            values = out[0] if isinstance(out, tuple) else out
            assert values.dtype in (torch.float16, torch.int64), values.dtype  # indices: int64
    for i, (t, snap) in enumerate(list(_MADE)):
        _unchanged(t, snap, f"input tensor #{i} of the row")
    for name, (t, snap) in FIXTURES.items():
        _unchanged(t, snap, f"fixture {name!r}")


def test_nan_data_propagates_not_crashes():
    xn = x.clone()
    xn[0, 0] = float("nan")
    out = tp.pairwise(xn, y)
    assert torch.isnan(out[0]).all() and torch.isfinite(out[1:]).all()
    assert torch.isnan((tp.lazy(xn, y, "rbf") @ v)[0]).all()
