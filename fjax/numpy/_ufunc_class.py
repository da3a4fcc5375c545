"""``fjax.numpy.ufunc`` and ``fjax.numpy.frompyfunc``: numpy-style universal functions.

A ``ufunc`` wraps a scalar function of ``nin`` inputs and ``nout`` outputs. Calling it applies the
function elementwise to broadcast arrays (``jnp.vectorize`` under ``jit``); a binary,
single-output ufunc also has ``reduce``, ``accumulate``, ``outer``, ``at`` and ``reduceat``. As in
JAX, the generic methods are built from the scalar function with lax control flow (``fori_loop``,
``scan``, ``vmap``), so they work under ``jit``, ``vmap`` and ``grad``; a ufunc may be given faster
implementations of any of them (``call=``, ``reduce=``, ...), which the built-in ufuncs
(``jnp.add``, ``jnp.maximum``, ...) use.

The built-in ufuncs are instances of per-function subclasses of ``ufunc`` whose ``__call__`` is the
plain elementwise function itself (behind the ``out=None``/``where=None`` checks), so that calling
``jnp.add(x, y)`` costs about what ``fn`` does.
"""

from __future__ import annotations

import inspect
import math
import operator
from typing import Any, Callable

import numpy as np

from fjax import core, lax
from fjax.numpy import _util

__all__ = ["frompyfunc", "ufunc"]

_AT_INPLACE_MESSAGE = """\
Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace like
np.ufunc.at(). Instead, you can pass inplace=False and capture the result; e.g.
>>> arr = jnp.add.at(arr, ind, val, inplace=False)
"""

_PROPS = ("func", "nin", "nout", "nargs", "identity", "call", "reduce", "accumulate", "at", "reduceat")


def _jit(fun: Callable, static_argnames: tuple = ()) -> Callable:
    from fjax.jit import jit  # noqa: PLC0415 - fjax.jit imports fjax.numpy

    return jit(fun, static_argnames=static_argnames)


def _asarray(x: Any) -> Any:
    return _util.to_fjax(x)


def _one_like(x: Any) -> Any:
    """A scalar 1 of ``x``'s dtype (and weak type): the probe argument for the result dtype."""
    aval = core.get_aval(_asarray(x))
    return core.Array(np.ones((), aval.dtype), aval.weak_type)


def _result_dtype(func: Callable, *args: Any) -> np.dtype:
    from fjax.api import eval_shape  # noqa: PLC0415

    out = eval_shape(func, *(_one_like(a) for a in args))
    return np.dtype(out.dtype)


def _moveaxis0(x: Any, axis: int) -> Any:
    if axis == 0:
        return x
    perm = (axis, *(i for i in range(x.ndim) if i != axis))
    return lax.transpose(x, perm)


def _moveaxis_back(x: Any, axis: int) -> Any:
    if axis == 0:
        return x
    perm = (*range(1, axis + 1), 0, *range(axis + 1, x.ndim))
    return lax.transpose(x, perm)


def _astype(x: Any, dtype: Any) -> Any:
    x = _asarray(x)
    return x if x.dtype == dtype else lax.convert_element_type(x, dtype)


def _normalize_indices(indices: Any) -> tuple:
    if isinstance(indices, list):
        raise TypeError(
            "Using a non-tuple sequence for multidimensional indexing is not allowed; use `arr[array(seq)]` "
            "instead of `arr[seq]`. See https://github.com/jax-ml/jax/issues/4564 for more information."
        )
    return indices if isinstance(indices, tuple) else (indices,)


