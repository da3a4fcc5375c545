"""``jax.ref``: mutable array references (``jax.new_ref``, ``jax.Ref``, ``jax.freeze``, ...).

A :class:`Ref` holds an array value that ``ref[idx] = v``, ``ref[idx] += v``, :func:`set`,
:func:`swap` and :func:`addupdate` replace and ``ref[idx]`` / :func:`get` read. The state is
discharged at trace time: every write computes the new whole value functionally (``x.at[idx].set``)
and the ref points at it, so inside ``jit``, ``grad``, ``vmap`` or a ``scan``/``while`` body a ref
created *in that same function* simply carries traced values through the jaxpr, and differentiating
through reads and writes works (``grad(lambda x: (r := new_ref(0.), r.__setitem__(..., sin(x)),
r[...])[-1])``).

A jitted function may close over refs created outside it (the first example of JAX's Ref guide: a
global ref incremented by ``jit(f)``): ``jit`` threads them, their current values become extra
inputs of the compiled function and their final values extra outputs, written back after each
call (:func:`call_with_refs`).

``scan``, ``while_loop``/``fori_loop`` and ``cond``/``switch`` bodies may use refs created outside
them the same way: the refs' values become extra carries (or operands and results of the branches)
and are written back after the loop (:func:`thread_scan`, :func:`thread_while`,
:func:`thread_branches`); this composes with ``grad`` and ``vmap`` of the enclosing function.

Refs passed as arguments to ``jit`` (as JAX allows) are threaded the same way
(:func:`call_with_ref_args`).

Not supported (each raises ``NotImplementedError`` naming it): writing, under ``grad``/``vmap``, a
ref created outside that transform (JAX threads it as a state effect of the jaxpr). Reads of an
outer ref under ``grad``/``vmap`` (which stage nothing) see its current value, as a closed-over
constant.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import core, dtypes

__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get", "new_ref", "set", "swap"]


class AbstractRef(core.AbstractValue):
    """The abstract value of a :class:`Ref`: the aval of its contents (``inner_aval``)."""

    __slots__ = ("inner_aval", "memory_space", "kind")

    def __init__(self, inner_aval: core.ShapedArray, memory_space: Any = None, kind: Any = None) -> None:
        self.inner_aval, self.memory_space, self.kind = inner_aval, memory_space, kind

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: len(self.inner_aval.shape))

    def str_short(self) -> str:
        return f"Ref{{{self.inner_aval.str_short()}}}"

    def __repr__(self) -> str:  # JAX's: the long dtype name (jaxprs print the short one)
        return f"Ref{{{self.inner_aval}}}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbstractRef) and self.inner_aval == other.inner_aval

    def __hash__(self) -> int:
        return hash((AbstractRef, self.inner_aval))


class _OuterRefAccess(NotImplementedError):
    """Raised when a ref is used inside a transform begun after its creation; ``jit`` catches it
    and threads the ref through the compiled function (see :func:`call_with_refs`)."""

    def __init__(self, msg: str, ref: Ref) -> None:
        super().__init__(msg)
        self.fjax_ref = ref


def _stack_state() -> tuple[int, Any, Any]:
    st = core._state
    return len(st.stack), st.stack[-1], st.dynamic[-1]


class Ref:
    """A mutable array reference (``jax.Ref``); create one with :func:`new_ref`."""

    __slots__ = ("_value", "_aval", "_where", "_valid", "__weakref__")

    def __init__(self, value: Any, aval: core.ShapedArray) -> None:
        self._value = value
        self._aval = aval
        self._where = _stack_state()
        self._valid = True

    # -- transform guard ----------------------------------------------------------------------
    def _check(self, what: str, write: bool) -> None:
        if not self._valid:
            raise RuntimeError(f"fjax: {what} of a Ref that was frozen or freed")
        depth, top, dyn = self._where
        st = core._state
        same = len(st.stack) == depth and st.stack[-1] is top
        if write and not same:
            raise _OuterRefAccess(
                f"fjax: {what} of a Ref created outside the current grad/vmap/scan/cond body (ref state effects "
                "across those transform boundaries are not implemented; jit threads them); create the ref "
                "inside the transformed function, or pass its value in and write the result back outside",
                self,
            )
        if not write and st.dynamic[-1] is not dyn:
            raise _OuterRefAccess(
                f"fjax: {what} of a Ref created outside the current make_jaxpr/scan/cond body (its value would "
                "be baked in as a constant; ref state effects across those boundaries are not implemented, jit "
                "threads them); pass the value ref[...] in as an argument instead",
                self,
            )

    # -- array-like metadata -------------------------------------------------------------------
    @property
    def aval(self) -> AbstractRef:
        return AbstractRef(self._aval)

    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    ndim = property(lambda self: len(self._aval.shape))
    size = property(lambda self: int(np.prod(self._aval.shape, dtype=np.int64)))

    def __len__(self) -> int:
        if not self._aval.shape:
            raise TypeError("len() of unsized object")
        return self._aval.shape[0]

    # -- reads and writes ----------------------------------------------------------------------
    def __getitem__(self, idx: Any) -> Any:
        self._check("reading", write=False)
        if idx is Ellipsis or idx == ():
            return self._value
        return self._value[idx]

    def __setitem__(self, idx: Any, value: Any) -> None:
        self._check("writing", write=True)
        self._value = self._updated(idx, _coerce(value, self._aval.dtype, "Ref.__setitem__"), add=False)

    def _updated(self, idx: Any, value: Any, add: bool) -> Any:
        from fjax import numpy as jnp  # noqa: PLC0415

        whole = idx is Ellipsis or idx == () or idx is None
        if whole and not add:
            out = jnp.broadcast_to(value, self._aval.shape)
        elif whole:
            out = self._value + value
        else:
            at = self._value.at[idx]
            out = at.add(value) if add else at.set(value)
        if out.dtype != self._aval.dtype or core.get_aval(out).weak_type != self._aval.weak_type:
            from fjax import lax  # noqa: PLC0415

            out = lax.convert_element_type(out, self._aval.dtype)  # the ref's type never changes
        return out

    def addupdate(self, x: Any, idx: Any = Ellipsis) -> None:
        """``ref[idx] += x`` in one step."""
        self._check("addupdate", write=True)
        self._value = self._updated(idx, _coerce(x, self._aval.dtype, "Ref.addupdate"), add=True)

    def __repr__(self) -> str:
        if isinstance(self._value, core.Tracer):
            return f"Ref{{{self._aval.str_short()}}}"
        text = repr(self._value)
        if text.startswith("Array("):
            body = text[len("Array(") :].replace("\n      ", "\n    ")
            return "Ref(" + body
        return f"Ref({text})"

    __hash__ = object.__hash__

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError("fjax: a Ref is not an array; read its value with ref[...] (or jax.freeze(ref))")


def _coerce(value: Any, dtype: np.dtype, what: str) -> Any:
    from fjax import numpy as jnp  # noqa: PLC0415

    if isinstance(value, Ref):
        raise TypeError(f"{what}: the value must be an array, not a Ref (read it with ref[...])")
    v = value if isinstance(value, (core.Array, core.Tracer)) else jnp.asarray(value)
    if v.dtype != dtype:
        if dtypes.is_weakly_typed(value) or dtypes.is_weakly_typed(v):
            return v.astype(dtype)
        raise TypeError(f"{what}: cannot store a value of dtype {v.dtype} in a Ref of dtype {dtype}")
    return v


def new_ref(init_val: Any, *, memory_space: Any = None, kind: str | None = None) -> Ref:
    """A mutable array reference holding ``init_val`` (as ``jax.new_ref``)."""
    from fjax import numpy as jnp  # noqa: PLC0415

    if isinstance(init_val, Ref):
        raise TypeError("new_ref: the initial value must be an array, not a Ref")
    if kind not in (None, "no_grad_no_remat"):
        raise ValueError(f"new_ref: kind must be None or 'no_grad_no_remat', got {kind!r}")
    v = init_val if isinstance(init_val, (core.Array, core.Tracer)) else jnp.asarray(init_val)
    aval = core.get_aval(v)
    if aval.weak_type:  # a ref holds a strongly typed value (new_ref(0.) is a float32 ref)
        from fjax import lax  # noqa: PLC0415

        v = lax.convert_element_type(v, aval.dtype)
    return Ref(v, core.ShapedArray(aval.shape, aval.dtype))


def empty_ref(ty: Any, *, memory_space: Any = None) -> Ref:
    """A ref of the shape and dtype of ``ty`` (an aval or ``ShapeDtypeStruct``); fjax fills it
    with zeros (JAX leaves the contents unspecified)."""
    from fjax import numpy as jnp  # noqa: PLC0415

    inner = ty.inner_aval if isinstance(ty, AbstractRef) else ty
    return new_ref(jnp.zeros(tuple(inner.shape), inner.dtype))


def free_ref(ref: Ref) -> None:
    """Invalidate ``ref`` (later reads and writes raise)."""
    _expect_ref(ref, "free_ref")
    ref._valid = False


def freeze(ref: Ref) -> Any:
    """Invalidate ``ref`` and return its final value (as ``jax.freeze``)."""
    _expect_ref(ref, "freeze")
    val = ref[...]
    ref._valid = False
    return val


def get(ref: Ref, idx: Any = None) -> Any:
    """``ref[idx]`` (the whole value when ``idx`` is None)."""
    _expect_ref(ref, "get")
    return ref[Ellipsis if idx is None else idx]


def set(ref: Ref, idx: Any, value: Any) -> None:  # noqa: A001 - jax.ref.set
    """``ref[idx] = value`` (``idx=None`` or ``...`` for the whole value)."""
    _expect_ref(ref, "set")
    ref[Ellipsis if idx is None else idx] = value


def swap(ref: Ref, idx: Any, value: Any, _function_name: str = "ref_swap") -> Any:
    """Store ``value`` at ``ref[idx]`` and return what was there."""
    _expect_ref(ref, "swap")
    idx = Ellipsis if idx is None else idx
    old = ref[idx]
    ref[idx] = value
    return old


def addupdate(ref: Ref, idx: Any, x: Any) -> None:
    """``ref[idx] += x``."""
    _expect_ref(ref, "addupdate")
    ref.addupdate(x, Ellipsis if idx is None else idx)


def _expect_ref(ref: Any, name: str) -> None:
    if not isinstance(ref, Ref):
        raise TypeError(f"{name}: expected a Ref, got {type(ref).__name__}")


# ---------------------------------------------------------------------------------------------
# jit with refs it closes over: their values become extra inputs and outputs of the compiled
# function, and the results are written back after each call


def call_with_refs(jw: Any, args: tuple, kwargs: dict) -> Any:
    """Call the ``JitWrapped`` ``jw`` whose function reads or writes the refs ``jw._refs``
    (created outside it): the refs' current values go in, their final values are stored back."""
    while True:
        refs = jw._refs
        inner = jw._ref_jit
        if inner is None:
            inner = jw._ref_jit = _ref_jit(jw, refs)
        vals = [r[...] for r in refs]
        try:
            out, new = inner(*args, __fjax_ref_values__=vals, **kwargs)
        except _OuterRefAccess as e:
            if e.fjax_ref in refs:
                raise
            jw._refs, jw._ref_jit = (*refs, e.fjax_ref), None  # one more ref found: trace again
            continue
        for r, v in zip(refs, new):
            r[...] = v
        return out


