"""diffrax 0.7.2, lineax 0.1.1 and optimistix 0.1.0 on fjax through ``fjax.compat``: ODE solvers
(explicit and implicit, adaptive steps, dense output, events), gradients through solves (both
adjoints), vmap, SDEs on a VirtualBrownianTree, linear solves and their gradients, root finding,
minimisation and least squares.

The three (they declare a dependency on jax) are installed with ``pip install --no-deps`` beside
equinox and jaxtyping when missing, so the real JAX is never pulled in; without network access (or
pip) the test skips with the reason. The checks (``_diffrax_checks.py``) are ours, each against a
closed form, numpy, scipy or finite differences; the same script passes under the real JAX.

A cold kernel cache costs ~15 minutes of numba compiles for all 23 checks (the solver loops are
large kernels) and ~40 s warm; CI runs the subset below (one check per fjax gap these libraries
found), ``FJAX_HYPOTHESIS_PROFILE=thorough`` runs all of them.
"""

from __future__ import annotations

from . import _subset
from .test_equinox import MODULES as EQX_MODULES
from .test_equinox import PACKAGES as EQX_PACKAGES

PACKAGES = [*EQX_PACKAGES, "diffrax==0.7.2", "lineax==0.1.1", "optimistix==0.1.0"]
MODULES = [*EQX_MODULES, "diffrax", "lineax", "optimistix"]

# each a substring of one check's name in _diffrax_checks.py
QUICK = [
    "Dopri5 on Lotka-Volterra",  # SaveAt(ts) interpolates with jnp.polyval on 2-D coefficients
    "Kvaerno5",  # lineax/optimistix inside the solver: eval_shape of ShapeDtypeStructs
    "Euler fixed step",  # ConstantStepSize calls nextafter in every step
    "geometric Brownian motion",  # VirtualBrownianTree: float64 normals (erf_inv) in a loop
    "lineax LU, QR, SVD",
    "lineax gradient",
    "optimistix Newton",
    "LevenbergMarquardt",
    "Dogleg",  # linear_transpose of ShapeDtypeStructs
]


def test_diffrax_lineax_optimistix_on_fjax():
    _subset.installed_site(PACKAGES, MODULES, "diffrax")
    _subset.run_timed_checks("diffrax", QUICK, 23)
