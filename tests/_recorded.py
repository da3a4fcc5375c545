"""Decoding the values recorded from JAX in ``tests/data/*.json`` (shared by the jnp, transform and
complex sweeps): non-finite floats are stored as strings ("nan", "inf", "-inf"), complex values as
[real, imag] pairs."""

from __future__ import annotations

import numpy as np


def decode(v: object) -> float:
    return float(v) if isinstance(v, str) else v


def values(rec: dict) -> np.ndarray:
    """A record's flat values: complex128 for complex dtypes, float64 otherwise."""
    vals = rec["values"]
    if "complex" in rec["dtype"]:
        return np.array([complex(decode(re), decode(im)) for re, im in vals], np.complex128)
    return np.array([decode(v) for v in vals], np.float64)
