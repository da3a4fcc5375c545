"""BCOO, JAX's batched-COO sparse array, built from fjax's jnp/lax ops (no new primitives).

A BCOO array of ``shape = batch + sparse + dense`` stores ``data`` of shape
``batch + (nse,) + dense`` and ``indices`` of shape ``batch + (nse, n_sparse)``. Entries whose
index is out of range (``>= shape``) are padding and are ignored; duplicate indices are summed.
"""

from __future__ import annotations

import math
import operator
import warnings
from typing import Any, NamedTuple, Sequence

import numpy as np

from fjax import lax, tree_util
from fjax import numpy as jnp
from fjax.experimental.sparse._base import JAXSparse
from fjax.experimental.sparse._util import (
    Shape,
    SparseEfficiencyError,
    SparseEfficiencyWarning,
    SparseInfo,
    batch_iotas,
    count_stored_elements,
    is_tracer,
    nfold_vmap,
    static_int,
)

_TRACED_NSE_ERROR = (
    "The error arose for the nse argument of bcoo_fromdense. In order for BCOO.fromdense() to be used "
    "in traced/compiled code, you must pass a concrete value to the nse (number of stored elements) argument."
)


class BCOOProperties(NamedTuple):
    n_batch: int
    n_sparse: int
    n_dense: int
    nse: int


def _validate_bcoo_indices(indices: Any, shape: Sequence[int]) -> BCOOProperties:
    shape = tuple(shape)
    if not jnp.issubdtype(indices.dtype, jnp.integer):
        raise TypeError(f"BCOO: indices must have an integer dtype, got indices.dtype={indices.dtype}")
    if indices.ndim < 2:
        raise ValueError(f"BCOO: indices must have ndim >= 2, got indices.shape={tuple(indices.shape)}")
    nse, n_sparse = indices.shape[-2:]
    n_batch = indices.ndim - 2
    n_dense = len(shape) - n_batch - n_sparse
    if n_dense < 0:
        raise ValueError(f"BCOO: indices.shape={tuple(indices.shape)} is not compatible with shape={shape}")
    if any(s1 not in (1, s2) for s1, s2 in zip(indices.shape[:n_batch], shape[:n_batch])):
        raise ValueError(f"indices batch dimensions not compatible for indices.shape={tuple(indices.shape)}, {shape=}")
    return BCOOProperties(n_batch, n_sparse, n_dense, nse)


def _validate_bcoo(data: Any, indices: Any, shape: Sequence[int]) -> BCOOProperties:
    props = _validate_bcoo_indices(indices, shape)
    n_batch, n_sparse, n_dense, nse = props
    shape = tuple(shape)
    if data.ndim < n_batch or any(s1 not in (1, s2) for s1, s2 in zip(data.shape[:n_batch], shape[:n_batch])):
        raise ValueError(f"data batch dimensions not compatible for data.shape={tuple(data.shape)}, {shape=}")
    if tuple(data.shape[n_batch:]) != (nse,) + shape[n_batch + n_sparse :]:
        raise ValueError(f"Invalid data.shape={tuple(data.shape)} for {nse=}, {n_batch=}, {n_dense=}")
    return props


def _broadcast_batch(data: Any, indices: Any, shape: Shape, n_batch: int) -> tuple[Any, Any]:
    """Broadcast size-1 stored batch dimensions of data and indices to the full batch shape."""
    bshape = tuple(shape[:n_batch])
    if tuple(data.shape[:n_batch]) != bshape:
        data = jnp.broadcast_to(data, bshape + tuple(data.shape[n_batch:]))
    if tuple(indices.shape[:n_batch]) != bshape:
        indices = jnp.broadcast_to(indices, bshape + tuple(indices.shape[n_batch:]))
    return data, indices


def _sparse_fill(shape: Shape, props: BCOOProperties, dtype: Any) -> Any:
    return jnp.array(shape[props.n_batch : props.n_batch + props.n_sparse], dtype=dtype)


# ------------------------------------------------------------------------------------------
# todense / fromdense / extract


def _bcoo_todense(data: Any, indices: Any, *, spinfo: SparseInfo) -> Any:
    shape = tuple(spinfo.shape)
    data, indices = jnp.asarray(data), jnp.asarray(indices)
    props = _validate_bcoo(data, indices, shape)
    data, indices = _broadcast_batch(data, indices, shape, props.n_batch)
    if props.n_sparse == 0:
        return data.sum(props.n_batch, dtype=data.dtype)
    idx = batch_iotas(shape[: props.n_batch], props.nse)
    idx += tuple(indices[..., i] for i in range(props.n_sparse))
    return jnp.zeros(shape, data.dtype).at[idx].add(data, mode="drop")


