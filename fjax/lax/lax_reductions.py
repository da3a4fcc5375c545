"""``fjax.lax.lax``'s reduction primitives (``reduce_sum``/``max``/``min``/``prod``/``and``/``or``,
``argmax``/``argmin``) and ``dot_general``, each with its rules.

Split from ``fjax/lax/lax.py`` for size; ``lax.py`` re-exports every name defined here.
"""

# ruff: noqa: F405 - names come from fjax.lax.lax (star import: this module is a part of it)
from __future__ import annotations

import weakref

from fjax.config import config
from fjax.lax._dot_algorithms import canonicalize_precision, cpu_precision_error
from fjax.lax.lax import *  # noqa: F403 - the shared rules, helpers and imports
from fjax.lax.lax import (  # noqa: F401
    _any,
    _blas,
    _check_kind,
    _dkind,
    _num,
)

# ---------------------------------------------------------------------------------------------
# reductions


_F16 = (np.dtype(np.float16), dtypes.bfloat16)


def _long(x: Any) -> str:
    """``float32[2,3]``: an operand as JAX's reduction messages print it."""
    dt = x.dtype.name if isinstance(x.dtype, np.dtype) else str(x.dtype)
    return f"{dt}[{','.join(map(str, x.shape))}]"


def _reduce_abstract(name: str, kinds: str, keep_weak: bool = True, f16_option: bool = False) -> Callable:
    # f16_option: refuse float16/bfloat16 operands while jax_allow_f16_reductions is False (reduce_sum)
    def rule(x: Any, *, axes: tuple, **params: Any) -> ShapedArray:
        # JAX's reduce_sum/reduce_prod name the class np.number
        _check_kind(name, x, kinds, accepted="number" if kinds == _num else None)
        # ValueError, as JAX's reduction shape rules raise
        # (JAX's messages, word for word: the operand as dtype[shape] with the dtype's full name)
        if any(not 0 <= a < x.ndim for a in axes):
            raise ValueError(f"reduction axes {tuple(axes)} contains out-of-bounds indices for {_long(x)}.")
        if len(set(axes)) != len(axes):
            raise ValueError(f"duplicate value in 'axes' of reduction: {tuple(axes)}")
        if f16_option and not config.jax_allow_f16_reductions and x.dtype in _F16:
            if any(x.shape[a] != 1 for a in axes):
                operand = ShapedArray(x.shape, x.dtype).str_short()
                raise ValueError(f"{name} on operand {operand} is not allowed when jax_allow_f16_reductions=False.")
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type and keep_weak)

    return rule


def _reducer(name: str, impl: Callable, kinds: str, f16_option: bool = False) -> Primitive:
    p = Primitive(name)
    p.def_impl(impl)
    p.def_abstract_eval(_reduce_abstract(name, kinds, f16_option=f16_option))
    batching.defreducer(p)
    return p


_WIDER_ACC = {np.dtype(np.float16): np.float64, np.dtype(np.float32): np.float64, np.dtype(np.complex64): np.complex128}


def _reduce_sum_impl(x: np.ndarray, axes: tuple, out_sharding: Any = None) -> np.ndarray:
    if not axes:
        return x
    # np.add.reduce, not np.sum: the "invalid value" warning of inf + -inf is then attributed to
    # this module, which fjax's warnings filter silences (np.sum's comes from numpy's own frame)
    if x.dtype == dtypes.bfloat16:  # numpy would accumulate in bfloat16 (8 bits): XLA adds in float32
        return np.add.reduce(x, axis=axes, dtype=np.float32).astype(x.dtype)
    acc = _WIDER_ACC.get(x.dtype)
    if acc is not None and tuple(sorted(axes)) != tuple(range(x.ndim - len(axes), x.ndim)):
        # numpy sums non-trailing axes by plain accumulation (error ~ n * eps), not pairwise as
        # it does along contiguous ones; accumulate in double so eager matches jit's accuracy
        return np.add.reduce(x, axis=axes, dtype=acc).astype(x.dtype)
    return np.add.reduce(x, axis=axes, dtype=x.dtype)


reduce_sum_p = _reducer("reduce_sum", _reduce_sum_impl, _num, f16_option=True)
register_lowering(reduce_sum_p, REDUCTION, monoid="sum")


def _reduce_sum_transpose(ct: Any, x: Any, axes: tuple, out_sharding: Any = None) -> list:
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [broadcast_in_dim(ct, shape, kept)]


