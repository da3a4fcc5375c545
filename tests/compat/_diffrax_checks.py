"""Checks of diffrax, lineax and optimistix on fjax, run by tests/compat/test_diffrax.py under
``python -m fjax.compat`` (``import jax`` is fjax). Each compares with a closed form, numpy, scipy
or finite differences, never with itself. The same script runs under the real JAX (``python
_diffrax_checks.py`` in an environment with jax): it reads no fjax internals.

Run one check by name: ``python -m fjax.compat _diffrax_checks.py "lineax LU"`` (substring match).
"""

from __future__ import annotations

import sys

import jax

jax.config.update("jax_enable_x64", True)

import diffrax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.random as jr  # noqa: E402
import lineax as lx  # noqa: E402
import numpy as np  # noqa: E402
import optimistix as optx  # noqa: E402
import scipy.integrate  # noqa: E402
import scipy.optimize  # noqa: E402
from _checks_common import close_rel as close  # noqa: E402
from _checks_common import finish, timed_checker  # noqa: E402

check, results, failures = timed_checker(sys.argv[1:])


# ---------------------------------------------------------------- diffrax: ODEs


def decay(t, y, args):
    return -args * y


@check("diffrax Tsit5 adaptive, SaveAt(ts) vs closed form")
def _():
    ts = jnp.linspace(0.0, 2.0, 5)
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(decay), diffrax.Tsit5(), 0.0, 2.0, 0.1, jnp.array([1.0, 2.0]), args=0.7,
        saveat=diffrax.SaveAt(ts=ts), stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-8),
    )  # fmt: skip
    want = np.exp(-0.7 * np.asarray(ts))[:, None] * np.array([1.0, 2.0])
    close(sol.ys, want, rtol=1e-6)
    close(sol.ts, ts, rtol=0, atol=1e-12)
    assert sol.result == diffrax.RESULTS.successful


def lotka(t, y, args):
    a, b, c, d = args
    return jnp.stack([a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]])


def lotka_np(t, y, a, b, c, d):
    return [a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]]


LV_ARGS = (1.1, 0.4, 0.4, 0.1)


@check("diffrax Dopri5 on Lotka-Volterra vs scipy solve_ivp")
def _():
    ts = np.linspace(0.0, 10.0, 11)
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(lotka), diffrax.Dopri5(), 0.0, 10.0, 0.01, jnp.array([10.0, 5.0]), args=LV_ARGS,
        saveat=diffrax.SaveAt(ts=jnp.asarray(ts)), stepsize_controller=diffrax.PIDController(rtol=1e-9, atol=1e-9),
        max_steps=4096,
    )  # fmt: skip
    ref = scipy.integrate.solve_ivp(lotka_np, (0, 10), [10.0, 5.0], t_eval=ts, args=LV_ARGS, rtol=1e-11, atol=1e-11)
    close(sol.ys, ref.y.T, rtol=1e-6)


@check("diffrax Euler fixed step: first order convergence on y'=-y")
def _():
    errs = []
    for n in (50, 100):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(decay), diffrax.Euler(), 0.0, 1.0, 1.0 / n, jnp.array(1.0), args=1.0)
        # Euler on y' = -y is exactly y_n = (1 - h)^n
        close(sol.ys[-1], (1 - 1.0 / n) ** n, rtol=1e-10)
        errs.append(abs(float(sol.ys[-1]) - np.exp(-1.0)))
    assert 1.8 < errs[0] / errs[1] < 2.2, errs


@check("diffrax Kvaerno5 (implicit) on a stiff linear system vs expm")
def _():
    import scipy.linalg

    a = np.array([[-1000.0, 1.0], [0.0, -0.5]])
    y0 = np.array([1.0, 1.0])
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(lambda t, y, args: args @ y), diffrax.Kvaerno5(), 0.0, 2.0, 0.01, jnp.asarray(y0),
        args=jnp.asarray(a), stepsize_controller=diffrax.PIDController(rtol=1e-7, atol=1e-9),
    )  # fmt: skip
    close(sol.ys[-1], scipy.linalg.expm(2.0 * a) @ y0, rtol=1e-5, atol=1e-9)
    assert int(sol.stats["num_steps"]) < 200, sol.stats["num_steps"]


