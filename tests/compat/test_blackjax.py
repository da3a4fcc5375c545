"""blackjax 1.7.1 on fjax through ``fjax.compat``: NUTS after ``window_adaptation``, HMC with a dense
inverse mass matrix, random-walk Metropolis (``rmh`` and ``normal_random_walk``), MCLMC after
``mclmc_find_L_and_step_size`` and MALA over four chains by ``vmap`` with ``rhat``/``ess``, each on a
Gaussian target whose mean and covariance the samples must reproduce (a few standard errors), written
as blackjax's documentation writes its sampling loop (a ``lax.scan`` of a jitted step).

blackjax (it declares a dependency on jax) is installed with ``pip install --no-deps`` beside optax
when missing, so the real JAX is never pulled in; without network access (or pip) the test skips with
the reason. The checks (``_blackjax_checks.py``) pass under the real JAX too (0.10.2, 2026-11-27).

A warm kernel cache runs the CI subset in ~5 s; MCLMC's tuning (~3 s warm, but ~2 minutes of numba
compiles cold) runs only under ``FJAX_HYPOTHESIS_PROFILE=thorough``, with the other checks.
"""

from __future__ import annotations

from . import _subset

PACKAGES = ["blackjax==1.7.1", "optax==0.2.8", "chex==0.1.92", "absl-py", "toolz", "typing_extensions"]
MODULES = ["blackjax", "optax", "chex", "absl", "toolz", "typing_extensions"]
N_CHECKS = 5

# each a substring of one check's name in _blackjax_checks.py
QUICK = [
    "window_adaptation + NUTS",  # Cholesky inside the NUTS loop of an eager scan's body
    "HMC with a dense inverse mass matrix",
    "random walk Metropolis",
    "MALA on a 1-D Gaussian",
]


def test_blackjax_on_fjax():
    _subset.installed_site(PACKAGES, MODULES, "blackjax")
    _subset.run_timed_checks("blackjax", QUICK, N_CHECKS)
