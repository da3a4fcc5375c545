"""Tests of fjax.numpy shape manipulation (fjax.numpy._shape) and sorting (_sorting) against numpy."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
from fjax import core
from fjax.numpy import _shape as S
from fjax.numpy import _sorting as SO

try:
    from fjax.test_util import check_grads
except ImportError:  # pragma: no cover
    check_grads = None


def A(v):
    return core.to_array(np.asarray(v))


def assert_same(r, e, exact_dtype=True):
    r = np.asarray(r)
    e = np.asarray(e)
    assert r.shape == e.shape, (r.shape, e.shape)
    if exact_dtype:
        assert r.dtype == e.dtype, (r.dtype, e.dtype)
    np.testing.assert_array_equal(r, e)


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
shapes1 = st.lists(st.integers(0, 4), min_size=1, max_size=4).map(tuple)


def val(shape, seed=0):
    return np.asarray(np.random.RandomState(seed).randn(*shape)).astype(np.float32)


@given(shapes, st.data())
def test_reshape_ravel_transpose(shape, data):
    x = val(shape)
    n = x.size
    new = data.draw(st.sampled_from([(n,), (1, n), (n, 1), (-1,), (1, -1)]))
    assert_same(S.reshape(A(x), new), x.reshape(new))
    assert_same(S.ravel(A(x)), x.ravel())
    assert_same(S.transpose(A(x)), x.T)
    perm = data.draw(st.permutations(range(len(shape))))
    assert_same(S.transpose(A(x), perm), x.transpose(perm))
    if shape:
        src = data.draw(st.integers(-len(shape), len(shape) - 1))
        dst = data.draw(st.integers(-len(shape), len(shape) - 1))
        assert_same(S.moveaxis(A(x), src, dst), np.moveaxis(x, src, dst))
        assert_same(S.swapaxes(A(x), src, dst), np.swapaxes(x, src, dst))
        assert_same(S.flip(A(x), src), np.flip(x, src))
    assert_same(S.flip(A(x)), np.flip(x))
    assert_same(S.squeeze(A(x)), np.squeeze(x))
    ax = data.draw(st.integers(-len(shape) - 1, len(shape)))
    assert_same(S.expand_dims(A(x), ax), np.expand_dims(x, ax))
    assert S.ndim(A(x)) == x.ndim and S.shape(A(x)) == x.shape and S.size(A(x)) == x.size


def test_reshape_errors():
    x = A(np.arange(4.0, dtype=np.float32))
    with pytest.raises(TypeError, match="evenly divide"):
        S.reshape(x, (3, -1))
    with pytest.raises(TypeError, match="only specify one unknown"):
        S.reshape(x, (-1, -1))
    np.testing.assert_array_equal(S.reshape(x, (2, 2), order="F"), np.reshape(np.arange(4.0), (2, 2), order="F"))
    with pytest.raises(ValueError, match="order"):
        S.reshape(x, (2, 2), order="K")
    with pytest.raises(ValueError, match="squeeze"):
        S.squeeze(A(np.ones((2, 3))), 0)
    with pytest.raises(ValueError, match="Incompatible"):
        S.broadcast_to(A(np.ones(3)), (2, 4))
    with pytest.raises(ValueError, match="Zero-dimensional"):
        S.concatenate([A(1.0), A(2.0)])
    with pytest.raises(ValueError, match="equal division"):
        S.split(x, 3)
    with pytest.raises(ValueError, match="out of bounds"):
        S.moveaxis(A(np.ones((2, 3))), 0, 5)
    # (JAX 0.10.2: "reshape requires ndarray or scalar arguments, got <class 'list'> at position 0.")
    with pytest.raises(TypeError, match="got <class 'list'> at position 0"):
        S.reshape([1, 2], (2,))


@given(shapes, shapes)
def test_broadcasting(s1, s2):
    try:
        expected = np.broadcast_shapes(s1, s2)
    except ValueError:
        with pytest.raises(ValueError):
            S.broadcast_shapes(s1, s2)
        return
    assert S.broadcast_shapes(s1, s2) == expected
    a, b = val(s1), val(s2, 1)
    ra, rb = S.broadcast_arrays(A(a), A(b))
    ea, eb = np.broadcast_arrays(a, b)
    assert_same(ra, ea)
    assert_same(rb, eb)
    assert_same(S.broadcast_to(A(a), expected), np.broadcast_to(a, expected))


def test_atleast():
    for v in [np.float32(1), np.ones(3, np.float32), np.ones((2, 3), np.float32), np.ones((2, 3, 4), np.float32)]:
        assert S.atleast_1d(A(v)).shape == np.atleast_1d(v).shape
        assert S.atleast_2d(A(v)).shape == np.atleast_2d(v).shape
        assert S.atleast_3d(A(v)).shape == np.atleast_3d(v).shape
    r = S.atleast_1d(A(1.0), A(np.ones(2)))
    assert isinstance(r, list) and len(r) == 2


@given(shapes1, st.integers(1, 3), st.data())
def test_join_and_split(shape, k, data):
    xs = [val(shape, i) for i in range(k)]
    ax = data.draw(st.integers(-len(shape), len(shape) - 1))
    assert_same(S.concatenate([A(x) for x in xs], axis=ax), np.concatenate(xs, axis=ax))
    assert_same(S.concatenate([A(x) for x in xs], axis=None), np.concatenate(xs, axis=None))
    sax = data.draw(st.integers(-len(shape) - 1, len(shape)))
    assert_same(S.stack([A(x) for x in xs], axis=sax), np.stack(xs, axis=sax))
    for f, g in [
        (S.hstack, np.hstack),
        (S.vstack, np.vstack),
        (S.dstack, np.dstack),
        (S.column_stack, np.column_stack),
    ]:
        try:
            e = g(xs)
        except ValueError:
            continue
        assert_same(f([A(x) for x in xs]), e)
    x = xs[0]
    n = x.shape[ax]
    secs = data.draw(st.integers(1, 4))
    for r, e in zip(S.array_split(A(x), secs, axis=ax), np.array_split(x, secs, axis=ax)):
        assert_same(r, e)
    idx = sorted(data.draw(st.lists(st.integers(0, n + 1), max_size=3)))
    res = S.split(A(x), idx, axis=ax)
    exp = np.split(x, idx, axis=ax)
    assert len(res) == len(exp)
    for r, e in zip(res, exp):
        assert_same(r, e)
    if n % secs == 0:
        for r, e in zip(S.split(A(x), secs, axis=ax), np.split(x, secs, axis=ax)):
            assert_same(r, e)


def test_concatenate_promotes_and_append():
    r = S.concatenate([A(np.ones(2, np.int32)), A(np.ones(1, np.float32))])
    assert r.dtype == np.float32
    assert_same(
        S.append(A(np.arange(3, dtype=np.int32)), A(np.array([[7, 8]], np.int32))),
        np.append(np.arange(3, dtype=np.int32), [[7, 8]]).astype(np.int32),
    )
    x = val((2, 3))
    assert_same(S.append(A(x), A(x), axis=1), np.append(x, x, axis=1))
    for r, e in zip(S.hsplit(A(x), 3), np.hsplit(x, 3)):
        assert_same(r, e)
    for r, e in zip(S.vsplit(A(x), [1]), np.vsplit(x, [1])):
        assert_same(r, e)


@given(shapes, st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple))
def test_tile(shape, reps):
    x = val(shape)
    assert_same(S.tile(A(x), reps), np.tile(x, reps))


@given(shapes1, st.data())
def test_repeat(shape, data):
    x = val(shape)
    ax = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    r = data.draw(st.integers(0, 3))
    assert_same(S.repeat(A(x), r, axis=ax), np.repeat(x, r, axis=ax))
    n = x.size if ax is None else x.shape[ax]
    reps = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int32)
    expected = np.repeat(x, reps, axis=ax)
    assert_same(S.repeat(A(x), A(reps), axis=ax), expected)
    if n and reps.sum():
        total = int(reps.sum()) + 2
        out = fjax.jit(lambda v, rp: S.repeat(v, rp, axis=ax, total_repeat_length=total))(A(x), A(reps))
        xx = x.ravel() if ax is None else x
        axx = 0 if ax is None else ax
        last = np.take(xx, [n - 1, n - 1], axis=axx)  # JAX pads with the last element of x
        assert_same(out, np.concatenate([expected, last], axis=axx))
        assert_same(S.repeat(A(x), A(reps), axis=ax, total_repeat_length=total), np.concatenate([expected, last], axx))


def test_repeat_total_repeat_length_matches_jax():
    x = A(np.arange(4.0, dtype=np.float32))
    assert_same(S.repeat(x, A(np.array([1, 0, 2, 1])), total_repeat_length=6), np.array([0, 2, 2, 3, 3, 3], np.float32))
    assert_same(S.repeat(x, A(np.array([1, 0, 2, 1])), total_repeat_length=2), np.array([0, 2], np.float32))
    assert_same(S.repeat(x, 2, total_repeat_length=5), np.array([0, 0, 1, 1, 2], np.float32))
    with pytest.raises(fjax.ConcretizationTypeError):
        fjax.jit(lambda v, r: S.repeat(v, r))(x, A(np.array([1, 0, 2, 1])))


@given(shapes1, st.data())
def test_roll_rot90_flips(shape, data):
    x = val(shape)
    shift = data.draw(st.integers(-6, 6))
    ax = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    assert_same(S.roll(A(x), shift, ax), np.roll(x, shift, ax))
    assert_same(fjax.jit(lambda v, s: S.roll(v, s, ax))(A(x), shift), np.roll(x, shift, ax))
    if len(shape) >= 2:
        k = data.draw(st.integers(-5, 5))
        assert_same(S.roll(A(x), (shift, 1), (0, 1)), np.roll(x, (shift, 1), (0, 1)))
        assert_same(S.rot90(A(x), k), np.rot90(x, k))
        assert_same(S.rot90(A(x), k, axes=(1, 0)), np.rot90(x, k, axes=(1, 0)))
        assert_same(S.fliplr(A(x)), np.fliplr(x))
    assert_same(S.flipud(A(x)), np.flipud(x))


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), st.data())
def test_pad(shape, data):
    x = val(shape)
    nd = len(shape)
    widths = [tuple(data.draw(st.lists(st.integers(0, 6), min_size=2, max_size=2))) for _ in range(nd)]
    for mode in ["constant", "edge", "reflect", "symmetric", "wrap", "maximum", "minimum"]:
        assert_same(S.pad(A(x), widths, mode=mode), np.pad(x, widths, mode=mode))
    # fjax's eager float32 mean accumulates in double (as accurate as under jit); numpy's float32
    # accumulation may differ in the last bit
    np.testing.assert_allclose(S.pad(A(x), widths, mode="mean"), np.pad(x, widths, mode="mean"), rtol=2.5e-7)
    assert_same(S.pad(A(x), 2, constant_values=3.5), np.pad(x, 2, constant_values=3.5))
    cv = [(1.0, 2.0)] * nd
    assert_same(S.pad(A(x), widths, constant_values=cv), np.pad(x, widths, constant_values=cv))
    xi = (x * 10).astype(np.int32)
    assert_same(S.pad(A(xi), widths, mode="mean"), np.pad(xi, widths, mode="mean"))


def test_pad_errors():
    with pytest.raises(ValueError, match="empty axis"):
        S.pad(A(np.zeros(0, np.float32)), 1, mode="edge")
    with pytest.raises(NotImplementedError):
        S.pad(A(np.zeros(3, np.float32)), 1, mode=lambda *args: None)
    with pytest.raises(ValueError, match="negative"):
        S.pad(A(np.zeros(3, np.float32)), -1)


@given(shapes1, st.data())
def test_take_and_take_along_axis(shape, data):
    x = val(shape)
    ax = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = x.size if ax is None else x.shape[ax]
    if n == 0:
        return
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=5)), np.int32)
    assert_same(S.take(A(x), A(idx), axis=ax), np.take(x, idx, axis=ax))
    big = np.array([0, n + 3, -n - 2], np.int32)
    assert_same(
        S.take(A(x), A(big), axis=ax, mode="clip"),
        np.take(x, np.clip(np.where(big < 0, big + n, big), 0, n - 1), axis=ax),
    )
    assert_same(S.take(A(x), A(big), axis=ax, mode="wrap"), np.take(x, big, axis=ax, mode="wrap"))
    filled = np.asarray(S.take(A(x), A(big), axis=ax))
    assert np.isnan(np.take(filled, [1, 2], axis=0 if ax is None else ax)).all()
    if ax is not None:
        ishape = list(x.shape)
        ishape[ax] = data.draw(st.integers(0, 3))
        ind = np.random.RandomState(1).randint(-n, n, ishape).astype(np.int32)
        assert_same(S.take_along_axis(A(x), A(ind), ax), np.take_along_axis(x, ind, ax))


def test_take_along_axis_jax_semantics():
    x = A(np.arange(5.0, dtype=np.float32))
    out = np.asarray(S.take_along_axis(x, A(np.array([0, 7, -1, -8])), axis=0))
    np.testing.assert_array_equal(out[[0, 2]], [0, 4])
    assert np.isnan(out[[1, 3]]).all()
    out = S.take_along_axis(A(np.ones((1, 3), np.float32)), A(np.zeros((4, 1), np.int32)), axis=1)
    assert out.shape == (4, 1)
    with pytest.raises(NotImplementedError):
        S.take(x, A(np.array([1])), mode="raise")
    with pytest.raises(ValueError, match="integer"):
        S.take(x, A(np.array([1.0], np.float32)))


@pytest.mark.parametrize("obj", [1, -1, [0, 2], slice(0, 3, 2), [3, 0, 0]])
def test_insert_delete(obj):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for axis in [None, 0, 1]:
        assert_same(S.insert(A(x), obj, A(np.float32(-1)), axis=axis), np.insert(x, obj, -1, axis=axis))
        if not isinstance(obj, list) or len(set(obj)) == len(obj):
            assert_same(S.delete(A(x), obj, axis=axis), np.delete(x, obj, axis=axis))
    assert_same(
        S.insert(A(x), 1, A(np.array([9.0, 8.0, 7.0], np.float32)), axis=1), np.insert(x, 1, [9.0, 8.0, 7.0], axis=1)
    )
    assert_same(S.delete(A(x), np.array([True, False, True]), axis=0), np.delete(x, [0, 2], axis=0))


@given(st.integers(1, 4), st.integers(1, 4), st.integers(-4, 4))
def test_trace(n, m, offset):
    x = val((2, n, m))
    np.testing.assert_allclose(np.asarray(S.trace(A(x), offset, 1, 2)), np.trace(x, offset, 1, 2), rtol=1e-5, atol=1e-6)
    xi = np.ones((n, m), np.int8)
    assert S.trace(A(xi)).dtype == np.int32  # as jnp.sum
    assert S.trace(A(xi.astype(np.uint8))).dtype == np.uint32


def test_shape_op_grads():
    x = A(np.random.RandomState(0).randn(3, 4).astype(np.float32))
    fns = [
        lambda v: S.pad(v, ((1, 2), (3, 1)), mode="reflect"),
        lambda v: S.pad(v, 1, mode="edge") * 2,
        lambda v: S.roll(S.tile(v, (2, 1)), 3, 0),
        lambda v: S.concatenate([v, S.rot90(v, 1)[:3]], axis=1),
        lambda v: S.repeat(v, 2, axis=1),
        lambda v: S.take_along_axis(v, A(np.array([[0, 3], [1, 1], [2, 0]], np.int32)), 1),
        lambda v: S.trace(v),
        lambda v: S.insert(v, 1, A(np.float32(2.0)), axis=0),
    ]
    for f in fns:
        if check_grads is not None:
            check_grads(f, (x,), order=1)


# ---------------------------------------------------------------------------------------------
# sorting


@given(shapes1, st.data())
def test_sort_argsort(shape, data):
    rng = np.random.RandomState(0)
    x = rng.randint(0, 3, shape).astype(np.float32)  # many ties
    ax = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    assert_same(SO.sort(A(x), axis=ax), np.sort(x, axis=ax))
    assert_same(SO.argsort(A(x), axis=ax), np.argsort(x, axis=ax, kind="stable").astype(np.int32))
    assert_same(SO.sort(A(x), axis=ax, descending=True), np.flip(np.sort(x, axis=ax), axis=0 if ax is None else ax))
    # stable descending: ties keep their original order
    xa = x.ravel() if ax is None else x
    axx = 0 if ax is None else ax
    exp = np.flip(np.argsort(np.flip(xa, axx), axis=axx, kind="stable"), axx)
    exp = xa.shape[axx] - 1 - exp
    assert_same(SO.argsort(A(x), axis=ax, descending=True), exp.astype(np.int32))


def test_sort_nan_and_lexsort_searchsorted_unique():
    x = np.array([3.0, np.nan, 1.0, -np.inf], np.float32)
    assert_same(SO.sort(A(x)), np.sort(x))
    assert_same(SO.argsort(A(x)), np.argsort(x).astype(np.int32))
    k1 = np.array([1, 2, 1, 0], np.int32)
    k2 = np.array([0, 0, 1, 1], np.int32)
    assert_same(SO.lexsort([A(k1), A(k2)]), np.lexsort([k1, k2]).astype(np.int32))
    a = np.array([1.0, 2.0, 2.0, 3.0, np.nan], np.float32)
    v = np.array([[2.0, 0.0], [5.0, np.nan]], np.float32)
    for side in ["left", "right"]:
        assert_same(SO.searchsorted(A(a), A(v), side=side), np.searchsorted(a, v, side=side).astype(np.int32))
    assert_same(fjax.jit(SO.searchsorted)(A(a), A(v)), np.searchsorted(a, v).astype(np.int32))
    u = np.array([3, 1, 1, 2, 3], np.int32)
    vals, idx, inv, cnt = SO.unique(A(u), return_index=True, return_inverse=True, return_counts=True)
    ev, ei, einv, ec = np.unique(u, return_index=True, return_inverse=True, return_counts=True)
    for r, e in [(vals, ev), (idx, ei), (inv, einv), (cnt, ec)]:
        assert_same(r, e, exact_dtype=False)
    assert_same(SO.unique(A(u), size=5, fill_value=0), np.array([1, 2, 3, 0, 0], np.int32))
    with pytest.raises(fjax.ConcretizationTypeError):
        fjax.jit(SO.unique)(A(u))


def test_sort_grad_and_vmap():
    x = A(np.array([[3.0, 1.0, 2.0], [0.5, 2.5, -1.0]], np.float32))
    if check_grads is not None:
        check_grads(lambda v: SO.sort(v, axis=1) * A(np.array([1.0, 2.0, 3.0], np.float32)), (x,), order=1)
    out = fjax.vmap(lambda r: SO.argsort(r))(x)
    assert_same(out, np.argsort(np.asarray(x), axis=1).astype(np.int32))
