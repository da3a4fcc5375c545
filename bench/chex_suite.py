"""Run chex's shipped test suite on fjax (``import jax`` -> fjax through ``fjax.compat``).

    python bench/chex_suite.py [--install] [--min-pass N] [--junitxml PATH] [--show-output]
                               [pytest args / test files ...]

The same runner as ``bench/optax_suite.py`` (its options, output and exit codes), for chex:
``--install`` installs chex 0.1.92, its dependencies absl-py, toolz and typing_extensions, and
cloudpickle (its tests import it) with ``--no-deps`` (chex declares jax and jaxlib, which must not
be pulled in). Without file arguments
it runs every ``*_test.py`` in the installed chex package; files may be given as
``chex/_src/asserts_test.py``, ``_src/asserts_test.py`` or paths. ``-n 2`` runs it on two
pytest-xdist workers (about two minutes here).
"""

from __future__ import annotations

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from optax_suite import main  # noqa: E402

NO_DEPS = ["chex==0.1.92", "absl-py", "toolz", "typing_extensions", "cloudpickle"]


def install() -> None:
    """pip-install chex and its non-JAX dependencies without letting them pull in jax."""
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", *NO_DEPS], check=True)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:], package="chex", install_fn=install))
