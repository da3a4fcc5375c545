"""Helpers shared by the control-flow primitives (cond, switch, while_loop, fori_loop, scan).

* ``trace_fn_to_jaxpr``: trace a user function of pytrees to a ``ClosedJaxpr`` whose
  constants are hoisted into *leading inputs* (so the primitive's params carry no values), plus
  the constant values to pass and the output tree.
* ``check_carry_match`` / ``check_tree_match``: JAX-style errors when a loop body changes the
  carry's types or structure, naming the leaf path, both types and the function.
* ``promote_weak_carry``: JAX's promotion of weakly typed initial carries to the body's output
  types (``fori_loop(0, n, lambda i, x: x + 1.0, 0)`` runs with a float carry).
* ``abstractify`` / ``as_value``: leaf conversion.
* ``TraceCache`` / ``trace_cache``: the traced jaxprs of user functions, kept per (function
  object, input avals and trees, trace context) as JAX's ``weakref_lru_cache`` on
  ``trace_to_jaxpr`` keeps them: functions held weakly, bounded, entries whose constants hold
  tracers of a finished trace never reused.
* ``forwarded_outputs``: which outputs of a jaxpr are just one of its inputs.
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, Hashable, Sequence

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core
from fjax.core import ClosedJaxpr, ShapedArray
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.interpreters import partial_eval as pe

__all__ = [
    "TraceCache",
    "abstractify",
    "as_value",
    "carry_name",
    "check_carry_match",
    "check_tree_match",
    "promote_weak_carry",
    "trace_cache",
    "trace_fn_to_jaxpr",
    "trace_fn_to_jaxpr_cached",
]


def as_value(x: Any, fn_name: str = "control flow") -> Any:
    """A leaf as an fjax value (Tracer or Array); Python scalars become weakly typed arrays."""
    if isinstance(x, (core.Tracer, core.Array)):
        return x
    if type(x) in (bool, int, float, complex) or isinstance(x, (np.ndarray, np.generic)):
        return core.to_array(x, fn_name)
    if core.array_method(x) is not None:  # ``__jax_array__``
        return core.to_array(x, fn_name)
    raise TypeError(
        f"{fn_name}: value {x!r} of type {type(x).__name__} is not a valid JAX type "
        "(expected arrays, scalars and pytrees of them)"
    )


def abstractify(x: Any, fn_name: str = "control flow") -> ShapedArray:
    """The abstract value of a leaf (``ShapedArray`` with weak type)."""
    return core.get_aval(as_value(x, fn_name))


def trace_fn_to_jaxpr(
    fun: Callable, in_tree: tu.PyTreeDef, in_avals: Sequence[ShapedArray], debug_name: str = ""
) -> tuple[ClosedJaxpr, list, tu.PyTreeDef]:
    """Trace ``fun`` on abstract pytree arguments.

    ``in_tree`` is the treedef of the *tuple of positional arguments* (``tree_flatten(args)``),
    so ``fun`` is called as ``fun(*tree_unflatten(in_tree, leaves))``. Returns
    ``(closed_jaxpr, consts, out_tree)`` where ``closed_jaxpr`` has no constvars: its first
    ``len(consts)`` inputs are the hoisted constants (values closed over by ``fun``, possibly
    tracers of outer transforms), followed by one input per leaf of ``in_avals``. Call it as
    ``eval_jaxpr(closed.jaxpr, [], *consts, *leaves)``.
    """
    out_tree_box: list = []
    name = debug_name or getattr(fun, "__name__", type(fun).__name__)

    def flat_fun(*leaves: Any) -> list:
        args = tu.tree_unflatten(in_tree, list(leaves))
        out = fun(*args)
        o_flat, o_tree = tu.tree_flatten(out)
        out_tree_box.append(o_tree)
        return [as_value(o, name) for o in o_flat]

    jaxpr, consts, _ = pe.trace_to_jaxpr(flat_fun, list(in_avals), name)
    return ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), list(consts), out_tree_box[0]


class _Entry:
    __slots__ = ("mains", "refs", "value")

    def __init__(self, refs: tuple, value: Any, mains: tuple) -> None:
        self.refs = refs
        self.value = value
        self.mains = mains


class TraceCache:
    """A bounded LRU cache of traces of user functions, as JAX's ``weakref_lru_cache`` on its
    tracing: ``get(funs, key, make)`` returns ``make()``'s result for the function objects
    ``funs`` (compared by identity, held weakly) and the hashable ``key`` (avals, trees, names),
    in the calling thread's trace context (``core.trace_context()``) and named axes in scope
    (``batching.axis_env()``), which is what ``jit`` keys its traces on besides the arguments.

    * An entry goes when one of its functions is collected (it never keeps them alive) or when
      more than ``maxsize`` entries are held (least recently used first).
    * Functions that cannot be hashed or held weakly, and keys that cannot be hashed or
      compared, are not cached: ``make()`` runs each time.
    * The value's constants (``value[consts_at]``) may hold tracers of the transforms the trace
      ran under; such an entry is reused only while all those transforms are active in the
      calling thread (a later trace traces again instead of reusing a dead tracer).
    * As in JAX, a cached trace keeps the values it closed over when it was made: a function
      that reads a global array which is later rebound sees the old value until it is traced
      again (new avals or a new function object).
    """

    def __init__(self, maxsize: int = 4096) -> None:
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict = OrderedDict()
        self._dead: list = []  # keys whose functions died (weakref callbacks only append here)
        self._lock = threading.Lock()
        core.context_caches.append(self)  # ``fjax.clear_caches()`` empties it

    def __len__(self) -> int:
        self._purge()
        return len(self._entries)

    def cache_clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._dead.clear()

    def cache_info(self) -> tuple[int, int, int, int]:
        """``(hits, misses, maxsize, currsize)`` as ``functools.lru_cache``'s."""
        return self.hits, self.misses, self.maxsize, len(self)

    def _purge(self) -> None:
        if not self._dead:
            return
        dead = self._dead  # the callbacks append to this list: pop from it, never rebind it
        with self._lock:
            while dead:
                full = dead.pop()
                entry = self._entries.get(full)
                if entry is not None and any(r() is None for r in entry.refs):
                    del self._entries[full]

    @staticmethod
    def _usable(entry: _Entry, funs: Sequence[Callable]) -> bool:
        if not all(r() is f for r, f in zip(entry.refs, funs)):
            return False
        if entry.mains:
            stack = core._state.stack
            for r in entry.mains:
                m = r()
                if m is None or not m.active or not any(m is s for s in stack):
                    return False
        return True

    def get(self, funs: Sequence[Callable], key: Hashable, make: Callable[[], Any], consts_at: int = 1) -> Any:
        """``make()``, or the value it gave for the same functions, key and trace context."""
        try:
            for f in funs:  # an unhashable callable is not cached (JAX's cache needs a hash)
                hash(f)
            # the named axes in scope are part of the context (axis_size, psum shapes), as jit's
            env = batching.axis_env() if len(core._state.stack) > 1 else ()
            full = (tuple([id(f) for f in funs]), key, core.trace_context(), env)
            hash(full)
        except TypeError:
            return make()
        self._purge()
        try:
            entry = self._entries.get(full)
        except (TypeError, ValueError):  # aux data whose comparison raises
            return make()
        if entry is not None and self._usable(entry, funs):
            try:
                self._entries.move_to_end(full)
            except KeyError:  # evicted by another thread meanwhile
                pass
            self.hits += 1
            return entry.value
        self.misses += 1
        value = make()
        dead = self._dead

        def died(_: Any, full: tuple = full, dead: list = dead) -> None:
            dead.append(full)

        try:
            refs = tuple([weakref.ref(f, died) for f in funs])
        except TypeError:  # a function that cannot be held weakly
            return value
        tracers = {id(c._trace.main): c._trace.main for c in value[consts_at] if isinstance(c, core.Tracer)}
        entry = _Entry(refs, value, tuple([weakref.ref(m) for m in tracers.values()]))
        with self._lock:
            self._entries[full] = entry
            self._entries.move_to_end(full)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        return value


