"""JAX's low-precision dtypes (float8/float6/float4, int1/2/4, uint1/2/4) in fjax.dtypes and jnp.

Promotion is checked against tests/data/low_precision_promotion.json, recorded from JAX 0.10.2 by
tests/data/make_low_precision_promotion.py; the literal values below were printed by JAX 0.10.2
(CPU, x64 off) for the same expressions.  These tests never import jax.
"""

from __future__ import annotations

import json
import pathlib

import ml_dtypes
import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import dtypes
from fjax.config import config

DATA = json.loads((pathlib.Path(__file__).parent / "data" / "low_precision_promotion.json").read_text())
LOW = [n for n in DATA["low_precision"] if hasattr(ml_dtypes, n)]
PY_VALUES = {"py:bool": True, "py:int": 1, "py:float": 1.0, "py:complex": 1j}
PY_TYPES = {"pytype:bool": bool, "pytype:int": int, "pytype:float": float, "pytype:complex": complex}
CONFIGS = {"x64_off": (False, "standard"), "x64_on": (True, "standard"), "strict": (False, "strict")}


class FakeArray:
    """Minimal array-like: a dtype and a weak_type flag, like fjax arrays, tracers and avals."""

    def __init__(self, name: str, weak: bool) -> None:
        self.dtype = np.dtype(getattr(ml_dtypes, name, name))
        self.weak_type = weak


def make(key: str):
    if key in PY_VALUES:
        return PY_VALUES[key]
    if key in PY_TYPES:
        return PY_TYPES[key]
    return FakeArray(key.rstrip("*"), key.endswith("*"))


def available(key: str) -> bool:
    name = key.rstrip("*")
    return ":" in name or name not in DATA["low_precision"] or hasattr(ml_dtypes, name)


def outcome(fn) -> str:
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the table records error types too
        return "error:" + type(e).__name__
    return str(out[0]) + ("*" if out[1] else "") if isinstance(out, tuple) else str(out)


@pytest.fixture(params=list(CONFIGS))
def cfg(request):
    x64, mode = CONFIGS[request.param]
    old = config.jax_enable_x64, config.jax_numpy_dtype_promotion
    config.update("jax_enable_x64", x64)
    config.update("jax_numpy_dtype_promotion", mode)
    yield request.param
    config.update("jax_enable_x64", old[0])
    config.update("jax_numpy_dtype_promotion", old[1])


def _table(section: str, cfg: str, inputs: list[str]):
    outcomes = DATA["outcomes"]
    for a, row in zip(inputs, DATA[section][cfg], strict=True):
        for b, c in zip(inputs, map(int, row.split()), strict=True):
            if c >= 0 and available(a) and available(b):
                yield a, b, outcomes[c]


def test_result_type_pairs_match_jax(cfg):
    bad = []
    n = 0
    for a, b, want in _table("result_type", cfg, DATA["inputs"]):
        if want == "error:KeyError":
            # JAX fails internally (KeyError on numpy kind 'V') widening an all-weak int1/2/4 result;
            # fjax widens it to the default int dtype like any weak integer result
            want = ("int64*" if cfg == "x64_on" else "int32*") if "uint" not in a + b else None
            if want is None:
                continue
        n += 1
        got = outcome(lambda a=a, b=b: dtypes.result_type(make(a), make(b), return_weak_type_flag=True))
        if got != want:
            bad.append((a, b, got, want))
    assert n > 3000 and not bad, bad[:20]


def _ptype(key: str):
    return PY_TYPES[key] if key in PY_TYPES else np.dtype(getattr(ml_dtypes, key, key))


def test_promote_types_pairs_match_jax(cfg):
    bad = []
    for a, b, want in _table("promote_types", cfg, DATA["promote_inputs"]):
        got = outcome(lambda a=a, b=b: dtypes.promote_types(_ptype(a), _ptype(b)))
        if got != want:
            bad.append((a, b, got, want))
    assert not bad, bad[:20]


def test_promotion_error_messages_match_jax():
    # JAX lists the input dtypes in set order; the rest of the message is compared exactly
    for key, msg in DATA["messages"].items():
        a, b = key.split("|")
        args = [PY_VALUES[k] if k in PY_VALUES else FakeArray(k, False) for k in (a, b)]
        with pytest.raises(dtypes.TypePromotionError) as info:
            dtypes.result_type(*args)
        assert str(info.value).split(") have no", 1)[1] == msg.split(") have no", 1)[1]
    x = jnp.ones(2, jnp.float8_e4m3fn)
    with pytest.raises(dtypes.TypePromotionError, match="8-bit floats do not support implicit promotion"):
        x + jnp.ones(2, jnp.float32)
    with pytest.raises(dtypes.TypePromotionError, match="4-bit integers do not support implicit promotion"):
        jnp.ones(2, jnp.int4) * jnp.ones(2, jnp.uint4)


