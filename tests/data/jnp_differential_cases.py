"""The calls of the jnp differential sweep, shared by ``make_jnp_differential.py`` (run under JAX)
and ``tests/test_jnp_differential.py`` (run under fjax); neither jax nor fjax is imported here.

``all_cases(jax, jnp)`` returns ``{key: thunk}``: every unary function of ``UNARY`` on two inputs
of each dtype of ``DTYPES`` (specials included: +-0, +-inf, NaN, the integer extremes), every
binary function of ``BINARY`` on the pairs of ``BIN_PAIRS`` (mixed kinds, Python scalars), and a
few calls with keyword arguments (``EXTRA``). ``encode`` turns a result into JSON: dtype, shape,
weak type and the values, non-finite floats as strings and complex values as [re, im] pairs.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

UNARY = """abs absolute arccos arccosh arcsin arcsinh arctan arctanh angle cbrt ceil conj conjugate
cos cosh deg2rad degrees exp exp2 expm1 fabs fix floor frexp i0 imag invert isfinite isinf isnan
isneginf isposinf isreal iscomplex log log10 log1p log2 logical_not modf nan_to_num negative positive
rad2deg radians real reciprocal rint round sign signbit sin sinc sinh spacing sqrt square tan tanh
trunc bitwise_not bitwise_count cumsum cumprod nancumsum argsort sort sum prod mean var std max min
argmax argmin any all nansum nanmean nanmax nanmin ptp median average count_nonzero nonzero
flatnonzero unique ravel diff ediff1d trace diag diagonal triu tril flip fliplr rot90 transpose
isclose_self around sort_complex""".split()

BINARY = """add subtract multiply divide true_divide floor_divide remainder mod fmod power float_power
maximum minimum fmax fmin arctan2 hypot copysign nextafter ldexp logaddexp logaddexp2 heaviside equal
not_equal less less_equal greater greater_equal logical_and logical_or logical_xor bitwise_and
bitwise_or bitwise_xor left_shift right_shift divmod dot matmul inner outer kron cross vdot isclose
allclose array_equal array_equiv convolve correlate polyval polymul polyadd append searchsorted
digitize""".split()

DTYPES = ["float32", "float16", "bfloat16", "int32", "int8", "uint8", "uint32", "bool", "complex64"]

BIN_PAIRS = [
    ("float32", "float32"), ("int32", "int32"), ("int32", "float32"), ("uint8", "int8"),
    ("uint32", "int32"), ("bool", "int32"), ("bool", "bool"), ("float16", "bfloat16"),
    ("int8", "float16"), ("complex64", "float32"), ("uint8", "uint8"), ("int32", "py_int"),
    ("float16", "py_float"), ("uint8", "py_int"), ("bool", "py_float"), ("int8", "py_complex"),
]  # fmt: skip


def inputs(dt: str) -> list:
    """Two arrays of dtype ``dt``: a 1-D one of special values and a (3, 4) random one."""
    rng = np.random.default_rng(0)
    if dt == "bool":
        return [np.array([True, False, True, True, False, False]), np.array([[True, False], [False, False]])]
    if dt in ("int32", "int8", "uint8", "uint32"):
        info = np.iinfo(dt)
        a = np.clip(np.array([0, 1, -1, 2, -3, 7, 100, info.max, info.min], np.int64), info.min, info.max).astype(dt)
        return [a, rng.integers(max(info.min, -20), min(info.max, 20), (3, 4)).astype(dt)]
    if dt.startswith("complex"):
        a = np.array([0, 1 + 2j, -1.5 - 0.5j, complex(np.nan, 1), np.inf, 3j, -0.0], dtype=dt)
        return [a, (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(dt)]
    a = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.7, 1e30, -1e-30, np.nan, np.inf, -np.inf, 100.0], np.float32)
    if dt == "bfloat16":
        import ml_dtypes  # noqa: PLC0415

        return [a.astype(ml_dtypes.bfloat16), rng.standard_normal((3, 4)).astype(ml_dtypes.bfloat16)]
    return [a.astype(dt), rng.standard_normal((3, 4)).astype(dt)]


def bin_inputs(da: str, db: str) -> list:
    a = inputs(da)[0]
    scalars = {"py_int": 3, "py_float": 2.5, "py_complex": 1 + 1j}
    if db in scalars:
        return [a, scalars[db]]
    b = inputs(db)[0]
    n = min(len(a), len(b))
    return [a[:n], b[::-1][:n].copy()]


def _extra(jax: Any, jnp: Any) -> dict[str, Callable]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    xh = np.array([1e4, 1.5, 2.25, np.nan, 3.3], np.float16)
    i32 = np.array([np.iinfo(np.int32).min, 0, 5, np.iinfo(np.int32).max], np.int32)
    sp = jax.scipy.special
    return {
        "quantile_nearest_axis": lambda: jnp.quantile(
            x, np.array([0.1, 0.5, 0.9], np.float32), axis=1, method="nearest"
        ),
        "quantile_methods": lambda: tuple(
            jnp.quantile(np.arange(4.0, dtype=np.float32), np.array([0.5, 1 / 6], np.float32), method=m)
            for m in ("nearest", "lower", "higher", "midpoint", "linear")
        ),
        "pad_linear_ramp": lambda: jnp.pad(np.arange(4.0, dtype=np.float32), 2, mode="linear_ramp", end_values=(5, -1)),
        "pad_linear_ramp_2d": lambda: jnp.pad(
            np.arange(6.0, dtype=np.float32).reshape(2, 3),
            ((1, 2), (3, 1)),
            mode="linear_ramp",
            end_values=((5, -1), (2, 3)),
        ),
        "pad_linear_ramp_int": lambda: jnp.pad(np.arange(6, dtype=np.int32).reshape(2, 3), 2, mode="linear_ramp"),
        "pad_linear_ramp_uint8": lambda: jnp.pad(
            np.arange(6, dtype=np.uint8).reshape(2, 3), 3, mode="linear_ramp", end_values=7
        ),
        "ravel_F": lambda: jnp.ravel(x, order="F"),
        "ravel_A": lambda: jnp.ravel(x, order="A"),
        "ravel_K": lambda: jnp.ravel(x, order="K"),
        "method_ravel_F": lambda: jnp.asarray(x).ravel(order="F"),
        "method_flatten_F": lambda: jnp.asarray(x).flatten(order="F"),
        "method_reshape_F": lambda: jnp.asarray(x).reshape((4, 15), order="F"),
        "method_reshape_A": lambda: jnp.asarray(x).reshape((4, 15), order="A"),
        "reshape_F": lambda: jnp.reshape(jnp.asarray(x), (5, 12), order="F"),
        "nanmean_f16": lambda: jnp.nanmean(xh[[1, 2, 3]]),
        "isclose_int_extremes": lambda: jnp.isclose(i32, np.zeros(4, np.int32)),
        "allclose_int_extremes": lambda: jnp.allclose(i32, np.zeros(4, np.int32)),
        "divide_uint32_int32": lambda: jnp.divide(np.array([2**32 - 1], np.uint32), np.array([1], np.int32)),
        "grad_int_input": lambda: jax.grad(lambda v: v * 2.0, allow_int=True)(3),
        "int32_times_2_then_2p0": lambda: (jnp.asarray(np.int32([1])) * 2, jnp.asarray(np.int32([1])) * 2.0),
        "grad_abs0": lambda: jax.grad(jnp.abs)(0.0),
        "grad_pow0": lambda: jax.grad(lambda a: a**0.0)(0.0),
        "grad_pow_x0": lambda: jax.grad(lambda a: jnp.power(a, 2.0))(0.0),
        "grad_xlogy": lambda: jax.grad(lambda a: sp.xlogy(a, a))(0.0),
        "grad_xlog1py": lambda: jax.grad(lambda a: sp.xlog1py(a, a))(0.0),
        "xlogy_nan": lambda: sp.xlogy(0.0, np.float32(np.nan)),
        "lax_complex_nonfinite": lambda: jax.lax.complex(
            np.array([1.0, 2.0, 3.0], np.float32), np.array([np.inf, -np.inf, np.nan], np.float32)
        ),
        "round_complex_decimals": lambda: jnp.round(np.array([1.234 + 5.678j, -0.5 + 2.5j], np.complex64), 1),
    }


def all_cases(jax: Any, jnp: Any) -> dict[str, Callable]:
    """Every call of the sweep, keyed ``unary:name:dtype:i``, ``binary:name:a:b`` or ``extra:name``."""
    cases: dict[str, Callable] = {}

    def call(name: str, args: list) -> Callable:
        if name == "isclose_self":
            return lambda: jnp.isclose(args[0], args[0])
        return lambda: getattr(jnp, name)(*args)

    for name in UNARY:
        for dt in DTYPES:
            for i, x in enumerate(inputs(dt)):
                cases[f"unary:{name}:{dt}:{i}"] = call(name, [x])
    for name in BINARY:
        for da, db in BIN_PAIRS:
            cases[f"binary:{name}:{da}:{db}"] = call(name, bin_inputs(da, db))
    for name, fn in _extra(jax, jnp).items():
        cases[f"extra:{name}"] = fn
    return cases


def _num(v: float) -> float | str:
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return float(f"{v:.9g}")


def encode(r: Any) -> Any:
    """A JSON-able record of a result: a list for tuples, else {dtype, shape, weak, values}."""
    if isinstance(r, (tuple, list)):
        return [encode(x) for x in r]
    a = np.asarray(r)
    rec = {"dtype": str(a.dtype), "shape": list(a.shape), "weak": bool(getattr(r, "weak_type", False))}
    kind = a.dtype.kind
    if kind == "V":  # float0
        rec["values"] = None
    elif kind == "c":
        rec["values"] = [[_num(v.real), _num(v.imag)] for v in a.ravel().tolist()]
    elif kind == "f" or a.dtype.name == "bfloat16":
        rec["values"] = [_num(v) for v in a.astype(np.float64).ravel().tolist()]
    else:
        rec["values"] = [int(v) for v in a.ravel().tolist()]
    return rec


def run(fn: Callable) -> Any:
    """``{"ok": encoded result}`` or ``{"err": exception type name}``."""
    try:
        return {"ok": encode(fn())}
    except Exception as e:  # noqa: BLE001 - the error type is what is recorded
        return {"err": type(e).__name__}
