"""``jax.experimental.layout``: the physical layout of arrays in device memory.

fjax keeps every array in row-major (C) order on every device, so a ``Layout`` is accepted and
recorded where JAX takes one, and changes no value; ``with_layout_constraint`` returns its input.
A layout other than row-major is recorded the same way: layouts never change what an array holds,
only how a device stores it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Format", "Layout", "with_layout_constraint"]


class Layout:
    """A physical layout: dimensions from major to minor, and optional tiling."""

    def __init__(
        self,
        major_to_minor: tuple[int, ...],
        tiling: tuple[tuple[int, ...], ...] | None = None,
        sub_byte_element_size_in_bits: int = 0,
    ) -> None:
        self.major_to_minor = tuple(major_to_minor)
        self.tiling = None if tiling is None else tuple(tuple(t) for t in tiling)
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    @classmethod
    def auto(cls) -> Any:
        return _AUTO

    def _key(self) -> tuple:
        return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        tiling = "" if not self.tiling else f", tiling={self.tiling}"
        return f"Layout(major_to_minor={self.major_to_minor}{tiling})"


class _AutoLayout:
    def __repr__(self) -> str:
        return "AUTO"


_AUTO = _AutoLayout()


class Format:
    """A layout together with a sharding (either may be None)."""

    def __init__(self, layout: Any = None, sharding: Any = None) -> None:
        self.layout = layout
        self.sharding = sharding

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Format) and (self.layout, self.sharding) == (other.layout, other.sharding)

    def __hash__(self) -> int:
        return hash((self.layout, self.sharding))

    def __repr__(self) -> str:
        return f"Format(layout={self.layout!r}, sharding={self.sharding!r})"


def with_layout_constraint(x: Any, layout: Any) -> Any:
    """``x`` itself: fjax stores arrays row-major whatever the layout asked for."""
    return x
