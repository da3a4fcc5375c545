"""``fjax.experimental.ode.odeint``: against analytic solutions and scipy's DOP853, against values
recorded from JAX 0.10.2, adjoint gradients against finite differences, pytrees, vmap, jit.

Most tests run under ``fjax.disable_jit()``: odeint's jit then evaluates its jaxpr eagerly, which
checks the same program without paying the numba compile (about 13 s for one odeint) per test;
``test_jit_compiled`` runs the compiled program once.
"""

import numpy as np
import pytest
import scipy.integrate
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax.experimental import ode
from fjax.experimental.ode import odeint

pytestmark = pytest.mark.usefixtures("x64")

floats = st.floats(-1.0, 1.0, allow_nan=False, width=64)


def _times(draw_list: list) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum(np.asarray(draw_list) + 0.05)])


def decay(y, t, a):
    return -a * y + jnp.cos(t)


def pendulum(s, t, b, c):
    return {"th": s["om"], "om": -b * s["om"] - c * jnp.sin(s["th"])}


def lotka(y, t, a):
    return jnp.stack([a * y[0] - y[0] * y[1], y[0] * y[1] - y[1]])


# Recorded from JAX 0.10.2 (/tmp/jaxenv, jax_enable_x64 on except for LV32) with the same calls:
#   odeint(decay, [1., 2.], linspace(0, 2, 5), 0.7) and grad of its sum w.r.t. (y0, t, a);
#   odeint(pendulum, {th: 2., om: .1}, [0, .3, 1.1, 2.5], .25, 5., rtol=atol=1e-6), grad of
#   sum(th**2) + om[-1] w.r.t. (s0, t, b, c); odeint(lotka, [1.5, .5], linspace(0, 3, 4), 1.2)
#   in float32 (LV32), and in float64 with hmax=.1 / mxstep=5 / both.
DECAY_YS = [
    [1.0, 2.0],
    [1.1076758116116627, 1.8123638889771796],
    [1.0818691184000364, 1.5784544290295004],
    [0.8882294167382838, 1.2381671697774395],
    [0.5455075527335832, 0.7921045231195609],
]
DECAY_GRAD = (
    [2.7978080994455774, 2.7978080994455774],
    [0.17978085919866324, -0.288862666631444, -0.7816218714643961, -1.3470032072256004, -1.7686221261914856],
    -8.250854932468304,
)
PEND_YS = {
    "om": [0.1, -1.2498486466982013, -3.219308496441046, 2.770045351503021],
    "th": [2.0, 1.8272958246537336, -0.3465824471274262, -0.4011629637218458],
}
PEND_GRAD = (
    {"om": 0.8254954333215836, "th": 8.75059523055128},
    [3.2987191409551877, -4.567686427121485, 2.2315116335093053, -0.9625443473430081],
    -3.934469427651288,
    0.23491709201837097,
)
LV32 = [[1.5, 0.5], [2.2487759590148926, 1.331385850906372], [0.895663321018219, 2.5382068157196045]]
LV32 += [[0.3553800582885742, 1.6014716625213623]]
LV64 = {
    "hmax": [[2.248776394645596, 1.3313856455701008], [0.8956633044322737, 2.5382069540034156]]
    + [[0.355380150215055, 1.6014720081864409]],
    "mxstep": [[2.239487261675557, 1.3443393389182023], [0.2323564873257752, 2.4281415645260602]]
    + [[15.24595754817165, -11.781673919807837]],
    "both": [[2.24017222469448, 1.348387711601848], [0.0787634158968543, 2.530840442487603]]
    + [[15.701067275395497, -12.693851189746331]],
}


def test_matches_jax_decay_and_gradient():
    y0, ts = jnp.array([1.0, 2.0]), jnp.linspace(0.0, 2.0, 5)
    with fjax.disable_jit():
        ys = odeint(decay, y0, ts, 0.7)
        g = fjax.grad(lambda y0, t, a: odeint(decay, y0, t, a).sum(), argnums=(0, 1, 2))(y0, ts, 0.7)
    assert ys.dtype == jnp.float64 and ys.shape == (5, 2)
    np.testing.assert_allclose(ys, DECAY_YS, rtol=1e-12, atol=1e-14)
    for got, want in zip(g, DECAY_GRAD):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_matches_jax_pytree_state_and_gradient():
    s0, ts = {"th": jnp.array(2.0), "om": jnp.array(0.1)}, jnp.array([0.0, 0.3, 1.1, 2.5])

    def loss(s0, ts, b, c):
        r = odeint(pendulum, s0, ts, b, c, rtol=1e-6, atol=1e-6)
        return (r["th"] ** 2).sum() + r["om"][-1]

    with fjax.disable_jit():
        r = odeint(pendulum, s0, ts, 0.25, 5.0, rtol=1e-6, atol=1e-6)
        g = fjax.grad(loss, argnums=(0, 1, 2, 3))(s0, ts, 0.25, 5.0)
    assert set(r) == {"th", "om"} and r["th"].shape == (4,)
    for k in r:
        np.testing.assert_allclose(r[k], PEND_YS[k], rtol=1e-10, atol=1e-12)
    assert set(g[0]) == {"th", "om"} and g[1].shape == (4,)
    got = [g[0]["th"], g[0]["om"], *g[1:]]
    want = [PEND_GRAD[0]["th"], PEND_GRAD[0]["om"], *PEND_GRAD[1:]]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("kw", ["hmax", "mxstep", "both"])
