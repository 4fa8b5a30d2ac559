"""Benchmark workloads that ship with torchpair: the same work done by torchpair and by the
libraries people use today (torch, scipy, scikit-learn, pykeops, POT, rapidfuzz), side by side.

``python -m torchpair bench`` runs them and writes a report; the scripts in ``benchmarks/``
(source checkouts) run the larger tables of docs/performance.md, one per workload family.
"""
from .harness import Result, machine, run, save, table, timeit  # noqa: F401
from .workloads import WORKLOADS, Impl, Workload  # noqa: F401