def call_with_ref_args(jw: Any, args: tuple, kwargs: dict) -> Any:
    """Call the ``JitWrapped`` ``jw`` with refs among its arguments (JAX passes refs into ``jit``):
    each ref is taken out of the arguments and threaded as a ref the function closes over, so its
    value goes in and its final value is written back. One compiled function per argument
    structure and set of refs."""
    from fjax import tree_util as tu  # noqa: PLC0415

    leaves, tree = tu.tree_flatten((args, kwargs))
    pos = tuple(i for i, x in enumerate(leaves) if isinstance(x, Ref))
    refs = tuple(leaves[i] for i in pos)
    key = (tree, pos, tuple(map(id, refs)))
    cache = jw.__dict__.setdefault("_ref_arg_jits", {})
    entry = cache.get(key)
    if entry is None or any(a is not b for a, b in zip(entry[1], refs)):
        fun = jw.fun

        def with_ref_args(*a: Any, **k: Any) -> Any:
            ls = tu.tree_leaves((a, k), is_leaf=lambda x: x is None)
            it = iter(refs)
            full = [next(it) if i in pos else x for i, x in enumerate(ls)]
            a2, k2 = tu.tree_unflatten(tree, full)
            return fun(*a2, **k2)

        with_ref_args.__name__ = jw.name
        inner = type(jw)(with_ref_args, jw.static_argnums, jw.static_argnames, jw.donate_argnums, retry_refs=False)
        inner._refs = refs
        if len(cache) > 64:
            cache.clear()
        entry = cache[key] = (inner, refs)
    a_out, k_out = tu.tree_unflatten(tree, [None if i in pos else x for i, x in enumerate(leaves)])
    return call_with_refs(entry[0], a_out, k_out)


