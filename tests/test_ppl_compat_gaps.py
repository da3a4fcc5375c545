"""fjax gaps that numpyro, blackjax and jaxopt found (tests/compat/test_numpyro.py and friends run
the libraries themselves): ``jax.extend.core.primitives`` as an importable submodule with JAX's
call primitives, ``jax._src.core.trace_state_clean`` and ``jax._src.flatten_util``."""

from __future__ import annotations

import importlib
import subprocess
import sys

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.compat._shims._src import core as src_core
from fjax.compat._shims._src import flatten_util as src_flatten_util
from fjax.extend import linear_util as lu
from fjax.extend.core import primitives as P


def test_primitives_is_a_submodule():
    mod = importlib.import_module("fjax.extend.core.primitives")
    assert mod is P and fjax.extend.core.primitives is P
    assert P.jit_p is importlib.import_module("fjax.jit").jit_p


def test_primitives_import_under_the_hook():
    # a `from jax.extend.core.primitives import ...` needs jax.extend.core to be a package
    code = (
        "from jax.extend.core.primitives import call_p, closed_call_p, jit_p\n"
        "import jax.extend.core.primitives as P\n"
        "print(call_p.name, closed_call_p.name, jit_p.name, P.add_p.name)\n"
    )
    out = subprocess.run([sys.executable, "-m", "fjax.compat", "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["call", "closed_call", "jit", "add"]


def _f(x, y):
    return (jnp.sin(x) * y, x + y)


@pytest.mark.parametrize("prim", [P.call_p, P.closed_call_p])
def test_call_primitives_inline_under_transforms(prim):
    x, y = np.float32(0.3), np.float32(2.0)
    want = [np.sin(x) * y, x + y]
    wrapped = lu.wrap_init(_f)
    np.testing.assert_allclose(prim.bind(wrapped, x, y), want, rtol=1e-6)
    np.testing.assert_allclose(prim.bind(_f, x, y), want, rtol=1e-6)
    np.testing.assert_allclose(fjax.jit(lambda a, b: prim.bind(_f, a, b))(x, y), want, rtol=1e-6)
    g = fjax.grad(lambda a: prim.bind(_f, a, y)[0])(x)
    np.testing.assert_allclose(g, np.cos(x) * y, rtol=1e-6)
    xs = np.linspace(0, 1, 4, dtype=np.float32)
    v = fjax.vmap(lambda a: prim.bind(_f, a, y)[0])(xs)
    np.testing.assert_allclose(v, np.sin(xs) * y, rtol=1e-6)
    # never in a jaxpr: the function is inlined
    jaxpr = fjax.make_jaxpr(lambda a: prim.bind(_f, a, y))(x)
    assert all(e.primitive.name not in ("call", "closed_call") for e in jaxpr.jaxpr.eqns)


def test_closed_call_rebinds_from_call_jaxpr():
    closed = fjax.make_jaxpr(_f)(np.float32(1.0), np.float32(2.0))
    out = P.closed_call_p.bind(np.float32(0.5), np.float32(3.0), call_jaxpr=closed)
    np.testing.assert_allclose(out, [np.sin(0.5) * 3.0, 3.5], rtol=1e-6)
    out = P.call_p.bind(np.float32(0.5), np.float32(3.0), call_jaxpr=closed.jaxpr)
    np.testing.assert_allclose(out, [np.sin(0.5) * 3.0, 3.5], rtol=1e-6)


def test_trace_state_clean():
    seen = []

    def probe(x):
        seen.append(src_core.trace_state_clean())
        return x * 2

    assert src_core.trace_state_clean()
    probe(1.0)
    fjax.jit(probe)(1.0)
    fjax.grad(probe)(1.0)
    fjax.vmap(probe)(jnp.ones(2))
    assert seen == [True, False, False, False]
    assert src_core.trace_state_clean()


def test_src_flatten_util():
    flat, unravel = src_flatten_util.ravel_pytree({"a": jnp.ones(2), "b": jnp.zeros(())})
    assert flat.shape == (3,)
    np.testing.assert_array_equal(unravel(flat)["a"], np.ones(2))


def test_cond_old_five_argument_form():
    # cond(pred, true_operand, true_fun, false_operand, false_fun), which JAX still accepts
    def f(p, a, b):
        return fjax.lax.cond(p, a, lambda x: x * 2.0, b, lambda y: y["v"] - 1.0)

    assert float(f(True, 3.0, {"v": 10.0})) == 6.0
    assert float(f(False, 3.0, {"v": 10.0})) == 9.0
    assert float(fjax.jit(f)(jnp.array(False), 3.0, {"v": 10.0})) == 9.0
    g = fjax.grad(lambda a: f(jnp.array(True), a, {"v": a}), 0)(3.0)
    assert float(g) == 2.0
    with pytest.raises(TypeError, match="should be callable"):
        fjax.lax.cond(True, 1.0, 2.0)


_INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


@pytest.mark.parametrize("dtype", _INT_DTYPES)
def test_population_count_and_clz_compile(dtype, caplog):
    # numpyro's NUTS counts bits in its tree-building while loop: a host step there made every
    # sample run the loop eagerly
    info = np.iinfo(dtype)
    rng = np.random.default_rng(0)
    x = rng.integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
    x[:6] = [0, info.max, info.min, 1, info.max // 2, info.min // 2 if info.min else 2]
    bits = 8 * np.dtype(dtype).itemsize
    ux = x.view(f"u{bits // 8}").astype(np.uint64)
    want_pop = np.array([bin(int(v)).count("1") for v in ux]).astype(dtype)
    want_clz = np.array([bits - int(v).bit_length() for v in ux]).astype(dtype)

    def body(i, acc):
        p, c = acc
        return p + lax.population_count(xs), c + lax.clz(xs)

    with fjax.enable_x64():
        xs = jnp.asarray(x)
        caplog.set_level("INFO", logger="fjax.lowering")
        zero = jnp.zeros_like(xs)
        p, c = fjax.jit(lambda: lax.fori_loop(0, 1, body, (zero, zero)))()
        np.testing.assert_array_equal(p, want_pop)
        np.testing.assert_array_equal(c, want_clz)
        np.testing.assert_array_equal(lax.population_count(xs), want_pop)
        np.testing.assert_array_equal(lax.clz(xs), want_clz)
    assert "runs on the host" not in caplog.text


_BETALN_GRID = np.array([1e-6, 0.01, 0.3, 0.5, 1.0, 2.5, 7.0, 9.99, 10.0, 15.0, 80.0, 1e3, 1e5, 1e8, 1e12])


@pytest.mark.parametrize("x64", [False, True])
def test_betaln_compiles_and_matches_scipy(x64, caplog):
    # Beta/Binomial log densities inside sampler loops: betaln was a host step (scipy) under jit
    import scipy.special as sp

    from fjax.scipy.special import betaln

    A, B = np.meshgrid(_BETALN_GRID, _BETALN_GRID)
    A = np.concatenate([A.ravel(), [-0.5, -2.5, -12.3]])
    B = np.concatenate([B.ravel(), [3.0, 20.0, 30.0]])
    caplog.set_level("INFO", logger="fjax.lowering")
    with fjax.enable_x64(x64):
        dt = np.float64 if x64 else np.float32
        a, b = jnp.asarray(A.astype(dt)), jnp.asarray(B.astype(dt))
        got = fjax.jit(lambda a, b: lax.fori_loop(0, 1, lambda i, acc: acc + betaln(a, b), jnp.zeros_like(a)))(a, b)
        eager = betaln(a, b)
        assert got.dtype == dt
    want = sp.betaln(np.asarray(a, np.float64), np.asarray(b, np.float64))
    scale = np.maximum(np.abs(want), 1.0)
    # float64: 6e-11 at worst (a=0.01, b=1e5, where JAX's own betaln differs from scipy as much)
    np.testing.assert_array_less(np.abs(np.asarray(got, np.float64) - want) / scale, 1e-9 if x64 else 2e-6)
    np.testing.assert_array_less(np.abs(np.asarray(eager, np.float64) - want) / scale, 1e-12 if x64 else 1e-6)
    assert "runs on the host" not in caplog.text


def test_betaln_gradient_under_jit():
    import scipy.special as sp

    from fjax.scipy.special import betaln

    g = fjax.jit(fjax.grad(betaln, argnums=(0, 1)))(2.5, 40.0)
    np.testing.assert_allclose(g[0], sp.digamma(2.5) - sp.digamma(42.5), rtol=2e-5)
    np.testing.assert_allclose(g[1], sp.digamma(40.0) - sp.digamma(42.5), rtol=2e-5)
