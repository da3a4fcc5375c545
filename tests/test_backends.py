"""The backend seam: lowering registrations beside primitives, the ``Backend`` interface and its
capabilities, the kernel IR printer (``jit(f).lower(...).as_text(dialect="ir")``), and the readable
generated numba source."""

from __future__ import annotations

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import core, lax
from fjax.backends import dispatch, kernel_ir, registry
from fjax.backends.backend import Backend, Capabilities
from fjax.backends.lowering import build_program

pytestmark = pytest.mark.usefixtures("fresh_numba_cache")


def _chain(x, w):
    return jnp.sum(jnp.tanh(x @ w) * 0.1 + 1e-3, axis=1), jnp.cumsum(x, axis=0)[1:3, ::2]


chain = fjax.jit(_chain)
X = np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)
W = np.linspace(0, 1, 30, dtype=np.float32).reshape(5, 6)


def test_every_lax_elementwise_rule_has_a_numba_rendering():
    ops = dispatch.get_backend("numba").capabilities.ops
    # (a rule may name the kernel IR op it computes: add_any renders as add)
    rendered = {registry.lowering_rule(n).op or n for n in registry.registered(registry.ELEMENTWISE)}
    missing = sorted(rendered - set(ops) - {"stop_gradient"})
    assert not missing
    assert registry.lowering_rule("reduce_max") == registry.LoweringRule(registry.REDUCTION, "max", None)
    assert registry.lowering_rule("cumsum") is None  # no rule: a host step


def test_register_lowering_validates():
    p = core.Primitive("fjax_test_op")
    with pytest.raises(ValueError, match="unknown kind"):
        registry.register_lowering(p, "fused")
    with pytest.raises(ValueError, match="monoid"):
        registry.register_lowering(p, registry.REDUCTION)
    with pytest.raises(ValueError, match="monoid"):
        registry.register_lowering(p, registry.ELEMENTWISE, monoid="sum")
    assert registry.lowering_rule("fjax_test_op") is None


def test_capabilities_decide_what_compiles():
    """The lowering asks only the backend's capabilities: without a rendering of ``tanh`` it
    becomes a host step; without host kernels a program of host steps alone is not compiled."""
    closed = chain.lower(X, W).jaxpr
    full = dispatch.lower(closed)
    assert not any(isinstance(s, kernel_ir.HostCall) and s.op == "tanh" for s in full.steps)
    ops = set(dispatch.get_backend().capabilities.ops) - {"tanh"}
    prog = build_program(closed, Capabilities(ops=frozenset(ops)))
    hosts = [s.op for s in prog.steps if isinstance(s, kernel_ir.HostCall)]
    assert hosts == ["tanh", "cumsum"]
    only_host = fjax.jit(lambda x: jnp.cumsum(x)).lower(X[0]).jaxpr
    assert build_program(only_host, Capabilities()) is None
    assert dispatch.lower(only_host) is not None  # numba has a compiled cumsum


def test_backend_interface():
    b = dispatch.get_backend("numba")
    assert isinstance(b, Backend) and b.name == "numba" and dispatch.get_backend() is b
    prog = dispatch.lower(chain.lower(X, W).jaxpr)
    fn = b.compile(prog)
    outs = fn(X, W)
    want = _chain(X, W)
    for o, w in zip(outs, want):
        np.testing.assert_allclose(o, np.asarray(w), rtol=1e-6)
    assert "def program(" in b.source(prog)
    with pytest.raises(NotImplementedError, match="no backend named 'tpu'"):
        dispatch.get_backend("tpu")
    assert dispatch.get_backend("cuda").name == "cuda"  # renders without cupy or a GPU
    with pytest.raises(NotImplementedError, match="does not implement compile"):
        Backend().compile(prog)


def test_ir_printer():
    text = chain.lower(X, W).as_text(dialect="ir")
    assert text.startswith("program(%0: f32[4,5], %1: f32[5,6]):")
    assert "dot(a0, a1)" in text
    assert "= tanh(v" in text and "reduce_sum" in text and "(accumulate in f64)" in text
    assert "const c0_f32: f32 = 0.1 (0x1.99999a0000000p-4)" in text
    assert "host (%" in text and "cumsum[axis=0 reverse=False](%0)" in text
    assert "load a0[i0 + 1, 2*i1]" in text  # the slice [1:3, ::2] is index arithmetic
    assert chain.lower(X, W).as_text(dialect="jaxpr") == str(chain.lower(X, W).jaxpr)
    with pytest.raises(ValueError, match="unknown dialect"):
        chain.lower(X, W).as_text(dialect="hlo")


def test_ir_printer_control_flow():
    f = fjax.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0 + x, x))
    text = f.lower(X[0]).as_text(dialect="ir")
    assert "compiled (%" in text and "= scan[" in text and "body:" in text
    assert text.count("program(") == 2


def test_generated_source_is_readable():
    src = chain.lower(X, W).as_text()
    assert "range(1)" not in src  # no one-chunk wrappers
    assert "# float32 0.1" in src and "# float32 0.001" in src  # decimal beside the exact hex
    assert "#   tanh -> f32[4,6]" in src  # the program lists the equations fused into each nest
    big = fjax.jit(lambda x: jnp.sum(jnp.exp(x)))
    assert "range(1)" not in big.lower(np.ones(10, np.float32)).as_text()
    np.testing.assert_allclose(float(big(X)), np.exp(X).sum(), rtol=1e-6)


def test_scheduling_is_an_ir_pass():
    """``passes.schedule`` marks the large nests parallel, in kernels and loop bodies alike; the
    renderer follows the mark."""
    from fjax.backends import passes

    x = np.ones(1 << 20, np.float32)
    f = fjax.jit(lambda v: lax.fori_loop(0, 2, lambda i, c: c + jnp.tanh(c) * jnp.exp(c), v))
    prog = dispatch.lower(f.lower(x).jaxpr)
    nests = list(passes.loop_nests(prog))
    assert nests and not any(n.parallel for n in nests)
    from fjax.backends.numba import program

    def render(p: kernel_ir.Program) -> str:  # the renderer alone, without the backend's passes
        return program.source_of(program.ProgramSource(p))

    passes.schedule(prog, lambda n: n.size >= 1 << 20)
    assert all(n.parallel for n in nests)
    assert " in prange(" in render(prog)
    assert " in prange(" not in render(passes.schedule(prog, lambda n: False))
    assert " parallel" in f.lower(x).as_text(dialect="ir")  # the numba backend's own schedule