def bcoo_todense(mat: BCOO) -> Any:
    """Convert a BCOO array to a dense array."""
    return _bcoo_todense(mat.data, mat.indices, spinfo=mat._info)


def _bcoo_extract(indices: Any, arr: Any, *, assume_unique: bool = True) -> Any:
    arr = jnp.asarray(arr)
    props = _validate_bcoo_indices(indices, arr.shape)
    n_batch, n_sparse, n_dense, nse = props
    bshape = tuple(arr.shape[:n_batch])
    if tuple(indices.shape[:n_batch]) != bshape:
        indices = jnp.broadcast_to(indices, bshape + tuple(indices.shape[n_batch:]))
    if n_sparse == 0:
        result = jnp.broadcast_to(jnp.expand_dims(arr, n_batch), bshape + (nse,) + tuple(arr.shape[n_batch:]))
        if not assume_unique and nse > 1:
            first = lax.broadcasted_iota(np.int32, (nse,) + (1,) * n_dense, 0) == 0
            result = jnp.where(first, result, jnp.zeros((), arr.dtype))
        return result
    idx = batch_iotas(bshape, nse) + tuple(indices[..., i] for i in range(n_sparse))
    result = arr.at[idx].get(mode="fill", fill_value=0)
    if not assume_unique:
        sparse_shape = tuple(arr.shape[n_batch : n_batch + n_sparse])
        first = nfold_vmap(lambda i: _unique_unbatched(i, sparse_shape)[2], n_batch, broadcasted=False)(indices)
        first = first.reshape(first.shape + (1,) * n_dense)
        result = jnp.where(first, result, jnp.zeros((), result.dtype))
    return result


def bcoo_extract(sparr: BCOO, arr: Any, *, assume_unique: bool | None = None) -> BCOO:
    """A BCOO array with the sparsity pattern of ``sparr`` and values taken from dense ``arr``."""
    if not isinstance(sparr, BCOO):
        raise TypeError(f"First argument to bcoo_extract should be a BCOO array. Got type(sparr)={type(sparr)}")
    a = jnp.asarray(arr)
    if tuple(a.shape) != sparr.shape:
        raise ValueError(f"shape mismatch: sparr.shape={sparr.shape} a.shape={tuple(a.shape)}")
    if assume_unique is None:
        assume_unique = sparr.unique_indices
    data = _bcoo_extract(sparr.indices, a, assume_unique=assume_unique)
    return BCOO((data, sparr.indices), **sparr._info._asdict())


def _check_layout(ndim: int, n_batch: int, n_dense: int, fname: str) -> int:
    n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > ndim:
        raise ValueError(f"{fname}: invalid {n_batch=}, {n_dense=} for an array of ndim={ndim}")
    return ndim - n_batch - n_dense


def _bcoo_fromdense(mat: Any, *, nse: int, n_batch: int = 0, n_dense: int = 0, index_dtype: Any = np.int32) -> tuple:
    mat = jnp.asarray(mat)
    n_sparse = _check_layout(mat.ndim, n_batch, n_dense, "bcoo_fromdense")
    mask = mat != 0
    if n_dense:
        mask = mask.any(tuple(range(mat.ndim - n_dense, mat.ndim)))
    bshape = tuple(mat.shape[:n_batch])
    if n_sparse == 0:
        indices = jnp.zeros(bshape + (nse, 0), index_dtype)
        data = _bcoo_extract(indices, mat)
        keep = lax.broadcasted_iota(np.int32, (1,) * n_batch + (nse,), n_batch) < mask.astype(np.int32)[..., None]
        keep = keep.reshape(keep.shape + (1,) * n_dense)
        return jnp.where(keep, data, jnp.zeros((), mat.dtype)), indices
    sparse_shape = tuple(mat.shape[n_batch : n_batch + n_sparse])
    nonzero = nfold_vmap(lambda m: jnp.stack(jnp.nonzero(m, size=nse, fill_value=sparse_shape), -1), n_batch)
    indices = nonzero(mask).astype(index_dtype)
    return _bcoo_extract(indices, mat), indices


