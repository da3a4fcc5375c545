"""Operators and numpy-style methods of fjax arrays and tracers.

``_install(cls)`` adds them to ``fjax.core.Array`` and ``fjax.core.Tracer`` (so every trace
type gets them); ``fjax.numpy`` calls it on import. Operators defer (return NotImplemented)
to operands fjax does not know, like Python's own numbers do. numpy arrays on the left of an
operator give fjax results through ``__array_priority__`` (set in core).
"""

from __future__ import annotations

import operator
import warnings
from typing import Any, Callable

import numpy as np

from fjax import _out_sharding, core, dtypes
from fjax.core import Array, Tracer
from fjax.dtypes import kind as _dkind
from fjax.lax import lax
from fjax.numpy import _creation, _reductions, _ufuncs
from fjax.numpy._util import canonicalize_axes, canonicalize_axis

_accepted = (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex)


def _defer(binop: Callable, swap: bool = False) -> Callable:
    if swap:

        def method(self: Any, other: Any) -> Any:
            if not isinstance(other, _accepted):
                return NotImplemented
            return binop(other, self)
    else:

        def method(self: Any, other: Any) -> Any:
            if not isinstance(other, _accepted):
                return NotImplemented
            return binop(self, other)

    return method


def _matmul(a: Any, b: Any) -> Any:
    from fjax.numpy._linalg import matmul  # noqa: PLC0415 (written in a sibling module)

    return matmul(a, b)


