"""The CUDA kernels of ``random_poisson``, ``random_binomial`` (``fjax/backends/cuda/random_discrete.py``)
and ``random_gamma`` in float64/float16/bfloat16 (``random_gamma_wide.py``), run through
``device_put`` + ``jit`` on the cupy stand-in (kernels compiled by g++ against ``cuda_emu.h``)
against the CPU backend: the same samples bit for bit (float64 gamma: to a few ulp), over edge
parameters (the branch switch points, NaN, infinities, negative values, rates past the lgamma
table), batched keys (vmap), scan, and hypothesis-drawn parameters. The rejection samplers share
their loop length across the lanes of a key, so several lanes per key are always drawn."""

from __future__ import annotations

import _standin_gpu  # noqa: E402  (tests/ is on the path)
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
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
_wrap = fjax.random.wrap_key_data

# Knuth below 10, rejection from 10; 4096 ends the lgamma table; NaN/negative/inf edge cases
LAMS = np.array([0, 1e-6, 0.5, 3, 9.99, 10, 10.5, 40, 300, 4095, 6000, 1e6, np.nan, -1, np.inf, -np.inf], np.float32)
# inversion for count * q <= 10, BTRS above; invalid counts and probabilities
COUNTS = np.array([0, 1, 5, 20, 50, 100, 1000, 1e4, 2.5, 34.9, np.nan, -3, np.inf, 30, 30, 7, 1e6], np.float32)
PROBS = np.array([0.1, 0.5, 0.9, 0.3, 0.7, 0.99, 0.01, 0.5, 0.4, 0.3, 0.5, 0.5, 0.5, 1.5, -0.2, np.nan, 0.0],
                 np.float32)  # fmt: skip


def _keys(seed: int, n: int) -> np.ndarray:
    return np.asarray(fjax.random.key_data(fjax.random.split(fjax.random.key(seed), n)))


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # NaN equal to NaN (their bits may differ)


@pytest.mark.parametrize("dt", [np.int32, np.uint8, np.int8])
def test_poisson_is_the_cpu_stream(dt):
    """Unbatched and vmapped over keys, every lane of every key the CPU's sample (int8's loop
    bound is 127 iterations; a NaN or negative rate gives -1, wrapped in unsigned dtypes)."""

    def draws(ks, lam):
        ks = _wrap(ks)
        return (
            fjax.random.poisson(ks[0], lam, (3, lam.size), dtype=dt),
            fjax.vmap(lambda k: fjax.random.poisson(k, lam, dtype=dt))(ks),
        )

    got, want = _both(draws, _keys(1, 4), LAMS)
    for g, w in zip(got, want):
        _same(g, w)
    assert (want[0][:, 0] == 0).all() and (want[0][:, 12:14] == np.array(-1).astype(dt)).all()


def test_poisson_64_bit_dtypes():
    lam = np.concatenate([LAMS, [2e9, 1e19, 3e19]]).astype(np.float32)
    got, want = _both(
        lambda k, l: [fjax.random.poisson(_wrap(k), l, (2, l.size), dtype=d) for d in (jnp.int64, jnp.uint64)],
        _keys(2, 1)[0],
        lam,
        x64=True,
    )
    for g, w in zip(got, want):
        _same(g, w)


def test_binomial_is_the_cpu_stream():
    def draws(ks, n, p):
        ks = _wrap(ks)
        return (
            fjax.random.binomial(ks[0], n, p, (4, n.size)),
            fjax.vmap(lambda k: fjax.random.binomial(k, n, p))(ks),
            fjax.random.binomial(ks[1], 60.0, 0.5, (256,)),  # every lane BTRS
        )

    got, want = _both(draws, _keys(3, 3), COUNTS, PROBS)
    for g, w in zip(got, want):
        _same(g, w)
    assert np.isnan(want[0][:, 10:12]).all() and np.isnan(want[0][:, 13:16]).all() and (want[0][:, 12] == np.inf).all()


@given(
    st.lists(st.floats(0, 80, width=32), min_size=12, max_size=12),
    st.lists(st.integers(0, 300), min_size=12, max_size=12),
    st.lists(st.floats(0, 1, width=32), min_size=12, max_size=12),
    st.integers(0, 2**31 - 1),
)
def test_drawn_parameters_give_the_cpu_samples(lams, counts, probs, seed):
    lam = np.array(lams, np.float32)
    n, p = np.array(counts, np.float32), np.array(probs, np.float32)
    key = np.asarray(fjax.random.key_data(fjax.random.key(seed)))
    got, want = _both(_drawn, key, lam, n, p)
    for g, w in zip(got, want):
        _same(g, w)