def _ref_jit(jw: Any, refs: tuple) -> Any:
    fun = jw.fun

    def with_refs(*args: Any, __fjax_ref_values__: list, **kwargs: Any) -> Any:
        saved = [(r._value, r._where) for r in refs]
        here = _stack_state()
        for r, v in zip(refs, __fjax_ref_values__):
            r._value, r._where = v, here
        try:
            out = fun(*args, **kwargs)
            new = [r._value for r in refs]
        finally:
            for r, (v, w) in zip(refs, saved):
                r._value, r._where = v, w
        return out, new

    with_refs.__name__ = jw.name
    return type(jw)(with_refs, jw.static_argnums, jw.static_argnames, jw.donate_argnums, retry_refs=False)


# ---------------------------------------------------------------------------------------------
# scan / while_loop / cond bodies that use refs created outside them: the refs' values become
# extra carries (scan, while) or operands and results (cond), written back after the loop


def outer_ref_of(e: BaseException) -> Ref | None:
    """The ref a ``NotImplementedError`` raised by a cross-boundary ref access is about, or None."""
    return getattr(e, "fjax_ref", None) if isinstance(e, _OuterRefAccess) else None


def _bind(refs: tuple, vals: list) -> list:
    saved = [(r._value, r._where) for r in refs]
    here = _stack_state()
    for r, v in zip(refs, vals):
        r._value, r._where = v, here
    return saved


