"""device_put takes numpy arrays of every dtype fjax supports, ml_dtypes' included (numpy reports
bfloat16, float8 and int4 as kind "V", the kind of the structured dtypes it refuses), and refuses
the non-numeric ones with JAX 0.10.2's message."""

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
    y = fjax.device_put(x)
    assert y.dtype == dt
    np.testing.assert_array_equal(np.asarray(y).astype(np.float32), x.astype(np.float32))


@pytest.mark.parametrize(
    "x", [np.array(["a"]), np.array([object()]), np.zeros(2, [("a", "f4"), ("b", "i4")])], ids=["str", "obj", "struct"]
)
def test_non_numeric_numpy_arrays_are_refused(x):
    with pytest.raises(TypeError, match=re.escape(f"Dtype {x.dtype} is not a valid JAX array type")):
        fjax.device_put(x)
