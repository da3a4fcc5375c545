"""Products and contractions for fjax.numpy: matmul, dot, vdot, vecdot, inner, outer, tensordot,
einsum, kron and cross, all built on ``lax.dot_general`` with JAX's dtype promotion."""

from __future__ import annotations

import itertools
import math
import operator
from typing import Any, Sequence

import numpy as np

from fjax import _out_sharding, core, dtypes
from fjax.core import Array, Tracer
from fjax.dtypes import kind as _dkind
from fjax.lax import lax
from fjax.numpy import _util

__all__ = ["cross", "dot", "einsum", "inner", "kron", "matmul", "outer", "tensordot", "vdot", "vecdot"]


def _promote(fn: str, *xs: Any, preferred_element_type: Any = None) -> tuple[list, np.dtype]:
    _util.check_arraylike(fn, *xs)
    ys = [_util.to_fjax(x, fn) for x in xs]
    if len(ys) > 1:
        ys = _util.promote_dtypes(fn, *ys)
    dt = ys[0].dtype
    if preferred_element_type is not None:
        pet = getattr(preferred_element_type, "_np_type", preferred_element_type)
        if fn == "vecdot":  # JAX's vecdot does not warn when x64 truncates preferred_element_type
            dt = dtypes.canonicalize_dtype(pet)
        else:  # the name JAX's x64 truncation warning gives (3: the caller of fn, which calls this)
            dt = dtypes.canonicalize_user_dtype(pet, _PET_NAME.get(fn, fn), 3)
    return ys, dt


#: the function JAX names in its x64 truncation warning for preferred_element_type
_PET_NAME = {"vdot": "dot", "inner": "tensordot"}


def _dg(x: Any, y: Any, contract: tuple, batch: tuple, dt: np.dtype, precision: Any = None) -> Any:
    (lc, rc), (lb, rb) = contract, batch
    if x.dtype != y.dtype:
        raise AssertionError("operands must be promoted before dot_general")
    return lax.dot_general(
        x, y, ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))), precision=precision, preferred_element_type=dt
    )


def _check_contract(fn: str, x: Any, y: Any, ax: int, ay: int) -> None:
    if x.shape[ax] != y.shape[ay]:  # JAX's dot_general TypeError
        raise TypeError(
            f"dot_general requires contracting dimensions to have the same shape, got ({x.shape[ax]},) and "
            f"({y.shape[ay]},)."
        )


def _mul(x: Any, y: Any) -> Any:
    """Broadcasting multiply of promoted arrays."""
    shp = _util.broadcast_shapes("multiply", tuple(x.shape), tuple(y.shape))
    return lax.mul(_util.broadcast_to_shape(x, shp), _util.broadcast_to_shape(y, shp))


def matmul(
    a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None, out_sharding: Any = None
) -> Any:
    """Matrix product with numpy's rules: 1-D operands are promoted to matrices (and the added
    dimension removed), leading dimensions broadcast as batch dimensions."""
    if out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.apply(
            matmul(a, b, precision=precision, preferred_element_type=preferred_element_type), out_sharding, "matmul"
        )
    (x, y), dt = _promote("matmul", a, b, preferred_element_type=preferred_element_type)
    for i, z in enumerate((x, y)):
        if z.ndim == 0:
            raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it has ndim 0")
    x_vec, y_vec = x.ndim == 1, y.ndim == 1
    if x_vec:
        x = lax.reshape(x, (1, x.shape[0]))
    if y_vec:
        y = lax.reshape(y, (y.shape[0], 1))
    xb, yb = tuple(x.shape[:-2]), tuple(y.shape[:-2])
    try:
        bshape = _util.broadcast_shapes("matmul", xb, yb)
    except ValueError:  # JAX's message names the operands' types (promoted)
        ta, tb = (str(core.ShapedArray(z.shape, z.dtype)) for z in (core.get_aval(a), core.get_aval(b)))
        raise ValueError(f"Incompatible types for matmul arguments: {ta} and {tb}") from None
    if x.shape[-1] != y.shape[-2]:  # JAX's dot_general TypeError
        raise TypeError(
            f"dot_general requires contracting dimensions to have the same shape, got ({x.shape[-1]},) and "
            f"({y.shape[-2]},)."
        )
    nb = len(bshape)
    if not yb:
        # (..., n, k) @ (k, m): contract directly, the batch dims are free dims of x
        out = _dg(x, y, ((x.ndim - 1,), (0,)), ((), ()), dt, precision)
    elif not xb:
        # (n, k) @ (..., k, m): result (n, ..., m) -> move n behind the batch dims
        out = _dg(x, y, ((1,), (y.ndim - 2,)), ((), ()), dt, precision)
        perm = list(range(1, 1 + len(yb))) + [0, out.ndim - 1]
        out = lax.transpose(out, perm)
    else:
        x = _util.broadcast_to_shape(x, bshape + tuple(x.shape[-2:]))
        y = _util.broadcast_to_shape(y, bshape + tuple(y.shape[-2:]))
        bd = tuple(range(nb))
        out = _dg(x, y, ((nb + 1,), (nb,)), (bd, bd), dt, precision)
    if x_vec and y_vec:
        return lax.reshape(out, tuple(out.shape[:-2]))
    if x_vec:
        return lax.squeeze(out, (out.ndim - 2,))
    if y_vec:
        return lax.squeeze(out, (out.ndim - 1,))
    return out