def _unbind(refs: tuple, saved: list) -> None:
    for r, (v, w) in zip(refs, saved):
        r._value, r._where = v, w


def _with_refs(fun: Any, refs: tuple) -> Any:
    """``fun(*args) -> out`` as ``(rvals, *args) -> (out, new rvals)`` with the refs bound."""

    def wrapped(rvals: list, *args: Any) -> Any:
        saved = _bind(refs, rvals)
        try:
            out = fun(*args)
            new = [r._value for r in refs]
        finally:
            _unbind(refs, saved)
        return out, new

    return wrapped


def _retry(first: BaseException, run: Any) -> Any:
    """Call ``run(refs)`` with the refs found so far, adding each newly found one, until it runs;
    then store the refs' final values (``run`` returns ``(result, new ref values)``)."""
    refs: tuple = (first.fjax_ref,)
    while True:
        try:
            out, new = run(refs)
        except _OuterRefAccess as e:
            if e.fjax_ref in refs:
                raise
            refs = (*refs, e.fjax_ref)
            continue
        for r, v in zip(refs, new):
            r[...] = v
        return out


def thread_scan(scan: Any, first: BaseException, f: Any, init: Any, xs: Any, **kw: Any) -> Any:
    """``scan(f, init, xs, **kw)`` whose body uses refs created outside it."""

    def run(refs: tuple) -> Any:
        body = _with_refs(f, refs)

        def f2(carry: Any, x: Any) -> Any:
            c, rv = carry
            (c2, y), new = body(rv, c, x)
            return (c2, new), y

        (c, rv), ys = scan(f2, (init, [r[...] for r in refs]), xs, **kw)
        return (c, ys), rv

    return _retry(first, run)


def thread_while(while_loop: Any, first: BaseException, cond_fun: Any, body_fun: Any, init_val: Any) -> Any:
    """``while_loop(cond_fun, body_fun, init_val)`` whose functions use refs created outside."""

    def run(refs: tuple) -> Any:
        cond_r, body_r = _with_refs(cond_fun, refs), _with_refs(body_fun, refs)
        out, rv = while_loop(
            lambda v: cond_r(v[1], v[0])[0],
            lambda v: body_r(v[1], v[0]),
            (init_val, [r[...] for r in refs]),
        )
        return out, rv

    return _retry(first, run)


def thread_branches(run_branches: Any, first: BaseException, branches: tuple, operands: tuple) -> Any:
    """``run_branches(branches, operands)`` (cond/switch) whose branches use refs created outside."""

    def run(refs: tuple) -> Any:
        wrapped = tuple(_with_refs(b, refs) for b in branches)
        n = len(operands)
        brs = tuple((lambda w: lambda *ops: w(list(ops[n:]), *ops[:n]))(w) for w in wrapped)
        return run_branches(brs, (*operands, *[r[...] for r in refs]))

    return _retry(first, run)
