"""Benchmark of ``fjax.jit`` through the numba lowering, with ratios measured side by side in one
process: a 4M-element float32 transcendental chain (forward and gradient) against numpy eager
(and JAX's jit when jax is importable), jit dispatch of ``x + 1.0`` on a scalar, and first-call
compile time.

Run: ``python bench/bench_jit.py [--n 4000000] [--repeat 20]``; ``--vmath`` runs only the
per-element microbenchmark of ``fjax.backends.numba.vmath`` against numpy's ufuncs; ``--dispatch
[--clock process]`` only the per-call host cost of jitted calls, case by case (one array, a params
dict, static/keyword arguments, donation, a Python scalar, a jitted method, two threads) beside
JAX's (bench/results/jit_dispatch_2026-11-27.txt). Compile times are
measured with a fresh kernel cache directory (so they include numba's compile, not a disk-cache
load); the numba process start-up cost (~1-2 s, paid once) is reported separately. The chain's
timings are the best of ``--repeat`` rounds in which every contender runs once (round-robin), so
load from other processes on the shared 2-core machine hits all of them alike. When comparing with
JAX, note ARCHITECTURE.md: OPENBLAS_CORETYPE pins numpy's BLAS (not used here), JAX brings its own.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fjax  # noqa: E402
from fjax import lax  # noqa: E402
from fjax.backends import dispatch  # noqa: E402
from fjax.config import config  # noqa: E402


def best_of(f, repeat: int) -> float:
    f()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def race(fns: dict, repeat: int) -> dict:
    """Best time of each function, run round-robin (one call of each per round) so that load from
    other processes on this shared machine hits all of them alike and the ratios stay honest."""
    for f in fns.values():
        f()
    best = dict.fromkeys(fns, math.inf)
    for _ in range(repeat):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            best[k] = min(best[k], time.perf_counter() - t)
    return best


def chain(x):
    return lax.reduce_sum(
        lax.add(lax.mul(lax.tanh(x), lax.exp(lax.neg(lax.mul(x, x)))), lax.mul(lax.sin(x), 0.5)), (0,)
    )


def np_chain(x):
    return np.sum(np.tanh(x) * np.exp(-x * x) + np.sin(x) * np.float32(0.5))


def np_chain_grad(x):
    t = np.tanh(x)
    e = np.exp(-x * x)
    return (1 - t * t) * e + t * e * (-2 * x) + np.cos(x) * np.float32(0.5)


def vmath_micro(n: int, repeat: int) -> None:
    """Per-element time of each ``vmath`` function in a plain numba loop against numpy's ufunc,
    and whether the loop compiled to vector code (the loop must inline the function: a call left
    in the loop keeps it scalar)."""
    import numba  # noqa: PLC0415

    from fjax.backends.numba import vmath as vm  # noqa: PLC0415
    from fjax.backends.numba.runtime import wide_vectors  # noqa: PLC0415

    def np_logistic(x, out):
        np.exp(-x, out=out)
        out += 1
        return np.reciprocal(out, out=out)

    ref = {
        "exp": np.exp,
        "log": np.log,
        "log1p": np.log1p,
        "expm1": np.expm1,
        "tanh": np.tanh,
        "logistic": np_logistic,
        "sin": np.sin,
        "cos": np.cos,
        "sin_fast": np.sin,
        "cos_fast": np.cos,
        "erf": None,
    }
    rng = np.random.default_rng(0)
    print(f"vmath per element, n={n}, best of {repeat} (numba loop vs numpy ufunc)")
    for name, npf in ref.items():
        for dt, suf in ((np.float32, "f32"), (np.float64, "f64")):
            fn = getattr(vm, f"{name}_{suf}", None)
            if fn is None:
                continue

            def mk(fn):
                @numba.njit(error_model="numpy", nogil=True)
                def loop(x, y):
                    wide_vectors(512)  # as the loop-nest kernels ask (render.VECTOR_WIDTH)
                    for i in range(x.shape[0]):
                        y[i] = fn(x[i])

                return loop

            x = (rng.standard_normal(n) * 3).astype(dt)
            if name in ("log", "log1p"):
                x = np.abs(x) + dt(0.1)
            y = np.empty_like(x)
            loop = mk(fn)
            loop(x, y)
            vec = f"x {'float' if dt == np.float32 else 'double'}>" in loop.inspect_llvm(loop.signatures[0])
            t_nb = best_of(lambda: loop(x, y), repeat) / n * 1e9
            line = f"  {name:9s} {suf}: {t_nb:6.2f} ns"
            if npf is not None:
                t_np = best_of(lambda: npf(x, out=y), repeat) / n * 1e9
                line += f" | numpy {t_np:6.2f} ns | x{t_nb / t_np:5.2f}"
            print(line + ("" if vec else "   NOT VECTORIZED"))


# ---- dispatch overhead: the per-call host cost of a jitted call, case by case ------------------


class _Scaler:
    """A class with a jitted method (``self`` static, as ``partial(jit, static_argnums=0)``)."""

    def __init__(self, k: float) -> None:
        self.k = k

    def __hash__(self) -> int:
        return hash(self.k)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Scaler) and other.k == self.k


def dispatch_cases(jax: Any, calls: int) -> dict:
    """name -> a function making ``calls`` jitted calls of one case, written once against the
    JAX API so the same code runs under ``jax`` and ``fjax`` (arrays of 8 float32: the compute is
    negligible, the host overhead is what is measured)."""
    import functools  # noqa: PLC0415
    import threading  # noqa: PLC0415

    jnp = jax.numpy
    x = jnp.arange(8, dtype=jnp.float32)
    y = jnp.ones(8, dtype=jnp.float32)
    params = {f"w{i}": jnp.full((8,), float(i), dtype=jnp.float32) for i in range(6)}
    batch = jnp.ones(8, dtype=jnp.float32)

    add1 = jax.jit(lambda v: v + 1)
    tree = jax.jit(lambda p, b: sum(w * b for w in p.values()))  # (every leaf used: JAX drops unused ones)
    static_n = jax.jit(lambda v, n: v * n, static_argnums=1)
    static_name = jax.jit(lambda v, mode="a": v + 1 if mode == "a" else v - 1, static_argnames="mode")
    kw = jax.jit(lambda v, w: v + w)
    donate = jax.jit(lambda v: v + 1, donate_argnums=0)
    scalar = jax.jit(lambda v, s: v * s)

    class Model(_Scaler):
        @functools.partial(jax.jit, static_argnums=0)
        def apply(self, v):
            return v * self.k

    m = Model(2.0)

    def loop(f):
        def run():
            for _ in range(calls):
                f()

        return run

    def donating():
        v = jnp.zeros(8, dtype=jnp.float32) + 0  # a fresh buffer each round, consumed by the loop
        for _ in range(calls):
            v = donate(v)

    def two_threads():
        # both threads run calls // 2 calls, so the time per call is comparable with the others
        def work():
            for _ in range(calls // 2):
                add1(x)

        ts = [threading.Thread(target=work) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    import warnings  # noqa: PLC0415

    warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
    return {
        "one array": loop(lambda: add1(x)),
        "dict of 6 + batch": loop(lambda: tree(params, batch)),
        "static_argnums": loop(lambda: static_n(x, 3)),
        "static_argnames": loop(lambda: static_name(x, mode="b")),
        "keyword argument": loop(lambda: kw(x, w=y)),
        "donate_argnums": donating,
        "Python scalar": loop(lambda: scalar(x, 2.0)),
        "jitted method": loop(lambda: m.apply(x)),
        "two threads": two_threads,
    }


def dispatch_bench(rounds: int, calls: int = 2000, clock: str = "wall") -> None:
    """Per-call time of each case for fjax and (when importable) JAX, rounds alternating between
    them, best round of each; prints us per call and the fjax/JAX ratio. ``clock="process"``
    counts the process's CPU time (every thread's) instead of wall time: steadier on a loaded
    machine, and it still charges JAX for work its runtime threads do."""
    now = time.perf_counter if clock == "wall" else time.process_time
    config.update("fjax_jit_backend", "numba")
    libs = {"fjax": fjax}
    try:
        import jax  # noqa: PLC0415

        libs["jax"] = jax
    except ImportError:
        pass
    cases = {name: dispatch_cases(lib, calls) for name, lib in libs.items()}
    for per in cases.values():
        for f in per.values():
            f()  # trace and compile
    if "fjax" in libs:
        dispatch.wait_compiled()
    best = {(lib, c): math.inf for lib in cases for c in cases[lib]}
    for _ in range(rounds):
        for c in cases["fjax"]:
            for lib in cases:
                t = now()
                cases[lib][c]()
                best[(lib, c)] = min(best[(lib, c)], (now() - t) / calls)
    print(f"jit dispatch, us per call ({clock} clock, best of {rounds} rounds of {calls} calls, alternating)")
    for c in cases["fjax"]:
        line = f"  {c:18s} fjax {best[('fjax', c)] * 1e6:6.2f}"
        if "jax" in cases:
            line += f" | jax {best[('jax', c)] * 1e6:6.2f} | ratio {best[('fjax', c)] / best[('jax', c)]:5.2f}"
        print(line)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--vmath", action="store_true", help="only the per-element vmath microbenchmark")
    ap.add_argument("--dispatch", action="store_true", help="only the per-call dispatch cases, fjax beside JAX")
    ap.add_argument("--clock", choices=("wall", "process"), default="wall", help="--dispatch: the clock")
    args = ap.parse_args()
    if args.dispatch:
        dispatch_bench(args.repeat, clock=args.clock)
        return
    if args.vmath:
        vmath_micro(1 << 20, args.repeat)
        return
    config.update("fjax_cache_dir", tempfile.mkdtemp(prefix="fjax_bench_"))
    config.update("fjax_jit_backend", "numba")
    x = np.random.default_rng(0).standard_normal(args.n).astype(np.float32)
    xa = fjax.jit(lambda v: v)(x)  # an fjax Array (read-only, no per-call conversion)

    t = time.perf_counter()
    import numba  # noqa: PLC0415

    numba.njit(lambda v: v + 1)(1.0)
    startup = time.perf_counter() - t

    jf = fjax.jit(chain)
    t = time.perf_counter()
    jf(xa)
    compile_fwd = time.perf_counter() - t
    jg = fjax.jit(fjax.grad(chain))
    t = time.perf_counter()
    jg(xa)
    compile_grad = time.perf_counter() - t
    gj = fjax.grad(jf)  # grad of the jitted function: jvp + transpose jaxprs, each compiled
    t = time.perf_counter()
    gj(xa)
    compile_gj = time.perf_counter() - t

    np.testing.assert_allclose(float(jf(xa)), float(np_chain(x)), rtol=1e-4)
    np.testing.assert_allclose(np.asarray(jg(xa)), np_chain_grad(x), rtol=1e-4, atol=1e-5)
    fwd = {"numpy fwd": lambda: np_chain(x), "fjax.jit fwd": lambda: jf(xa)}
    grad = {
        "numpy grad": lambda: np_chain_grad(x),
        "fjax jit(grad)": lambda: jg(xa),
        "fjax grad(jit)": lambda: gj(xa),
    }

    have_jax = False
    res = {}
    try:
        import jax  # noqa: PLC0415
        import jax.numpy as jnp  # noqa: PLC0415

        have_jax = True
        xj = jnp.asarray(x)

        def jchain(v):
            return jnp.sum(jnp.tanh(v) * jnp.exp(-v * v) + jnp.sin(v) * 0.5)

        jjf = jax.jit(jchain)
        jjg = jax.jit(jax.grad(jchain))
        fwd["jax.jit fwd"] = lambda: jjf(xj).block_until_ready()
        grad["jax jit(grad)"] = lambda: jjg(xj).block_until_ready()
        jadd = jax.jit(lambda v: v + 1.0)
        s = jnp.float32(1.0)
        jadd(s).block_until_ready()
        res["jax dispatch"] = best_of(lambda: [jadd(s) for _ in range(1000)], 5) / 1000
    except ImportError:
        pass

    res.update(race(fwd, args.repeat))
    res.update(race(grad, args.repeat))

    add1 = fjax.jit(lambda v: lax.add(v, 1.0))
    s = fjax.jit(lambda v: v)(np.float32(1.0))
    add1(s)
    res["fjax dispatch"] = best_of(lambda: [add1(s) for _ in range(1000)], 5) / 1000
    fn = dispatch.compile_jaxpr(add1.lower(s).jaxpr)
    sv = s._value
    res["compiled callable"] = best_of(lambda: [fn(sv) for _ in range(1000)], 5) / 1000
    config.update("fjax_jit_backend", "interpret")
    add1.clear_cache()
    add1(s)
    res["fjax eager-eval jit"] = best_of(lambda: [add1(s) for _ in range(1000)], 5) / 1000
    config.update("fjax_jit_backend", "numba")

    print(f"fjax.jit benchmark, n={args.n} float32, best of {args.repeat}")
    print(f"  numba start-up (once per process):         {startup * 1e3:8.1f} ms")
    print(f"  first-call compile jit(f):                 {compile_fwd * 1e3:8.1f} ms")
    print(f"  first-call compile jit(grad(f)):           {compile_grad * 1e3:8.1f} ms")
    print(f"  first-call compile grad(jit(f)):           {compile_gj * 1e3:8.1f} ms")
    print(
        f"  sum(tanh(x)*exp(-x*x)+sin(x)*0.5):  numpy {res['numpy fwd'] * 1e3:7.2f} ms | fjax.jit "
        f"{res['fjax.jit fwd'] * 1e3:7.2f} ms | speedup x{res['numpy fwd'] / res['fjax.jit fwd']:.1f}"
    )
    if have_jax:
        print(
            f"      vs jax.jit {res['jax.jit fwd'] * 1e3:7.2f} ms: fjax/jax time ratio "
            f"{res['fjax.jit fwd'] / res['jax.jit fwd']:.2f}"
        )
    print(
        f"  gradient:  numpy (hand-written) {res['numpy grad'] * 1e3:7.2f} ms | fjax jit(grad) "
        f"{res['fjax jit(grad)'] * 1e3:7.2f} ms (x{res['numpy grad'] / res['fjax jit(grad)']:.1f}) | "
        f"fjax grad(jit) {res['fjax grad(jit)'] * 1e3:7.2f} ms (x{res['numpy grad'] / res['fjax grad(jit)']:.1f})"
    )
    if have_jax:
        print(
            f"      vs jax jit(grad) {res['jax jit(grad)'] * 1e3:7.2f} ms: fjax/jax time ratio "
            f"{res['fjax jit(grad)'] / res['jax jit(grad)']:.2f}"
        )
    print(
        f"  dispatch of jit(x + 1.0) on a scalar: fjax {res['fjax dispatch'] * 1e6:6.2f} us "
        f"(compiled callable alone {res['compiled callable'] * 1e6:5.2f} us; "
        f"jit without the lowering {res['fjax eager-eval jit'] * 1e6:6.2f} us)"
        + (f" | jax {res['jax dispatch'] * 1e6:6.2f} us" if have_jax else "")
    )


def run(quick: bool = False) -> list:
    """Rows for bench/run_all.py: the 4M-element transcendental chain, forward and jit(grad),
    fjax (numba backend) vs JAX."""
    from _pairs import jax_or_none, row  # noqa: PLC0415

    config.update("fjax_jit_backend", "numba")
    x = np.random.default_rng(0).standard_normal(4_000_000).astype(np.float32)
    xa = fjax.numpy.asarray(x)
    jf, jg = fjax.jit(chain), fjax.jit(fjax.grad(chain))
    jax = jax_or_none()
    jjf = jjg = None
    if jax is not None:
        jnp = jax.numpy
        xj = jnp.asarray(x)

        def jchain(v):
            return jnp.sum(jnp.tanh(v) * jnp.exp(-v * v) + jnp.sin(v) * 0.5)

        f1, f2 = jax.jit(jchain), jax.jit(jax.grad(jchain))
        jjf = lambda: f1(xj).block_until_ready()  # noqa: E731
        jjg = lambda: f2(xj).block_until_ready()  # noqa: E731
    return [
        row("4M transcendental chain: forward", lambda: jf(xa), jjf, quick),
        row("4M transcendental chain: jit(grad)", lambda: jg(xa), jjg, quick),
    ]


if __name__ == "__main__":
    main()
