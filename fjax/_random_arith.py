"""Exact arithmetic under ``fjax.random``: split from ``fjax/random.py`` for size (``fjax.random``
re-exports every name defined here). See the "Floating point" part of ``fjax.random``'s docstring.

- constants that keep their exact dtype when staged (``_c``, ``_convert``, ``_full``, ``_full_like``);
- two private primitives, each with a numpy impl, abstract eval, batching, JVP and lowering rules:
  ``random_bitcast`` between dtypes of one width, and ``random_fma``, a multiply-add rounded once;
- XLA's float32 approximations of ``log``, ``log1p``, ``erf`` and ``erf_inv`` written with lax ops
  (``_log``, ``_log1p``, ``_erf`` and ``_erf_inv`` use them for float32, lax's functions otherwise),
  so that float32 samples match JAX on CPU bit for bit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fjax import _debug_nans, core, dtypes, lax
from fjax import _random_kernels as _kernels
from fjax.backends.registry import ELEMENTWISE, register_lowering
from fjax.core import Primitive, ShapedArray, Tracer
from fjax.custom_derivatives import custom_jvp
from fjax.dtypes import finfo as _finfo
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching

_U32 = np.dtype(np.uint32)
_UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32, 64: np.dtype(np.uint64)}

# ---------------------------------------------------------------------------------------------
# constants
#
# A rank-0 constant staged into a jaxpr becomes a literal, and fjax evaluates literals as Python
# scalars, which re-enter as weakly typed int32/float32 (int64/float64 under x64): a uint32 or
# float16 literal would come back with the wrong dtype. So while staging, a constant whose dtype
# is not what its Python scalar would become is built as a literal of that dtype followed by a
# staged convert_element_type; eagerly it is simply a numpy scalar array.


def _c(value: Any, dtype: Any) -> Any:
    dt = np.dtype(dtype)
    val = np.array(value, dt)
    if core.is_eager():
        return val
    if _dkind(dt) == "b":
        return val
    if _dkind(dt) in "iu":
        src = dtypes.default_int_dtype()
        wide = val.astype(np.int64) if dt.itemsize < 8 else val.view(np.int64)
        if src.itemsize == 4:
            wide = wide.astype(np.uint64).astype(np.uint32).view(np.int32)  # wrap to 32 bits
        return lax.convert_element_type(np.array(wide, src), dt)
    src = dtypes.default_float_dtype() if _dkind(dt) == "f" else dtypes.default_complex_dtype()
    if dt == src:
        return lax.convert_element_type(np.array(val.astype(np.float64) if _dkind(dt) == "f" else val, src), dt)
    return lax.convert_element_type(np.array(val, src), dt)


def _convert(x: Any, dtype: Any) -> Any:
    """``x`` as ``dtype``: traced values are converted, concrete ones become constants."""
    if isinstance(x, Tracer):
        return lax.convert_element_type(x, dtype)
    return _c(np.asarray(x), dtype)


def _full(shape: tuple, value: Any, dtype: Any) -> Any:
    return lax.broadcast_in_dim(_c(value, dtype), tuple(shape), ())


def _full_like(x: Any, value: Any) -> Any:
    aval = core.get_aval(x)
    return _full(aval.shape, value, aval.dtype)


# ---------------------------------------------------------------------------------------------
# private primitives: bitcast between same-width dtypes, and a correctly rounded fused multiply-add


def _bitcast_impl(x: np.ndarray, *, new_dtype: np.dtype) -> np.ndarray:
    return np.array(x, order="C").view(new_dtype).reshape(np.shape(x))


def _bitcast_abstract(x: Any, *, new_dtype: np.dtype) -> ShapedArray:
    if x.dtype.itemsize != new_dtype.itemsize:
        raise TypeError(f"bitcast between dtypes of different widths: {x.dtype.name} -> {new_dtype.name}")
    return ShapedArray(x.shape, new_dtype, False)


_bitcast_p = Primitive("random_bitcast")
_bitcast_p.def_impl(_bitcast_impl)
_bitcast_p.def_abstract_eval(_bitcast_abstract)
batching.defvectorized(_bitcast_p)
ad.defzero(_bitcast_p)
register_lowering(_bitcast_p, ELEMENTWISE)


def _bitcast(x: Any, new_dtype: Any) -> Any:
    return core.bind1(_bitcast_p, x, new_dtype=np.dtype(new_dtype))


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    bv = s - a
    return s, (a - (s - bv)) + (b - bv)


def _fma_impl(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    dt = a.dtype
    if dt == np.float32 and max(np.size(a), np.size(b), np.size(c)) >= _kernels.MIN_SIZE:
        return _kernels.fma_f32(a, b, c)
    if dt == np.float64:
        # compiled: LLVM's fma (exact; what jit lowers the primitive to)
        return _kernels.fma_f64(a, b, c)
    with np.errstate(all="ignore"):
        # float16/float32: the product is exact in float64; the sum is rounded to float64 and
        # then to dt, which could round twice, so a float64 sum that lands exactly on a
        # midpoint of dt is nudged towards the true value first
        x, y, z = (np.asarray(v, np.float64) for v in (a, b, c))
        s, err = _two_sum(x * y, z)
        drop = 52 - _finfo(dt).nmant
        low = np.asarray(s).view(np.uint64) & np.uint64((1 << drop) - 1)
        mid = (low == np.uint64(1 << (drop - 1))) & (err != 0) & np.isfinite(err)
        s = np.where(mid, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
        return np.asarray(s).astype(dt)


def _fma_abstract(a: Any, b: Any, c: Any) -> ShapedArray:
    shapes = {x.shape for x in (a, b, c) if x.shape}
    if len({a.dtype, b.dtype, c.dtype}) != 1 or _dkind(a.dtype) != "f" or len(shapes) > 1:
        raise TypeError(
            "fma requires floating operands of one dtype and equal shapes (or rank 0), got "
            + ", ".join(f"{x.dtype.name}{list(x.shape)}" for x in (a, b, c))
        )
    return ShapedArray(shapes.pop() if shapes else (), a.dtype, a.weak_type and b.weak_type and c.weak_type)


_fma_p = Primitive("random_fma")
_fma_p.def_impl(_fma_impl)
_fma_p.def_abstract_eval(_fma_abstract)
batching.defbroadcasting(_fma_p)
register_lowering(_fma_p, ELEMENTWISE)  # rt.fma: llvm.fma, rounded once as the impl


def _fma_jvp(primals: list, tangents: list) -> tuple:
    a, b, c = primals
    out = _fma(a, b, c)
    aval = core.get_aval(out)
    terms = []
    if type(tangents[0]) is not ad.Zero:
        terms.append(lax.mul(tangents[0], b))
    if type(tangents[1]) is not ad.Zero:
        terms.append(lax.mul(a, tangents[1]))
    if type(tangents[2]) is not ad.Zero:
        terms.append(tangents[2])
    if not terms:
        return out, ad.Zero(ad.tangent_aval(aval))
    terms = [t if core.get_aval(t).shape == aval.shape else lax.broadcast_in_dim(t, aval.shape, ()) for t in terms]
    t = terms[0]
    for u in terms[1:]:
        t = lax.add(t, u)
    return out, t


ad.primitive_jvps[_fma_p] = _fma_jvp


def _fma(a: Any, b: Any, c: Any) -> Any:
    """a * b + c rounded once (what XLA's CPU backend computes for a contracted multiply-add)."""
    return core.bind1(_fma_p, a, b, c)


# ---------------------------------------------------------------------------------------------
# XLA's float32 approximations of log, log1p, erf and erf_inv (with its fused multiply-adds and
# flush of subnormal inputs), so that samples built on them match JAX on CPU bit for bit


def _h(v: Any) -> np.float32:
    return np.float32(v) if not isinstance(v, str) else np.frombuffer(bytes.fromhex(v)[::-1], np.float32)[0]


def _f32(v: Any) -> Any:
    """A float32 constant, from a number or the hex of its bit pattern."""
    return _c(_h(v), np.float32)


_TINY32 = float(_finfo(np.float32).tiny)


def _flush(x: Any) -> Any:
    return lax.select(lax.lt(lax.abs(x), _f32(_TINY32)), lax.mul(x, _f32(0)), x)


@_debug_nans.as_unit("log")
def _xla_log_f32(y: Any) -> Any:
    y = _flush(y)
    yy = lax.select(lax.gt(y, _f32(_TINY32)), y, _full_like(y, _TINY32))
    b = _bitcast(yy, _U32)
    e = lax.sub(lax.convert_element_type(lax.shift_right_logical(b, _c(23, _U32)), np.int32), _c(127, np.int32))
    m = _bitcast(lax.bitwise_or(lax.bitwise_and(b, _c(0x807FFFFF, _U32)), _c(0x3F000000, _U32)), np.float32)
    ep1 = lax.add(lax.convert_element_type(e, np.float32), _f32(1))
    small = lax.lt(m, _f32("3F3504F3"))
    zero, one = _full_like(m, 0), _full_like(m, 1)
    x = lax.add(lax.sub(m, _f32(1)), lax.select(small, m, zero))
    e = lax.sub(ep1, lax.select(small, one, zero))
    z = lax.mul(x, x)
    x3 = lax.mul(z, x)
    pa = _fma(_fma(x, _f32("3D9021BB"), _f32("BDEBD1B8")), x, _f32("3DEF251A"))
    pb = _fma(_fma(x, _f32("BDFE5D4F"), _f32("3E11E9BF")), x, _f32("BE2AAE50"))
    pc = _fma(_fma(x, _f32("3E4CCEAC"), _f32("BE7FFFFC")), x, _f32("3EAAAAAA"))
    t = _fma(_fma(pa, x3, pb), x3, pc)
    r = _fma(t, x3, lax.mul(e, _f32("B95E8083")))
    r = lax.add(_fma(z, _f32(-0.5), x), r)
    r = _fma(e, _f32("3F318000"), r)
    r = lax.select(lax.le(y, _full_like(y, 0)), _full_like(y, np.nan), r)
    r = lax.select(lax.eq(y, _full_like(y, 0)), _full_like(y, -np.inf), r)
    r = lax.select(lax.ne(y, y), y, r)
    return lax.select(lax.eq(y, _full_like(y, np.inf)), y, r)


@_debug_nans.as_unit("log1p")
def _xla_log1p_f32(x: Any) -> Any:
    x = _flush(x)
    large = _xla_log_f32(lax.add(x, _f32(1)))
    x2 = lax.mul(x, x)
    den = lax.add(x, _f32("417101AD"))
    for c in ("42A6185B", "435DC32D", "439A8CA3", "43586D8A", "42707982"):
        den = _fma(den, x, _f32(c))
    num = _fma(_full_like(x, 4.527e-05), x, _f32("3EFF40C5"))
    for c in ("40D284FA", "41EF4B9C", "4273CC76", "426473AD", "41A05101"):
        num = _fma(num, x, _f32(c))
    t = lax.mul(lax.mul(x, x2), lax.div(num, den))
    small = lax.add(x, _fma(x2, _f32(-0.5), t))
    return lax.select(lax.lt(lax.abs(x), _f32("3ED413CD")), small, large)


_ERF_P = ("39702D51", "3B5F5DA2", "3D50B6EB", "3E3DA740", "3F906EBA")
_ERF_Q = ("B3FD3906", "37C588DF", "3A856D28", "3C6687D4", "3DE34C21", "3EFEB44A")


@custom_jvp
def _xla_erf_f32(x: Any) -> Any:
    x = _flush(x)
    z = lax.mul(x, x)
    p = _full_like(x, _h(_ERF_P[0]))
    for c in _ERF_P[1:]:
        p = _fma(z, p, _f32(c))
    q = _full_like(x, _h(_ERF_Q[0]))
    for c in _ERF_Q[1:] + (1.0,):
        q = _fma(z, q, _f32(c))
    r = lax.div(lax.mul(x, p), q)
    sign = lax.select(lax.lt(x, _full_like(x, 0)), _full_like(x, -1), _full_like(x, 1))
    return lax.select(lax.ge(lax.abs(x), _f32("407547CB")), sign, r)


@_xla_erf_f32.defjvp
def _xla_erf_f32_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    d = lax.mul(_f32(2 / math.sqrt(math.pi)), lax.exp(lax.neg(lax.mul(x, x))))
    return _xla_erf_f32(x), lax.mul(t, d)


_ERFINV_LT5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
               -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)  # fmt: skip
