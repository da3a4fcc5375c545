"""BCSR, JAX's batched-CSR sparse array: ``data``, column ``indices`` and row pointers ``indptr``.

Operations convert to and from BCOO (rows recovered from ``indptr`` with a search), so they
compose from the same jnp/lax ops and run under jit/vmap/grad.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from fjax import numpy as jnp
from fjax import tree_util
from fjax.experimental.sparse._base import JAXSparse
from fjax.experimental.sparse._util import nfold_vmap
from fjax.experimental.sparse.bcoo import (
    BCOO,
    _bcoo_extract,
    bcoo_fromdense,
    bcoo_sort_indices,
    bcoo_sum_duplicates,
)
from fjax.experimental.sparse.bcoo_ops import bcoo_dot_general


def _validate_bcsr(data: Any, indices: Any, indptr: Any, shape: Sequence[int]) -> tuple[int, int, int]:
    shape = tuple(shape)
    if not (jnp.issubdtype(indices.dtype, jnp.integer) and jnp.issubdtype(indptr.dtype, jnp.integer)):
        raise TypeError(f"BCSR: indices and indptr must be integer, got {indices.dtype} and {indptr.dtype}")
    n_batch = indices.ndim - 1
    n_dense = data.ndim - indices.ndim
    if n_batch < 0 or n_dense < 0 or len(shape) != n_batch + 2 + n_dense:
        raise ValueError(
            f"BCSR: data.shape={tuple(data.shape)}, indices.shape={tuple(indices.shape)} do not match {shape=}"
        )
    nse = indices.shape[-1]
    if tuple(data.shape[n_batch:]) != (nse,) + shape[n_batch + 2 :]:
        raise ValueError(f"Invalid data.shape={tuple(data.shape)} for {nse=}, {n_batch=}, {n_dense=}")
    if tuple(indptr.shape) != tuple(indices.shape[:n_batch]) + (shape[n_batch] + 1,):
        raise ValueError(f"indptr shape must match the matrix shape, got indptr.shape={tuple(indptr.shape)}, {shape=}")
    return n_batch, n_dense, nse


def _bcsr_to_bcoo_indices(indices: Any, indptr: Any, n_batch: int) -> Any:
    """COO ``(row, col)`` indices of BCSR buffers; entries past ``indptr[-1]`` get row ``n_rows``."""

    def rows(ind: Any, ptr: Any) -> Any:
        k = jnp.arange(ind.shape[-1], dtype=ptr.dtype)
        return jnp.searchsorted(ptr[1:], k, side="right").astype(ind.dtype)

    row = nfold_vmap(rows, n_batch)(indices, indptr)
    return jnp.stack([row, indices], axis=-1)


def _bcoo_to_bcsr_indptr(row: Any, n_rows: int, n_batch: int) -> Any:
    def ptr(r: Any) -> Any:
        return jnp.searchsorted(r, jnp.arange(n_rows + 1, dtype=r.dtype), side="left").astype(r.dtype)

    return nfold_vmap(ptr, n_batch)(row)


@tree_util.register_pytree_node_class
class BCSR(JAXSparse):
    """Batched CSR sparse array: ``BCSR((data, indices, indptr), shape=...)``."""

    data: Any
    indices: Any
    indptr: Any
    shape: tuple[int, ...]
    indices_sorted: bool
    unique_indices: bool

    def __init__(
        self,
        args: tuple[Any, Any, Any],
        *,
        shape: Sequence[int],
        indices_sorted: bool = False,
        unique_indices: bool = False,
    ) -> None:
        self.data, self.indices, self.indptr = map(jnp.asarray, args)
        self.indices_sorted = indices_sorted
        self.unique_indices = unique_indices
        super().__init__(args, shape=tuple(shape))
        _validate_bcsr(self.data, self.indices, self.indptr, self.shape)

    @property
    def nse(self) -> int:
        return self.indices.shape[-1]

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def n_batch(self) -> int:
        return self.indices.ndim - 1

    @property
    def n_sparse(self) -> int:
        return 2

    @property
    def n_dense(self) -> int:
        return self.data.ndim - self.indices.ndim

    @classmethod
    def fromdense(
        cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32, n_dense: int = 0, n_batch: int = 0
    ) -> BCSR:
        """Create a BCSR array from a dense array."""
        return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch)

    @classmethod
    def _empty(
        cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32", n_dense: int = 0, n_batch: int = 0
    ) -> BCSR:
        shape = tuple(operator.index(s) for s in shape)
        if len(shape) - n_batch - n_dense != 2:
            raise ValueError(f"BCSR array must have 2 sparse dimensions; {n_batch=}, {n_dense=}, shape={shape}")
        return cls.from_bcoo(BCOO._empty(shape, dtype=dtype, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch))

    @classmethod
    def from_bcoo(cls, arr: BCOO) -> BCSR:
        """Convert a BCOO array with two sparse dimensions to BCSR."""
        if arr.n_sparse != 2:
            raise NotImplementedError(f"BSCR.from_bcoo requires n_sparse=2; got arr.n_sparse={arr.n_sparse}")
        if not arr.indices_sorted:
            arr = bcoo_sort_indices(arr)
        nb = arr.n_batch
        n_rows = arr.shape[nb]
        row = arr.indices[..., 0]
        indptr = _bcoo_to_bcsr_indptr(row, n_rows, nb)
        return cls(
            (arr.data, arr.indices[..., 1], indptr),
            shape=arr.shape,
            indices_sorted=True,
            unique_indices=arr.unique_indices,
        )

    @classmethod
    def from_scipy_sparse(cls, mat: Any, *, index_dtype: Any = None, n_dense: int = 0, n_batch: int = 0) -> BCSR:
        """Create a BCSR array from a ``scipy.sparse`` array."""
        return cls.from_bcoo(BCOO.from_scipy_sparse(mat, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch))

    def to_bcoo(self) -> BCOO:
        """The same array in BCOO format."""
        coo = _bcsr_to_bcoo_indices(self.indices, self.indptr, self.n_batch)
        return BCOO(
            (self.data, coo), shape=self.shape, indices_sorted=self.indices_sorted, unique_indices=self.unique_indices
        )

    def todense(self) -> Any:
        """The dense array this BCSR array represents."""
        return self.to_bcoo().todense()

    def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> BCSR:
        """Sum duplicate entries (and by default drop explicit zeros)."""
        return BCSR.from_bcoo(self.to_bcoo().sum_duplicates(nse=nse, remove_zeros=remove_zeros))

    def transpose(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("Transpose is not implemented.")

    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, JAXSparse):
            raise NotImplementedError("bcsr_dot_general currently implemented for BCSR lhs and ndarray rhs.")
        from fjax.experimental.sparse.transform import sparsify

        return sparsify(jnp.matmul)(self.to_bcoo(), other)

    def __rmatmul__(self, other: Any) -> Any:
        from fjax.experimental.sparse.transform import sparsify

        return sparsify(jnp.matmul)(other, self.to_bcoo())

    def tree_flatten(self) -> tuple:
        return (self.data, self.indices, self.indptr), (self.shape, self.indices_sorted, self.unique_indices)

    @classmethod
    def tree_unflatten(cls, aux_data: Any, children: Any) -> BCSR:
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        obj.shape, obj.indices_sorted, obj.unique_indices = aux_data
        obj.shape = tuple(obj.shape)
        return obj


def bcsr_fromdense(
    mat: Any, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0, index_dtype: Any = jnp.int32
) -> BCSR:
    """Create a BCSR array from a dense array (two sparse dimensions)."""
    mat = jnp.asarray(mat)
    n_sparse = mat.ndim - operator.index(n_batch) - operator.index(n_dense)
    if n_sparse != 2:
        raise ValueError(f"BCSR array must have 2 sparse dimensions; {n_batch=}, {n_dense=}, n_sparse={n_sparse}")
    return BCSR.from_bcoo(bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype))


def bcsr_todense(mat: BCSR) -> Any:
    """Convert a BCSR array to a dense array."""
    return mat.todense()


def bcsr_extract(indices: Any, indptr: Any, mat: Any) -> Any:
    """Values of dense ``mat`` at the BCSR positions given by ``indices`` and ``indptr``."""
    indices, indptr, mat = jnp.asarray(indices), jnp.asarray(indptr), jnp.asarray(mat)
    coo = _bcsr_to_bcoo_indices(indices, indptr, indices.ndim - 1)
    return _bcoo_extract(coo, mat)


def bcsr_sum_duplicates(mat: BCSR, nse: int | None = None) -> BCSR:
    """Sum duplicate entries of a BCSR array."""
    return BCSR.from_bcoo(bcoo_sum_duplicates(mat.to_bcoo(), nse=nse))


def bcsr_dot_general(
    lhs: BCSR | Any,
    rhs: Any,
    *,
    dimension_numbers: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> Any:
    """``lax.dot_general`` with a BCSR left operand and a dense right operand."""
    if isinstance(rhs, JAXSparse):
        raise NotImplementedError("bcsr_dot_general currently implemented for BCSR lhs and ndarray rhs.")
    lhs = lhs.to_bcoo() if isinstance(lhs, BCSR) else lhs
    return bcoo_dot_general(
        lhs,
        rhs,
        dimension_numbers=dimension_numbers,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def bcsr_broadcast_in_dim(
    mat: BCSR, *, shape: Sequence[int], broadcast_dimensions: Sequence[int], sharding: Any = None
) -> BCSR:
    """``lax.broadcast_in_dim`` for BCSR (new leading axes become batch axes)."""
    from fjax.experimental.sparse.bcoo_ops import bcoo_broadcast_in_dim

    out = bcoo_broadcast_in_dim(mat.to_bcoo(), shape=shape, broadcast_dimensions=broadcast_dimensions)
    return BCSR.from_bcoo(out)


def bcsr_concatenate(operands: Sequence[BCSR], *, dimension: int) -> BCSR:
    """``lax.concatenate`` for BCSR arrays."""
    from fjax.experimental.sparse.bcoo_ops import bcoo_concatenate

    if not all(isinstance(op, BCSR) for op in operands):
        raise ValueError(f"bcsr_concatenate: expected operands to be a sequence of BCSR arrays. Got {operands}")
    return BCSR.from_bcoo(bcoo_concatenate([op.to_bcoo() for op in operands], dimension=dimension))
