"""diffrax solve benchmark: fjax (diffrax through ``fjax.compat``) against JAX, the same script.

A user's typical diffrax call, ``jax.jit`` of ``diffrax.diffeqsolve`` on a small nonlinear system
(a damped, driven Duffing oscillator, 2 states, float32):

- ``tsit5 fixed``: Tsit5, 1000 constant steps, final state saved;
- ``tsit5 adaptive``: Tsit5 with ``PIDController(rtol=1e-6, atol=1e-6)`` over the same interval;
- ``tsit5 vmap64``: the fixed-step solve ``jax.vmap``-ed over 64 initial conditions;
- ``kvaerno5 adaptive``: the implicit Kvaerno5 (Newton + LU from optimistix/lineax) on the same
  problem, ``PIDController(rtol=1e-5, atol=1e-5)``;
- ``heun sde``: geometric Brownian motion (scalar), Heun on a ``VirtualBrownianTree``, 100 steps.

For each: the first call (trace + compile + run) and the steady state (median of repeated calls,
each ``block_until_ready``). diffrax imports ``jax`` once, so each side runs in its own process:
fjax as ``python -m fjax.compat bench/bench_diffrax.py --worker`` (twice: with an empty kernel
cache, "cold", then with the cache that run left, "warm"), JAX with ``--jax-python`` (default
``/tmp/jaxenv/bin/python`` when it exists; OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset for it). Both
sides' final states are compared.

Run: ``python bench/bench_diffrax.py [--repeat 20] [--jax-python PATH] [--json out.json]``.

Kvaerno5 (results/diffrax_cpu_2026-11-27_before_lu.json, then _lu.json; the 2-core machine shared
with other work, so +-50%): 3.4-6.1 s a solve while lineax's LU and triangular solves kept the
solver loop on the host; 8.7-13 ms (JAX 2.2 ms) once they compile inside loop bodies
(``fjax/lax/_small_linalg_forms.py``) and the constants of nested jits there became operands
(``mlir.expand``). Its cold first call grew from 8 s to 28 s (the whole loop is compiled now).

Compiled loops (results/diffrax_cpu_2026-11-27_before_loops.json, then _loops.json; the former
from the tree before, run with this script; steady fjax/jax): tsit5 fixed 13.4x -> 2.6x, tsit5
adaptive 10.8x -> 3.6x, vmap64 2.8x -> 1.15x, kvaerno5 3.8x -> 0.44x, heun sde 47x -> 0.24x. Host
callbacks (equinox's ``error_if``) run from compiled loop bodies, nested loops allocate nothing per
outer step, and a loop function borrows its buffers (no atomic reference counts per use).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
T1 = 10.0
STEPS = 1000


def _worker(repeat: int) -> dict:
    import diffrax  # noqa: PLC0415
    import jax  # noqa: PLC0415
    import jax.numpy as jnp  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415

    def duffing(t, y, args):
        delta, alpha, beta, gamma, omega = args
        x, v = y[0], y[1]
        return jnp.stack([v, -delta * v - alpha * x - beta * x**3 + gamma * jnp.cos(omega * t)])

    args = tuple(jnp.float32(a) for a in (0.2, -1.0, 1.0, 0.3, 1.2))
    term = diffrax.ODETerm(duffing)

    def solve(solver, controller, dt0, y0, max_steps=4096):
        sol = diffrax.diffeqsolve(
            term, solver, 0.0, T1, dt0, y0, args=args, stepsize_controller=controller, max_steps=max_steps
        )
        return sol.ys[-1], sol.stats["num_steps"]

    cases = {
        "tsit5 fixed": jax.jit(lambda y0: solve(diffrax.Tsit5(), diffrax.ConstantStepSize(), T1 / STEPS, y0)),
        "tsit5 adaptive": jax.jit(
            lambda y0: solve(diffrax.Tsit5(), diffrax.PIDController(rtol=1e-6, atol=1e-6), 0.01, y0)
        ),
        "tsit5 vmap64": jax.jit(
            jax.vmap(lambda y0: solve(diffrax.Tsit5(), diffrax.ConstantStepSize(), T1 / STEPS, y0))
        ),
        "kvaerno5 adaptive": jax.jit(
            lambda y0: solve(diffrax.Kvaerno5(), diffrax.PIDController(rtol=1e-5, atol=1e-5), 0.01, y0)
        ),
    }
    mu, sigma = 0.5, 0.3

    def sde(key):
        # geometric Brownian motion, Heun on a VirtualBrownianTree (equinox's error_if callbacks
        # sit in cond branches inside the tree's search loop and diffrax's step loop)
        bm = diffrax.VirtualBrownianTree(0.0, 1.0, tol=1e-3, shape=(), key=key)
        terms = diffrax.MultiTerm(
            diffrax.ODETerm(lambda t, y, args: mu * y), diffrax.ControlTerm(lambda t, y, args: sigma * y, bm)
        )
        sol = diffrax.diffeqsolve(terms, diffrax.Heun(), 0.0, 1.0, 0.01, jnp.array(1.0, jnp.float32))
        return sol.ys[-1], sol.stats["num_steps"]

    cases["heun sde"] = jax.jit(sde)
    y0 = jnp.array([1.0, 0.0], jnp.float32)
    y0s = jnp.stack([jnp.linspace(-1.5, 1.5, 64), jnp.zeros(64)], axis=1).astype(jnp.float32)
    out = {}
    for name, f in cases.items():
        arg = y0s if "vmap" in name else jax.random.PRNGKey(0) if "sde" in name else y0
        t0 = time.perf_counter()
        y, n = jax.block_until_ready(f(arg))
        first = time.perf_counter() - t0
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            jax.block_until_ready(f(arg))
            times.append(time.perf_counter() - t0)
        out[name] = {
            "first_s": first,
            "steady_s": float(np.median(times)),
            "min_s": float(np.min(times)),
            "num_steps": int(np.max(np.asarray(n))),
            "y": np.asarray(y, np.float64).ravel()[:8].tolist(),
        }
    return out


def _run(cmd: list[str], env: dict) -> dict:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["_process_s"] = time.perf_counter() - t0
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--jax-python", default="/tmp/jaxenv/bin/python")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(_worker(a.repeat)))
        return
    script = os.path.abspath(__file__)
    runs = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, FJAX_CACHE_DIR=cache, FJAX_TIERED_COMPILE="0")
        worker = [sys.executable, "-m", "fjax.compat", script, "--worker", "--repeat", str(a.repeat)]
        runs["fjax cold"] = _run(worker, env)
        runs["fjax warm"] = _run(worker, env)
    if a.jax_python and os.path.exists(a.jax_python):
        env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
        runs["jax"] = _run([a.jax_python, script, "--worker", "--repeat", str(a.repeat)], env)
    cases = [k for k in runs["fjax cold"] if not k.startswith("_")]
    print(f"{'case':20s} {'steps':>6s} " + " ".join(f"{r + ' first':>16s} {r + ' steady':>17s}" for r in runs))
    for c in cases:
        cells = " ".join(f"{runs[r][c]['first_s']:15.3f}s {runs[r][c]['steady_s'] * 1e3:15.3f}ms" for r in runs)
        print(f"{c:20s} {runs['fjax warm'][c]['num_steps']:6d} {cells}")
    if "jax" in runs:
        import numpy as np  # noqa: PLC0415

        for c in cases:
            fj, jx = np.array(runs["fjax warm"][c]["y"]), np.array(runs["jax"][c]["y"])
            ratio = runs["fjax warm"][c]["steady_s"] / runs["jax"][c]["steady_s"]
            print(
                f"{c:20s} steady fjax/jax = {ratio:6.2f}x; steps fjax {runs['fjax warm'][c]['num_steps']} "
                f"jax {runs['jax'][c]['num_steps']}; max |y_fjax - y_jax| = {np.max(np.abs(fj - jx)):.2e}"
            )
    for r in runs:
        print(f"{r}: whole process {runs[r]['_process_s']:.1f} s (imports, all first calls, {a.repeat} repeats)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
