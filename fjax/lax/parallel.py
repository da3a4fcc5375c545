"""Collectives over named axes, following ``jax.lax``: ``psum``, ``pmean``, ``pmax``, ``pmin``,
``all_gather``, ``psum_scatter``, ``all_to_all``, ``ppermute``, ``pshuffle``, ``pswapaxes``,
``axis_index``, ``axis_size``.

A named axis is bound by ``vmap(axis_name=)``, ``pmap`` or ``shard_map``; all three batch along it
with a ``BatchTrace`` whose ``AxisData`` carries the name. A collective names its axes in its
params, and ``Primitive.axis_main`` makes the trace that owns the (innermost) named axis process
it even when no argument is traced by it (``psum(1.0, 'i')``). There the *collective rule* runs:
communication along the batched dimension becomes an ordinary array operation (``psum`` is a
``reduce_sum`` over the batch dim, ``all_gather`` a ``moveaxis``...), and the result is usually
unmapped. A trace that does not own the name batches the collective per example (the ordinary
batching rule). When the axis spans processes (multi-process ``pmap``), the collective rule
finishes with an MPI primitive from ``fjax.lax.parallel_mpi``.

Differentiation: each collective is linear (``pmax``/``pmin`` are piecewise linear) and its
transpose is the adjoint collective under per-device cotangents (``psum`` -> ``psum``,
``all_gather`` -> ``psum_scatter``, ``all_to_all`` -> ``all_to_all`` with the axes swapped,
``ppermute`` -> the inverse permutation), as JAX's ``vmap``/``pmap`` semantics have it (JAX's
``psum_p``). Inside ``shard_map(check_vma=True)`` JAX instead transposes ``psum`` to ``pvary``
and the implicit ``pvary`` of a replicated value to ``psum``: ``fjax.vjp`` there differentiates
the whole-mesh function (``fjax._shard_map_vjp``), which gives those numbers.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core, dtypes
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.interpreters.ad import Zero

__all__ = [
    "all_gather",
    "all_to_all",
    "axis_index",
    "axis_size",
    "pmax",
    "pmean",
    "pmin",
    "ppermute",
    "pshuffle",
    "psum",
    "psum_scatter",
    "pswapaxes",
    "with_sharding_constraint",
]


def _lax():  # noqa: ANN202
    # fjax.lax.lax is imported lazily: this module is imported by fjax.lax's __init__
    from fjax.lax import lax as _l  # noqa: PLC0415

    return _l


def _names(axis_name: Any) -> tuple:
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for n in names:
        if isinstance(n, (int, np.integer)) and not isinstance(n, bool):
            raise NotImplementedError(
                f"collectives over positional (integer) axes ({n}) are not supported by fjax; reduce with "
                "fjax.numpy or lax.reduce_* instead"
            )
    return names


def _split_positional(axis_name: Any) -> tuple[tuple, tuple]:
    """``(named axes, positional axes)`` of a reduction's ``axis_name``: integers name axes of the
    operand itself (``psum(x, 0)`` sums over its first axis), as JAX's ``psum``/``pmax``/``pmin``."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    pos = tuple(int(n) for n in names if isinstance(n, (int, np.integer)) and not isinstance(n, bool))
    named = tuple(n for n in names if not (isinstance(n, (int, np.integer)) and not isinstance(n, bool)))
    return named, pos


def _pos_reduce(x: Any, pos: tuple, kind: str, fn: str) -> Any:
    """Reduce each leaf of ``x`` over its positional axes ``pos``."""
    if not pos:
        return x
    L = _lax()

    def one(v: Any) -> Any:
        v = v if isinstance(v, (core.Array, core.Tracer)) else core.to_array(v, fn)
        nd = core.get_aval(v).ndim
        axes = tuple(sorted({_norm_axis(fn, a, nd) for a in pos}))
        return {"sum": L.reduce_sum, "max": L.reduce_max, "min": L.reduce_min}[kind](v, axes)

    return tu.tree_map(one, x)


def _frame(name: Any, found: str | None = None) -> batching.AxisData:
    """The frame of the bound axis ``name``; JAX 0.10.2's NameError when none binds it: plain
    where JAX looks the size up (``all_gather``, an eager ``psum``), "Found an unbound axis name
    ... call {found} under `jax.shard_map`" where its bind checks the names (``found`` names the
    collective JAX's message names)."""
    fr = batching.axis_frame(name)
    if fr is None:
        if found is None:
            raise NameError(f"unbound axis name: {name}")
        raise NameError(f"Found an unbound axis name: {name}. To fix this, please call {found} under `jax.shard_map`.")
    return fr[1]


def _axis_main(params: dict, found: str | None = None) -> core.MainTrace:
    best = None
    for name in params["axes"]:
        fr = batching.axis_frame(name)
        if fr is None:
            _frame(name, found)  # raises NameError
        if best is None or fr[0].level > best.level:
            best = fr[0]
    return best


def _size_of(names: Sequence, found: str | None = None) -> int:
    return math.prod(_frame(n, found).global_size for n in names)


def _check_groups(fn: str, groups: Any) -> None:
    if groups is not None:
        raise NotImplementedError(f"{fn}: axis_index_groups is not supported by fjax")


