"""CUDA kernels for the steps that do not fuse into loop nests (the numba backend's host steps and
inline loop updates): each becomes launches in the plan, so its data never leaves the device.

- ``random_fma``: ``fmaf``/``fma`` (one rounding: bit-identical to the CPU impl, which emulates a
  correctly rounded fma);
- ``cumsum``/``cumprod``/``cummax``/``cummin``/``cumlogsumexp``: one thread per line along the
  axis, the same sequential recurrence as numpy's ``accumulate`` (bit-identical, NaN propagating;
  ``cumlogsumexp`` to the ulps of CUDA's ``exp``/``log1p``);
- ``argmax``/``argmin``: one thread per output, NaN counting as the extreme (first NaN wins);
- ``sort`` (any number of keys and operands, along any axis): a stable merge sort of an int32
  permutation per line (tiles of up to 1024 in shared memory, then one launch per doubling run
  width, each element placed by a binary search in the partner run), with the impl's order (NaNs
  last, -0.0 equal to 0.0); O(n log^2 n) work, ``1 + ceil(log2(n / tile))`` launches;
- ``conv_general_dilated`` (feature and batch groups): an im2col kernel, the weights permuted to
  (groups, out features, in features x window), one (batched) cuBLAS GEMM, and a kernel writing the
  product in the output's dimension order;
- ``dynamic_update_slice``, ``scatter``, ``scatter-add``/``mul``/``min``/``max``: a copy of the
  operand, then one thread per update element; additions use ``atomicAdd`` (float sums of colliding
  indices then depend on the order threads run: not bit-reproducible run to run), the other ops and
  every 1- or 2-byte type compare-and-swap loops (on the aligned 32-bit word for the narrow types).

Complex values (``complex_ops.py``) go through the copies, scatters (scatter-add: ``atomicAdd`` per
part), ``cumsum``/``cumprod``, ``cummax``/``cummin`` (lexicographic, as the impl) and ``sort`` (keys
by (real, imag), NaNs last); the other host steps raise ``NotImplementedError`` on them. ``fft`` is
cuFFT through ``cupy.fft`` (``fft_ops.py``).
Special functions, ``clz``/``population_count``, ``reduce_precision`` and ``top_k`` are in
``special_ops.py``/``special_ops2.py``, the factorizations in ``linalg_ops.py``, the random samplers
in ``random_ops.py``. Everything else raises ``NotImplementedError`` naming the primitive (``eig``,
``schur``, ``tridiagonal_solve``, ``hyp1f1``, ... have no CUDA form here).
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np

from fjax.backends.cuda.kernel_util import _block, _grid, _loop
from fjax.backends.cuda.ops import LOW_FLOATS, ctype, load_expr, store_expr, stype, utype, value_dtype
from fjax.backends.cuda.records import Alloc, Launch, MatMul, gemm_compute
from fjax.backends.cuda.render import CudaKernel

_CUM = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min", "cumlogsumexp": "logaddexp"}
# the host-step primitives rendered here as kernels
HOST_OPS = frozenset(
    {
        "random_fma",
        "random_bitcast",
        "erf_inv",
        "argmax",
        "argmin",
        "gather",
        "dynamic_update_slice",
        "conv_general_dilated",
        "sort",
    }
    | {"scatter", "scatter-add", "scatter-min", "scatter-max"}
    | set(_CUM)
)


# host-step primitives that are one float function call per element: CUDA function, what it does
_FLOAT_CALLS = {
    "random_fma": ("fma", "one rounding (as the CPU impl)"),
    "nextafter": ("nextafter", "the next representable value of x towards y"),
    "erf_inv": ("erfinv", "the inverse error function (CUDA: 2 ulp in float32; XLA uses an approximation)"),
}
_BITS_CALLS = frozenset({"nextafter"})  # of the format's bits: not computable in float32
# host steps that take complex operands (sort: keys ordered by (real, imag), NaNs last)
_COMPLEX_OK = frozenset({"gather", "dynamic_update_slice", "scatter", "scatter-add", "sort"})
_COMPLEX_OK |= {"cumsum", "cumprod", "cummax", "cummin"}
_COMPLEX_OK |= {"cholesky", "triangular_solve", "lu", "qr", "eigh", "svd"}  # linalg_ops.py: complex64/128
_COMPLEX_OK |= {"wofz", "conv_general_dilated"}  # special_complex.py; _conv's complex GEMM
_COMPLEX_OK |= {"tridiagonal_solve", "householder_product"}  # linalg_extra.py (checks its dtypes)
_COMPLEX_OK |= {"sph_harm_y"}  # special_hyp.py: real operands, complex result
_COMPLEX_OK |= {"dot_general"}  # int_dot.py: products converted to a complex preferred_element_type
# modules rendering further host steps, tried in order after the ones above (wofz; tridiagonal_solve
# and householder_product; hyp1f1, hyp2f1, sph_harm_y; rng_uniform; integer dot_general): each has
# ``render(name, params, in_avals, out_avals, ins, outs, launch, alloc) -> list | None`` (None: not
# its primitive) and checks the dtypes it takes
_MORE = ("special_complex", "linalg_extra", "special_hyp", "random_state", "int_dot")


def render(name: str, params: dict, in_avals: list, out_avals: list, aux: dict, ins: list, outs: list, b: Any) -> list:
    """Plan records computing the step ``name`` on device buffers ``ins`` into ``outs``."""

    def launch(kind: str, src: str, n: int, block: int, args: tuple, comment: str) -> list:
        k = b.module.add(CudaKernel(kind, src))
        return [Launch(k, _grid(n, block), (block, 1, 1), args, 0, comment)]

    def alloc(i: int) -> list:
        a = out_avals[i]
        return [Alloc(outs[i], tuple(a.shape), np.dtype(a.dtype))]

    if name == "fft":  # cuFFT (fft_ops.py), ahead of the C-type check: its operands are complex
        from fjax.backends.cuda import fft_ops  # noqa: PLC0415

        return fft_ops.render(params, in_avals, out_avals, ins, outs, launch)

    for a in list(in_avals) + list(out_avals):
        try:
            ctype(a.dtype)
        except NotImplementedError:
            raise NotImplementedError(f"CUDA backend: primitive {name} on dtype {np.dtype(a.dtype).name}") from None
    # complex values move through the copies and scatters; of the rest only sums/products take them
    cplx = [np.dtype(a.dtype).name for a in list(in_avals) + list(out_avals) if np.dtype(a.dtype).kind == "c"]
    if cplx and name not in _COMPLEX_OK:
        raise NotImplementedError(f"CUDA backend: primitive {name} on dtype {cplx[0]}")

    # float functions of same-shaped (or 0-d) operands, one thread per output element
    if name in _FLOAT_CALLS:
        a = out_avals[0]
        d = np.dtype(a.dtype)
        if d in LOW_FLOATS and name == "random_fma":
            return alloc(0) + _fma16(d, in_avals, ins, outs[0], launch)
        if d in LOW_FLOATS and name == "nextafter":
            return alloc(0) + _nextafter16(d, in_avals, ins, outs[0], launch)
        low = d in LOW_FLOATS and name not in _BITS_CALLS  # computed in float32, rounded once
        if d not in (np.float32, np.float64) and not low:
            raise NotImplementedError(f"CUDA backend: {name} on {d.name}")
        fn, why = _FLOAT_CALLS[name]
        f = fn if d == np.float64 else fn + "f"
        S = stype(d)
        n = math.prod(a.shape)
        blk = _block(n)
        names = [f"x{i}" for i in range(len(in_avals))]
        args = ", ".join(load_expr(d, f"{v}[{'t' if tuple(x.shape) else '0'}]") for v, x in zip(names, in_avals))
        params_ = "".join(f"const {S}* __restrict__ {v}, " for v in names)
        src = (
            f"// {name}: {why} (CUDA's {f})\n"
            f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__({params_}{S}* __restrict__ o) {{\n'
            f"  {_loop(n, blk)}\n    o[t] = {store_expr(d, f'{f}({args})')};\n}}\n"
        )
        return alloc(0) + (launch("op", src, n, blk, (*ins, outs[0]), name) if n else [])

    if name in _CUM:
        a = in_avals[0]
        T, S = ctype(a.dtype), stype(a.dtype)
        axis, reverse = int(params["axis"]), bool(params["reverse"])
        shape = tuple(a.shape)
        n0, n, n2 = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
        kind = _CUM[name]
        d = value_dtype(a.dtype)
        tag = LOW_FLOATS.get(np.dtype(a.dtype))
        pre = ""
        if kind == "logaddexp":
            if d.kind != "f":
                raise NotImplementedError(f"CUDA backend: {name} on {d.name}")
            f = "" if T == "double" else "f"
            pre = (
                f"#ifndef FJ_DEF_LOGADDEXP_{T}\n#define FJ_DEF_LOGADDEXP_{T}\n"
                f"// numpy's logaddexp: equal values (infinities too) give x + log 2\n"
                f"__device__ __forceinline__ {T} fj_logaddexp({T} x, {T} y) {{\n"
                f"  if (x == y) return x + ({T})0.6931471805599453;\n"
                f"  const {T} d = x - y;\n"
                f"  if (d > 0) return x + log1p{f}(exp{f}(-d));\n"
                f"  if (d <= 0) return y + log1p{f}(exp{f}(d));\n  return d;\n}}\n#endif\n"
            )
            comb = "fj_logaddexp(acc, v)"
        elif d.kind == "c":  # cummax/cummin: binary max/min folded in order (NaNs do not stick)
            from fjax.backends.cuda import complex_ops  # noqa: PLC0415

            comb = complex_ops.scan_combine_expr(kind, "acc", "v", d)
        elif kind in ("max", "min"):
            comb = f"fj_f{kind}(acc, v)" if d.kind == "f" else f"fj_i{kind}(acc, v)"
            if d == np.bool_:
                comb = "(acc || v)" if kind == "max" else "(acc && v)"
        elif d.kind == "f":
            comb = "acc + v" if kind == "sum" else "acc * v"
        elif d == np.bool_:
            comb = "(acc || v)" if kind == "sum" else "(acc && v)"
        else:
            u = utype(d)
            comb = f"({T})(({u})acc {'+' if kind == 'sum' else '*'} ({u})v)"
        if tag and kind in ("sum", "prod", "logaddexp"):
            comb = f"fj_r{tag}({comb})"  # each partial result rounded to 16 bits, as the impl
        lines = n0 * n2
        blk = _block(lines)
        j = f"{n - 1} - jj" if reverse else "jj"
        src = pre + (
            f"// {name} along axis {axis}{' (reverse)' if reverse else ''}: the sequential recurrence\n"
            f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__('
            f"const {S}* __restrict__ x, {S}* __restrict__ o) {{\n"
            f"  {_loop(lines, blk)} {{\n"
            f"    const long long i = t / {n2}, k = t % {n2};\n"
            f"    {T} acc = ({T})0;\n"
            f"    for (long long jj = 0; jj < {n}; ++jj) {{\n"
            f"      const long long p = (i * {n} + ({j})) * {n2} + k;\n"
            f"      const {T} v = {load_expr(a.dtype, 'x[p]')};\n"
            f"      acc = jj == 0 ? v : ({T})({comb});\n"
            f"      o[p] = {store_expr(a.dtype, 'acc')};\n    }}\n  }}\n}}\n"
        )
        return alloc(0) + (launch("op", src, lines, blk, (ins[0], outs[0]), name) if lines and n else [])

    if name in ("argmax", "argmin"):
        a = in_avals[0]
        T, S = ctype(a.dtype), stype(a.dtype)
        (axis,) = params["axes"]
        shape = tuple(a.shape)
        n0, n, n2 = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
        I = ctype(out_avals[0].dtype)  # noqa: E741
        d = value_dtype(a.dtype)
        better = ">" if name == "argmax" else "<"
        nan = "v != v" if d.kind == "f" else "false"
        lines = n0 * n2
        blk = _block(lines)
        src = (
            f"// {name} along axis {axis}: NaN is the extreme (first NaN wins)\n"
            f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__('
            f"const {S}* __restrict__ x, {I}* __restrict__ o) {{\n"
            f"  {_loop(lines, blk)} {{\n"
            f"    const long long i = t / {n2}, k = t % {n2};\n"
            f"    {T} best = {load_expr(a.dtype, f'x[i * {n} * {n2} + k]')};\n    long long bi = 0;\n"
            f"    if (!(best != best)) {{\n"
            f"      for (long long j = 1; j < {n}; ++j) {{\n"
            f"        const {T} v = {load_expr(a.dtype, f'x[(i * {n} + j) * {n2} + k]')};\n"
            f"        if ({nan}) {{ bi = j; break; }}\n"
            f"        if (v {better} best) {{ best = v; bi = j; }}\n      }}\n    }}\n"
            f"    o[t] = ({I})bi;\n  }}\n}}\n"
        )
        return alloc(0) + (launch("op", src, lines, blk, (ins[0], outs[0]), name) if lines and n else [])

    if name == "random_bitcast":
        src, dst = np.dtype(in_avals[0].dtype), np.dtype(out_avals[0].dtype)
        if src.itemsize != dst.itemsize:
            raise NotImplementedError(f"CUDA backend: random_bitcast {src.name} -> {dst.name}")
        n = math.prod(out_avals[0].shape)
        blk = _block(n)
        S, Dt = stype(src), stype(dst)
        src_ = (
            f"// bitcast {src.name} -> {dst.name}\n"
            f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const {S}* __restrict__ x, '
            f"{Dt}* __restrict__ o) {{\n  {_loop(n, blk)} {{\n"
            f"    union {{ {S} s; {Dt} d; }} c;\n    c.s = x[t];\n    o[t] = c.d;\n  }}\n}}\n"
        )
        return alloc(0) + (launch("op", src_, n, blk, (ins[0], outs[0]), name) if n else [])

    if name == "sort":
        return _sort(params, in_avals, out_avals, ins, outs, launch)

    if name == "conv_general_dilated":
        return _conv(params, in_avals, out_avals, ins, outs, launch)

    if name == "gather":
        return _gather(params, in_avals, out_avals, aux, ins, outs, launch, alloc)

    if name in ("dynamic_update_slice", "scatter", "scatter-add", "scatter-mul", "scatter-min", "scatter-max"):
        return _update(name, params, in_avals, out_avals, aux, ins, outs, b, launch, alloc)

    from fjax.backends.cuda import linalg_ops, random_ops, special_ops  # noqa: PLC0415

    recs = special_ops.render(name, params, in_avals, out_avals, ins, outs, launch, alloc)
    if recs is None:
        recs = linalg_ops.render(name, params, in_avals, out_avals, ins, outs, launch)
    if recs is None:
        recs = random_ops.render(name, params, in_avals, out_avals, ins, outs, launch, alloc)
    for mod in _MORE if recs is None else ():
        m = importlib.import_module(f"fjax.backends.cuda.{mod}")
        recs = m.render(name, params, in_avals, out_avals, ins, outs, launch, alloc)
        if recs is not None:
            return recs
    if recs is not None:
        return recs
    raise NotImplementedError(f"CUDA backend: no CUDA lowering for primitive {name} (a host step on the CPU backend)")


def _fma16(d: np.dtype, in_avals: list, ins: list, out: str, launch) -> list:  # noqa: ANN001
    """``random_fma`` of 16-bit floats: ``fj_fma16`` (the CPU impl's once-rounded a * b + c)."""
    n = math.prod(in_avals[0].shape if in_avals[0].shape else max((x.shape for x in in_avals), key=len))
    if not n:
        return []
    blk = _block(n)
    tag, S = LOW_FLOATS[d], stype(d)
    drop = 52 - (7 if tag == "bf16" else 10)
    args = ", ".join(load_expr(d, f"x{i}[{'t' if tuple(x.shape) else '0'}]") for i, x in enumerate(in_avals))
    ps = "".join(f"const {S}* __restrict__ x{i}, " for i in range(len(in_avals)))
    src = (
        f"// random_fma of {d.name}: a * b + c rounded once (as the CPU impl)\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__({ps}{S}* __restrict__ o) {{\n'
        f"  {_loop(n, blk)}\n    o[t] = fj_f32_{tag}(fj_d2f_odd(fj_fma16({args}, {drop})));\n}}\n"
    )
    return launch("op", src, n, blk, (*ins, out), "random_fma")


def _nextafter16(d: np.dtype, in_avals: list, ins: list, out: str, launch) -> list:  # noqa: ANN001
    """``nextafter`` of 16-bit floats on their bits, as the CPU: numpy's float16 (x where x == y,
    NaN 0x7e00) and ml_dtypes' bfloat16 (y where x == y, as C's nextafter; NaN 0x7fc0)."""
    n = math.prod(max((tuple(x.shape) for x in in_avals), key=len))
    if not n:
        return []
    blk = _block(n)
    f16 = d == np.float16
    inf, nan, eq = ("0x7c00", "0x7e00", "xb") if f16 else ("0x7f80", "0x7fc0", "yb")
    ix = [f"x{i}[{'t' if tuple(x.shape) else '0'}]" for i, x in enumerate(in_avals)]
    lines = [
        f"    const unsigned short xb = {ix[0]}, yb = {ix[1]};",
        "    const unsigned short xa = xb & 0x7fff, ya = yb & 0x7fff;",
        "    unsigned short r;",
        f"    if (xa > {inf} || ya > {inf}) r = {nan};",
        f"    else if (xb == yb || (xa == 0 && ya == 0)) r = {eq};",
        "    else if (xa == 0) r = (unsigned short)((yb & 0x8000) | 1);",
        "    else {",
        f"      const float xf = {load_expr(d, 'xb')}, yf = {load_expr(d, 'yb')};",
        "      r = ((xf < yf) != ((xb & 0x8000) != 0)) ? (unsigned short)(xb + 1) : (unsigned short)(xb - 1);",
        "    }",
        "    o[t] = r;",
    ]
    src = (
        f"// nextafter of {d.name} on its bits (as the CPU: {'numpy' if f16 else 'ml_dtypes'})\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const unsigned short* __restrict__ x0, '
        f"const unsigned short* __restrict__ x1, unsigned short* __restrict__ o) {{\n  {_loop(n, blk)} {{\n"
        + "\n".join(lines)
        + "\n  }\n}\n"
    )
    return launch("op", src, n, blk, (*ins, out), "nextafter")


def _update(
    name: str, params: dict, in_avals: list, out_avals: list, aux: dict, ins: list, outs: list, b: Any, launch, alloc
) -> list:  # noqa: ANN001
    """An indexed update: the operand copied into the output, then one thread per update element."""
    a = out_avals[0]
    d = np.dtype(a.dtype)
    T = stype(d)  # elements are moved (16-bit floats as their bits), added through their values
    D = tuple(a.shape)
    nd = len(D)
    size = math.prod(D)
    kname, blk = b.copy_kernel(d, size)
    recs = alloc(0)
    if size:
        recs.append(Launch(kname, _grid(size, blk), (blk, 1, 1), (ins[0], outs[0]), 0, f"{name}: copy of the operand"))
    ostr = [math.prod(D[k + 1 :]) for k in range(nd)]
    if name == "dynamic_update_slice":
        U = tuple(in_avals[1].shape)
        nu = math.prod(U)
        if not nu or not size:
            return recs
        its = [ctype(x.dtype) for x in in_avals[2:]]
        ps = ", ".join(f"const {t}* __restrict__ s{k}" for k, t in enumerate(its))
        body = ["    long long r = t;"]
        for k in range(nd - 1, -1, -1):
            body.append(f"    const long long j{k} = r % {U[k]}; r /= {U[k]};")
        for k in range(nd):
            body.append(f"    const long long st{k} = fj_imin(fj_imax((long long)s{k}[0], 0LL), {D[k] - U[k]}LL);")
        off = " + ".join(f"(st{k} + j{k}) * {ostr[k]}" for k in range(nd)) or "0"
        blk2 = _block(nu)
        src = (
            f"// dynamic_update_slice of {list(U)} into {list(D)} (start indices clamped)\n"
            f'extern "C" __global__ void __launch_bounds__({blk2}) __NAME__(const {T}* __restrict__ u, '
            f"{ps + ', ' if ps else ''}{T}* __restrict__ o) {{\n  {_loop(nu, blk2)} {{\n"
            + "\n".join(body)
            + f"\n    o[{off}] = u[t];\n  }}\n}}\n"
        )
        return recs + launch("op", src, nu, blk2, (ins[1], *ins[2:], outs[0]), name)
    dn = params["dimension_numbers"]
    # batching dims (vmap of a gather's transpose): operand dim obd[j] is the update's scatter dim
    # for index batch dim sibd[j], so each batch element scatters into its own slice
    obd = list(getattr(dn, "operand_batching_dims", ()) or ())
    sibd = list(getattr(dn, "scatter_indices_batching_dims", ()) or ())
    I_shape = tuple(in_avals[1].shape)
    U_shape = tuple(in_avals[2].shape)
    win = list(dn.update_window_dims)
    body_dims = [k for k in range(nd) if k not in dn.inserted_window_dims and k not in obd]
    sizes = [1] * nd
    for k, u in zip(body_dims, win):
        sizes[k] = U_shape[u]
    clip = "CLIP" in str(params.get("mode"))
    nu = math.prod(U_shape)
    if not nu or not size:
        return recs
    IT = ctype(in_avals[1].dtype)
    nk = I_shape[-1] if I_shape else 0
    # update element t -> its position in every update dim
    lines = ["    long long r = t;"]
    for k in range(len(U_shape) - 1, -1, -1):
        lines.append(f"    const long long u{k} = r % {U_shape[k]}; r /= {U_shape[k]};")
    scat = [k for k in range(len(U_shape)) if k not in win]  # the index-row dims, in order
    row = " + ".join(f"u{k} * {math.prod([U_shape[j] for j in scat[scat.index(k) + 1 :]])}" for k in scat) or "0"
    lines.append(f"    const long long row = {row};")
    ok = []
    for k in range(nd):
        if k in dn.scatter_dims_to_operand_dims:
            c = list(dn.scatter_dims_to_operand_dims).index(k)
            v = f"(long long)idx[row * {nk} + {c}]"
            if clip:
                lines.append(f"    const long long st{k} = fj_imin(fj_imax({v}, 0LL), {D[k] - sizes[k]}LL);")
            else:
                lines.append(f"    const long long st{k} = {v};")
                ok.append(f"st{k} >= 0 && st{k} <= {D[k] - sizes[k]}")
        elif k in obd:
            lines.append(f"    const long long st{k} = u{scat[sibd[obd.index(k)]]};")
        else:
            lines.append(f"    const long long st{k} = 0;")
    off = []
    for k in range(nd):
        w = f" + u{win[body_dims.index(k)]}" if k in body_dims else ""
        off.append(f"(st{k}{w}) * {ostr[k]}")
    offs = " + ".join(off) or "0"
    if ok:
        lines.append(f"    if (!({' && '.join(ok)})) continue;")
    tgt = f"o[{offs}]"
    if name == "scatter":
        upd = f"{tgt} = u[t];"
    elif d.itemsize < 4:  # bool, 8/16-bit ints, 16-bit floats: CAS on the aligned 32-bit word
        upd = _subword_update(name, d, tgt)
    elif name == "scatter-add" and d.kind == "c":  # each part (the sum's order: as any atomicAdd)
        upd = f"atomicAdd(&{tgt}.re, u[t].re);\n    atomicAdd(&{tgt}.im, u[t].im);"
    elif name == "scatter-add":
        if d.kind == "f" or d in (np.dtype(np.int32), np.dtype(np.uint32)):
            upd = f"atomicAdd(&{tgt}, u[t]);"
        elif d.itemsize == 8 and d.kind in "iu":
            upd = f"atomicAdd((unsigned long long*)&{tgt}, (unsigned long long)u[t]);"
        else:
            raise NotImplementedError(f"CUDA backend: scatter-add on dtype {d.name} (no atomicAdd)")
    else:
        op = name.split("-")[1]
        if d.kind == "c" or d.itemsize not in (4, 8):
            raise NotImplementedError(f"CUDA backend: {name} on dtype {d.name} (no atomic form)")
        if op != "mul" and d.kind in "iu":
            upd = f"atomic{op.capitalize()}(&{tgt}, u[t]);"
        else:  # a compare-and-swap loop on the element's bits (NaNs propagate, as the impl's)
            U = "unsigned int" if d.itemsize == 4 else "unsigned long long"
            if op == "mul":  # integers multiplied as unsigned: wraparound, no overflow UB
                new = f"({T})(v.u * ({U})u[t])" if d.kind in "iu" else "v.v * u[t]"
            else:
                new = f"fj_f{op}(v.v, u[t])"
            upd = (
                f"union {{ {U} u; {T} v; }} v, w;\n    {U}* a = ({U}*)&{tgt};\n    {U} old = *a, seen;\n"
                f"    do {{\n      seen = old;\n      v.u = seen;\n      w.v = {new};\n"
                "      old = atomicCAS(a, seen, w.u);\n    } while (old != seen);"
            )
    blk2 = _block(nu)
    src = (
        f"// {name}: operand {list(D)}, indices {list(I_shape)}, updates {list(U_shape)}"
        f" ({'clamped' if clip else 'out-of-bounds windows dropped'})\n"
        f'extern "C" __global__ void __launch_bounds__({blk2}) __NAME__(const {IT}* __restrict__ idx, '
        f"const {T}* __restrict__ u, {T}* o) {{\n  {_loop(nu, blk2)} {{\n"
        + "\n".join(lines)
        + f"\n    {upd}\n  }}\n}}\n"
    )
    return recs + launch("op", src, nu, blk2, (ins[1], ins[2], outs[0]), name)


def _subword_update(name: str, d: np.dtype, tgt: str) -> str:
    """scatter-add/mul/min/max of a 1- or 2-byte element (bool, 8/16-bit ints, float16/bfloat16):
    a compare-and-swap loop on the aligned 32-bit word holding it, as the impl computes the op (bool:
    add/max are or, mul/min are and; integers wrap; 16-bit floats in float32, rounded once, NaNs
    propagating through min/max)."""
    op = name.split("-")[1]
    bits = d.itemsize * 8
    B = "unsigned char" if d.itemsize == 1 else "unsigned short"
    mask = "0xffu" if d.itemsize == 1 else "0xffffu"
    if d == np.bool_:
        new = f"(cur {'|' if op in ('add', 'max') else '&'} (u[t] ? 1u : 0u))"
    elif d in LOW_FLOATS:
        tag = LOW_FLOATS[d]
        a, b = f"fj_{tag}_f32(({B})cur)", load_expr(d, "u[t]")
        v = f"{a} {'+' if op == 'add' else '*'} {b}" if op in ("add", "mul") else f"fj_f{op}({a}, {b})"
        new = f"(unsigned int)fj_f32_{tag}({v})"
    elif op in ("add", "mul"):  # wraparound in unsigned 32-bit arithmetic, truncated
        new = f"(cur {'+' if op == 'add' else '*'} (unsigned int)({B})u[t])"
    else:
        T = ctype(d)
        c = f"({T})({B})cur"
        new = f"(unsigned int)({B})({c} {'<' if op == 'min' else '>'} u[t] ? {c} : u[t])"
    return (
        f"unsigned int* a = (unsigned int*)((unsigned long long)&{tgt} & ~3ull);\n"
        f"    const unsigned int sh = (unsigned int)(((unsigned long long)&{tgt} & 3ull) * 8ull);\n"
        "    unsigned int old = *a, seen;\n    do {\n      seen = old;\n"
        f"      const unsigned int cur = (seen >> sh) & {mask};\n"
        f"      const unsigned int nw = {new} & {mask};\n"
        f"      old = atomicCAS(a, seen, (seen & ~({mask} << sh)) | (nw << sh));\n"
        f"    }} while (old != seen);  // {bits}-bit {op}"
    )


def _gather(params: dict, in_avals: list, out_avals: list, aux: dict, ins: list, outs: list, launch, alloc) -> list:  # noqa: ANN001
    """A general (windowed, batched) gather: one thread per output element; starts clamped, or in
    ``FILL_OR_DROP`` mode an out-of-range window reads the fill value (as the impl)."""
    dn = params["dimension_numbers"]
    sizes = tuple(params["slice_sizes"])
    D = tuple(in_avals[0].shape)
    I_shape = tuple(in_avals[1].shape)
    O = tuple(out_avals[0].shape)
    d = np.dtype(out_avals[0].dtype)
    T, IT = stype(d), ctype(in_avals[1].dtype)
    nd = len(D)
    n = math.prod(O)
    win = [k for k in range(nd) if k not in dn.collapsed_slice_dims and k not in dn.operand_batching_dims]
    if any(sizes[k] == 0 for k in range(nd) if k not in win):
        raise NotImplementedError("CUDA backend: gather with an empty collapsed slice")
    if not n:
        return alloc(0)
    nk = I_shape[-1]
    ostr = [math.prod(D[k + 1 :]) for k in range(nd)]
    lines = ["    long long r = t;"]
    for p in range(len(O) - 1, -1, -1):
        lines.append(f"    const long long o{p} = r % {O[p]}; r /= {O[p]};")
    bpos = [p for p in range(len(O)) if p not in dn.offset_dims]  # batch coordinates, in order
    bshape = I_shape[:-1]
    row = " + ".join(f"o{p} * {math.prod(bshape[j + 1 :])}" for j, p in enumerate(bpos)) or "0"
    lines.append(f"    const long long row = {row};")
    fill = bool(aux.get("fill_or_drop")) and bool(dn.start_index_map)
    oob = []
    for k in range(nd):
        if k in dn.start_index_map:
            c = list(dn.start_index_map).index(k)
            lines.append(f"    const long long raw{k} = (long long)idx[row * {nk} + {c}];")
            lines.append(f"    const long long st{k} = fj_imin(fj_imax(raw{k}, 0LL), {D[k] - sizes[k]}LL);")
            oob.append(f"raw{k} != st{k}")
        elif k in dn.operand_batching_dims:
            i = dn.start_indices_batching_dims[list(dn.operand_batching_dims).index(k)]
            lines.append(f"    const long long st{k} = o{bpos[i]};")
        else:
            lines.append(f"    const long long st{k} = 0;")
    terms = []
    for k in range(nd):
        w = f" + o{dn.offset_dims[win.index(k)]}" if k in win else ""
        terms.append(f"(st{k}{w}) * {ostr[k]}")
    off = " + ".join(terms) or "0"
    if fill:
        from fjax.backends.cuda.ops import const_expr  # noqa: PLC0415

        fv = np.asarray(aux["fill_value"]).astype(d)
        # a 16-bit float fill as its bits (the element type is unsigned short)
        fv = const_expr(fv.view(np.uint16).item(), np.uint16) if d in LOW_FLOATS else const_expr(fv.item(), d)
        lines.append(f"    o[t] = ({' || '.join(oob)}) ? {fv} : x[{off}];")
    else:
        lines.append(f"    o[t] = x[{off}];")
    blk = _block(n)
    src = (
        f"// gather: operand {list(D)}, indices {list(I_shape)}, slice sizes {list(sizes)} -> {list(O)}"
        f" ({'fill out-of-range windows' if fill else 'starts clamped'})\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const {T}* __restrict__ x, '
        f"const {IT}* __restrict__ idx, {T}* __restrict__ o) {{\n  {_loop(n, blk)} {{\n"
        + "\n".join(lines)
        + "\n  }\n}\n"
    )
    return alloc(0) + launch("op", src, n, blk, (ins[0], ins[1], outs[0]), "gather")


def _conv(params: dict, in_avals: list, out_avals: list, ins: list, outs: list, launch) -> list:  # noqa: ANN001
    """``conv_general_dilated`` as im2col + one GEMM (cuBLAS) + a layout kernel."""
    G, B = int(params["feature_group_count"]), int(params["batch_group_count"])
    lspec, rspec, ospec = (tuple(x) for x in params["dimension_numbers"])
    la, ra, oa = in_avals[0], in_avals[1], out_avals[0]
    dt = np.dtype(oa.dtype)
    low = dt in LOW_FLOATS and la.dtype == ra.dtype == dt  # moved as bits, multiplied by cuBLAS
    # complex64/128: the same copies and a complex GEMM (cuBLAS's C/Zgemm, operands not conjugated)
    cplx = dt.kind == "c" and la.dtype == ra.dtype == dt
    if dt not in (np.float32, np.float64) and not low and not cplx:
        raise NotImplementedError(
            f"CUDA backend: conv_general_dilated on dtype {dt.name} (float32/float64/complex64/complex128 only)"
        )
    T, LT, RT = stype(dt), stype(la.dtype), stype(ra.dtype)
    L, R, O_shape = tuple(la.shape), tuple(ra.shape), tuple(oa.shape)
    nsp = len(L) - 2
    N, C = L[lspec[0]], L[lspec[1]]
    S = [L[d] for d in lspec[2:]]
    OC = R[rspec[0]]
    K = [R[d] for d in rspec[2:]]
    So = [O_shape[d] for d in ospec[2:]]
    strides, pads = tuple(params["window_strides"]), tuple(tuple(p) for p in params["padding"])
    ld, rd = tuple(params["lhs_dilation"]), tuple(params["rhs_dilation"])
    nso, nk = math.prod(So), math.prod(K)
    # GEMM batch q = (batch group b, feature group g): rows (N / B images x output positions),
    # columns (C / G in features x window), Og = OC / (B G) out features each
    Q, Nb, Cg, Og = B * G, N // B, C // G, OC // (B * G)
    rows, cols = Nb * nso, Cg * nk
    n_out = math.prod(O_shape)
    recs = [Alloc(outs[0], O_shape, dt)]
    if not n_out:
        return recs
    lst = [math.prod(L[d + 1 :]) for d in range(len(L))]
    rst = [math.prod(R[d + 1 :]) for d in range(len(R))]
    ost = [math.prod(O_shape[d + 1 :]) for d in range(len(O_shape))]
    pn, wn, gn = f"{outs[0]}_patches", f"{outs[0]}_w", f"{outs[0]}_gemm"
    recs += [Alloc(pn, (Q, rows, cols), dt), Alloc(wn, (Q, Og, cols), dt)]

    def split(var: str, names: list, extents: list) -> list:
        out, r = [], var
        for j in range(len(names) - 1, -1, -1):
            out.append(f"    const long long {names[j]} = {r} % {extents[j]};")
            nxt = f"{var}_{j}"
            out.append(f"    const long long {nxt} = {r} / {extents[j]};")
            r = nxt
        return out

    # im2col: patches[g, (n, o...), (c, k...)] = the dilated, padded lhs at o * stride + k * rhs_dilation
    lines = [f"    const long long q = t / {rows * cols}, row = (t / {cols}) % {rows}, col = t % {cols};"]
    lines += split("row", ["nb"] + [f"o{i}" for i in range(nsp)], [Nb] + So)
    lines += split("col", ["cg"] + [f"k{i}" for i in range(nsp)], [Cg] + K)
    lines.append(f"    const long long n = (q / {G}) * {Nb} + nb, c = (q % {G}) * {Cg} + cg;")
    ok, src_terms = [], [f"n * {lst[lspec[0]]}", f"c * {lst[lspec[1]]}"]
    for i in range(nsp):
        lines.append(f"    const long long q{i} = o{i} * {strides[i]} + k{i} * {rd[i]} - ({pads[i][0]});")
        ok.append(f"q{i} >= 0 && q{i} <= {(S[i] - 1) * ld[i]}" + (f" && q{i} % {ld[i]} == 0" if ld[i] != 1 else ""))
        src_terms.append(f"(q{i} / {ld[i]}) * {lst[lspec[2 + i]]}" if ld[i] != 1 else f"q{i} * {lst[lspec[2 + i]]}")
    cond = " && ".join(ok) or "true"
    lines.append(f"    p[t] = ({cond}) ? ({T})x[{' + '.join(src_terms)}] : ({T})0;")
    blk = _block(Q * rows * cols)
    src = (
        f"// conv_general_dilated im2col: {Q} x {rows} x {cols} patches (strides {list(strides)}, padding {list(pads)},"
        f" lhs dilation {list(ld)}, rhs dilation {list(rd)})\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const {LT}* __restrict__ x, '
        f"{T}* __restrict__ p) {{\n  {_loop(Q * rows * cols, blk)} {{\n" + "\n".join(lines) + "\n  }\n}\n"
    )
    recs += launch("op", src, Q * rows * cols, blk, (ins[0], pn), "conv im2col") if rows * cols else []
    # weights as (groups, out features, in features x window)
    lines = [f"    const long long oc = t / {cols}, col = t % {cols};"]
    lines += split("col", ["cg"] + [f"k{i}" for i in range(nsp)], [Cg] + K)
    terms = [f"oc * {rst[rspec[0]]}", f"cg * {rst[rspec[1]]}"] + [f"k{i} * {rst[rspec[2 + i]]}" for i in range(nsp)]
    lines.append(f"    w[t] = ({T})r[{' + '.join(terms)}];")
    blk = _block(OC * cols)
    src = (
        f"// conv_general_dilated weights as ({Q}, {Og}, {cols})\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const {RT}* __restrict__ r, '
        f"{T}* __restrict__ w) {{\n  {_loop(OC * cols, blk)} {{\n" + "\n".join(lines) + "\n  }\n}\n"
    )
    recs += launch("op", src, OC * cols, blk, (ins[1], wn), "conv weights") if OC * cols else []
    if cols == 0:
        raise NotImplementedError("CUDA backend: conv_general_dilated with an empty window or no input features")
    compute = gemm_compute(params.get("precision"), dt)
    recs.append(
        MatMul(gn, pn, wn, (Q, rows, cols, Og), None, None, False, True, (Q, rows, Og), dt, "conv GEMM", compute)
    )
    # the product (n, o..., oc) in the output's dimension order
    lines = ["    long long r = t;"]
    for d in range(len(O_shape) - 1, -1, -1):
        lines.append(f"    const long long d{d} = r % {O_shape[d]}; r /= {O_shape[d]};")
    so_flat = " + ".join(f"d{ospec[2 + i]} * {math.prod(So[i + 1 :])}" for i in range(nsp)) or "0"
    row = f"d{ospec[0]} * {nso} + {so_flat}"
    lines.append(f"    const long long grp = d{ospec[1]} / {Og}, og = d{ospec[1]} % {Og};")
    lines.append(f"    o[t] = g[(grp * {rows} + {row}) * {Og} + og];")
    del ost
    blk = _block(n_out)
    src = (
        f"// conv_general_dilated: GEMM product -> output layout {list(O_shape)}\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const {T}* __restrict__ g, '
        f"{T}* __restrict__ o) {{\n  {_loop(n_out, blk)} {{\n" + "\n".join(lines) + "\n  }\n}\n"
    )
    return recs + launch("op", src, n_out, blk, (gn, outs[0]), "conv output layout")


SORT_TILE = 1024  # most elements of a line one block sorts in shared memory (a power of two)
_SORT_SHARED = 32768  # bytes of static shared memory the tile sort may use (of 48 KiB)


def _sort_less(kds: list) -> str:
    """The device function ``__NAME___lt(keys..., a, b)``: element ``a`` orders before element ``b``
    (offsets into the key arrays), lexicographic over the keys as the impl (``lax._sort_keys``): a
    float NaN after every number (NaNs equal each other), -0.0 equal to 0.0; complex keys by
    (real, imag), those with a NaN part last."""
    ps = "".join(f"const {stype(d)}* k{k}, " for k, d in enumerate(kds))
    body = []
    for k, d in enumerate(kds):
        t = ctype(d)
        body.append(f"  {{ const {t} u = {load_expr(d, f'k{k}[a]')}, v = {load_expr(d, f'k{k}[b]')};")
        if np.dtype(d).kind == "c":  # (real, imag), an element with a NaN part after every other
            body.append("    const bool un = u.re != u.re || u.im != u.im, vn = v.re != v.re || v.im != v.im;")
            body.append("    if (un != vn) return vn;")
            body.append("    if (!un) { if (u.re < v.re) return true; if (v.re < u.re) return false;")
            body.append("      if (u.im < v.im) return true; if (v.im < u.im) return false; } }")
        elif t in ("float", "double"):
            body.append("    const bool un = u != u, vn = v != v;")
            body.append("    if (un != vn) return vn;")
            body.append("    if (!un) { if (u < v) return true; if (v < u) return false; } }")
        else:
            body.append("    if (u < v) return true; if (v < u) return false; }")
    return (
        f"static __device__ __forceinline__ bool __NAME___lt({ps}long long a, long long b) {{\n"
        + "\n".join(body)
        + "\n  return false;\n}\n"
    )


def _merge_step(P: str, ind: str, lt) -> list:  # noqa: ANN001
    """One merge pass for the element at position ``i`` of a line of ``len`` (runs of width ``w``,
    a power of two, sorted in ``src``): it goes to its index in its own run plus the number of the
    partner run's elements ordered before it, found by binary search: those strictly less for an
    element of the left run (lower bound), those not greater for the right run (upper bound), so
    equal keys keep their input order. ``lt(a, b)`` renders the comparison of two positions."""
    return [
        f"{ind}const {P} s = i & ~(({P})2 * w - 1);",
        f"{ind}const {P} m = fj_imin(s + w, ({P})len), e = fj_imin(s + ({P})2 * w, ({P})len);",
        f"{ind}const int p = src[i];",
        f"{ind}const bool right = i >= m;",
        f"{ind}{P} lo = right ? s : m, hi = right ? m : e;",
        f"{ind}while (lo < hi) {{",
        f"{ind}  const {P} mid = (lo + hi) >> 1;",
        f"{ind}  const int q = src[mid];",
        f"{ind}  // left: q < p (lower bound); right: !(p < q), i.e. q <= p (upper bound)",
        f"{ind}  if ({lt('right ? p : q', 'right ? q : p')} != right) lo = mid + 1; else hi = mid;",
        f"{ind}}}",
        f"{ind}const {P} to = i + lo - m;",
    ]


def _sort(params: dict, in_avals: list, out_avals: list, ins: list, outs: list, launch) -> list:  # noqa: ANN001
    """A stable merge sort of every line along the axis, in O(n log^2 n) work and a number of
    launches fixed by the shape (so it runs inside a CUDA graph capture: no host synchronization).

    An int32 permutation per line is sorted instead of the operands: first one block per tile of
    ``T`` (<= ``SORT_TILE``) elements sorts it in shared memory (keys cached there), merging runs
    of width 1, 2, 4, ... between two shared index arrays; then one launch per run width T, 2T,
    ... < n merges pairs of runs between two global index buffers (ping-pong). The last step (the
    tile sort when a line fits one tile) gathers every operand through the permutation."""
    axis, nkeys = int(params["dimension"]), int(params["num_keys"])
    shape = tuple(in_avals[0].shape)
    n0, n, n2 = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
    recs = [Alloc(o, tuple(a.shape), np.dtype(a.dtype)) for o, a in zip(outs, out_avals)]
    total = n0 * n * n2
    if not total:
        return recs
    if n >= 1 << 31:
        raise NotImplementedError(f"CUDA backend: sort of lines of {n} elements (int32 permutations)")
    nlines = n0 * n2
    tys = [stype(a.dtype) for a in in_avals]
    kts = tys[:nkeys]
    kbytes = sum(np.dtype(a.dtype).itemsize for a in in_avals[:nkeys])
    T = 32
    while T < min(n, SORT_TILE):
        T *= 2
    while T > 32 and T * (8 + kbytes) > _SORT_SHARED:
        T //= 2
    cache = T * (8 + kbytes) <= _SORT_SHARED  # else (very many keys) the keys are read from global memory
    tpl = -(-n // T)  # tiles per line
    gather = tpl == 1
    less = _sort_less([np.dtype(a.dtype) for a in in_avals[:nkeys]])
    xs = [f"const {t}* __restrict__ x{m}" for m, t in enumerate(tys)]
    os_ = [f"{t}* __restrict__ o{m}" for m, t in enumerate(tys)]
    pa, pb = f"{outs[0]}_sortperm_a", f"{outs[0]}_sortperm_b"
    base = f"(line / {n2}) * {n * n2}LL + line % {n2}"

    # the tile sort: one block per tile (grid-stride over the tiles of every line)
    if cache:
        kargs = ", ".join(f"sk{k}" for k in range(nkeys))

        def lt_tile(a: str, b: str) -> str:
            return f"__NAME___lt({kargs}, {a}, {b})"

        load = [f"      sk{k}[i] = x{k}[base + (long long)(start + i) * {n2}];" for k in range(nkeys)]
    else:
        kargs = ", ".join(f"x{k}" for k in range(nkeys))

        def lt_tile(a: str, b: str) -> str:
            at = [f"base + (long long)(start + ({v})) * {n2}" for v in (a, b)]
            return f"__NAME___lt({kargs}, {at[0]}, {at[1]})"

        load = []
    if gather:
        fin = []
        for m in range(len(in_avals)):
            v = f"sk{m}[src[i]]" if cache and m < nkeys else f"x{m}[base + (long long)(start + src[i]) * {n2}]"
            fin.append(f"      o{m}[base + (long long)(start + i) * {n2}] = {v};")
        tail = os_
    else:
        fin = [f"      perm[line * {n}LL + start + i] = start + src[i];"]
        tail = ["int* __restrict__ perm"]
    src = (
        less + f"// sort along axis {axis} of {list(shape)} by {nkeys} key(s), stable: merge sort of tiles of {T} "
        f"in shared memory{' (keys cached there)' if cache else ''}"
        + (", then the operands gathered\n" if gather else ", each tile's permutation written out\n")
        + f'extern "C" __global__ void __launch_bounds__({T}) __NAME__({", ".join(xs + tail)}) {{\n'
        f"  __shared__ int pa[{T}];\n  __shared__ int pb[{T}];\n"
        + "".join(f"  __shared__ {kts[k]} sk{k}[{T}];\n" for k in range(nkeys) if cache)
        + "  const int i = threadIdx.x;\n"
        f"  for (long long tile = blockIdx.x; tile < {nlines * tpl}LL; tile += gridDim.x) {{\n"
        f"    const long long line = tile / {tpl};\n"
        f"    const int start = (int)(tile % {tpl}) * {T};\n"
        f"    const long long base = {base};\n"
        f"    const int len = fj_imin({n} - start, {T});\n"
        "    (void)base;\n"
        "    if (i < len) {\n      pa[i] = i;\n" + "\n".join(load) + "\n    }\n"
        "    __syncthreads();\n"
        "    int* src = pa;\n    int* dst = pb;\n"
        "    for (int w = 1; w < len; w <<= 1) {  // len is the same for the whole block\n"
        "      if (i < len) {\n"
        + "\n".join(_merge_step("int", "        ", lt_tile))
        + "\n        dst[to] = p;\n      }\n"
        "      __syncthreads();\n"
        "      int* t = src;\n      src = dst;\n      dst = t;\n    }\n"
        "    if (i < len) {\n" + "\n".join(fin) + "\n    }\n"
        "    __syncthreads();  // before the next tile overwrites shared memory\n  }\n}\n"
    )
    if not gather:
        recs += [Alloc(pa, (nlines * n,), np.dtype(np.int32)), Alloc(pb, (nlines * n,), np.dtype(np.int32))]
    recs += launch("op", src, nlines * tpl * T, T, (*ins, *(outs if gather else [pa])), f"sort: tiles of {T}")
    if gather:
        return recs

    # one merge pass per run width T, 2T, ... (< n): a runtime argument, so one kernel serves them all
    kargs = ", ".join(f"x{k}" for k in range(nkeys))

    def lt_global(a: str, b: str) -> str:
        return f"__NAME___lt({kargs}, base + (long long)({a}) * {n2}, base + (long long)({b}) * {n2})"

    moves = "\n".join(f"      o{m}[base + to * {n2}] = x{m}[base + (long long)p * {n2}];" for m in range(len(tys)))
    blk = _block(total)
    src = (
        less + f"// sort along axis {axis} of {list(shape)}: one merge pass over runs of width w (the last one "
        "gathers the operands through the permutation)\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const int* __restrict__ psrc, '
        f"int* __restrict__ pdst, const long long w, const int last, {', '.join(xs + os_)}) {{\n"
        f"  {_loop(total, blk)} {{\n"
        f"    const long long line = t / {n}, i = t % {n}, len = {n};\n"
        f"    const long long base = {base};\n"
        f"    const int* src = psrc + line * {n}LL;\n"
        + "\n".join(_merge_step("long long", "    ", lt_global))
        + f"\n    if (last) {{\n{moves}\n    }} else {{\n      pdst[line * {n}LL + to] = p;\n    }}\n  }}\n}}\n"
    )
    w, cur, nxt = T, pa, pb
    while w < n:
        last = 2 * w >= n
        args = (cur, nxt, np.int64(w), np.int32(last), *ins, *outs)
        recs += launch("op", src, total, blk, args, f"sort: merge runs of {w}" + (", gather" if last else ""))
        cur, nxt, w = nxt, cur, 2 * w
    return recs
