"""Record JAX's type promotion for the low-precision dtypes into low_precision_promotion.json.

Run with JAX installed (not in fjax's environment), from the repository root::

    /path/to/jax-venv/bin/python tests/data/make_low_precision_promotion.py

Inputs are the 32 dtypes below as strong arrays (the dtype name), as weakly typed arrays (name
with a trailing ``*``: stand-in objects with ``.dtype`` and ``.aval.weak_type``, which is what
``jax._src.dtypes`` reads) and the Python scalars ``True, 1, 1.0, 1j`` (``py:T``).  For every
ordered pair of inputs in which at least one side has a low-precision dtype (or all, for the
bfloat16 pairs, which promotion_table.json lacks) it stores ``result_type(a, b,
return_weak_type_flag=True)`` under three configurations: standard promotion with x64 off, with
x64 on, and strict promotion with x64 off.  ``promote_types`` is stored the same way over the
dtypes and the Python types ``bool/int/float/complex`` (``pytype:T``).  Results are indices into
``outcomes``: a dtype name (``*`` when weakly typed) or ``error:ExcName``.
"""

from __future__ import annotations

import json
import pathlib

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax._src import dtypes as jdt

LOW = [
    "float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float8_e4m3b11fnuz", "float8_e4m3fn",
    "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn", "float6_e2m3fn",
    "float6_e3m2fn", "int1", "int2", "int4", "uint1", "uint2", "uint4",
]  # fmt: skip
OLD = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "bfloat16", "float16", "float32", "float64", "complex64", "complex128",
]  # fmt: skip
NAMES = OLD + LOW
PY_VALUES = {"py:bool": True, "py:int": 1, "py:float": 1.0, "py:complex": 1j}
PY_TYPES = {"pytype:bool": bool, "pytype:int": int, "pytype:float": float, "pytype:complex": complex}


class _Aval:
    def __init__(self, weak: bool) -> None:
        self.weak_type = weak


class Fake:
    def __init__(self, name: str, weak: bool) -> None:
        self.dtype = jnp.dtype(name)
        self.aval = _Aval(weak)


def make(key: str):
    if key in PY_VALUES:
        return PY_VALUES[key]
    if key in PY_TYPES:
        return PY_TYPES[key]
    return Fake(key.rstrip("*"), key.endswith("*"))


def interesting(a: str, b: str) -> bool:
    def new(k: str) -> bool:
        return k.rstrip("*") in LOW or k.rstrip("*") == "bfloat16"

    return new(a) or new(b)


def main() -> None:
    assert jax.__version__ == "0.10.2", jax.__version__
    outcomes: list[str] = []

    def code(fn) -> int:
        try:
            out = fn()
            res = str(out[0]) + ("*" if out[1] else "") if isinstance(out, tuple) else str(out)
        except Exception as e:  # noqa: BLE001 - errors are recorded
            res = "error:" + type(e).__name__
        if res not in outcomes:
            outcomes.append(res)
        return outcomes.index(res)

    inputs = NAMES + [n + "*" for n in NAMES] + list(PY_VALUES)
    ptypes = NAMES + list(PY_TYPES)
    configs = {"x64_off": (False, "standard"), "x64_on": (True, "standard"), "strict": (False, "strict")}
    out: dict = {
        "jax_version": jax.__version__,
        "ml_dtypes_version": ml_dtypes.__version__,
        "numpy_version": np.__version__,
        "low_precision": LOW,
        "inputs": inputs,
        "promote_inputs": ptypes,
        "key_format": (
            "result_type[config][i] is a space-separated row: entry j is the index into outcomes of "
            "result_type(inputs[i], inputs[j], return_weak_type_flag=True), or -1 where neither side is "
            "low-precision or bfloat16 (see promotion_table.json). promote_types likewise over promote_inputs."
        ),
    }
    for cfg, (x64, mode) in configs.items():
        jax.config.update("jax_enable_x64", x64)
        jax.config.update("jax_numpy_dtype_promotion", mode)
        rows = []
        for a in inputs:
            row = []
            for b in inputs:
                if not interesting(a, b):
                    row.append(-1)
                    continue
                row.append(code(lambda: jdt.result_type(make(a), make(b), return_weak_type_flag=True)))
            rows.append(" ".join(map(str, row)))
        out.setdefault("result_type", {})[cfg] = rows
        prow = []
        for a in ptypes:
            row = []
            for b in ptypes:
                row.append(code(lambda: jnp.promote_types(make(a), make(b))) if interesting(a, b) else -1)
            prow.append(" ".join(map(str, row)))
        out.setdefault("promote_types", {})[cfg] = prow
        out.setdefault("canonicalize_dtype", {})[cfg] = {n: str(jdt.canonicalize_dtype(n)) for n in LOW}
    jax.config.update("jax_enable_x64", False)
    jax.config.update("jax_numpy_dtype_promotion", "standard")
    messages = {}
    for a, b in [("float8_e4m3fn", "float32"), ("float6_e2m3fn", "int8"), ("float4_e2m1fn", "bfloat16"),
                 ("int4", "int8"), ("uint2", "py:float"), ("float8_e5m2", "py:complex")]:  # fmt: skip
        try:
            jnp.result_type(
                make(a) if a.startswith("py:") else jnp.dtype(a), make(b) if b.startswith("py:") else jnp.dtype(b)
            )
        except jdt.TypePromotionError as e:
            messages[f"{a}|{b}"] = str(e)
    out["messages"] = messages
    out["outcomes"] = outcomes
    path = pathlib.Path(__file__).with_name("low_precision_promotion.json")
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path} ({len(outcomes)} outcomes)")


if __name__ == "__main__":
    main()