def test_strict_promotion_keeps_python_scalars_of_lower_kind():
    x, i = jnp.ones(2, jnp.float8_e5m2), jnp.ones(2, jnp.int4)
    with fjax.numpy_dtype_promotion("strict"):
        assert (x * 2).dtype == x.dtype and (x + 1.5).dtype == x.dtype and (i + 1).dtype == i.dtype
        with pytest.raises(dtypes.TypePromotionError):
            i + 1.5


# ------------------------------------------------------------------------------------------
# names, dtypes, finfo/iinfo


def test_names_dtypes_and_scalar_types():
    for name in LOW:
        t = getattr(jnp, name)
        dt = np.dtype(getattr(ml_dtypes, name))
        assert jnp.dtype(t) == dt == jnp.dtype(name) == t.dtype and name in jnp._creation.__all__
        assert repr(t) == f"<class 'fjax.numpy.{name}'>"
        assert dtypes.canonicalize_dtype(t) == dt and dt in dtypes.low_precision_dtypes
        assert jnp.zeros(3, t).dtype == dt and not dtypes.issubdtype(dt, np.float32)
        k = dtypes.kind(dt)
        assert k == ("f" if name.startswith("float") else "u" if name.startswith("u") else "i")
        parent = {"f": jnp.floating, "i": jnp.signedinteger, "u": jnp.unsignedinteger}[k]
        assert jnp.issubdtype(t, parent) and jnp.issubdtype(dt, jnp.number) and jnp.issubdtype(name, t)
        assert jnp.isdtype(dt, "real floating" if k == "f" else "integral")
        assert dtypes.scalar_type_of(jnp.zeros(1, dt)) is (float if k == "f" else int)
        assert not fjax.dlpack.is_supported_dtype(dt)  # as in JAX
    x = jnp.float8_e4m3fn(1.5)
    assert repr(x) == "Array(1.5, dtype=float8_e4m3fn)" and isinstance(np.asarray(x)[()], jnp.float8_e4m3fn)
    assert not jnp.issubdtype(jnp.int4, jnp.floating) and not jnp.issubdtype(jnp.float8_e5m2, jnp.float8_e4m3fn)


# (name, bits) and finfo/iinfo values as JAX 0.10.2 prints them
BITS = {"float8_e4m3fn": 8, "float4_e2m1fn": 4, "float6_e3m2fn": 6, "int4": 4, "uint2": 2, "int1": 1}


def test_finfo_iinfo_itemsize_bits():
    for name, bits in BITS.items():
        if hasattr(ml_dtypes, name):
            assert dtypes.itemsize_bits(getattr(jnp, name)) == bits
    assert jnp.finfo(jnp.float8_e4m3fn).eps == 0.125 and float(jnp.finfo(jnp.float8_e4m3fn).max) == 448
    assert float(jnp.finfo(jnp.float8_e5m2).max) == 57344 and float(jnp.finfo(jnp.float4_e2m1fn).eps) == 0.5
    assert float(jnp.finfo(jnp.float6_e3m2fn).max) == 28 and float(jnp.finfo(jnp.float8_e8m0fnu).eps) == 1
    assert (jnp.iinfo(jnp.int4).min, jnp.iinfo(jnp.int4).max) == (-8, 7)
    assert (jnp.iinfo(jnp.uint2).max, jnp.iinfo(jnp.int1).min) == (3, -1)


# ------------------------------------------------------------------------------------------
# eager ops, printing, jit, grad (expected values printed by JAX 0.10.2 for the same code)


def _x():
    return jnp.array([1.5, -2.25, 0.0, 3.0], jnp.float8_e4m3fn)


def _i4():
    return jnp.array([1, -2, 0, 7], jnp.int4)


