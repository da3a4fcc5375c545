"""The per-call fast path of ``fjax.jit`` (``JitWrapped.__call__``): signatures of eager calls
looked up in one dict, and what a hit needs to run prepared once per signature.

A call made outside every transform (this thread's trace stack holds only the eager main) whose
dynamic leaves are plain ``Array``s, numpy arrays, numpy scalars or Python scalars gets a *fast
key*: ``(trace config, tree spec, [nargs, keyword names, static values,] leaf signatures...)``.
Each fast key maps to a ``FastEntry`` built from the trace cache's entry on the first call with
that key (through the general path, which traces, validates and raises as before), so later
calls skip building a ``PyTreeDef``, re-deriving output metadata and converting constants.

What stays per call, as JAX: the leaf signatures (shape, dtype, weak type), the trace config
(``jax_enable_x64`` and the other options in the trace context, per thread), the placement hook
(inputs on a GPU or committed to a device), the backend's compile-cache check (``jit._jit_impl``:
tiered compiles, retries, ``jax_no_execution``, ``jax_debug_nans``) and donation.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core, dtypes
from fjax._core_values import DeletedArray as _DeletedArray
from fjax.config import config
from fjax.core import Array
from fjax.tree_util import _NONE_SPEC, _flatten

# most fast keys a function keeps (static arguments with ever-new values would grow it for good)
MAX_FAST_KEYS = 1024

_FLOAT0 = dtypes.float0
_TUPLE_SPECS: list = []


def tuple_spec(n: int) -> tuple:
    """The tree spec of a tuple of ``n`` leaves (what ``tree_util`` builds for ``args``), shared."""
    while len(_TUPLE_SPECS) <= n:
        _TUPLE_SPECS.append((tuple, None, (None,) * len(_TUPLE_SPECS)))
    return _TUPLE_SPECS[n]


class FastEntry:
    """What a fast-key hit runs: the traced program and its output metadata."""

    __slots__ = ("closed", "consts", "const_vals", "out_tree", "out_meta", "single", "run_for")

    def __init__(self, closed: core.ClosedJaxpr, consts: list, const_vals: list, out_tree: Any) -> None:
        self.closed = closed
        self.consts = consts
        self.const_vals = const_vals
        self.out_tree = out_tree
        # per output: (dtype, weak_type, float0?, shape)
        self.out_meta = tuple(
            (a.dtype, a.weak_type, a.dtype.kind == "V" and a.dtype == _FLOAT0, a.shape) for a in closed.out_avals
        )
        self.single = out_tree._spec is None  # one array out: no unflattening
        # (compile hook, expander, their generations as (list, value) pairs, callable): the callable
        # ``jit._jit_impl`` settled on (``jit._settle``) and what it was settled for, set and read
        # as one value (threads)
        self.run_for: tuple | None = None

    @property
    def run(self) -> Any:
        """The settled callable (None: calls go through ``jit._jit_impl``)."""
        rf = self.run_for
        return None if rf is None else rf[6]


def make_entry(entry: tuple, flat: list, leaves: list) -> FastEntry | None:
    """A ``FastEntry`` for the trace cache's ``entry`` of a call whose general-path leaves are
    ``flat`` and fast-path leaves ``leaves``; None when the fast path cannot run it (constants
    that are not plain arrays, or leaves that differ: the general path keeps such calls)."""
    closed, consts, out_tree = entry
    if len(flat) != len(leaves) or any(a is not b for a, b in zip(flat, leaves)):
        return None
    if any(type(c) is not Array for c in consts):
        return None
    return FastEntry(closed, consts, [c._value for c in consts], out_tree)


class RefArgument(TypeError):
    """A ``Ref`` among a jitted function's arguments (``JitWrapped.__call__`` threads it)."""


