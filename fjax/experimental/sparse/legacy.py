"""JAX's older 2-D formats: ``COO`` (data, row, col), ``CSR`` and ``CSC`` (data, indices, indptr),
with their ``*_fromdense``/``*_todense``/``*_matvec``/``*_matmat`` functions, from jnp/lax ops."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from fjax import numpy as jnp
from fjax import tree_util
from fjax.experimental.sparse._base import JAXSparse
from fjax.experimental.sparse._util import count_stored_elements, static_int
from fjax.experimental.sparse.bcoo import BCOO

_NSE_ERROR = "nse argument of {}: a concrete value is needed in traced code"


def _check_2d(name: str, shape: Sequence[int]) -> tuple[int, int]:
    shape = tuple(int(s) for s in shape)
    if len(shape) != 2:
        raise ValueError(f"{name} must have ndim=2; got {shape=}")
    return shape  # type: ignore[return-value]


def _coo_fromdense(mat: Any, nse: int | None, index_dtype: Any, fname: str) -> tuple:
    mat = jnp.asarray(mat)
    _check_2d(fname, mat.shape)
    if nse is None:
        nse = count_stored_elements(mat)
    nse = static_int(nse, _NSE_ERROR.format(fname))
    row, col = jnp.nonzero(mat, size=nse, fill_value=0)
    valid = jnp.arange(nse) < (mat != 0).sum()
    data = jnp.where(valid, mat[row, col], jnp.zeros((), mat.dtype))
    return data, row.astype(index_dtype), col.astype(index_dtype), valid


def _coo_todense(data: Any, row: Any, col: Any, shape: tuple) -> Any:
    return jnp.zeros(shape, data.dtype).at[row, col].add(data, mode="drop")


def _coo_matmat(data: Any, row: Any, col: Any, B: Any, shape: tuple, transpose: bool) -> Any:
    if transpose:
        row, col, shape = col, row, shape[::-1]
    B = jnp.asarray(B)
    if B.shape[0] != shape[1]:
        raise TypeError(f"matmul: shape mismatch between sparse shape {shape} and B.shape={tuple(B.shape)}")
    dtype = jnp.result_type(data, B)
    vals = B.astype(dtype).at[col].get(mode="fill", fill_value=0)
    prod = data.astype(dtype).reshape((-1,) + (1,) * (B.ndim - 1)) * vals
    return jnp.zeros((shape[0],) + tuple(B.shape[1:]), dtype).at[row].add(prod, mode="drop")


def _indptr_from_rows(row: Any, valid: Any, n_rows: int) -> Any:
    counts = jnp.zeros(n_rows, row.dtype).at[row].add(valid.astype(row.dtype), mode="drop")
    return jnp.concatenate([jnp.zeros(1, row.dtype), jnp.cumsum(counts).astype(row.dtype)])


def _rows_from_indptr(indices: Any, indptr: Any) -> Any:
    k = jnp.arange(indices.shape[0], dtype=indptr.dtype)
    return jnp.searchsorted(indptr[1:], k, side="right").astype(indices.dtype)


class _Legacy2D(JAXSparse):
    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, JAXSparse):
            raise NotImplementedError("matmul between two sparse objects.")
        other = jnp.asarray(other)
        if other.ndim not in (1, 2):
            raise NotImplementedError(f"matmul with object of shape {tuple(other.shape)}")
        return self._matmat(other)

    def tree_flatten(self) -> tuple:
        return self._bufs, (self.shape,)

    @classmethod
    def tree_unflatten(cls, aux_data: Any, children: Any) -> Any:
        obj = object.__new__(cls)
        obj._set_bufs(*children)
        obj.shape = tuple(aux_data[0])
        return obj

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def nse(self) -> int:
        return self.data.shape[0]

    @classmethod
    def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32") -> Any:
        shape = _check_2d(cls.__name__, shape)
        return cls.fromdense(jnp.zeros(shape, dtype), nse=0, index_dtype=index_dtype)

    @classmethod
    def _eye(cls, N: int, M: int, k: int, *, dtype: Any = None, index_dtype: Any = "int32") -> Any:
        e = BCOO._eye(N, M, k, dtype=dtype, index_dtype=index_dtype)
        row, col = e.indices[:, 0], e.indices[:, 1]
        return cls._from_coo(e.data, row, col, jnp.ones(e.nse, bool), (N, M))


@tree_util.register_pytree_node_class
class COO(_Legacy2D):
    """2-D COO sparse matrix ``COO((data, row, col), shape=...)``."""

    def __init__(
        self, args: tuple, *, shape: Sequence[int], rows_sorted: bool = False, cols_sorted: bool = False
    ) -> None:
        self._set_bufs(*map(jnp.asarray, args))
        self._rows_sorted, self._cols_sorted = rows_sorted, cols_sorted
        super().__init__(args, shape=_check_2d("COO", shape))

    def _set_bufs(self, data: Any, row: Any, col: Any) -> None:
        self.data, self.row, self.col = data, row, col
        self._rows_sorted = getattr(self, "_rows_sorted", False)
        self._cols_sorted = getattr(self, "_cols_sorted", False)

    @property
    def _bufs(self) -> tuple:
        return (self.data, self.row, self.col)

    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> COO:
        """Create a COO matrix from a dense matrix."""
        data, row, col, _ = _coo_fromdense(mat, nse, index_dtype, "COO")
        return cls((data, row, col), shape=tuple(jnp.shape(mat)), rows_sorted=True)

    @classmethod
    def _from_coo(cls, data: Any, row: Any, col: Any, valid: Any, shape: tuple) -> COO:
        return cls((data, row, col), shape=shape, rows_sorted=True)

    def todense(self) -> Any:
        """The dense matrix."""
        return _coo_todense(self.data, self.row, self.col, self.shape)

    def transpose(self, axes: Sequence[int] | None = None) -> COO:
        if axes is not None:
            raise NotImplementedError("axes argument to transpose()")
        return COO(
            (self.data, self.col, self.row),
            shape=self.shape[::-1],
            rows_sorted=self._cols_sorted,
            cols_sorted=self._rows_sorted,
        )

    def _matmat(self, B: Any) -> Any:
        return _coo_matmat(self.data, self.row, self.col, B, self.shape, False)


class _Compressed(_Legacy2D):
    """CSR and CSC: ``(data, indices, indptr)`` buffers."""

    def __init__(self, args: tuple, *, shape: Sequence[int]) -> None:
        self._set_bufs(*map(jnp.asarray, args))
        super().__init__(args, shape=_check_2d(type(self).__name__, shape))

    def _set_bufs(self, data: Any, indices: Any, indptr: Any) -> None:
        self.data, self.indices, self.indptr = data, indices, indptr

    @property
    def _bufs(self) -> tuple:
        return (self.data, self.indices, self.indptr)


@tree_util.register_pytree_node_class
class CSR(_Compressed):
    """2-D CSR sparse matrix ``CSR((data, indices, indptr), shape=...)``."""

    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> CSR:
        """Create a CSR matrix from a dense matrix."""
        data, row, col, valid = _coo_fromdense(mat, nse, index_dtype, cls.__name__)
        return cls._from_coo(data, row, col, valid, tuple(jnp.shape(mat)))

    @classmethod
    def _from_coo(cls, data: Any, row: Any, col: Any, valid: Any, shape: tuple) -> CSR:
        return cls((data, col, _indptr_from_rows(row, valid, shape[0])), shape=shape)

    def _coo(self) -> tuple:
        return self.data, _rows_from_indptr(self.indices, self.indptr), self.indices

    def todense(self) -> Any:
        """The dense matrix."""
        return _coo_todense(*self._coo(), self.shape)

    def transpose(self, axes: Sequence[int] | None = None) -> CSC:
        if axes is not None:
            raise NotImplementedError("axes argument to transpose()")
        return CSC((self.data, self.indices, self.indptr), shape=self.shape[::-1])

    def _matmat(self, B: Any) -> Any:
        return _coo_matmat(*self._coo(), B, self.shape, False)


@tree_util.register_pytree_node_class
class CSC(_Compressed):
    """2-D CSC sparse matrix ``CSC((data, indices, indptr), shape=...)``: the CSR layout of its transpose."""

    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> CSC:
        """Create a CSC matrix from a dense matrix."""
        return CSR.fromdense(jnp.asarray(mat).T, nse=nse, index_dtype=index_dtype).T

    @classmethod
    def _from_coo(cls, data: Any, row: Any, col: Any, valid: Any, shape: tuple) -> CSC:
        return CSR._from_coo(data, col, row, valid, shape[::-1]).T

    def todense(self) -> Any:
        """The dense matrix."""
        return self.T.todense().T

    def transpose(self, axes: Sequence[int] | None = None) -> CSR:
        if axes is not None:
            raise NotImplementedError("axes argument to transpose()")
        return CSR((self.data, self.indices, self.indptr), shape=self.shape[::-1])

    def _matmat(self, B: Any) -> Any:
        return _coo_matmat(*self.T._coo(), B, self.shape[::-1], True)


def coo_fromdense(mat: Any, *, nse: int | None = None, index_dtype: Any = jnp.int32) -> COO:
    """Create a COO matrix from a dense matrix."""
    return COO.fromdense(mat, nse=nse, index_dtype=index_dtype)


def coo_todense(mat: COO) -> Any:
    """Convert a COO matrix to dense."""
    return mat.todense()


def coo_matvec(mat: COO, v: Any, transpose: bool = False) -> Any:
    """COO matrix times a vector (of the transpose with ``transpose=True``)."""
    v = jnp.asarray(v)
    if v.ndim != 1:
        raise ValueError(f"coo_matvec: v must be 1-dimensional, got v.shape={tuple(v.shape)}")
    return _coo_matmat(mat.data, mat.row, mat.col, v, mat.shape, transpose)


def coo_matmat(mat: COO, B: Any, *, transpose: bool = False) -> Any:
    """COO matrix times a dense matrix."""
    B = jnp.asarray(B)
    if B.ndim != 2:
        raise ValueError(f"coo_matmat: B must be 2-dimensional, got B.shape={tuple(B.shape)}")
    return _coo_matmat(mat.data, mat.row, mat.col, B, mat.shape, transpose)


def csr_fromdense(mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> CSR:
    """Create a CSR matrix from a dense matrix."""
    return CSR.fromdense(mat, nse=nse, index_dtype=index_dtype)


def csr_todense(mat: CSR) -> Any:
    """Convert a CSR matrix to dense."""
    return mat.todense()


def csr_matvec(mat: CSR, v: Any, transpose: bool = False) -> Any:
    """CSR matrix times a vector (of the transpose with ``transpose=True``)."""
    v = jnp.asarray(v)
    if v.ndim != 1:
        raise ValueError(f"csr_matvec: v must be 1-dimensional, got v.shape={tuple(v.shape)}")
    return _coo_matmat(*mat._coo(), v, mat.shape, transpose)


def csr_matmat(mat: CSR, B: Any, *, transpose: bool = False) -> Any:
    """CSR matrix times a dense matrix."""
    B = jnp.asarray(B)
    if B.ndim != 2:
        raise ValueError(f"csr_matmat: B must be 2-dimensional, got B.shape={tuple(B.shape)}")
    return _coo_matmat(*mat._coo(), B, mat.shape, transpose)
