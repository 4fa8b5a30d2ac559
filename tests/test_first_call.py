"""The first call of each public entry point in a fresh process, on a plain 2-D input, does
not import sympy (torch imports it lazily, through torch.broadcast_shapes and the symbolic
shape machinery); and the batch-shape broadcast torchpair
does in its place agrees with torch.broadcast_shapes."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from torchpair import _params

ENTRY_POINTS = {
    "pairwise": "tp.pairwise(X, Y, 'euclidean')",
    "pairwise rbf": "tp.pairwise(X, Y, 'rbf', gamma=0.5)",
    "cdist": "tp.cdist(X, Y, 'cityblock')",
    "pdist": "tp.pdist(X, 'euclidean')",
    "lazy matmul": "tp.lazy(X, Y, 'rbf', gamma=0.5) @ V",
    "lazy sum": "tp.lazy(X, Y, 'rbf', gamma=0.5).sum(-1)",
    "lazy logsumexp": "tp.lazy(X, Y, 'rbf', gamma=0.5).logsumexp(-1)",
    "lazy softmax_matmul": "tp.lazy(X, Y, 'rbf', gamma=0.5).softmax_matmul(V)",
    "lazy topk": "tp.lazy(X, Y, 'euclidean').topk(3, largest=False)",
    "knn": "tp.knn(X, Y, 5)",
    "boolean": "tp.pairwise(X > 0, Y > 0, 'jaccard')",
    "seq.pairwise": "tp.seq.pairwise(S, S, 'levenshtein')",
    "emd2": "tp.emd2(a, b, tp.pairwise(X, Y, 'sqeuclidean'))",
    "sinkhorn2": "tp.sinkhorn2(a, b, tp.pairwise(X, Y, 'sqeuclidean'), 1.0)",
}

SCRIPT = """
import sys, json, torch, torchpair as tp
g = torch.Generator().manual_seed(0)
X, Y, V = torch.randn(40, 5, generator=g), torch.randn(30, 5, generator=g), torch.randn(30, 2, generator=g)
a, b = torch.full((40,), 1 / 40), torch.full((30,), 1 / 30)
S = torch.randint(0, 9, (6, 7), generator=g)
before = "sympy" in sys.modules
{call}
print(json.dumps([before, "sympy" in sys.modules]))
"""


def test_first_plain_calls_do_not_import_sympy():
    # One subprocess runs every entry point in turn: each must leave sympy unimported (a
    # fresh process per entry point would cost a torch import each).
    calls = "\n".join(f"r = {c}\nassert 'sympy' not in sys.modules, {name!r}" for name, c in ENTRY_POINTS.items())
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(call=calls)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [False, False]


def test_the_check_itself_sees_sympy():
    # The subprocess check can fail: torch.broadcast_shapes does import sympy.
    script = SCRIPT.format(call="torch.broadcast_shapes((2, 1), (3,))")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [False, True]


@pytest.mark.parametrize("shapes", [
    ((), ()), ((3,), ()), ((), (4, 1)), ((2, 1), (3,)), ((1, 5), (7, 1)), ((0,), (1,)), ((2, 3), (2, 3)),
    ((2, 1, 4), (3, 1), (1,)), ((5,), (5,), (1, 5)),
])
def test_broadcast_shapes_matches_torch(shapes):
    assert _params.broadcast_shapes(*shapes) == torch.broadcast_shapes(*shapes)


@pytest.mark.parametrize("shapes", [((2,), (3,)), ((2, 3), (3, 3)), ((4, 2), (2, 4)), ((0,), (2,))])
def test_broadcast_shapes_rejects_what_torch_rejects(shapes):
    with pytest.raises(RuntimeError):
        torch.broadcast_shapes(*shapes)
    with pytest.raises(RuntimeError):
        _params.broadcast_shapes(*shapes)
