"""``sparsify``: run a function written for dense arrays on BCOO arguments.

The function is traced to a jaxpr with the sparse arguments standing in as dense avals; the
jaxpr is then evaluated with BCOO values, each primitive that meets a sparse operand dispatching
to a sparse rule (equations on dense values bind as usual, so this composes with jit/vmap/grad).
"""

from __future__ import annotations

import collections
import functools
import threading
from typing import Any, Callable

import numpy as np

import fjax
from fjax import core, dtypes, lax, tree_util
from fjax import numpy as jnp
from fjax._custom_common import SymbolicZero
from fjax.experimental.sparse._base import JAXSparse
from fjax.experimental.sparse.bcoo import BCOO, bcoo_transpose
from fjax.experimental.sparse.bcoo_ops import (
    _dense_at_entries,
    bcoo_broadcast_in_dim,
    bcoo_concatenate,
    bcoo_dot_general,
    bcoo_dynamic_slice,
    bcoo_gather,
    bcoo_multiply_dense,
    bcoo_multiply_sparse,
    bcoo_reduce_sum,
    bcoo_reshape,
    bcoo_rev,
    bcoo_slice,
    bcoo_squeeze,
)

_ZERO_PRESERVING_UNARY = {
    "abs",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "bessel_i1e",
    "expm1",
    "log1p",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "convert_element_type",
    "conj",
    "copy",
    "copy_p",
    "imag",
    "neg",
    "real",
}
_DENSIFYING = {"acos", "acosh", "bessel_i0e", "cos", "cosh", "eq", "exp", "ge", "gt", "le", "log", "lt", "ne", "xor"}


def _is_sparse(x: Any) -> bool:
    return isinstance(x, JAXSparse)


def _no_rule(name: str) -> Any:
    if name in _DENSIFYING:
        raise NotImplementedError(
            f"sparse rule for {name} is not implemented because it would result in dense output. If this is your "
            "intent, use sparse.todense() to convert your arguments to dense matrices."
        )
    raise NotImplementedError(f"sparse rule for {name} is not implemented.")


def _with_data(x: BCOO, data: Any) -> BCOO:
    return BCOO((data, x.indices), shape=x.shape, indices_sorted=x.indices_sorted, unique_indices=x.unique_indices)


def _unary(prim: Any, params: dict, x: BCOO) -> BCOO:
    return _with_data(x, core.bind(prim, [x.data], params))


def _integer_pow(prim: Any, params: dict, x: BCOO) -> BCOO:
    y = params["y"]
    if y <= 0:
        raise NotImplementedError(
            f"sparse rule for integer_pow with non-positive exponent {y} is not implemented because it would "
            "result in dense output. If this is your intent, use sparse.todense() to convert your arguments to "
            "a dense matrix."
        )
    return _unary(prim, params, x)


def _mul(prim: Any, params: dict, x: Any, y: Any) -> Any:
    if _is_sparse(x) and _is_sparse(y):
        return bcoo_multiply_sparse(x, y)
    if _is_sparse(y):
        x, y = y, x
    return _with_data(x, bcoo_multiply_dense(x, y))


def _div(prim: Any, params: dict, x: Any, y: Any) -> Any:
    if _is_sparse(y):
        _no_rule("div")  # dividing by a sparse array would divide by its implicit zeros
    return _with_data(x, x.data / _dense_at_entries(x, jnp.asarray(y)))


