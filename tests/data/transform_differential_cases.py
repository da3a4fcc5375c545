"""The calls of the transform differential sweep, shared by ``make_transform_differential.py`` (run
under JAX) and ``tests/test_transform_differential.py`` (run under fjax); neither jax nor fjax is
imported here: ``all_cases(jax, dtype)`` takes the top-level module (``jax`` or ``fjax``, with its
``numpy``, ``lax``, ``nn``, ``scipy.special`` and ``scipy.linalg`` submodules imported) and returns
``{key: thunk}``.

The sweep takes derivatives (``grad``, ``jacfwd``, ``jacrev``, ``jvp``, ``vjp``, ``hessian``) and
batches (``vmap`` with ``in_axes``/``out_axes`` variants) of jnp/lax/nn/scipy functions on fixed
seeded inputs with awkward points: zeros, ties for max/min/sort/abs/maximum, negative arguments of
sqrt/log, large values, integer and bool inputs. ``dtype`` is ``"float32"`` (x64 off) or
``"float64"`` (the caller turns x64 on); the error cases and the vmap variants are float32 only.
Results are encoded by ``jnp_differential_cases.encode`` (dtype, shape, weak type, values).
"""

# ruff: noqa: E501 - the case tables keep one short function per entry, several to a line

from __future__ import annotations

from typing import Any, Callable

import numpy as np

# elementwise functions of one argument: key -> (namespace path, input set)
# input sets: "all" = awkward reals incl. 0, negatives, large; "pos" = > 0; "unit" = in (-1, 1)
UNARY = {
    "abs": "all", "sqrt": "all", "log": "all", "exp": "all", "expm1": "all", "log1p": "all",
    "sin": "all", "cos": "all", "tan": "unit", "tanh": "all", "sinh": "unit", "cosh": "unit",
    "arcsin": "unit", "arccos": "unit", "arctan": "all", "arcsinh": "all", "arccosh": "pos",
    "arctanh": "unit", "sinc": "all", "sign": "all", "floor": "all", "round": "all", "cbrt": "all",
    "square": "all", "reciprocal": "all", "log2": "pos", "log10": "pos", "exp2": "unit",
    "deg2rad": "all", "rint": "all", "logaddexp_self": "all", "fabs": "all",
    "sp.erf": "all", "sp.erfc": "all", "sp.erfinv": "unit", "sp.gammaln": "pos", "sp.digamma": "pos",
    "sp.expit": "all", "sp.logit": "unit01", "sp.ndtr": "all", "sp.ndtri": "unit01", "sp.log_ndtr": "all",
    "sp.i0e": "all", "sp.i1e": "all", "sp.entr": "all", "sp.erfcx": "unit", "sp.polygamma1": "pos",
    "sp.xlogy_self": "all", "sp.xlog1py_self": "all", "sp.gamma": "pos", "sp.spence": "pos",
    "nn.relu": "all", "nn.relu6": "all", "nn.sigmoid": "all", "nn.softplus": "all", "nn.silu": "all",
    "nn.gelu": "all", "nn.gelu_exact": "all", "nn.elu": "all", "nn.celu": "all", "nn.selu": "all",
    "nn.leaky_relu": "all", "nn.log_sigmoid": "all", "nn.hard_tanh": "all", "nn.hard_sigmoid": "all",
    "nn.soft_sign": "all", "nn.mish": "all", "nn.squareplus": "all", "nn.sparse_plus": "all",
    "lax.logistic": "all", "lax.rsqrt": "pos", "lax.integer_pow3": "all", "lax.integer_pow_m2": "pos",
    "lax.lgamma": "pos", "lax.erf_inv": "unit", "lax.abs": "all", "lax.sign": "all",
}  # fmt: skip

BINARY = """add subtract multiply divide power maximum minimum arctan2 hypot logaddexp copysign fmod
remainder fmax fmin true_divide float_power sp.xlogy sp.xlog1py lax.atan2 lax.pow lax.max lax.min
nextafter""".split()


def _inputs(dt: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    big = 1e30 if dt == "float32" else 1e200
    return {
        "all": np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.7, 100.0, -100.0, big, -big], dt),
        "pos": np.array([0.1, 0.5, 1.0, 2.0, 3.7, 10.0, 100.0], dt),
        "unit": np.array([0.0, -0.0, 0.3, -0.7, 0.95, -0.25], dt),
        "unit01": np.array([0.05, 0.3, 0.5, 0.7, 0.95], dt),
        "v": rng.standard_normal(6).astype(dt),
        "m": rng.standard_normal((3, 4)).astype(dt),
        "m3": rng.standard_normal((2, 3, 4)).astype(dt),
        # well-conditioned square, symmetric positive definite
        "sq": (rng.standard_normal((3, 3)) + 3 * np.eye(3)).astype(dt),
        "spd": (lambda a: a @ a.T + 3 * np.eye(4))(rng.standard_normal((4, 4))).astype(dt),
        "ties": np.array([1.0, 3.0, 3.0, -2.0, 3.0, -2.0], dt),
        "ties2": np.array([[1.0, 2.0, 2.0], [0.0, 0.0, -1.0], [5.0, 5.0, 5.0]], dt),
        "zeros": np.array([2.0, 0.0, 3.0, -1.5], dt),
        "zeros2": np.array([2.0, 0.0, 3.0, 0.0], dt),
        "zero": np.zeros(3, dt),
        "ninf": np.array([-np.inf, 0.0, 1.0, -np.inf], dt),
        "nan": np.array([1.0, np.nan, 3.0, np.nan], dt),
        "pinf": np.array([np.inf, 1.0, np.inf, -2.0], dt),
    }


def _unary_fn(ns: dict, name: str) -> Callable:
    jnp, lax, nn, sp = ns["jnp"], ns["lax"], ns["nn"], ns["sp"]
    special = {
        "logaddexp_self": lambda x: jnp.logaddexp(x, x),
        "sp.polygamma1": lambda x: sp.polygamma(1, x),
        "sp.xlogy_self": lambda x: sp.xlogy(x, x),
        "sp.xlog1py_self": lambda x: sp.xlog1py(x, x),
        "nn.gelu_exact": lambda x: nn.gelu(x, approximate=False),
        "lax.integer_pow3": lambda x: lax.integer_pow(x, 3),
        "lax.integer_pow_m2": lambda x: lax.integer_pow(x, -2),
    }
    if name in special:
        return special[name]
    if "." in name:
        mod, attr = name.split(".")
        return getattr(ns[mod], attr)
    return getattr(jnp, name)


def _binary_fn(ns: dict, name: str) -> Callable:
    if "." in name:
        mod, attr = name.split(".")
        return getattr(ns[mod], attr)
    return getattr(ns["jnp"], name)


def _bin_inputs(dt: str) -> tuple[np.ndarray, np.ndarray]:
    # zeros in both, ties, a zero base with zero/positive/negative/fractional exponents,
    # negative bases with integer and fractional exponents
    a = np.array([0.0, 0.0, 0.0, 0.0, -0.0, 2.0, -2.0, -2.0, 1.5, 3.0, -1.0, 0.5, 4.0], dt)
    b = np.array([0.0, 2.0, -1.0, 0.5, 0.0, 2.0, 3.0, 0.5, 1.5, -3.0, -1.0, 0.0, 2.5], dt)
    return a, b


def _elementwise_cases(jax: Any, ns: dict, dt: str) -> dict[str, Callable]:
    jnp = ns["jnp"]
    inp = _inputs(dt)
    cases: dict[str, Callable] = {}
    for name, kind in UNARY.items():
        f = _unary_fn(ns, name)
        x = inp[kind]
        # per-element derivative: vmap(grad) of the scalar function, and jvp with ones
        cases[f"unary:{name}:vmap_grad"] = lambda f=f, x=x: jax.vmap(jax.grad(f))(x)
        cases[f"unary:{name}:jvp"] = lambda f=f, x=x: jax.jvp(f, (x,), (np.ones_like(x),))
        cases[f"unary:{name}:grad2"] = lambda f=f, x=x: jax.vmap(jax.grad(jax.grad(f)))(x)
        # NaN and infinities: which derivatives are NaN
        cases[f"unary_special:{name}:vmap_grad"] = lambda f=f: jax.vmap(jax.grad(f))(
            np.array([np.nan, np.inf, -np.inf], dt)
        )
    if dt == "float32":  # a few of the derivatives compiled, one jit per input set (compiles are slow)
        for kind in ("pos", "unit", "unit01"):
            group = [_unary_fn(ns, n) for n, k in UNARY.items() if k == kind and n != "sp.spence"]
            cases[f"jit:unary:{kind}"] = lambda x=inp[kind], group=group: jax.jit(
                lambda a: tuple(jax.vmap(jax.grad(f))(a) for f in group)
            )(x)
    a, b = _bin_inputs(dt)
    for name in BINARY:
        f = _binary_fn(ns, name)
        cases[f"binary:{name}:vmap_grad"] = lambda f=f: jax.vmap(jax.grad(f, argnums=(0, 1)))(a, b)
        cases[f"binary:{name}:jvp"] = lambda f=f: jax.jvp(f, (a, b), (np.ones_like(a), 2 * np.ones_like(b)))
        cases[f"binary:{name}:vjp"] = lambda f=f: jax.vjp(f, a, b)[1](np.linspace(1, 2, len(a)).astype(dt))
        # NaN and infinities in either argument
        cases[f"binary_special:{name}:vmap_grad"] = lambda f=f: jax.vmap(jax.grad(f, argnums=(0, 1)))(
            np.array([np.nan, np.inf, -np.inf, np.inf, 0.0, 2.0, -np.inf, 1.0], dt),
            np.array([1.0, 2.0, np.inf, np.inf, -np.inf, np.nan, 0.0, np.inf], dt),
        )
        # the mixed and the second partial derivatives
        cases[f"binary:{name}:grad2"] = lambda f=f: jax.vmap(
            lambda x, y: (jax.grad(jax.grad(f, 0), 1)(x, y), jax.grad(jax.grad(f, 1), 1)(x, y))
        )(a, b)
    if dt == "float32":
        group = [_binary_fn(ns, n) for n in BINARY if n != "nextafter"]
        cases["jit:binary"] = lambda: jax.jit(
            lambda x, y: tuple(jax.vmap(jax.grad(f, argnums=(0, 1)))(x, y) for f in group)
        )(a, b)
    # python-scalar and broadcasting operands in transforms
    cases["binary:pow_scalar_exp:grad"] = lambda: jax.vmap(jax.grad(lambda x: x**2.5))(inp["all"][:9])
    cases["binary:pow_int_exp:grad"] = lambda: jax.vmap(jax.grad(lambda x: x**3))(inp["all"][:9])
    cases["binary:pow_zero_exp:grad"] = lambda: jax.vmap(jax.grad(lambda x: x**0))(inp["all"][:9])
    cases["binary:rpow:grad"] = lambda: jax.vmap(jax.grad(lambda x: 2.0**x))(inp["all"][:9])
    cases["binary:rpow0:grad"] = lambda: jax.vmap(jax.grad(lambda x: jnp.power(0.0, x)))(inp["unit"])
    cases["binary:where:grad"] = lambda: jax.grad(lambda x: jnp.sum(jnp.where(x > 0, jnp.sqrt(x), x**2)))(inp["all"])
    cases["binary:where_safe:grad"] = lambda: jax.grad(
        lambda x: jnp.sum(jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.0)), 0.0))
    )(inp["all"])
    cases["binary:clip:grad"] = lambda: jax.grad(lambda x: jnp.sum(jnp.clip(x, -1.0, 1.0)))(inp["all"])
    cases["binary:clip_args:grad"] = lambda: jax.grad(
        lambda x, lo, hi: jnp.sum(jnp.clip(x, lo, hi)), argnums=(0, 1, 2)
    )(inp["all"][:9], np.array(-1.0, dt), np.array(1.0, dt))
    cases["binary:lax_clamp:grad"] = lambda: jax.grad(
        lambda lo, x, hi: jnp.sum(ns["lax"].clamp(lo, x, hi)), argnums=(0, 1, 2)
    )(np.full(9, -1.0, dt), inp["all"][:9], np.full(9, 1.0, dt))
    cases["binary:select:grad"] = lambda: jax.grad(lambda x, y: jnp.sum(ns["lax"].select(x > y, x, y)), argnums=(0, 1))(
        a, b
    )
    return cases