def _groups(fn: str, axis_name: Any, groups: Any, same_size: bool = False) -> tuple[Any, tuple]:
    """``(name, groups as tuples)`` for a collective over ``axis_index_groups`` of one named axis;
    the groups must cover the axis's indices exactly once (as JAX checks)."""
    named, pos = _split_positional(axis_name)
    if pos:
        raise ValueError("axis_index_groups only supported for sums over just named axes")
    if len(named) != 1:
        raise NotImplementedError(f"{fn}: axis_index_groups over several axis names is not supported by fjax")
    groups = tuple(tuple(int(i) for i in g) for g in groups)
    n = _size_of(named)
    if sorted(i for g in groups for i in g) != list(range(n)):
        raise ValueError("axis_index_groups must cover all indices exactly once")
    if same_size and len({len(g) for g in groups}) != 1:
        raise ValueError(f"{fn}: all axis_index_groups must be the same size, got {[len(g) for g in groups]}")
    return named[0], groups


def _grouped_reduce(x: Any, name: Any, groups: tuple, kind: str, fn: str) -> Any:
    """Each member reduces over the members of its group: every member gathers the axis and
    masks out the other groups (a linear map of ``x`` for sums: its transpose is that of
    ``all_gather`` and the mask)."""
    from fjax.lax import slicing  # noqa: PLC0415

    L = _lax()
    n = _frame(name).global_size
    mask = np.zeros((n, n), np.bool_)
    for g in groups:
        for i in g:
            mask[i, list(g)] = True

    def one(v: Any) -> Any:
        v = v if isinstance(v, (core.Array, core.Tracer)) else core.to_array(v, fn)
        dt = core.get_aval(v).dtype
        if dt == np.bool_ and kind == "sum":
            v = L.convert_element_type(v, np.int32)
            dt = np.dtype(np.int32)
        g = all_gather(v, name)  # (n, ...)
        row = slicing.dynamic_index_in_dim(core.to_array(mask, fn), axis_index(name), 0, keepdims=False)
        keep = L.broadcast_in_dim(row, core.get_aval(g).shape, (0,))
        if kind == "sum":
            return L.reduce_sum(L.select(keep, g, L.full_like(g, 0)), (0,))
        # the masked-out members lose to every element: -inf/+inf, or the dtype's finite extremes
        # where it has no infinity (float8_e4m3fn, ...); also bfloat16, int4 and the rest
        fill = dtypes._extremes(dt)[0 if kind == "max" else 1]
        red = L.reduce_max if kind == "max" else L.reduce_min
        return red(L.select(keep, g, L.full_like(g, fill)), (0,))

    return tu.tree_map(one, x)


# the collective JAX names in its unbound-axis message when the primitive is bound (pmax and
# pmin included: JAX 0.10.2 says psum for them); the others name none
_FOUND = {"psum": "psum", "pmax": "psum", "pmin": "psum", "axis_index": "axis_index", "ppermute": "ppermute"}


def _collective(name: str) -> core.Primitive:
    p = core.Primitive(name)
    found = _FOUND.get(name)
    p.axis_main = lambda params: _axis_main(params, found)
    batching.axis_names_of[p] = lambda params: params["axes"]
    return p


def _rest(axes: tuple, name: Any) -> tuple:
    return tuple(a for a in axes if a != name)


def _mpi():  # noqa: ANN202
    from fjax.lax import parallel_mpi  # noqa: PLC0415

    return parallel_mpi


def _moveaxis(x: Any, src: int, dst: int) -> Any:
    return batching.moveaxis(x, src, dst)


def _merge(x: Any, axis: int) -> Any:
    """Merge axes ``axis`` and ``axis + 1`` of ``x`` (row-major)."""
    s = list(core.get_aval(x).shape)
    s[axis : axis + 2] = [s[axis] * s[axis + 1]]
    return _lax().reshape(x, tuple(s))


