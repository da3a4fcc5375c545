"""fjax arrays as arguments of numba-compiled functions (``fjax/_numba_interop.py``), as JAX's CPU
arrays are through the buffer protocol: a ``pure_callback`` to a ``numba.njit`` function (jaxopt's
isotonic regression) receives fjax arrays and must run."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import _numba_interop


@numba.njit
def _pav_like(y):
    # reads its argument element by element and builds a new array (as jaxopt's PAV does)
    n = y.shape[0]
    out = np.zeros(n)
    acc = 0.0
    for i in range(n):
        acc += y[i]
        out[i] = acc
    return out.astype(y.dtype)


@numba.njit
def _sum2d(a):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            s += a[i, j] * (i + 1)
    return s


@numba.njit
def _write(a):
    a[0] = 1.0


def test_registers_once_numba_is_imported():
    assert _numba_interop.register() and _numba_interop.register()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_njit_takes_fjax_arrays(dtype):
    _numba_interop.register()
    x = jnp.asarray(np.array([3, 1, 2, 5], dtype))  # (64-bit dtypes become 32-bit without x64)
    out = _pav_like(x)
    np.testing.assert_array_equal(out, np.cumsum(np.asarray(x)).astype(x.dtype))
    assert out.dtype == x.dtype


def test_layouts_and_ranks():
    _numba_interop.register()
    a = np.arange(12.0).reshape(3, 4)
    want = float(np.sum(a * np.arange(1, 4)[:, None]))
    assert _sum2d(jnp.asarray(a)) == want
    t = jnp.asarray(a.T.copy()).T  # a transposed (Fortran-ordered) value
    assert _sum2d(t) == want
    b = jnp.broadcast_to(jnp.arange(4.0), (3, 4))  # may be a zero-stride view
    assert _sum2d(b) == float(np.sum(np.broadcast_to(np.arange(4.0), (3, 4)) * np.arange(1, 4)[:, None]))


def test_fjax_arrays_are_read_only_in_numba():
    _numba_interop.register()
    x = jnp.zeros(3)
    with pytest.raises(numba.core.errors.TypingError):
        _write(x)
    np.testing.assert_array_equal(x, np.zeros(3))


def test_pure_callback_to_njit_under_transforms():
    y = jnp.array([3.0, 1.0, 2.0, 5.0])

    def f(v):
        return fjax.pure_callback(_pav_like, fjax.ShapeDtypeStruct(v.shape, v.dtype), v, vmap_method="sequential")

    want = np.cumsum(np.asarray(y))
    np.testing.assert_allclose(f(y), want)
    np.testing.assert_allclose(fjax.jit(f)(y), want)
    np.testing.assert_allclose(fjax.vmap(f)(jnp.stack([y, 2 * y])), np.stack([want, 2 * want]))


def test_type_pickles_for_numba_cache():
    _numba_interop.register()
    ty = numba.typeof(jnp.ones((2, 3), jnp.float32))
    assert type(ty).__name__ == "FjaxArrayType" and not ty.mutable
    assert pickle.loads(pickle.dumps(ty)) == ty


def test_cached_njit_in_a_fresh_process(tmp_path):
    # a cache=True function compiled for an fjax array is loaded from numba's disk cache later
    mod = tmp_path / "cached_mod.py"
    mod.write_text(
        textwrap.dedent("""
        import numba, numpy as np
        @numba.njit(cache=True)
        def total(a):
            s = 0.0
            for v in a:
                s += v
            return s
    """)
    )
    code = textwrap.dedent("""
        import sys, fjax.numpy as jnp, numba
        from fjax import _numba_interop
        _numba_interop.register()
        import cached_mod
        print(cached_mod.total(jnp.arange(5.0)), len(cached_mod.total.stats.cache_hits))
    """)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    cmd = [sys.executable, "-c", code]
    outs = [subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300) for _ in range(2)]
    for o in outs:
        assert o.returncode == 0, o.stderr[-2000:]
    assert outs[0].stdout.split()[0] == "10.0" and outs[1].stdout.split() == ["10.0", "1"]
