"""Plain eager calls of tp.pairwise take the typed entry point (torchpair._C), which calls the
same dispatcher operator as torch.ops unboxed: results, gradients, errors, autocast and
dispatch modes are those of the torch.ops call; tensor subclasses with a __torch_function__,
torch-function modes and torch.compile keep to torch.ops, which they can see."""
from __future__ import annotations

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import torchpair as tp
from torchpair import _fast


@pytest.fixture
def typed_calls(monkeypatch):
    """The metric of each call that went through the typed entry point, in order."""
    calls = []
    inner = _fast.pairwise

    def counting(*args):
        calls.append(args[2])
        return inner(*args)

    monkeypatch.setattr(_fast, "pairwise", counting)
    return calls


def _operands(dtype=torch.float64):
    g = torch.Generator().manual_seed(0)
    return torch.randn(7, 5, dtype=dtype, generator=g), torch.randn(9, 5, dtype=dtype, generator=g)


def test_plain_calls_take_the_typed_entry(typed_calls):
    x, y = _operands()
    x0, y0 = x.clone(), y.clone()
    torch.testing.assert_close(tp.pairwise(x, y), torch.cdist(x, y))
    torch.testing.assert_close(tp.cdist(x, y, "cityblock"), torch.cdist(x, y, p=1))
    own = tp.pairwise(x)
    torch.testing.assert_close(own, torch.cdist(x, x))
    assert torch.all(own.diagonal() == 0)  # self-comparisons exact, as the symmetric contract says
    b = torch.randn(3, 4, 5, dtype=torch.float64)
    torch.testing.assert_close(tp.pairwise(b, y), torch.cdist(b, y.expand(3, 9, 5)))
    assert typed_calls == ["euclidean", "cityblock", "euclidean", "euclidean"]
    assert torch.equal(x, x0) and torch.equal(y, y0)


def test_keyword_parameters_keep_to_torch_ops(typed_calls):
    x, y = _operands()
    torch.testing.assert_close(tp.pairwise(x, y, "rbf", gamma=0.5), torch.exp(-0.5 * torch.cdist(x, y) ** 2))
    assert typed_calls == []


def test_nn_parameter_operands_take_the_typed_entry(typed_calls):
    """nn.Parameter disables __torch_function__: a module's learned operand is a plain call,
    and its gradient arrives."""
    x, y = _operands()
    p = torch.nn.Parameter(x.clone())
    tp.pairwise(p, y).sum().backward()
    xr = x.clone().requires_grad_(True)
    torch.cdist(xr, y).sum().backward()
    torch.testing.assert_close(p.grad, xr.grad)
    assert typed_calls == ["euclidean"]


def test_torch_function_sees_the_operator(typed_calls):
    x, y = _operands()

    class Logged(torch.Tensor):
        seen: list = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.seen.append(func)
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **(kwargs or {}))

    out = tp.pairwise(x.as_subclass(Logged), y)
    assert torch.ops.torchpair.pairwise.default in Logged.seen
    torch.testing.assert_close(out.as_subclass(torch.Tensor), torch.cdist(x, y))

    class Mode(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append(func)
            return func(*args, **(kwargs or {}))

    with Mode() as mode:
        out = tp.pairwise(x, y)
    assert torch.ops.torchpair.pairwise.default in mode.seen
    torch.testing.assert_close(out, torch.cdist(x, y))
    assert typed_calls == []


def test_dispatch_modes_see_the_same_operators(typed_calls):
    x, y = _operands()

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func)
            return func(*args, **(kwargs or {}))

    with Seen() as typed:
        a = tp.pairwise(x, y, "sqeuclidean")
    with Seen() as boxed:
        b = torch.ops.torchpair.pairwise.default(x, y, "sqeuclidean")
    assert typed_calls == ["sqeuclidean"]
    assert typed.ops == boxed.ops and torch.ops.torchpair._dense.default in typed.ops, typed.ops
    torch.testing.assert_close(a, torch.cdist(x, y) ** 2)
    assert torch.equal(a, b)


def test_gradients_and_autocast_through_the_typed_entry(typed_calls):
    x, y = _operands()
    x.requires_grad_(True)
    y.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: tp.pairwise(a, b, "euclidean"), (x, y))
    assert typed_calls and set(typed_calls) == {"euclidean"}
    xf, yf = _operands(torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        typed = tp.pairwise(xf, yf)
        boxed = torch.ops.torchpair.pairwise.default(xf, yf, "euclidean")
    assert typed.dtype == boxed.dtype
    assert torch.equal(typed, boxed)


def test_compiled_calls_keep_to_torch_ops(typed_calls):
    x, y = _operands()
    f = torch.compile(lambda a, b: tp.pairwise(a, b, "cosine"), fullgraph=True, backend="eager")
    want = 1 - torch.nn.functional.cosine_similarity(x[:, None], y[None], dim=-1)
    torch.testing.assert_close(f(x, y), want)
    assert typed_calls == []


def test_errors_name_the_public_function(typed_calls):
    x, y = _operands()
    with pytest.raises(ValueError, match=r"torchpair\.cdist: .*'nope'"):
        tp.cdist(x, y, "nope")
    with pytest.raises(TypeError, match=r"torchpair\.pairwise: 'x' has dtype Float but 'y' has Double"):
        tp.pairwise(x.float(), y)
    with pytest.raises(ValueError, match=r"torchpair\.pairwise: 'x' has 5 features but 'y' has 4"):
        tp.pairwise(x, y[:, :4])
    assert typed_calls == ["nope", "euclidean", "euclidean"]
