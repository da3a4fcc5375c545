"""Compile latency stays linear in the program (issue 17): structural checks, no timings.

- ``passes.split_nests`` cuts a long fused loop nest into pieces of bounded size, a repeated
  structure at whole periods, so that a chain of N alike steps compiles a bounded number of
  distinct kernels, each of bounded size, whatever N is; results are unchanged by the cut
  (intermediate stores, reductions, broadcast loads, constants that differ per step);
- each copy of a nest body in a kernel (the fast path and the exact rerun of sin/cos tiles) has
  names of its own: a name assigned in several places makes numba's SSA reconstruction quadratic.

The kernels are compiled once per module (a shared temporary cache directory); checks on
rendered sources use ``dispatch.source_for`` without compiling.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax.backends import dispatch, kernel_ir, passes
from fjax.backends.numba import render as numba_render

pytestmark = pytest.mark.usefixtures("fresh_numba_cache")

STEPS = 100  # 300 equations: sin, mul, add per step


def _sin_chain(x):
    for i in range(STEPS):
        x = jnp.sin(x) * 0.9 + float(i % 7)
    return x


def _np_sin_chain(x):
    for i in range(STEPS):
        x = np.sin(x) * np.float32(0.9) + np.float32(i % 7)
    return x


sin_chain = fjax.jit(_sin_chain)


def _prepared(jf, *args) -> kernel_ir.Program:
    prog = dispatch.lower(jf.lower(*args).jaxpr)
    return dispatch.get_backend().prepare(prog)


def _nest_sources(src: str) -> list[str]:
    """The loop-nest kernels of a program's generated source (``source_for``)."""
    return [part for part in src.split("# ---- ")[1:] if "loop nest" in part.split("\n", 1)[0]]


def test_long_chain_compiles_bounded_alike_kernels():
    x = np.linspace(-3, 3, 700).astype(np.float32)
    got = np.asarray(sin_chain(x))
    np.testing.assert_allclose(got, _np_sin_chain(x), rtol=2e-5, atol=2e-5)

    prog = _prepared(sin_chain, x)
    nests = list(passes.loop_nests(prog))
    budget, weight = numba_render.NEST_BUDGET, numba_render.compile_weight
    assert len(nests) > 1
    for n in nests:
        assert sum(weight(s) for s in n.body if isinstance(s, kernel_ir.Op)) <= budget
    # the pieces are cut at whole steps: all alike but the last (a remainder), one kernel each
    fn = dispatch.compile_jaxpr(sin_chain.lower(x).jaxpr)
    assert 1 <= len(fn.__fjax_kernels__) <= 2, len(fn.__fjax_kernels__)
    src = fn.__fjax_source__
    assert src.count("_nest0(") >= len(nests) - 1
    # the constants that differ per step are arguments, not baked into the kernel source
    assert "float.fromhex" not in "".join(_nest_sources(src))


def test_kernel_count_does_not_grow_with_chain_length():
    """Chains of 100 and 400 steps render the same distinct kernels: compile work is bounded by
    the structure, and the number of kernel calls grows linearly."""

    def chain(n):
        def f(x):
            for i in range(n):
                x = jnp.sin(x) * 0.9 + float(i % 7)
            return x

        return fjax.jit(f)

    x = np.zeros(64, np.float32)
    s100 = dispatch.source_for(chain(100).lower(x).jaxpr)
    s400 = dispatch.source_for(chain(400).lower(x).jaxpr)
    k100, k400 = set(_nest_sources(s100)), set(_nest_sources(s400))
    assert len(k100) <= 2 and len(k400) <= 2
    assert max(len(k) for k in k400) <= max(len(k) for k in k100) * 1.5
    calls100, calls400 = s100.count("    _nest"), s400.count("    _nest")
    assert 3.5 * calls100 <= calls400 <= 4.5 * calls100


def _mixed(x, b):
    # stores of intermediates used later, a broadcast bias, an iota, a row reduction at the end
    h = x
    outs = []
    for i in range(12):
        h = jnp.tanh(h * (1.0 + 0.1 * i) + b) - 0.5 * h
        if i % 4 == 3:
            outs.append(h)
    col = jnp.arange(x.shape[1], dtype=jnp.float32)
    return outs, jnp.sum(h * col + outs[0], axis=1)


mixed = fjax.jit(_mixed)


def test_split_keeps_results(monkeypatch):
    x = np.random.default_rng(0).standard_normal((5, 37)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal(37).astype(np.float32)
    with fjax.disable_jit():
        want = _mixed(x, b)
    whole = _prepared(mixed, x, b)
    monkeypatch.setattr(numba_render, "NEST_BUDGET", 9)
    cut = _prepared(mixed, x, b)
    assert len(list(passes.loop_nests(cut))) > len(list(passes.loop_nests(whole)))
    dispatch.clear_cache()
    got = mixed(x, b)
    for g, w in zip(fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)


def test_period_detection():
    def op(out, name, *args):
        return kernel_ir.Op(out, name, args, np.float32, (np.float32,) * len(args), {}, name)

    ops = [op("v0", "sin", "x")]
    for k in range(1, 30):
        ops.append(op(f"m{k}", "mul", f"v{k - 1}", "c"))
        ops.append(op(f"v{k}", "sin", f"m{k}"))
    assert passes._period(ops, 64) == 2
    irregular = [op(f"w{k}", ("sin", "exp", "mul")[k * k % 3], f"w{k - 1}" if k else "x") for k in range(20)]
    assert passes._period(irregular, 64) in (0, 3)


_ASSIGN = re.compile(r"^\s*(u\d+(?:_\d+)?|[sr]\d+(?:_\d+)?) = ", re.M)


def test_body_copies_assign_each_name_once():
    """The fast path and the exact rerun of a sin nest (and both row paths of a reduction) do not
    share local names."""
    x = np.zeros((4, 8), np.float32)
    f = fjax.jit(lambda x: jnp.sum(jnp.sin(x) * 2.0, axis=1))
    src = dispatch.source_for(f.lower(x).jaxpr)
    (nest,) = _nest_sources(src)
    names = _ASSIGN.findall(nest)
    assert names and len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert "vm.sin_call_f32" in nest and "vm.sin_fast_f32" in nest
