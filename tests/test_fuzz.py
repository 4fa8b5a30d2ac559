"""Property-based fuzzing (hypothesis) over shapes, dtypes, layouts, value scales, non-finite
values and parameters, against the independent oracles in cases.METRIC_CASES; plus a
subprocess smoke run that would catch a hard crash (a segfault cannot be caught in-process).

Bounded and derandomized (a fixed seed) in `make test`; `make fuzz` runs many more examples
(TORCHPAIR_FUZZ_EXAMPLES).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from hypothesis import assume, HealthCheck, given, settings
from hypothesis import strategies as st

import torchpair as tp
from cases import METRIC_CASES

EXAMPLES = int(os.environ.get("TORCHPAIR_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))

# One case per (metric, params) whose oracle is defined on real-valued data.
CASES = [c for c in METRIC_CASES if c.domain == "real" and c.differentiable and "[" not in c.id]


@st.composite
def problems(draw):
    case = draw(st.sampled_from(CASES))
    n, m = draw(st.integers(0, 9)), draw(st.integers(0, 9))
    # haversine compares (latitude, longitude) pairs: exactly 2 features
    d = 2 if case.metric == "haversine" else draw(st.integers(1, 24))
    batch = draw(st.sampled_from([(), (2,)]))
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    scale = 10.0 ** draw(st.integers(-3, 3))
    layout = draw(st.sampled_from(["contiguous", "transposed", "strided", "expanded"]))
    special = draw(st.sampled_from([None, None, None, float("nan"), float("inf"), -float("inf")]))
    seed = draw(st.integers(0, 2**31 - 1))
    return case, n, m, d, batch, dtype, scale, layout, special, seed


def _make(shape, dtype, scale, layout, g):
    base = torch.randn(*shape, dtype=torch.float64, generator=g) * scale
    if layout == "transposed":  # same values, feature stride != 1
        return base.transpose(-1, -2).contiguous().transpose(-1, -2).to(dtype)
    if layout == "strided":  # every other row of a larger tensor
        big = torch.zeros(*shape[:-2], shape[-2] * 2, shape[-1], dtype=dtype)
        big[..., ::2, :] = base.to(dtype)
        return big[..., ::2, :]
    if layout == "expanded" and len(shape) == 3:  # stride-0 batch
        return base[:1].to(dtype).expand(*shape)
    return base.to(dtype)


def _finite_rows(t):
    return torch.isfinite(t).all(-1)


@FUZZ
@given(problems())
def test_dense_and_lazy_against_oracle(problem):
    case, n, m, d, batch, dtype, scale, layout, special, seed = problem
    # scipy's mahalanobis needs more observations than features for its default VI (torchpair
    # takes the pseudo-inverse of the singular covariance instead): no oracle there
    assume(not (case.metric == "mahalanobis" and "VI" not in case.params and 0 < n + m <= d))
    g = torch.Generator().manual_seed(seed)
    x = _make((*batch, n, d), dtype, scale, layout, g)
    y = _make((*batch, m, d), dtype, scale, layout, g)
    if special is not None and n > 0:
        x = x.clone()
        x[..., 0, int(torch.randint(d, (1,), generator=g))] = special
    x_before, y_before = x.clone(), y.clone()

    out = tp.pairwise(x, y, case.metric, **case.params)
    assert out.shape == (*batch, n, m) and out.dtype == dtype
    assert torch.equal(x, x_before) or torch.isnan(x).any() and torch.equal(x.nan_to_num(), x_before.nan_to_num())
    assert torch.equal(y, y_before)

    nb = int(np.prod(batch)) if batch else 1
    xs, ys = x.reshape(nb, n, d), y.reshape(nb, m, d)

    def oracle(a, b):  # oracles reject non-finite and empty inputs: non-finite rows are not compared
        if n == 0 or m == 0:
            return torch.zeros(n, m, dtype=torch.float64)
        a, b = a.double().nan_to_num(0.0, 0.0, 0.0).numpy(), b.double().nan_to_num(0.0, 0.0, 0.0).numpy()
        return torch.from_numpy(np.asarray(case.oracle(a, b), dtype=np.float64).reshape(n, m))

    ref = torch.stack([oracle(a, b) for a, b in zip(xs, ys)]).reshape(*batch, n, m)
    ok = (_finite_rows(x)[..., :, None] & _finite_rows(y)[..., None, :])
    tol = 1e-9 if dtype == torch.float64 else 2e-4
    mag = ref[ok].abs().max().item() if ok.any() else 0.0
    err = (out.double() - ref).abs()[ok]
    assert (err <= tol * (ref.abs()[ok] + mag + 1e-30)).all(), (case.id, err.max().item(), mag)

    if m > 0 and n > 0:
        lazy = tp.lazy(x, y, case.metric, **case.params)
        k = int(torch.randint(1, m + 1, (1,), generator=g))
        vals, idx = lazy.topk(k, largest=False)
        rows_ok = _finite_rows(x)[..., :, None].expand(*batch, n, k) & _finite_rows(y).all(-1, keepdim=True)[..., None]
        picked = torch.gather(ref, -1, idx)
        ref_vals = ref.topk(k, dim=-1, largest=False).values
        assert ((vals.double() - ref_vals).abs() <= tol * (ref_vals.abs() + mag + 1e-30))[rows_ok].all()
        assert ((picked - ref_vals).abs() <= tol * (ref_vals.abs() + mag + 1e-30))[rows_ok].all()
        s = lazy.sum(-1).double()
        row_ok = _finite_rows(x) & _finite_rows(y).all(-1, keepdim=True)
        ref_s = ref.sum(-1)
        assert ((s - ref_s).abs() <= tol * (ref.abs().sum(-1) + mag * m + 1e-30))[row_ok].all()


@FUZZ
@given(st.sampled_from(["gamma"]), st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                                            st.integers(-5, 5), st.booleans(), st.text(max_size=3)))
def test_parameters_are_validated_not_trusted(name, value):
    x = torch.randn(3, 4)
    try:
        out = tp.pairwise(x, x, "rbf", **{name: value})
    except (ValueError, TypeError) as exc:
        assert name in str(exc)
        return
    # accepted: must have been a finite number >= 0, and the result is sklearn's
    assert isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value) and value >= 0
    from sklearn.metrics.pairwise import rbf_kernel

    ref = torch.from_numpy(rbf_kernel(x.double().numpy(), gamma=float(value)))
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-6)


_SMOKE = textwrap.dedent("""
    import numpy as np, torch, torchpair as tp
    rng = np.random.default_rng(0)
    metrics = tp.metrics()
    ok = errors = 0
    for it in range(300):
        n, m, d = (int(v) for v in rng.integers(0, 7, 3))
        dtype = [torch.float32, torch.float64, torch.float16, torch.int64, torch.bool][it % 5]
        x = torch.from_numpy(rng.standard_normal((n, d)) * 10.0 ** rng.integers(-5, 6)).to(dtype)
        y = torch.from_numpy(rng.standard_normal((m, d))).to(dtype)
        if it % 7 == 0 and x.numel() and x.is_floating_point():
            x.view(-1)[0] = float("nan")
        metric = metrics[it % len(metrics)]
        k = int(rng.integers(-1, m + 2))
        calls = [lambda: tp.pairwise(x, y, metric), lambda: tp.lazy(x, y, metric).sum(-1),
                 lambda: tp.lazy(x, y, metric).topk(k), lambda: tp.knn(x, y, k, metric),
                 lambda: tp.lazy(x, y, metric).softmax_matmul(torch.randn(m, 2, dtype=torch.float32)),
                 lambda: tp.mmd(x, y)]
        for call in calls:
            try:
                call()
                ok += 1
            except (ValueError, TypeError, RuntimeError, IndexError, NotImplementedError):
                errors += 1
    print(ok, errors)
""")


@pytest.mark.slow
def test_subprocess_smoke_run_never_crashes():
    r = subprocess.run([sys.executable, "-c", _SMOKE], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    ok, errors = map(int, r.stdout.split())
    assert ok + errors == 300 * 6 and ok > 0
