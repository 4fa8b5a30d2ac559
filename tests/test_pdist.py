"""tp.pdist: the condensed upper triangle in scipy's order, for every metric row, against
scipy.spatial.distance.pdist (or the upper triangle of the metric's independent oracle for
metrics scipy's pdist does not have); batched, empty, float32, gradients (both backward
strategies and the generic path), memory, compile/export."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from scipy.spatial import distance as ssd

import torchpair as tp
from cases import DIFFERENTIABLE_CASES, METRIC_CASES, METRIC_IDS, tolerances
from test_memory import PEAK_KB

SCIPY_NAMES = {"euclidean": "euclidean", "l2": "euclidean", "sqeuclidean": "sqeuclidean", "cityblock": "cityblock",
               "manhattan": "cityblock", "l1": "cityblock", "chebyshev": "chebyshev", "linf": "chebyshev",
               "minkowski": "minkowski", "seuclidean": "seuclidean", "mahalanobis": "mahalanobis",
               "cosine": "cosine", "correlation": "correlation", "braycurtis": "braycurtis", "canberra": "canberra",
               "jensenshannon": "jensenshannon"}


def pdist_oracle(case, x):
    xn = x.detach().double().numpy()
    if case.metric == "mahalanobis" and "VI" not in case.params:
        # scipy inverts the covariance and refuses N <= D; torchpair's pseudo-inverse is the
        # inverse wherever that exists
        return torch.from_numpy(ssd.pdist(xn, "mahalanobis", VI=np.linalg.pinv(np.atleast_2d(np.cov(xn.T)))))
    if case.metric in SCIPY_NAMES and "base" not in case.params:  # scipy's C pdist takes no base
        params = {k: (v.numpy() if isinstance(v, torch.Tensor) else v) for k, v in case.params.items()}
        if case.metric == "minkowski" and np.isinf(params.get("p", 2.0)):
            params = {k: v for k, v in params.items() if k != "p"}
            return torch.from_numpy(ssd.pdist(xn, "chebyshev", **params))
        return torch.from_numpy(ssd.pdist(xn, SCIPY_NAMES[case.metric], **params))
    full = case.oracle(xn, xn)
    i, j = np.triu_indices(len(xn), 1)
    return torch.from_numpy(np.ascontiguousarray(full[i, j]))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_parity(case, dtype):
    for d in case.dims:
        for n in (2, 13, 300):  # 300 rows: several row and column tiles
            x = case.sample((n, d), dtype)
            out = tp.pdist(x, case.metric, **case.params)
            assert out.shape == (n * (n - 1) // 2,) and out.dtype == dtype
            torch.testing.assert_close(out.double(), pdist_oracle(case, x), **tolerances(case, dtype))


@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_matches_dense_upper_triangle_batched(case):
    d = case.dims[-1]
    x = case.sample((2, 3, 11, d))
    out = tp.pdist(x, case.metric, **case.params)
    assert out.shape == (2, 3, 55)
    for i in range(2):
        for j in range(3):
            torch.testing.assert_close(out[i, j], pdist_oracle(case, x[i, j]), **tolerances(case, torch.float64))


@pytest.mark.parametrize("case", METRIC_CASES, ids=METRIC_IDS)
def test_generic_path(case, force_generic):
    d = case.dims[-1]
    x = case.sample((2, 40, d))
    out = tp.pdist(x, case.metric, **case.params)
    for b in range(2):
        torch.testing.assert_close(out[b], pdist_oracle(case, x[b]), **tolerances(case, torch.float64))


def test_empty_and_single_rows():
    for n in (0, 1):
        assert tp.pdist(torch.randn(n, 3)).shape == (0,)
        assert tp.pdist(torch.randn(4, n, 3), "cityblock").shape == (4, 0)
    assert tp.pdist(torch.randn(0, 5, 3), "cosine").shape == (0, 10)
    x = torch.randn(1, 3, requires_grad=True)
    tp.pdist(x).sum().backward()
    assert torch.equal(x.grad, torch.zeros_like(x))


def test_non_contiguous_and_not_modified():
    x = torch.randn(30, 8, dtype=torch.float64)[::2, 1::2]
    xc = x.clone()
    out = tp.pdist(x, "canberra")
    torch.testing.assert_close(out, torch.from_numpy(ssd.pdist(xc.numpy(), "canberra")))
    assert torch.equal(x, xc)


@pytest.mark.parametrize("case", DIFFERENTIABLE_CASES, ids=[c.id for c in DIFFERENTIABLE_CASES])
def test_gradients(case):
    g = torch.Generator().manual_seed(11)
    for d in (case.dims[0], case.dims[-1]):
        x = case.sample((2, 7, d), generator=g).requires_grad_(True)
        assert torch.autograd.gradcheck(lambda a: tp.pdist(a, case.metric, **case.params), (x,), fast_mode=True)


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "cosine", "rbf"])
def test_gradients_full_two_sweeps_and_generic(metric, monkeypatch):
    x = torch.randn(2, 9, 20, dtype=torch.float64, requires_grad=True)
    fn = lambda a: tp.pdist(a, metric)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x,))
    monkeypatch.setenv("TORCHPAIR_BACKWARD_BUFFER_BYTES", "0")
    assert torch.autograd.gradcheck(fn, (x,))
    monkeypatch.setenv("TORCHPAIR_FORCE_GENERIC", "1")
    assert torch.autograd.gradcheck(fn, (x,))


def test_gradient_equals_dense_upper_triangle():
    """Large enough for several tiles: the gradient of a weighted sum of pdist equals that of
    the same weights on the dense matrix's upper triangle."""
    x = torch.randn(700, 24, dtype=torch.float64, requires_grad=True)
    n = x.shape[0]
    i, j = torch.triu_indices(n, n, 1)
    w = torch.randn(i.numel(), dtype=torch.float64)
    for metric in ("euclidean", "cityblock"):
        (gx,) = torch.autograd.grad((tp.pdist(x, metric) * w).sum(), x)
        (rx,) = torch.autograd.grad((tp.pairwise(x, None, metric)[i, j] * w).sum(), x)
        torch.testing.assert_close(gx, rx)