def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """numpy.dot: scalars multiply; otherwise contract the last axis of ``a`` with the last
    (for 1-D ``b``) or second-to-last axis of ``b``."""
    if out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.apply(
            dot(a, b, precision=precision, preferred_element_type=preferred_element_type), out_sharding, "dot"
        )
    (x, y), dt = _promote("dot", a, b, preferred_element_type=preferred_element_type)
    if x.ndim == 0 or y.ndim == 0:
        if x.dtype != dt:
            x, y = lax.convert_element_type(x, dt), lax.convert_element_type(y, dt)
        return _mul(x, y)
    ax = x.ndim - 1
    ay = 0 if y.ndim == 1 else y.ndim - 2
    _check_contract("dot", x, y, ax, ay)
    return _dg(x, y, ((ax,), (ay,)), ((), ()), dt, precision)


def vdot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Dot product of the flattened arrays, conjugating ``a`` first."""
    (x, y), dt = _promote("vdot", a, b, preferred_element_type=preferred_element_type)
    if _dkind(x.dtype) == "c":
        x = lax.conj(x)
    x, y = lax.reshape(x, (x.size,)), lax.reshape(y, (y.size,))
    if x.shape != y.shape:  # JAX's error: dot_general's TypeError on the flattened operands
        raise TypeError(
            f"dot_general requires contracting dimensions to have the same shape, got {x.shape} and {y.shape}."
        )
    return _dg(x, y, ((0,), (0,)), ((), ()), dt, precision)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Conjugated vector dot product along ``axis``, broadcasting the other dimensions."""
    (x, y), dt = _promote("vecdot", x1, x2, preferred_element_type=preferred_element_type)
    ax = _util.canonicalize_axis(axis, x.ndim, "vecdot")
    ay = _util.canonicalize_axis(axis, y.ndim, "vecdot")
    _check_contract("vecdot", x, y, ax, ay)
    x = _moveaxis(x, ax, -1)
    y = _moveaxis(y, ay, -1)
    if _dkind(x.dtype) == "c":
        x = lax.conj(x)
    return _vecdot_impl(x, y, dt, precision)


def _vecdot_impl(x: Any, y: Any, dt: np.dtype, precision: Any) -> Any:
    bshape = _util.broadcast_shapes("vecdot", tuple(x.shape[:-1]), tuple(y.shape[:-1]))
    x = _util.broadcast_to_shape(x, bshape + (x.shape[-1],))
    y = _util.broadcast_to_shape(y, bshape + (y.shape[-1],))
    nb = len(bshape)
    bd = tuple(range(nb))
    return _dg(x, y, ((nb,), (nb,)), (bd, bd), dt, precision)


def _moveaxis(x: Any, src: int, dst: int) -> Any:
    nd = x.ndim
    src, dst = src % nd, dst % nd
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return lax.transpose(x, perm)