ad.deflinear2(reduce_sum_p, _reduce_sum_transpose)


def _empty_reduce(fn: Callable, ident_fn: Callable) -> Callable:
    def impl(x: np.ndarray, axes: tuple, **params: Any) -> np.ndarray:
        if not axes:
            return x
        if x.size == 0:
            shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
            return np.full(shape, ident_fn(x.dtype), x.dtype)
        if x.dtype.kind == "V" and _dkind(x.dtype) == "f":
            # ml_dtypes' bfloat16 reduce warns "invalid value" at a NaN (JAX is silent): choose in
            # float32, which holds every value exactly
            return fn(x.astype(np.float32), axis=axes).astype(x.dtype)
        return fn(x, axis=axes)

    return impl


def _max_ident(dt: np.dtype) -> Any:
    # -inf, or the lowest finite value where the dtype has no -inf (float8_e4m3fn, ...: as JAX);
    # ml_dtypes' iinfo for int4/int2/int1. (JAX's is NaN for float8_e8m0fnu, its -inf cast.)
    return dtypes._extremes(dt)[0]


def _min_ident(dt: np.dtype) -> Any:
    return dtypes._extremes(dt)[1]


reduce_max_p = _reducer("reduce_max", _empty_reduce(np.max, _max_ident), _any)
register_lowering(reduce_max_p, REDUCTION, monoid="max")
reduce_min_p = _reducer("reduce_min", _empty_reduce(np.min, _min_ident), _any)
register_lowering(reduce_min_p, REDUCTION, monoid="min")


def _reduce_chooser_jvp(prim: Primitive) -> Callable:
    def jvp(primals: list, tangents: list, axes: tuple) -> tuple:
        (x,), (g,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        if type(g) is Zero:
            return ans, Zero(ad.tangent_aval(core.get_aval(ans)))
        # the result with the reduced dims kept (size 1), compared with x by broadcasting, as JAX
        shape = core.get_aval(x).shape
        keep_shape = tuple(1 if i in axes else d for i, d in enumerate(shape))
        loc = convert_element_type(eq(x, reshape(ans, keep_shape)), core.get_aval(g).dtype)
        counts = reduce_sum(loc, axes)
        return ans, div(reduce_sum(mul(g, loc), axes), counts)

    return jvp


ad.primitive_jvps[reduce_max_p] = _reduce_chooser_jvp(reduce_max_p)
ad.primitive_jvps[reduce_min_p] = _reduce_chooser_jvp(reduce_min_p)

reduce_prod_p = _reducer(
    "reduce_prod", lambda x, axes: np.multiply.reduce(x, axis=axes, dtype=x.dtype) if axes else x, _num
)
register_lowering(reduce_prod_p, REDUCTION, monoid="prod")


def _reduce_prod_jvp(primals: list, tangents: list, axes: tuple) -> tuple:
    (x,), (g,) = primals, tangents
    ans = reduce_prod(x, axes)
    if type(g) is Zero:
        return ans, Zero(ad.tangent_aval(core.get_aval(ans)))
    # d prod = sum_i g_i * prod_{j != i} x_j, with the exclusive products from a forward and a
    # reverse cumulative product, so zeros in x are handled exactly
    from fjax.lax.other import cumprod  # noqa: PLC0415 (sibling module, defined later)

    shape = core.get_aval(x).shape
    kept = [i for i in range(len(shape)) if i not in axes]
    perm = tuple(kept + list(axes))
    n = math.prod(shape[a] for a in axes)
    kept_shape = tuple(shape[i] for i in kept)
    xt = reshape(transpose(x, perm), kept_shape + (n,))
    gt_ = reshape(transpose(g, perm), kept_shape + (n,))
    last = len(kept_shape)
    ones = full_like(slice_in_dim(xt, 0, 1, axis=last), 1) if n else xt
    if n == 0:
        return ans, reduce_sum(gt_, (last,))
    left = concatenate([ones, slice_in_dim(cumprod(xt, axis=last), 0, n - 1, axis=last)], last)
    right = concatenate([slice_in_dim(cumprod(xt, axis=last, reverse=True), 1, n, axis=last), ones], last)
    return ans, reduce_sum(mul(gt_, mul(left, right)), (last,))


ad.primitive_jvps[reduce_prod_p] = _reduce_prod_jvp

reduce_and_p = _reducer("reduce_and", _empty_reduce(np.all, lambda dt: True), "b")
register_lowering(reduce_and_p, REDUCTION, monoid="and")
reduce_or_p = _reducer("reduce_or", _empty_reduce(np.any, lambda dt: False), "b")
register_lowering(reduce_or_p, REDUCTION, monoid="or")
reduce_xor_p = _reducer("reduce_xor", lambda x, axes: np.logical_xor.reduce(x, axis=axes) if axes else x, "b")
for _p in (reduce_and_p, reduce_or_p, reduce_xor_p):
    ad.defzero(_p)


def _arg_abstract(name: str) -> Callable:
    def rule(x: Any, *, axes: tuple, index_dtype: np.dtype) -> ShapedArray:
        _check_kind(name, x, _any)
        if _dkind(x.dtype) == "c":
            # JAX's argmax/argmin reduce with lax.gt/lt, which refuse complex operands
            raise TypeError(
                f"{'gt' if name == 'argmax' else 'lt'} does not accept dtype {x.dtype.name} at position 0. "
                "Accepted dtypes at position 0 are subtypes of integer, floating, bool."
            )
        # (JAX's messages: lax.argmax's checks, and jnp.argmax's for an empty axis)
        if len(axes) != 1 or not 0 <= axes[0] < x.ndim:
            raise ValueError(f"Invalid axis {axes[0] if len(axes) == 1 else axes} for operand shape {x.shape}")
        if x.shape[axes[0]] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        if _dkind(np.dtype(index_dtype)) not in "iu":
            raise TypeError(f"index_dtype must be an integer type, but got {np.dtype(index_dtype).name}")
        return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i != axes[0]), index_dtype, False)

    return rule