class ufunc:
    """Universal functions which operate element-by-element on arrays (JAX's ``jnp.ufunc``).

    ``ufunc(func, nin, nout, *, name=None, nargs=None, identity=None, call=None, reduce=None,
    accumulate=None, at=None, reduceat=None)``: ``func`` is a scalar function of ``nin`` arguments
    returning ``nout`` values. ``call``/``reduce``/``accumulate``/``at``/``reduceat`` optionally
    replace the generic implementations (derived from ``func`` with ``vectorize``, ``fori_loop``
    and ``scan``). Most users make ufuncs with :func:`fjax.numpy.frompyfunc`.
    """

    def __init__(
        self,
        func: Callable[..., Any],
        /,
        nin: int,
        nout: int,
        *,
        name: str | None = None,
        nargs: int | None = None,
        identity: Any = None,
        call: Callable[..., Any] | None = None,
        reduce: Callable[..., Any] | None = None,
        accumulate: Callable[..., Any] | None = None,
        at: Callable[..., Any] | None = None,
        reduceat: Callable[..., Any] | None = None,
    ):
        self.__doc__ = func.__doc__
        self.__name__ = name or func.__name__
        nin = operator.index(nin)
        # stored in a private mapping behind read-only properties: a ufunc is hashable (it can be
        # a static argument of jit), so its defining values must not change
        self._ufunc_props = dict(
            func=func,
            nin=nin,
            nout=operator.index(nout),
            nargs=operator.index(nargs or nin),
            identity=identity,
            call=call,
            reduce=reduce,
            accumulate=accumulate,
            at=at,
            reduceat=reduceat,
        )
        self._ufunc_jitted: dict[str, Callable] = {}

    _func = property(lambda self: self._ufunc_props["func"])
    nin = property(lambda self: self._ufunc_props["nin"])
    nout = property(lambda self: self._ufunc_props["nout"])
    nargs = property(lambda self: self._ufunc_props["nargs"])
    identity = property(lambda self: self._ufunc_props["identity"])

    def _key(self) -> tuple:
        return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ufunc) and self._key() == other._key()

    def __repr__(self) -> str:
        return f"<jnp.ufunc '{self.__name__}'>"

    def _jitted(self, what: str, fun: Callable, static_argnames: tuple = ()) -> Callable:
        f = self._ufunc_jitted.get(what)
        if f is None:
            f = self._ufunc_jitted[what] = _jit(fun, static_argnames)
        return f

    # -- call ----------------------------------------------------------------------------------

    def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
        _util.check_arraylike(self.__name__, *args)
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        call = self._ufunc_props["call"]
        if call is not None:
            return call(*args)
        return self._jitted("call", self._call_vectorized)(*args)

    def _call_vectorized(self, *args: Any) -> Any:
        from fjax.numpy._more2 import vectorize  # noqa: PLC0415

        return vectorize(self._func)(*args)

    def _check_binary(self, what: str) -> None:
        if self.nin != 2:
            raise ValueError(f"{what} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{what} only supported for functions returning a single value")

    # -- reduce --------------------------------------------------------------------------------

    def reduce(
        self,
        a: Any,
        axis: int | None = 0,
        dtype: Any = None,
        out: None = None,
        keepdims: bool = False,
        initial: Any = None,
        where: Any = None,
    ) -> Any:
        """Reduce ``a`` along ``axis`` (``None``: all axes) by applying the binary function
        repeatedly (``numpy.ufunc.reduce``). ``initial`` starts the reduction (default: the
        identity, else the first element); ``where`` (boolean, broadcast to ``a``) selects the
        elements used and needs an identity or ``initial``."""
        _util.check_arraylike(f"{self.__name__}.reduce", a)
        self._check_binary("reduce")
        dtype = _user_dtype(dtype, _REDUCE_WARN_NAMES.get(self.__name__, ("astype", "astype")))
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        if initial is not None:
            _util.check_arraylike(f"{self.__name__}.reduce", initial)
        if where is not None:
            _util.check_arraylike(f"{self.__name__}.reduce", where)
            if self.identity is None and initial is None:
                raise ValueError(
                    f"reduction operation {self.__name__!r} does not have an identity, so to use a where mask one "
                    "has to specify 'initial'."
                )
            wdt = _asarray(where).dtype
            if wdt != np.bool_:
                raise ValueError(f"where argument must have dtype=bool; got dtype={wdt}")
        if isinstance(axis, list):
            axis = tuple(axis)
        reduce = self._ufunc_props["reduce"]
        if reduce is not None:
            return reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)
        if dtype is not None:
            from fjax import dtypes  # noqa: PLC0415

            dtype = dtypes.canonicalize_dtype(dtype)
        f = self._jitted("reduce", self._reduce_via_loop, ("axis", "dtype", "keepdims"))
        return f(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)

    def _reduce_via_loop(
        self, arr: Any, axis: Any = 0, dtype: Any = None, keepdims: bool = False, initial: Any = None, where: Any = None
    ) -> Any:
        arr = _asarray(arr)
        if initial is None:
            initial = self.identity
        if dtype is None:
            dtype = _result_dtype(self._func, arr, arr)
        if where is not None:
            where = _broadcast(where, arr.shape)
        if isinstance(axis, tuple):
            raise NotImplementedError("tuple of axes")
        if axis is None:
            final_shape = (1,) * arr.ndim if keepdims else ()
            arr = lax.reshape(arr, (arr.size,))
            if where is not None:
                where = lax.reshape(where, (where.size,))
            axis = 0
        else:
            axis = _util.canonicalize_axis(axis, arr.ndim, f"{self.__name__}.reduce")
            rest = (*arr.shape[:axis], *arr.shape[axis + 1 :])
            final_shape = (*arr.shape[:axis], 1, *arr.shape[axis + 1 :]) if keepdims else rest
            arr = _moveaxis0(arr, axis)
            if where is not None:
                where = _moveaxis0(where, axis)
        if arr.shape[0] == 0:
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} which has no identity")
            return lax.full(final_shape, initial, dtype)

        def body(i: Any, val: Any) -> Any:
            new = _astype(self(val, _astype(arr[i], dtype)), dtype)
            if where is None:
                return new
            return lax.select(_broadcast(where[i], new.shape), new, val)

        if initial is None:
            start, val0 = 1, arr[0]
        else:
            start, val0 = 0, initial
        val0 = _broadcast(_astype(val0, dtype), arr.shape[1:])
        result = lax.fori_loop(start, arr.shape[0], body, val0)
        return lax.reshape(result, final_shape) if keepdims else result

    # -- accumulate ----------------------------------------------------------------------------

    def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Any:
        """Cumulative application of the binary function along ``axis``
        (``numpy.ufunc.accumulate``): ``r[0] = a[0]``, ``r[i] = f(r[i-1], a[i])``."""
        self._check_binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        dtype = _user_dtype(dtype, _ACCUMULATE_WARN_NAMES.get(self.__name__, ("astype",) * 4))
        accumulate = self._ufunc_props["accumulate"]
        if accumulate is not None:
            return accumulate(a, axis=axis, dtype=dtype)
        _util.check_arraylike(f"{self.__name__}.accumulate", a)
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("accumulate does not allow multiple axes")
        if dtype is not None:
            from fjax import dtypes  # noqa: PLC0415

            dtype = dtypes.canonicalize_dtype(dtype)
        return self._jitted("accumulate", self._accumulate_via_scan, ("axis", "dtype"))(a, axis=axis, dtype=dtype)

    def _accumulate_via_scan(self, arr: Any, axis: int = 0, dtype: Any = None) -> Any:
        arr = _asarray(arr)
        if dtype is None:
            dtype = _result_dtype(self._func, arr, arr)
        axis = _util.canonicalize_axis(axis, arr.ndim, f"{self.__name__}.accumulate")
        if arr.size == 0:
            return lax.full(arr.shape, 0, dtype)
        arr = _moveaxis0(_astype(arr, dtype), axis)

        def step(carry: Any, x: Any) -> tuple:
            y = _astype(self(carry, x), dtype)
            return y, y

        first = arr[0]
        _, rest = lax.scan(step, first, arr[1:])
        result = lax.concatenate([lax.expand_dims(first, (0,)), rest], 0)
        return _moveaxis_back(result, axis)

    # -- at ------------------------------------------------------------------------------------

    def at(self, a: Any, indices: Any, b: Any = None, /, *, inplace: bool = True) -> Any:
        """``a`` with the function applied at ``indices`` (``numpy.ufunc.at``), unbuffered:
        repeated indices apply it repeatedly. JAX arrays are immutable, so ``inplace=False`` is
        required and the updated copy is returned."""
        if inplace:
            raise NotImplementedError(_AT_INPLACE_MESSAGE)
        at = self._ufunc_props["at"]
        if at is not None:
            return at(a, indices) if b is None else at(a, indices, b)
        return self._at_via_scan(a, indices) if b is None else self._at_via_scan(a, indices, b)

    def _at_via_scan(self, a: Any, indices: Any, *args: Any) -> Any:
        _util.check_arraylike(f"{self.__name__}.at", a, *args)
        dtype = _result_dtype(self._func, a, *args)
        a = _astype(a, dtype)
        args = tuple(_astype(x, dtype) for x in args)
        indices = _normalize_indices(indices)
        if not indices:
            return a
        static = (slice, type(None), type(Ellipsis))
        arrays = [_asarray(i) for i in indices if not isinstance(i, static)]
        shape = lax.broadcast_shapes(*(x.shape for x in arrays)) if arrays else ()
        if not shape:
            return a.at[indices].set(self(a.at[indices].get(), *args))
        n = math.prod(shape)
        if args:
            b = args[0]
            tail = b.shape[len(shape) :] if b.ndim > len(shape) else ()
            b = _broadcast(b, (*shape, *tail))
            args = (lax.reshape(b, (n, *tail)),)
        flat = [i if isinstance(i, static) else lax.reshape(_broadcast(_asarray(i), shape), (n,)) for i in indices]
        positions = [k for k, i in enumerate(flat) if not isinstance(i, static)]
        xs = ([flat[k] for k in positions], list(args))

        def step(arr: Any, x: Any) -> tuple:
            dyn, vals = x
            idx = list(flat)
            for k, v in zip(positions, dyn):
                idx[k] = v
            idx_t = tuple(idx)
            return arr.at[idx_t].set(self(arr.at[idx_t].get(), *vals)), None

        result, _ = lax.scan(step, a, xs)
        return result

    # -- reduceat ------------------------------------------------------------------------------

    def reduceat(self, a: Any, indices: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Any:
        """Reductions of ``a`` over the segments ``[indices[i], indices[i+1])`` along ``axis``
        (the last one runs to the end); where ``indices[i] >= indices[i+1]`` the result is
        ``a[indices[i]]`` (``numpy.ufunc.reduceat``)."""
        self._check_binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        reduceat = self._ufunc_props["reduceat"]
        if reduceat is not None:
            return reduceat(a, indices, axis=axis, dtype=dtype)
        _util.check_arraylike(f"{self.__name__}.reduceat", a, indices)
        if isinstance(indices, tuple):
            if len(indices) != 1:
                raise ValueError(f"reduceat: indices must be one-dimensional, got a tuple of {len(indices)}")
            indices = indices[0]
        if np.ndim(a) == 0:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={np.shape(a)}")
        if np.ndim(indices) != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got indices.shape={np.shape(indices)}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        if dtype is not None:
            from fjax import dtypes  # noqa: PLC0415

            dtype = dtypes.canonicalize_dtype(dtype)
        f = self._jitted("reduceat", self._reduceat_via_loop, ("axis", "dtype"))
        return f(a, indices, axis=axis, dtype=dtype)

    def _reduceat_via_loop(self, a: Any, indices: Any, axis: int = 0, dtype: Any = None) -> Any:
        from fjax.numpy._shape_take import take  # noqa: PLC0415

        a = _asarray(a)
        indices = _asarray(indices)
        if dtype is None:
            dtype = a.dtype
        axis = _util.canonicalize_axis(axis, a.ndim, f"{self.__name__}.reduceat")
        a = _astype(_moveaxis0(a, axis), dtype)
        n = a.shape[0]
        out = take(a, indices, axis=0)
        idx = lax.convert_element_type(indices, np.int32)
        starts = idx
        ends = lax.concatenate([idx[1:], lax.full((1,), n, np.int32)], 0)
        bshape = (idx.shape[0],) + (1,) * (a.ndim - 1)
        starts = lax.reshape(starts, bshape)
        ends = lax.reshape(ends, bshape)

        def body(i: Any, acc: Any) -> Any:
            row = lax.expand_dims(a[i], (0,))
            upd = _astype(self(acc, row), dtype)
            sel = lax.bitwise_and(lax.gt(i, starts), lax.lt(i, ends))
            return lax.select(_broadcast(sel, acc.shape), upd, acc)

        out = lax.fori_loop(0, n, body, out)
        return _moveaxis_back(out, axis)

    # -- outer ---------------------------------------------------------------------------------

    def outer(self, A: Any, B: Any, /) -> Any:
        """The function applied to every pair ``(A[i...], B[j...])``: shape ``A.shape + B.shape``."""
        self._check_binary("outer")
        _util.check_arraylike(f"{self.__name__}.outer", A, B)
        return self._jitted("outer", self._outer)(A, B)

    def _outer(self, A: Any, B: Any) -> Any:
        from fjax.api import vmap  # noqa: PLC0415

        A, B = _asarray(A), _asarray(B)
        fa, fb = lax.reshape(A, (A.size,)), lax.reshape(B, (B.size,))
        res = vmap(vmap(self, (None, 0)), (0, None))(fa, fb)
        return lax.reshape(res, (*A.shape, *B.shape))


def _broadcast(x: Any, shape: tuple) -> Any:
    x = _asarray(x)
    if x.shape == tuple(shape):
        return x
    return lax.broadcast_in_dim(x, tuple(shape), tuple(range(len(shape) - x.ndim, len(shape))))


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *, identity: Any = None) -> ufunc:
    """A :class:`ufunc` from a scalar function of ``nin`` arguments and ``nout`` outputs, written
    with fjax operations; ``identity`` (optional) is the identity of a binary operation (used by
    ``reduce`` of empty arrays and with ``where``)."""
    return ufunc(func, nin, nout, identity=identity)