def _add(prim: Any, params: dict, x: Any, y: Any, *, negate: bool = False) -> Any:
    out_shape = tuple(jnp.broadcast_shapes(tuple(x.shape), tuple(y.shape)))
    if _is_sparse(x) and _is_sparse(y):
        if x.shape != y.shape:
            raise NotImplementedError("Addition between sparse matrices of different shapes.")
        if x.indices.ndim != y.indices.ndim or x.data.ndim != y.data.ndim:
            raise NotImplementedError("Addition between sparse matrices with different batch/dense dimensions.")
        nb = x.n_batch
        xd, xi = jnp.broadcast_to(x.data, x.shape[:nb] + x.data.shape[nb:]), x.indices
        yd, yi = jnp.broadcast_to(y.data, y.shape[:nb] + y.data.shape[nb:]), y.indices
        xi = jnp.broadcast_to(xi, x.shape[:nb] + xi.shape[nb:])
        yi = jnp.broadcast_to(yi, y.shape[:nb] + yi.shape[nb:])
        dtype = jnp.result_type(xd, yd)
        yd = -yd if negate else yd
        data = jnp.concatenate([xd.astype(dtype), yd.astype(dtype)], axis=nb)
        idt = jnp.result_type(xi, yi)
        indices = jnp.concatenate([xi.astype(idt), yi.astype(idt)], axis=nb)
        return BCOO((data, indices), shape=x.shape)
    sp, dn = (x, y) if _is_sparse(x) else (y, x)
    if tuple(jnp.shape(dn)) != out_shape:
        raise NotImplementedError(
            "Addition between a sparse array X and a dense array Y is not implemented when the output shape is "
            "larger than Y.shape. This is to prevent silent densification of a large sparse array. If this is your "
            "intent, you can explicitly cast the sparse array to a dense matrix."
        )
    xs = x.todense() if _is_sparse(x) else x
    ys = y.todense() if _is_sparse(y) else y
    return xs - ys if negate else xs + ys


def _reduce_sum(prim: Any, params: dict, x: BCOO) -> Any:
    out = bcoo_reduce_sum(x, axes=params["axes"])
    return out.data.sum() if out.shape == () else out


def _dot_general(prim: Any, params: dict, x: Any, y: Any) -> Any:
    return bcoo_dot_general(
        x,
        y,
        dimension_numbers=params["dimension_numbers"],
        preferred_element_type=params.get("preferred_element_type"),
    )


def _all_sparse(name: str, args: tuple) -> None:
    if not all(_is_sparse(a) for a in args):
        raise NotImplementedError(f"sparse rule for {name} with mixed sparse and dense operands is not implemented.")


def _concatenate(prim: Any, params: dict, *xs: Any) -> Any:
    _all_sparse("concatenate", xs)
    return bcoo_concatenate(xs, dimension=params["dimension"])


def _dynamic_slice(prim: Any, params: dict, x: Any, *starts: Any) -> Any:
    if not _is_sparse(x) or any(_is_sparse(s) for s in starts):
        _no_rule("dynamic_slice")
    return bcoo_dynamic_slice(x, starts, params["slice_sizes"])


def _cond(prim: Any, params: dict, index: Any, *ops: Any) -> Any:
    if _is_sparse(index):
        _no_rule("cond")
    branches = [functools.partial(_eval_closed_args, br) for br in params["branches"]]
    return list(lax.switch(index, branches, *ops))


def _eval_closed_args(closed: Any, *args: Any) -> list:
    return _eval_closed(closed, list(args))


def _while(prim: Any, params: dict, *args: Any) -> Any:
    cn, bn = params["cond_nconsts"], params["body_nconsts"]
    cc, bc, init = args[:cn], args[cn : cn + bn], args[cn + bn :]

    def cond_fun(carry: tuple) -> Any:
        return _eval_closed(params["cond_jaxpr"], [*cc, *carry])[0]

    def body_fun(carry: tuple) -> tuple:
        return tuple(_eval_closed(params["body_jaxpr"], [*bc, *carry]))

    return list(lax.while_loop(cond_fun, body_fun, tuple(init)))


def _scan(prim: Any, params: dict, *args: Any) -> Any:
    nc, nk = params["num_consts"], params["num_carry"]
    consts, init, xs = args[:nc], args[nc : nc + nk], args[nc + nk :]

    def body(carry: tuple, x: tuple) -> tuple:
        outs = _eval_closed(params["jaxpr"], [*consts, *carry, *x])
        return tuple(outs[:nk]), tuple(outs[nk:])

    carry, ys = lax.scan(
        body, tuple(init), tuple(xs), length=params["length"], reverse=params["reverse"], unroll=params["unroll"]
    )
    return [*carry, *ys]


