"""The command line (python -m torchpair): each subcommand runs in a subprocess, in quick mode."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import torch


def _run(*args, timeout=600):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "torchpair", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.parametrize("sub", [None, "demo", "bench", "info"])
def test_help(sub):
    r = _run(*([sub] if sub else []), "--help")
    assert r.returncode == 0, r.stderr
    assert "usage: torchpair" in r.stdout
    if sub:
        assert sub in r.stdout


def test_info_lists_versions_backends_and_catalog():
    import torchpair as tp

    r = _run("info")
    assert r.returncode == 0, r.stderr
    assert f"torch {torch.__version__}" in r.stdout
    for backend in ("native CPU", "CUDA", "KeOps"):
        assert backend in r.stdout
    for name in tp.metrics():
        assert re.search(rf"^\s+{re.escape(name)}\s", r.stdout, re.M), name
    data = json.loads(_run("info", "--json").stdout)
    assert data["torch"] == torch.__version__
    assert {m["name"] for m in data["metrics"]} == set(tp.metrics())


def test_bench_quick_writes_report_and_plots(tmp_path):
    out = tmp_path / "report"
    r = _run("bench", "--quick", "--no-progress", "--workload", "dense-euclidean", "--out", str(out))
    assert r.returncode == 0, r.stderr
    report = (out / "report.md").read_text()
    # torchpair and each anchor have a row per size; ratios are against torchpair
    for impl in ("torchpair", "torch.cdist", "sklearn pairwise_distances (n_jobs=2)", "scipy cdist"):
        assert f"| {impl} |" in report, impl
    assert re.search(r"\| torch\.cdist \| [0-9.]+ \| [0-9.]+x \|", report)
    png = (out / "dense-euclidean.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_bench_lists_workloads():
    r = _run("bench", "--list")
    assert r.returncode == 0 and "knn" in r.stdout and "lazy-rbf-matmul" in r.stdout


def test_bench_unknown_workload_is_one_line():
    r = _run("bench", "--workload", "no-such-workload")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "no-such-workload" in lines[0] and "--workload" in lines[0]


def test_bench_unwritable_out_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = _run("bench", "--quick", "--out", str(blocker / "sub"))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--out" in lines[0]


def test_demo_quick_runs_every_step():
    r = _run("demo", "--quick")
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout
    for step in range(1, 7):
        assert f"[{step}]" in out
    # the kNN accuracy equals scikit-learn's on the same split (an independent oracle)
    ours = float(re.search(r"accuracy ([0-9.]+)\n", out).group(1))
    ref = float(re.search(r"KNeighborsClassifier\(brute\) on the same split: accuracy ([0-9.]+)", out).group(1))
    assert ours > 0.95 and abs(ours - ref) < 0.01
    assert "would materialise" in out
    m = re.search(r"max relative error vs dense float64 on 8 rows ([0-9.e+-]+)", out)
    assert m and float(m.group(1)) < 1e-3
    assert "torchpair" in re.search(r"torch.export graph calls: (.*);", out).group(1)