# ---------------------------------------------------------------------------------------------
# the built-in ufuncs


def _builtin(fn: Callable, nin: int, identity: Any = None, **impls: Any) -> ufunc:
    """``fn`` as a ufunc instance whose call is ``fn`` itself (after the ``out``/``where`` checks):
    a subclass per function with a static ``__call__`` (instances use the type's ``__call__``), so
    eager calls skip the generic argument checks (``fn`` does its own)."""
    name = fn.__name__

    def call(*args: Any, out: None = None, where: None = None) -> Any:
        # numpy's out=/where= keywords: None is accepted, anything else is not supported (as JAX)
        if out is not None:
            raise NotImplementedError(f"out argument of {u}")
        if where is not None:
            raise NotImplementedError(f"where argument of {u}")
        return fn(*args)

    cls = type(
        "ufunc",
        (ufunc,),
        {
            "__call__": staticmethod(call),
            "__module__": "fjax.numpy",
            "__reduce__": lambda self: (_builtin_named, (name,)),
        },
    )
    u = cls(fn, nin, 1, name=name, identity=identity, call=fn, **impls)
    # JAX's: a ufunc's call signature, ``(*args, out=None, where=None)`` (set here: inspect.signature
    # would otherwise read the staticmethod as a bound method)
    u.__signature__ = inspect.signature(call)
    return u


