"""``jax.example_libraries.stax``: neural-network layers as ``(init_fun, apply_fun)`` pairs.

``init_fun(rng, input_shape) -> (output_shape, params)``; ``apply_fun(params, inputs, **kwargs)``.
Layers compose with ``serial``/``parallel``; pooling uses ``lax.reduce_window``.
"""

from __future__ import annotations

import functools
import operator as op
from collections.abc import Callable
from typing import Any

import fjax.numpy as jnp
from fjax import lax, random
from fjax.nn import initializers
from fjax.nn import log_softmax as _log_softmax
from fjax.nn import softmax as _softmax

__all__ = [
    "AvgPool", "BatchNorm", "Conv", "ConvTranspose", "Dense", "Dropout", "Elu", "Exp", "FanInConcat",
    "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv", "GeneralConvTranspose", "Identity", "LeakyRelu",
    "LogSoftmax", "MaxPool", "Relu", "Selu", "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh", "elementwise",
    "elu", "gelu", "glorot", "glorot_normal", "leaky_relu", "log_softmax", "logsoftmax", "normal", "ones",
    "parallel", "randn", "relu", "selu", "serial", "shape_dependent", "sigmoid", "softmax", "softplus",
    "standardize", "zeros",
]  # fmt: skip

from fjax.nn import elu, gelu, leaky_relu, relu, selu, sigmoid, softplus, standardize  # noqa: E402

softmax = _softmax
log_softmax = logsoftmax = _log_softmax
glorot_normal = initializers.glorot_normal
normal = initializers.normal
glorot = glorot_normal
randn = normal


def zeros(key: Any, shape: Any, dtype: Any = jnp.float32) -> Any:
    """Zeros initializer."""
    return jnp.zeros(shape, dtype)


def ones(key: Any, shape: Any, dtype: Any = jnp.float32) -> Any:
    """Ones initializer."""
    return jnp.ones(shape, dtype)


def Dense(out_dim: int, W_init: Callable = glorot_normal(), b_init: Callable = normal()) -> tuple:  # noqa: N802,N803
    """Fully connected layer ``inputs @ W + b``."""

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        output_shape = input_shape[:-1] + (out_dim,)
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))  # noqa: N806
        return output_shape, (W, b)

    def apply_fun(params: tuple, inputs: Any, **kwargs: Any) -> Any:
        W, b = params  # noqa: N806
        return jnp.dot(inputs, W) + b

    return init_fun, apply_fun


def GeneralConv(
    dimension_numbers: tuple, out_chan: int, filter_shape: tuple, strides: tuple | None = None,
    padding: Any = "VALID", W_init: Callable | None = None, b_init: Callable = normal(1e-6),  # noqa: N803
) -> tuple:  # noqa: N802  # fmt: skip
    """A general convolution layer (``lax.conv_general_dilated``) with ``dimension_numbers``
    like ``("NHWC", "HWIO", "NHWC")``."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))  # noqa: N806

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        filter_shape_iter = iter(filter_shape)
        kernel_shape = [
            out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else next(filter_shape_iter)
            for c in rhs_spec
        ]
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        W, b = W_init(k1, tuple(kernel_shape)), b_init(k2, tuple(bias_shape))  # noqa: N806
        out = lax.conv_general_dilated(jnp.zeros(input_shape), W, strides, padding, dimension_numbers=dimension_numbers)
        return out.shape, (W, b)

    def apply_fun(params: tuple, inputs: Any, **kwargs: Any) -> Any:
        W, b = params  # noqa: N806
        return lax.conv_general_dilated(inputs, W, strides, padding, one, one, dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(
    dimension_numbers: tuple, out_chan: int, filter_shape: tuple, strides: tuple | None = None,
    padding: Any = "VALID", W_init: Callable | None = None, b_init: Callable = normal(1e-6),  # noqa: N803
) -> tuple:  # noqa: N802  # fmt: skip
    """A transposed convolution layer (``lax.conv_transpose``)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))  # noqa: N806

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        filter_shape_iter = iter(filter_shape)
        kernel_shape = [
            out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else next(filter_shape_iter)
            for c in rhs_spec
        ]
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        W, b = W_init(k1, tuple(kernel_shape)), b_init(k2, tuple(bias_shape))  # noqa: N806
        out = lax.conv_transpose(jnp.zeros(input_shape), W, strides, padding, dimension_numbers=dimension_numbers)
        return out.shape, (W, b)

    def apply_fun(params: tuple, inputs: Any, **kwargs: Any) -> Any:
        W, b = params  # noqa: N806
        return lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis: Any = (0, 1, 2), epsilon: float = 1e-5, center: bool = True, scale: bool = True,
              beta_init: Callable = zeros, gamma_init: Callable = ones) -> tuple:  # noqa: N802  # fmt: skip
    """Batch normalization over ``axis`` (statistics of the batch itself; no running averages)."""
    _beta_init = lambda rng, shape: beta_init(rng, shape) if center else ()  # noqa: E731
    _gamma_init = lambda rng, shape: gamma_init(rng, shape) if scale else ()  # noqa: E731
    axis = (axis,) if jnp.isscalar(axis) else axis

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        return input_shape, (_beta_init(k1, shape), _gamma_init(k2, shape))

    def apply_fun(params: tuple, x: Any, **kwargs: Any) -> Any:
        beta, gamma = params
        ed = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[ed] * z + beta[ed]
        if center:
            return z + beta[ed]
        if scale:
            return gamma[ed] * z
        return z

    return init_fun, apply_fun


