"""The CUDA kernels of ``fjax/backends/cuda/special_ops.py`` (special functions, bit counts,
``reduce_precision``, ``top_k``) and ``cumlogsumexp``, run through ``device_put`` + ``jit`` on the
cupy stand-in (kernels compiled by g++ against ``cuda_emu.h``) against the CPU backend's numbers:
edge values (zeros of both signs, poles, infinities, NaN, the algorithms' switch points) and
hypothesis-drawn arrays."""

from __future__ import annotations

import _standin_gpu  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed():
        yield


_both = _standin_gpu.both


EDGES = [0.0, -0.0, -1.0, -2.0, -2.5, -0.3, 1e-8, 0.5, 1.0, 1.4616321449683622, 2.0, 5.9, 6.0, 14.9, 15.0,
         19.9, 20.0, 20.1, 35.0, 100.0, 700.0, 1e5, np.inf, -np.inf, np.nan]  # fmt: skip


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["digamma", "bessel_i0e", "bessel_i1e"])
def test_unary_special_functions_match_the_cpu(name, dt):
    x = np.array(EDGES + list(np.linspace(-30, 30, 39)), dt)
    got, want = _both(getattr(lax, name), x, x64=dt == np.float64)
    assert got.dtype == want.dtype == dt
    rtol = 2e-6 if dt == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 1e-3, equal_nan=True)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma_matches_scipy(name, dt):
    av = [0.0, 1e-3, 0.1, 0.5, 1.0, 2.5, 10.0, 100.0, 1000.0, np.inf, -1.0, np.nan]
    xv = [0.0, 1e-3, 0.1, 0.5, 1.0, 3.0, 11.0, 99.0, 1100.0, np.inf, -1.0, np.nan]
    a, x = (np.array(v, dt) for v in np.meshgrid(av, xv))
    got, want = _both(getattr(lax, name), a, x, x64=dt == np.float64)
    rtol = 2e-6 if dt == np.float32 else 1e-11
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-14, equal_nan=True)


def test_polygamma_matches_the_cpu():
    m = np.repeat(np.array([0.0, 1.0, 2.0, 3.0, 5.0, -1.0, 1.5]), 9)
    x = np.tile(np.array([0.3, 1.0, 2.5, 7.0, 14.9, 15.0, 40.0, -1.5, -2.0]), 7)
    got, want = _both(lax.polygamma, m, x, x64=True)
    np.testing.assert_allclose(got, want, rtol=1e-11, equal_nan=True)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-60, 60, width=32), min_size=16, max_size=16))
def test_special_functions_on_drawn_values(vals):
    x = np.array(vals, np.float32)
    (d, i0, i1), (dw, i0w, i1w) = _both(lambda x: (lax.digamma(x), lax.bessel_i0e(x), lax.bessel_i1e(x)), x)
    np.testing.assert_allclose(d, dw, rtol=2e-6, atol=2e-6, equal_nan=True)
    np.testing.assert_allclose(i0, i0w, rtol=2e-6, atol=1e-12)
    np.testing.assert_allclose(i1, i1w, rtol=2e-6, atol=1e-12)


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64])
def test_bit_counts_match_the_cpu(dt):
    info = np.iinfo(dt)
    x = np.array([0, 1, 2, 3, 7, 8, int(info.max), int(info.min), int(info.max) // 3, int(info.min) + 1], dtype=object)
    x = x.astype(dt)
    got, want = _both(lambda x: (lax.clz(x), lax.population_count(x)), x, x64=True)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == dt
        np.testing.assert_array_equal(g, w)


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


@pytest.mark.parametrize(
    "dt,eb,mb",
    [(np.float32, 8, 7), (np.float32, 5, 10), (np.float32, 3, 2), (np.float32, 8, 0), (np.float32, 8, 23),
     (np.float64, 8, 23), (np.float64, 5, 10), ("bfloat16", 5, 4), ("float16", 4, 3)],
)  # fmt: skip
def test_reduce_precision_is_bit_identical(dt, eb, mb):
    dt = np.dtype(getattr(jnp, dt) if isinstance(dt, str) else dt)
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, -np.nan, 1e-40, 3e38, 65504.0, 65520.0]),
            rng.standard_normal(40) * 10.0 ** rng.integers(-8, 8, 40),
        ]
    ).astype(dt)
    got, want = _both(lambda x: lax.reduce_precision(x, eb, mb), x, x64=dt == np.float64)
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("k", [1, 3, 70])
@pytest.mark.parametrize("dt", [np.float32, np.int32, "bfloat16"])
def test_top_k_matches_the_cpu(k, dt):
    """NaN largest, -0.0 below 0.0, ties in index order; along the last axis and axis 0."""
    dt = np.dtype(getattr(jnp, dt) if isinstance(dt, str) else dt)
    rng = np.random.default_rng(k)
    x = rng.integers(-5, 6, (3, 80)).astype(np.float64)  # many ties
    if dt.kind != "i":
        x[0, 3], x[1, 7], x[2, 0], x[2, 1] = np.nan, -0.0, np.inf, -np.inf
        x[1, 9] = 0.0
    x = x.astype(dt)
    (v, i), (vw, iw) = _both(lambda x: lax.top_k(x, k), x)
    np.testing.assert_array_equal(_bits(v) if dt.kind != "i" else v, _bits(vw) if dt.kind != "i" else vw)
    np.testing.assert_array_equal(i, iw)
    (v0, i0), (v0w, i0w) = _both(lambda x: lax.top_k(x.T, k, axis=0) if k <= 3 else lax.top_k(x, k), x)
    np.testing.assert_array_equal(i0, i0w)
    np.testing.assert_array_equal(np.asarray(v0, np.float64), np.asarray(v0w, np.float64))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_cumlogsumexp_matches_the_cpu(dt):
    x = np.array(
        [
            [0.0, -np.inf, -np.inf, 1.0, np.inf, 2.0],
            [-np.inf, -np.inf, 3.0, 3.0, -1e30, 5.0],
            [1.0, np.nan, 2.0, 0, 0, 0],
        ],
        dt,
    )
    got, want = _both(lambda x: (lax.cumlogsumexp(x, axis=1), lax.cumlogsumexp(x, axis=0, reverse=True)), x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6 if dt == np.float32 else 1e-14, equal_nan=True)


