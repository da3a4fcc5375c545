"""``fjax.random``: JAX's default PRNG (threefry2x32), bit for bit.

Keys
    A key is a ``uint32`` array of shape ``(2,)``, as made by :func:`PRNGKey`. :func:`key` makes
    the same array: fjax has no extended key dtype, so "typed" keys are represented by their raw
    key data (``key_data`` and ``wrap_key_data`` validate and return the array unchanged, and
    batches of keys are arrays of shape ``(..., 2)``). Functions taking one key raise ``TypeError``
    for anything that is not a uint32 array ending in ``(2,)`` and ``ValueError`` for a batch of
    keys (use ``vmap``), as JAX does.

Bits
    The counter-based hash ``threefry2x32`` (Salmon et al., 2011: 20 rounds, key injection every
    4 rounds) is written as a composition of ``lax`` ops on uint32 (``add``, ``xor``,
    ``shift_left``, ``shift_right_logical``, ``or``), so it runs unchanged eagerly, under ``jit``
    (same numbers in and out of jit), ``vmap`` (over keys or seeds) and ``grad`` (samples do not
    depend differentiably on keys). Random bits, ``split`` and ``fold_in`` follow JAX 0.10 with
    its default ``jax_threefry_partitionable=True``: element ``i`` of a sample of shape ``s``
    hashes the 64-bit counter ``i`` (as a (hi, lo) pair of uint32) and 32-bit samples are
    ``hi_out ^ lo_out``.

Floating point
    ``uniform`` builds floats from the top mantissa bits, exactly as JAX does. To reproduce the
    values of JAX on CPU to the last bit, the float32 samplers repeat the arithmetic XLA's CPU
    backend performs: multiply-adds that XLA contracts into fused multiply-adds are computed
    with a private correctly rounded ``fma`` primitive, and ``log``, ``log1p``, ``erf`` and
    ``erf_inv`` are XLA's float32 polynomial approximations written with lax ops (they read
    float bits through a private ``bitcast`` primitive). Both private primitives have numpy
    impls, abstract-eval, batching and JVP rules, so everything still composes with every
    transform, and lower under ``jit`` (``rt.fma``: LLVM's fma; ``rt.bitcast``). Other float
    widths use ``fma`` and fjax's own ``lax.log``/``lax.erf_inv`` and
    agree with JAX to within an ulp or so (see the tests for what is checked bit for bit).

Modules
    This module checks arguments and holds the keys and the basic samplers. The exact-dtype
    constants, the private primitives and XLA's approximations are in ``fjax/_random_arith.py``,
    the hash in ``fjax/_random_threefry.py``, and the rest of the distributions in
    ``fjax/_random_dists.py`` and ``fjax/_random_linalg.py``. Every name is imported from here.
"""

from __future__ import annotations

import functools
import math
import operator
import sys
import warnings
from typing import Any, Sequence

import numpy as np

from fjax import core, dtypes, lax
from fjax import numpy as jnp
from fjax._prng import PRNGKeyArray  # noqa: E402
from fjax._random_arith import (  # noqa: F401 - the building blocks of fjax.random, imported from here
    _ERF_P,
    _ERF_Q,
    _ERFINV_GE5,
    _ERFINV_LT5,
    _TINY32,
    _U32,
    _UINT_DTYPES,
    _bitcast,
    _bitcast_abstract,
    _bitcast_impl,
    _bitcast_p,
    _c,
    _convert,
    _erf,
    _erf_inv,
    _f32,
    _flush,
    _fma,
    _fma_abstract,
    _fma_impl,
    _fma_jvp,
    _fma_p,
    _full,
    _full_like,
    _h,
    _is_f32,
    _log,
    _log1p,
    _two_sum,
    _xla_erf_f32,
    _xla_erf_f32_jvp,
    _xla_erf_inv_f32,
    _xla_erf_inv_f32_jvp,
    _xla_log1p_f32,
    _xla_log_f32,
)
from fjax._random_threefry import (  # noqa: F401 - threefry2x32 and the random bits, imported from here
    _ROTATIONS,
    _counters,
    _hash_shape,
    _key_halves,
    _random_bits,
    _rotl,
    _stack_last,
    threefry2x32,
)
from fjax.core import Array, Tracer
from fjax.dtypes import finfo as _finfo
from fjax.dtypes import kind as _dkind

__all__ = [
    "PRNGKey",
    "bernoulli",
    "bits",
    "categorical",
    "choice",
    "clone",
    "exponential",
    "fold_in",
    "gumbel",
    "key",
    "key_data",
    "key_dtype",
    "key_impl",
    "laplace",
    "normal",
    "permutation",
    "randint",
    "split",
    "truncated_normal",
    "uniform",
    "wrap_key_data",
]

Shape = Sequence[int]


# ---------------------------------------------------------------------------------------------
# argument checking