def _gather(prim: Any, params: dict, x: Any, idx: Any) -> Any:
    if not _is_sparse(x) or _is_sparse(idx):
        _no_rule("gather")
    return bcoo_gather(x, idx, **params)


_RULES: dict[str, Callable] = {
    "gather": _gather,
    "cond": _cond,
    "while": _while,
    "scan": _scan,
    "integer_pow": _integer_pow,
    "mul": _mul,
    "div": _div,
    "add": _add,
    "add_any": _add,
    "sub": functools.partial(_add, negate=True),
    "reduce_sum": _reduce_sum,
    "dot_general": _dot_general,
    "transpose": lambda p, k, x: bcoo_transpose(x, permutation=k["permutation"]),
    "reshape": lambda p, k, x: bcoo_reshape(x, new_sizes=k["new_sizes"], dimensions=k.get("dimensions")),
    "broadcast_in_dim": lambda p, k, x, *dyn: bcoo_broadcast_in_dim(
        x, shape=k["shape"], broadcast_dimensions=k["broadcast_dimensions"]
    ),
    "squeeze": lambda p, k, x: bcoo_squeeze(x, dimensions=k["dimensions"]),
    "rev": lambda p, k, x: bcoo_rev(x, k["dimensions"]),
    "slice": lambda p, k, x: bcoo_slice(
        x, start_indices=k["start_indices"], limit_indices=k["limit_indices"], strides=k.get("strides")
    ),
    "dynamic_slice": _dynamic_slice,
    "concatenate": _concatenate,
}
for _name in _ZERO_PRESERVING_UNARY:
    _RULES[_name] = _unary


def _sparse_tangent(primal: Any, t_leaves: list) -> Any:
    """The tangent of ``primal`` from the tangents of its flattened buffers: a sparse primal's
    tangent is sparse with the same indices (its data's tangent as data)."""
    if _is_sparse(primal):
        return _with_data(primal, t_leaves[0])
    return t_leaves[0]


def _data_tangent(primal: Any, t: Any) -> list:
    """Tangents of ``primal``'s flattened buffers from a tangent value ``t`` (sparse or dense):
    for a sparse primal, ``t``'s values at the primal's stored entries (None for the indices)."""
    if not _is_sparse(primal):
        return [t.todense() if _is_sparse(t) else t]
    if _is_sparse(t) and t.indices is primal.indices and tuple(t.data.shape) == tuple(primal.data.shape):
        data = t.data
    else:
        data = _dense_at_entries(primal, jnp.asarray(t.todense() if _is_sparse(t) else t))
        data = jnp.broadcast_to(data, primal.data.shape)
    # the indices' tangents: float0 zeros (integer buffers)
    rest = [np.zeros(np.shape(b), dtypes.float0) for b in primal.tree_flatten()[0][1:]]
    return [data.astype(primal.data.dtype), *rest]