def bcoo_fromdense(
    mat: Any, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0, index_dtype: Any = jnp.int32
) -> BCOO:
    """Create a BCOO array from a dense array; ``nse`` must be given under jit."""
    mat = jnp.asarray(mat)
    _check_layout(mat.ndim, n_batch, n_dense, "bcoo_fromdense")
    if nse is None:
        nse = count_stored_elements(mat, n_batch, n_dense)
    nse = static_int(nse, _TRACED_NSE_ERROR)
    if nse < 0:
        raise ValueError(f"bcoo_fromdense: nse must be non-negative, got {nse=}")
    data, indices = _bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


# ------------------------------------------------------------------------------------------
# sorting, unique indices, duplicates


def _unique_unbatched(indices: Any, sparse_shape: Shape) -> tuple:
    """For unbatched ``indices (nse, n_sparse)``: sorted unique indices (padded with the out-of-range
    index ``sparse_shape``), each entry's output slot (``nse`` for padding), a mask of first
    occurrences, and the number of unique in-range indices."""
    nse, n_sparse = indices.shape
    fill = jnp.array(sparse_shape, dtype=indices.dtype)
    if nse == 0:
        return indices, jnp.zeros(0, np.int32), jnp.zeros(0, bool), jnp.zeros((), np.int32)
    oob = (indices >= fill).any(-1, keepdims=True)
    idx = jnp.where(oob, fill, indices)
    *cols, perm = lax.sort((*(idx[:, i] for i in range(n_sparse)), lax.iota(np.int32, nse)), num_keys=n_sparse)
    srt = jnp.stack(cols, axis=1)
    new = jnp.concatenate([jnp.ones(1, bool), (srt[1:] != srt[:-1]).any(-1)])
    valid = ~(srt == fill).all(-1)
    slot = jnp.where(valid, jnp.cumsum(new.astype(np.int32)) - 1, nse)
    out = jnp.broadcast_to(fill, (nse, n_sparse)).at[slot].set(srt, mode="drop")
    first_sorted = new & valid
    inverse = jnp.zeros(nse, np.int32).at[perm].set(slot)
    first = jnp.zeros(nse, bool).at[perm].set(first_sorted)
    return out, inverse, first, first_sorted.sum().astype(np.int32)


def _traced_value(x: Any) -> Any:
    try:
        return x.to_concrete_value()
    except Exception:
        return None


def _adjust_indices_nse(indices: Any, nse: int, fill: Any) -> Any:
    cur = indices.shape[-2]
    if nse <= cur:
        return indices[..., :nse, :]
    pad = jnp.broadcast_to(fill, tuple(indices.shape[:-2]) + (nse - cur, indices.shape[-1]))
    return jnp.concatenate([indices, pad.astype(indices.dtype)], axis=-2)