def inner(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Contract the last axes of ``a`` and ``b`` (scalars multiply)."""
    (x, y), dt = _promote("inner", a, b, preferred_element_type=preferred_element_type)
    if x.ndim == 0 or y.ndim == 0:
        if x.dtype != dt:
            x, y = lax.convert_element_type(x, dt), lax.convert_element_type(y, dt)
        return _mul(x, y)
    _check_contract("inner", x, y, x.ndim - 1, y.ndim - 1)
    return _dg(x, y, ((x.ndim - 1,), (y.ndim - 1,)), ((), ()), dt, precision)


def outer(a: Any, b: Any, out: None = None) -> Any:
    """Outer product of the flattened ``a`` and ``b``."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.outer is not supported.")
    (x, y), _ = _promote("outer", a, b)
    # as JAX: the products of a column and a row (ravel(a)[:, None] * ravel(b)[None, :])
    x = lax.broadcast_in_dim(lax.reshape(x, (x.size,)), (x.size, 1), (0,))
    y = lax.broadcast_in_dim(lax.reshape(y, (y.size,)), (1, y.size), (1,))
    return lax.bitwise_and(x, y) if x.dtype == np.bool_ else lax.mul(x, y)


def _axes_list(fn: str, ax: Any, nd: int) -> tuple[int, ...]:
    if isinstance(ax, (int, np.integer)):
        ax = (ax,)
    return tuple(_util.canonicalize_axis(operator.index(i), nd, fn) for i in ax)


def tensordot(
    a: Any,
    b: Any,
    axes: Any = 2,
    *,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> Any:
    """Contract ``axes`` of ``a`` with ``axes`` of ``b``.

    ``axes`` is an int N (last N axes of ``a`` with first N of ``b``) or a pair of axis
    sequences; the result has the free axes of ``a`` then those of ``b``.
    """
    if out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.apply(
            tensordot(a, b, axes, precision=precision, preferred_element_type=preferred_element_type),
            out_sharding,
            "tensordot",
        )
    (x, y), dt = _promote("tensordot", a, b, preferred_element_type=preferred_element_type)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n > min(x.ndim, y.ndim):  # (JAX 0.10.2's words)
            raise TypeError(f"Number of tensordot axes (axes {n}) exceeds input ranks ({x.shape} and {y.shape})")
        if n < 0:  # (JAX takes a negative count as some other count; fjax refuses it)
            raise TypeError(f"tensordot: number of contracting axes {n} must be nonnegative")
        ca, cb = tuple(range(x.ndim - n, x.ndim)), tuple(range(n))
    elif isinstance(axes, (list, tuple)) and len(axes) == 2:
        ca, cb = _axes_list("tensordot", axes[0], x.ndim), _axes_list("tensordot", axes[1], y.ndim)
        if len(ca) != len(cb):
            raise TypeError(f"tensordot: the two sequences of axes must have the same length, got {axes}")
    else:
        raise TypeError(f"tensordot: axes must be an int or a pair of sequences of axes, got {axes!r}")
    xc, yc = tuple(x.shape[i] for i in ca), tuple(y.shape[j] for j in cb)
    if xc != yc:  # JAX's dot_general TypeError
        raise TypeError(f"dot_general requires contracting dimensions to have the same shape, got {xc} and {yc}.")
    return _dg(x, y, (ca, cb), ((), ()), dt, precision)


def _no_bool(name: str, x: Any) -> None:
    # JAX computes these with lax.{name}, which refuses booleans
    if x.dtype == np.bool_:
        raise TypeError(
            f"{name} does not accept dtype bool at position 0. Accepted dtypes at position 0 are subtypes of "
            "integer, floating, complexfloating."
        )


def kron(a: Any, b: Any) -> Any:
    """Kronecker product: the block array of ``a[i] * b``."""
    (x, y), dt = _promote("kron", a, b)
    _no_bool("mul", x)
    nd = max(x.ndim, y.ndim)
    x = lax.reshape(x, (1,) * (nd - x.ndim) + tuple(x.shape))
    y = lax.reshape(y, (1,) * (nd - y.ndim) + tuple(y.shape))
    o = _dg(x, y, ((), ()), ((), ()), dt)  # shape x.shape + y.shape
    perm = [p for i in range(nd) for p in (i, nd + i)]
    o = lax.transpose(o, perm)
    return lax.reshape(o, tuple(s * t for s, t in zip(x.shape, y.shape)))


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None) -> Any:
    """Cross product of 2- or 3-element vectors along the given axes (numpy.cross semantics)."""
    from fjax.numpy._indexing import getitem  # noqa: PLC0415

    if axis is not None:
        axisa = axisb = axisc = axis
    (x, y), dt = _promote("cross", a, b)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError("cross: inputs must have at least 1 dimension")
    x = _moveaxis(x, _util.canonicalize_axis(axisa, x.ndim, "cross"), -1)
    y = _moveaxis(y, _util.canonicalize_axis(axisb, y.ndim, "cross"), -1)
    if x.shape[-1] not in (2, 3) or y.shape[-1] not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")

    def comp(v: Any, i: int) -> Any:
        return getitem(v, (Ellipsis, i))

    shp = _util.broadcast_shapes("cross", tuple(x.shape[:-1]), tuple(y.shape[:-1]))

    def bc(v: Any) -> Any:
        return _util.broadcast_to_shape(v, shp)

    a0, a1 = bc(comp(x, 0)), bc(comp(x, 1))
    b0, b1 = bc(comp(y, 0)), bc(comp(y, 1))
    zero = lax.full(shp, 0, dt)
    a2 = bc(comp(x, 2)) if x.shape[-1] == 3 else zero
    b2 = bc(comp(y, 2)) if y.shape[-1] == 3 else zero
    if x.shape[-1] == 2 and y.shape[-1] == 2:
        return lax.sub(lax.mul(a0, b1), lax.mul(a1, b0))
    c0 = lax.sub(lax.mul(a1, b2), lax.mul(a2, b1))
    c1 = lax.sub(lax.mul(a2, b0), lax.mul(a0, b2))
    c2 = lax.sub(lax.mul(a0, b1), lax.mul(a1, b0))
    out = lax.concatenate([lax.expand_dims(c, (len(shp),)) for c in (c0, c1, c2)], len(shp))
    return _moveaxis(out, -1, _util.canonicalize_axis(axisc, out.ndim, "cross"))


