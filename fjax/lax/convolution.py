"""General dilated convolution (``conv_general_dilated``) and its convenience wrappers.

The primitive works on any number of spatial dimensions. Its eager implementation puts the
operands into (batch, feature, spatial...) / (out feature, in feature, spatial...) order, dilates
and pads them explicitly, takes strided sliding windows of the input and contracts them with the
kernel in one ``einsum``. Derivatives: the op is bilinear, and both transposes are themselves
``conv_general_dilated`` calls (with the kernel flipped for the input cotangent, and with the
batch and feature roles swapped for the kernel cotangent). Batching folds the mapped axis into
the batch dimension of ``lhs`` or the output-feature dimension of ``rhs`` (feature groups when
both are mapped).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

import numpy as np

from fjax import _out_sharding, core, dtypes
from fjax.core import Primitive, ShapedArray
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.interpreters.ad import is_undefined_primal
from fjax.lax import lax
from fjax.lax._dot_algorithms import canonicalize_precision

__all__ = [
    "ConvDimensionNumbers",
    "ConvGeneralDilatedDimensionNumbers",
    "conv",
    "conv_dimension_numbers",
    "conv_general_dilated",
    "conv_general_dilated_p",
    "conv_transpose",
    "conv_with_general_padding",
    "padtype_to_pads",
]


class ConvDimensionNumbers(NamedTuple):
    """Positions of the (batch, feature, spatial...) dims of lhs and out, and of the
    (out feature, in feature, spatial...) dims of rhs."""

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


ConvGeneralDilatedDimensionNumbers = Any  # None, a ConvDimensionNumbers or a triple of strings


def _spec_from_strings(
    lhs_shape: Sequence[int], rhs_shape: Sequence[int], specs: Sequence[str]
) -> ConvDimensionNumbers:
    lhs_s, rhs_s, out_s = specs
    nd = len(lhs_shape)
    if not (len(lhs_s) == len(rhs_s) == len(out_s) == nd):
        raise TypeError(
            f"convolution dimension_numbers {tuple(specs)} must each have length equal to the operand rank "
            f"(lhs shape {tuple(lhs_shape)}, rhs shape {tuple(rhs_shape)})"
        )
    for name, s, special in (("lhs", lhs_s, "NC"), ("rhs", rhs_s, "OI"), ("out", out_s, "NC")):
        if len(set(s)) != len(s) or any(c not in s for c in special):
            raise TypeError(
                f"convolution dimension_numbers {name} spec {s!r} must contain {special[0]!r} and "
                f"{special[1]!r} and no repeated characters"
            )
    spatial = [c for c in rhs_s if c not in "OI"]
    for s in (lhs_s, out_s):
        if sorted(c for c in s if c not in "NC") != sorted(spatial):
            raise TypeError(
                "convolution dimension_numbers elements must each have the same set of spatial characters, "
                f"got {(lhs_s, rhs_s, out_s)}."
            )
    return ConvDimensionNumbers(
        (lhs_s.index("N"), lhs_s.index("C")) + tuple(lhs_s.index(c) for c in spatial),
        (rhs_s.index("O"), rhs_s.index("I")) + tuple(rhs_s.index(c) for c in spatial),
        (out_s.index("N"), out_s.index("C")) + tuple(out_s.index(c) for c in spatial),
    )


def conv_dimension_numbers(
    lhs_shape: Sequence[int], rhs_shape: Sequence[int], dimension_numbers: Any
) -> ConvDimensionNumbers:
    """Canonicalize ``dimension_numbers`` (None, a ``ConvDimensionNumbers`` or three spec strings
    such as ``('NHWC', 'HWIO', 'NHWC')``) into a ``ConvDimensionNumbers``."""
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(
            f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} and {len(rhs_shape)}."
        )
    if len(lhs_shape) < 2:
        raise TypeError(f"convolution requires operands of rank at least 2, got lhs shape {lhs_shape}")
    nd = len(lhs_shape)
    if dimension_numbers is None:
        default = tuple(range(nd))
        return ConvDimensionNumbers(default, default, default)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        specs = tuple(tuple(int(i) for i in s) for s in dimension_numbers)
        for s in specs:
            if sorted(s) != list(range(nd)):
                raise TypeError(
                    f"convolution dimension_numbers {dimension_numbers} must be permutations of range({nd})"
                )
        return ConvDimensionNumbers(*specs)
    if len(dimension_numbers) == 3 and all(isinstance(s, str) for s in dimension_numbers):
        return _spec_from_strings(lhs_shape, rhs_shape, dimension_numbers)
    raise TypeError(
        "convolution dimension_numbers must be None, a ConvDimensionNumbers or a tuple of three strings, "
        f"got {dimension_numbers!r}"
    )


def _dilate_dim(d: int, r: int) -> int:
    return 0 if d == 0 else 1 + r * (d - 1)


def padtype_to_pads(
    in_shape: Sequence[int], window_shape: Sequence[int], window_strides: Sequence[int], padding: str
) -> list[tuple[int, int]]:
    """Explicit (low, high) pads for a 'SAME', 'SAME_LOWER' or 'VALID' padding string."""
    p = padding.upper() if isinstance(padding, str) else padding
    if p == "VALID":
        return [(0, 0)] * len(in_shape)
    if p in ("SAME", "SAME_LOWER"):
        pads = []
        for n, k, s in zip(in_shape, window_shape, window_strides):
            out = -(-n // s)
            total = max((out - 1) * s + k - n, 0)
            small = total // 2
            pads.append((small, total - small) if p == "SAME" else (total - small, small))
        return pads
    # RuntimeError, as JAX's padtype_to_pads raises
    raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', got {padding}.")


def _conv_out_shape(
    lhs_c: Sequence[int],
    rhs_c: Sequence[int],
    window_strides: tuple,
    padding: tuple,
    lhs_dilation: tuple,
    rhs_dilation: tuple,
    feature_group_count: int,
    batch_group_count: int,
) -> tuple[int, ...]:
    spatial = []
    for n, k, s, (lo, hi), ld, rd in zip(lhs_c[2:], rhs_c[2:], window_strides, padding, lhs_dilation, rhs_dilation):
        in_d = _dilate_dim(n, ld) + lo + hi
        k_d = _dilate_dim(k, rd)
        spatial.append(0 if in_d < k_d or in_d <= 0 else (in_d - k_d) // s + 1)
    return (lhs_c[0] // batch_group_count, rhs_c[0]) + tuple(spatial)


def _conv_abstract(
    lhs: Any,
    rhs: Any,
    *,
    window_strides: tuple,
    padding: tuple,
    lhs_dilation: tuple,
    rhs_dilation: tuple,
    dimension_numbers: ConvDimensionNumbers,
    feature_group_count: int,
    batch_group_count: int,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> ShapedArray:
    for name, a in (("lhs", lhs), ("rhs", rhs)):
        if _dkind(a.dtype) not in "biufc":  # booleans too, as XLA (OR of ANDs)
            raise TypeError(
                f"conv_general_dilated does not accept {name} dtype {a.dtype.name}; it requires a numeric "
                f"argument (got {core.short_dtype_name(a.dtype)}{list(a.shape)})."
            )
    if lhs.dtype != rhs.dtype and preferred_element_type is None:
        raise TypeError(
            f"lax.conv_general_dilated requires arguments to have the same dtypes, got {lhs.dtype.name}, "
            f"{rhs.dtype.name}."
        )
    if lhs.ndim != rhs.ndim:
        raise TypeError(f"conv_general_dilated requires lhs and rhs ndim to be equal, got {lhs.ndim} and {rhs.ndim}.")
    nsp = lhs.ndim - 2
    for name, v in (
        ("window_strides", window_strides),
        ("padding", padding),
        ("lhs_dilation", lhs_dilation),
        ("rhs_dilation", rhs_dilation),
    ):
        if len(v) != nsp:
            raise TypeError(f"conv_general_dilated {name} must have one entry per spatial dimension ({nsp}), got {v}")
    for name, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if any(d < 1 for d in v):
            raise ValueError(f"conv_general_dilated {name} must be positive, got {v}")
    lspec, rspec, _ = dimension_numbers
    lhs_c = tuple(lhs.shape[i] for i in lspec)
    rhs_c = tuple(rhs.shape[i] for i in rspec)
    G, B = feature_group_count, batch_group_count
    if G < 1 or B < 1:
        raise ValueError(
            f"conv_general_dilated group counts must be positive, got feature_group_count={G}, batch_group_count={B}"
        )
    if G > 1 and B > 1:
        raise ValueError(
            "At most one of feature_group_count and batch_group_count may be > 1, got "
            f"feature_group_count={G} and batch_group_count={B}"
        )
    if lhs_c[1] % G:
        raise ValueError(
            f"conv_general_dilated feature_group_count must divide lhs feature dimension size, but {G} "
            f"does not divide {lhs_c[1]}."
        )
    if lhs_c[1] // G != rhs_c[1]:
        raise ValueError(
            f"conv_general_dilated lhs feature dimension size divided by feature_group_count must equal "
            f"the rhs input feature dimension size, but {lhs_c[1]} // {G} != {rhs_c[1]}."
        )
    if rhs_c[0] % G:
        raise ValueError(
            f"conv_general_dilated rhs output feature dimension size must be a multiple of "
            f"feature_group_count, but {rhs_c[0]} is not a multiple of {G}."
        )
    if lhs_c[0] % B:
        raise ValueError(
            f"conv_general_dilated batch_group_count must divide lhs batch dimension size, but {B} does "
            f"not divide {lhs_c[0]}."
        )
    if rhs_c[0] % B:
        raise ValueError(
            f"conv_general_dilated rhs output feature dimension size must be a multiple of "
            f"batch_group_count, but {rhs_c[0]} is not a multiple of {B}."
        )
    out_c = _conv_out_shape(lhs_c, rhs_c, window_strides, padding, lhs_dilation, rhs_dilation, G, B)
    ospec = dimension_numbers.out_spec
    out_shape = [0] * len(out_c)
    for k, pos in enumerate(ospec):
        out_shape[pos] = out_c[k]
    dt = np.dtype(preferred_element_type) if preferred_element_type is not None else lhs.dtype
    return ShapedArray(tuple(out_shape), dt, lhs.weak_type and rhs.weak_type)


def _dilate_np(x: np.ndarray, factors: Sequence[int], first_axis: int) -> np.ndarray:
    if all(f == 1 for f in factors):
        return x
    shape = list(x.shape)
    idx: list = [slice(None)] * x.ndim
    for k, f in enumerate(factors):
        ax = first_axis + k
        shape[ax] = _dilate_dim(x.shape[ax], f)
        idx[ax] = slice(None, None, f)
    out = np.zeros(shape, x.dtype)
    out[tuple(idx)] = x
    return out


def _pad_np(x: np.ndarray, padding: Sequence[tuple[int, int]], first_axis: int) -> np.ndarray:
    crop: list = [slice(None)] * x.ndim
    widths = [(0, 0)] * x.ndim
    for k, (lo, hi) in enumerate(padding):
        ax = first_axis + k
        widths[ax] = (max(lo, 0), max(hi, 0))
        crop[ax] = slice(max(-lo, 0), x.shape[ax] + max(lo, 0) + max(hi, 0) - max(-hi, 0))
    if any(w != (0, 0) for w in widths):
        x = np.pad(x, widths)
    return x[tuple(crop)]


# the eager convolution contracts the windows of this many bytes of batch elements at a time
_EAGER_WINDOW_BYTES = 256 << 20


def _conv_impl(
    lhs: np.ndarray,
    rhs: np.ndarray,
    *,
    window_strides: tuple,
    padding: tuple,
    lhs_dilation: tuple,
    rhs_dilation: tuple,
    dimension_numbers: ConvDimensionNumbers,
    feature_group_count: int,
    batch_group_count: int,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> np.ndarray:
    lspec, rspec, ospec = dimension_numbers
    dt = np.dtype(preferred_element_type) if preferred_element_type is not None else lhs.dtype
    if dt == dtypes.bfloat16:  # numpy's einsum has no bfloat16 loop: accumulate in float32, round once
        params = dict(window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation)
        params.update(rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers, precision=precision)
        out = _conv_impl(
            lhs.astype(np.float32), rhs.astype(np.float32), **params, feature_group_count=feature_group_count,
            batch_group_count=batch_group_count, preferred_element_type=np.float32,
        )  # fmt: skip
        return out.astype(dt)
    if dt == np.bool_:  # OR of ANDs: count the products in int32, then nonzero
        params = dict(window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation)
        params.update(rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers, precision=precision)
        out = _conv_impl(
            lhs, rhs, **params, feature_group_count=feature_group_count, batch_group_count=batch_group_count,
            preferred_element_type=np.int32,
        )  # fmt: skip
        return out != 0
    x = np.transpose(lhs, lspec).astype(dt, copy=False)  # (N, C, S...)
    w = np.transpose(rhs, rspec).astype(dt, copy=False)  # (O, I, K...)
    nsp = x.ndim - 2
    G, B = feature_group_count, batch_group_count
    out_c = _conv_out_shape(x.shape, w.shape, window_strides, padding, lhs_dilation, rhs_dilation, G, B)
    if math.prod(out_c) == 0 or math.prod(w.shape[1:]) == 0:
        out = np.zeros(out_c, dt)
    else:
        x = _pad_np(_dilate_np(x, lhs_dilation, 2), padding, 2)
        w = _dilate_np(w, rhs_dilation, 2)
        ksz = w.shape[2:]
        win = np.lib.stride_tricks.sliding_window_view(x, ksz, axis=tuple(range(2, 2 + nsp)))
        win = win[(slice(None), slice(None)) + tuple(slice(None, o * s, s) for o, s in zip(out_c[2:], window_strides))]
        N, C = x.shape[:2]
        O, Cg = w.shape[:2]
        # windows (B, N/B, G, C/G, S..., K...) against kernel (B, G, O/(B G), C/G, K...)
        win = win.reshape((B, N // B, G, C // G) + win.shape[2:])
        wk = w.reshape((B, G, O // (B * G), Cg) + ksz)
        S = list(range(10, 10 + nsp))
        K = list(range(10 + nsp, 10 + 2 * nsp))
        # einsum copies the windows it contracts (every input value once per kernel tap): a few
        # batch elements at a time bound that copy (a 3-D transposed conv needed GBs in one go)
        per_n = math.prod(win.shape) // max(1, win.shape[1]) * x.itemsize
        step = max(1, _EAGER_WINDOW_BYTES // max(1, per_n))
        parts = [
            np.einsum(win[:, i : i + step], [0, 1, 2, 3] + S + K, wk, [0, 2, 4, 3] + K, [1, 0, 2, 4] + S, optimize=True)
            for i in range(0, win.shape[1], step)
        ]
        out = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)
        out = out.reshape(out_c).astype(dt, copy=False)
    return np.transpose(out, np.argsort(ospec))


conv_general_dilated_p = Primitive("conv_general_dilated")
conv_general_dilated_p.def_impl(_conv_impl)
conv_general_dilated_p.def_abstract_eval(_conv_abstract)

# ---------------------------------------------------------------------------------------------
# transposes


def _spec_swap(spec: tuple) -> tuple:
    return (spec[1], spec[0]) + tuple(spec[2:])


def _aval(x: Any) -> ShapedArray:
    return x.aval if is_undefined_primal(x) else core.get_aval(x)


def _split_axis(x: Any, axis: int, n: int) -> Any:
    """Split ``axis`` (size n*m) into (n, m) at positions (axis, axis + 1)."""
    shape = core.get_aval(x).shape
    return lax.reshape(x, shape[:axis] + (n, shape[axis] // n) + shape[axis + 1 :])


def _merge_axis(x: Any, src: int, dst: int) -> Any:
    """Merge axis ``src`` into axis ``dst`` as its major part (``src`` removed)."""
    x = batching.moveaxis(x, src, dst if src > dst else dst - 1)
    d = dst if src > dst else dst - 1
    shape = core.get_aval(x).shape
    return lax.reshape(x, shape[:d] + (shape[d] * shape[d + 1],) + shape[d + 2 :])


def _unmerge_axis(x: Any, axis: int, n: int) -> tuple[Any, int]:
    """Split ``axis`` into a major part of size n, moved to the front; returns (x, 0)."""
    x = _split_axis(x, axis, n)
    return batching.moveaxis(x, axis, 0), 0


def _conv_transpose_lhs(
    ct: Any,
    lhs: Any,
    rhs: Any,
    *,
    window_strides: tuple,
    padding: tuple,
    lhs_dilation: tuple,
    rhs_dilation: tuple,
    dimension_numbers: ConvDimensionNumbers,
    feature_group_count: int,
    batch_group_count: int,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    lspec, rspec, ospec = dimension_numbers
    lhs_aval, rhs_aval = _aval(lhs), _aval(rhs)
    G, B = feature_group_count, batch_group_count
    if G > 1:
        # kernel (G*Og, Cg) -> (Og, G*Cg): the transposed conv maps O features back to G*Cg
        rhs = _split_axis(rhs, rspec[0], G)
        rhs = _merge_axis(rhs, rspec[0], rspec[1] + (1 if rspec[1] > rspec[0] else 0))
    elif B > 1:
        rhs = _split_axis(rhs, rspec[0], B)
        rhs = _merge_axis(rhs, rspec[0], rspec[1] + (1 if rspec[1] > rspec[0] else 0))
        G = B
    lhs_sp = [lhs_aval.shape[i] for i in lspec[2:]]
    rhs_sp = [rhs_aval.shape[i] for i in rspec[2:]]
    ct_sp = [core.get_aval(ct).shape[i] for i in ospec[2:]]
    pads = []
    for n, k, o, s, (lo, _), ld, rd in zip(lhs_sp, rhs_sp, ct_sp, window_strides, padding, lhs_dilation, rhs_dilation):
        kd = _dilate_dim(k, rd)
        before = kd - lo - 1
        after = _dilate_dim(n, ld) + kd - 1 - _dilate_dim(o, s) - before
        pads.append((before, after))
    trans_dn = ConvDimensionNumbers(ospec, _spec_swap(rspec), lspec)
    out = conv_general_dilated_p.bind(
        ct,
        lax.rev(rhs, tuple(rspec[2:])),
        window_strides=lhs_dilation,
        padding=tuple(pads),
        lhs_dilation=window_strides,
        rhs_dilation=rhs_dilation,
        dimension_numbers=trans_dn,
        feature_group_count=G,
        batch_group_count=1,
        precision=canonicalize_precision(precision),  # as JAX: None takes the config now
        preferred_element_type=preferred_element_type,
    )
    if B > 1:
        # out has feature dim B*C (group-major); move the group part into the batch dim
        out = _split_axis(out, lspec[1], B)
        bpos = lspec[0] + (1 if lspec[0] > lspec[1] else 0)
        out = _merge_axis(out, lspec[1], bpos)
    if core.get_aval(out).dtype != lhs_aval.dtype:
        out = lax.convert_element_type(out, lhs_aval.dtype)
    return out


def _conv_transpose_rhs(
    ct: Any,
    lhs: Any,
    rhs: Any,
    *,
    window_strides: tuple,
    padding: tuple,
    lhs_dilation: tuple,
    rhs_dilation: tuple,
    dimension_numbers: ConvDimensionNumbers,
    feature_group_count: int,
    batch_group_count: int,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    lspec, rspec, ospec = dimension_numbers
    lhs_aval, rhs_aval = _aval(lhs), _aval(rhs)
    G, B = feature_group_count, batch_group_count
    if B > 1:
        G, B = B, 1
    elif G > 1:
        G, B = 1, G
    lhs_sp = [lhs_aval.shape[i] for i in lspec[2:]]
    rhs_sp = [rhs_aval.shape[i] for i in rspec[2:]]
    ct_sp = [core.get_aval(ct).shape[i] for i in ospec[2:]]
    pads = []
    for n, k, o, s, (lo, _), ld, rd in zip(lhs_sp, rhs_sp, ct_sp, window_strides, padding, lhs_dilation, rhs_dilation):
        hi = _dilate_dim(o, s) - _dilate_dim(n, ld) + _dilate_dim(k, rd) - lo - 1
        pads.append((lo, hi))
    trans_dn = ConvDimensionNumbers(_spec_swap(lspec), _spec_swap(ospec), _spec_swap(rspec))
    out = conv_general_dilated_p.bind(
        lhs,
        ct,
        window_strides=rhs_dilation,
        padding=tuple(pads),
        lhs_dilation=lhs_dilation,
        rhs_dilation=window_strides,
        dimension_numbers=trans_dn,
        feature_group_count=G,
        batch_group_count=B,
        precision=canonicalize_precision(precision),  # as JAX: None takes the config now
        preferred_element_type=preferred_element_type,
    )
    if core.get_aval(out).dtype != rhs_aval.dtype:
        out = lax.convert_element_type(out, rhs_aval.dtype)
    return out


ad.defbilinear(conv_general_dilated_p, _conv_transpose_lhs, _conv_transpose_rhs)

# ---------------------------------------------------------------------------------------------
# batching


def _conv_batch(
    vals: list,
    dims: list,
    *,
    window_strides: tuple,
    padding: tuple,
    lhs_dilation: tuple,
    rhs_dilation: tuple,
    dimension_numbers: ConvDimensionNumbers,
    feature_group_count: int,
    batch_group_count: int,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> tuple:
    lhs, rhs = vals
    ld, rd = dims
    lspec, rspec, ospec = dimension_numbers
    G, B = feature_group_count, batch_group_count
    # the mapped axis is moved to the front, so every spec position shifts by one; as JAX's rule
    # (through the conv_general_dilated wrapper), a None precision takes the config now
    params = dict(
        window_strides=window_strides,
        padding=padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        precision=canonicalize_precision(precision),
        preferred_element_type=preferred_element_type,
    )
    if ld is not None and rd is not None:
        lhs = batching.moveaxis(lhs, ld, 0)
        rhs = batching.moveaxis(rhs, rd, 0)
        n = core.get_aval(lhs).shape[0]
        if B > 1:
            # batch groups: the mapped axis becomes the major part of the batch dim
            new_lhs = _merge_axis(lhs, 0, lspec[0] + 1)
            B = B * n
        else:
            new_lhs = _merge_axis(lhs, 0, lspec[1] + 1)
            G = G * n
        new_rhs = _merge_axis(rhs, 0, rspec[0] + 1)
        out = conv_general_dilated_p.bind(
            new_lhs, new_rhs, dimension_numbers=dimension_numbers, feature_group_count=G, batch_group_count=B, **params
        )
        return _unmerge_axis(out, ospec[1], n)
    if ld is not None:
        lhs = batching.moveaxis(lhs, ld, 0)
        n = core.get_aval(lhs).shape[0]
        if B > 1:
            # keep the batch groups major: (n, B, N/B) -> (B, n, N/B) -> B*n*N/B
            lhs = _split_axis(lhs, lspec[0] + 1, B)  # (n, ..., B, N/B, ...)
            lhs = _merge_axis(lhs, 0, lspec[0] + 2)  # n merged into N/B (as major part)
            new_lhs = _merge_axis(lhs, lspec[0], lspec[0] + 1)
        else:
            new_lhs = _merge_axis(lhs, 0, lspec[0] + 1)
        out = conv_general_dilated_p.bind(
            new_lhs, rhs, dimension_numbers=dimension_numbers, feature_group_count=G, batch_group_count=B, **params
        )
        return _unmerge_axis(out, ospec[0], n)
    rhs = batching.moveaxis(rhs, rd, 0)
    n = core.get_aval(rhs).shape[0]
    groups = G * B
    if groups > 1:
        # (n, ..., groups*Og) -> (..., groups, n*Og): the mapped axis inside each group
        rhs = _split_axis(rhs, rspec[0] + 1, groups)
        rhs = _merge_axis(rhs, 0, rspec[0] + 2)
        new_rhs = _merge_axis(rhs, rspec[0], rspec[0] + 1)
        out = conv_general_dilated_p.bind(
            lhs, new_rhs, dimension_numbers=dimension_numbers, feature_group_count=G, batch_group_count=B, **params
        )
        # output features (groups, n, Og) -> n first
        out = _split_axis(out, ospec[1], groups)
        out = _split_axis(out, ospec[1] + 1, n)
        out = batching.moveaxis(out, ospec[1] + 1, 0)
        return _merge_axis(out, ospec[1] + 1, ospec[1] + 2), 0
    new_rhs = _merge_axis(rhs, 0, rspec[0] + 1)
    out = conv_general_dilated_p.bind(
        lhs, new_rhs, dimension_numbers=dimension_numbers, feature_group_count=G, batch_group_count=B, **params
    )
    return _unmerge_axis(out, ospec[1], n)


batching.primitive_batchers[conv_general_dilated_p] = _conv_batch

# ---------------------------------------------------------------------------------------------
# public wrappers


def _canon_padding(
    padding: Any,
    lhs_c: Sequence[int],
    rhs_c: Sequence[int],
    window_strides: tuple,
    lhs_dilation: tuple,
    rhs_dilation: tuple,
) -> tuple:
    nsp = len(lhs_c) - 2
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError(
                "String padding is not implemented for transposed convolution using this op. Please "
                "either exactly specify the required padding or use conv_transpose."
            )
        k_sp = [_dilate_dim(k, d) for k, d in zip(rhs_c[2:], rhs_dilation)]
        return tuple(padtype_to_pads(lhs_c[2:], k_sp, window_strides, padding))
    try:
        pads = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise TypeError(
            f"padding must be a string ('SAME', 'SAME_LOWER', 'VALID') or a sequence of (low, high) "
            f"integer pairs, got {padding!r}"
        ) from None
    if len(pads) != nsp:
        raise ValueError(f"padding {padding} must have one (low, high) pair per spatial dimension ({nsp})")
    if any(lo + hi < -_dilate_dim(n, d) for (lo, hi), n, d in zip(pads, lhs_c[2:], lhs_dilation)):
        raise ValueError(
            f"Negative padding is larger than the size of the corresponding dimension: got padding="
            f"{pads} for lhs spatial shape {tuple(lhs_c[2:])}"
        )
    return pads


def _user_pet(pet: Any) -> Any:
    """A public convolution's ``preferred_element_type`` canonicalized, warning as JAX (under
    conv_general_dilated's name) when x64 truncates it."""
    if pet is None:
        return None
    return dtypes.canonicalize_user_dtype(getattr(pet, "_np_type", pet), "conv_general_dilated", 3)


