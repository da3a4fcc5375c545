"""``lax.complex`` is the linear primitive ``complex_p`` (as JAX's): tangents built with it inside a
``custom_jvp`` rule linearize and transpose (grad, vjp, linear_transpose), jit still fuses it."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax


@fjax.custom_jvp
def _f(x):
    return lax.complex(jnp.sin(x), jnp.cos(x))


@_f.defjvp
def _f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _f(x), lax.complex(jnp.cos(x) * t, -jnp.sin(x) * t)


@fjax.custom_jvp
def _h(x):  # the same function, its tangent spelled t_re + 1j * t_im
    return jnp.sin(x) + 1j * jnp.cos(x)


@_h.defjvp
def _h_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _h(x), jnp.cos(x) * t + 1j * (-jnp.sin(x) * t)


def _g(x):
    z = lax.complex(x**2, jnp.sin(x))
    return z * jnp.exp(lax.complex(jnp.zeros_like(x), x))


_X = np.array([0.3, 1.2, -0.7], np.float32)
_A = np.array([0.5, -1.25, 2.0], np.float32)
_B = np.array([1.5, 0.25, -3.0], np.float32)
_CT = np.array([1 + 2j, 3 - 1j, -0.5 + 0.5j], np.complex64)

# Made with JAX 0.10.2 (CPU, float32) from the same definitions (_f, _g above, written with jax/jax.numpy):
#   jax.grad(lambda x: jnp.real(f(x)).sum())(x), jax.vjp(f, x)[1](ct), jax.linear_transpose(lax.complex, a, b)(ct),
#   jax.hessian(lambda x: jnp.real(f(x) * f(x)).sum())(x), ... at x=_X, a=_A, b=_B, ct=_CT.
_JAX = {
    "grad_real": [0.9553365111351013, 0.3623577058315277, 0.7648422122001648],
    "grad_imag": [-0.29552021622657776, -0.9320390820503235, 0.6442176699638367],
    "vjp": [1.5463769435882568, 0.15503400564193726, -0.7045299410820007],
    "vjp_complex": ([1.0, 3.0, -0.5], [-2.0, 1.0, -0.5]),
    "jvp_complex_t": [(1.5 + 0.5j), (0.25 - 1.25j), (-3 + 2j)],
    "grad_g_re": [-0.018037378787994385, -1.1479411125183105, 0.2303372621536255],
    "grad_g_abs2": [0.6726424694061279, 7.587463855743408, -2.357449531555176],
    "vjp_g": [-2.195293664932251, -1.4225282669067383, -0.838490903377533],
    "grad_bcast": 3.5,
    "hess_diag": [3.301342725753784, -2.9495749473571777, 0.6798686981201172],
}


def _close(got, want, rtol=2e-6, atol=2e-6):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


@pytest.mark.parametrize("fn", [_f, _h], ids=["lax.complex", "t_re+1j*t_im"])
def test_custom_jvp_rule_building_a_complex_tangent_transposes_as_jax(fn):
    x = jnp.asarray(_X)
    _close(fjax.grad(lambda x: jnp.real(fn(x)).sum())(x), _JAX["grad_real"])
    _close(fjax.grad(lambda x: jnp.imag(fn(x)).sum())(x), _JAX["grad_imag"])
    _close(fjax.jit(fjax.grad(lambda x: jnp.real(fn(x)).sum()))(x), _JAX["grad_real"])
    _close(fjax.vjp(fn, x)[1](jnp.asarray(_CT))[0], _JAX["vjp"])
    lt = fjax.linear_transpose(lambda t: fjax.jvp(fn, (x,), (t,))[1], x)
    _close(lt(jnp.asarray(_CT))[0], _JAX["vjp"])
    hess = fjax.hessian(lambda x: jnp.real(fn(x) * fn(x)).sum())(x)
    _close(np.diagonal(np.asarray(hess)), _JAX["hess_diag"], rtol=1e-5)


def test_lax_complex_vjp_linear_transpose_jvp_match_jax():
    a, b, ct = jnp.asarray(_A), jnp.asarray(_B), jnp.asarray(_CT)
    for got in (fjax.vjp(lax.complex, a, b)[1](ct), fjax.linear_transpose(lax.complex, a, b)(ct)):
        _close(got[0], _JAX["vjp_complex"][0])
        _close(got[1], _JAX["vjp_complex"][1])
    _, t = fjax.jvp(lax.complex, (a, b), (b, a))
    assert t.dtype == np.complex64
    _close(t, _JAX["jvp_complex_t"])
    _close(fjax.grad(lambda x: jnp.real(_g(x)).sum())(jnp.asarray(_X)), _JAX["grad_g_re"], rtol=1e-5)
    _close(fjax.grad(lambda x: (jnp.abs(_g(x)) ** 2).sum())(jnp.asarray(_X)), _JAX["grad_g_abs2"], rtol=1e-5)
    _close(fjax.vjp(_g, jnp.asarray(_X))[1](ct)[0], _JAX["vjp_g"], rtol=1e-5)
    # a rank-0 part broadcasts; its cotangent sums back
    _close(fjax.grad(lambda y: jnp.imag(lax.complex(a, y) * ct).sum())(2.0), _JAX["grad_bcast"])


def test_complex_is_exact_on_special_values_eager_jitted_and_as_a_tangent():
    x = jnp.array([1.0, np.inf, -np.inf, np.nan, 0.0, 2.0], jnp.float32)
    y = jnp.array([np.inf, -np.inf, np.nan, 1.0, 3.0, -np.inf], jnp.float32)
    # staged outside differentiation: the fused elementwise ops, not the primitive
    assert "complex " not in str(fjax.make_jaxpr(lax.complex)(x, y))
    # lax.complex on tangents in a custom_jvp rule: complex_p in the linear map, exact (eager, and
    # under jit where it is expanded into the composition), infinite tangents included
    xs = jnp.array([0.3, 1.2, -0.7, 2.0], jnp.float32)
    ts = jnp.array([np.inf, -2.0, np.nan, -np.inf], jnp.float32)
    lin = fjax.linearize(_f, xs)[1]
    assert "complex " in str(fjax.make_jaxpr(lin)(ts))
    c, s = np.cos(np.asarray(xs)), np.sin(np.asarray(xs))
    for t in (lin(ts), fjax.jit(lin)(ts)):
        np.testing.assert_array_equal(np.asarray(t).real, c * np.asarray(ts))
        np.testing.assert_array_equal(np.asarray(t).imag, -s * np.asarray(ts))
    want = np.empty(6, np.complex64)
    want.real, want.imag = np.asarray(x), np.asarray(y)
    for got in (lax.complex(x, y), fjax.jit(lax.complex)(x, y)):
        np.testing.assert_array_equal(np.asarray(got).real, want.real)
        np.testing.assert_array_equal(np.asarray(got).imag, want.imag)
    z = lax.complex(1.0, 2.0)
    assert z.dtype == np.complex64 and z.weak_type
    with pytest.raises(TypeError, match="complex does not accept dtype int32 at position 1"):
        lax.complex(jnp.ones(2), jnp.ones(2, jnp.int32))
    with pytest.raises(TypeError, match="same dtypes"):
        with fjax.enable_x64():
            lax.complex(jnp.ones(2, jnp.float32), jnp.ones(2, jnp.float64))
    # batching: operands mapped on different axes, or one unmapped
    p, q = np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(6, dtype=np.float32).reshape(3, 2) * 0.5
    got = fjax.vmap(lax.complex, in_axes=(0, 1))(jnp.asarray(p), jnp.asarray(q))
    np.testing.assert_array_equal(np.asarray(got), p + 1j * q.T)
    got = fjax.vmap(lax.complex, in_axes=(0, None))(jnp.asarray(p), jnp.float32(2.0))
    np.testing.assert_array_equal(np.asarray(got), p + 2j)


_floats = st.floats(-3.0, 3.0, allow_nan=False, width=64)


@settings(deadline=None, max_examples=25)
@given(xs=st.lists(_floats, min_size=3, max_size=3), cts=st.lists(_floats, min_size=6, max_size=6))
def test_vjp_is_the_transpose_of_jvp_and_jvp_matches_finite_differences(xs, cts):
    with fjax.enable_x64():
        x = jnp.asarray(np.array(xs))
        ct = np.array(cts[:3]) + 1j * np.array(cts[3:])
        t = np.array([0.7, -1.1, 0.4])
        for fn in (_f, _g, lambda x: _f(x) * _g(x)):
            _, jt = fjax.jvp(fn, (x,), (jnp.asarray(t),))
            (vt,) = fjax.vjp(fn, x)[1](jnp.asarray(ct))
            # JAX's pairing of a complex cotangent with a complex tangent: Re(sum(ct * v)), no conjugate
            lhs, rhs = np.real(np.sum(ct * np.asarray(jt))), np.sum(np.asarray(vt) * t)
            np.testing.assert_allclose(lhs, rhs, rtol=1e-9, atol=1e-9)
            (lt,) = fjax.linear_transpose(lambda s, fn=fn: fjax.jvp(fn, (x,), (s,))[1], x)(jnp.asarray(ct))
            np.testing.assert_allclose(np.asarray(lt), np.asarray(vt), rtol=1e-12, atol=1e-12)
            eps = 1e-6
            fd = (np.asarray(fn(x + eps * t)) - np.asarray(fn(x - eps * t))) / (2 * eps)
            np.testing.assert_allclose(np.asarray(jt), fd, rtol=1e-6, atol=1e-6)


def test_forward_and_reverse_mode_under_jit_run_on_the_stand_in_gpu():
    # the CUDA lowering has no complex_p: jit(jvp) and jit(grad) of lax.complex compile there
    import _standin_gpu  # noqa: PLC0415 - tests/ is on the path

    def fwd(x):
        return fjax.jvp(lambda y: lax.complex(y, 2 * y) * lax.complex(y, -y), (x,), (x,))[1]

    def rev(x):
        return fjax.grad(lambda y: jnp.real(_g(y) * (1 + 2j)).sum())(x)

    with _standin_gpu.installed():
        for fn in (fwd, rev):
            got, want = _standin_gpu.both(fn, _X)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
