"""The digits MLP (examples/digits_mlp.py): time per epoch with the train step jitted (numba
backend and interpret backend) and eager (jit disabled), side by side in one process, and against
the same model in JAX when JAX is installed.

Run: python bench/bench_digits.py
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

import digits_mlp as ex  # noqa: E402

import fjax  # noqa: E402
from fjax import random  # noqa: E402

BATCH = 64


def epoch_fn(step, model, state, x, y):
    n = (len(x) // BATCH) * BATCH
    loss = None
    for i in range(0, n, BATCH):
        model, state, loss = step(model, state, x[i : i + BATCH], y[i : i + BATCH])
    np.asarray(loss)
    return model, state


def time_epochs(step, model, state, x, y, epochs=3):
    model, state = epoch_fn(step, model, state, x, y)  # warm-up: compile
    t0 = time.perf_counter()
    for _ in range(epochs):
        model, state = epoch_fn(step, model, state, x, y)
    return (time.perf_counter() - t0) / epochs


def bench_jax(x, y):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    k = jax.random.PRNGKey(0)
    sizes = [64, 128, 64, 10]
    params = []
    for m, n in zip(sizes[:-1], sizes[1:]):
        k, sub = jax.random.split(k)
        params.append((jax.random.normal(sub, (m, n)) / np.sqrt(m), jnp.zeros(n)))

    def loss_fn(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.gelu(h @ w + b)
        w, b = params[-1]
        logits = h @ w + b
        return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - jnp.take_along_axis(logits, y[:, None], 1)[:, 0])

    @jax.jit
    def step(params, _state, x, y):
        loss, g = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree_util.tree_map(lambda p, gg: p - 1e-2 * gg, params, g), None, loss

    return time_epochs(step, params, None, x, y)


def main() -> None:
    x_tr, y_tr, _, _ = ex.prepare_data(random.PRNGKey(0))
    x_tr, y_tr = x_tr.astype(np.float32), y_tr.astype(np.int32)
    model = ex.init_model(random.PRNGKey(1))
    opt = ex.make_optimizer()
    results = {}
    for backend in ("numba", "interpret"):
        fjax.config.update("fjax_jit_backend", backend)
        step = ex.make_train_step(opt)
        results[f"jit ({backend})"] = time_epochs(step, model, opt.init(model), x_tr, y_tr)
    fjax.config.update("fjax_jit_backend", "numba")
    fjax.config.update("jax_disable_jit", True)
    try:
        step = ex.make_train_step(opt)
        results["eager (jit disabled)"] = time_epochs(step, model, opt.init(model), x_tr, y_tr, epochs=1)
    finally:
        fjax.config.update("jax_disable_jit", False)
    t_jax = bench_jax(x_tr, y_tr)
    base = results["jit (numba)"]
    print(f"digits MLP 64-128-64-10, batch {BATCH}, {len(x_tr) // BATCH} steps per epoch")
    for name, t in results.items():
        print(f"  fjax {name:22s} {t * 1e3:8.1f} ms/epoch  ({t / base:5.2f}x the numba-jitted epoch)")
    if t_jax is not None:
        print(f"  JAX jit (plain SGD step)     {t_jax * 1e3:8.1f} ms/epoch  (fjax numba / JAX = {base / t_jax:.2f})")


if __name__ == "__main__":
    main()