def conv_general_dilated(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: Any,
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> Any:
    """General n-dimensional convolution with strides, padding, input (lhs) and kernel (rhs)
    dilation, feature groups and batch groups, following ``jax.lax.conv_general_dilated``.

    ``padding`` is 'SAME', 'SAME_LOWER', 'VALID' or a sequence of (low, high) pairs (negative values
    crop). ``dimension_numbers`` is None (NCHW / OIHW / NCHW), a ``ConvDimensionNumbers`` or three
    spec strings like ``('NHWC', 'HWIO', 'NHWC')``.
    """
    if out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.apply(
            conv_general_dilated(
                lhs,
                rhs,
                window_strides,
                padding,
                lhs_dilation,
                rhs_dilation,
                dimension_numbers,
                feature_group_count,
                batch_group_count,
                precision,
                preferred_element_type,
            ),
            out_sharding,
            "conv_general_dilated",
        )
    preferred_element_type = _user_pet(preferred_element_type)
    la, ra = core.get_aval(lhs), core.get_aval(rhs)
    dnums = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nsp = la.ndim - 2
    lhs_dilation = (1,) * nsp if lhs_dilation is None else tuple(int(d) for d in lhs_dilation)
    rhs_dilation = (1,) * nsp if rhs_dilation is None else tuple(int(d) for d in rhs_dilation)
    window_strides = tuple(int(s) for s in window_strides)
    lhs_c = tuple(la.shape[i] for i in dnums.lhs_spec)
    rhs_c = tuple(ra.shape[i] for i in dnums.rhs_spec)
    if len(window_strides) != nsp:
        raise ValueError(
            "conv_general_dilated window and window_strides must have the same number of dimensions, but got "
            f"{nsp} and {len(window_strides)}"
        )
    pads = _canon_padding(padding, lhs_c, rhs_c, window_strides, lhs_dilation, rhs_dilation)
    # kept in JAX's canonical form (None: config jax_default_matmul_precision); the CPU computes
    # every one alike and, as JAX's CPU backend, refuses none for a convolution
    precision = canonicalize_precision(precision)
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
    return core.bind1(
        conv_general_dilated_p,
        lhs,
        rhs,
        window_strides=window_strides,
        padding=pads,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dnums,
        feature_group_count=int(feature_group_count),
        batch_group_count=int(batch_group_count),
        precision=precision,
        preferred_element_type=pet,
    )


def conv(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: str,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """Convolution in NCHW / OIHW layout without dilation."""
    preferred_element_type = _user_pet(preferred_element_type)
    return conv_general_dilated(
        lhs, rhs, window_strides, padding, precision=precision, preferred_element_type=preferred_element_type
    )


def conv_with_general_padding(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: Any,
    lhs_dilation: Sequence[int] | None,
    rhs_dilation: Sequence[int] | None,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """Convolution in NCHW / OIHW layout with explicit padding and dilations."""
    preferred_element_type = _user_pet(preferred_element_type)
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def _conv_transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    elif isinstance(padding, tuple):
        lo, hi = k - padding[0] - 1, k - padding[1] - 1
        total = lo + hi
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return lo, total - lo


_TRANSPOSE_DEFAULT_DNUMS = {
    2: ("NC", "IO", "NC"),
    3: ("NHC", "HIO", "NHC"),
    4: ("NHWC", "HWIO", "NHWC"),
    5: ("NHWDC", "HWDIO", "NHWDC"),
}


def conv_transpose(
    lhs: Any,
    rhs: Any,
    strides: Sequence[int],
    padding: Any,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    transpose_kernel: bool = False,
    precision: Any = None,
    preferred_element_type: Any = None,
    use_consistent_padding: bool = False,
) -> Any:
    """Transposed convolution ("deconvolution"): an lhs-dilated convolution whose padding follows
    ``jax.lax.conv_transpose`` (defaults to NHWC / HWIO layouts). With ``transpose_kernel`` the
    kernel's spatial axes are flipped and its in/out feature axes swapped, giving the gradient of
    a forward convolution with the same kernel."""
    preferred_element_type = _user_pet(preferred_element_type)
    la, ra = core.get_aval(lhs), core.get_aval(rhs)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise TypeError(f"conv_transpose requires lhs and rhs of equal rank >= 2, got shapes {la.shape} and {ra.shape}")
    nd = la.ndim
    nsp = nd - 2
    if dimension_numbers is None:
        if nd not in _TRANSPOSE_DEFAULT_DNUMS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_DEFAULT_DNUMS[nd]
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    k_sp = [ra.shape[i] for i in dn.rhs_spec[2:]]
    rd = (1,) * nsp if rhs_dilation is None else tuple(int(d) for d in rhs_dilation)
    eff_k = [_dilate_dim(k, d) for k, d in zip(k_sp, rd)]
    strides = tuple(int(s) for s in strides)
    if isinstance(padding, str):
        if padding not in ("SAME", "VALID"):
            raise ValueError(f"Invalid padding mode: {padding}")
        pads = tuple(_conv_transpose_padding(k, s, padding) for k, s in zip(eff_k, strides))
    elif use_consistent_padding:
        pads = tuple(
            _conv_transpose_padding(k, s, tuple(int(p) for p in pr)) for k, s, pr in zip(eff_k, strides, padding)
        )
    else:
        pads = tuple((int(lo), int(hi)) for lo, hi in padding)
    if transpose_kernel:
        rhs = lax.rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(nd))
        o, i = dn.rhs_spec[0], dn.rhs_spec[1]
        perm[o], perm[i] = i, o
        rhs = lax.transpose(rhs, tuple(perm))
    return conv_general_dilated(
        lhs, rhs, (1,) * nsp, pads, strides, rd, dn, precision=precision, preferred_element_type=preferred_element_type
    )
