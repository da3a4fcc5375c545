"""``fjax.image``: ``resize`` and ``scale_and_translate``, as ``jax.image``.

Each resized dimension is a contraction with an (input, output) weight matrix built from the
resampling kernel (triangle for linear, Keys cubic, Lanczos-3/5, box overlap for area) evaluated at
the distances between output sample centres mapped into the input and the input pixel centres.
With ``antialias`` and downsampling, the kernel is stretched by the inverse scale (so it low-pass
filters); weights are normalized per output sample, and samples whose centre falls outside the
input get zero weight. Differentiable in the image, and in ``scale``/``translation``.
``nearest`` picks ``floor((i + 0.5) * in / out)``. ``cubic-pytorch`` without antialiasing (edge
padding) raises NotImplementedError.
"""

from __future__ import annotations

import enum
from typing import Any, Callable, Sequence

import numpy as np

from fjax import numpy as jnp
from fjax.dtypes import finfo as _finfo
from fjax.numpy._util import promote_dtypes_inexact

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """Resampling methods (names as ``jax.image.ResizeMethod``)."""

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> ResizeMethod:
        names = {
            "nearest": ResizeMethod.NEAREST,
            "linear": ResizeMethod.LINEAR,
            "bilinear": ResizeMethod.LINEAR,
            "trilinear": ResizeMethod.LINEAR,
            "triangle": ResizeMethod.LINEAR,
            "lanczos3": ResizeMethod.LANCZOS3,
            "lanczos5": ResizeMethod.LANCZOS5,
            "cubic": ResizeMethod.CUBIC,
            "bicubic": ResizeMethod.CUBIC,
            "tricubic": ResizeMethod.CUBIC,
            "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
            "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
            "area": ResizeMethod.AREA,
        }
        if s not in names:
            raise ValueError(f'Unknown resize method "{s}"')
        return names[s]


def _lanczos(radius: float) -> Callable:
    def k(x: Any) -> Any:
        y = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
        out = jnp.where(x > 1e-3, y / jnp.where(x != 0, np.pi**2 * x * x, 1), 1)
        return jnp.where(x > radius, 0.0, out)

    return k


def _keys_cubic(x: Any) -> Any:
    # Keys' cubic convolution kernel with a = -0.5
    out = ((1.5 * x - 2.5) * x) * x + 1.0
    out = jnp.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
    return jnp.where(x >= 2.0, 0.0, out)


def _triangle(x: Any) -> Any:
    return jnp.maximum(0, 1 - jnp.abs(x))


_AREA = object()
_KERNELS = {
    ResizeMethod.LINEAR: _triangle,
    ResizeMethod.LANCZOS3: _lanczos(3.0),
    ResizeMethod.LANCZOS5: _lanczos(5.0),
    ResizeMethod.CUBIC: _keys_cubic,
    ResizeMethod.AREA: _AREA,
}


def _weights(in_size: int, out_size: int, scale: Any, translation: Any, kernel: Any, antialias: bool) -> Any:
    """The (in_size, out_size) resampling matrix."""
    dt = jnp.result_type(scale, translation)
    inv = 1.0 / scale
    kscale = jnp.maximum(inv, 1.0) if antialias else 1.0
    centers = (jnp.arange(out_size, dtype=dt) + 0.5) * inv - translation * inv - 0.5
    if kernel is _AREA:
        left = jnp.arange(out_size, dtype=dt) * inv - translation * inv
        right = left + inv
        lj = jnp.arange(in_size, dtype=dt)
        w = jnp.maximum(0.0, jnp.minimum(right[None, :], lj[:, None] + 1) - jnp.maximum(left[None, :], lj[:, None]))
    else:
        x = jnp.abs(centers[None, :] - jnp.arange(in_size, dtype=dt)[:, None]) / kscale
        w = kernel(x)
    total = jnp.sum(w, axis=0, keepdims=True)
    w = jnp.where(jnp.abs(total) > 1000.0 * float(_finfo(np.float32).eps), w / jnp.where(total != 0, total, 1), 0)
    inside = (centers >= -0.5) & (centers <= in_size - 0.5)
    return jnp.where(inside[None, :], w, 0)


def _apply(x: Any, out_shape: tuple, dims: Sequence[int], scales: Sequence, translations: Sequence, kernel: Any,
           antialias: bool) -> Any:  # fmt: skip
    for d, s, t in zip(dims, scales, translations):
        d = d % x.ndim
        w = _weights(x.shape[d], out_shape[d], s, t, kernel, antialias).astype(x.dtype)
        # contract dimension d with the weight matrix, keeping the output where d was
        x = jnp.moveaxis(jnp.tensordot(x, w, axes=([d], [0])), -1, d)
    return x


def _method(method: Any) -> ResizeMethod:
    return ResizeMethod.from_string(method) if isinstance(method, str) else method


def _kernel_for(method: ResizeMethod, antialias: bool) -> Any:
    if method == ResizeMethod.CUBIC_PYTORCH:
        if not antialias:
            raise NotImplementedError("fjax.image: 'cubic-pytorch' without antialiasing (edge padding)")
        method = ResizeMethod.CUBIC
    return _KERNELS[method]


def scale_and_translate(
    image: Any,
    shape: Sequence[int],
    spatial_dims: Sequence[int],
    scale: Any,
    translation: Any,
    method: Any,
    antialias: bool = True,
    precision: Any = None,
) -> Any:
    """Resample ``image`` to ``shape`` mapping output coordinate ``o`` of each of
    ``spatial_dims`` to input coordinate ``(o + 0.5 - translation) / scale - 0.5``."""
    shape = tuple(int(s) for s in shape)
    image = jnp.asarray(image)
    if len(shape) != image.ndim:
        raise ValueError(f"shape must have length equal to the number of dimensions of x;  {shape} vs {image.shape}")
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for scale_and_translate.")
    kernel = _kernel_for(method, antialias)
    (image,) = promote_dtypes_inexact("scale_and_translate", image)
    scale, translation = promote_dtypes_inexact("scale_and_translate", jnp.asarray(scale), jnp.asarray(translation))
    if len(spatial_dims) == 0:
        return image
    scales = [scale[i] for i in range(len(spatial_dims))]
    translations = [translation[i] for i in range(len(spatial_dims))]
    return _apply(image, shape, spatial_dims, scales, translations, kernel, antialias)


def resize(image: Any, shape: Sequence[int], method: Any, antialias: bool = True, precision: Any = None) -> Any:
    """Resize ``image`` to ``shape`` with ``method`` ('nearest', 'linear', 'cubic', 'lanczos3',
    'lanczos5', 'area'); dimensions whose size does not change are left alone."""
    shape = tuple(int(s) for s in shape)
    image = jnp.asarray(image)
    if len(shape) != image.ndim:
        raise ValueError(f"shape must have length equal to the number of dimensions of x;  {shape} vs {image.shape}")
    method = _method(method)
    dims = tuple(i for i in range(image.ndim) if image.shape[i] != shape[i])
    if method == ResizeMethod.NEAREST:
        for d in dims:
            m, n = image.shape[d], shape[d]
            offsets = np.floor((np.arange(n, dtype=np.float32) + 0.5) * np.float32(m) / np.float32(n)).astype(np.int32)
            image = jnp.take(image, jnp.asarray(offsets), axis=d)
        return image
    kernel = _kernel_for(method, antialias)
    (image,) = promote_dtypes_inexact("resize", image)
    scales = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
    scales = [jnp.asarray(s, image.dtype) for s in scales]
    translations = [jnp.asarray(0.0, image.dtype) for _ in dims]
    return _apply(image, shape, dims, scales, translations, kernel, antialias)
