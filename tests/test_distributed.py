"""torchpair.distributed on 2 and 3 local processes (gloo, loopback).

One spawn per world size runs every check of tests/_distributed_checks.py in each rank
(results and gradients against dense torch formulas and the single-process functions on the
concatenated tensors, unequal shards and shards of size 0); the processes have a collective
timeout and a join deadline, so they always stop. Each check is reported as its own test.
"""
import json
import multiprocessing
import os
import socket
import tempfile

import pytest
import torch.distributed as dist

import _distributed_checks as checks

pytestmark = pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                                reason="torch.distributed with gloo is not available")

DEADLINE_S = 240


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(world: int) -> dict:
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as out_dir:
        port = _free_port()
        procs = [ctx.Process(target=checks.worker, args=(r, world, port, out_dir), daemon=True) for r in range(world)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(DEADLINE_S)
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(5)
        results = {}
        for r in range(world):
            path = os.path.join(out_dir, f"rank{r}.json")
            results[r] = json.load(open(path)) if os.path.exists(path) else {}
        return {"results": results, "hung": hung, "exitcodes": [p.exitcode for p in procs]}


_RUNS: dict = {}


def _run(world: int) -> dict:
    if world not in _RUNS:
        _RUNS[world] = _spawn(world)
    return _RUNS[world]


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("name", checks.CHECKS)
def test_distributed(world, name):
    run = _run(world)
    assert not run["hung"], f"ranks {run['hung']} did not stop within {DEADLINE_S}s"
    failures = []
    for rank, results in run["results"].items():
        if "setup" in results:
            failures.append(f"rank {rank} setup:\n{results['setup']}")
        elif results.get(name) != "ok":
            missing = f"not run (exit code {run['exitcodes'][rank]})"
            failures.append(f"rank {rank}:\n{results.get(name, missing)}")
    assert not failures, "\n".join(failures)


def test_errors_without_a_process_group():
    """Argument errors come first; then a clear RuntimeError when no group is initialized."""
    import torch

    import torchpair.distributed as tpd

    x = torch.randn(3, 2)
    with pytest.raises(TypeError, match="'X'"):
        tpd.lazy([[1.0]], x)
    with pytest.raises(TypeError, match="'y_sharded'"):
        tpd.lazy(x, x, y_sharded="yes")
    with pytest.raises(TypeError, match="'unbiased'"):
        tpd.mmd(x, x, unbiased=1)
    with pytest.raises(ValueError, match="'metric'"):
        tpd.energy_distance(x, x, "rbf")
    if not dist.is_initialized():
        with pytest.raises(RuntimeError, match="init_process_group"):
            tpd.knn(x, x, 1)