def bcoo_sum_duplicates(mat: BCOO, nse: int | None = None) -> BCOO:
    """Sum duplicate entries and sort indices; ``nse`` (required under jit) sets the output size."""
    props = _validate_bcoo(mat.data, mat.indices, mat.shape)
    n_batch = props.n_batch
    data, indices = _broadcast_batch(mat.data, mat.indices, mat.shape, n_batch)
    bshape = tuple(mat.shape[:n_batch])
    if nse is not None:
        nse = static_int(nse, "nse argument of bcoo_sum_duplicates.")
    if props.n_sparse == 0:
        nse = 1 if nse is None else nse
        summed = data.sum(n_batch, keepdims=True, dtype=data.dtype)
        pad = [(0, 0)] * summed.ndim
        pad[n_batch] = (0, max(nse - 1, 0))
        data_out = jnp.pad(summed, pad)[(slice(None),) * n_batch + (slice(0, nse),)]
        return BCOO(
            (data_out, jnp.zeros(bshape + (nse, 0), indices.dtype)),
            shape=mat.shape,
            indices_sorted=True,
            unique_indices=True,
        )
    sparse_shape = tuple(mat.shape[n_batch : n_batch + props.n_sparse])
    out_idx, inverse, _, count = nfold_vmap(lambda i: _unique_unbatched(i, sparse_shape), n_batch, broadcasted=False)(
        indices
    )
    if nse is None:
        count = count.max(initial=0) if count.ndim else count
        if is_tracer(count) and _traced_value(count) is None:
            raise ValueError(
                "bcoo_sum_duplicates: nse must be specified when using the function within jit, vmap, and other "
                "transformations requiring abstract evaluation."
            )
        nse = static_int(count, "nse argument of bcoo_sum_duplicates.")
    fill = jnp.array(sparse_shape, indices.dtype)
    out_idx = _adjust_indices_nse(out_idx, nse, fill)
    data_out = jnp.zeros(bshape + (nse,) + tuple(data.shape[n_batch + 1 :]), data.dtype)
    data_out = data_out.at[batch_iotas(bshape, props.nse) + (inverse,)].add(data, mode="drop")
    return BCOO((data_out, out_idx), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_eliminate_zeros(mat: BCOO, nse: int | None = None) -> BCOO:
    """Turn explicitly stored zeros into padding, then sum duplicates."""
    props = _validate_bcoo(mat.data, mat.indices, mat.shape)
    data, indices = _broadcast_batch(mat.data, mat.indices, mat.shape, props.n_batch)
    is_zero = (data == 0).all(tuple(range(props.n_batch + 1, data.ndim)))
    fill = _sparse_fill(mat.shape, props, indices.dtype)
    indices = jnp.where(is_zero[..., None], fill, indices)
    return bcoo_sum_duplicates(BCOO((data, indices), shape=mat.shape), nse=nse)


def bcoo_sort_indices(mat: BCOO) -> BCOO:
    """Sort the indices of a BCOO array lexicographically (duplicates are kept)."""
    props = _validate_bcoo(mat.data, mat.indices, mat.shape)
    if props.n_sparse == 0 or props.nse == 0:
        return BCOO((mat.data, mat.indices), shape=mat.shape, indices_sorted=True, unique_indices=mat.unique_indices)
    data, indices = _broadcast_batch(mat.data, mat.indices, mat.shape, props.n_batch)

    def sort1(ind: Any) -> tuple:
        *cols, perm = lax.sort(
            (*(ind[:, i] for i in range(props.n_sparse)), lax.iota(np.int32, props.nse)), num_keys=props.n_sparse
        )
        return jnp.stack(cols, axis=1), perm

    indices, perm = nfold_vmap(sort1, props.n_batch, broadcasted=False)(indices)
    data = data[batch_iotas(tuple(mat.shape[: props.n_batch]), props.nse) + (perm,)]
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=mat.unique_indices)


# ------------------------------------------------------------------------------------------
# transpose / layout


def _validate_permutation(props: BCOOProperties, permutation: Any, shape: Shape) -> tuple:
    if not isinstance(permutation, (tuple, list, np.ndarray)):
        raise TypeError(f"transpose permutation must be a tuple/list/ndarray, got {type(permutation)}.")
    permutation = tuple(operator.index(p) for p in permutation)
    if tuple(sorted(permutation)) != tuple(range(len(shape))):
        raise TypeError(
            "transpose permutation isn't a permutation of operand dimensions, "
            f"got permutation {permutation} for shape {shape}."
        )
    n_batch, n_sparse, n_dense, _ = props
    batch_perm = permutation[:n_batch]
    sparse_perm = [p - n_batch for p in permutation[n_batch : n_batch + n_sparse]]
    dense_perm = [p - n_sparse - n_batch for p in permutation[n_batch + n_sparse :]]
    if n_batch and tuple(sorted(batch_perm)) != tuple(range(n_batch)):
        raise NotImplementedError(
            "transpose permutation cannot permute batch axes with non-batch axes; "
            f"got permutation {permutation}, with {n_batch=}."
        )
    if n_dense and tuple(sorted(dense_perm)) != tuple(range(n_dense)):
        raise NotImplementedError(
            "transpose permutation cannot permute dense axes with non-dense axes; "
            f"got permutation {permutation}, with {n_dense=}."
        )
    return permutation, batch_perm, sparse_perm, dense_perm


def bcoo_transpose(mat: BCOO, *, permutation: Sequence[int]) -> BCOO:
    """Transpose a BCOO array; batch, sparse and dense axes each permute among themselves."""
    props = _validate_bcoo(mat.data, mat.indices, mat.shape)
    permutation, batch_perm, sparse_perm, dense_perm = _validate_permutation(props, permutation, mat.shape)
    shape_t = tuple(mat.shape[p] for p in permutation)
    if permutation == tuple(range(mat.ndim)):
        return BCOO((mat.data, mat.indices), **mat._info._asdict())
    nb = props.n_batch
    indices = mat.indices[..., np.array(sparse_perm, dtype=np.int32)] if props.n_sparse else mat.indices
    indices = indices.transpose(*batch_perm, nb, nb + 1)
    data = mat.data.transpose(*batch_perm, nb, *(d + nb + 1 for d in dense_perm))
    is_sorted = mat.indices_sorted if tuple(sparse_perm) == tuple(range(props.n_sparse)) else False
    return BCOO((data, indices), shape=shape_t, indices_sorted=is_sorted, unique_indices=mat.unique_indices)


