"""lax slicing primitives: slice, pad, concatenate, dynamic_(update_)slice, gather, scatter*.

Each primitive is checked against a numpy reference (gather/scatter against a loop that spells
out XLA's semantics), for gradients (check_grads, order 2, fwd and rev), vmap (operand / indices /
both batched, at various in_axes) and jit. Expected out-of-bounds behaviour was recorded with
jax 0.10.2 (see the test docstrings).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fjax
from fjax import lax
from fjax.lax import slicing as sl
from fjax.lax.slicing import GatherDimensionNumbers as GDN
from fjax.lax.slicing import GatherScatterMode as Mode
from fjax.lax.slicing import ScatterDimensionNumbers as SDN
from fjax.test_util import check_grads

F32 = np.float32


def farr(shape, seed=0):
    return np.random.RandomState(seed).uniform(-2, 2, size=shape).astype(F32)


def distinct(shape, seed=0, offset=0.0):
    """Values far apart from each other (so min/max have no near-ties)."""
    n = int(np.prod(shape))
    v = np.random.RandomState(seed).permutation(n).astype(F32) * F32(0.5) + F32(offset)
    return v.reshape(shape)


def assert_close(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-6, atol=1e-6)


def vmap_ref(f, in_axes, args):
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = []
    for b in range(size):
        outs.append(np.asarray(f(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, in_axes)])))
    return np.stack(outs)


def check_vmap(f, in_axes, args):
    got = fjax.vmap(f, in_axes=in_axes)(*args)
    assert_close(got, vmap_ref(f, in_axes, args))


def total(f):
    """A scalar-valued wrapper so gradients of array-valued functions can be checked cheaply."""

    def g(*args):
        out = f(*args)
        w = np.asarray(np.random.RandomState(1).uniform(0.5, 1.5, np.shape(out)), F32)
        return lax.reduce_sum(lax.mul(out, w), tuple(range(np.ndim(out))))

    return g


# ---------------------------------------------------------------------------------------------
# slice

small_shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


@st.composite
def slice_cases(draw):
    shape = draw(small_shapes)
    start, limit, strides = [], [], []
    for n in shape:
        a = draw(st.integers(0, n))
        b = draw(st.integers(a, n))
        start.append(a)
        limit.append(b)
        strides.append(draw(st.integers(1, 3)))
    x = draw(hnp.arrays(F32, shape, elements=st.floats(-5, 5, width=32)))
    return x, tuple(start), tuple(limit), tuple(strides)


@given(slice_cases())
def test_slice_matches_numpy_and_grads(case):
    x, start, limit, strides = case
    f = lambda x: sl.slice(x, start, limit, strides)  # noqa: E731
    ref = x[tuple(slice(a, b, s) for a, b, s in zip(start, limit, strides))]
    assert_close(f(x), ref)
    assert_close(fjax.jit(f)(x), ref)
    if x.size:
        check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    if x.ndim:
        ax = x.ndim - 1
        xs = np.stack([x, x + 1, x * 2], axis=ax)
        check_vmap(f, (ax,), (xs,))


def test_slice_in_dim_and_index_in_dim():
    x = farr((3, 5))
    assert_close(sl.slice(x, (1, 0), (3, 5), None), x[1:3])
    assert_close(sl.slice_in_dim(x, -3, None, axis=1), x[:, -3:])
    assert_close(sl.slice_in_dim(x, 0, 5, 2, axis=-1), x[:, ::2])
    assert_close(sl.index_in_dim(x, -1, 0), x[-1:])
    assert_close(sl.index_in_dim(x, 2, 1, keepdims=False), x[:, 2])
    with pytest.raises(IndexError, match="out of bounds"):
        sl.index_in_dim(x, 3, 0)
    # the stubs in lax.lax forward here
    from fjax.lax import lax as lax_mod

    assert_close(lax_mod.slice_in_dim(x, 1, 2, 1, 0), x[1:2])
    assert_close(lax_mod.concatenate([x, x], 1), np.concatenate([x, x], 1))


def test_slice_errors():
    x = farr((5,))
    # eager and unit-stride, JAX 0.10.2 checks the sizes as a dynamic_slice (numpy-int sizes)
    with pytest.raises(
        TypeError,
        match=r"slice slice_sizes must be less than or equal to operand shape, got slice_sizes \(np.int64\(6\),\)",
    ):
        sl.slice(x, (1,), (7,))
    with pytest.raises(TypeError, match=r"slice limit_indices must be less than or equal to operand shape"):
        sl.slice(x, (1,), (7,), (1,))
    with pytest.raises(TypeError, match="start_indices must have length equal"):
        sl.slice(x, (1, 1), (2, 2))
    with pytest.raises(TypeError, match="strides must be positive"):
        sl.slice(x, (1,), (3,), (0,))
    with pytest.raises(TypeError, match="greater than or equal to start_indices"):
        sl.slice(x, (3,), (2,), (1,))
    with pytest.raises(TypeError, match=r"slice slice_sizes must be greater than or equal to zero"):
        sl.slice(x, (3,), (2,))


# ---------------------------------------------------------------------------------------------
# pad


def pad_ref(x, pv, cfg):
    out = x
    for ax, (lo, hi, it) in enumerate(cfg):
        n = out.shape[ax]
        shape = list(out.shape)
        shape[ax] = n + max(n - 1, 0) * it
        y = np.full(shape, pv, out.dtype)
        idx = [slice(None)] * out.ndim
        idx[ax] = slice(None, None, it + 1)
        y[tuple(idx)] = out
        if lo >= 0:
            y = np.concatenate([np.full(shape[:ax] + [lo] + shape[ax + 1 :], pv, out.dtype), y], ax)
        else:
            y = np.take(y, range(-lo, y.shape[ax]), axis=ax)
        shape = list(y.shape)
        if hi >= 0:
            y = np.concatenate([y, np.full(shape[:ax] + [hi] + shape[ax + 1 :], pv, out.dtype)], ax)
        else:
            y = np.take(y, range(0, y.shape[ax] + hi), axis=ax)
        out = y
    return out


@st.composite
def pad_cases(draw):
    shape = draw(small_shapes)
    cfg = []
    for n in shape:
        it = draw(st.integers(0, 2))
        size = n + max(n - 1, 0) * it
        lo = draw(st.integers(-size, 2))
        hi = draw(st.integers(-(size + lo), 2) if size + lo >= 0 else st.integers(-(size + lo), 2))
        cfg.append((lo, hi, it))
    x = draw(hnp.arrays(F32, shape, elements=st.floats(-5, 5, width=32)))
    pv = F32(draw(st.floats(-5, 5, width=32)))
    return x, pv, tuple(cfg)


@given(pad_cases())
def test_pad_matches_numpy_and_grads(case):
    x, pv, cfg = case
    f = lambda x, pv: sl.pad(x, pv, cfg)  # noqa: E731
    ref = pad_ref(x, pv, cfg)
    assert_close(f(x, pv), ref)
    assert_close(fjax.jit(f)(x, pv), ref)
    check_grads(f, (x, pv), order=2, modes=("fwd", "rev"))
    pvs = np.array([pv, pv + 1, -pv], F32)
    xs = np.stack([x, x - 1, x * 3], axis=0)
    check_vmap(f, (0, None), (xs, pv))
    check_vmap(f, (None, 0), (x, pvs))
    check_vmap(f, (x.ndim, 0), (np.stack([x, x - 1, x * 3], axis=x.ndim), pvs))


def test_pad_jax_reference_values():
    # recorded with jax 0.10.2: sl.pad(jnp.arange(4.), -1., [(-1, 2, 1)])
    out = sl.pad(np.arange(4, dtype=F32), F32(-1), [(-1, 2, 1)])
    assert_close(out, np.array([-1, 1, -1, 2, -1, 3, -1, -1], F32))
    assert_close(sl.pad(np.zeros(0, F32), F32(-1), [(1, 2, 1)]), np.full(3, -1, F32))
    assert_close(sl.pad(F32(2), F32(1), []), F32(2))


def test_pad_errors():
    x = farr((5,))
    with pytest.raises(TypeError, match="pad operand and padding_value must be same dtype: got float32 and int32"):
        sl.pad(x, np.int32(0), [(1, 1, 0)])
    with pytest.raises(ValueError, match="interior padding in padding_config must be nonnegative"):
        sl.pad(x, F32(0), [(1, 1, -1)])
    with pytest.raises(ValueError, match="Dimension size after padding is not at least 0"):
        sl.pad(x, F32(0), [(-4, -4, 0)])
    with pytest.raises(ValueError, match="length of padding_config"):
        sl.pad(x, F32(0), [(1, 1, 0), (0, 0, 0)])


# ---------------------------------------------------------------------------------------------
# concatenate


@st.composite
def concat_cases(draw):
    shape = list(draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3)))
    dim = draw(st.integers(0, len(shape) - 1))
    n = draw(st.integers(1, 3))
    xs = []
    for _ in range(n):
        s = list(shape)
        s[dim] = draw(st.integers(0, 3))
        xs.append(draw(hnp.arrays(F32, tuple(s), elements=st.floats(-5, 5, width=32))))
    return xs, dim


@given(concat_cases())
def test_concatenate_matches_numpy_and_grads(case):
    xs, dim = case
    f = lambda *xs: sl.concatenate(xs, dim)  # noqa: E731
    ref = np.concatenate(xs, dim)
    assert_close(f(*xs), ref)
    assert_close(fjax.jit(f)(*xs), ref)
    check_grads(f, xs, order=2, modes=("fwd", "rev"))
    # batch the first operand at its last axis, leave the others unbatched
    b0 = np.stack([xs[0], xs[0] + 1], axis=xs[0].ndim)
    check_vmap(f, (xs[0].ndim,) + (None,) * (len(xs) - 1), [b0] + xs[1:])
    if len(xs) > 1:
        b1 = np.stack([xs[1], xs[1] * 2], axis=0)
        check_vmap(f, (xs[0].ndim, 0) + (None,) * (len(xs) - 2), [b0, b1] + xs[2:])


def test_concatenate_errors():
    x = farr((5,))
    with pytest.raises(TypeError, match="Cannot concatenate arrays with different numbers of dimensions"):
        sl.concatenate([x, farr((2, 2))], 0)
    with pytest.raises(TypeError, match="lax.concatenate requires arguments to have the same dtypes"):
        sl.concatenate([x, np.ones(2, np.int32)], 0)
    with pytest.raises(TypeError, match="shapes that differ in dimensions other than"):
        sl.concatenate([farr((2, 3)), farr((2, 4))], 0)
    with pytest.raises(TypeError, match="dimension out of bounds"):
        sl.concatenate([F32(1), F32(2)], 0)
    with pytest.raises(ValueError, match="non-empty"):
        sl.concatenate([], 0)


# ---------------------------------------------------------------------------------------------
# dynamic_slice / dynamic_update_slice


def clamp_starts(shape, sizes, starts):
    out = []
    for n, s, i in zip(shape, sizes, starts):
        i = i + n if i < 0 else i
        out.append(min(max(i, 0), n - s))
    return out


@st.composite
def dslice_cases(draw):
    shape = draw(small_shapes)
    sizes = tuple(draw(st.integers(0, n)) for n in shape)
    starts = tuple(draw(st.integers(-n - 2, n + 2)) for n in shape)
    x = draw(hnp.arrays(F32, shape, elements=st.floats(-5, 5, width=32)))
    return x, sizes, starts


@given(dslice_cases())
def test_dynamic_slice_matches_numpy_and_grads(case):
    x, sizes, starts = case
    cs = clamp_starts(x.shape, sizes, starts)
    ref = x[tuple(slice(c, c + s) for c, s in zip(cs, sizes))]
    idx = [np.int32(i) for i in starts]
    f = lambda x, *idx: sl.dynamic_slice(x, idx, sizes)  # noqa: E731
    assert_close(f(x, *idx), ref)
    assert_close(fjax.jit(f)(x, *idx), ref)
    check_grads(lambda x: f(x, *idx), (x,), order=2, modes=("fwd", "rev"))
    if x.ndim:
        xs = np.stack([x, x + 1, x * 2], axis=x.ndim)
        ids = [np.array([i, i + 1, -1], np.int32) for i in starts]
        check_vmap(f, (x.ndim,) + (None,) * x.ndim, [xs] + idx)  # operand only
        check_vmap(f, (None,) + (0,) * x.ndim, [x] + ids)  # indices only
        check_vmap(f, (0,) + (0,) + (None,) * (x.ndim - 1), [np.moveaxis(xs, -1, 0), ids[0]] + idx[1:])  # both


@given(dslice_cases(), st.data())
def test_dynamic_update_slice_matches_numpy_and_grads(case, data):
    x, sizes, starts = case
    upd = data.draw(hnp.arrays(F32, sizes, elements=st.floats(-5, 5, width=32)))
    cs = clamp_starts(x.shape, sizes, starts)
    ref = x.copy()
    ref[tuple(slice(c, c + s) for c, s in zip(cs, sizes))] = upd
    idx = [np.int32(i) for i in starts]
    f = lambda x, u, *idx: sl.dynamic_update_slice(x, u, idx)  # noqa: E731
    assert_close(f(x, upd, *idx), ref)
    assert_close(fjax.jit(f)(x, upd, *idx), ref)
    check_grads(lambda x, u: f(x, u, *idx), (x, upd), order=2, modes=("fwd", "rev"))
    if x.ndim:
        xs = np.stack([x, x + 1, x * 2], axis=x.ndim)
        us = np.stack([upd, upd - 1, upd * 3], axis=0)
        ids = [np.array([i, i + 1, -1], np.int32) for i in starts]
        rest = (None,) * x.ndim
        check_vmap(f, (x.ndim, None) + rest, [xs, upd] + idx)
        check_vmap(f, (None, 0) + rest, [x, us] + idx)
        check_vmap(f, (None, None) + (0,) * x.ndim, [x, upd] + ids)
        check_vmap(f, (x.ndim, 0, 0) + rest[1:], [xs, us, ids[0]] + idx[1:])


def test_dynamic_slice_jax_reference_values():
    # recorded with jax 0.10.2: negative starts count from the end, then starts are clamped
    x = np.arange(5, dtype=F32)
    assert_close(sl.dynamic_slice(x, (np.int32(4),), (2,)), np.array([3, 4], F32))
    assert_close(sl.dynamic_slice(x, (-3,), (2,)), np.array([2, 3], F32))
    assert_close(sl.dynamic_update_slice(x, np.array([9, 9], F32), (-1,)), np.array([0, 1, 2, 9, 9], F32))
    assert_close(sl.dynamic_slice(x, (-3,), (2,), allow_negative_indices=False), np.array([0, 1], F32))
    assert_close(sl.dynamic_slice(F32(2), (), ()), F32(2))
    assert_close(sl.dynamic_slice(x, np.array([1], np.int32), (2,)), np.array([1, 2], F32))


def test_dynamic_in_dim_helpers():
    x = farr((3, 4))
    assert_close(sl.dynamic_slice_in_dim(x, np.int32(1), 2, axis=1), x[:, 1:3])
    assert_close(sl.dynamic_slice_in_dim(x, -1, 1), x[-1:])
    assert_close(sl.dynamic_index_in_dim(x, np.int32(2), 1, keepdims=False), x[:, 2])
    assert_close(sl.dynamic_index_in_dim(x, 1), x[1:2])
    u = farr((3, 2), 5)
    ref = x.copy()
    ref[:, 2:4] = u
    assert_close(sl.dynamic_update_slice_in_dim(x, u, np.int32(3), axis=1), ref)
    ref = x.copy()
    row = farr((4,), 7)
    ref[1] = row
    assert_close(sl.dynamic_update_index_in_dim(x, row, np.int32(1), 0), ref)
    assert_close(sl.dynamic_update_index_in_dim(x, row[None], 1, 0), ref)
    # traced index under jit
    f = fjax.jit(lambda x, i: sl.dynamic_index_in_dim(x, i, 0, keepdims=False))
    assert_close(f(x, np.int32(-1)), x[-1])


def test_dynamic_slice_errors():
    x = farr((5,))
    with pytest.raises(TypeError, match="slice_sizes must be less than or equal to operand shape"):
        sl.dynamic_slice(x, (1,), (7,))
    with pytest.raises(TypeError, match="index arguments to dynamic_slice must be integers of the same type"):
        sl.dynamic_slice(x, (F32(1),), (2,))
    with pytest.raises(TypeError, match="update shape must be smaller than operand shape"):
        sl.dynamic_update_slice(x, farr((7,)), (1,))
    with pytest.raises(ValueError, match="Length of slice indices must match number of operand dimensions"):
        sl.dynamic_update_slice(farr((4,)), farr((2,)), (1, 1))
    with pytest.raises(TypeError, match="same dtype"):
        sl.dynamic_update_slice(x, np.ones(2, np.int32), (1,))


# ---------------------------------------------------------------------------------------------
# gather / scatter: XLA-semantics references (explicit loops)


def gather_ref(op, idx, dn, ss, mode, fill):
    shape, nd = op.shape, op.ndim
    batch_shape = idx.shape[:-1]
    out_rank = len(dn.offset_dims) + len(batch_shape)
    win = [d for d in range(nd) if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    bi, wi = iter(batch_shape), iter(ss[d] for d in win)
    out_shape = tuple(next(wi) if p in dn.offset_dims else next(bi) for p in range(out_rank))
    out = np.zeros(out_shape, op.dtype)
    for o in np.ndindex(*out_shape):
        g = tuple(o[p] for p in range(out_rank) if p not in dn.offset_dims)
        w = [o[p] for p in dn.offset_dims]
        start = [0] * nd
        for k, d in enumerate(dn.start_index_map):
            start[d] = int(idx[g + (k,)])
        for od, i in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
            start[od] = g[i]
        oob = any(not 0 <= start[d] <= shape[d] - ss[d] for d in dn.start_index_map)
        if mode == Mode.FILL_OR_DROP and oob:
            out[o] = fill
            continue
        full = [min(max(s, 0), shape[d] - ss[d]) for d, s in enumerate(start)]
        for d, k in zip(win, w):
            full[d] += k
        out[o] = op[tuple(full)]
    return out


def scatter_ref(op, idx, upd, dn, mode, kind):
    out = op.copy()
    shape, nd = op.shape, op.ndim
    win = [d for d in range(nd) if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    sizes = [1] * nd
    for d, u in zip(win, dn.update_window_dims):
        sizes[d] = upd.shape[u]
    scat = [i for i in range(upd.ndim) if i not in dn.update_window_dims]
    comb = {"set": lambda a, b: b, "add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[kind]
    for g in np.ndindex(*idx.shape[:-1]):
        start = [0] * nd
        for k, d in enumerate(dn.scatter_dims_to_operand_dims):
            start[d] = int(idx[g + (k,)])
        for od, i in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims):
            start[od] = g[i]
        if mode == Mode.CLIP:
            start = [min(max(s, 0), shape[d] - sizes[d]) for d, s in enumerate(start)]
        elif any(not 0 <= start[d] <= shape[d] - sizes[d] for d in range(nd)):
            continue
        for w in np.ndindex(*[sizes[d] for d in win]):
            ui = tuple(
                w[dn.update_window_dims.index(i)] if i in dn.update_window_dims else g[scat.index(i)]
                for i in range(upd.ndim)
            )
            full = list(start)
            for d, k in zip(win, w):
                full[d] += k
            out[tuple(full)] = comb(out[tuple(full)], upd[ui])
    return out


@st.composite
def gather_cases(draw, batching=True, in_bounds=False, min_side=0):
    """A random XLA gather: operand, indices, dimension numbers, slice sizes."""
    nd = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(min_side, 4), min_size=nd, max_size=nd)))
    nb = draw(st.integers(0, 2))
    batch_shape = list(draw(st.lists(st.integers(0, 3), min_size=nb, max_size=nb)))
    obd, sibd = [], []
    if batching and nb:
        cand = [d for d in draw(st.permutations(range(nd))) if shape[d] >= 1]
        k = draw(st.integers(0, min(nb, len(cand))))
        obd = sorted(cand[:k])
        pos = draw(st.permutations(range(nb)))[:k]
        for o, i in zip(obd, pos):
            batch_shape[i] = shape[o]
            sibd.append(i)
    rest = [d for d in range(nd) if d not in obd]
    perm = draw(st.permutations(rest))
    sim = tuple(perm[: draw(st.integers(0, len(rest)))])
    collapsed = tuple(sorted(d for d in rest if shape[d] >= 1 and draw(st.booleans())))
    ss = tuple(1 if (d in collapsed or d in obd) else draw(st.integers(0, shape[d])) for d in range(nd))
    n_off = nd - len(collapsed) - len(obd)
    offset_dims = tuple(sorted(draw(st.permutations(range(n_off + nb)))[:n_off]))
    raw = draw(hnp.arrays(np.int32, tuple(batch_shape) + (len(sim),), elements=st.integers(0, 1000)))
    idx = np.zeros_like(raw)
    for k, d in enumerate(sim):
        if in_bounds:
            idx[..., k] = raw[..., k] % (shape[d] - ss[d] + 1)
        else:
            idx[..., k] = raw[..., k] % (shape[d] + 4) - 2
    op = draw(hnp.arrays(F32, shape, elements=st.floats(-5, 5, width=32)))
    dn = GDN(offset_dims, collapsed, sim, tuple(obd), tuple(sibd))
    return op, idx, dn, ss


def to_scatter(dn):
    return SDN(
        dn.offset_dims,
        dn.collapsed_slice_dims,
        dn.start_index_map,
        dn.operand_batching_dims,
        dn.start_indices_batching_dims,
    )


modes = st.sampled_from([Mode.CLIP, Mode.FILL_OR_DROP, Mode.PROMISE_IN_BOUNDS])


@given(gather_cases(), modes)
def test_gather_matches_reference(case, mode):
    op, idx, dn, ss = case
    f = lambda op, idx: sl.gather(op, idx, dn, ss, mode=mode, fill_value=-7.0)  # noqa: E731
    fill = -7.0 if mode == Mode.FILL_OR_DROP else None
    ref = gather_ref(op, idx, dn, ss, mode, fill)
    assert_close(f(op, idx), ref)
    assert_close(fjax.jit(f)(op, idx), ref)


@given(gather_cases(), st.sampled_from([Mode.CLIP, Mode.FILL_OR_DROP]))
def test_gather_grads(case, mode):
    op, idx, dn, ss = case
    check_grads(lambda op: sl.gather(op, idx, dn, ss, mode=mode, fill_value=0.0), (op,), order=2, modes=("fwd", "rev"))


@given(gather_cases(), modes, st.data())
def test_gather_vmap(case, mode, data):
    op, idx, dn, ss = case
    f = lambda op, idx: sl.gather(op, idx, dn, ss, mode=mode, fill_value=3.0)  # noqa: E731
    which = data.draw(st.sampled_from(["operand", "indices", "both"]))
    oax = data.draw(st.integers(0, op.ndim))
    iax = data.draw(st.integers(0, idx.ndim))
    ops = np.stack([op, op + 1], axis=oax)
    idxs = np.stack([idx, np.flip(idx, axis=tuple(range(idx.ndim - 1)))], axis=iax)
    if which == "operand":
        check_vmap(f, (oax, None), (ops, idx))
    elif which == "indices":
        check_vmap(f, (None, iax), (op, idxs))
    else:
        check_vmap(f, (oax, iax), (ops, idxs))


def test_gather_defaults_match_jax():
    # recorded with jax 0.10.2: lax.gather's mode=None is PROMISE_IN_BOUNDS (clamps on CPU);
    # mode='fill' fills with NaN / int min / uint max / True unless fill_value is given
    dn = GDN(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    i = np.array([[7]], np.int32)
    assert_close(sl.gather(np.arange(5, dtype=F32), i, dn, (1,)), np.array([4], F32))
    assert np.isnan(np.asarray(sl.gather(np.arange(5, dtype=F32), i, dn, (1,), mode="fill"))[0])
    assert_close(
        sl.gather(np.arange(5, dtype=np.int32), i, dn, (1,), mode="fill"), np.array([np.iinfo(np.int32).min], np.int32)
    )
    assert_close(sl.gather(np.arange(5, dtype=np.uint8), i, dn, (1,), mode="fill"), np.array([255], np.uint8))
    assert_close(sl.gather(np.zeros(5, np.bool_), i, dn, (1,), mode="fill"), np.array([True]))
    dn2 = GDN(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
    ii = np.array([[4], [3], [-1]], np.int32)
    x = np.arange(5, dtype=F32)
    got = np.asarray(sl.gather(x, ii, dn2, (2,), mode="fill"))
    assert np.isnan(got[[0, 2]]).all() and (got[1] == [3, 4]).all()
    assert_close(sl.gather(x, ii, dn2, (2,), mode="clip"), np.array([[3, 4], [3, 4], [0, 1]], F32))
    assert Mode.from_any(None) is Mode.FILL_OR_DROP
    assert Mode.from_any("drop") is Mode.FILL_OR_DROP and Mode.from_any("fill") is Mode.FILL_OR_DROP
    assert Mode.from_any("clip") is Mode.CLIP and Mode.from_any("promise_in_bounds") is Mode.PROMISE_IN_BOUNDS
    with pytest.raises(ValueError, match="Unknown gather mode"):
        Mode.from_any("wrap")


def test_gather_numpy_style_indexing():
    x = farr((4, 5, 3))
    i = np.array([[3, 0], [1, 1]], np.int32)
    j = np.array([[4, 2], [0, 1]], np.int32)
    # x[i]
    got = sl.gather(x, i[..., None], GDN((2, 3), (0,), (0,)), (1, 5, 3))
    assert_close(got, x[i])
    # x[:, j]
    got = sl.gather(x, j[..., None], GDN((0, 3), (1,), (1,)), (4, 1, 3))
    assert_close(got, x[:, j])
    # x[i, j] (advanced indices combined)
    got = sl.gather(x, np.stack([i, j], -1), GDN((2,), (0, 1), (0, 1)), (1, 1, 3))
    assert_close(got, x[i, j])
    # x[1:3, j] via a window of 2 along dim 0
    got = sl.gather(x, np.stack([np.ones_like(j), j], -1), GDN((0, 3), (1,), (0, 1)), (2, 1, 3))
    assert_close(got, x[1:3, j])


def test_gather_errors():
    x = farr((5,))
    dn = GDN(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    with pytest.raises(TypeError, match="Gather op can only collapse slice dims with bound 1, but bound is 2"):
        sl.gather(x, np.array([[1]], np.int32), dn, (2,))
    with pytest.raises(ValueError, match="indices must have an integer type"):  # JAX raises ValueError
        sl.gather(x, np.array([[1.0]], F32), dn, (1,))
    with pytest.raises(TypeError, match="start_index_map"):
        sl.gather(x, np.array([[1, 2]], np.int32), dn, (1,))
    with pytest.raises(
        TypeError, match=r"Slice size at index 0 in gather op is out of range, must be within \[0, 5 \+ 1\)"
    ):
        sl.gather(x, np.array([[1]], np.int32), GDN((1,), (), (0,)), (6,))
    with pytest.raises(TypeError, match="offset_dims"):
        sl.gather(x, np.array([[1]], np.int32), GDN((0, 1), (), (0,)), (2,))


@given(gather_cases(), st.sampled_from(["set", "add", "mul", "min", "max"]), modes)
def test_scatter_matches_reference(case, kind, mode):
    op, idx, gdn, ss = case
    dn = to_scatter(gdn)
    upd = gather_ref(op, idx, gdn, ss, Mode.CLIP, None) * F32(1.5) - F32(1)
    fn = scatter_fn(kind)
    f = lambda op, idx, upd: fn(op, idx, upd, dn, mode=mode)  # noqa: E731
    ref = scatter_ref(op, idx, upd, dn, mode, kind)
    assert_close(f(op, idx, upd), ref)
    assert_close(fjax.jit(f)(op, idx, upd), ref)


def scatter_fn(kind):
    return getattr(sl, "scatter" if kind == "set" else "scatter_" + kind)


@given(gather_cases(), st.sampled_from(["set", "add", "min", "max"]), st.sampled_from([Mode.CLIP, Mode.FILL_OR_DROP]))
def test_scatter_grads(case, kind, mode):
    op, idx, gdn, ss = case
    dn = to_scatter(gdn)
    upd_shape = gather_ref(op, idx, gdn, ss, Mode.CLIP, None).shape
    op = distinct(op.shape, 1)
    upd = distinct(upd_shape, 2, offset=0.25)
    fn = scatter_fn(kind)
    check_grads(lambda o, u: fn(o, idx, u, dn, mode=mode), (op, upd), order=2, modes=("fwd", "rev"))


@given(gather_cases(), st.sampled_from(["set", "add", "mul", "min", "max"]), st.data())
def test_scatter_vmap(case, kind, data):
    op, idx, gdn, ss = case
    dn = to_scatter(gdn)
    upd = gather_ref(op, idx, gdn, ss, Mode.CLIP, None) - F32(0.5)
    fn = scatter_fn(kind)
    mode = data.draw(modes)
    f = lambda o, i, u: fn(o, i, u, dn, mode=mode)  # noqa: E731
    batched = data.draw(st.sampled_from([(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (1, 0, 1), (0, 1, 1), (1, 1, 1)]))
    args, axes = [], []
    for a, b in zip((op, idx, upd), batched):
        if b:
            ax = data.draw(st.integers(0, a.ndim))
            other = np.flip(a, axis=tuple(range(a.ndim - 1))) if a is idx else a * 2 + 1
            args.append(np.stack([a, other.astype(a.dtype)], axis=ax))
            axes.append(ax)
        else:
            args.append(a)
            axes.append(None)
    check_vmap(f, tuple(axes), args)


def test_scatter_jax_reference_values():
    # recorded with jax 0.10.2: a window partly out of bounds is dropped whole (FILL_OR_DROP,
    # also the default); CLIP clamps the window start; with duplicate indices the last update wins
    dn = SDN(update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,))
    i = np.array([[4], [2], [-1]], np.int32)
    u = np.array([[1, 2], [3, 4], [5, 6]], F32)
    z = np.zeros(5, F32)
    assert_close(sl.scatter(z, i, u, dn), np.array([0, 0, 3, 4, 0], F32))
    assert_close(sl.scatter(z, i, u, dn, mode="clip"), np.array([5, 6, 3, 4, 2], F32))
    assert_close(sl.scatter_add(z, i, u, dn, mode="promise_in_bounds"), np.array([0, 0, 3, 4, 0], F32))
    dn1 = SDN((), (0,), (0,))
    dup = np.array([[1], [1]], np.int32)
    f = lambda u: sl.scatter(np.zeros(3, F32), dup, u, dn1)  # noqa: E731
    assert_close(f(np.array([1, 2], F32)), np.array([0, 2, 0], F32))
    g = fjax.grad(lambda u: lax.reduce_sum(f(u), (0,)))(np.array([1, 2], F32))
    assert_close(g, np.array([0, 1], F32))
    # scatter_max: ties between the operand and two updates share the gradient
    h = lambda o, u: lax.reduce_sum(sl.scatter_max(o, dup, u, dn1), (0,))  # noqa: E731
    go, gu = fjax.grad(h, (0, 1))(np.ones(3, F32), np.ones(2, F32))
    assert_close(go, np.array([1, 1 / 3, 1], F32))
    assert_close(gu, np.array([1 / 3, 1 / 3], F32))
    # scatter_add with duplicates agrees with np.add.at
    x = farr((6,))
    ii = np.array([0, 3, 3, 5, 0], np.int32)
    vals = farr((5,), 3)
    ref = x.copy()
    np.add.at(ref, ii, vals)
    assert_close(sl.scatter_add(x, ii[:, None], vals, dn1), ref)


def test_scatter_mul_grads():
    op = farr((4, 3))
    idx = np.array([[2], [0]], np.int32)
    upd = farr((2, 3), 4)
    dn = SDN((1,), (0,), (0,))
    check_grads(
        lambda o, u: sl.scatter_mul(o, idx, u, dn, unique_indices=True), (op, upd), order=2, modes=("fwd", "rev")
    )
    check_grads(
        lambda o: sl.scatter_mul(o, np.array([[2], [2]], np.int32), upd, dn), (op,), order=2, modes=("fwd", "rev")
    )
    with pytest.raises(NotImplementedError, match="scatter_mul gradients are only implemented if"):
        fjax.grad(lambda u: lax.reduce_sum(sl.scatter_mul(op, idx, u, dn), (0, 1)))(upd)


def test_scatter_errors():
    x = farr((5,))
    dn = SDN((), (0,), (0,))
    i = np.array([[1]], np.int32)
    with pytest.raises(TypeError, match=r"^lax.scatter requires arguments to have the same dtypes, got float32, int32"):
        sl.scatter_add(x, i, np.ones(1, np.int32), dn)
    with pytest.raises(TypeError, match="Bounds of the scatter dimensions of updates must be the same"):
        sl.scatter(x, i, farr((2,)), dn)
    with pytest.raises(TypeError, match="updates rank"):
        sl.scatter(x, i, farr((1, 1)), dn)
    with pytest.raises(ValueError, match="indices must have an integer type"):  # JAX raises ValueError
        sl.scatter_max(x, i.astype(F32), farr((1,)), dn)
    with pytest.raises(TypeError, match="update window sizes"):
        sl.scatter(x, i, farr((1, 6)), SDN((1,), (), (0,)))


@pytest.mark.parametrize("shape", [(0,), (0, 1), (0, 3), (1, 0), (2, 0, 3)])
def test_scatter_into_size0_dims(shape):
    """Recorded with jax 0.10.2: an inserted window dim (window size 1) may be 0 in the operand:
    ``x.at[i].op(v)`` with array indices is ``x`` (every update is out of bounds), in every mode,
    under jit, vmap and grad (of the operand); an update window dim larger than the operand's is
    still an error, and so is the gather of such a window (``x.at[i].get()``, the gradient of the
    updates when the indexed axis is 0)."""
    x = np.zeros(shape, F32)
    i = np.array([0, 1], np.int32)
    v = np.ones((2,) + shape[1:], F32)
    dn = SDN(tuple(range(1, len(shape))), (0,), (0,))
    for op in (sl.scatter, sl.scatter_add, sl.scatter_mul, sl.scatter_min, sl.scatter_max):
        for mode in ("fill", "clip", "promise_in_bounds"):
            assert_close(op(x, i[:, None], v, dn, mode=mode), x)
    xa = fjax.numpy.asarray(x)
    for method in ("set", "add", "mul", "min", "max"):
        assert_close(getattr(xa.at[i], method)(v), x)
        assert_close(fjax.jit(lambda x, i, v, m=method: getattr(x.at[i], m)(v))(xa, i, v), x)
    assert_close(fjax.vmap(lambda x: x.at[i].add(v))(np.stack([x, x])), np.stack([x, x]))
    assert_close(fjax.grad(lambda x: fjax.numpy.sum(x.at[i].add(v) * 2))(xa), x)
    if shape[0] == 0:
        msg = r"^Slice size at index 0 in gather op is out of range, must be within \[0, 0 \+ 1\), got 1\.$"
        with pytest.raises(TypeError, match=msg):
            xa.at[i].get()
        with pytest.raises(TypeError, match=msg):
            fjax.grad(lambda v: fjax.numpy.sum(xa.at[i].add(v)))(v)
        win = SDN(tuple(range(1, len(shape) + 1)), (), (0,))
        with pytest.raises(TypeError, match="update window sizes"):
            sl.scatter_add(x, i[:, None], v[:, None], win)
    else:  # the size-0 axis is a window dim: the gradient of the updates is empty too
        assert_close(fjax.grad(lambda v: fjax.numpy.sum(xa.at[i].add(v)))(v), np.zeros_like(v))


def test_primitive_names_and_params():
    names = [p.name for p in (sl.scatter_p, sl.scatter_add_p, sl.scatter_mul_p, sl.scatter_min_p, sl.scatter_max_p)]
    assert names == ["scatter", "scatter-add", "scatter-mul", "scatter-min", "scatter-max"]
    x = np.arange(5, dtype=F32)
    jaxpr = fjax.make_jaxpr(lambda x: sl.slice(x, (1,), (4,), (2,)))(x)
    assert "slice[" in str(jaxpr) and "strides=(2,)" in str(jaxpr)
    jaxpr = fjax.make_jaxpr(lambda x: sl.pad(x, F32(0), [(-1, 2, 1)]))(x)
    assert "pad[" in str(jaxpr) and "f32[10]" in str(jaxpr)
    jaxpr = fjax.make_jaxpr(lambda x: sl.gather(x, np.array([[1]], np.int32), GDN((), (0,), (0,)), (1,)))(x)
    assert "gather[" in str(jaxpr) and "PROMISE_IN_BOUNDS" in str(jaxpr)


def test_transforms_compose():
    """vmap of grad (transposes under batching), grad of vmap and jit of grad."""
    x = farr((4, 3))
    idx = np.array([[[1], [1], [3]], [[0], [2], [0]]], np.int32)  # two batches, with duplicates
    dn = SDN((1,), (0,), (0,))
    upd = farr((2, 3, 3), 2)

    def loss(o, i, u):
        return lax.reduce_sum(lax.mul(sl.scatter(o, i, u, dn), x), (0, 1))

    g = fjax.vmap(fjax.grad(loss, (0, 2)), in_axes=(None, 0, 0))(x, idx, upd)
    refs = [fjax.grad(loss, (0, 2))(x, idx[b], upd[b]) for b in range(2)]
    for k in range(2):
        assert_close(g[k], np.stack([np.asarray(r[k]) for r in refs]))
    gj = fjax.jit(fjax.grad(loss, (0, 2)))(x, idx[0], upd[0])
    assert_close(gj[1], refs[0][1])
    # duplicates: only the last update to a row gets a gradient
    assert_close(np.asarray(refs[0][1])[0], np.zeros(3, F32))

    # dynamic_slice with batched starts, differentiated through the gather it batches into
    def ds(x, i):
        return lax.reduce_sum(sl.dynamic_slice(x, (i, np.int32(1)), (2, 2)), (0, 1))

    starts = np.array([0, 2, 3, -1], np.int32)
    gv = fjax.vmap(fjax.grad(ds), in_axes=(None, 0))(x, starts)
    assert_close(gv, np.stack([np.asarray(fjax.grad(ds)(x, s)) for s in starts]))
    check_grads(lambda x: fjax.vmap(ds, in_axes=(None, 0))(x, starts), (x,), order=2, modes=("fwd", "rev"))
    gat = lambda x, i: sl.gather(x, i, GDN((), (0,), (0,)), (1,), mode="clip")  # noqa: E731
    check_grads(lambda x: fjax.vmap(gat, in_axes=(1, 1))(x, idx), (x,), order=2, modes=("fwd", "rev"))


def test_weak_type_and_dtypes_preserved():
    x = fjax.Array(np.arange(6, dtype=np.int32).reshape(2, 3), True)
    assert sl.slice(x, (0, 1), (2, 3)).weak_type
    y = sl.gather(np.arange(6, dtype=np.int16), np.array([[5], [9]], np.int32), GDN((), (0,), (0,)), (1,), mode="fill")
    assert y.dtype == np.int16 and np.asarray(y).tolist() == [5, np.iinfo(np.int16).min]
    b = sl.scatter_add(
        np.zeros(3, np.bool_), np.array([[0], [0]], np.int32), np.array([True, False]), SDN((), (0,), (0,))
    )
    assert np.asarray(b).tolist() == [True, False, False]
