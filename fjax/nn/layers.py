"""Neural-network layers as immutable pytree modules (a functional, equinox-like style).

A layer is a :class:`Module`: an immutable object whose array fields (and sub-modules) are pytree
children and whose configuration fields (sizes, activations, strides...) are static aux data, so
a layer can be passed straight through ``fjax.grad``, ``fjax.jit`` and ``fjax.vmap``::

    model = MLP(4, (32, 32), 1, key=k)
    grads = fjax.grad(lambda m, x, y: jnp.mean((m(x) - y) ** 2))(model, x, y)  # grads is an MLP
    model = fjax.tree_util.tree_map(lambda p, g: p - 0.1 * g, model, grads)

Constructors take an explicit PRNG key (``key=``, a :mod:`fjax.random` key) and never keep it.
Conventions:

* ``Linear`` keeps ``weight`` as ``(in_features, out_features)`` (flax's kernel layout), so
  ``y = x @ weight + bias`` for any leading batch dims; weights default to ``lecun_normal`` and
  biases to zeros (flax's defaults); pass ``weight_init``/``bias_init`` to change them.
* ``Conv2d`` and the pooling functions use **NHWC** (channels last, as flax); kernels are
  ``HWIO``. An unbatched ``(H, W, C)`` input is accepted too.
* ``BatchNorm`` keeps its running statistics outside the module, in a :class:`BatchNormState`
  made by ``bn.init_state()``: ``y, state = bn(x, state, training=True)``. ``training`` is a
  Python bool (static under ``jit``; close over it or mark it static).
* ``Dropout`` takes the key per call: ``dropout(x, key, training=True)``.
* Recurrent cells map ``(carry, x) -> (carry, h)`` as flax's cells do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

import fjax.numpy as jnp
from fjax import dtypes, lax, tree_util
from fjax.nn import initializers as init

__all__ = [
    "MLP",
    "BatchNorm",
    "BatchNormState",
    "Conv2d",
    "Dropout",
    "Embedding",
    "LSTMCell",
    "LayerNorm",
    "Linear",
    "Module",
    "MultiHeadAttention",
    "avg_pool",
    "max_pool",
]


def _random() -> Any:
    from fjax import random

    return random


def _split(key: Any, n: int) -> list[Any]:
    keys = _random().split(key, n)
    return [keys[i] for i in range(n)]


class Module:
    """Base class of the layers: an immutable pytree node.

    Subclasses list their pytree children in ``_fields`` (arrays, sub-modules, tuples of
    sub-modules or ``None``) and their static configuration in ``_static`` (hashable values).
    ``__init__`` sets attributes with ``self._set(name, value)``; afterwards the object is
    frozen. ``m.replace(**changes)`` returns a copy with some fields replaced.
    """

    _fields: ClassVar[tuple[str, ...]] = ()
    _static: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields, static = cls._fields, cls._static
        keys = tuple(tree_util.GetAttrKey(n) for n in fields)

        def flatten(m: Module) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
            d = m.__dict__
            return tuple([d[n] for n in fields]), tuple([d[n] for n in static])

        def flatten_with_keys(m: Module) -> tuple[tuple[tuple[Any, Any], ...], tuple[Any, ...]]:
            d = m.__dict__
            return tuple([(k, d[n]) for k, n in zip(keys, fields)]), tuple([d[n] for n in static])

        def unflatten(aux: tuple[Any, ...], children: Any) -> Module:
            m = object.__new__(cls)
            d = m.__dict__
            d.update(zip(static, aux))
            d.update(zip(fields, children))
            return m

        tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; use .replace({name}=...) instead")

    def replace(self, **changes: Any) -> Any:
        """A copy of this module with the given fields replaced."""
        unknown = set(changes) - set(self._fields) - set(self._static)
        if unknown:
            raise TypeError(f"{type(self).__name__}.replace: unknown fields {sorted(unknown)}")
        m = object.__new__(type(self))
        m.__dict__.update(self.__dict__)
        m.__dict__.update(changes)
        return m

    def __repr__(self) -> str:
        parts = []
        for n in self._fields:
            v = self.__dict__[n]
            if hasattr(v, "shape") and hasattr(v, "dtype"):
                parts.append(f"{n}={np.dtype(v.dtype).name}{list(v.shape)}")
            else:
                parts.append(f"{n}={v!r}")
        for n in self._static:
            v = self.__dict__[n]
            parts.append(f"{n}={getattr(v, '__name__', None) or repr(v)}")
        return f"{type(self).__name__}({', '.join(parts)})"


def _identity(x: Any) -> Any:
    return x


class Linear(Module):
    """``y = x @ weight + bias`` with ``weight`` of shape ``(in_features, out_features)``."""

    _fields = ("weight", "bias")
    _static = ("in_features", "out_features", "use_bias")

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        key: Any,
        use_bias: bool = True,
        dtype: Any = jnp.float32,
        weight_init: Callable[..., Any] | None = None,
        bias_init: Callable[..., Any] | None = None,
    ) -> None:
        wkey, bkey = _split(key, 2)
        weight_init = init.lecun_normal() if weight_init is None else weight_init
        bias_init = init.zeros if bias_init is None else bias_init
        self._set("in_features", int(in_features))
        self._set("out_features", int(out_features))
        self._set("use_bias", bool(use_bias))
        self._set("weight", weight_init(wkey, (in_features, out_features), dtype))
        self._set("bias", bias_init(bkey, (out_features,), dtype) if use_bias else None)

    def __call__(self, x: Any) -> Any:
        y = jnp.matmul(x, self.weight)
        if self.bias is not None:
            y = y + self.bias
        return y


class MLP(Module):
    """A stack of :class:`Linear` layers with ``activation`` between them (and
    ``final_activation``, identity by default, after the last)."""

    _fields = ("layers",)
    _static = ("in_features", "hidden_sizes", "out_features", "activation", "final_activation")

    def __init__(
        self,
        in_features: int,
        hidden_sizes: Sequence[int],
        out_features: int,
        activation: Callable[[Any], Any] | None = None,
        *,
        key: Any,
        final_activation: Callable[[Any], Any] | None = None,
        use_bias: bool = True,
        dtype: Any = jnp.float32,
    ) -> None:
        from fjax.nn import relu

        sizes = (int(in_features), *(int(h) for h in hidden_sizes), int(out_features))
        keys = _split(key, len(sizes) - 1)
        self._set("in_features", sizes[0])
        self._set("hidden_sizes", sizes[1:-1])
        self._set("out_features", sizes[-1])
        self._set("activation", relu if activation is None else activation)
        self._set("final_activation", _identity if final_activation is None else final_activation)
        self._set(
            "layers",
            tuple(Linear(a, b, key=k, use_bias=use_bias, dtype=dtype) for a, b, k in zip(sizes[:-1], sizes[1:], keys)),
        )

    def __call__(self, x: Any) -> Any:
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.final_activation(self.layers[-1](x))


def _pair(v: Any, name: str) -> tuple[int, int]:
    if isinstance(v, int):
        return (v, v)
    t = tuple(int(i) for i in v)
    if len(t) != 2:
        raise ValueError(f"{name} must be an int or a pair, got {v!r}")
    return t  # type: ignore[return-value]


def _canon_padding(padding: Any, n: int) -> Any:
    if isinstance(padding, str):
        return padding.upper()
    if isinstance(padding, int):
        return tuple((padding, padding) for _ in range(n))
    out = []
    for p in padding:
        out.append((int(p), int(p)) if isinstance(p, int) else (int(p[0]), int(p[1])))
    return tuple(out)


class Conv2d(Module):
    """2-D convolution over NHWC inputs (or unbatched HWC) with an HWIO ``weight``.

    ``padding`` is ``'SAME'``, ``'VALID'``, an int, or per-dimension ``(low, high)`` pairs.
    """

    _fields = ("weight", "bias")
    _static = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups")

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] = 1,
        padding: Any = "SAME",
        *,
        key: Any,
        dilation: int | Sequence[int] = 1,
        groups: int = 1,
        use_bias: bool = True,
        dtype: Any = jnp.float32,
        weight_init: Callable[..., Any] | None = None,
        bias_init: Callable[..., Any] | None = None,
    ) -> None:
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2d: channels ({in_channels}, {out_channels}) must be divisible by groups={groups}")
        ks = _pair(kernel_size, "kernel_size")
        wkey, bkey = _split(key, 2)
        weight_init = init.lecun_normal() if weight_init is None else weight_init
        bias_init = init.zeros if bias_init is None else bias_init
        self._set("in_channels", int(in_channels))
        self._set("out_channels", int(out_channels))
        self._set("kernel_size", ks)
        self._set("stride", _pair(stride, "stride"))
        self._set("padding", _canon_padding(padding, 2))
        self._set("dilation", _pair(dilation, "dilation"))
        self._set("groups", int(groups))
        self._set("weight", weight_init(wkey, (*ks, in_channels // groups, out_channels), dtype))
        self._set("bias", bias_init(bkey, (out_channels,), dtype) if use_bias else None)

    def __call__(self, x: Any) -> Any:
        x = jnp.asarray(x)
        unbatched = x.ndim == 3
        if unbatched:
            x = x[None]
        if x.ndim != 4:
            raise ValueError(f"Conv2d expects NHWC (or HWC) input, got shape {x.shape}")
        y = lax.conv_general_dilated(
            x,
            self.weight,
            window_strides=self.stride,
            padding=self.padding,
            rhs_dilation=self.dilation,
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
            feature_group_count=self.groups,
        )
        if self.bias is not None:
            y = y + self.bias
        return y[0] if unbatched else y


# --------------------------------------------------------------------------------------------
# Pooling (no reduce_window: non-overlapping windows by reshape, the general case by slicing)
# --------------------------------------------------------------------------------------------


def _pool_args(x: Any, window_shape: Sequence[int], strides: Sequence[int] | None) -> tuple:
    window = tuple(int(w) for w in window_shape)
    strides = window if strides is None else tuple(int(s) for s in strides)
    if len(strides) != len(window):
        raise ValueError(f"pooling: strides {strides} and window_shape {window} must have the same length")
    nsp = len(window)
    if x.ndim < nsp + 1:
        raise ValueError(f"pooling: input of shape {x.shape} needs {nsp} spatial dims and a feature dim")
    first = x.ndim - 1 - nsp  # spatial dims are the ones right before the (last) feature dim
    return window, strides, first


def _pool(x: Any, window_shape: Any, strides: Any, padding: Any, kind: str, count_include_pad: bool) -> Any:
    x = jnp.asarray(x)
    window, strides, first = _pool_args(x, window_shape, strides)
    nsp = len(window)
    spatial = x.shape[first : first + nsp]
    if isinstance(padding, str):
        pads = [tuple(p) for p in lax.padtype_to_pads(spatial, window, strides, padding)]
    else:
        pads = [tuple(int(i) for i in p) for p in padding]
    no_pad = all(p == (0, 0) for p in pads)
    if no_pad and window == strides and all(n % w == 0 for n, w in zip(spatial, window)):
        return _pool_reshape(x, window, first, kind)
    return _pool_slices(x, window, strides, first, pads, kind, count_include_pad)


def _pool_reshape(x: Any, window: tuple[int, ...], first: int, kind: str) -> Any:
    """Non-overlapping windows that tile the input: split each spatial dim into
    (out, window) and reduce over the window axes."""
    shape = list(x.shape[:first])
    red_axes = []
    for i, w in enumerate(window):
        n = x.shape[first + i]
        shape += [n // w, w]
        red_axes.append(first + 2 * i + 1)
    shape += list(x.shape[first + len(window) :])
    xr = jnp.reshape(x, tuple(shape))
    if kind == "max":
        return jnp.max(xr, axis=tuple(red_axes))
    return jnp.mean(xr, axis=tuple(red_axes))


def _pool_slices(
    x: Any,
    window: tuple[int, ...],
    strides: tuple[int, ...],
    first: int,
    pads: list[tuple[int, int]],
    kind: str,
    count_include_pad: bool,
) -> Any:
    """General windows: pad, then combine one strided slice per window offset."""
    nsp = len(window)
    if any(p != (0, 0) for p in pads):
        if kind == "max":
            # -inf, or the lowest value of dtypes without -inf (float8_e4m3fn, ...) and of integers
            dt = np.dtype(x.dtype)
            fill = -np.inf if dtypes.kind(dt) == "c" else dtypes._extremes(dt)[0]
        else:
            fill = 0
        cfg = [(0, 0, 0)] * x.ndim
        for i, (lo, hi) in enumerate(pads):
            cfg[first + i] = (lo, hi, 0)
        x_p = lax.pad(x, jnp.array(fill, x.dtype), tuple(cfg))
    else:
        x_p = x
    padded = x_p.shape[first : first + nsp]
    out = [(n - w) // s + 1 for n, w, s in zip(padded, window, strides)]
    if any(o <= 0 for o in out):
        raise ValueError(f"pooling: window {window} larger than the padded input {tuple(padded)}")
    acc = None
    for offs in np.ndindex(*window):
        start = [0] * x.ndim
        limit = list(x_p.shape)
        step = [1] * x.ndim
        for i, (o, s, n_out) in enumerate(zip(offs, strides, out)):
            start[first + i] = int(o)
            limit[first + i] = int(o) + (n_out - 1) * s + 1
            step[first + i] = s
        piece = lax.slice(x_p, tuple(start), tuple(limit), tuple(step))
        if acc is None:
            acc = piece
        elif kind == "max":
            acc = jnp.maximum(acc, piece)
        else:
            acc = acc + piece
    if kind == "max":
        return acc
    if count_include_pad or all(p == (0, 0) for p in pads):
        return acc / float(np.prod(window))
    # divide by the number of real (unpadded) elements in each window
    counts = np.ones((), np.float32)
    for n, w, s, o, (lo, _) in zip(x.shape[first : first + nsp], window, strides, out, pads):
        starts = np.arange(o) * s - lo
        c = np.minimum(starts + w, n) - np.maximum(starts, 0)
        counts = np.multiply.outer(counts, c.astype(np.float32))
    counts = counts.reshape(counts.shape + (1,) * (x.ndim - first - nsp))
    return acc / jnp.asarray(counts, dtype=acc.dtype)


def max_pool(x: Any, window_shape: Sequence[int], strides: Sequence[int] | None = None, padding: Any = "VALID") -> Any:
    """Max pooling over the spatial dims of a channels-last input ``(batch..., spatial..., C)``,
    one spatial dim per entry of ``window_shape`` (as flax.linen.max_pool). ``strides`` defaults
    to ``window_shape``; ``padding`` is ``'VALID'``, ``'SAME'`` or ``(low, high)`` pairs (padded
    with -inf, or the dtype's lowest value where it has no -inf: integers, float8_e4m3fn, ...)."""
    return _pool(x, window_shape, strides, padding, "max", True)


def avg_pool(
    x: Any,
    window_shape: Sequence[int],
    strides: Sequence[int] | None = None,
    padding: Any = "VALID",
    count_include_pad: bool = True,
) -> Any:
    """Average pooling, laid out as :func:`max_pool`; padded zeros count in the average unless
    ``count_include_pad=False`` (as flax.linen.avg_pool)."""
    return _pool(x, window_shape, strides, padding, "avg", count_include_pad)


# --------------------------------------------------------------------------------------------
# Normalization, dropout, embedding
# --------------------------------------------------------------------------------------------


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` dims, then scale by ``weight`` and shift
    by ``bias`` (both present when ``elementwise_affine``)."""

    _fields = ("weight", "bias")
    _static = ("normalized_shape", "eps")

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        *,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        dtype: Any = jnp.float32,
    ) -> None:
        shape = (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self._set("normalized_shape", shape)
        self._set("eps", float(eps))
        self._set("weight", jnp.ones(shape, dtype) if elementwise_affine else None)
        self._set("bias", jnp.zeros(shape, dtype) if elementwise_affine else None)

    def __call__(self, x: Any) -> Any:
        x = jnp.asarray(x)
        n = len(self.normalized_shape)
        if tuple(x.shape[x.ndim - n :]) != self.normalized_shape:
            raise ValueError(f"LayerNorm{self.normalized_shape}: input shape {x.shape} does not end with it")
        axes = tuple(range(x.ndim - n, x.ndim))
        mean = jnp.mean(x, axis=axes, keepdims=True)
        centered = x - mean
        var = jnp.mean(jnp.square(centered), axis=axes, keepdims=True)
        y = centered * lax.rsqrt(var + self.eps)
        if self.weight is not None:
            y = y * self.weight + self.bias
        return y


class BatchNormState(NamedTuple):
    """Running statistics of a :class:`BatchNorm` (a pytree)."""

    mean: Any
    var: Any


class BatchNorm(Module):
    """Batch normalization over every axis but the feature ``axis`` (last by default).

    ``y, new_state = bn(x, state, training)``:

    * ``training=True``: normalize with the batch mean and (biased) variance, and return
      ``new_state`` with ``running = momentum * running + (1 - momentum) * batch`` (flax's
      convention; momentum 0.99 by default);
    * ``training=False``: normalize with ``state``'s running statistics, returned unchanged.

    ``bn.init_state()`` gives the initial state (mean 0, variance 1). Batch statistics are over
    the array ``bn`` sees, so call it on the whole batch (not inside a per-example ``vmap``).
    """

    _fields = ("weight", "bias")
    _static = ("num_features", "momentum", "eps", "axis")

    def __init__(
        self,
        num_features: int,
        *,
        momentum: float = 0.99,
        eps: float = 1e-5,
        axis: int = -1,
        affine: bool = True,
        dtype: Any = jnp.float32,
    ) -> None:
        self._set("num_features", int(num_features))
        self._set("momentum", float(momentum))
        self._set("eps", float(eps))
        self._set("axis", int(axis))
        self._set("weight", jnp.ones((num_features,), dtype) if affine else None)
        self._set("bias", jnp.zeros((num_features,), dtype) if affine else None)

    def init_state(self, dtype: Any = jnp.float32) -> BatchNormState:
        return BatchNormState(jnp.zeros((self.num_features,), dtype), jnp.ones((self.num_features,), dtype))

    def __call__(self, x: Any, state: BatchNormState, training: bool) -> tuple[Any, BatchNormState]:
        x = jnp.asarray(x)
        ax = self.axis % x.ndim
        if x.shape[ax] != self.num_features:
            raise ValueError(f"BatchNorm({self.num_features}): input shape {x.shape} has {x.shape[ax]} features")
        red = tuple(i for i in range(x.ndim) if i != ax)
        bshape = tuple(self.num_features if i == ax else 1 for i in range(x.ndim))
        if training:
            mean = jnp.mean(x, axis=red)
            var = jnp.mean(jnp.square(x - jnp.reshape(mean, bshape)), axis=red)
            m = self.momentum
            new_state = BatchNormState(
                m * state.mean + (1 - m) * lax.stop_gradient(mean),
                m * state.var + (1 - m) * lax.stop_gradient(var),
            )
        else:
            mean, var = state.mean, state.var
            new_state = state
        y = (x - jnp.reshape(mean, bshape)) * lax.rsqrt(jnp.reshape(var, bshape) + self.eps)
        if self.weight is not None:
            y = y * jnp.reshape(self.weight, bshape) + jnp.reshape(self.bias, bshape)
        return y, new_state


class Dropout(Module):
    """Zero each element with probability ``rate`` and scale the rest by ``1 / (1 - rate)``
    when ``training``; the identity otherwise (``key`` may then be ``None``)."""

    _fields = ()
    _static = ("rate",)

    def __init__(self, rate: float = 0.5) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"Dropout rate must be in [0, 1], got {rate}")
        self._set("rate", float(rate))

    def __call__(self, x: Any, key: Any = None, training: bool = True) -> Any:
        x = jnp.asarray(x)
        if not training or self.rate == 0.0:
            return x
        if self.rate == 1.0:
            return jnp.zeros_like(x)
        if key is None:
            raise ValueError("Dropout needs a PRNG key when training")
        keep_prob = 1.0 - self.rate
        keep = _random().bernoulli(key, keep_prob, x.shape)
        return jnp.where(keep, x / keep_prob, jnp.zeros_like(x))


class Embedding(Module):
    """A ``(num_embeddings, features)`` table looked up by integer ids (N(0, 1) init)."""

    _fields = ("weight",)
    _static = ("num_embeddings", "features")

    def __init__(
        self,
        num_embeddings: int,
        features: int,
        *,
        key: Any,
        dtype: Any = jnp.float32,
        weight_init: Callable[..., Any] | None = None,
    ) -> None:
        weight_init = init.normal(1.0) if weight_init is None else weight_init
        self._set("num_embeddings", int(num_embeddings))
        self._set("features", int(features))
        self._set("weight", weight_init(key, (num_embeddings, features), dtype))

    def __call__(self, ids: Any) -> Any:
        return jnp.take(self.weight, jnp.asarray(ids), axis=0)

    def attend(self, x: Any) -> Any:
        """Logits against every embedding (``x @ weight.T``), for tied output layers."""
        return jnp.matmul(x, self.weight.T)


# --------------------------------------------------------------------------------------------
# Recurrent and attention
# --------------------------------------------------------------------------------------------


class LSTMCell(Module):
    """One LSTM step: ``(c, h), h = cell((c, h), x)`` with gates i, f, g, o (in that order in
    the fused ``4 * hidden_size`` weights)::

        i, f, g, o = split(x @ w_ih + h @ w_hh + bias)
        c' = sigmoid(f) * c + sigmoid(i) * tanh(g);  h' = sigmoid(o) * tanh(c')
    """

    _fields = ("w_ih", "w_hh", "bias")
    _static = ("input_size", "hidden_size")

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        key: Any,
        use_bias: bool = True,
        dtype: Any = jnp.float32,
    ) -> None:
        k1, k2 = _split(key, 2)
        self._set("input_size", int(input_size))
        self._set("hidden_size", int(hidden_size))
        self._set("w_ih", init.lecun_normal()(k1, (input_size, 4 * hidden_size), dtype))
        self._set("w_hh", init.lecun_normal()(k2, (hidden_size, 4 * hidden_size), dtype))
        self._set("bias", jnp.zeros((4 * hidden_size,), dtype) if use_bias else None)

    def initialize_carry(self, batch_shape: Sequence[int] = (), dtype: Any = jnp.float32) -> tuple[Any, Any]:
        shape = (*batch_shape, self.hidden_size)
        return jnp.zeros(shape, dtype), jnp.zeros(shape, dtype)

    def __call__(self, carry: tuple[Any, Any], x: Any) -> tuple[tuple[Any, Any], Any]:
        from fjax.nn import sigmoid

        c, h = carry
        z = jnp.matmul(x, self.w_ih) + jnp.matmul(h, self.w_hh)
        if self.bias is not None:
            z = z + self.bias
        i, f, g, o = jnp.split(z, 4, axis=-1)
        new_c = sigmoid(f) * c + sigmoid(i) * jnp.tanh(g)
        new_h = sigmoid(o) * jnp.tanh(new_c)
        return (new_c, new_h), new_h


class MultiHeadAttention(Module):
    """Multi-head attention with ``num_heads`` heads of size ``d_model // num_heads``.

    ``mha(query, key_value=None, *, mask=None, causal=False)`` on ``(..., seq, d_model)``
    inputs; ``key_value`` defaults to ``query`` (self-attention). ``mask`` is boolean,
    broadcastable to ``(..., num_heads, q_len, kv_len)``, True where attending is allowed;
    ``causal=True`` additionally hides later positions.
    """

    _fields = ("q_proj", "k_proj", "v_proj", "out_proj")
    _static = ("num_heads", "d_model")

    def __init__(
        self, num_heads: int, d_model: int, *, key: Any, use_bias: bool = True, dtype: Any = jnp.float32
    ) -> None:
        if d_model % num_heads:
            raise ValueError(f"MultiHeadAttention: d_model={d_model} not divisible by num_heads={num_heads}")
        kq, kk, kv, ko = _split(key, 4)
        self._set("num_heads", int(num_heads))
        self._set("d_model", int(d_model))
        self._set("q_proj", Linear(d_model, d_model, key=kq, use_bias=use_bias, dtype=dtype))
        self._set("k_proj", Linear(d_model, d_model, key=kk, use_bias=use_bias, dtype=dtype))
        self._set("v_proj", Linear(d_model, d_model, key=kv, use_bias=use_bias, dtype=dtype))
        self._set("out_proj", Linear(d_model, d_model, key=ko, use_bias=use_bias, dtype=dtype))

    def __call__(self, query: Any, key_value: Any = None, *, mask: Any = None, causal: bool = False) -> Any:
        from fjax.nn import dot_product_attention

        query = jnp.asarray(query)
        kv = query if key_value is None else jnp.asarray(key_value)
        h, dh = self.num_heads, self.d_model // self.num_heads

        def heads(t: Any) -> Any:
            return jnp.reshape(t, (*t.shape[:-1], h, dh))

        q = heads(self.q_proj(query))
        k = heads(self.k_proj(kv))
        v = heads(self.v_proj(kv))
        out = dot_product_attention(q, k, v, mask=mask, is_causal=causal)
        out = jnp.reshape(out, (*out.shape[:-2], self.d_model))
        return self.out_proj(out)
