"""Typed PRNG keys: ``random.key(0)`` gives a key array of dtype ``key<fry>`` and shape ``()``.

A ``PRNGKeyArray`` wraps the uint32 key data (shape ``(*key_shape, 2)``). It is a pytree leaf, as
in JAX, and fjax's transforms look through it to that data (``fjax/_tree_lifted.py``), so key
arrays pass through ``jit``, ``vmap``, ``scan`` and every other transform as their data does;
``fjax.random`` functions take typed and raw (``PRNGKey``) keys alike and give back the kind
they were given. Indexing, iteration, ``jnp.stack``/``concatenate``/``where`` and the shape and
indexing functions of ``jnp`` and ``lax`` (``fjax/numpy/_key_shape.py``) take key arrays;
arithmetic does not (use ``random.key_data``), as in JAX.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import _tree_lifted, core

__all__ = ["KeyDtype", "PRNGKeyArray", "extended", "prng_key"]


# the key dtype lives in fjax.dtypes (which imports nothing above core)
from fjax.dtypes import KEY_DTYPE, KeyDtype, extended, prng_key  # noqa: E402,F401


class PRNGKeyArray:
    """An array of typed PRNG keys (``dtype=key<fry>``), wrapping uint32 data of shape ``(*shape, 2)``."""

    __slots__ = ("_base",)

    def __init__(self, base: Any) -> None:
        self._base = base

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(core.get_aval(self._base).shape[:-1])

    @property
    def aval(self) -> core.ShapedArray:
        """The abstract value: this shape, of the key dtype (``key<fry>[...]``)."""
        return core.ShapedArray(self.shape, KEY_DTYPE)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self) -> KeyDtype:
        return KEY_DTYPE

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Any:
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, idx: Any) -> PRNGKeyArray:
        idx = idx if isinstance(idx, tuple) else (idx,)
        return PRNGKeyArray(self._base[(*idx, slice(None))])

    def reshape(self, *shape: Any) -> PRNGKeyArray:
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return PRNGKeyArray(self._base.reshape((*tuple(shape), 2)))

    def ravel(self) -> PRNGKeyArray:
        return self.reshape(-1)

    def _jnp(self, name: str, *args: Any, **kwargs: Any) -> Any:
        from fjax import numpy as jnp

        return getattr(jnp, name)(self, *args, **kwargs)

    def transpose(self, *axes: Any) -> PRNGKeyArray:
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None)
        return self._jnp("transpose", axes)

    T = property(lambda self: self.transpose())
    mT = property(lambda self: self._jnp("matrix_transpose"))

    def squeeze(self, axis: Any = None) -> PRNGKeyArray:
        return self._jnp("squeeze", axis)

    def swapaxes(self, axis1: int, axis2: int) -> PRNGKeyArray:
        return self._jnp("swapaxes", axis1, axis2)

    def take(self, indices: Any, axis: Any = None, **kwargs: Any) -> PRNGKeyArray:
        return self._jnp("take", indices, axis=axis, **kwargs)

    @property
    def at(self) -> Any:
        """``keys.at[idx].set(other_keys)`` / ``.get()``, as for arrays."""
        from fjax.numpy._key_shape import key_at

        return key_at(self)

    flatten = ravel

    def astype(self, dtype: Any) -> PRNGKeyArray:
        if dtype is KEY_DTYPE or isinstance(dtype, KeyDtype):
            return self
        # JAX's convert_element_type's words (its key.astype fails earlier, leaving the method abstract)
        raise ValueError(f"Cannot convert_element_type from {KEY_DTYPE} to {np.dtype(dtype)}")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(
            "JAX array with PRNGKey dtype cannot be converted to a NumPy array. Use jax.random.key_data(arr) "
            "if you wish to extract the underlying integer array."
        )

    def copy(self) -> PRNGKeyArray:
        """A copy of these keys (``jnp.array(keys, copy=True)``)."""
        from fjax import numpy as jnp

        return PRNGKeyArray(jnp.array(self._base, copy=True))

    __copy__ = copy

    def __deepcopy__(self, memo: Any) -> PRNGKeyArray:
        return self.copy()

    def block_until_ready(self) -> PRNGKeyArray:
        return self

    def __repr__(self) -> str:
        if isinstance(self._base, core.Tracer):
            return f"Traced<{self.dtype}{list(self.shape)}>"
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{np.asarray(self._base)}"

    def __eq__(self, other: object) -> Any:
        from fjax import numpy as jnp

        if not isinstance(other, PRNGKeyArray):
            if isinstance(other, (int, float, complex, bool, np.ndarray, np.generic, core.Array, core.Tracer)):
                raise TypeError(f"equal does not accept dtypes {KEY_DTYPE}, {_dtype_name(other)}.")
            return NotImplemented
        return jnp.all(jnp.equal(self._base, other._base), axis=-1)

    def __ne__(self, other: object) -> Any:
        from fjax import numpy as jnp

        if not isinstance(other, PRNGKeyArray) and isinstance(
            other, (int, float, complex, bool, np.ndarray, np.generic, core.Array, core.Tracer)
        ):
            raise TypeError(f"not_equal does not accept dtypes {KEY_DTYPE}, {_dtype_name(other)}.")
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else jnp.logical_not(eq)

    __hash__ = None  # type: ignore[assignment]


_VALUES = (int, float, complex, bool, np.ndarray, np.generic, core.Array, core.Tracer)

# operator -> (jnp's name, lax's name, the kinds lax accepts) for the errors JAX 0.10.2 raises on
# key arithmetic: with a number, jnp's "add does not accept dtypes key<fry>, int32."; between two
# keys, lax's "add does not accept dtype key<fry> at position 0. ..." (None: JAX fails earlier,
# on numpy's "Cannot interpret 'key<fry>' as a data type")
_ARITH, _BITS, _CMP = "integer, floating, complexfloating", "integer, bool", "integer, floating, bool"
_KEY_BINOPS = {
    "add": ("add", "add", _ARITH),
    "sub": ("subtract", "sub", _ARITH),
    "mul": ("multiply", "mul", _ARITH),
    "truediv": ("true_divide", None, None),
    "floordiv": ("floor_divide", None, None),
    "mod": ("remainder", None, None),
    "and": ("bitwise_and", "and", _BITS),
    "or": ("bitwise_or", "or", _BITS),
    "xor": ("bitwise_xor", "xor", _BITS),
    "lshift": ("left_shift", None, None),
    "rshift": ("right_shift", None, None),
    "lt": ("less", "lt", _CMP),
    "le": ("less_equal", "le", _CMP),
    "gt": ("greater", "gt", _CMP),
    "ge": ("greater_equal", "ge", _CMP),
}
_KEY_UNOPS = {
    "neg": ("neg", _ARITH),
    "abs": ("abs", "floating, complexfloating, signedinteger"),
    "invert": ("not", _BITS),
}


def _key_binop(op: str, reflected: bool) -> Any:
    jnp_name, lax_name, kinds = _KEY_BINOPS[op]

    def method(self: PRNGKeyArray, other: Any) -> Any:
        if isinstance(other, PRNGKeyArray):
            if lax_name is None:
                raise TypeError(f"Cannot interpret '{KEY_DTYPE}' as a data type")
            raise TypeError(
                f"{lax_name} does not accept dtype {KEY_DTYPE} at position 0. Accepted dtypes at position 0 are "
                f"subtypes of {kinds}."
            )
        if not isinstance(other, _VALUES):
            return NotImplemented
        pair = (_dtype_name(other), KEY_DTYPE) if reflected else (KEY_DTYPE, _dtype_name(other))
        raise TypeError(f"{jnp_name} does not accept dtypes {pair[0]}, {pair[1]}.")

    method.__name__ = f"__{'r' if reflected else ''}{op}__"
    return method


def _key_unop(op: str) -> Any:
    lax_name, kinds = _KEY_UNOPS[op]

    def method(self: PRNGKeyArray) -> Any:
        raise TypeError(f"{lax_name} does not accept dtype {KEY_DTYPE}. Accepted dtypes are subtypes of {kinds}.")

    method.__name__ = f"__{op}__"
    return method


for _op in _KEY_BINOPS:
    setattr(PRNGKeyArray, f"__{_op}__", _key_binop(_op, False))
    if _op not in ("lt", "le", "gt", "ge"):  # (Python reflects a comparison to its mirror)
        setattr(PRNGKeyArray, f"__r{_op}__", _key_binop(_op, True))
for _op in _KEY_UNOPS:
    setattr(PRNGKeyArray, f"__{_op}__", _key_unop(_op))
PRNGKeyArray.__pos__ = lambda self: self  # type: ignore[attr-defined]


def _dtype_name(x: Any) -> str:
    from fjax import dtypes

    try:
        return str(dtypes.result_type(x))
    except Exception:  # noqa: BLE001 - only for the message
        return type(x).__name__


# a leaf for users (as in JAX); fjax's transforms see through it to the data (fjax/_tree_lifted.py)
_tree_lifted.register_lifted_leaf(PRNGKeyArray, lambda k: ((k._base,), None), lambda _, ch: PRNGKeyArray(ch[0]))


def is_key_dtype(dt: Any) -> bool:
    """Whether ``dt`` is the key dtype."""
    return isinstance(dt, KeyDtype)
