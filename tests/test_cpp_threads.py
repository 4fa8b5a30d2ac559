"""The LibTorch C++ API called from several std::threads at once.

tests/cpp/test_threads.cpp (built by _cppbuild against the installed CMake package) runs
dense pairwise, every lazy consumer, a materialized (lazy = false) expression, gradients,
the set-level functions, pdist, emd and the sequence operators serially, checks the serial
results against dense torch formulas, then runs all of them from 4 std::threads at once and
requires every result to be bitwise equal to the serial one. A second phase has all threads
make the FIRST consumer calls of one shared lazy = false expression at the same moment (the
matrix is computed once, under a mutex).
"""
from __future__ import annotations

import re

import pytest

from _cppbuild import build, run as _run


@pytest.fixture(scope="module")
def cpp_build():
    return build()


def test_cpp_threads_bitwise_equal_to_serial(cpp_build):
    r = _run([cpp_build / "torchpair_cpp_threads", 4, 3], timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    m = re.search(r"(\d+) operations x 4 threads x 3 rounds, plus 12 shared materialized expressions: "
                  r"(\d+) comparisons, 0 failures", r.stdout)
    assert m, out
    n_ops, comparisons = int(m.group(1)), int(m.group(2))
    assert n_ops >= 10 and comparisons == n_ops * 4 * 3 + 12 * 4, out


def test_cpp_threads_rejects_bad_arguments(cpp_build):
    r = _run([cpp_build / "torchpair_cpp_threads", 0, 1], timeout=60)
    assert r.returncode == 2 and "usage" in r.stderr, r.stdout + r.stderr


def test_cpp_threads_comparison_can_fail(cpp_build):
    """One result changed by one ulp in one thread is reported: the comparison is bitwise."""
    r = _run([cpp_build / "torchpair_cpp_threads", 2, 1, "perturb"], timeout=600)
    assert r.returncode == 1 and "1 failures" in r.stdout and "thread 1 round 0" in r.stdout, r.stdout + r.stderr
