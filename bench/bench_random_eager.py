"""Eager ``fjax.random`` samplers of moderate size (no jit around the call), side by side with JAX:
first calls in fresh processes (cold and warm disk caches) and the steady state.

Run: ``python bench/bench_random_eager.py [--sizes 16384,65536,1000000] [--samplers normal,uniform,categorical]
[--first] [--steady]`` (both parts by default). Sizes are sample counts: ``normal``/``uniform`` draw
``(n,)``, ``categorical`` draws from ``(n // 10, 10)`` logits (n samples of Gumbel noise, as the
quick bench's 1000x1000 row). To compare with JAX, run it with the JAX venv
(``PYTHONPATH=. /tmp/jaxenv/bin/python bench/bench_random_eager.py``) and unset OPENBLAS_CORETYPE /
OPENBLAS_L2_SIZE in that command (this workload uses no BLAS, so it makes no difference here).

``--first`` starts one process per (sampler, size): "cold" with empty fjax and numba cache
directories (a fresh machine), then "warm" with the same directories again (a later process).
Each prints its first three call times, how long the background compile then still took to finish
(``fjax._random_eager.wait_compiled``, when it exists), and a call after that. JAX's column is
its first call in a fresh process (it compiles then; its persistent cache is off by default).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
lib, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if lib == "jax":
    import jax
    random = jax.random
    key = random.PRNGKey(0)
    sync = lambda x: x.block_until_ready()
else:
    import fjax
    from fjax import random
    key = random.PRNGKey(0)
    sync = np.asarray
t_import = time.perf_counter() - t0
logits = np.zeros((n // 10, 10), np.float32)
f = {
    "normal": lambda: random.normal(key, (n,)),
    "uniform": lambda: random.uniform(key, (n,)),
    "categorical": lambda: random.categorical(key, logits),
}[name]
calls = []
for _ in range(3):
    t = time.perf_counter(); sync(f()); calls.append(time.perf_counter() - t)
wait = None
if lib == "fjax":
    from fjax import _random_eager
    if hasattr(_random_eager, "wait_compiled"):
        t = time.perf_counter(); _random_eager.wait_compiled(120); wait = time.perf_counter() - t
t = time.perf_counter(); sync(f()); after = time.perf_counter() - t
print(json.dumps({"import": t_import, "calls": calls, "wait": wait, "after": after}))
"""


def _cases(random: object, key: object, name: str, n: int):  # noqa: ANN202
    logits = np.zeros((n // 10, 10), np.float32)
    return {
        "normal": lambda: random.normal(key, (n,)),
        "uniform": lambda: random.uniform(key, (n,)),
        "categorical": lambda: random.categorical(key, logits),
    }[name]


def _median_call(f, sync, seconds: float = 0.4) -> float:  # noqa: ANN001
    sync(f())
    t = time.perf_counter()
    sync(f())
    per = max(time.perf_counter() - t, 1e-7)
    number = max(1, min(1000, int(seconds / 5 / per)))
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(number):
            sync(f())
        ts.append((time.perf_counter() - t) / number)
    return sorted(ts)[2]


def steady(samplers: list, sizes: list) -> None:
    import fjax  # noqa: PLC0415
    from fjax import _random_eager, random  # noqa: PLC0415

    try:
        import jax  # noqa: PLC0415
    except ImportError:
        jax = None
    key = random.PRNGKey(0)
    print(f"steady state (median per call; fjax_tiered_compile={fjax.config.fjax_tiered_compile!r})")
    print(f"{'sampler':12s} {'n':>8s} {'fjax':>10s} {'JAX':>10s} {'fjax/JAX':>9s}")
    for name in samplers:
        for n in sizes:
            f = _cases(random, key, name, n)
            np.asarray(f())
            if hasattr(_random_eager, "wait_compiled"):
                _random_eager.wait_compiled(120)
            tf = _median_call(f, np.asarray)
            tj = None
            if jax is not None:
                g = _cases(jax.random, jax.random.PRNGKey(0), name, n)
                tj = _median_call(g, lambda x: x.block_until_ready())
            jcol = f"{tj * 1e3:8.3f}ms" if tj else "       n/a"
            ratio = f"{tf / tj:9.2f}" if tj else "      n/a"
            print(f"{name:12s} {n:8d} {tf * 1e3:8.3f}ms {jcol} {ratio}", flush=True)


def _child(lib: str, name: str, n: int, env: dict) -> dict:
    exe = sys.executable
    out = subprocess.run([exe, "-c", _CHILD, lib, name, str(n)], env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1:] or ["?"]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def first(samplers: list, sizes: list) -> None:
    try:
        import jax  # noqa: F401, PLC0415

        has_jax = True
    except ImportError:
        has_jax = False
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print("first calls in a fresh process (ms): call1 call2 call3 | wait for the background compile | call after")

    def fmt(r: dict) -> str:
        if "error" in r:
            return f"error: {r['error']}"
        w = "-" if r["wait"] is None else f"{r['wait'] * 1e3:.0f}"
        c = " ".join(f"{t * 1e3:7.1f}" for t in r["calls"])
        return f"{c} | {w:>5s} | {r['after'] * 1e3:7.2f}"

    for name in samplers:
        for n in sizes:
            with tempfile.TemporaryDirectory() as d:
                env = dict(os.environ)
                env.update(FJAX_CACHE_DIR=os.path.join(d, "fjax"), NUMBA_CACHE_DIR=os.path.join(d, "numba"))
                env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
                for state in ("cold", "warm"):
                    print(f"{name:12s} {n:8d} fjax {state}: {fmt(_child('fjax', name, n, env))}", flush=True)
                if has_jax:
                    print(f"{name:12s} {n:8d} JAX  fresh: {fmt(_child('jax', name, n, env))}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16384,65536,262144,1000000")
    ap.add_argument("--samplers", default="normal,uniform,categorical")
    ap.add_argument("--first", action="store_true")
    ap.add_argument("--steady", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    samplers = args.samplers.split(",")
    both = not (args.first or args.steady)
    print(time.strftime("%Y-%m-%d %H:%M:%S"), "load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    if args.first or both:
        first(samplers, sizes)
    if args.steady or both:
        steady(samplers, sizes)


if __name__ == "__main__":
    main()