def bcoo_update_layout(
    mat: BCOO, *, n_batch: int | None = None, n_dense: int | None = None, on_inefficient: str | None = "error"
) -> BCOO:
    """Change ``n_batch``/``n_dense`` of a BCOO array, keeping the array it represents."""
    n_batch = mat.n_batch if n_batch is None else operator.index(n_batch)
    n_dense = mat.n_dense if n_dense is None else operator.index(n_dense)
    if (n_batch, n_dense) == (mat.n_batch, mat.n_dense):
        return mat
    if on_inefficient not in ("error", "warn", None):
        raise ValueError(f"on_inefficent={on_inefficient!r}; expected one of ['error', 'warn', None].")
    if n_batch < 0:
        raise ValueError(f"n_batch must be non-negative; got {n_batch}")
    if n_dense < 0:
        raise ValueError(f"n_dense must be non-negative; got {n_dense}")
    if mat.ndim - n_batch - n_dense < 0:
        raise ValueError(f"sum of {n_batch=} and {n_dense=} cannot be larger than mat.ndim={mat.ndim}.")

    def inefficient(msg: str) -> None:
        if on_inefficient == "error":
            raise SparseEfficiencyError(
                msg + " To disable this error, set the on_inefficient argument of bcoo_update_layout to 'warn' or None."
            )
        if on_inefficient == "warn":
            warnings.warn(
                msg + " To disable this warning, set the on_inefficient argument of bcoo_update_layout to None.",
                category=SparseEfficiencyWarning,
                stacklevel=3,
            )

    shape = mat.shape
    if n_dense > mat.n_dense and any(d > 1 for d in shape[mat.ndim - n_dense : mat.ndim - mat.n_dense]):
        inefficient(
            f"For matrix of shape {shape}, increasing n_dense from {mat.n_dense} to {n_dense} "
            "results in inefficient storage."
        )
    if n_batch > mat.n_batch and any(d > 1 for d in shape[mat.n_batch : n_batch]):
        inefficient(
            f"For matrix of shape {shape}, increasing n_batch from {mat.n_batch} to {n_batch} "
            "results in inefficient storage."
        )
    data, indices = _broadcast_batch(mat.data, mat.indices, shape, mat.n_batch)
    nb, nd = mat.n_batch, mat.n_dense
    if n_dense < nd:  # the leading (nd - n_dense) dense axes become sparse axes
        k = nd - n_dense
        dshape = tuple(shape[mat.ndim - nd : mat.ndim - n_dense])
        nse = indices.shape[-2]
        grid = np.stack([g.ravel() for g in np.indices(dshape)], -1).astype(np.dtype(indices.dtype))
        m = grid.shape[0]
        lead = tuple(shape[:nb])
        old = jnp.broadcast_to(indices[..., :, None, :], lead + (nse, m, indices.shape[-1]))
        new = jnp.broadcast_to(jnp.asarray(grid), lead + (nse, m, k))
        indices = jnp.concatenate([old, new], -1).reshape(lead + (nse * m, indices.shape[-1] + k))
        data = data.reshape(lead + (nse * m,) + tuple(data.shape[nb + 1 + k :]))
        nd = n_dense
    if n_batch < nb:  # the trailing (nb - n_batch) batch axes become leading sparse axes
        lead, moved = tuple(shape[:n_batch]), tuple(shape[n_batch:nb])
        nse = indices.shape[-2]
        m = math.prod(moved)
        grid = np.stack([g.ravel() for g in np.indices(moved)], -1).astype(np.dtype(indices.dtype))
        grid = np.broadcast_to(grid[:, None, :], (m, nse, len(moved))).reshape(m * nse, len(moved))
        new = jnp.broadcast_to(jnp.asarray(grid), lead + grid.shape)
        indices = indices.reshape(lead + (m * nse, indices.shape[-1]))
        indices = jnp.concatenate([new, indices], -1)
        data = data.reshape(lead + (m * nse,) + tuple(data.shape[nb + 1 :]))
        nb = n_batch
    if n_dense > nd:  # the trailing sparse axes become dense axes
        k = n_dense - nd
        nse = indices.shape[-2]
        lead = tuple(shape[:nb])
        idx = batch_iotas(lead, nse) + (jnp.broadcast_to(jnp.arange(nse), lead + (nse,)),)
        idx += tuple(indices[..., indices.shape[-1] - k + j] for j in range(k))
        new_shape = lead + (nse,) + tuple(shape[mat.ndim - n_dense :])
        data = jnp.zeros(new_shape, data.dtype).at[idx].set(data, mode="drop")
        indices = indices[..., : indices.shape[-1] - k]
        nd = n_dense
    if n_batch > nb:  # the leading sparse axes become batch axes
        k = n_batch - nb
        nse = indices.shape[-2]
        lead = tuple(shape[:nb])
        idx = batch_iotas(lead, nse) + tuple(indices[..., j] for j in range(k))
        idx += (jnp.broadcast_to(jnp.arange(nse), lead + (nse,)),)
        new_shape = tuple(shape[:n_batch]) + (nse,) + tuple(data.shape[nb + 1 :])
        data = jnp.zeros(new_shape, data.dtype).at[idx].set(data, mode="drop")
        rest = indices[..., k:]
        indices = jnp.broadcast_to(
            rest.reshape(lead + (1,) * k + tuple(rest.shape[nb:])), tuple(shape[:n_batch]) + tuple(rest.shape[nb:])
        )
        nb = n_batch
    return BCOO((data, indices), shape=shape)


