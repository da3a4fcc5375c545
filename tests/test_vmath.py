"""Accuracy of ``fjax.interpreters.vmath`` in ULPs, for float32 and float64: hypothesis over the
whole float range (any bit pattern), a large log-uniform sample, and the special values (0, -0,
+-inf, nan, denormals, the overflow/underflow edges, huge arguments).

References: float64 results from numpy (libm, <= 1 ulp) and, for float32, the float64 numpy
result rounded to float32 (correctly rounded nearly always). ``logistic`` is checked against
fjax's eager implementation evaluated in float64; ``erf`` against ``math.erf``. The asserted
bounds are ``vmath.ULP_BOUNDS`` (documented in the module docstring).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numba import njit

from fjax.interpreters import vmath as vm

FUNCS = ["exp", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "erf"]
DTYPES = [np.float32, np.float64]


def _logistic64(x):
    with np.errstate(all="ignore"):
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


_verf = np.vectorize(math.erf, otypes=[np.float64])

REF64 = {
    "exp": np.exp,
    "log": np.log,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "tanh": np.tanh,
    "logistic": _logistic64,
    "sin": np.sin,
    "cos": np.cos,
    "erf": _verf,
}


def reference(name: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return REF64[name](x.astype(np.float64)).astype(x.dtype)


_runners: dict = {}


def vm_apply(name: str, x: np.ndarray) -> np.ndarray:
    suffix = "f32" if x.dtype == np.float32 else "f64"
    key = (name, suffix)
    if key not in _runners:
        fn = getattr(vm, f"{name}_{suffix}")

        @njit(error_model="numpy")
        def run(a):
            o = np.empty_like(a)
            for i in range(a.shape[0]):
                o[i] = fn(a[i])
            return o

        _runners[key] = run
    return _runners[key](np.ascontiguousarray(x))


def ulp_diff(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """ULP distance (nan == nan; a nan/non-nan mismatch counts as huge)."""
    it = np.int32 if got.dtype == np.float32 else np.int64

    def ordered(a):
        i = a.view(it).astype(np.int64)
        return np.where(i < 0, np.int64(np.iinfo(it).min) - i, i)

    d = np.abs(ordered(got) - ordered(want))
    gn, wn = np.isnan(got), np.isnan(want)
    d = np.where(gn & wn, 0, d)
    return np.where(gn != wn, np.iinfo(np.int64).max, d)


def specials(dt) -> np.ndarray:
    fi = np.finfo(dt)
    vals = [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        1.0,
        -1.0,
        0.5,
        -0.5,
        fi.tiny,
        -fi.tiny,
        fi.smallest_subnormal,
        -fi.smallest_subnormal,
        fi.max,
        -fi.max,
        fi.eps,
        88.72,
        88.73,
        -87.3,
        -103.9,
        -104.0,
        709.78,
        709.79,
        -708.4,
        -745.1,
        -745.2,
        1e5,
        1e10,
        1e20,
        1e30,
        -1e30,
        3.0e38,
        1e300,
        9.0,
        20.0,
        -20.0,
        0.625,
        -0.625,
        math.pi,
        math.pi / 2,
        math.pi / 4,
        1e-8,
        -1e-8,
        1e-30,
        1e-300,
        4.0,
        -4.0,
        -0.9999,
        -1.0 + 1e-7,
    ]
    with np.errstate(all="ignore"):
        return np.array(vals, dtype=np.float64).astype(dt)


def sample(dt, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    it = np.int32 if dt == np.float32 else np.int64
    raw = rng.integers(np.iinfo(it).min, np.iinfo(it).max, n, dtype=it).view(dt)  # log-uniform over everything
    return np.concatenate([raw, rng.standard_normal(n // 2).astype(dt) * dt(4), specials(dt)])


def max_ulp(name: str, x: np.ndarray) -> tuple[int, float]:
    got, want = vm_apply(name, x), reference(name, x)
    d = ulp_diff(got, want)
    i = int(np.argmax(d))
    return int(d[i]), float(x[i])


CASES = [(f, d) for f in FUNCS for d in DTYPES if hasattr(vm, f"{f}_{'f32' if d == np.float32 else 'f64'}")]


@pytest.mark.parametrize("name,dt", CASES, ids=[f"{f}-{np.dtype(d).name}" for f, d in CASES])
def test_ulp_bound_sampled(name, dt):
    bound = vm.ULP_BOUNDS[(name, np.dtype(dt).name)]
    err, at = max_ulp(name, sample(dt, 200_000))
    assert err <= bound, f"{name} {np.dtype(dt).name}: {err} ulp at x={at!r} (bound {bound})"


@pytest.mark.parametrize("name,dt", CASES, ids=[f"{f}-{np.dtype(d).name}" for f, d in CASES])
def test_special_values(name, dt):
    x = specials(dt)
    got, want = vm_apply(name, x), reference(name, x)
    bound = vm.ULP_BOUNDS[(name, np.dtype(dt).name)]
    assert np.all(ulp_diff(got, want) <= bound), list(zip(x, got, want))
    # signs of zero results of odd functions are kept
    if name in ("sin", "tanh", "expm1", "log1p", "erf"):
        z = vm_apply(name, np.array([0.0, -0.0], dt))
        assert np.signbit(z[1]) and not np.signbit(z[0])


@given(
    st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1, max_size=64), st.sampled_from(FUNCS)
)
def test_hypothesis_float32(xs, name):
    x = np.array(xs, np.float32)
    err, at = max_ulp(name, x)
    assert err <= vm.ULP_BOUNDS[(name, "float32")], (name, at)


@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=64),
    st.sampled_from([f for f in FUNCS if f != "erf"]),
)
def test_hypothesis_float64(xs, name):
    x = np.array(xs, np.float64)
    err, at = max_ulp(name, x)
    assert err <= vm.ULP_BOUNDS[(name, "float64")], (name, at)


VECTORIZED = [(n, dt) for n in FUNCS for dt in DTYPES if not (n == "erf" and dt == np.float64)]


@pytest.mark.parametrize("name,dt", VECTORIZED, ids=[f"{n}-{np.dtype(d).name}" for n, d in VECTORIZED])
def test_loop_vectorizes(name, dt):
    """A plain loop calling the function is inlined (no call left in the loop, which would keep it
    scalar) and compiles to SIMD code (LLVM vector types in the optimized IR)."""
    vm_apply(name, np.ones(4, dt))
    run = _runners[(name, "f32" if dt == np.float32 else "f64")]
    ir = run.inspect_llvm(run.signatures[0])
    elem = "float" if dt == np.float32 else "double"
    assert f"x {elem}>" in ir, f"{name} {np.dtype(dt).name}: the loop did not vectorize"
    calls = [ln for ln in ir.splitlines() if "call" in ln and f"5vmath{len(name) + 4}{name}" in ln]
    assert not calls, calls[:2]
