"""Primitives that had only a host step, compiled: ``jit`` expands their equations into lax
operations the backends compile (``mlir.register_rewrite``), with the host implementation's values.

- ``erf_inv`` on float64: the same algorithm as its host implementation (``fjax/lax/_special.py``:
  Giles' approximation, then three Newton steps on ``erf(r) - y``);
- ``nextafter`` on float32/float64: integer steps on the bits, as C's ``nextafter`` (diffrax calls
  ``eqxi.nextafter`` in every step of its solver loop).

Without them such an equation is a host step, and so is every ``while``/``cond`` around it:
``random.normal`` in float64 inside a loop (diffrax's ``VirtualBrownianTree`` bisection inside its
solver loop) then ran the whole loop eagerly, ~1000x slower. float32 keeps its host step (the host
computes in float64 and rounds once; a float32 expansion would not give the same values), and
``random.normal`` in float32 uses XLA's float32 approximation written with lax operations anyway.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fjax import core
from fjax.interpreters import mlir
from fjax.lax.lax import _const
from fjax.lax.lax_elementwise import erf_inv_p, nextafter_p

_P1 = (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
       0.246640727, 1.50140941)  # fmt: skip
_P2 = (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
       1.00167406, 2.83297682)  # fmt: skip


def _erf_inv_f64(y: Any, **params: Any) -> Any:
    from fjax import lax  # noqa: PLC0415 - (fjax.lax imports this module)

    def c(v: float) -> Any:
        return _const(y, v)

    def full(v: float) -> Any:  # (select_n's cases have the predicate's shape)
        return lax.full_like(y, v)

    w = lax.neg(lax.log(lax.mul(lax.sub(c(1.0), y), lax.add(c(1.0), y))))
    small = lax.lt(w, full(5.0))
    ws = lax.sub(w, c(2.5))
    p1 = c(2.81022636e-08)
    for k in _P1:
        p1 = lax.add(c(k), lax.mul(p1, ws))
    wl = lax.sub(lax.sqrt(lax.select_n(small, w, full(5.0))), c(3.0))
    p2 = c(-0.000200214257)
    for k in _P2:
        p2 = lax.add(c(k), lax.mul(p2, wl))
    r = lax.mul(lax.select_n(small, p2, p1), y)
    for _ in range(3):
        err = lax.sub(lax.erf(r), y)
        r = lax.sub(r, lax.div(err, lax.mul(c(2.0 / math.sqrt(math.pi)), lax.exp(lax.neg(lax.mul(r, r))))))
    r = lax.select_n(lax.eq(y, c(1.0)), r, full(np.inf))
    r = lax.select_n(lax.eq(y, c(-1.0)), r, full(-np.inf))
    return lax.select_n(lax.gt(lax.abs(y), c(1.0)), r, full(np.nan))


def _nextafter(x: Any, y: Any, **params: Any) -> Any:
    from fjax import lax  # noqa: PLC0415
    from fjax._random_arith import _bitcast  # noqa: PLC0415 - (a same-width bitcast that compiles)

    it = np.dtype(np.int64) if x.dtype == np.float64 else np.dtype(np.int32)
    sign_mask = lax.full_like(x, np.iinfo(it).min, it)
    mag_mask = lax.full_like(x, np.iinfo(it).max, it)
    bx, by = _bitcast(x, it), _bitcast(y, it)
    mx = lax.bitwise_and(bx, mag_mask)
    one = lax.full_like(x, 1, it)
    zero = lax.full_like(x, 0, x.dtype)
    away = lax.eq(lax.lt(x, y), lax.gt(x, zero))  # the magnitude grows
    mag = lax.select_n(away, lax.sub(mx, one), lax.add(mx, one))
    bits = lax.bitwise_or(lax.bitwise_and(bx, sign_mask), mag)
    bits = lax.select_n(lax.eq(x, zero), bits, lax.bitwise_or(lax.bitwise_and(by, sign_mask), one))
    out = _bitcast(bits, x.dtype)
    out = lax.select_n(lax.eq(x, y), out, y)
    return lax.select_n(lax.bitwise_or(lax.ne(x, x), lax.ne(y, y)), out, lax.add(x, y))


def _erf_inv_rewrite(eqn: core.JaxprEqn) -> Any:
    return _erf_inv_f64 if eqn.invars[0].aval.dtype == np.float64 else None


def _nextafter_rewrite(eqn: core.JaxprEqn) -> Any:
    a, b = (v.aval for v in eqn.invars)
    ok = a.dtype == b.dtype and a.dtype in (np.float32, np.float64) and a.shape == b.shape
    return _nextafter if ok else None


mlir.register_rewrite(erf_inv_p, _erf_inv_rewrite)
mlir.register_rewrite(nextafter_p, _nextafter_rewrite)
