"""The seed's Query example compiled with fullgraph=True and exported; export round trip
(save/load in a fresh process that only imports torchpair); dynamic shapes."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import torchpair as tp


class Query(torch.nn.Module):
    def forward(self, X, Y, V):
        K = tp.lazy(X, Y, metric="rbf", gamma=0.2)
        return K.matmul(V)  # X:[N,D], Y:[M,D], V:[M,C] -> [N,C]


def reference(X, Y, V):
    return torch.exp(-0.2 * torch.cdist(X, Y) ** 2) @ V


def data(n=40, m=30, d=5, c=3):
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, d, generator=g), torch.randn(m, d, generator=g), torch.randn(m, c, generator=g)


def test_compile_fullgraph():
    torch._dynamo.reset()
    query = torch.compile(Query(), fullgraph=True)
    X, Y, V = data()
    torch.testing.assert_close(query(X, Y, V), reference(X, Y, V), rtol=1e-5, atol=1e-5)


def test_compile_backward():
    torch._dynamo.reset()
    query = torch.compile(Query(), fullgraph=True)
    X, Y, V = data()
    X.requires_grad_(True)
    query(X, Y, V).sum().backward()
    Xr = X.detach().clone().requires_grad_(True)
    reference(Xr, Y, V).sum().backward()
    torch.testing.assert_close(X.grad, Xr.grad, rtol=1e-4, atol=1e-5)


def test_compile_dynamic_shapes():
    torch._dynamo.reset()
    query = torch.compile(Query(), fullgraph=True, dynamic=True)
    for n, m in [(40, 30), (17, 51), (64, 8)]:
        X, Y, V = data(n, m)
        torch.testing.assert_close(query(X, Y, V), reference(X, Y, V), rtol=1e-5, atol=1e-5)


def test_compile_dense_and_sum():
    torch._dynamo.reset()

    @torch.compile(fullgraph=True)
    def f(x, y):
        return tp.pairwise(x, y, "euclidean"), tp.lazy(x, y, "sqeuclidean").sum(-2), tp.lazy(x, None, "rbf").sum()

    x, y = torch.randn(20, 30), torch.randn(10, 30)
    a, b, c = f(x, y)
    torch.testing.assert_close(a, torch.cdist(x, y), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(b, (torch.cdist(x, y) ** 2).sum(0), rtol=1e-5, atol=1e-3)
    torch.testing.assert_close(c, torch.exp(-torch.cdist(x, x) ** 2 / 30).sum(), rtol=1e-5, atol=1e-4)


def _torchpair_ops_in(ep):
    return {str(n.target) for n in ep.graph.nodes if n.op == "call_function" and "torchpair" in str(n.target)}


def test_export_and_dynamic_dims():
    X, Y, V = data()
    N, M = torch.export.Dim("N", min=2), torch.export.Dim("M", min=2)
    ep = torch.export.export(Query(), (X, Y, V), dynamic_shapes=({0: N}, {0: M}, {0: M}))
    assert _torchpair_ops_in(ep), "the exported graph must hold torchpair operators"
    for n, m in [(40, 30), (13, 77)]:
        X2, Y2, V2 = data(n, m)
        torch.testing.assert_close(ep.module()(X2, Y2, V2), reference(X2, Y2, V2), rtol=1e-5, atol=1e-5)


def test_export_save_load_in_fresh_process(tmp_path):
    X, Y, V = data()
    ep = torch.export.export(Query(), (X, Y, V))
    path = tmp_path / "query.pt2"
    torch.export.save(ep, str(path))
    torch.save((X, Y, V, reference(X, Y, V)), tmp_path / "data.pt")
    script = textwrap.dedent(f"""
        import torch
        import torchpair  # registers the operators; nothing else from the test
        ep = torch.export.load({str(path)!r})
        X, Y, V, ref = torch.load({str(tmp_path / 'data.pt')!r})
        out = ep.module()(X, Y, V)
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
        print("OK")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr


def _consumers(x, y, v):
    K = tp.lazy(x, y, "rbf", gamma=0.5)
    top = K.topk(3, largest=False)
    return (top.values, top.indices, K.min(-1).indices, K.max(-2).values, K.logsumexp(-2), K.softmax_matmul(v),
            K.mean(), tp.knn(x, y, 2).values, tp.hausdorff(x, y), tp.chamfer(x, y), tp.mmd(x, y),
            tp.energy_distance(x, y))


