"""torch.library.opcheck for every operator (schema, autograd registration, fake tensor,
AOT dispatch with dynamic shapes), float32 and float64."""
import pytest
import torch

from cases import OP_CASES


def resolve(qualname):
    ns, name = qualname.split("::")
    return getattr(getattr(torch.ops, ns), name).default


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("case", OP_CASES, ids=[c.id for c in OP_CASES])
def test_opcheck(case, dtype):
    torch.library.opcheck(resolve(case.op), case.make_args(dtype), case.kwargs)


def test_every_operator_has_a_row():
    covered = {c.op for c in OP_CASES}
    registered = {n for n in torch._C._dispatch_get_all_op_names() if n.startswith("torchpair::")}
    # introspection: no tensor result to check (_prepare returns the prepared engine call,
    # kernel id and scalars included; its rows are in tests/test_bad_input.py and
    # tests/test_keops_backend.py)
    introspection = {"torchpair::_catalog", "torchpair::_build_info", "torchpair::_prepare"}
    missing = registered - covered - introspection
    assert not missing, f"operators without opcheck rows: {missing}"


CORE_OPERATORS = ["_dense", "_dense_backward", "_matmul", "_matmul_backward", "_row_reduce", "_row_reduce_backward",
                  "_topk", "_softmax_matmul", "_softmax_matmul_backward", "_paired", "_paired_backward", "_pdist",
                  "_pdist_backward"]


def test_core_operators_name_the_transposed_flag():
    """K^T is `transposed` in every core operator that has the flag (docs/contracts.md)."""
    with_flag = []
    for name in CORE_OPERATORS:
        args = [a.name for a in resolve("torchpair::" + name)._schema.arguments]
        assert "transpose" not in args, name
        if "transposed" in args:
            with_flag.append(name)
    assert sorted(with_flag) == sorted(n for n in CORE_OPERATORS if "paired" not in n and "pdist" not in n)


def test_core_fake_kernels_take_the_schema_arguments():
    """The fake kernels (Python) restate each core operator's arguments: same names, same order."""
    import inspect

    from torchpair import _meta

    for name in CORE_OPERATORS:
        schema = [a.name for a in resolve("torchpair::" + name)._schema.arguments]
        fake = list(inspect.signature(getattr(_meta, name + "_fake")).parameters)
        assert fake == schema, name
