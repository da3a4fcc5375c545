"""Names of ``jax.lax`` built from the existing primitives: precision enums, shape helpers,
``complex``, ``split``, ``tile``, ``reduce``, ``reduce_window``, bit operations, barriers.

Everything here is a composition of fjax primitives (so jvp/vjp/vmap/jit come from theirs),
except where a block says otherwise.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, Union

from fjax.lax import lax

__all__ = [
    "DotDimensionNumbers",
    "Precision",
    "PrecisionLike",
    "broadcast_shapes",
    "reciprocal",
]


class Precision(enum.Enum):
    """Precision of a matrix product, as ``jax.lax.Precision`` (fjax computes in the operands'
    dtype on the CPU whatever is asked, which is what ``HIGHEST`` means there)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Precision | None:
        names = {"default": 0, "bfloat16": 0, "fastest": 0, "high": 1, "bfloat16_3x": 1, "tensorfloat32": 1}
        names.update({"highest": 2, "float32": 2})
        if isinstance(value, str) and value.lower() in names:
            return cls(names[value.lower()])
        return None

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Precision.{self.name}"


PrecisionLike = Union[None, str, Precision, tuple[str, str], tuple[Precision, Precision]]

# ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]]


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape numpy broadcasting gives ``shapes`` (ValueError naming them if incompatible)."""
    shapes = [tuple(int(d) for d in s) for s in shapes]
    if not shapes:
        return ()
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + s for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={[list(s) for s in shapes]}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def reciprocal(x: Any) -> Any:
    """Elementwise ``1 / x``."""
    return lax.div(lax._const(x, 1), x)