def _is_arraylike(x: Any) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or type(x) in (bool, int, float, complex)


def _check_key(name: str, key: Any, allow_batched: bool = False) -> Any:
    typed = isinstance(key, PRNGKeyArray)
    if typed:
        key = key._base
    # JAX's words and order of checks (its shape message goes on to print the PRNGImpl with
    # function addresses; fjax names the implementation)
    if type(key) in (bool, int, float, complex):
        raise TypeError(
            "JAX encountered invalid PRNG key data: expected key_data to have ndim, shape, and dtype attributes. "
            f"Got {key}"
        )
    if not _is_arraylike(key):
        raise TypeError(f"unexpected PRNG key type {type(key)}")
    aval = core.get_aval(key)
    if aval.ndim < 1:
        raise TypeError(f"JAX encountered invalid PRNG key data: expected key_data.ndim >= 1; got ndim={aval.ndim}")
    if aval.shape[-1] != 2:
        raise TypeError(
            "JAX encountered invalid PRNG key data: expected key_data.shape to end with (2,); got "
            f"shape={aval.shape} for impl=threefry2x32"
        )
    if aval.dtype != _U32:
        raise TypeError(
            f"JAX encountered invalid PRNG key data: expected key_data.dtype = uint32; got dtype={aval.dtype}"
        )
    if not allow_batched and aval.ndim > 1:
        shape = aval.shape[:-1] if typed else aval.shape  # (a typed key array's own shape)
        raise ValueError(
            f"{name} accepts a single key, but was given a key array of shape {shape} != (). Use jax.vmap for batching."
        )
    return key if isinstance(key, (Array, Tracer)) else core.to_array(key)


def _canonicalize_shape(shape: Any, name: str) -> tuple:
    """JAX's ``canonicalize_shape`` with its messages: one int is a 1-D shape; another
    non-sequence fails as ``tuple()`` of it does ("'float' object is not iterable")."""
    if isinstance(shape, int):
        shape = (shape,)
    dims = tuple(shape)
    try:
        return tuple(_dim(d) for d in dims)
    except TypeError:
        raise core.invalid_shape_error(dims) from None


def _dim(d: Any) -> int:
    if isinstance(d, (Array, Tracer)):
        d = core.concrete_or_error(d, "a shape must be concrete")
    out = operator.index(d)
    if out < 0:
        raise TypeError(f"shape dimensions must be nonnegative, got {out}")
    return out