def _reduction_cases(jax: Any, ns: dict, dt: str) -> dict[str, Callable]:
    jnp, lax, nn, sp = ns["jnp"], ns["lax"], ns["nn"], ns["sp"]
    inp = _inputs(dt)
    fns = {
        "sum": jnp.sum, "prod": jnp.prod, "max": jnp.max, "min": jnp.min, "mean": jnp.mean,
        "var": jnp.var, "std": jnp.std, "amax": jnp.amax, "ptp": jnp.ptp, "median": jnp.median,
        "logsumexp": sp.logsumexp, "nn.logsumexp": nn.logsumexp, "norm": jnp.linalg.norm,
        "norm1": lambda x: jnp.linalg.norm(x, 1), "norminf": lambda x: jnp.linalg.norm(x, np.inf),
        "norm_ninf": lambda x: jnp.linalg.norm(x, -np.inf), "norm3": lambda x: jnp.linalg.norm(x, 3),
        "vector_norm": jnp.linalg.vector_norm, "nanmax": jnp.nanmax, "nansum": jnp.nansum,
        "max_keep": lambda x: jnp.sum(jnp.max(x, keepdims=True)), "sum_sq": lambda x: jnp.sum(x * x),
        "argmax_take": lambda x: x[jnp.argmax(x)], "sort_last": lambda x: jnp.sort(x)[-1],
        "lax_reduce_max": lambda x: lax.reduce_max(x, (0,)), "quantile": lambda x: jnp.quantile(x, 0.3),
        "average_w": lambda x: jnp.average(x, weights=jnp.arange(x.size, dtype=x.dtype) + 1),
    }  # fmt: skip
    vecs = ("v", "ties", "zeros", "zeros2", "zero", "ninf", "nan", "pinf")
    cases: dict[str, Callable] = {}
    for name, f in fns.items():
        for v in vecs:
            x = inp[v]
            cases[f"reduce:{name}:{v}:grad"] = lambda f=f, x=x: jax.grad(f)(x)
            cases[f"reduce:{name}:{v}:jvp"] = lambda f=f, x=x: jax.jvp(
                f, (x,), (np.linspace(-1, 1, x.size).astype(dt),)
            )
    # vector -> vector functions: jacfwd and jacrev
    vfns = {
        "cumsum": jnp.cumsum, "cumprod": jnp.cumprod, "cummax": lambda x: lax.cummax(x, 0),
        "cummin": lambda x: lax.cummin(x, 0), "cumlogsumexp": lambda x: lax.cumlogsumexp(x, 0),
        "cumsum_rev": lambda x: lax.cumsum(x, 0, reverse=True), "sort": jnp.sort,
        "sort_desc": lambda x: jnp.sort(x, descending=True), "softmax": nn.softmax,
        "log_softmax": nn.log_softmax, "standardize": nn.standardize, "diff": jnp.diff,
        "flip": jnp.flip, "roll": lambda x: jnp.roll(x, 2), "cumprod_nan": jnp.nancumprod,
        "top_k": lambda x: lax.top_k(x, 3)[0], "sort_key_val": lambda x: lax.sort_key_val(x, -x)[1],
        "abs_max_norm": lambda x: x / jnp.max(jnp.abs(x)), "normalize_l2": lambda x: x / jnp.linalg.norm(x),
        "ediff1d": jnp.ediff1d, "partition": lambda x: jnp.partition(x, 2),
        "take_along_argsort": lambda x: jnp.take_along_axis(x, jnp.argsort(x), 0),
        "max_eq": lambda x: jnp.maximum(x, x[::-1]), "tile": lambda x: jnp.tile(x, 2),
        "repeat": lambda x: jnp.repeat(x, 2), "convolve": lambda x: jnp.convolve(x, jnp.array([1.0, -2.0, 0.5], x.dtype)),
        "correlate_full": lambda x: jnp.correlate(x, x[:3], mode="full"), "polyval": lambda x: jnp.polyval(x, x),
        "outer": lambda x: jnp.outer(x, x), "kron": lambda x: jnp.kron(x[:3], x[1:4]),
        "interp": lambda x: jnp.interp(x, jnp.array([-1.0, 0.0, 2.0], x.dtype), jnp.array([1.0, 3.0, 2.0], x.dtype)),
    }  # fmt: skip
    for name, f in vfns.items():
        for v in ("v", "ties", "zeros", "nan", "pinf"):
            x = inp[v]
            cases[f"vector:{name}:{v}:jacfwd"] = lambda f=f, x=x: jax.jacfwd(f)(x)
            cases[f"vector:{name}:{v}:jacrev"] = lambda f=f, x=x: jax.jacrev(f)(x)
    # matrix reductions over axes (ties along rows)
    axfns = {
        "max0": lambda x: jnp.max(x, axis=0), "max1": lambda x: jnp.max(x, axis=1), "min1": lambda x: jnp.min(x, 1),
        "sum1": lambda x: jnp.sum(x, 1), "prod1": lambda x: jnp.prod(x, 1), "mean0": lambda x: jnp.mean(x, 0),
        "logsumexp1": lambda x: sp.logsumexp(x, 1), "softmax0": lambda x: nn.softmax(x, axis=0),
        "norm_fro": lambda x: jnp.linalg.norm(x), "norm_nuc": lambda x: jnp.linalg.norm(x, "nuc"),
        "norm_ord1": lambda x: jnp.linalg.norm(x, 1), "norm_rows": lambda x: jnp.linalg.norm(x, axis=1),
        "cumsum1": lambda x: jnp.cumsum(x, 1), "cummax0": lambda x: lax.cummax(x, 0), "sort1": lambda x: jnp.sort(x, 1),
        "sort0": lambda x: jnp.sort(x, 0), "var1": lambda x: jnp.var(x, 1, ddof=1), "trace": jnp.trace,
        "diagonal": jnp.diagonal, "triu": jnp.triu, "transpose": jnp.transpose, "reshape": lambda x: x.reshape(-1),
        "argmax_onehot": lambda x: jnp.sum(x * nn.one_hot(jnp.argmax(x, 1), x.shape[1], dtype=x.dtype), 1),
        "max_pool": lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 1), "VALID"),
        "sum_pool": lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "SAME"),
        "min_pool": lambda x: lax.reduce_window(x, jnp.inf, lax.min, (2, 1), (1, 1), "VALID"),
    }  # fmt: skip
    for name, f in axfns.items():
        for v in ("m", "ties2"):
            x = inp[v]
            cases[f"matrix:{name}:{v}:jacrev"] = lambda f=f, x=x: jax.jacrev(f)(x)
            cases[f"matrix:{name}:{v}:jvp"] = lambda f=f, x=x: jax.jvp(f, (x,), (np.ones_like(x),))
    if dt == "float32":  # the batching rules: each table vmapped over a second axis
        rows = np.stack([inp["ties"], inp["v"], -inp["ties"]], 1)  # (6, 3): batch along axis 1
        for name, f in {**fns, **vfns}.items():
            cases[f"batch:{name}"] = lambda f=f: jax.vmap(f, in_axes=1, out_axes=-1)(rows)
            cases[f"batch:{name}:grad"] = lambda f=f: jax.vmap(jax.grad(lambda a: jnp.sum(f(a))), in_axes=1)(rows)
        mats = np.stack([inp["ties2"], inp["m"][:, :3], -inp["ties2"]])
        special = np.array([[1.0, np.nan, 2.0], [np.inf, 0.0, -1.0], [-np.inf, 3.0, np.inf]], dt)
        for name, f in axfns.items():
            cases[f"batch2:{name}"] = lambda f=f: jax.vmap(f)(mats)
            cases[f"matrix_special:{name}:jacrev"] = lambda f=f: jax.jacrev(f)(special)
    return cases