def test_matches_jax_hmax_mxstep(kw):
    kwargs = {"hmax": {"hmax": 0.1}, "mxstep": {"mxstep": 5}, "both": {"hmax": 0.1, "mxstep": 5}}[kw]
    with fjax.disable_jit():
        ys = odeint(lotka, jnp.array([1.5, 0.5]), jnp.linspace(0.0, 3.0, 4), 1.2, **kwargs)
    # mxstep=5 stops short of the output times, so later outputs extrapolate the last step's
    # polynomial far out: the values are only as close as that extrapolation allows
    np.testing.assert_allclose(ys[1:], LV64[kw], rtol=1e-7, atol=1e-6)


def test_matches_jax_float32():
    with fjax.enable_x64(False), fjax.disable_jit():
        ys = odeint(lotka, jnp.array([1.5, 0.5], jnp.float32), jnp.linspace(0.0, 3.0, 4, dtype=jnp.float32), 1.2)
    assert ys.dtype == jnp.float32
    np.testing.assert_allclose(ys, LV32, rtol=1e-5)


def test_helpers_match_jax():
    # initial_step_size / runge_kutta_step values recorded from JAX 0.10.2 (x64) for y'' = -y
    f = lambda y, t: jnp.stack([y[1], -y[0]])  # noqa: E731
    y0 = jnp.array([1.0, 0.5])
    with fjax.disable_jit():
        h = ode.initial_step_size(f, 0.1, y0, 4, 1e-6, 1e-8, f(y0, 0.1))
        y1, f1, err, k = ode.runge_kutta_step(f, y0, f(y0, 0.0), jnp.array(0.0), jnp.array(0.3))
    np.testing.assert_allclose(h, 0.021818773456594748, rtol=1e-7)
    np.testing.assert_allclose(y1, [1.10309641, 0.18214789250000002], rtol=1e-13)
    np.testing.assert_allclose(f1, [0.1821478925, -1.10309641], rtol=1e-13)
    np.testing.assert_allclose(err, [-8.096624999969284e-07, 1.2244499999949847e-06], rtol=1e-8)
    assert k.shape == (7, 2)
    one = jnp.array(1.0)
    assert float(ode.optimal_step_size(one, jnp.array(0.0))) == 10.0
    assert float(ode.optimal_step_size(one, jnp.array(2.0))) == pytest.approx(0.9 * 2.0**-0.2)
    assert float(ode.optimal_step_size(one, jnp.array(1e6))) == 0.2


@given(st.lists(st.floats(0.0, 0.6), min_size=1, max_size=4))
def test_dense_output_exact_for_quartic(gaps):
    # y' = 4 t^3: each step and its quartic interpolant are exact, at loose tolerances too
    ts = _times(gaps)
    with fjax.disable_jit():
        ys = odeint(lambda y, t: 4 * t**3 + 0 * y, jnp.zeros(1), jnp.asarray(ts), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(ys)[:, 0], ts**4, rtol=1e-12, atol=1e-12)


@given(st.integers(1, 3), st.data())
def test_linear_system_vs_expm(n, data):
    a = np.array(data.draw(st.lists(floats, min_size=n * n, max_size=n * n))).reshape(n, n)
    y0 = np.array(data.draw(st.lists(floats, min_size=n, max_size=n)))
    ts = _times(data.draw(st.lists(st.floats(0.0, 0.8), min_size=1, max_size=3)))
    with fjax.disable_jit():
        ys = odeint(lambda y, t, a: a @ y, jnp.asarray(y0), jnp.asarray(ts), jnp.asarray(a), rtol=1e-10, atol=1e-10)
    want = np.stack([scipy.linalg.expm(a * t) @ y0 for t in ts])
    np.testing.assert_allclose(ys, want, rtol=1e-7, atol=1e-8)


