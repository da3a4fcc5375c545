"""More ndarray methods of fjax arrays and tracers (``take``, ``repeat``, ``searchsorted``,
``compress``, ``choose``, ``argpartition``, ``itemsize``/``nbytes`` on tracers, buffer queries).

Installed next to ``_array_methods`` by ``fjax.numpy``'s ``__init__``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax.core import Array


def _take(self: Any, indices: Any, axis: int | None = None, out: Any = None, mode: Any = None,
          unique_indices: bool = False, indices_are_sorted: bool = False, fill_value: Any = None) -> Any:  # fmt: skip
    from fjax.numpy import take

    return take(self, indices, axis=axis, out=out, mode=mode, unique_indices=unique_indices,
                indices_are_sorted=indices_are_sorted, fill_value=fill_value)  # fmt: skip


def _repeat(self: Any, repeats: Any, axis: int | None = None, *, total_repeat_length: int | None = None) -> Any:
    from fjax.numpy import repeat

    return repeat(self, repeats, axis=axis, total_repeat_length=total_repeat_length)


def _searchsorted(self: Any, v: Any, side: str = "left", sorter: Any = None, *, method: str = "scan") -> Any:
    from fjax.numpy import searchsorted

    return searchsorted(self, v, side=side, sorter=sorter, method=method)


def _compress(self: Any, condition: Any, axis: int | None = None, *, size: int | None = None,
              fill_value: Any = 0) -> Any:  # fmt: skip
    from fjax.numpy import compress

    return compress(condition, self, axis=axis, size=size, fill_value=fill_value)


def _choose(self: Any, choices: Any, out: Any = None, mode: str = "raise") -> Any:
    from fjax.numpy import choose

    return choose(self, choices, out=out, mode=mode)


def _argpartition(self: Any, kth: int, axis: int = -1) -> Any:
    from fjax.numpy import argpartition

    return argpartition(self, kth, axis=axis)


def _copy(self: Any) -> Any:
    from fjax.numpy import array

    return array(self, copy=True)


def _itemsize(self: Any) -> int:
    return np.dtype(self.dtype).itemsize


def _nbytes(self: Any) -> int:
    return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


def _tobytes(self: Any, order: str = "C") -> bytes:
    return np.asarray(self).tobytes(order=order)


def _flat(self: Any) -> Any:
    return iter(self.ravel())


def install_more(cls: type) -> None:
    """Add the methods above to ``cls`` (``fjax.core.Array`` or ``fjax.core.Tracer``)."""
    methods = {
        "take": _take,
        "repeat": _repeat,
        "searchsorted": _searchsorted,
        "compress": _compress,
        "choose": _choose,
        "argpartition": _argpartition,
    }
    for name, fn in methods.items():
        if not hasattr(cls, name):
            setattr(cls, name, fn)
    for name, fn in {"itemsize": _itemsize, "nbytes": _nbytes, "flat": _flat}.items():
        if not hasattr(cls, name):
            setattr(cls, name, property(fn))
    if not hasattr(cls, "copy"):
        cls.copy = _copy
    if cls is Array:
        extras = {
            "tobytes": _tobytes,
            "is_ready": lambda self: True,
            "is_fully_addressable": property(lambda self: True),
            "committed": property(lambda self: False),
            "platform": lambda self: "cpu",
        }
        for name, fn in extras.items():
            if not hasattr(cls, name):
                setattr(cls, name, fn)
