"""Collectives over named axes (fjax.lax.parallel) under vmap(axis_name=), checked against numpy:
every member of the axis sees the numpy result of the collective over the stacked inputs."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.test_util import check_grads

RTOL = {np.float32: 1e-5, np.float64: 1e-12}


@st.composite
def stacked(draw, min_n=1, max_n=4, min_rank=0, max_rank=2):
    n = draw(st.integers(min_n, max_n))
    rank = draw(st.integers(min_rank, max_rank))
    shape = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    seed = draw(st.integers(0, 2**16))
    x = np.random.default_rng(seed).standard_normal((n, *shape)).astype(np.float32)
    return x


def vm(f, x):
    return np.asarray(fjax.vmap(f, axis_name="i")(x))


@given(stacked())
def test_psum_pmean_pmax_pmin(x):
    n = x.shape[0]
    for f, ref in [
        (lambda v: lax.psum(v, "i"), x.sum(0)),
        (lambda v: lax.pmean(v, "i"), x.mean(0)),
        (lambda v: lax.pmax(v, "i"), x.max(0)),
        (lambda v: lax.pmin(v, "i"), x.min(0)),
    ]:
        np.testing.assert_allclose(vm(f, x), np.broadcast_to(ref, x.shape), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(vm(lambda v: lax.axis_index("i"), x), np.arange(n, dtype=np.int32))
    assert fjax.vmap(lambda v: lax.psum(1, "i"), axis_name="i")(x).tolist() == [n] * n
    assert fjax.vmap(lambda v: v * 0 + lax.axis_size("i"), axis_name="i")(x).shape == x.shape


@given(stacked(min_rank=1), st.booleans(), st.integers(0, 1))
def test_all_gather(x, tiled, axis):
    r = x.ndim - 1  # the rank of one member's value
    axis = min(axis, r - 1) if tiled else min(axis, r)
    out = vm(lambda v: lax.all_gather(v, "i", axis=axis, tiled=tiled), x)
    ref = np.moveaxis(x, 0, axis)
    if tiled:
        s = list(ref.shape)
        s[axis : axis + 2] = [s[axis] * s[axis + 1]]
        ref = ref.reshape(s)
    np.testing.assert_array_equal(out, np.broadcast_to(ref, (x.shape[0],) + ref.shape))


@given(stacked(min_rank=1), st.booleans())
def test_psum_scatter(x, tiled):
    n = x.shape[0]
    k = 2 if tiled else 1
    rng = np.random.default_rng(0)
    y = rng.standard_normal((n, n * k) + x.shape[2:]).astype(np.float32)
    out = vm(lambda v: lax.psum_scatter(v, "i", scatter_dimension=0, tiled=tiled), y)
    s = y.sum(0)
    ref = s.reshape((n, k) + s.shape[1:]) if tiled else s
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@given(st.integers(1, 4), st.integers(1, 3), st.booleans(), st.integers(0, 2**16))
def test_all_to_all(n, m, tiled, seed):
    k = 2 if tiled else 1
    x = np.random.default_rng(seed).standard_normal((n, n * k, m)).astype(np.float32)
    out = vm(lambda v: lax.all_to_all(v, "i", 0, 1, tiled=tiled), x)
    # member i gets chunk i (along axis 0) of every member j, stacked (or concatenated) along axis 1
    for i in range(n):
        chunks = [x[j, i * k : (i + 1) * k] for j in range(n)]
        ref = np.concatenate(chunks, axis=1) if tiled else np.stack([c[0] for c in chunks], axis=0).T
        np.testing.assert_array_equal(out[i], ref)


@given(stacked(), st.data())
def test_ppermute_pshuffle(x, data):
    n = x.shape[0]
    perm = data.draw(st.permutations(range(n)))
    out = vm(lambda v: lax.pshuffle(v, "i", perm), x)
    np.testing.assert_array_equal(out, x[list(perm)])
    pairs = [(s, d) for s, d in enumerate(perm) if s % 2 == 0]  # a partial permutation
    out = vm(lambda v: lax.ppermute(v, "i", pairs), x)
    ref = np.zeros_like(x)
    for s, d in pairs:
        ref[d] = x[s]
    np.testing.assert_array_equal(out, ref)


def test_pswapaxes():
    x = np.arange(3 * 3 * 2, dtype=np.float32).reshape(3, 3, 2)
    out = vm(lambda v: lax.pswapaxes(v, "i", 0), x)
    np.testing.assert_array_equal(out, np.swapaxes(x, 0, 1))


def test_nested_names_and_tuple_axes():
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)

    def f(v):
        return lax.psum(v, ("i", "j")), lax.psum(v, "j"), lax.axis_index(("i", "j")), lax.all_gather(v, ("i", "j"))

    s_ij, s_j, idx, g = fjax.vmap(fjax.vmap(f, axis_name="j"), axis_name="i")(x)
    np.testing.assert_allclose(s_ij, np.broadcast_to(x.sum((0, 1)), x.shape), rtol=1e-5)
    np.testing.assert_allclose(s_j, np.broadcast_to(x.sum(1, keepdims=True), x.shape), rtol=1e-5)
    np.testing.assert_array_equal(idx, np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(g[1, 2], x.reshape(6, 4))
    # an unnamed inner vmap batches the collective per example
    out = fjax.vmap(fjax.vmap(lambda v: lax.psum(v, "i")), axis_name="i")(x)
    np.testing.assert_allclose(out, np.broadcast_to(x.sum(0), x.shape), rtol=1e-5)


def test_unbound_axis_name():
    with pytest.raises(NameError, match="unbound axis name: k"):
        fjax.vmap(lambda v: lax.psum(v, "k"), axis_name="i")(jnp.ones(3))
    with pytest.raises(NameError, match="unbound axis name"):
        lax.axis_index("i")
    with pytest.raises(NotImplementedError, match="positional"):
        fjax.vmap(lambda v: lax.all_gather(v, 0), axis_name="i")(jnp.ones((3, 2)))
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        fjax.vmap(lambda v: lax.psum_scatter(v, "i", axis_index_groups=[[0, 1]]), axis_name="i")(jnp.ones((2, 2)))
    with pytest.raises(ValueError, match="cover all indices exactly once"):
        fjax.vmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1]]), axis_name="i")(jnp.ones(3))


# module-level jitted functions: compiled once for the whole module
_jit_psum = fjax.jit(fjax.vmap(lambda v: lax.psum(jnp.sin(v), "i") * v, axis_name="i"))
_inner_jit = fjax.jit(lambda v: lax.pmean(v, "i") + lax.axis_index("i"))


def test_under_jit():
    x = np.random.default_rng(2).standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(_jit_psum(x), np.sin(x).sum(0) * x, rtol=1e-5)
    out = fjax.vmap(_inner_jit, axis_name="i")(x)
    np.testing.assert_allclose(out, x.mean(0) + np.arange(4)[:, None], rtol=1e-5)
    # a jitted function whose inputs are all unmapped still sees the axis
    idx = fjax.vmap(lambda v: fjax.jit(lambda: lax.axis_index("i"))(), axis_name="i")(x)
    np.testing.assert_array_equal(idx, np.arange(4))
    # the same jitted function under axes of different sizes retraces (all_gather's shape)
    g = fjax.jit(lambda v: lax.all_gather(v, "i"))
    assert fjax.vmap(g, axis_name="i")(x).shape == (4, 4, 3)
    assert fjax.vmap(g, axis_name="i")(x[:2]).shape == (2, 2, 3)


def test_scan_cond_while():
    x = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)

    def f(v):
        def body(c, e):
            return c + lax.psum(e, "i"), lax.pmax(e, "i")

        c, ys = lax.scan(body, 0.0, v)
        b = lax.cond(lax.axis_index("i") == 0, lambda: lax.psum(v[0], "i"), lambda: -v[0])
        w = lax.while_loop(lambda k: k < lax.psum(1, "i"), lambda k: k + 1, 0)
        return c, ys, b, w

    c, ys, b, w = fjax.vmap(f, axis_name="i")(x)
    np.testing.assert_allclose(c, np.full(3, x.sum()), rtol=1e-5)
    np.testing.assert_allclose(ys, np.broadcast_to(x.max(0), x.shape))
    np.testing.assert_allclose(b, [x[:, 0].sum(), -x[1, 0], -x[2, 0]], rtol=1e-5)
    np.testing.assert_array_equal(w, [3, 3, 3])


def test_grads(x64):
    x = np.random.default_rng(4).standard_normal((3, 4))

    # reverse mode through vmap: the gradient of a function of the whole stacked input
    def total(x):
        y = fjax.vmap(
            lambda v: jnp.sin(v) * lax.psum(v**2, "i") + lax.all_gather(v, "i", tiled=True)[:4], axis_name="i"
        )(x)
        return y

    check_grads(total, (x,), order=2, modes=("fwd", "rev"), rtol=1e-5, atol=1e-5)

    def mixed(x):
        f = lambda v: (
            lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)]) * lax.pmean(v, "i")
            + lax.psum_scatter(jnp.outer(jnp.ones(3), v), "i")
        )
        return fjax.vmap(f, axis_name="i")(x)

    check_grads(mixed, (x,), order=1, modes=("fwd", "rev"), rtol=1e-5, atol=1e-5)
    x6 = np.random.default_rng(5).standard_normal((3, 6))
    a2a = lambda x: fjax.vmap(lambda v: lax.all_to_all(v.reshape(3, 2), "i", 0, 1) * v[0], axis_name="i")(x)
    check_grads(a2a, (x6,), order=1, modes=("fwd", "rev"), rtol=1e-5, atol=1e-5)
    check_grads(lambda x: fjax.vmap(lambda v: lax.pmax(v, "i") * v, axis_name="i")(x), (x,), order=1)
    # per-example gradients inside the named vmap: psum's transpose is psum
    g = fjax.vmap(fjax.grad(lambda v: jnp.sum(lax.psum(v, "i") ** 2)), axis_name="i")(x)
    np.testing.assert_allclose(g, np.broadcast_to(2 * 3 * x.sum(0), x.shape), rtol=1e-10)


def test_vmap_spmd_axis_name_accepted():
    out = fjax.vmap(lambda v: lax.psum(v, "i"), axis_name="i", spmd_axis_name="data")(jnp.arange(3.0))
    np.testing.assert_allclose(out, [3.0, 3.0, 3.0])


@given(st.integers(0, 2**16))
def test_positional_axes_and_tuple_names(seed):
    # psum/pmean/pmax/pmin over positional axes (the operand's own) mixed with names
    x = np.random.default_rng(seed).standard_normal((2, 3, 12, 2)).astype(np.float32)
    vv = lambda f: fjax.vmap(fjax.vmap(f, axis_name="j"), axis_name="i")  # noqa: E731
    np.testing.assert_allclose(
        vv(lambda v: lax.psum(v, ("i", 0)))(x), np.broadcast_to(x.sum((0, 2)), (2, 3, 2)), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(
        vv(lambda v: lax.pmean(v, (1, "j")))(x),
        np.broadcast_to(x.mean((1, 3))[:, None], (2, 3, 12)),
        rtol=1e-5,
        atol=1e-6,
    )
    np.testing.assert_array_equal(
        vv(lambda v: lax.pmax(v, ("i", "j", -1)))(x), np.broadcast_to(x.max((0, 1, 3)), (2, 3, 12))
    )
    np.testing.assert_array_equal(lax.pmin(x, (0, 2)), x.min((0, 2)))
    flat = x.reshape(6, 12, 2)  # members numbered (i, j) with i major
    # psum_scatter over both names: member (a, b) keeps block a*3+b of the sum
    out = vv(lambda v: lax.psum_scatter(v, ("i", "j"), tiled=True))(x).reshape(6, 2, 2)
    np.testing.assert_allclose(out, flat.sum(0).reshape(6, 2, 2), rtol=1e-5, atol=1e-5)
    out = vv(lambda v: lax.psum_scatter(v[:6], ("i", "j")))(x).reshape(6, 2)
    np.testing.assert_allclose(out, flat[:, :6].sum(0), rtol=1e-5, atol=1e-5)
    # ppermute over both names
    perm = [(0, 5), (5, 2), (2, 0), (1, 3)]
    ref = np.zeros_like(flat)
    for src, dst in perm:
        ref[dst] = flat[src]
    np.testing.assert_array_equal(vv(lambda v: lax.ppermute(v, ("i", "j"), perm))(x).reshape(6, 12, 2), ref)
    # all_to_all over both names = the single-axis all_to_all over the flattened members
    for tiled, sa, ca in [(True, 0, 1), (True, 0, 0), (False, 0, 1)]:
        v6 = x[:, :, :6] if not tiled else x
        one = lambda v: lax.all_to_all(v, ("i", "j"), sa, ca, tiled=tiled)  # noqa: E731
        flat_ref = fjax.vmap(lambda v: lax.all_to_all(v, "k", sa, ca, tiled=tiled), axis_name="k")(
            v6.reshape((6,) + v6.shape[2:])
        )
        np.testing.assert_array_equal(np.asarray(vv(one)(v6)).reshape(np.shape(flat_ref)), flat_ref)


def test_tuple_names_grads(x64):
    x = np.random.default_rng(6).standard_normal((2, 3, 12))
    vv = lambda f: fjax.vmap(fjax.vmap(f, axis_name="j"), axis_name="i")  # noqa: E731
    perm = [(0, 5), (5, 2), (2, 0), (1, 3)]
    check_grads(lambda v: vv(lambda u: lax.ppermute(u, ("i", "j"), perm) * u)(v), (x,), order=1, modes=("fwd", "rev"))
    check_grads(
        lambda v: vv(lambda u: lax.psum_scatter(u * u, ("i", "j"), tiled=True))(v), (x,), order=1, modes=("fwd", "rev")
    )
    check_grads(lambda v: vv(lambda u: lax.pmean(jnp.sin(u), ("i", 0)))(v), (x,), order=2, modes=("fwd", "rev"))
    check_grads(
        lambda v: vv(lambda u: lax.all_to_all(u * u, ("i", "j"), 0, 0, tiled=True))(v),
        (x,),
        order=1,
        modes=("fwd", "rev"),
    )


@given(stacked(min_n=4, max_n=4, max_rank=1), st.permutations(range(4)), st.booleans())
def test_axis_index_groups(x, order, tiled):
    groups = [list(order[:2]), list(order[2:])]
    group_of = {i: g for g in groups for i in g}
    for f, red in [
        (lambda v: lax.psum(v, "i", axis_index_groups=groups), lambda rows: rows.sum(0)),
        (lambda v: lax.pmean(v, "i", axis_index_groups=groups), lambda rows: rows.mean(0)),
        (lambda v: lax.pmax(v, "i", axis_index_groups=groups), lambda rows: rows.max(0)),
        (lambda v: lax.pmin(v, "i", axis_index_groups=groups), lambda rows: rows.min(0)),
        (lambda v: lax.all_gather(v, "i", axis_index_groups=groups), lambda rows: rows),
    ]:
        ref = np.stack([red(x[group_of[i]]) for i in range(4)])
        np.testing.assert_allclose(vm(f, x), ref, rtol=1e-5, atol=1e-6)
    if x.ndim == 2:
        out = vm(lambda v: lax.all_gather(v, "i", axis_index_groups=groups, axis=0, tiled=tiled), x)
        ref = np.stack([x[group_of[i]] for i in range(4)])
        np.testing.assert_array_equal(out, ref.reshape(4, -1) if tiled else ref)
    # the gradient of a grouped psum (a sum within each group)
    g = fjax.grad(
        lambda x: fjax.vmap(lambda v: jnp.sum(lax.psum(v * v, "i", axis_index_groups=groups) * v), axis_name="i")(
            x
        ).sum()
    )(x)
    sums = np.stack([x[group_of[i]].sum(0) for i in range(4)])
    sq = np.stack([(x[group_of[i]] ** 2).sum(0) for i in range(4)])
    np.testing.assert_allclose(g, sq + 2 * x * sums, rtol=1e-4, atol=1e-5)
