"""equinox on fjax through ``fjax.compat``: its layers, filtered transforms, checkpointed loops,
runtime errors, serialisation and its own primitives (which use ``jax.extend.core.Primitive``,
``jax.interpreters.ad/batching`` and ``mlir.lower_fun``).

equinox (it declares a dependency on jax) and jaxtyping, wadler_lindig and typing_extensions are
installed with ``pip install --no-deps`` when missing, so the real JAX is never pulled in; without
network access (or pip) the test skips with the reason. equinox's own test files are not in its
wheel; the checks (``_equinox_checks.py``) are ours, each against numpy, finite differences or a
closed form.
"""

from __future__ import annotations

from . import _subset

PACKAGES = ["equinox==0.13.8", "jaxtyping==0.3.11", "wadler_lindig==0.1.8", "typing_extensions"]
MODULES = ["equinox", "jaxtyping", "wadler_lindig", "typing_extensions"]


def test_equinox_on_fjax():
    _subset.installed_site(PACKAGES, MODULES, "equinox")
    _subset.run_check_script("equinox", 14)
