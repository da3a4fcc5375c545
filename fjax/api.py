"""Public transformations: make_jaxpr, jvp, linearize, vjp, grad, value_and_grad, vmap,
eval_shape (and jacfwd, jacrev, hessian from ``fjax._jacobians``). Each flattens pytrees, calls
the flat interpreter and rebuilds the output trees."""

from __future__ import annotations

import collections
import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core, dtypes, tree_util
from fjax._core_values import long_str
from fjax._tree_prefix import fun_sourceinfo
from fjax.core import Array, ShapedArray
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.interpreters import partial_eval as pe
from fjax.interpreters.ad import Zero


class ShapeDtypeStruct:
    """A shape and dtype standing for an array argument (for make_jaxpr / eval_shape)."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape: Sequence[int], dtype: Any, *, sharding: Any = None, weak_type: bool = False):
        self.shape = tuple(shape)
        self.dtype = dtype if isinstance(dtype, dtypes.KeyDtype) else np.dtype(dtype)
        self.weak_type = weak_type
        self.sharding = sharding  # accepted for JAX compatibility; fjax has one device

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ShapeDtypeStruct)
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))


def _key_shapes_in(tree: Any) -> Any:
    """``tree`` with each ShapeDtypeStruct of a key dtype standing for a key array over its data's shape."""
    from fjax._prng import PRNGKeyArray  # noqa: PLC0415

    def lift(x: Any) -> Any:
        if isinstance(x, ShapeDtypeStruct) and isinstance(x.dtype, dtypes.KeyDtype):
            return PRNGKeyArray(ShapeDtypeStruct((*x.shape, 2), np.uint32))
        return x

    return tree_util.tree_map(lift, tree)


def shapes_of_keys(tree: Any) -> Any:
    """``tree`` with each key array over a ShapeDtypeStruct of its data made a ShapeDtypeStruct of
    the key dtype (what ``eval_shape`` gives for a key array, as in JAX)."""
    from fjax._prng import PRNGKeyArray  # noqa: PLC0415

    def lower(x: Any) -> Any:
        if isinstance(x, PRNGKeyArray) and isinstance(x._base, ShapeDtypeStruct):
            return ShapeDtypeStruct(x._base.shape[:-1], dtypes.KEY_DTYPE)
        return x

    return tree_util.tree_map(lower, tree)


def _fun_name(fun: Callable) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


def _check_arg(x: Any, fn_name: str, what: str = "argument") -> Any:
    """Convert a leaf argument of a transformed function to an Array/Tracer, or raise TypeError."""
    if isinstance(x, (core.Tracer, Array)):
        return x
    if type(x) in (bool, int, float, complex) or isinstance(x, (np.ndarray, np.generic)):
        return core.to_array(x, fn_name)
    # JAX's words: grad/vjp/jacfwd/jacrev check their inputs with a closing period, the rest without
    if what == "output" and fn_name.startswith("vmap"):
        raise TypeError(f"Output from batched function '{x}' with type {type(x)} is not a valid JAX type")
    period = "." if what == "argument" and fn_name.startswith(("grad", "vjp", "jacfwd", "jacrev")) else ""
    raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type{period}")


def _abstractify(x: Any) -> ShapedArray:
    if isinstance(x, (ShapeDtypeStruct, ShapedArray)):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), getattr(x, "weak_type", False))
    return core.get_aval(x)


# ---------------------------------------------------------------------------------------------
# make_jaxpr / eval_shape


def _argnums_tuple(argnums: int | Sequence[int] | None) -> tuple[int, ...]:
    if argnums is None:
        return ()
    if isinstance(argnums, int):
        return (argnums,)
    return tuple(argnums)


