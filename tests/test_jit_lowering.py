"""``fjax.jit`` through the numba lowering: compiled results equal eager evaluation, fusion really
happens (checked on the kernel IR and the generated source), and compiled kernels are cached in
memory and on disk.

numba compiles are slow, so the jitted functions are module-level and shared by the tests, and
every shape is fixed per function; all kernels go to one temporary cache directory per run.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fjax
from fjax import lax
from fjax.backends import dispatch, kernel_ir
from fjax.backends.numba import disk_cache
from fjax.backends.numba import render as numba_render
from fjax.config import config

# ---------------------------------------------------------------------------------------------
# fixtures


pytestmark = pytest.mark.usefixtures("fresh_numba_cache")


RNG = np.random.default_rng(0)


def _eager(f, *args):
    with fjax.disable_jit() if hasattr(fjax, "disable_jit") else _NoJit():
        return f(*args)


class _NoJit:
    def __enter__(self):
        self.old = config.jax_disable_jit
        config.update("jax_disable_jit", True)

    def __exit__(self, *a):
        config.update("jax_disable_jit", self.old)


def _check(jf, *args, rtol=None, atol=0.0):
    """jit(f)(*args) == f(*args) evaluated eagerly, output by output."""
    got = jf(*args)
    want = _eager(jf.__wrapped__, *args)
    got_l, want_l = fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want)
    assert len(got_l) == len(want_l)
    for g, w in zip(got_l, want_l):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        if g.dtype.kind in "fc":
            tol = rtol if rtol is not None else (2e-6 if g.dtype == np.float32 else 1e-14)
            np.testing.assert_allclose(g, w, rtol=tol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)
    return got


def _kernel(jf, *args) -> kernel_ir.Kernel:
    prog = dispatch.lower(jf.lower(*args).jaxpr)
    ks = [s for s in prog.steps if isinstance(s, kernel_ir.Kernel)]
    assert len(ks) == 1
    return ks[0]


# ---------------------------------------------------------------------------------------------
# module-level jitted functions (compiled once per run)


def _chain(x):
    return lax.add(lax.mul(lax.tanh(x), lax.exp(lax.neg(lax.mul(x, x)))), lax.mul(lax.sin(x), 0.5))


@fjax.jit
def chain_sum(x):
    return lax.reduce_sum(_chain(x), (0,))


@fjax.jit
def many_unary(x):
    a = lax.add(lax.log(lax.abs(x)), lax.log1p(lax.abs(x)))
    b = lax.mul(lax.expm1(lax.mul(x, 0.1)), lax.logistic(x))
    c = lax.add(lax.cos(x), lax.erf(x))
    d = lax.add(lax.sqrt(lax.abs(x)), lax.integer_pow(x, 3))
    e = lax.sub(lax.floor(x), lax.round(x))
    return a, lax.add(b, c), lax.add(d, e), lax.sign(x), lax.is_finite(lax.div(1.0, x))


@fjax.jit
def bcast_bias(x, b):
    # x: (4, 5), b: (5,) -> relu(x + b) * 2
    bb = lax.broadcast_in_dim(b, (4, 5), (1,))
    return lax.mul(lax.max(lax.add(x, bb), 0.0), 2.0)


@fjax.jit
def bcast_col_and_scalar(x, c, s):
    # x: (3, 4), c: (3,), s: () -> x * c[:, None] - s
    cc = lax.broadcast_in_dim(c, (3, 4), (0,))
    return lax.sub(lax.mul(x, cc), s)


@fjax.jit
def reductions(x):
    # x: (3, 4, 5)
    return (
        lax.reduce_sum(x, (2,)),
        lax.reduce_sum(x, (0,)),
        lax.reduce_max(x, (1,)),
        lax.reduce_min(x, (0, 2)),
        lax.reduce_sum(lax.exp(x), (0, 1, 2)),
        lax.reduce_max(x, (0, 1, 2)),
    )


@fjax.jit
def softmax_rows(x):
    # x: (6, 7)
    m = lax.reduce_max(x, (1,))
    e = lax.exp(lax.sub(x, lax.broadcast_in_dim(m, (6, 7), (0,))))
    return lax.div(e, lax.broadcast_in_dim(lax.reduce_sum(e, (1,)), (6, 7), (0,)))


@fjax.jit
def mlp_layer(x, w, b):
    # x: (8, 16), w: (16, 4), b: (4,)
    y = lax.dot_general(x, w, (((1,), (0,)), ((), ())))
    return lax.max(lax.add(y, lax.broadcast_in_dim(b, (8, 4), (1,))), 0.0)


@fjax.jit
def dot_variants(a, b, c, d):
    # a: (5, 3), b: (5, 4): a.T @ b ; c: (2, 3, 4), d: (2, 4, 6): batched ; a @ a.T ; vector dot
    at_b = lax.dot_general(a, b, (((0,), (0,)), ((), ())))
    bat = lax.dot_general(c, d, (((2,), (1,)), ((0,), (0,))))
    aat = lax.dot_general(a, a, (((1,), (1,)), ((), ())))
    vv = lax.dot_general(lax.reshape(a, (15,)), lax.reshape(a, (15,)), (((0,), (0,)), ((), ())))
    # batch dim not leading on rhs: d' = (4, 2, 6)
    dt = lax.transpose(d, (1, 0, 2))
    bat2 = lax.dot_general(c, dt, (((2,), (0,)), ((0,), (1,))))
    return at_b, bat, aat, vv, bat2


@fjax.jit
def layout(x):
    # x: (2, 3, 4)
    t = lax.transpose(x, (2, 0, 1))  # (4, 2, 3)
    r = lax.reshape(x, (6, 4))
    r2 = lax.reshape(x, (4, 6), dimensions=(2, 0, 1))
    sq = lax.squeeze(lax.reshape(x, (1, 24)), (0,))
    return lax.add(t, 1.0), lax.mul(r, r), r2, lax.neg(sq), lax.exp(lax.transpose(lax.sin(x), (1, 2, 0)))


@fjax.jit
def zero_d(x, y):
    return lax.add(lax.mul(x, y), 1.0), lax.exp(x)


@fjax.jit
def size_zero(x):
    # x: (0, 3)
    return lax.exp(x), lax.reduce_sum(x, (0,)), lax.reduce_max(x, (0, 1))


@fjax.jit
def ints(a, b):
    # int32 arithmetic with wrap-around, C division semantics, shifts, comparisons
    return (
        lax.add(a, b),
        lax.mul(a, b),
        lax.div(a, b),
        lax.rem(a, b),
        lax.neg(a),
        lax.shift_left(a, lax.clamp(-1, b, 40)),
        lax.shift_right_arithmetic(a, lax.clamp(-1, b, 40)),
        lax.shift_right_logical(a, lax.clamp(-1, b, 40)),
        lax.max(a, b),
        lax.reduce_sum(a, (0,)),
        lax.select(lax.lt(a, b), a, b),
        lax.bitwise_xor(a, b),
        lax.sign(a),
        lax.integer_pow(a, 2),
    )


@fjax.jit
def bools(p, q, x):
    return (
        lax.bitwise_and(p, q),
        lax.bitwise_or(p, q),
        lax.bitwise_xor(p, q),
        lax.bitwise_not(p),
        lax.reduce_and(p, (0,)),
        lax.reduce_or(q, (0,)),
        lax.select(p, x, lax.neg(x)),
        lax.convert_element_type(p, np.float32),
        lax.convert_element_type(x, np.bool_),
    )


@fjax.jit
def converts(x):
    return (
        lax.convert_element_type(x, np.int32),
        lax.convert_element_type(x, np.uint8),
        lax.convert_element_type(x, np.float64),
        lax.convert_element_type(x, np.int16),
    )


@fjax.jit
def misc(x):
    # x: (4, 6) f32
    io = lax.broadcasted_iota(np.float32, (4, 6), 1)
    cl = lax.clamp(-0.5, x, 0.5)
    sel = lax.select_n(lax.gt(x, 0.0), lax.neg(x), lax.integer_pow(x, -2))
    return lax.add(io, cl), sel, lax.max(x, lax.div(0.0, lax.sub(x, x)))


@fjax.jit
def with_host_step(x):
    # argmax has no lowering rule: kernel, host call, kernel
    e = lax.exp(x)
    i = lax.argmax(e, 1, np.int32)
    return lax.add(lax.convert_element_type(i, np.float32), lax.reduce_sum(e, (1,)))


@fjax.jit
def nested(x):
    inner = fjax.jit(lambda y: lax.mul(lax.sin(y), 2.0))
    return lax.reduce_sum(lax.add(inner(x), 1.0), (0,))


def _chain_scalar(x):
    return lax.reduce_sum(_chain(x), (0,))


grad_chain = fjax.jit(fjax.grad(_chain_scalar))
value_and_grad_chain = fjax.jit(fjax.value_and_grad(_chain_scalar))

# ---------------------------------------------------------------------------------------------
# results equal eager evaluation


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_chain_sum_and_fused():
    x = f32(1000)
    _check(chain_sum, x, rtol=1e-5)
    k = _kernel(chain_sum, x)
    nests = k.loop_nests()
    assert len(nests) == 1, k
    assert [r.kind for r in nests[0].reductions] == ["sum"] and not nests[0].stores
    assert not [s for s in k.stmts if not isinstance(s, kernel_ir.LoopNest)]
    src = chain_sum.lower(x).as_text()
    assert src.count("_nest0(") == 1 and "_nest1" not in src
    # only the 0-d result, the per-chunk partial sums and the reduction tile: no temporaries
    assert src.count("np.empty(") <= 3
    for prim in ("tanh", "exp", "sin", "neg", "mul", "add", "reduce_sum"):
        assert f"# {prim}" in src


def test_many_unary():
    x = np.concatenate([f32(200) * 3, np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5], np.float32)])
    _check(many_unary, x, rtol=1e-5, atol=1e-6)
    assert len(_kernel(many_unary, x).loop_nests()) == 1


def test_broadcasting():
    _check(bcast_bias, f32(4, 5), f32(5))
    _check(bcast_col_and_scalar, f32(3, 4), f32(3), np.float32(0.25))
    k = _kernel(bcast_bias, f32(4, 5), f32(5))
    (nest,) = k.loop_nests()
    idx = sorted(ld.index for ld in nest.body if isinstance(ld, kernel_ir.Load))
    assert idx == [(0, 1), (1,)]  # the bias is read through index arithmetic, never expanded


def test_reductions():
    x = f32(3, 4, 5)
    _check(reductions, x, rtol=1e-5)
    xn = x.copy()
    xn[1, 2, 3] = np.nan
    got = [np.asarray(g) for g in reductions(xn)]
    assert np.isnan(got[2][1, 3]) and np.isnan(got[5]) and np.isnan(got[3][2])


def test_softmax_two_passes():
    x = f32(6, 7)
    _check(softmax_rows, x)
    assert len(_kernel(softmax_rows, x).loop_nests()) <= 3


def test_dot_general():
    _check(mlp_layer, f32(8, 16), f32(16, 4), f32(4), rtol=1e-5)
    k = _kernel(mlp_layer, f32(8, 16), f32(16, 4), f32(4))
    assert [type(s).__name__ for s in k.stmts] == ["Dot", "LoopNest"]
    _check(dot_variants, f32(5, 3), f32(5, 4), f32(2, 3, 4), f32(2, 4, 6), rtol=1e-5)
    src = dot_variants.lower(f32(5, 3), f32(5, 4), f32(2, 3, 4), f32(2, 4, 6)).as_text()
    assert "np.dot(" in src


def test_dot_float64(x64):
    a = RNG.standard_normal((7, 5))
    b = RNG.standard_normal((5, 3))
    f = fjax.jit(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))))
    _check(f, a, b)


def test_layout_ops():
    _check(layout, f32(2, 3, 4))
    k = _kernel(layout, f32(2, 3, 4))
    # the transpose of the input is index arithmetic (no copy): the loads read a0 permuted
    loads = [ld for n in k.loop_nests() for ld in n.body if isinstance(ld, kernel_ir.Load) and ld.buf.name == "a0"]
    assert any(ld.index not in ((), tuple(range(len(ld.index)))) for ld in loads)


def test_zero_d_and_size_zero():
    _check(zero_d, np.float32(1.5), np.float32(-2.0))
    x = np.zeros((0, 3), np.float32)
    got = _check(size_zero, x)
    assert float(got[2]) == -np.inf


def test_non_contiguous_inputs():
    base = f32(5, 4)
    xt = base.T  # a transposed view: (4, 5), not C-contiguous
    assert not xt.flags.c_contiguous
    _check(bcast_bias, xt, f32(5))
    # the compiled callable itself accepts strided numpy views
    fn = dispatch.compile_jaxpr(bcast_bias.lower(xt, f32(5)).jaxpr)
    b = f32(5)
    want = np.maximum(xt + b, 0) * 2
    np.testing.assert_allclose(np.asarray(fn(xt, b)[0]), want, rtol=1e-6)
    fn2 = dispatch.compile_jaxpr(layout.lower(f32(2, 3, 4)).jaxpr)
    x3 = f32(4, 3, 2).transpose(2, 1, 0)
    for g, w in zip(fn2(x3), layout(np.ascontiguousarray(x3))):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-6)


def test_int_dtypes():
    a = np.array([7, -7, 7, -7, 2**31 - 1, -(2**31), 0, 5, 13, -1], np.int32)
    b = np.array([2, 2, -2, -2, 1, -1, 0, 0, 3, 31], np.int32)
    _check(ints, a, b)


def test_bool_dtypes():
    p = np.array([True, False, True, False, True])
    q = np.array([True, True, False, False, False])
    x = np.array([0.0, 1.5, -2.0, np.nan, 3.0], np.float32)
    _check(bools, p, q, x)


def test_converts():
    x = np.array([0.5, -0.5, 1.7, -1.7, 300.0, -300.0, 1e10, -1e10, np.nan, np.inf, -np.inf, 65535.9], np.float32)
    _check(converts, x)


def test_misc_iota_clamp_select():
    x = f32(4, 6)
    x[0, 0] = 0.0
    _check(misc, x, rtol=1e-6)


def test_host_fallback(caplog):
    x = f32(3, 5)
    with caplog.at_level(logging.INFO, logger="fjax.lowering"):
        dispatch.lower(with_host_step.lower(x).jaxpr)
    assert any("argmax" in r.getMessage() for r in caplog.records)
    _check(with_host_step, x, rtol=1e-5)
    prog = dispatch.lower(with_host_step.lower(x).jaxpr)
    assert [type(s).__name__ for s in prog.steps] == ["Kernel", "HostCall", "Kernel"]
    # argmax along the contiguous axis runs its numpy impl (numba_ops has a compiled form for others)
    assert "# host: argmax" in with_host_step.lower(x).as_text()


def test_nothing_to_compile_returns_none():
    f = fjax.jit(lambda x: lax.cumlogsumexp(x, 0))  # no kernel and no compiled implementation
    x = f32(5)
    assert dispatch.compile_jaxpr(f.lower(x).jaxpr) is None
    np.testing.assert_allclose(np.asarray(f(x)), np.logaddexp.accumulate(x), rtol=1e-6)


def test_compiled_op_alone_is_compiled():
    f = fjax.jit(lambda x: lax.argmax(x, 0, np.int32))
    x = f32(5, 3)
    assert dispatch.compile_jaxpr(f.lower(x).jaxpr) is not None
    np.testing.assert_array_equal(np.asarray(f(x)), np.argmax(x, 0))


def test_nested_jit_inlined():
    x = f32(50)
    _check(nested, x, rtol=1e-5)
    assert len(_kernel(nested, x).loop_nests()) == 1


def test_grad_fused():
    x = f32(300)
    _check(grad_chain, x, rtol=1e-5, atol=1e-6)
    v, g = value_and_grad_chain(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(grad_chain(x)), rtol=1e-5, atol=1e-6)
    # jit(grad(f)): forward and backward elementwise work plus the sum fuse into one nest
    assert len(_kernel(grad_chain, x).loop_nests()) == 1


def test_grad_of_jit_runs_compiled():
    x = f32(300)
    g = fjax.grad(chain_sum)(x)
    want = _eager(fjax.grad(_chain_scalar), x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_float64(x64):
    x = RNG.standard_normal(64)
    f = fjax.jit(lambda x: lax.reduce_sum(_chain(x), (0,)))
    _check(f, x, rtol=1e-13)


# ---------------------------------------------------------------------------------------------
# caching


def test_memory_cache_hit():
    x = f32(1000)
    chain_sum(x)
    before = dict(dispatch._stats)
    chain_sum(x)
    chain_sum(x)
    assert dispatch._stats["compiles"] == before["compiles"]
    fn = dispatch.compile_jaxpr(chain_sum.lower(x).jaxpr)
    assert fn is dispatch.compile_jaxpr(chain_sum.lower(x).jaxpr)
    # the later calls ran that program: jit's fast path keeps it per signature once compiled (it
    # no longer looks it up in the compile cache on each call)
    assert any(e.run is fn for e in chain_sum._fast.values())
    assert "def program" in fn.__fjax_source__ and "def nest" in fn.__fjax_source__
    assert os.path.exists(fn.__fjax_path__)


_SUBPROCESS = textwrap.dedent("""
    import numpy as np, fjax
    from fjax import lax
    from fjax.backends import dispatch
    from numba.core.registry import cpu_target
    # count numba's target refreshes (its ~0.3 s first-use registry loading)
    ctx, refreshes = cpu_target.target_context, []
    refresh = ctx.refresh
    ctx.refresh = lambda: (refreshes.append(1), refresh())[1]
    fjax.config.update("fjax_jit_backend", "numba")
    f = fjax.jit(lambda x: lax.reduce_sum(lax.mul(lax.exp(x), 3.0), (0,)))
    x = np.arange(10, dtype=np.float32)
    r = f(x)
    # large enough for a prange kernel: loading it from the cache must bring up numba's threads
    g = fjax.jit(lambda y: lax.mul(lax.tanh(lax.sin(y)), 2.0))
    y = np.linspace(-3.0, 3.0, 1 << 20, dtype=np.float32)
    err = float(np.max(np.abs(np.asarray(g(y)) - np.tanh(np.sin(y)) * 2)))
    ks = []
    for h, a in ((f, x), (g, y)):
        fn = dispatch.compile_jaxpr(h.lower(a).jaxpr)
        ks += fn.__fjax_kernels__
    assert "prange" in fn.__fjax_source__
    # a compiled control-flow loop: typed by its first call, loaded from disk then
    s = fjax.jit(lambda c, xs: lax.scan(lambda c, x: (lax.tanh(c * 0.5 + x),) * 2, c, xs))
    c, xs = np.zeros(4, np.float32), np.linspace(0.0, 1.0, 12, dtype=np.float32).reshape(3, 4)
    want = c
    for row in xs:
        want = np.tanh(want * 0.5 + row)
    err = max(err, float(np.max(np.abs(np.asarray(s(c, xs)[0]) - want))))
    loop = dispatch.compile_jaxpr(s.lower(c, xs).jaxpr).__globals__["_loop0"]
    ks.append(loop)
    hits = sum(sum(k.stats.cache_hits.values()) for k in ks)
    misses = sum(sum(k.stats.cache_misses.values()) for k in ks)
    print(hits, misses, float(r), err, len(refreshes))