def _dot(self: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    from fjax.numpy._linalg import dot  # noqa: PLC0415

    if preferred_element_type is not None:
        pet = _creation._unwrap_type(preferred_element_type)
        preferred_element_type = dtypes.canonicalize_user_dtype(pet, "dot")
    return dot(self, b, precision=precision, preferred_element_type=preferred_element_type)


def _getitem(self: Any, idx: Any) -> Any:
    from fjax.numpy._indexing import getitem  # noqa: PLC0415

    return getitem(self, idx)


def _at(self: Any) -> Any:
    from fjax.numpy._indexing import _IndexUpdateHelper  # noqa: PLC0415

    return _IndexUpdateHelper(self)


# ---------------------------------------------------------------------------------------------
# shape methods (small local versions so methods do not depend on fjax.numpy._shape)


def _shape_tuple(args: tuple, what: str) -> tuple:
    if (
        len(args) == 1
        and not isinstance(args[0], (int, np.integer))
        and not (isinstance(args[0], (Array, Tracer)) and args[0].ndim == 0)
    ):
        args = tuple(args[0]) if args[0] is not None else ()
    try:
        return tuple(operator.index(a) for a in args)
    except TypeError:
        if what != "reshape":
            raise
        raise core.invalid_shape_error(args) from None  # JAX's message, as jnp.reshape


def _reshape(self: Any, *shape: Any, order: str = "C") -> Any:
    if order == "A":  # as JAX's Array.reshape (jnp.reshape takes 'A' as 'C')
        raise NotImplementedError("np.reshape order=A is not implemented.")
    if order not in ("C", "F"):
        raise ValueError(f"Unexpected value for 'order' argument: {order}.")
    if order != "C":
        from fjax.numpy._shape import reshape  # noqa: PLC0415

        return reshape(self, _shape_tuple(shape, "reshape"), order=order)
    from fjax.numpy._shape import _reshape_shape  # noqa: PLC0415

    new = _shape_tuple(shape, "reshape")
    # (JAX's message shows the shape as passed: ``x.reshape(5)`` reshapes "into shape 5")
    new_t = _reshape_shape(tuple(self.shape), new, shape[0] if len(shape) == 1 else new)
    return lax.reshape(self, new_t)


def _transpose(self: Any, *axes: Any) -> Any:
    nd = self.ndim
    if not axes or (len(axes) == 1 and axes[0] is None):
        perm = tuple(range(nd))[::-1]
    else:
        perm = _shape_tuple(axes, "transpose")
        perm = tuple(canonicalize_axis(a, nd, "transpose") for a in perm)
        if sorted(perm) != list(range(nd)):  # (JAX's TypeError, from lax.transpose)
            raise TypeError(
                f"transpose permutation isn't a permutation of operand dimensions, got permutation {perm} "
                f"for operand shape {tuple(self.shape)}."
            )
    return lax.transpose(self, perm)


def _ravel(self: Any, order: str = "C") -> Any:
    if order != "C":
        from fjax.numpy._shape import _ravel_order  # noqa: PLC0415

        return _ravel_order(self, order)
    return lax.reshape(self, (self.size,))


def _squeeze(self: Any, axis: Any = None) -> Any:
    if axis is None:
        dims = tuple(i for i, d in enumerate(self.shape) if d == 1)
    else:
        dims = canonicalize_axes(axis, self.ndim, "squeeze")
        for d in dims:
            if self.shape[d] != 1:
                raise ValueError(
                    f"cannot select an axis to squeeze out which has size not equal to one, "
                    f"got shape={self.shape} and dimensions={dims}"
                )
    return lax.squeeze(self, dims)


def _swapaxes(self: Any, axis1: int, axis2: int) -> Any:
    nd = self.ndim
    a1 = canonicalize_axis(axis1, nd, "swapaxes")
    a2 = canonicalize_axis(axis2, nd, "swapaxes")
    perm = list(range(nd))
    perm[a1], perm[a2] = perm[a2], perm[a1]
    return lax.transpose(self, perm)


def _T(self: Any) -> Any:
    return lax.transpose(self, tuple(range(self.ndim))[::-1])


def _mT(self: Any) -> Any:
    nd = self.ndim
    if nd < 2:
        raise ValueError(f"x must be at least 2-dimensional for matrix_transpose; got ndim={nd}")
    return lax.transpose(self, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _astype(self: Any, dtype: Any, copy: bool = False, device: Any = None) -> Any:
    if device is not None:  # (put there as device_put puts it: fjax/_out_sharding.py)
        return _out_sharding.on_device(_astype(self, dtype, copy), device)
    dt = dtypes.canonicalize_user_dtype(_creation._unwrap_type(dtype), "astype")
    if _dkind(core.get_aval(self).dtype) == "c" and _dkind(dt) != "c":
        if dt == np.bool_:
            # nonzero, not convert_element_type's "real part nonzero" (as JAX)
            return lax.ne(self, lax.full_like(self, 0))
        warnings.warn(
            "Casting from complex to real dtypes will soon raise a ValueError. Please first use jnp.real or "
            "jnp.imag to take the real/imaginary component of your input.",
            DeprecationWarning,
            stacklevel=2,
        )
    return lax._convert_element_type_weak(self, dt, False)


def _clip(self: Any, min: Any = None, max: Any = None, **kw: Any) -> Any:  # noqa: A002
    return _ufuncs.clip(self, min, max, **kw)


def _round(self: Any, decimals: int = 0, out: Any = None) -> Any:
    return _ufuncs.round(self, decimals, out)


def _py_round(self: Any, ndigits: int | None = None) -> Any:
    if ndigits is None:
        if self.ndim:
            raise TypeError("round() of a non-scalar array")
        return round(self.item()) if isinstance(self, Array) else _ufuncs.round(self)
    return _ufuncs.round(self, ndigits)


def _item(self: Any, *args: Any) -> Any:
    v = core.concrete_or_error(self, "This occurred in the item() method of jax.Array")
    return np.asarray(v).item(*args)


def _nonzero(self: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    return _ufuncs.where(self, size=size, fill_value=fill_value)


def _sort(self: Any, axis: int = -1, **kw: Any) -> Any:
    from fjax.numpy._sorting import sort  # noqa: PLC0415

    return sort(self, axis=axis, **kw)


def _argsort(self: Any, axis: int = -1, **kw: Any) -> Any:
    from fjax.numpy._sorting import argsort  # noqa: PLC0415

    return argsort(self, axis=axis, **kw)


def _diagonal(self: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    return _creation.diagonal(self, offset, axis1, axis2)


def _trace(self: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> Any:
    if dtype is not None:
        dtype = dtypes.canonicalize_user_dtype(_creation._unwrap_type(dtype), "trace")
    return _reductions.sum(_creation.diagonal(self, offset, axis1, axis2), axis=-1, dtype=dtype)


def _divmod(a: Any, b: Any) -> Any:
    return _ufuncs.divmod(a, b)


def _install(cls: type) -> None:
    """Give ``cls`` (fjax.core.Array or fjax.core.Tracer) the array operators and methods."""
    uf, red = _ufuncs, _reductions
    binops = {
        "add": uf.add, "sub": uf.subtract, "mul": uf.multiply, "truediv": uf.true_divide,
        "floordiv": uf.floor_divide, "mod": uf.remainder, "pow": uf.power, "matmul": _matmul,
        "and": uf.bitwise_and, "or": uf.bitwise_or, "xor": uf.bitwise_xor, "lshift": uf.left_shift,
        "rshift": uf.right_shift, "divmod": _divmod,
    }  # fmt: skip
    for name, fn in binops.items():
        setattr(cls, f"__{name}__", _defer(fn))
        setattr(cls, f"__r{name}__", _defer(fn, swap=True))
    for name, fn in {
        "eq": uf.equal,
        "ne": uf.not_equal,
        "lt": uf.less,
        "le": uf.less_equal,
        "gt": uf.greater,
        "ge": uf.greater_equal,
    }.items():
        setattr(cls, f"__{name}__", _defer(fn))
    cls.__neg__ = lambda self: uf.negative(self)
    cls.__pos__ = lambda self: uf.positive(self)
    cls.__abs__ = lambda self: uf.absolute(self)
    cls.__invert__ = lambda self: uf.invert(self)
    cls.__round__ = _py_round
    cls.__getitem__ = _getitem
    cls.at = property(_at)
    cls.T = property(_T)
    cls.mT = property(_mT)
    cls.real = property(lambda self: uf.real(self))
    cls.imag = property(lambda self: uf.imag(self))
    methods: dict[str, Callable] = {
        "sum": red.sum, "prod": red.prod, "max": red.max, "min": red.min, "mean": red.mean,
        "var": red.var, "std": red.std, "all": red.all, "any": red.any, "argmax": red.argmax,
        "argmin": red.argmin, "cumsum": red.cumsum, "cumprod": red.cumprod, "ptp": red.ptp,
        "reshape": _reshape, "transpose": _transpose, "ravel": _ravel, "flatten": _ravel,
        "squeeze": _squeeze, "swapaxes": _swapaxes, "astype": _astype, "clip": _clip, "round": _round,
        "dot": _dot, "conj": uf.conjugate, "conjugate": uf.conjugate, "nonzero": _nonzero,
        "sort": _sort, "argsort": _argsort, "diagonal": _diagonal, "trace": _trace,
    }  # fmt: skip
    for name, fn in methods.items():
        setattr(cls, name, fn)
    if cls is Tracer:
        cls.item = _item