def leaf_signature(x: Any) -> Any:
    """(shape, canonical dtype, weak type) of one leaf of a jitted function's arguments: what the
    trace cache keys on; JAX's TypeError for a value that is not an array or scalar."""
    t = type(x)
    if t is Array:
        v = x._value
        return (v.shape, v.dtype, x.weak_type)
    if isinstance(x, Array):  # sharded and device arrays subclass Array (never read their values here)
        return (x.shape, x.dtype, x.weak_type)
    if isinstance(x, core.Tracer):
        a = x.aval
        return (a.shape, a.dtype, a.weak_type)
    if t in (float, int, complex, bool):
        return ((), dtypes.dtype_of_python_scalar(x) if t is not bool else np.dtype(bool), t is not bool)
    if isinstance(x, (np.ndarray, np.generic)):
        return (x.shape, dtypes.canonicalize_dtype(x.dtype), False)
    if t.__name__ == "ShapeDtypeStruct" and hasattr(x, "weak_type"):  # fjax.ShapeDtypeStruct: lower/eval_shape
        return (tuple(x.shape), dtypes.canonicalize_dtype(x.dtype), bool(x.weak_type))
    if t.__name__ == "Ref" and t.__module__ == "fjax.ref":
        raise RefArgument("a Ref argument: jit threads it (fjax.ref.call_with_ref_args)")
    raise TypeError(
        f"Argument {x!r} of type {t.__name__} is not a valid JAX type: jitted functions take arrays, scalars and "
        "pytrees of them (mark other arguments static with static_argnums/static_argnames)"
    )


# (type, x64) -> signature of a Python scalar: weakly typed, of the default dtype (bool: not weak)
_scalar_sigs: dict = {}
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1


_NONES: list = []


def _nones(n: int) -> tuple:
    while len(_NONES) <= n:
        _NONES.append((None,) * len(_NONES))
    return _NONES[n]


def _tree_key(x: Any, key: list, vals: list) -> Any:
    """The tree spec of ``x`` (as ``tree_util._flatten`` builds it) when it is made of tuples,
    lists, dicts and None around plain ``Array`` leaves and Python scalars, their signatures and
    values appended as it goes (one pass: flattening and signing a params dict in one loop); None
    otherwise."""
    t = type(x)
    if t is dict:
        try:
            aux = tuple(sorted(x))
        except TypeError:
            return None  # (tree_util's ValueError, from the general path)
        get = x.__getitem__
        children: Any = map(get, aux)
    elif t is tuple or t is list:
        aux = None
        children = x
    elif x is None:
        return _NONE_SPEC
    else:
        return None
    # first as if every child were a plain array (a params dict): the common case, kept lean
    k0, v0 = len(key), len(vals)
    kadd, vadd = key.append, vals.append
    n = 0
    for c in children:
        if type(c) is not Array:
            break
        v = c._value
        kadd((v.shape, v.dtype, c.weak_type))
        vadd(v)
        n += 1
    else:
        return (t, aux, _nones(n))
    del key[k0:], vals[v0:]
    return _mixed_key(x if aux is None else map(get, aux), t, aux, key, vals)


def _mixed_key(children: Any, t: type, aux: Any, key: list, vals: list) -> Any:
    """``_tree_key`` of a node whose ``children`` are not all plain arrays."""
    kadd, vadd = key.append, vals.append
    kids = []
    for c in children:
        tc = type(c)
        if tc is Array:
            v = c._value
            kadd((v.shape, v.dtype, c.weak_type))
            vadd(v)
            kids.append(None)
        elif tc is float or tc is int or tc is bool or tc is complex:
            if not _scalar_key(c, tc, key, vals):
                return None
            kids.append(None)
        else:
            s = _tree_key(c, key, vals)
            if s is None:
                return None
            kids.append(s)
    return (t, aux, tuple(kids))


def tree_key(args: tuple, key: list, vals: list) -> bool:
    """Set ``key[1]`` to the spec of ``args`` and append its leaves' signatures and values, for
    ``args`` made of tuples, lists, dicts and None around plain arrays and Python scalars (the
    leaves are not collected: ``leaves_of`` when needed); False for the general path."""
    spec = _mixed_key(args, tuple, None, key, vals)  # (the caller found a non-array among args)
    if spec is None:
        return False
    key[1] = spec
    return True


def leaves_of(args: tuple) -> list:
    leaves: list = []
    _flatten(args, leaves.append)
    return leaves


