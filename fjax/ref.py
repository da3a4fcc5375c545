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

Not supported (each raises ``NotImplementedError`` naming it): using a ref created outside a
``grad``/``vmap``/``scan``/``cond`` body from inside it (a ref carried into a ``scan`` body from
outside, writes under ``grad`` to an outer ref) and passing refs as arguments to ``jit``; JAX
threads those as state effects of the jaxpr. Reads of an outer ref under ``grad``/``vmap`` (which
stage nothing) see its current value, as a closed-over constant.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import core, dtypes

__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get", "new_ref", "set", "swap"]


class AbstractRef:
    """The abstract value of a :class:`Ref`: the aval of its contents (``inner_aval``)."""

    __slots__ = ("inner_aval", "memory_space", "kind")

    def __init__(self, inner_aval: core.ShapedArray, memory_space: Any = None, kind: Any = None) -> None:
        self.inner_aval, self.memory_space, self.kind = inner_aval, memory_space, kind

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: len(self.inner_aval.shape))

    def str_short(self) -> str:
        return f"Ref{{{self.inner_aval.str_short()}}}"

    def __repr__(self) -> str:
        return self.str_short()

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
