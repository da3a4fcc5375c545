"""Convolution under ``fjax.jit`` (numba backend): the compiled form in
``fjax/backends/numba/conv.py`` (im2col numba kernel + BLAS GEMM) against the primitive's numpy
impl run as a host call, and against JAX's jit when jax is importable, measured side by side in one
process (interleaved rounds, best time of each).

Layers (NHWC / HWIO, 'SAME', batch 128): 28x28x1 -> 3x3x16 and 14x14x16 -> 3x3x32; forward
``relu(conv(x, w))``, and the gradient with respect to input and kernel of ``sum(relu(conv(x, w)) * g)``
(which runs the two transposed convolutions). Also reports the im2col kernel's cold numba compile
time (no disk cache), and (``--ops``) the other host kernels of ``fjax.backends.numba.host_kernels`` (argmax, cumulative
ops, scatter-add, sort) against their impls on a few shapes.

Run: ``python bench/bench_conv.py [--batch 128] [--rounds 15]``. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE
pin numpy's BLAS to slower kernels on these machines (ARCHITECTURE.md); JAX brings its own, so when
comparing with JAX run with both unset (``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fjax  # noqa: E402
import fjax.numpy as jnp  # noqa: E402
from fjax import lax  # noqa: E402
from fjax.backends.numba import host_kernels as numba_ops  # noqa: E402

DN = ("NHWC", "HWIO", "NHWC")


def fjax_fns() -> tuple:
    """(forward, grad of ``sum(conv(x, w) * g)`` in x and w), jitted."""

    def fwd(x, w):
        # relu: a jaxpr of only host calls would be evaluated eagerly, not compiled
        return jnp.maximum(lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN), 0.0)

    def loss(x, w, g):
        return jnp.sum(fwd(x, w) * g)

    return fjax.jit(fwd), fjax.jit(fjax.grad(loss, argnums=(0, 1)))


def compiled(f, gr, args, use_kernel) -> tuple:
    """First calls of both (the builder is consulted when the program is built), with the compiled
    conv or without it (then the program calls the impl); returns their times."""
    saved = numba_ops.HOST_KERNELS["conv_general_dilated"]
    if not use_kernel:
        del numba_ops.HOST_KERNELS["conv_general_dilated"]
    try:
        t0 = time.perf_counter()
        np.asarray(f(*args[:2]))
        t1 = time.perf_counter()
        [np.asarray(a) for a in gr(*args)]
        t2 = time.perf_counter()
    finally:
        numba_ops.HOST_KERNELS["conv_general_dilated"] = saved
    return t1 - t0, t2 - t1


def jax_fns():
    try:
        import jax
        import jax.numpy as jjnp
    except ImportError:
        return None

    def fwd(x, w):
        return jjnp.maximum(jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN), 0.0)

    def loss(x, w, g):
        return jjnp.sum(fwd(x, w) * g)

    return jax.jit(fwd), jax.jit(jax.grad(loss, argnums=(0, 1))), jax


def cold_compile_time() -> float:
    """Seconds to compile the im2col kernel from scratch (float32 signature, no disk cache)."""
    from numba import njit

    from fjax.backends.numba import conv as numba_conv

    k = njit(nogil=True)(numba_conv._im2col.py_func)
    x = np.zeros(4, np.float32)
    P = np.zeros((1, 1, 1), np.float32)
    t = np.zeros((1, 1), np.int64)
    cont = np.zeros(1, np.uint8)
    t0 = time.perf_counter()
    k(x, P, 1, 0, 0, 1, 1, 1, t, t, t, cont)
    return time.perf_counter() - t0


def bench_ops(rounds: int) -> None:
    """Each other host kernel against its primitive's impl, on the equation's own operands."""
    import fjax.nn as nn
    from fjax import core

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1000, 1000)).astype(np.float32)
    logits = rng.standard_normal((256, 10)).astype(np.float32)
    labels = np.arange(256) % 10
    table = rng.standard_normal((10000, 64)).astype(np.float32)
    rows = rng.integers(0, 10000, 4096)
    cases = [
        ("argmax (256,10) axis 1", lambda a: jnp.argmax(a, axis=1), (logits,)),
        ("argmax (1000,1000) axis 0", lambda a: jnp.argmax(a, axis=0), (x,)),
        ("cumsum (256,10) axis 1", lambda a: jnp.cumsum(a, axis=1), (logits,)),
        ("cumsum (1000,1000) axis 0", lambda a: jnp.cumsum(a, axis=0), (x,)),
        ("cummax (1000,1000) axis 1", lambda a: lax.cummax(a, axis=1), (x,)),
        ("sort (1000,1000) axis 1", lambda a: jnp.sort(a, axis=1), (x,)),
        ("argsort (1000,1000) axis 1", lambda a: jnp.argsort(a, axis=1), (x,)),
        (
            "scatter-add: grad of x-entropy (256,10)",
            fjax.grad(lambda a, y: jnp.mean(nn.softmax_cross_entropy_with_integer_labels(a, y))),
            (logits, labels),
        ),
        (
            "scatter-add: grad of table[rows] (10000,64)[4096]",
            fjax.grad(lambda t, r: jnp.sum(t[r] ** 2)),
            (table, rows),
        ),
    ]
    names = set(numba_ops.HOST_KERNELS) - {"conv_general_dilated"}
    for label, f, args in cases:
        closed = fjax.make_jaxpr(f)(*args)
        env = dict(zip(closed.jaxpr.constvars, closed.consts))
        env.update(zip(closed.jaxpr.invars, args))
        for e in closed.jaxpr.eqns:
            ins = [v.val if isinstance(v, core.Literal) else env[v] for v in e.invars]
            if e.primitive.name in names:
                k = numba_ops.host_kernel(e)
                if k is None:
                    print(f"{label:52s} {e.primitive.name}: no compiled form (impl is faster)")
                else:
                    k(*ins)
                    tk = min(_time(lambda: k(*ins)) for _ in range(rounds))
                    ti = min(_time(lambda: e.primitive.impl(*ins, **e.params)) for _ in range(rounds))
                    print(
                        f"{label:52s} kernel {tk * 1e6:9.1f} us  impl {ti * 1e6:9.1f} us  impl/kernel {ti / tk:5.1f}x"
                    )
            outs = e.primitive.bind(*ins, **e.params)
            outs = outs if e.primitive.multiple_results else [outs]
            env.update(zip(e.outvars, (np.asarray(o) for o in outs)))


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--ops", action="store_true", help="only the other host kernels against their impls")
    a = ap.parse_args()
    if a.ops:
        bench_ops(max(a.rounds, 30))
        return
    print(f"im2col kernel cold compile: {cold_compile_time():.2f} s")
    rng = np.random.default_rng(0)
    layers = [((a.batch, 28, 28, 1), (3, 3, 1, 16)), ((a.batch, 14, 14, 16), (3, 3, 16, 32))]
    jx = jax_fns()
    for xs, ws in layers:
        x = rng.standard_normal(xs).astype(np.float32)
        w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[:3]))).astype(np.float32)
        g = rng.standard_normal(xs[:3] + ws[3:]).astype(np.float32)
        args = (x, w, g)
        runs = {}
        for name, use in (("new", True), ("impl", False)):
            f, gr = fjax_fns()
            cf, cg = compiled(f, gr, args, use)
            runs[name] = (lambda f=f: f(x, w), lambda gr=gr: gr(x, w, g))
            print(f"{xs} * {ws}  fjax {name:4s} first call: forward {cf:.2f} s, grad {cg:.2f} s")
        ref_f, ref_g = runs["impl"][0](), runs["impl"][1]()
        new_f, new_g = runs["new"][0](), runs["new"][1]()
        np.testing.assert_allclose(np.asarray(new_f), np.asarray(ref_f), rtol=1e-4, atol=1e-4)
        for u, v in zip(new_g, ref_g):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-3, atol=1e-2)
        if jx is not None:
            jf, jg, jax = jx
            xj, wj, gj = (jax.device_put(v) for v in args)
            t0 = time.perf_counter()
            jf(xj, wj).block_until_ready()
            jax.block_until_ready(jg(xj, wj, gj))
            print(f"{xs} * {ws}  jax first call (forward + grad): {time.perf_counter() - t0:.2f} s")
            runs["jax"] = (
                lambda: jf(xj, wj).block_until_ready(),
                lambda: jax.block_until_ready(jg(xj, wj, gj)),
            )
        best = {(k, i): float("inf") for k in runs for i in (0, 1)}
        for _ in range(a.rounds):
            for k, fns in runs.items():
                for i, fn in enumerate(fns):
                    t = time.perf_counter()
                    fn()
                    best[(k, i)] = min(best[(k, i)], time.perf_counter() - t)
        for i, what in enumerate(("forward", "grad")):
            line = "  ".join(f"{k} {best[(k, i)] * 1e3:7.2f} ms" for k in runs)
            ratios = f"impl/new {best[('impl', i)] / best[('new', i)]:5.1f}x"
            if "jax" in runs:
                ratios += f"  new/jax {best[('new', i)] / best[('jax', i)]:5.2f}x"
            print(f"{xs} * {ws}  {what:7s}: {line}   {ratios}")


def run(quick: bool = False) -> list:
    """Rows for bench/run_all.py: the second conv layer (3x3, 16 -> 32 channels, 14x14, batch 128)
    forward and gradient, jitted, fjax vs JAX."""
    from _pairs import row  # noqa: PLC0415

    rng = np.random.default_rng(0)
    xs, ws = (128, 14, 14, 16), (3, 3, 16, 32)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[:3]))).astype(np.float32)
    g = rng.standard_normal(xs[:3] + ws[3:]).astype(np.float32)
    f, gr = fjax_fns()
    jx = jax_fns()
    jf = jg = None
    if jx is not None:
        jfwd, jgrad, jax = jx
        xj, wj, gj = (jax.device_put(v) for v in (x, w, g))
        jf = lambda: jfwd(xj, wj).block_until_ready()  # noqa: E731
        jg = lambda: jax.block_until_ready(jgrad(xj, wj, gj))  # noqa: E731
    return [
        row("conv 3x3 16->32 ch, 14x14, b128: forward", lambda: f(x, w), jf, quick),
        row("conv 3x3 16->32 ch, 14x14, b128: grad", lambda: gr(x, w, g), jg, quick),
    ]


if __name__ == "__main__":
    main()
