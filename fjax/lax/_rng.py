"""``lax.rng_bit_generator`` and ``lax.rng_uniform``: XLA's RngBitGenerator and Rng ops.

``rng_bit_generator(key, shape, dtype, algorithm)`` is the stateless bit generator XLA exposes:
a ``uint32[4]`` key (or a ``uint64[2]`` one, as JAX accepts with x64 on) goes in, the updated key
and ``shape`` random bits come out. fjax computes them bit for bit as XLA's CPU expansion does
(``xla/hlo/builder/lib/prng.cc`` and ``rng_bit_generator_expander.cc``): the key is read as two
little-endian ``uint64`` words, the first the algorithm's key and the rest its counter;
``RNG_PHILOX`` (the CPU default) runs Philox-4x32-10 on a 128-bit counter, ``RNG_THREE_FRY`` runs
Threefry-2x32-20 on a 64-bit one. 8- and 16-bit results are the low bits of 32-bit draws.

The primitive has JAX's rules: no derivative (the key is an integer, so its tangent is always a
symbolic zero and differentiation passes through), and JAX's batching rule, which draws one
``(batch, *shape)`` block from the *first* key of the batch and advances only that key.

``rng_uniform(a, b, shape)`` is XLA's stateful, unseeded Rng op: uniform values in ``[a, b)``
(floats) or ``[a, b)`` integers, different on every call. fjax draws them from a process-wide
numpy generator. It has no derivative and no batching rule, as in JAX.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fjax import core, dtypes
from fjax.interpreters import ad, batching
from fjax.lax._dot_algorithms import RandomAlgorithm

__all__ = [
    "rng_bit_generator",
    "rng_bit_generator_p",
    "rng_uniform",
    "rng_uniform_p",
]


_U32 = np.uint32
_U64 = np.uint64
_MASK32 = _U64(0xFFFFFFFF)
_BIT_DTYPES = {np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)}


def _lo(x: np.ndarray) -> np.ndarray:
    return (x & _MASK32).astype(_U32)


def _hi(x: np.ndarray) -> np.ndarray:
    return (x >> _U64(32)).astype(_U32)


def _join(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(_U64) | (hi.astype(_U64) << _U64(32))


# --- Philox-4x32-10 ---------------------------------------------------------------------------

_PHILOX_W = (_U32(0x9E3779B9), _U32(0xBB67AE85))
_PHILOX_M = (_U64(0xD2511F53), _U64(0xCD9E8D57))


def _philox4x32(x: list[np.ndarray], k0: np.uint32, k1: np.uint32) -> list[np.ndarray]:
    k0, k1 = _U32(k0), _U32(k1)
    for _ in range(10):
        p0 = x[0].astype(_U64) * _PHILOX_M[0]
        p1 = x[2].astype(_U64) * _PHILOX_M[1]
        x = [_hi(p1) ^ x[1] ^ k0, _lo(p1), _hi(p0) ^ x[3] ^ k1, _lo(p0)]
        k0, k1 = k0 + _PHILOX_W[0], k1 + _PHILOX_W[1]
    return x


def _philox_blocks(key: np.uint64, lo: np.uint64, hi: np.uint64, n: int) -> tuple[list[np.ndarray], np.uint64]:
    """``n`` Philox blocks (four uint32 lanes each) for counters ``(hi:lo) + 0 .. n-1``; returns
    them and the low word of the advanced counter."""
    i = np.arange(n, dtype=_U64)
    low = lo + i
    high = np.where(low < lo, hi + _U64(1), hi).astype(_U64)
    lanes = _philox4x32([_lo(low), _hi(low), _lo(high), _hi(high)], _lo(key), _hi(key))
    return lanes, lo + _U64(n)


def _philox(state: np.ndarray, shape: tuple[int, ...], bits: int) -> tuple[np.ndarray, np.ndarray]:
    key = state[0]
    # a u64[2] state carries a 128-bit counter whose high word is the key itself (XLA reverses
    # the state); a u64[3] one has a separate high word, which the update never touches
    lo, hi = state[1], (state[2] if state.shape[0] >= 3 else state[0])
    n = int(np.prod(shape, dtype=np.int64))
    if bits == 64:
        lanes, new_lo = _philox_blocks(key, lo, hi, -(-2 * n // 4))
        vals = np.stack([_join(lanes[0], lanes[1]), _join(lanes[2], lanes[3])], axis=1).reshape(-1)
    else:
        lanes, new_lo = _philox_blocks(key, lo, hi, -(-n // 4))
        vals = np.stack(lanes, axis=1).reshape(-1)
    new_state = state.copy()
    new_state[1] = new_lo
    return new_state, vals[:n].reshape(shape)


# --- Threefry-2x32-20 -------------------------------------------------------------------------

_ROT = (13, 15, 26, 6, 17, 29, 16, 24)


def _rotl(v: np.ndarray, d: int) -> np.ndarray:
    return (v << _U32(d)) | (v >> _U32(32 - d))


def _threefry2x32(x0: np.ndarray, x1: np.ndarray, key: np.uint64) -> tuple[np.ndarray, np.ndarray]:
    ks = [_U32(_lo(key)), _U32(_hi(key))]
    ks.append(_U32(0x1BD11BDA) ^ ks[0] ^ ks[1])
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for step in range(5):
        for r in _ROT[4 * (step % 2) : 4 * (step % 2) + 4]:
            x0 = x0 + x1
            x1 = _rotl(x1, r) ^ x0
        x0 = x0 + ks[(step + 1) % 3]
        x1 = x1 + ks[(step + 2) % 3] + _U32(step + 1)
    return x0, x1


def _threefry_counts(counter: np.uint64, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.uint64]:
    n = int(np.prod(shape, dtype=np.int64))
    c = (counter + np.arange(n, dtype=_U64)).reshape(shape)
    return _lo(c), _hi(c), counter + _U64(n)


def _threefry(state: np.ndarray, shape: tuple[int, ...], bits: int) -> tuple[np.ndarray, np.ndarray]:
    key, counter = state[0], state[1]
    new_state = state.copy()
    if bits == 64:
        c0, c1, new_state[1] = _threefry_counts(counter, shape)
        x0, x1 = _threefry2x32(c0, c1, key)
        return new_state, _join(x0, x1)
    if not shape:
        c0, c1, new_state[1] = _threefry_counts(counter, (1,))
        return new_state, _threefry2x32(c0, c1, key)[0].reshape(())
    # XLA halves the shape along its first even dimension (else its largest one) and
    # interleaves the two output words along it
    even = [i for i, d in enumerate(shape) if d % 2 == 0]
    axis = even[0] if even else int(np.argmax(shape))
    d = shape[axis]
    half = (*shape[:axis], -(-d // 2), 1, *shape[axis + 1 :])
    c0, c1, new_state[1] = _threefry_counts(counter, half)
    x0, x1 = _threefry2x32(c0, c1, key)
    out = np.concatenate([x0, x1], axis=axis + 1)
    out = out.reshape(*shape[:axis], 2 * half[axis], *shape[axis + 1 :])
    return new_state, out[(slice(None),) * axis + (slice(0, d),)]


def _rng_bit_generator_impl(
    key: np.ndarray, *, shape: tuple, dtype: np.dtype, algorithm: RandomAlgorithm, out_sharding: Any = None
) -> list:
    key = np.asarray(key)
    as_u32 = key.dtype == np.uint32
    state = np.ascontiguousarray(key).view("<u8").copy() if as_u32 else key.astype(_U64)
    bits = 64 if np.dtype(dtype).itemsize == 8 else 32
    algo = RandomAlgorithm(algorithm)
    with np.errstate(over="ignore"):
        if algo == RandomAlgorithm.RNG_THREE_FRY:
            new_state, vals = _threefry(state, tuple(shape), bits)
        else:  # RNG_DEFAULT is Philox on XLA's CPU backend
            new_state, vals = _philox(state, tuple(shape), bits)
    new_key = new_state.astype("<u8").view(_U32) if as_u32 else new_state
    return [np.asarray(new_key, key.dtype), np.asarray(vals).astype(dtype)]


def _check_key(key: core.ShapedArray) -> None:
    ok = (key.shape == (4,) and key.dtype == np.uint32) or (key.shape == (2,) and key.dtype == np.uint64)
    if not ok:
        raise TypeError(
            f"rng_bit_generator: the key must be a uint32[4] (or uint64[2]) array, got {key.dtype}{list(key.shape)}"
        )


def _rng_bit_generator_abstract(
    key: core.ShapedArray, *, shape: tuple, dtype: np.dtype, algorithm: Any, out_sharding: Any = None
) -> list:
    _check_key(key)
    return [core.ShapedArray(key.shape, key.dtype, key.weak_type), core.ShapedArray(tuple(shape), dtype, False)]


rng_bit_generator_p = core.Primitive("rng_bit_generator")
rng_bit_generator_p.multiple_results = True
rng_bit_generator_p.def_impl(_rng_bit_generator_impl)
rng_bit_generator_p.def_abstract_eval(_rng_bit_generator_abstract)


def _no_derivative(prim: core.Primitive) -> None:
    # as JAX: a JVP with only symbolic-zero tangents just evaluates the primitive (JAX's JVP
    # trace skips the rule then); a real tangent has no rule to go through
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        if any(type(t) is not ad.Zero for t in tangents):
            raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented")
        out = prim.bind(*primals, **params)
        outs = out if prim.multiple_results else [out]
        zeros = [ad.Zero(ad.tangent_aval(core.get_aval(o))) for o in outs]
        return out, (zeros if prim.multiple_results else zeros[0])

    ad.primitive_jvps[prim] = rule


_no_derivative(rng_bit_generator_p)


def _rng_bit_generator_batch(
    vals: list, dims: list, *, shape: tuple, dtype: np.dtype, algorithm: Any, **params: Any
) -> tuple:
    # JAX's rule (jax/_src/lax/control_flow/loops.py): one draw of (batch, *shape) bits from the
    # first key; only that key advances, the others come back unchanged
    from fjax.lax import slicing  # noqa: PLC0415

    (keys,), (bd,) = vals, dims
    keys = batching.moveaxis(keys, bd, 0)
    size = core.get_aval(keys).shape[0]
    new_key, bits = rng_bit_generator_p.bind(keys[0], shape=(size, *shape), dtype=dtype, algorithm=algorithm, **params)
    new_keys = slicing.dynamic_update_index_in_dim(keys, new_key, 0, axis=0)
    return [new_keys, bits], [0, 0]


batching.primitive_batchers[rng_bit_generator_p] = _rng_bit_generator_batch


def _canonical_shape(shape: Any, name: str) -> tuple[int, ...]:
    try:
        dims = tuple(shape)
    except TypeError:
        dims = (shape,)
    try:
        out = tuple(operator.index(d) for d in dims)
    except TypeError:
        raise TypeError(f"{name}: shapes must be sequences of integers, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise TypeError(f"{name}: shape dimensions must be nonnegative, got {shape!r}")
    return out


def rng_bit_generator(
    key: Any,
    shape: Any,
    dtype: Any = np.uint32,
    algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT,
    *,
    out_sharding: Any = None,
) -> tuple[Any, Any]:
    """Stateless PRNG bit generator (``jax.lax.rng_bit_generator``): returns ``(new_key, bits)``,
    ``bits`` uniformly random of ``shape`` and the unsigned ``dtype`` (uint8/16/32/64), from a
    ``uint32[4]`` key with XLA's CPU algorithms (``RNG_DEFAULT`` is Philox). Most users want
    ``fjax.random`` instead."""
    from fjax.numpy import _util  # noqa: PLC0415  (jnp imports lax)

    shape = _canonical_shape(shape, "rng_bit_generator")
    dtype = dtypes.canonicalize_user_dtype(
        np.uint32 if dtype is None else getattr(dtype, "_np_type", dtype), "rng_bit_generator"
    )
    if dtype not in _BIT_DTYPES:
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
    key = _util.to_fjax(key, "rng_bit_generator")
    # out_sharding is kept as a parameter (as in JAX's jaxprs); one device has one sharding
    params = dict(algorithm=RandomAlgorithm(algorithm), dtype=dtype, out_sharding=out_sharding, shape=shape)
    return tuple(rng_bit_generator_p.bind(key, **params))


# --- rng_uniform ------------------------------------------------------------------------------

_uniform_source = np.random.default_rng()


def _rng_uniform_impl(a: np.ndarray, b: np.ndarray, *, shape: tuple) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    dt = a.dtype
    if dtypes.kind(dt) in "iu":
        if b <= a:
            return np.full(shape, a, dt)
        return _uniform_source.integers(int(a), int(b), size=shape, dtype=dt)
    u = _uniform_source.random(size=shape, dtype=np.float64 if dt == np.float64 else np.float32)
    out = (a.astype(u.dtype) + (b.astype(u.dtype) - a.astype(u.dtype)) * u).astype(dt)
    # rounding to a narrow float may land on b; keep the interval half-open
    return np.where(out >= b, a, out).astype(dt) if out.size else out


def _rng_uniform_abstract(a: core.ShapedArray, b: core.ShapedArray, *, shape: tuple) -> core.ShapedArray:
    if a.dtype != b.dtype:
        raise ValueError(f"Arguments to rng_uniform must have identical dtypes, got {a.dtype} and {b.dtype}.")
    if a.shape != () or b.shape != ():
        raise ValueError(f"Arguments to rng_uniform must be scalars; got shapes {a.shape} and {b.shape}.")
    if dtypes.kind(np.dtype(a.dtype)) not in "iuf":
        # XLA's Rng op takes integers and reals only (JAX's CPU compiler aborts on others)
        raise TypeError(f"rng_uniform: unsupported dtype {a.dtype}: it takes integer or floating-point bounds")
    return core.ShapedArray(tuple(shape), a.dtype, a.weak_type and b.weak_type)


rng_uniform_p = core.Primitive("rng_uniform")
rng_uniform_p.def_impl(_rng_uniform_impl)
rng_uniform_p.def_abstract_eval(_rng_uniform_abstract)
# stateful: two draws with the same arguments must stay two draws
rng_uniform_p.effectful = True
_no_derivative(rng_uniform_p)


def rng_uniform(a: Any, b: Any, shape: Any) -> Any:
    """Stateful uniform draws in ``[a, b)`` of ``shape`` (``jax.lax.rng_uniform``, XLA's Rng op):
    ``a`` and ``b`` are scalars of one dtype; every call gives new values, with no key and no
    seed. As in JAX, ``fjax.random`` is the API to use; this exists for low-level code."""
    from fjax.numpy import _util  # noqa: PLC0415

    a = _util.to_fjax(a, "rng_uniform")
    b = _util.to_fjax(b, "rng_uniform")
    return rng_uniform_p.bind(a, b, shape=tuple(shape))
