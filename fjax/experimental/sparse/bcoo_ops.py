"""BCOO products, reductions and structural ops (JAX's ``bcoo_dot_general``, ``bcoo_reshape``, ...)."""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

import fjax
from fjax import lax
from fjax import numpy as jnp
from fjax.experimental.sparse._util import (
    Shape,
    batch_iotas,
    canonical_dimension_numbers,
    dot_general_shape,
    nfold_vmap,
    remaining,
)
from fjax.experimental.sparse.bcoo import (
    BCOO,
    _bcoo_extract,
    _bcoo_set_nse,
    _broadcast_batch,
    _unique_unbatched,
    _validate_bcoo,
    bcoo_transpose,
    bcoo_update_layout,
)


def _canon_axis(ax: int, ndim: int, fname: str) -> int:
    ax = operator.index(ax)
    if not -ndim <= ax < ndim:
        raise ValueError(f"{fname}: axis {ax} is out of bounds for array of dimension {ndim}")
    return ax % ndim


def _sum_duplicates_unbatched(data: Any, indices: Any, sparse_shape: Shape, nse: int) -> tuple[Any, Any]:
    """Sum duplicates of unbatched buffers into exactly ``nse`` stored elements."""
    fill = jnp.array(sparse_shape, dtype=indices.dtype)
    if indices.shape[-1] == 0:
        summed = data.sum(0, keepdims=True)
        out = jnp.concatenate([summed, jnp.zeros((max(nse - 1, 0),) + tuple(data.shape[1:]), data.dtype)])[:nse]
        return out, jnp.zeros((nse, 0), indices.dtype)
    out_idx, inverse, _, _ = _unique_unbatched(indices, sparse_shape)
    cur = out_idx.shape[0]
    if nse <= cur:
        out_idx = out_idx[:nse]
    else:
        out_idx = jnp.concatenate([out_idx, jnp.broadcast_to(fill, (nse - cur, len(sparse_shape)))])
    out = jnp.zeros((nse,) + tuple(data.shape[1:]), data.dtype).at[inverse].add(data, mode="drop")
    return out, out_idx


def _result_dtype(a: Any, b: Any, preferred_element_type: Any) -> Any:
    if preferred_element_type is not None:
        return np.dtype(preferred_element_type)
    return jnp.result_type(a, b)


# ------------------------------------------------------------------------------------------
# dot_general


