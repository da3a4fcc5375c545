"""Tests of fjax.random.key_dtype: the dtype of typed keys for a PRNG implementation (as JAX)."""

import numpy as np
import pytest

import fjax
from fjax import dtypes, random
from fjax import numpy as jnp


def test_key_dtype_matches_typed_keys():
    dt = random.key_dtype()
    assert dt == random.key_dtype("threefry2x32") == random.key(0).dtype
    assert str(dt) == "key<fry>" and dt.impl == "threefry2x32"
    assert dtypes.issubdtype(dt, dtypes.prng_key)
    assert jnp.issubdtype(dt, dtypes.prng_key)
    assert not jnp.issubdtype(np.dtype(np.uint32), dtypes.prng_key)
    # keys made or split under transforms carry the same dtype
    assert fjax.jit(random.key)(3).dtype == dt
    assert fjax.vmap(random.key)(jnp.arange(3)).dtype == dt
    assert random.split(random.key(1), 3).dtype == dt
    assert random.wrap_key_data(random.key_data(random.key(5))).dtype == dt


def test_key_dtype_errors():
    with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
        random.key_dtype("nope")
    with pytest.raises(NotImplementedError, match="rbg"):  # JAX has it; fjax implements threefry2x32 only
        random.key_dtype("rbg")
    with pytest.raises(TypeError, match="PRNG implementation"):
        random.key_dtype(3)
    assert "key_dtype" in random.__all__
