"""Eager overhead: the cost of an fjax op over the same numpy call, measured side by side.

Run: python bench/bench_eager.py   (prints microseconds per call and the overhead per primitive)
"""

from __future__ import annotations

import timeit

import numpy as np

import fjax
from fjax import lax


def per_call_us(stmt, number: int = 20000, repeat: int = 7) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    rng = np.random.RandomState(0)
    xn = rng.rand(100).astype(np.float32)
    yn = rng.rand(100).astype(np.float32)
    x, y = fjax.Array(xn.copy()), fjax.Array(yn.copy())
    rows = [
        ("sin", lambda: np.sin(xn), lambda: lax.sin(x)),
        ("add", lambda: np.add(xn, yn), lambda: lax.add(x, y)),
        ("mul by python scalar", lambda: np.multiply(xn, np.float32(2.0)), lambda: lax.mul(x, 2.0)),
        ("reduce_sum", lambda: np.sum(xn, axis=(0,)), lambda: lax.reduce_sum(x, (0,))),
    ]
    try:
        import fjax.numpy as jnp

        rows += [
            ("jnp x + y (operator)", lambda: xn + yn, lambda: x + y),
            ("jnp.sin", lambda: np.sin(xn), lambda: jnp.sin(x)),
            ("jnp x * 2.0 (weak scalar)", lambda: xn * np.float32(2.0), lambda: x * 2.0),
        ]
    except Exception as e:  # noqa: BLE001
        print("fjax.numpy unavailable:", e)
    print(f"{'op (100-element f32)':32s} {'numpy us':>10s} {'fjax us':>10s} {'overhead us':>12s} {'ratio':>7s}")
    for name, fn_np, fn_fj in rows:
        try:
            fn_fj()
        except Exception as e:  # noqa: BLE001
            print(f"{name:32s} skipped: {e}")
            continue
        t_np = per_call_us(fn_np)
        t_fj = per_call_us(fn_fj)
        print(f"{name:32s} {t_np:10.2f} {t_fj:10.2f} {t_fj - t_np:12.2f} {t_fj / t_np:7.1f}x")


if __name__ == "__main__":
    main()
