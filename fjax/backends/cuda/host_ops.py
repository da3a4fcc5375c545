"""CUDA kernels for the steps that do not fuse into loop nests (the numba backend's host steps and
inline loop updates): each becomes launches in the plan, so its data never leaves the device.

- ``random_fma``: ``fmaf``/``fma`` (one rounding: bit-identical to the CPU impl, which emulates a
  correctly rounded fma);
- ``cumsum``/``cumprod``/``cummax``/``cummin``: one thread per line along the axis, the same
  sequential recurrence as numpy's ``accumulate`` (bit-identical, NaN propagating);
- ``argmax``/``argmin``: one thread per output, NaN counting as the extreme (first NaN wins);
- ``sort`` (any number of keys and operands, along any axis): each element's output position is
  its rank (elements ordered before it, plus equal ones earlier in the input), so the sort is stable
  with the impl's order (NaNs last, -0.0 equal to 0.0); O(n) work per element, one thread each;
- ``conv_general_dilated`` (feature and batch groups): an im2col kernel, the weights permuted to
  (groups, out features, in features x window), one (batched) cuBLAS GEMM, and a kernel writing the
  product in the output's dimension order;
- ``dynamic_update_slice``, ``scatter``, ``scatter-add`` (and mul/min/max on integers): a copy of the
  operand, then one thread per update element; additions use ``atomicAdd`` (float sums of colliding
  indices then depend on the order threads run: not bit-reproducible run to run).

Everything else raises ``NotImplementedError`` naming the primitive (FFT, complex dtypes,
linear algebra, ... have no CUDA form here).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fjax.backends.cuda.ops import ctype, utype
from fjax.backends.cuda.records import Alloc, Launch, MatMul
from fjax.backends.cuda.render import CudaKernel

_CUM = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min"}
# the host-step primitives rendered here as kernels
HOST_OPS = frozenset(
    {
        "random_fma",
        "random_bitcast",
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
}


def _grid(n: int, block: int) -> tuple:
    return (max(1, min(4096, -(-n // block))), 1, 1)


def _block(n: int) -> int:
    return 256 if n >= 256 else max(32, -(-n // 32) * 32)


def _loop(n: int, block: int) -> str:
    start = f"(long long)blockIdx.x * {block} + threadIdx.x"
    return f"for (long long t = {start}; t < {n}LL; t += (long long){block} * gridDim.x)"


def render(name: str, params: dict, in_avals: list, out_avals: list, aux: dict, ins: list, outs: list, b: Any) -> list:
    """Plan records computing the step ``name`` on device buffers ``ins`` into ``outs``."""

    def launch(kind: str, src: str, n: int, block: int, args: tuple, comment: str) -> list:
        k = b.module.add(CudaKernel(kind, src))
        return [Launch(k, _grid(n, block), (block, 1, 1), args, 0, comment)]

    def alloc(i: int) -> list:
        a = out_avals[i]
        return [Alloc(outs[i], tuple(a.shape), np.dtype(a.dtype))]

    for a in list(in_avals) + list(out_avals):
        try:
            ctype(a.dtype)
        except NotImplementedError:
            raise NotImplementedError(f"CUDA backend: primitive {name} on dtype {np.dtype(a.dtype).name}") from None

    # float functions of same-shaped (or 0-d) operands, one thread per output element
    if name in _FLOAT_CALLS:
        a = out_avals[0]
        d = np.dtype(a.dtype)
        if d not in (np.float32, np.float64):
            raise NotImplementedError(f"CUDA backend: {name} on {d.name}")
        fn, why = _FLOAT_CALLS[name]
        f = fn + "f" if d == np.float32 else fn
        T = ctype(d)
        n = math.prod(a.shape)
        blk = _block(n)
        names = [f"x{i}" for i in range(len(in_avals))]
        args = ", ".join(f"{v}[{'t' if tuple(x.shape) else '0'}]" for v, x in zip(names, in_avals))
        params_ = "".join(f"const {T}* __restrict__ {v}, " for v in names)
        src = (
            f"// {name}: {why} (CUDA's {f})\n"
            f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__({params_}{T}* __restrict__ o) {{\n'
            f"  {_loop(n, blk)}\n    o[t] = {f}({args});\n}}\n"
        )
        return alloc(0) + (launch("op", src, n, blk, (*ins, outs[0]), name) if n else [])

    if name in _CUM:
        a = in_avals[0]
        T = ctype(a.dtype)
        axis, reverse = int(params["axis"]), bool(params["reverse"])
        shape = tuple(a.shape)
        n0, n, n2 = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
        kind = _CUM[name]
        d = np.dtype(a.dtype)
        if kind in ("max", "min"):
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
        lines = n0 * n2
        blk = _block(lines)
        j = f"{n - 1} - jj" if reverse else "jj"
        src = (
            f"// {name} along axis {axis}{' (reverse)' if reverse else ''}: the sequential recurrence\n"
            f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__('
            f"const {T}* __restrict__ x, {T}* __restrict__ o) {{\n"
            f"  {_loop(lines, blk)} {{\n"
            f"    const long long i = t / {n2}, k = t % {n2};\n"
            f"    {T} acc = ({T})0;\n"
            f"    for (long long jj = 0; jj < {n}; ++jj) {{\n"
            f"      const long long p = (i * {n} + ({j})) * {n2} + k;\n"
            f"      const {T} v = x[p];\n"
            f"      acc = jj == 0 ? v : ({T})({comb});\n"
            f"      o[p] = acc;\n    }}\n  }}\n}}\n"
        )
        return alloc(0) + (launch("op", src, lines, blk, (ins[0], outs[0]), name) if lines and n else [])

    if name in ("argmax", "argmin"):
        a = in_avals[0]
        T = ctype(a.dtype)
        (axis,) = params["axes"]
        shape = tuple(a.shape)
        n0, n, n2 = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
        I = ctype(out_avals[0].dtype)  # noqa: E741
        d = np.dtype(a.dtype)
        better = ">" if name == "argmax" else "<"
        nan = "v != v" if d.kind == "f" else "false"
        lines = n0 * n2
        blk = _block(lines)
        src = (
            f"// {name} along axis {axis}: NaN is the extreme (first NaN wins)\n"
            f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__('
            f"const {T}* __restrict__ x, {I}* __restrict__ o) {{\n"
            f"  {_loop(lines, blk)} {{\n"
            f"    const long long i = t / {n2}, k = t % {n2};\n"
            f"    {T} best = x[i * {n} * {n2} + k];\n    long long bi = 0;\n"
            f"    if (!(best != best)) {{\n"
            f"      for (long long j = 1; j < {n}; ++j) {{\n"
            f"        const {T} v = x[(i * {n} + j) * {n2} + k];\n"
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
        S, Dt = ctype(src), ctype(dst)
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

    raise NotImplementedError(f"CUDA backend: no CUDA lowering for primitive {name} (a host step on the CPU backend)")


def _update(
    name: str, params: dict, in_avals: list, out_avals: list, aux: dict, ins: list, outs: list, b: Any, launch, alloc
) -> list:  # noqa: ANN001
    """An indexed update: the operand copied into the output, then one thread per update element."""
    a = out_avals[0]
    d = np.dtype(a.dtype)
    T = ctype(d)
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
    if getattr(dn, "operand_batching_dims", ()):
        raise NotImplementedError(f"CUDA backend: {name} with operand_batching_dims")
    I_shape = tuple(in_avals[1].shape)
    U_shape = tuple(in_avals[2].shape)
    win = list(dn.update_window_dims)
    body_dims = [k for k in range(nd) if k not in dn.inserted_window_dims]
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
    elif name == "scatter-add":
        if d.kind == "f" or d in (np.dtype(np.int32), np.dtype(np.uint32)):
            upd = f"atomicAdd(&{tgt}, u[t]);"
        elif d.itemsize == 8 and d.kind in "iu":
            upd = f"atomicAdd((unsigned long long*)&{tgt}, (unsigned long long)u[t]);"
        else:
            raise NotImplementedError(f"CUDA backend: scatter-add on dtype {d.name} (no atomicAdd)")
    else:
        op = name.split("-")[1]
        if d.kind == "f" or d == np.bool_:
            raise NotImplementedError(f"CUDA backend: {name} on dtype {d.name}")
        fn = {"mul": None, "min": "atomicMin", "max": "atomicMax"}[op]
        if fn is None or d.itemsize not in (4, 8):
            raise NotImplementedError(f"CUDA backend: {name} on dtype {d.name} (no atomic form)")
        upd = f"{fn}(&{tgt}, u[t]);"
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


def _gather(params: dict, in_avals: list, out_avals: list, aux: dict, ins: list, outs: list, launch, alloc) -> list:  # noqa: ANN001
    """A general (windowed, batched) gather: one thread per output element; starts clamped, or in
    ``FILL_OR_DROP`` mode an out-of-range window reads the fill value (as the impl)."""
    dn = params["dimension_numbers"]
    sizes = tuple(params["slice_sizes"])
    D = tuple(in_avals[0].shape)
    I_shape = tuple(in_avals[1].shape)
    O = tuple(out_avals[0].shape)
    d = np.dtype(out_avals[0].dtype)
    T, IT = ctype(d), ctype(in_avals[1].dtype)
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

        fv = const_expr(np.asarray(aux["fill_value"]).astype(d).item(), d)
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
    if dt.kind != "f":
        raise NotImplementedError(f"CUDA backend: conv_general_dilated on dtype {dt.name} (cuBLAS: floats)")
    T, LT, RT = ctype(dt), ctype(la.dtype), ctype(ra.dtype)
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
    recs.append(MatMul(gn, pn, wn, (Q, rows, cols, Og), None, None, False, True, (Q, rows, Og), dt, "conv GEMM"))
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


def _sort(params: dict, in_avals: list, out_avals: list, ins: list, outs: list, launch) -> list:  # noqa: ANN001
    """A stable sort by rank: element i of a line goes to #(elements before it in the order)."""
    axis, nkeys = int(params["dimension"]), int(params["num_keys"])
    shape = tuple(in_avals[0].shape)
    n0, n, n2 = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
    recs = [Alloc(o, tuple(a.shape), np.dtype(a.dtype)) for o, a in zip(outs, out_avals)]
    total = n0 * n * n2
    if not total:
        return recs
    cmp = []  # lexicographic over the keys: NaNs last, then by value
    for k in range(nkeys):
        fl = np.dtype(in_avals[k].dtype).kind == "f"
        a, b = f"x{k}[base + j * {n2}]", f"x{k}[base + i * {n2}]"
        cmp.append(f"        {{ const auto a = {a}; const auto b = {b};")
        if fl:
            cmp.append("          const bool an = a != a, bn = b != b;")
            cmp.append("          if (an != bn) { less = bn; goto done; }")
            cmp.append("          if (!an && a < b) { less = true; goto done; }")
            cmp.append("          if (!an && b < a) { less = false; goto done; }")
        else:
            cmp.append("          if (a < b) { less = true; goto done; }")
            cmp.append("          if (b < a) { less = false; goto done; }")
        cmp.append("        }")
    ps = [f"const {ctype(a.dtype)}* __restrict__ x{m}" for m, a in enumerate(in_avals)]
    ps += [f"{ctype(a.dtype)}* __restrict__ o{m}" for m, a in enumerate(out_avals)]
    moves = "\n".join(f"    o{m}[base + rank * {n2}] = x{m}[base + i * {n2}];" for m in range(len(in_avals)))
    blk = _block(total)
    src = (
        f"// sort along axis {axis} of {list(shape)} by {nkeys} key(s), stable: each element to its rank\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__({", ".join(ps)}) {{\n'
        f"  {_loop(total, blk)} {{\n"
        f"    const long long line = t / {n}, i = t % {n};\n"
        f"    const long long base = (line / {n2}) * {n * n2} + line % {n2};\n"
        f"    long long rank = 0;\n"
        f"    for (long long j = 0; j < {n}; ++j) {{\n"
        f"      bool less = j < i;  // equal keys: input order\n" + "\n".join(cmp) + "\n      done:\n"
        f"      rank += less ? 1 : 0;\n    }}\n"
        f"{moves}\n  }}\n}}\n"
    )
    return recs + launch("op", src, total, blk, (*ins, *outs), "sort")