def _builtin_named(name: str) -> ufunc:
    import fjax.numpy  # noqa: PLC0415

    return getattr(fjax.numpy, name)


#: the functions JAX 0.10.2 names (once each, in order) in its x64 truncation warnings for a
#: 64-bit ``dtype=`` given to ``<ufunc>.reduce``/``.accumulate`` (the jnp/lax functions its
#: implementation calls; a ufunc without its own reduction casts with astype while tracing)
_REDUCE_WARN_NAMES: dict[str, tuple[str, ...]] = {
    "add": ("sum", "convert_element_type"),
    "multiply": ("prod", "convert_element_type"),
    "maximum": ("max", "convert_element_type"),
    "minimum": ("min", "convert_element_type"),
    "bitwise_and": ("reduce_bitwise_and", "convert_element_type"),
    "bitwise_or": ("reduce_bitwise_or", "convert_element_type"),
    "bitwise_xor": ("reduce_bitwise_xor", "convert_element_type"),
    "logical_and": ("reduce_logical_and",),
    "logical_or": ("reduce_logical_or",),
    "logical_xor": ("reduce_logical_xor",),
    "logaddexp": ("jnp.logaddexp.reduce",),
    "logaddexp2": ("jnp.logaddexp2.reduce",),
}
_ACCUMULATE_WARN_NAMES: dict[str, tuple[str, ...]] = {"add": ("cumsum",), "multiply": ("cumprod",)}


