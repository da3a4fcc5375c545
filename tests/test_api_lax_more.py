"""More of ``jax.lax``: mulhi, index_take, broadcast_like, stack/unstack, scatter_sub, ragged_dot,
conv_general_dilated_patches / _local, the DotAlgorithm vocabulary (precision= / accuracy=) and
the ``*_p`` names of existing primitives. Values are checked against numpy and against literals
recorded from JAX 0.10.2 (the commands are in the comments)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.lax as lax
import fjax.numpy as jnp
from fjax.test_util import check_grads

# ---------------------------------------------------------------------------------------------
# mulhi


def _mulhi_ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    bits = 8 * x.dtype.itemsize
    prod = [(int(a) * int(b)) >> bits for a, b in zip(x.ravel(), y.ravel())]
    mod = 1 << bits
    if x.dtype.kind == "u":
        return np.array([p % mod for p in prod], x.dtype).reshape(x.shape)
    return np.array([((p + mod // 2) % mod) - mod // 2 for p in prod], x.dtype).reshape(x.shape)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "uint16", "int32", "uint32"])
@given(data=st.data())
def test_mulhi_matches_exact_integer_product(dt: str, data: st.DataObject) -> None:
    info = np.iinfo(dt)
    vals = st.lists(st.integers(int(info.min), int(info.max)), min_size=6, max_size=6)
    x = np.array(data.draw(vals) + [info.min, info.max], dt)
    y = np.array(data.draw(vals) + [info.max, info.min], dt)
    np.testing.assert_array_equal(np.asarray(lax.mulhi(x, y)), _mulhi_ref(x, y))
    np.testing.assert_array_equal(np.asarray(fjax.jit(lax.mulhi)(x, y)), _mulhi_ref(x, y))


def test_mulhi_jax_literals_and_errors() -> None:
    # jax 0.10.2: lax.mulhi(jnp.array([-5, 7, 2**30], 'int32'), jnp.array([3, -9, 12], 'int32'))
    r = lax.mulhi(jnp.array([-5, 7, 2**30], "int32"), jnp.array([3, -9, 12], "int32"))
    np.testing.assert_array_equal(np.asarray(r), [-1, -1, 3])
    # jax: lax.mulhi(uint32 [5, 2**31+7], [3, 2**31]) -> [0, 1073741827]
    r = lax.mulhi(np.array([5, 2**31 + 7], "uint32"), np.array([3, 2**31], "uint32"))
    np.testing.assert_array_equal(np.asarray(r), [0, 1073741827])
    with pytest.raises(TypeError, match="mulhi does not accept dtype float32"):
        lax.mulhi(jnp.ones(2), jnp.ones(2))
    with pytest.raises(TypeError, match="same dtypes, got int32, int16"):
        lax.mulhi(np.ones(2, "int32"), np.ones(2, "int16"))
    with pytest.raises(TypeError, match="same number of dimensions"):
        lax.mulhi(np.ones((2, 3), "int32"), np.ones(3, "int32"))
    assert lax.mulhi(np.array([2**30], "int32"), 8).dtype == np.int32  # a Python int is weak


def test_mulhi_under_vmap() -> None:
    x = np.arange(-6, 6, dtype=np.int32).reshape(3, 4) * 400_000_000
    y = np.int32(7)
    out = fjax.vmap(lambda r: lax.mulhi(r, jnp.full(4, y, "int32")))(x)
    np.testing.assert_array_equal(np.asarray(out), _mulhi_ref(x, np.full_like(x, y)))


# ---------------------------------------------------------------------------------------------
# index_take, broadcast_like, stack / unstack, scatter_sub, shape_as_value


def test_index_take_values_wrap_and_grad() -> None:
    x = np.arange(24.0).reshape(2, 3, 4)
    idx = np.array([[0, 1, 1], [3, 2, 0]])
    # jax 0.10.2: lax.index_take(x, idx, (0, 2)) -> [[3, 7, 11], [14, 18, 22], [12, 16, 20]]
    np.testing.assert_array_equal(np.asarray(lax.index_take(x, idx, (0, 2))), [[3, 7, 11], [14, 18, 22], [12, 16, 20]])
    np.testing.assert_array_equal(np.asarray(lax.index_take(x, idx, (0, 2))), x[idx[0], :, idx[1]])
    # indices wrap modulo the axis size (jax: [[4, -1, 2]] on axis 1 reads rows 1, 2, 2)
    np.testing.assert_array_equal(
        np.asarray(lax.index_take(x, np.array([[4, -1, 2]]), (1,))), x[:, [1, 2, 2]].swapaxes(0, 1)
    )
    g = fjax.grad(lambda s: lax.index_take(s, idx, (0, 2)).sum())(x)
    want = np.zeros_like(x)
    np.add.at(want, (idx[0], slice(None), idx[1]), 1.0)
    np.testing.assert_array_equal(np.asarray(g), want)
    with pytest.raises(TypeError, match="must be sorted"):
        lax.index_take(x, idx, (2, 0))
    with pytest.raises(TypeError, match="rows of indices"):
        lax.index_take(x, np.array([[1], [0]]), (1,))


def test_broadcast_like() -> None:
    out = lax.broadcast_like(jnp.array([[1], [2]]), jnp.zeros((4, 2, 3)))
    np.testing.assert_array_equal(np.asarray(out), np.broadcast_to([[1], [2]], (4, 2, 3)))
    assert out.dtype == np.int32
    with pytest.raises(ValueError, match="Incompatible types for broadcasting"):
        lax.broadcast_like(jnp.array([1, 2]), jnp.zeros((2, 3)))
    g = fjax.grad(lambda a: (lax.broadcast_like(a, jnp.zeros((3, 2))) * jnp.arange(6.0).reshape(3, 2)).sum())(
        jnp.ones(2)
    )
    np.testing.assert_allclose(np.asarray(g), [6.0, 9.0])


def test_stack_unstack() -> None:
    a, b = np.arange(6.0).reshape(2, 3), -np.arange(6.0).reshape(2, 3)
    for axis in (0, 1, -1, 2):
        np.testing.assert_array_equal(np.asarray(lax.stack([a, b], axis)), np.stack([a, b], axis))
    parts = lax.unstack(a, axis=-1)
    assert isinstance(parts, tuple) and len(parts) == 3
    for i, p in enumerate(parts):
        np.testing.assert_array_equal(np.asarray(p), a[:, i])
    with pytest.raises(TypeError, match="same dtypes"):
        lax.stack([jnp.ones(2), jnp.zeros(2, "int32")])
    with pytest.raises(ValueError, match="same shape"):
        lax.stack([jnp.ones(2), jnp.zeros(3)])
    with pytest.raises(ValueError, match="out of bounds"):
        lax.unstack(a, axis=3)
    check_grads(lambda x, y: lax.stack([x, y * 2.0], 1), (a, b), order=1, atol=1e-2, rtol=1e-2)
    check_grads(lambda x: lax.unstack(x, 1)[2] * 3.0, (a,), order=1, atol=1e-2, rtol=1e-2)


def test_scatter_sub_and_shape_as_value() -> None:
    dn = lax.ScatterDimensionNumbers(
        update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    op = np.arange(5.0)
    idx = np.array([[1], [3], [1]])
    upd = np.array([10.0, 20.0, 30.0])
    want = op.copy()
    np.subtract.at(want, idx[:, 0], upd)
    np.testing.assert_array_equal(np.asarray(lax.scatter_sub(op, idx, upd, dn)), want)
    check_grads(lambda o, u: lax.scatter_sub(o, idx, u, dn), (op, upd), order=1, atol=1e-2, rtol=1e-2)
    sv = lax.shape_as_value((2, 3))
    assert sv.dtype == np.int32 and sv.tolist() == [2, 3]


# ---------------------------------------------------------------------------------------------
# ragged_dot


def _ragged_ref(lhs: np.ndarray, rhs: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    out = np.zeros((lhs.shape[0], rhs.shape[2]), lhs.dtype)
    start = 0
    for g, s in enumerate(sizes):
        stop = min(start + int(s), lhs.shape[0])
        out[start:stop] = lhs[start:stop] @ rhs[g]
        start = stop
    return out


def test_ragged_dot_values_grads_and_errors() -> None:
    lhs = np.arange(12.0).reshape(4, 3)
    rhs = np.arange(12.0).reshape(2, 3, 2)
    # jax 0.10.2: lax.ragged_dot(lhs, rhs, jnp.array([1, 2])) -> rows past the groups are zero
    np.testing.assert_array_equal(
        np.asarray(lax.ragged_dot(lhs, rhs, np.array([1, 2]))), [[10, 13], [100, 112], [172, 193], [0, 0]]
    )
    rng = np.random.RandomState(0)
    lhs, rhs = rng.randn(7, 3).astype(np.float32), rng.randn(3, 3, 4).astype(np.float32)
    sizes = np.array([2, 0, 5], np.int32)
    np.testing.assert_allclose(np.asarray(lax.ragged_dot(lhs, rhs, sizes)), _ragged_ref(lhs, rhs, sizes), rtol=1e-5)
    np.testing.assert_allclose(
        np.asarray(fjax.jit(lax.ragged_dot)(lhs, rhs, sizes)), _ragged_ref(lhs, rhs, sizes), rtol=1e-5
    )
    check_grads(lambda a, b: lax.ragged_dot(a, b, sizes), (lhs, rhs), order=1, atol=2e-2, rtol=2e-2)
    with pytest.raises(TypeError, match="group dimension size"):
        lax.ragged_dot(lhs, rhs, np.array([1, 2]))
    rdn = lax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (1,), (0,))
    with pytest.raises(NotImplementedError, match="ragged contracting"):
        lax.ragged_dot_general(lhs, rhs, sizes, rdn)


# ---------------------------------------------------------------------------------------------
# patches and unshared convolution


def _patches_ref(x: np.ndarray, fh: int, fw: int) -> np.ndarray:
    """NCHW, stride 1, VALID: feature c*fh*fw + i*fw + j holds x[n, c, y+i, x+j]."""
    n, c, h, w = x.shape
    out = np.zeros((n, c * fh * fw, h - fh + 1, w - fw + 1), x.dtype)
    for ci in range(c):
        for i in range(fh):
            for j in range(fw):
                out[:, ci * fh * fw + i * fw + j] = x[:, ci, i : i + h - fh + 1, j : j + w - fw + 1]
    return out


def test_conv_patches_matches_numpy_and_grad() -> None:
    x = np.random.RandomState(1).randn(2, 3, 5, 6).astype(np.float32)
    np.testing.assert_array_equal(
        np.asarray(lax.conv_general_dilated_patches(x, (2, 3), (1, 1), "VALID")), _patches_ref(x, 2, 3)
    )
    check_grads(lambda a: lax.conv_general_dilated_patches(a, (2, 2), (2, 1), "SAME"), (x,), order=1, atol=1e-2)


def test_conv_patches_and_local_jax_literals() -> None:
    # jax 0.10.2, x = np.arange(2*4*3, dtype=np.float32).reshape(1, 4, 3, 2) (NHWC):
    # lax.conv_general_dilated_patches(x, (2, 2), (2, 1), 'SAME', dimension_numbers=('NHWC','HWIO','NHWC'))[0, 1, 0]
    x = np.arange(24, dtype=np.float32).reshape(1, 4, 3, 2)
    p = lax.conv_general_dilated_patches(x, (2, 2), (2, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    assert p.shape == (1, 2, 3, 8)
    np.testing.assert_array_equal(np.asarray(p)[0, 1, 0], [12.0, 14.0, 18.0, 20.0, 13.0, 15.0, 19.0, 21.0])
    # jax 0.10.2: w = np.arange(2*3*8*2, dtype=np.float32).reshape(2, 3, 8, 2) / 100 (HWIO);
    # lax.conv_general_dilated_local(x, w, (2, 1), 'SAME', (2, 2), dimension_numbers=('NHWC','HWIO','NHWC'))[0, :, :, 1]
    w = np.arange(96, dtype=np.float32).reshape(2, 3, 8, 2) / 100
    out = lax.conv_general_dilated_local(x, w, (2, 1), "SAME", (2, 2), dimension_numbers=("NHWC", "HWIO", "NHWC"))
    np.testing.assert_allclose(np.asarray(out)[0, :, :, 1], [[3.6, 13.2, 12.02], [74.64, 107.28, 68.18]], rtol=1e-5)


def test_conv_local_is_conv_when_kernels_are_shared_and_grads() -> None:
    rng = np.random.RandomState(2)
    x = rng.randn(2, 3, 5, 5).astype(np.float32)
    k = rng.randn(4, 3, 2, 2).astype(np.float32)  # OIHW
    shared = np.broadcast_to(k.reshape(4, 12, 1, 1), (4, 12, 4, 4)).copy()
    got = lax.conv_general_dilated_local(x, shared, (1, 1), "VALID", (2, 2))
    want = lax.conv_general_dilated(x, k, (1, 1), "VALID")
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)
    w = rng.randn(4, 12, 4, 4).astype(np.float32)
    check_grads(
        lambda a, b: lax.conv_general_dilated_local(a, b, (1, 1), "VALID", (2, 2)),
        (x, w),
        order=1,
        atol=5e-2,
        rtol=5e-2,
    )


# ---------------------------------------------------------------------------------------------
# DotAlgorithm vocabulary, precision= and accuracy=


def test_dot_algorithm_classes() -> None:
    assert [m.name for m in lax.DotAlgorithmPreset][:3] == [
        "DEFAULT",
        "ANY_F8_ANY_F8_F32",
        "ANY_F8_ANY_F8_F32_FAST_ACCUM",
    ]
    assert lax.DotAlgorithmPreset.F32_F32_F32.value == 15 and len(lax.DotAlgorithmPreset) == 16
    assert lax.DotAlgorithmPreset.F16_F16_F32.supported_lhs_types == (np.float16,)
    assert lax.DotAlgorithmPreset.F16_F16_F32.accumulation_type is np.float32
    assert lax.DotAlgorithmPreset.DEFAULT.supported_output_types(np.float32, np.float32) is None
    assert [(m.name, m.value) for m in lax.RandomAlgorithm] == [
        ("RNG_DEFAULT", 0),
        ("RNG_THREE_FRY", 1),
        ("RNG_PHILOX", 2),
    ]
    assert [(m.name, m.value) for m in lax.AccuracyMode] == [("HIGHEST", 1), ("DEFAULT", 2)]
    alg = lax.DotAlgorithm("F32", "F32", "F32")
    assert alg.num_primitive_operations == 1 and alg == lax.DotAlgorithm("F32", "F32", "F32")
    with pytest.raises(ValueError, match="non-negative"):
        lax.Tolerance(atol=-1.0)
    with pytest.raises(ValueError, match="At least one"):
        lax.Tolerance()
    r = lax.RaggedDotDimensionNumbers([[[1], [1]], [[], []]], [0], [0])
    assert r.dot_dimension_numbers == (((1,), (1,)), ((), ())) and r == lax.RaggedDotDimensionNumbers(
        (((1,), (1,)), ((), ())), (0,), (0,)
    )


def test_precision_and_accuracy_arguments() -> None:
    x = jnp.arange(3.0)
    dn = (((0,), (0,)), ((), ()))
    for p in (None, "highest", lax.Precision.HIGH, ("high", "default"), lax.DotAlgorithmPreset.DEFAULT, "F32_F32_F32"):
        assert float(lax.dot_general(x, x, dn, precision=p)) == 5.0
    assert float(jnp.dot(x, x, precision=lax.DotAlgorithmPreset.BF16_BF16_F32)) == 5.0
    # JAX 0.10.2 on CPU refuses these presets and every DotAlgorithm with this ValueError
    with pytest.raises(ValueError, match="'TF32_TF32_F32' is not supported by dot_general on CPU"):
        lax.dot_general(x, x, dn, precision=lax.DotAlgorithmPreset.TF32_TF32_F32)
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
        lax.dot_general(x, x, dn, precision=lax.DotAlgorithm("F32", "F32", "F32"))
    with pytest.raises(ValueError, match="Precision argument must be one of"):
        lax.dot_general(x, x, dn, precision="bogus")
    for f in (lax.exp, lax.sin, lax.tanh, lax.log1p, lax.logistic, lax.sqrt):
        np.testing.assert_array_equal(np.asarray(f(x + 1.0, accuracy=lax.AccuracyMode.HIGHEST)), np.asarray(f(x + 1.0)))
    np.testing.assert_array_equal(np.asarray(lax.exp(x, accuracy=lax.Tolerance(atol=1e-3))), np.asarray(lax.exp(x)))
    with pytest.raises(NotImplementedError, match="Accuracy x not supported"):
        lax.exp(x, accuracy="x")


def test_primitive_aliases_carry_jax_names() -> None:
    # names as jax 0.10.2 prints them: jax.lax.psum_p.name == 'psum', linear_solve_p.name == 'custom_linear_solve'
    names = {
        "psum_p": "psum",
        "pmax_p": "pmax",
        "pmin_p": "pmin",
        "ppermute_p": "ppermute",
        "all_gather_p": "all_gather",
        "all_to_all_p": "all_to_all",
        "axis_index_p": "axis_index",
        "linear_solve_p": "custom_linear_solve",
        "scan_p": "scan",
    }
    for attr, name in names.items():
        assert getattr(lax, attr).name == name
    jaxpr = fjax.make_jaxpr(lambda c, xs: lax.scan(lambda c, x: (c + x, c), c, xs))(0.0, jnp.arange(3.0))
    assert any(e.primitive is lax.scan_p for e in jaxpr.jaxpr.eqns)
