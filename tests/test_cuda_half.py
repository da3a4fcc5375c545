"""bfloat16 and float16 on the CUDA backend: buffers hold the 16-bit bits, kernels compute in float
and round every op's result back (as XLA computes 16-bit floats on a GPU), sums accumulate wide,
GEMMs run cuBLAS's Ex call with 16-bit operands and float32 compute (a float32 product for
``preferred_element_type=float32``), and a bfloat16 array on a GPU keeps its bits in a uint16 cupy
buffer (cupy has no bfloat16).

Checked on the CPU emulator against the CPU backend's results (which compute these dtypes with
numpy + ml_dtypes, one rounding per op): elementwise ops bit for bit, reductions, GEMMs and
transcendental functions to 16-bit tolerance; the conversions themselves against ml_dtypes over
every 16-bit pattern; and the whole GPU path (placement, jit, the Ex GEMM call, graphs) through
the cupy stand-in, which refuses bfloat16 buffers as cupy does."""

from __future__ import annotations

import re
import shutil
import subprocess

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cuda_standin import standin_gpu  # noqa: F401  (the cupy stand-in as the GPU)

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")

BF16, F16 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)
HALF = [pytest.param(BF16, id="bfloat16"), pytest.param(F16, id="float16")]


def _run(fn, *args):
    low = fjax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))
    return low.as_text(), emulate.run_lowered(low, *args)


def _f(x):
    return np.asarray(x).astype(np.float64)


def _cpu(fn, *args):
    return [np.asarray(v) for v in fjax.tree_util.tree_leaves(fjax.jit(fn)(*args))]


def test_conversions_match_ml_dtypes_on_every_bit_pattern():
    """The prelude's float <-> 16-bit conversions (round to nearest even, NaN kept, overflow to
    infinity, float16 subnormals) against ml_dtypes/numpy, for every 16-bit pattern and for
    float32 values around each 16-bit midpoint."""
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for dt in (BF16, F16):
        vals = bits.view(dt)
        f32 = vals.astype(np.float32)
        # midpoints (and their float32 neighbours) between consecutive finite values: rounding
        fin = np.sort(np.unique(f32[np.isfinite(f32)]))
        mid = ((fin[:-1].astype(np.float64) + fin[1:]) / 2).astype(np.float32)
        probe = np.concatenate([f32, mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf)])
        probe = np.concatenate([probe, np.array([1e30, -1e30, 65519.0, 65520.0, 3.4e38], np.float32)])
        _, (back, wide) = _run(lambda x, p: (x.astype(jnp.float32), p.astype(dt)), vals, probe)
        np.testing.assert_array_equal(back.view(np.uint32), f32.view(np.uint32))
        want = probe.astype(dt)
        nan = np.isnan(want.astype(np.float32))
        np.testing.assert_array_equal(np.isnan(wide.astype(np.float32)), nan)
        np.testing.assert_array_equal(wide.view(np.uint16)[~nan], want.view(np.uint16)[~nan])


@pytest.mark.parametrize("dt", HALF)
def test_float64_and_int_to_16_bits_round_as_the_cpu(dt):
    """float64 (and int) -> 16 bits as the CPU converts: float16 with one rounding, as numpy (round
    to odd through float32, then to nearest even: a value just above a midpoint whose float32
    rounding lands ON the midpoint rounds up), bfloat16 through float32, as ml_dtypes."""
    one = np.float64(1.0)
    ulp = 2.0**-7 if dt == BF16 else 2.0**-10
    x = np.array([one + ulp / 2 + 2.0**-40, one + ulp / 2 - 2.0**-40, one + ulp * 1.5, 1e300, -3.0, 7.0e-6])
    _, (got,) = _run(lambda x: x.astype(dt), x)
    with fjax.enable_x64(True):
        _, (got64,) = _run(lambda x: x.astype(dt), x)
    want = x.astype(dt)
    np.testing.assert_array_equal(got64.view(np.uint16), want.view(np.uint16))
    np.testing.assert_array_equal(got.view(np.uint16), x.astype(np.float32).astype(dt).view(np.uint16))
    i = np.array([1, 257, -259, 65535, 2**24 + 1, -(2**31)], np.int32)
    _, (gi,) = _run(lambda i: i.astype(dt), i)
    np.testing.assert_array_equal(gi.view(np.uint16), i.astype(dt).view(np.uint16))
    if dt == F16:  # the case double rounding would get wrong
        assert got64[0].view(np.uint16) == np.float16(1.0).view(np.uint16) + 1