# the traces of user functions given to scan, cond, switch, while_loop and fori_loop
trace_cache = TraceCache()


def trace_fn_to_jaxpr_cached(
    fun: Callable,
    in_tree: tu.PyTreeDef,
    in_avals: Sequence[ShapedArray],
    debug_name: str = "",
    *,
    key_funs: tuple | None = None,
    tag: Hashable = None,
) -> tuple[ClosedJaxpr, list, tu.PyTreeDef]:
    """``trace_fn_to_jaxpr`` through ``trace_cache``: the same function object on the same avals,
    trees and trace context is traced once. ``key_funs`` (default ``(fun,)``) are the user
    functions that ``fun`` is a pure wrapper of (``tag`` names the wrapper), for callers that
    wrap them in a new closure on every call."""
    return trace_cache.get(
        key_funs if key_funs is not None else (fun,),
        (tag, debug_name, in_tree, tuple(in_avals)),
        lambda: trace_fn_to_jaxpr(fun, in_tree, in_avals, debug_name),
    )


def forwarded_outputs(jaxpr: core.Jaxpr) -> list[int | None]:
    """For each output of ``jaxpr``, the index of the input it is (``None`` when computed)."""
    index = {v: i for i, v in enumerate(jaxpr.invars)}
    return [index.get(v) if type(v) is core.Var else None for v in jaxpr.outvars]