def _split(x: Any, axis: int, n: int) -> Any:
    """Split axis ``axis`` of ``x`` into ``(n, size // n)``."""
    s = list(core.get_aval(x).shape)
    if s[axis] % n:
        raise ValueError(f"axis {axis} of size {s[axis]} is not divisible by the axis size {n}")
    s[axis : axis + 1] = [n, s[axis] // n]
    return _lax().reshape(x, tuple(s))


def _squeeze(x: Any, d: int) -> Any:
    s = list(core.get_aval(x).shape)
    del s[d]
    return _lax().reshape(x, tuple(s))


def _front(x: Any, d: int | None, size: int) -> Any:
    return batching.bdim_at_front(x, d, size)


def _reshape_hook(x: Any, shape: tuple) -> Any:
    return _lax().reshape(x, shape)


batching._reshape = _reshape_hook

# ---------------------------------------------------------------------------------------------
# psum / pmax / pmin

psum_p = _collective("psum")
pmax_p = _collective("pmax")
pmin_p = _collective("pmin")


def _reduce_abstract(x: core.ShapedArray, *, axes: tuple) -> core.ShapedArray:
    return core.ShapedArray(x.shape, x.dtype, x.weak_type)


def _unbound_impl(name: str):  # noqa: ANN202
    def impl(*args: Any, axes: tuple, **_: Any) -> Any:
        # reached only if the axis frame vanished between bind and evaluation
        raise NameError(f"{name}: unbound axis name(s) {axes}")

    return impl


for _p in (psum_p, pmax_p, pmin_p):
    _p.def_abstract_eval(_reduce_abstract)
    _p.def_impl(_unbound_impl(_p.name))


def _reduce_collective(prim: core.Primitive, kind: str):  # noqa: ANN202
    def rule(data: batching.AxisData, vals: list, dims: list, *, axes: tuple) -> tuple:
        (x,), (d,) = vals, dims
        L = _lax()
        if d is None:
            out = L.mul(x, L.convert_element_type(data.size, core.get_aval(x).dtype)) if kind == "sum" else x
        elif data.size == 1:  # one local member (a process per device): a view, not a reduction
            out = _squeeze(x, d)
        elif kind == "sum":
            out = L.reduce_sum(x, (d,))
        elif kind == "max":
            out = L.reduce_max(x, (d,))
        else:
            out = L.reduce_min(x, (d,))
        if data.nprocs > 1:
            out = _mpi().allreduce(out, kind)
        rest = _rest(axes, data.name)
        if rest:
            out = prim.bind(out, axes=rest)
        return out, None

    return rule


batching.collective_rules[psum_p] = _reduce_collective(psum_p, "sum")
batching.collective_rules[pmax_p] = _reduce_collective(pmax_p, "max")
batching.collective_rules[pmin_p] = _reduce_collective(pmin_p, "min")


def _elementwise_batch(prim: core.Primitive):  # noqa: ANN202
    def rule(vals: list, dims: list, **params: Any) -> tuple:
        (x,), (d,) = vals, dims
        return prim.bind(x, **params), d

    return rule


for _p in (psum_p, pmax_p, pmin_p):
    batching.primitive_batchers[_p] = _elementwise_batch(_p)


def _psum_transpose(ct: Any, x: Any, *, axes: tuple) -> list:
    if type(ct) is Zero:
        return [None]
    return [psum_p.bind(ct, axes=axes)]


ad.deflinear2(psum_p, _psum_transpose)


def _pminmax_jvp(prim: core.Primitive):  # noqa: ANN202
    def jvp(primals: list, tangents: list, *, axes: tuple) -> tuple:
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axes=axes)
        if type(t) is Zero:
            return out, Zero(ad.tangent_aval(core.get_aval(out)))
        L = _lax()
        # the tangent of the selected entries, averaged over ties (as reduce_max's rule)
        hit = L.convert_element_type(L.eq(x, out), core.get_aval(t).dtype)
        num = psum_p.bind(L.mul(hit, t), axes=axes)
        return out, L.div(num, psum_p.bind(hit, axes=axes))

    return jvp


ad.primitive_jvps[pmax_p] = _pminmax_jvp(pmax_p)
ad.primitive_jvps[pmin_p] = _pminmax_jvp(pmin_p)


def _tree_bind(prim: core.Primitive, x: Any, axes: tuple, fn: str) -> Any:
    def one(leaf: Any) -> Any:
        if not isinstance(leaf, core.Tracer):
            leaf = core.to_array(leaf, fn) if not isinstance(leaf, core.Array) else leaf
        return prim.bind(leaf, axes=axes)

    return tu.tree_map(one, x)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """Sum ``x`` (a pytree) over the named axis (or tuple of axes) ``axis_name``.

    Concrete inputs (Python/numpy scalars and arrays that no transform traces) are summed
    statically, as in JAX: ``psum(1, 'i')`` is the size of axis ``i``.
    """
    if axis_index_groups is not None:
        name, groups = _groups("psum", axis_name, axis_index_groups)
        return _grouped_reduce(x, name, groups, "sum", "psum")
    axes, pos = _split_positional(axis_name)
    x = _pos_reduce(x, pos, "sum", "psum")
    if not axes:
        return x
    leaves = tu.tree_leaves(x)
    if leaves and not any(isinstance(v, core.Tracer) for v in leaves) and all(_frame(a).nprocs == 1 for a in axes):
        n = _size_of(axes)
        return tu.tree_map(lambda v: _static_mul(v, n), x)
    from fjax.config import config  # noqa: PLC0415

    bucket_mb = float(config.fjax_allreduce_bucket_mb)
    if bucket_mb > 0 and len(leaves) > 1 and any(_frame(a).nprocs > 1 for a in axes):
        flat, tree = tu.tree_flatten(x)
        return tu.tree_unflatten(tree, _bucketed_psum(flat, axes, int(bucket_mb * 2**20)))
    return _tree_bind(psum_p, x, axes, "psum")


