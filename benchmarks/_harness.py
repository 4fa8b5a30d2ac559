"""The benchmark helpers live in the package (torchpair.bench.harness) so `python -m torchpair
bench` and these scripts share them; this module keeps `from _harness import ...` working."""
from torchpair.bench.harness import Result, machine, run, run_interleaved, save, table, timeit  # noqa: F401