# --------------------------------------------------------------------------------------------
# einsum

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _sublist_to_str(sub: Sequence[Any]) -> str:
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        else:
            i = operator.index(s)
            if not 0 <= i < len(_LETTERS):
                raise ValueError(f"einsum: subscript index {i} out of range in sublist {sub}")
            out.append(_LETTERS[i])
    return "".join(out)


def _einsum_count_error(n_subs: int, n_ops: int) -> ValueError:
    return ValueError(f"Number of einsum subscripts, {n_subs}, must be equal to the number of operands, {n_ops}.")


def _parse_einsum(subscripts: str, shapes: list[tuple[int, ...]]) -> tuple[list[str], str]:
    """Expand ellipses into fresh letters; returns per-operand label strings and the output labels.

    The checks run in the order (and with the words) of opt_einsum's parser, which JAX uses: the
    arrow, the ellipses, the output labels, the operand count, then each operand's rank."""
    s = subscripts.replace(" ", "")
    if ("-" in s or ">" in s) and (s.count("-") > 1 or s.count(">") > 1 or s.count("->") != 1):
        raise ValueError("Subscripts can only contain one '->'.")
    lhs, out = s.split("->") if "->" in s else (s, None)
    ins = lhs.split(",")
    # any other character is a label, as in JAX (opt_einsum takes any symbol)
    used = set(c for c in s if c not in ".,->")
    fresh = [c for c in _LETTERS if c not in used]
    ell_nd = 0
    ell_counts: list[int] = []
    for num, sub in enumerate(ins):
        if "." not in sub:
            ell_counts.append(0)
            continue
        if sub.count(".") != 3 or sub.count("...") != 1:
            raise ValueError("Invalid Ellipses.")
        if num >= len(shapes):
            raise _einsum_count_error(len(ins), len(shapes))
        k = len(shapes[num]) - (len(sub) - 3) if shapes[num] else 0
        if k < 0:
            raise ValueError("Ellipses lengths do not match.")
        ell_counts.append(k)
        ell_nd = max(ell_nd, k)
    ell = "".join(fresh[:ell_nd])
    new_ins = [sub.replace("...", ell[ell_nd - k :] if k else "") for sub, k in zip(ins, ell_counts)]
    if out is None:
        counts: dict[str, int] = {}
        for sub in new_ins:
            for c in sub:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        # numpy: an explicit output without '...' sums over the broadcast dims
        out = out.replace("...", ell)
        for c in out:
            if out.count(c) > 1:
                raise ValueError(f"Output character '{c}' appeared more than once in the output.")
            if not any(c in sub for sub in new_ins):
                raise ValueError(f"Output character '{c}' did not appear in the input")
    if len(ins) != len(shapes):
        raise _einsum_count_error(len(ins), len(shapes))
    for num, (sub, shp) in enumerate(zip(new_ins, shapes)):
        if len(sub) != len(shp):
            raise ValueError(
                f"Einstein sum subscript '{sub}' does not contain the correct number of indices for operand {num}."
            )
    return new_ins, out


