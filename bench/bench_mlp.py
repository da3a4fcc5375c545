"""MLP train step benchmark: ``fjax.jit`` of value_and_grad + SGD on a 784-512-512-10 tanh MLP,
batch 256, float32, written the way a user writes it with fjax.numpy.

Ratios are measured side by side in one process (fjax and jax round-robin with each other; the
numpy baselines round-robin in a loop of their own, so their heap churn and BLAS threads do not
land on the steps compared):

- against the step's matmuls alone through numpy's BLAS: the step needs exactly 8 GEMMs
  (3 forward: ``x@w1``, ``h1@w2``, ``h2@w3``; 5 backward: ``h2.T@d3``, ``d3@w3.T``, ``h1.T@d2``,
  ``d2@w2.T``, ``x.T@d1`` -- no gradient flows to ``x``), timed as exactly those ``np.dot`` calls
  on preallocated outputs;
- against a hand-written numpy step (what eager numpy can do at best);
- against ``jax.jit`` of the same step when jax is importable.

Compile times: first call in a fresh process with an empty kernel cache (cold), and first call in
a new process with the cache the cold run left (warm); both measured in subprocesses, so they
include import and numba start-up, reported separately. The warm first call is also given in its
parts (trace, lower + load the cached kernels, run) with the number of numba target refreshes,
which should be 0: loading cached kernels skips numba's ~0.3 s registry loading
(``fjax/backends/numba/warm_load.py``). On a loaded machine the run part can jump by 0.1-0.3 s:
OpenBLAS's worker threads wait for each other when the cores are oversubscribed.

Run: ``python bench/bench_mlp.py [--repeat 50] [--show-ir]``. When jax is importable, run the
comparison with ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_mlp.py`` (see
ARCHITECTURE.md: those variables pin numpy's OpenBLAS to slower Haswell kernels, and JAX brings its
own kernels; both sides then use their best kernels).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SIZES = (784, 512, 512, 10)
BATCH = 256
LR = 0.01


def init_params(rng: np.random.Generator) -> list:
    params = []
    for m, n in zip(SIZES[:-1], SIZES[1:]):
        w = (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32)
        b = np.zeros((n,), np.float32)
        params.append((w, b))
    return params


def make_data(rng: np.random.Generator) -> tuple:
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    labels = rng.integers(0, SIZES[-1], BATCH)
    y = np.eye(SIZES[-1], dtype=np.float32)[labels]
    return x, y


def make_fjax_step():
    import fjax  # noqa: PLC0415
    import fjax.numpy as jnp  # noqa: PLC0415
    from fjax import lax  # noqa: PLC0415
    from fjax.tree_util import tree_map  # noqa: PLC0415

    def logsumexp(a, axis, keepdims=False):
        # as jax.nn.logsumexp: shift by the (finite, stop-gradient) max
        m = jnp.max(a, axis=axis, keepdims=True)
        m = lax.stop_gradient(jnp.where(jnp.isfinite(m), m, 0.0))
        out = jnp.log(jnp.sum(jnp.exp(a - m), axis=axis, keepdims=True)) + m
        return out if keepdims else jnp.squeeze(out, axis)

    def predict(params, x):
        for w, b in params[:-1]:
            x = jnp.tanh(x @ w + b)
        w, b = params[-1]
        return x @ w + b

    def loss(params, x, y):
        logits = predict(params, x)
        logp = logits - logsumexp(logits, axis=1, keepdims=True)
        return -jnp.mean(jnp.sum(logp * y, axis=1))

    @fjax.jit
    def step(params, x, y):
        val, grads = fjax.value_and_grad(loss)(params, x, y)
        return val, tree_map(lambda p, g: p - LR * g, params, grads)

    return step


def numpy_step(params: list, x: np.ndarray, y: np.ndarray) -> tuple:
    """The same step by hand in numpy (reference values and eager baseline)."""
    (w1, b1), (w2, b2), (w3, b3) = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    z = h2 @ w3 + b3
    m = z.max(axis=1, keepdims=True)
    e = np.exp(z - m)
    s = e.sum(axis=1, keepdims=True)
    logp = z - m - np.log(s)
    val = -np.mean(np.sum(logp * y, axis=1))
    n = x.shape[0]
    d3 = (e / s * y.sum(axis=1, keepdims=True) - y) / np.float32(n)
    d2 = (d3 @ w3.T) * (1 - h2 * h2)
    d1 = (d2 @ w2.T) * (1 - h1 * h1)
    g = [(x.T @ d1, d1.sum(0)), (h1.T @ d2, d2.sum(0)), (h2.T @ d3, d3.sum(0))]
    lr = np.float32(LR)
    return val, [(w - lr * gw, b - lr * gb) for (w, b), (gw, gb) in zip(params, g)]


def matmuls_alone(params: list, x: np.ndarray):
    """The 8 GEMMs of the step, as np.dot calls on preallocated outputs (the BLAS floor)."""
    (w1, _), (w2, _), (w3, _) = params
    rng = np.random.default_rng(1)
    h1 = rng.standard_normal((BATCH, 512)).astype(np.float32)
    h2 = rng.standard_normal((BATCH, 512)).astype(np.float32)
    d1 = rng.standard_normal((BATCH, 512)).astype(np.float32)
    d2 = rng.standard_normal((BATCH, 512)).astype(np.float32)
    d3 = rng.standard_normal((BATCH, 10)).astype(np.float32)
    o = {
        k: np.empty(s, np.float32)
        for k, s in dict(
            z1=(256, 512),
            z2=(256, 512),
            z3=(256, 10),
            g3=(512, 10),
            dh2=(256, 512),
            g2=(512, 512),
            dh1=(256, 512),
            g1=(784, 512),
        ).items()
    }

    def run():
        np.dot(x, w1, o["z1"])
        np.dot(h1, w2, o["z2"])
        np.dot(h2, w3, o["z3"])
        np.dot(h2.T, d3, o["g3"])
        np.dot(d3, w3.T, o["dh2"])
        np.dot(h1.T, d2, o["g2"])
        np.dot(d2, w2.T, o["dh1"])
        np.dot(x.T, d1, o["g1"])

    return run


def timeit(f, repeat: int, inner: int = 1) -> float:
    """Median over ``repeat`` samples of ``inner`` calls (per call)."""
    for _ in range(3):
        f()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(inner):
            f()
        ts.append((time.perf_counter() - t) / inner)
    return float(np.median(ts))


def interleaved(fns: dict, repeat: int, inner: int = 5, settle: tuple = ()) -> dict:
    """Median per-call time of each function, sampled round-robin so drift hits all alike.

    After each sample of a function named in ``settle`` the loop sleeps ``SETTLE_S``: numpy's
    OpenBLAS team (the BLAS baselines) keeps a thread spinning ~0.1 s after each multi-threaded
    GEMM (measured here: 0.1 s of CPU time during a 0.2 s sleep after one 512^3 GEMM), which would
    otherwise take a core from whichever function is timed next."""
    for f in fns.values():
        for _ in range(3):
            f()
    ts: dict = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t = time.perf_counter()
            for _ in range(inner):
                f()
            ts[k].append((time.perf_counter() - t) / inner)
            if k in settle:
                time.sleep(SETTLE_S)
    return {k: float(np.median(v)) for k, v in ts.items()}


SETTLE_S = 0.15


# ---- compile-time probe (runs in a subprocess) ---------------------------------------------------


def _probe(cache_dir: str) -> None:
    t0 = time.perf_counter()
    import fjax  # noqa: PLC0415
    from fjax.config import config  # noqa: PLC0415

    config.update("fjax_cache_dir", cache_dir)
    config.update("fjax_disk_cache", True)
    fjax.config.update("fjax_jit_backend", "numba")
    import numba  # noqa: F401, PLC0415
    from numba.core.cpu import CPUContext  # noqa: PLC0415

    from fjax.backends import dispatch  # noqa: PLC0415

    # count numba's target refreshes: the first one loads all of numba's registries (~0.3 s). (Patched
    # on the class: touching cpu_target.target_context here would move its creation out of the call.)
    refreshes, refresh = [], CPUContext.refresh
    CPUContext.refresh = lambda self: (refreshes.append(1), refresh(self))[1]
    t1 = time.perf_counter()
    rng = np.random.default_rng(0)
    params = init_params(rng)
    x, y = make_data(rng)
    step = make_fjax_step()
    # the first call, in its parts: trace (jit's cache), lower + load kernels (lowering's cache), run
    t2 = time.perf_counter()
    low = step.lower(params, x, y)
    t3 = time.perf_counter()
    dispatch.compile_jaxpr(low.jaxpr, tiered=False)  # (a tiered first call would be left uncalled)
    t4 = time.perf_counter()
    out = step(params, x, y)
    float(out[0])
    t5 = time.perf_counter()
    step(params, x, y)
    t6 = time.perf_counter()
    parts = dict(trace=t3 - t2, lower_and_load=t4 - t3, run=t5 - t4, numba_refreshes=len(refreshes))
    print(json.dumps(dict(imports=t1 - t0, first_call=t5 - t2, second_call=t6 - t5, parts=parts)))


def compile_times() -> tuple:
    d = tempfile.mkdtemp(prefix="fjax_mlp_cache_")
    res = []
    for _ in range(2):
        p = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--probe", d], capture_output=True, text=True, check=True
        )
        res.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return res[0], res[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=40)
    ap.add_argument("--show-ir", action="store_true", help="print the jaxpr and the generated kernels")
    ap.add_argument("--no-compile-times", action="store_true")
    ap.add_argument("--probe", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.probe:
        _probe(args.probe)
        return

    import fjax  # noqa: PLC0415
    from fjax.config import config  # noqa: PLC0415

    config.update("fjax_cache_dir", tempfile.mkdtemp(prefix="fjax_bench_mlp_"))
    fjax.config.update("fjax_jit_backend", "numba")

    rng = np.random.default_rng(0)
    params = init_params(rng)
    x, y = make_data(rng)
    step = make_fjax_step()
    # fjax Arrays (read-only, no per-call conversion), as a training loop carries them
    to_arr = fjax.jit(lambda t: t)
    fparams, fx, fy = to_arr(params), to_arr(x), to_arr(y)

    if args.show_ir:
        low = step.lower(fparams, fx, fy)
        print(low.jaxpr)
        print(low.as_text())

    val, new = step(fparams, fx, fy)
    rval, rnew = numpy_step(params, x, y)
    np.testing.assert_allclose(float(val), rval, rtol=1e-4)
    for (w, b), (rw, rb) in zip(new, rnew):
        np.testing.assert_allclose(np.asarray(w), rw, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(np.asarray(b), rb, rtol=1e-4, atol=1e-6)

    fns = {
        "matmuls alone (8 np.dot)": matmuls_alone(params, x),
        "fjax.jit step": lambda: step(fparams, fx, fy),
        "numpy step (hand-written)": lambda: numpy_step(params, x, y),
    }
    have_jax = False
    try:
        import jax  # noqa: PLC0415
        import jax.numpy as jnp  # noqa: PLC0415
        from jax.nn import logsumexp as jlse  # noqa: PLC0415

        def jpredict(params, x):
            for w, b in params[:-1]:
                x = jnp.tanh(x @ w + b)
            w, b = params[-1]
            return x @ w + b

        def jloss(params, x, y):
            logits = jpredict(params, x)
            logp = logits - jlse(logits, axis=1, keepdims=True)
            return -jnp.mean(jnp.sum(logp * y, axis=1))

        @jax.jit
        def jstep(params, x, y):
            val, grads = jax.value_and_grad(jloss)(params, x, y)
            return val, jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)

        jp, jx, jy = jax.device_put(params), jax.device_put(x), jax.device_put(y)
        t = time.perf_counter()
        jax.block_until_ready(jstep(jp, jx, jy))
        jax_compile = time.perf_counter() - t
        fns["jax.jit step"] = lambda: jax.block_until_ready(jstep(jp, jx, jy))
        have_jax = True
    except ImportError:
        pass

    # fjax and jax round-robin with each other only, the numpy baselines in a loop of their own:
    # the numpy step frees ~100 MB of temporaries per call (glibc then trims its heap, and the next
    # function's output arrays fault their pages back in: 194 minor faults per fjax step there, 6
    # without it; 33 for jax's own allocator), and numpy's OpenBLAS team spins after its GEMMs
    pair = {k: f for k, f in fns.items() if k in ("fjax.jit step", "jax.jit step")}
    res = interleaved(pair, args.repeat)
    baselines = {k: f for k, f in fns.items() if k not in pair}
    res.update(interleaved(baselines, args.repeat, settle=tuple(baselines)))
    res = {k: res[k] for k in fns}
    base = res["matmuls alone (8 np.dot)"]
    blas = {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    print(f"MLP {'-'.join(map(str, SIZES))} batch {BATCH} f32 train step; median of {args.repeat}x5 calls; {blas}")
    for k, v in res.items():
        print(f"  {k:28s} {v * 1e3:7.3f} ms   x{v / base:5.2f} of matmuls alone")
    if have_jax:
        print(
            f"  fjax / jax time ratio: {res['fjax.jit step'] / res['jax.jit step']:.2f}"
            f"   (jax first call {jax_compile:.2f} s)"
        )
    if not args.no_compile_times:
        cold, warm = compile_times()
        print(
            f"  first call, new process, empty kernel cache: {cold['first_call']:.2f} s "
            f"(+ imports {cold['imports']:.2f} s)"
        )
        p = warm["parts"]
        print(
            f"  first call, new process, warm disk cache:    {warm['first_call']:.3f} s "
            f"(+ imports {warm['imports']:.2f} s; trace {p['trace'] * 1e3:.0f} ms, lower + load kernels "
            f"{p['lower_and_load'] * 1e3:.0f} ms, run {p['run'] * 1e3:.0f} ms, numba refreshes {p['numba_refreshes']})"
        )


def _jax_step(jax):
    jnp = jax.numpy

    def jloss(params, x, y):
        for w, b in params[:-1]:
            x = jnp.tanh(x @ w + b)
        w, b = params[-1]
        logits = x @ w + b
        logp = logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)
        return -jnp.mean(jnp.sum(logp * y, axis=1))

    @jax.jit
    def jstep(params, x, y):
        val, grads = jax.value_and_grad(jloss)(params, x, y)
        return val, jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)

    return jstep


def run(quick: bool = False) -> list:
    """Rows for bench/run_all.py: the MLP train step, fjax.jit (numba backend) vs jax.jit."""
    from _pairs import jax_or_none, row  # noqa: PLC0415

    import fjax  # noqa: PLC0415

    fjax.config.update("fjax_jit_backend", "numba")
    rng = np.random.default_rng(0)
    params = init_params(rng)
    x, y = make_data(rng)
    step = make_fjax_step()
    to_arr = fjax.jit(lambda t: t)
    fparams, fx, fy = to_arr(params), to_arr(x), to_arr(y)
    jax = jax_or_none()
    jfn = None
    if jax is not None:
        jstep = _jax_step(jax)
        jp, jx, jy = jax.device_put(params), jax.device_put(x), jax.device_put(y)
        jfn = lambda: jax.block_until_ready(jstep(jp, jx, jy))  # noqa: E731
    name = f"MLP {'-'.join(map(str, SIZES))} batch {BATCH} train step"
    return [row(name, lambda: step(fparams, fx, fy), jfn, quick, seconds=1.5)]


if __name__ == "__main__":
    main()