EAGER = {
    "x + x": (lambda x, i: x + x, "Array([3, -4.5, 0, 6], dtype=float8_e4m3fn)"),
    "x * 2 + 1.0": (lambda x, i: x * 2 + 1.0, "Array([4, -3.5, 1, 7], dtype=float8_e4m3fn)"),
    "x / x": (lambda x, i: x / x, "Array([1, 1, nan, 1], dtype=float8_e4m3fn)"),
    "tanh": (lambda x, i: jnp.tanh(x), "Array([0.875, -1, 0, 1], dtype=float8_e4m3fn)"),
    "clip": (lambda x, i: jnp.clip(x, -1.0, 1.0), "Array([1, -1, 0, 1], dtype=float8_e4m3fn)"),
    "sort": (lambda x, i: jnp.sort(x), "Array([-2.25, 0, 1.5, 3], dtype=float8_e4m3fn)"),
    "floor": (lambda x, i: jnp.floor(x), "Array([1, -3, 0, 3], dtype=float8_e4m3fn)"),
    "cumsum": (lambda x, i: jnp.cumsum(x), "Array([1.5, -0.75, -0.75, 2.25], dtype=float8_e4m3fn)"),
    "var": (lambda x, i: jnp.var(x), "Array(3.5, dtype=float8_e4m3fn)"),
    "at set": (lambda x, i: x.at[0].set(2.0), "Array([2, -2.25, 0, 3], dtype=float8_e4m3fn)"),
    "where": (lambda x, i: jnp.where(x > 0, x, 0.0), "Array([1.5, 0, 0, 3], dtype=float8_e4m3fn)"),
    "i4 * 3 + 1": (lambda x, i: i * 3 + 1, "Array([4, -5, 1, 6], dtype=int4)"),
    "i4 + 100": (lambda x, i: i + 100, "Array([5, 2, 4, -5], dtype=int4)"),
    "i4 at set": (lambda x, i: i.at[0].set(3), "Array([3, -2, 0, 7], dtype=int4)"),
    "i4 sort": (lambda x, i: jnp.sort(i), "Array([-2, 0, 1, 7], dtype=int4)"),
    "i4 dot": (lambda x, i: jnp.dot(i, i), "Array(6, dtype=int4)"),
    "i4 mean": (lambda x, i: jnp.mean(i), "Array(1.5, dtype=float32)"),
    "i4 -> f8": (lambda x, i: i.astype(jnp.float8_e5m2), "Array([1, -2, 0, 7], dtype=float8_e5m2)"),
    "u4 - 1": (lambda x, i: jnp.array([1, 2, 0, 15], jnp.uint4) - 1, "Array([0, 1, 15, 14], dtype=uint4)"),
    "f8 matmul": (
        lambda x, i: (x.reshape(2, 2) @ x.reshape(2, 2)).ravel(),
        "Array([2.25, -10, 0, 9], dtype=float8_e4m3fn)",
    ),
}


@pytest.mark.parametrize("name", list(EAGER))
def test_eager_ops_match_jax(name):
    fn, want = EAGER[name]
    assert repr(fn(_x(), _i4())) == want


_jits = {name: fjax.jit(fn) for name, (fn, _) in EAGER.items()}


def test_jit_matches_eager():
    # under the numba backend these dtypes are not compiled: their equations run as host steps
    from fjax.backends import lowering  # noqa: PLC0415

    assert not set(dtypes.low_precision_dtypes) & set(lowering.SUPPORTED_DTYPES)
    for name, f in _jits.items():
        assert repr(f(_x(), _i4())) == EAGER[name][1], name
    mixed = fjax.jit(lambda a: (a.astype(jnp.float8_e5m2).astype(jnp.float32) * 2).sum())
    assert repr(mixed(jnp.array([1.3, 2.6, -7.1]))) == "Array(-6.5, dtype=float32)"


def test_casts_match_jax():
    big = jnp.array([1e9, -1e9, np.nan, 0.3])
    assert repr(big.astype(jnp.float8_e4m3fn)) == "Array([nan, nan, nan, 0.3125], dtype=float8_e4m3fn)"
    assert repr(big[:2].astype(jnp.float8_e5m2)) == "Array([inf, -inf], dtype=float8_e5m2)"
    assert (
        repr(jnp.array([-0.0, 1e9, 0.3]).astype(jnp.float8_e4m3fnuz))
        == "Array([0, nan, 0.3125], dtype=float8_e4m3fnuz)"
    )
    assert (
        repr(jnp.array([0.3, 4.0, 100.0]).astype(jnp.float8_e8m0fnu)) == "Array([0.25, 4, 128], dtype=float8_e8m0fnu)"
    )
    assert (
        repr(jnp.array([0.3, 2.6, 100.0, -7.0]).astype(jnp.float4_e2m1fn))
        == "Array([0.5, 3, 6, -6], dtype=float4_e2m1fn)"
    )
    assert repr(jnp.array([9, -9, 20]).astype(jnp.int4)) == "Array([-7, 7, 4], dtype=int4)"
    assert repr(jnp.asarray([1, 2, 3], dtype=jnp.int4)) == "Array([1, 2, 3], dtype=int4)"
    assert str(_x()) == "[1.5 -2.25 0 3]" and str(_i4()) == "[1 -2 0 7]"
    assert _x().tolist() == [1.5, -2.25, 0.0, 3.0] and int(_i4()[3]) == 7


