"""gradcheck (float64) for every differentiable metric, through every consumer, in both
engines; the conventions at non-differentiable points; second derivatives are refused."""
import pytest
import torch

import torchpair as tp
from cases import DIFFERENTIABLE_CASES, REPRESENTATIVE_CASES


def gradcheck(fn, inputs, fast_mode=True):
    """torch.autograd.gradcheck; fast mode (random projections of the Jacobian) keeps the
    many-consumer rows quick, the dense rows also run in full."""
    return torch.autograd.gradcheck(fn, inputs, fast_mode=fast_mode)

IDS = [c.id for c in DIFFERENTIABLE_CASES]


def inputs(case, d, batch=()):
    g = torch.Generator().manual_seed(3)
    x = case.sample((*batch, 6, d), generator=g).requires_grad_(True)
    y = case.sample((*batch, 9, d), generator=g).requires_grad_(True)
    v = torch.randn(*batch, 9, 2, dtype=torch.float64, generator=g).requires_grad_(True)
    return x, y, v


@pytest.mark.parametrize("case", DIFFERENTIABLE_CASES, ids=IDS)
def test_dense(case):
    for d in (case.dims[0], case.dims[-1]):
        x, y, _ = inputs(case, d, (2,))
        assert gradcheck(lambda a, b: tp.pairwise(a, b, case.metric, **case.params), (x, y), fast_mode=False)
        assert gradcheck(lambda a: tp.pairwise(a, None, case.metric, **case.params), (x,))


@pytest.mark.parametrize("case", DIFFERENTIABLE_CASES, ids=IDS)
def test_lazy_consumers(case):
    for d in (case.dims[0], case.dims[-1]):
        x, y, v = inputs(case, d, (2,))
        K = lambda a, b: tp.lazy(a, b, case.metric, **case.params)  # noqa: E731
        assert gradcheck(lambda a, b, c: K(a, b) @ c, (x, y, v))
        assert gradcheck(lambda a, b, c: K(a, b).T @ c[:, :6], (x, y, v))
        assert gradcheck(lambda a, b: K(a, b).sum(-1), (x, y))
        assert gradcheck(lambda a, b: K(a, b).sum(-2), (x, y))
        assert gradcheck(lambda a, b: K(a, b).sum(), (x, y))
        assert gradcheck(lambda a, c: tp.lazy(a, None, case.metric, **case.params) @ c[:, :6], (x, v))


@pytest.mark.parametrize("case", DIFFERENTIABLE_CASES, ids=IDS)
def test_generic_path(case, force_generic):
    for d in (case.dims[0], case.dims[-1]):
        x, y, v = inputs(case, d)
        assert gradcheck(lambda a, b, c: tp.lazy(a, b, case.metric, **case.params) @ c, (x, y, v))
        assert gradcheck(lambda a, b: tp.pairwise(a, b, case.metric, **case.params), (x, y))


@pytest.mark.parametrize("case", DIFFERENTIABLE_CASES, ids=IDS)
def test_two_sweep_backward(case, monkeypatch):
    """With no room for per-thread column buffers the backward sweeps twice (the second over
    the transposed operator): same gradients."""
    monkeypatch.setenv("TORCHPAIR_BACKWARD_BUFFER_BYTES", "0")
    for d in (case.dims[0], case.dims[-1]):
        x, y, v = inputs(case, d, (2,))
        K = lambda a, b: tp.lazy(a, b, case.metric, **case.params)  # noqa: E731
        assert gradcheck(lambda a, b, c: K(a, b) @ c, (x, y, v))
        assert gradcheck(lambda a, b, c: K(a, b).T @ c[:, :6], (x, y, v))
        assert gradcheck(lambda a, c: K(a, None) @ c[:, :6], (x, v))
        assert gradcheck(lambda a, b: K(a, b).sum(-2), (x, y))
        assert gradcheck(lambda a, b: tp.pairwise(a, b, case.metric, **case.params), (x, y))
        assert gradcheck(lambda b, c: K(x.detach(), b) @ c, (y, v))  # dV without dX


