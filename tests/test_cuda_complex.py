"""complex64/complex128 on the CUDA backend (``fjax/backends/cuda/complex_ops.py``): elementwise ops,
conversions, sum/product reductions, GEMMs, the copies/scatters/cumulative ops and sort of complex
values, and gradients through them, run through ``device_put`` + ``jit`` on the cupy stand-in
(kernels compiled by g++ against ``cuda_emu.h``) against the CPU backend: a grid of special values
(zeros of both signs, +-1.5/-2, infinities, NaN in either part) and hypothesis-drawn arrays."""

from __future__ import annotations

import _complex_cases as _cc  # noqa: E402  (tests/ is on the path)
import _standin_gpu  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate

pytestmark = [
    pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),  # numpy's invalid/overflow warnings (the CPU side)
    pytest.mark.filterwarnings("ignore:Casting from complex:DeprecationWarning"),  # astype(real), on purpose
]


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed():
        yield


_both = _standin_gpu.both

_VALS, _GRID, UNARY, BINARY = _cc.VALS, _cc.GRID, _cc.UNARY, _cc.BINARY


# ops whose zeros carry the CPU's signs (the others: C99 leaves them open, or glibc's differ)
_EXACT_ZEROS = frozenset(
    {"add", "sub", "mul", "div", "neg", "conj", "real", "imag", "exp", "expm1", "sqrt", "sign", "square", "max", "min"}
)


def _check(got, want, rtol: float, what: str, zero_signs: bool = False) -> None:
    _cc.check(got, want, rtol, what, zero_signs)


def _rtol(dt) -> float:
    return 1e-5 if np.dtype(dt) == np.complex64 else 1e-12


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_unary_ops_match_the_cpu_at_special_values(dt):
    z = np.array(_GRID, dt)
    names = list(UNARY)
    got, want = _both(lambda a: tuple(UNARY[n](a) for n in names), z, x64=dt == np.complex128)
    for n, g, w in zip(names, got, want):
        _check(g, w, _rtol(dt), n, zero_signs=n in _EXACT_ZEROS)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_binary_ops_match_the_cpu_at_special_values(dt):
    x = np.array([a for a in _GRID for _ in _GRID], dt)
    y = np.array([b for _ in _GRID for b in _GRID], dt)
    names = list(BINARY)
    got, want = _both(lambda a, b: tuple(BINARY[n](a, b) for n in names), x, y, x64=dt == np.complex128)
    for n, g, w in zip(names, got, want):
        # pow's polar form: cos/sin of c*arg near a multiple of pi/2 leave a part ~1e-8 of |z|
        _check(g, w, 1e-6 if n == "pow" and dt == np.complex64 else _rtol(dt), n, zero_signs=n in _EXACT_ZEROS)


_DRAWN_UN = ["exp", "log", "sqrt", "tanh", "tan", "sin", "cosh", "expm1", "log1p", "sign", "abs", "pow3", "pow6"]
_DRAWN_BI = ["mul", "div", "pow", "max"]


def _drawn_ops(a, b):  # one function (one compiled program) for every drawn example
    return tuple(UNARY[n](a) for n in _DRAWN_UN) + tuple(BINARY[n](a, b) for n in _DRAWN_BI)


# finite parts from subnormal to 1e30 (exp of the large ones overflows on both sides alike); the
# second operand (pow's exponent, the divisor) smaller: x ** 1e30 is an infinity whose direction is
# cos/sin of a rounding error
_small = st.one_of(st.floats(-30, 30, width=32), st.sampled_from([1e-45, -3e-39, 0.0]))
_BIG = 1.0000000150474662e30  # float32(1e30)
_part = st.one_of(st.floats(-30, 30, width=32), st.floats(-_BIG, _BIG, width=32), st.sampled_from([1e-45, -3e-39, 0.0]))


@settings(deadline=None)
@given(
    st.lists(st.tuples(_part, _part), min_size=32, max_size=32),
    st.lists(st.tuples(_small, _small), min_size=32, max_size=32),
)
def test_ops_match_the_cpu_on_drawn_values(xs, ys):
    x = np.array([complex(a, b) for a, b in xs], np.complex64)
    y = np.array([complex(a, b) for a, b in ys], np.complex64)
    got, want = _both(_drawn_ops, x, y)
    for n, g, w in zip(_DRAWN_UN + _DRAWN_BI, got, want):
        if n == "pow":
            # an overflowing power is an infinity in the direction (cos q, sin q), whose signs near
            # a multiple of pi/2 depend on q's last bit: only "not finite" is compared there
            over = ~np.isfinite(w)
            assert not np.isfinite(g[over]).any(), (x[over], y[over], g[over], w[over])
            g, w = np.where(over, 0, g), np.where(over, 0, w)
        # pow's polar form: q = c arg + d log|x| carries an error ~|q| eps (|q| up to ~3000 here)
        _check(g, w, {"pow": 1e-3, "pow6": 1e-4}.get(n, 1e-5), n)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_conversions_match_the_cpu(dt):
    z = np.array(_GRID[:48] + [3.7 - 2.2j, -1e10 + 1j, 2.5e9 + 0j], dt)
    r = np.abs(np.nan_to_num(z.real)).astype(np.float32)

    def f(a, x):
        return (
            a.astype(jnp.float32),
            a.astype(jnp.int32),
            a.astype(jnp.int8),
            a.astype(jnp.bool_),
            a.astype(jnp.complex64),
            x.astype(a.dtype) * 2,
            lax.complex(a.real, a.imag),
            jnp.conj(x),
            (x > 1).astype(a.dtype),
            jnp.where(a.real > 0, a, 1j),
        )

    got, want = _both(f, z, r, x64=dt == np.complex128)
    for i, (g, w) in enumerate(zip(got, want)):
        _check(g, w, 0, f"conversion {i}")


