"""``python -m bench``: every benchmark figure side by side with JAX (bench/run_all.py)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from run_all import main  # noqa: E402

sys.exit(main())
