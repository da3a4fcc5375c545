"""The compiled host kernels of ``fjax.backends.numba.host_kernels`` / ``numba_conv`` (conv_general_dilated,
argmax/argmin, cumulative reductions, scatter-add, sort): ``jit`` on the numba backend against eager
evaluation (the primitives' numpy impls), over shapes and params including size-0 and edge values
(NaN, signed zeros, ties, out-of-bounds indices), and grad-of-jit of convolutions against eager grad.

Every jitted function multiplies its outputs by one so the program has a compiled kernel (a jaxpr of
host calls only is evaluated eagerly), and the ``used`` fixture checks that the kernel's builder
really supplied a compiled form.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.numba import conv as numba_conv
from fjax.backends.numba import host_kernels as numba_ops

pytestmark = pytest.mark.usefixtures("fresh_numba_cache")


@pytest.fixture(scope="module")
def _recorder():
    """Wraps every builder to record the primitives it supplied a compiled form for (and lets the
    conv kernel take the thin convolutions it leaves to the impl by default, to test them too)."""
    seen: set[str] = set()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(numba_conv, "_MIN_COLS", 0)
        for name, build in list(numba_ops.HOST_KERNELS.items()):

            def wrapped(eqn, build=build, name=name):
                k = build(eqn)
                if k is not None:
                    seen.add(name)
                return k

            mp.setitem(numba_ops.HOST_KERNELS, name, wrapped)
        yield seen


@pytest.fixture(scope="module")
def used(_recorder):
    """Names of the primitives whose builder returned a compiled form (``_check`` clears it)."""
    _SEEN[:] = [_recorder]
    return _recorder


_SEEN: list[set] = []


def _touch(y):
    if np.dtype(y.dtype) == np.bool_:
        return lax.bitwise_and(y, lax.full_like(y, True))
    return lax.mul(y, lax.full_like(y, 1))


def _eager(f, *args):
    with fjax.disable_jit():
        return f(*args)


def _check(f, *args, rtol=0.0, atol=0.0):
    """jit(f)(*args) against f evaluated eagerly, output by output (exact unless tolerances)."""
    for seen in _SEEN:
        seen.clear()
    got = fjax.tree_util.tree_leaves(fjax.jit(f)(*args))
    want = fjax.tree_util.tree_leaves(_eager(f, *args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        if rtol or atol:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)
            # signed zeros too
            assert np.array_equal(np.signbit(g), np.signbit(w)) if g.dtype.kind == "f" else True


# ---------------------------------------------------------------------------------------------
# convolution


@st.composite
def conv_cases(draw):
    nsp = draw(st.integers(1, 3) if draw(st.booleans()) else st.just(2))
    groups = draw(st.sampled_from(["none", "feature", "batch"]))
    gc = draw(st.integers(1, 3)) if groups != "none" else 1
    G, B = (gc, 1) if groups == "feature" else (1, gc) if groups == "batch" else (1, 1)
    N = B * draw(st.integers(0 if B == 1 else 1, 3))
    cg = draw(st.integers(0, 3) if G == 1 else st.integers(1, 3))
    C = G * cg
    O = G * B * draw(st.integers(1, 3))
    ks = [draw(st.integers(1, 3)) for _ in range(nsp)]
    sp = [draw(st.integers(0, 7) if nsp < 3 else st.integers(1, 4)) for _ in range(nsp)]
    strides = [draw(st.integers(1, 3)) for _ in range(nsp)]
    ld = [draw(st.integers(1, 2)) for _ in range(nsp)]
    rd = [draw(st.integers(1, 2)) for _ in range(nsp)]
    pads = []
    for n, d in zip(sp, ld):
        dn = 0 if n == 0 else (n - 1) * d + 1
        lo, hi = draw(st.integers(-1, 2)), draw(st.integers(-1, 2))
        if lo + hi < -dn:
            lo = hi = 0
        pads.append((lo, hi))
    lhs_spec = "".join(draw(st.permutations("NC" + "HWD"[:nsp])))
    rhs_spec = "".join(draw(st.permutations("OI" + "HWD"[:nsp])))
    out_spec = "".join(draw(st.permutations("NC" + "HWD"[:nsp])))
    # the k-th spatial dim of the params is the k-th spatial letter of the rhs spec
    letters = [c for c in rhs_spec if c not in "OI"]
    lhs_shape = tuple({"N": N, "C": C, **dict(zip(letters, sp))}[c] for c in lhs_spec)
    rhs_shape = tuple({"O": O, "I": cg if B == 1 else C, **dict(zip(letters, ks))}[c] for c in rhs_spec)
    params = dict(
        window_strides=strides,
        padding=pads,
        lhs_dilation=ld,
        rhs_dilation=rd,
        dimension_numbers=(lhs_spec, rhs_spec, out_spec),
        feature_group_count=G,
        batch_group_count=B,
    )
    return lhs_shape, rhs_shape, params


def _conv_args(lhs_shape, rhs_shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(lhs_shape).astype(dtype), rng.standard_normal(rhs_shape).astype(dtype)


@given(conv_cases())
def test_conv_matches_eager(used, case):
    lhs_shape, rhs_shape, params = case
    x, w = _conv_args(lhs_shape, rhs_shape, np.float32)
    _check(lambda x, w: _touch(lax.conv_general_dilated(x, w, **params)), x, w, rtol=1e-5, atol=1e-5)
    assert "conv_general_dilated" in used


def test_conv_blocks(used, monkeypatch):
    # patch rows in several blocks (and a last partial one), with feature groups
    monkeypatch.setattr(numba_conv, "_BLOCK_BYTES", 64)
    monkeypatch.setattr(numba_conv, "_MIN_BLOCK_ROWS", 7)
    x, w = _conv_args((3, 6, 5, 4), (3, 3, 2, 6), np.float32)
    params = dict(window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    _check(
        lambda x, w: _touch(lax.conv_general_dilated(x, w, feature_group_count=2, **params)), x, w, rtol=1e-5, atol=1e-5
    )
    assert "conv_general_dilated" in used


def test_conv_float64(x64, used):
    x, w = _conv_args((2, 9, 8, 3), (3, 2, 3, 4), np.float64)
    params = dict(window_strides=(2, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    _check(lambda x, w: _touch(lax.conv_general_dilated(x, w, **params)), x, w, rtol=1e-12, atol=1e-12)
    assert "conv_general_dilated" in used


def test_conv_thin_uses_impl(used, monkeypatch):
    monkeypatch.setattr(numba_conv, "_MIN_COLS", 16)
    x, w = _conv_args((2, 6, 6, 1), (3, 3, 1, 4), np.float32)
    f = lambda x, w: _touch(lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
    _check(f, x, w)
    assert "conv_general_dilated" not in used


def test_conv_int_uses_impl(used):
    x, w = np.arange(2 * 5 * 5 * 1, dtype=np.int32).reshape(2, 5, 5, 1), np.ones((3, 3, 1, 2), np.int32)
    f = lambda x, w: _touch(lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
    _check(f, x, w)
    assert "conv_general_dilated" not in used


@pytest.mark.parametrize(
    "lhs_shape,rhs_shape,kw",
    [
        # the digits CNN layers (NHWC), and strided / dilated / grouped variants whose transposes
        # use lhs_dilation, feature groups and batch groups
        ((4, 8, 8, 1), (3, 3, 1, 5), dict(window_strides=(1, 1), padding="SAME")),
        ((4, 8, 8, 6), (3, 3, 6, 4), dict(window_strides=(2, 2), padding="SAME")),
        ((3, 9, 7, 4), (3, 2, 4, 6), dict(window_strides=(2, 1), padding=((1, 0), (2, 1)), rhs_dilation=(1, 2))),
        ((3, 7, 7, 4), (3, 3, 2, 6), dict(window_strides=(1, 2), padding="VALID", feature_group_count=2)),
        ((2, 6, 5, 4), (2, 2, 4, 3), dict(window_strides=(1, 1), padding=((1, 1), (0, 1)), lhs_dilation=(2, 1))),
    ],
)
def test_conv_grad_of_jit(used, lhs_shape, rhs_shape, kw):
    x, w = _conv_args(lhs_shape, rhs_shape, np.float32, seed=1)
    g = np.random.default_rng(2).standard_normal(
        np.asarray(lax.conv_general_dilated(x, w, dimension_numbers=("NHWC", "HWIO", "NHWC"), **kw)).shape
    )
    g = g.astype(np.float32)

    def loss(x, w):
        y = lax.conv_general_dilated(x, w, dimension_numbers=("NHWC", "HWIO", "NHWC"), **kw)
        return jnp.sum(jnp.tanh(y) * g)

    gf = fjax.grad(loss, argnums=(0, 1))
    used.clear()
    got = fjax.jit(gf)(x, w)
    want = _eager(gf, x, w)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5)
    assert "conv_general_dilated" in used


# ---------------------------------------------------------------------------------------------
# argmax / argmin, cumulative reductions

_SPECIAL = [np.nan, -0.0, 0.0, 1.0, -1.0, np.inf, -np.inf, 2.0]


@st.composite
def arrays(draw, min_axis_size=0, dtypes=(np.float32, np.int32)):
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(0, 5)) for _ in range(nd))
    axis = draw(st.integers(0, nd - 1))
    if shape[axis] < min_axis_size:
        shape = shape[:axis] + (min_axis_size,) + shape[axis + 1 :]
    dt = np.dtype(draw(st.sampled_from(dtypes)))
    n = int(np.prod(shape))
    if dt.kind == "f":
        vals = draw(st.lists(st.sampled_from(_SPECIAL), min_size=n, max_size=n))
    else:
        vals = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
    return np.array(vals, dt).reshape(shape), axis


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(arrays(min_axis_size=1))
def test_argext_matches_eager(used, name, case):
    x, axis = case
    f = getattr(jnp, name)
    _check(lambda x: _touch(f(x, axis=axis)), x)
    assert (
        name in used
        or x.size // x.shape[axis] == 0
        or axis == x.ndim - 1
        or x.shape[axis + 1 :] == (1,) * (x.ndim - axis - 1)
    )


def test_argmax_contiguous_axis_uses_numpy(used):
    x = np.random.default_rng(0).standard_normal((3, 50)).astype(np.float32)
    x[1, 17] = np.nan
    _check(lambda x: _touch(jnp.argmax(x, axis=1)), x)
    assert "argmax" not in used


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin"])
@given(arrays(), st.booleans())
def test_cumulative_matches_eager(used, name, case, reverse):
    x, axis = case
    prim = getattr(lax, name)
    _check(lambda x: _touch(prim(x, axis=axis, reverse=reverse)), x)
    assert name in used


def test_cumsum_float_order_is_numpy():
    # a long float32 running sum: bit-identical to numpy's sequential accumulate
    x = np.random.default_rng(3).standard_normal((700, 3)).astype(np.float32)
    _check(lambda x: _touch(lax.cumsum(x, axis=0)), x)
    _check(lambda x: _touch(lax.cumsum(x, axis=0, reverse=True)), x)


# ---------------------------------------------------------------------------------------------
# scatter-add


@st.composite
def scatter_cases(draw):
    # n >= 1: x.at[i] on an empty operand axis fails in fjax's indexing itself (window larger than the axis)
    n = draw(st.integers(1, 6))
    d = draw(st.integers(0, 3))
    m = draw(st.integers(0, 8))
    idx = np.array(draw(st.lists(st.integers(-n - 2, n + 2), min_size=m, max_size=m)), np.int32)
    dt = np.dtype(draw(st.sampled_from([np.float32, np.int32])))
    rng = np.random.default_rng(draw(st.integers(0, 100)))
    x = rng.integers(-5, 5, (n, d)).astype(dt)
    v = rng.integers(-5, 5, (m, d)).astype(dt)
    return x, idx, v


@given(scatter_cases())
def test_scatter_add_at_matches_eager(used, case):
    x, idx, v = case
    _check(lambda x, i, v: _touch(jnp.asarray(x).at[i].add(v)), x, idx, v)
    if x.size and idx.size:
        assert "scatter-add" in used
    if x.size:
        _check(lambda x, i, v: _touch(jnp.asarray(x)[:, :1].at[i, 0].add(v[:, :1].sum(1))), x, idx, v)
        assert "scatter-add" in used or not idx.size


@given(scatter_cases())
def test_scatter_add_from_gather_transpose(used, case):
    x, idx, _ = case
    if x.dtype.kind != "f":
        return
    _check(fjax.grad(lambda x, i: jnp.sum(x[i] ** 2)), x, idx, rtol=1e-6)


def test_scatter_add_2d_indices_and_float64(x64, used):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 4, 3))
    i, j = rng.integers(-1, 6, 10), rng.integers(0, 4, 10)
    v = rng.standard_normal((10, 3))
    _check(lambda x, i, j, v: _touch(jnp.asarray(x).at[i, j].add(v)), x, i, j, v)
    _check(lambda x, i, j, v: _touch(jnp.asarray(x).at[i, :, 1].add(v[:, :1] * np.ones(4))), x, i, j, v)
    assert "scatter-add" in used


# ---------------------------------------------------------------------------------------------
# sort


@given(arrays(dtypes=(np.float32, np.int32, np.bool_)))
def test_sort_matches_eager(used, case):
    x, axis = case
    if x.dtype == np.bool_:
        x = x != 0
    _check(lambda x: _touch(jnp.sort(x, axis=axis)), x)
    assert "sort" in used or x.shape[axis] <= 1 or not x.size  # jnp.sort skips length-1 axes
    _check(lambda x: _touch(jnp.argsort(x, axis=-1)), x)
    assert "sort" in used or x.shape[-1] <= 1 or not x.size
    pos = np.arange(x.size, dtype=np.int32).reshape(x.shape)
    _check(lambda x, p: [_touch(y) for y in lax.sort((x, p), dimension=axis, num_keys=1)], x, pos)


# ---------------------------------------------------------------------------------------------
# installing the kernels' overloads ahead of the call (numba_cache.ensure_compiled)


def _host_dispatchers():
    """The numba host kernels, each with the positions of its input (read-only) arrays."""
    return {
        numba_conv._im2col: (0,),
        numba_ops._argext: (0,),
        numba_ops._cumulative: (0,),
        numba_ops._scatter_add: (1, 2),
    }


def _warm_start_program():
    """A jitted function using every numba host kernel (conv, argmax, cumsum, scatter-add; on a
    program input, read-only, and on computed values, writable), and its arguments."""

    def f(x, w, i, u):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        z = jnp.reshape(y, (y.shape[0], -1))
        outs = [jnp.argmax(z, axis=0), jnp.argmax(u, axis=0), jnp.cumsum(z, axis=0), jnp.cumsum(u, axis=0)]
        return [_touch(o) for o in outs + [z.at[i].add(1.0), jnp.asarray(u).at[i].add(z[0, :5])]]

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 5, 4)).astype(np.float32)
    w = rng.standard_normal((3, 3, 4, 8)).astype(np.float32)
    u = rng.standard_normal((2, 5)).astype(np.float32)
    return fjax.jit(f), (x, w, np.array([1, 0, 1], np.int32), u)


def test_host_kernels_called_with_installed_signature(used):
    """The builders install the overloads the kernels are then called with: inputs are passed
    read-only whether they are (read-only program inputs or writable computed values), so each kernel
    has one overload per dtype/rank, not a second specialization for the other writability."""
    f, args = _warm_start_program()
    before = {d: set(d.signatures) for d in _host_dispatchers()}
    out1 = [np.asarray(o) for o in f(*args)]
    out2 = [np.asarray(o) for o in _eager(f, *args)]
    assert {"conv_general_dilated", "argmax", "cumsum", "scatter-add"} <= used
    for a, b in zip(out1, out2):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    for d, inputs in _host_dispatchers().items():
        new = set(d.signatures) - before[d]
        assert len(new) <= 1, (d, new)
        for sig in d.signatures:
            assert not any(sig[k].mutable for k in inputs), (d, sig)


_WARM_START = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import fjax
    from numba.core.cpu import CPUContext
    import test_numba_ops as T
    # count numba's target refreshes (its ~0.3 s first-use registry loading)
    refreshes, refresh = [], CPUContext.refresh
    CPUContext.refresh = lambda self: (refreshes.append(1), refresh(self))[1]
    fjax.config.update("fjax_jit_backend", "numba")
    f, args = T._warm_start_program()
    outs = [np.asarray(o) for o in f(*args)]
    print(len(refreshes), " ".join(str(len(d.signatures)) for d in T._host_dispatchers()))
""")


def test_host_kernels_warm_start_without_refresh(tmp_path):
    """A new process with a warm cache loads the host kernels (and nests) without numba's refresh."""
    env = dict(os.environ, FJAX_CACHE_DIR=str(tmp_path), FJAX_DISK_CACHE="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(fjax.__file__)), env.get("PYTHONPATH", "")])
    outs = []
    for _ in range(2):
        p = subprocess.run(
            [sys.executable, "-c", _WARM_START, os.path.dirname(__file__)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout.split())
    assert int(outs[0][0]) > 0  # the first process compiles the nests (and refreshes)
    assert outs[1] == ["0", "1", "1", "1", "1"]  # the second loads everything, one overload per kernel