""")


def test_disk_cache_across_processes(tmp_path):
    env = dict(os.environ, FJAX_CACHE_DIR=str(tmp_path), FJAX_DISK_CACHE="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(fjax.__file__)), env.get("PYTHONPATH", "")])
    outs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", _SUBPROCESS], env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout.split())
    (h1, m1, r1, e1, n1), (h2, m2, r2, e2, n2) = outs
    assert (int(h1), int(m1)) == (0, 3)  # first process compiles
    assert (int(h2), int(m2)) == (3, 0)  # second loads the compiled kernels from disk
    assert float(r1) == float(r2) == pytest.approx(float(np.sum(np.exp(np.arange(10.0)) * 3)), rel=1e-5)
    assert float(e1) < 1e-5 and float(e2) < 1e-5
    assert int(n1) > 0  # compiling refreshes numba's registries ...
    assert int(n2) == 0  # ... loading cached kernels does not (numba_cache.load_cached)
    assert list((tmp_path / "kernels").glob("k_*.py"))


def test_no_disk_cache(tmp_path):
    config.update("fjax_disk_cache", False)
    try:
        f = fjax.jit(lambda x: lax.add(x, 2.0))
        x = f32(3)
        fn = dispatch.compile_jaxpr(f.lower(x).jaxpr)
        assert "cache=False" in fn.__fjax_source__
        np.testing.assert_allclose(np.asarray(f(x)), x + 2)
    finally:
        config.update("fjax_disk_cache", True)


def test_load_cached(tmp_path):
    """numba_cache.load_cached installs a kernel from numba's disk cache, and says False (the caller
    then compiles) when there is nothing on disk."""
    from numba import njit, types

    from fjax.backends.numba import warm_load as numba_cache

    sig = (types.float64,)
    assert not numba_cache.load_cached(njit(lambda a: a + 1.0), sig)  # cache=False: NullCache
    src = "from numba import njit\n@njit(cache=True)\ndef k(a):\n    return a + 1.0\n"
    fn = disk_cache.load_kernel(src + f"# {tmp_path}\n", "k")  # a source of its own: never compiled
    assert not numba_cache.load_cached(fn, sig)
    fn.compile(sig)  # ... and saves it to disk
    assert numba_cache.load_cached(fn, sig)  # already installed in this process
    disk_cache.clear_cache()
    again = disk_cache.load_kernel(src + f"# {tmp_path}\n", "k")  # a new dispatcher of the same file
    assert again is not fn and not again.signatures
    assert numba_cache.load_cached(again, sig)  # from disk
    assert sum(again.stats.cache_hits.values()) == 1 and not again.stats.cache_misses
    assert again(1.0) == 2.0


def test_runtime_version_covers_kernel_helpers(tmp_path, monkeypatch):
    """Kernels carry a hash of the backend modules they inline: editing any of them recompiles."""
    nb = tmp_path / "backends" / "numba"
    nb.mkdir(parents=True)
    (tmp_path / "interpreters").mkdir()
    files = [nb / "vmath.py", nb / "disk_cache.py", nb / "loops.py", tmp_path / "backends" / "lowering.py"]
    policy = [tmp_path / "backends" / "dispatch.py", tmp_path / "backends" / "tiering.py"]
    for f in [*files, tmp_path / "interpreters" / "ad.py", *policy]:
        f.write_text(f"# {f.name}\n")
    monkeypatch.setattr(disk_cache, "__file__", str(nb / "disk_cache.py"))
    v0 = disk_cache._runtime_version()
    (tmp_path / "interpreters" / "ad.py").write_text("# changed\n")  # kernels never use it
    assert disk_cache._runtime_version() == v0
    for f in policy:  # when and where programs compile, not what kernels are
        f.write_text("# changed\n")
        assert disk_cache._runtime_version() == v0
    for f in files:
        f.write_text("# changed\n")
        v1 = disk_cache._runtime_version()
        assert v1 != v0
        v0 = v1


def test_parallel_threshold_marks_large_nests():
    x = np.zeros(1 << 20, np.float32)
    k = _kernel(chain_sum, x)
    numba_render.annotate(k)
    assert k.loop_nests()[0].parallel
    k = _kernel(chain_sum, f32(1000))
    numba_render.annotate(k)
    assert not k.loop_nests()[0].parallel


def _ops(k: kernel_ir.Kernel, name: str) -> int:
    return sum(isinstance(s, kernel_ir.Op) and s.op == name for n in k.loop_nests() for s in n.body)


def test_identical_ops_share_one_value():
    """An elementwise op identical to one already in the nest (same op, arguments, params, dtypes)
    reuses its value: grad(grad(sin * cos)) traces sin and cos four times each (before: four
    ``vm.sin`` and four ``vm.cos`` calls in the kernel), now evaluated once, as in sin * cos itself."""
    import fjax.numpy as jnp

    def f(x):
        return jnp.sin(x) * jnp.cos(x)

    x = np.float32(0.7)
    d2 = fjax.jit(fjax.grad(fjax.grad(f)))
    jaxpr = str(d2.lower(x).jaxpr)
    assert jaxpr.count("sin ") >= 2 and jaxpr.count("cos ") >= 2  # duplicates in the traced program
    want = -2.0 * np.sin(2 * 0.7)  # (sin cos)'' = (sin(2x) / 2)'' = -2 sin(2x)
    np.testing.assert_allclose(float(_check(d2, x)), want, rtol=1e-5)
    src, ref = d2.lower(x).as_text(), fjax.jit(f).lower(x).as_text()
    assert src.count("vm.sin") == ref.count("vm.sin") >= 1
    assert src.count("vm.cos") == ref.count("vm.cos") >= 1
    k = _kernel(d2, x)
    assert _ops(k, "sin") == _ops(k, "cos") == 1
    # the same with grad(grad(sum(sin))) and over a vector: one sin per nest
    g2 = fjax.jit(fjax.grad(fjax.grad(lambda x: jnp.sum(jnp.sin(x)))))
    _check(g2, x)
    assert all(_ops(k, "sin") <= len(k.loop_nests()) for k in [_kernel(g2, x)])
    hvp = fjax.jit(lambda x, v: fjax.jvp(fjax.grad(lambda x: jnp.sum(jnp.sin(x) * jnp.cos(x))), (x,), (v,))[1])
    xs = f32(64)
    _check(hvp, xs, f32(64), rtol=1e-5, atol=1e-6)
    k = _kernel(hvp, xs, xs)
    assert _ops(k, "sin") == _ops(k, "cos") == len(k.loop_nests()) == 1


def test_identical_ops_differ_by_params_and_dtype():
    """Ops with other params, argument dtypes or result dtypes are not merged; iotas are shared."""

    def f(x):
        a = lax.integer_pow(x, 2) + lax.integer_pow(x, 3)
        b = lax.convert_element_type(lax.convert_element_type(x, np.int32), np.float32)
        c = lax.convert_element_type(lax.convert_element_type(x, np.int16), np.float32)
        i = lax.broadcasted_iota(np.int32, x.shape, 0)
        j = lax.broadcasted_iota(np.float32, x.shape, 0)
        return a + b + c + lax.convert_element_type(i + lax.broadcasted_iota(np.int32, x.shape, 0), np.float32) * j

    jf = fjax.jit(f)
    x = f32(50) * 100
    _check(jf, x, rtol=1e-6)
    k = _kernel(jf, x)
    assert _ops(k, "integer_pow") == 2
    assert _ops(k, "convert_element_type") == 5  # to i32, to i16, each back to f32, the iota sum
    assert sum(isinstance(s, kernel_ir.Iota) for n in k.loop_nests() for s in n.body) == 2  # i32 (shared), f32