def _custom_jvp_call(params: dict, ins: list) -> list:
    """``custom_jvp_call`` with sparse operands: a ``custom_jvp`` function over the operands' buffers
    whose primal is the sparsified ``call_jaxpr`` and whose JVP rule is the user's rule, sparsified
    (as JAX's ``_custom_jvp_sparse_rule``), so derivatives still use the custom rule."""
    call_jaxpr, jvp, n_consts = params["call_jaxpr"], params["jvp"], params["num_consts"]
    per_in = [tree_util.tree_flatten(x)[0] if _is_sparse(x) else [x] for x in ins]
    sizes = [len(b) for b in per_in]
    flat = [b for bs in per_in for b in bs]
    out_trees: list = []

    def split(xs: Any) -> list:
        out, k = [], 0
        for n in sizes:
            out.append(list(xs[k : k + n]))
            k += n
        return out

    def rebuild(xs: Any) -> list:
        return [tree_util.tree_unflatten(tree_util.tree_structure(x), b) for x, b in zip(ins, split(xs))]

    def flatten_outs(outs: list) -> list:
        per_out = [tree_util.tree_flatten(o)[0] if _is_sparse(o) else [o] for o in outs]
        out_trees.append([tree_util.tree_structure(o) if _is_sparse(o) else None for o in outs])
        return [b for bs in per_out for b in bs]

    def fun(*xs: Any) -> list:
        return flatten_outs(_eval_closed(call_jaxpr, rebuild(xs)))

    def rule(primals: tuple, tangents: tuple) -> tuple:
        vals = rebuild(primals)
        tans = [_sparse_tangent(v, t) for v, t in zip(vals, split(tangents))]
        lead, prims, tans = vals[:n_consts], vals[n_consts:], tans[n_consts:]
        n_p = len(prims)

        def dense_rule(*args: Any) -> tuple:
            po, to = jvp(list(args[:n_consts]), list(args[n_consts : n_consts + n_p]), list(args[n_consts + n_p :]))
            # a rule may answer None or a symbolic zero for a tangent: a zero array here
            to = [jnp.zeros_like(p) if t is None or type(t) is SymbolicZero else t for p, t in zip(po, to)]
            return list(po), to

        p_out, t_out = sparsify(dense_rule)(*lead, *prims, *tans)
        t_flat = []
        for p, t in zip(p_out, t_out):
            t_flat += _data_tangent(p, t)
        return flatten_outs(p_out), t_flat

    f = fjax.custom_jvp(fun)
    f.defjvp(rule)
    out_flat = f(*flat)
    outs, k = [], 0
    for tree in out_trees[-1]:
        if tree is None:
            outs.append(out_flat[k])
            k += 1
        else:
            outs.append(tree_util.tree_unflatten(tree, out_flat[k : k + tree.num_leaves]))
            k += tree.num_leaves
    return outs


def _read(env: dict, v: Any) -> Any:
    return v.as_array() if type(v) is core.Literal else env[v]


def _eval_sparse(jaxpr: Any, consts: Any, args: list) -> list:
    env: dict = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        ins = [_read(env, v) for v in eqn.invars]
        name = eqn.primitive.name
        if not any(_is_sparse(x) for x in ins):
            outs = core.bind(eqn.primitive, ins, eqn.params)
        elif name in ("jit", "pjit", "closed_call", "core_call", "remat", "checkpoint"):
            inner = eqn.params.get("jaxpr", eqn.params.get("call_jaxpr"))
            outs = _eval_closed(inner, ins)
        elif name == "custom_jvp_call":
            outs = _custom_jvp_call(eqn.params, ins)
        elif name in _RULES:
            outs = _RULES[name](eqn.primitive, eqn.params, *ins)
        else:
            _no_rule(name)
        if eqn.primitive.multiple_results:
            for v, o in zip(eqn.outvars, outs):
                env[v] = o
        else:
            env[eqn.outvars[0]] = outs
    return [_read(env, v) for v in jaxpr.outvars]


def _eval_closed(closed: Any, args: list) -> list:
    if hasattr(closed, "jaxpr"):
        return _eval_sparse(closed.jaxpr, closed.consts, args)
    return _eval_sparse(closed, [], args)


def _leaf_key(x: Any) -> Any:
    if _is_sparse(x):
        return ("sparse", type(x), tuple(x.shape), str(x.dtype))
    aval = core.get_aval(x)
    return (tuple(aval.shape), str(aval.dtype), bool(getattr(aval, "weak_type", False)))


