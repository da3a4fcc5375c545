"""Checks of jaxopt 0.8.5 on fjax, run by tests/compat/test_jaxopt.py under ``python -m fjax.compat``
(``import jax`` is fjax). Each compares with a closed form, numpy, scipy or finite differences, never
with itself; the same script runs under the real JAX (``python _jaxopt_checks.py`` where jax is
installed) and reads no fjax internals.

Run some checks by name: ``python -m fjax.compat _jaxopt_checks.py "LBFGS"`` (substring match).
"""

from __future__ import annotations

import sys

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import jaxopt  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
import scipy.optimize  # noqa: E402
from _checks_common import close_rel as close  # noqa: E402
from _checks_common import finish, timed_checker  # noqa: E402
from jaxopt.implicit_diff import custom_root  # noqa: E402

check, results, failures = timed_checker(sys.argv[1:])


rng = np.random.default_rng(0)
X = rng.standard_normal((40, 5))
w_true = np.array([1.0, -2.0, 0.5, 0.0, 3.0])
y = X @ w_true + 0.1 * rng.standard_normal(40)
X_val = rng.standard_normal((20, 5))
y_val = X_val @ w_true + 0.1 * rng.standard_normal(20)


def ridge_objective(w, lam, X, y):
    r = X @ w - y
    return 0.5 * jnp.mean(r**2) + 0.5 * lam * jnp.sum(w**2)


def ridge_closed_form(lam, X=X, y=y):
    n = X.shape[0]
    return np.linalg.solve(X.T @ X / n + lam * np.eye(X.shape[1]), X.T @ y / n)


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


# ---------------------------------------------------------------- unconstrained solvers


@check("LBFGS on Rosenbrock vs scipy")
def _():
    x0 = jnp.array([-1.2, 1.0, -0.5, 0.8])
    sol = jaxopt.LBFGS(fun=rosenbrock, maxiter=500, tol=1e-10).run(x0)
    ref = scipy.optimize.minimize(lambda x: float(rosenbrock(jnp.asarray(x))), np.asarray(x0), method="BFGS")
    close(sol.params, np.ones(4), rtol=0, atol=1e-6)
    close(sol.params, ref.x, rtol=0, atol=1e-4)
    assert float(sol.state.error) <= 1e-10


@check("GradientDescent ridge vs closed form, jit(run)")
def _():
    solver = jaxopt.GradientDescent(fun=ridge_objective, maxiter=2000, tol=1e-10, stepsize=0.2)
    run = jax.jit(solver.run)
    sol = run(jnp.zeros(5), 0.1, X, y)
    close(sol.params, ridge_closed_form(0.1), rtol=1e-6, atol=1e-9)


@check("BFGS and NonlinearCG ridge vs closed form")
def _():
    want = ridge_closed_form(0.05)
    for solver in (
        jaxopt.BFGS(fun=ridge_objective, maxiter=200, tol=1e-10),
        jaxopt.NonlinearCG(fun=ridge_objective, maxiter=200, tol=1e-10),
    ):
        sol = solver.run(jnp.zeros(5), 0.05, X, y)
        close(sol.params, want, rtol=1e-7, atol=1e-9)


@check("LBFGS on a pytree of parameters (logistic regression) vs scipy")
def _():
    labels = (X @ w_true + 0.5 * rng.standard_normal(40) > 0).astype(np.float64)

    def loss(params, l2):
        logits = X @ params["w"] + params["b"]
        return jnp.mean(jax.nn.softplus(logits) - labels * logits) + 0.5 * l2 * jnp.sum(params["w"] ** 2)

    init = {"w": jnp.zeros(5), "b": jnp.array(0.0)}
    sol = jaxopt.LBFGS(fun=loss, maxiter=300, tol=1e-9).run(init, l2=0.1)

    def np_loss(p):
        logits = X @ p[:5] + p[5]
        return np.mean(np.logaddexp(0, logits) - labels * logits) + 0.05 * np.sum(p[:5] ** 2)

    ref = scipy.optimize.minimize(np_loss, np.zeros(6), method="BFGS", options={"gtol": 1e-10})
    close(sol.params["w"], ref.x[:5], rtol=0, atol=1e-6)
    close(sol.params["b"], ref.x[5], rtol=0, atol=1e-6)