def _bcoo_set_nse(mat: BCOO, nse: int) -> BCOO:
    """A copy of ``mat`` with ``nse`` stored elements (truncating or padding)."""
    nse = operator.index(nse)
    if nse == mat.nse:
        return mat
    nb = mat.n_batch
    if nse < mat.nse:
        data = mat.data[(slice(None),) * nb + (slice(0, nse),)]
        indices = mat.indices[..., :nse, :]
    else:
        pad = [(0, 0)] * mat.data.ndim
        pad[nb] = (0, nse - mat.nse)
        data = jnp.pad(mat.data, pad)
        fill = jnp.array(mat.shape[nb : nb + mat.n_sparse], mat.indices.dtype)
        indices = _adjust_indices_nse(mat.indices, nse, fill)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=mat.indices_sorted, unique_indices=mat.unique_indices)


# ------------------------------------------------------------------------------------------
# the BCOO class


class _BCOOAux(tuple):
    """A BCOO's tree aux data ``(shape, indices_sorted, unique_indices)`` that also holds the shapes
    its buffers had when flattened (``bufs``), so that unflattening buffers vmap has mapped or
    stacked can tell which axis that was (JAX's ``register_vmappable`` handlers for BCOO). The
    buffer shapes take part in equality (tree_util caches an unflattener per structure), so two
    BCOO arrays of one shape but different nse or layout have different structures (in JAX they
    compare equal)."""

    bufs: tuple | None = None

    def __eq__(self, other: object) -> bool:
        return tuple.__eq__(self, other) and self.bufs == getattr(other, "bufs", None)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((tuple(self), self.bufs))

    def __reduce__(self) -> tuple:
        return (_make_aux, (tuple(self), self.bufs))


def _make_aux(info: tuple, bufs: tuple | None) -> _BCOOAux:
    aux = _BCOOAux(info)
    aux.bufs = bufs
    return aux


def _drop(shape: tuple, axis: int) -> tuple:
    return shape[:axis] + shape[axis + 1 :]


