"""tp.lazy validates an expression where it is built (the operator's own checks, run on meta
tensors) and remembers the combinations that passed: a second build of the same metric,
parameters, shapes and dtypes skips the check, a bad expression raises every time, and any
change the check could see (shape, dtype, parameter value, orientation) is checked anew."""
import sys

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import torchpair as tp

lazy_module = sys.modules["torchpair.lazy"]


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def _build_ops(*args, **kwargs):
    """The operators run while building tp.lazy(*args, **kwargs)."""
    with _Recorder() as rec:
        tp.lazy(*args, **kwargs)
    return rec.ops


@pytest.fixture(autouse=True)
def _fresh():
    lazy_module._VALIDATED.clear()
    yield
    lazy_module._VALIDATED.clear()


def test_second_build_skips_the_check_and_computes_the_same():
    x, y, v = torch.randn(20, 5), torch.randn(30, 5), torch.randn(30, 2)
    first = _build_ops(x, y, "rbf", gamma=0.3)
    assert any("torchpair" in op for op in first)  # the check ran the operator
    assert _build_ops(x.clone(), y.clone(), "rbf", gamma=0.3) == []  # same key: nothing runs
    K = tp.lazy(x, y, "rbf", gamma=0.3)
    ref = torch.exp(-0.3 * torch.cdist(x.double(), y.double()) ** 2) @ v.double()
    torch.testing.assert_close((K @ v).double(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("change", ["shape", "dtype", "param", "transposed", "metric", "symmetric"])
def test_what_the_check_sees_is_checked_again(change):
    x, y = torch.randn(20, 5), torch.randn(30, 5)
    _build_ops(x, y, "rbf", gamma=0.3)
    if change == "shape":
        ops = _build_ops(x, torch.randn(31, 5), "rbf", gamma=0.3)
    elif change == "dtype":
        ops = _build_ops(x.double(), y.double(), "rbf", gamma=0.3)
    elif change == "param":
        ops = _build_ops(x, y, "rbf", gamma=0.4)
    elif change == "metric":
        ops = _build_ops(x, y, "laplacian", gamma=0.3)
    elif change == "symmetric":
        ops = _build_ops(x, None, "rbf", gamma=0.3)
    else:
        K = tp.lazy(x, y, "rbf", gamma=0.3)
        with _Recorder() as rec:
            type(K)(x, y, "rbf", {"gamma": 0.3}, transposed=True)
        ops = rec.ops
    assert any("torchpair" in op for op in ops)


def test_a_bad_expression_raises_every_time():
    x, y = torch.randn(20, 5), torch.randn(30, 5)
    tp.lazy(x, y, "rbf", gamma=0.3)  # the same shapes passed with a valid parameter
    for _ in range(3):
        with pytest.raises(ValueError, match=r"torchpair\.lazy: .*gamma"):
            tp.lazy(x, y, "rbf", gamma=-1.0)
    for _ in range(3):  # features that differ: the operator's message, every time
        with pytest.raises(ValueError, match=r"torchpair\.lazy: 'x' has 5 features but 'y' has 4"):
            tp.lazy(x, torch.randn(30, 4), "rbf")
    assert len(lazy_module._VALIDATED) == 1


def test_tensor_parameters_are_keyed_by_shape_and_dtype():
    x, y = torch.randn(20, 3), torch.randn(30, 3)
    w = torch.rand(3) + 0.5
    _build_ops(x, y, "minkowski", p=2.0, w=w)
    assert _build_ops(x, y, "minkowski", p=2.0, w=torch.rand(3) + 0.5) == []
    with pytest.raises(ValueError, match=r"torchpair\.lazy"):  # a weight per feature: 3, not 4
        tp.lazy(x, y, "minkowski", p=2.0, w=torch.rand(4) + 0.5)


def test_the_memory_is_bounded(monkeypatch):
    monkeypatch.setattr(lazy_module, "_VALIDATED_LIMIT", 4)
    for n in range(1, 11):
        tp.lazy(torch.randn(n, 2), torch.randn(3, 2), "euclidean")
        assert 1 <= len(lazy_module._VALIDATED) <= 4
