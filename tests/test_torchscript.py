"""TorchScript (optional per the seed): what works and what does not (docs/contracts.md).

Works: torch.jit.script of functions / modules that call the operators
``torch.ops.torchpair.*`` directly (schemas with keyword parameters), their gradients,
torch.jit.save / torch.jit.load; torch.jit.trace of code using the Python API (tp.lazy, ...),
which records the operators.
Does not: scripting code that uses the Python API objects (tp.lazy, LazyPairwise): they are
Python classes with **params, which TorchScript cannot compile.
"""
from __future__ import annotations

import io

import pytest
import torch

import torchpair as tp

# torch.jit.* is deprecated in favour of torch.compile / torch.export; these tests say what
# still works.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.*` is deprecated:DeprecationWarning")


def reference(X, Y, V, gamma=0.2):
    return torch.exp(-gamma * ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)) @ V


def data(n=9, m=7, d=4, c=2):
    g = torch.Generator().manual_seed(3)
    return (torch.randn(n, d, generator=g, dtype=torch.float64), torch.randn(m, d, generator=g, dtype=torch.float64),
            torch.randn(m, c, generator=g, dtype=torch.float64))


class ScriptedQuery(torch.nn.Module):
    def forward(self, X, Y, V):
        out = torch.ops.torchpair.lazy_matmul(X, Y, V, "rbf", False, gamma=0.2)
        top = torch.ops.torchpair.lazy_topk(X, Y, "euclidean", 2, -1, False, True, False, "largest")
        total = torch.ops.torchpair.lazy_reduce(X, None, "sqeuclidean", "sum", None, False)
        return out, top[0], top[1], total


def _check(outputs, X, Y, V):
    out, values, indices, total = outputs
    torch.testing.assert_close(out, reference(X, Y, V))
    d = torch.cdist(X, Y)
    top = torch.topk(d, 2, largest=False)
    torch.testing.assert_close(values, top.values)
    assert torch.equal(indices, top.indices)
    torch.testing.assert_close(total, (torch.cdist(X, X) ** 2).sum())


def test_script_module_calling_the_operators():
    scripted = torch.jit.script(ScriptedQuery())
    assert "torchpair::lazy_matmul" in str(scripted.graph)
    X, Y, V = data()
    _check(scripted(X, Y, V), X, Y, V)


def test_scripted_save_load_roundtrip():
    scripted = torch.jit.script(ScriptedQuery())
    buf = io.BytesIO()
    torch.jit.save(scripted, buf)
    buf.seek(0)
    loaded = torch.jit.load(buf)
    X, Y, V = data(5, 11)
    _check(loaded(X, Y, V), X, Y, V)


def test_scripted_function_gradients():
    @torch.jit.script
    def loss(X, Y, V):
        return torch.ops.torchpair.lazy_matmul(X, Y, V, "rbf", False, gamma=0.2).square().sum()

    X, Y, V = data()
    X.requires_grad_(True)
    (gx,) = torch.autograd.grad(loss(X, Y, V), X)
    Xr = X.detach().clone().requires_grad_(True)
    (gr,) = torch.autograd.grad(reference(Xr, Y, V).square().sum(), Xr)
    torch.testing.assert_close(gx, gr)


def test_trace_of_the_python_api():
    def query(X, Y, V):
        return tp.lazy(X, Y, "rbf", gamma=0.2).matmul(V)

    X, Y, V = data()
    traced = torch.jit.trace(query, (X, Y, V))
    assert "torchpair::lazy_matmul" in str(traced.graph)
    X2, Y2, V2 = data(13, 6)
    torch.testing.assert_close(traced(X2, Y2, V2), reference(X2, Y2, V2))


def test_scripting_the_python_api_is_not_supported():
    def query(X, Y, V):
        return tp.lazy(X, Y, "rbf", gamma=0.2).matmul(V)

    with pytest.raises(torch.jit.frontend.NotSupportedError, match="variable number of arguments"):
        torch.jit.script(query)


def test_scripted_bad_input_raises():
    scripted = torch.jit.script(ScriptedQuery())
    X, Y, V = data()
    with pytest.raises(RuntimeError, match="Y"):
        scripted(X, Y[:, :2], V)