@given(st.floats(0.1, 2.0), st.floats(0.5, 3.0), floats, st.lists(st.floats(0.0, 1.0), min_size=1, max_size=3))
def test_forced_oscillator_vs_scipy(damping, freq, y00, gaps):
    def f(y, t, d, w):
        return jnp.stack([y[1], -d * y[1] - y[0] + jnp.sin(w * t)])

    ts = _times(gaps)
    with fjax.disable_jit():
        ys = odeint(f, jnp.array([y00, 0.0]), jnp.asarray(ts), damping, freq, rtol=1e-10, atol=1e-10)
    ref = scipy.integrate.solve_ivp(
        lambda t, y: [y[1], -damping * y[1] - y[0] + np.sin(freq * t)],
        (ts[0], ts[-1]),
        [y00, 0.0],
        method="DOP853",
        t_eval=ts,
        rtol=1e-12,
        atol=1e-12,
    )
    np.testing.assert_allclose(ys, ref.y.T, rtol=1e-7, atol=1e-8)


def _directional_fd(fn, x, v, eps=1e-4):
    x, v = np.asarray(x, dtype=np.float64), np.asarray(v, dtype=np.float64)
    return (float(fn(x + eps * v)) - float(fn(x - eps * v))) / (2 * eps)


@settings(max_examples=3)  # each example runs seven solves at rtol 1e-12
@given(st.floats(0.2, 1.5), st.lists(floats, min_size=2, max_size=2), st.lists(floats, min_size=3, max_size=3))
def test_adjoint_gradients_vs_finite_differences(a, y0, w):
    # directional derivatives along w (for y0, t and a) against central differences
    ts0, w = np.array([0.0, 0.4, 1.0]), np.asarray(w)

    def rhs(y, t, a):
        return jnp.stack([-a * y[1], jnp.sin(y[0]) - 0.3 * t * y[1]])

    def loss(y0, ts, a):
        ys = odeint(rhs, y0, ts, a, rtol=1e-12, atol=1e-12)
        return jnp.sum(ys[:, 0] * w) + jnp.sum(ys[:, 1] ** 2)

    with fjax.disable_jit():
        g_y0, g_ts, g_a = fjax.grad(loss, argnums=(0, 1, 2))(jnp.asarray(y0), jnp.asarray(ts0), a)
        fd_y0 = _directional_fd(lambda v: loss(jnp.asarray(v), jnp.asarray(ts0), a), y0, w[:2])
        fd_ts = _directional_fd(lambda v: loss(jnp.asarray(y0), jnp.asarray(v), a), ts0, w)
        fd_a = _directional_fd(lambda v: loss(jnp.asarray(y0), jnp.asarray(ts0), float(v)), a, 1.0)
    np.testing.assert_allclose(np.dot(g_y0, w[:2]), fd_y0, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.dot(g_ts, w), fd_ts, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(g_a, fd_a, rtol=1e-5, atol=1e-7)


def test_grad_through_closure_analytic():
    # a closed over by func (a tracer of grad): closure conversion makes it an argument
    ts, y0 = jnp.array([0.0, 0.5, 1.5]), jnp.array([1.0, -2.0])

    def loss(a):
        return odeint(lambda y, t: -a * y, y0, ts, rtol=1e-10, atol=1e-10).sum()

    with fjax.disable_jit():
        g = fjax.grad(loss)(0.8)
    want = np.sum(-np.asarray(ts)[:, None] * np.asarray(y0) * np.exp(-0.8 * np.asarray(ts))[:, None])
    np.testing.assert_allclose(g, want, rtol=1e-8)


def test_closures_share_one_program():
    # closed-over float arrays become arguments: closures over other values reuse one program
    # (so jit's cache), while values the function itself makes stay in the program
    def make(v):
        a = jnp.array([v, 2 * v])
        return lambda y, t: -a * y

    y0, ts = jnp.array([1.0, 2.0]), jnp.array([0.0, 0.5, 1.0])
    with fjax.disable_jit():
        (c1, h1), (c2, h2) = ode._convert(make(0.5), y0, ts[0]), ode._convert(make(0.7), y0, ts[0])
        assert c1 is c2 and len(h1) == len(h2) == 1
        c3, h3 = ode._convert(lambda y, t: -y * jnp.array(3.0), y0, ts[0])
        assert c3 != c1 and h3 == []
        n = np.array([2, 3])  # integer closures stay in the program too
        ys = odeint(lambda y, t: -n * y, y0, ts, rtol=1e-10, atol=1e-10)
        for v in (0.5, 0.7):
            got = odeint(make(v), y0, ts, rtol=1e-10, atol=1e-10)[-1]
            np.testing.assert_allclose(got, [np.exp(-v), 2 * np.exp(-2 * v)], rtol=1e-8)
    np.testing.assert_allclose(ys[-1], [np.exp(-2.0), 2 * np.exp(-3.0)], rtol=1e-8)
    with fjax.disable_jit():
        # a closure over an integer tracer (jit's) becomes an argument as well
        got = fjax.jit(lambda k: odeint(lambda y, t: -k * y, y0, ts, rtol=1e-10, atol=1e-10))(3)
    np.testing.assert_allclose(got[-1], [np.exp(-3.0), 2 * np.exp(-3.0)], rtol=1e-8)


def test_vmap_matches_loop():
    y0s, a_s = jnp.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]]), jnp.array([0.3, 0.7, 1.9])
    ts = jnp.linspace(0.0, 1.0, 3)
    with fjax.disable_jit():
        ys = fjax.vmap(lambda y0, a: odeint(decay, y0, ts, a))(y0s, a_s)
        loop = [odeint(decay, y0s[i], ts, a_s[i]) for i in range(3)]
        gs = fjax.vmap(fjax.grad(lambda a: odeint(decay, y0s[0], ts, a)[-1, 0]))(a_s)
        gloop = [fjax.grad(lambda a: odeint(decay, y0s[0], ts, a)[-1, 0])(a_s[i]) for i in range(3)]
    assert ys.shape == (3, 3, 2)
    np.testing.assert_allclose(ys, np.stack(loop), rtol=1e-12)
    np.testing.assert_allclose(gs, np.stack(gloop), rtol=1e-9)


