"""Complex elementwise benchmark: ``fjax.jit`` on the numba backend (complex64 ops fused into loop
nests, ``fjax/backends/numba/complex_math.py``) against ``jax.jit`` in the same process.

Workloads on 1M complex64 elements (a fixed seed, parts standard normal):

- ``chain``: ``exp(z * 0.1) * conj(z) / (z + 2) + sqrt(z) * tanh(z)``, then ``sum(abs(w) ** 2)``;
- single ops, each reduced by ``sum(abs(.) ** 2)`` so that only a scalar leaves the call: ``div``
  (``z / (z + 2)``), ``exp``, ``tanh``, ``sqrt``, and ``abs2`` (``sum(abs(z) ** 2)`` alone);
- ``eager z / w``: one complex division outside ``jit`` (fjax's impl in numpy, JAX's eager op).

Steady state: median seconds per call, fjax and JAX sampled round-robin (``bench/_pairs.py``).
First call: the first call of a fresh ``jit`` of the chain in this process, with an empty kernel
cache (``main`` points ``FJAX_CACHE_DIR`` at a new temporary directory; numba's cache of the helper
functions in ``complex_math`` stays, as after any first use) -- fjax's tiered jit evaluates that call eagerly
while compiling in the background, so the "compiled" figure is the time until the compiled program
is ready (``dispatch.wait_compiled``) -- and JAX's first call (trace + XLA compile + run).

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /tmp/jaxenv/bin/python bench/bench_complex.py
[--n 1048576] [--quick]`` (any python with fjax's dependencies; JAX is optional).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._pairs import Row, jax_or_none, row  # noqa: E402


def workloads(np_: object) -> dict:
    """name -> function of z, written against a numpy-like module (fjax.numpy or jax.numpy)."""

    def s2(w: object) -> object:
        return np_.sum(np_.abs(w) ** 2)

    return {
        "chain": lambda z: s2(np_.exp(z * 0.1) * np_.conj(z) / (z + 2) + np_.sqrt(z) * np_.tanh(z)),
        "div": lambda z: s2(z / (z + 2)),
        "exp": lambda z: s2(np_.exp(z * 0.1)),
        "tanh": lambda z: s2(np_.tanh(z)),
        "sqrt": lambda z: s2(np_.sqrt(z)),
        "abs2": s2,
    }


def first_calls(z: np.ndarray, jax: object) -> list:
    import fjax  # noqa: PLC0415
    import fjax.numpy as jnp  # noqa: PLC0415
    from fjax.backends import dispatch  # noqa: PLC0415

    f = fjax.jit(workloads(jnp)["chain"])
    t0 = time.perf_counter()
    np.asarray(f(z))
    eager = time.perf_counter() - t0
    dispatch.wait_compiled()
    ready = time.perf_counter() - t0
    rows = [Row("chain first call (fjax: eager while compiling)", eager), Row("chain compiled and ready", ready)]
    if jax is not None:
        import jax.numpy as jjnp  # noqa: PLC0415

        g = jax.jit(workloads(jjnp)["chain"])
        t0 = time.perf_counter()
        g(z).block_until_ready()
        rows[0].jax = rows[1].jax = time.perf_counter() - t0
    return rows


def run(quick: bool = False, n: int = 1 << 20) -> list:
    import fjax  # noqa: PLC0415
    import fjax.numpy as jnp  # noqa: PLC0415

    fjax.config.update("fjax_jit_backend", "numba")
    jax = jax_or_none()
    rng = np.random.default_rng(0)
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    rows = first_calls(z, jax)
    zf = fjax.numpy.asarray(z)
    fj = {k: fjax.jit(f) for k, f in workloads(jnp).items()}
    jx: dict = {}
    if jax is not None:
        import jax.numpy as jjnp  # noqa: PLC0415

        zj = jax.device_put(z)
        jx = {k: jax.jit(f) for k, f in workloads(jjnp).items()}
    # eager (no jit): one complex division of 1M complex64, XLA's semantics in numpy
    # (``fjax.lax._complex_ref.complex_div``) against JAX's eager dispatch of the same op
    w = z + np.complex64(2)
    wf = fjax.numpy.asarray(w)
    jdiv = None
    if jax is not None:
        wj = jax.device_put(w)
        jdiv = lambda: (zj / wj).block_until_ready()  # noqa: E731
    rows.append(row("eager z / w (1M complex64)", lambda: np.asarray(zf / wf), jdiv, quick))
    for k, f in fj.items():
        g = jx.get(k)
        jfn = (lambda g=g: g(zj).block_until_ready()) if g is not None else None
        rows.append(row(f"{k} (1M complex64)", lambda f=f: f(zf), jfn, quick))
        if g is not None:  # the same result (float32 sums of 1M terms: relative 1e-4)
            a, b = float(np.asarray(f(zf))), float(np.asarray(g(zj)))
            if not abs(a - b) <= 1e-4 * abs(b):
                rows[-1].note = f"results differ: fjax {a!r}, JAX {b!r}"
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("FJAX_CACHE_DIR", tempfile.mkdtemp(prefix="fjax-bench-complex-"))
    for r in run(args.quick, args.n):
        jx = f"{r.jax * 1e3:9.2f} ms" if r.jax is not None else "        -"
        ratio = f"{r.ratio:6.2f}x" if r.ratio is not None else ""
        print(f"{r.name:48s} fjax {r.fjax * 1e3:9.2f} ms   jax {jx}   {ratio} {r.note}")


if __name__ == "__main__":
    main()
