"""fjax.scipy.interpolate.RegularGridInterpolator, fjax.scipy.spatial.transform (Rotation, Slerp)
and fjax.scipy.cluster.vq against scipy, with gradients checked by finite differences."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.cluster.vq as scipy_vq
import scipy.interpolate as scipy_interpolate
import scipy.spatial.transform as scipy_transform
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.scipy
from fjax.scipy.cluster.vq import vq
from fjax.scipy.interpolate import RegularGridInterpolator
from fjax.scipy.spatial.transform import Rotation, Slerp
from fjax.test_util import check_grads

SRot = scipy_transform.Rotation


def _quats(seed: int, n: int) -> np.ndarray:
    q = np.random.RandomState(seed).randn(n, 4)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# RegularGridInterpolator


def test_lazy_submodules() -> None:
    assert fjax.scipy.interpolate.RegularGridInterpolator is RegularGridInterpolator
    assert fjax.scipy.spatial.transform.Rotation is Rotation
    assert fjax.scipy.cluster.vq.vq is vq


@pytest.mark.parametrize("method", ["linear", "nearest"])
@given(seed=st.integers(0, 2**16))
def test_rgi_matches_scipy(method: str, seed: int) -> None:
    rng = np.random.RandomState(seed)
    grid = (np.sort(rng.rand(5)) * 3, np.cumsum(rng.rand(4) + 0.1), np.linspace(0, 1, 3))
    values = rng.randn(5, 4, 3, 2)
    x = rng.rand(20, 3) * np.array([3.5, 2.5, 1.2]) - 0.1  # some points outside the grid
    for fill in (np.nan, None, -1.0):
        want = scipy_interpolate.RegularGridInterpolator(
            grid, values, method=method, bounds_error=False, fill_value=fill
        )(x)
        got = RegularGridInterpolator(grid, values.astype(np.float32), method=method, fill_value=fill)(
            x.astype(np.float32)
        )
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_rgi_jax_literals_shapes_errors_and_grads() -> None:
    pts = (np.array([1.0, 2, 3]), np.array([4.0, 5, 6]))
    vals = np.array([[10, 20, 30], [40, 50, 60], [70, 80, 90]])  # ints are interpolated as floats
    # jax 0.10.2: RegularGridInterpolator(pts, vals)(jnp.array([[1.5, 4.5], [2.2, 5.8], [0., 5], [3., 6.]]))
    f = RegularGridInterpolator(pts, vals)
    got = f(np.array([[1.5, 4.5], [2.2, 5.8], [0.0, 5], [3.0, 6.0]]))
    np.testing.assert_allclose(np.asarray(got), [30.0, 64.0, np.nan, 90.0])
    assert got.dtype == np.float32
    assert f(np.array([1.5, 4.5])).shape == (1,)  # jax: one point of shape (ndim,) gives (1,)
    np.testing.assert_allclose(np.asarray(f((np.array([1.5, 2.5]), np.array([4.5, 5.5])))), [30.0, 70.0])
    with pytest.raises(NotImplementedError, match="bounds_error"):
        RegularGridInterpolator(pts, vals, bounds_error=True)
    with pytest.raises(ValueError, match="method 'cubic' is not defined"):
        RegularGridInterpolator(pts, vals, method="cubic")
    with pytest.raises(ValueError, match="have dimension 3, but this RegularGridInterpolator has dimension 2"):
        f(np.array([[1.5, 4.5, 1.0]]))
    x = np.array([[1.3, 4.6], [2.7, 5.2]], np.float32)
    v = vals.astype(np.float32)
    check_grads(lambda v_, x_: RegularGridInterpolator(pts, v_)(x_), (v, x), order=1, atol=1e-2, rtol=1e-2)
    g = fjax.grad(lambda x_: RegularGridInterpolator(pts, v)(x_).sum())(np.array([[1.5, 4.5]], np.float32))
    np.testing.assert_allclose(np.asarray(g), [[30.0, 10.0]])  # jax 0.10.2 gives [[30., 10.]]


# ---------------------------------------------------------------------------------------------
# Rotation


def test_rotation_conversions_match_scipy() -> None:
    q = _quats(0, 12)
    s, r = SRot.from_quat(q), Rotation.from_quat(q.astype(np.float32))
    close = dict(rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(np.asarray(r.as_matrix()), s.as_matrix(), **close)
    np.testing.assert_allclose(np.asarray(r.as_rotvec()), s.as_rotvec(), **close)
    np.testing.assert_allclose(np.asarray(r.as_rotvec(degrees=True)), s.as_rotvec(degrees=True), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(np.asarray(r.as_mrp()), s.as_mrp(), **close)
    np.testing.assert_allclose(np.asarray(r.magnitude()), s.magnitude(), **close)
    np.testing.assert_allclose(np.asarray(r.as_quat(canonical=True)), s.as_quat(canonical=True), **close)
    np.testing.assert_allclose(np.asarray(r.as_quat(scalar_first=True)), s.as_quat(scalar_first=True), **close)
    f32 = np.float32
    np.testing.assert_allclose(
        np.asarray(Rotation.from_matrix(s.as_matrix().astype(f32)).as_quat(canonical=True)),
        s.as_quat(canonical=True),
        **close,
    )
    np.testing.assert_allclose(
        np.asarray(Rotation.from_rotvec(s.as_rotvec().astype(f32)).as_matrix()), s.as_matrix(), **close
    )
    np.testing.assert_allclose(
        np.asarray(Rotation.from_mrp(s.as_mrp().astype(f32)).as_matrix()), s.as_matrix(), **close
    )
    for seq in ("xyz", "XYZ", "zxz", "ZXZ", "yzx", "YXY"):
        np.testing.assert_allclose(np.asarray(r.as_euler(seq)), s.as_euler(seq), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(
            np.asarray(Rotation.from_euler(seq, s.as_euler(seq).astype(f32)).as_matrix()), s.as_matrix(), **close
        )
    np.testing.assert_allclose(
        np.asarray(Rotation.from_euler("zy", np.array([10.0, 20.0], f32), degrees=True).as_quat()),
        SRot.from_euler("zy", [10.0, 20.0], degrees=True).as_quat(),
        **close,
    )


@pytest.mark.parametrize("seq", ["xyz", "ZYX", "zxz", "YZY"])
def test_euler_gimbal_lock_matches_scipy(seq: str) -> None:
    for ang in ([0.3, 0.0, 0.5], [0.3, np.pi / 2, 0.5], [0.3, np.pi, 0.5], [0.3, -np.pi / 2, 0.2]):
        s = SRot.from_euler(seq, ang)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy warns about the gimbal lock
            want = s.as_euler(seq)
        got = Rotation.from_quat(s.as_quat().astype(np.float32)).as_euler(seq)
        np.testing.assert_allclose(np.asarray(got), want, atol=2e-4)


def test_rotation_algebra_apply_mean_and_containers() -> None:
    q = _quats(1, 6)
    s, r = SRot.from_quat(q), Rotation.from_quat(q.astype(np.float32))
    v = np.random.RandomState(2).randn(6, 3).astype(np.float32)
    close = dict(rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(np.asarray((r * r[::-1]).as_matrix()), (s * s[::-1]).as_matrix(), **close)
    np.testing.assert_allclose(np.asarray(r.inv().as_matrix()), s.inv().as_matrix(), **close)
    np.testing.assert_allclose(np.asarray(r.apply(v)), s.apply(v), **close)
    np.testing.assert_allclose(np.asarray(r.apply(v, inverse=True)), s.apply(v, inverse=True), **close)
    np.testing.assert_allclose(np.asarray(r[2].apply(v)), s[2].apply(v), **close)
    np.testing.assert_allclose(np.asarray(r.apply(v[0])), s.apply(v[0]), **close)
    w = np.random.RandomState(3).rand(6)
    np.testing.assert_allclose(
        np.asarray(r.mean(w.astype(np.float32)).as_quat(canonical=True)), s.mean(w).as_quat(canonical=True), **close
    )
    assert len(r) == 6 and not r.single and r[0].single
    with pytest.raises(TypeError, match="not subscriptable"):
        r[0][0]
    assert len(Rotation.concatenate([r, r[0]])) == 7
    np.testing.assert_array_equal(np.asarray(Rotation.identity(3).as_matrix()), np.broadcast_to(np.eye(3), (3, 3, 3)))
    rnd = Rotation.random(fjax.random.PRNGKey(0), 5)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(rnd.quat), axis=1), 1.0, rtol=1e-6)
    # a pytree: through jit and vmap
    m = fjax.jit(lambda rot: rot.as_matrix())(r)
    np.testing.assert_allclose(np.asarray(m), s.as_matrix(), **close)
    mags = fjax.vmap(lambda qq: Rotation.from_quat(qq).magnitude())(q.astype(np.float32))
    np.testing.assert_allclose(np.asarray(mags), s.magnitude(), **close)
    with pytest.raises(ValueError, match="Expected axes from `seq`"):
        Rotation.from_euler("xyZ", np.zeros(3))
    with pytest.raises(ValueError, match=r"shape \(4,\) or \(N, 4\)"):
        Rotation.from_quat(np.ones(3))


def test_rotation_gradients() -> None:
    rv = np.array([0.3, -0.2, 0.5], np.float32)
    check_grads(lambda x: Rotation.from_rotvec(x).as_matrix(), (rv,), order=1, atol=1e-2, rtol=1e-2)
    check_grads(lambda x: Rotation.from_rotvec(x).as_euler("xyz"), (rv,), order=1, atol=1e-2, rtol=1e-2)
    check_grads(lambda x: Rotation.from_euler("ZXZ", x).as_rotvec(), (rv + 1.0,), order=1, atol=1e-2, rtol=1e-2)
    # d|R(v) u|/dv through apply; and a finite gradient at the identity (the small-angle series)
    g = fjax.grad(lambda x: Rotation.from_rotvec(x).as_rotvec().sum())(np.zeros(3, np.float32))
    np.testing.assert_allclose(np.asarray(g), [1.0, 1.0, 1.0], rtol=1e-5)


def test_slerp_matches_scipy() -> None:
    q = _quats(4, 3)
    times = np.array([0.0, 1.0, 3.0])
    want = scipy_transform.Slerp(times, SRot.from_quat(q))
    got = Slerp.init(times.astype(np.float32), Rotation.from_quat(q.astype(np.float32)))
    t = np.array([0.0, 0.5, 1.0, 2.0, 2.9, 3.0])
    np.testing.assert_allclose(
        np.asarray(got(t.astype(np.float32)).as_matrix()), want(t).as_matrix(), rtol=1e-4, atol=2e-5
    )
    assert got(np.float32(0.5)).single
    with pytest.raises(ValueError, match="number of timestamps"):
        Slerp.init(np.array([0.0, 1.0]), Rotation.from_quat(q.astype(np.float32)))
    check_grads(lambda tt: got(tt).as_quat(), (np.array([0.4, 2.2], np.float32),), order=1, atol=1e-2, rtol=1e-2)


# ---------------------------------------------------------------------------------------------
# vq


def test_vq_matches_scipy_and_grad() -> None:
    rng = np.random.RandomState(5)
    obs, book = rng.randn(12, 3), rng.randn(4, 3)
    code, dist = vq(obs.astype(np.float32), book.astype(np.float32))
    want_code, want_dist = scipy_vq.vq(obs, book)
    np.testing.assert_array_equal(np.asarray(code), want_code)
    np.testing.assert_allclose(np.asarray(dist), want_dist, rtol=1e-5)
    assert code.dtype == np.int32
    # jax 0.10.2: vq(jnp.array([1., 5, 2]), jnp.array([0., 4])) -> ([0, 1, 0], [1., 1., 2.])
    c1, d1 = vq(np.array([1.0, 5, 2]), np.array([0.0, 4]))
    assert np.asarray(c1).tolist() == [0, 1, 0] and np.asarray(d1).tolist() == [1.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="same rank"):
        vq(np.ones((2, 3)), np.ones(4))
    check_grads(
        lambda o, b: vq(o, b)[1], (obs.astype(np.float32), book.astype(np.float32)), order=1, atol=1e-2, rtol=1e-2
    )
