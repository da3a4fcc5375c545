"""Invalid calls whose JAX message fjax raises word for word, beyond ``error_cases.py``: the
message families (lax dtype classes per op, equal-rank broadcasting errors of jnp/scipy functions,
out-of-range axes, ...) over more ops than that corpus holds. Each case is a Python expression over
``np``, ``jnp``, ``lax``, ``sp`` (jax.scipy.special), ``st`` (jax.scipy.stats), ``jax_random`` and a
few arrays
(``namespace``). ``make_error_messages_extra.py`` records what JAX raises into
``error_messages_extra.json``; ``tests/test_error_messages_extra.py`` checks fjax against it.
Neither jax nor fjax is imported here.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np


def namespace(jax: Any) -> dict:
    """The names the expressions use, for ``jax`` (JAX or fjax)."""
    name = jax.__name__
    return dict(
        np=np,
        jnp=importlib.import_module(f"{name}.numpy"),
        lax=importlib.import_module(f"{name}.lax"),
        sp=importlib.import_module(f"{name}.scipy.special"),
        st=importlib.import_module(f"{name}.scipy.stats"),
        jax_random=importlib.import_module(f"{name}.random"),
        f32=np.ones(2, np.float32),
        i32=np.ones(2, np.int32),
        b=np.ones(2, bool),
        c64=np.ones(2, np.complex64),
        f16=np.ones(2, np.float16),
        m=np.ones((2, 3), np.float32),
    )


def run(expr: str, ns: dict) -> list | None:
    """Evaluate ``expr``; the [class name, message] of what it raised, or None."""
    try:
        eval(expr, dict(ns))  # noqa: S307 - the expressions are this file's own
    except Exception as e:  # noqa: BLE001 - the point is to record whatever is raised
        return [type(e).__name__, str(e)]
    return None


CASES: dict[str, str] = {}
_b = "(np.ones(2, np.float32), np.ones(3, np.float32))"
_bi = "(np.ones(2, np.int32), np.ones(3, np.int32))"
for n in [
    "add",
    "subtract",
    "multiply",
    "divide",
    "true_divide",
    "floor_divide",
    "maximum",
    "minimum",
    "power",
    "float_power",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "arctan2",
    "hypot",
    "logaddexp",
    "logaddexp2",
    "remainder",
    "fmod",
    "nextafter",
    "isclose",
    "fmax",
    "fmin",
    "mod",
    "ldexp",
    "gcd",
    "lcm",
]:
    args = _bi if n in ("gcd", "lcm") else _b
    if n == "ldexp":
        args = "(np.ones(2, np.float32), np.ones(3, np.int32))"
    CASES[f"jnp.{n} shapes"] = f"jnp.{n}{args}"
for n in ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]:
    CASES[f"jnp.{n} shapes"] = f"jnp.{n}{_bi}"
for n in ["xlogy", "xlog1py", "kl_div", "rel_entr", "gammainc", "zeta"]:
    CASES[f"sp.{n} shapes"] = f"sp.{n}{_b}"
for d in ["norm", "cauchy", "logistic", "laplace", "expon", "uniform"]:
    CASES[f"st.{d}.logpdf shapes"] = f"st.{d}.logpdf{_b}"
# lax dtype classes, unary and n-ary, at positions 0 and 1
for n, a in [
    ("cos", "i32"),
    ("log", "b"),
    ("tanh", "i32"),
    ("floor", "i32"),
    ("ceil", "c64"),
    ("cbrt", "c64"),
    ("lgamma", "i32"),
    ("digamma", "i32"),
    ("erf", "c64"),
    ("sign", "b"),
    ("square", "b"),
    ("imag", "f32"),
    ("population_count", "f32"),
    ("logistic", "i32"),
    ("rsqrt", "i32"),
]:
    CASES[f"lax.{n} {a}"] = f"lax.{n}({a})"
for n, a, b in [
    ("add", "f32", "b"),
    ("mul", "b", "b"),
    ("sub", "f32", "b"),
    ("rem", "c64", "c64"),
    ("atan2", "f32", "i32"),
    ("nextafter", "f32", "i32"),
    ("and", "f32", "i32"),
    ("pow", "f32", "b"),
    ("igamma", "f32", "i32"),
    ("shift_right_logical", "i32", "f32"),
    ("max", "f32", "i32"),
    ("rem", "f32", "i32"),
    ("mul", "f32", "i32"),
    ("lt", "i32", "f32"),
    ("eq", "f32", "i32"),
    ("pow", "f32", "f16"),
]:
    fn = {"and": "bitwise_and"}.get(n, n)
    CASES[f"lax.{n} {a},{b}"] = f"lax.{fn}({a}, {b})"
for n, a in [("reduce_sum", "b"), ("reduce_prod", "b"), ("cumsum", "b"), ("cumprod", "b"), ("cummax", "b")]:
    CASES[f"lax.{n} {a}"] = f"lax.{n}({a}, " + ("axes=(0,))" if n.startswith("reduce") else "axis=0)")
for n in ["cumsum", "cumprod", "cummin"]:
    CASES[f"lax.{n} axis 2"] = f"lax.{n}(f32, axis=2)"
CASES["lax.top_k k 4"] = "lax.top_k(np.ones((2, 3), np.float32), 4)"
CASES["lax.sort dim 3"] = "lax.sort(np.ones((2, 3), np.float32), dimension=3)"
for n in ["sum", "max", "cumprod", "flip", "roll", "take", "sort", "argsort", "expand_dims", "moveaxis"]:
    call = {
        "roll": "jnp.roll(m, 1, axis=3)",
        "take": "jnp.take(m, 0, axis=3)",
        "expand_dims": "jnp.expand_dims(m, 4)",
        "moveaxis": "jnp.moveaxis(m, 3, 0)",
    }.get(n, f"jnp.{n}(m, axis=3)")
    CASES[f"jnp.{n} axis 3"] = call
CASES["jnp.concatenate rank"] = "jnp.concatenate([np.ones((2, 2)), np.ones(2)])"

# dot_general's shape rule and the jnp products that reach it
for a, b in [((2, 3, 4), (3, 5, 5)), ((3,), (4,)), ((2, 3), (4,)), ((3,), (4, 2)), ((5, 2, 3), (4, 2)), ((), (2,))]:
    CASES[f"jnp.matmul {a} {b}"] = f"jnp.matmul(np.ones({a}, np.float32), np.ones({b}, np.float32))"
for a, b in [((3,), (4,)), ((2, 3), (4,)), ((2, 2, 3), (4, 2))]:
    CASES[f"jnp.dot {a} {b}"] = f"jnp.dot(np.ones({a}, np.float32), np.ones({b}, np.float32))"
CASES["jnp.tensordot two axes"] = "jnp.tensordot(np.ones((2, 3, 4)), np.ones((3, 5, 2)), axes=([1, 2], [0, 1]))"
CASES["jnp.inner last axes"] = "jnp.inner(np.ones((2, 3)), np.ones((4, 2)))"
CASES["jnp.vdot sizes"] = "jnp.vdot(np.ones(3), np.ones(4))"
_dn = {
    "rhs out of range": "(((1,), (2,)), ((), ()))",
    "batch count": "(((1,), (0,)), ((0,), ()))",
    "lhs batch repeated": "(((), ()), ((0, 0), (0, 1)))",
    "rhs contracting repeated": "(((0, 1), (1, 1)), ((), ()))",
    "rhs batch in contracting": "(((1,), (0,)), ((0,), (0,)))",
}
for k, dn in _dn.items():
    CASES[f"lax.dot_general {k}"] = f"lax.dot_general(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), {dn})"

# reshape (jnp on a numpy array: numpy's own errors; on an fjax/JAX array: JAX's), squeeze, rev,
# full, iota, select_n, clamp, broadcast_in_dim
for s in ["(-1, 4)", "(4, 2)", "(-1, -1)", "(-1, 0)", "5"]:
    CASES[f"jnp.reshape numpy {s}"] = f"jnp.reshape(m, {s})"
    CASES[f"jnp.reshape array {s}"] = f"jnp.reshape(jnp.asarray(m), {s})"
for s in ["5", "5, 1", "(-1, -1)", "(-1, 4)"]:
    CASES[f"Array.reshape {s}"] = f"jnp.asarray(m).reshape({s})"
CASES["lax.reshape negative sizes"] = "lax.reshape(m, (-2, -3))"
CASES["lax.squeeze size 2"] = "lax.squeeze(np.ones((1, 2, 1)), (0, 1))"
CASES["lax.rev dims"] = "lax.rev(m, (0, 2))"
CASES["lax.full vector"] = "lax.full((2,), np.ones(3))"
CASES["lax.broadcasted_iota dim"] = "lax.broadcasted_iota(np.int32, (2, 3), 3)"
CASES["lax.select_n float which"] = "lax.select_n(np.ones(2, np.float32), f32, f32)"
CASES["lax.select_n dtypes"] = "lax.select_n(b, f32, i32)"
CASES["lax.select_n bool 3 cases"] = "lax.select_n(b, f32, f32, f32)"
CASES["lax.select_n case shapes"] = "lax.select_n(np.int32(0), f32, np.ones(3, np.float32), f32)"
CASES["lax.clamp dtypes"] = "lax.clamp(f32, i32, f32)"
CASES["lax.clamp max shape"] = "lax.clamp(np.float32(0), f32, np.ones(3, np.float32))"
CASES["lax.broadcast_in_dim dup"] = "lax.broadcast_in_dim(np.ones((1, 1)), (2, 2), (0, 0))"
CASES["lax.broadcast_in_dim size"] = "lax.broadcast_in_dim(m, (2, 4), (0, 1))"
CASES["lax.broadcast_in_dim rank"] = "lax.broadcast_in_dim(m, (6,), (0, 1))"
CASES["lax.dynamic_update_slice dtype"] = "lax.dynamic_update_slice(f32, i32, (0,))"

# dtype names numpy does not understand; raw keys of the wrong dtype
for n in ["jnp.zeros(2, 'nope')", "jnp.arange(3, dtype='bad')", "lax.convert_element_type(f32, 'f99')"]:
    CASES[f"dtype {n}"] = n
CASES["random.uniform int32 key"] = "jax_random.uniform(np.zeros(2, np.int32))"
CASES["random.split float key"] = "jax_random.split(np.zeros(2, np.float32))"