def test_random_gamma_is_the_cpu_stream():
    """float32 gamma samples (random.gamma, loggamma, and through them beta and dirichlet, vmapped
    over keys): the CPU's bits for a >= 1 and in log space, float tolerance otherwise (CUDA's powf
    for a < 1; beta's elementwise transcendentals)."""
    a = np.concatenate([np.linspace(0.05, 0.99, 20), np.linspace(1, 30, 30), [1e-3, 1e4]]).astype(np.float32)
    keys = fjax.random.key_data(fjax.random.split(fjax.random.key(3), 3))
    big = a >= 1

    def draws(ks, a):
        ks = fjax.random.wrap_key_data(ks)
        return (
            fjax.vmap(lambda k: fjax.random.gamma(k, a))(ks),
            fjax.vmap(lambda k: fjax.random.loggamma(k, a))(ks),
            fjax.random.beta(ks[0], a, a[::-1]),
            fjax.random.dirichlet(ks[1], a[20:30]),
        )

    (g, lg, b, d), (gw, lgw, bw, dw) = _both(draws, keys, a)
    np.testing.assert_array_equal(g[:, big].view(np.uint32), gw[:, big].view(np.uint32))
    np.testing.assert_array_equal(lg.view(np.uint32), lgw.view(np.uint32))
    for x, w in ((g, gw), (b, bw), (d, dw)):
        np.testing.assert_allclose(x, w, rtol=2e-5, atol=1e-30)
    assert np.all(g >= 0) and np.all((b >= 0) & (b <= 1)) and np.allclose(d.sum(-1), 1, atol=1e-5)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_igamma_derivatives_match_the_cpu(dt):
    av = [1e-3, 0.1, 0.5, 1.0, 2.5, 10.0, 100.0, 0.0, -1.0, np.inf, np.nan]
    xv = [0.0, 1e-3, 0.1, 0.7, 1.0, 3.0, 11.0, 99.0, 300.0, np.inf, np.nan]
    a, x = (np.array(v, dt) for v in np.meshgrid(av, xv))
    got, want = _both(lambda a, x: (lax.igamma_grad_a(a, x), lax.random_gamma_grad(a, x)), a, x, x64=dt == np.float64)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6 if dt == np.float32 else 1e-10, atol=1e-30, equal_nan=True)


def test_gradients_of_gamma_samples_on_the_gpu():
    """Reparameterized gradients through random.gamma/beta/dirichlet (random_gamma_grad), as the CPU."""
    a = np.linspace(0.3, 6.0, 12).astype(np.float32)
    k = fjax.random.key_data(fjax.random.key(9))

    def loss(a, k):
        k = fjax.random.wrap_key_data(k)
        k1, k2, k3 = fjax.random.split(k, 3)
        return (
            jnp.sum(fjax.random.gamma(k1, a) ** 2)
            + jnp.sum(fjax.random.beta(k2, a, a[::-1]))
            + jnp.sum(fjax.random.dirichlet(k3, a) * jnp.arange(12.0))
        )

    got, want = _both(fjax.grad(loss), a, k)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-6)


@pytest.mark.parametrize("algo", ["RNG_DEFAULT", "RNG_THREE_FRY"])
def test_rng_bit_generator_is_the_cpu_stream(algo):
    """Philox (the default) and threefry bits and the advanced key, bit for bit the CPU's, over
    shapes that exercise threefry's halving (odd, even, scalar) and each unsigned dtype; a key
    whose counter word carries."""
    from fjax.backends.cuda import cupy_standin

    a = getattr(lax.RandomAlgorithm, algo)
    key = np.array([1, 2, 0xFFFFFFFF, 4], np.uint32)
    for shape, dt in [
        ((), np.uint32),
        ((7,), np.uint8),
        ((3, 5), np.uint32),
        ((5, 3, 2), np.uint16),
        ((4, 3), np.uint64),
    ]:
        before = sum(cupy_standin.launches.values())
        got, want = _both(lambda k: lax.rng_bit_generator(k, shape, dt, a), key, x64=True)
        assert sum(cupy_standin.launches.values()) > before  # (ran on the GPU)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    k64 = np.array([3, 2**64 - 2], np.uint64)
    got, want = _both(lambda k: lax.rng_bit_generator(k, (9,), np.uint32, a), k64, x64=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_normal_quantile_log_cdf_and_erfcx(dt):
    from fjax.scipy import special as jss

    p = np.array([0.0, 1.0, -0.1, 1.1, 1e-30, 1e-8, 0.001, 0.3, 0.5, 0.7, 0.999, 1 - 1e-7, np.nan], dt)
    x = np.array([-40.0, -10.0, -1.5, -1.0, -0.3, 0.0, 1.0, 5.0, 10.0, 40.0, np.inf, -np.inf, np.nan], dt)
    got, want = _both(lambda p, x: (jss.ndtri(p), jss.log_ndtr(x), jss.erfcx(x)), p, x, x64=dt == np.float64)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6 if dt == np.float32 else 1e-12, atol=1e-300, equal_nan=True)
