"""``dot_general`` of integers and bools on the CUDA backend (``fjax/backends/cuda/int_dot.py``: a
kernel, since cuBLAS takes floats and complex only): drawn dimension numbers (batch and several
contracting dims), dtypes, ``preferred_element_type``, wraparound, under vmap and in a scan body,
against the CPU on the cupy stand-in; and nvcc."""

from __future__ import annotations

import _nvcc  # noqa: E402  (tests/ is on the path)
import _standin_gpu  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed():
        yield


_DTYPES = [np.int32, np.int8, np.uint8, np.uint32, np.bool_]


def _draw(rng, dt, shape):
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -120), min(info.max, 250), shape).astype(dt)


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    dt=st.sampled_from(_DTYPES),
    nb=st.integers(0, 1),
    nc=st.integers(0, 2),
    nlf=st.integers(0, 1),
    nrf=st.integers(0, 1),
)
def test_integer_dot_general_matches_the_cpu(seed, dt, nb, nc, nlf, nrf):
    rng = np.random.default_rng(seed)
    sizes = [int(s) for s in rng.integers(1, 5, nb + nc + nlf + nrf)]
    bs, cs, lf, rf = sizes[:nb], sizes[nb : nb + nc], sizes[nb + nc : nb + nc + nlf], sizes[nb + nc + nlf :]
    # operand layouts: dims shuffled, so batch/contracting dims sit anywhere
    lroles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(nlf)]
    rroles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(nrf)]
    rng.shuffle(lroles)
    rng.shuffle(rroles)
    size = {"b": bs, "c": cs}
    lshape = [size[r][i] if r != "f" else lf[i] for r, i in lroles]
    rshape = [size[r][i] if r != "f" else rf[i] for r, i in rroles]
    dn = (
        (tuple(lroles.index(("c", i)) for i in range(nc)), tuple(rroles.index(("c", i)) for i in range(nc))),
        (tuple(lroles.index(("b", i)) for i in range(nb)), tuple(rroles.index(("b", i)) for i in range(nb))),
    )
    x, y = _draw(rng, dt, lshape), _draw(rng, dt, rshape)
    got, want = _standin_gpu.both(lambda a, b: lax.dot_general(a, b, dn), x, y)
    assert got.dtype == want.dtype == np.dtype(dt)
    np.testing.assert_array_equal(got, want)


def _i8dot(a, b):
    return lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)


def _scan_dot(a, b):
    return lax.scan(lambda c, v: (c + v @ b, 0), jnp.zeros(b.shape[1], jnp.int32), a)[0]


def test_preferred_element_type_wraparound_vmap_and_scan():
    rng = np.random.default_rng(0)
    a8, b8 = _draw(rng, np.int8, (4, 30)), _draw(rng, np.int8, (30, 3))
    cases = {
        "int8 -> int32": (_i8dot, (a8, b8)),
        "uint8 wraps": (lambda a, b: a @ b, (np.full((2, 300), 200, np.uint8), np.full((300, 2), 3, np.uint8))),
        "bool or-of-ands": (jnp.dot, (a8 > 0, b8 > 50)),
        "vmap": (fjax.vmap(jnp.dot), (a8.astype(np.int32).reshape(2, 2, 30), b8[:, :2].T.astype(np.int32))),
        "scan": (_scan_dot, (a8.astype(np.int32), b8.astype(np.int32))),
    }
    for name, (f, args) in cases.items():
        got, want = _standin_gpu.both(f, *args)
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)
    assert _standin_gpu.both(lambda a, b: a @ b, *cases["uint8 wraps"][1])[0][0, 0] == (200 * 3 * 300) % 256


@_nvcc.needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_the_integer_dot_kernels(arch, tmp_path):
    srcs = [
        fjax.jit(f).trace(*args).lower(lowering_platforms=("cuda",)).as_text()
        for f, args in [
            (jnp.matmul, (np.zeros((2, 3, 4), np.int32), np.zeros((2, 4, 5), np.int32))),
            (jnp.dot, (np.zeros((3, 4), bool), np.zeros((4, 2), bool))),
            (_i8dot, (np.zeros((3, 4), np.int8), np.zeros((4, 2), np.int8))),
        ]
    ]
    assert all("// dot_general" in s for s in srcs)
    _nvcc.compile_without_spills("\n".join(srcs), arch, tmp_path)


@pytest.mark.parametrize("pair", ["f32->c64", "f64->c128", "c64->c128"])
def test_products_converted_to_a_complex_preferred_element_type(pair):
    """``preferred_element_type`` complex with real (or narrower complex) operands: not a cuBLAS
    GEMM (its operand and product types differ), the kernel here, as the CPU converts them."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((6, 3))
    src, out = {"f32->c64": (np.float32, np.complex64), "f64->c128": (np.float64, np.complex128)}.get(
        pair, (np.complex64, np.complex128)
    )
    if np.dtype(src).kind == "c":
        a = a + 1j * rng.standard_normal(a.shape)
    x64 = np.dtype(out) == np.complex128
    got, want = _standin_gpu.both(
        lambda x, y: lax.dot(x, y, preferred_element_type=out), a.astype(src), b.astype(src), x64=x64
    )
    assert got.dtype == want.dtype == np.dtype(out)
    np.testing.assert_allclose(got, want, rtol=1e-6 if out == np.complex64 else 1e-14, atol=1e-6)
