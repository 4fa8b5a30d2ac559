"""The vectorised float32 math the kernels use in place of ATen's (csrc/metrics/math.h), tanh,
exp and sqrt, checked against numpy's float64 functions over the whole float range, in every CPU
capability the engines are compiled for (each in a fresh process)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import torchpair as tp

# sigmoid = tanh(gamma * x . y + coef0): with gamma = 1, coef0 = 0 and y = [[1]], the GEMM
# product is x itself (exact), so the kernel's output is the vector tanh of x.
TANH_CHECK = textwrap.dedent("""
    import numpy as np, torch, torchpair as tp
    f32 = np.float32
    grid = np.concatenate([
        np.linspace(-12, 12, 400001, dtype=f32),
        np.logspace(-45, 1.5, 20000).astype(f32), -np.logspace(-45, 1.5, 20000).astype(f32),
        np.array([0.0, -0.0, np.inf, -np.inf, 1e30, -1e30, np.finfo(f32).max, np.finfo(f32).tiny], dtype=f32),
    ])
    got = tp.pairwise(torch.from_numpy(grid)[:, None], torch.ones(1, 1), "sigmoid", gamma=1.0, coef0=0.0)
    got = got[:, 0].double().numpy()
    want = np.tanh((grid + f32(0)).astype(np.float64))  # the kernel's argument: x * 1 + coef0
    # relative error in units of float32 epsilon (2^-23); tiny arguments: absolute, in subnormals
    scale = np.maximum(np.abs(want) * np.finfo(f32).eps, np.finfo(f32).smallest_subnormal)
    err = np.abs(got - want) / scale
    assert np.all(np.abs(got) <= 1.0), "tanh outside [-1, 1]"
    assert got[grid == np.inf][0] == 1.0 and got[grid == -np.inf][0] == -1.0
    nan = tp.pairwise(torch.tensor([[float("nan")]]), torch.ones(1, 1), "sigmoid", gamma=1.0, coef0=0.0)
    assert torch.isnan(nan).all()
    print("max-eps", float(err.max()), torch.backends.cpu.get_cpu_capability())
""")


# laplacian = exp(-gamma |x - y|): with D = 1, y = [[0]] and gamma = 1 its argument -|x| is
# exact, so the kernel's output is the vector exp of -|x|. Every caller of the float vector exp
# passes arguments <= 0 (kernels of distances, logsumexp and softmax after the max shift);
# the grid covers [-110, 0] densely, the subnormal results (below -87.3) and 0 (below -103.9).
EXP_CHECK = textwrap.dedent("""
    import numpy as np, torch, torchpair as tp
    f32 = np.float32
    grid = np.concatenate([
        np.linspace(0, 110, 1000001, dtype=f32),
        np.logspace(-45, 2.05, 40000).astype(f32),
        np.array([0.0, -0.0, np.inf, 87.3, 88.7, 103.2, 103.9, 104.0, 1e30, np.finfo(f32).max], dtype=f32),
    ])
    got = tp.pairwise(torch.from_numpy(grid)[:, None], torch.zeros(1, 1), "laplacian", gamma=1.0)
    got = got[:, 0].double().numpy()
    want = np.exp(-np.abs(grid).astype(np.float64))
    scale = np.maximum(want * np.finfo(f32).eps, np.finfo(f32).smallest_subnormal)
    err = np.abs(got - want) / scale
    assert got[grid == 0][0] == 1.0 and got[grid == np.inf][0] == 0.0
    assert np.all(got[grid > 103.98] == 0.0), "exp below the smallest subnormal must round to 0"
    assert np.all((got[(grid > 87.34) & (grid < 103.9)] > 0)), "subnormal results flushed to 0"
    nan = tp.pairwise(torch.tensor([[float("nan")]]), torch.zeros(1, 1), "laplacian", gamma=1.0)
    assert torch.isnan(nan).all()
    print("max-eps", float(err.max()), torch.backends.cpu.get_cpu_capability())