def _user_dtype(dtype: Any, default_kind: type) -> np.dtype:
    """JAX's check_and_canonicalize_user_dtype: None means the default dtype of the kind; a
    64-bit dtype with x64 off is truncated with a UserWarning."""
    if dtype is None or dtype is default_kind:
        return dtypes.dtype(default_kind, canonicalize=True)
    dt = dtypes.dtype(dtype)
    canon = dtypes.canonicalize_dtype(dt)
    if canon != dt:
        warnings.warn(
            f"Explicitly requested dtype {dt.name} is not available, and will be truncated to dtype "
            f"{canon.name}. To enable more dtypes, set the jax_enable_x64 configuration option or the "
            "JAX_ENABLE_X64 shell environment variable. See https://github.com/jax-ml/jax#current-gotchas "
            "for more.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
    return canon


def _user_stacklevel() -> int:
    """The ``warnings.warn`` stacklevel (called from the caller of this) of the first frame outside
    fjax: the user's line, however many fjax frames (samplers, the eager tier) lie between."""
    f, level = sys._getframe(1), 1
    while f is not None and f.f_code.co_filename.startswith(dtypes._FJAX_PREFIX):
        f, level = f.f_back, level + 1
    return level


def _check_shape(name: str, shape: tuple, *param_shapes: tuple) -> None:
    if param_shapes:
        try:
            shape_ = np.broadcast_shapes(shape, *param_shapes)
        except ValueError:
            shape_ = None
        if shape_ is None:  # JAX's lax.broadcast_shapes fails first
            shapes = [tuple(s) for s in (shape, *param_shapes)]
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
        if shape != shape_:
            raise ValueError(
                f"{name} parameter shapes must be broadcast-compatible with shape argument, and the result "
                f"of broadcasting the shapes must equal the shape argument, but got result {shape_} for shape "
                f"argument {shape}."
            )


def _asarray(x: Any) -> Any:
    return x if isinstance(x, (Array, Tracer)) else jnp.asarray(x)


def _bcast(x: Any, shape: tuple) -> Any:
    return x if core.get_aval(x).shape == shape else jnp.broadcast_to(x, shape)


# ---------------------------------------------------------------------------------------------
# keys


def _seed_to_key(seed: Any) -> Any:
    aval = core.get_aval(seed)
    if _dkind(aval.dtype) not in "iu":
        # JAX names the seed as the tracer of its jitted seeding prints (~: weakly typed)
        weak = "~" if aval.weak_type else ""
        dims = ",".join(map(str, aval.shape))
        raise TypeError(f"PRNG key seed must be an integer; got JitTracer({weak}{aval.dtype.name}[{dims}])")
    lo = lax.convert_element_type(seed, _U32)
    if aval.dtype.itemsize == 8:
        hi = lax.convert_element_type(lax.shift_right_logical(seed, _c(32, aval.dtype)), _U32)
    else:
        hi = lax.mul(lo, _c(0, _U32))
    return _stack_last(hi, lo)


def _make_key(name: str, seed: Any) -> Any:
    if not (_is_arraylike(seed) or isinstance(seed, (Tracer, int))):
        # as JAX: a list is an array seed; a string, None, an object fail as jnp.asarray fails on them
        seed = jnp.asarray(seed)
    if _is_arraylike(seed) and jnp.ndim(seed):
        raise TypeError(
            f"{name} accepts a scalar seed, but was given an array of shape {jnp.shape(seed)} != (). "
            "Use jax.vmap for batching"
        )
    if isinstance(seed, bool):  # JAX seeds with True as with 1
        seed = int(seed)
    if isinstance(seed, int):
        if not -(2**63) <= seed < 2**63:
            raise OverflowError("Python int too large to convert to C long")
        # as JAX: the int goes through int64, then (x64 off) int32 with wraparound
        seed = np.int64(seed)
        if not dtypes.canonicalize_dtype(np.int64) == np.int64:
            seed = seed.astype(np.int32)
        return _seed_to_key(Array(np.asarray(seed), False))
    return _seed_to_key(_asarray(seed) if not isinstance(seed, Tracer) else seed)


# JAX 0.10.2's PRNG implementations, in the order its "Did you mean" lists them; fjax implements
# threefry2x32 only
_JAX_IMPLS = ("philox2x32", "philox4x32", "threefry2x32", "rbg", "unsafe_rbg", "threefry4x32")


def _check_impl_name(name: str) -> None:
    if name == "threefry2x32":
        return
    if name in _JAX_IMPLS:
        raise NotImplementedError(f'PRNG implementation "{name}" is not supported by fjax (only "threefry2x32")')
    names = ", ".join(f'"{n}"' for n in _JAX_IMPLS)
    raise ValueError(f'unrecognized PRNG implementation "{name}". Did you mean one of: {names}?')


def _resolve_impl(impl: Any) -> None:
    """JAX's resolve_prng_impl for fjax's one implementation: None, ``"threefry2x32"`` or its key
    dtype (``key_dtype()``, ``key(0).dtype``); JAX's other implementations raise
    NotImplementedError, an unknown name a ValueError, another type a TypeError."""
    if impl is None or impl is dtypes.KEY_DTYPE or impl == "threefry2x32":
        return
    if isinstance(impl, dtypes.KeyDtype):  # (fjax has only the threefry key dtype)
        return
    if type(impl) is str:
        _check_impl_name(impl)
    raise TypeError(f"unrecognized type {type(impl)} for specifying PRNG implementation.")


def _impl_or_dtype(name: str, impl: Any, dtype: Any) -> Any:
    if dtype is not None:
        if impl is not None:
            raise ValueError(f"Cannot specify both `impl` and `dtype` arguments to jax.random.{name}")
        impl = dtype
    _resolve_impl(impl)


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:  # noqa: N802
    """A PRNG key (uint32[2]) from an integer seed: (high 32 bits, low 32 bits) of the seed.

    With x64 off a Python int seed is taken modulo 2**32 as a signed 32-bit value (so
    ``PRNGKey(-1)`` is ``[0, 4294967295]``), as in JAX. ``impl``: the implementation (only
    ``"threefry2x32"``).
    """
    _resolve_impl(impl)
    return _make_key("PRNGKey", seed)


def key(seed: Any, *, impl: Any = None, dtype: Any = None) -> Any:
    """A typed PRNG key (``dtype=key<fry>``, shape ``()``) from an integer seed; its data is
    ``PRNGKey(seed)``'s. ``impl`` or ``dtype`` (a key dtype or its name) choose the implementation
    (only ``"threefry2x32"``)."""
    _impl_or_dtype("key", impl, dtype)
    return PRNGKeyArray(_make_key("key", seed))


def key_data(keys: Any) -> Any:
    """The uint32 data (shape ``(*keys.shape, 2)``) of typed keys; raw keys are returned as they are."""
    return _check_key("key_data", keys, allow_batched=True)


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> Any:
    """Typed keys from uint32 data of shape ``(..., 2)`` (``impl`` / ``dtype`` as in ``key``)."""
    _impl_or_dtype("wrap_key_data", impl, dtype)
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError("wrap_key_data: the argument is already a typed key array")
    return PRNGKeyArray(_check_key("wrap_key_data", key_bits_array, allow_batched=True))


def key_impl(keys: Any) -> str:
    """The name of the PRNG implementation of ``keys``: always ``"threefry2x32"``."""
    _check_key("key_impl", keys, allow_batched=True)
    return "threefry2x32"


def key_dtype(impl_spec: Any = None) -> dtypes.KeyDtype:
    """The dtype of typed keys of the PRNG implementation ``impl_spec`` (``None``: the default).

    fjax has one implementation, ``"threefry2x32"``, whose key dtype is ``key<fry>`` (the dtype of
    ``key(0)``); any other name raises ``ValueError`` as ``key`` does, and a non-string ``TypeError``.
    """
    if impl_spec is not None and not isinstance(impl_spec, str):
        raise TypeError(f"unrecognized type {type(impl_spec)} for specifying PRNG implementation.")
    if impl_spec is not None:
        _check_impl_name(impl_spec)
    return dtypes.KEY_DTYPE


def clone(key: Any) -> Any:
    """A copy of ``key`` (keys are immutable values in fjax, so the key itself)."""
    return key


def _like_key(given: Any, data: Any) -> Any:
    # typed keys in, typed keys out
    return PRNGKeyArray(data) if isinstance(given, PRNGKeyArray) else data


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """``num`` new keys (shape ``(num, 2)``, or ``(*num, 2)`` for a tuple), independent of
    ``key`` and of each other."""
    given, key = key, _check_key("split", key)
    shape = tuple(num) if isinstance(num, Sequence) else (num,)
    # each count through operator.index, as JAX's split ("'float' object cannot be interpreted as an integer")
    shape = _canonicalize_shape(
        tuple(d if isinstance(d, (Array, Tracer)) else operator.index(d) for d in shape), "split"
    )
    b1, b2 = _hash_shape(key, shape)
    return _like_key(given, _stack_last(b1, b2))


def fold_in(key: Any, data: Any) -> Any:
    """A new key that is a deterministic function of ``key`` and the 32-bit integer ``data``."""
    given, key = key, _check_key("fold_in", key)
    if np.ndim(data) if not isinstance(data, Tracer) else data.ndim:
        raise TypeError(
            # "ofshape": JAX 0.10.2's wording, letter for letter
            f"fold_in accepts a scalar, but was given an array ofshape {jnp.shape(data)} != (). "
            "Use jax.vmap for batching."
        )
    if isinstance(data, int) and not isinstance(data, bool):
        if not 0 <= data < 2**32:
            raise OverflowError(f"Python integer {data} out of bounds for uint32")
        data = _c(data, _U32)
    d = lax.convert_element_type(_asarray(data), _U32)
    k1, k2 = _key_halves(key)
    o1, o2 = threefry2x32(k1, k2, lax.mul(d, _c(0, _U32)), d)
    return _like_key(given, _stack_last(o1, o2))


# ---------------------------------------------------------------------------------------------
# samplers


def bits(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Uniform random bits as unsigned integers (uint32, or uint64 under x64, by default)."""
    key = _check_key("bits", key)
    dt = dtypes.default_uint_dtype() if dtype is None else _user_dtype(dtype, None)
    if _dkind(dt) != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    shape = _canonicalize_shape(shape, "bits")
    return _random_bits(key, dt.itemsize * 8, shape)


def _uniform(key: Any, shape: tuple, dtype: np.dtype, minval: Any, maxval: Any) -> Any:
    finfo = _finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    minval = _convert(minval, dtype)
    maxval = _convert(maxval, dtype)
    lo_shape, hi_shape = core.get_aval(minval).shape, core.get_aval(maxval).shape
    if lo_shape or hi_shape:
        _uniform_shape_errors(shape, lo_shape, hi_shape)
    _check_shape("uniform", shape, lo_shape, hi_shape)
    b = _random_bits(key, nbits, shape)
    mant = lax.shift_right_logical(b, _c(nbits - nmant, b.dtype))
    # == bitcast(mant | bits(1.0)) - 1.0, computed exactly without the bitcast
    floats = lax.mul(lax.convert_element_type(mant, dtype), _c(2.0**-nmant, dtype))
    lo = _bcast(minval, shape)
    hi = _bcast(maxval, shape)
    return lax.max(lo, _fma(floats, lax.sub(hi, lo), lo))


def _uniform_shape_errors(shape: tuple, lo: tuple, hi: tuple) -> None:
    """JAX's errors for bounds that do not fit ``shape``: it computes ``floats * (maxval - minval)
    + minval`` with both bounds raised to rank ``len(shape)``, so the first failing op names them."""
    r = len(shape)
    lo = (1,) * (r - len(lo)) + tuple(lo)
    hi = (1,) * (r - len(hi)) + tuple(hi)
    _binop_shape("mul", shape, _binop_shape("sub", hi, lo))


def _binop_shape(name: str, a: tuple, b: tuple) -> tuple:
    # jnp's binary ops: ranks are first equalized (failing as lax.broadcast_shapes does), then
    # the lax op checks equal-rank shapes (size-1 dimensions broadcast)
    if len(a) != len(b):
        try:
            return tuple(np.broadcast_shapes(a, b))
        except ValueError:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={[a, b]}") from None
    if any(x != y and x != 1 and y != 1 for x, y in zip(a, b)):
        raise TypeError(f"{name} got incompatible shapes for broadcasting: {a}, {b}.")
    return tuple(max(x, y) if x != 1 and y != 1 else x * y for x, y in zip(a, b))


def uniform(key: Any, shape: Shape = (), dtype: Any = None, minval: Any = 0.0, maxval: Any = 1.0) -> Any:
    """Uniform samples in ``[minval, maxval)`` of ``shape`` and float ``dtype``."""
    key = _check_key("uniform", key)
    dt = _user_dtype(dtype, float)
    shape = _canonicalize_shape(shape, "uniform")
    if _dkind(dt) != "f":
        raise ValueError(f"dtype argument to `uniform` must be a float dtype, got {dt}")
    return _uniform(key, shape, dt, minval, maxval)


def _normal_real(key: Any, shape: tuple, dtype: np.dtype) -> Any:
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    u = _uniform(key, shape, dtype, lo, np.array(1.0, dtype))
    return lax.mul(_c(np.sqrt(2), dtype), _erf_inv(u))


def normal(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard normal samples (by inverting erf on uniform samples, as JAX does)."""
    key = _check_key("normal", key)
    shape = _canonicalize_shape(shape, "normal")
    dt = _user_dtype(dtype, float)
    if _dkind(dt) not in "fc":
        raise ValueError(f"dtype argument to `normal` must be a float or complex dtype, got {dt}")
    if _dkind(dt) == "c":
        real_dt = np.dtype(f"float{dt.itemsize * 4}")
        k_re, k_im = _split2(key)
        re = lax.convert_element_type(_normal_real(k_re, shape, real_dt), dt)
        im = lax.convert_element_type(_normal_real(k_im, shape, real_dt), dt)
        return lax.div(lax.add(re, lax.mul(_c(1j, dt), im)), _c(np.sqrt(2), dt))
    return _normal_real(key, shape, dt)


def _split2(key: Any) -> tuple[Any, Any]:
    ks = split(key)
    return lax.reshape(lax.slice_in_dim(ks, 0, 1, axis=0), (2,)), lax.reshape(lax.slice_in_dim(ks, 1, 2, axis=0), (2,))


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Standard normal samples conditioned on ``lower < x < upper`` (open interval)."""
    if shape is not None:
        shape = _canonicalize_shape(shape, "truncated_normal")
    key = _check_key("truncated_normal", key)
    dt = _user_dtype(dtype, float)
    if _dkind(dt) != "f":
        raise ValueError(f"dtype argument to `truncated_normal` must be a float dtype, got {dt}")
    if shape is None:
        shape = tuple(np.broadcast_shapes(jnp.shape(lower), jnp.shape(upper)))
    else:
        _check_shape("truncated_normal", shape, jnp.shape(lower), jnp.shape(upper))
    sqrt2 = _c(np.sqrt(2), dt)
    lower = _convert(lower, dt)
    upper = _convert(upper, dt)
    a = _erf(lax.div(lower, sqrt2))
    b = _erf(lax.div(upper, sqrt2))
    u = _uniform(key, shape, dt, a, b)
    out = lax.mul(sqrt2, _erf_inv(u))
    lo = lax.nextafter(lax.stop_gradient(lower), _c(np.inf, dt))
    hi = lax.nextafter(lax.stop_gradient(upper), _c(-np.inf, dt))
    return jnp.clip(out, lo, hi)


def bernoulli(key: Any, p: Any = 0.5, shape: Shape | None = None, mode: str = "low") -> Any:
    """Boolean samples that are True with probability ``p``."""
    if shape is not None:
        shape = _canonicalize_shape(shape, "bernoulli")
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    key = _check_key("bernoulli", key)
    dt = dtypes.dtype(p, canonicalize=True)
    if _dkind(dt) != "f":
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dt}.")
    p = _convert(p, dt)
    if shape is None:
        shape = core.get_aval(p).shape
    else:
        _check_shape("bernoulli", shape, core.get_aval(p).shape)
    pb = _bcast(p, shape)
    if mode == "high":
        u = uniform(key, (2, *shape), dt)
        u1 = lax.reshape(lax.slice_in_dim(u, 0, 1, axis=0), shape)
        u2 = lax.mul(lax.reshape(lax.slice_in_dim(u, 1, 2, axis=0), shape), _c(2.0 ** -_finfo(dt).nmant, dt))
        return lax.lt(u2, lax.sub(pb, u1))
    return lax.lt(uniform(key, shape, dt), pb)


def _convert_and_clip_integer(val: Any, dtype: np.dtype) -> Any:
    vdt = core.get_aval(val).dtype
    lo = max(dtypes.iinfo(dtype).min, dtypes.iinfo(vdt).min)
    hi = min(dtypes.iinfo(dtype).max, dtypes.iinfo(vdt).max)
    clipped = lax.clamp(_c(lo, vdt), lax.convert_element_type(val, vdt), _c(hi, vdt))
    return lax.convert_element_type(clipped, dtype)


def _to_int_array(x: Any) -> Any:
    x = _asarray(x)
    if _dkind(x.dtype) not in "iu":
        x = lax.convert_element_type(x, dtypes.default_int_dtype())
    return x


def randint(key: Any, shape: Shape, minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers uniform in ``[minval, maxval)`` (JAX's modulus of 2x-wide bits: slightly biased
    unless the span is a power of 2)."""
    key = _check_key("randint", key)
    dt = _user_dtype(dtype, int)
    shape = _canonicalize_shape(shape, "randint")
    if _dkind(dt) not in "iu":
        raise TypeError(f"randint only accepts integer dtypes, got {dt}")
    for v in (minval, maxval):
        if not _is_arraylike(v):
            raise TypeError(f"randint requires ndarray or scalar arguments, got {type(v).__name__}")
    sample_dt = dt
    info = dtypes.iinfo(dt)  # (ml_dtypes': also int4/int2/int1)
    if info.bits < 32:
        sample_dt = np.dtype(np.int32)
        i32 = np.dtype(np.int32)
        lo, hi, hi1 = _c(info.min, i32), _c(info.max, i32), _c(info.max + 1, i32)
        minval = lax.clamp(lo, lax.convert_element_type(_asarray(minval), i32), hi)
        maxval = lax.clamp(lo, lax.convert_element_type(_asarray(maxval), i32), hi1)
    return lax.convert_element_type(_randint(key, shape, minval, maxval, sample_dt), dt)


def _randint(key: Any, shape: tuple, minval: Any, maxval: Any, dtype: np.dtype) -> Any:
    _check_shape("randint", shape, jnp.shape(minval), jnp.shape(maxval))
    minval = _to_int_array(minval)
    maxval = _to_int_array(maxval)
    mdt = core.get_aval(maxval).dtype
    out_of_range = lax.gt(maxval, _convert_and_clip_integer(_c(dtypes.iinfo(dtype).max, dtype), mdt))
    minval = _bcast(_convert_and_clip_integer(minval, dtype), shape)
    maxval = _bcast(_convert_and_clip_integer(maxval, dtype), shape)
    out_of_range = _bcast(out_of_range, shape)
    nbits = dtypes.iinfo(dtype).bits
    k1, k2 = _split2(key)
    higher = _random_bits(k1, nbits, shape)
    lower = _random_bits(k2, nbits, shape)
    udt = _UINT_DTYPES[nbits]
    span = lax.convert_element_type(lax.sub(maxval, minval), udt)
    one = _full_like(span, 1)
    span = lax.select(lax.le(maxval, minval), one, span)
    span = lax.select(lax.bitwise_and(out_of_range, lax.gt(maxval, minval)), lax.add(span, one), span)
    mult = lax.rem(_c(2 ** (nbits // 2), udt), span)
    mult = lax.rem(lax.mul(mult, mult), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), mult), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


def _shuffle(key: Any, x: Any, axis: int, independent: bool = True) -> Any:
    # JAX's sort-based shuffle: sort by fresh 32-bit keys, repeated enough times that key
    # collisions are negligible. With independent=False one key per position along ``axis`` is
    # shared by every slice, which permutes x exactly as JAX's take(x, shuffled arange, axis).
    shape = core.get_aval(x).shape
    size = math.prod(shape) if independent else shape[axis]
    num_rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(num_rounds):
        key, subkey = _split2(key)
        if independent:
            sort_keys = _random_bits(subkey, 32, shape)
        else:
            sort_keys = lax.broadcast_in_dim(_random_bits(subkey, 32, (shape[axis],)), shape, (axis,))
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def _canon_axis(axis: int, ndim: int, name: str) -> int:
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``arange(x)`` (int ``x``) or of ``x`` along ``axis`` (each slice
    independently if ``independent``)."""
    key = _check_key("permutation", key)
    if not _is_arraylike(x):
        raise TypeError(f"permutation requires ndarray or scalar arguments, got {type(x).__name__}")
    nd = jnp.ndim(x)
    axis = _canon_axis(axis, nd or 1, "permutation")
    if not nd:
        if _dkind(dtypes.dtype(x)) not in "iu":
            raise TypeError("x must be an integer or at least 1-dimensional")
        r = int(core.concrete_or_error(x, "argument x of jax.random.permutation()"))
        return _shuffle(key, jnp.arange(r), 0)
    x = _asarray(x)
    return _shuffle(key, x, axis, independent or nd == 1)


def choice(
    key: Any, a: Any, shape: Shape = (), replace: bool = True, p: Any = None, axis: int = 0, mode: str | None = None
) -> Any:
    """A random sample of ``shape`` from ``a`` (an array, along ``axis``, or ``arange(a)``), with or
    without replacement, uniformly or with probabilities ``p``."""
    key = _check_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
    if not _is_arraylike(a):
        raise TypeError(f"choice requires ndarray or scalar arguments, got {type(a).__name__}")
    shape = _canonicalize_shape(shape, "choice")
    arr = _asarray(a)
    if arr.ndim == 0:
        n_inputs = int(core.concrete_or_error(a, "The error occurred in jax.random.choice()"))
    else:
        axis = _canon_axis(axis, arr.ndim, "choice")
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(
            f"Cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) when 'replace=False'"
        )
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
        else:
            perm = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)
            result = lax.slice_in_dim(perm, 0, n_draws, axis=axis if arr.ndim else 0)
    else:
        p_arr = _asarray(p)
        if _dkind(p_arr.dtype) not in "fc":
            p_arr = lax.convert_element_type(p_arr, dtypes.default_float_dtype())
        if p_arr.shape != (n_inputs,):
            raise ValueError(
                "p must be None or a 1D vector with the same size as a.shape[axis]. "
                f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}."
            )
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            total = lax.reshape(lax.slice_in_dim(p_cuml, n_inputs - 1, n_inputs, axis=0), ())
            u = uniform(key, shape, dtype=p_cuml.dtype)
            r = lax.mul(total, lax.sub(_c(1, p_cuml.dtype), u))
            ind = lax.convert_element_type(jnp.searchsorted(p_cuml, r), dtypes.default_int_dtype())
        else:
            g = lax.add(gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode), _log(p_arr))
            ind = lax.convert_element_type(lax.top_k(g, n_draws)[1], dtypes.default_int_dtype())
        result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
    out_shape = shape if arr.ndim == 0 else arr.shape[0:axis] + tuple(shape) + arr.shape[axis + 1 :]
    return lax.reshape(result, out_shape)


def gumbel(key: Any, shape: Shape = (), dtype: Any = None, mode: str | None = None) -> Any:
    """Standard Gumbel samples (``mode='high'`` uses two uniforms for a finer left tail)."""
    key = _check_key("gumbel", key)
    dt = _user_dtype(dtype, float)
    if _dkind(dt) != "f":
        raise ValueError(f"dtype argument to `gumbel` must be a float dtype, got {dt}")
    shape = _canonicalize_shape(shape, "gumbel")
    mode = "low" if mode is None else mode
    if mode not in ("high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode} (fjax supports 'low' and 'high')")
    info = _finfo(dt)
    if mode == "high":
        u = _uniform(key, (2, *shape), dt, 0.0, 1.0)
        high = lax.reshape(lax.slice_in_dim(u, 0, 1, axis=0), shape)
        low = lax.reshape(lax.slice_in_dim(u, 1, 2, axis=0), shape)
        half = _full_like(high, 0.5)
        small = lax.add(_fma(_c(2.0**-info.nmant, dt), low, high), _c(info.tiny, dt))
        x = lax.select(lax.ge(high, half), high, small)
        return lax.neg(_log(lax.neg(_log1p(lax.neg(x)))))
    u = _uniform(key, shape, dt, _c(info.tiny, dt), 1.0)
    return lax.neg(_log(lax.neg(_log(u))))


def categorical(
    key: Any, logits: Any, axis: int = -1, shape: Shape | None = None, replace: bool = True, mode: str | None = None
) -> Any:
    """Samples of category indices with probabilities ``softmax(logits, axis)`` (Gumbel-max, or
    Gumbel top-k without replacement)."""
    key = _check_key("categorical", key)
    if not _is_arraylike(logits):
        raise TypeError(f"categorical requires ndarray or scalar arguments, got {type(logits).__name__}")
    logits = _asarray(logits)
    nd = logits.ndim
    axis = _canon_axis(axis, nd, "categorical")
    batch_shape = tuple(np.delete(np.array(logits.shape, dtype=np.int64), axis).tolist())
    if shape is None:
        shape = batch_shape
    else:
        shape = _canonicalize_shape(shape, "categorical")
        _check_shape("categorical", shape, batch_shape)
    shape_prefix = shape[: len(shape) - len(batch_shape)]
    if replace:
        logits_shape = list(shape[len(shape) - len(batch_shape) :])
        logits_shape.insert(axis, logits.shape[axis])
        full = (*shape_prefix, *logits_shape)
        g = gumbel(key, full, logits.dtype, mode=mode)
        lg = jnp.broadcast_to(lax.expand_dims(logits, tuple(range(len(shape_prefix)))), full)
        return jnp.argmax(lax.add(g, lg), axis=axis + len(shape_prefix))
    logits = lax.add(logits, gumbel(key, logits.shape, logits.dtype, mode=mode))
    k = math.prod(shape_prefix)
    if k > logits.shape[axis]:
        raise ValueError(
            f"Number of samples without replacement ({k}) cannot exceed number of categories ({logits.shape[axis]})."
        )
    _, indices = lax.top_k(jnp.moveaxis(logits, axis, -1), k)
    dims = (indices.ndim - 1, *range(indices.ndim - 1))
    return lax.reshape(indices, shape, dims)


def exponential(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard exponential samples, ``-log1p(-u)``."""
    key = _check_key("exponential", key)
    dt = _user_dtype(dtype, float)
    if _dkind(dt) != "f":
        raise ValueError(f"dtype argument to `exponential` must be a float dtype, got {dt}")
    shape = _canonicalize_shape(shape, "exponential")
    u = _uniform(key, shape, dt, 0.0, 1.0)
    return lax.neg(_log1p(lax.neg(u)))


def laplace(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard Laplace samples."""
    key = _check_key("laplace", key)
    dt = _user_dtype(dtype, float)
    if _dkind(dt) != "f":
        raise ValueError(f"dtype argument to `laplace` must be a float dtype, got {dt}")
    shape = _canonicalize_shape(shape, "laplace")
    u = _uniform(key, shape, dt, -1.0 + _finfo(dt).epsneg, 1.0)
    return lax.mul(lax.sign(u), _log1p(lax.neg(lax.abs(u))))


# samplers built on linear algebra live in their own module (they need jnp.linalg)
from fjax._random_linalg import multivariate_normal, orthogonal  # noqa: E402

__all__ += ["multivariate_normal", "orthogonal"]

# the remaining distributions live in fjax/_random_dists.py (imported last: it builds on the above)
from fjax._random_dists import *  # noqa: E402,F401,F403
from fjax._random_dists import __all__ as _dist_names  # noqa: E402

__all__ += _dist_names

# eager calls on large shapes run compiled (fjax/_random_eager.py); keys and the samplers built on
# linear algebra (multivariate_normal, orthogonal) do not
from fjax._random_eager import compiled_when_large as _compiled_when_large  # noqa: E402

for _name in [
    "bernoulli",
    "bits",
    "categorical",
    "exponential",
    "gumbel",
    "laplace",
    "normal",
    "randint",
    "truncated_normal",
    "uniform",
    *_dist_names,
]:
    globals()[_name] = _compiled_when_large(globals()[_name])
del _name

# split and fold_in (~1 ms op by op: ~100 primitives of threefry), permutation and choice (a
# sort of random bits; ~2.6 ms / 0.15 ms): compiled once a call signature repeats, as the small
# samplers (a training loop's ``key, sub = split(key)``, a shuffled epoch), the same bits
split = _compiled_when_large(split)
permutation = _compiled_when_large(permutation)
choice = _compiled_when_large(choice)
_fold_in = _compiled_when_large(fold_in)


@functools.wraps(fold_in)
def fold_in(key: Any, data: Any) -> Any:  # noqa: F811
    if type(data) is int and 0 <= data < 2**32:
        data = np.asarray(data, np.uint32)  # a value, not a static argument: one program for all
    return _fold_in(key, data)


# out_sharding= on the samplers JAX 0.10 gives it (the result laid out: fjax/_out_sharding.py)
from fjax import _out_sharding  # noqa: E402

for _name in [
    "ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare", "dirichlet", "exponential", "f",
    "gamma", "generalized_normal", "geometric", "gumbel", "laplace", "loggamma", "logistic", "lognormal", "maxwell",
    "multivariate_normal", "normal", "orthogonal", "pareto", "permutation", "poisson", "rademacher", "randint",
    "rayleigh", "t", "triangular", "truncated_normal", "uniform", "wald",
]:  # fmt: skip
    globals()[_name] = _out_sharding.with_out_sharding(globals()[_name], _name)
del _name

# the gamma sampler's primitive, under JAX's name (jax.random.random_gamma_p)
# jax.legacy_prng_key / jax.enable_custom_prng checks on the public functions (fjax/_flag_states.py)
from fjax._flag_states import install_random_guards as _install_guards  # noqa: E402
from fjax._random_dists import random_gamma_p  # noqa: E402,F401

_install_guards(globals())