def _bucketed_psum(leaves: list, axes: tuple, bucket_bytes: int) -> list:
    """``psum`` of many leaves across processes in few MPI calls: leaves of one dtype are raveled
    and concatenated into buckets of about ``bucket_bytes`` (as PyTorch DDP and Horovod's tensor
    fusion do), each bucket reduced once, and the results split back."""
    L = _lax()
    from fjax.lax import slicing  # noqa: PLC0415

    leaves = [v if isinstance(v, (core.Array, core.Tracer)) else core.to_array(v, "psum") for v in leaves]
    out: list = [None] * len(leaves)
    groups: dict = {}
    for i, v in enumerate(leaves):
        groups.setdefault(core.get_aval(v).dtype, []).append(i)
    for dt, idx in groups.items():
        bucket: list = []
        nbytes = 0
        for k, i in enumerate(idx):
            bucket.append(i)
            nbytes += core.get_aval(leaves[i]).size * dt.itemsize
            if nbytes >= bucket_bytes or k == len(idx) - 1:
                shapes = [core.get_aval(leaves[j]).shape for j in bucket]
                sizes = [int(np.prod(sh, dtype=np.int64)) for sh in shapes]
                parts = [L.reshape(leaves[j], (n,)) for j, n in zip(bucket, sizes)]
                red = psum_p.bind(L.concatenate(parts, 0) if len(parts) > 1 else parts[0], axes=axes)
                off = 0
                for j, n, sh in zip(bucket, sizes, shapes):
                    out[j] = L.reshape(slicing.slice_in_dim(red, off, off + n, axis=0), sh)
                    off += n
                bucket, nbytes = [], 0
    return out


def _static_mul(v: Any, n: int) -> Any:
    if isinstance(v, (int, float, complex, np.number, np.bool_)) and not isinstance(v, np.ndarray):
        return v * n
    if isinstance(v, np.ndarray):
        # numpy stays numpy, as JAX's constant case (``lax._const(leaf, n) * leaf``): concrete
        # even inside pmap/jit, so Python code may inspect it (chex's pmap variant tests do)
        a = v.astype(np.int32) if v.dtype == np.bool_ else v
        return a * a.dtype.type(n)
    return _lax().mul(v, _lax().convert_element_type(n, core.get_aval(v).dtype))


