"""device_put takes numpy arrays of every dtype fjax supports, ml_dtypes' included (numpy reports
bfloat16, float8 and int4 as kind "V", the kind of the structured dtypes it refuses), and refuses
the non-numeric ones with JAX 0.10.2's message. On a GPU, ml_dtypes' types but bfloat16 have no
cupy dtype and no kernels: the CUDA runtime refuses them with a NotImplementedError naming the dtype
(a raw cupy ValueError before; seen on an H200, 2026-11-27)."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import fjax
from fjax import dtypes


@pytest.mark.parametrize("dt", [np.dtype(ml_dtypes.bfloat16), *dtypes.low_precision_dtypes], ids=str)
def test_low_precision_numpy_arrays_are_put(dt):
    x = np.arange(4).astype(dt)
    y = fjax.device_put(x, fjax.devices("cpu")[0])
    assert y.dtype == dt
    np.testing.assert_array_equal(np.asarray(y).astype(np.float32), x.astype(np.float32))


@pytest.mark.parametrize(
    "x", [np.array(["a"]), np.array([object()]), np.zeros(2, [("a", "f4"), ("b", "i4")])], ids=["str", "obj", "struct"]
)
def test_non_numeric_numpy_arrays_are_refused(x):
    with pytest.raises(TypeError, match=re.escape(f"Dtype {x.dtype} is not a valid JAX array type")):
        fjax.device_put(x)


@pytest.mark.parametrize("dt", dtypes.low_precision_dtypes, ids=str)
def test_the_gpu_runtime_refuses_dtypes_cupy_lacks(dt):
    from fjax.backends.cuda import runtime  # noqa: PLC0415 - imports no cupy until a buffer is made

    want = f"CUDA backend: arrays of dtype {dt.name} cannot live on the GPU"
    for make in (lambda: runtime.to_device(np.zeros(2, dt)), lambda: runtime.empty((2,), dt)):
        with pytest.raises(NotImplementedError, match=want):
            make()
