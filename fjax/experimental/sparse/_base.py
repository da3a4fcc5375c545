"""``JAXSparse``: the base class of fjax's sparse array types."""

from __future__ import annotations

import abc
import math
from typing import Any, Sequence

import numpy as np

from fjax.experimental.sparse._util import is_tracer


class JAXSparse(abc.ABC):
    """Base class for high-level sparse objects."""

    data: Any
    shape: tuple[int, ...]
    __hash__ = None  # type: ignore[assignment]
    __array_priority__ = 1000  # numpy defers its binary operators to ours

    @property
    @abc.abstractmethod
    def dtype(self) -> np.dtype: ...

    @property
    @abc.abstractmethod
    def nse(self) -> int: ...

    def __init__(self, args: tuple, *, shape: Sequence[int]) -> None:
        self.shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in self.shape):
            raise ValueError(f"{type(self).__name__}: negative dimension in shape {self.shape}")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _repr_extra(self) -> str:
        # the batched formats (BCOO, BCSR) name their batch and dense dims when there are any
        extra = ""
        if getattr(self, "n_batch", 0):
            extra += f", n_batch={self.n_batch}"
        if getattr(self, "n_dense", 0):
            extra += f", n_dense={self.n_dense}"
        return extra

    def __repr__(self) -> str:
        name = type(self).__name__
        try:
            body = f"{name}({self.dtype}{list(self.shape)}, nse={self.nse}{self._repr_extra()})"
        except Exception:
            body = f"{name}(<invalid>)"
        if is_tracer(getattr(self, "data", None)):
            body = f"{type(self.data).__name__}[{body}]"
        return body

    @abc.abstractmethod
    def tree_flatten(self) -> tuple: ...

    @classmethod
    @abc.abstractmethod
    def tree_unflatten(cls, aux_data: Any, children: Any) -> Any: ...

    @abc.abstractmethod
    def transpose(self, axes: Sequence[int] | None = None) -> Any: ...

    @abc.abstractmethod
    def todense(self) -> Any: ...

    @property
    def T(self) -> Any:
        return self.transpose()

    def block_until_ready(self) -> Any:
        for buf in self.tree_flatten()[0]:
            buf.block_until_ready()
        return self

    def _unsupported(self, what: str) -> Any:
        raise NotImplementedError(f"{type(self)}.{what}")

    def sum(self, *args: Any, **kwargs: Any) -> Any:
        return self._unsupported("sum")

    def __neg__(self) -> Any:
        return self._unsupported("__neg__")

    def __pos__(self) -> Any:
        return self._unsupported("__pos__")

    def __matmul__(self, other: Any) -> Any:
        return self._unsupported("__matmul__")

    def __rmatmul__(self, other: Any) -> Any:
        return self._unsupported("__rmatmul__")

    def __mul__(self, other: Any) -> Any:
        return self._unsupported("__mul__")

    def __rmul__(self, other: Any) -> Any:
        return self._unsupported("__rmul__")

    def __add__(self, other: Any) -> Any:
        return self._unsupported("__add__")

    def __radd__(self, other: Any) -> Any:
        return self._unsupported("__radd__")

    def __sub__(self, other: Any) -> Any:
        return self._unsupported("__sub__")

    def __rsub__(self, other: Any) -> Any:
        return self._unsupported("__rsub__")

    def __getitem__(self, item: Any) -> Any:
        return self._unsupported("__getitem__")
