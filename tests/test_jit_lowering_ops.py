"""Native lowering of the indexing primitives (slice, rev, pad, concatenate, dynamic_slice, the
pointwise gather forms) and the program's memory planning (buffer reuse across and within calls).

Every jitted function is module-level and fixed-shape (numba compiles are slow); each is checked
against eager evaluation and for running with no host step.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends import dispatch, kernel_ir
from fjax.backends.numba import program as numba_cpu
from fjax.config import config

pytestmark = pytest.mark.usefixtures("fresh_numba_cache")


RNG = np.random.default_rng(0)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _eager(f, *args):
    with fjax.disable_jit():
        return f(*args)


def _check(jf, *args, rtol=2e-6, native=True):
    got = jf(*args)
    want = _eager(jf.__wrapped__, *args)
    got_l, want_l = fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want)
    assert len(got_l) == len(want_l)
    for g, w in zip(got_l, want_l):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        if g.dtype.kind == "f":
            # absolute slack relative to the result's scale: an entry that cancels (a dot of terms
            # ~10 summing to ~1e-3) carries the float32 rounding of its terms, whatever the
            # summation order the GEMM picked (BLAS threads vary with the machine's load)
            finite = np.abs(w[np.isfinite(w)]) if w.size else w
            scale = max(1.0, float(finite.max())) if finite.size else 1.0
            np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6 * scale, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)
    if native:
        prog = dispatch.lower(jf.lower(*args).jaxpr)
        hosts = [s.op for s in prog.steps if isinstance(s, kernel_ir.HostCall)]
        assert not hosts, hosts
    return got


# ---------------------------------------------------------------------------------------------
# indexing primitives


@fjax.jit
def slices(x):
    a = lax.slice(x, (1, 0), (6, 7), (2, 3)) * 2.0
    b = lax.rev(x, (1,)) + 1.0
    c = lax.rev(x[1:, ::2].T, (0,)) * 3.0
    d = x[::-1, 2:5] - 1.0
    return a, b, c, d


@fjax.jit
def pads(x):
    a = jnp.pad(x, ((1, 2), (0, 1))) + 1.0
    b = lax.pad(x, np.float32(-1.5), ((1, -1, 1), (-2, 3, 2)))
    c = jnp.pad(x, ((1, 1), (2, 2)))[::2, 1:-1] * 1.0  # slice of pad
    d = jnp.pad(x[1:, ::-2], ((1, 1), (2, 2))) * 1.0  # pad of a slice view
    e = jnp.pad(jnp.pad(x, 1) * 2.0, 2) * 1.0
    f = jnp.pad(jnp.pad(x, 1), 2)  # pad of a padded view (materialized in between)
    return a, b, c, d, e, f


@fjax.jit
def pad_traced_value(x, v):
    return lax.pad(x, v, ((2, 1, 1), (0, 0, 0))) * 1.0


@fjax.jit
def concats(x, y):
    a = jnp.concatenate([x, x[:, ::-1] * 2.0, x[:, :1]], 1)
    b = jnp.sum(jnp.concatenate([x, -y], 0), axis=0)
    c = jnp.concatenate([x, jnp.zeros((x.shape[0], 0), x.dtype), y], 1)
    d = jnp.concatenate([jnp.ones((1, x.shape[1]), x.dtype), x], 0)  # a constant part
    return a, b, c, d


@fjax.jit
def dslice(x, i, j):
    return lax.dynamic_slice(x, (i, j), (2, 3)) + 1.0, lax.dynamic_slice(x, (i, 1), (x.shape[0], 2)) * 2.0


@fjax.jit
def gathers(x, labels):
    n = x.shape[0]
    a = x[jnp.arange(n), labels] * 2.0
    b = jnp.take_along_axis(x, labels[:, None], axis=1) + 1.0
    c = jnp.take_along_axis(x, labels[:, None], axis=1).T[::-1] + 1.0  # layout ops on a gather
    d = x[jnp.arange(n), labels - 2]  # negative indices wrap (jnp), others clip
    e = jnp.take_along_axis(x, (labels * 2 - 3)[:, None], axis=1)  # out of bounds: fill (nan)
    return a, b, c, d, e


def _logsoftmax(x):
    m = lax.stop_gradient(jnp.max(x, 1, keepdims=True))
    return x - m - jnp.log(jnp.sum(jnp.exp(x - m), 1, keepdims=True))


@fjax.jit
def xent(x, labels):
    return -jnp.mean(_logsoftmax(x)[jnp.arange(x.shape[0]), labels])


@fjax.jit
def slice_grads(x):
    def f(x):
        return jnp.sum(jnp.tanh(x[1:, ::2]) ** 2) + jnp.sum(jnp.concatenate([x, x[::-1]], 0) * 0.5)

    return fjax.grad(f)(x)


def test_slice_rev():
    _check(slices, f32(7, 8))


def test_pad():
    _check(pads, f32(5, 6))


def test_pad_traced_value():
    _check(pad_traced_value, f32(3, 4), np.float32(7.0))


def test_concatenate():
    _check(concats, f32(3, 5), f32(3, 5))


@pytest.mark.parametrize("i,j", [(0, 0), (1, 2), (3, 4), (-3, 1), (10, -10)])
def test_dynamic_slice(i, j):
    _check(dslice, f32(5, 6), np.int32(i), np.int32(j))


def test_gather_pointwise_forms():
    labels = np.array([1, 4, 0, 3, 2, 4], np.int32)
    _check(gathers, f32(6, 5), labels)


def test_gather_cross_entropy():
    _check(xent, f32(6, 5), np.array([1, 4, 0, 3, 2, 4], np.int32), rtol=1e-5)


def test_grad_of_slice_and_concatenate():
    _check(slice_grads, f32(5, 6), rtol=1e-5)


def test_indexing_views_fuse():
    """slice/rev/pad/concatenate/dynamic_slice/gather read their operand in place: one loop nest,
    no intermediate buffer."""
    x = f32(7, 8)
    for jf, args in ((slices, (x,)), (pads, (x[:5, :6],)), (gathers, (x[:6, :5], np.zeros(6, np.int32)))):
        prog = dispatch.lower(jf.lower(*args).jaxpr)
        for k in prog.steps:
            for nest in k.loop_nests():
                assert all(isinstance(s, (kernel_ir.Load, kernel_ir.Op, kernel_ir.Iota)) for s in nest.body)
    src = dispatch.source_for(pads.lower(x[:5, :6]).jaxpr)
    assert "min(max(" in src  # guarded loads clamp their index


# ---------------------------------------------------------------------------------------------
# memory planning


@fjax.jit
def mlp_like(x, w1, w2):
    h = jnp.tanh(x @ w1)
    g = jnp.tanh(h @ w2) * 2.0
    return jnp.sum(g * g), g.T @ h


@fjax.jit
def with_host(x):
    h = jnp.tanh(x) * 2.0
    s = jnp.cumsum(h, axis=1)  # host step: its output may alias its input
    return s, h + 1.0


def test_outputs_not_reused_across_calls():
    x, w1, w2 = f32(16, 12), f32(12, 12), f32(12, 12)
    first = mlp_like(x, w1, w2)
    keep = [np.array(a) for a in first]
    for _ in range(3):
        mlp_like(f32(16, 12), f32(12, 12), f32(12, 12))
    for a, k in zip(first, keep):
        np.testing.assert_array_equal(np.asarray(a), k)
    _check(mlp_like, x, w1, w2, rtol=1e-5)


def test_plan_shares_and_pools_intermediates():
    x, w1, w2 = f32(16, 12), f32(12, 12), f32(12, 12)
    src = dispatch.source_for(mlp_like.lower(x, w1, w2).jaxpr)
    prog_src = src.split("# ----")[0]
    assert "_pool.pop()" in prog_src and "_pool.append(_b)" in prog_src
    # the (16, 12) intermediates x@w1, tanh, h@w2 share slots; the outputs are fresh allocations
    ps = numba_cpu.ProgramSource(dispatch.lower(mlp_like.lower(x, w1, w2).jaxpr))
    allocs = [ln for ln in ps.lines if isinstance(ln, numba_cpu._Alloc)]
    pooled = [a for a in allocs if a.slot is not None]
    assert len(ps.slots) < len(pooled)
    assert all(a.slot is None for a in allocs if a.shape in ((), (12, 12)))


def test_host_inputs_not_pooled():
    x = f32(4, 6)
    r1 = with_host(x)
    keep = [np.array(a) for a in r1]
    with_host(f32(4, 6))
    for a, k in zip(r1, keep):
        np.testing.assert_array_equal(np.asarray(a), k)
    _check(with_host, x, rtol=1e-5, native=False)


def test_concurrent_calls_get_their_own_buffers():
    xs = [(f32(16, 12), f32(12, 12), f32(12, 12)) for _ in range(4)]
    want = [[np.asarray(a) for a in mlp_like(*a)] for a in xs]
    errors = []

    def work(k):
        for _ in range(30):
            got = mlp_like(*xs[k])
            for g, w in zip(got, want[k]):
                if not np.array_equal(np.asarray(g), w):
                    errors.append(k)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def _nest(index, src, dst):
    """A loop nest ``dst = src + 1`` over ``(4,)`` (IR built by hand)."""
    n = kernel_ir.LoopNest(index, (4,))
    n.body.append(kernel_ir.Load("v0", src, (0,), np.dtype(np.float32)))
    n.stores.append((dst, "v0"))
    return n


def test_plan_memory_unit():
    """Liveness on the IR (``memory.plan_memory``): a buffer's slot is reused only after its last
    use; buffers that reach the program's outputs or a host step (through a view or a variable) are
    never pooled."""
    from fjax import core
    from fjax.backends import memory

    f32a = core.ShapedArray((4,), np.dtype(np.float32))
    B = kernel_ir.Buf
    x = B("x", (4,), np.float32, -1, True)
    a, b, c, d = (B(n, (4,), np.float32, i, True) for i, n in enumerate("abcd"))
    r = B("r", (2, 2), np.float32, 3, True)
    k0 = kernel_ir.Kernel("k0", [x], [_nest(0, x, a), _nest(1, a, b), _nest(2, b, c)], [b, c], [])
    k0.stmts.append(kernel_ir.Reshape(3, r, c))  # r: a view of c
    k0.outputs = [b, r]
    k1 = kernel_ir.Kernel("k1", [B("p", (4,), np.float32, -1, True)], [], [], [])
    k1.stmts.append(_nest(0, k1.params[0], d))
    k1.outputs = [d]
    vx, vb, vr, vd, vh = (core.Var(f32a) for _ in range(5))
    host = kernel_ir.HostCall(fjax.lax.neg_p, {}, (f32a,), (f32a,))
    prog = kernel_ir.Program([k0, host, k1], [vx], [vd, vh], [([vx], [vb, vr]), ([vr], [vh]), ([vb], [vd])], [])
    plan = memory.plan_memory(prog)
    # a dies when c is allocated (c may take its slot), but c escapes through r into the host step;
    # b lives until k1 reads it; d is returned
    assert (0, "a") in plan.slot and (0, "b") in plan.slot and plan.slot[(0, "a")] != plan.slot[(0, "b")]
    assert (0, "c") not in plan.slot and (2, "d") not in plan.slot
    assert (0, "c") in plan.escaping and (2, "d") in plan.escaping
    assert len(plan.slots) == 2


def test_memory_plan_reuses_dead_buffers():
    """In a compiled program, a buffer dead before the next of its shape is allocated is reused."""
    from fjax.backends import memory, passes

    def f(x):
        y = jnp.sin(x) @ x  # a dot ends the fusion group: sin's output is a buffer
        z = jnp.cos(y) @ x
        return jnp.tanh(z) @ x

    x = np.ones((8, 8), np.float32)
    closed = fjax.make_jaxpr(f)(x)
    prog = dispatch.lower(closed)
    plan = memory.plan_memory(passes.schedule(prog, lambda n: False))
    assert len(plan.slots) < len(plan.slot), plan
    np.testing.assert_allclose(np.asarray(fjax.jit(f)(x)), np.asarray(f(x)), rtol=2e-5)


# ---------------------------------------------------------------------------------------------
# regressions (checked with fjax_lowering_strict: a lowering error must not hide behind the
# eager fallback)


@pytest.fixture
def _strict():
    old = config.fjax_lowering_strict
    config.update("fjax_lowering_strict", True)
    yield
    config.update("fjax_lowering_strict", old)


@fjax.jit
def scalar_indexed_loads(x, k):
    # 0-d loop nests whose loads are indexed (static slice, dynamic_slice, a mean mixed in):
    # the scalar kernel used to drop those loads and read undefined names
    return x[0] + x[k] + jnp.mean(x) * x[-1], x[k] * 2.0


@pytest.mark.parametrize("k", [0, 2, -1])
def test_scalar_nest_with_indexed_loads(_strict, k):
    _check(scalar_indexed_loads, f32(5), np.int32(k))


@pytest.mark.parametrize("k,want", [(7, 4), (-8, 0)])
def test_scalar_nest_dynamic_index_out_of_bounds(_strict, k, want):
    x = np.arange(5.0, dtype=np.float32)
    assert np.asarray(scalar_indexed_loads(x, np.int32(k))[1]) == np.float32(2.0 * want)


@fjax.jit
def concat_all_empty(x, y):
    return jnp.concatenate([x, y], 0) * 2.0, jnp.concatenate([x.reshape(0, 1), y.reshape(0, 1)], 1)


@fjax.jit
def concat_all_empty_grad(x, y):
    return fjax.grad(lambda a, b: jnp.sum(jnp.concatenate([a, b], 0)), (0, 1))(x, y)


def test_concatenate_of_only_empty_parts(_strict):
    _check(concat_all_empty, f32(0), f32(0))
    _check(concat_all_empty_grad, f32(0), f32(0), native=False)


def test_pooled_dot_outputs_of_other_rank():
    """A GEMM writes its pooled output buffer through its 2-d/3-d shape (matrix-vector and batched
    dots, whose IR buffers have another rank): regression for 'output array is not acceptable'."""

    def f(w, x):
        h = jnp.tanh(w @ x)  # (8,) from a (8, 4) x (4,) GEMM
        b = jnp.einsum("bij,bj->bi", jnp.stack([w, w * 2.0]), jnp.stack([x, x]))  # batched
        return jnp.sum(h * 2.0) + jnp.sum(jnp.sin(b))

    w = np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4)
    x = np.linspace(0, 1, 4, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(fjax.jit(f)(w, x)), np.asarray(f(w, x)), rtol=2e-5)
    g = fjax.jit(fjax.vmap(fjax.grad(f), in_axes=(None, 0)))(w, np.stack([x, x * 0.5]))
    want = fjax.vmap(fjax.grad(f), in_axes=(None, 0))(w, np.stack([x, x * 0.5]))
    np.testing.assert_allclose(np.asarray(g), np.asarray(want), rtol=2e-4, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# transposes: the loop nest runs the read-contiguous and write-contiguous axes in blocks


def _blocked(jf, *args) -> bool:
    return "in blocks" in jf.lower(*args).as_text(dialect="numba")


@fjax.jit
def transpose_affine(x):
    return x.T * 2 + 1


@fjax.jit
def swap_last(x):
    return jnp.swapaxes(x, -1, -2)


@fjax.jit
def transpose_plus_self(x):
    # two loads of one buffer, one transposed and one in order, and a broadcast row
    return x.T + x + x[0]


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize(
    "f, ref, shape",
    [
        # parallel: prange over the blocks of the read axis
        (transpose_affine, lambda x: x.T * x.dtype.type(2) + x.dtype.type(1), (1000, 1000)),
        # partial blocks on both axes
        (transpose_affine, lambda x: x.T * x.dtype.type(2) + x.dtype.type(1), (37, 129)),
        (swap_last, lambda x: np.swapaxes(x, -1, -2), (256, 64, 64)),  # parallel over the batch axis
        (swap_last, lambda x: np.swapaxes(x, -1, -2), (3, 70, 33)),
        (transpose_plus_self, lambda x: x.T + x + x[0], (72, 72)),
    ],
)
def test_transpose_blocks(f, ref, shape, dtype):
    x = (RNG.standard_normal(shape) * 100).astype(dtype)
    got, want = np.asarray(f(x)), ref(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert _blocked(f, x)


def test_transpose_blocks_only_across_axes():
    # contiguous elementwise work and small transposed axes keep their plain loops
    x = f32(64, 64)
    assert not _blocked(fjax.jit(lambda v: v * 2 + 1), x)
    assert not _blocked(fjax.jit(lambda v: v.T), f32(500, 8))


def test_outer_products_are_not_blocked():
    # a column broadcast along the write axis is no transpose: the rank-1 update of an RNN's
    # weight gradient (c + h[:, None] * d[None, :]) keeps its contiguous rows (blocking it made
    # the RNN gradient's backward scan 3x slower)
    c, h, d = f32(64, 64), f32(64), f32(64)
    outer = fjax.jit(lambda c, h, d: c + h[:, None] * d[None, :])
    assert not _blocked(outer, c, h, d)
    np.testing.assert_allclose(np.asarray(outer(c, h, d)), c + h[:, None] * d[None, :], rtol=1e-6)
    dot = fjax.jit(lambda c, h, d: c + jnp.outer(h, d))
    assert not _blocked(dot, c, h, d)
    # a transposed read beside the broadcast still blocks
    assert _blocked(fjax.jit(lambda c, h: c.T + h[:, None]), c, h)


def test_transpose_blocks_hypothesis():
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies

    @hyp.settings(max_examples=20, deadline=None, derandomize=True)
    @hyp.given(
        shape=st.lists(st.integers(1, 90), min_size=2, max_size=4),
        seed=st.integers(0, 2**31 - 1),
        dtype=st.sampled_from([np.float32, np.int32]),
        data=st.data(),
    )
    def check(shape, seed, dtype, data):
        perm = data.draw(st.permutations(range(len(shape))))
        x = (np.random.default_rng(seed).standard_normal(shape) * 100).astype(dtype)
        got = np.asarray(fjax.jit(lambda v: jnp.transpose(v, perm) * 3 - 2)(x))
        want = np.transpose(x, perm) * dtype(3) - dtype(2)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)

    check()


# ---------------------------------------------------------------------------------------------
# row reductions: the kernel keeps only the path of its (static) row length class


@pytest.mark.parametrize("nr", [0, 1, 5, 32, 33, 100, 700])
def test_row_reductions_both_length_classes(nr):
    from fjax.backends.numba.render import SHORT_ROWS

    x = RNG.standard_normal((7, nr)).astype(np.float32)
    f = fjax.jit(lambda x: (jnp.exp(x) * 0.5).sum(axis=-1))
    np.testing.assert_allclose(np.asarray(f(x)), (np.exp(x) * 0.5).sum(-1), rtol=1e-5, atol=1e-6)
    src = f.lower(x).as_text(dialect="numba")
    if "rows loop nest" in src:
        short = 0 < nr <= SHORT_ROWS
        assert ("rows of at most" in src) == short and ("rows of more than" in src) == (not short)


def test_one_body_two_row_classes_in_one_program():
    # the same fused body over rows of 10 and of 300: two kernels (one per class), both right
    a = RNG.standard_normal((6, 10)).astype(np.float32)
    b = RNG.standard_normal((6, 300)).astype(np.float32)
    f = fjax.jit(lambda a, b: (jnp.tanh(a).sum(-1), jnp.tanh(b).sum(-1)))
    ga, gb = f(a, b)
    np.testing.assert_allclose(np.asarray(ga), np.tanh(a).sum(-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(gb), np.tanh(b).sum(-1), rtol=1e-5, atol=1e-5)


def test_pad_of_a_broadcast_scalar_keeps_its_padding():
    # the view of a 0-d buffer has no index entry to carry pad's guard: it was dropped, so the
    # padded vector read the scalar everywhere (squeeze's transpose makes this pattern: the eager
    # scan gradient of x[1] * c + x[0] came out [6, 6, 8] instead of [1, 5, 2])
    @fjax.jit
    def f(b, e, c):
        i = lax.pad(lax.broadcast_in_dim(c, (1,), ()), np.float32(0), [(1, 1, 0)])
        j = lax.pad(lax.broadcast_in_dim(c * 2, (1, 1), ()), np.float32(-1), [(0, 2, 0), (1, 0, 0)])
        return b + i, e + c, j

    b, i, j = _check(f, np.zeros(3, np.float32), np.float32(0), np.float32(1.5))
    np.testing.assert_array_equal(b, [0.0, 1.5, 0.0])
    np.testing.assert_array_equal(j, [[-1, 3.0], [-1, -1], [-1, -1]])

    def g(x):
        return lax.scan(lambda c, _: (c * x[1] + x[0], c), x[2], None, length=2)[1][1]

    np.testing.assert_allclose(fjax.grad(g)(np.float32([3.0, 2.0, 5.0])), [1.0, 5.0, 2.0])


def test_a_nest_source_shared_by_two_dtypes_in_one_program():
    # the two expand_dims copies render to the same nest source with different signatures (uint8,
    # int16): each needs its overload installed; the second call hit the sealed dispatcher
    # ("No matching definition") unless another program had compiled that signature before
    @fjax.jit
    def f(a, b):
        ea = lax.expand_dims(lax.sort(a), (1,))
        x = lax.sort(b * lax.convert_element_type(lax.sort(ea[:, 0]), np.int16))
        return ea, lax.expand_dims(x, (1,))

    ea, ex = _check(f, np.array([3, 1, 2], np.uint8), np.array([-3, 1, 2], np.int16), native=False)
    np.testing.assert_array_equal(ea, [[1], [2], [3]])
    np.testing.assert_array_equal(ex, [[-3], [2], [6]])