def _mapped_shape(shape: Shape, bufs: tuple, data: Any, indices: Any) -> Shape | None:
    """The shape of a BCOO array whose buffers had shapes ``bufs`` and now have those of ``data``
    and ``indices`` after one axis was removed (vmap's in_axes) or inserted (out_axes); None when
    neither fits. As JAX, only a batch axis can be mapped and a new axis must join the leading
    block of batch axes (ValueError otherwise)."""
    (d0, i0), d1, i1 = bufs, tuple(data.shape), tuple(indices.shape)
    nb = len(i0) - 2
    if len(d1) == len(d0) - 1 and len(i1) == len(i0) - 1:
        cands = [a for a in range(min(len(d0), len(i0))) if _drop(d0, a) == d1 and _drop(i0, a) == i1]
        valid = [a for a in cands if a < nb]
        if valid:
            return _drop(tuple(shape), valid[0])
        if cands:
            raise ValueError(
                f"Cannot map in_axis={cands[0]} for BCOO array with n_batch={nb}. in_axes for batched BCOO "
                "operations must correspond to a batch dimension."
            )
    elif len(d1) == len(d0) + 1 and len(i1) == len(i0) + 1:
        cands = [a for a in range(min(len(d1), len(i1))) if _drop(d1, a) == d0 and _drop(i1, a) == i0]
        valid = [a for a in cands if a <= nb]
        if valid:
            a = valid[0]
            return tuple(shape[:a]) + (max(d1[a], i1[a]),) + tuple(shape[a:])
        if cands:
            raise ValueError(
                f"BCOO: cannot add out_axis={cands[0]} for BCOO array with n_batch={nb}. BCOO batch axes must be a "
                "contiguous block of leading dimensions."
            )
    return None


def _reconcile_shape(shape: Shape, data: Any, indices: Any, bufs: tuple | None = None) -> Shape:
    """The shape for (data, indices) given the flattened shape ``shape`` (and the buffer shapes
    ``bufs`` it was flattened with). vmap maps or stacks batch axes of the buffers, which changes
    the number of batch dimensions."""
    if not (hasattr(data, "ndim") and hasattr(indices, "ndim") and hasattr(indices, "shape")):
        return shape
    if bufs is not None and (tuple(data.shape), tuple(indices.shape)) != bufs:
        new = _mapped_shape(shape, bufs, data, indices)
        if new is not None:
            return new
    nb = indices.ndim - 2
    nd = data.ndim - 1 - nb
    if nb == -1 and len(shape) == indices.shape[-1] + data.ndim:
        raise ValueError(
            "Cannot map in_axis=0 for BCOO array with n_batch=0. in_axes for batched BCOO operations must "
            "correspond to a batch dimension."
        )
    if nb < 0 or nd < 0:
        raise ValueError(
            f"BCOO: buffers of shapes data.shape={tuple(data.shape)}, indices.shape={tuple(indices.shape)} do "
            "not form a BCOO array; vmap in_axes for BCOO arrays must correspond to a batch dimension."
        )
    ns = indices.shape[-1]
    if len(shape) == nb + ns + nd:
        return shape
    batch = tuple(max(int(a), int(b)) for a, b in zip(data.shape[:nb], indices.shape[:nb]))
    return batch + tuple(shape[len(shape) - ns - nd :])