def _indexing_cases(jax: Any, ns: dict, dt: str) -> dict[str, Callable]:
    jnp, lax = ns["jnp"], ns["lax"]
    inp = _inputs(dt)
    v, m, m3 = inp["v"], inp["m"], inp["m3"]
    idx = np.array([0, 2, 2, 5, -1], np.int32)
    fns = {
        "getitem_dup": lambda x: x[idx], "getitem_slice": lambda x: x[1:5:2], "getitem_bool": lambda x: x[x.size // 2],
        "take": lambda x: jnp.take(x, idx), "take_clip": lambda x: jnp.take(x, np.array([0, 9, -9], np.int32), mode="clip"),
        "take_fill": lambda x: jnp.take(x, np.array([0, 9, 3], np.int32), mode="fill", fill_value=0),
        "at_set": lambda x: x.at[idx].set(x[:5] * 2), "at_add": lambda x: x.at[idx].add(x[:5] ** 2),
        "at_mul": lambda x: x.at[np.array([1, 3], np.int32)].mul(x[:2]), "at_mul_dup": lambda x: x.at[np.array([1, 1], np.int32)].mul(x[2:4]),
        "at_min": lambda x: x.at[idx].min(x[:5]), "at_max": lambda x: x.at[idx].max(x[::-1][:5]),
        "at_get": lambda x: x.at[idx].get(), "at_set_scalar": lambda x: x.at[2].set(3.0),
        "at_add_oob_drop": lambda x: x.at[np.array([0, 10], np.int32)].add(x[:2], mode="drop"),
        "dynamic_slice": lambda x: lax.dynamic_slice(x, (np.int32(2),), (3,)),
        "dynamic_slice_clamp": lambda x: lax.dynamic_slice(x, (np.int32(5),), (3,)),
        "dynamic_update_slice": lambda x: lax.dynamic_update_slice(x, x[:2] * 3, (np.int32(3),)),
        "dynamic_update_slice_clamp": lambda x: lax.dynamic_update_slice(x, x[:2] * 3, (np.int32(9),)),
        "pad": lambda x: jnp.pad(x, (2, 1)), "pad_reflect": lambda x: jnp.pad(x, 2, mode="reflect"),
        "pad_edge": lambda x: jnp.pad(x, (1, 3), mode="edge"), "pad_wrap": lambda x: jnp.pad(x, 2, mode="wrap"),
        "lax_pad_neg": lambda x: lax.pad(x, np.array(0, x.dtype), [(-1, 2, 1)]),
        "concatenate": lambda x: jnp.concatenate([x, x[:2] * 2, x[::-1]]), "stack": lambda x: jnp.stack([x, -x], 1),
        "split": lambda x: jnp.split(x, 3)[1] * jnp.split(x, 3)[2], "where_idx": lambda x: jnp.where(x > 0, x, -x),
        "searchsorted_take": lambda x: x[jnp.searchsorted(jnp.sort(x), 0.1)] * x,
        "expand_squeeze": lambda x: jnp.squeeze(jnp.expand_dims(x, 0) * 2), "broadcast_to": lambda x: jnp.broadcast_to(x, (2, 6)),
        "rev": lambda x: lax.rev(x, (0,)), "slice": lambda x: lax.slice(x, (1,), (6,), (2,)),
    }  # fmt: skip
    cases: dict[str, Callable] = {}
    for name, f in fns.items():
        cases[f"index:{name}:jacrev"] = lambda f=f: jax.jacrev(f)(v)
        cases[f"index:{name}:jacfwd"] = lambda f=f: jax.jacfwd(f)(v)
    rows = np.array([[0, 1], [2, 0], [0, 1]], np.int32)
    mfns = {
        "fancy2": lambda x: x[rows[:, 0], rows[:, 1]], "rows": lambda x: x[np.array([2, 0, 2], np.int32)],
        "at_add2": lambda x: x.at[rows[:, 0], rows[:, 1]].add(10 * x[0, :3]), "at_set_row": lambda x: x.at[1].set(x[0]),
        "take_along": lambda x: jnp.take_along_axis(x, jnp.argsort(x, 1), 1),
        "gather_lax": lambda x: lax.gather(
            x, rows[:, :, None][:, :1, 0], lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
            (1, 4),
        ),
        "dynamic_slice2": lambda x: lax.dynamic_slice(x, (np.int32(1), np.int32(1)), (2, 2)),
        "dynamic_index": lambda x: lax.dynamic_index_in_dim(x, np.int32(2), 1, keepdims=False),
        "einsum": lambda x: jnp.einsum("ij,kj->ik", x, x), "matmul": lambda x: x @ x.T, "dot_T": lambda x: jnp.dot(x.T, x),
        "tensordot": lambda x: jnp.tensordot(x, x, axes=([1], [1])), "swapaxes": lambda x: jnp.swapaxes(x, 0, 1) * 2,
        "rot90": jnp.rot90, "tril": lambda x: jnp.tril(x, -1), "moveaxis_reshape": lambda x: jnp.moveaxis(x, 0, 1).reshape(2, 6),
    }  # fmt: skip
    for name, f in mfns.items():
        cases[f"index2:{name}:jacrev"] = lambda f=f: jax.jacrev(f)(m)
        cases[f"index2:{name}:jvp"] = lambda f=f: jax.jvp(f, (m,), (np.arange(m.size, dtype=dt).reshape(m.shape),))
    if dt == "float32":  # batched operands and indices
        vs = np.stack([v, v[::-1] * 2, -v])
        vi = (vs * 3).astype(np.int32)
        for name, f in fns.items():
            cases[f"batch_index:{name}"] = lambda f=f: jax.vmap(f)(vs)
            cases[f"batch_index_int:{name}"] = lambda f=f: jax.vmap(f)(vi)
        ms = np.stack([m, m * -2])
        for name, f in mfns.items():
            cases[f"batch_index2:{name}"] = lambda f=f: jax.vmap(f, in_axes=0, out_axes=-1)(ms)
    # convolutions
    w = np.linspace(-1, 1, 2 * 2 * 2 * 3).reshape(2, 2, 2, 3).astype(dt)  # OIHW: 2 out, 2 in
    img = m3.reshape(1, 2, 3, 4)

    def conv(x, k, **kw):
        return lax.conv_general_dilated(x, k, (1, 1), "SAME", **kw)

    cases["conv:same:grad"] = lambda: jax.grad(lambda x, k: jnp.sum(conv(x, k) ** 2), argnums=(0, 1))(img, w)
    cases["conv:valid_strided:grad"] = lambda: jax.grad(
        lambda x, k: jnp.sum(jnp.sin(lax.conv_general_dilated(x, k, (1, 2), "VALID"))), argnums=(0, 1)
    )(img, w)
    cases["conv:dilated:grad"] = lambda: jax.grad(
        lambda x, k: jnp.sum(lax.conv_general_dilated(x, k, (1, 1), [(1, 1), (2, 2)], rhs_dilation=(1, 2)) ** 2),
        argnums=(0, 1),
    )(img, w)
    cases["conv:lhs_dilated:grad"] = lambda: jax.grad(
        lambda x, k: jnp.sum(jnp.tanh(lax.conv_general_dilated(x, k, (1, 1), [(1, 1), (1, 1)], lhs_dilation=(2, 1)))),
        argnums=(0, 1),
    )(img, w)
    cases["conv:groups:grad"] = lambda: jax.grad(
        lambda x, k: jnp.sum(lax.conv_general_dilated(x, k, (1, 1), "SAME", feature_group_count=2) ** 2),
        argnums=(0, 1),
    )(img, w[:, :1])
    cases["conv:nhwc:jvp"] = lambda: jax.jvp(
        lambda x, k: lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        (m3.reshape(1, 3, 4, 2), w.transpose(2, 3, 1, 0)),
        (np.ones((1, 3, 4, 2), dt), np.ones((2, 3, 2, 2), dt)),
    )
    cases["conv:vmap"] = lambda: jax.vmap(lambda x: conv(x[None], w)[0])(np.stack([img[0], -img[0]]))
    return cases


def _linalg_cases(jax: Any, ns: dict, dt: str) -> dict[str, Callable]:
    jnp, jsl = ns["jnp"], ns["jsl"]
    la = jnp.linalg
    inp = _inputs(dt)
    sq, spd = inp["sq"], inp["spd"]
    rhs = np.linspace(-1, 2, 3).astype(dt)

    def eigvec_inv(x):  # sign-invariant function of the eigenvectors
        w, v = la.eigh(x)
        return w, v**2

    def svd_inv(x):
        u, s, vt = la.svd(x, full_matrices=False)
        return s, u**2, vt**2

    fns = {
        "det": la.det, "inv": la.inv, "solve": lambda x: la.solve(x, rhs), "slogdet": lambda x: la.slogdet(x)[1],
        "slogdet_sign": lambda x: la.slogdet(x)[0], "pinv": la.pinv, "matrix_power3": lambda x: la.matrix_power(x, 3),
        "eigvalsh": lambda x: la.eigvalsh(x + x.T), "eigh": lambda x: eigvec_inv(x + x.T), "svdvals": la.svdvals,
        "svd": svd_inv, "qr_r": lambda x: jnp.abs(la.qr(x)[1]), "norm2": lambda x: la.norm(x, 2),
        "cond": la.cond, "expm": jsl.expm, "lu_solve": lambda x: jsl.lu_solve(jsl.lu_factor(x), rhs),
        "solve_triangular": lambda x: jsl.solve_triangular(jnp.triu(x), rhs), "lstsq": lambda x: la.lstsq(x, rhs)[0],
        "tensorinv": lambda x: la.inv(x @ x.T), "logdet_pos": lambda x: la.slogdet(x @ x.T)[1],
    }  # fmt: skip
    cases: dict[str, Callable] = {}
    for name, f in fns.items():
        cases[f"linalg:{name}:jacrev"] = lambda f=f: jax.jacrev(f)(sq)
        cases[f"linalg:{name}:jvp"] = lambda f=f: jax.jvp(f, (sq,), (np.eye(3, dtype=dt) + 0.1 * sq.T,))
    spd_fns = {
        "cholesky": la.cholesky, "cho_solve": lambda x: jsl.cho_solve(jsl.cho_factor(x), rhs[:1].repeat(4)),
        "eigh": lambda x: eigvec_inv(x), "inv": la.inv, "solve_sym": lambda x: jsl.solve(x, np.ones(4, dt), assume_a="pos"),
        "sqrtm_like": lambda x: (lambda w, v: (v * jnp.sqrt(w)) @ v.T)(*la.eigh(x)), "cholesky_upper": lambda x: jsl.cholesky(x),
    }  # fmt: skip
    for name, f in spd_fns.items():
        # symmetrize inside so the derivative is along symmetric directions, as JAX's docs ask
        cases[f"linalg_spd:{name}:jacrev"] = lambda f=f: jax.jacrev(lambda x: f((x + x.T) / 2))(spd)
    if dt == "float32":
        sqs = np.stack([sq, sq.T, sq * 2])
        for name, f in fns.items():
            cases[f"batch_linalg:{name}"] = lambda f=f: jax.vmap(f)(sqs)
    cases["linalg:det_batched:vmap_grad"] = lambda: jax.vmap(jax.grad(la.det))(np.stack([sq, sq.T * 2]))
    cases["linalg:solve_batched:vmap"] = lambda: jax.vmap(la.solve, in_axes=(0, None))(np.stack([sq, sq.T]), rhs)
    cases["linalg:inv:hessian"] = lambda: jax.hessian(lambda x: jnp.sum(la.inv(x)))(sq)
    cases["linalg:det_singular:grad"] = lambda: jax.grad(la.det)(np.array([[1.0, 2.0], [2.0, 4.0]], dt))
    cases["linalg:det_zero:grad"] = lambda: jax.grad(la.det)(np.zeros((2, 2), dt))
    cases["linalg:norm_zero:grad"] = lambda: jax.grad(la.norm)(np.zeros((2, 2), dt))
    for o in (1, np.inf, 2, "nuc", -1):
        cases[f"linalg:norm_{o}_zero:grad"] = lambda o=o: jax.grad(lambda x: la.norm(x, o))(np.zeros((2, 3), dt))
    # 4x4: det's own derivative rule (2x2 and 3x3 are cofactor expansions); rank 4, 3, 2 and 0
    a4 = np.array([[2.0, 1.0, 0.0, 3.0], [1.0, 3.0, 1.0, 0.0], [0.0, 1.0, 4.0, 1.0], [1.0, 0.0, 2.0, 5.0]], dt)
    r3 = a4.copy()
    r3[3] = 2 * r3[0] - r3[1]
    r2 = r3.copy()
    r2[2] = r2[0] + r2[1]
    for name, mat in (("det4", a4), ("det4_rank3", r3), ("det4_rank2", r2), ("det4_zero", np.zeros((4, 4), dt))):
        cases[f"linalg:{name}:grad"] = lambda mat=mat: jax.grad(la.det)(mat)
        cases[f"linalg:{name}:jvp"] = lambda mat=mat: jax.jvp(la.det, (mat,), (np.eye(4, dtype=dt),))
    cases["linalg:det4:hessian"] = lambda: jax.hessian(la.det)(a4)
    cases["linalg:det4:vmap_grad"] = lambda: jax.vmap(jax.grad(la.det))(np.stack([a4, r3, r2]))
    cases["linalg:norm2_zero:grad"] = lambda: jax.grad(lambda x: la.norm(x, 2))(np.zeros(3, dt))
    return cases


def _control_flow_cases(jax: Any, ns: dict, dt: str) -> dict[str, Callable]:
    jnp, lax = ns["jnp"], ns["lax"]
    inp = _inputs(dt)
    v = inp["v"]

    def scan_f(x):
        def body(c, xi):
            c = jnp.sin(c) * xi + c * 0.5
            return c, c**2

        c, ys = lax.scan(body, x[0], x[1:])
        return c + jnp.sum(ys)

    def scan_rev(x):
        return lax.scan(lambda c, xi: (c * xi + 1.0, c), jnp.ones((), x.dtype), x, reverse=True)[1]

    def scan_unroll(x):
        return lax.scan(lambda c, xi: (c * jnp.cos(xi), c + xi), x[:2], x[2:].reshape(2, 2), unroll=2)

    def scan_len(x):
        return lax.scan(lambda c, _: (c * x[1] + x[0], c), x[2], None, length=4)[1]

    def while_f(x):
        return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * x[1] + jnp.sin(c[1])), (0, x[0]))[1]

    def while_float_pred(x):
        return lax.while_loop(lambda c: c < 10.0, lambda c: c * 1.7 + 0.5, x)

    def fori_static(x):
        return lax.fori_loop(0, 4, lambda i, c: c * x + i, x)

    def fori_dyn(x, n):
        return lax.fori_loop(0, n, lambda i, c: c * x + i, x)

    def cond_f(x):
        return lax.cond(x > 0.5, lambda y: jnp.sin(y) * y, lambda y: y**3, x)

    def switch_f(x):
        return lax.switch(jnp.clip(jnp.floor(x).astype(np.int32), 0, 2), [jnp.sin, jnp.cos, lambda y: y * y], x)

    def map_f(x):
        return lax.map(lambda y: y * jnp.exp(-y), x)

    def assoc_scan(x):
        return lax.associative_scan(jnp.multiply, x)

    def checkpoint_f(x):
        return jnp.sum(jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)) * y)(x))

    def custom_relu(x):
        return jnp.sum(ns["nn"].relu(x) + ns["nn"].relu6(x * 6))

    @jax.custom_jvp
    def soft_clip(x):
        return jnp.tanh(x) * 2.0

    @soft_clip.defjvp
    def _soft_clip_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return soft_clip(x), t / (1.0 + x * x)

    @jax.custom_vjp
    def scaled_sq(x, y):
        return x * x * y

    def _scaled_sq_fwd(x, y):
        return scaled_sq(x, y), (x, y)

    def _scaled_sq_bwd(res, g):
        x, y = res
        return (3.0 * g * x * y, g * x)

    scaled_sq.defvjp(_scaled_sq_fwd, _scaled_sq_bwd)

    cases: dict[str, Callable] = {
        "cf:custom_jvp:vmap_grad": lambda: jax.vmap(jax.grad(soft_clip))(v),
        "cf:custom_jvp:jacrev": lambda: jax.jacrev(soft_clip)(v),
        "cf:custom_jvp:jvp_vmap": lambda: jax.jvp(jax.vmap(soft_clip), (v,), (np.ones_like(v),)),
        "cf:custom_jvp:grad2": lambda: jax.vmap(jax.grad(jax.grad(soft_clip)))(v),
        "cf:custom_vjp:grad": lambda: jax.grad(lambda x, y: jnp.sum(scaled_sq(x, y)), argnums=(0, 1))(v, v[::-1]),
        "cf:custom_vjp:vmap_grad": lambda: jax.vmap(jax.grad(scaled_sq, argnums=(0, 1)), in_axes=(0, None))(v, v[1]),
        "cf:custom_vjp:jvp": lambda: jax.jvp(scaled_sq, (v, v), (v, v)),
        "cf:scan:grad": lambda: jax.grad(scan_f)(v),
        "cf:scan:jacfwd": lambda: jax.jacfwd(scan_f)(v),
        "cf:scan:hessian": lambda: jax.hessian(scan_f)(v),
        "cf:scan_rev:jacrev": lambda: jax.jacrev(scan_rev)(v),
        "cf:scan_unroll:jacrev": lambda: jax.jacrev(scan_unroll)(v),
        "cf:scan_len:jacrev": lambda: jax.jacrev(scan_len)(v),
        "cf:scan:vmap": lambda: jax.vmap(scan_f)(inp["m"].T),
        "cf:scan:vmap_grad": lambda: jax.vmap(jax.grad(scan_f), in_axes=1)(inp["m"]),
        "cf:while:jvp": lambda: jax.jvp(while_f, (v,), (np.ones_like(v),)),
        "cf:while:jacfwd": lambda: jax.jacfwd(while_f)(v),
        "cf:while:grad": lambda: jax.grad(while_f)(v),
        "cf:while_float:jvp": lambda: jax.jvp(while_float_pred, (v[2],), (np.ones_like(v[2]),)),
        "cf:while:vmap": lambda: jax.vmap(while_float_pred)(v),
        "cf:while:vmap_jvp": lambda: jax.vmap(lambda x: jax.jvp(while_float_pred, (x,), (x,)))(v),
        "cf:fori_static:grad": lambda: jax.vmap(jax.grad(fori_static))(v),
        "cf:fori_dyn:jvp": lambda: jax.jvp(lambda x: fori_dyn(x, 3), (v,), (np.ones_like(v),)),
        "cf:fori_dyn:grad_traced_n": lambda: jax.grad(lambda x, n: jnp.sum(fori_dyn(x, n)))(v, np.int32(3)),
        "cf:cond:vmap_grad": lambda: jax.vmap(jax.grad(cond_f))(inp["all"][:9]),
        "cf:cond:jvp": lambda: jax.jvp(jax.vmap(cond_f), (v,), (np.ones_like(v),)),
        "cf:cond:hessian": lambda: jax.hessian(cond_f)(np.array(0.7, dt)),
        "cf:switch:vmap_grad": lambda: jax.vmap(jax.grad(switch_f))(np.array([0.5, 1.5, 2.5, -1.0, 7.0], dt)),
        "cf:map:jacrev": lambda: jax.jacrev(map_f)(v),
        "cf:assoc_scan:jacrev": lambda: jax.jacrev(assoc_scan)(v),
        "cf:assoc_scan:vmap": lambda: jax.vmap(assoc_scan, in_axes=1, out_axes=1)(inp["m"]),
        "cf:checkpoint:grad": lambda: jax.grad(checkpoint_f)(v),
        "cf:custom_relu:grad": lambda: jax.grad(custom_relu)(inp["all"]),
        "cf:custom_relu:hessian_diag": lambda: jax.vmap(jax.grad(jax.grad(lambda x: ns["nn"].relu(x) * x)))(inp["all"]),
        "cf:stop_gradient:grad": lambda: jax.grad(lambda x: jnp.sum(x * lax.stop_gradient(x) ** 2))(v),
        "cf:hessian_logsumexp": lambda: jax.hessian(ns["sp"].logsumexp)(v),
        "cf:hessian_softmax_ce": lambda: jax.hessian(lambda x: -ns["nn"].log_softmax(x)[2])(v),
        "cf:hessian_norm": lambda: jax.hessian(jnp.linalg.norm)(v),
        "cf:hessian_prod": lambda: jax.hessian(jnp.prod)(inp["zeros"]),
        "cf:hessian_det": lambda: jax.hessian(jnp.linalg.det)(inp["sq"]),
        "cf:linearize": lambda: jax.linearize(lambda x: jnp.sin(x) * x, v)[1](np.ones_like(v)),
        "cf:value_and_grad_aux": lambda: jax.value_and_grad(lambda x: (jnp.sum(x**2), x * 2), has_aux=True)(v),
        "cf:jacrev_dict": lambda: jax.jacrev(lambda d: d["a"] * jnp.sum(d["b"]))({"a": v[:2], "b": v[2:]}),
        "cf:grad_tuple_argnums": lambda: jax.grad(lambda x, y, z: jnp.sum(x * y) + z, argnums=(0, 2))(v, v[::-1], v[0]),
    }
    return cases