def test_second_derivative_refused():
    x = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(tp.pdist(x).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="second derivatives are not supported"):
        g.sum().backward()


def test_compile_and_export():
    torch._dynamo.reset()
    x = torch.randn(17, 5)
    f = torch.compile(lambda a: tp.pdist(a, "cosine"), fullgraph=True)
    torch.testing.assert_close(f(x).double(), torch.from_numpy(ssd.pdist(x.double().numpy(), "cosine")),
                               rtol=1e-5, atol=1e-5)

    class M(torch.nn.Module):
        def forward(self, a):
            return tp.pdist(a, "cityblock")

    ep = torch.export.export(M(), (x,), dynamic_shapes={"a": {0: torch.export.Dim("n", min=3)}})  # P = 1 at n = 2
    y = torch.randn(23, 5)
    torch.testing.assert_close(ep.module()(y).double(), torch.from_numpy(ssd.pdist(y.double().numpy(), "cityblock")),
                               rtol=1e-5, atol=1e-5)


# peak_kb (test_memory.py): the process's own peak; getrusage's maxrss would read a larger
# pytest parent's size, and every difference below as 0
MEMORY = PEAK_KB + textwrap.dedent("""
    import torch, torchpair as tp
    n = 12000
    x = torch.randn(n, 4, requires_grad=True)
    base = peak_kb()
    out = tp.pdist(x, "cityblock")
    forward = peak_kb()
    out.sum().backward()  # the upstream gradient is one more condensed vector
    peak = peak_kb()
    print((forward - base) // 1024, (peak - base) // 1024, out.numel() * 4 // 2**20)
""")


def test_memory_is_the_condensed_half():
    """N = 12000, float32: the condensed result is 275 MiB, a dense matrix would be 550 MiB."""
    r = subprocess.run([sys.executable, "-c", MEMORY], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    forward, total, condensed = map(int, r.stdout.split())
    assert forward < 1.3 * condensed, (forward, condensed)  # a dense matrix: >= 2x
    assert total < 2.6 * condensed, (total, condensed)      # dense forward + backward: >= 4x