@pytest.mark.parametrize("d", [3, 40])
def test_euclidean_gradient_is_zero_at_zero_distance(d):
    x = torch.randn(5, d, dtype=torch.float64)
    y = torch.cat([x[:2], torch.randn(3, d, dtype=torch.float64)])
    xr = x.clone().requires_grad_(True)
    yr = y.clone().requires_grad_(True)
    tp.pairwise(xr, yr, "euclidean")[0, 0].backward()
    assert torch.equal(xr.grad, torch.zeros_like(x)) and torch.equal(yr.grad, torch.zeros_like(y))
    # self-comparisons: the diagonal contributes nothing
    xs = x.clone().requires_grad_(True)
    tp.pairwise(xs, None, "euclidean").diagonal().sum().backward()
    assert torch.equal(xs.grad, torch.zeros_like(x))
    # and nothing is NaN through a lazy consumer either
    xs.grad = None
    (tp.lazy(xs, None, "euclidean") @ torch.ones(5, 1, dtype=torch.float64)).sum().backward()
    assert torch.isfinite(xs.grad).all()


def test_second_derivative_raises():
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    y = torch.randn(5, 3, dtype=torch.float64)
    for out in (tp.pairwise(x, y, "rbf").sum(), (tp.lazy(x, y, "rbf") @ torch.ones(5, dtype=torch.float64)).sum(),
                tp.lazy(x, y, "rbf").sum()):
        (g,) = torch.autograd.grad(out, x, create_graph=True)
        with pytest.raises(RuntimeError, match="second derivatives are not supported"):
            g.sum().backward()


def test_gradients_match_dense_torch():
    """A second, independent check: autograd through the dense torch formula."""
    x = torch.randn(50, 20, dtype=torch.float64, requires_grad=True)
    y = torch.randn(40, 20, dtype=torch.float64, requires_grad=True)
    v = torch.randn(40, 3, dtype=torch.float64, requires_grad=True)
    out = tp.lazy(x, y, "rbf", gamma=0.1) @ v
    ref = torch.exp(-0.1 * ((x[:, None] - y[None]) ** 2).sum(-1)) @ v
    w = torch.randn_like(ref)
    g1 = torch.autograd.grad((out * w).sum(), (x, y, v))
    g2 = torch.autograd.grad((ref * w).sum(), (x, y, v))
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b)


# ---- streamed consumers --------------------------------------------------------------------
CONSUMERS = {
    "mean": lambda K, v: K.mean(-1),
    "mean-cols": lambda K, v: K.mean(-2),
    "mean-all": lambda K, v: K.mean(),
    "logsumexp": lambda K, v: K.logsumexp(-1),
    "logsumexp-cols": lambda K, v: K.logsumexp(-2),
    "logsumexp-all": lambda K, v: K.logsumexp(),
    "softmax_matmul": lambda K, v: K.softmax_matmul(v),
    "softmax_matmul-cols": lambda K, v: K.softmax_matmul(v[..., :6, :], dim=-2),
    "min-values": lambda K, v: K.min(-1).values,
    "max-values-cols": lambda K, v: K.max(-2).values,
    "topk-values": lambda K, v: K.topk(3, largest=False).values,
    "topk-values-cols": lambda K, v: K.topk(2, dim=-2).values,
}


@pytest.mark.parametrize("consumer", list(CONSUMERS), ids=list(CONSUMERS))
@pytest.mark.parametrize("case", REPRESENTATIVE_CASES, ids=[c.id for c in REPRESENTATIVE_CASES])
def test_streamed_consumers(case, consumer):
    fn = CONSUMERS[consumer]
    for d in (case.dims[0], case.dims[-1]):
        x, y, v = inputs(case, d, (2,))
        assert gradcheck(lambda a, b, c: fn(tp.lazy(a, b, case.metric, **case.params), c), (x, y, v))
        assert gradcheck(lambda a, c: fn(tp.lazy(a, None, case.metric, **case.params), c[..., :6, :]), (x, v))


@pytest.mark.parametrize("consumer", ["logsumexp", "softmax_matmul", "topk-values"])
def test_streamed_consumers_two_sweeps_and_generic(consumer, monkeypatch):
    fn = CONSUMERS[consumer]
    case = DIFFERENTIABLE_CASES[0]
    for env in ({"TORCHPAIR_BACKWARD_BUFFER_BYTES": "0"}, {"TORCHPAIR_FORCE_GENERIC": "1"}):
        for k, val in env.items():
            monkeypatch.setenv(k, val)
        for d in (3, 40):
            x, y, v = inputs(case, d, (2,))
            assert gradcheck(lambda a, b, c: fn(tp.lazy(a, b, case.metric, **case.params), c), (x, y, v))
        for k in env:
            monkeypatch.delenv(k)