def _einsum_diag(x: Any, labels: str) -> tuple[Any, str]:
    """Take diagonals for labels repeated within one operand."""
    while True:
        rep = next((c for c in labels if labels.count(c) > 1), None)
        if rep is None:
            return x, labels
        i = labels.index(rep)
        j = labels.index(rep, i + 1)
        n = x.shape[i]
        if x.shape[j] != n:
            raise ValueError(
                f"einsum: repeated label {rep!r} has dimensions of different sizes {x.shape[i]} and {x.shape[j]}"
            )
        eye = lax.eq(lax.broadcasted_iota(np.int32, (n, n), 0), lax.broadcasted_iota(np.int32, (n, n), 1))
        mask = lax.broadcast_in_dim(lax.convert_element_type(eye, x.dtype), tuple(x.shape), (i, j))
        if x.dtype == np.bool_:
            y = lax.bitwise_and(x, mask)
            x = lax.reduce_or(y, (j,))
        else:
            x = lax.reduce_sum(lax.mul(x, mask), (j,))
        labels = labels[:j] + labels[j + 1 :]


def _sum_labels(x: Any, labels: str, drop: set) -> tuple[Any, str]:
    axes = tuple(i for i, c in enumerate(labels) if c in drop)
    if not axes:
        return x, labels
    if x.dtype == np.bool_:
        x = lax.reduce_or(x, axes)
    else:
        x = lax.reduce_sum(x, axes)
    return x, "".join(c for c in labels if c not in drop)