def _scalar_key(x: Any, t: type, key: list, vals: list) -> bool:
    """Append a Python scalar's signature and value (False: an int that does not fit int32, left
    to the general path, which raises JAX's OverflowError or wraps it as ``to_array`` does)."""
    sig = _scalar_sigs.get((t, config.jax_enable_x64))
    if sig is None:
        sig = _scalar_sigs[(t, config.jax_enable_x64)] = leaf_signature(x)
    if t is int and not (_I32_MIN <= x <= _I32_MAX):
        return False
    key.append(sig)
    v = np.array(x, sig[1])
    # read-only, as every value a compiled program gets: its kernels are compiled for read-only
    # inputs and a writable one may match no overload of a kernel that two programs share
    v.setflags(write=False)
    vals.append(v)
    return True


def leaf_key(leaves: list, key: list, vals: list) -> bool | None:
    """Append each leaf's signature to ``key`` and its numpy value (None: convert it on the call)
    to ``vals``; whether some value is to convert, or None when a leaf needs the general path (a
    tracer, a key array, a Ref, a value that is not a valid JAX type: the general path raises
    JAX's error for it)."""
    convert = False
    for x in leaves:
        if type(x) is Array:
            v = x._value
            key.append((v.shape, v.dtype, x.weak_type))
            vals.append(v)
            continue
        t = type(x)
        if t is float or t is int or t is bool or t is complex:
            if not _scalar_key(x, t, key, vals):
                return None
            continue
        if isinstance(x, core.Tracer) or t in tu._lifted:
            return None
        try:
            key.append(leaf_signature(x))
        except Exception:  # noqa: BLE001 - the general path raises it (with the same message)
            return None
        vals.append(None)
        convert = True
    return convert


def _plan(wrapped: Any, nargs: int, names: tuple) -> tuple:
    """How to pick a call's static values and dynamic arguments (as ``JitWrapped._split`` does)
    for ``nargs`` positional arguments and keyword arguments ``names`` (in call order): getters
    of the static positional and keyword values, the slice (else the indices) of the dynamic
    positional arguments, and a getter of the dynamic keyword values as a tuple (sorted by name,
    as flattening the keyword dict orders them)."""
    static_idx = tuple(i % nargs for i in wrapped.static_argnums if -nargs <= i < nargs)
    dyn_idx = tuple(i for i in range(nargs) if i not in static_idx)
    sa = wrapped.static_argnames
    static_kw = tuple(sorted(k for k in names if k in sa))
    dyn_kw = tuple(sorted(k for k in names if k not in sa))
    if not dyn_idx:
        dyn_slice: slice | None = slice(0, 0)
    elif dyn_idx == tuple(range(dyn_idx[0], dyn_idx[-1] + 1)):
        dyn_slice = slice(dyn_idx[0], dyn_idx[-1] + 1)
    else:
        dyn_slice = None
    if not dyn_kw:
        dkw_get = None
    elif len(dyn_kw) == 1:
        k0 = dyn_kw[0]
        dkw_get = lambda d: (d[k0],)  # noqa: E731
    else:
        dkw_get = operator.itemgetter(*dyn_kw)
    return (
        operator.itemgetter(*static_idx) if static_idx else None,
        operator.itemgetter(*static_kw) if static_kw else None,
        dyn_slice,
        dyn_idx,
        dkw_get,
    )


def general_key(wrapped: Any, args: tuple, kwargs: dict, cfg: Any) -> tuple | None:
    """``(key, leaves, vals, convert)`` of a call with static or keyword arguments (``leaves`` in
    the order the general path flattens ``(dyn_args, dyn_kwargs)``: keyword arguments by sorted
    name), or None for the general path."""
    pk = (len(args), tuple(kwargs) if kwargs else ())
    plans = wrapped._plans
    plan = plans.get(pk)
    if plan is None:
        plan = _plan(wrapped, *pk)
        if len(plans) > 256:
            plans.clear()
        plans[pk] = plan
    s_get, skw_get, dyn_slice, dyn_idx, dkw_get = plan
    dyn = args[dyn_slice] if dyn_slice is not None else tuple([args[i] for i in dyn_idx])
    if dkw_get is not None:
        dyn += dkw_get(kwargs)
    key = [
        cfg,
        None,
        pk,
        None if s_get is None else s_get(args),
        None if skw_get is None else skw_get(kwargs),
    ]
    vals: list = []
    for x in dyn:
        if type(x) is not Array:
            break
        v = x._value
        key.append((v.shape, v.dtype, x.weak_type))
        vals.append(v)
    else:
        key[1] = tuple_spec(len(dyn))
        return tuple(key), dyn, vals, False
    leaves: list = []
    key[1] = _flatten(dyn, leaves.append)
    del key[5:]
    vals.clear()
    convert = leaf_key(leaves, key, vals)
    if convert is None:
        return None
    return tuple(key), leaves, vals, convert


