"""What a sweep of the transform differential cases (``tests/data/transform_differential_cases.py``:
grad/jacfwd/jacrev/jvp/vjp/hessian/vmap of jnp, lax, nn and scipy functions), each ``jit``-compiled
on the cupy stand-in GPU against the CPU, found: 0-d outputs that came back with shape (1,) (a
constant output), float0 cotangents (integer inputs) uploaded to the device, and ``.at[].mul`` /
float ``.at[].min``/``max`` with no atomic form. Those as regression tests, and a slice of the sweep
itself (every 40th case) so that a new gap shows here."""

from __future__ import annotations

import _nvcc  # noqa: E402  (tests/ is on the path)
import _standin_gpu  # noqa: E402
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax.backends.cuda import emulate

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed():
        yield


def _leaves(tree):
    return [np.asarray(x) if np.dtype(x.dtype) != fjax.dtypes.float0 else x for x in fjax.tree_util.tree_leaves(tree)]


def test_a_constant_0d_output_keeps_its_shape():
    v = np.linspace(-1, 1, 5).astype(np.float32)
    f = lambda x, y, z: fjax.grad(lambda x, y, z: jnp.sum(x * y) + z, argnums=(0, 2))(x, y, z)  # noqa: E731
    got, want = _standin_gpu.both(f, v, v[::-1], v[0])
    assert [g.shape for g in got] == [w.shape for w in want] == [(5,), ()]
    np.testing.assert_array_equal(got[1], want[1])


def test_float0_cotangents_under_jit_on_the_gpu_are_host_zeros():
    """As JAX: float0 values (no data) come back as numpy arrays, never device buffers."""
    b, i = np.array([True, False]), np.array([1, 2], np.int32)
    f = fjax.jit(lambda: fjax.grad(lambda x: jnp.sum(jnp.where(x, 1.0, 2.0)), allow_int=True)(b))
    g = fjax.jit(lambda x: fjax.vjp(lambda x: x * 2, x)[1](x))
    for r in (f(), g(fjax.device_put(i, fjax.devices("gpu")[0]))):
        (leaf,) = fjax.tree_util.tree_leaves(r)
        assert isinstance(leaf, np.ndarray) and leaf.dtype == fjax.dtypes.float0 and leaf.shape == (2,)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), op=st.sampled_from(["mul", "min", "max"]))
@pytest.mark.parametrize("dt", [np.int32, np.uint32, np.float32, np.int64, np.float64])
def test_scatter_mul_min_max_match_the_cpu(dt, seed, op):
    """Compare-and-swap loops (multiplication of every 4/8-byte type, min/max of floats, NaNs
    propagating as the impl's), repeated indices included."""
    rng = np.random.default_rng(seed)
    x, u = (rng.standard_normal(8) * 5).astype(dt), (rng.standard_normal(20) * 3).astype(dt)
    if np.dtype(dt).kind == "f":
        x[rng.integers(0, 8)], u[rng.integers(0, 20)] = np.nan, np.nan
    i = rng.integers(0, 8, 20).astype(np.int32)
    got, want = _standin_gpu.both(lambda x, i, u: getattr(x.at[i], op)(u), x, i, u, x64=np.dtype(dt).itemsize == 8)
    assert got.dtype == want.dtype
    # float products of colliding updates: the threads' order (a GPU's is not the CPU's)
    np.testing.assert_allclose(got, want, rtol=1e-6 if np.dtype(dt).kind == "f" else 0, equal_nan=True)


@_nvcc.needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_the_compare_and_swap_scatters(arch, tmp_path):
    srcs = []
    for dt in (np.int32, np.float32, np.float64, np.int64):
        with fjax.enable_x64(np.dtype(dt).itemsize == 8):
            x, i = np.zeros(8, dt), np.zeros(4, np.int32)
            for op in ("mul", "min", "max"):
                f = lambda x, i, u, op=op: getattr(x.at[i], op)(u)  # noqa: E731
                srcs.append(fjax.jit(f).trace(x, i, x[:4]).lower(lowering_platforms=("cuda",)).as_text())
    assert sum("old = atomicCAS(a, seen, w.u)" in s for s in srcs) == 8  # integer min/max: atomicMin/Max
    _nvcc.compile_without_spills("\n".join(srcs), arch, tmp_path)


def _sweep_cases():
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    sys.path.insert(0, str(Path(__file__).parent / "data"))
    import transform_differential_cases as T  # noqa: PLC0415

    import fjax.scipy.linalg  # noqa: F401, PLC0415
    import fjax.scipy.special  # noqa: F401, PLC0415

    cases = T.all_cases(fjax, "float32")
    return {k: f for j, (k, f) in enumerate(sorted(cases.items())) if j % 40 == 7}


_SWEEP = _sweep_cases()


@pytest.mark.parametrize("key", sorted(_SWEEP))
def test_transform_sweep_slice_matches_the_cpu(key):
    f = fjax.jit(_SWEEP[key])
    old = fjax.config.jax_platforms
    fjax.config.update("jax_platforms", "cpu")
    try:
        want = _leaves(f())
    except Exception as e:  # the case is an error case: the GPU raises the same
        want = e
    finally:
        fjax.config.update("jax_platforms", old)
    assert fjax.default_backend() == "gpu"
    if isinstance(want, Exception):
        with pytest.raises(type(want)):
            f()
        return
    got = _leaves(f())
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, key
        if g.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=3e-3, atol=3e-3, equal_nan=True, err_msg=key)
        elif g.dtype != fjax.dtypes.float0:
            np.testing.assert_array_equal(g, w, err_msg=key)