def _argmax_impl(x: np.ndarray, axes: tuple, index_dtype: np.dtype) -> np.ndarray:
    # NaN counts as the maximum (first NaN wins), as JAX
    if _dkind(x.dtype) == "f":
        isn = np.isnan(x)
        if isn.any():
            r = np.argmax(np.where(isn, np.inf, x), axis=axes[0])
            anynan = isn.any(axis=axes[0])
            return np.where(anynan, np.argmax(isn, axis=axes[0]), r).astype(index_dtype)
    return np.argmax(x, axis=axes[0]).astype(index_dtype)


def _argmin_impl(x: np.ndarray, axes: tuple, index_dtype: np.dtype) -> np.ndarray:
    if _dkind(x.dtype) == "f":
        isn = np.isnan(x)
        if isn.any():
            r = np.argmin(np.where(isn, -np.inf, x), axis=axes[0])
            anynan = isn.any(axis=axes[0])
            return np.where(anynan, np.argmax(isn, axis=axes[0]), r).astype(index_dtype)
    return np.argmin(x, axis=axes[0]).astype(index_dtype)


argmax_p = _reducer("argmax", _argmax_impl, _any)
argmax_p.def_abstract_eval(_arg_abstract("argmax"))
argmin_p = _reducer("argmin", _argmin_impl, _any)
argmin_p.def_abstract_eval(_arg_abstract("argmin"))
ad.defzero(argmax_p)
ad.defzero(argmin_p)

# ---------------------------------------------------------------------------------------------
# dot_general


def _canon_dnums(dimension_numbers: Any) -> tuple:
    (lc, rc), (lb, rb) = dimension_numbers
    return (
        (tuple(int(i) for i in lc), tuple(int(i) for i in rc)),
        (tuple(int(i) for i in lb), tuple(int(i) for i in rb)),
    )