def carry_name(fun: Callable, index: int = 0) -> str:
    """The name of ``fun``'s positional parameter ``index`` (the carry), or '' if unknown."""
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        return ""
    return params[index] if len(params) > index else ""


def _paths(tree: tu.PyTreeDef) -> list[str]:
    try:
        dummy = tu.tree_unflatten(tree, list(range(tree.num_leaves)))
        return [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(dummy)[0]]
    except Exception:  # custom nodes whose unflatten rejects placeholders
        return [f"[<flat index {i}>]" for i in range(tree.num_leaves)]


def _component(what: str | Callable[[], str], path: str) -> str:
    if callable(what):  # the carry's name, looked up only for an error (inspect is slow)
        what = what()
    if what:
        return f"the input carry component {what}{path}" if path else f"the input carry {what}"
    return f"the input carry at path {path}" if path else "the input carry"


def aval_str(a: Any) -> str:
    """An aval as JAX 0.10 prints it in errors (``str_short()``): the full dtype name, ``float32[2]``."""
    from fjax._core_values import long_str  # noqa: PLC0415

    return long_str(a)


class AvalText:
    """A placeholder leaf that prints as JAX's ``ShapedArray`` does (str ``float32[]``, repr
    ``ShapedArray(float32[])``), for messages that show a pytree of avals."""

    __slots__ = ("aval",)

    def __init__(self, aval: Any) -> None:
        self.aval = aval

    def __str__(self) -> str:
        return aval_str(self.aval)

    def __repr__(self) -> str:
        weak = ", weak_type=True" if getattr(self.aval, "weak_type", False) else ""
        return f"ShapedArray({aval_str(self.aval)}{weak})"


class _PytreeLeafMeta(type):
    def __repr__(cls) -> str:
        return "pytree leaf"


class _JaxShapedArrayMeta(type):
    # JAX's structure reports name a carry leaf by the type of its aval; code written for JAX
    # reads JAX's class there
    def __repr__(cls) -> str:
        return "<class 'jax._src.core.ShapedArray'>"


class _AvalLeaf(metaclass=_JaxShapedArrayMeta):
    """Stands for a carry aval in structure reports (its type prints as JAX's ``ShapedArray``)."""


class PytreeLeaf(metaclass=_PytreeLeafMeta):
    """A leaf whose type prints as ``pytree leaf`` (JAX's ``equality_errors_pytreedef``)."""


def _mismatch_extra(a: ShapedArray, b: ShapedArray) -> str:
    m = ["the dtypes do not match"] * (a.dtype != b.dtype) + ["the shapes do not match"] * (a.shape != b.shape)
    if not m:
        return ""
    return ", so " + (m[0] if len(m) == 1 else ", ".join(m[:-1]) + ", and " + m[-1])


def _capitalize(s: str) -> str:
    return s[0].upper() + s[1:]


def _join_diffs(diffs: list[str], loop_style: bool = False, capitalize: bool = True) -> str:
    """JAX's list of differences: one sentence, or a bulleted list. Its loops' list joins bullets
    that each end in a newline with newlines (``loop_style``: a blank line between all but the
    last two); its cond's does not."""
    if len(diffs) == 1:
        return (_capitalize(diffs[0]) if capitalize else diffs[0]) + ".\n"
    if loop_style:
        return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"
    return "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n"


def structure_diffs(tree1: tu.PyTreeDef, tree2: tu.PyTreeDef, leaves1: list, leaves2: list) -> list:
    """JAX's ``equality_errors``: ``(keystr path, thing1, thing2, why)`` where two pytrees
    (rebuilt from the treedefs with the given leaves) differ in structure."""
    from fjax._aot import _equality_errors  # noqa: PLC0415

    t1, t2 = tu.tree_unflatten(tree1, leaves1), tu.tree_unflatten(tree2, leaves2)
    return [(tu.keystr(tuple(p)), a, b, why) for p, a, b, why in _equality_errors((), t1, t2)]