def _vmap_cases(jax: Any, ns: dict) -> dict[str, Callable]:
    jnp, lax = ns["jnp"], ns["lax"]
    inp = _inputs("float32")
    m, m3, v = inp["m"], inp["m3"], inp["v"]
    idx = np.array([[0, 2], [3, 3], [1, 0]], np.int32)
    cases: dict[str, Callable] = {
        "vmap:matmul_in01": lambda: jax.vmap(jnp.matmul, in_axes=(0, 1))(m3, m3.transpose(2, 0, 1)),
        "vmap:in_none": lambda: jax.vmap(lambda a, b: a * b, in_axes=(0, None))(m, m[0]),
        "vmap:in1_out1": lambda: jax.vmap(lambda a: jnp.cumsum(a) * 2, in_axes=1, out_axes=1)(m),
        "vmap:out_neg1": lambda: jax.vmap(lambda a: jnp.outer(a, a), out_axes=-1)(m),
        "vmap:out_none": lambda: jax.vmap(lambda a: (a * 2, jnp.float32(3.0)), out_axes=(0, None))(m),
        "vmap:out_none_batched_err": lambda: jax.vmap(lambda a: a * 2, out_axes=None)(m),
        "vmap:axis_size": lambda: jax.vmap(lambda a: a + 1.0, in_axes=None, axis_size=3)(v),
        "vmap:dict_axes": lambda: jax.vmap(lambda d: d["a"] @ d["b"], in_axes=({"a": 0, "b": None},))(
            {"a": m3, "b": m[0]}
        ),
        "vmap:nested": lambda: jax.vmap(
            jax.vmap(lambda a, b: a * b + jnp.sin(a), in_axes=(0, None)), in_axes=(None, 0)
        )(v, m[:, :2]),
        "vmap:size_mismatch": lambda: jax.vmap(lambda a, b: a + b)(m, v),
        "vmap:in_axes_oob": lambda: jax.vmap(jnp.sum, in_axes=2)(m),
        "vmap:scalar_batched_err": lambda: jax.vmap(lambda a: a)(np.float32(1.0)),
        "vmap:in_axes_len_err": lambda: jax.vmap(lambda a, b: a + b, in_axes=(0, 0, 0))(m, m),
        "vmap:sum_axis": lambda: jax.vmap(lambda a: jnp.sum(a, axis=0), in_axes=2)(m3),
        "vmap:sort": lambda: jax.vmap(jnp.sort, in_axes=1)(m),
        "vmap:argsort": lambda: jax.vmap(jnp.argsort)(inp["ties2"]),
        "vmap:argmax_ties": lambda: jax.vmap(jnp.argmax, in_axes=1)(inp["ties2"]),
        "vmap:dynamic_slice": lambda: jax.vmap(lambda a, i: lax.dynamic_slice(a, (i,), (2,)))(
            m, np.array([0, 3, 1], np.int32)
        ),
        "vmap:dynamic_update_slice": lambda: jax.vmap(
            lambda a, i: lax.dynamic_update_slice(a, jnp.array([9.0, 8.0], a.dtype), (i,))
        )(m, np.array([0, 3, 1], np.int32)),
        "vmap:gather": lambda: jax.vmap(lambda a, i: a[i])(m, idx),
        "vmap:gather_x_unbatched": lambda: jax.vmap(lambda i: v[i])(idx),
        "vmap:scatter_add": lambda: jax.vmap(lambda a, i: a.at[i].add(1.0))(m, idx),
        "vmap:scatter_set_upd": lambda: jax.vmap(lambda u: jnp.zeros(4, u.dtype).at[np.array([1, 1], np.int32)].set(u))(
            m[:, :2]
        ),
        "vmap:take_along": lambda: jax.vmap(lambda a, i: jnp.take_along_axis(a, i, 0), in_axes=(1, 0))(m.T, idx),
        "vmap:where": lambda: jax.vmap(jnp.where, in_axes=(0, None, 0))(m > 0, v[:4], m),
        "vmap:concat": lambda: jax.vmap(lambda a, b: jnp.concatenate([a, b]), in_axes=(0, None))(m, v),
        "vmap:reshape": lambda: jax.vmap(lambda a: a.reshape(2, 2).T, in_axes=1, out_axes=2)(m.T),
        "vmap:transpose": lambda: jax.vmap(jnp.transpose, in_axes=2)(m3),
        "vmap:pad": lambda: jax.vmap(lambda a: jnp.pad(a, (1, 2), mode="reflect"))(m),
        "vmap:cumprod_rev": lambda: jax.vmap(lambda a: lax.cumprod(a, 0, reverse=True), in_axes=1)(m),
        "vmap:inv": lambda: jax.vmap(jnp.linalg.inv)(np.stack([inp["sq"], inp["sq"].T])),
        "vmap:det_in1": lambda: jax.vmap(jnp.linalg.det, in_axes=2)(np.stack([inp["sq"], 2 * inp["sq"]], 2)),
        "vmap:eigvalsh": lambda: jax.vmap(jnp.linalg.eigvalsh)(np.stack([inp["spd"], 2 * inp["spd"]])),
        "vmap:cholesky": lambda: jax.vmap(jnp.linalg.cholesky)(np.stack([inp["spd"], 2 * inp["spd"]])),
        "vmap:cond": lambda: jax.vmap(lambda p, a: lax.cond(p, jnp.sin, jnp.cos, a))(np.array([True, False, True]), m),
        "vmap:cond_unbatched_pred": lambda: jax.vmap(lambda a: lax.cond(True, jnp.sin, jnp.cos, a))(m),
        "vmap:while_batched_pred": lambda: jax.vmap(
            lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0), (0, jnp.float32(1.0)))
        )(np.array([0, 3, 5], np.int32)),
        "vmap:scan_in1": lambda: jax.vmap(lambda xs: lax.scan(lambda c, x: (c + x, c * x), 0.0, xs), in_axes=1)(m),
        "vmap:fori": lambda: jax.vmap(lambda a: lax.fori_loop(0, 3, lambda i, c: c * a, a))(v),
        "vmap:conv": lambda: jax.vmap(
            lambda x, k: lax.conv_general_dilated(x[None], k, (1,), "SAME")[0], in_axes=(0, None)
        )(m3, np.ones((2, 3, 3), np.float32)),
        "vmap:conv_kernel_batched": lambda: jax.vmap(
            lambda k: lax.conv_general_dilated(m3, k, (1,), "VALID"), in_axes=0
        )(np.linspace(0, 1, 2 * 2 * 3 * 2).reshape(2, 2, 3, 2).astype(np.float32)),
        "vmap:dot_general_both": lambda: jax.vmap(lambda a, b: jnp.dot(a, b), in_axes=(1, 0))(m, m.T),
        "vmap:grad_per_example": lambda: jax.vmap(jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w))), in_axes=(None, 0))(
            m.T, m3[0]
        ),
        "vmap:jacrev_in_vmap": lambda: jax.vmap(jax.jacrev(lambda a: jnp.sort(a) * a))(m),
        "vmap:softmax_axis0": lambda: jax.vmap(lambda a: ns["nn"].softmax(a, axis=0), in_axes=1, out_axes=1)(m),
        "vmap:top_k": lambda: jax.vmap(lambda a: lax.top_k(a, 2), in_axes=1)(m),
        "vmap:iota_arange": lambda: jax.vmap(lambda a: a * jnp.arange(4.0))(m),
        "vmap:random_split_like": lambda: jax.vmap(lambda a: jnp.stack([a, a]), out_axes=1)(v),
        "vmap:cummax": lambda: jax.vmap(lambda a: lax.cummax(a, 0), in_axes=1, out_axes=0)(m),
        "vmap:reduce_window": lambda: jax.vmap(lambda a: lax.reduce_window(a, -jnp.inf, lax.max, (2,), (1,), "VALID"))(
            m
        ),
        "vmap:select_n": lambda: jax.vmap(lambda i, a: lax.select_n(i, a, -a, a * 2))(np.array([0, 1, 2], np.int32), m),
        "vmap:clamp": lambda: jax.vmap(lambda lo, a: lax.clamp(lo, a, 1.0))(np.array([-1.0, 0.0, 0.5], np.float32), m),
    }
    return cases


