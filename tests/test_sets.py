"""Set-level consumers against independent oracles: kNN vs sklearn NearestNeighbors(brute),
directed Hausdorff vs scipy, MMD and energy distance vs their dense formulas (and
scipy.stats.energy_distance in 1-D), Chamfer vs the dense formula; batching and empty sets."""
import math

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist, directed_hausdorff
from scipy.stats import energy_distance as scipy_energy
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.neighbors import NearestNeighbors

import torchpair as tp
from cases import rbf_mmd_reference


def data(n=60, m=80, d=5, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=dtype), torch.randn(m, d, generator=g, dtype=dtype) + 0.3


@pytest.mark.parametrize("d", [3, 32])
@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean"])
def test_knn_against_sklearn(d, metric):
    x, y = data(d=d)
    got = tp.knn(x, y, 7, metric=metric)
    nn = NearestNeighbors(n_neighbors=7, algorithm="brute", metric="euclidean").fit(y.numpy())
    dist, idx = nn.kneighbors(x.numpy())
    want = dist if metric == "euclidean" else dist**2
    np.testing.assert_allclose(got.values.numpy(), want, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(got.indices.numpy(), idx)


def test_knn_float32_and_similarity():
    x, y = data(dtype=torch.float32)
    got = tp.knn(x, y, 4, metric="euclidean")
    ref = torch.cdist(x.double(), y.double()).topk(4, largest=False)
    torch.testing.assert_close(got.values.double(), ref.values, rtol=1e-5, atol=1e-5)
    # a kernel's nearest neighbours are its largest similarities
    sim = tp.knn(x, y, 3, metric="rbf", gamma=0.5)
    ref = torch.from_numpy(rbf_kernel(x.double().numpy(), y.double().numpy(), gamma=0.5)).topk(3)
    torch.testing.assert_close(sim.values.double(), ref.values, rtol=1e-5, atol=1e-6)
    assert torch.equal(sim.indices, ref.indices)


def test_knn_self_and_batched():
    x, _ = data()
    got = tp.knn(x, None, 2)
    assert torch.equal(got.indices[:, 0], torch.arange(60)) and torch.all(got.values[:, 0] == 0)
    xb, yb = torch.stack([data(seed=s)[0] for s in range(3)]), torch.stack([data(seed=s)[1] for s in range(3)])
    got = tp.knn(xb, yb, 5)
    for b in range(3):
        want = torch.cdist(xb[b], yb[b]).topk(5, largest=False)
        torch.testing.assert_close(got.values[b], want.values)
        assert torch.equal(got.indices[b], want.indices)


@pytest.mark.parametrize("d", [2, 24])
def test_hausdorff_against_scipy(d):
    x, y = data(d=d)
    assert math.isclose(tp.hausdorff(x, y, directed=True).item(), directed_hausdorff(x.numpy(), y.numpy())[0],
                        rel_tol=1e-12)
    both = max(directed_hausdorff(x.numpy(), y.numpy())[0], directed_hausdorff(y.numpy(), x.numpy())[0])
    assert math.isclose(tp.hausdorff(x, y).item(), both, rel_tol=1e-12)
    xb = torch.stack([x, x * 2])
    yb = torch.stack([y, y])
    out = tp.hausdorff(xb, yb, directed=True)
    assert math.isclose(out[1].item(), directed_hausdorff(2 * x.numpy(), y.numpy())[0], rel_tol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
def test_chamfer_against_dense(metric, reduction):
    x, y = data()
    d = cdist(x.numpy(), y.numpy(), metric)
    red = np.mean if reduction == "mean" else np.sum
    want = red(d.min(1)) + red(d.min(0))
    assert math.isclose(tp.chamfer(x, y, metric, reduction=reduction).item(), want, rel_tol=1e-12)


@pytest.mark.parametrize("unbiased", [False, True])
def test_mmd_against_dense_formula(unbiased):
    x, y = data()
    want = rbf_mmd_reference(x.numpy(), y.numpy(), 0.25, unbiased)
    assert math.isclose(tp.mmd(x, y, gamma=0.25, unbiased=unbiased).item(), want, rel_tol=1e-9, abs_tol=1e-12)
    assert tp.mmd(x, y, metric="laplacian" if "laplacian" in tp.metrics() else "rbf").item() > 0


def test_energy_distance_against_scipy_1d_and_dense():
    g = torch.Generator().manual_seed(3)
    u, v = torch.randn(40, 1, generator=g, dtype=torch.float64), torch.randn(55, 1, generator=g, dtype=torch.float64)
    assert math.isclose(tp.energy_distance(u, v).item(), scipy_energy(u[:, 0].numpy(), v[:, 0].numpy()),
                        rel_tol=1e-10)
    x, y = data()
    want = math.sqrt(2 * cdist(x.numpy(), y.numpy()).mean() - cdist(x.numpy(), x.numpy()).mean()
                     - cdist(y.numpy(), y.numpy()).mean())
    assert math.isclose(tp.energy_distance(x, y).item(), want, rel_tol=1e-10)


def test_empty_sets():
    x, y, e = torch.randn(5, 3), torch.randn(4, 3), torch.randn(0, 3)
    assert tp.hausdorff(e, y, directed=True).item() == 0
    assert math.isinf(tp.hausdorff(x, e, directed=True).item())
    assert math.isinf(tp.hausdorff(e, y).item())
    assert tp.hausdorff(e, e).item() == 0
    assert tp.chamfer(e, e).item() == 0 and math.isinf(tp.chamfer(x, e).item())
    with pytest.raises(ValueError, match="'x' needs at least 1 sample"):
        tp.mmd(e, y)
    with pytest.raises(ValueError, match="'y' needs at least 2 samples"):
        tp.mmd(x, y[:1], unbiased=True)
    with pytest.raises(ValueError, match="'y' needs at least 1 sample"):
        tp.energy_distance(x, e)
    assert tp.knn(x, y, 0).values.shape == (5, 0)


def test_energy_distance_gradient_is_zero_for_identical_sets():
    x = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
    out = tp.energy_distance(x, x.detach().clone())
    out.backward()
    assert out.item() == pytest.approx(0, abs=1e-12) and torch.isfinite(x.grad).all()