""")


# euclidean with D = 1 and y = [[0]] is sqrt(fl(x * x)): numpy's float32 product gives the
# kernel's exact argument, so the output is the vector sqrt of a known float. The grid spans
# subnormal to near-overflow arguments, plus the exact points (0, inf) the conventions fix.
SQRT_CHECK = textwrap.dedent("""
    import numpy as np, torch, torchpair as tp
    f32 = np.float32
    d2 = np.concatenate([
        np.logspace(-45, 38.4, 400001).astype(f32), np.linspace(0, 100, 200001, dtype=f32),
        np.array([0.0, np.finfo(f32).tiny, 2 * np.finfo(f32).tiny, 1.0, 4.0, 1e38], dtype=f32),
    ])
    x = np.sqrt(d2.astype(np.float64)).astype(f32)
    arg = (x * x).astype(f32)
    got = tp.pairwise(torch.from_numpy(x)[:, None], torch.zeros(1, 1), "euclidean")[:, 0].double().numpy()
    want = np.sqrt(arg.astype(np.float64))
    scale = np.maximum(want * np.finfo(f32).eps, np.finfo(f32).smallest_subnormal)
    err = np.abs(got - want) / scale
    assert got[x == 0][0] == 0.0, "sqrt(0) must be exactly 0"
    exact = (arg == 1.0) | (arg == 4.0)
    assert np.all(got[exact] == want[exact]), "sqrt of a perfect square must be exact"
    special = tp.pairwise(torch.tensor([[float("inf")], [float("nan")]]), torch.zeros(1, 1), "euclidean")[:, 0]
    assert special[0] == float("inf") and torch.isnan(special[1])
    print("max-eps", float(err.max()), torch.backends.cpu.get_cpu_capability())
""")


def _capabilities():
    best = torch.backends.cpu.get_cpu_capability()
    order = ["DEFAULT", "AVX2", "AVX512"]
    return order[: order.index(best) + 1] if best in order else ["DEFAULT"]


def _max_eps(check, capability):
    """Runs a check script in a fresh process pinned to one CPU capability; its max error in eps."""
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability.lower())
    out = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    _, max_err, used = out.stdout.split()
    assert used == capability
    return float(max_err)


@pytest.mark.parametrize("capability", _capabilities())
def test_float_tanh_within_4_eps(capability):
    # measured: 2.3 eps (AVX2, AVX512 with fused multiply-adds), 2.8 eps (DEFAULT, unfused)
    assert _max_eps(TANH_CHECK, capability) <= 4.0


def test_float_tanh_gradient_matches_formula():
    """d tanh / d arg = 1 - tanh^2 from the same values (sigmoid's backward): where tanh is near
    +-1 the subtraction leaves the value's absolute error (< 3 eps) doubled, hence atol."""
    x = torch.linspace(-6, 6, 2001, dtype=torch.float32)[:, None].requires_grad_()
    y = torch.ones(1, 1)
    tp.pairwise(x, y, "sigmoid", gamma=1.0, coef0=0.0).sum().backward()
    want = 1 - np.tanh(x.detach().double().numpy()) ** 2
    np.testing.assert_allclose(x.grad.double().numpy(), want, rtol=2e-6, atol=8 * 2.0 ** -23)


@pytest.mark.parametrize("capability", _capabilities())
def test_float_exp_within_2_eps(capability):
    # measured: 0.89 eps (AVX2 and AVX512: the polynomial of csrc/metrics/math.h), 0.50 eps
    # (DEFAULT: std::exp per lane); ATen's exp_u20 (the AVX paths before) flushed every
    # result below 1.2e-38 to 0
    assert _max_eps(EXP_CHECK, capability) <= 2.0


@pytest.mark.parametrize("capability", _capabilities())
def test_float_sqrt_within_1_eps(capability):
    # measured: 0.49 eps on every ISA, i.e. correctly rounded on the whole grid (AVX512 and
    # AVX2: estimate, Newton step and FMA residual correction; DEFAULT: std::sqrt per lane).
    # One Newton step without the correction measured 0.77 (AVX512) and 1.62 eps (AVX2) and
    # missed perfect squares.
    assert _max_eps(SQRT_CHECK, capability) <= 1.0