def elementwise(fun: Callable, **fun_kwargs: Any) -> tuple:
    """A layer applying ``fun`` elementwise."""
    init_fun = lambda rng, input_shape: (input_shape, ())  # noqa: E731
    apply_fun = lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs)  # noqa: E731
    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _pooling_layer(reducer: Callable, init_val: Any, rescaler: Callable | None = None) -> Callable:
    def PoolingLayer(
        window_shape: tuple, strides: tuple | None = None, padding: str = "VALID", spec: str | None = None
    ) -> tuple:  # noqa: N802,E501
        """A pooling layer over the spatial dimensions."""
        strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        if spec is None:
            non_spatial_axes = 0, len(window_shape) + 1
        else:
            non_spatial_axes = spec.index("N"), spec.index("C")
        for i in sorted(non_spatial_axes):
            window_shape = window_shape[:i] + (1,) + window_shape[i:]
            strides = strides[:i] + (1,) + strides[i:]

        def init_fun(rng: Any, input_shape: tuple) -> tuple:
            from fjax.lax._extra import reduce_window_shape_tuple
            from fjax.lax.convolution import padtype_to_pads

            pads = padtype_to_pads(input_shape, window_shape, strides, padding)
            return reduce_window_shape_tuple(input_shape, window_shape, strides, pads), ()

        def apply_fun(params: tuple, inputs: Any, **kwargs: Any) -> Any:
            out = lax.reduce_window(inputs, init_val, reducer, window_shape, strides, padding)
            return rescale(out, inputs, spec) if rescale else out

        return init_fun, apply_fun

    return PoolingLayer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.0)


def _normalize_by_window_size(dims: tuple, strides: tuple, padding: str) -> Callable:
    def rescale(outputs: Any, inputs: Any, spec: str | None) -> Any:
        if spec is None:
            non_spatial_axes = 0, inputs.ndim - 1
        else:
            non_spatial_axes = spec.index("N"), spec.index("C")
        spatial_shape = tuple(inputs.shape[i] for i in range(inputs.ndim) if i not in non_spatial_axes)
        one = jnp.ones(spatial_shape, dtype=inputs.dtype)
        window_sizes = lax.reduce_window(one, 0.0, lax.add, dims, strides, padding)
        for i in sorted(non_spatial_axes):
            window_sizes = jnp.expand_dims(window_sizes, i)
        return outputs / window_sizes

    return rescale


AvgPool = _pooling_layer(lax.add, 0.0, _normalize_by_window_size)


def _flatten_init(rng: Any, input_shape: tuple) -> tuple:
    return (input_shape[0], functools.reduce(op.mul, input_shape[1:], 1)), ()


def _flatten_apply(params: tuple, inputs: Any, **kwargs: Any) -> Any:
    return jnp.reshape(inputs, (inputs.shape[0], -1))


Flatten = (_flatten_init, _flatten_apply)
Identity = (lambda rng, input_shape: (input_shape, ()), lambda params, inputs, **kwargs: inputs)


def FanOut(num: int) -> tuple:  # noqa: N802
    """A layer copying its input into ``num`` outputs."""
    return (lambda rng, input_shape: ([input_shape] * num, ()), lambda params, inputs, **kwargs: [inputs] * num)


FanInSum = (lambda rng, input_shape: (input_shape[0], ()), lambda params, inputs, **kwargs: sum(inputs))


def FanInConcat(axis: int = -1) -> tuple:  # noqa: N802
    """A layer concatenating its inputs along ``axis``."""

    def init_fun(rng: Any, input_shape: list) -> tuple:
        ax = axis % len(input_shape[0])
        concat_size = sum(shape[ax] for shape in input_shape)
        out_shape = input_shape[0][:ax] + (concat_size,) + input_shape[0][ax + 1 :]
        return out_shape, ()

    def apply_fun(params: tuple, inputs: list, **kwargs: Any) -> Any:
        return jnp.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train") -> tuple:  # noqa: N802
    """Dropout keeping each unit with probability ``rate`` in ``mode="train"`` (needs ``rng=``)."""

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        return input_shape, ()

    def apply_fun(params: tuple, inputs: Any, **kwargs: Any) -> Any:
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError(
                "Dropout layer requires apply_fun to be called with a PRNG key argument. That is, instead of "
                "`apply_fun(params, inputs)`, call it like `apply_fun(params, inputs, rng)` where `rng` is a "
                "PRNG key (e.g. from `jax.random.key`)."
            )
        if mode == "train":
            keep = random.bernoulli(rng, rate, inputs.shape)
            return jnp.where(keep, inputs / rate, 0)
        return inputs

    return init_fun, apply_fun


def serial(*layers: tuple) -> tuple:
    """Compose layers in sequence."""
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng: Any, input_shape: Any) -> tuple:
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params: list, inputs: Any, **kwargs: Any) -> Any:
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        for fun, param, r in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=r, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers: tuple) -> tuple:
    """Apply layers side by side to a sequence of inputs (one per layer)."""
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng: Any, input_shape: Any) -> tuple:
        rngs = random.split(rng, nlayers)
        return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> list:
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer: Callable) -> tuple:
    """A layer built by ``make_layer(input_shape)`` when its input shape is known."""

    def init_fun(rng: Any, input_shape: Any) -> tuple:
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