def make_jaxpr(
    fun: Callable,
    static_argnums: int | Sequence[int] = (),
    axis_env: Sequence[tuple[Any, int]] | None = None,
    return_shape: bool = False,
    abstracted_axes: Any = None,
) -> Callable:
    """Return a function that traces ``fun`` on its arguments and gives its ClosedJaxpr.

    ``axis_env`` (``[(name, size), ...]``, JAX's way to trace collectives over axis names bound
    outside) is not supported: fjax binds axis names only under vmap/pmap/shard_map, where its
    collectives are evaluated, so it has no jaxpr equation with a free axis name."""
    if axis_env:
        raise NotImplementedError(
            f"make_jaxpr(axis_env={list(axis_env)!r}): fjax cannot trace collectives over axis names bound "
            "outside the function; trace the vmap/pmap/shard_map that binds them instead"
        )
    static = _argnums_tuple(static_argnums)

    @functools.wraps(fun, updated=())
    def make_jaxpr_f(*args: Any, **kwargs: Any) -> Any:
        dyn_idx = [i for i in range(len(args)) if i not in static]
        dyn_args = [args[i] for i in dyn_idx]
        flat, in_tree = tu.tree_flatten(_key_shapes_in((dyn_args, kwargs)))
        in_avals = [_abstractify(x) for x in flat]
        out_tree_box: list = []

        def flat_fun(*leaves: Any) -> list:
            dargs, kw = tu.tree_unflatten(in_tree, list(leaves))
            full = list(args)
            for i, a in zip(dyn_idx, dargs):
                full[i] = a
            out = fun(*full, **kw)
            out_flat, out_tree = tu.tree_flatten(out)
            out_tree_box.append(out_tree)
            # a ShapeDtypeStruct returned as it is (lineax's ``eval_shape(lambda: struct)``) is an
            # abstract output, as in JAX: zeros of its shape in the jaxpr, the struct itself as shape
            out_structs.extend(o if isinstance(o, ShapeDtypeStruct) else None for o in out_flat)
            return [_struct_placeholder(o) if isinstance(o, ShapeDtypeStruct) else o for o in out_flat]

        out_structs: list = []
        jaxpr, consts, outs = pe.trace_to_jaxpr(flat_fun, in_avals, f"make_jaxpr({_fun_name(fun)})", dce=False)
        closed = core.ClosedJaxpr(jaxpr, consts)
        if return_shape:
            shapes = [
                s if s is not None else ShapeDtypeStruct(o.aval.shape, o.aval.dtype, weak_type=o.aval.weak_type)
                for o, s in zip(outs, out_structs)
            ]
            return closed, shapes_of_keys(tu.tree_unflatten(out_tree_box[0], shapes))
        return closed

    return make_jaxpr_f


def _struct_placeholder(s: ShapeDtypeStruct) -> Any:
    if isinstance(s.dtype, dtypes.KeyDtype):
        raise NotImplementedError("make_jaxpr/eval_shape: a function returning a ShapeDtypeStruct of a key dtype")
    from fjax import lax  # noqa: PLC0415

    return lax.full(s.shape, 0, s.dtype)


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """The output shapes/dtypes of ``fun`` (as ShapeDtypeStructs) without computing anything."""
    _, shape = make_jaxpr(fun, return_shape=True)(*args, **kwargs)
    return shape