def test_pytree_args_gradient_and_vmap_over_times():
    def f(y, t, p):
        return -p["k"] * y + p["c"][0]

    def exact(k, c, t):
        return c / k + (1 - c / k) * np.exp(-k * t)

    p = {"k": jnp.array(0.5), "c": (jnp.array(0.2),)}
    with fjax.disable_jit():
        g = fjax.grad(lambda p: odeint(f, jnp.array([1.0]), jnp.array([0.0, 1.0]), p, rtol=1e-10, atol=1e-10)[-1, 0])(p)
        ys = fjax.vmap(lambda ts: odeint(f, jnp.array([1.0]), ts, p, rtol=1e-10, atol=1e-10))(
            jnp.array([[0.0, 1.0], [0.0, 2.0]])
        )
    eps = 1e-6
    np.testing.assert_allclose(g["k"], (exact(0.5 + eps, 0.2, 1) - exact(0.5 - eps, 0.2, 1)) / (2 * eps), rtol=1e-6)
    np.testing.assert_allclose(g["c"][0], (exact(0.5, 0.2 + eps, 1) - exact(0.5, 0.2 - eps, 1)) / (2 * eps), rtol=1e-6)
    np.testing.assert_allclose(ys[:, -1, 0], [exact(0.5, 0.2, 1.0), exact(0.5, 0.2, 2.0)], rtol=1e-8)


def test_jit_compiled():
    ts = jnp.linspace(0.0, 2.0, 5)
    f = fjax.jit(lambda y0, a: odeint(decay, y0, ts, a))
    np.testing.assert_allclose(f(jnp.array([1.0, 2.0]), 0.7), DECAY_YS, rtol=1e-12, atol=1e-14)
    # new argument values reuse the compiled program
    with fjax.disable_jit():
        want = odeint(decay, jnp.array([0.3, -1.0]), ts, 1.3)
    np.testing.assert_allclose(f(jnp.array([0.3, -1.0]), 1.3), want, rtol=1e-12)


def test_complex_state():
    with fjax.disable_jit():
        ys = odeint(lambda y, t: -1j * y, jnp.array([1.0 + 0j, 2.0]), jnp.linspace(0.0, 1.0, 3))
    assert ys.dtype == jnp.complex128
    want = np.exp(-1j * np.linspace(0.0, 1.0, 3))[:, None] * np.array([1.0, 2.0])
    np.testing.assert_allclose(ys, want, rtol=1e-7)


def test_errors():
    y0, ts = jnp.array([1.0, 2.0]), jnp.linspace(0.0, 1.0, 3)
    with fjax.disable_jit():
        with pytest.raises(TypeError, match="t must be an array of floats"):
            odeint(lambda y, t: -y, y0, jnp.arange(3))
        with pytest.raises(TypeError, match="odeint \\*args must be arrays or scalars"):
            odeint(lambda y, t, s: -y, y0, ts, "a")
        with pytest.raises(TypeError, match="y0 must hold floating-point.*int"):
            odeint(lambda y, t: -y, jnp.array([1, 2]), ts)
        with pytest.raises(ValueError, match="1-D"):
            odeint(lambda y, t: -y, y0, ts[None])
        with pytest.raises(TypeError, match="jvp"):
            fjax.jvp(lambda y: odeint(lambda y, t: -y, y, ts), (y0,), (y0,))