def _error_cases(jax: Any, ns: dict) -> dict[str, Callable]:
    jnp, lax = ns["jnp"], ns["lax"]
    v = _inputs("float32")["v"]
    i = np.arange(4, dtype=np.int32)
    b = np.array([True, False, True])
    return {
        "err:grad_nonscalar": lambda: jax.grad(jnp.sin)(v),
        "err:grad_int_input": lambda: jax.grad(lambda x: x * 2.0)(np.int32(3)),
        "err:grad_int_array": lambda: jax.grad(lambda x: jnp.sum(x * 2.0))(i),
        "err:grad_bool_input": lambda: jax.grad(lambda x: jnp.sum(x * 2.0))(b),
        "err:grad_allow_int": lambda: jax.grad(lambda x, y: jnp.sum(x * y), argnums=(0, 1), allow_int=True)(v[:4], i),
        "err:grad_allow_int_bool": lambda: jax.grad(lambda x: jnp.sum(jnp.where(x, 1.0, 2.0)), allow_int=True)(b),
        "err:grad_int_output": lambda: jax.grad(lambda x: jnp.sum(x).astype(np.int32))(v),
        "err:grad_complex_output": lambda: jax.grad(lambda x: jnp.sum(x) * 1j)(v),
        "err:grad_holomorphic_real": lambda: jax.grad(lambda x: x * x, holomorphic=True)(np.float32(2.0)),
        "err:grad_holomorphic": lambda: jax.grad(lambda x: x * x, holomorphic=True)(np.complex64(2.0 + 1j)),
        "err:grad_complex_input": lambda: jax.grad(lambda x: jnp.abs(x) ** 2)(np.complex64(1.0 + 2j)),
        "err:grad_argnums_oob": lambda: jax.grad(lambda x: x, argnums=2)(np.float32(1.0)),
        "err:grad_has_aux_bad": lambda: jax.grad(lambda x: x, has_aux=True)(np.float32(1.0)),
        "err:grad_through_int_cast": lambda: jax.grad(lambda x: jnp.sum(x.astype(np.int32) * x))(v),
        "err:grad_argmax": lambda: jax.grad(lambda x: jnp.argmax(x).astype(np.float32) + jnp.sum(x))(v),
        "err:grad_round_floor": lambda: jax.grad(lambda x: jnp.sum(jnp.round(x) + jnp.floor(x) + jnp.ceil(x)))(v),
        "err:grad_while": lambda: jax.grad(lambda x: lax.while_loop(lambda c: c < 3.0, lambda c: c + x, 0.0))(
            np.float32(1.0)
        ),
        "err:jacrev_while": lambda: jax.jacrev(lambda x: lax.while_loop(lambda c: c < 3.0, lambda c: c * 2.0, x))(
            np.float32(1.0)
        ),
        "err:jacfwd_int": lambda: jax.jacfwd(lambda x: x * 2)(i),
        "err:jacrev_int": lambda: jax.jacrev(lambda x: x * 2.0)(i),
        "err:hessian_int": lambda: jax.hessian(lambda x: jnp.sum(x * 2.0))(i),
        "err:jvp_dtype_mismatch": lambda: jax.jvp(jnp.sin, (v,), (v.astype(np.float16),)),
        "err:jvp_shape_mismatch": lambda: jax.jvp(jnp.sin, (v,), (v[:3],)),
        "err:jvp_int_tangent": lambda: jax.jvp(lambda x: x * 2, (i,), (i,)),
        "err:jvp_float0_tangent": lambda: jax.jvp(lambda x: x * 2, (i,), (np.zeros(4, jax.dtypes.float0),)),
        "err:jvp_tuple_len": lambda: jax.jvp(lambda x, y: x * y, (v, v), (v,)),
        "err:jvp_not_tuple": lambda: jax.jvp(jnp.sin, v, v),
        "err:vjp_ct_shape": lambda: jax.vjp(jnp.sin, v)[1](v[:3]),
        "err:vjp_ct_dtype": lambda: jax.vjp(jnp.sin, v)[1](v.astype(np.float16)),
        "err:vjp_int": lambda: jax.vjp(lambda x: x * 2, i)[1](i),
        "err:vjp_int_to_float": lambda: jax.vjp(lambda x: x * 2.5, i)[1](np.ones(4, np.float32)),
        "err:vjp_has_aux": lambda: jax.vjp(lambda x: (jnp.sin(x), x), v, has_aux=True)[1](v),
        "err:value_and_grad_nonscalar": lambda: jax.value_and_grad(jnp.sin)(v),
        "err:grad_float0_out": lambda: jax.grad(lambda x: jnp.sum(x) + 0 * jnp.sum(i))(v),
        "err:grad_cond_int_operand": lambda: jax.grad(lambda x: lax.cond(x > 0, lambda y: y * 2.0, lambda y: -y, x))(
            np.float32(-1.5)
        ),
        "err:grad_scan_int_carry": lambda: jax.grad(
            lambda x: lax.scan(lambda c, _: ((c[0] + 1, c[1] * x), None), (0, x), None, length=3)[0][1]
        )(np.float32(1.5)),
        "err:grad_python_float": lambda: jax.grad(lambda x: x**2)(3.0),
        "err:grad_python_int": lambda: jax.grad(lambda x: x**2)(3),
        "err:jvp_python_scalars": lambda: jax.jvp(lambda x: x**2, (3.0,), (1.0,)),
        "err:vmap_grad_python": lambda: jax.vmap(jax.grad(lambda x: x * 2.0))(np.arange(3.0)),
    }