@pytest.mark.parametrize("dt", HALF)
def test_elementwise_ops_are_bit_identical_to_the_cpu(dt):
    """+ - * / sqrt, comparisons, where, max, abs, floor: one rounding per op, as the CPU's numpy +
    ml_dtypes does: the same bits."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((7, 33)) * 4).astype(dt)
    y = (rng.standard_normal((7, 33)) + 2).astype(dt)

    def f(x, y):
        a = x * y + 1.5
        b = (a - y) / (y * y + 0.25)
        c = jnp.where(x > y, jnp.sqrt(jnp.abs(b)), jnp.maximum(a, -b))
        return c, jnp.floor(a * 3), (x * 0.1).astype(jnp.float32), -a

    _, got = _run(f, x, y)
    for g, w in zip(got, _cpu(f, x, y)):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))


@pytest.mark.parametrize("dt", HALF)
def test_transcendentals_softmax_and_reductions(dt):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((16, 40)) * 2).astype(dt)

    def f(x):
        return (
            jnp.tanh(x),
            jnp.exp(x) * jnp.log1p(jnp.abs(x)),
            fjax.nn.softmax(x, axis=-1),
            jnp.sum(x, axis=0),
            jnp.mean(x * x),
            jnp.max(x, axis=1),
            jnp.cumsum(x, axis=1),
            jnp.sort(x, axis=1),
            jnp.argmax(x, axis=1),
        )

    text, got = _run(f, x)
    assert "unsigned short" in text and f"fj_r{'bf16' if dt == BF16 else 'f16'}" in text
    tol = 1e-2 if dt == BF16 else 2e-3
    for g, w in zip(got, _cpu(f, x)):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(_f(g), _f(w), rtol=tol, atol=tol)


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("pref", [None, np.float32])
def test_gemm_and_its_gradient(dt, pref):
    """x @ w in 16 bits (float32 accumulation, one rounding) and with a float32 product
    (``preferred_element_type``), forward and gradient, small (fused) and large contractions."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((24, 64)).astype(dt)
    w = (rng.standard_normal((64, 16)) / 8).astype(dt)
    v = rng.standard_normal((24, 3)).astype(dt)
    u = rng.standard_normal((3, 16)).astype(dt)

    def loss(w, x):
        h = jnp.dot(x, w, preferred_element_type=pref)
        return jnp.sum(jnp.tanh(h).astype(jnp.float32) ** 2)

    def f(w, x, v, u):
        return jnp.dot(x, w, preferred_element_type=pref), jnp.dot(v, u, preferred_element_type=pref)

    text, got = _run(f, w, x, v, u)
    assert "cublas gemm" in text
    xw = x.astype(np.float32) @ w.astype(np.float32)
    vu = v.astype(np.float32) @ u.astype(np.float32)
    out = np.dtype(pref or dt)
    for g, want in zip(got, (xw, vu)):
        assert g.dtype == out
        np.testing.assert_allclose(_f(g), _f(want.astype(out)), rtol=1e-2, atol=1e-2)
    _, (gw,) = _run(fjax.grad(loss), w, x)
    (cw,) = _cpu(fjax.grad(loss), w, x)
    assert gw.dtype == dt
    np.testing.assert_allclose(_f(gw), _f(cw), rtol=5e-2, atol=5e-2)


