"""Small walks run on the calling thread (csrc/cpu/sweep.h, serial_work_limit): both sides of
the limit give the same results as independent oracles. The limit is read once per process,
so each setting runs in its own subprocess: TORCHPAIR_SERIAL_WORK=0 puts every walk of more
than one unit on the pool, a huge value keeps every walk on the calling thread."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHECKS = r"""
import numpy as np, torch, torchpair as tp
from scipy.spatial.distance import cdist, pdist
torch.set_num_threads(2)
g = torch.Generator().manual_seed(0)
for dt, tol in ((torch.float64, 1e-10), (torch.float32, 2e-4)):
    for n, m, d in ((7, 5, 3), (100, 100, 8), (300, 257, 33), (700, 600, 16)):
        X, Y = torch.randn(n, d, generator=g, dtype=dt), torch.randn(m, d, generator=g, dtype=dt)
        Xn, Yn = X.double().numpy(), Y.double().numpy()
        for metric in ("euclidean", "cityblock", "cosine"):
            np.testing.assert_allclose(tp.pairwise(X, Y, metric).double().numpy(), cdist(Xn, Yn, metric), rtol=tol, atol=tol)
        np.testing.assert_allclose(tp.pdist(X, "sqeuclidean").double().numpy(), pdist(Xn, "sqeuclidean"), rtol=tol, atol=tol)
        K = torch.exp(-0.5 * torch.cdist(X.double(), Y.double()) ** 2)
        V = torch.randn(m, 3, generator=g, dtype=dt)
        np.testing.assert_allclose((tp.lazy(X, Y, "rbf", gamma=0.5) @ V).double().numpy(), (K @ V.double()).numpy(),
                                   rtol=tol, atol=tol * m)
        np.testing.assert_allclose(tp.lazy(X, Y, "rbf", gamma=0.5).sum(-1).double().numpy(), K.sum(-1).numpy(),
                                   rtol=tol, atol=tol * m)
    # a batch of many small problems, and the backward of a small one (torch's autograd on the formula)
    Xb, Yb = torch.randn(300, 10, 4, generator=g, dtype=dt), torch.randn(300, 12, 4, generator=g, dtype=dt)
    ref = torch.cdist(Xb.double(), Yb.double())
    np.testing.assert_allclose(tp.pairwise(Xb, Yb).double().numpy(), ref.numpy(), rtol=tol, atol=tol)
    X = torch.randn(60, 5, generator=g, dtype=torch.float64, requires_grad=True)
    Y = torch.randn(50, 5, generator=g, dtype=torch.float64, requires_grad=True)
    W = torch.randn(60, 50, generator=g, dtype=torch.float64)
    gx, gy = torch.autograd.grad((tp.pairwise(X, Y, "rbf", gamma=0.3) * W).sum(), (X, Y))
    rx, ry = torch.autograd.grad((torch.exp(-0.3 * ((X[:, None] - Y[None]) ** 2).sum(-1)) * W).sum(), (X, Y))
    torch.testing.assert_close(gx, rx)
    torch.testing.assert_close(gy, ry)
print("ok")
"""


@pytest.mark.parametrize("limit", ["0", str(2**62), None])
def test_results_on_both_sides_of_the_serial_limit(limit):
    env = dict(os.environ)
    env.pop("TORCHPAIR_SERIAL_WORK", None)
    if limit is not None:
        env["TORCHPAIR_SERIAL_WORK"] = limit
    r = subprocess.run([sys.executable, "-c", CHECKS], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
