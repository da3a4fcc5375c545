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


def _jax_adam_step(jax):
    """The digits MLP step in JAX: GELU MLP 64-128-64-10, softmax cross-entropy, global-norm
    clipping and Adam with a cosine-decayed learning rate, written out (no optax)."""
    jnp = jax.numpy

    def loss_fn(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.gelu(h @ w + b)
        w, b = params[-1]
        logits = h @ w + b
        return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - jnp.take_along_axis(logits, y[:, None], 1)[:, 0])

    @jax.jit
    def step(params, state, x, y):
        m, v, t = state
        loss, g = jax.value_and_grad(loss_fn)(params, x, y)
        leaves = jax.tree_util.tree_leaves(g)
        norm = jnp.sqrt(sum(jnp.sum(a * a) for a in leaves))
        g = jax.tree_util.tree_map(lambda a: a * jnp.minimum(1.0, 5.0 / norm), g)
        t = t + 1
        lr = 2e-3 * (0.05 + 0.95 * 0.5 * (1 + jnp.cos(jnp.pi * jnp.minimum(t, 1000) / 1000)))
        m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        c1, c2 = 1 - 0.9**t, 1 - 0.999**t
        params = jax.tree_util.tree_map(lambda p, a, b: p - lr * (a / c1) / (jnp.sqrt(b / c2) + 1e-8), params, m, v)
        return params, (m, v, t), loss

    k = jax.random.PRNGKey(0)
    params = []
    for a, b in zip([64, 128, 64], [128, 64, 10]):
        k, sub = jax.random.split(k)
        params.append((jax.random.normal(sub, (a, b)) / np.sqrt(a), jnp.zeros(b)))
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return step, params, (zeros, zeros, jnp.zeros((), jnp.int32))


def run(quick: bool = False) -> list:
    """Rows for bench/run_all.py: one digits train step (MLP 64-128-64-10 + Adam, batch 64),
    fjax.jit vs jax.jit, on the machine as it is and with two other busy processes on it (the
    loaded/quiet ratio of each library)."""
    import subprocess  # noqa: PLC0415

    from _pairs import Row, jax_or_none, pair  # noqa: PLC0415

    fjax.config.update("fjax_jit_backend", "numba")
    x_tr, y_tr, _, _ = ex.prepare_data(random.PRNGKey(0))
    x, y = x_tr[:BATCH].astype(np.float32), y_tr[:BATCH].astype(np.int32)
    opt = ex.make_optimizer()
    step = ex.make_train_step(opt)
    fstate = [ex.init_model(random.PRNGKey(1)), None]
    fstate[1] = opt.init(fstate[0])

    def fj():
        fstate[0], fstate[1], loss = step(fstate[0], fstate[1], x, y)
        return loss

    fns = {"fjax": fj}
    jax = jax_or_none()
    if jax is not None:
        jstep, jp, js = _jax_adam_step(jax)
        jstate = [jp, js]
        jx, jy = jax.device_put(x), jax.device_put(y)

        def jf():
            jstate[0], jstate[1], loss = jstep(jstate[0], jstate[1], jx, jy)
            return loss.block_until_ready()

        fns["jax"] = jf
    quiet = pair(fns, quick, seconds=1.0)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(0.3)
        loaded = pair(fns, quick, seconds=1.0)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    name = f"digits MLP 64-128-64-10 + Adam step, batch {BATCH}"
    rows = [
        Row(name, quiet["fjax"], quiet.get("jax")),
        Row(name + ", 2 busy processes", loaded["fjax"], loaded.get("jax")),
        Row("  fjax loaded/quiet", value=loaded["fjax"] / quiet["fjax"], unit="x"),
    ]
    if jax is not None:
        rows.append(Row("  JAX loaded/quiet", value=loaded["jax"] / quiet["jax"], unit="x"))
    return rows


if __name__ == "__main__":
    main()
