"""The shape-sweep machinery (torchpair.bench.sweep): best-peer choice, ratios, skipped peers,
the worst-ratio line, the plot, and the command line's argument errors. The sweep's own
shapes are far too large for a test; rows here are synthetic with known relative costs."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from torchpair.bench import sweep


def _sleeper(seconds):
    return lambda: time.sleep(seconds)


def test_best_peer_ratio_and_skipped_peer():
    row = sweep.Row(
        "dense", "synthetic", _sleeper(0.02),
        [sweep.Peer("slow", lambda: _sleeper(0.08)),
         sweep.Peer("fast", lambda: _sleeper(0.005)),
         sweep.Peer("absent", None),
         sweep.Peer("too slow", lambda: pytest.fail("must not run above max_work"), max_work=10.0,
                    smaller=lambda: (_sleeper(0.001), "a smaller case", 5.0))],
        work=100.0)
    out = sweep.run_row(row, budget_s=0.1)
    assert out.best == "fast"
    assert out.ratio < 0.9  # 5 ms against 20 ms (sleeps only ever run long: no lower bound)
    assert set(out.others) == {"slow", "fast"}
    notes = " ".join(out.notes)
    assert "absent: not installed" in notes
    # the skipped peer is timed on its smaller case and extrapolated (x20 here), never counted as best
    assert "too slow: skipped" in notes and "a smaller case" in notes and "extrapolated" in notes


def test_failing_peer_is_reported_not_hidden():
    def boom():
        raise RuntimeError("no such thing")
    row = sweep.Row("pdist", "synthetic", _sleeper(0.001), [sweep.Peer("broken", lambda: boom)])
    out = sweep.run_row(row, budget_s=0.01)
    assert out.best is None and out.ratio is None
    assert any("broken failed: RuntimeError: no such thing" in n for n in out.notes)


def test_a_drifting_machine_slows_every_implementation_alike():
    # every call sleeps longer than the one before, as on a machine slowing down over the row:
    # timed one implementation after the other, the second would look ~2x slower than the first
    calls = []

    def drifting(name):
        def fn():
            calls.append(name)
            time.sleep(0.004 * (1 + len(calls) / 5))
        return fn
    row = sweep.Row("dense", "synthetic", drifting("ours"), [sweep.Peer("same", lambda: drifting("peer"))])
    out = sweep.run_row(row, budget_s=0.05)
    assert 0.75 < out.ratio < 1.33, (out.ratio, calls)
    # the rounds interleave: the peer's timed calls are not all after torchpair's
    assert calls.index("peer") < len(calls) - 1 - calls[::-1].index("ours")


def test_slow_calls_after_a_pause_do_not_set_the_repeats():
    # the first three calls after a pause take 20 ms (a worker thread waking on a virtual machine),
    # the others 1 ms; the peer takes 2 ms. Sized from one slow call, our side got 7 calls, most of
    # them right after a pause; the median must be the 1 ms steady call.
    last = [0.0]
    since_pause = [0]

    def waking():
        now = time.perf_counter()
        since_pause[0] = 0 if now - last[0] > 0.1 else since_pause[0] + 1
        time.sleep(0.02 if since_pause[0] < 3 else 0.001)
        last[0] = time.perf_counter()
    row = sweep.Row("dense", "synthetic", waking, [sweep.Peer("steady", lambda: _sleeper(0.002))])
    out = sweep.run_row(row, budget_s=0.3)
    assert out.ours_s < 0.005, out.ours_s
    assert out.ratio > 1.2


def test_markdown_worst_ratio_and_plot(tmp_path):
    results = {"outcomes": [sweep.Outcome("dense", "a", 0.010, "peer1", 0.020),
                            sweep.Outcome("dense", "b", 0.010, "peer2", 0.008, notes=["x: skipped"]),
                            sweep.Outcome("knn", "c", 0.5, None, None)],
               "first": None, "fresh": None, "roofline": None, "seconds": {"dense": 1.0}}
    md, png = sweep.write(results, str(tmp_path))
    text = open(md).read()
    assert "| dense | a | 10 ms | peer1 | 20 ms | 2.00x |" in text
    assert "| dense | b | 10 ms | peer2 | 8 ms | 0.80x |" in text
    last = [line for line in text.splitlines() if line.startswith("**Worst ratio")]
    assert last == ["**Worst ratio: 0.80x** (dense: b, against peer2; 1 of 2 rows below 1.0x)"]
    assert png and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.isfile(tmp_path / "sweep.json")


def _run(*args):
    return subprocess.run([sys.executable, "-m", "torchpair", "bench", *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_sweep_lists_parts():
    r = _run("--sweep", "--list")
    assert r.returncode == 0 and r.stdout.split() == list(sweep.PARTS)


@pytest.mark.parametrize("args, word", [(("--sweep", "--only", "dense,nope"), "'nope'"),
                                        (("--only", "dense"), "--sweep"),
                                        (("--sweep", "--budget", "0"), "--budget")])
def test_cli_sweep_argument_errors_are_one_line(args, word):
    r = _run(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and word in lines[0], r.stderr


@pytest.mark.parametrize("what", ["matmul", "softmax_matmul", "logsumexp"])
@pytest.mark.parametrize("chunked", [True, False])
def test_lazy_rows_time_the_same_values_on_every_side(what, chunked):
    """A lazy row's torch formula computes what torchpair's call does (softmax and logsumexp
    of the rbf values, not of their logits), checked on a small case against a float64 formula."""
    import torch

    g = torch.Generator().manual_seed(0)
    X, Y = torch.randn(70, 5, generator=g, dtype=torch.float64), torch.randn(90, 5, generator=g, dtype=torch.float64)
    V = torch.randn(90, 3, generator=g, dtype=torch.float64)
    ours, torch_f, _ = sweep._lazy_case(what, X, Y, V, 0.3, chunked)
    K = torch.exp(-0.3 * ((X[:, None] - Y[None]) ** 2).sum(-1))
    want = {"matmul": K @ V, "softmax_matmul": torch.softmax(K, -1) @ V, "logsumexp": K.logsumexp(-1)}[what]
    torch.testing.assert_close(ours(), want)
    torch.testing.assert_close(torch_f(), want)