def check_tree_match(
    fn_name: str,
    what: str | Callable[[], str],
    init_tree: tu.PyTreeDef,
    out_tree: tu.PyTreeDef,
    init_avals: Sequence[ShapedArray] | None = None,
) -> None:
    """Raise TypeError (JAX's wording) if the carry output structure differs from the input one."""
    if init_tree == out_tree:
        return
    try:
        # (only the structure is compared: every leaf, input or output, is one placeholder aval)
        leaf = _AvalLeaf()
        in_leaves = [leaf] * init_tree.num_leaves
        diffs = [
            f"{_component(what, p)} is a {a} but the corresponding component of the carry output is a {b}, so {why}"
            for p, a, b, why in structure_diffs(init_tree, out_tree, in_leaves, [leaf] * out_tree.num_leaves)
        ]
    except Exception:  # custom nodes whose unflatten rejects placeholders
        diffs = None
    if diffs is None:
        differences = f"the input tree structure is:\n{init_tree}\nthe output tree structure is:\n{out_tree}\n"
    elif not diffs:
        return  # the trees differ in aux data only (as JAX)
    else:
        differences = _join_diffs(diffs, loop_style=True)
    raise TypeError(
        f"{fn_name} function carry input and carry output must have the same pytree structure, but they "
        f"differ:\n\n{differences}\n"
        "Revise the function so that the carry output has the same pytree structure as the carry input."
    )


def check_carry_match(
    fn_name: str,
    what: str | Callable[[], str],
    init_avals: Sequence[ShapedArray],
    out_avals: Sequence[ShapedArray],
    tree: tu.PyTreeDef,
    out_tree: tu.PyTreeDef | None = None,
) -> None:
    """Raise TypeError (JAX's wording) if a loop body's output carry types differ from the input's.

    ``fn_name`` names the function, e.g. ``"while_loop body"`` or ``"scan body"``; ``what`` is
    the carry's name (e.g. ``carry_name(body_fun)``, may be '', or a function giving it, called only
    to report a mismatch); ``tree`` is the carry treedef,
    used to name the leaf paths. Weak types are ignored (compare shapes and dtypes). If
    ``out_tree`` is given, the structures are compared first.
    """
    if out_tree is not None:
        check_tree_match(fn_name, what, tree, out_tree, init_avals)
    if len(init_avals) != len(out_avals):
        raise TypeError(
            f"{fn_name} function carry input and carry output must have the same number of leaves, got "
            f"{len(init_avals)} and {len(out_avals)}"
        )
    paths = _paths(tree) if tree.num_leaves == len(init_avals) else [f"[{i}]" for i in range(len(init_avals))]
    diffs = [
        f"{_component(what, p)} has type {aval_str(a)} but the corresponding output carry component has type "
        f"{aval_str(b)}{_mismatch_extra(a, b)}"
        for p, a, b in zip(paths, init_avals, out_avals)
        if not core.typematch(a, b)
    ]
    if not diffs:
        return
    raise TypeError(
        f"{fn_name} function carry input and carry output must have equal types, but they differ:\n\n"
        f"{_join_diffs(diffs, loop_style=True)}\n"
        "Revise the function so that all output types match the corresponding input types."
    )


def promote_weak_carry(
    init_vals: Sequence[Any], init_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray]
) -> tuple[list, list[ShapedArray], bool]:
    """JAX's ``_promote_weak_typed_input``: a weakly typed initial carry leaf whose type differs
    from the body's output (dtype or shape, weak types aside) is converted to the promoted dtype,
    no longer weakly typed (``fori_loop(0, n, lambda i, x: x + 1.0, 0)`` runs with a float
    carry). A weak leaf whose output has the same dtype is left as it is (traced once, as JAX).

    Returns ``(new_vals, new_avals, changed)``; when ``changed`` the body must be traced again.
    """
    from fjax import dtypes  # noqa: PLC0415
    from fjax.lax import lax  # noqa: PLC0415

    new_vals, new_avals, changed = [], [], False
    for v, a, o in zip(init_vals, init_avals, out_avals):
        if a.weak_type and a.shape == o.shape and not core.typematch(a, o):
            new_dtype = dtypes.result_type(v, o)
            if new_dtype == o.dtype:
                if type(v) is core.Array:
                    # a concrete value is converted now (a literal in a staged jaxpr, as JAX's)
                    v = core.Array(np.asarray(v._value, dtype=new_dtype), False)
                else:
                    v = lax.convert_element_type(v, new_dtype)
                a = ShapedArray(a.shape, new_dtype, False)
                changed = True
        new_vals.append(v)
        new_avals.append(a)
    return new_vals, new_avals, changed