def _more_cases(jax: Any, ns: dict) -> dict[str, Callable]:
    """Complex inputs, 16-bit floats, more nn/scipy/lax functions and transform options (float32)."""
    jnp, lax, nn, sp = ns["jnp"], ns["lax"], ns["nn"], ns["sp"]
    inp = _inputs("float32")
    v, m = inp["v"], inp["m"]
    z = (v + 1j * v[::-1]).astype(np.complex64)
    z0 = np.array([0.0, 1.0 + 1.0j, -2.0, 3.0j], np.complex64)
    bf = v.astype(ns["bfloat16"])
    h = v.astype(np.float16)
    pos = inp["pos"]
    i32 = np.array([3, -1, 0, 7], np.int32)

    @jax.custom_vjp
    def scaled_sq_like(x, y):
        return x * x * y

    scaled_sq_like.defvjp(
        lambda x, y: (x * x * y, (x, y)), lambda r, g: (2.0 * g * r[0] * r[1], jnp.sum(g * r[0] ** 2))
    )

    cases: dict[str, Callable] = {
        # complex: real-valued functions of complex inputs, holomorphic functions
        "complex:abs_sq:grad": lambda: jax.grad(lambda x: jnp.sum(jnp.abs(x) ** 2))(z),
        "complex:abs:grad_at0": lambda: jax.grad(lambda x: jnp.sum(jnp.abs(x)))(z0),
        "complex:real_imag:grad": lambda: jax.grad(lambda x: jnp.sum(jnp.real(x) * 2 + jnp.imag(x) ** 2))(z),
        "complex:angle:grad": lambda: jax.grad(lambda x: jnp.sum(jnp.angle(x)))(z),
        "complex:conj:vjp": lambda: jax.vjp(jnp.conj, z)[1](z[::-1]),
        "complex:exp:holomorphic": lambda: jax.vmap(jax.grad(jnp.exp, holomorphic=True))(z),
        "complex:log:holomorphic": lambda: jax.vmap(jax.grad(jnp.log, holomorphic=True))(z),
        "complex:sqrt:holomorphic": lambda: jax.vmap(jax.grad(jnp.sqrt, holomorphic=True))(z),
        "complex:jacfwd_holo": lambda: jax.jacfwd(lambda x: x**2 * jnp.sin(x), holomorphic=True)(z[:3]),
        "complex:jacrev_holo": lambda: jax.jacrev(lambda x: x**2 * jnp.sin(x), holomorphic=True)(z[:3]),
        "complex:jvp_mixed": lambda: jax.jvp(lambda x, y: x * y, (z, v), (z, v)),
        "complex:vjp_real_in": lambda: jax.vjp(lambda x: x * (1 + 2j), v)[1](z),
        "complex:vjp_complex_of_real": lambda: jax.vjp(lambda x: jnp.exp(1j * x), v)[1](z),
        "complex:matmul:vjp": lambda: jax.vjp(lambda a: a @ a.T.conj(), z.reshape(2, 3))[1](
            np.ones((2, 2), np.complex64)
        ),
        "complex:norm:grad": lambda: jax.grad(jnp.linalg.norm)(z),
        "complex:vmap_angle": lambda: jax.vmap(jnp.angle)(z0),
        # 16-bit floats: gradient dtypes, reductions
        "lowp:bf16_sin:grad": lambda: jax.grad(lambda x: jnp.sum(jnp.sin(x)))(bf),
        "lowp:bf16_mean:grad": lambda: jax.grad(jnp.mean)(bf),
        "lowp:f16_softmax:jacrev": lambda: jax.jacrev(nn.softmax)(h),
        "lowp:f16_logsumexp:grad": lambda: jax.grad(sp.logsumexp)(h),
        "lowp:f16_var:grad": lambda: jax.grad(jnp.var)(h),
        "lowp:bf16_matmul:vjp": lambda: jax.vjp(lambda a: a @ a.T, m.astype(ns["bfloat16"]))[1](
            np.ones((3, 3), ns["bfloat16"])
        ),
        "lowp:mixed_f16_f32:grad": lambda: jax.grad(lambda a, b: jnp.sum(a * b), argnums=(0, 1))(h, v),
        "lowp:f16_vmap_grad": lambda: jax.vmap(jax.grad(jnp.tanh))(h),
        "lowp:f16_cumsum:jvp": lambda: jax.jvp(jnp.cumsum, (h,), (h,)),
        # Python scalars and weak types through transforms
        "weak:grad_py": lambda: jax.grad(lambda x: x * 2.0 + jnp.sin(x))(1.5),
        "weak:value_and_grad_py": lambda: jax.value_and_grad(lambda x: x**2)(1.5),
        "weak:jvp_py": lambda: jax.jvp(jnp.sin, (1.5,), (2.0,)),
        "weak:vjp_py": lambda: jax.vjp(lambda x: x * 3.0, 2.0)[1](1.0),
        "weak:vmap_py_out": lambda: jax.vmap(lambda x: 2.0, axis_size=3, in_axes=None)(1.0),
        "weak:jacfwd_py": lambda: jax.jacfwd(lambda x: jnp.stack([x, x**2]))(1.5),
        "weak:hessian_py": lambda: jax.hessian(lambda x: x**3)(2.0),
        "weak:grad_weak_arr_arg": lambda: jax.grad(lambda x, y: x * y)(np.float32(2.0), 3.0),
        # more nn / scipy / lax functions
        "fn:nn.glu": lambda: jax.jacrev(nn.glu)(v),
        "fn:nn.logsumexp_b": lambda: jax.grad(lambda x: nn.logsumexp(x, b=jnp.array([1.0, -0.5, 2.0, 1.0, 0.0, 1.0])))(
            v
        ),
        "fn:sp.logsumexp_sign": lambda: jax.jacrev(
            lambda x: jnp.stack(sp.logsumexp(x, b=-jnp.ones(6), return_sign=True))
        )(v),
        "fn:nn.softmax_where": lambda: jax.jacrev(lambda x: nn.softmax(x, where=x > -0.5))(v),
        "fn:nn.log_softmax_where": lambda: jax.jacrev(lambda x: nn.log_softmax(x, where=x > -0.5))(v),
        "fn:nn.one_hot_ce": lambda: jax.grad(lambda x: -jnp.sum(nn.one_hot(2, 6) * nn.log_softmax(x)))(v),
        "fn:nn.normalize": lambda: jax.jacrev(lambda x: nn.standardize(x, epsilon=1e-5))(v),
        "fn:nn.dot_product_attention": lambda: jax.grad(
            lambda q: jnp.sum(nn.dot_product_attention(q, q * 0.5, q[::-1]) ** 2)
        )(m.reshape(1, 3, 1, 4)),
        "fn:sp.gammainc_x": lambda: jax.vmap(jax.grad(sp.gammainc, argnums=1))(pos, pos[::-1]),
        "fn:sp.gammaincc_x": lambda: jax.vmap(jax.grad(sp.gammaincc, argnums=1))(pos, pos[::-1]),
        "fn:sp.gammainc_a": lambda: jax.vmap(jax.grad(sp.gammainc, argnums=0))(pos, pos[::-1]),
        "fn:sp.betainc_x": lambda: jax.vmap(jax.grad(sp.betainc, argnums=2))(pos[:5], pos[1:6], inp["unit01"]),
        "fn:sp.betaln": lambda: jax.vmap(jax.grad(sp.betaln, argnums=(0, 1)))(pos, pos[::-1]),
        "fn:sp.zeta_x": lambda: jax.vmap(jax.grad(sp.zeta))(pos + 1.5, pos),
        "fn:sp.i0": lambda: jax.vmap(jax.grad(sp.i0))(inp["all"][:9]),
        "fn:sp.i1": lambda: jax.vmap(jax.grad(sp.i1))(inp["all"][:9]),
        "fn:sp.multigammaln": lambda: jax.vmap(jax.grad(lambda a: sp.multigammaln(a, 3)))(pos + 1.5),
        "fn:sp.logsumexp_axis_none_2d": lambda: jax.grad(sp.logsumexp)(inp["ninf"].reshape(2, 2)),
        "fn:sp.rel_entr": lambda: jax.vmap(jax.grad(sp.rel_entr, argnums=(0, 1)))(inp["unit01"], inp["unit01"][::-1]),
        "fn:sp.kl_div": lambda: jax.vmap(jax.grad(sp.kl_div, argnums=(0, 1)))(inp["unit01"], inp["unit01"][::-1]),
        "fn:sp.softmax": lambda: jax.jacrev(sp.softmax)(v),
        "fn:lax.rem": lambda: jax.vmap(jax.grad(lax.rem, argnums=(0, 1)))(v * 5, v[::-1] + 2),
        "fn:lax.reduce_precision": lambda: jax.grad(lambda x: jnp.sum(lax.reduce_precision(x, 5, 10) ** 2))(v),
        "fn:lax.sort_multi": lambda: jax.jacrev(lambda x: lax.sort((x[::-1], x * 2), num_keys=1)[1])(v),
        "fn:lax.reduce_custom": lambda: jax.grad(lambda x: lax.reduce(x * x, 0.0, lax.add, (0,)))(v),
        "fn:lax.cumlogsumexp_rev": lambda: jax.jacrev(lambda x: lax.cumlogsumexp(x, 0, reverse=True))(v),
        "fn:lax.conv_transpose": lambda: jax.grad(
            lambda x, k: jnp.sum(lax.conv_transpose(x, k, (2,), "SAME", dimension_numbers=("NWC", "WIO", "NWC")) ** 2),
            argnums=(0, 1),
        )(v.reshape(1, 3, 2), m.reshape(3, 2, 2)),
        "fn:lax.dot_general_pref": lambda: jax.grad(
            lambda a: jnp.sum(lax.dot_general(a, a, (((1,), (1,)), ((), ())), preferred_element_type=np.float32))
        )(m.astype(np.float16)),
        "fn:lax.igamma_a": lambda: jax.vmap(jax.grad(lax.igamma))(pos, pos[::-1]),
        "fn:lax.random_gamma_grad": lambda: lax.random_gamma_grad(pos, pos[::-1]),
        "fn:lax.polygamma_x": lambda: jax.vmap(jax.grad(lax.polygamma, argnums=1))(np.full(7, 2.0, np.float32), pos),
        "fn:lax.bessel_i1e": lambda: jax.vmap(jax.grad(lax.bessel_i1e))(inp["all"][:9]),
        "fn:jnp.heaviside": lambda: jax.vmap(jax.grad(jnp.heaviside, argnums=(0, 1)))(inp["all"][:9], inp["all"][:9]),
        "fn:jnp.ldexp": lambda: jax.vmap(jax.grad(lambda x: jnp.ldexp(x, 3)))(v),
        "fn:jnp.frexp": lambda: jax.jvp(lambda x: jnp.frexp(x)[0], (v,), (v,)),
        "fn:jnp.modf": lambda: jax.jvp(lambda x: jnp.modf(x), (v * 3,), (v,)),
        "fn:jnp.trapezoid": lambda: jax.grad(jnp.trapezoid)(v),
        "fn:jnp.cross": lambda: jax.jacrev(lambda x: jnp.cross(x[:3], x[3:]))(v),
        "fn:jnp.linalg.multi_dot": lambda: jax.grad(lambda a: jnp.sum(jnp.linalg.multi_dot([a, a.T, a])))(m),
        "fn:jnp.vander": lambda: jax.jacrev(lambda x: jnp.vander(x[:3]))(v),
        "fn:jnp.unwrap": lambda: jax.jacrev(jnp.unwrap)(v * 4),
        "fn:jnp.nanmean": lambda: jax.grad(jnp.nanmean)(np.array([1.0, np.nan, 3.0, -2.0], np.float32)),
        "fn:jnp.nanstd": lambda: jax.grad(jnp.nanstd)(np.array([1.0, np.nan, 3.0, -2.0], np.float32)),
        "fn:jnp.average_axis": lambda: jax.jacrev(lambda x: jnp.average(x, axis=1, weights=jnp.arange(1.0, 5.0)))(m),
        "fn:jnp.corrcoef": lambda: jax.grad(lambda x: jnp.corrcoef(x)[0, 1])(m[:2]),
        "fn:jnp.cov": lambda: jax.jacrev(jnp.cov)(m),
        "fn:jnp.einsum3": lambda: jax.grad(lambda a: jnp.einsum("ij,jk,ki->", a, a.T, a))(m),
        "fn:jnp.piecewise": lambda: jax.vmap(
            jax.grad(lambda x: jnp.piecewise(x, [x < 0, x >= 0], [lambda t: -t, lambda t: t**2]))
        )(inp["all"][:9]),
        "fn:jnp.select": lambda: jax.grad(lambda x: jnp.sum(jnp.select([x < -1, x > 1], [x**2, jnp.sin(x)], x)))(v * 2),
        "fn:jnp.round_decimals": lambda: jax.grad(lambda x: jnp.sum(jnp.round(x, 2) * x))(v),
        "fn:jnp.histogram_weights": lambda: jax.grad(lambda w: jnp.sum(jnp.histogram(v, bins=3, weights=w)[0] ** 2))(v),
        "fn:jnp.searchsorted_vals": lambda: jax.grad(lambda x: jnp.sum(jnp.interp(x, jnp.sort(v), v)))(v[::-1]),
        # transform options
        "opt:jacrev_has_aux": lambda: jax.jacrev(lambda x: (jnp.sin(x), jnp.sum(x)), has_aux=True)(v),
        "opt:jacfwd_has_aux": lambda: jax.jacfwd(lambda x: (jnp.sin(x), jnp.sum(x)), has_aux=True)(v),
        "opt:jacrev_argnums": lambda: jax.jacrev(lambda x, y: x * y[0], argnums=(0, 1))(v[:3], v[3:]),
        "opt:hessian_argnums": lambda: jax.hessian(lambda x, y: jnp.sum(x**2 * y), argnums=1)(v[:3], v[3:]),
        "opt:jvp_has_aux": lambda: jax.jvp(lambda x: (jnp.sin(x), x * 2), (v,), (v,), has_aux=True),
        "opt:vjp_has_aux": lambda: jax.vjp(lambda x: (jnp.sin(x), x * 2), v, has_aux=True)[1](v),
        "opt:linear_transpose": lambda: jax.linear_transpose(lambda x: jnp.cumsum(x) * 2.0, v)(v),
        "opt:linearize_jit": lambda: jax.linearize(jax.jit(lambda x: jnp.sin(x) * x), v)[1](v),
        "opt:grad_jit": lambda: jax.grad(jax.jit(lambda x: jnp.sum(jnp.tanh(x) ** 2)))(v),
        "opt:vmap_jit_grad": lambda: jax.vmap(jax.jit(jax.grad(lambda x: jnp.sin(x) * x)))(v),
        "opt:grad_of_vmap": lambda: jax.grad(lambda x: jnp.sum(jax.vmap(lambda r: jnp.max(r) * jnp.min(r))(x)))(m),
        "opt:jacfwd_of_jacrev": lambda: jax.jacfwd(jax.jacrev(lambda x: jnp.sum(jnp.sin(x) * x[::-1])))(v[:4]),
        "opt:grad_int_jvp_float0": lambda: jax.jvp(
            lambda x, y: x * y, (i32, v[:4]), (np.zeros(4, jax.dtypes.float0), v[:4])
        ),
        "opt:vjp_int_arg": lambda: jax.vjp(lambda x, y: x * y, i32, v[:4])[1](v[:4]),
        "opt:grad_allow_int_out": lambda: jax.grad(lambda x, n: jnp.sum(x**n), allow_int=True, argnums=(0, 1))(
            v[:4], i32
        ),
        "opt:jacrev_int_out": lambda: jax.jacrev(lambda x: (x * 2, jnp.argmax(x)))(v),
        "opt:jvp_int_out": lambda: jax.jvp(lambda x: (x * 2, jnp.argmax(x)), (v,), (v,)),
        "opt:vmap_int_ops": lambda: jax.vmap(lambda a, b: (a // b, a % b, a >> 1, a & b))(
            i32, np.array([2, -3, 5, 1], np.int32)
        ),
        "opt:vmap_bool": lambda: jax.vmap(lambda a, b: (a & b, ~a, jnp.where(a, 1, 2)))(
            np.array([True, False, True]), np.array([False, False, True])
        ),
        "opt:vmap_neg_in_axes": lambda: jax.vmap(lambda a: a * 2.0, in_axes=-1, out_axes=-1)(m),
        "opt:vmap_out_tuple_axes": lambda: jax.vmap(lambda a: (a, jnp.sum(a)), out_axes=(1, 0))(m),
        "opt:vmap_qr": lambda: jax.vmap(lambda a: jnp.abs(jnp.linalg.qr(a)[1]))(np.stack([inp["sq"], inp["sq"].T])),
        "opt:vmap_svdvals": lambda: jax.vmap(jnp.linalg.svdvals)(np.stack([inp["sq"], 2 * inp["sq"].T])),
        "opt:vmap_lax_sort_multi": lambda: jax.vmap(lambda a, b: lax.sort((a, b), num_keys=1))(inp["ties2"], m[:, :3]),
        "opt:vmap_dus_batched_update": lambda: jax.vmap(lambda u: lax.dynamic_update_slice(v, u, (np.int32(2),)))(
            m[:, :2]
        ),
        "opt:vmap_scatter_unbatched_idx": lambda: jax.vmap(lambda a: a.at[np.array([0, 0, 3], np.int32)].add(a[:3]))(m),
        "opt:vmap_argsort_ties": lambda: jax.vmap(jnp.argsort, in_axes=1)(inp["ties2"]),
        "opt:vmap_cond_pytree": lambda: jax.vmap(
            lambda p, a: lax.cond(p > 0, lambda t: (t[0] * 2, t[1]), lambda t: (t[1], t[0]), (a, -a))
        )(v[:3], m),
        "opt:vmap_while_pytree": lambda: jax.vmap(
            lambda a: lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * a, c[1] + 1), (a, 0))
        )(v),
        "opt:vmap_fori_batched_bound": lambda: jax.vmap(lambda n, a: lax.fori_loop(0, n, lambda i, c: c + a, a))(
            np.array([0, 1, 3], np.int32), v[:3]
        ),
        "opt:jvp_of_vmap_scan": lambda: jax.jvp(
            jax.vmap(lambda xs: lax.scan(lambda c, x: (c * x, c), 1.0, xs)[1]), (m,), (np.ones_like(m),)
        ),
        # nestings and combinations
        "nest:vmap_jacfwd_jacrev": lambda: jax.vmap(jax.jacfwd(jax.jacrev(lambda a: jnp.sum(jnp.sin(a) * a[::-1]))))(m),
        "nest:hessian_of_vmap": lambda: jax.hessian(lambda a: jnp.sum(jax.vmap(lambda r: jnp.prod(r) * jnp.max(r))(a)))(
            m[:2, :3]
        ),
        "nest:grad_cond_closure": lambda: jax.grad(
            lambda a: jnp.sum(lax.cond(jnp.sum(a) > 0, lambda: a * v[:4], lambda: a**2 * v[4]))
        )(v[:4]),
        "nest:vmap_grad_cond_batched_pred": lambda: jax.vmap(
            jax.grad(lambda a, b: lax.cond(a > b, lambda: a * b, lambda: a - b**2), argnums=(0, 1))
        )(v, v[::-1]),
        "nest:jacfwd_fori_traced_bound": lambda: jax.jacfwd(
            lambda a: lax.fori_loop(0, jnp.int32(3), lambda i, c: c * a, a)
        )(v[:3]),
        "nest:vmap_jvp_while": lambda: jax.vmap(
            lambda a: jax.jvp(
                lambda b: lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * b, c[1] + 1), (b, 0))[0], (a,), (a,)
            )
        )(v),
        "nest:grad_custom_vjp_in_scan": lambda: jax.grad(
            lambda a: lax.scan(lambda c, x: (c + jnp.sum(scaled_sq_like(x, c)), None), 0.0, a)[0]
        )(m),
        "nest:vmap_custom_jvp": lambda: jax.vmap(jax.jacfwd(nn.relu))(inp["all"][:9]),
        "nest:grad_checkpoint_policy": lambda: jax.grad(
            lambda a: jnp.sum(
                jax.checkpoint(lambda b: jnp.tanh(b @ b.T), policy=jax.checkpoint_policies.nothing_saveable)(a)
            )
        )(m),
        "nest:jvp_of_grad": lambda: jax.jvp(jax.grad(lambda a: jnp.sum(jnp.exp(a) * jnp.cos(a))), (v,), (v[::-1],)),
        "nest:vjp_of_jvp": lambda: jax.vjp(lambda a: jax.jvp(jnp.sinh, (a,), (a * 2,))[1], v)[1](v),
        "nest:grad_stop_gradient_vmap": lambda: jax.grad(
            lambda a: jnp.sum(jax.vmap(lambda r: r * lax.stop_gradient(jnp.sum(r)))(a))
        )(m),
        "nest:grad_sort_vmap": lambda: jax.grad(lambda a: jnp.sum(jax.vmap(jnp.sort)(a) * jnp.arange(4.0)))(m),
        "nest:grad_of_linearize": lambda: jax.grad(lambda a: jnp.sum(jax.linearize(jnp.sin, a)[1](a)))(v),
        "nest:value_and_grad_vmap_out_axes": lambda: jax.vmap(
            jax.value_and_grad(lambda a: jnp.sum(a**3)), in_axes=1, out_axes=(0, 1)
        )(m),
        "opt:vmap_switch_batched_index": lambda: jax.vmap(lambda i, a: lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], a))(
            np.array([0, 2, 1, 5], np.int32), v[:4]
        ),
    }
    return cases


