"""Hypothesis strategies for property-based tests of fjax programs.

Example (a gradient check in a few lines)::

    from hypothesis import given
    import fjax, fjax.numpy as jnp
    from fjax.testing import arrays
    from fjax.test_util import check_grads

    @given(arrays((3, 4), min_value=-2, max_value=2))
    def test_tanh_grad(x):
        check_grads(lambda x: jnp.tanh(x).sum(), (x,), order=2)

Requires the ``test`` extra (hypothesis).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from fjax.dtypes import kind as _dkind

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError as e:  # pragma: no cover
    raise ImportError("fjax.testing needs hypothesis: pip install 'fjax[test]'") from e

from fjax import core, dtypes


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4) -> st.SearchStrategy:
    """Array shapes (tuples of ints)."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def arrays(
    shape: Any = None,
    dtype: Any = np.float32,
    min_value: float = -10.0,
    max_value: float = 10.0,
    as_numpy: bool = False,
) -> st.SearchStrategy:
    """fjax Arrays of ``shape`` (a tuple, or a strategy of shapes) with bounded, finite elements."""
    dt = np.dtype(dtype)
    if shape is None:
        shape = shapes()
    if _dkind(dt) == "f":
        width = 32 if dt.itemsize <= 4 else 64
        if width == 32:
            # hypothesis wants bounds representable at the element width: round them inward
            lo32, hi32 = np.float32(min_value), np.float32(max_value)
            min_value = float(lo32 if lo32 >= min_value else np.nextafter(lo32, np.float32(np.inf)))
            max_value = float(hi32 if hi32 <= max_value else np.nextafter(hi32, np.float32(-np.inf)))
        elems = st.floats(min_value=min_value, max_value=max_value, allow_nan=False, allow_infinity=False, width=width)
    elif _dkind(dt) in "iu":
        info = dtypes.iinfo(dt)  # (ml_dtypes': numpy's knows no int4/int2/int1)
        lo = max(int(min_value), int(info.min))
        hi = min(int(max_value), int(info.max))
        elems = st.integers(lo, hi)
    elif _dkind(dt) == "b":
        elems = st.booleans()
    elif _dkind(dt) == "c":
        f = st.floats(min_value=min_value, max_value=max_value, allow_nan=False, allow_infinity=False, width=32)
        elems = st.builds(complex, f, f)
    else:
        raise TypeError(f"fjax.testing.arrays: unsupported dtype {dt}")
    strat = hnp.arrays(dt, shape, elements=elems)
    if as_numpy:
        return strat
    return strat.map(lambda a: core.to_array(a))


def pytrees(leaves: st.SearchStrategy | None = None, max_leaves: int = 6) -> st.SearchStrategy:
    """Nested tuples/lists/dicts whose leaves come from ``leaves`` (default: small f32 arrays)."""
    if leaves is None:
        leaves = arrays(shapes(max_dims=2, max_side=3), min_value=-2, max_value=2)
    keys = st.text("abcdefgh", min_size=1, max_size=3)
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, min_size=1, max_size=3),
            st.tuples(children, children),
            st.dictionaries(keys, children, min_size=1, max_size=3),
        ),
        max_leaves=max_leaves,
    )


def arrays_like(shapes_: Sequence[tuple], dtype: Any = np.float32, **kw: Any) -> st.SearchStrategy:
    """A tuple of arrays with the given shapes."""
    return st.tuples(*[arrays(s, dtype, **kw) for s in shapes_])