def wrap_outputs(outs: list, meta: tuple) -> list:
    """The compiled program's numpy outputs as ``Array``s of the traced dtypes and weak types (a
    float0 output, which holds no data, as a numpy array of zeros, as JAX returns it)."""
    res = []
    for o, (dt, weak, f0, shape) in zip(outs, meta):
        if f0:
            res.append(np.zeros(shape, dt))
            continue
        if type(o) is not np.ndarray or (o.dtype is not dt and o.dtype != dt):
            o = np.asarray(o, dtype=dt)
        # Array(o, weak), frozen with setflags (numpy's ``flags.writeable = False`` calls it, at
        # about twice the cost: a few hundred ns per output)
        o.setflags(write=False)
        a = _new_array(Array)
        a._value = o
        a.weak_type = weak
        res.append(a)
    return res


_new_array = Array.__new__


# (shape, dtype) -> the value a deleted array keeps (no data: a broadcast zero, read-only)
_dead: dict = {}
_set_value = Array._value.__set__


def delete(x: Array) -> None:
    """``x.delete()`` for a plain ``Array`` donated to a jitted call, sharing the data-less value
    per (shape, dtype): ``np.broadcast_to`` costs microseconds per call (as ``Array.delete``)."""
    v = x._value
    k = (v.shape, v.dtype)
    dead = _dead.get(k)
    if dead is None:
        if len(_dead) > 1024:
            _dead.clear()
        dead = _dead[k] = np.broadcast_to(np.zeros((), v.dtype), v.shape)
    _set_value(x, dead)
    x.__class__ = _DeletedArray


# ---- buffer donation ------------------------------------------------------------------------

# which donated leaves an output can take over, per program: kept in the jaxpr's own ``compiled`` dict
# (it dies with the jaxpr; a plain dict lookup per call, not a WeakKeyDictionary's)
_DONATION = ("donation",)


def donate(args: tuple, donate_argnums: tuple, closed: core.ClosedJaxpr, stacklevel: int = 3) -> None:
    """After an eager call: delete the donated argument arrays an output of the same shape and
    dtype could take over (as XLA aliases them; a later use raises JAX's ``RuntimeError``), and
    warn once per program about the ones no output could use, with JAX's message (``stacklevel``:
    the caller of the jitted function's frame)."""
    n = len(args)
    donated = []
    for i in donate_argnums:
        if i < n:
            a = args[i]
            if type(a) is Array:
                donated.append(a)
            else:
                donated.extend([x for x in tu.tree_leaves(a) if type(x) is Array])
    if not donated:
        return
    comp = closed.compiled
    plan = comp.get(_DONATION) if comp is not None else None
    if plan is None or len(plan) != len(donated):
        free: dict = {}
        for a in closed.out_avals:
            free[(a.shape, a.dtype)] = free.get((a.shape, a.dtype), 0) + 1
        plan, unused = [], []
        for x in donated:
            key = (x.shape, x.dtype)
            ok = free.get(key, 0) > 0
            if ok:
                free[key] -= 1
            else:
                unused.append(str(x.aval))
            plan.append(ok)
        if closed.compiled is None:
            closed.compiled = {}
        closed.compiled[_DONATION] = plan
        if unused:
            warnings.warn(
                f"Some donated buffers were not usable: {', '.join(unused)}.\n"
                "See an explanation at https://docs.jax.dev/en/latest/faq.html#buffer-donation.",
                stacklevel=stacklevel,
            )
    for x, ok in zip(donated, plan):
        if ok:
            delete(x)