def _user_dtype(dtype: Any, names: tuple[str, ...]) -> Any:
    """A ufunc method's ``dtype=`` canonicalized (None stays None), warning as JAX under each of
    ``names`` when x64 truncates it (the method is called by the user: stacklevel 3 from here)."""
    if dtype is None:
        return None
    from fjax import dtypes  # noqa: PLC0415

    dt = getattr(dtype, "_np_type", dtype)
    out = dtypes.canonicalize_dtype(dt)
    for name in names:
        out = dtypes.canonicalize_user_dtype(dt, name, 3)
    return out


def _reduce_with(red: Callable, has_dtype: bool) -> Callable:
    def reduce(
        a: Any, axis: Any = 0, dtype: Any = None, keepdims: bool = False, initial: Any = None, where: Any = None
    ):
        if has_dtype:
            return red(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)
        r = red(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
        return r if dtype is None else _astype(r, dtype)

    return reduce


def _accumulate_with(acc: Callable) -> Callable:
    def accumulate(a: Any, axis: int = 0, dtype: Any = None) -> Any:
        return acc(a, axis=axis, dtype=dtype)

    return accumulate


def _at_with(method: str) -> Callable:
    def at(a: Any, indices: Any, b: Any = None) -> Any:
        _util.check_arraylike(f"{method}.at", a, b)
        return getattr(_asarray(a).at[_normalize_indices(indices)], method)(b)

    return at


def install_builtins(namespace: dict) -> None:
    """Replace the binary/unary elementwise functions that are ufuncs in JAX 0.10
    (``add``, ``multiply``, ``maximum``, ...) in ``namespace`` (``fjax.numpy``'s) by ufunc
    instances. Only the public names change: fjax's own code and the array operators keep
    calling the plain functions."""
    from fjax.numpy import _reductions as R  # noqa: PLC0415
    from fjax.numpy import _ufuncs as U  # noqa: PLC0415

    binary = {
        "add": dict(
            identity=0, reduce=_reduce_with(R.sum, True), accumulate=_accumulate_with(R.cumsum), at=_at_with("add")
        ),
        "multiply": dict(
            identity=1,
            reduce=_reduce_with(R.prod, True),
            accumulate=_accumulate_with(R.cumprod),
            at=_at_with("multiply"),
        ),
        "subtract": dict(identity=None, at=_at_with("subtract")),
        "bitwise_and": dict(identity=-1),
        "bitwise_or": dict(identity=0),
        "bitwise_xor": dict(identity=0),
        "logical_and": dict(identity=True),
        "logical_or": dict(identity=False),
        "logical_xor": dict(identity=False),
        "maximum": dict(identity=None, reduce=_reduce_with(R.max, False)),
        "minimum": dict(identity=None, reduce=_reduce_with(R.min, False)),
        "logaddexp": dict(identity=-np.inf),
        "logaddexp2": dict(identity=-np.inf),
    }
    for name, kw in binary.items():
        namespace[name] = _builtin(getattr(U, name), 2, **kw)
    namespace["negative"] = _builtin(U.negative, 1)