@tree_util.register_pytree_node_class
class BCOO(JAXSparse):
    """Batched COO sparse array: ``BCOO((data, indices), shape=...)``."""

    data: Any
    indices: Any
    shape: Shape
    indices_sorted: bool
    unique_indices: bool

    def __init__(
        self,
        args: tuple[Any, Any],
        *,
        shape: Sequence[int],
        indices_sorted: bool = False,
        unique_indices: bool = False,
    ) -> None:
        self.data, self.indices = map(jnp.asarray, args)
        self.indices_sorted = indices_sorted
        self.unique_indices = unique_indices
        super().__init__(args, shape=tuple(shape))
        _validate_bcoo(self.data, self.indices, self.shape)

    @property
    def _info(self) -> SparseInfo:
        return SparseInfo(self.shape, self.indices_sorted, self.unique_indices)

    @property
    def _bufs(self) -> tuple[Any, Any]:
        return (self.data, self.indices)

    @property
    def nse(self) -> int:
        return self.indices.shape[-2]

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def n_batch(self) -> int:
        return self.indices.ndim - 2

    @property
    def n_sparse(self) -> int:
        return self.indices.shape[-1]

    @property
    def n_dense(self) -> int:
        return self.data.ndim - 1 - self.n_batch

    @classmethod
    def fromdense(
        cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32, n_dense: int = 0, n_batch: int = 0
    ) -> BCOO:
        """Create a BCOO array from a dense array."""
        return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch)

    @classmethod
    def from_scipy_sparse(cls, mat: Any, *, index_dtype: Any = None, n_dense: int = 0, n_batch: int = 0) -> BCOO:
        """Create a BCOO array from a ``scipy.sparse`` array."""
        if n_dense != 0 or n_batch != 0:
            raise NotImplementedError("BCOO.fromscipy with nonzero n_dense/n_batch")
        mat = mat.tocoo()
        data = jnp.asarray(mat.data)
        index_dtype = index_dtype or jnp.int32
        indices = jnp.column_stack((jnp.asarray(mat.row, index_dtype), jnp.asarray(mat.col, index_dtype)))
        return cls((data, indices), shape=mat.shape, indices_sorted=False, unique_indices=False)

    @classmethod
    def _empty(
        cls,
        shape: Shape,
        *,
        dtype: Any = None,
        index_dtype: Any = "int32",
        n_dense: int = 0,
        n_batch: int = 0,
        nse: int = 0,
    ) -> BCOO:
        shape = tuple(operator.index(s) for s in shape)
        n_sparse = _check_layout(len(shape), n_batch, n_dense, "BCOO._empty")
        data = jnp.zeros((*shape[:n_batch], nse, *shape[n_batch + n_sparse :]), dtype)
        indices = jnp.full(
            (*shape[:n_batch], nse, n_sparse), jnp.array(shape[n_batch : n_batch + n_sparse]), index_dtype
        )
        return cls((data, indices), shape=shape, indices_sorted=True, unique_indices=True)

    @classmethod
    def _eye(
        cls,
        N: int,
        M: int,
        k: int,
        *,
        dtype: Any = None,
        index_dtype: Any = "int32",
        n_batch: int = 0,
        n_dense: int = 0,
    ) -> BCOO:
        n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
        if n_batch + n_dense > 2:
            raise ValueError(f"eye: invalid {n_batch=}, {n_dense=} for a 2-dimensional array")
        diag_size = max(0, min(N + min(k, 0), M - max(k, 0)))
        if n_batch == 0 and n_dense == 0:
            start = np.array([max(0, -k), max(0, k)])
            idx = (np.arange(diag_size)[:, None] + start[None, :]).astype(np.dtype(index_dtype))
            data = jnp.ones(diag_size, dtype)
            return cls((data, jnp.asarray(idx)), shape=(N, M), indices_sorted=True, unique_indices=True)
        return bcoo_update_layout(
            cls._eye(N, M, k, dtype=dtype, index_dtype=index_dtype),
            n_batch=n_batch,
            n_dense=n_dense,
            on_inefficient=None,
        )

    def update_layout(
        self, *, n_batch: int | None = None, n_dense: int | None = None, on_inefficient: str = "error"
    ) -> BCOO:
        """Change the storage layout (n_batch, n_dense)."""
        return bcoo_update_layout(self, n_batch=n_batch, n_dense=n_dense, on_inefficient=on_inefficient)

    def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> BCOO:
        """Sum duplicate indices (and by default drop explicit zeros); the result is sorted."""
        if remove_zeros:
            return bcoo_eliminate_zeros(self, nse=nse)
        return bcoo_sum_duplicates(self, nse=nse)

    def sort_indices(self) -> BCOO:
        """A copy with lexicographically sorted indices."""
        return bcoo_sort_indices(self)

    def todense(self) -> Any:
        """The dense array this BCOO array represents."""
        return bcoo_todense(self)

    def transpose(self, axes: Sequence[int] | None = None) -> BCOO:
        """Permute the axes (reversed by default)."""
        perm = list(range(self.ndim)[::-1] if axes is None else axes)
        return bcoo_transpose(self, permutation=perm)

    def tree_flatten(self) -> tuple:
        aux = _BCOOAux((self.shape, self.indices_sorted, self.unique_indices))
        d, i = getattr(self.data, "shape", None), getattr(self.indices, "shape", None)
        if d is not None and i is not None:
            aux.bufs = (tuple(d), tuple(i))
        return (self.data, self.indices), aux

    @classmethod
    def tree_unflatten(cls, aux_data: Any, children: Any) -> BCOO:
        obj = object.__new__(cls)
        obj.data, obj.indices = children
        shape, obj.indices_sorted, obj.unique_indices = aux_data
        obj.shape = _reconcile_shape(tuple(shape), obj.data, obj.indices, getattr(aux_data, "bufs", None))
        return obj


def __getattr__(name: str) -> Any:
    # JAX keeps every bcoo_* function in its bcoo module; ours live in bcoo_ops (which imports this one)
    if name.startswith("bcoo_"):
        from fjax.experimental.sparse import bcoo_ops

        return getattr(bcoo_ops, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
