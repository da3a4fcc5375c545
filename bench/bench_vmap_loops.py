"""Benchmark of loops that compile only in the forms fjax rewrites them into under ``jit``:

- ``vmap`` of a ``while_loop`` whose predicate is batched and whose carry is written one element
  per step (a scatter, or ``dynamic_update_slice``): the frozen members' carries are kept by
  dropping their writes instead of a select over the whole carry
  (``fjax/lax/control_flow/_while_inplace.py``), and the batched scatter is compiled in index
  form (``fjax/lax/_batching_dims.py``);
- a ``fori_loop`` whose body takes an ``argmax`` and a ``dynamic_slice`` (under ``vmap`` a
  gather with a window): rewritten into forms the compiled body supports (``fjax/lax/_body_forms.py``);
- ``vmap`` of a loop whose body writes ``where(p, x.at[i].set(v), x)`` (also ``.add``,
  ``dynamic_update_slice``), ``p`` a per-member scalar, and equinox's ``while_loop`` (kind
  ``"checkpointed"``, with and without ``buffers=``) writing one element of a buffer per step: the
  select is folded into the update (``fjax/lax/_select_fold.py``), which then runs in place.

Before these rewrites each of these loops ran on the host primitive by primitive (or copied the
whole buffer every step). fjax against JAX side by side in one process (``_pairs.row``); the
equinox rows run in two child processes, one per library (equinox binds ``jax`` at import: fjax's
under ``python -m fjax.compat``), timed the same way.

Run: ``python bench/bench_vmap_loops.py [--quick]`` (JAX is used when importable; run it with
``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /tmp/jaxenv/bin/python`` for the JAX column).
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

    def where_loop(kind: str) -> Callable:
        # p: a per-member scalar; the step index is not batched (a window over the batch axis
        # under vmap for the scatters, a dynamic_update_slice for "dus")
        def f(p, xs):
            def body(c):
                i, xs = c
                if kind == "set":
                    new = xs.at[i].set(i.astype(xs.dtype))
                elif kind == "add":
                    new = xs.at[i].add(1.0)
                else:
                    new = lax.dynamic_update_slice(xs, jnp.full((4,), 2.0, xs.dtype), (i,))
                return i + 1, jnp.where(p, new, xs)

            return lax.while_loop(lambda c: c[0] < 1000, body, (jnp.int32(0), xs))

        return jx.jit(jx.vmap(f))

    steps0 = jnp.asarray(np.array([0, size // 2], np.int32))
    bufs = jnp.zeros((2, size), jnp.float32)
    xw = jnp.asarray(np.random.default_rng(0).standard_normal(2000).astype(np.float32))
    xwb = jnp.asarray(np.random.default_rng(1).standard_normal((4, 2000)).astype(np.float32))
    ps = jnp.asarray(np.array([True, False]))
    return {
        f"vmap(while 1000) where(p, x.at[i].set(v), x), x of {size}": (where_loop("set"), (ps, bufs)),
        f"vmap(while 1000) where(p, x.at[i].add(v), x), x of {size}": (where_loop("add"), (ps, bufs)),
        f"vmap(while 1000) where(p, dynamic_update_slice(x, u, i), x), x of {size}": (where_loop("dus"), (ps, bufs)),
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
    rows += _equinox_rows(size, quick)
    return rows


# ---- equinox's while_loop: one child process per library -----------------------------------

_NO_FOLD = [False]  # --without-select-fold: passed on to the children


def _eqx_worker(size: int, buffers: bool, quick: bool) -> None:
    """(In a child process) time equinox's checkpointed while_loop under vmap writing one element
    of a ``size``-element buffer per step (1000 steps for the longest member); prints seconds."""
    import time  # noqa: PLC0415

    import equinox as eqx  # noqa: PLC0415
    import jax  # noqa: PLC0415 - fjax's under ``python -m fjax.compat``, else JAX
    import jax.numpy as jnp  # noqa: PLC0415

    def f(n, buf):
        def body(c):
            i, b = c
            return i + 1, b.at[i].set(i.astype(b.dtype))

        return eqx.internal.while_loop(
            lambda c: c[0] < n,
            body,
            (jnp.int32(0), buf),
            max_steps=1000,
            kind="checkpointed",
            buffers=(lambda c: c[1]) if buffers else None,
        )

    g = jax.jit(jax.vmap(f))
    ns = jnp.asarray(np.array([500, 1000], np.int32))
    bufs = jnp.zeros((2, size), jnp.float32)
    for _ in range(4):  # (compile; fjax's tiered first calls)
        out = jax.block_until_ready(g(ns, bufs))
    ts = []
    for _ in range(5 if quick else 15):
        t0 = time.perf_counter()
        for _ in range(3):
            jax.block_until_ready(g(ns, bufs))
        ts.append((time.perf_counter() - t0) / 3)
    print(f"RESULT {sorted(ts)[len(ts) // 2]!r} {float(np.asarray(out[1]).sum())!r}")


def _equinox_rows(size: int, quick: bool) -> list:
    import importlib.util  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    from _pairs import Row, jax_or_none  # noqa: PLC0415

    if importlib.util.find_spec("equinox") is None:
        return []
    me = os.path.abspath(__file__)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(me)), *sys.path]))
    rows = []
    for buffers in (True, False):
        args = ["--eqx-worker", str(size)] + (["--buffers"] if buffers else []) + (["--quick"] if quick else [])
        args += ["--without-select-fold"] if _NO_FOLD[0] else []
        res = {}
        cmds = {"fjax": [sys.executable, "-m", "fjax.compat", me, *args]}
        if jax_or_none() is not None:
            cmds["jax"] = [sys.executable, me, *args]
        for k, cmd in cmds.items():
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
            line = next((ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")), None)
            if line is None:
                raise RuntimeError(f"equinox worker ({k}) failed:\n{out.stdout}\n{out.stderr}")
            res[k] = tuple(float(v) for v in line.split()[1:])
        if "jax" in res and res["jax"][1] != res["fjax"][1]:
            raise AssertionError(f"equinox loop: fjax's buffer sums to {res['fjax'][1]}, JAX's to {res['jax'][1]}")
        name = f"vmap(eqx while_loop checkpointed{', buffers=' if buffers else ''}) 1 of {size} per step"
        rows.append(Row(name, res["fjax"][0], res["jax"][0] if "jax" in res else None, note="child processes"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--eqx-worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--buffers", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument(
        "--without-select-fold", action="store_true", help="fjax without its select/update fold (the 'before' figures)"
    )
    args = ap.parse_args()
    if args.without_select_fold:
        from fjax.interpreters import mlir  # noqa: PLC0415

        _NO_FOLD[0] = True
        mlir._body_passes.clear()
        mlir._install()
    if args.eqx_worker is not None:
        _eqx_worker(args.eqx_worker, args.buffers, args.quick)
        return
    for r in run(args.quick):
        jx = f"{r.jax * 1e3:9.3f} ms" if r.jax is not None else "        -"
        ratio = f"{r.ratio:6.2f}" if r.ratio is not None else "     -"
        print(f"{r.name:<75} fjax {r.fjax * 1e3:9.3f} ms  JAX {jx}  fjax/JAX {ratio}")


if __name__ == "__main__":
    main()