# ---------------------------------------------------------------------------------------------
# flat tracing and jaxpr transformations used by the rules (all return jaxprs without
# constvars: their constants come first among the inputs, returned alongside as ``consts``)


def trace_flat(fun: Callable, in_avals: Sequence[ShapedArray], name: str) -> tuple[ClosedJaxpr, list]:
    """Trace ``fun`` (flat list -> flat list) to a ClosedJaxpr with constants hoisted to inputs."""
    jaxpr, consts, _ = pe.trace_to_jaxpr(lambda *xs: [as_value(o, name) for o in fun(*xs)], list(in_avals), name)
    return ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), list(consts)


def eval_closed(closed: ClosedJaxpr, *args: Any) -> list:
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


def merge_consts(traced: Sequence[tuple[ClosedJaxpr, list]]) -> tuple[tuple[ClosedJaxpr, ...], list]:
    """Give jaxprs traced separately (each ``consts_i + args -> outs``) a common signature
    ``consts_0 + ... + consts_n + args``: each ignores the others' constants."""
    all_consts = [c for _, cs in traced for c in cs]
    out = []
    before = 0
    for closed, cs in traced:
        j = closed.jaxpr
        n = len(cs)
        left = [core.Var(core.get_aval(c)) for c in all_consts[:before]]
        right = [core.Var(core.get_aval(c)) for c in all_consts[before + n :]]
        invars = left + j.invars[:n] + right + j.invars[n:]
        out.append(ClosedJaxpr(core.Jaxpr([], invars, j.outvars, j.eqns), []))
        before += n
    return tuple(out), all_consts


def dedup_consts(closed: Sequence[ClosedJaxpr], consts: list) -> tuple[tuple[ClosedJaxpr, ...], list]:
    """Jaxprs taking ``consts + args`` with a constant that occurs several times (one array
    closed over by several branches) passed once, as JAX's ``_dedup_consts``."""
    n = len(consts)
    first: dict[int, int] = {}
    keep = [first.setdefault(id(c), i) for i, c in enumerate(consts)]
    if len(first) == n:
        return tuple(closed), list(consts)
    out = []
    for cj in closed:
        j = cj.jaxpr
        sub = {j.invars[i]: j.invars[k] for i, k in enumerate(keep) if k != i}

        def rn(x: Any, sub: dict = sub) -> Any:
            return sub.get(x, x) if type(x) is core.Var else x

        eqns = [e.replace(invars=[rn(x) for x in e.invars]) for e in j.eqns]
        invars = [v for i, v in enumerate(j.invars[:n]) if keep[i] == i] + list(j.invars[n:])
        out.append(ClosedJaxpr(core.Jaxpr([], invars, [rn(x) for x in j.outvars], eqns), []))
    return tuple(out), [c for i, c in enumerate(consts) if keep[i] == i]


def is_float(aval: ShapedArray) -> bool:
    return _dkind(aval.dtype) in "fc"


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros: Sequence[bool], instantiate: Sequence[bool]) -> tuple:
    """JVP of ``closed``: ``(consts + primals + nonzero tangents) -> (primal outs + tangents)``.

    Returns ``(jvp_closed, consts, out_nonzeros)``: a tangent output is present where
    ``out_nonzeros`` (float outputs whose tangent is nonzero or instantiated). Cached
    (``ad.jvp_jaxpr``).
    """
    inst = [bool(i) and is_float(a) for i, a in zip(instantiate, closed.out_avals)]
    return ad.jvp_jaxpr(closed, nonzeros, inst)


def batch_jaxpr(closed: ClosedJaxpr, dims: Sequence[int | None], size: int, instantiate: Sequence[bool]) -> tuple:
    """vmap of ``closed`` with inputs batched at ``dims``; batched outputs come at axis 0.

    Returns ``(batched_closed, consts, out_batched)``; outputs with ``instantiate`` are always
    batched (unbatched ones are broadcast). Cached (``batching.batch_jaxpr``).
    """
    return batching.batch_jaxpr(closed, dims, size, instantiate)
