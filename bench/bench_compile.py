"""First-call (cold cache) latency of ``fjax.jit`` against JAX's first call, and compile time
against program size.

Each program runs in a fresh Python process with an empty fjax kernel cache (``FJAX_CACHE_DIR``
set to a new temporary directory): the figure is the wall time of the first call of the jitted
function, from the call to the result materialized (trace, lowering, kernel compiles and the run),
after imports and data creation (wall time, and the process's CPU time, which on a loaded machine
says more about the work done: JAX's CPU time counts all its threads). The same program source
runs under JAX (``import jax``) when it is installed, also in a fresh process, so the ratios
compare like with like. numba's own caches of
fjax's helper modules (``vmath``, ``loops``, ...) are part of the installed package and stay warm
after their first use on a machine; only the cache of generated kernels starts empty.

fjax runs with its default, tiered compilation "auto" (a cheap program's first call is evaluated
eagerly while it compiles in the background; ``fjax/backends/tiering.py``); each program also
runs with tiering off ("compiled first": the first call compiles, as JAX's does), and the "2nd
call" column is what the second call waits for while the background compile finishes.

Programs: the digits-sized MLP (64-128-64-10, GELU, softmax cross-entropy) train step with Adam;
the gradient of a 64-unit tanh RNN ``scan`` over 1,000 steps; the gradient of a 3x3 convolution
(batch 128, 28x28x1 -> 16 channels); chains of ``sin(x) * 0.9 + c`` (200 and 2,000 steps);
``sin`` nested 3,000 deep; and elementwise chains of 1k/2k/4k/8k equations, whose times are
checked for linearity (the log-log slope of time against equations; 1 is linear).

Run: ``python bench/bench_compile.py [--only NAME ...] [--no-jax] [--timeout 600]``.
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are removed from the children's environment (JAX brings its
own BLAS; ARCHITECTURE.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Each program: source run in the child with ``jax`` and ``jnp`` bound to fjax or JAX. It defines
# ``fn`` (jitted) and ``args``; the child times ``fn(*args)`` to the result materialized.
PROGRAMS = {
    "mlp_adam": """
sizes = [64, 128, 64, 10]
rng = np.random.RandomState(0)
params = [(jnp.asarray((rng.randn(m, n) / np.sqrt(m)).astype(np.float32)), jnp.zeros(n, jnp.float32))
          for m, n in zip(sizes[:-1], sizes[1:])]
def loss_fn(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jax.nn.gelu(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - jnp.take_along_axis(logits, y[:, None], 1)[:, 0])
def step(params, m, v, t, x, y):
    loss, g = jax.value_and_grad(loss_fn)(params, x, y)
    t = t + 1
    m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
    v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
    mh = 1.0 / (1.0 - 0.9 ** t)
    vh = 1.0 / (1.0 - 0.999 ** t)
    params = jax.tree_util.tree_map(lambda p, m, v: p - 2e-3 * (m * mh) / (jnp.sqrt(v * vh) + 1e-8), params, m, v)
    return params, m, v, t, loss
fn = jax.jit(step)
zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
x = jnp.asarray(rng.randn(64, 64).astype(np.float32))
y = jnp.asarray(rng.randint(0, 10, 64).astype(np.int32))
args = (params, zeros, zeros, jnp.asarray(0.0, jnp.float32), x, y)
""",
    "rnn_scan_grad": """
T, H, D = 1000, 64, 16
rng = np.random.RandomState(0)
W = jnp.asarray((rng.randn(H, H) / np.sqrt(H)).astype(np.float32))
U = jnp.asarray((rng.randn(D, H) / np.sqrt(D)).astype(np.float32))
h0 = jnp.zeros(H, jnp.float32)
xs = jnp.asarray(rng.randn(T, D).astype(np.float32))
def loss(W, U, h0, xs):
    def body(h, x):
        h = jnp.tanh(h @ W + x @ U)
        return h, h
    h, hs = jax.lax.scan(body, h0, xs)
    return jnp.sum(hs * hs) + jnp.sum(h)
fn = jax.jit(jax.grad(loss, (0, 1)))
args = (W, U, h0, xs)
""",
    "conv_grad": """
DN = ("NHWC", "HWIO", "NHWC")
rng = np.random.RandomState(0)
def loss(x, w, g):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN)
    return jnp.sum(jnp.maximum(y, 0.0) * g)