@pytest.mark.parametrize("dt", HALF)
def test_indexing_scatter_add_and_control_flow(dt):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 8)).astype(dt)
    idx = np.array([0, 3, 3, 5])

    def f(x):
        g = x[idx] * 2
        s = jnp.zeros((6, 8), dt).at[idx].add(x[:4])
        d = lax.dynamic_update_slice(x, jnp.ones((2, 2), dt), (1, 2))
        c, ys = lax.scan(lambda c, r: (c * 0.5 + r, jnp.sum(c)), jnp.zeros(8, dt), x)
        w = lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * 1.5, c[1] + 1), (x, 0))[0]
        return g, s, d, c, ys, w, jnp.take(x, idx, axis=1, mode="fill", fill_value=-2.0)

    _, got = _run(f, x)
    for g, w in zip(got, _cpu(f, x)):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(_f(g), _f(w), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dt", HALF)
def test_random_normal_matches_the_cpu_stream(dt):
    """``random.normal`` in 16 bits: the same bits as the CPU (threefry, the once-rounded fma) up
    to the inverse error function, whose float32 value may differ by an ulp before the rounding."""
    key = fjax.random.PRNGKey(7)
    f = fjax.jit(lambda k: fjax.random.normal(k, (4096,), dt))
    _, (got,) = _run(lambda k: fjax.random.normal(k, (4096,), dt), np.asarray(key))
    want = np.asarray(f(key))
    same = np.mean(got.view(np.uint16) == want.view(np.uint16))
    assert same > 0.99, same
    np.testing.assert_allclose(_f(got), _f(want), rtol=1e-2, atol=1e-2)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**16), st.sampled_from(["bfloat16", "float16"]), st.integers(1, 70))
def test_mixed_chain_matches_the_cpu(seed, name, n):
    dt = np.dtype(getattr(ml_dtypes, name, None) or name)
    x = (np.random.default_rng(seed).standard_normal((3, n)) * 3).astype(dt)

    def f(x):
        y = jnp.sin(x) * x - jnp.exp(-x * x)
        return y, jnp.sum(y, axis=1), y.astype(jnp.float32) * 2

    _, got = _run(f, x)
    tol = 1e-2 if dt == BF16 else 2e-3
    for g, w in zip(got, _cpu(f, x)):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(_f(g), _f(w), rtol=tol, atol=tol)


@pytest.mark.usefixtures("standin_gpu")
def test_bfloat16_training_step_on_the_standin_gpu():
    """A mixed-precision step on a (stand-in) GPU: bfloat16 params and inputs live on the device
    as uint16 buffers yet report bfloat16; the bfloat16 GEMMs with float32 products go through
    cuBLAS's Ex call (the stand-in checks the data types it is given); the step runs three times
    (the third replays a CUDA graph) and matches the CPU."""
    from fjax.backends.cuda import cupy_standin  # noqa: PLC0415

    calls = cupy_standin.calls
    calls.clear()
    gpu = fjax.devices("gpu")[0]
    cpu = fjax.devices("cpu")[0]
    rng = np.random.default_rng(4)
    w = rng.standard_normal((32, 16)).astype(BF16) / 4
    x = rng.standard_normal((64, 32)).astype(BF16)
    y = rng.standard_normal((64, 16)).astype(np.float32)

    def step(w, x, y):
        def loss(w):
            h = jnp.dot(x, w, preferred_element_type=jnp.float32)
            return jnp.mean((jnp.tanh(h) - y) ** 2)

        val, g = fjax.value_and_grad(loss)(w)
        return val, (w - 0.1 * g.astype(w.dtype)).astype(w.dtype)

    js = fjax.jit(step)
    wg, xg, yg = (fjax.device_put(a, gpu) for a in (w, x, y))
    assert wg.dtype == BF16 and wg._buf.dtype == np.uint16
    np.testing.assert_array_equal(np.asarray(wg).view(np.uint16), w.view(np.uint16))
    wc = fjax.device_put(w, cpu)
    for _ in range(3):
        val, wg = js(wg, xg, yg)
        valc, wc = js(wc, x, y)
        assert wg.dtype == BF16 and wg.devices() == {gpu}
        np.testing.assert_allclose(float(val), float(valc), rtol=1e-2)
        np.testing.assert_allclose(_f(wg), _f(wc), rtol=2e-2, atol=2e-2)
    assert calls["gemm"] > 0
    assert calls["graph launch"] >= 1  # the third call replayed a captured graph
    assert calls["cupy.matmul"] == 0  # every GEMM through the Ex call
    # eager ops on the GPU array keep the dtype
    z = wg * 2
    assert z.dtype == BF16 and z.devices() == {gpu}
    np.testing.assert_array_equal(np.asarray(z).view(np.uint16), (np.asarray(wg) * 2).astype(BF16).view(np.uint16))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_a_bfloat16_training_step(arch, tmp_path):
    """A bfloat16 MLP step (float32 products, log-softmax, bfloat16 SGD update) lowers to CUDA C
    that nvcc compiles for sm_80/sm_90 with no register spills."""
    rng = np.random.default_rng(0)
    p = [
        (rng.standard_normal((64, 32)).astype(BF16), np.zeros(32, BF16)),
        (rng.standard_normal((32, 10)).astype(BF16),),
    ]
    x = rng.standard_normal((16, 64)).astype(BF16)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 16)]

    def step(p, x, y):
        def loss(p):
            h = jnp.tanh(jnp.dot(x, p[0][0], preferred_element_type=jnp.float32).astype(BF16) + p[0][1])
            lg = jnp.dot(h, p[1][0], preferred_element_type=jnp.float32)
            return -jnp.mean(jnp.sum(y * fjax.nn.log_softmax(lg), axis=1))

        v, g = fjax.value_and_grad(loss)(p)
        return v, fjax.tree_util.tree_map(lambda a, b: (a - 0.01 * b).astype(a.dtype), p, g)

    src = fjax.jit(step).trace(p, x, y).lower(lowering_platforms=("cuda",)).as_text()
    cu = tmp_path / "bf16.cu"
    cu.write_text(src)
    cmd = ["nvcc", f"-arch={arch}", "-c", str(cu), "-o", str(tmp_path / "bf16.o"), "-Xptxas", "-v"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    spills = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)]
    assert spills and not any(spills)


