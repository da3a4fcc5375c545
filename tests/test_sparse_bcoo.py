"""fjax.experimental.sparse: BCOO layout, conversions, products and structural ops.

Everything is checked against dense numpy on random arrays with random sparsity, random
``n_batch``/``n_dense`` and extra padding. Where a JAX-specific detail is pinned (repr text,
``eye`` indices, error messages), the expected value was printed by JAX 0.10.2
(``jax.experimental.sparse``) in /tmp/jaxenv for the same input.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax.errors import ConcretizationTypeError
from fjax.experimental import sparse
from fjax.experimental.sparse import BCOO

# ----------------------------------------------------------------------------------------
# strategies


@st.composite
def sparse_arrays(draw, min_ndim=1, max_ndim=3, max_dim=4, float_only=True):
    """A dense numpy array with random zeros, plus a valid (n_batch, n_dense) layout for it."""
    ndim = draw(st.integers(min_ndim, max_ndim))
    shape = tuple(draw(st.lists(st.integers(1, max_dim), min_size=ndim, max_size=ndim)))
    seed = draw(st.integers(0, 2**31 - 1))
    density = draw(st.sampled_from([0.0, 0.3, 0.7, 1.0]))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    x = np.where(rng.random(shape) < density, x, 0).astype(np.float32)
    n_batch = draw(st.integers(0, ndim))
    n_dense = draw(st.integers(0, ndim - n_batch))
    return x, n_batch, n_dense


def _ref_todense(data, indices, shape):
    """Dense reference of BCOO buffers: scatter-add, out-of-range (padding) entries dropped."""
    data, indices = np.asarray(data), np.asarray(indices)
    n_batch = indices.ndim - 2
    n_sparse = indices.shape[-1]
    bshape = shape[:n_batch]
    data = np.broadcast_to(data, bshape + data.shape[n_batch:])
    indices = np.broadcast_to(indices, bshape + indices.shape[n_batch:])
    out = np.zeros(shape, data.dtype)
    for b in itertools.product(*map(range, bshape)):
        for k in range(indices.shape[n_batch]):
            idx = tuple(indices[b + (k,)])
            if all(0 <= i < s for i, s in zip(idx, shape[n_batch : n_batch + n_sparse])):
                out[b + idx] += data[b + (k,)]
    return out


def _is_sorted_unique(indices, n_batch, sparse_shape):
    """In-range indices are sorted and unique per batch, and padding comes after them."""
    ind = np.asarray(indices)
    ind = ind.reshape((int(np.prod(ind.shape[:n_batch])),) + ind.shape[n_batch:])
    for rows in ind:
        valid = (rows < np.array(sparse_shape, int)).all(-1)
        tup = [tuple(r) for r in rows[valid]]
        if tup != sorted(tup) or len(set(tup)) != len(tup) or valid[len(tup) :].any():
            return False
    return True


# ----------------------------------------------------------------------------------------
# layout, conversions


@given(sparse_arrays(min_ndim=0), st.integers(0, 3))
def test_fromdense_todense_roundtrip(arg, extra):
    x, n_batch, n_dense = arg
    n_sparse = x.ndim - n_batch - n_dense
    mask = (x != 0).any(tuple(range(x.ndim - n_dense, x.ndim))) if n_dense else x != 0
    per_batch = mask.reshape(mask.shape[:n_batch] + (-1,)).sum(-1) if x.ndim else np.array(int(mask))
    nse = int(np.max(per_batch, initial=0)) + extra
    m = BCOO.fromdense(x, nse=nse, n_batch=n_batch, n_dense=n_dense)
    assert (m.n_batch, m.n_sparse, m.n_dense, m.nse) == (n_batch, n_sparse, n_dense, nse)
    assert m.shape == x.shape and m.dtype == np.float32 and m.ndim == x.ndim and m.size == x.size
    assert m.data.shape == x.shape[:n_batch] + (nse,) + x.shape[x.ndim - n_dense :]
    assert m.indices.shape == x.shape[:n_batch] + (nse, n_sparse) and m.indices.dtype == np.int32
    assert m.indices_sorted and m.unique_indices
    np.testing.assert_array_equal(m.todense(), x)
    np.testing.assert_array_equal(sparse.bcoo_todense(m), x)
    np.testing.assert_array_equal(sparse.todense(m), x)
    np.testing.assert_array_equal(_ref_todense(m.data, m.indices, x.shape), x)
    if n_sparse:  # padding entries point out of range (at the sparse shape), with zero data
        ind = np.asarray(m.indices)
        oob = (ind >= np.array(x.shape[n_batch : n_batch + n_sparse])).any(-1)
        assert oob.sum() >= extra * max(1, int(np.prod(x.shape[:n_batch])))
        assert np.all(np.asarray(m.data)[oob] == 0)
    # default nse: the largest count per batch
    m2 = sparse.bcoo_fromdense(x, n_batch=n_batch, n_dense=n_dense)
    assert m2.nse == (nse - extra if n_sparse else max(nse - extra, 0))
    np.testing.assert_array_equal(m2.todense(), x)


def test_repr_and_properties_as_jax():
    M = jnp.array([[0.0, 2.0, 0.0], [1.0, 0.0, 4.0]])
    m = BCOO.fromdense(M)
    assert repr(m) == "BCOO(float32[2, 3], nse=3)"  # JAX 0.10.2 prints the same
    np.testing.assert_array_equal(m.data, [2.0, 1.0, 4.0])
    np.testing.assert_array_equal(m.indices, [[0, 1], [1, 0], [1, 2]])
    m3 = BCOO.fromdense(jnp.arange(12.0).reshape(2, 3, 2), n_batch=1, n_dense=1)
    assert repr(m3) == "BCOO(float32[2, 3, 2], nse=3, n_batch=1, n_dense=1)"
    assert len(m3) == 2 and m.T.shape == (3, 2)
    # padding of JAX's fromdense: indices at the shape, data 0
    p = BCOO.fromdense(M, nse=5)
    np.testing.assert_array_equal(p.indices[3:], [[2, 3], [2, 3]])
    np.testing.assert_array_equal(p.data[3:], [0.0, 0.0])
    # construction from buffers
    mat = BCOO((jnp.array([1.0, 3.0, 5.0]), jnp.array([[0, 0], [1, 1], [2, 2]])), shape=(3, 3))
    np.testing.assert_array_equal(mat.todense(), np.diag([1.0, 3.0, 5.0]))
    assert not mat.indices_sorted and not mat.unique_indices
    seen = []
    fjax.jit(lambda s: seen.append(repr(s)) or s.todense())(m)
    assert seen[0].endswith("[BCOO(float32[2, 3], nse=3)]") and seen[0] != repr(m)


def test_pytree_jit_vmap_roundtrip():
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4) * (np.arange(24).reshape(2, 3, 4) % 3 == 0)
    m = BCOO.fromdense(x, n_batch=1)
    leaves, tree = fjax.tree_util.tree_flatten(m)
    assert len(leaves) == 2
    back = fjax.tree_util.tree_unflatten(tree, leaves)
    assert back.shape == m.shape and back.n_batch == 1
    dense = fjax.jit(lambda s: (s.todense() * 2, s))(m)
    np.testing.assert_array_equal(dense[0], 2 * x)
    assert isinstance(dense[1], BCOO) and dense[1].shape == m.shape
    # vmap maps the batch dimension of data and indices; the shape follows
    per = fjax.vmap(lambda s: s.todense())(m)
    np.testing.assert_array_equal(per, x)
    stacked = fjax.vmap(lambda a: BCOO.fromdense(a, nse=4))(x)
    assert stacked.shape == x.shape and stacked.n_batch == 1 and stacked.nse == 4
    np.testing.assert_array_equal(stacked.todense(), x)
    with pytest.raises(ValueError, match="Cannot map in_axis=0 for BCOO array with n_batch=0"):
        fjax.vmap(lambda s: s.todense())(BCOO.fromdense(x))


@given(sparse_arrays(min_ndim=1), st.integers(0, 2**31 - 1))
def test_duplicates_padding_sum_duplicates_sort(arg, seed):
    x, n_batch, n_dense = arg
    rng = np.random.default_rng(seed)
    n_sparse = x.ndim - n_batch - n_dense
    sp_shape = x.shape[n_batch : n_batch + n_sparse]
    nse = int(rng.integers(0, 6))
    # random indices that include duplicates and out-of-range padding
    cols = [rng.integers(0, s + 1, size=x.shape[:n_batch] + (nse,)) for s in sp_shape]
    indices = np.stack(cols, -1) if cols else np.zeros(x.shape[:n_batch] + (nse, 0), np.int32)
    indices = indices.reshape(x.shape[:n_batch] + (nse, n_sparse)).astype(np.int32)
    data = rng.standard_normal(x.shape[:n_batch] + (nse,) + x.shape[x.ndim - n_dense :]).astype(np.float32)
    m = BCOO((data, indices), shape=x.shape)
    ref = _ref_todense(data, indices, x.shape)
    np.testing.assert_allclose(m.todense(), ref, rtol=1e-6, atol=1e-6)
    s = sparse.bcoo_sum_duplicates(m)
    assert s.indices_sorted and s.unique_indices
    assert _is_sorted_unique(s.indices, n_batch, sp_shape)
    np.testing.assert_allclose(s.todense(), ref, rtol=1e-5, atol=1e-5)
    if n_sparse:
        valid = (indices < np.array(sp_shape)).all(-1)
        nb_size = int(np.prod(x.shape[:n_batch]))
        counts = [
            len({tuple(r) for r, v in zip(rows, vs) if v})
            for rows, vs in zip(indices.reshape((nb_size, nse, n_sparse)), valid.reshape((nb_size, nse)))
        ]
        assert s.nse == max(counts, default=0)
    s7 = m.sum_duplicates(nse=7, remove_zeros=False)
    assert s7.nse == 7
    np.testing.assert_allclose(s7.todense(), ref, rtol=1e-5, atol=1e-5)
    o = sparse.bcoo_sort_indices(m)
    assert o.indices_sorted and o.nse == m.nse
    np.testing.assert_allclose(o.todense(), ref, rtol=1e-6, atol=1e-6)
    for rows in np.asarray(o.indices).reshape((int(np.prod(x.shape[:n_batch])), nse, n_sparse)):
        assert [tuple(r) for r in rows] == sorted(tuple(r) for r in rows)
    # extract: values at the stored indices; duplicates only at their first occurrence
    e = sparse.bcoo_extract(m, x)
    ref_e = _ref_todense(e.data, e.indices, x.shape)
    mask = _ref_todense(np.ones_like(data), indices, x.shape)
    np.testing.assert_allclose(ref_e, np.where(mask > 0, x, 0), rtol=1e-6)
    eu = sparse.bcoo_extract(m, x, assume_unique=True)
    assert eu.data.shape == data.shape


def test_sum_duplicates_remove_zeros_and_jit():
    data = jnp.array([1.0, 0.0, 2.0, -1.0, 5.0])
    indices = jnp.array([[0, 1], [1, 1], [0, 1], [2, 0], [3, 3]])
    m = BCOO((data, indices), shape=(3, 3))
    s = m.sum_duplicates()  # zeros removed, duplicates summed, padding dropped
    np.testing.assert_array_equal(s.indices, [[0, 1], [2, 0]])
    np.testing.assert_array_equal(s.data, [3.0, -1.0])
    s2 = sparse.bcoo_sum_duplicates(m)
    np.testing.assert_array_equal(s2.indices, [[0, 1], [1, 1], [2, 0]])
    f = fjax.jit(lambda m: sparse.bcoo_sum_duplicates(m, nse=4))
    out = f(m)
    np.testing.assert_array_equal(out.indices, [[0, 1], [1, 1], [2, 0], [3, 3]])
    np.testing.assert_array_equal(out.data, [3.0, 0.0, -1.0, 0.0])
    with pytest.raises(ValueError, match="nse must be specified when using the function within jit"):
        fjax.jit(lambda m: sparse.bcoo_sum_duplicates(m))(m)


@given(sparse_arrays(min_ndim=1), st.integers(0, 2**31 - 1))
def test_transpose(arg, seed):
    x, n_batch, n_dense = arg
    rng = np.random.default_rng(seed)
    n_sparse = x.ndim - n_batch - n_dense
    perm = [
        *rng.permutation(n_batch),
        *(n_batch + rng.permutation(n_sparse)),
        *(n_batch + n_sparse + rng.permutation(n_dense)),
    ]
    m = BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    t = sparse.bcoo_transpose(m, permutation=perm)
    np.testing.assert_array_equal(t.todense(), np.transpose(x, perm))
    np.testing.assert_array_equal(m.transpose(perm).todense(), np.transpose(x, perm))
    if n_batch == 0 and n_dense == 0:
        np.testing.assert_array_equal(m.T.todense(), x.T)


def test_transpose_errors():
    m = BCOO.fromdense(jnp.ones((2, 3, 4)), n_batch=1, n_dense=1)
    with pytest.raises(NotImplementedError, match="cannot permute batch axes"):
        m.transpose((1, 0, 2))
    with pytest.raises(NotImplementedError, match="cannot permute dense axes"):
        m.transpose((0, 2, 1))
    with pytest.raises(TypeError, match="isn't a permutation"):
        m.transpose((0, 1, 1))


@given(sparse_arrays(min_ndim=1))
def test_update_layout(arg):
    x, n_batch, n_dense = arg
    m = BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    for nb in range(x.ndim + 1):
        for nd in range(x.ndim - nb + 1):
            u = sparse.bcoo_update_layout(m, n_batch=nb, n_dense=nd, on_inefficient=None)
            assert (u.n_batch, u.n_dense) == (nb, nd)
            np.testing.assert_array_equal(u.todense(), x)


def test_update_layout_efficiency_error():
    m = BCOO.fromdense(jnp.eye(4))
    with pytest.raises(sparse.SparseEfficiencyError, match="increasing n_dense from 0 to 1"):
        m.update_layout(n_dense=1)
    with pytest.warns(sparse.SparseEfficiencyWarning):
        m.update_layout(n_batch=1, on_inefficient="warn")
    with pytest.raises(ValueError, match="on_inefficent"):
        m.update_layout(n_batch=1, on_inefficient="x")
    with pytest.raises(ValueError, match="n_batch must be non-negative"):
        m.update_layout(n_batch=-1)


def test_eye_empty_random():
    e = sparse.eye(3, 4, k=1)
    np.testing.assert_array_equal(e.indices, [[0, 1], [1, 2], [2, 3]])  # as JAX's sparse.eye(3, 4, k=1)
    for n, mm, k in [(3, 3, 0), (4, 2, -1), (2, 5, 3), (3, 3, 5)]:
        np.testing.assert_array_equal(sparse.eye(n, mm, k).todense(), np.eye(n, mm, k))
    np.testing.assert_array_equal(sparse.eye(3, n_batch=1).todense(), np.eye(3))
    z = sparse.empty((3, 4), n_batch=1)
    assert repr(z) == "BCOO(float32[3, 4], nse=0, n_batch=1)" and z.indices.shape == (3, 0, 1)
    np.testing.assert_array_equal(z.todense(), np.zeros((3, 4)))
    r = sparse.random_bcoo(fjax.random.key(0), (5, 6), nse=0.3, dtype=jnp.float32, sorted_indices=True)
    assert r.nse == 9 and r.indices_sorted
    assert _is_sorted_unique(r.indices, 0, (5, 6))
    d = np.asarray(r.todense())
    assert (d != 0).sum() == 9 and np.all((d >= 0) & (d < 1))
    rb = sparse.random_bcoo(fjax.random.key(1), (2, 3, 4), nse=2, n_batch=1, n_dense=1)
    assert rb.data.shape == (2, 2, 4) and rb.indices.shape == (2, 2, 1)
    with pytest.raises(ValueError, match="between 0 and"):
        sparse.random_bcoo(fjax.random.key(0), (2, 2), nse=5)
    with pytest.raises(ValueError, match="not recognized"):
        sparse.empty((2,), sparse_format="nope")


def test_construction_errors():
    with pytest.raises(ValueError, match="Invalid data.shape"):
        BCOO((jnp.ones(3), jnp.zeros((2, 2), jnp.int32)), shape=(3, 3))
    with pytest.raises(ValueError, match="indices batch dimensions not compatible"):
        BCOO((jnp.ones((2, 1)), jnp.zeros((3, 1, 1), jnp.int32)), shape=(2, 3))
    with pytest.raises(TypeError, match="integer dtype"):
        BCOO((jnp.ones(2), jnp.zeros((2, 2))), shape=(3, 3))
    with pytest.raises(ValueError, match="bcoo_fromdense"):
        BCOO.fromdense(jnp.ones((2, 2)), n_batch=2, n_dense=1)
    with pytest.raises(ConcretizationTypeError, match="nse"):
        fjax.jit(lambda x: BCOO.fromdense(x).data)(jnp.ones((2, 2)))
    with pytest.raises(TypeError, match="should be a BCOO array"):
        sparse.bcoo_extract(jnp.ones(2), jnp.ones(2))
    with pytest.raises(ValueError, match="shape mismatch"):
        sparse.bcoo_extract(BCOO.fromdense(jnp.ones(2)), jnp.ones(3))


# ----------------------------------------------------------------------------------------
# products


def _tol(x):
    return dict(rtol=2e-5, atol=2e-5 * max(1.0, float(np.abs(x).max(initial=0))))


@st.composite
def dot_cases(draw):
    """A sparse operand layout with contracting/batch dimension numbers that bcoo_dot_general supports."""
    x, n_batch, n_dense = draw(sparse_arrays(min_ndim=1, max_ndim=3))
    n_sparse = x.ndim - n_batch - n_dense
    batch = draw(st.lists(st.sampled_from(range(n_batch)), unique=True)) if n_batch else []
    cand = [d for d in range(n_batch + n_sparse) if d not in batch]
    contract = draw(st.lists(st.sampled_from(cand), unique=True)) if cand else []
    n_free_r = draw(st.integers(0, 1))
    r_shape = [x.shape[d] for d in batch] + [x.shape[d] for d in contract] + [3] * n_free_r
    order = draw(st.permutations(range(len(r_shape))))
    r_shape = [r_shape[i] for i in order]
    inv = {o: i for i, o in enumerate(order)}
    rb = [inv[i] for i in range(len(batch))]
    rc = [inv[len(batch) + i] for i in range(len(contract))]
    seed = draw(st.integers(0, 2**31 - 1))
    y = np.random.default_rng(seed).standard_normal(r_shape).astype(np.float32)
    return x, n_batch, n_dense, y, ((contract, rc), (batch, rb))


def _np_dot_general(a, b, dn):
    """numpy reference of lax.dot_general (einsum in float64)."""
    (lc, rc), (lb, rb) = dn
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa, sb = [None] * a.ndim, [None] * b.ndim
    for i, j in [*zip(lb, rb), *zip(lc, rc)]:
        sa[i] = sb[j] = next(letters)
    sa = [c or next(letters) for c in sa]
    sb = [c or next(letters) for c in sb]
    out = [sa[i] for i in lb]
    out += [sa[i] for i in range(a.ndim) if i not in lb and i not in lc]
    out += [sb[j] for j in range(b.ndim) if j not in rb and j not in rc]
    spec = f"{''.join(sa)},{''.join(sb)}->{''.join(out)}"
    return np.einsum(spec, np.asarray(a, np.float64), np.asarray(b, np.float64)).astype(np.float32)


@given(dot_cases())
def test_dot_general_sparse_dense(case):
    x, n_batch, n_dense, y, dn = case
    m = BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense, nse=max(1, int((x != 0).sum())))
    ref = _np_dot_general(x, y, dn)
    out = sparse.bcoo_dot_general(m, y, dimension_numbers=dn)
    assert out.shape == ref.shape and out.dtype == np.float32
    np.testing.assert_allclose(out, ref, **_tol(ref))
    # dense @ sparse: swap the operands
    (lc, rc), (lb, rb) = dn
    ref2 = _np_dot_general(y, x, ((rc, lc), (rb, lb)))
    out2 = sparse.bcoo_dot_general(y, m, dimension_numbers=((rc, lc), (rb, lb)))
    assert out2.shape == ref2.shape
    np.testing.assert_allclose(out2, ref2, **_tol(ref2))


@given(sparse_arrays(min_ndim=2, max_ndim=2), sparse_arrays(min_ndim=2, max_ndim=2), st.integers(0, 1))
def test_dot_general_sparse_sparse(a, b, n_batch):
    x, _, _ = a
    y, _, _ = b
    y = np.resize(y, (x.shape[1], y.shape[1])) if n_batch == 0 else np.resize(y, (x.shape[0], x.shape[1], 2))
    if n_batch == 0:
        dn = (([1], [0]), ([], []))
        lm, rm = BCOO.fromdense(x), BCOO.fromdense(y)
    else:
        x = x.reshape(x.shape[0], x.shape[1])
        dn = (([1], [1]), ([0], [0]))
        lm, rm = BCOO.fromdense(x, n_batch=1), BCOO.fromdense(y, n_batch=1)
    out = sparse.bcoo_dot_general(lm, rm, dimension_numbers=dn)
    assert isinstance(out, BCOO)
    ref = _np_dot_general(x, y, dn)
    np.testing.assert_allclose(out.todense(), ref, **_tol(ref))
    assert out.nse <= max(1, lm.nse) * max(1, rm.nse)


def test_matmul_operators_and_spdot_as_jax():
    M = jnp.array([[0.0, 2.0, 0.0], [1.0, 0.0, 4.0]])
    s = BCOO.fromdense(M)
    v = jnp.arange(3.0)
    np.testing.assert_allclose(s @ v, np.asarray(M) @ np.arange(3.0))
    np.testing.assert_allclose(jnp.ones(2) @ s, np.ones(2) @ np.asarray(M))
    st_ = s @ s.T  # JAX 0.10.2: BCOO(float32[2, 2], nse=4), data [4, 0, 0, 17]
    assert repr(st_) == "BCOO(float32[2, 2], nse=4)"
    np.testing.assert_array_equal(st_.data, [4.0, 0.0, 0.0, 17.0])
    np.testing.assert_array_equal(st_.indices, [[0, 0], [0, 1], [1, 0], [1, 1]])
    b = BCOO.fromdense(jnp.arange(24.0).reshape(2, 3, 4) % 5, n_batch=1)
    w = jnp.ones((4, 2))
    np.testing.assert_allclose(b @ w, (np.arange(24.0).reshape(2, 3, 4) % 5) @ np.ones((4, 2)))
    with pytest.raises(NotImplementedError, match="batch dimensions must be among"):
        sparse.bcoo_dot_general(s, M, dimension_numbers=(([1], [1]), ([0], [0])))
    with pytest.raises(NotImplementedError, match="contracting over dense"):
        sparse.bcoo_dot_general(BCOO.fromdense(M, n_dense=1), v, dimension_numbers=(([1], [0]), ([], [])))
    with pytest.raises(TypeError):
        s @ jnp.ones(4)
    ints = BCOO.fromdense(M.astype(jnp.int32))
    assert (ints @ v).dtype == np.float32  # promoted, as JAX


def test_dot_general_sampled():
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    m = BCOO.fromdense((rng.random((3, 5)) < 0.4).astype(np.float32))
    data = sparse.bcoo_dot_general_sampled(A, B, m.indices, dimension_numbers=(([1], [0]), ([], [])))
    ref = (A @ B)[tuple(np.asarray(m.indices).T)]
    np.testing.assert_allclose(data, ref, rtol=1e-5)


@given(sparse_arrays(min_ndim=1), st.integers(0, 2**31 - 1))
def test_elementwise_products(arg, seed):
    x, n_batch, n_dense = arg
    rng = np.random.default_rng(seed)
    m = BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    v = rng.standard_normal(x.shape).astype(np.float32)
    np.testing.assert_allclose((m * v).todense(), x * v, rtol=1e-6)
    np.testing.assert_allclose((v * m).todense(), x * v, rtol=1e-6)
    vb = rng.standard_normal(x.shape[-1:]).astype(np.float32)  # broadcast from the right
    np.testing.assert_allclose((m * vb).todense(), x * vb, rtol=1e-6)
    np.testing.assert_allclose((m * 3.0).todense(), x * 3, rtol=1e-6)
    assert sparse.bcoo_multiply_dense(m, v).shape == m.data.shape
    y = np.where(rng.random(x.shape) < 0.5, v, 0).astype(np.float32)
    my = BCOO.fromdense(y, n_batch=n_batch, n_dense=n_dense)
    prod = sparse.bcoo_multiply_sparse(m, my)
    np.testing.assert_allclose(prod.todense(), x * y, rtol=1e-6)
    np.testing.assert_allclose((m * my).todense(), x * y, rtol=1e-6)
    np.testing.assert_allclose((m + my).todense(), x + y, rtol=1e-6)
    np.testing.assert_allclose((m - my).todense(), x - y, rtol=1e-6)
    np.testing.assert_allclose(m + v, x + v, rtol=1e-6)
    np.testing.assert_allclose(v - m, v - x, rtol=1e-6)
    np.testing.assert_allclose((-m).todense(), -x)
    np.testing.assert_allclose((m / 2.0).todense(), x / 2)


def test_elementwise_errors_as_jax():
    s = BCOO.fromdense(jnp.array([[0.0, 2.0, 0.0], [1.0, 0.0, 4.0]]))
    with pytest.raises(NotImplementedError, match="Addition between a sparse array X and a dense array Y"):
        s + 1
    with pytest.raises(NotImplementedError, match="different batch/dense dimensions"):
        BCOO.fromdense(s.todense(), n_batch=1) + s
    with pytest.raises(NotImplementedError, match="output shape matches the sparse matrix shape"):
        sparse.bcoo_multiply_dense(s, jnp.ones((4, 2, 3)))
    with pytest.raises(TypeError, match="same number of dimensions"):
        sparse.bcoo_multiply_sparse(s, BCOO.fromdense(jnp.ones(3)))


# ----------------------------------------------------------------------------------------
# reductions and structural ops


@given(sparse_arrays(min_ndim=1), st.data())
def test_reduce_sum(arg, data):
    x, n_batch, n_dense = arg
    m = BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense, nse=max(1, int((x != 0).sum())))
    axes = tuple(data.draw(st.lists(st.sampled_from(range(x.ndim)), unique=True, min_size=1)))
    r = sparse.bcoo_reduce_sum(m, axes=axes)
    np.testing.assert_allclose(r.todense(), x.sum(axes), rtol=1e-5, atol=1e-5)
    s = m.sum(axes)
    np.testing.assert_allclose(sparse.todense(s), x.sum(axes), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(m.sum(), x.sum(), rtol=1e-5, atol=1e-5)


@given(sparse_arrays(min_ndim=1), st.data())
def test_reshape(arg, data):
    x, n_batch, n_dense = arg
    m = BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    nb, ns = n_batch, x.ndim - n_batch - n_dense
    bs, ss, ds = x.shape[:nb], x.shape[nb : nb + ns], x.shape[nb + ns :]
    # regroup each class of dimensions on its own (what bcoo_reshape supports)
    new = []
    for part in (bs, ss, ds):
        size = int(np.prod(part))
        new += [size] if data.draw(st.booleans()) else list(part)
    r = sparse.bcoo_reshape(m, new_sizes=tuple(new))
    np.testing.assert_array_equal(r.todense(), x.reshape(new))
    np.testing.assert_array_equal(m.reshape(tuple(new)).todense(), x.reshape(new))
    np.testing.assert_array_equal(
        m.reshape(-1).todense() if (nb == 0 and n_dense == 0) else x.reshape(-1), x.reshape(-1)
    )


def test_reshape_errors():
    m = BCOO.fromdense(jnp.arange(6.0).reshape(2, 3), n_batch=1)
    with pytest.raises(ValueError, match="cannot mix batch and sparse"):
        sparse.bcoo_reshape(m, new_sizes=(3, 2))
    with pytest.raises(ValueError, match="total size"):
        sparse.bcoo_reshape(m, new_sizes=(4, 2))


@given(sparse_arrays(min_ndim=1, max_ndim=2), st.integers(0, 2**31 - 1))
def test_slice_dynamic_slice_rev_squeeze(arg, seed):
    x, n_batch, n_dense = arg
    rng = np.random.default_rng(seed)
    m = BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense, nse=int((x != 0).sum()) + 1)
    start = [int(rng.integers(0, s + 1)) for s in x.shape]
    limit = [int(rng.integers(a, s + 1)) for a, s in zip(start, x.shape)]
    strides = [int(rng.integers(1, 3)) for _ in x.shape]
    ref = x[tuple(slice(a, b, c) for a, b, c in zip(start, limit, strides))]
    out = sparse.bcoo_slice(m, start_indices=start, limit_indices=limit, strides=strides)
    assert out.shape == ref.shape
    np.testing.assert_array_equal(out.todense(), ref)
    sizes = [int(rng.integers(0, s + 1)) for s in x.shape]
    starts = [int(rng.integers(-1, s + 2)) for s in x.shape]
    # lax.dynamic_slice semantics: negative starts count from the end, then clamp into range
    lo = [min(max(a + n if a < 0 else a, 0), n - z) for a, n, z in zip(starts, x.shape, sizes)]
    ref = x[tuple(slice(a, a + z) for a, z in zip(lo, sizes))]
    out = sparse.bcoo_dynamic_slice(m, starts, sizes)
    np.testing.assert_array_equal(out.todense(), ref)
    dims = [d for d in range(x.ndim) if rng.random() < 0.5]
    np.testing.assert_array_equal(sparse.bcoo_rev(m, dims).todense(), np.flip(x, dims))
    e = sparse.bcoo_broadcast_in_dim(m, shape=(1,) + x.shape, broadcast_dimensions=tuple(range(1, x.ndim + 1)))
    np.testing.assert_array_equal(e.todense(), x[None])
    np.testing.assert_array_equal(sparse.bcoo_squeeze(e, dimensions=(0,)).todense(), x)


def test_dynamic_slice_traced_start():
    x = np.arange(20.0, dtype=np.float32).reshape(4, 5) * (np.arange(20).reshape(4, 5) % 3 == 0)
    m = BCOO.fromdense(x)
    f = fjax.jit(lambda m, i: sparse.bcoo_dynamic_slice(m, (i, 1), (2, 3)).todense())
    for i in (0, 2, 3):
        np.testing.assert_array_equal(f(m, i), x[min(i, 2) : min(i, 2) + 2, 1:4])


def test_broadcast_in_dim_and_concatenate():
    x = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]], np.float32)
    m = BCOO.fromdense(x)
    b = sparse.bcoo_broadcast_in_dim(m, shape=(4, 2, 3), broadcast_dimensions=(1, 2))
    assert b.n_batch == 1
    np.testing.assert_array_equal(b.todense(), np.broadcast_to(x, (4, 2, 3)))
    b2 = sparse.bcoo_broadcast_in_dim(m, shape=(2, 3, 1), broadcast_dimensions=(0, 1))
    np.testing.assert_array_equal(b2.todense(), x[:, :, None])
    with pytest.raises(NotImplementedError, match="sparse dimensions with lengths != 1"):
        sparse.bcoo_broadcast_in_dim(m, shape=(2, 3, 4), broadcast_dimensions=(0, 1))
    y = np.array([[5.0, 0.0, 0.0]], np.float32)
    # padding must stay padding after the offset of the second operand
    p = BCOO.fromdense(x, nse=5)
    c = sparse.bcoo_concatenate([p, BCOO.fromdense(y)], dimension=0)
    np.testing.assert_array_equal(c.todense(), np.concatenate([x, y]))
    c1 = sparse.bcoo_concatenate([m, BCOO.fromdense(x[:, :1])], dimension=1)
    np.testing.assert_array_equal(c1.todense(), np.concatenate([x, x[:, :1]], 1))
    bb = BCOO.fromdense(x, n_batch=1)
    cb = sparse.bcoo_concatenate([bb, BCOO.fromdense(np.ones((1, 3), np.float32), n_batch=1)], dimension=0)
    assert cb.n_batch == 1
    np.testing.assert_array_equal(cb.todense(), np.concatenate([x, np.ones((1, 3))]))
    with pytest.raises(NotImplementedError, match="dense dimensions"):
        sparse.bcoo_concatenate([BCOO.fromdense(x, n_dense=1)] * 2, dimension=1)
    with pytest.raises(ValueError, match="sequence of BCOO"):
        sparse.bcoo_concatenate([m, x], dimension=0)


# ----------------------------------------------------------------------------------------
# autodiff and transforms


def _fd_grad(f, x, eps=1e-3):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (float(f((x + e).astype(np.float32))) - float(f((x - e).astype(np.float32)))) / (2 * eps)
    return g


def test_grad_data_and_dense_operand():
    rng = np.random.default_rng(3)
    x = np.where(rng.random((3, 4)) < 0.5, rng.standard_normal((3, 4)), 0).astype(np.float32)
    m = BCOO.fromdense(x, nse=8)
    w = rng.standard_normal((4, 2)).astype(np.float32)

    def loss_data(d, w):
        s = BCOO((d, m.indices), shape=m.shape)
        return jnp.sum(jnp.tanh(s @ w))

    gd, gw = fjax.grad(loss_data, argnums=(0, 1))(m.data, w)
    np.testing.assert_allclose(gd, _fd_grad(lambda d: loss_data(d, w), m.data), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(gw, _fd_grad(lambda ww: loss_data(m.data, ww), w), rtol=2e-3, atol=2e-3)
    # the same gradient w.r.t. w as through the dense matrix
    gw_dense = fjax.grad(lambda w: jnp.sum(jnp.tanh(jnp.asarray(x) @ w)))(w)
    np.testing.assert_allclose(gw, gw_dense, rtol=1e-5, atol=1e-6)
    # grad through fromdense: the gradient lands on the stored entries only
    g = fjax.grad(lambda a: (BCOO.fromdense(a, nse=8) @ w).sum())(x)
    np.testing.assert_allclose(g, np.where(x != 0, w.sum(1)[None, :], 0), rtol=1e-6)
    # dense @ sparse, gradient w.r.t. both
    v = rng.standard_normal(3).astype(np.float32)
    gv, gd2 = fjax.grad(lambda v, d: (v @ BCOO((d, m.indices), shape=m.shape)).sum(), argnums=(0, 1))(v, m.data)
    np.testing.assert_allclose(gv, x.sum(1), rtol=1e-5)
    np.testing.assert_allclose(gd2, v[np.asarray(m.indices)[:, 0]] * (np.asarray(m.indices)[:, 0] < 3), rtol=1e-6)


def test_jit_vmap_grad_compose():
    rng = np.random.default_rng(4)
    x = np.where(rng.random((2, 3, 4)) < 0.5, rng.standard_normal((2, 3, 4)), 0).astype(np.float32)
    m = BCOO.fromdense(x, n_batch=1, nse=6)
    w = rng.standard_normal((4,)).astype(np.float32)

    @fjax.jit
    def f(m, w):
        return fjax.vmap(lambda s: fjax.grad(lambda w: jnp.sum((s @ w) ** 2))(w))(m)

    ref = np.stack([2 * (xi @ w) @ xi for xi in x])
    np.testing.assert_allclose(f(m, w), ref, rtol=1e-4, atol=1e-5)


def test_cuda_backend_on_standin_gpu():
    """The same jitted sparse program on the CUDA backend (its kernels run on the cupy stand-in)
    and on the CPU: conversions, duplicates, a product and a gradient w.r.t. data (the other ops
    compose from the same lax primitives)."""
    pytest.importorskip("fjax.backends.cuda.cupy_standin")
    import _standin_gpu  # tests/ is on the path

    rng = np.random.default_rng(9)
    x = np.where(rng.random((4, 5)) < 0.4, rng.standard_normal((4, 5)), 0).astype(np.float32)
    w = rng.standard_normal((5, 2)).astype(np.float32)

    def f(x, w):
        m = BCOO.fromdense(x, nse=8)
        dup = BCOO((jnp.concatenate([m.data, m.data]), jnp.concatenate([m.indices, m.indices])), shape=m.shape)
        s = sparse.bcoo_sum_duplicates(dup, nse=8)
        g = fjax.grad(lambda d: jnp.sum(BCOO((d, s.indices), shape=s.shape) @ w))(s.data)
        return s.todense(), m @ w, g

    with _standin_gpu.installed():
        got, want = _standin_gpu.both(f, x, w)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[0], 2 * x, rtol=1e-6)
    np.testing.assert_allclose(got[1], x @ w, rtol=1e-5, atol=1e-5)


@given(sparse_arrays(min_ndim=2, max_ndim=3), st.integers(0, 3))
def test_bcsr_roundtrip_and_matmul(arg, extra):
    x, _, _ = arg
    n_batch = x.ndim - 2
    n_dense = 0
    if x.ndim == 3 and extra % 2:
        n_batch, n_dense = 0, 1
    nse = int(np.max(sparse.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense).nse, initial=0)) + extra
    b = sparse.BCSR.fromdense(x, nse=nse, n_batch=n_batch, n_dense=n_dense)
    assert (b.n_batch, b.n_sparse, b.n_dense, b.nse) == (n_batch, 2, n_dense, nse)
    assert b.indptr.shape == x.shape[:n_batch] + (x.shape[n_batch] + 1,)
    np.testing.assert_array_equal(b.todense(), x)
    np.testing.assert_array_equal(sparse.bcsr_todense(b), x)
    np.testing.assert_array_equal(b.to_bcoo().todense(), x)
    np.testing.assert_array_equal(sparse.BCSR.from_bcoo(b.to_bcoo()).todense(), x)
    ext = sparse.bcsr_extract(b.indices, b.indptr, x)
    np.testing.assert_array_equal(ext, b.data)
    if n_dense == 0:
        v = np.random.default_rng(extra).standard_normal(x.shape[-1]).astype(np.float32)
        np.testing.assert_allclose(b @ v, x @ v, rtol=1e-5, atol=1e-5)


def test_bcsr_as_jax():
    M = jnp.array([[0.0, 2.0, 0.0], [1.0, 0.0, 4.0]])
    b = sparse.BCSR.fromdense(M, nse=5)  # JAX 0.10.2: the same buffers and repr
    assert repr(b) == "BCSR(float32[2, 3], nse=5)"
    np.testing.assert_array_equal(b.indices, [1, 0, 2, 3, 3])
    np.testing.assert_array_equal(b.indptr, [0, 1, 3])
    np.testing.assert_array_equal(b.to_bcoo().indices, [[0, 1], [1, 0], [1, 2], [2, 3], [2, 3]])
    np.testing.assert_allclose(jnp.ones(2) @ b, [1.0, 2.0, 4.0])
    np.testing.assert_allclose(fjax.jit(lambda b, v: b @ v)(b, jnp.ones(3)), [2.0, 5.0])
    with pytest.raises(NotImplementedError, match="Transpose is not implemented"):
        _ = b.T
    with pytest.raises(NotImplementedError, match="BCSR lhs and ndarray rhs"):
        _ = b @ b
    with pytest.raises(ValueError, match="2 sparse dimensions"):
        sparse.bcsr_fromdense(jnp.ones((2, 3, 4)))


# ----------------------------------------------------------------------------------------
# legacy 2-D formats


@given(sparse_arrays(min_ndim=2, max_ndim=2), st.integers(0, 2), st.integers(0, 2**31 - 1))
def test_coo_csr_csc_against_numpy(arg, extra, seed):
    x, _, _ = arg
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(x.shape[1]).astype(np.float32)
    u = rng.standard_normal(x.shape[0]).astype(np.float32)
    B = rng.standard_normal((x.shape[1], 2)).astype(np.float32)
    nse = int((x != 0).sum()) + extra
    for cls in (sparse.COO, sparse.CSR, sparse.CSC):
        m = cls.fromdense(x, nse=nse)
        assert m.nse == nse and m.shape == x.shape
        np.testing.assert_array_equal(m.todense(), x)
        np.testing.assert_array_equal(m.T.todense(), x.T)
        np.testing.assert_allclose(m @ v, x @ v, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(m @ B, x @ B, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(m.T @ u, x.T @ u, rtol=1e-5, atol=1e-5)
    c, r = sparse.coo_fromdense(x, nse=nse), sparse.csr_fromdense(x, nse=nse)
    np.testing.assert_array_equal(sparse.coo_todense(c), x)
    np.testing.assert_array_equal(sparse.csr_todense(r), x)
    np.testing.assert_allclose(sparse.coo_matvec(c, u, transpose=True), x.T @ u, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sparse.csr_matvec(r, v), x @ v, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sparse.coo_matmat(c, B), x @ B, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sparse.csr_matmat(r, u[:, None], transpose=True), x.T @ u[:, None], rtol=1e-5, atol=1e-5)


def test_legacy_formats_as_jax():
    # buffers printed by JAX 0.10.2 for the same matrix
    M = jnp.array([[0.0, 2.0, 0.0], [1.0, 0.0, 4.0]])
    c = sparse.COO.fromdense(M, nse=5)
    assert repr(c) == "COO(float32[2, 3], nse=5)" and repr(c.T) == "COO(float32[3, 2], nse=5)"
    np.testing.assert_array_equal(c.row, [0, 1, 1, 0, 0])
    np.testing.assert_array_equal(c.col, [1, 0, 2, 0, 0])
    r = sparse.CSR.fromdense(M, nse=5)
    np.testing.assert_array_equal(r.indices, [1, 0, 2, 0, 0])
    np.testing.assert_array_equal(r.indptr, [0, 1, 3])
    assert repr(r.T) == "CSC(float32[3, 2], nse=5)"
    k = sparse.CSC.fromdense(M, nse=5)
    np.testing.assert_array_equal(k.data, [1.0, 2.0, 4.0, 0.0, 0.0])
    np.testing.assert_array_equal(k.indices, [1, 0, 1, 0, 0])
    np.testing.assert_array_equal(k.indptr, [0, 1, 2, 3])
    for fmt in ("coo", "csr", "csc"):
        np.testing.assert_array_equal(sparse.eye(3, 4, -1, sparse_format=fmt).todense(), np.eye(3, 4, -1))
    assert repr(sparse.empty((2, 3), sparse_format="csr")) == "CSR(float32[2, 3], nse=0)"
    assert repr(sparse.empty((2, 3), sparse_format="bcsr")) == "BCSR(float32[2, 3], nse=0)"
    np.testing.assert_allclose(fjax.jit(lambda c, v: c @ v)(r, jnp.ones(3)), [2.0, 5.0])
    g = fjax.grad(lambda d: (sparse.CSR((d, r.indices, r.indptr), shape=r.shape) @ jnp.arange(3.0)).sum())(r.data)
    np.testing.assert_array_equal(g, [1.0, 0.0, 2.0, 0.0, 0.0])
    with pytest.raises(NotImplementedError, match="matmul between two sparse objects"):
        _ = c @ c
    with pytest.raises(ValueError, match="ndim=2"):
        sparse.COO.fromdense(jnp.ones(3))


def test_bcsr_structural_and_scipy():
    x = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 4.0]], np.float32)
    b = sparse.BCSR.fromdense(x)
    r = sparse.bcsr_broadcast_in_dim(b, shape=(2, 2, 3), broadcast_dimensions=(1, 2))
    assert repr(r) == "BCSR(float32[2, 2, 3], nse=3, n_batch=1)"  # as JAX 0.10.2
    np.testing.assert_array_equal(r.todense(), np.broadcast_to(x, (2, 2, 3)))
    np.testing.assert_array_equal(sparse.bcsr_concatenate([b, b], dimension=0).todense(), np.concatenate([x, x]))
    np.testing.assert_array_equal(sparse.bcsr_concatenate([b, b], dimension=1).todense(), np.concatenate([x, x], 1))
    scipy_sparse = pytest.importorskip("scipy.sparse")
    s = scipy_sparse.random(4, 5, density=0.3, format="csr", random_state=0)
    np.testing.assert_allclose(BCOO.from_scipy_sparse(s).todense(), s.toarray(), rtol=1e-6)
    np.testing.assert_allclose(sparse.BCSR.from_scipy_sparse(s).todense(), s.toarray(), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="nonzero n_dense/n_batch"):
        BCOO.from_scipy_sparse(s, n_batch=1)
