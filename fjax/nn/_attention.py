"""``fjax.nn.dot_product_attention``: JAX's 'xla' implementation (scaled dot-product attention over
``(batch, seq, heads, head_dim)`` arrays, grouped-query heads, boolean/causal/local-window/padding
masks, the log-sum-exp residual).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import lax
from fjax import numpy as jnp
from fjax.dtypes import finfo as _finfo


def _large_negative(dtype: np.dtype) -> Any:
    # as JAX: -0.7 * the dtype's max (at most float32's), so a fully masked row stays finite
    m = min(float(_finfo(dtype).max), float(np.finfo(np.float32).max))
    return jnp.asarray(-0.7 * m, dtype=dtype)


def _check(t: Any, shape: list, dtype: Any, name: str) -> None:
    if t is None:
        return
    if t.ndim != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
    for i in range(t.ndim):
        if shape[i] != -1 and t.shape[i] != shape[i]:
            raise ValueError(f"{name} shape should be {shape}: but got {t.shape}")


def _ensure_4d(t: Any) -> Any:
    t = jnp.asarray(t)
    return jnp.expand_dims(t, tuple(range(4 - t.ndim))) if t.ndim < 4 else t


def _merge_batch(t: Any, lead: tuple) -> Any:
    """An operand of more than 4 dimensions with its leading (batch) dimensions ``lead`` merged."""
    if t is None or t.ndim <= 4 and not lead:
        return t
    t = jnp.broadcast_to(t, lead + tuple(t.shape[-3:])) if t.ndim < len(lead) + 3 else t
    return jnp.reshape(t, (-1,) + tuple(t.shape[-3:]))


def _masks(logits: Any, mask: Any, is_causal: bool, q_len: Any, kv_len: Any, window: Any) -> Any:
    """``logits`` (B, K, G, T, S) with the disallowed positions set to a large negative number."""
    if mask is None and not is_causal and q_len is None and kv_len is None and window is None:
        return logits
    T, S = logits.shape[-2], logits.shape[-1]
    keep = jnp.ones(logits.shape, dtype=bool) if mask is None else jnp.broadcast_to(mask, logits.shape)
    qi = lax.broadcasted_iota(np.int32, (T, S), 0)
    ki = lax.broadcasted_iota(np.int32, (T, S), 1)
    if is_causal:
        keep = jnp.logical_and(keep, qi >= ki)
    if window is not None:
        left, right = window
        keep = jnp.logical_and(keep, jnp.logical_and(qi <= ki + left, qi >= ki - right))
    if q_len is not None:
        keep = jnp.logical_and(keep, (jnp.arange(T)[None, :, None] < q_len[:, None, None])[:, None, None])
    if kv_len is not None:
        keep = jnp.logical_and(keep, (jnp.arange(S)[None, None, :] < kv_len[:, None, None])[:, None, None])
    return jnp.where(keep, logits, _large_negative(logits.dtype))


def _grouped(t: Any, K: int, G: int) -> Any:
    """A (B, N or 1, T, S) bias/mask as (B, K or 1, G or 1, T, S)."""
    if t is None:
        return None
    tB, tN, tT, tS = t.shape
    if tN == 1:
        return t[:, :, None]
    return jnp.reshape(t, (tB, K, G, tT, tS))


def dot_product_attention(
    query: Any,
    key: Any,
    value: Any,
    bias: Any = None,
    mask: Any = None,
    *,
    scale: float | None = None,
    is_causal: bool = False,
    query_seq_lengths: Any = None,
    key_value_seq_lengths: Any = None,
    local_window_size: int | tuple[int, int] | None = None,
    implementation: str | None = None,
    return_residual: bool = False,
) -> Any:
    """Scaled dot-product attention, ``softmax(query . key * scale + bias, masked) . value``.

    Arrays are ``(batch, seq, heads, head_dim)`` (fewer dimensions: leading ones of size 1; more:
    several batch dimensions); the number of query heads is a multiple of the key/value heads
    (grouped-query attention). ``mask`` (boolean, broadcastable to ``(batch, heads, q_len, k_len)``)
    is True where attention is allowed; ``is_causal`` masks keys after each query;
    ``local_window_size`` ``(left, right)`` (an int: both) keeps keys within that distance;
    ``query_seq_lengths`` / ``key_value_seq_lengths`` (int32, per batch) mask padding (padded
    queries give zeros). ``return_residual``: also the log-sum-exp of the masked logits,
    ``(batch, seq, heads)``. ``implementation``: None or ``'xla'`` (``'cudnn'`` needs cuDNN).
    """
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise NotImplementedError(
                "dot_product_attention: implementation='cudnn' needs NVIDIA's cuDNN kernels; fjax runs the 'xla' "
                "implementation (implementation=None or 'xla')"
            )
        raise ValueError(f"Unsupported implementation option: {implementation}")
    query, key, value = jnp.asarray(query), jnp.asarray(key), jnp.asarray(value)
    out_shape = query.shape
    lead: tuple = ()
    if max(query.ndim, key.ndim, value.ndim) > 4:
        lead = tuple(query.shape[:-3])
        query, key, value = (_merge_batch(t, lead) for t in (query, key, value))
        bias = _merge_batch(None if bias is None else jnp.asarray(bias), lead)
        mask = _merge_batch(None if mask is None else jnp.asarray(mask), lead)
    q, k, v = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
    bias = None if bias is None else _ensure_4d(bias)
    mask = None if mask is None else _ensure_4d(mask)
    q_len = None if query_seq_lengths is None else jnp.asarray(query_seq_lengths)
    kv_len = None if key_value_seq_lengths is None else jnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    B, S, K, H = k.shape
    _check(v, [B, S, K, H], k.dtype, "value")
    _check(q, [B, -1, -1, H], k.dtype, "query")
    _check(mask, [-1] * 4, np.dtype(bool), "mask")
    _check(bias, [-1] * 4, None, "bias")
    _check(q_len, [B], np.dtype("int32"), "query_seq_lengths")
    _check(kv_len, [B], np.dtype("int32"), "key_value_seq_lengths")
    T, N = q.shape[1], q.shape[2]
    if N % K != 0:
        raise ValueError(f"The number of query heads must be a multiple of key/value heads, but got {N} vs {K}")
    G = N // K
    scale = (1.0 / np.sqrt(H)) if scale is None else scale
    logits_dt = jnp.promote_types(q.dtype, np.float32)
    qg = jnp.reshape(q, (B, T, K, G, H))
    logits = jnp.einsum("BTKGH,BSKH->BKGTS", qg, k, preferred_element_type=logits_dt)
    logits = logits * jnp.array(scale, dtype=logits.dtype)
    if bias is not None:
        logits = (logits + _grouped(bias, K, G)).astype(logits.dtype)
    logits = _masks(logits, _grouped(mask, K, G), is_causal, q_len, kv_len, local_window_size)
    logits = logits.astype(np.float32)
    from fjax.nn import logsumexp, softmax  # noqa: PLC0415

    probs = softmax(logits, axis=-1).astype(k.dtype)
    out = jnp.reshape(jnp.einsum("BKGTS,BSKH->BTKGH", probs, v), (B, T, N, H))
    if q_len is not None:
        out = out * (jnp.arange(T)[None, :] < q_len[:, None])[:, :, None, None].astype(out.dtype)
    out = jnp.reshape(out, out_shape[:-1] + (v.shape[-1],))
    if not return_residual:
        return out
    lse = logsumexp(logits, axis=-1).astype(k.dtype)  # (B, K, G, T)
    lse = jnp.reshape(jnp.transpose(lse, (0, 3, 1, 2)), (B, T, N))
    return out, lax.stop_gradient(jnp.reshape(lse, out_shape[:-1]))