def test_softmax_matmul_gradient_matches_dense_torch():
    x = torch.randn(40, 20, dtype=torch.float64, requires_grad=True)
    y = torch.randn(50, 20, dtype=torch.float64, requires_grad=True)
    v = torch.randn(50, 3, dtype=torch.float64, requires_grad=True)
    out = tp.lazy(x, y, "rbf", gamma=0.3).softmax_matmul(v)
    ref = torch.softmax(torch.exp(-0.3 * ((x[:, None] - y[None]) ** 2).sum(-1)), -1) @ v
    w = torch.randn_like(ref)
    for a, b in zip(torch.autograd.grad((out * w).sum(), (x, y, v)), torch.autograd.grad((ref * w).sum(), (x, y, v))):
        torch.testing.assert_close(a, b)


SETS = {
    "knn": lambda a, b: tp.knn(a, b, 3).values,
    "knn-self": lambda a, b: tp.knn(a, None, 2).values,
    "hausdorff": lambda a, b: tp.hausdorff(a, b),
    "hausdorff-directed": lambda a, b: tp.hausdorff(a, b, directed=True),
    "chamfer": lambda a, b: tp.chamfer(a, b),
    "chamfer-sum-euclidean": lambda a, b: tp.chamfer(a, b, "euclidean", reduction="sum"),
    "mmd": lambda a, b: tp.mmd(a, b),
    "mmd-unbiased": lambda a, b: tp.mmd(a, b, unbiased=True, gamma=0.4),
    "energy_distance": lambda a, b: tp.energy_distance(a, b),
}


@pytest.mark.parametrize("name", list(SETS), ids=list(SETS))
def test_set_level(name):
    fn = SETS[name]
    for d in (3, 20):
        g = torch.Generator().manual_seed(5)
        x = torch.randn(2, 7, d, dtype=torch.float64, generator=g, requires_grad=True)
        y = torch.randn(2, 9, d, dtype=torch.float64, generator=g, requires_grad=True)
        assert gradcheck(fn, (x, y), fast_mode=False)


def test_unbatched_calls_in_every_autograd_state():
    """Unbatched operands are reshaped to one batch element and back; where no gradient can
    flow those reshapes skip view tracking (docs/contracts.md, eager no-grad fast path). Each
    autograd state gets the values and gradients of the dense torch formula."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(7, 3, dtype=torch.float64, generator=g)
    y = torch.randn(5, 3, dtype=torch.float64, generator=g)
    diff = x[:, None, :] - y[None, :, :]
    want = diff.square().sum(-1)
    # no gradient: a tensor of its own, which in-place ops may change
    out = tp.pairwise(x, y, "sqeuclidean")
    assert out._base is None and out.shape == (7, 5)
    torch.testing.assert_close(out, want)
    out.add_(1)
    torch.testing.assert_close(tp.pairwise(x, y, "sqeuclidean"), want)
    with torch.inference_mode():
        torch.testing.assert_close(tp.pairwise(x, y, "sqeuclidean"), want)
    with torch.no_grad():
        torch.testing.assert_close(tp.pairwise(x.requires_grad_(True), y, "sqeuclidean"), want)
    x.requires_grad_(False)
    # a gradient through x, through a view of a leaf, and after an in-place op on the result
    xg = x.clone().requires_grad_(True)
    tp.pairwise(xg, y, "sqeuclidean").sum().backward()
    torch.testing.assert_close(xg.grad, 2 * diff.sum(1))
    leaf = torch.cat([x, torch.zeros(7, 2, dtype=torch.float64)], 1).requires_grad_(True)
    r = tp.pairwise(leaf[:, :3], y, "sqeuclidean")
    r.mul_(3)
    r.sum().backward()
    torch.testing.assert_close(leaf.grad[:, :3], 6 * diff.sum(1))
    torch.testing.assert_close(leaf.grad[:, 3:], torch.zeros(7, 2, dtype=torch.float64))
    # y alone needs the gradient
    yg = y.clone().requires_grad_(True)
    tp.pairwise(x, yg, "cityblock").sum().backward()
    torch.testing.assert_close(yg.grad, -torch.sign(diff).sum(0))


def test_unbatched_calls_under_a_dispatch_mode():
    """A TorchDispatchMode still sees every ATen op of an eager call, including the reshapes
    made below the autograd layers, and the result is unchanged."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func.overloadpacket))
            return func(*args, **(kwargs or {}))

    x = torch.randn(6, 4, dtype=torch.float64)
    y = torch.randn(9, 4, dtype=torch.float64)
    with Seen() as mode:
        out = tp.pairwise(x, y, "cityblock")
    torch.testing.assert_close(out, (x[:, None] - y[None]).abs().sum(-1))
    assert "aten.unsqueeze" in mode.ops and "aten.select" in mode.ops, mode.ops