def _complex_cases(jax: Any, ns: dict, dt: str) -> dict[str, Callable]:
    """Complex derivatives in complex64 (x64 off) and complex128 (x64 on)."""
    jnp, la = ns["jnp"], ns["jnp"].linalg
    cdt = "complex64" if dt == "float32" else "complex128"
    rng = np.random.default_rng(1)
    z = (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(cdt)
    zm = (rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)) + 3 * np.eye(3)).astype(cdt)
    zs = np.array([0.0, 1.0, -1.0, 1j, -2.5 - 0.5j, np.inf, complex(0, np.inf)], cdt)
    holo = {"exp": jnp.exp, "log": jnp.log, "sqrt": jnp.sqrt, "sin": jnp.sin, "tanh": jnp.tanh, "reciprocal": jnp.reciprocal,
            "square": jnp.square, "arctan": jnp.arctan, "log1p": jnp.log1p, "expm1": jnp.expm1, "power3": lambda a: a**3,
            "power_half": lambda a: a**0.5}  # fmt: skip
    cases: dict[str, Callable] = {}
    for name, f in holo.items():
        cases[f"cplx:{name}:holo"] = lambda f=f: jax.vmap(jax.grad(f, holomorphic=True))(z)
        cases[f"cplx:{name}:special"] = lambda f=f: jax.vmap(jax.grad(f, holomorphic=True))(zs)
    real_of = {
        "abs": jnp.abs,
        "abs2": lambda a: jnp.abs(a) ** 2,
        "angle": jnp.angle,
        "real": jnp.real,
        "imag": jnp.imag,
    }
    for name, f in real_of.items():
        cases[f"cplx:{name}:grad"] = lambda f=f: jax.vmap(jax.grad(f))(zs[:5])
    cases["cplx:det:holo"] = lambda: jax.grad(la.det, holomorphic=True)(zm)
    cases["cplx:inv:jacfwd"] = lambda: jax.jacfwd(la.inv, holomorphic=True)(zm)
    cases["cplx:solve:vjp"] = lambda: jax.vjp(lambda a: la.solve(a, z[:3]), zm)[1](z[2:])
    cases["cplx:norm:grad"] = lambda: jax.grad(lambda a: la.norm(a))(zm)
    cases["cplx:eigvalsh:grad"] = lambda: jax.grad(lambda a: jnp.sum(la.eigvalsh(a + a.conj().T) ** 2))(zm)
    cases["cplx:svdvals:grad"] = lambda: jax.grad(lambda a: jnp.sum(la.svdvals(a)))(zm)
    cases["cplx:matmul:jvp"] = lambda: jax.jvp(lambda a: a @ a.conj().T, (zm,), (zm.T,))
    cases["cplx:fft:vjp"] = lambda: jax.vjp(jnp.fft.fft, z)[1](z[::-1])
    cases["cplx:cumprod:jacrev"] = lambda: jax.jacrev(jnp.cumprod, holomorphic=True)(z)
    return cases