def _check_dot_general_dims(xs: tuple, ys: tuple, lc: tuple, rc: tuple, lb: tuple, rb: tuple) -> None:
    """JAX's dot_general shape rule: its checks, in its order, with its messages (TypeError)."""
    for side, nd, c, b in (("lhs", len(xs), lc, lb), ("rhs", len(ys), rc, rb)):
        if not all(0 <= d < nd for d in c + b):
            raise TypeError(
                f"dot_general requires {side} dimension numbers to be nonnegative and less than the number of axes "
                f"of the {side} value, got {side}_batch of {b} and {side}_contracting of {c} for {side} of rank {nd}"
            )
    if len(lb) != len(rb):
        raise TypeError(
            f"dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, got lhs_batch {lb} and "
            f"rhs_batch {rb}."
        )
    for side, dims, kind in (
        ("lhs", lb, "batch"),
        ("rhs", rb, "batch"),
        ("lhs", lc, "contracting"),
        ("rhs", rc, "contracting"),
    ):
        if len(set(dims)) != len(dims):
            raise TypeError(f"dot_general requires {side} {kind} dimensions to be distinct, got {side}_{kind} {dims}.")
    for side, c, b in (("lhs", lc, lb), ("rhs", rc, rb)):
        if set(c) & set(b):
            raise TypeError(
                f"dot_general requires {side} batch dimensions to be disjoint from contracting dimensions, got "
                f"{side}_batch {b} and {side}_contracting {c}."
            )
    xb, yb = tuple(xs[i] for i in lb), tuple(ys[i] for i in rb)
    if xb != yb:
        raise TypeError(
            "dot_general requires lhs batch dimensions and rhs batch dimensions to have the same shape, got "
            f"{xb} and {yb}."
        )
    xc, yc = tuple(xs[i] for i in lc), tuple(ys[i] for i in rc)
    if xc != yc:
        raise TypeError(f"dot_general requires contracting dimensions to have the same shape, got {xc} and {yc}.")


def _dot_general_abstract(
    x: Any, y: Any, *, dimension_numbers: tuple, precision: Any = None, preferred_element_type: Any = None
) -> ShapedArray:
    (lc, rc), (lb, rb) = dimension_numbers
    _check_kind("dot_general", x, _num + "b")
    if preferred_element_type is None and x.dtype != y.dtype:
        raise TypeError(
            f"dot_general requires operands of the same dtype, got {x.dtype.name} and {y.dtype.name} "
            "(jnp.dot/jnp.matmul promote types first)"
        )
    _check_dot_general_dims(x.shape, y.shape, lc, rc, lb, rb)
    batch = tuple(x.shape[i] for i in lb)
    lfree = tuple(s for i, s in enumerate(x.shape) if i not in lc and i not in lb)
    rfree = tuple(s for i, s in enumerate(y.shape) if i not in rc and i not in rb)
    dt = np.dtype(preferred_element_type) if preferred_element_type is not None else x.dtype
    if precision is not None and type(precision) is not tuple and _jit_cpu_check[0] is None:
        if cpu_precision_error(precision) is not None:
            _install_jit_cpu_check()
    return ShapedArray(batch + lfree + rfree, dt, x.weak_type and y.weak_type)


# A precision the CPU refuses (TF32_TF32_F32, a DotAlgorithm, ...) is kept on the equation when
# traced (a GPU backend computes it) and refused when the CPU runs it, as JAX refuses it when it
# lowers for the CPU: eagerly by the impl, under jit by a check of the whole program that jit
# runs first. That check is installed the first time such a precision is traced (or deserialized),
# so programs without one pay nothing for it.
_jit_cpu_check: list = [None]


def _install_jit_cpu_check() -> None:
    import importlib  # noqa: PLC0415

    _jit_cpu_check[0] = _check_jaxpr_cpu_precision
    importlib.import_module("fjax.jit").cpu_precision_check = _check_jaxpr_cpu_precision


def _jaxpr_cpu_precision_error_rec(jaxpr: Any) -> ValueError | None:
    for eqn in jaxpr.eqns:
        if eqn.primitive is dot_general_p:
            err = cpu_precision_error(eqn.params.get("precision"))
            if err is not None:
                return err
        for v in eqn.params.values():
            for sub in v if isinstance(v, tuple) else (v,):
                if isinstance(sub, (core.Jaxpr, core.ClosedJaxpr)):
                    err = _jaxpr_cpu_precision_error_rec(sub.jaxpr if isinstance(sub, core.ClosedJaxpr) else sub)
                    if err is not None:
                        return err
    return None


# ClosedJaxpr -> the error (or None), weakly: an entry goes with its program
_cpu_precision_errors: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _check_jaxpr_cpu_precision(closed: core.ClosedJaxpr) -> None:
    """Raise JAX's CPU error if ``closed`` (sub-jaxprs included) holds a dot_general whose
    precision the CPU refuses (jit calls this before running a program on the CPU)."""
    try:
        err = _cpu_precision_errors[closed]
    except KeyError:
        err = _cpu_precision_errors[closed] = _jaxpr_cpu_precision_error_rec(closed.jaxpr)
    if err is not None:
        raise ValueError(str(err))


