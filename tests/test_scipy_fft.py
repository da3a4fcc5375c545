"""Tests of fjax.scipy.fft (dct, dctn, idct, idctn) against scipy.fft (float32 and float64), with
jit, vmap and grad, and JAX's restrictions (type 2 only; norm None/'backward'/'ortho')."""

import numpy as np
import pytest
import scipy.fft as sf
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
import fjax.scipy.fft as F
from fjax.test_util import check_grads

TOL = {np.float32: 2e-5, np.float64: 1e-12}
DTYPES = st.sampled_from([np.float32, np.float64])
NORMS = st.sampled_from([None, "backward", "ortho"])


def rnd(shape, seed, dtype=np.float64):
    return np.random.RandomState(seed).randn(*shape).astype(dtype)


def close(x, y, dt, scale=1.0):
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape, (x.shape, y.shape)
    assert x.dtype == y.dtype, (x.dtype, y.dtype)
    tol = TOL[np.dtype(dt).type] * scale
    np.testing.assert_allclose(x, y, rtol=tol, atol=tol * max(1.0, np.abs(y).max(initial=0.0)))


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


@given(
    st.lists(st.integers(1, 9), min_size=1, max_size=3), DTYPES, NORMS, st.integers(0, 10**6), st.data(),
)  # fmt: skip
def test_dct_idct_match_scipy(shape, dt, norm, seed, data):
    x = rnd(tuple(shape), seed, dt)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = data.draw(st.one_of(st.none(), st.integers(1, 12)))
    scale = max(shape) * 10
    close(F.dct(x, n=n, axis=axis, norm=norm), sf.dct(x, n=n, axis=axis, norm=norm), dt, scale)
    close(F.idct(x, n=n, axis=axis, norm=norm), sf.idct(x, n=n, axis=axis, norm=norm), dt, scale)
    # round trips
    close(F.idct(F.dct(x, axis=axis, norm=norm), axis=axis, norm=norm), x, dt, scale)
    close(F.dct(F.idct(x, axis=axis, norm=norm), axis=axis, norm=norm), x, dt, scale)


@given(st.lists(st.integers(1, 6), min_size=1, max_size=3), DTYPES, NORMS, st.integers(0, 10**6), st.data())
def test_dctn_idctn_match_scipy(shape, dt, norm, seed, data):
    x = rnd(tuple(shape), seed, dt)
    nd = len(shape)
    axes = data.draw(st.one_of(st.none(), st.permutations(range(nd)).flatmap(lambda p: st.just(p[: max(1, nd - 1)]))))
    use_s = data.draw(st.booleans())
    full_axes = tuple(range(nd)) if axes is None else tuple(axes)
    s = [data.draw(st.integers(1, 8)) for _ in full_axes] if use_s else None
    scale = max(shape) ** 2 * 10
    # JAX: axes=None means every axis, with s[i] applying to axis i (scipy: the last len(s) axes)
    for ours, theirs in ((F.dctn, sf.dctn), (F.idctn, sf.idctn)):
        got = ours(x, s=s, axes=axes, norm=norm)
        want = theirs(x, s=s, axes=full_axes, norm=norm)
        close(got, want, dt, scale)


def test_dctn_s_shorter_than_axes_and_defaults():
    # as JAX's documented example: s=[2] with axes=None pads/truncates axis 0 only, transforms both
    x = rnd((3, 3), 0)
    close(F.dctn(x, s=[2]), sf.dctn(x, s=[2, 3], axes=[0, 1]), np.float64)
    close(F.dctn(x, s=[2], axes=[1]), sf.dct(x, n=2, axis=1), np.float64)
    close(F.dctn(x, s=[2, 4]), sf.dctn(x, s=[2, 4]), np.float64)
    close(F.dctn(x), sf.dctn(x), np.float64)
    close(F.idctn(x, axes=0), sf.idct(x, axis=0), np.float64)


def test_dtypes_and_complex():
    assert F.dct(np.arange(5)).dtype == np.float64
    close(F.dct(np.arange(5)), sf.dct(np.arange(5.0)), np.float64)
    x32 = rnd((4,), 1, np.float32)
    assert F.dct(x32).dtype == np.float32 and F.idctn(x32).dtype == np.float32
    z = rnd((6,), 2) + 1j * rnd((6,), 3)
    close(F.dct(z), sf.dct(z), np.float64, 10)
    close(F.idct(z, norm="ortho"), sf.idct(z, norm="ortho"), np.float64, 10)
    fjax.config.update("jax_enable_x64", False)  # the fixture restores it
    assert F.dct(np.arange(5)).dtype == np.float32
    close(F.dct(np.arange(5)), sf.dct(np.arange(5.0)).astype(np.float32), np.float32, 10)


def test_unsupported():
    x = rnd((4,), 0)
    for f in (F.dct, F.idct, F.dctn, F.idctn):
        for t in (1, 3, 4):
            with pytest.raises(NotImplementedError, match="type 2"):
                f(x, type=t)
        with pytest.raises(ValueError, match="norm"):
            f(x, norm="forward")
    with pytest.raises(ValueError, match="data points"):
        F.dct(x, n=0)
    with pytest.raises(ValueError, match="repeated"):
        F.dctn(rnd((2, 2), 0), axes=(0, 0))
    with pytest.raises(ValueError):
        F.dct(np.float64(1.0))
    assert sorted(F.__all__) == ["dct", "dctn", "idct", "idctn"]


def test_jit_vmap_grad():
    x = rnd((3, 5), 4)
    for norm in (None, "ortho"):
        close(fjax.jit(lambda t, norm=norm: F.dct(t, norm=norm))(x), sf.dct(x, norm=norm), np.float64)
        close(fjax.jit(lambda t, norm=norm: F.idctn(t, norm=norm))(x), sf.idctn(x, norm=norm), np.float64, 10)
        close(fjax.vmap(lambda t, norm=norm: F.dct(t, norm=norm))(x), sf.dct(x, norm=norm), np.float64)
        close(fjax.vmap(lambda t, norm=norm: F.idct(t, n=7, norm=norm), in_axes=1, out_axes=1)(x),
              sf.idct(x, n=7, axis=0, norm=norm), np.float64)  # fmt: skip
    check_grads(lambda t: F.dct(t, n=6), (x,), order=2)
    check_grads(lambda t: F.idct(t, axis=0, norm="ortho"), (x,), order=2)
    check_grads(lambda t: F.dctn(t, s=(2, 4)), (x,), order=1)
    check_grads(lambda t: F.idctn(t), (x.astype(np.float32),), order=1)
    # the DCT is linear: its gradient is the transposed transform, ortho's is its inverse
    w = rnd((5,), 5)
    g = fjax.grad(lambda t: jnp.sum(F.dct(t, norm="ortho") * w))(x[0])
    close(g, sf.idct(w, norm="ortho"), np.float64)
