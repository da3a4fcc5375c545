"""Benchmark of loops that compile only in the forms fjax rewrites them into under ``jit``:

- ``vmap`` of a ``while_loop`` whose predicate is batched and whose carry is written one element
  per step (a scatter, or ``dynamic_update_slice``): the frozen members' carries are kept by
  dropping their writes instead of a select over the whole carry
  (``fjax/lax/control_flow/_while_inplace.py``), and the batched scatter is compiled in index
  form (``fjax/lax/_batching_dims.py``);
- a ``fori_loop`` whose body takes an ``argmax`` and a ``dynamic_slice`` (under ``vmap`` a
  gather with a window): rewritten into forms the compiled body supports (``fjax/lax/_body_forms.py``).

Before these rewrites each of these loops ran on the host primitive by primitive. fjax against
JAX side by side in one process (``_pairs.row``).

Run: ``python bench/bench_vmap_loops.py [--quick]`` (JAX is used when importable).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import fjax  # noqa: E402


def _workloads(jx: Any, size: int) -> dict[str, tuple[Callable, tuple]]:
    """name -> (jitted function, arguments) written against the JAX-like module ``jx``."""
    jnp, lax = jx.numpy, jx.lax

    def write_loop(kind: str) -> Callable:
        def f(step0, xs):
            def body(c):
                step, xs = c
                if kind == "scatter":
                    xs = xs.at[step].set(1.0)
                else:
                    xs = lax.dynamic_update_index_in_dim(xs, 1.0, step, 0)
                return step + 1, xs

            return lax.while_loop(lambda c: c[0] < c[1].size, body, (step0, xs))

        return jx.jit(jx.vmap(f))

    def window_loop(x, off):
        def body(i, acc):
            return acc + lax.dynamic_slice(x, (i + off,), (3,)).sum() + jnp.argmax(x)

        return lax.fori_loop(0, 1000, body, 0.0)

    steps0 = jnp.asarray(np.array([0, size // 2], np.int32))
    bufs = jnp.zeros((2, size), jnp.float32)
    xw = jnp.asarray(np.random.default_rng(0).standard_normal(2000).astype(np.float32))
    xwb = jnp.asarray(np.random.default_rng(1).standard_normal((4, 2000)).astype(np.float32))
    return {
        f"vmap(while) writing 1 of {size} elements per step: scatter": (write_loop("scatter"), (steps0, bufs)),
        f"vmap(while) writing 1 of {size} elements per step: dynamic_update_slice": (
            write_loop("dus"),
            (steps0, bufs),
        ),
        "fori_loop(1000) with argmax + dynamic_slice": (jx.jit(window_loop), (xw, jnp.int32(1))),
        "vmap(fori_loop(1000)) with argmax + dynamic_slice, batch 4": (
            jx.jit(jx.vmap(window_loop)),
            (xwb, jnp.arange(4, dtype=jnp.int32)),
        ),
    }


def run(quick: bool = False) -> list:
    from _pairs import jax_or_none, row  # noqa: PLC0415

    size = 20_000 if quick else 100_000
    ours = _workloads(fjax, size)
    jax = jax_or_none()
    theirs = _workloads(jax, size) if jax is not None else {}
    rows = []
    for name, (f, args) in ours.items():
        want = f(*args)
        jf = None
        if name in theirs:
            g, gargs = theirs[name]
            got = jax.block_until_ready(g(*gargs))
            for a, b in zip(jax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want)):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5)
            jf = lambda g=g, gargs=gargs: jax.block_until_ready(g(*gargs))  # noqa: E731
        rows.append(row(name, lambda f=f, args=args: f(*args), jf, quick, seconds=1.0))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    for r in run(args.quick):
        jx = f"{r.jax * 1e3:9.3f} ms" if r.jax is not None else "        -"
        ratio = f"{r.ratio:6.2f}" if r.ratio is not None else "     -"
        print(f"{r.name:<75} fjax {r.fjax * 1e3:9.3f} ms  JAX {jx}  fjax/JAX {ratio}")


if __name__ == "__main__":
    main()