@pytest.mark.parametrize("shape", [(7,), (64, 33), (3, 5000)])
def test_sums_and_products_match_the_cpu(shape):
    rng = np.random.default_rng(len(shape))
    z = (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(np.complex64)
    p = (np.exp(1j * rng.uniform(-3, 3, size=shape))).astype(np.complex64)  # |p| = 1: products stay finite

    def f(a, u):
        out = [jnp.sum(a), jnp.mean(a * 2j), jnp.prod(u)]
        if a.ndim == 2:
            out += [a.sum(0), a.sum(1), jnp.prod(u, axis=0), jnp.vdot(a[0], a[-1])]
        return tuple(out)

    got, want = _both(f, z, p)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5 * np.sqrt(z.size), err_msg=f"output {i}")


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_gemms_match_the_cpu(dt):
    rng = np.random.default_rng(1)
    a = (rng.normal(size=(4, 40, 24)) + 1j * rng.normal(size=(4, 40, 24))).astype(dt)
    b = (rng.normal(size=(24, 3)) + 1j * rng.normal(size=(24, 3))).astype(dt)

    # a small contraction (fused multiply-adds), cuBLAS GEMMs (batched, transposed, conjugated)
    def f(x, y):
        return x[0, :3, :3] @ y[:3], x @ y, jnp.einsum("bij,bkj->bik", x, x.conj()), y.T @ x[1].T

    got, want = _both(f, a, b, x64=dt == np.complex128)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=_rtol(dt) * 10, atol=_rtol(dt) * 100, err_msg=f"output {i}")


def test_copies_scatters_cumulative_ops_and_sort_match_the_cpu():
    rng = np.random.default_rng(2)
    z = (rng.normal(size=(6, 5)) + 1j * rng.normal(size=(6, 5))).astype(np.complex64)
    z[1, 1] = complex(np.nan, 1)
    z[2, 3] = complex(0.5, np.nan)
    z[4, :] = z[0, :].real  # ties in the real part: ordered by the imaginary part
    idx = np.array([0, 2, 2, 5], np.int32)

    def f(a):
        return (
            a[idx],
            jnp.take(a, idx, axis=1),
            a.at[idx].add(a[:4] * 2),
            a.at[idx].set(a[:4] * 2),
            lax.dynamic_update_slice(a, a[:2, :2] * 3, (1, 2)),
            jnp.cumsum(a, axis=0),
            jnp.cumprod(a, axis=1),
            lax.cummax(a, axis=0),
            lax.cummin(a, axis=1, reverse=True),
            jnp.sort(a, axis=0),
            jnp.sort(a, axis=1),
            lax.sort((a.real, a), num_keys=1)[1],
            jnp.pad(a.T, 1),
            jnp.concatenate([a, a[::-1]], 0),
        )

    got, want = _both(f, z)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=f"output {i}")


def test_gradients_vmap_and_loops_through_complex_values():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(8, 5)).astype(np.float32)

    def loss(t):
        z = jnp.exp(1j * t) * (t + 2j) / (1.5 - 0.5j * t)
        return jnp.sum(jnp.abs(jnp.sqrt(z) * jnp.conj(z)) ** 2) + jnp.real(jnp.sum(jnp.log(z + 3)))

    def f(t):
        zt = t.astype(jnp.complex64) * (1 + 1j)
        carry, ys = lax.scan(lambda c, v: (c * 0.5j + v, jnp.abs(c)), jnp.zeros(5, jnp.complex64), zt)
        fori = lax.fori_loop(0, 3, lambda i, c: c * zt[0] + 1j, jnp.ones(5, jnp.complex64))
        return fjax.grad(loss)(t), fjax.vmap(lambda v: jnp.vdot(v, v * 1j))(zt), carry, ys, fori

    got, want = _both(f, x)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5, err_msg=f"output {i}")
    # the gradient itself, against central differences of the CPU loss (float64)
    _cc.check_grad_entry(loss, x, got[0])


def test_complex_remainder_is_refused_before_lowering_as_in_jax():
    """``lax.rem`` has no complex form in JAX either: TypeError when traced, on any device."""
    z = fjax.device_put(np.ones(4, np.complex64), fjax.devices("gpu")[0])
    with pytest.raises(TypeError, match="rem does not accept dtype complex64"):
        fjax.jit(lambda a: lax.rem(a, a))(z)