def test_grad_and_jvp_through_float8():
    f = lambda a: jnp.sum((a.astype(jnp.float8_e4m3fn) * 3).astype(jnp.float32))  # noqa: E731
    g = fjax.grad(f)(jnp.array([1.0, 2.3, 3.7]))
    assert repr(g) == "Array([3., 3., 3.], dtype=float32)"
    sq = lambda a: (a.astype(jnp.float8_e4m3fn) * a.astype(jnp.float8_e4m3fn)).astype(jnp.float32).sum()  # noqa: E731
    assert repr(fjax.grad(sq)(jnp.array([1.3, 2.6]))) == "Array([2.5, 5. ], dtype=float32)"
    # float8 primals get float8 cotangents
    g8 = fjax.grad(lambda a: (a * a).sum())(jnp.array([1.0, 2.5], jnp.float8_e4m3fn))
    assert repr(g8) == "Array([2, 5], dtype=float8_e4m3fn)"
    p, t = fjax.jvp(lambda a: a.astype(jnp.float8_e5m2), (jnp.array([1.3]),), (jnp.array([0.3]),))
    assert (repr(p), repr(t)) == ("Array([1.25], dtype=float8_e5m2)", "Array([0.3125], dtype=float8_e5m2)")


def test_float_to_narrow_int_casts_saturate_as_jax():
    # JAX 0.10.2: jnp.array([2.7, -3.5, 100]).astype(jnp.int4) -> [2 -3 7]
    out = jnp.array([2.7, -3.5, 100.0]).astype(jnp.int4)
    assert out.dtype == jnp.int4
    np.testing.assert_array_equal(np.asarray(out).astype(np.int8), [2, -3, 7])


def test_jaxprs_print_short_names_as_jax():
    # JAX 0.10.2 make_jaxpr(lambda x: x * x) on these dtypes prints f8_e4m3fn / i4 / u1 / f4_e2m1fn
    for name, short in [
        ("float8_e4m3fn", "f8_e4m3fn"),
        ("int4", "i4"),
        ("uint1", "u1"),
        ("float4_e2m1fn", "f4_e2m1fn"),
    ]:
        text = str(fjax.make_jaxpr(lambda x: x * x)(fjax.ShapeDtypeStruct((3,), name)))
        assert f"a:{short}[3]" in text and f"b:{short}[3] = mul a a" in text, text


def test_cumulative_max_min_and_randint_on_narrow_ints_as_jax():
    # JAX 0.10.2: cummax/cummin/cummax(reverse) of int4 [1, -3, 5] -> [1 1 5] [1 -3 -3] [5 5 5];
    # random.randint(PRNGKey(0), (5,), -3, 5, dtype=int4) -> [2 -3 -3 2 0] and
    # randint(PRNGKey(0), (5,), 0, 3, dtype=uint2) -> [1 0 2 1 2]
    x = jnp.array([1, -3, 5], dtype=jnp.int4)
    as8 = lambda a: np.asarray(a).astype(np.int8)  # noqa: E731
    np.testing.assert_array_equal(as8(fjax.lax.cummax(x)), [1, 1, 5])
    np.testing.assert_array_equal(as8(fjax.lax.cummin(x)), [1, -3, -3])
    np.testing.assert_array_equal(as8(fjax.lax.cummax(x, reverse=True)), [5, 5, 5])
    np.testing.assert_array_equal(as8(fjax.jit(fjax.lax.cummax)(x)), [1, 1, 5])
    r = fjax.random.randint(fjax.random.PRNGKey(0), (5,), -3, 5, dtype=jnp.int4)
    assert r.dtype == jnp.int4
    np.testing.assert_array_equal(as8(r), [2, -3, -3, 2, 0])
    u = fjax.random.randint(fjax.random.PRNGKey(0), (5,), 0, 3, dtype=jnp.uint2)
    np.testing.assert_array_equal(np.asarray(u).astype(np.uint8), [1, 0, 2, 1, 2])
