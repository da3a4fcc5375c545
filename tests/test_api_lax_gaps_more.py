"""lax.scatter_apply, lax.scaled_dot and lax.pbroadcast.

Expected values are literals printed by JAX 0.10.2 on CPU for the same inputs (scatter_apply:
eager, clip/fill modes, windows, duplicates, vmap; scaled_dot: a batched case with block scales
and the default-scale bfloat16 case), plus the error types JAX raises (no JVP for either, rank
checks). JAX's CPU backend has no lowering for pbroadcast (and its vmap rule is broken), so
pbroadcast is checked against the equivalent JAX documents: psum of the source member's value.
"""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax

DN = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
IDX = np.array([[0], [2], [2], [7]], np.int32)
X = np.arange(5.0, dtype=np.float32)


def test_scatter_apply_matches_jax():
    f = lambda v: v * 2 + 1  # noqa: E731
    np.testing.assert_array_equal(lax.scatter_apply(X, IDX, f, DN, update_shape=(4,)), [1, 1, 11, 3, 4])
    np.testing.assert_array_equal(lax.scatter_apply(X, IDX, f, DN, update_shape=(4,), mode="clip"), [1, 1, 11, 3, 9])
    np.testing.assert_array_equal(lax.scatter_apply(X, IDX, f, DN, update_shape=(4,), mode="fill"), [1, 1, 11, 3, 4])
    ints = lax.scatter_apply(np.arange(5, dtype=np.int32), IDX, lambda v: v * 3, DN, update_shape=(4,))
    assert ints.dtype == np.int32 and ints.tolist() == [0, 1, 18, 3, 4]
    dn2 = lax.ScatterDimensionNumbers(
        update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    m = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    out = lax.scatter_apply(m, np.array([[1], [3], [1]]), lambda v: -v + 1, dn2, update_shape=(3, 3))
    np.testing.assert_array_equal(out, [[0, 1, 2], [3, 4, 5], [6, 7, 8], [-8, -9, -10]])


def test_scatter_apply_under_jit_and_vmap():
    sin1, sin_sin2 = 0.84147096, 0.78907233
    out = fjax.jit(lambda x: lax.scatter_apply(x, IDX, jnp.sin, DN, update_shape=(4,)))(X)
    np.testing.assert_allclose(out, [0, 1, sin_sin2, 3, 4], rtol=1e-6)
    out = fjax.vmap(lambda x: lax.scatter_apply(x, IDX, jnp.sin, DN, update_shape=(4,)))(np.stack([X, X + 1]))
    np.testing.assert_allclose(out, [[0, 1, sin_sin2, 3, 4], [sin1, 2, 0.14065208, 4, 5]], rtol=1e-6)
    idx2 = np.stack([IDX, IDX % 3])
    out = fjax.vmap(lambda i: lax.scatter_apply(X, i, jnp.sin, DN, update_shape=(4,)))(idx2)
    np.testing.assert_allclose(out, [[0, 1, sin_sin2, 3, 4], [0, sin1, sin_sin2, 3, 4]], rtol=1e-6)


@given(st.lists(st.integers(-2, 7), min_size=1, max_size=8), st.sampled_from(["clip", "fill", None]))
def test_scatter_apply_counts_duplicates(ixs, mode):
    # f(v) = v + 1 applied k times adds k: the result is x + (number of hits), as numpy computes
    idx = np.array(ixs, np.int32)[:, None]
    out = lax.scatter_apply(X, idx, lambda v: v + 1, DN, update_shape=(len(ixs),), mode=mode)
    hits = np.zeros(5)
    for i in ixs:
        if mode == "clip":
            hits[min(max(i, 0), 4)] += 1
        elif 0 <= i < 5:
            hits[i] += 1
    np.testing.assert_array_equal(out, X + hits)


def test_scatter_apply_errors():
    with pytest.raises(NotImplementedError, match="scatter_apply JVP not implemented"):
        fjax.grad(lambda x: lax.scatter_apply(x, IDX, jnp.sin, DN, update_shape=(4,)).sum())(X)
    with pytest.raises(TypeError):  # JAX: the updates (3,) do not match the 4 indices
        lax.scatter_apply(X, IDX, jnp.sin, DN, update_shape=(3,))
    with pytest.raises(TypeError):  # JAX: a ValueError from MLIR's verifier
        lax.scatter_apply(X, IDX, lambda v: v.astype(jnp.int32), DN, update_shape=(4,))


# --- scaled_dot

A = np.array(
    [
        [[0.346, 0.822, 0.33, -1.303], [0.905, 0.446, -0.537, 0.581], [0.365, 0.294, 0.028, 0.547]],
        [[-0.736, -0.163, -0.482, 0.599], [0.04, -0.292, -0.782, -0.257], [0.008, -0.276, 1.294, 1.007]],
    ],
    np.float32,
)
B = np.array(
    [
        [[-2.711, -1.889], [-0.175, -0.422], [0.214, 0.217], [2.118, -1.112]],
        [[-0.378, 2.043], [0.647, 0.663], [-0.514, -1.648], [0.167, 0.109]],
    ],
    np.float32,
)
SA = np.array([[[2.0, 4.0], [0.5, 1.0], [4.0, 0.5]], [[0.5, 4.0], [1.0, 1.0], [2.0, 1.0]]], ml_dtypes.float8_e8m0fnu)
SB = np.array([[[4.0, 2.0], [0.25, 0.25]], [[1.0, 4.0], [0.25, 2.0]]], ml_dtypes.float8_e8m0fnu)
SCALED = [
    [
        [-11.368066787719727, -2.4797096252441406],
        [-4.802828788757324, -2.091672897338867],
        [-16.566543579101562, -6.59460973739624],
    ],
    [
        [0.43480682373046875, 3.65960693359375],
        [-0.11519813537597656, 2.0691604614257812],
        [-0.48830747604370117, -5.38824462890625],
    ],
]
PLAIN_BF16 = [
    [[-3.78125, 0.51953125], [-1.421875, -2.65625], [0.12353515625, -1.4140625]],
    [[0.51953125, -0.75], [0.154296875, 1.1484375], [-0.68359375, -2.1875]],
]


def test_scaled_dot_matches_jax():
    out = lax.scaled_dot(A, B, lhs_scale=SA, rhs_scale=SB, preferred_element_type=jnp.float32)
    assert out.dtype == np.float32 and out.shape == (2, 3, 2)
    expect = np.array(SCALED, np.float32)
    np.testing.assert_allclose(out, expect, rtol=1e-6)
    plain = lax.scaled_dot(A, B)
    assert plain.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(np.asarray(plain, np.float32), PLAIN_BF16)
    jitted = fjax.jit(lambda a, b: lax.scaled_dot(a, b, lhs_scale=SA, rhs_scale=SB, preferred_element_type=jnp.float32))
    np.testing.assert_allclose(jitted(A, B), expect, rtol=1e-6)
    text = str(fjax.make_jaxpr(lambda a, b: lax.scaled_dot(a, b))(A[0], B[0]))
    assert (
        "scaled_dot[\n      dimension_numbers=(((1,), (0,)), ((), ()))\n      preferred_element_type=bfloat16\n    ]"
        in text
    )
    assert lax.scaled_dot_p.name == "scaled_dot"


@given(st.integers(1, 3), st.integers(1, 3), st.sampled_from([2, 4]), st.integers(0, 1000))
def test_scaled_dot_vmap_and_reference(m, n, block, seed):
    rng = np.random.default_rng(seed)
    k = 2 * block
    a = rng.normal(size=(2, m, k)).astype(np.float32)
    b = rng.normal(size=(k, n)).astype(np.float32)
    sa = (2.0 ** rng.integers(-2, 3, size=(2, m, 2))).astype(ml_dtypes.float8_e8m0fnu)
    sb = (2.0 ** rng.integers(-2, 3, size=(2, n))).astype(ml_dtypes.float8_e8m0fnu)
    f = lambda a, sa: lax.scaled_dot(a, b, lhs_scale=sa, rhs_scale=sb, preferred_element_type=jnp.float32)  # noqa: E731
    out = fjax.vmap(f)(a, sa)
    # reference: operands and (repeated) scales rounded to bfloat16, products in float32
    bf = ml_dtypes.bfloat16
    ra = (a.astype(bf) * np.repeat(sa, block, axis=2).astype(bf)).astype(np.float32)
    rb = (b.astype(bf) * np.repeat(sb, block, axis=0).astype(bf)).astype(np.float32)
    np.testing.assert_allclose(out, ra @ rb, rtol=1e-5, atol=1e-5)
    for i in range(2):
        np.testing.assert_allclose(out[i], f(a[i], sa[i]), rtol=1e-6)


def test_scaled_dot_errors():
    with pytest.raises(TypeError, match="does not support 0-rank and 1-rank operands"):
        lax.scaled_dot(A[0, 0], B[0])
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'scaled_dot' not implemented"):
        fjax.grad(lambda a: lax.scaled_dot(a, B[0], preferred_element_type=jnp.float32).sum())(A[0])
    with pytest.raises(TypeError, match="must be at least 2"):
        lax.scaled_dot(A[0], B[0], lhs_scale=np.ones((3, 4), ml_dtypes.float8_e8m0fnu))
    with pytest.raises(TypeError, match="does not match RHS contracting dim"):
        lax.scaled_dot(A[0], B[0, :3])


# --- pbroadcast


def test_pbroadcast_is_psum_of_the_source():
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    out = fjax.vmap(lambda v: lax.pbroadcast(v, "i", 2), axis_name="i")(x)
    np.testing.assert_array_equal(out, np.broadcast_to(x[2], (4, 3)))
    tree = fjax.vmap(lambda v: lax.pbroadcast({"a": v, "b": v * 2}, "i", source=1), axis_name="i")(x)
    np.testing.assert_array_equal(tree["b"], np.broadcast_to(2 * x[1], (4, 3)))
    g = fjax.grad(lambda x: fjax.vmap(lambda v: lax.pbroadcast(v, "i", 2), axis_name="i")(x).sum())(x)
    np.testing.assert_array_equal(g, np.where(np.arange(4)[:, None] == 2, 4.0, 0.0) * np.ones((4, 3)))
    out = fjax.jit(fjax.vmap(lambda v: lax.pbroadcast(v, "i", 0), axis_name="i"))(np.arange(4, dtype=np.int32))
    assert out.tolist() == [0, 0, 0, 0]