def bcoo_dot_general(
    lhs: BCOO | Any,
    rhs: BCOO | Any,
    *,
    dimension_numbers: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> BCOO | Any:
    """``lax.dot_general`` where either operand may be BCOO; sparse x sparse gives BCOO."""
    del precision, out_sharding
    dn = canonical_dimension_numbers(dimension_numbers)
    if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
        return _bcoo_spdot_general(lhs, rhs, dn, preferred_element_type)
    if isinstance(lhs, BCOO):
        return _bcoo_dot_dense(lhs, jnp.asarray(rhs), dn, preferred_element_type)
    if isinstance(rhs, BCOO):
        (lc, rc), (lb, rb) = dn
        lhs = jnp.asarray(lhs)
        out = _bcoo_dot_dense(rhs, lhs, ((rc, lc), (rb, lb)), preferred_element_type)
        n_b = len(lb)
        n_sp_free = rhs.ndim - len(rc) - len(rb)
        perm = (*range(n_b), *range(n_b + n_sp_free, out.ndim), *range(n_b, n_b + n_sp_free))
        return lax.transpose(out, perm)
    return lax.dot_general(lhs, rhs, dn, preferred_element_type=preferred_element_type)


def _bcoo_dot_dense(mat: BCOO, rhs: Any, dn: tuple, preferred_element_type: Any) -> Any:
    out_shape = dot_general_shape(mat.shape, rhs.shape, dn)
    props = _validate_bcoo(mat.data, mat.indices, mat.shape)
    nb, ns = props.n_batch, props.n_sparse
    (lc, rc), (lb, rb) = dn
    if lb and max(lb) >= nb:
        raise NotImplementedError(
            "bcoo_dot_general batch dimensions must be among the batch dimensions in the sparse representation.\n"
            f"got lhs_batch={tuple(lb)}, n_batch={nb}"
        )
    if any(d >= nb + ns for d in lc):
        raise NotImplementedError("bcoo_dot_general: contracting over dense dimensions.")
    dtype = _result_dtype(mat.data, rhs, preferred_element_type)
    data, indices = _broadcast_batch(mat.data, mat.indices, mat.shape, nb)
    data, rhs = data.astype(dtype), rhs.astype(dtype)
    pairs_b = [(lhs_d, r) for lhs_d, r in zip(lc, rc) if lhs_d < nb]
    pairs_s = [(lhs_d, r) for lhs_d, r in zip(lc, rc) if lhs_d >= nb]
    lcb, rcb = [p[0] for p in pairs_b], [p[1] for p in pairs_b]
    lcs, rcs = [p[0] for p in pairs_s], [p[1] for p in pairs_s]
    free_b = remaining(range(nb), lb, lcb)
    bperm = [*lb, *free_b, *lcb]
    data = data.transpose(*bperm, *range(nb, data.ndim))
    indices = indices.transpose(*bperm, nb, nb + 1)
    rfree = remaining(range(rhs.ndim), rb, rc)
    rhs = rhs.transpose(*rb, *rcb, *rcs, *rfree)
    rhs = lax.expand_dims(rhs, tuple(range(len(rb), len(rb) + len(free_b))))
    n_cb = len(lcb)
    sel = [d - nb for d in lcs]
    free_s = remaining(range(ns), sel)
    free_sizes = tuple(mat.shape[nb + i] for i in free_s)
    n_rf = len(rfree)

    def kernel(d: Any, ind: Any, r: Any) -> Any:
        nse = ind.shape[-2]
        bshape = tuple(d.shape[:n_cb])
        cols = tuple(ind[..., c] for c in sel)
        if bshape or cols:
            g = r.at[batch_iotas(bshape, nse) + cols].get(mode="fill", fill_value=0)
        else:
            g = jnp.broadcast_to(r, (nse,) + tuple(r.shape))
        n_d = d.ndim - n_cb - 1
        prod = d.reshape(tuple(d.shape) + (1,) * n_rf) * g.reshape(
            tuple(g.shape[: n_cb + 1]) + (1,) * n_d + tuple(g.shape[n_cb + 1 :])
        )
        if free_s:
            out = jnp.zeros(free_sizes + tuple(prod.shape[n_cb + 1 :]), dtype)
            return out.at[tuple(ind[..., c] for c in free_s)].add(prod, mode="drop")
        return prod.sum(tuple(range(n_cb + 1)), dtype=dtype)

    out = nfold_vmap(kernel, len(lb) + len(free_b))(data, indices, rhs)
    assert tuple(out.shape) == tuple(out_shape), (out.shape, out_shape)
    return out


def _bcoo_spdot_general(lhs: BCOO, rhs: BCOO, dn: tuple, preferred_element_type: Any) -> BCOO:
    out_shape = dot_general_shape(lhs.shape, rhs.shape, dn)
    (lc, rc), (lb, rb) = dn
    lp = _validate_bcoo(lhs.data, lhs.indices, lhs.shape)
    rp = _validate_bcoo(rhs.data, rhs.indices, rhs.shape)
    if lp.n_dense or rp.n_dense:
        raise NotImplementedError("bcoo_spdot_general with dense dimensions.")
    if (lb and max(lb) >= lp.n_batch) or (rb and max(rb) >= rp.n_batch):
        raise NotImplementedError(
            "bcoo_spdot_general: batch_dims must correspond to batch dimensions of the sparse representation."
        )
    for c, p in ((lc, lp), (rc, rp)):
        if c and (min(c) < p.n_batch or max(c) >= p.n_batch + p.n_sparse):
            raise NotImplementedError("bcoo_spdot_general only supports contraction of sparse indices.")
    if rp.n_batch > len(rb) and lp.n_sparse > len(lc):
        raise ValueError("bcoo_spdot_general: cannot have unused batch dims on rhs with unused sparse dims on lhs.")
    dtype = _result_dtype(lhs.data, rhs.data, preferred_element_type)
    index_dtype = jnp.result_type(lhs.indices, rhs.indices)
    ld, li = _broadcast_batch(lhs.data, lhs.indices, lhs.shape, lp.n_batch)
    rd, ri = _broadcast_batch(rhs.data, rhs.indices, rhs.shape, rp.n_batch)
    lfb = remaining(range(lp.n_batch), lb)
    rfb = remaining(range(rp.n_batch), rb)
    ld, li = ld.transpose(*lb, *lfb, lp.n_batch), li.transpose(*lb, *lfb, lp.n_batch, lp.n_batch + 1)
    rd, ri = rd.transpose(*rb, *rfb, rp.n_batch), ri.transpose(*rb, *rfb, rp.n_batch, rp.n_batch + 1)
    lsel = [d - lp.n_batch for d in lc]
    rsel = [d - rp.n_batch for d in rc]
    lfree = remaining(range(lp.n_sparse), lsel)
    rfree = remaining(range(rp.n_sparse), rsel)
    n_out_batch = len(lb) + len(lfb) + len(rfb)
    out_sparse_shape = tuple(out_shape[n_out_batch:])
    out_nse = (lp.nse if lfree else 1) * (rp.nse if rfree else 1)
    out_nse = min(out_nse, math.prod(out_sparse_shape))
    lfill = jnp.array([lhs.shape[lp.n_batch + i] for i in lsel], li.dtype)
    rfill = jnp.array([rhs.shape[rp.n_batch + i] for i in rsel], ri.dtype)

    def kernel(ld: Any, li: Any, rd: Any, ri: Any) -> tuple[Any, Any]:
        lcols, rcols = li[:, np.array(lsel, int)], ri[:, np.array(rsel, int)]
        match = (lcols[:, None] == rcols[None, :]).all(-1)
        match = match & (lcols < lfill).all(-1)[:, None] & (rcols < rfill).all(-1)[None, :]
        vals = jnp.where(match, ld.astype(dtype)[:, None] * rd.astype(dtype)[None, :], jnp.zeros((), dtype)).ravel()
        nl, nr = li.shape[0], ri.shape[0]
        lj = jnp.broadcast_to(li[:, None, np.array(lfree, int)], (nl, nr, len(lfree)))
        rj = jnp.broadcast_to(ri[None, :, np.array(rfree, int)], (nl, nr, len(rfree)))
        idx = jnp.concatenate([lj.astype(index_dtype), rj.astype(index_dtype)], -1)
        idx = idx.reshape(nl * nr, len(lfree) + len(rfree))
        return _sum_duplicates_unbatched(vals, idx, out_sparse_shape, out_nse)

    f = kernel
    for _ in rfb:
        f = fjax.vmap(f, in_axes=(None, None, 0, 0))
    for _ in lfb:
        f = fjax.vmap(f, in_axes=(0, 0, None, None))
    for _ in lb:
        f = fjax.vmap(f, in_axes=(0, 0, 0, 0))
    data, indices = f(ld, li, rd, ri)
    return BCOO((data, indices), shape=out_shape)


def bcoo_dot_general_sampled(A: Any, B: Any, indices: Any, *, dimension_numbers: Any) -> Any:
    """``lax.dot_general(A, B)`` evaluated only at the BCOO ``indices``; returns the data buffer."""
    A, B, indices = jnp.asarray(A), jnp.asarray(B), jnp.asarray(indices)
    out = lax.dot_general(A, B, canonical_dimension_numbers(dimension_numbers))
    return _bcoo_extract(indices, out)


# ------------------------------------------------------------------------------------------
# elementwise products


def _dense_at_entries(sp_mat: BCOO, v: Any) -> Any:
    """Values of dense ``v`` (broadcastable to ``sp_mat.shape``) at each stored entry, shaped like data."""
    shape = sp_mat.shape
    if v.ndim == 0:
        return v
    if tuple(v.shape) == shape:
        return _bcoo_extract(sp_mat.indices, v)
    if jnp.broadcast_shapes(tuple(v.shape), shape) != shape:
        raise NotImplementedError(
            "multiplication between sparse and dense is only implemented for cases where the output shape "
            f"matches the sparse matrix shape. Got {shape=}, v.shape={tuple(v.shape)}"
        )
    v = v.reshape((1,) * (len(shape) - v.ndim) + tuple(v.shape))
    props = _validate_bcoo(sp_mat.data, sp_mat.indices, shape)
    nb, ns = props.n_batch, props.n_sparse
    _, indices = _broadcast_batch(sp_mat.data, sp_mat.indices, shape, nb)
    full = batch_iotas(shape[:nb], props.nse)
    zero = jnp.zeros(shape[:nb] + (props.nse,), np.int32)
    idx = tuple(full[i] if v.shape[i] != 1 else zero for i in range(nb))
    idx += tuple(indices[..., i] if v.shape[nb + i] != 1 else zero for i in range(ns))
    if not idx:
        return v.reshape((1,) + tuple(v.shape[nb + ns :]))
    return v.at[idx].get(mode="fill", fill_value=0)


def bcoo_multiply_dense(sp_mat: BCOO, v: Any) -> Any:
    """Elementwise ``sp_mat * v`` for dense ``v``; returns the new data buffer (as JAX does)."""
    return sp_mat.data * _dense_at_entries(sp_mat, jnp.asarray(v))


def bcoo_multiply_sparse(lhs: BCOO, rhs: BCOO) -> BCOO:
    """Elementwise product of two BCOO arrays (broadcasting size-1 dimensions)."""
    if len(lhs.shape) != len(rhs.shape):
        raise TypeError(
            f"bcoo_multiply_sparse: arrays must have same number of dimensions, got {lhs.shape}, {rhs.shape}"
        )
    if lhs.n_dense != rhs.n_dense:
        raise NotImplementedError(
            f"bcoo_multiply_sparse: arrays with differing numbers of dense dimensions: {lhs}, {rhs}"
        )
    out_shape = tuple(jnp.broadcast_shapes(lhs.shape, rhs.shape))
    nb = min(lhs.n_batch, rhs.n_batch)
    lhs = bcoo_update_layout(lhs, n_batch=nb)
    rhs = bcoo_update_layout(rhs, n_batch=nb)
    ns = lhs.n_sparse
    lshape, rshape = lhs.shape[nb : nb + ns], rhs.shape[nb : nb + ns]
    dims = np.array([i for i, (a, b) in enumerate(zip(lshape, rshape)) if a != 1 and b != 1], int)
    lfill = jnp.array(lshape, lhs.indices.dtype)
    rfill = jnp.array(rshape, rhs.indices.dtype)
    out_fill = jnp.array(out_shape[nb : nb + ns], lhs.indices.dtype)
    dtype = jnp.result_type(lhs.data, rhs.data)

    def kernel(ld: Any, li: Any, rd: Any, ri: Any) -> tuple[Any, Any]:
        nl, nr = li.shape[0], ri.shape[0]
        nse = nl * nr
        match = (li[:, None, dims] == ri[None, :, dims]).all(-1)
        match = match & (li < lfill).all(-1)[:, None] & (ri < rfill).all(-1)[None, :]
        il, ir = jnp.nonzero(match, size=nse, fill_value=(nl, nr))
        d = ld.astype(dtype).at[il].get(mode="fill", fill_value=0) * rd.astype(dtype).at[ir].get(
            mode="fill", fill_value=0
        )
        ind = jnp.maximum(
            li.at[il].get(mode="fill", fill_value=0), ri.astype(li.dtype).at[ir].get(mode="fill", fill_value=0)
        )
        valid = (il < nl)[:, None]
        return d, jnp.where(valid, ind, out_fill)

    ld, li = _broadcast_batch(lhs.data, lhs.indices, lhs.shape, nb)
    rd, ri = _broadcast_batch(rhs.data, rhs.indices, rhs.shape, nb)
    data, indices = nfold_vmap(kernel, nb)(ld, li, rd, ri)
    return BCOO((data, indices), shape=out_shape)


# ------------------------------------------------------------------------------------------
# reductions and structural ops


def bcoo_reduce_sum(mat: BCOO, *, axes: Sequence[int]) -> BCOO:
    """Sum a BCOO array over ``axes``; the result is BCOO."""
    props = _validate_bcoo(mat.data, mat.indices, mat.shape)
    nb, ns, nd, nse = props
    axes = sorted({_canon_axis(a, mat.ndim, "bcoo_reduce_sum") for a in axes})
    data, indices = _broadcast_batch(mat.data, mat.indices, mat.shape, nb)
    dense_axes = tuple(a - ns + 1 for a in axes if a >= nb + ns)
    if dense_axes:
        data = data.sum(dense_axes)
    if ns:
        fill = jnp.array(mat.shape[nb : nb + ns], indices.dtype)
        ok = (indices < fill).all(-1)
        data = jnp.where(ok.reshape(ok.shape + (1,) * (data.ndim - ok.ndim)), data, jnp.zeros((), data.dtype))
    keep_sparse = [i for i in range(ns) if nb + i not in axes]
    indices = indices[..., np.array(keep_sparse, int)]
    batch_axes = [a for a in axes if a < nb]
    keep_batch = [i for i in range(nb) if i not in batch_axes]
    new_nse = nse * math.prod(mat.shape[a] for a in batch_axes)
    bshape = tuple(mat.shape[i] for i in keep_batch)
    data = data.transpose(*keep_batch, *batch_axes, *range(nb, data.ndim)).reshape(
        bshape + (new_nse,) + tuple(data.shape[nb + 1 :])
    )
    indices = indices.transpose(*keep_batch, *batch_axes, nb, nb + 1).reshape(bshape + (new_nse, len(keep_sparse)))
    out_shape = tuple(s for i, s in enumerate(mat.shape) if i not in axes)
    return BCOO((data, indices), shape=out_shape)


def bcoo_reshape(
    mat: BCOO, *, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None, sharding: Any = None
) -> BCOO:
    """``lax.reshape`` for BCOO; batch, sparse and dense dimensions must not mix."""
    del sharding
    new_sizes = tuple(operator.index(s) for s in new_sizes)
    if math.prod(new_sizes) != mat.size:
        raise ValueError(
            f"reshape total size must be unchanged, got new_sizes {new_sizes} (of total size "
            f"{math.prod(new_sizes)}) for shape {mat.shape} (of total size {mat.size})."
        )
    if dimensions is not None and tuple(dimensions) != tuple(range(mat.ndim)):
        mat = bcoo_transpose(mat, permutation=tuple(dimensions))
    nb, ns = mat.n_batch, mat.n_sparse
    data, indices = _broadcast_batch(mat.data, mat.indices, mat.shape, nb)
    batch_size = math.prod(mat.shape[:nb])
    sparse_shape = tuple(mat.shape[nb : nb + ns])
    sparse_size = math.prod(sparse_shape)
    cum = np.cumprod((1,) + new_sizes)[1:]
    if batch_size != 1 and batch_size not in cum:
        raise ValueError(
            "bcoo_reshape: new shape cannot mix batch and sparse dimensions; "
            f"got shape={mat.shape} new_shape={new_sizes} with n_batch={nb}"
        )
    if sparse_size != 1 and batch_size * sparse_size not in cum:
        raise ValueError(
            "bcoo_reshape: new shape cannot mix sparse and dense dimensions; "
            f"got shape={mat.shape} new_shape={new_sizes} with n_dense={mat.n_dense}"
        )
    i1 = int(np.searchsorted(cum, batch_size, side="right"))
    i2 = int(np.searchsorted(cum, batch_size * sparse_size, side="right"))
    new_b, new_s, new_d = new_sizes[:i1], new_sizes[i1:i2], new_sizes[i2:]
    data = data.reshape(new_b + (mat.nse,) + new_d)
    indices = indices.reshape(new_b + (mat.nse, ns))
    if not new_s:
        indices = jnp.zeros(new_b + (mat.nse, 0), indices.dtype)
    elif ns:
        fill = jnp.array(sparse_shape, indices.dtype)
        oob = (indices >= fill).any(-1, keepdims=True)
        flat = jnp.zeros(indices.shape[:-1], indices.dtype)
        for i, s in enumerate(sparse_shape):
            flat = flat * s + jnp.clip(indices[..., i], 0, s - 1)
        cols = []
        for s in reversed(new_s):
            cols.append(flat % s)
            flat = flat // s
        indices = jnp.stack(cols[::-1], -1)
        indices = jnp.where(oob, jnp.array(new_s, indices.dtype), indices)
    else:
        indices = jnp.zeros(new_b + (mat.nse, len(new_s)), indices.dtype)
    return BCOO((data, indices), shape=new_sizes)


def bcoo_broadcast_in_dim(
    mat: BCOO, *, shape: Shape, broadcast_dimensions: Sequence[int], sharding: Any = None
) -> BCOO:
    """``lax.broadcast_in_dim`` for BCOO; new leading axes become batch axes."""
    del sharding
    shape = tuple(operator.index(s) for s in shape)
    bdims = tuple(operator.index(d) for d in broadcast_dimensions)
    if len(mat.shape) != len(bdims):
        raise ValueError(f"spinfo.shape={mat.shape} and broadcast_dimensions={bdims} must have the same length")
    fjax.eval_shape(lambda x: lax.broadcast_in_dim(x, shape, bdims), fjax.ShapeDtypeStruct(mat.shape, mat.dtype))
    nb, ns, nd, nse = _validate_bcoo(mat.data, mat.indices, mat.shape)
    batch_dims, sparse_dims, dense_dims = bdims[:nb], bdims[nb : nb + ns], bdims[nb + ns :]
    if max(batch_dims, default=0) > min(sparse_dims, default=len(shape)):
        raise ValueError("Cannot mix batch and sparse dimensions during broadcast_in_dim")
    if max(sparse_dims, default=0) > min(dense_dims, default=len(shape)):
        raise ValueError("Cannot mix sparse and dense dimensions during broadcast_in_dim")
    new_nb = min(bdims[nb:], default=len(shape))
    new_nd = nd and len(shape) - min(bdims[len(bdims) - nd :])
    new_ns = len(shape) - new_nb - new_nd
    if math.prod(mat.shape[nb : nb + ns]) != math.prod(shape[new_nb : new_nb + new_ns]):
        raise NotImplementedError("Adding sparse dimensions with lengths != 1")
    data, indices = mat.data, mat.indices
    if (new_nb, new_nd) != (nb, nd) or tuple(shape[:new_nb]) != tuple(mat.shape[:nb]) or nd:
        data = lax.broadcast_in_dim(
            data,
            (*shape[:new_nb], nse, *shape[new_nb + new_ns :]),
            (*batch_dims, new_nb, *(b + 1 - new_ns for b in dense_dims)),
        )
        indices = lax.broadcast_in_dim(indices, (*shape[:new_nb], nse, ns), (*batch_dims, new_nb, new_nb + 1))
    if new_ns != ns:
        cols = np.array([d - new_nb for d in sparse_dims], int)
        new = jnp.zeros(tuple(indices.shape[:-1]) + (new_ns,), indices.dtype)
        if ns:
            new = new.at[..., cols].set(indices)
            # padding stays out of range in every new size-1 column
            oob = (indices >= jnp.array(mat.shape[nb : nb + ns], indices.dtype)).any(-1, keepdims=True)
            new = jnp.where(oob, jnp.array(shape[new_nb : new_nb + new_ns], indices.dtype), new)
        indices = new
    return BCOO((data, indices), shape=shape)


def bcoo_concatenate(operands: Sequence[BCOO], *, dimension: int) -> BCOO:
    """``lax.concatenate`` for BCOO arrays along a batch or sparse dimension."""
    dimension = operator.index(dimension)
    operands = list(operands)
    if not all(isinstance(op, BCOO) for op in operands):
        raise ValueError(f"bcoo_concatenate: expected operands to be a sequence of BCOO arrays. Got {operands}")
    out = fjax.eval_shape(
        lambda *xs: lax.concatenate(xs, dimension), *(fjax.ShapeDtypeStruct(op.shape, op.dtype) for op in operands)
    )
    if len({op.n_dense for op in operands}) > 1:
        raise ValueError("bcoo_concatenate requires inputs to have matching nse dimensions.")
    n_batches = {op.n_batch for op in operands}
    if len(n_batches) != 1:
        nb = min(n_batches)
        operands = [bcoo_update_layout(op, n_batch=nb) for op in operands]
    nb, ns = operands[0].n_batch, operands[0].n_sparse
    dtype = jnp.result_type(*(op.data for op in operands))
    if dimension < nb:
        nse = max(op.nse for op in operands)
        bufs = [
            _broadcast_batch(op.data, op.indices, op.shape, nb) for op in (_bcoo_set_nse(op, nse) for op in operands)
        ]
        data = jnp.concatenate([d.astype(dtype) for d, _ in bufs], axis=dimension)
        idx_dtype = jnp.result_type(*(i for _, i in bufs))
        indices = jnp.concatenate([i.astype(idx_dtype) for _, i in bufs], axis=dimension)
    elif dimension < nb + ns:
        col = dimension - nb
        total = out.shape[dimension]
        bufs = [_broadcast_batch(op.data, op.indices, op.shape, nb) for op in operands]
        idx_dtype = jnp.result_type(*(i for _, i in bufs))
        parts, offset = [], 0
        for op, (_, ind) in zip(operands, bufs):
            ind = ind.astype(idx_dtype)
            fill = jnp.array(op.shape[nb : nb + ns], idx_dtype)
            oob = (ind >= fill).any(-1, keepdims=True)
            shifted = ind.at[..., col].add(offset)
            out_fill = jnp.array(
                tuple(total if i == col else s for i, s in enumerate(op.shape[nb : nb + ns])), idx_dtype
            )
            parts.append(jnp.where(oob, out_fill, shifted))
            offset += op.shape[dimension]
        data = jnp.concatenate([d.astype(dtype) for d, _ in bufs], axis=nb)
        indices = jnp.concatenate(parts, axis=nb)
    else:
        raise NotImplementedError("Concatenation along dense dimensions.")
    return BCOO((data, indices), shape=tuple(out.shape))


def bcoo_squeeze(arr: BCOO, *, dimensions: Sequence[int]) -> BCOO:
    """``lax.squeeze`` for BCOO."""
    dimensions = tuple(_canon_axis(d, arr.ndim, "bcoo_squeeze") for d in dimensions)
    if any(arr.shape[d] != 1 for d in dimensions):
        raise ValueError(
            "cannot select an axis to squeeze out which has size not equal to one, "
            f"got shape={arr.shape} and {dimensions=}"
        )
    nb, ns = arr.n_batch, arr.n_sparse
    batch_dims = tuple(d for d in dimensions if d < nb)
    keep = np.array([i for i in range(ns) if i + nb not in dimensions], int)
    dense_dims = tuple(d - ns + 1 for d in dimensions if d >= nb + ns)
    data = lax.squeeze(arr.data, batch_dims + dense_dims)
    indices = arr.indices[..., keep]
    sq = [i for i in range(ns) if i + nb in dimensions]
    if sq:  # an entry that was padding only in a squeezed column stays padding
        oob = (arr.indices[..., np.array(sq, int)] >= 1).any(-1, keepdims=True)
        fill = jnp.array([arr.shape[nb + i] for i in keep], indices.dtype)
        indices = jnp.where(oob, fill, indices)
    indices = lax.squeeze(indices, batch_dims)
    out_shape = tuple(s for i, s in enumerate(arr.shape) if i not in dimensions)
    return BCOO((data, indices), shape=out_shape, indices_sorted=arr.indices_sorted, unique_indices=arr.unique_indices)


def bcoo_rev(operand: BCOO, dimensions: Sequence[int]) -> BCOO:
    """``lax.rev`` for BCOO."""
    dimensions = [_canon_axis(d, operand.ndim, "bcoo_rev") for d in dimensions]
    nb, ns = operand.n_batch, operand.n_sparse
    data, indices = _broadcast_batch(operand.data, operand.indices, operand.shape, nb)
    bdims = [d for d in dimensions if d < nb]
    sdims = [d - nb for d in dimensions if nb <= d < nb + ns]
    ddims = [d - ns + 1 for d in dimensions if d >= nb + ns]
    if bdims:
        indices = lax.rev(indices, bdims)
    if bdims or ddims:
        data = lax.rev(data, bdims + ddims)
    if sdims:
        fill = jnp.array(operand.shape[nb : nb + ns], indices.dtype)
        oob = (indices >= fill).any(-1, keepdims=True)
        flip = np.zeros(ns, bool)
        flip[sdims] = True
        flipped = jnp.where(jnp.asarray(flip), fill - 1 - indices, indices)
        indices = jnp.where(oob, fill, flipped)
    return BCOO((data, indices), shape=operand.shape)


def _slice_sparse(
    mat: BCOO, data: Any, indices: Any, starts: Any, sizes: Sequence[int], strides: Sequence[int], new_shape: Shape
) -> BCOO:
    """Restrict the sparse part to a window: entries outside it become padding."""
    nb, ns = mat.n_batch, mat.n_sparse
    if ns:
        starts = jnp.asarray(starts).astype(indices.dtype)
        st = jnp.array(strides, indices.dtype)
        sz = jnp.array(sizes, indices.dtype)
        fill = jnp.array(mat.shape[nb : nb + ns], indices.dtype)
        rel = indices - starts
        keep = ((indices < fill) & (rel >= 0) & (rel < sz * st) & (rel % st == 0)).all(-1, keepdims=True)
        indices = jnp.where(keep, rel // st, sz)
        keep_d = keep[..., 0].reshape(tuple(keep.shape[:-1]) + (1,) * mat.n_dense)
        data = jnp.where(keep_d, data, jnp.zeros((), data.dtype))
        new_nse = math.prod(sizes)
        if mat.nse > new_nse:
            sparse_shape = tuple(int(s) for s in sizes)
            f = nfold_vmap(lambda d, i: _sum_duplicates_unbatched(d, i, sparse_shape, new_nse), nb)
            data, indices = f(data, indices)
    return BCOO((data, indices), shape=new_shape)


def bcoo_slice(
    mat: BCOO, *, start_indices: Sequence[int], limit_indices: Sequence[int], strides: Sequence[int] | None = None
) -> BCOO:
    """``lax.slice`` for BCOO."""
    if not isinstance(mat, BCOO):
        raise TypeError(f"bcoo_slice: input should be BCOO array, got type(mat)={type(mat)}")
    start = [operator.index(i) for i in start_indices]
    limit = [operator.index(i) for i in limit_indices]
    strides = [1] * mat.ndim if strides is None else [operator.index(i) for i in strides]
    if not len(start) == len(limit) == mat.ndim:
        raise ValueError(f"bcoo_slice: indices must have size mat.ndim={mat.ndim}")
    if len(strides) != mat.ndim:
        raise ValueError(f"len(strides) = {len(strides)}; expected {mat.ndim}")
    if any(s <= 0 for s in strides):
        raise ValueError(f"strides must be a sequence of positive integers; got {strides}")
    if not all(0 <= a <= b <= n for a, b, n in zip(start, limit, mat.shape)):
        raise ValueError(
            f"bcoo_slice: invalid indices. Got start_indices={start}, limit_indices={limit} and shape={mat.shape}"
        )
    nb, ns = mat.n_batch, mat.n_sparse
    data, indices = _broadcast_batch(mat.data, mat.indices, mat.shape, nb)
    bsl = tuple(slice(a, b, s) for a, b, s in zip(start[:nb], limit[:nb], strides[:nb]))
    dsl = tuple(slice(a, b, s) for a, b, s in zip(start[nb + ns :], limit[nb + ns :], strides[nb + ns :]))
    data = data[bsl + (slice(None),) + dsl]
    indices = indices[bsl]
    new_shape = tuple((b - a + s - 1) // s for a, b, s in zip(start, limit, strides))
    return _slice_sparse(
        mat, data, indices, start[nb : nb + ns], new_shape[nb : nb + ns], strides[nb : nb + ns], new_shape
    )


def bcoo_dynamic_slice(mat: BCOO, start_indices: Sequence[Any], slice_sizes: Sequence[int]) -> BCOO:
    """``lax.dynamic_slice`` for BCOO; start indices may be traced, sizes are static."""
    if not isinstance(mat, BCOO):
        raise TypeError(f"bcoo_dynamic_slice: input should be BCOO array, got type(mat)={type(mat)}")
    sizes = tuple(operator.index(i) for i in slice_sizes)
    fjax.eval_shape(
        lambda x, *s: lax.dynamic_slice(x, s, sizes),
        fjax.ShapeDtypeStruct(mat.shape, mat.dtype),
        *(jnp.asarray(i) for i in start_indices),
    )
    nb, ns = mat.n_batch, mat.n_sparse
    starts = [jnp.asarray(i).astype(np.int32) for i in start_indices]
    # negative starts count from the end, then clamp so the window fits (as lax.dynamic_slice)
    starts = [jnp.clip(jnp.where(s < 0, s + n, s), 0, n - z) for s, n, z in zip(starts, mat.shape, sizes)]
    data, indices = _broadcast_batch(mat.data, mat.indices, mat.shape, nb)
    zero = jnp.zeros((), np.int32)
    data = lax.dynamic_slice(data, (*starts[:nb], zero, *starts[nb + ns :]), (*sizes[:nb], mat.nse, *sizes[nb + ns :]))
    indices = lax.dynamic_slice(indices, (*starts[:nb], zero, zero), (*sizes[:nb], mat.nse, ns))
    sp_starts = jnp.stack(starts[nb : nb + ns]) if ns else jnp.zeros(0, np.int32)
    return _slice_sparse(mat, data, indices, sp_starts, sizes[nb : nb + ns], (1,) * ns, sizes)


def bcoo_gather(
    operand: BCOO,
    start_indices: Any,
    dimension_numbers: Any,
    slice_sizes: Shape,
    *,
    unique_indices: bool = False,
    indices_are_sorted: bool = False,
    mode: Any = None,
    fill_value: Any = None,
) -> BCOO:
    """``lax.gather`` for BCOO (in-bounds mode): one dynamic slice per index, stacked by vmap."""
    del unique_indices, indices_are_sorted, fill_value
    mode_name = "promise_in_bounds" if mode is None else str(getattr(mode, "name", mode)).lower()
    if mode_name not in ("promise_in_bounds", "clip", "gatherscattermode.promise_in_bounds"):
        raise NotImplementedError(f"bcoo_gather: mode={mode!r} not yet supported.")
    dn = dimension_numbers
    if tuple(getattr(dn, "operand_batching_dims", ())):
        raise NotImplementedError("bcoo_gather with operand_batching_dims")
    start_indices = jnp.asarray(start_indices)
    slice_sizes = tuple(operator.index(s) for s in slice_sizes)
    out = fjax.eval_shape(
        lambda x, i: lax.gather(x, i, dn, slice_sizes, mode=mode),
        fjax.ShapeDtypeStruct(operand.shape, operand.dtype),
        fjax.ShapeDtypeStruct(start_indices.shape, start_indices.dtype),
    )
    lead = tuple(start_indices.shape[:-1])
    flat = start_indices.reshape((math.prod(lead), start_indices.shape[-1]))
    collapsed = tuple(dn.collapsed_slice_dims)

    def one(idx: Any) -> BCOO:
        starts: list[Any] = [0] * operand.ndim
        for k, d in enumerate(dn.start_index_map):
            starts[d] = idx[k]
        sl = bcoo_dynamic_slice(operand, starts, slice_sizes)
        return bcoo_squeeze(sl, dimensions=collapsed)

    res = fjax.vmap(one)(flat)
    res = bcoo_reshape(res, new_sizes=lead + tuple(res.shape[1:]))
    # gather places the slice (offset) dims at offset_dims; the stacked result has them last
    n_out = len(out.shape)
    batch_pos = [d for d in range(n_out) if d not in dn.offset_dims]
    order = [*batch_pos, *dn.offset_dims]  # result axis i goes to output position order[i]
    perm = [order.index(p) for p in range(n_out)]
    if perm != list(range(n_out)):
        res = bcoo_update_layout(res, n_batch=0, n_dense=0, on_inefficient=None)
        res = bcoo_transpose(res, permutation=perm)
    return res