def pmax(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """Maximum of ``x`` (a pytree) over the named axis (or axes) ``axis_name``."""
    if axis_index_groups is not None:
        name, groups = _groups("pmax", axis_name, axis_index_groups)
        return _grouped_reduce(x, name, groups, "max", "pmax")
    axes, pos = _split_positional(axis_name)
    x = _pos_reduce(x, pos, "max", "pmax")
    return _tree_bind(pmax_p, x, axes, "pmax") if axes else x


def pmin(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """Minimum of ``x`` (a pytree) over the named axis (or axes) ``axis_name``."""
    if axis_index_groups is not None:
        name, groups = _groups("pmin", axis_name, axis_index_groups)
        return _grouped_reduce(x, name, groups, "min", "pmin")
    axes, pos = _split_positional(axis_name)
    x = _pos_reduce(x, pos, "min", "pmin")
    return _tree_bind(pmin_p, x, axes, "pmin") if axes else x


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """Mean of ``x`` (a pytree) over the named axis (or axes) ``axis_name``: ``psum(x) / n``."""
    if axis_index_groups is not None:
        # (JAX divides by the size of the first group: the groups must be the same size)
        name, groups = _groups("pmean", axis_name, axis_index_groups, same_size=True)
        total = _grouped_reduce(x, name, groups, "sum", "pmean")
        return tu.tree_map(lambda v: _mean_div(v, len(groups[0])), total)
    axes, pos = _split_positional(axis_name)
    if axes and not any(isinstance(v, core.Tracer) for v in tu.tree_leaves(x)):
        _size_of(axes)  # eagerly, JAX's psum looks the size up (plain "unbound axis name")
    n = _size_of(axes, "psum")  # traced, its psum binds (JAX's message names psum)
    if pos:  # the mean also runs over the operand's own axes: count their entries
        counts = tu.tree_map(
            lambda v: math.prod(
                core.get_aval(v).shape[_norm_axis("pmean", a, core.get_aval(v).ndim)] for a in set(pos)
            ),
            x,
        )
        leaves_n, _ = tu.tree_flatten(counts)
    total = psum(x, tuple(axes) + pos)
    it = iter(leaves_n) if pos else None

    def div(v: Any) -> Any:
        return _mean_div(v, n * (next(it) if it is not None else 1))

    return tu.tree_map(div, total)


def _mean_div(v: Any, m: int) -> Any:
    """``v / m`` (integer and bool sums become floats, as JAX's ``pmean``)."""
    L = _lax()
    v = v if isinstance(v, (core.Array, core.Tracer)) else core.to_array(v, "pmean")
    dt = core.get_aval(v).dtype
    if _dkind(dt) not in "fc":
        from fjax import dtypes  # noqa: PLC0415

        v = L.convert_element_type(v, dtypes.canonicalize_dtype(np.float64))
        dt = core.get_aval(v).dtype
    return L.div(v, L.convert_element_type(m, dt))


# ---------------------------------------------------------------------------------------------
# all_gather / psum_scatter

all_gather_p = _collective("all_gather")
psum_scatter_p = _collective("reduce_scatter")


def _gather_abstract(x: core.ShapedArray, *, axes: tuple, axis: int, tiled: bool, axis_size: int) -> core.ShapedArray:
    s = list(x.shape)
    if tiled:
        s[axis] *= axis_size
    else:
        s.insert(axis, axis_size)
    return core.ShapedArray(tuple(s), x.dtype, x.weak_type)


def _scatter_abstract(
    x: core.ShapedArray, *, axes: tuple, scatter_dimension: int, tiled: bool, axis_size: int
) -> core.ShapedArray:
    s = list(x.shape)
    sd = scatter_dimension
    if tiled:
        if s[sd] % axis_size:
            raise ValueError(
                f"psum_scatter: the scatter dimension {sd} of shape {x.shape} must be divisible by the axis size "
                f"{axis_size}"
            )
        s[sd] //= axis_size
    else:
        if s[sd] != axis_size:
            raise ValueError(
                f"psum_scatter: the scatter dimension {sd} of shape {x.shape} must equal the axis size {axis_size} "
                "(or pass tiled=True)"
            )
        del s[sd]
    return core.ShapedArray(tuple(s), x.dtype, x.weak_type)


all_gather_p.def_abstract_eval(_gather_abstract)
all_gather_p.def_impl(_unbound_impl("all_gather"))
psum_scatter_p.def_abstract_eval(_scatter_abstract)
psum_scatter_p.def_impl(_unbound_impl("psum_scatter"))


def _gather_rule(
    data: batching.AxisData, vals: list, dims: list, *, axes: tuple, axis: int, tiled: bool, axis_size: int
):  # noqa: ANN202
    (x,), (d,) = vals, dims
    x = _front(x, d, data.size)  # (local n, ...)
    if data.nprocs > 1:
        x = _mpi().allgather(x)  # (global n, ...)
    out = _moveaxis(x, 0, axis)
    if tiled:
        out = _merge(out, axis)
    return out, None


batching.collective_rules[all_gather_p] = _gather_rule


def _scatter_rule(
    data: batching.AxisData, vals: list, dims: list, *, axes: tuple, scatter_dimension: int, tiled: bool, axis_size: int
):  # noqa: ANN202
    (x,), (d,) = vals, dims
    L = _lax()
    sd = scatter_dimension
    if d is None:
        s = L.mul(x, L.convert_element_type(data.size, core.get_aval(x).dtype))
    else:
        s = L.reduce_sum(x, (d,))
    n = data.global_size
    if tiled:
        s = _split(s, sd, n)
    if data.nprocs > 1:  # this process keeps its own members' blocks: one Reduce_scatter
        s = _moveaxis(_mpi().reduce_scatter(_moveaxis(s, sd, 0)), 0, sd)
    return s, sd


batching.collective_rules[psum_scatter_p] = _scatter_rule


def _gather_batch(vals: list, dims: list, *, axis: int, **params: Any) -> tuple:
    (x,), (d,) = vals, dims
    x = _moveaxis(x, d, 0)
    return all_gather_p.bind(x, axis=axis + 1, **params), 0


def _scatter_batch(vals: list, dims: list, *, scatter_dimension: int, **params: Any) -> tuple:
    (x,), (d,) = vals, dims
    x = _moveaxis(x, d, 0)
    return psum_scatter_p.bind(x, scatter_dimension=scatter_dimension + 1, **params), 0


batching.primitive_batchers[all_gather_p] = _gather_batch
batching.primitive_batchers[psum_scatter_p] = _scatter_batch


def _gather_transpose(ct: Any, x: Any, *, axes: tuple, axis: int, tiled: bool, axis_size: int) -> list:
    if type(ct) is Zero:
        return [None]
    return [psum_scatter_p.bind(ct, axes=axes, scatter_dimension=axis, tiled=tiled, axis_size=axis_size)]


def _scatter_transpose(ct: Any, x: Any, *, axes: tuple, scatter_dimension: int, tiled: bool, axis_size: int) -> list:
    if type(ct) is Zero:
        return [None]
    return [all_gather_p.bind(ct, axes=axes, axis=scatter_dimension, tiled=tiled, axis_size=axis_size)]


ad.deflinear2(all_gather_p, _gather_transpose)
ad.deflinear2(psum_scatter_p, _scatter_transpose)


def _norm_axis(fn: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{fn}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


def all_gather(
    x: Any, axis_name: Any, *, axis_index_groups: Any = None, axis: int = 0, tiled: bool = False, to: str = "varying"
) -> Any:
    """Gather ``x`` (a pytree) from every member of the named axis: a new axis ``axis`` of the
    axis size (``tiled=True``: concatenated along ``axis``). A tuple of names gathers over their
    product, the first name major. ``to``: the result's manual-axis type; fjax does not track
    shard_map's varying/invariant types, so only ``'varying'`` (the default) is supported."""
    allowed = {"varying", "reduced", "invarying"}
    if to not in allowed:
        raise ValueError(f"Got unexpected `to` value for `jax.lax.all_gather`. Allowed `to` values are: {allowed}")
    if to != "varying":
        raise NotImplementedError(
            f"lax.all_gather(to={to!r}) (JAX's all_gather_invariant / all_gather_reduced): fjax does not track "
            "shard_map's varying, invariant and reduced value types; use to='varying'"
        )
    if axis_index_groups is not None:
        return _grouped_gather(x, axis_name, axis_index_groups, axis, tiled)
    axes = _names(axis_name)

    def one(leaf: Any) -> Any:
        leaf = leaf if isinstance(leaf, (core.Array, core.Tracer)) else core.to_array(leaf, "all_gather")
        nd = core.get_aval(leaf).ndim
        ax = _norm_axis("all_gather", axis, nd + (0 if tiled else 1))
        g = leaf
        for name in reversed(axes):
            g = all_gather_p.bind(g, axes=(name,), axis=ax, tiled=False, axis_size=_frame(name).global_size)
        for _ in range(len(axes) - 1):
            g = _merge(g, ax)
        if tiled:
            g = _merge(g, ax)
        return g

    return tu.tree_map(one, x)


def _grouped_gather(x: Any, axis_name: Any, groups: Any, axis: int, tiled: bool) -> Any:
    """``all_gather`` within ``axis_index_groups``: each member stacks its group's values in the
    group's order."""
    from fjax import numpy as jnp  # noqa: PLC0415
    from fjax.lax import slicing  # noqa: PLC0415

    name, groups = _groups("all_gather", axis_name, groups, same_size=True)
    n = _frame(name).global_size
    table = np.zeros((n, len(groups[0])), np.int32)
    for g in groups:
        for i in g:
            table[i] = g

    def one(leaf: Any) -> Any:
        leaf = leaf if isinstance(leaf, (core.Array, core.Tracer)) else core.to_array(leaf, "all_gather")
        nd = core.get_aval(leaf).ndim
        ax = _norm_axis("all_gather", axis, nd + (0 if tiled else 1))
        g = all_gather(leaf, name)  # (n, ...)
        rows = slicing.dynamic_index_in_dim(core.to_array(table, "all_gather"), axis_index(name), 0, keepdims=False)
        out = _moveaxis(jnp.take(g, rows, axis=0), 0, ax)
        return _merge(out, ax) if tiled else out

    return tu.tree_map(one, x)


def psum_scatter(
    x: Any, axis_name: Any, *, scatter_dimension: int = 0, axis_index_groups: Any = None, tiled: bool = False
) -> Any:
    """Sum ``x`` over the named axis and give member ``i`` the ``i``-th block along
    ``scatter_dimension`` (that dimension must equal the axis size, or be divisible by it with
    ``tiled=True``)."""
    _check_groups("psum_scatter", axis_index_groups)
    axes = _names(axis_name)
    _size_of(axes)  # an unbound name first, as JAX (before the operand's axes are checked)

    def one(leaf: Any) -> Any:
        leaf = leaf if isinstance(leaf, (core.Array, core.Tracer)) else core.to_array(leaf, "psum_scatter")
        sd = _norm_axis("psum_scatter", scatter_dimension, core.get_aval(leaf).ndim)
        if len(axes) == 1:
            return psum_scatter_p.bind(leaf, axes=axes, scatter_dimension=sd, tiled=tiled, axis_size=_size_of(axes))
        # over several names (the first major): one tiled scatter per name, each keeping the
        # block of its member within the previous one's block
        n = _size_of(axes)
        _scatter_abstract(core.get_aval(leaf), axes=axes, scatter_dimension=sd, tiled=tiled, axis_size=n)
        y = leaf
        for name in axes:
            y = psum_scatter_p.bind(
                y, axes=(name,), scatter_dimension=sd, tiled=True, axis_size=_frame(name).global_size
            )
        return y if tiled else _squeeze(y, sd)

    return tu.tree_map(one, x)


# ---------------------------------------------------------------------------------------------
# all_to_all / pswapaxes

all_to_all_p = _collective("all_to_all")


def _a2a_abstract(
    x: core.ShapedArray, *, axes: tuple, split_axis: int, concat_axis: int, tiled: bool, axis_size: int
) -> core.ShapedArray:
    s = list(x.shape)
    n = axis_size
    if tiled:
        if s[split_axis] % n:
            raise ValueError(
                f"all_to_all: the split axis {split_axis} of shape {x.shape} must be divisible by the axis size {n}"
            )
        s[split_axis] //= n
        s[concat_axis] *= n
    else:
        if s[split_axis] != n:
            raise ValueError(
                f"all_to_all: the split axis {split_axis} of shape {x.shape} must equal the axis size {n} "
                "(or pass tiled=True)"
            )
        del s[split_axis]
        s.insert(concat_axis, n)
    return core.ShapedArray(tuple(s), x.dtype, x.weak_type)


all_to_all_p.def_abstract_eval(_a2a_abstract)
all_to_all_p.def_impl(_unbound_impl("all_to_all"))


def _a2a_rule(
    data: batching.AxisData,
    vals: list,
    dims: list,
    *,
    axes: tuple,
    split_axis: int,
    concat_axis: int,
    tiled: bool,
    axis_size: int,
):  # noqa: ANN202
    (x,), (d,) = vals, dims
    n = data.global_size
    x = _front(x, d, data.size)  # X[j_local, ...per-member...]
    sa = split_axis + 1
    if tiled:
        x = _split(x, sa, n)  # the split axis becomes (n, chunk)
    if data.nprocs > 1:
        # exchange blocks: rank q needs every member's chunks for q's members
        P, Lc = data.nprocs, data.size
        x = _split(x, sa, P)  # (Lsrc, ..., P, Ldst, ...)
        x = _moveaxis(x, sa, 0)  # (P, Lsrc, ..., Ldst, ...)
        x = _mpi().alltoall(x)  # (Psrc, Lsrc, ..., Ldst(mine), ...)
        x = _merge(x, 0)  # (j global, ..., Ldst, ...)
        del Lc
    # now X[j, ...] with the split axis (size of this process's members) at sa: member i of the
    # result stacks X[j][..., i, ...] over j at concat_axis
    y = _moveaxis(x, sa, 0)  # (i, j, ...rest)
    y = _moveaxis(y, 1, concat_axis + 1)
    if tiled:
        y = _merge(y, concat_axis + 1)
    return y, 0


batching.collective_rules[all_to_all_p] = _a2a_rule


def _a2a_batch(vals: list, dims: list, *, split_axis: int, concat_axis: int, **params: Any) -> tuple:
    (x,), (d,) = vals, dims
    x = _moveaxis(x, d, 0)
    return all_to_all_p.bind(x, split_axis=split_axis + 1, concat_axis=concat_axis + 1, **params), 0


batching.primitive_batchers[all_to_all_p] = _a2a_batch


def _a2a_transpose(
    ct: Any, x: Any, *, axes: tuple, split_axis: int, concat_axis: int, tiled: bool, axis_size: int
) -> list:
    if type(ct) is Zero:
        return [None]
    return [
        all_to_all_p.bind(
            ct, axes=axes, split_axis=concat_axis, concat_axis=split_axis, tiled=tiled, axis_size=axis_size
        )
    ]


ad.deflinear2(all_to_all_p, _a2a_transpose)


def all_to_all(
    x: Any,
    axis_name: Any,
    split_axis: int,
    concat_axis: int,
    *,
    axis_index_groups: Any = None,
    tiled: bool = False,
) -> Any:
    """Member ``i`` receives chunk ``i`` (along ``split_axis``) of every member's ``x``, stacked
    along ``concat_axis`` in member order (``tiled=True``: concatenated)."""
    _check_groups("all_to_all", axis_index_groups)
    axes = _names(axis_name)
    _size_of(axes)  # an unbound name first, as JAX (before the operand's axes are checked)

    def one(leaf: Any) -> Any:
        leaf = leaf if isinstance(leaf, (core.Array, core.Tracer)) else core.to_array(leaf, "all_to_all")
        nd = core.get_aval(leaf).ndim
        sa = _norm_axis("all_to_all", split_axis, nd)
        ca = _norm_axis("all_to_all", concat_axis, nd)
        if len(axes) > 1:
            return _a2a_product(leaf, axes, sa, ca, bool(tiled))
        return all_to_all_p.bind(
            leaf, axes=axes, split_axis=sa, concat_axis=ca, tiled=bool(tiled), axis_size=_size_of(axes)
        )

    return tu.tree_map(one, x)


def _a2a_product(x: Any, axes: tuple, sa: int, ca: int, tiled: bool) -> Any:
    """``all_to_all`` over several names (members numbered first name major): every member
    gathers the axis and keeps its own chunk of each member's value (linear: it transposes as
    ``all_gather`` and the indexing do)."""
    from fjax.lax import slicing  # noqa: PLC0415

    n = _size_of(axes)
    _a2a_abstract(core.get_aval(x), axes=axes, split_axis=sa, concat_axis=ca, tiled=tiled, axis_size=n)
    g = all_gather(x, axes)  # (n senders, ...)
    if tiled:
        g = _split(g, sa + 1, n)  # the split axis becomes (n receivers, chunk)
    y = slicing.dynamic_index_in_dim(g, axis_index(axes), sa + 1, keepdims=False)
    y = _moveaxis(y, 0, ca)  # the senders, in member order, at the concat axis
    return _merge(y, ca) if tiled else y


def pswapaxes(x: Any, axis_name: Any, axis: int, *, axis_index_groups: Any = None) -> Any:
    """Swap the named axis with positional axis ``axis`` (``all_to_all`` with
    ``split_axis == concat_axis == axis``)."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


# ---------------------------------------------------------------------------------------------
# ppermute / pshuffle

ppermute_p = _collective("ppermute")
ppermute_p.def_abstract_eval(lambda x, *, axes, perm: core.ShapedArray(x.shape, x.dtype, x.weak_type))
ppermute_p.def_impl(_unbound_impl("ppermute"))


def _ppermute_rule(data: batching.AxisData, vals: list, dims: list, *, axes: tuple, perm: tuple):  # noqa: ANN202
    (x,), (d,) = vals, dims
    L = _lax()
    n = data.global_size
    x = _front(x, d, data.size)
    if data.nprocs > 1:  # only the rows that cross processes move (point to point)
        return _mpi().ppermute(x, perm, data.size), 0
    src_of = {dst: src for src, dst in perm}
    lo, hi = data.rank * data.size, (data.rank + 1) * data.size
    zero = None
    rows = []
    for i in range(lo, hi):
        if i in src_of:
            rows.append(L.slice_in_dim(x, src_of[i], src_of[i] + 1, axis=0))
        else:
            if zero is None:
                zero = L.full_like(L.slice_in_dim(x, 0, 1, axis=0), 0)
            rows.append(zero)
    del n
    return (L.concatenate(rows, 0) if len(rows) > 1 else rows[0]), 0


batching.collective_rules[ppermute_p] = _ppermute_rule
batching.primitive_batchers[ppermute_p] = _elementwise_batch(ppermute_p)


def _ppermute_transpose(ct: Any, x: Any, *, axes: tuple, perm: tuple) -> list:
    if type(ct) is Zero:
        return [None]
    return [ppermute_p.bind(ct, axes=axes, perm=tuple((d, s) for s, d in perm))]


ad.deflinear2(ppermute_p, _ppermute_transpose)


def ppermute(x: Any, axis_name: Any, perm: Sequence[tuple[int, int]]) -> Any:
    """Send ``x`` from member ``src`` to member ``dst`` for each ``(src, dst)`` in ``perm``;
    members that receive nothing get zeros."""
    axes = _names(axis_name)
    n = _size_of(axes, "ppermute")
    perm = tuple((int(s), int(d)) for s, d in perm)
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute sources and destinations must be unique, got perm={perm}")
    for s, d in perm:
        if not (0 <= s < n and 0 <= d < n):
            raise ValueError(f"ppermute: perm entry ({s}, {d}) is out of range for axis size {n}")

    def one(leaf: Any) -> Any:
        leaf = leaf if isinstance(leaf, (core.Array, core.Tracer)) else core.to_array(leaf, "ppermute")
        if len(axes) == 1:
            return ppermute_p.bind(leaf, axes=axes, perm=perm)
        return _ppermute_product(leaf, axes, perm, n)

    return tu.tree_map(one, x)


def _ppermute_product(x: Any, axes: tuple, perm: tuple, n: int) -> Any:
    """``ppermute`` over several names (members numbered with the first name major): every member
    gathers the axis's values and keeps its source's (zeros where nothing is sent to it); linear
    in ``x``, so its transpose is that of ``all_gather`` and the indexing."""
    from fjax.lax import slicing  # noqa: PLC0415

    L = _lax()
    table = np.full(n, -1, np.int32)
    for src, dst in perm:
        table[dst] = src
    g = all_gather(x, axes)  # (n, ...)
    me = axis_index(axes)
    src = slicing.dynamic_index_in_dim(core.to_array(np.maximum(table, 0), "ppermute"), me, 0, keepdims=False)
    got = slicing.dynamic_index_in_dim(g, src, 0, keepdims=False)
    has = slicing.dynamic_index_in_dim(core.to_array(table >= 0, "ppermute"), me, 0, keepdims=False)
    return L.select(L.broadcast_in_dim(has, core.get_aval(got).shape, ()), got, L.full_like(got, 0))


def pshuffle(x: Any, axis_name: Any, perm: Sequence[int]) -> Any:
    """Member ``i`` receives ``x`` from member ``perm[i]`` (``perm`` a permutation of the axis)."""
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(perm)])


# ---------------------------------------------------------------------------------------------
# axis_index / axis_size

axis_index_p = _collective("axis_index")
axis_index_p.def_abstract_eval(lambda *, axes: core.ShapedArray((), np.dtype(np.int32)))
axis_index_p.def_impl(_unbound_impl("axis_index"))


def _axis_index_rule(data: batching.AxisData, vals: list, dims: list, *, axes: tuple):  # noqa: ANN202
    L = _lax()
    idx = L.iota(np.int32, data.size)
    if data.nprocs > 1:
        idx = L.add(idx, L.full_like(idx, data.rank * data.size))
    return idx, 0


batching.collective_rules[axis_index_p] = _axis_index_rule
ad.defzero(axis_index_p)


def axis_index(axis_name: Any) -> Any:
    """The index (int32) of this member along the named axis; for a tuple of names, the index in
    their product (the first name major)."""
    axes = _names(axis_name)
    L = _lax()
    out = None
    for name in axes:
        i = axis_index_p.bind(axes=(name,))
        out = i if out is None else L.add(L.mul(out, np.int32(_frame(name).global_size)), i)
    return out


def axis_size(axis_name: Any) -> int:
    """The size of the named axis (the product of the sizes for a tuple of names), a Python int."""
    return _size_of(_names(axis_name))


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """``x`` (a pytree) unchanged: a sharding constraint only guides where a compiler places data,
    and fjax's arrays hold their global value; the shardings are checked against the shapes."""
    from fjax import sharding as sh  # noqa: PLC0415

    def check(leaf: Any, s: Any) -> Any:
        if isinstance(s, sh.PartitionSpec):
            mesh = sh.current_mesh()
            if mesh is None:
                raise ValueError("with_sharding_constraint: a bare PartitionSpec needs a mesh (use `with mesh:`)")
            s = sh.NamedSharding(mesh, s)
        if isinstance(s, sh.NamedSharding):
            s.check_shape(core.get_aval(leaf).shape)  # divisibility, as JAX checks
        elif s is not None and hasattr(s, "devices_indices_map"):
            s.devices_indices_map(core.get_aval(leaf).shape)
        return leaf

    if (
        isinstance(shardings, (sh.Sharding, sh.PartitionSpec))
        or shardings is None
        or hasattr(shardings, "devices_indices_map")
    ):
        return tu.tree_map(lambda leaf: check(leaf, shardings), x)
    return tu.tree_map(check, x, shardings, is_leaf=lambda v: isinstance(v, sh.PartitionSpec) or v is None)
