"""jaxopt 0.8.5 on fjax through ``fjax.compat``: LBFGS, BFGS, nonlinear CG, gradient descent, Gauss-Newton,
Levenberg-Marquardt, LBFGSB, proximal and projected gradient, OSQP/BoxOSQP, Bisection, Broyden, fixed
points (plain and Anderson), jaxopt's linear solvers, isotonic regression (a ``pure_callback`` to a numba
function), implicit differentiation (through solvers and ``custom_root``) and ``vmap``/``jit`` of solver
runs.

jaxopt (it declares a dependency on jax) is installed with ``pip install --no-deps`` beside optax when
missing, so the real JAX is never pulled in; without network access (or pip) the test skips with the
reason. The checks (``_jaxopt_checks.py``) are ours, each against a closed form, numpy, scipy or finite
differences; the same script passes under the real JAX (0.10.2, 2026-11-27).

With a warm kernel cache the 19 checks take ~10 s; a cold cache ~5 minutes of numba compiles. CI runs
the subset below, ``FJAX_HYPOTHESIS_PROFILE=thorough`` all of them.
"""

from __future__ import annotations

from . import _subset

PACKAGES = ["jaxopt==0.8.5", "optax==0.2.8", "chex==0.1.92", "absl-py", "toolz"]
MODULES = ["jaxopt", "optax", "chex", "absl", "toolz"]
N_CHECKS = 19

# each a substring of one check's name in _jaxopt_checks.py
QUICK = [
    "LBFGS on Rosenbrock",
    "GradientDescent ridge",
    "GaussNewton and LevenbergMarquardt",
    "ProjectedGradient onto the simplex",
    "isotonic regression",  # a pure_callback to a numba function gets fjax arrays
    "implicit diff: jacobian",
    "custom_root decorator",
]


def test_jaxopt_on_fjax():
    _subset.installed_site(PACKAGES, MODULES, "jaxopt")
    _subset.run_timed_checks("jaxopt", QUICK, N_CHECKS)