@check("GaussNewton and LevenbergMarquardt curve fit vs scipy least_squares")
def _():
    t = np.linspace(0, 3, 30)
    obs = 2.5 * np.exp(-1.3 * t) + 0.3 + 0.01 * np.sin(7 * t)

    def residual(p, t, obs):
        return p[0] * jnp.exp(-p[1] * t) + p[2] - obs

    ref = scipy.optimize.least_squares(
        lambda p: p[0] * np.exp(-p[1] * t) + p[2] - obs, np.array([1.0, 1.0, 0.0]), xtol=1e-14, ftol=1e-14
    )
    for solver in (
        jaxopt.GaussNewton(residual_fun=residual, maxiter=100, tol=1e-12),
        jaxopt.LevenbergMarquardt(residual_fun=residual, maxiter=100, tol=1e-12),
    ):
        sol = solver.run(jnp.array([1.0, 1.0, 0.0]), t, obs)
        close(sol.params, ref.x, rtol=1e-6)


@check("OptaxSolver(adam) ridge vs closed form")
def _():
    solver = jaxopt.OptaxSolver(opt=optax.adam(0.05), fun=ridge_objective, maxiter=3000, tol=1e-9)
    sol = solver.run(jnp.zeros(5), 0.1, X, y)
    close(sol.params, ridge_closed_form(0.1), rtol=0, atol=1e-6)


# ---------------------------------------------------------------- constrained / proximal


@check("ProximalGradient lasso: KKT conditions")
def _():
    lam = 0.3
    sol = jaxopt.ProximalGradient(
        fun=lambda w, X, y: 0.5 * jnp.mean((X @ w - y) ** 2), prox=jaxopt.prox.prox_lasso, maxiter=5000, tol=1e-12
    ).run(jnp.zeros(5), hyperparams_prox=lam, X=X, y=y)
    w = np.asarray(sol.params)
    g = X.T @ (X @ w - y) / X.shape[0]
    nz = np.abs(w) > 1e-8
    close(g[nz], -lam * np.sign(w[nz]), rtol=0, atol=1e-7)  # stationarity on the support
    assert np.all(np.abs(g[~nz]) <= lam + 1e-7)  # subgradient bound off it
    assert nz.sum() >= 3


@check("ProjectedGradient onto the simplex vs scipy SLSQP")
def _():
    target = np.array([0.9, 0.4, -0.3, 0.2])

    def fun(p):
        return jnp.sum((p - target) ** 2)

    sol = jaxopt.ProjectedGradient(fun=fun, projection=jaxopt.projection.projection_simplex, tol=1e-12).run(
        jnp.ones(4) / 4
    )
    ref = scipy.optimize.minimize(
        lambda p: np.sum((p - target) ** 2), np.ones(4) / 4, method="SLSQP", bounds=[(0, None)] * 4,
        constraints={"type": "eq", "fun": lambda p: p.sum() - 1}, options={"ftol": 1e-14},
    )  # fmt: skip
    close(sol.params, ref.x, rtol=0, atol=1e-6)
    close(jnp.sum(sol.params), 1.0, rtol=1e-12)


@check("BoxOSQP quadratic program vs scipy")
def _():
    Q = np.array([[4.0, 1.0], [1.0, 2.0]])
    c = np.array([1.0, 1.0])
    A = np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    lo, hi = np.array([1.0, 0.0, 0.0]), np.array([1.0, 0.7, 0.7])
    sol = jaxopt.BoxOSQP(tol=1e-8, maxiter=4000).run(params_obj=(Q, c), params_eq=A, params_ineq=(lo, hi))
    ref = scipy.optimize.minimize(
        lambda x: 0.5 * x @ Q @ x + c @ x, np.array([0.5, 0.5]), method="SLSQP", bounds=[(0, 0.7)] * 2,
        constraints={"type": "eq", "fun": lambda x: x.sum() - 1}, options={"ftol": 1e-14},
    )  # fmt: skip
    close(sol.params.primal[0], ref.x, rtol=0, atol=1e-4)