@functools.lru_cache(maxsize=2048)
def _dot_plan(xshape: tuple, yshape: tuple, dimension_numbers: tuple) -> tuple:
    """Transposes and 3-D shapes that turn a dot_general into one (batched) matmul."""
    (lc, rc), (lb, rb) = dimension_numbers
    xnd, ynd = len(xshape), len(yshape)
    lfree = [i for i in range(xnd) if i not in lc and i not in lb]
    rfree = [i for i in range(ynd) if i not in rc and i not in rb]
    xperm = tuple(list(lb) + lfree + list(lc))
    yperm = tuple(list(rb) + list(rc) + rfree)
    nb = math.prod(xshape[i] for i in lb)
    nk = math.prod(xshape[i] for i in lc)
    nl = math.prod(xshape[i] for i in lfree)
    nr = math.prod(yshape[i] for i in rfree)
    out_shape = tuple(xshape[i] for i in lb) + tuple(xshape[i] for i in lfree) + tuple(yshape[i] for i in rfree)
    xperm = None if xperm == tuple(range(xnd)) else xperm
    yperm = None if yperm == tuple(range(ynd)) else yperm
    if nb == 1:
        return xperm, yperm, (nl, nk), (nk, nr), out_shape
    return xperm, yperm, (nb, nl, nk), (nb, nk, nr), out_shape


def _dot_general_impl(
    x: np.ndarray, y: np.ndarray, *, dimension_numbers: tuple, precision: Any = None, preferred_element_type: Any = None
) -> np.ndarray:
    if precision is not None and type(precision) is not tuple:  # a preset or a DotAlgorithm
        err = cpu_precision_error(precision)
        if err is not None:
            raise err
    dt = x.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    if dt != x.dtype:
        x = x.astype(dt)
    if dt != y.dtype:
        y = y.astype(dt)
    xperm, yperm, xs3, ys3, out_shape = _dot_plan(x.shape, y.shape, dimension_numbers)
    if xperm is not None:
        x = x.transpose(xperm)
    if yperm is not None:
        y = y.transpose(yperm)
    out = _blas.matmul(x.reshape(xs3), y.reshape(ys3), math.prod(xs3) * ys3[-1])
    return out.reshape(out_shape)


dot_general_p = Primitive("dot_general")
dot_general_p.def_impl(_dot_general_impl)
dot_general_p.def_abstract_eval(_dot_general_abstract)


def _dot_general_lowering_check(eqn: core.JaxprEqn) -> str | None:
    dt = eqn.outvars[0].aval.dtype
    ins = {v.aval.dtype for v in eqn.invars}
    # 16-bit float operands may give a float32 product (preferred_element_type: a GEMM that
    # accumulates in float32, the usual mixed-precision matmul); only backends holding 16-bit
    # floats get that far (``Capabilities.dtypes``)
    # ... and the transposes of such products mix float32 and 16-bit operands (widened first)
    half = {np.dtype(d) for d in _F16}
    mixed = bool(ins & half) and ins <= half | {np.dtype(np.float32)} and (dt in half or dt == np.float32)
    # (complex GEMMs: only backends holding complex dtypes get here, the CUDA backend's cuBLAS)
    if _dkind(dt) not in "fc" or (ins != {dt} and not mixed):
        return f"dot_general on {[v.aval.dtype.name for v in eqn.invars]} -> {dt.name} (BLAS is float only)"
    return None


register_lowering(dot_general_p, LIBRARY, check=_dot_general_lowering_check)


def _ranges_like(*xs: Sequence) -> list[list[int]]:
    start, out = 0, []
    for x in xs:
        out.append(list(range(start, start + len(x))))
        start += len(x)
    return out


def _remaining(n: int, *removed: Sequence[int]) -> list[int]:
    rm = set(i for r in removed for i in r)
    return [i for i in range(n) if i not in rm]