def sparsify(f: Callable, use_tracer: bool = False) -> Callable:
    """Transform ``f`` so that it accepts BCOO arrays wherever it accepted dense arrays."""
    if use_tracer:
        raise NotImplementedError("sparsify(use_tracer=True): fjax only implements the jaxpr-based sparsify")
    # traced jaxprs by argument structure, avals and trace context; bounded, only jaxprs free of
    # tracers; shared by threads (a lock around the dict)
    cache: collections.OrderedDict = collections.OrderedDict()
    lock = threading.Lock()

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        leaves, tree = tree_util.tree_flatten((args, kwargs), is_leaf=_is_sparse)
        if not any(_is_sparse(x) for x in leaves):
            return f(*args, **kwargs)
        try:
            key = (tree, tuple(_leaf_key(x) for x in leaves), core.trace_context())
            hash(key)
        except TypeError:
            key = None
        with lock:
            hit = cache.get(key) if key is not None else None
        if hit is None:
            stand_ins = [fjax.ShapeDtypeStruct(x.shape, x.dtype) if _is_sparse(x) else x for x in leaves]

            def flat_f(*flat: Any) -> Any:
                a, k = tree_util.tree_unflatten(tree, list(flat))
                return f(*a, **k)

            closed, out_shape = fjax.make_jaxpr(flat_f, return_shape=True)(*stand_ins)
            hit = (closed, tree_util.tree_structure(out_shape))
            if key is not None and not any(isinstance(c, core.Tracer) for c in closed.consts):
                with lock:
                    cache[key] = hit
                    if len(cache) > 32:
                        cache.popitem(last=False)
        closed, out_tree = hit
        outs = _eval_sparse(closed.jaxpr, closed.consts, leaves)
        return tree_util.tree_unflatten(out_tree, outs)

    return wrapped


# ------------------------------------------------------------------------------------------
# BCOO methods derived from sparsify (as in JAX)


def _swap(f: Callable) -> Callable:
    return lambda a, b: f(b, a)


def _sum(self: BCOO, *args: Any, **kwargs: Any) -> Any:
    """Sum array elements over the given axes."""
    return sparsify(lambda x: x.sum(*args, **kwargs))(self)


def _reshape(self: BCOO, *args: Any, **kwargs: Any) -> Any:
    """The same data with a new shape."""
    return sparsify(lambda x: x.reshape(*args, **kwargs))(self)


def _astype(self: BCOO, *args: Any, **kwargs: Any) -> Any:
    """A copy cast to a dtype."""
    return sparsify(lambda x: x.astype(*args, **kwargs))(self)


def _getitem(self: BCOO, idx: Any) -> Any:
    """Indexing by ints, slices, None and integer arrays (in-bounds gather): the result is BCOO."""
    return sparsify(lambda x: x[idx])(self)


def _iter(self: BCOO) -> Any:
    return iter(self[i] for i in range(self.shape[0]))


def _pow(x: BCOO, y: Any) -> Any:
    return sparsify(lambda a: jnp.power(a, y))(x)


_BCOO_METHODS = {
    "astype": _astype,
    "reshape": _reshape,
    "sum": _sum,
    "__abs__": sparsify(jnp.abs),
    "__neg__": sparsify(jnp.negative),
    "__pos__": sparsify(jnp.positive),
    "__matmul__": sparsify(jnp.matmul),
    "__rmatmul__": sparsify(_swap(jnp.matmul)),
    "__mul__": sparsify(jnp.multiply),
    "__rmul__": sparsify(_swap(jnp.multiply)),
    "__truediv__": sparsify(jnp.divide),
    "__rtruediv__": sparsify(_swap(jnp.divide)),
    "__add__": sparsify(jnp.add),
    "__radd__": sparsify(_swap(jnp.add)),
    "__sub__": sparsify(jnp.subtract),
    "__rsub__": sparsify(_swap(jnp.subtract)),
    "__pow__": _pow,
    "__getitem__": _getitem,
    "__iter__": _iter,
    "__rpow__": sparsify(_swap(jnp.power)),
    "__gt__": sparsify(jnp.greater),
    "__ge__": sparsify(jnp.greater_equal),
    "__lt__": sparsify(jnp.less),
    "__le__": sparsify(jnp.less_equal),
    "__eq__": sparsify(jnp.equal),
    "__ne__": sparsify(jnp.not_equal),
}
for _method, _impl in _BCOO_METHODS.items():
    setattr(BCOO, _method, _impl)
BCOO.__hash__ = None  # type: ignore[assignment]