_ERFINV_GE5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
               -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)  # fmt: skip


@custom_jvp
@_debug_nans.as_unit("erf_inv")
def _xla_erf_inv_f32(x: Any) -> Any:
    x = _flush(x)
    w = lax.neg(_xla_log1p_f32(lax.mul(x, lax.neg(x))))
    lt = lax.lt(w, _full_like(w, 5))
    w = lax.select(lt, lax.sub(w, _f32(2.5)), lax.sub(lax.sqrt(w), _f32(3)))

    def coef(i: int) -> Any:
        return lax.select(lt, _full_like(w, _ERFINV_LT5[i]), _full_like(w, _ERFINV_GE5[i]))

    p = coef(0)
    for i in range(1, len(_ERFINV_LT5)):
        p = _fma(p, w, coef(i))
    return lax.select(lax.eq(lax.abs(x), _full_like(x, 1)), lax.mul(x, _f32(np.inf)), lax.mul(p, x))


@_xla_erf_inv_f32.defjvp
def _xla_erf_inv_f32_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    y = _xla_erf_inv_f32(x)
    return y, lax.mul(t, lax.mul(_f32(math.sqrt(math.pi) / 2), lax.exp(lax.mul(y, y))))


def _is_f32(x: Any) -> bool:
    return core.get_aval(x).dtype == np.float32


def _log(x: Any) -> Any:
    return _xla_log_f32(x) if _is_f32(x) else lax.log(x)


def _log1p(x: Any) -> Any:
    return _xla_log1p_f32(x) if _is_f32(x) else lax.log1p(x)


def _erf(x: Any) -> Any:
    return _xla_erf_f32(x) if _is_f32(x) else lax.erf(x)


def _erf_inv(x: Any) -> Any:
    dt = core.get_aval(x).dtype
    if dt == np.float32:
        return _xla_erf_inv_f32(x)
    if dt == np.float16:  # XLA evaluates it in float32
        return lax.convert_element_type(_xla_erf_inv_f32(lax.convert_element_type(x, np.float32)), dt)
    return lax.erf_inv(x)