def test_compile_streamed_consumers_fullgraph():
    torch._dynamo.reset()
    x, y, v = data(30, 25, 4, 2)
    eager = _consumers(x, y, v)
    compiled = torch.compile(_consumers, fullgraph=True)(x, y, v)
    for a, b in zip(eager, compiled):
        torch.testing.assert_close(a, b)
    # and their backward
    xg = x.clone().requires_grad_(True)
    out = torch.compile(lambda a: sum(t.sum() for t in _consumers(a, y, v) if t.is_floating_point()),
                        fullgraph=True)(xg)
    out.backward()
    xe = x.clone().requires_grad_(True)
    sum(t.sum() for t in _consumers(xe, y, v) if t.is_floating_point()).backward()
    torch.testing.assert_close(xg.grad, xe.grad, rtol=1e-4, atol=1e-5)


class Consumers(torch.nn.Module):
    def forward(self, x, y, v):
        return _consumers(x, y, v)


def test_export_streamed_consumers_dynamic():
    x, y, v = data(30, 25, 4, 2)
    N, M = torch.export.Dim("N", min=4), torch.export.Dim("M", min=4)
    ep = torch.export.export(Consumers(), (x, y, v), dynamic_shapes=({0: N}, {0: M}, {0: M}))
    for n, m in [(30, 25), (11, 40)]:
        x2, y2, v2 = data(n, m, 4, 2)
        for a, b in zip(ep.module()(x2, y2, v2), _consumers(x2, y2, v2)):
            torch.testing.assert_close(a, b)


def _clouds(n=12, m=9):
    g = torch.Generator().manual_seed(3)
    return torch.randn(n, 3, generator=g), torch.randn(m, 3, generator=g) + 0.5


def test_sinkhorn_divergence_compile_fullgraph_and_backward():
    """One native operator: the schedule is fixed by 'diameter' (required when tracing)."""
    torch._dynamo.reset()
    X, Y = _clouds()

    def f(x, y):
        return tp.sinkhorn_divergence(x, y, blur=0.2, scaling=0.7, diameter=6.0)

    want = f(X, Y)
    compiled = torch.compile(f, fullgraph=True)
    torch.testing.assert_close(compiled(X, Y), want, rtol=1e-5, atol=1e-6)
    Xc, Xe = X.clone().requires_grad_(), X.clone().requires_grad_()
    compiled(Xc, Y).backward()
    f(Xe, Y).backward()
    torch.testing.assert_close(Xc.grad, Xe.grad, rtol=1e-4, atol=1e-6)
    with pytest.raises(Exception, match="diameter"):
        torch.compile(lambda x, y: tp.sinkhorn_divergence(x, y), fullgraph=True)(X, Y)


def test_sinkhorn_divergence_tolerance_under_compile_runs_max_iter():
    """Under tracing the early stop at tol is disabled: all max_iter iterations run, which is
    the eager result with a tolerance that is never reached."""
    torch._dynamo.reset()
    X, Y = _clouds()
    compiled = torch.compile(lambda x, y: tp.sinkhorn_divergence(x, y, blur=0.5, diameter=6.0, tol=0.1,
                                                                 max_iter=15), fullgraph=True)
    with pytest.warns(UserWarning, match="tol"):
        full = tp.sinkhorn_divergence(X, Y, blur=0.5, diameter=6.0, tol=1e-30, max_iter=15)
    from geomloss._legacy.sinkhorn_divergence import epsilon_schedule
    scheduled = len(epsilon_schedule(2, 6.0, 0.5, 0.5))
    _, log = tp.sinkhorn_divergence(X, Y, blur=0.5, diameter=6.0, tol=0.1, max_iter=15, log=True)
    assert log["niter"] < scheduled + 15  # the eager call stopped early ...
    torch.testing.assert_close(compiled(X, Y), full, rtol=1e-5, atol=1e-7)  # ... the compiled one did not


def test_sinkhorn_divergence_export():
    class Loss(torch.nn.Module):
        def forward(self, x, y):
            return tp.sinkhorn_divergence(x, y, blur=0.2, scaling=0.7, diameter=6.0)

    X, Y = _clouds()
    ep = torch.export.export(Loss(), (X, Y))
    assert _torchpair_ops_in(ep)
    X2, Y2 = _clouds(12, 9)
    X2 = X2 * 1.1
    torch.testing.assert_close(ep.module()(X2, Y2), Loss()(X2, Y2), rtol=1e-5, atol=1e-6)