@check("diffrax dense output sol.evaluate vs closed form")
def _():
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(lambda t, y, args: jnp.stack([y[1], -y[0]])), diffrax.Tsit5(), 0.0, 3.0, 0.1,
        jnp.array([0.0, 1.0]), saveat=diffrax.SaveAt(dense=True),
        stepsize_controller=diffrax.PIDController(rtol=1e-9, atol=1e-9),
    )  # fmt: skip
    for t in (0.37, 1.5, 2.99):
        close(sol.evaluate(t), [np.sin(t), np.cos(t)], rtol=0, atol=1e-6)
    close(sol.derivative(1.2), [np.cos(1.2), -np.sin(1.2)], rtol=0, atol=1e-4)


@check("diffrax jit + vmap over initial conditions")
def _():
    @jax.jit
    def solve(y0):
        return diffrax.diffeqsolve(
            diffrax.ODETerm(decay), diffrax.Tsit5(), 0.0, 1.0, 0.1, y0, args=2.0,
            stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-8),
        ).ys[-1]  # fmt: skip

    y0s = jnp.linspace(-1.0, 3.0, 6)
    close(jax.vmap(solve)(y0s), np.asarray(y0s) * np.exp(-2.0), rtol=1e-6)


def lv_final(theta, adjoint):
    return diffrax.diffeqsolve(
        diffrax.ODETerm(lotka), diffrax.Tsit5(), 0.0, 3.0, 0.01, jnp.array([10.0, 5.0]),
        args=(theta[0], theta[1], theta[2], theta[3]), adjoint=adjoint,
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-10), max_steps=4096,
    ).ys[-1]  # fmt: skip


def lv_final_scipy(theta):
    ref = scipy.integrate.solve_ivp(lotka_np, (0, 3), [10.0, 5.0], args=tuple(theta), rtol=1e-12, atol=1e-12)
    return ref.y[:, -1]


def fd_jacobian(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.stack(cols, -1)


@check("diffrax grad through the solve (RecursiveCheckpointAdjoint) vs finite differences")
def _():
    theta = np.array(LV_ARGS)
    w = np.array([1.0, -2.0])
    g = jax.grad(lambda th: jnp.dot(lv_final(th, diffrax.RecursiveCheckpointAdjoint()), w))(jnp.asarray(theta))
    close(g, w @ fd_jacobian(lv_final_scipy, theta), rtol=1e-4, atol=1e-5)


@check("diffrax grad through the solve (BacksolveAdjoint) vs finite differences")
def _():
    theta = np.array(LV_ARGS)
    g = jax.grad(lambda th: jnp.sum(lv_final(th, diffrax.BacksolveAdjoint())))(jnp.asarray(theta))
    close(g, fd_jacobian(lv_final_scipy, theta).sum(0), rtol=1e-4, atol=1e-5)


@check("diffrax grad wrt y0 and t1 vs closed form")
def _():
    def f(y0, t1):
        return diffrax.diffeqsolve(
            diffrax.ODETerm(decay), diffrax.Dopri5(), 0.0, t1, 0.05, y0, args=0.5,
            stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-10),
        ).ys[-1]  # fmt: skip

    gy, gt = jax.jit(jax.grad(f, argnums=(0, 1)))(2.0, 1.5)
    close(gy, np.exp(-0.75), rtol=1e-6)
    close(gt, -0.5 * 2.0 * np.exp(-0.75), rtol=1e-6)


@check("diffrax event terminates at the root (ball drop)")
def _():
    # y'' = -g, y(0) = 10: the ball hits y = 0 at t = sqrt(2 * 10 / g)
    g = 9.81

    def cond_fn(t, y, args, **kwargs):
        return y[0]

    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(lambda t, y, args: jnp.stack([y[1], -g + 0 * y[0]])), diffrax.Tsit5(), 0.0, 10.0, 0.01,
        jnp.array([10.0, 0.0]), event=diffrax.Event(cond_fn, root_finder=optx.Newton(1e-10, 1e-10)),
        stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-8),
    )  # fmt: skip
    close(sol.ts[-1], np.sqrt(20.0 / g), rtol=1e-7)
    close(sol.ys[-1, 0], 0.0, rtol=0, atol=1e-7)


