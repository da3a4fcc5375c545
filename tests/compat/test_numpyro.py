"""numpyro 0.22.0 on fjax through ``fjax.compat``: distributions' log densities against scipy.stats and
their samples' moments, ``log_density`` of a model, NUTS on a linear regression against its conjugate
Gaussian posterior, ``Predictive``, HMC with two chains on a constrained (Beta-Bernoulli) site, and SVI
with an ``AutoNormal`` guide (numpyro.optim) and with a hand-written guide (an optax optimizer) against
conjugate posteriors. Monte Carlo results are held to a few standard errors.

numpyro (it declares a dependency on jax) is installed with ``pip install --no-deps`` beside its
pure-Python dependencies and optax when missing, so the real JAX is never pulled in; without network
access (or pip) the test skips with the reason. The checks (``_numpyro_checks.py``) pass under the real
JAX too (0.10.2, 2026-11-27).

With a warm kernel cache the 7 checks take ~5-25 s (the machine is shared); a cold cache several
minutes of numba compiles (NUTS's tree building). CI runs the subset below,
``FJAX_HYPOTHESIS_PROFILE=thorough`` all of them.
"""

from __future__ import annotations

from . import _subset

PACKAGES = ["numpyro==0.22.0", "multipledispatch", "tqdm", "optax==0.2.8", "chex==0.1.92", "absl-py", "toolz"]
MODULES = ["numpyro", "multipledispatch", "tqdm", "optax", "chex", "absl", "toolz"]
N_CHECKS = 7

# each a substring of one check's name in _numpyro_checks.py
QUICK = [
    "log_prob of 12 distributions",
    "log_density of the regression model",
    "NUTS linear regression",  # lax.population_count in NUTS's loop; jax.extend.core.primitives
    "HMC Beta-Bernoulli",  # betaln in the loop; lax.cond's old five-argument form
    "SVI AutoNormal",
]


def test_numpyro_on_fjax():
    _subset.installed_site(PACKAGES, MODULES, "numpyro")
    _subset.run_timed_checks("numpyro", QUICK, N_CHECKS)
