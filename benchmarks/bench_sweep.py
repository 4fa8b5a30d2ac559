"""The shape sweep: torchpair against the best installed peer on every shape
(docs/performance.md, "Shape sweep").

    python benchmarks/bench_sweep.py [--only dense,pdist,...] [--out DIR] [--budget S]

The same run as ``python -m torchpair bench --sweep``: writes DIR/sweep.md (the table, last
line the worst ratio), DIR/sweep.json and DIR/sweep.png (when matplotlib is installed).
Parts: dense, batched, pdist, lazy, knn, boolean, seq, emd, first (first call of each public
entry point in a fresh process), fresh (twelve calls on a large output in a fresh process).
The full run takes about 25 minutes on a quiet 2-core machine.
"""
from __future__ import annotations

import sys

from torchpair.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "--sweep", "--out", "build/sweep", *sys.argv[1:]]))
