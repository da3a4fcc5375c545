"""Accuracy of ``fjax.backends.numba.vmath`` in ULPs, for float32 and float64: hypothesis over the
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

from fjax.backends.numba import vmath as vm

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


FAST_MAX = float(vm.TRIG_FAST_MAX_F32)
BELOW_MAX = np.nextafter(np.float32(FAST_MAX), np.float32(0))  # the largest float32 in range


def fast_sample(n: int, seed: int = 1) -> np.ndarray:
    """float32 inputs of the fast sin/cos paths: log-uniform magnitudes up to 2**20 (every binade,
    denormals included), normal ones, and the edges (0, -0, +-inf, nan, the largest in range)."""
    rng = np.random.default_rng(seed)
    lim = np.float32(FAST_MAX).view(np.int32)
    bits = rng.integers(0, lim, n, dtype=np.int32)
    x = bits.view(np.float32) * rng.choice(np.array([-1, 1], np.float32), n)
    edge = [0.0, -0.0, np.inf, -np.inf, np.nan, BELOW_MAX, -BELOW_MAX, math.pi / 2]
    return np.concatenate([x, rng.standard_normal(n // 2).astype(np.float32) * 100, np.array(edge, np.float32)])


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_fast_trig_f32(name):
    """``sin_fast_f32``/``cos_fast_f32`` meet the exact versions' bound on |x| < 2**20 and on inf
    and nan (all float32 |x| < 2**20 were checked once, outside the suite: max 1 ulp)."""
    x = fast_sample(400_000)
    got = vm_apply(f"{name}_fast", x)
    d = ulp_diff(got, reference(name, x))
    i = int(np.argmax(d))
    assert d[i] <= vm.ULP_BOUNDS[(name, "float32")], (name, x[i], got[i])
    if name == "sin":
        z = vm_apply("sin_fast", np.array([0.0, -0.0], np.float32))
        assert np.signbit(z[1]) and not np.signbit(z[0])


def test_trig_oob_f32():
    """The fast paths' range flag: 1 exactly for finite |x| >= 2**20, where they give nan."""
    x = np.array([FAST_MAX, -FAST_MAX, 3e38, -1e7, BELOW_MAX, 0, np.inf, -np.inf, np.nan], np.float32)
    want = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0])

    @njit
    def flags(a):
        return np.array([vm.trig_oob_f32(v) for v in a])

    np.testing.assert_array_equal(flags(x), want)
    assert np.isnan(vm_apply("sin_fast", x[want == 1])).all()
    assert np.isnan(vm_apply("cos_fast", x[want == 1])).all()


@pytest.mark.usefixtures("fresh_numba_cache")
@pytest.mark.parametrize("n", [1000, 700_001])  # one serial tile loop; parallel chunks
def test_jit_fast_paths_rerun_exact(n):
    """jit runs float32 sin/cos through the fast paths and reruns a tile exactly when it holds
    inputs out of their range: huge inputs, nan and inf anywhere give what the exact functions
    give, in elementwise nests (flat), full reductions and row reductions."""
    import fjax  # noqa: PLC0415
    from fjax import lax  # noqa: PLC0415

    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 10).astype(np.float32)
    idx = rng.choice(n, 5, replace=False)
    x[idx] = np.array([3e38, -1.5e7, np.inf, np.nan, 2.0**20], np.float32)
    want_s, want_c = reference("sin", x), reference("cos", x)

    ew = fjax.jit(lambda v: (lax.sin(v), lax.cos(v)))
    s, c = (np.asarray(a) for a in ew(x))
    assert ulp_diff(s, want_s).max() <= 1 and ulp_diff(c, want_c).max() <= 1

    finite = np.where(np.isfinite(x), x, np.float32(1))
    total = fjax.jit(lambda v: lax.reduce_sum(lax.sin(v), (0,)))(finite)
    np.testing.assert_allclose(float(total), np.sin(finite.astype(np.float64)).sum(), rtol=1e-4, atol=1e-3)
    assert np.isnan(float(fjax.jit(lambda v: lax.reduce_sum(lax.cos(v), (0,)))(x)))

    rows = finite[: n - n % 7].reshape(7, -1)
    r = np.asarray(fjax.jit(lambda v: lax.reduce_max(lax.sin(v), (1,)))(rows))
    assert ulp_diff(r, reference("sin", rows).max(axis=1)).max() <= 1
    # short rows (several per tile), with a stored elementwise output beside the reduction
    short = finite[: n - n % 10].reshape(-1, 10)
    e, r = fjax.jit(lambda v: (lax.exp(lax.mul(v, 0.1)), lax.reduce_sum(lax.cos(v), (1,))))(short)
    with np.errstate(over="ignore"):
        assert ulp_diff(np.asarray(e), reference("exp", short * np.float32(0.1))).max() <= 1
    np.testing.assert_allclose(np.asarray(r), np.cos(short.astype(np.float64)).sum(axis=1), rtol=1e-5, atol=1e-5)


VECTORIZED = [(n, dt) for n in FUNCS for dt in DTYPES if not (n == "erf" and dt == np.float64)]
VECTORIZED += [("sin_fast", np.float32), ("cos_fast", np.float32)]


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