fn = jax.jit(jax.grad(loss, argnums=(0, 1)))
args = (jnp.asarray(rng.randn(128, 28, 28, 1).astype(np.float32)),
        jnp.asarray(rng.randn(3, 3, 1, 16).astype(np.float32)),
        jnp.asarray(rng.randn(128, 28, 28, 16).astype(np.float32)))
""",
    "sin_chain_200": """
def f(x):
    for i in range(200):
        x = jnp.sin(x) * 0.9 + float(i % 7)
    return x
fn = jax.jit(f)
args = (jnp.asarray(np.linspace(-2, 2, 4096).astype(np.float32)),)
""",
    "sin_chain_2000": """
def f(x):
    for i in range(2000):
        x = jnp.sin(x) * 0.9 + float(i % 7)
    return x
fn = jax.jit(f)
args = (jnp.asarray(np.linspace(-2, 2, 4096).astype(np.float32)),)
""",
    "sin_nested_3000": """
def f(x):
    for _ in range(3000):
        x = jnp.sin(x)
    return x
fn = jax.jit(f)
args = (jnp.asarray(np.linspace(-2, 2, 4096).astype(np.float32)),)
""",
}

# elementwise chains of N equations (4 equations per round: mul, add, max, sub)
ELEMENTWISE = """
def f(x):
    for i in range({n} // 4):
        x = jnp.maximum(x * 1.0001 + 0.5, -1.0) - 0.25
    return x
fn = jax.jit(f)
args = (jnp.asarray(np.linspace(-2, 2, 4096).astype(np.float32)),)
"""
for _n in (1000, 2000, 4000, 8000):
    PROGRAMS[f"elementwise_{_n}"] = ELEMENTWISE.format(n=_n)

CHILD = """
import json, os, sys, time
t0 = time.perf_counter()
import numpy as np
if {use_jax!r}:
    import jax
    import jax.numpy as jnp
    ready = jax.block_until_ready
else:
    sys.path.insert(0, {root!r})
    import fjax as jax
    import fjax.numpy as jnp
    ready = lambda r: jax.tree_util.tree_map(np.asarray, r)
t_import = time.perf_counter() - t0
{program}
t1, c1 = time.perf_counter(), time.process_time()
ready(fn(*args))
t_first, c_first = time.perf_counter() - t1, time.process_time() - c1
t2 = time.perf_counter()
ready(fn(*args))
t_second = time.perf_counter() - t2
print("RESULT " + json.dumps(dict(import_s=t_import, first_s=t_first, first_cpu_s=c_first, second_s=t_second)))
"""


def run_child(name: str, use_jax: bool, timeout: float, tiered: str | None = None) -> dict | None:
    """The child's timings, or None (``error`` set) when it failed or timed out. ``tiered``: the
    child's ``FJAX_TIERED_COMPILE`` (None: fjax's default, "auto"; "1": every first call evaluates
    eagerly while numba compiles in a background thread, the second call waits for the compiled
    program; "0": the first call compiles)."""
    cache = tempfile.mkdtemp(prefix="fjax_cold_")
    env = dict(os.environ, FJAX_CACHE_DIR=cache)
    env.pop("FJAX_TIERED_COMPILE", None)
    if tiered is not None:
        env["FJAX_TIERED_COMPILE"] = tiered
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(k, None)
    src = CHILD.format(use_jax=use_jax, root=ROOT, program=PROGRAMS[name])
    try:
        p = subprocess.run(
            [sys.executable, "-c", src], env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": (p.stderr.strip().splitlines() or ["no output"])[-1]}


def have_jax() -> bool:
    try:
        import jax  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


def fmt(r: dict | None, key: str = "first_s") -> str:
    if r is None:
        return "-"
    if "error" in r:
        return r["error"][:40]
    return f"{r[key]:.2f} s"


def ratio(f: dict | None, j: dict | None, key: str) -> str:
    if f and j and "error" not in f and "error" not in j:
        return f"{f[key] / j[key]:.2f}"
    return "-"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", help="program names (default: all)")
    ap.add_argument("--no-jax", action="store_true", help="do not run JAX even when installed")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per child process")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument(
        "--tiered", choices=["auto", "1", "0"], help="fjax's fjax_tiered_compile (default: fjax's default, auto)"
    )
    args = ap.parse_args()
    names = args.only or list(PROGRAMS)
    use_jax = have_jax() and not args.no_jax
    results = {}
    compiled_too = args.tiered != "0"  # also run each program with tiering off: its compile time
    print(
        f"{'program':18s} {'fjax first':>11s} {'JAX first':>11s} {'ratio':>6s}   "
        f"{'fjax CPU':>9s} {'JAX CPU':>9s} {'ratio':>6s}   {'fjax 2nd call':>13s}"
        + (f"   {'compiled first':>14s} {'ratio':>6s}" if compiled_too else "")
    )
    for name in names:
        f = run_child(name, False, args.timeout, tiered=args.tiered)
        j = run_child(name, True, args.timeout) if use_jax else None
        c = run_child(name, False, args.timeout, tiered="0") if compiled_too else f
        results[name] = {"fjax": f, "jax": j, "fjax_compiled": c}
        second = f"{f['second_s'] * 1e3:.2f} ms" if f and "error" not in f else "-"
        extra = f"   {fmt(c):>14s} {ratio(c, j, 'first_s'):>6s}" if compiled_too else ""
        print(
            f"{name:18s} {fmt(f):>11s} {fmt(j):>11s} {ratio(f, j, 'first_s'):>6s}   "
            f"{fmt(f, 'first_cpu_s'):>9s} {fmt(j, 'first_cpu_s'):>9s} {ratio(f, j, 'first_cpu_s'):>6s}   "
            f"{second:>13s}{extra}",
            flush=True,
        )
    # compile time against program size: the compiled first calls (tiering off)
    sizes = [(int(n.split("_")[1]), results[n]["fjax_compiled"]) for n in names if n.startswith("elementwise_")]
    sizes = [(n, r["first_s"]) for n, r in sizes if r and "error" not in r]
    if len(sizes) >= 2:
        (n0, t0), (n1, t1) = sizes[0], sizes[-1]
        slope = math.log(t1 / t0) / math.log(n1 / n0)
        print(
            f"elementwise chains, compiled first call ~ equations^{slope:.2f} ({n0} -> {n1} equations: "
            f"{t0:.2f} -> {t1:.2f} s)"
        )
        print("  linear or better" if slope <= 1.1 else "  SUPER-LINEAR: compile time grows faster than the program")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


def run(quick: bool = False) -> list:
    """Rows for bench/run_all.py: the first call (cold kernel cache, fresh process) of each
    program, fjax vs JAX (``--quick``: the digits step, the RNN and conv gradients, the 200-step
    chain)."""
    from _pairs import Row  # noqa: PLC0415

    names = ["mlp_adam", "rnn_scan_grad", "conv_grad", "sin_chain_200"] if quick else list(PROGRAMS)
    use_jax = have_jax()
    rows = []
    for name in names:
        f = run_child(name, False, 600.0)  # fjax's default: tiered "auto"
        j = run_child(name, True, 600.0) if use_jax else None
        ok = lambda r: r is not None and "error" not in r  # noqa: E731
        waited = f"second call {f['second_s']:.3f} s (waits for a background compile)" if ok(f) else ""
        rows.append(
            Row(
                f"first call, cold cache: {name}",
                f["first_s"] if ok(f) else None,
                j["first_s"] if ok(j) else None,
                note=waited or (f or {}).get("error", ""),
            )
        )
        c = run_child(name, False, 600.0, tiered="0")
        rows.append(
            Row(
                f"first call, cold cache, compiled (tiering off): {name}",
                c["first_s"] if ok(c) else None,
                j["first_s"] if ok(j) else None,
                note="" if ok(c) else (c or {}).get("error", ""),
            )
        )
    return rows


if __name__ == "__main__":
    main()
