"""``python -m torchpair``: see torchpair.cli."""
import sys

from .cli import main

sys.exit(main())