def all_cases(jax: Any, dt: str) -> dict[str, Callable]:
    """Every call of the sweep for ``dt`` (``float32`` or ``float64``), keyed ``dt:group:...``."""
    ns = {
        "jnp": jax.numpy,
        "lax": jax.lax,
        "nn": jax.nn,
        "sp": jax.scipy.special,
        "jsl": jax.scipy.linalg,
        "bfloat16": jax.numpy.bfloat16,
    }
    cases: dict[str, Callable] = {}
    builders = [_elementwise_cases, _reduction_cases, _indexing_cases, _linalg_cases, _control_flow_cases]
    for build in builders:
        cases.update(build(jax, ns, dt))
    cases.update(_complex_cases(jax, ns, dt))
    if dt == "float32":
        cases.update(_vmap_cases(jax, ns))
        cases.update(_error_cases(jax, ns))
        cases.update(_more_cases(jax, ns))
    else:  # the loop primitives compile their bodies: float32 covers them, to keep the test fast
        slow = ("cf:scan", "cf:map", "cf:fori", "cf:assoc_scan", "cf:checkpoint")
        cases = {k: fn for k, fn in cases.items() if not k.startswith(slow)}
    return {f"{dt}:{k}": fn for k, fn in cases.items()}


def encode_tree(r: Any) -> Any:
    """``jnp_differential_cases.encode`` over tuples, lists and dicts (values in key order)."""
    from jnp_differential_cases import encode  # noqa: PLC0415 - a sibling file in tests/data

    if isinstance(r, dict):
        return {"dict": [encode_tree(r[k]) for k in sorted(r)]}
    if isinstance(r, (tuple, list)):
        return [encode_tree(x) for x in r]
    return encode(r)


def run(fn: Callable) -> Any:
    """``{"ok": encoded result}`` or ``{"err": exception type name}``."""
    try:
        return {"ok": encode_tree(fn())}
    except Exception as e:  # noqa: BLE001 - the error type is what is recorded
        return {"err": type(e).__name__}