@check("diffrax SDE: geometric Brownian motion mean and variance over paths (VirtualBrownianTree)")
def _():
    mu, sigma, t1, n = 0.5, 0.3, 1.0, 400

    def one(key):
        bm = diffrax.VirtualBrownianTree(0.0, t1, tol=1e-3, shape=(), key=key)
        terms = diffrax.MultiTerm(
            diffrax.ODETerm(lambda t, y, args: mu * y), diffrax.ControlTerm(lambda t, y, args: sigma * y, bm)
        )
        return diffrax.diffeqsolve(terms, diffrax.Heun(), 0.0, t1, 0.02, jnp.array(1.0)).ys[-1]

    ys = np.asarray(jax.jit(jax.vmap(one))(jr.split(jr.PRNGKey(0), n)))
    mean, var = np.exp(mu * t1), np.exp(2 * mu * t1) * (np.exp(sigma**2 * t1) - 1)
    # the sample mean's standard error is sqrt(var / n) ~ 0.026; allow 4 of them plus the weak error
    assert abs(ys.mean() - mean) < 4 * np.sqrt(var / n) + 0.01, (ys.mean(), mean)
    assert abs(ys.var() / var - 1) < 0.35, (ys.var(), var)


@check("diffrax SDE: Euler-Maruyama with a known path equals the exact GBM solution (strong)")
def _():
    mu, sigma, t1 = 0.2, 0.4, 1.0
    key = jr.PRNGKey(3)
    bm = diffrax.VirtualBrownianTree(0.0, t1, tol=1e-4, shape=(), key=key)
    terms = diffrax.MultiTerm(
        diffrax.ODETerm(lambda t, y, args: mu * y), diffrax.ControlTerm(lambda t, y, args: sigma * y, bm)
    )
    w1 = float(bm.evaluate(0.0, t1))
    exact = np.exp((mu - sigma**2 / 2) * t1 + sigma * w1)
    errs = []
    for dt in (0.01, 0.0025):
        # Milstein-type Heun is Stratonovich; Euler is Ito: the Ito GBM solution above
        y = diffrax.diffeqsolve(terms, diffrax.Euler(), 0.0, t1, dt, jnp.array(1.0)).ys[-1]
        errs.append(abs(float(y) - exact))
    assert errs[1] < 0.05 * exact and errs[1] < errs[0] * 1.2, errs


# ---------------------------------------------------------------- lineax

rng = np.random.default_rng(0)
A = rng.standard_normal((5, 5)) + 5 * np.eye(5)
SPD = A @ A.T + np.eye(5)
B = rng.standard_normal(5)


@check("lineax LU, QR, SVD on a general matrix vs numpy")
def _():
    op = lx.MatrixLinearOperator(jnp.asarray(A))
    for solver in (lx.LU(), lx.QR(), lx.SVD(), lx.AutoLinearSolver(well_posed=True)):
        sol = lx.linear_solve(op, jnp.asarray(B), solver)
        close(sol.value, np.linalg.solve(A, B), rtol=1e-10, atol=1e-12)


@check("lineax Cholesky, CG on a positive definite matrix vs numpy")
def _():
    op = lx.MatrixLinearOperator(jnp.asarray(SPD), lx.positive_semidefinite_tag)
    want = np.linalg.solve(SPD, B)
    close(lx.linear_solve(op, jnp.asarray(B), lx.Cholesky()).value, want, rtol=1e-10)
    close(lx.linear_solve(op, jnp.asarray(B), lx.CG(rtol=1e-10, atol=1e-10)).value, want, rtol=1e-7)


@check("lineax GMRES and BiCGStab on a general matrix vs numpy")
def _():
    op = lx.MatrixLinearOperator(jnp.asarray(A))
    want = np.linalg.solve(A, B)
    close(lx.linear_solve(op, jnp.asarray(B), lx.GMRES(rtol=1e-10, atol=1e-10)).value, want, rtol=1e-7)
    close(lx.linear_solve(op, jnp.asarray(B), lx.BiCGStab(rtol=1e-10, atol=1e-10)).value, want, rtol=1e-7)


@check("lineax least squares (QR on a tall matrix) vs numpy lstsq")
def _():
    m = rng.standard_normal((8, 3))
    b = rng.standard_normal(8)
    sol = lx.linear_solve(lx.MatrixLinearOperator(jnp.asarray(m)), jnp.asarray(b), lx.QR())
    close(sol.value, np.linalg.lstsq(m, b, rcond=None)[0], rtol=1e-10)