@pytest.mark.parametrize("dt", HALF)
def test_nextafter_and_spacing_of_16_bit_floats_match_the_cpu(dt):
    """``nextafter`` on the bits (float16 as numpy: x where x == y; bfloat16 as ml_dtypes: y), over
    every seventh bit pattern against a shifted one and the grid of zeros, ones, infinities and NaN;
    ``spacing`` (its user) too."""
    b = np.arange(0, 1 << 16, 7, dtype=np.uint32).astype(np.uint16)
    x, y = b.view(dt), np.roll(b, 13).view(dt).copy()
    y[::5] = x[::5]
    sp = np.array([0, -0.0, 1, -1, np.inf, -np.inf, np.nan], dt)
    gx, gy = np.meshgrid(sp, sp)
    x, y = np.concatenate([x, gx.ravel()]), np.concatenate([y, gy.ravel()])
    for fn, args in ((jnp.nextafter, (x, y)), (jnp.spacing, (x,))):
        _, got = _run(fn, *args)
        (want,) = _cpu(fn, *args)
        np.testing.assert_array_equal(np.asarray(got[0]).view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("cdt", [np.complex64, np.complex128])
def test_conversions_between_16_bit_floats_and_complex_match_the_cpu(dt, cdt):
    """Every third 16-bit pattern to complex (exact), and complex values over 14 decades (with
    NaN, infinities, overflow) to 16 bits: the real part rounded once, as numpy/ml_dtypes."""
    x = np.arange(0, 1 << 16, 3, dtype=np.uint32).astype(np.uint16).view(dt)
    rng = np.random.default_rng(0)
    z = (rng.standard_normal(3000) * 10.0 ** rng.uniform(-8, 6, 3000)).astype(cdt) + 1j
    z[:4] = [np.nan, np.inf, -np.inf, 3e38]
    with fjax.enable_x64(cdt == np.complex128):
        for f, arg in (
            (lambda v: lax.convert_element_type(v, cdt) * 1j, x),
            (lambda v: lax.convert_element_type(v, dt), z),
        ):
            _, got = _run(f, arg)
            (want,) = _cpu(f, arg)
            got = np.asarray(got[0])
            assert got.dtype == want.dtype
            if want.dtype.kind == "c":
                np.testing.assert_array_equal(got, want)
            else:
                np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
