"""Benchmark of ``lax.scan``: a 64-unit tanh RNN over 1,000 steps, forward and gradient, eager
and jitted (fjax's default ``interpret`` jit backend, and ``numba`` with --numba), against a
numpy loop written by hand and JAX's jit when jax is importable; plus trace+first-call time of
a jitted scan for 10 vs 10,000 steps (a scan is traced once, whatever its length).

Run: ``python bench/bench_scan.py [--steps 1000] [--hidden 64] [--repeat 5] [--numba]``.
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
from fjax.config import config  # noqa: E402
from fjax.lax.control_flow.scan import scan  # noqa: E402


def best_of(f, repeat: int) -> float:
    f()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def make_loss(scan_fn, tanh, sum_):
    def loss(W, U, h0, xs):
        def step(h, x):
            h = tanh(h @ W + x @ U)
            return h, h

        h, hs = scan_fn(step, h0, xs)
        return sum_(hs * hs) + sum_(h)

    return loss


def np_forward(W, U, h0, xs):
    h = h0
    hs = np.empty((xs.shape[0], h0.shape[0]), np.float32)
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t] @ U)
        hs[t] = h
    return np.sum(hs * hs) + np.sum(h)


def np_grad(W, U, h0, xs):
    """Hand-written backprop through time (the numpy baseline for the gradient)."""
    T = xs.shape[0]
    hs = np.empty((T + 1, h0.shape[0]), np.float32)
    hs[0] = h0
    for t in range(T):
        hs[t + 1] = np.tanh(hs[t] @ W + xs[t] @ U)
    dW, dU = np.zeros_like(W), np.zeros_like(U)
    dh = np.ones_like(h0)  # from sum(h)
    for t in range(T - 1, -1, -1):
        dh = dh + 2 * hs[t + 1]
        da = dh * (1 - hs[t + 1] ** 2)
        dW += np.outer(hs[t], da)
        dU += np.outer(xs[t], da)
        dh = da @ W.T
    return dW, dU


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--numba", action="store_true", help="use the numba jit backend")
    args = ap.parse_args()
    if args.numba:
        config.update("fjax_jit_backend", "numba")
    T, H, D = args.steps, args.hidden, 16
    rng = np.random.RandomState(0)
    W = (rng.randn(H, H) / np.sqrt(H)).astype(np.float32)
    U = (rng.randn(D, H) / np.sqrt(D)).astype(np.float32)
    h0 = np.zeros(H, np.float32)
    xs = rng.randn(T, D).astype(np.float32)
    fargs = [jnp.asarray(a) for a in (W, U, h0, xs)]

    loss = make_loss(scan, jnp.tanh, jnp.sum)
    grad = fjax.grad(loss, (0, 1))
    jloss, jgrad = fjax.jit(loss), fjax.jit(grad)
    np.testing.assert_allclose(float(loss(*fargs)), np_forward(W, U, h0, xs), rtol=1e-3)
    gW, gU = grad(*fargs)
    rW, rU = np_grad(W, U, h0, xs)
    np.testing.assert_allclose(np.asarray(gW), rW, rtol=2e-3, atol=1e-3)

    rows = []
    t_np_f = best_of(lambda: np_forward(W, U, h0, xs), args.repeat)
    t_np_g = best_of(lambda: np_grad(W, U, h0, xs), args.repeat)
    rows.append(("numpy loop forward", t_np_f, None))
    rows.append(("numpy loop grad (by hand)", t_np_g, None))
    t = best_of(lambda: loss(*fargs), args.repeat)
    rows.append(("fjax eager forward", t, t / t_np_f))
    t = best_of(lambda: jloss(*fargs), args.repeat)
    rows.append(("fjax jit forward", t, t / t_np_f))
    t = best_of(lambda: grad(*fargs), args.repeat)
    rows.append(("fjax eager grad", t, t / t_np_g))
    t = best_of(lambda: jgrad(*fargs), args.repeat)
    rows.append(("fjax jit grad", t, t / t_np_g))

    jax_rows = []
    try:
        import jax  # noqa: PLC0415
        import jax.numpy as jjnp  # noqa: PLC0415

        jl = jax.jit(make_loss(jax.lax.scan, jjnp.tanh, jjnp.sum))
        jg = jax.jit(jax.grad(make_loss(jax.lax.scan, jjnp.tanh, jjnp.sum), (0, 1)))
        jargs = [jjnp.asarray(a) for a in (W, U, h0, xs)]
        tjf = best_of(lambda: jl(*jargs).block_until_ready(), args.repeat)
        tjg = best_of(lambda: jax.block_until_ready(jg(*jargs)), args.repeat)
        jax_rows = [("jax jit forward", tjf), ("jax jit grad", tjg)]
    except ImportError:
        pass

    backend = config.fjax_jit_backend
    print(f"tanh RNN, hidden {H}, input {D}, {T} steps (fjax jit backend: {backend})")
    for name, t, ratio in rows:
        r = f"  ({ratio:.2f}x numpy)" if ratio is not None else ""
        print(f"  {name:28s} {t * 1e3:9.2f} ms{r}")
    for name, t in jax_rows:
        print(f"  {name:28s} {t * 1e3:9.2f} ms")
    if jax_rows:
        fj = dict((n, t) for n, t, _ in rows)
        print(
            f"  fjax jit / jax jit: forward {fj['fjax jit forward'] / jax_rows[0][1]:.1f}x, "
            f"grad {fj['fjax jit grad'] / jax_rows[1][1]:.1f}x"
        )

    print("jit(grad) of a scan: trace, then first call minus a steady-state call (= compile/setup cost);")
    print("a scan is traced once whatever its length:")
    for steps in (10, 10_000):
        a = [jnp.asarray(W), jnp.asarray(U), jnp.asarray(h0), jnp.asarray(rng.randn(steps, D).astype(np.float32))]
        f = fjax.jit(fjax.grad(make_loss(scan, jnp.tanh, jnp.sum), (0, 1)))
        t0 = time.perf_counter()
        f.lower(*a)
        t1 = time.perf_counter()
        f(*a)
        t2 = time.perf_counter()
        f(*a)
        t3 = time.perf_counter()
        print(
            f"  {steps:6d} steps: trace {1e3 * (t1 - t0):8.2f} ms, first call {1e3 * (t2 - t1):9.2f} ms, "
            f"second call {1e3 * (t3 - t2):9.2f} ms, first-call overhead {1e3 * (t2 - t1 - (t3 - t2)):8.2f} ms"
        )


def run(quick: bool = False) -> list:
    """Rows for bench/run_all.py: the tanh RNN scan (hidden 64, 1,000 steps), forward and
    gradient, fjax.jit (numba backend) vs jax.jit."""
    from _pairs import jax_or_none, row  # noqa: PLC0415

    config.update("fjax_jit_backend", "numba")
    T, H, D = 1000, 64, 16
    rng = np.random.RandomState(0)
    W = (rng.randn(H, H) / np.sqrt(H)).astype(np.float32)
    U = (rng.randn(D, H) / np.sqrt(D)).astype(np.float32)
    h0 = np.zeros(H, np.float32)
    xs = rng.randn(T, D).astype(np.float32)
    fargs = [jnp.asarray(a) for a in (W, U, h0, xs)]
    loss = make_loss(scan, jnp.tanh, jnp.sum)
    fl, fg = fjax.jit(loss), fjax.jit(fjax.grad(loss, (0, 1)))
    jax = jax_or_none()
    jf = jg = None
    if jax is not None:
        jl = make_loss(jax.lax.scan, jax.numpy.tanh, jax.numpy.sum)
        j1, j2 = jax.jit(jl), jax.jit(jax.grad(jl, (0, 1)))
        jargs = [jax.numpy.asarray(a) for a in (W, U, h0, xs)]
        jf = lambda: j1(*jargs).block_until_ready()  # noqa: E731
        jg = lambda: jax.block_until_ready(j2(*jargs))  # noqa: E731
    return [
        row("scan tanh RNN h64, 1000 steps: forward", lambda: fl(*fargs), jf, quick),
        row("scan tanh RNN h64, 1000 steps: grad", lambda: fg(*fargs), jg, quick),
    ]


if __name__ == "__main__":
    main()