@check("lineax FunctionLinearOperator and jit")
def _():
    diag = jnp.arange(1.0, 6.0)
    op = lx.FunctionLinearOperator(lambda x: diag * x + 0.1 * jnp.roll(x, 1), jax.ShapeDtypeStruct((5,), jnp.float64))
    dense = np.diag(np.arange(1.0, 6.0)) + 0.1 * np.roll(np.eye(5), 1, axis=0)
    got = jax.jit(lambda b: lx.linear_solve(op, b, lx.LU()).value)(jnp.asarray(B))
    close(got, np.linalg.solve(dense, B), rtol=1e-10)


@check("lineax gradient of the solve wrt matrix and vector vs closed form")
def _():
    # d/dA sum(A^{-1} b) = -A^{-T} 1 x^T,  d/db = A^{-T} 1
    def f(a, b):
        return jnp.sum(lx.linear_solve(lx.MatrixLinearOperator(a), b, lx.LU()).value)

    ga, gb = jax.grad(f, argnums=(0, 1))(jnp.asarray(A), jnp.asarray(B))
    x = np.linalg.solve(A, B)
    lam = np.linalg.solve(A.T, np.ones(5))
    close(gb, lam, rtol=1e-9)
    close(ga, -np.outer(lam, x), rtol=1e-9)
    # forward mode agrees
    t = rng.standard_normal((5, 5))
    _, jv = jax.jvp(lambda a: f(a, jnp.asarray(B)), (jnp.asarray(A),), (jnp.asarray(t),))
    close(jv, np.sum(-np.outer(lam, x) * t), rtol=1e-9)


@check("lineax vmap over right-hand sides vs numpy")
def _():
    bs = rng.standard_normal((4, 5))
    op = lx.MatrixLinearOperator(jnp.asarray(A))
    got = jax.vmap(lambda b: lx.linear_solve(op, b).value)(jnp.asarray(bs))
    close(got, np.linalg.solve(A, bs.T).T, rtol=1e-10)


# ---------------------------------------------------------------- optimistix


@check("optimistix Newton root_find vs closed form, and implicit gradient")
def _():
    # x^3 + a x - 2 = 0 has the root x = 1 at a = 1; dx/da = -x / (3x^2 + a) = -1/4
    def fn(x, a):
        return x**3 + a * x - 2.0

    def root(a):
        return optx.root_find(fn, optx.Newton(rtol=1e-10, atol=1e-10), jnp.array(0.5), args=a).value

    close(root(1.0), 1.0, rtol=1e-9)
    close(jax.grad(root)(1.0), -0.25, rtol=1e-7)
    close(jax.jit(root)(3.0), scipy.optimize.brentq(lambda x: x**3 + 3 * x - 2, 0, 1), rtol=1e-9)


@check("optimistix BFGS minimise Rosenbrock vs the known minimum")
def _():
    def rosen(x, args):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    sol = optx.minimise(rosen, optx.BFGS(rtol=1e-9, atol=1e-9), jnp.array([-1.2, 1.0, 0.5]), max_steps=500)
    close(sol.value, np.ones(3), rtol=1e-5)


@check("optimistix LevenbergMarquardt least_squares vs scipy")
def _():
    t = np.linspace(0, 2, 20)
    yobs = 2.5 * np.exp(-1.3 * t) + 0.01 * np.sin(7 * t)

    def resid(p, args):
        return p[0] * jnp.exp(-p[1] * args[0]) - args[1]

    solver = optx.LevenbergMarquardt(rtol=1e-10, atol=1e-10)
    sol = optx.least_squares(resid, solver, jnp.array([1.0, 1.0]), args=(jnp.asarray(t), jnp.asarray(yobs)))
    ref = scipy.optimize.least_squares(lambda p: p[0] * np.exp(-p[1] * t) - yobs, [1.0, 1.0], xtol=1e-14, ftol=1e-14)
    close(sol.value, ref.x, rtol=1e-6)


@check("optimistix fixed_point and Dogleg least squares vs closed form")
def _():
    sol = optx.fixed_point(lambda x, args: jnp.cos(x), optx.FixedPointIteration(rtol=1e-10, atol=1e-10), jnp.array(1.0))
    close(sol.value, scipy.optimize.brentq(lambda x: np.cos(x) - x, 0, 1), rtol=1e-8)
    sol = optx.least_squares(
        lambda x, args: jnp.stack([x[0] - 3.0, 2 * (x[1] + 1.0)]), optx.Dogleg(rtol=1e-10, atol=1e-10), jnp.zeros(2)
    )
    close(sol.value, [3.0, -1.0], rtol=1e-9)


finish("diffrax", results, failures)
