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