# ---------------------------------------------------------------------------------------------
# forward mode


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False) -> Any:
    """Evaluate ``fun`` at ``primals`` and its derivative applied to ``tangents`` (forward mode).

    Returns ``(primals_out, tangents_out)`` (plus ``aux`` with ``has_aux=True``).
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            "primal and tangent arguments to jax.jvp must be tuples or lists; found "
            f"{type(primals).__name__} and {type(tangents).__name__}."
        )
    p_flat, p_tree = tu.tree_flatten(tuple(primals))
    t_flat, t_tree = tu.tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError(
            f"primal and tangent arguments to jax.jvp must have the same tree structure; primals have tree "
            f"structure {p_tree} whereas tangents have tree structure {t_tree}."
        )
    p_flat = [_check_arg(p, "jvp", "primal") for p in p_flat]
    tans = []
    for p, t in zip(p_flat, t_flat):
        pa = core.get_aval(p)
        t_arr = _check_arg(t, "jvp", "tangent") if not (isinstance(t, np.ndarray) and t.dtype == dtypes.float0) else t
        ta = core.get_aval(t_arr) if not isinstance(t_arr, np.ndarray) else ShapedArray(t.shape, t.dtype)
        # JAX's checks and messages, verbatim (dtype first, then shape)
        want = pa.dtype if _dkind(pa.dtype) in "fc" else np.dtype(dtypes.float0)  # int/bool: float0
        if ta.dtype != want:
            raise TypeError(
                "primal and tangent arguments to jax.jvp do not match; dtypes must be equal, or in case of int/bool "
                f"primal dtype the tangent dtype must be float0.Got primal dtype {pa.dtype} and so expected "
                f"tangent dtype {np.dtype(want)}, but got tangent dtype {ta.dtype} instead."
            )
        if pa.shape != ta.shape:
            raise ValueError(
                f"jvp called with different primal and tangent shapes;Got primal shape {pa.shape} and tangent "
                f"shape as {ta.shape}"
            )
        if ta.dtype == dtypes.float0:
            tans.append(Zero(ad.tangent_aval(pa)))
            continue
        tans.append(t_arr)
    out_tree_box: list = []

    def flat_fun(*leaves: Any) -> list:
        out = fun(*tu.tree_unflatten(p_tree, list(leaves)))
        if has_aux:
            out, aux = _split_aux(out, "jvp")
            o_flat, o_tree = tu.tree_flatten(out)
            a_flat, a_spec = _aux_leaves(aux)
            out_tree_box.append((o_tree, a_spec, len(o_flat)))
            return o_flat + a_flat
        o_flat, o_tree = tu.tree_flatten(out)
        out_tree_box.append(o_tree)
        return o_flat

    p_out, t_out = ad.jvp_flat(flat_fun, p_flat, tans)
    t_out = [_instantiate(t) for t in t_out]
    if has_aux:
        out_tree, a_spec, n = out_tree_box[0]
        po = tu.tree_unflatten(out_tree, p_out[:n])
        to = tu.tree_unflatten(out_tree, t_out[:n])
        return po, to, _aux_rebuild(a_spec, p_out[n:])
    out_tree = out_tree_box[0]
    return tu.tree_unflatten(out_tree, p_out), tu.tree_unflatten(out_tree, t_out)


def _instantiate(t: Any) -> Any:
    if type(t) is Zero:
        if t.aval.dtype == dtypes.float0:
            return np.zeros(t.aval.shape, dtypes.float0)
        return ad._zeros_like(t.aval)
    return t


def _describe(x: Any) -> str:
    """A value for an error message: an array or tracer by its type (f32[3]), else its Python type."""
    aval = getattr(x, "aval", None)
    if isinstance(aval, ShapedArray):
        return f"a value of type {aval.str_short()}"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of length {len(x)}"
    return f"a value of type {type(x).__name__}"


def _aux_leaves(aux: Any) -> tuple[list, tuple]:
    """The array leaves of ``aux`` (arrays and tracers: they leave the trace as outputs) and how
    to rebuild it; other leaves (strings, Python scalars, numpy arrays) come back as they are, as
    in JAX."""
    leaves, tree = tu.tree_flatten(aux)
    idx = [i for i, x in enumerate(leaves) if isinstance(x, (core.Tracer, Array))]
    static = [None if isinstance(x, (core.Tracer, Array)) else x for x in leaves]
    return [leaves[i] for i in idx], (tree, static, idx)


def _aux_rebuild(spec: tuple, dyn: Sequence[Any]) -> Any:
    tree, static, idx = spec
    leaves = list(static)
    for i, v in zip(idx, dyn):
        leaves[i] = v
    return tu.tree_unflatten(tree, leaves)


def _split_aux(out: Any, name: str) -> tuple[Any, Any]:
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(
            f"{name} with has_aux=True requires the function to return a pair (output, auxiliary_data), got "
            f"{_describe(out)}"
        )
    return out[0], out[1]


def linearize(fun: Callable, *primals: Any, has_aux: bool = False) -> Any:
    """Evaluate ``fun`` and return ``(primals_out, f_jvp)`` where ``f_jvp`` is the linear map."""
    p_flat, p_tree = tu.tree_flatten(primals)
    p_flat = [_check_arg(p, "linearize") for p in p_flat]
    out_tree_box: list = []
    aux_box: list = []

    def flat_fun(*leaves: Any) -> list:
        out = fun(*tu.tree_unflatten(p_tree, list(leaves)))
        if has_aux:
            out, aux = _split_aux(out, "linearize")
            aux_box.append(aux)
        o_flat, o_tree = tu.tree_flatten(out)
        out_tree_box.append(o_tree)
        return o_flat

    if has_aux:
        # aux values must leave the trace lowered: return them as extra (non-differentiated) outputs
        n_box: list = []

        def flat_fun_aux(*leaves: Any) -> list:
            o = flat_fun(*leaves)
            a_flat, a_spec = _aux_leaves(aux_box[-1])
            n_box.append((len(o), a_spec))
            return o + a_flat

        p_out_all, jaxpr, consts, diff_mask = ad.linearize_flat(flat_fun_aux, p_flat)
        n, a_spec = n_box[0]
        p_out, aux_flat = p_out_all[:n], p_out_all[n:]
        jaxpr = pe.dce_jaxpr(core.Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars[:n], jaxpr.eqns))
    else:
        p_out, jaxpr, consts, diff_mask = ad.linearize_flat(flat_fun, p_flat)
    out_tree = out_tree_box[0]
    # a tree_util.Partial whose leaves are the residuals (as JAX's): it can leave a jit or vmap
    f_jvp = tu.Partial(_LinearizedFun(jaxpr, diff_mask, p_tree, out_tree), list(consts))

    po = tu.tree_unflatten(out_tree, p_out)
    if has_aux:
        return po, f_jvp, _aux_rebuild(a_spec, aux_flat)
    return po, f_jvp


# ---------------------------------------------------------------------------------------------
# reverse mode


def vjp(fun: Callable, *primals: Any, has_aux: bool = False, reduce_axes: Sequence = ()) -> Any:
    """Evaluate ``fun`` and return ``(primals_out, vjp_fn)``; ``vjp_fn(ct)`` gives a tuple of
    cotangents, one per primal argument (plus ``aux`` with ``has_aux=True``)."""
    from fjax import _shard_map_vjp  # noqa: PLC0415

    if _shard_map_vjp.vma_active():  # inside shard_map(check_vma=True): JAX's psum/pvary transposes
        return _shard_map_vjp.vma_vjp(fun, primals, has_aux)
    p_flat, p_tree = tu.tree_flatten(primals)
    p_flat = [_check_arg(p, "vjp") for p in p_flat]
    out_tree_box: list = []

    def flat_fun(*leaves: Any) -> list:
        out = fun(*tu.tree_unflatten(p_tree, list(leaves)))
        if has_aux:
            out, aux = _split_aux(out, "vjp")
            o_flat, o_tree = tu.tree_flatten(out)
            o_flat = [_check_arg(o, "vjp", "output") for o in o_flat]
            a_flat, a_spec = _aux_leaves(aux)
            out_tree_box.append((o_tree, a_spec, len(o_flat)))
            return o_flat + a_flat
        o_flat, o_tree = tu.tree_flatten(out)
        out_tree_box.append((o_tree, None, len(o_flat)))
        return [_check_arg(o, "vjp", "output") for o in o_flat]

    p_out, lin_jaxpr, lin_consts, diff_mask = ad.linearize_flat(flat_fun, p_flat, f"vjp({_fun_name(fun)})")
    o_tree, a_spec, n = out_tree_box[0]
    out_avals = [core.get_aval(o) for o in p_out[:n]]
    extra_avals = [ad.tangent_aval(core.get_aval(a)) for a in p_out[n:]]
    in_avals = [core.get_aval(p) for p in p_flat]
    # a tree_util.Partial whose leaves are the residuals (as JAX's): it can be passed to jit
    static = _VjpFun(lin_jaxpr, diff_mask, in_avals, out_avals, extra_avals, o_tree, p_tree, fun_sourceinfo(fun))
    vjp_fn = tu.Partial(static, lin_consts)

    po = tu.tree_unflatten(o_tree, p_out[:n])
    if has_aux:
        return po, vjp_fn, _aux_rebuild(a_spec, p_out[n:])
    return po, vjp_fn


class _LinearizedFun:
    """The static part of ``linearize``'s function: called with the residuals (the ``Partial``'s
    leaves) and the input tangents."""

    def __init__(self, jaxpr: core.Jaxpr, diff_mask: list, p_tree: Any, out_tree: Any) -> None:
        self.jaxpr, self.diff_mask, self.p_tree, self.out_tree = jaxpr, diff_mask, p_tree, out_tree

    def __call__(self, consts: list, *tangents: Any) -> Any:
        t_flat, t_tree = tu.tree_flatten(tangents)
        if t_tree != self.p_tree:
            raise TypeError(f"linearized function called with tangent structure {t_tree}, expected {self.p_tree}")
        ts = [t for t, d in zip(t_flat, self.diff_mask) if d]
        return tu.tree_unflatten(self.out_tree, core.eval_jaxpr(self.jaxpr, consts, *ts))


def _vjp_ct_type_error(ct_aval: Any, primal_aval: Any) -> ValueError:
    return ValueError(
        f"unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got {long_str(ct_aval)}, but expected "
        f"{long_str(ad.tangent_aval(primal_aval))} because the corresponding output of the differentiated function "
        f"had JAX type {long_str(primal_aval)}"
    )


class _VjpFun:
    """The static part of a vjp function: the linear jaxpr and the trees; called with the
    residuals (the dynamic part, leaves of the ``Partial``) and an output cotangent."""

    def __init__(
        self,
        jaxpr: core.Jaxpr,
        diff_mask: list,
        in_avals: list,
        out_avals: list,
        extra_avals: list,
        o_tree: Any,
        p_tree: Any,
        src_info: str = "<unknown>",
    ) -> None:
        self.jaxpr, self.diff_mask, self.in_avals = jaxpr, diff_mask, in_avals
        self.out_avals, self.extra_avals, self.o_tree, self.p_tree = out_avals, extra_avals, o_tree, p_tree
        self.src_info = src_info

    def __call__(self, consts: list, ct: Any) -> tuple:
        ct_flat, ct_tree = tu.tree_flatten(ct)
        if ct_tree != self.o_tree:  # ValueError, as JAX raises (in its words)
            from fjax._tree_prefix import equality_errors_treedef  # noqa: PLC0415

            diffs = "\n".join(
                f"  * out{p} was a {a} in the original output, but a {b} here, so {why}."
                for p, a, b, why in equality_errors_treedef(self.o_tree, ct_tree)
            )
            raise ValueError(
                "unexpected tree structure.\n\nThe argument to a VJP function returned by `jax.vjp` must match the "
                f"pytree\nstructure of the differentiated function {self.src_info}.\n\nBut the tree structures "
                f"differ:\n{diffs}"
            )
        cts = []
        for c, a in zip(ct_flat, self.out_avals):
            if isinstance(c, np.ndarray) and c.dtype == dtypes.float0:
                cts.append(Zero(ad.tangent_aval(a)))
                continue
            c = _check_arg(c, "vjp", "cotangent")
            ca = core.get_aval(c)
            if ca.shape != a.shape:
                raise _vjp_ct_type_error(ca, a)
            if _dkind(a.dtype) not in "fc":
                cts.append(Zero(ad.tangent_aval(a)))
                continue
            if ca.dtype != a.dtype:  # as JAX: no conversion, not even float64 -> float32 under x64
                raise _vjp_ct_type_error(ca, a)
            cts.append(c)
        cts += [Zero(a) for a in self.extra_avals]
        undefined = [ad.UndefinedPrimal(v.aval) for v in self.jaxpr.invars]
        cts_lin = iter(ad.backward_pass(self.jaxpr, consts, undefined, cts))
        res = [next(cts_lin) if d else Zero(ad.tangent_aval(a)) for a, d in zip(self.in_avals, self.diff_mask)]
        res = [_ct_out(r, a) for r, a in zip(res, self.in_avals)]
        return tuple(tu.tree_unflatten(self.p_tree, res))

    def __repr__(self) -> str:
        return "<vjp function>"


def _ct_out(ct: Any, aval: ShapedArray) -> Any:
    if type(ct) is Zero:
        if _dkind(aval.dtype) not in "fc":
            return np.zeros(aval.shape, dtypes.float0)
        return ad._zeros_like(aval)
    return ct


def value_and_grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
    reduce_axes: Sequence = (),
) -> Callable:
    """Return a function computing ``(fun(*args), grad(fun)(*args))`` in one pass."""
    nums = _argnums_tuple(argnums)
    name = _fun_name(fun)

    @functools.wraps(fun, updated=())
    def value_and_grad_f(*args: Any, **kwargs: Any) -> Any:
        for i in nums:
            if not -len(args) <= i < len(args):
                shown = argnums if isinstance(argnums, int) else nums  # (a list prints as JAX's tuple)
                raise TypeError(
                    f"differentiating with respect to argnums={shown} requires at least {max(nums) + 1} positional "
                    f"arguments to be passed by the caller, but got only {len(args)} positional arguments."
                )
        idx = [i % len(args) for i in nums]
        dyn = [args[i] for i in idx]
        flat, tree = tu.tree_flatten(dyn)
        flat = [_check_arg(x, f"grad({name})") for x in flat]
        for x in flat:
            a = core.get_aval(x)
            if holomorphic and _dkind(a.dtype) != "c":
                raise TypeError(
                    f"grad with holomorphic=True requires inputs with complex dtype, but got {a.dtype.name}."
                )
            if _dkind(a.dtype) not in "fc" and not allow_int:
                raise TypeError(
                    f"grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact), "
                    f"but got {a.dtype.name}. If you want to use Boolean- or integer-valued inputs, use vjp or set "
                    "allow_int to True."
                )

        def f_dyn(*dyn_args: Any) -> Any:
            full = list(args)
            for i, a in zip(idx, dyn_args):
                full[i] = a
            return fun(*full, **kwargs)

        if has_aux:
            out, f_vjp, aux = vjp(f_dyn, *tu.tree_unflatten(tree, flat), has_aux=True)
        else:
            out, f_vjp = vjp(f_dyn, *tu.tree_unflatten(tree, flat))
        if isinstance(out, (Array, core.Tracer)) or type(out) in (float, int):
            oa = core.get_aval(out)
        else:
            raise TypeError(f"Gradient only defined for scalar-output functions. Output was {out!r}.")
        if oa.shape != ():
            raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: {oa.shape}.")
        if holomorphic:
            if _dkind(oa.dtype) != "c":
                raise TypeError(
                    f"grad with holomorphic=True requires outputs with complex dtype, but got {oa.dtype.name}."
                )
        elif _dkind(oa.dtype) == "c":
            raise TypeError(
                f"grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but got "
                f"{oa.dtype.name}. For holomorphic differentiation, pass holomorphic=True. For differentiation "
                "of non-holomorphic functions involving complex outputs, use jax.vjp directly."
            )
        elif _dkind(oa.dtype) != "f":
            raise TypeError(
                f"grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but got "
                f"{oa.dtype.name}. For differentiation of functions with integer outputs, use jax.vjp directly."
            )
        ct = core.Array(np.ones((), oa.dtype), oa.weak_type)
        grads = f_vjp(ct)
        g = grads[0] if isinstance(argnums, int) else tuple(grads)
        if has_aux:
            return (out, aux), g
        return out, g

    return value_and_grad_f


def grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
    reduce_axes: Sequence = (),
) -> Callable:
    """Return a function that computes the gradient of scalar-valued ``fun`` w.r.t. ``argnums``."""
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun, updated=())
    def grad_f(*args: Any, **kwargs: Any) -> Any:
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        _, g = vg(*args, **kwargs)
        return g

    return grad_f


# ---------------------------------------------------------------------------------------------
# vmap


def _flatten_axes(what: str, tree: tu.PyTreeDef, axes: Any, kws: bool = False) -> list:
    """Broadcast an ``in_axes``/``out_axes`` prefix tree to the leaves of ``tree``."""
    try:
        return (
            tree.flatten_up_to_prefix(axes) if hasattr(tree, "flatten_up_to_prefix") else _prefix_broadcast(tree, axes)
        )
    except (ValueError, TypeError) as e:
        from fjax._tree_prefix import prefix_errors  # noqa: PLC0415

        errors = prefix_errors(axes, tu.tree_unflatten(tree, [_PytreeLeaf()] * tree.num_leaves))
        if errors:  # JAX's report: every mismatch with its key path
            details = "\n  ".join(err(f"vmap {what}").args[0] for err in errors)
            raise ValueError(
                f"vmap {what} specification must be a tree prefix of the corresponding value; \n"
                f"  Mismatch details ({len(errors)} found):\n  {details}"
            ) from None
        raise ValueError(
            f"vmap {what} specification must be a tree prefix of the corresponding value, got specification "
            f"{axes!r} for value tree {tree}. ({e})"
        ) from None


class _PytreeLeafMeta(type):
    # JAX's reports name the type of a value-tree leaf by its own class, and code written for JAX
    # (tests matching on the message) reads that name: print it as JAX does
    def __repr__(cls) -> str:
        return "<class 'jax._src.api_util.PytreeLeaf'>"


class _PytreeLeaf(metaclass=_PytreeLeafMeta):
    """Stands for a leaf of the value tree in prefix-error reports (as JAX's ``PytreeLeaf``)."""

    def __repr__(self) -> str:
        return "pytree leaf"


def _long_type(x: Any) -> str:
    """``float32[2,3]``: JAX's ``str_short`` of an argument, as its vmap size errors print it."""
    try:
        aval = core.get_aval(x)
        dt = aval.dtype.name if isinstance(aval.dtype, np.dtype) else aval.dtype
        return f"{dt}[{','.join(map(str, aval.shape))}]"
    except Exception:  # noqa: BLE001 - only a message is at stake
        return "unknown"


def _inconsistent_sizes(
    fun: Callable, args: tuple, kwargs: dict, leaves: list, axes: list, sizes: list, axis_size: Any
) -> ValueError:
    """JAX's report of mapped axes of different sizes: each size (most common first) with the
    first argument mapped to it, named after ``fun``'s parameters where they bind."""
    try:
        params: list | None = list(inspect.signature(fun).bind(*args, **kwargs).signature.parameters)
    except (TypeError, ValueError):
        params = None
    names = []
    for path in tu.leaf_paths(args):
        i = int(path[1 : path.index("]")]) if path.startswith("[") else -1
        if params is None or not 0 <= i < len(params):
            names.append(f"args{path}")
        else:
            names.append(f"argument {params[i]}{path[path.index(']') + 1 :]}")
    names += [f"kwargs{p}" for p in tu.leaf_paths(kwargs)]
    counts = collections.Counter(s for s in sizes if s is not None).most_common()
    msg = ["vmap got inconsistent sizes for array axes to be mapped:\n"]
    if axis_size is not None:
        msg.append(f"  * the `axis_size` argument was {axis_size};\n")
    for k, (sz, ct) in enumerate(counts):
        i = sizes.index(sz)
        ex = f"axis {axes[i]} of {names[i]} of type {_long_type(leaves[i])}"
        if ct == 1:
            msg.append(f"  * one axis had size {sz}: {ex};\n")
        else:
            many = "most" if k == 0 else "some"
            msg.append(f"  * {many} axes ({ct} of them) had size {sz}, e.g. {ex};\n")
    return ValueError("".join(msg)[:-2])


def _prefix_broadcast(tree: tu.PyTreeDef, axes: Any) -> list:
    # replace each subtree of the value tree under a leaf of ``axes`` by that leaf
    proxy = tu.tree_unflatten(tree, [object()] * tree.num_leaves)
    out: list = []

    def rec(ax: Any, sub: Any) -> None:
        if ax is None or isinstance(ax, (int, np.integer)):
            n = len(tu.tree_leaves(sub))
            out.extend([ax] * n)
            return
        ax_children = _children(ax)
        sub_children = _children(sub)
        # a list prefix of a tuple value (or the reverse) is no prefix, as in JAX's tree_map
        if type(ax) is not type(sub):
            raise ValueError(f"axes node {type(ax).__name__} does not match value node {type(sub).__name__}")
        if len(ax_children) != len(sub_children):
            raise ValueError(f"axes node has {len(ax_children)} children, value node has {len(sub_children)}")
        if isinstance(ax, dict) and set(ax) != set(sub):
            raise ValueError(f"dict keys {sorted(ax)} do not match {sorted(sub)}")
        for a, s in zip(ax_children, sub_children):
            rec(a, s)

    rec(axes, proxy)
    return out


def _children(x: Any) -> list:
    if isinstance(x, dict):
        return [x[k] for k in sorted(x)]
    if isinstance(x, (list, tuple)):
        return list(x)
    if x is None:
        return []
    # a registered custom node (its aux data may be anything, None included)
    return list(tu.flatten_one_level(x)[0])


def vmap(
    fun: Callable,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: Any = None,
    axis_size: int | None = None,
    spmd_axis_name: Any = None,
    sum_match: bool = False,
) -> Callable:
    """Vectorize ``fun`` over the axes ``in_axes`` of its arguments, stacking outputs at ``out_axes``
    (``sum_match``: an output with ``out_axes`` None that varies along the mapped axis is summed
    over it, instead of raising)."""
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    # TypeErrors at vmap() time, as in JAX (numpy integers pass too)
    # numpy integers are refused as axes, as in JAX (which checks for Python ints)
    if not (in_axes is None or isinstance(in_axes, (int, tuple))):
        raise TypeError(
            "vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional arguments "
            f"passed to the function, but got {in_axes}."
        )
    if not all(isinstance(a, int) for a in tu.tree_leaves(in_axes)):
        raise TypeError(
            f"vmap in_axes must be an int, None, or (nested) container with those types as leaves, but got {in_axes}."
        )
    if not all(isinstance(a, int) for a in tu.tree_leaves(out_axes)):
        raise TypeError(
            f"vmap out_axes must be an int, None, or (nested) container with those types as leaves, but got {out_axes}."
        )
    name = _fun_name(fun)

    @functools.wraps(fun, updated=())
    def vmap_f(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional "
                f"arguments passed to the function, but got len(in_axes)={len(in_axes)}, len(args)={len(args)}"
            )
        a_flat, a_tree = tu.tree_flatten(args)
        k_flat, k_tree = tu.tree_flatten(kwargs)
        axes_flat = _flatten_axes("in_axes", a_tree, in_axes) + [0] * len(k_flat)
        if not a_flat and not k_flat and axis_size is None:
            raise ValueError(
                "vmap wrapped function must be passed at least one argument containing an array or axis_size must "
                f"be specified, got empty *args={args} and **kwargs={kwargs}"
            )
        axes_all = list(axes_flat)
        # a key array's axes are its data's but the last (the key words): count negative ones so
        key_data = tu.lifted_leaf_mask(a_tree) + tu.lifted_leaf_mask(k_tree)
        all_leaves = a_flat + k_flat
        # an unmapped leaf that is no JAX value (a function, a string) passes through as it is (as in JAX)
        static: dict = {}
        for i, (x, ax) in enumerate(zip(all_leaves, axes_flat)):
            if ax is None and not isinstance(x, (core.Tracer, Array)):
                try:
                    _check_arg(x, f"vmap({name})")
                except TypeError:
                    static[i] = x
        if static:
            keep = [i for i in range(len(all_leaves)) if i not in static]
            axes_flat = [axes_flat[i] for i in keep]
            key_data = [key_data[i] for i in keep]
        flat = [_check_arg(x, f"vmap({name})") for i, x in enumerate(all_leaves) if i not in static]
        dims = []
        for x, ax, kd in zip(flat, axes_flat, key_data):
            if ax is None:
                dims.append(None)
                continue
            if not isinstance(ax, int):
                raise TypeError(f"vmap in_axes leaves must be ints or None, got {ax!r}")
            nd = core.get_aval(x).ndim - kd
            if not -nd <= ax < nd:
                raise ValueError(
                    f"vmap was requested to map its argument along axis {ax}, which implies that its rank should "
                    f"be at least {ax + 1 if ax >= 0 else -ax}, but is only {nd} (its shape is "
                    f"{core.get_aval(x).shape[:nd]})"
                )
            dims.append(ax % nd)
        sizes = {core.get_aval(x).shape[d] for x, d in zip(flat, dims) if d is not None}
        if axis_size is not None:
            sizes.add(axis_size)
        if not sizes:
            raise ValueError("vmap must have at least one non-None value in in_axes or axis_size must be specified")
        if len(sizes) > 1:
            it = iter(zip(flat, dims))
            mapped = []  # the size each leaf is mapped along (None: unmapped or static)
            for i in range(len(all_leaves)):
                x, d = (None, None) if i in static else next(it)
                mapped.append(None if d is None else core.get_aval(x).shape[d])
            raise _inconsistent_sizes(fun, args, kwargs, all_leaves, axes_all, mapped, axis_size)
        size = sizes.pop()
        out_tree_box: list = []

        def flat_fun(*leaves: Any) -> list:
            if static:
                it = iter(leaves)
                leaves = [static[i] if i in static else next(it) for i in range(len(all_leaves))]
            n = len(a_flat)
            a = tu.tree_unflatten(a_tree, list(leaves[:n]))
            k = tu.tree_unflatten(k_tree, list(leaves[n:]))
            out = fun(*a, **k)
            o_flat, o_tree = tu.tree_flatten(out)
            out_tree_box.append(o_tree)
            return [_check_arg(o, f"vmap({name})", "output") for o in o_flat]

        def out_dims_thunk(n: int) -> list:
            axes = _flatten_axes("out_axes", out_tree_box[0], out_axes)
            key_data = tu.lifted_leaf_mask(out_tree_box[0])
            return [a - 1 if kd and isinstance(a, int) and a < 0 else a for a, kd in zip(axes, key_data)]

        data = batching.AxisData(size, axis_name, spmd_axis_name)
        try:
            outs = batching.vmap_flat(flat_fun, size, dims, flat, out_dims_thunk, axis_data=data, sum_match=sum_match)
        except batching.UnmappedOutputError as e:
            path = (
                ""
                if e.index is None
                else tu.leaf_paths(tu.tree_unflatten(out_tree_box[0], [0] * out_tree_box[0].num_leaves))[e.index]
            )
            raise ValueError(
                f"at vmap out_axes{path}, got axis spec None but output was batched on axis {e.src}"
            ) from None
        return tu.tree_unflatten(out_tree_box[0], outs)

    return vmap_f


# jacfwd/jacrev/hessian live in fjax/_jacobians.py (built on the functions above)
from fjax._jacobians import hessian as hessian  # noqa: E402
from fjax._jacobians import jacfwd as jacfwd  # noqa: E402
from fjax._jacobians import jacrev as jacrev  # noqa: E402
