"""Benchmark of sampling 10**6 standard gamma variates (``random.gamma(key, a, (n,))``, float32)
with fjax and, when jax is importable, with JAX's jitted sampler side by side; also beta (and
poisson with --poisson, binomial with --binomial) at the same size. fjax's gamma, poisson and
float32 binomial run a numba loop per sample (JAX's algorithms and key splits, bit-identical to
the lax composites); JAX runs its vmapped while loops under XLA.

Run: ``python bench/bench_random.py [--n 1000000] [--a 2.0] [--repeat 3]``. To compare with JAX
fairly, unset OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE in that command (they do not affect this
workload, which uses no BLAS).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import fjax  # noqa: E402
from fjax import random  # noqa: E402


def best_of(f, repeat: int) -> float:
    np.asarray(f())  # compile / warm up
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        np.asarray(f())
        ts.append(time.perf_counter() - t)
    return min(ts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--a", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--poisson", action="store_true", help="also poisson(4) and poisson(30)")
    ap.add_argument("--binomial", action="store_true", help="also binomial(5, 0.3) and binomial(100, 0.4)")
    args = ap.parse_args()
    n, a = args.n, args.a
    key = random.PRNGKey(0)
    rows = {
        f"gamma(a={a})": fjax.jit(lambda k: random.gamma(k, a, (n,))),
        "gamma(a=0.3)": fjax.jit(lambda k: random.gamma(k, 0.3, (n,))),
        "beta(2, 3)": fjax.jit(lambda k: random.beta(k, 2.0, 3.0, (n,))),
    }
    if args.poisson:
        rows["poisson(4)"] = fjax.jit(lambda k: random.poisson(k, 4.0, (n,)))
        rows["poisson(30)"] = fjax.jit(lambda k: random.poisson(k, 30.0, (n,)))
    if args.binomial:
        rows["binomial(5,.3)"] = fjax.jit(lambda k: random.binomial(k, 5.0, 0.3, (n,)))
        rows["binomial(100,.4)"] = fjax.jit(lambda k: random.binomial(k, 100.0, 0.4, (n,)))
    fj = {name: best_of(lambda f=f: f(key), args.repeat) for name, f in rows.items()}
    jx: dict = {}
    try:
        import jax  # noqa: PLC0415

        jkey = jax.random.PRNGKey(0)
        jrows = {
            f"gamma(a={a})": jax.jit(lambda k: jax.random.gamma(k, a, (n,))),
            "gamma(a=0.3)": jax.jit(lambda k: jax.random.gamma(k, 0.3, (n,))),
            "beta(2, 3)": jax.jit(lambda k: jax.random.beta(k, 2.0, 3.0, (n,))),
            "poisson(4)": jax.jit(lambda k: jax.random.poisson(k, 4.0, (n,))),
            "poisson(30)": jax.jit(lambda k: jax.random.poisson(k, 30.0, (n,))),
            "binomial(5,.3)": jax.jit(lambda k: jax.random.binomial(k, 5.0, 0.3, (n,))),
            "binomial(100,.4)": jax.jit(lambda k: jax.random.binomial(k, 100.0, 0.4, (n,))),
        }
        jrows = {k: v for k, v in jrows.items() if k in rows}
        jx = {name: best_of(lambda f=f: f(jkey).block_until_ready(), args.repeat) for name, f in jrows.items()}
    except ImportError:
        pass
    print(f"{n} samples, best of {args.repeat}")
    print(f"{'sampler':16s} {'fjax':>10s} {'JAX':>10s} {'fjax/JAX':>9s}")
    for name, t in fj.items():
        j = jx.get(name)
        jcol = f"{j * 1e3:8.1f}ms" if j else "       n/a"
        ratio = f"{t / j:9.2f}" if j else "      n/a"
        print(f"{name:16s} {t * 1e3:8.1f}ms {jcol} {ratio}")


def run(quick: bool = False) -> list:
    """Rows for bench/run_all.py: eager samplers as a user calls them (no jit around them) on a
    (5000, 5000) shape ((1000, 1000) with --quick), fjax vs JAX; steady state (fjax compiles an
    eager sampler once per shape and dtype, as JAX's jitted samplers do; below 2^20 samples in the
    background, waited for here)."""
    from _pairs import jax_or_none, row  # noqa: PLC0415

    shape = (1000, 1000) if quick else (5000, 5000)
    logits = np.zeros((shape[0] * shape[1] // 10, 10), np.float32)
    key = random.PRNGKey(0)
    cases = {
        "normal": lambda r, k: r.normal(k, shape),
        "uniform": lambda r, k: r.uniform(k, shape),
        "bernoulli(0.3)": lambda r, k: r.bernoulli(k, 0.3, shape),
        "categorical (10 classes)": lambda r, k: r.categorical(k, logits),
        "gamma(2.0) (10^6 samples)": lambda r, k: r.gamma(k, 2.0, (10**6,)),
    }
    jax = jax_or_none()
    rows = []
    from fjax import _random_eager  # noqa: PLC0415

    for name, f in cases.items():
        np.asarray(f(random, key))  # steady state: below 2^20 samples the first call queues a
        _random_eager.wait_compiled(120)  # background compile, which later calls use
        jf = None
        if jax is not None:
            jkey = jax.random.PRNGKey(0)
            jf = lambda f=f: f(jax.random, jkey).block_until_ready()  # noqa: E731
        size = "10^6" if "10^6" in name else f"{shape[0]}x{shape[1]}"
        rows.append(
            row(
                f"eager random.{name.replace(' (10^6 samples)', '')}, {size}",
                lambda f=f: np.asarray(f(random, key)),
                jf,
                quick,
                seconds=0.5,
            )
        )
    return rows


if __name__ == "__main__":
    main()
