"""``fjax.nn.initializers``: parameter initializers with the conventions of ``jax.nn.initializers``.

Each builder returns ``init(key, shape, dtype=float32) -> Array``. ``zeros`` and ``ones`` are
initializers themselves. Random draws come from :mod:`fjax.random` (imported lazily, at call
time). Fans follow JAX: ``in_axis=-2`` and ``out_axis=-1`` by default, every other axis (not in
``batch_axis``) being the receptive field, so a ``(in, out)`` dense kernel and an ``HWIO``
convolution kernel both get ``fan_in = in * receptive field``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import fjax.numpy as jnp

__all__ = [
    "Initializer",
    "constant",
    "delta_orthogonal",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "kaiming_normal",
    "kaiming_uniform",
    "lecun_normal",
    "lecun_uniform",
    "normal",
    "ones",
    "orthogonal",
    "truncated_normal",
    "uniform",
    "variance_scaling",
    "xavier_normal",
    "xavier_uniform",
    "zeros",
]

Initializer = Callable[..., Any]

# standard deviation of a standard normal truncated to (-2, 2)
_TRUNC_STD = 0.87962566103423978


def _random() -> Any:
    from fjax import random

    return random


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(d) for d in shape)


def _dtype(dtype: Any) -> Any:
    return jnp.float32 if dtype is None else dtype


def zeros(key: Any, shape: Any, dtype: Any = None, out_sharding: Any = None) -> Any:
    """An array of zeros (``key`` is ignored; ``out_sharding``: its sharding, as ``jnp.zeros``'s)."""
    return jnp.zeros(_shape(shape), _dtype(dtype), out_sharding=out_sharding)


def ones(key: Any, shape: Any, dtype: Any = None, out_sharding: Any = None) -> Any:
    """An array of ones (``key`` is ignored; ``out_sharding``: its sharding, as ``jnp.ones``'s)."""
    return jnp.ones(_shape(shape), _dtype(dtype), out_sharding=out_sharding)


def constant(value: Any, dtype: Any = None) -> Initializer:
    """Initializer filling the array with ``value``."""

    def init(key: Any, shape: Any, dtype: Any = dtype) -> Any:
        return jnp.full(_shape(shape), value, dtype=_dtype(dtype))

    return init


def uniform(scale: Any = 1e-2, dtype: Any = None) -> Initializer:
    """Initializer drawing uniformly from ``[0, scale)``."""

    def init(key: Any, shape: Any, dtype: Any = dtype) -> Any:
        dtype = _dtype(dtype)
        return _random().uniform(key, _shape(shape), dtype) * jnp.array(scale, dtype)

    return init


def normal(stddev: Any = 1e-2, dtype: Any = None) -> Initializer:
    """Initializer drawing from a normal with mean 0 and standard deviation ``stddev``."""

    def init(key: Any, shape: Any, dtype: Any = dtype) -> Any:
        dtype = _dtype(dtype)
        return _random().normal(key, _shape(shape), dtype) * jnp.array(stddev, dtype)

    return init


def truncated_normal(stddev: Any = 1e-2, dtype: Any = None, lower: Any = -2.0, upper: Any = 2.0) -> Initializer:
    """Initializer drawing a standard normal truncated to ``(lower, upper)``, times ``stddev``
    (no variance correction, as jax.nn.initializers.truncated_normal)."""

    def init(key: Any, shape: Any, dtype: Any = dtype) -> Any:
        dtype = _dtype(dtype)
        return _random().truncated_normal(key, lower, upper, _shape(shape), dtype) * jnp.array(stddev, dtype)

    return init


def _axes_size(shape: tuple[int, ...], axes: int | Sequence[int]) -> int:
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def _compute_fans(
    shape: tuple[int, ...],
    in_axis: int | Sequence[int] = -2,
    out_axis: int | Sequence[int] = -1,
    batch_axis: int | Sequence[int] = (),
) -> tuple[float, float]:
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(
            f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor with "
            "default in_axis. Must be at least 2D or specify in_axis explicitly."
        )
    in_size = _axes_size(shape, in_axis)
    out_size = _axes_size(shape, out_axis)
    batch_size = _axes_size(shape, batch_axis)
    receptive = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive, out_size * receptive


def variance_scaling(
    scale: Any,
    mode: str,
    distribution: str,
    in_axis: int | Sequence[int] = -2,
    out_axis: int | Sequence[int] = -1,
    batch_axis: int | Sequence[int] = (),
    dtype: Any = None,
) -> Initializer:
    """Initializer with variance ``scale / n``, ``n`` the fan given by ``mode`` (``"fan_in"``,
    ``"fan_out"``, ``"fan_avg"``, ``"fan_geo_avg"``), drawn from ``distribution``:
    ``"truncated_normal"`` (truncated at 2 standard deviations, then rescaled so the standard
    deviation after truncation is ``sqrt(scale / n)``), ``"normal"`` or ``"uniform"``
    (on ``[-sqrt(3 scale / n), sqrt(3 scale / n))``)."""
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

    def init(key: Any, shape: Any, dtype: Any = dtype) -> Any:
        shape = _shape(shape)
        dtype = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        elif mode == "fan_avg":
            denominator = (fan_in + fan_out) / 2
        else:
            denominator = (fan_in * fan_out) ** 0.5
        variance = scale / denominator
        rnd = _random()
        np_dtype = np.dtype(dtype)
        if distribution == "truncated_normal":
            stddev = np.array(math.sqrt(variance) / _TRUNC_STD, np_dtype)
            return rnd.truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return rnd.normal(key, shape, dtype) * np.array(math.sqrt(variance), np_dtype)
        return rnd.uniform(key, shape, dtype, -1, 1) * np.array(math.sqrt(3 * variance), np_dtype)

    return init


def glorot_uniform(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (), dtype: Any = None) -> Initializer:
    """variance_scaling(1.0, "fan_avg", "uniform"), a.k.a. Xavier uniform."""
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (), dtype: Any = None) -> Initializer:
    """variance_scaling(1.0, "fan_avg", "truncated_normal"), a.k.a. Xavier normal."""
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def lecun_uniform(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (), dtype: Any = None) -> Initializer:
    """variance_scaling(1.0, "fan_in", "uniform")."""
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (), dtype: Any = None) -> Initializer:
    """variance_scaling(1.0, "fan_in", "truncated_normal")."""
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def he_uniform(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (), dtype: Any = None) -> Initializer:
    """variance_scaling(2.0, "fan_in", "uniform"), a.k.a. Kaiming uniform."""
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (), dtype: Any = None) -> Initializer:
    """variance_scaling(2.0, "fan_in", "truncated_normal"), a.k.a. Kaiming normal."""
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """Initializer of (semi-)orthogonal matrices, as ``jax.nn.initializers.orthogonal``: the Q of
    the QR decomposition of a normal draw (signs fixed by R's diagonal, so Q is Haar-distributed);
    the other axes are flattened into the rows and ``column_axis`` holds the columns."""

    def init(key: Any, shape: Any, dtype: Any = dtype, out_sharding: Any = None) -> Any:
        shape = _shape(shape)
        dt = _dtype(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols if n_cols else 0
        matrix_shape = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
        a = _random().normal(key, matrix_shape, dt)
        q, r = jnp.linalg.qr(a)
        q = q * jnp.sign(jnp.diagonal(r))[None, :]
        if n_rows < n_cols:
            q = q.T
        q = jnp.reshape(q, tuple(np.delete(shape, column_axis)) + (n_cols,))
        q = jnp.moveaxis(q, -1, column_axis)
        return (scale * q).astype(dt)

    return init


def delta_orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """Initializer for 3-5-D convolution kernels: zero except the spatial centre, which holds an
    orthogonal ``(in, out)`` matrix (as ``jax.nn.initializers.delta_orthogonal``)."""

    def init(key: Any, shape: Any, dtype: Any = dtype, out_sharding: Any = None) -> Any:
        shape = _shape(shape)
        dt = _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dt)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return jnp.zeros(shape, dt).at[centre].set(ortho)

    return init
