"""Format-independent helpers: ``todense``, ``empty``, ``eye``."""

from __future__ import annotations

import operator
from typing import Any, Sequence

from fjax import numpy as jnp
from fjax.experimental.sparse._base import JAXSparse
from fjax.experimental.sparse._util import static_int
from fjax.experimental.sparse.bcoo import BCOO


def _formats() -> dict:
    from fjax.experimental.sparse.bcsr import BCSR
    from fjax.experimental.sparse.legacy import COO, CSC, CSR

    return {"bcsr": BCSR, "bcoo": BCOO, "coo": COO, "csr": CSR, "csc": CSC}


def todense(arr: JAXSparse | Any) -> Any:
    """Convert input to a dense array; dense input passes through."""
    if isinstance(arr, JAXSparse):
        return arr.todense()
    return jnp.asarray(arr) if not hasattr(arr, "aval") else arr


def empty(
    shape: Sequence[int], dtype: Any = None, index_dtype: Any = "int32", sparse_format: str = "bcoo", **kwds: Any
) -> JAXSparse:
    """An all-zero sparse array with no stored elements."""
    formats = _formats()
    if sparse_format not in formats:
        raise ValueError(f"sparse_format={sparse_format!r} not recognized; must be one of {list(formats.keys())}")
    return formats[sparse_format]._empty(tuple(shape), dtype=dtype, index_dtype=index_dtype, **kwds)


def eye(
    N: int,
    M: int | None = None,
    k: int = 0,
    dtype: Any = None,
    index_dtype: Any = "int32",
    sparse_format: str = "bcoo",
    **kwds: Any,
) -> JAXSparse:
    """2D sparse identity matrix with ones along the ``k``-th diagonal."""
    formats = _formats()
    if sparse_format not in formats:
        raise ValueError(f"sparse_format={sparse_format!r} not recognized; must be one of {list(formats.keys())}")
    formats.pop("bcsr")
    if sparse_format not in formats:
        raise ValueError(f"sparse_format={sparse_format!r} not recognized; must be one of {list(formats.keys())}")
    M = N if M is None else M
    N, M, k = (operator.index(static_int(v, "eye")) for v in (N, M, k))
    return formats[sparse_format]._eye(N, M, k, dtype=dtype, index_dtype=index_dtype, **kwds)
