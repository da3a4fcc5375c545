"""fjax.scipy.optimize.minimize (BFGS), integrate.trapezoid, ndimage.map_coordinates against
scipy, and fjax.image.resize/scale_and_translate against outputs recorded from JAX
(tests/data/image_resize.json, made by tests/data/make_image_resize.py)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
import scipy.integrate as si
import scipy.ndimage as nd
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fjax
import fjax.numpy as jnp
from fjax.scipy import integrate, ndimage, optimize
from fjax.test_util import check_grads


def _rosen(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


_MIN_JIT = fjax.jit(lambda x0: optimize.minimize(_rosen, x0, method="BFGS"))


def test_minimize_bfgs():
    r = optimize.minimize(_rosen, jnp.zeros(4), method="BFGS")
    assert bool(r.success) and int(r.status) == 0 and int(r.nit) > 0
    np.testing.assert_allclose(r.x, np.ones(4), atol=1e-3)
    assert float(r.fun) < 1e-6 and float(jnp.max(jnp.abs(r.jac))) < 1e-4
    rj = _MIN_JIT(jnp.zeros(4))
    np.testing.assert_allclose(rj.x, r.x, rtol=1e-5, atol=1e-6)
    # args, tol and options
    quad = lambda x, c: jnp.sum((x - c) ** 2 * jnp.arange(1, 4))  # noqa: E731
    r = optimize.minimize(quad, jnp.zeros(3), args=(jnp.array([1.0, -2.0, 0.5]),), method="bfgs", tol=1e-6)
    np.testing.assert_allclose(r.x, [1.0, -2.0, 0.5], atol=1e-5)
    r = optimize.minimize(_rosen, jnp.zeros(4), method="BFGS", options={"maxiter": 3})
    assert int(r.status) == 1 and not bool(r.success) and int(r.nit) == 3
    with pytest.raises(ValueError, match="not recognized"):
        optimize.minimize(_rosen, jnp.zeros(2), method="Nelder-Mead")
    with pytest.raises(TypeError, match="must be a tuple"):
        optimize.minimize(quad, jnp.zeros(3), args=[1.0], method="BFGS")
    with pytest.raises(ValueError, match="one-dimensional"):
        optimize.minimize(_rosen, jnp.zeros((2, 2)), method="BFGS")


@given(
    hnp.arrays(np.float64, st.integers(2, 8), elements=st.floats(-10, 10)),
    st.floats(0.01, 3),
)
def test_trapezoid_matches_scipy(y, dx):
    np.testing.assert_allclose(integrate.trapezoid(y, dx=dx), si.trapezoid(y, dx=dx), rtol=1e-5, atol=1e-5)
    x = np.cumsum(np.abs(y) + 0.1)
    np.testing.assert_allclose(integrate.trapezoid(y, x), si.trapezoid(y, x), rtol=1e-5, atol=1e-4)


def test_trapezoid_axis_and_grad(x64):
    y = np.random.default_rng(0).normal(size=(3, 5))
    np.testing.assert_allclose(integrate.trapezoid(y, axis=0), si.trapezoid(y, axis=0))
    x = np.linspace(0, 1, 3)
    np.testing.assert_allclose(integrate.trapezoid(y, x, axis=0), si.trapezoid(y, x, axis=0))
    check_grads(lambda y: integrate.trapezoid(y, dx=0.3), (jnp.asarray(y),), 2)


_MODES = [("constant", "grid-constant"), ("nearest", "nearest"), ("wrap", "grid-wrap"), ("mirror", "mirror"),
          ("reflect", "reflect")]  # fmt: skip


@pytest.mark.parametrize("mode,scipy_mode", _MODES)
@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates_matches_scipy(mode, scipy_mode, order):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(5, 6)).astype(np.float32)
    coords = [rng.uniform(-3, 8, 20).astype(np.float32), rng.uniform(-3, 9, 20).astype(np.float32)]
    out = ndimage.map_coordinates(a, coords, order, mode=mode, cval=0.5)
    want = nd.map_coordinates(a.astype(np.float64), coords, order=order, mode=scipy_mode, cval=0.5)
    if order == 0:
        # round-half-away ties can differ from scipy's rounding; compare where not on a tie
        ok = np.all([np.abs(c - np.floor(c) - 0.5) > 1e-3 for c in coords], axis=0)
        np.testing.assert_allclose(np.asarray(out)[ok], want[ok], rtol=1e-5)
    else:
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_map_coordinates_grad_vmap_errors(x64):
    a = jnp.asarray(np.arange(12.0).reshape(3, 4))
    f = lambda c: ndimage.map_coordinates(a, [c, c + 0.3], 1).sum()  # noqa: E731
    check_grads(f, (jnp.array([0.4, 1.3]),), 1)
    batched = fjax.vmap(lambda c: ndimage.map_coordinates(a, [c, c], 1))(jnp.array([[0.5, 1.5], [0.2, 2.2]]))
    assert batched.shape == (2, 2)
    ints = ndimage.map_coordinates(jnp.arange(6).reshape(2, 3), [jnp.array([0.4]), jnp.array([1.6])], 1)
    assert ints.dtype == jnp.arange(1).dtype
    with pytest.raises(NotImplementedError, match="order<=1"):
        ndimage.map_coordinates(a, [jnp.zeros(1), jnp.zeros(1)], 3)
    with pytest.raises(NotImplementedError, match="mode"):
        ndimage.map_coordinates(a, [jnp.zeros(1), jnp.zeros(1)], 1, mode="grid-constant")
    with pytest.raises(ValueError, match="length input.ndim"):
        ndimage.map_coordinates(a, [jnp.zeros(1)], 1)


IMG_DATA = json.loads((pathlib.Path(__file__).parent / "data" / "image_resize.json").read_text())
IMAGE = np.sin(0.3 * np.arange(2 * 7 * 9, dtype=np.float32)).reshape(2, 7, 9)


@pytest.mark.parametrize("i", range(len(IMG_DATA["cases"])))
def test_image_matches_recorded_jax(i):
    c = IMG_DATA["cases"][i]
    if c["fn"] == "resize":
        out = fjax.image.resize(IMAGE, c["shape"], c["method"], antialias=c["antialias"])
    else:
        out = fjax.image.scale_and_translate(
            IMAGE, c["shape"], c["spatial_dims"], np.array(c["scale"], np.float32),
            np.array(c["translation"], np.float32), c["method"], antialias=c["antialias"],
        )  # fmt: skip
    np.testing.assert_allclose(out, np.array(c["out"], np.float32).reshape(c["shape"]), rtol=1e-5, atol=1e-5)


def test_image_grads_and_errors(x64):
    img = jnp.asarray(np.random.default_rng(0).normal(size=(4, 5)))
    check_grads(lambda x: fjax.image.resize(x, (6, 3), "linear").sum(), (img,), 2)
    check_grads(
        lambda s: fjax.image.scale_and_translate(img, (6, 3), (0, 1), s, jnp.array([0.1, 0.2]), "cubic").sum(),
        (jnp.array([1.4, 0.7]),),
        1,
    )
    with pytest.raises(ValueError, match="Unknown resize method"):
        fjax.image.resize(img, (2, 2), "bogus")
    with pytest.raises(ValueError, match="shape must have length"):
        fjax.image.resize(img, (2,), "linear")
    with pytest.raises(ValueError, match="Nearest neighbor"):
        fjax.image.scale_and_translate(img, (2, 2), (0, 1), jnp.ones(2), jnp.zeros(2), "nearest")
