"""`K @ V` and `softmax_matmul` for every small column count C (1..17: each register
kernel width, the chunked widths above it, and past the default cut-over to the GEMM),
forward and backward, against the dense torch formula and its autograd gradients (float64).

Shapes are chosen for the kernels' edges: row counts that are not a multiple of the rows
handled together, column counts past a column block with an odd tail, batches, and the
transposed operator (K^T @ V, whose backward sweeps the other orientation). Both tile
sources are covered: rbf (elementwise) and linear (a GEMM per tile). The two-pass backward
(TORCHPAIR_BACKWARD_BUFFER_BYTES=0) walks the transposed sweep's products, and
TORCHPAIR_SMALL_PRODUCT_MAX=0 sends every C to the GEMM path instead."""
import pytest
import torch

import torchpair as tp

CS = list(range(1, 18))
GAMMA = 0.3
TOL = {"rtol": 1e-10, "atol": 1e-10}


def dense(metric, x, y):
    if metric == "rbf":
        return torch.exp(-GAMMA * ((x.unsqueeze(-2) - y.unsqueeze(-3)) ** 2).sum(-1))
    return x @ y.transpose(-1, -2)


def lazy(metric, x, y):
    return tp.lazy(x, y, "rbf", gamma=GAMMA) if metric == "rbf" else tp.lazy(x, y, "linear")


def operands(batch, n, m, d, c, seed, transposed=False):
    g = torch.Generator().manual_seed(seed)
    shape = (batch,) if batch else ()
    x = torch.randn(*shape, n, d, dtype=torch.float64, generator=g) * 0.5
    y = torch.randn(*shape, m, d, dtype=torch.float64, generator=g) * 0.5
    v = torch.randn(*shape, n if transposed else m, c, dtype=torch.float64, generator=g)
    return x, y, v


def check(consumer, metric, x, y, v, transposed):
    """Forward and every gradient (x, y, v) of the lazy consumer against the dense formula."""
    def run(x, y, v, use_lazy):
        if use_lazy:
            K = lazy(metric, x, y)
            K = K.T if transposed else K
            if consumer == "matmul":
                return K @ v
            return K.softmax_matmul(v)
        K = dense(metric, x, y)
        K = K.transpose(-1, -2) if transposed else K
        if consumer == "matmul":
            return K @ v
        return torch.softmax(K, -1) @ v

    leaves = [t.clone().requires_grad_() for t in (x, y, v)]
    ref_leaves = [t.clone().requires_grad_() for t in (x, y, v)]
    out = run(*leaves, True)
    ref = run(*ref_leaves, False)
    torch.testing.assert_close(out, ref, **TOL)
    w = torch.randn(ref.shape, dtype=ref.dtype, generator=torch.Generator().manual_seed(7))
    got = torch.autograd.grad(out, leaves, w)
    want = torch.autograd.grad(ref, ref_leaves, w)
    for name, a, b in zip("xyv", got, want):
        torch.testing.assert_close(a, b, **TOL, msg=lambda m: f"d{name}: {m}")


@pytest.mark.parametrize("consumer", ["matmul", "softmax_matmul"])
@pytest.mark.parametrize("c", CS)
def test_every_small_c(consumer, c):
    # rows: 4k + 3 (past each row grouping); columns: past one column block, odd tail
    x, y, v = operands(0, 67, 1037, 3, c, seed=c)
    check(consumer, "rbf", x, y, v, transposed=False)


@pytest.mark.parametrize("consumer", ["matmul", "softmax_matmul"])
@pytest.mark.parametrize("c", CS)
def test_every_small_c_transposed_two_pass(consumer, c, monkeypatch):
    # K^T @ V: the operator's rows are y's; V has x's row count
    x, y, v = operands(0, 531, 45, 4, c, seed=100 + c, transposed=True)
    check(consumer, "rbf", x, y, v, transposed=True)
    monkeypatch.setenv("TORCHPAIR_BACKWARD_BUFFER_BYTES", "0")  # the transposed sweep's products
    check(consumer, "rbf", x, y, v, transposed=True)
    x, y, v = operands(0, 45, 531, 4, c, seed=200 + c)
    check(consumer, "rbf", x, y, v, transposed=False)


@pytest.mark.parametrize("consumer", ["matmul", "softmax_matmul"])
@pytest.mark.parametrize("c", [1, 2, 3, 5, 8, 9, 13, 16, 17])
def test_batched_inner_product_source(consumer, c):
    # linear: tiles of 256 x 512 from a GEMM; batched, with a tail in both directions
    x, y, v = operands(2, 261, 529, 5, c, seed=300 + c)
    check(consumer, "linear", x, y, v, transposed=False)
    x, y, v = operands(2, 529, 37, 5, c, seed=400 + c, transposed=True)
    check(consumer, "linear", x, y, v, transposed=True)


@pytest.mark.parametrize("consumer", ["matmul", "softmax_matmul"])
@pytest.mark.parametrize("c", [1, 2, 7, 16])
def test_gemm_path(consumer, c, monkeypatch):
    monkeypatch.setenv("TORCHPAIR_SMALL_PRODUCT_MAX", "0")
    x, y, v = operands(2, 37, 515, 3, c, seed=500 + c)
    check(consumer, "rbf", x, y, v, transposed=False)
    monkeypatch.setenv("TORCHPAIR_BACKWARD_BUFFER_BYTES", "0")
    check(consumer, "rbf", x, y, v, transposed=False)
    x, y, v = operands(2, 515, 37, 3, c, seed=550 + c, transposed=True)
    check(consumer, "rbf", x, y, v, transposed=True)


@pytest.mark.parametrize("c", [1, 3, 8, 11])
def test_float32(c):
    # the float32 kernels have twice the lanes: compare with the float64 dense formula
    x, y, v = operands(0, 67, 1037, 3, c, seed=600 + c)
    x32, y32, v32 = x.float(), y.float(), v.float()
    K = tp.lazy(x32, y32, "rbf", gamma=GAMMA)
    ref = dense("rbf", x32.double(), y32.double())
    torch.testing.assert_close((K @ v32).double(), ref @ v32.double(), rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(K.softmax_matmul(v32).double(), torch.softmax(ref, -1) @ v32.double(),
                               rtol=1e-4, atol=1e-5)
    torch.testing.assert_close((K.T @ x32[:, :1].expand(67, c).contiguous()).double(),
                               ref.T @ x32[:, :1].expand(67, c).double(), rtol=1e-4, atol=1e-4)


def test_gradcheck_small():
    x, y, v = operands(0, 5, 19, 2, 3, seed=9)
    for consumer in ("matmul", "softmax_matmul"):
        def f(x, y, v):
            K = tp.lazy(x, y, "rbf", gamma=GAMMA)
            return K @ v if consumer == "matmul" else K.softmax_matmul(v)
        assert torch.autograd.gradcheck(f, tuple(t.clone().requires_grad_() for t in (x, y, v)))