def _drawn(k, lam, n, p):
    k1, k2 = fjax.random.split(_wrap(k))
    return fjax.random.poisson(k1, lam, (2, 12)), fjax.random.binomial(k2, n, p, (2, 12))


def test_large_rate_samples_have_the_poisson_moments():
    """Past the lgamma table (rates above 4095) the GPU's lgamma is CUDA's, the CPU's the C
    library's: bit for bit here (the emulator calls the C library), and on a GPU at least the
    distribution, which this checks (mean and variance within 5 standard errors)."""
    lam = np.float32(6000)
    got, want = _both(lambda k: fjax.random.poisson(_wrap(k), lam, (4000,)), _keys(4, 1)[0])
    _same(got, want)
    x = got.astype(np.float64)
    assert abs(x.mean() - lam) < 5 * np.sqrt(lam / x.size)
    assert abs(x.var() / lam - 1) < 5 * np.sqrt(2 / x.size)


def test_discrete_samplers_inside_scan():
    lam = np.array([0.5, 4.0, 12.0, 70.0, 9.0], np.float32)

    def f(k, lam):
        def body(c, k):
            k1, k2 = fjax.random.split(k)
            s = fjax.random.poisson(k1, lam)
            return c + jnp.sum(s), (s, fjax.random.binomial(k2, lam * 3, 0.4))

        return lax.scan(body, jnp.int32(0), fjax.random.split(_wrap(k), 4))

    (gc, (gs, gb)), (wc, (ws, wb)) = _both(f, _keys(5, 1)[0], lam)
    _same(gc, wc)
    _same(gs, ws)
    _same(gb, wb)


A_EDGES = [0.0, 1e-3, 0.05, 0.3, 0.5, 0.99, 1.0, 1.5, 2.0, 7.5, 30.0, 1e4, np.nan, np.inf, -1.0]


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16], ids=["float16", "bfloat16"])
def test_low_float_gamma_is_the_cpu_stream(dt):
    """float16/bfloat16 gamma and loggamma (vmapped over keys) and beta: the CPU's bits."""
    a = np.concatenate([A_EDGES, np.linspace(0.1, 12, 17)]).astype(dt)

    def draws(ks, a):
        ks = _wrap(ks)
        return (
            fjax.vmap(lambda k: fjax.random.gamma(k, a, dtype=dt))(ks),
            fjax.vmap(lambda k: fjax.random.loggamma(k, a, dtype=dt))(ks),
            fjax.random.beta(ks[0], a[15:], a[15:][::-1], dtype=dt),
        )

    got, want = _both(draws, _keys(6, 3), a)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.dtype(dt)
        np.testing.assert_array_equal(g.view(np.uint16), w.view(np.uint16))


def test_float64_gamma_matches_the_cpu():
    """float64 gamma/loggamma (vmapped), beta and dirichlet: to a few ulp of the CPU (the CPU's
    log is compiled with fma contraction, its erf_inv calls the C library's erf)."""
    a = np.concatenate([A_EDGES, np.linspace(0.1, 12, 17)])

    def draws(ks, a):
        ks = _wrap(ks)
        f64 = jnp.float64
        return (
            fjax.vmap(lambda k: fjax.random.gamma(k, a, dtype=f64))(ks),
            fjax.vmap(lambda k: fjax.random.loggamma(k, a, dtype=f64))(ks),
            fjax.random.beta(ks[0], a[15:], a[15:][::-1], dtype=f64),
            fjax.random.dirichlet(ks[1], a[15:25], dtype=f64),
        )

    got, want = _both(draws, _keys(7, 3), a, x64=True)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.float64
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-300, equal_nan=True)
    assert np.isnan(want[0][:, 12]).all() and (want[0][:, 13] == np.inf).all()


def test_a_dtype_with_no_cuda_form_names_the_primitive():
    k = fjax.device_put(fjax.random.key_data(fjax.random.key(0)), fjax.devices("gpu")[0])
    with pytest.raises(NotImplementedError, match="random_poisson"):
        fjax.jit(lambda k: fjax.random.poisson(_wrap(k), 3.0, (4,), dtype=ml_dtypes.int4))(k)
