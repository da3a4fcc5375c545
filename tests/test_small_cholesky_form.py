"""``cholesky`` inside loop and branch bodies compiles (``fjax/lax/_small_linalg_forms.py``) instead
of keeping the loop on the host: blackjax's NUTS window adaptation factors a mass matrix inside its
sampler loops. Checked against numpy's Cholesky factor."""

from __future__ import annotations

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.lax import linalg as lax_linalg


def _spd(rng, bs, n, dtype):
    m = rng.standard_normal(bs + (n, n))
    return (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(dtype)


def _in_loop(fn):
    # one trip of a fori_loop: the equation sits in a loop body, where the rewrite applies
    return fjax.jit(lambda x: lax.fori_loop(0, 1, lambda i, acc: fn(x), jnp.zeros_like(x)))


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("bs,n", [((), 1), ((), 3), ((2,), 5), ((), 12), ((2, 3), 9)])
def test_cholesky_in_loop_body_matches_numpy(dtype, rtol, bs, n, caplog):
    caplog.set_level("INFO", logger="fjax.lowering")
    rng = np.random.default_rng(n)
    x = _spd(rng, bs, n, dtype)
    with fjax.enable_x64(dtype == np.float64):
        got = _in_loop(lax_linalg.cholesky)(jnp.asarray(x))
        up = _in_loop(lambda a: lax_linalg.cholesky(a, symmetrize_input=False).swapaxes(-1, -2))(jnp.asarray(x))
        sym = _in_loop(lambda a: jnp.linalg.cholesky(a, upper=True))(jnp.asarray(x))
    want = np.linalg.cholesky(x.astype(np.float64))
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)
    assert np.all(np.triu(np.asarray(got), 1) == 0)
    np.testing.assert_allclose(up, np.swapaxes(want, -1, -2), rtol=rtol, atol=rtol * scale)
    np.testing.assert_allclose(sym, np.swapaxes(want, -1, -2), rtol=rtol, atol=rtol * scale)
    assert "runs on the host" not in caplog.text


def test_reads_the_lower_triangle_and_symmetrizes():
    rng = np.random.default_rng(1)
    x = _spd(rng, (), 4, np.float32)
    junk = x + np.triu(np.full((4, 4), 7.0, np.float32), 1)  # the upper triangle is not read
    got = _in_loop(lambda a: lax_linalg.cholesky(a, symmetrize_input=False))(jnp.asarray(junk))
    np.testing.assert_allclose(got, np.linalg.cholesky(x), rtol=2e-5, atol=1e-5)
    sym = _in_loop(lax_linalg.cholesky)(jnp.asarray(junk))  # (JAX's default symmetrizes)
    want = np.linalg.cholesky((junk + junk.T) / 2)
    np.testing.assert_allclose(sym, want, rtol=2e-5, atol=1e-5)


def test_not_positive_definite_gives_nan_per_matrix():
    rng = np.random.default_rng(2)
    good = _spd(rng, (), 3, np.float32)
    bad = good.copy()
    bad[1, 1] = -50.0
    x = jnp.asarray(np.stack([good, bad]))
    got = np.asarray(_in_loop(lax_linalg.cholesky)(x))
    eager = np.asarray(lax_linalg.cholesky(x))
    np.testing.assert_allclose(got[0], np.linalg.cholesky(good), rtol=2e-5, atol=1e-5)
    assert np.all(np.isnan(got[1])) and np.all(np.isnan(eager[1]))


def test_gradient_through_a_loop_with_cholesky():
    rng = np.random.default_rng(3)
    x = _spd(rng, (), 3, np.float64)

    def f(a):
        return lax.fori_loop(0, 2, lambda i, acc: acc + jnp.sum(lax_linalg.cholesky(a) ** 2), 0.0)

    with fjax.enable_x64():
        x = jnp.asarray(x)
        g = fjax.jit(fjax.grad(f))(x)
        g_eager = fjax.grad(lambda a: 2 * jnp.sum(lax_linalg.cholesky(a) ** 2))(x)
    np.testing.assert_allclose(g, g_eager, rtol=1e-10, atol=1e-12)


def test_eager_scan_body_gets_the_loop_forms(caplog):
    # an eager scan (outside jit) compiles its body: lower_fun rules and the forms for loop
    # bodies apply there too (blackjax's documented sampling loop is such a scan)
    caplog.set_level("INFO", logger="fjax.lowering")
    c = jnp.asarray(_spd(np.random.default_rng(4), (), 3, np.float32))

    def inner(carry):
        return lax.while_loop(
            lambda s: s[0] < carry[0] + 2, lambda s: (s[0] + 1, s[1] + jnp.linalg.cholesky(c)[2, 1]), carry
        )

    def body(carry, _):
        out = inner(carry)
        return out, lax.population_count(out[0])

    (n, total), pops = lax.scan(body, (jnp.int32(0), jnp.float32(0)), None, length=3)
    want = np.linalg.cholesky(np.asarray(c))[2, 1]
    assert int(n) == 6
    np.testing.assert_allclose(total, 6 * want, rtol=1e-5)
    np.testing.assert_array_equal(pops, [1, 1, 2])  # of 2, 4, 6
    assert "runs on the host" not in caplog.text