def einsum(
    subscripts: Any,
    /,
    *operands: Any,
    out: None = None,
    optimize: Any = "auto",
    precision: Any = None,
    preferred_element_type: Any = None,
    _dot_general: Any = None,
    out_sharding: Any = None,
) -> Any:
    """Einstein summation, e.g. ``einsum('ij,jk->ik', a, b)``.

    Supports implicit output (labels appearing once, in alphabetical order), ``...`` broadcast
    dimensions, labels repeated within one operand (diagonals), summed-out labels and the
    interleaved ``einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])`` form. Operands are
    promoted to a common dtype and contracted pairwise with ``lax.dot_general`` (greedy order).
    """
    if out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.apply(
            einsum(
                subscripts,
                *operands,
                out=out,
                optimize=optimize,
                precision=precision,
                preferred_element_type=preferred_element_type,
                _dot_general=_dot_general,
            ),
            out_sharding,
            "einsum",
        )
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.einsum is not supported.")
    if not isinstance(subscripts, str):
        args = (subscripts,) + operands
        outsub = args[-1] if len(args) % 2 == 1 else None
        pairs = args[:-1] if outsub is not None else args
        ops, subs = list(pairs[0::2]), list(pairs[1::2])
        subscripts = ",".join(_sublist_to_str(s) for s in subs)
        if outsub is not None:
            subscripts += "->" + _sublist_to_str(outsub)
        operands = tuple(ops)
    if not operands:
        raise _einsum_count_error(len(subscripts.split("->")[0].split(",")), 0)
    xs, dt = _promote("einsum", *operands, preferred_element_type=preferred_element_type)
    if dt != xs[0].dtype:
        xs = [lax.convert_element_type(x, dt) for x in xs]
    ins, out_labels = _parse_einsum(subscripts, [tuple(x.shape) for x in xs])

    # label sizes (size-1 dims of broadcast labels are dropped: they broadcast)
    sizes: dict[str, int] = {}
    for k, (x, sub) in enumerate(zip(xs, ins)):
        for c, s in zip(sub, x.shape):
            if c in sizes and sizes[c] != s and s != 1 and sizes[c] != 1:
                # (opt_einsum's words: the first size seen, then this operand's)
                raise ValueError(
                    f"Size of label '{c}' for operand {k} ({sizes[c]}) does not match previous terms ({s})."
                )
            if c not in sizes or sizes[c] == 1:
                sizes[c] = s
    ops: list[tuple[Any, str]] = []
    for x, sub in zip(xs, ins):
        x, sub = _einsum_diag(x, sub)
        # squeeze size-1 dims of labels that are larger elsewhere (numpy broadcasting)
        sq = tuple(i for i, c in enumerate(sub) if x.shape[i] == 1 and sizes[c] != 1)
        if sq:
            x = lax.squeeze(x, sq)
            sub = "".join(c for i, c in enumerate(sub) if i not in sq)
        ops.append((x, sub))

    def needed(excl: set) -> set:
        s = set(out_labels)
        for k, (_, sub) in enumerate(ops):
            if k not in excl:
                s |= set(sub)
        return s

    # sum out labels that appear in only one operand and not in the output
    ops = [_sum_labels(x, sub, set(sub) - needed({k})) for k, (x, sub) in enumerate(ops)]

    while len(ops) > 1:
        best = None
        for i, j in itertools.combinations(range(len(ops)), 2):
            keep = needed({i, j})
            li, lj = ops[i][1], ops[j][1]
            res = [c for c in dict.fromkeys(li + lj) if c in keep or (c in li) != (c in lj)]
            cost = math.prod(sizes[c] for c in res)
            if best is None or cost < best[0]:
                best = (cost, i, j)
        _, i, j = best
        (x, lx), (y, ly) = ops[i], ops[j]
        keep = needed({i, j})
        shared = [c for c in lx if c in ly]
        batch = [c for c in shared if c in keep]
        contract = [c for c in shared if c not in keep]
        dn = (
            (tuple(lx.index(c) for c in contract), tuple(ly.index(c) for c in contract)),
            (tuple(lx.index(c) for c in batch), tuple(ly.index(c) for c in batch)),
        )
        z = lax.dot_general(x, y, dn, precision=precision, preferred_element_type=dt)
        lz = "".join(batch) + "".join(c for c in lx if c not in shared) + "".join(c for c in ly if c not in shared)
        rest = [op for k, op in enumerate(ops) if k not in (i, j)]
        z, lz = _sum_labels(z, lz, set(lz) - needed({i, j}) - set(c for _, s in rest for c in s))
        ops = rest + [(z, lz)]
    x, lx = ops[0]
    x, lx = _sum_labels(x, lx, set(lx) - set(out_labels))
    missing = [c for c in out_labels if c not in lx]
    if missing:  # output labels whose dims were all size 1 and squeezed: broadcast back
        shp = tuple(sizes[c] for c in lx + "".join(missing))
        x = lax.broadcast_in_dim(x, shp, tuple(range(len(lx))))
        lx = lx + "".join(missing)
    perm = tuple(lx.index(c) for c in out_labels)
    x = lax.transpose(x, perm)
    if isinstance(x, (Array, Tracer)) and core.get_aval(x).dtype != dt:
        x = lax.convert_element_type(x, dt)
    return x


def einsum_path(subscripts: Any, /, *operands: Any, optimize: Any = "auto") -> tuple[list, str]:
    """A contraction order for ``einsum(subscripts, *operands)``: the list of operand pairs and a
    report. JAX returns opt_einsum's path and ``PathInfo``; fjax, without opt_einsum, numpy's path
    (``optimize``: ``"auto"``/``"greedy"``, ``"optimal"``/True, or False: left to right) and report."""
    if optimize is False:
        n = len(operands) if isinstance(subscripts, str) else (len(operands) + 1) // 2
        return [(0, 1)] * max(n - 1, 0), "unoptimized (left to right)"
    how = {"auto": "greedy", True: "optimal"}.get(optimize, optimize) if not isinstance(optimize, list) else optimize

    def shaped(o: Any) -> Any:  # (an operand's shape and dtype are all a path needs; sublists pass)
        return np.empty(np.shape(o), getattr(o, "dtype", np.float32)) if hasattr(o, "shape") else o

    path, info = np.einsum_path(shaped(subscripts), *[shaped(o) for o in operands], optimize=how)
    return [tuple(p) for p in path[1:]], info
