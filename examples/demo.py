"""fjax demo: train a small MLP on a two-spirals problem with jit, grad and vmap.

Runs on CPU in a few seconds:  python examples/demo.py
"""

from __future__ import annotations

import time

import numpy as np

import fjax
import fjax.numpy as jnp


def make_spirals(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(seed)
    t = np.sqrt(rng.rand(n)) * 3 * np.pi
    cls = rng.randint(0, 2, n)
    r = t / (3 * np.pi)
    ang = t + np.pi * cls
    x = np.stack([r * np.cos(ang), r * np.sin(ang)], 1) + 0.02 * rng.randn(n, 2)
    return x.astype(np.float32), cls.astype(np.int32)


def init_params(sizes: list[int], seed: int = 0) -> list[dict]:
    rng = np.random.RandomState(seed)
    return [
        {"w": jnp.asarray(rng.randn(m, n).astype(np.float32) * np.sqrt(2.0 / m)), "b": jnp.zeros(n)}
        for m, n in zip(sizes[:-1], sizes[1:])
    ]


def forward(params: list[dict], x: fjax.Array) -> fjax.Array:
    for layer in params[:-1]:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params: list[dict], x: fjax.Array, y: fjax.Array) -> fjax.Array:
    logits = forward(params, x)
    logz = jnp.log(jnp.sum(jnp.exp(logits - logits.max(axis=1, keepdims=True)), axis=1)) + logits.max(axis=1)
    picked = jnp.take_along_axis(logits, y[:, None], axis=1)[:, 0]
    return jnp.mean(logz - picked)


@fjax.jit
def train_step(params: list[dict], x: fjax.Array, y: fjax.Array, lr: float) -> tuple[list[dict], fjax.Array]:
    loss, grads = fjax.value_and_grad(loss_fn)(params, x, y)
    params = fjax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    return params, loss


@fjax.jit
def accuracy(params: list[dict], x: fjax.Array, y: fjax.Array) -> fjax.Array:
    return jnp.mean(jnp.argmax(forward(params, x), axis=1) == y)


def main() -> None:
    x_train, y_train = make_spirals(2000, seed=0)
    x_test, y_test = make_spirals(1000, seed=1)
    params = init_params([2, 64, 64, 2])
    print(fjax.make_jaxpr(loss_fn)(params, x_train[:4], y_train[:4]))
    t0 = time.perf_counter()
    steps = 1500
    for step in range(steps + 1):
        params, loss = train_step(params, x_train, y_train, 0.3)
        if step % 300 == 0:
            acc = float(accuracy(params, x_test, y_test))
            print(f"step {step:5d}  loss {float(loss):.4f}  test accuracy {acc:.3f}")
    dt = time.perf_counter() - t0
    print(f"{steps} jitted training steps in {dt:.1f} s")
    # per-example gradient norms with vmap(grad)
    per_ex = fjax.vmap(fjax.grad(loss_fn), in_axes=(None, 0, 0))(params, x_test[:8, None], y_test[:8, None])
    norms = jnp.sqrt(sum(jnp.sum(g["w"] ** 2, axis=(1, 2)) for g in per_ex))
    print("per-example gradient norms (vmap of grad):", np.round(np.asarray(norms), 4))
    final = float(accuracy(params, x_test, y_test))
    print(f"final test accuracy {final:.3f}")
    if final < 0.9:
        raise SystemExit("demo: accuracy below 0.9 -- something is wrong")


if __name__ == "__main__":
    main()
