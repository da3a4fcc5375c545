"""Tests of numpy-style indexing (fjax.numpy._indexing): x[idx], x.at[idx].op(v), nonzero & co.

Expected values come from numpy; out-of-bounds behaviour was checked against jax 0.10.2
(retrieval clamps, ``mode="fill"`` fills, updates drop out-of-bounds indices).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
from fjax import core
from fjax.numpy._indexing import NonConcreteBooleanIndexError, argwhere, flatnonzero, getitem, nonzero
from fjax.numpy._indexing import _IndexUpdateHelper as At

try:
    from fjax.test_util import check_grads
except ImportError:  # pragma: no cover
    check_grads = None


def A(v):
    return core.to_array(np.asarray(v))


def assert_same(r, e):
    r = np.asarray(r)
    e = np.asarray(e)
    assert r.shape == e.shape, (r.shape, e.shape)
    assert r.dtype == e.dtype, (r.dtype, e.dtype)
    np.testing.assert_array_equal(r, e)


# ---------------------------------------------------------------------------------------------
# random index expressions


@st.composite
def shape_and_index(draw, allow_arrays=True, allow_bool=True):
    """A shape and a valid numpy index for it (ints in bounds, advanced indices broadcastable)."""
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    nd = len(shape)
    bshape = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=2)))
    state = {"mask": False, "array": False}

    def items_for(dims):
        items = []
        j = 0
        while j < len(dims):
            n = shape[dims[j]]
            choices = ["slice", "none", "slice"]
            if n > 0:
                choices.append("int")
            if allow_arrays and (n > 0 or 0 in bshape) and not state["mask"]:
                choices.append("array")
            if allow_bool and not state["array"] and not state["mask"]:
                choices.append("mask")
            kind = draw(st.sampled_from(choices))
            if kind == "none":
                items.append(None)
                continue
            if kind == "slice":
                start = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
                stop = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
                step = draw(st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2, -3])))
                items.append(slice(start, stop, step))
            elif kind == "int":
                items.append(draw(st.integers(-n, n - 1)))
            elif kind == "array":
                state["array"] = True
                k = draw(st.integers(0, len(bshape))) if n > 0 else len(bshape)
                sub = [1 if draw(st.booleans()) and s else s for s in bshape[len(bshape) - k :]]
                size = int(np.prod(sub)) if sub else 1
                vals = draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size)) if n > 0 else []
                items.append(np.array(vals, dtype=np.int32).reshape(sub))
            else:
                state["mask"] = True
                k = draw(st.integers(1, max(1, min(2, len(dims) - j))))
                mshape = tuple(shape[d] for d in dims[j : j + k])
                size = int(np.prod(mshape))
                vals = draw(st.lists(st.booleans(), min_size=size, max_size=size))
                items.append(np.array(vals, dtype=bool).reshape(mshape))
                j += k
                continue
            j += 1
        return items

    p = draw(st.integers(0, nd))
    if draw(st.booleans()):
        q = draw(st.integers(p, nd))
        items = items_for(list(range(p))) + [Ellipsis] + items_for(list(range(q, nd)))
    else:
        items = items_for(list(range(p)))
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), None)
    if len(items) == 1 and draw(st.booleans()):
        return shape, items[0]
    return shape, tuple(items)


def _np_value(shape, seed=0, dtype=np.float32):
    rng = np.random.RandomState(seed)
    return np.asarray(rng.randn(*shape) * 10).astype(dtype)


@given(shape_and_index())
def test_getitem_matches_numpy(si):
    shape, idx = si
    x = _np_value(shape)
    expected = x[idx]
    assert_same(getitem(A(x), idx), expected)
    assert_same(A(x)[idx], expected)


@given(shape_and_index(allow_bool=False))
def test_getitem_traced_indices_under_jit(si):
    shape, idx = si
    x = _np_value(shape)
    expected = x[idx]
    items = idx if isinstance(idx, tuple) else (idx,)
    arrays = [i for i in items if isinstance(i, (np.ndarray, int)) and not isinstance(i, bool)]

    def f(x, *dyn):
        it = iter(dyn)
        new = tuple(next(it) if isinstance(i, (np.ndarray, int)) and not isinstance(i, bool) else i for i in items)
        return getitem(x, new)

    out = fjax.jit(f)(A(x), *[A(a) for a in arrays])
    assert_same(out, expected)


@given(shape_and_index())
def test_at_set_add_match_numpy(si):
    shape, idx = si
    x = _np_value(shape)
    sel = x[idx]
    vals = _np_value(sel.shape, seed=1)
    try:
        expected_add = x.copy()
        np.add.at(expected_add, idx, vals)
    except (IndexError, TypeError, ValueError):
        expected_add = None
    if expected_add is not None:
        np.testing.assert_allclose(np.asarray(At(A(x))[idx].add(A(vals))), expected_add, rtol=1e-6, atol=1e-5)
    # set: unique positions only (numpy's duplicate-write order is unspecified in JAX)
    pos = np.arange(x.size).reshape(shape)[idx].ravel()
    if len(np.unique(pos)) == len(pos):
        expected = x.copy()
        expected[idx] = vals
        assert_same(At(A(x))[idx].set(A(vals)), expected)
        # a broadcast scalar update
        expected = x.copy()
        expected[idx] = 3.0
        assert_same(At(A(x))[idx].set(3.0), expected)


@given(
    st.integers(1, 6),
    st.lists(st.integers(-6, 5), min_size=0, max_size=8),
    st.sampled_from(["add", "multiply", "min", "max", "set"]),
)
def test_at_ops_with_duplicates_match_ufunc_at(n, idx, op):
    idx = [i for i in idx if -n <= i < n]
    idx = np.array(idx, dtype=np.int32)
    x = np.arange(1, n + 1, dtype=np.float32) * 1.5
    vals = np.linspace(-2, 3, len(idx)).astype(np.float32)
    expected = x.copy()
    if op == "set":
        idx = np.unique(np.where(idx < 0, idx + n, idx)).astype(np.int32)
        vals = vals[: len(idx)]
        expected[idx] = vals
    else:
        {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}[op].at(expected, idx, vals)
    out = getattr(At(A(x))[A(idx)], op)(A(vals))
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6)


def test_at_divide_power_and_dtypes():
    xi = A(np.ones((2, 3), np.int32))
    out = At(xi)[0].add(1.7)  # promoted, then cast back (as JAX)
    assert_same(out, np.array([[2, 2, 2], [1, 1, 1]], np.int32))
    x = A(np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3))
    np.testing.assert_allclose(np.asarray(At(x)[:, 1].divide(2.0)), np.array([[1, 1, 3], [4, 2.5, 6]]))
    np.testing.assert_allclose(np.asarray(At(x)[1, np.array([0, 0])].power(2.0)), [[1, 2, 3], [256, 5, 6]])
    np.testing.assert_allclose(np.asarray(At(x)[1, 1].apply(lambda v: v * 10)), [[1, 2, 3], [4, 50, 6]])
    assert At(x)[0].mul(2.0).dtype == np.float32


def test_out_of_bounds_semantics_match_jax():
    x = A(np.arange(5.0, dtype=np.float32))
    i = np.array([0, 7, -1, -8], np.int32)
    assert_same(getitem(x, i), np.array([0, 4, 4, 0], np.float32))  # clamped
    assert_same(getitem(x, 7), np.float32(4.0))
    assert_same(fjax.jit(lambda x, k: x[k])(x, 7), np.float32(4.0))
    assert_same(fjax.jit(lambda x, k: x[k])(x, -8), np.float32(0.0))
    assert_same(At(x)[i].get(mode="fill", fill_value=-3), np.array([0, -3, 4, -3], np.float32))
    out = np.asarray(At(x)[i].get(mode="fill"))
    assert np.isnan(out[1]) and np.isnan(out[3])
    assert_same(At(x)[i].get(mode="clip"), np.array([0, 4, 4, 0], np.float32))
    assert_same(At(x)[i].set(9.0), np.array([9, 1, 2, 3, 9], np.float32))  # out of bounds dropped
    assert_same(At(x)[7].add(9.0), np.arange(5.0, dtype=np.float32))
    assert_same(At(x)[i].set(9.0, mode="clip"), np.array([9, 1, 2, 3, 9], np.float32))
    assert_same(x[2:9], np.array([2, 3, 4], np.float32))
    assert_same(x[-9:2], np.array([0, 1], np.float32))


def test_scalar_bool_and_newaxis():
    x = _np_value((2, 3))
    for idx in [True, False, (True, 0), (False, Ellipsis), (None, True, 1, None), (np.bool_(True),)]:
        assert_same(getitem(A(x), idx), x[idx])
    assert_same(At(A(x))[True, 0].set(1.0), np.where(np.arange(2)[:, None] == 0, 1.0, x).astype(np.float32))


def test_index_errors():
    x = A(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="non-tuple sequence"):
        getitem(x, [0, 1])
    with pytest.raises(IndexError, match="Too many indices"):
        getitem(x, (0, 0, 0))
    with pytest.raises(TypeError, match="integer or boolean type"):
        getitem(x, 1.0)
    with pytest.raises(TypeError, match="integer or boolean type"):
        getitem(x, np.array([1.0]))
    with pytest.raises(IndexError, match="single ellipsis"):
        getitem(x, (Ellipsis, Ellipsis))
    with pytest.raises(IndexError, match="boolean index did not match"):
        getitem(x, np.array([True, False, True]))
    with pytest.raises(ValueError, match=r"^Incompatible shapes for broadcasting: shapes=\[\(2,\), \(3,\)\]$"):
        getitem(x, (np.array([0, 1]), np.array([0, 1, 2])))  # JAX 0.10.2's ValueError (numpy: IndexError)
    with pytest.raises(NonConcreteBooleanIndexError, match="concrete"):
        fjax.jit(lambda x: x[x > 0])(x)
    with pytest.raises(IndexError, match="Slice entries must be static"):
        fjax.jit(lambda x, i: x[i : i + 1])(x, 1)
    with pytest.raises(ValueError, match="broadcast"):
        At(x)[0].set(np.ones(4, np.float32))
    assert issubclass(NonConcreteBooleanIndexError, IndexError)


def test_static_basic_indexing_uses_no_gather():
    x = A(np.ones((4, 5, 6), np.float32))
    jaxpr = str(fjax.make_jaxpr(lambda x: x[1:3, ::-1, None, 0])(x))
    assert "gather" not in jaxpr and "slice" in jaxpr and "rev" in jaxpr and "squeeze" in jaxpr
    jaxpr = str(fjax.make_jaxpr(lambda x, i: x[i, 1:])(x, 2))
    assert "dynamic_slice" in jaxpr and "gather" not in jaxpr
    jaxpr = str(fjax.make_jaxpr(lambda x: x[np.array([1, 2])])(x))
    assert "gather" in jaxpr


def test_vmap_batched_index():
    x = _np_value((3, 5))
    i = np.array([4, 0, 2], np.int32)
    out = fjax.vmap(lambda row, k: row[k])(A(x), A(i))
    assert_same(out, x[np.arange(3), i])
    out = fjax.vmap(lambda k: A(x)[:, k])(A(i))
    assert_same(out, x[:, i].T)
    out = fjax.vmap(lambda row, k: At(row)[k].add(1.0))(A(x), A(i))
    expected = x.copy()
    expected[np.arange(3), i] += 1
    assert_same(out, expected)
    ii = np.array([[0, 1], [3, 3], [2, 4]], np.int32)
    out = fjax.vmap(lambda row, k: row[k])(A(x), A(ii))
    assert_same(out, np.take_along_axis(x, ii, 1))


def _num_grad_check(f, x, eps=1e-3, tol=2e-3):
    g = np.asarray(fjax.grad(lambda v: f(v).sum())(A(x)))
    num = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x).ravel()
        e[k] = eps
        e = e.reshape(x.shape)
        num.ravel()[k] = (float(np.asarray(f(A(x + e)).sum())) - float(np.asarray(f(A(x - e)).sum()))) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=tol, atol=tol)


@pytest.mark.parametrize(
    "idx",
    [
        (1, slice(None, None, -2)),
        (np.array([0, 0, 2]), slice(1, 3)),
        (Ellipsis, None, np.array([[1], [0]])),
        (np.array([1, 2]), np.array([0, 3])),
        (np.array([True, False, True]), 1),
    ],
)
def test_grad_through_indexing(idx):
    x = np.random.RandomState(2).randn(3, 4).astype(np.float32)
    if check_grads is not None:
        check_grads(lambda v: getitem(v, idx), (A(x),), order=1)
        check_grads(lambda v: At(v)[idx].set(2.0) * v, (A(x),), order=1)
        check_grads(lambda v, u: At(v)[idx].add(u), (A(x), A(np.ones(x[idx].shape, np.float32))), order=1)
    else:
        _num_grad_check(lambda v: getitem(v, idx) ** 2, x)


def test_grad_duplicate_gather_accumulates():
    x = A(np.arange(4.0, dtype=np.float32))
    g = fjax.grad(lambda v: getitem(v, np.array([1, 1, 3])).sum())(x)
    assert_same(g, np.array([0, 2, 0, 1], np.float32))


def test_nonzero_argwhere_flatnonzero():
    a = np.array([[0, 1, 0], [2, 0, 3]], np.int32)
    for r, e in zip(nonzero(A(a)), np.nonzero(a)):
        assert_same(r, e.astype(np.int32))
    assert_same(argwhere(A(a)), np.argwhere(a).astype(np.int32))
    assert_same(flatnonzero(A(a)), np.flatnonzero(a).astype(np.int32))
    r = nonzero(A(a), size=5, fill_value=-1)
    assert_same(r[0], np.array([0, 1, 1, -1, -1], np.int32))
    assert_same(r[1], np.array([1, 0, 2, -1, -1], np.int32))
    r = fjax.jit(lambda v: nonzero(v, size=2))(A(a))
    assert_same(r[0], np.array([0, 1], np.int32))
    assert_same(r[1], np.array([1, 0], np.int32))
    r = fjax.jit(lambda v: argwhere(v, size=4, fill_value=9))(A(a))
    assert_same(r, np.array([[0, 1], [1, 0], [1, 2], [9, 9]], np.int32))
    with pytest.raises(fjax.ConcretizationTypeError):
        fjax.jit(nonzero)(A(a))
    with pytest.raises(ValueError, match="0d"):
        nonzero(A(np.int32(1)))
    assert argwhere(A(np.float32(1.0))).shape == (1, 0)


@given(st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple), st.integers(0, 6), st.randoms())
def test_nonzero_size_traced_matches_numpy(shape, size, rnd):
    a = (np.array([rnd.random() for _ in range(int(np.prod(shape)))]) > 0.5).astype(np.float32).reshape(shape)
    if a.ndim == 0:
        return
    out = fjax.jit(lambda v: nonzero(v, size=size, fill_value=-1))(A(a))
    for r, e in zip(out, np.nonzero(a)):
        e = np.concatenate([e[:size], np.full(max(0, size - len(e)), -1)]).astype(np.int32)
        assert_same(r, e)


def test_scalar_index_into_empty_axis_raises_as_jax():
    import fjax.numpy as jnp

    x = jnp.zeros((0, 1))
    for update in (lambda: x.at[0].add(1.0), lambda: x.at[0].set(1.0), lambda: jnp.zeros((2, 0)).at[:, 0].set(1.0)):
        with pytest.raises(IndexError, match="out of bounds for axis . with size 0"):
            update()
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
        fjax.jit(lambda x, i: x.at[i].set(1.0))(x, 0)
    assert x.at[jnp.array([0])].set(1.0).shape == (0, 1)  # an array index: nothing to update (as JAX)