@check("LBFGSB with box bounds vs scipy L-BFGS-B")
def _():
    def f(w):
        return jnp.sum((X @ w - y) ** 2)

    lo, hi = np.full(5, -1.0), np.full(5, 1.0)
    sol = jaxopt.LBFGSB(fun=f, tol=1e-10, maxiter=500).run(jnp.zeros(5), bounds=(jnp.asarray(lo), jnp.asarray(hi)))
    ref = scipy.optimize.minimize(
        lambda w: np.sum((X @ w - y) ** 2), np.zeros(5), jac=lambda w: 2 * X.T @ (X @ w - y), method="L-BFGS-B",
        bounds=list(zip(lo, hi)), options={"ftol": 1e-15, "gtol": 1e-12},
    )  # fmt: skip
    close(sol.params, ref.x, rtol=0, atol=1e-6)


@check("isotonic regression (a pure_callback to numba) and its gradient vs scipy")
def _():
    from jaxopt.isotonic import isotonic_l2_pav  # noqa: PLC0415

    v = np.array([3.0, 1.0, 2.0, 5.0, 4.0, 4.5, 0.5, 6.0])
    want = scipy.optimize.isotonic_regression(v).x
    close(isotonic_l2_pav(jnp.asarray(v)), want, rtol=1e-12)
    close(jax.jit(isotonic_l2_pav)(jnp.asarray(v)), want, rtol=1e-12)
    close(jax.vmap(isotonic_l2_pav)(jnp.stack([jnp.asarray(v), -jnp.asarray(v)])),
          [want, scipy.optimize.isotonic_regression(-v).x], rtol=1e-12)  # fmt: skip
    # the solution averages blocks: d sol[0] / d v is 1/|block| over the first block
    g = jax.grad(lambda u: isotonic_l2_pav(u)[0])(jnp.asarray(v))
    block = want == want[0]
    close(g, np.where(block, 1.0 / block.sum(), 0.0), rtol=1e-7, atol=1e-12)


@check("jaxopt.linear_solve: CG, GMRES, BiCGSTAB, LU, Cholesky vs numpy")
def _():
    from jaxopt import linear_solve  # noqa: PLC0415

    A = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, 1.0]])
    b = np.array([1.0, 2.0, 3.0])
    want = np.linalg.solve(A, b)
    for solve in (linear_solve.solve_cg, linear_solve.solve_gmres, linear_solve.solve_bicgstab,
                  linear_solve.solve_lu, linear_solve.solve_cholesky, linear_solve.solve_normal_cg):  # fmt: skip
        close(solve(lambda x: jnp.asarray(A) @ x, jnp.asarray(b)), want, rtol=1e-10)


@check("OSQP and EqualityConstrainedQP vs scipy")
def _():
    Q = np.array([[4.0, 1.0], [1.0, 2.0]])
    c = np.array([1.0, 1.0])
    A, b = np.array([[1.0, 1.0]]), np.array([1.0])
    G, h = -np.eye(2), np.zeros(2)
    sol = jaxopt.OSQP(tol=1e-8).run(params_obj=(Q, c), params_eq=(A, b), params_ineq=(G, h))
    eq = jaxopt.EqualityConstrainedQP().run(params_obj=(Q, c), params_eq=(A, b))
    kkt = np.block([[Q, A.T], [A, np.zeros((1, 1))]])
    want = np.linalg.solve(kkt, np.concatenate([-c, b]))[:2]  # (the inequalities are inactive here)
    close(sol.params.primal, want, rtol=0, atol=1e-5)
    close(eq.params.primal, want, rtol=1e-10)


# ---------------------------------------------------------------- roots and fixed points


