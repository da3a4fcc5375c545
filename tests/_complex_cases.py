"""Shared by the tests of complex values in compiled code (``test_cuda_complex.py``: the CUDA kernels
against the CPU backend; ``test_numba_complex.py``: the numba loops against the impls): the grid of
special values, the ops under test, and the comparison of results part by part."""

from __future__ import annotations

import itertools

import numpy as np

import fjax
import fjax.numpy as jnp
from fjax import lax

VALS = [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan]
GRID = [complex(a, b) for a, b in itertools.product(VALS, VALS)]

UNARY = {
    "exp": jnp.exp,
    "exp2": jnp.exp2,
    "expm1": jnp.expm1,
    "log": jnp.log,
    "log1p": jnp.log1p,
    "sqrt": jnp.sqrt,
    "rsqrt": lax.rsqrt,
    "sin": jnp.sin,
    "cos": jnp.cos,
    "tan": jnp.tan,
    "sinh": jnp.sinh,
    "cosh": jnp.cosh,
    "tanh": jnp.tanh,
    "sign": jnp.sign,
    "abs": jnp.abs,
    "square": jnp.square,
    "neg": jnp.negative,
    "conj": jnp.conj,
    "real": jnp.real,
    "imag": jnp.imag,
    "pow2": lambda a: a**2,
    "pow3": lambda a: a**3,
    "pow6": lambda a: a**6,
    "pow-2": lambda a: a**-2,
    "pow-5": lambda a: a**-5,
}
BINARY = {
    "add": jnp.add,
    "sub": jnp.subtract,
    "mul": jnp.multiply,
    "div": jnp.divide,
    "pow": lax.pow,
    "max": jnp.maximum,
    "min": jnp.minimum,
    "eq": jnp.equal,
    "ne": jnp.not_equal,
}


def check(got, want, rtol: float, what: str, zero_signs: bool = True) -> None:
    """Same dtype; parts agree where both are NaN, are equal (zeros of the same sign, with
    ``zero_signs``), or (``rtol`` > 0) are within ``rtol`` of the value's magnitude (a part near
    zero of a large value is compared against the value's size: cos/sin near pi/2 round
    differently)."""
    g, w = np.atleast_1d(got), np.atleast_1d(want)
    assert g.dtype == w.dtype, (what, g.dtype, w.dtype)
    if w.dtype == np.bool_:
        np.testing.assert_array_equal(g, w, err_msg=what)
        return
    scale = np.where(np.isfinite(w), np.abs(w), 0).astype(np.float64)
    parts = [(g.real, w.real), (g.imag, w.imag)] if w.dtype.kind == "c" else [(g, w)]
    for gp, wp in parts:
        gp, wp = gp.astype(np.float64), wp.astype(np.float64)
        same = gp == wp
        if zero_signs:
            same &= np.signbit(gp) == np.signbit(wp)
        ok = (np.isnan(gp) & np.isnan(wp)) | same | (np.abs(gp - wp) <= rtol * scale)
        bad = np.nonzero(~ok)[0]
        assert not bad.size, f"{what}: {[(i, g[i], w[i]) for i in bad[:4]]}"


def check_grad_entry(loss, x: np.ndarray, grad: np.ndarray, k: tuple = (2, 3), eps: float = 1e-6) -> None:
    """``grad[k]`` against a central difference of ``loss`` (evaluated in float64) at ``x``."""
    with fjax.enable_x64():
        x64 = x.astype(np.float64)
        e = np.zeros_like(x64)
        e[k] = eps
        fd = (float(loss(x64 + e)) - float(loss(x64 - e))) / (2 * eps)
    assert abs(float(grad[k]) - fd) <= 1e-3 * max(1.0, abs(fd))
