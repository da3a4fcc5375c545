"""Tests of lax.fft and jnp.fft against numpy.fft: every function, norm, n/s/axes, float32 and
float64 (with their complex dtypes), derivatives (order 2) and vmap/jit against eager."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.test_util import check_grads

TOL = {np.float32: 1e-4, np.float64: 1e-11}
norms = st.sampled_from([None, "backward", "ortho", "forward"])
dtypes = st.sampled_from([np.float32, np.float64])


def rnd(shape, seed, dtype=np.float64, cplx=False):
    r = np.random.RandomState(seed)
    x = r.randn(*shape)
    if cplx:
        x = x + 1j * r.randn(*shape)
    return x.astype(np.result_type(dtype, np.complex64) if cplx else dtype)


def close(x, y, dt, scale=1.0):
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape, (x.shape, y.shape)
    tol = TOL[np.dtype(dt).type] * scale
    np.testing.assert_allclose(x, y, rtol=tol, atol=tol * max(1.0, np.abs(y).max(initial=0.0)))


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


@given(st.sampled_from(["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]), dtypes, norms,
       st.sampled_from([None, 1, 5, 8, 13]), st.integers(1, 9), st.integers(0, 50))  # fmt: skip
def test_1d(name, dt, norm, n, length, seed):
    real_in = name in ("rfft", "ihfft")
    x = rnd((3, length), seed, dt, cplx=not real_in)
    if name in ("irfft", "hfft") and n is None and length == 1:
        n = 2
    got = getattr(jnp.fft, name)(x, n=n, axis=-1, norm=norm)
    want = getattr(np.fft, name)(x, n=n, axis=-1, norm=norm)
    want_dt = np.float32 if dt == np.float32 else np.float64
    if np.iscomplexobj(want):
        want_dt = np.result_type(want_dt, np.complex64)
    assert got.dtype == want_dt
    close(got, want, dt, 10)


@given(st.sampled_from(["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"]), dtypes, norms,
       st.sampled_from([(None, None), ((3, 4), (0, 2)), (None, (1,)), ((6, 8), None), (None, (0, 1))]),
       st.integers(0, 50))  # fmt: skip
def test_nd(name, dt, norm, s_axes, seed):
    s, axes = s_axes
    if name.endswith("2"):
        if axes is not None and len(axes) != 2:
            return
        axes = axes if axes is not None else (-2, -1)
    if axes is None and s is not None:
        axes = tuple(range(3 - len(s), 3))
    x = rnd((4, 5, 6), seed, dt, cplx=name.startswith(("i", "f")) and not name.startswith("rfft"))
    got = getattr(jnp.fft, name)(x, s=s, axes=axes, norm=norm)
    want = getattr(np.fft, name)(x, s=s, axes=axes, norm=norm)
    close(got, want, dt, 100)


def test_freq_and_shift():
    for n in (1, 6, 7):
        close(jnp.fft.fftfreq(n, 0.5), np.fft.fftfreq(n, 0.5), np.float64)
        close(jnp.fft.rfftfreq(n), np.fft.rfftfreq(n), np.float64)
    x = np.arange(30).reshape(5, 6)
    for axes in (None, 0, (1,), (0, 1)):
        np.testing.assert_array_equal(jnp.fft.fftshift(x, axes), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(jnp.fft.ifftshift(x, axes), np.fft.ifftshift(x, axes))
    close(fjax.jit(lambda d: jnp.fft.fftfreq(5, d))(0.1), np.fft.fftfreq(5, 0.1), np.float64)
    fjax.config.update("jax_enable_x64", False)
    assert jnp.fft.fftfreq(4).dtype == np.float32
    assert jnp.fft.rfft(np.ones(4)).dtype == np.complex64
    assert jnp.fft.fft(np.ones(4, np.int32)).dtype == np.complex64


def test_errors():
    with pytest.raises(ValueError, match="norm"):
        jnp.fft.fft(np.ones(4), norm="bad")
    # JAX 0.10.2 raises ValueError("only real valued inputs supported for rfft") for both
    with pytest.raises(ValueError, match="only real valued inputs supported for rfft"):
        jnp.fft.rfft(np.ones(4) + 1j)
    with pytest.raises(ValueError, match="Shape should be positive"):  # (JAX 0.10.2's words)
        jnp.fft.fft(np.ones(4), n=0)
    with pytest.raises(ValueError, match="repeated axes"):
        jnp.fft.fftn(np.ones((2, 2)), axes=(0, 0))
    with pytest.raises(ValueError, match="only real valued inputs supported for rfft"):
        lax.fft(np.ones(4) + 0j, "rfft", (4,))


X = rnd((3, 8), 1)
C = rnd((3, 5), 2, cplx=True)
Y = rnd((4, 5, 6), 3)


@pytest.mark.parametrize(
    "f,x",
    [
        (lambda x: jnp.fft.fft(x), C),
        (lambda x: jnp.fft.ifft(x, n=7, norm="ortho"), C),
        (lambda x: jnp.fft.rfft(x).real + jnp.fft.rfft(x, n=7, norm="forward").imag.sum(), X),
        (lambda x: jnp.fft.irfft(x), C),
        (lambda x: jnp.fft.irfft(x, n=9), C),
        (lambda x: jnp.fft.hfft(x, norm="ortho"), C),
        (lambda x: jnp.fft.ihfft(x), X),
        (lambda x: jnp.fft.irfftn(jnp.fft.rfftn(x) * jnp.fft.rfftn(x)), Y),
        (lambda x: jnp.fft.fft2(x, s=(3, 3)), Y + 0j),
    ],
)
def test_grads(f, x):
    check_grads(f, (x,), 2, modes=("fwd", "rev"))


def test_grads_float32():
    check_grads(lambda x: jnp.fft.rfft(x).real, (X.astype(np.float32),), 1)


_jit_rfft = fjax.jit(lambda x: jnp.fft.irfft(jnp.fft.rfft(x) * 2, n=8))


def test_vmap_jit():
    close(fjax.vmap(jnp.fft.rfft)(X), jnp.fft.rfft(X), np.float64)
    close(fjax.vmap(jnp.fft.fft, in_axes=1, out_axes=1)(C), np.fft.fft(C, axis=0), np.float64)
    close(fjax.vmap(lambda x: jnp.fft.fftn(x, axes=(0, 1)))(Y + 0j), np.fft.fftn(Y, axes=(1, 2)), np.float64, 100)
    close(_jit_rfft(X), 2 * X, np.float64)
    g = fjax.jit(fjax.grad(lambda x: jnp.sum(jnp.fft.rfft(x).real ** 2)))(X)
    close(g, fjax.grad(lambda x: jnp.sum(jnp.fft.rfft(x).real ** 2))(X), np.float64)
    assert jnp.fft.fft(np.zeros((0, 4)) + 0j).shape == (0, 4)