def _dot_transpose_lhs(
    ct: Any,
    x: Any,
    y: Any,
    *,
    dimension_numbers: tuple,
    precision: Any = None,
    preferred_element_type: Any = None,
    swap_ans: bool = False,
) -> Any:
    # ct has dims (batch, x_free, y_free) (or (batch, y_free, x_free) when swapped); contract it
    # with y over y's free dims to get (batch, x_free, y_contract-ordered) then permute into x
    (xc, yc), (xb, yb) = dimension_numbers
    x_aval = x.aval if is_undefined_primal(x) else core.get_aval(x)
    y_aval = y.aval if is_undefined_primal(y) else core.get_aval(y)
    x_kept = _remaining(x_aval.ndim, xc, xb)
    y_kept = _remaining(y_aval.ndim, yc, yb)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(xb, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(xb, x_kept, y_kept)
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(ans_batch), tuple(yb)))
    xc_by_y = [xc[i] for i in np.argsort(yc)]
    out_axes = np.argsort(list(xb) + x_kept + xc_by_y)
    # as JAX's rule, through the dot_general wrapper: a None precision takes config
    # jax_default_matmul_precision as it is when the transpose runs
    res = _dot_general(ct, y, dims, canonicalize_precision(precision), preferred_element_type)
    res = transpose(res, tuple(int(i) for i in out_axes))
    if core.get_aval(res).dtype != x_aval.dtype:
        res = convert_element_type(res, x_aval.dtype)
    return res


def _dot_transpose_rhs(
    ct: Any, x: Any, y: Any, *, dimension_numbers: tuple, precision: Any = None, preferred_element_type: Any = None
) -> Any:
    (xc, yc), (xb, yb) = dimension_numbers
    swapped = ((yc, xc), (yb, xb))
    return _dot_transpose_lhs(
        ct,
        y,
        x,
        dimension_numbers=swapped,
        precision=precision,
        preferred_element_type=preferred_element_type,
        swap_ans=True,
    )


ad.defbilinear(dot_general_p, _dot_transpose_lhs, _dot_transpose_rhs)


def _dot_general_batch(
    vals: list, dims: list, *, dimension_numbers: tuple, precision: Any = None, preferred_element_type: Any = None
) -> tuple:
    x, y = vals
    dx, dy = dims
    (xc, yc), (xb, yb) = dimension_numbers
    # as JAX's rule, through the dot_general wrapper: None takes config jax_default_matmul_precision
    precision = canonicalize_precision(precision)
    if dx is not None and dy is not None:
        # both batched: the vmapped axis becomes a new (leading) batch dimension
        x = batching.moveaxis(x, dx, 0)
        y = batching.moveaxis(y, dy, 0)
        sh = lambda t: tuple(i + 1 for i in t)  # noqa: E731
        dn = ((sh(xc), sh(yc)), ((0,) + sh(xb), (0,) + sh(yb)))
        return _dot_general(x, y, dn, precision, preferred_element_type), 0
    if dx is not None:
        # free dim of x: keep it in place; it lands among x's free dims in the output
        sh = lambda t: tuple(i + 1 if i >= dx else i for i in t)  # noqa: E731
        dn = ((sh(xc), yc), (sh(xb), yb))
        x_ndim = core.get_aval(x).ndim
        x_free = _remaining(x_ndim, dn[0][0], dn[1][0])
        out_d = len(xb) + x_free.index(dx)
        return _dot_general(x, y, dn, precision, preferred_element_type), out_d
    sh = lambda t: tuple(i + 1 if i >= dy else i for i in t)  # noqa: E731
    dn = ((xc, sh(yc)), (xb, sh(yb)))
    x_ndim = core.get_aval(x).ndim
    y_ndim = core.get_aval(y).ndim
    y_free = _remaining(y_ndim, dn[0][1], dn[1][1])
    x_free = _remaining(x_ndim, xc, xb)
    out_d = len(xb) + len(x_free) + y_free.index(dy)
    return _dot_general(x, y, dn, precision, preferred_element_type), out_d


batching.primitive_batchers[dot_general_p] = _dot_general_batch


def _dot_general_axis_main(params: dict) -> core.MainTrace | None:
    # In JAX every primitive bound under vmap passes through its trace, and dot_general's
    # batching rule (called even when no input is mapped) canonicalizes the precision: a None
    # precision bound inside a vmap (a jaxpr evaluated, a JVP rule's product) takes config
    # jax_default_matmul_precision. fjax sends such a bind to the innermost vmap to do the same.
    if params.get("precision") is not None or config.jax_default_matmul_precision is None:
        return None
    return batching.innermost_batch_main()


dot_general_p.axis_main = _dot_general_axis_main
batching.unmapped_params[dot_general_p] = lambda params: {
    **params,
    "precision": canonicalize_precision(params["precision"]),
}