@check("Bisection and Broyden roots vs scipy brentq")
def _():
    def f(x, a):
        return x**3 - a

    sol = jaxopt.Bisection(optimality_fun=f, lower=0.0, upper=3.0, tol=1e-12, maxiter=100).run(a=2.0)
    close(sol.params, scipy.optimize.brentq(lambda x: x**3 - 2.0, 0, 3, xtol=1e-14), rtol=1e-10)
    sol = jaxopt.Broyden(fun=lambda x: jnp.tanh(x) - 0.5 * x + 0.1, tol=1e-10).run(jnp.array([2.0]))
    ref = scipy.optimize.brentq(lambda x: np.tanh(x) - 0.5 * x + 0.1, 1.0, 3.0, xtol=1e-14)
    close(sol.params, [ref], rtol=1e-8)


@check("FixedPointIteration and AndersonAcceleration vs closed form")
def _():
    A = np.array([[0.5, 0.2], [0.1, 0.3]])
    b = np.array([1.0, 2.0])
    want = np.linalg.solve(np.eye(2) - A, b)

    def T(x, A, b):
        return A @ x + b

    for solver in (
        jaxopt.FixedPointIteration(fixed_point_fun=T, tol=1e-12, maxiter=500),
        jaxopt.AndersonAcceleration(fixed_point_fun=T, tol=1e-12, maxiter=200),
    ):
        close(solver.run(jnp.zeros(2), A, b).params, want, rtol=1e-10)


# ---------------------------------------------------------------- implicit differentiation


@check("implicit diff: jacobian of the ridge solution wrt lambda vs closed form")
def _():
    solver = jaxopt.LBFGS(fun=ridge_objective, maxiter=500, tol=1e-12)
    lam = 0.1
    jac = jax.jacobian(lambda l: solver.run(jnp.zeros(5), l, X, y).params)(lam)
    n = X.shape[0]
    A = X.T @ X / n + lam * np.eye(5)
    want = -np.linalg.solve(A, ridge_closed_form(lam))  # d/dlam of A(lam)^-1 X^T y / n
    close(jac, want, rtol=1e-6, atol=1e-9)


@check("implicit diff: hyperparameter gradient of a validation loss vs finite differences")
def _():
    solver = jaxopt.GradientDescent(fun=ridge_objective, maxiter=3000, tol=1e-12, stepsize=0.2)

    def val_loss(log_lam):
        w = solver.run(jnp.zeros(5), jnp.exp(log_lam), X, y).params
        return jnp.mean((X_val @ w - y_val) ** 2)

    def np_val(log_lam):
        w = ridge_closed_form(np.exp(log_lam))
        return np.mean((X_val @ w - y_val) ** 2)

    g = jax.grad(val_loss)(-1.0)
    eps = 1e-5
    close(g, (np_val(-1.0 + eps) - np_val(-1.0 - eps)) / (2 * eps), rtol=1e-5)


@check("custom_root decorator on a hand-written Newton solver vs closed form")
def _():
    def optimality(x, a):  # x^2 = a
        return x**2 - a

    @custom_root(optimality)
    def sqrt_newton(x0, a):
        def body(_, x):
            return 0.5 * (x + a / x)

        return jax.lax.fori_loop(0, 30, body, x0)

    a = 3.0
    close(sqrt_newton(1.0, a), np.sqrt(a), rtol=1e-12)
    close(jax.grad(sqrt_newton, argnums=1)(1.0, a), 0.5 / np.sqrt(a), rtol=1e-10)
    close(jax.grad(jax.grad(lambda a: sqrt_newton(1.0, a)))(a), -0.25 * a**-1.5, rtol=1e-6)


@check("vmap over solver runs: ridge for several lambdas")
def _():
    lams = jnp.array([0.01, 0.1, 1.0])
    solver = jaxopt.LBFGS(fun=ridge_objective, maxiter=300, tol=1e-10)
    sols = jax.vmap(lambda l: solver.run(jnp.zeros(5), l, X, y).params)(lams)
    for i, lam in enumerate([0.01, 0.1, 1.0]):
        close(sols[i], ridge_closed_form(lam), rtol=1e-7, atol=1e-9)


finish("jaxopt", results, failures)
