"""CUDA C renderer of ``kernel_ir`` loop nests: one ``extern "C" __global__`` kernel per fused loop
nest (two for a reduction split over several blocks), rendered through the op table
``fjax.backends.cuda.ops``.

- Elementwise nests: a grid-stride loop over the flattened domain; the loop index is split into
  per-axis indices by constant extents (the compiler turns the divisions into multiply-shifts), and
  every load's offset is computed from its buffer's C strides (broadcast, transpose, slice, pad,
  gather and concatenate are index arithmetic, as on the CPU). Nests of 64+ elements that read or
  write buffers at the flat loop position first run a vector path: ``lanes`` (4, or 2 with 8-byte
  elements) consecutive elements per thread, those buffers as float4/int4/double2/... when every
  one is aligned to its vector size (a run-time check of the pointers), the scalar loop finishing
  the tail (or doing everything when some view is misaligned).
- Reductions: one block per kept output element (grid-stride over them along ``gridDim.x``); the
  block's threads accumulate the reduced positions in a strided order, then combine with warp
  shuffles (``__shfl_down_sync``) and one shared-memory step across warps. When there are few
  outputs and many reduced positions the reduced range is also split over ``gridDim.y`` blocks
  that write partials, and a second kernel combines them in a fixed order: the result does not
  depend on timing (no floating-point atomics), so it is deterministic run to run.
- Extents are compile-time constants (kernels are specialized to shapes, as XLA's are); kernels
  are named by the hash of their text, so identical nests (the SGD update of every parameter)
  share one kernel, and sources of several programs concatenate into one translation unit.

Float32 sums and products accumulate in float64 (``Reduction.acc_dtype``), as on the CPU.
"""

from __future__ import annotations

import hashlib
import math
import os
from typing import Any

import numpy as np

from fjax.backends import kernel_ir as ir
from fjax.backends.cuda.ops import (
    combine_expr,
    const_expr,
    ctype,
    ident_expr,
    load_expr,
    render_op,
    store_expr,
    stype,
)

BLOCK = 256  # threads per block of elementwise kernels
# most blocks of a grid-stride elementwise launch: up to 268M threads, one vector (or element)
# each. Capping the grid at 4096 blocks (3.9 waves of resident blocks on an H200) ran `x * 2 + 1`
# over 64M floats at 96% of copy bandwidth; one vector per thread reaches 100% (bench/gpu_grid.py,
# H200, 2026-11-27: 140.6 -> 133.9 us). FJAX_CUDA_MAX_GRID overrides it.
MAX_GRID = int(os.environ.get("FJAX_CUDA_MAX_GRID", str(1 << 20)))
RED_BLOCK = 256  # threads per block of a reduction over many positions
MAX_SPLIT = 1024  # most blocks one output's reduced range is split over (second pass: partials)
SPLIT_MIN_OUTPUTS = 128  # with this many outputs every block has its own output: no split
# reductions keeping the innermost axis: 32 neighbouring outputs per block, coalesced
# (FJAX_CUDA_COLUMN_REDUCTIONS=0: one block per output, as every other reduction)
COLUMN_REDUCTIONS = os.environ.get("FJAX_CUDA_COLUMN_REDUCTIONS", "1") != "0"
COL_WARPS = 8  # warps of a column-reduction block, striding the reduced positions (up to 32)
_I32_LIMIT = (1 << 31) - (1 << 21)


def kernel_hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12]


class CudaKernel:
    """One ``__global__`` function: ``name``, its full definition ``src`` (guarded by the name, so
    definitions may repeat in a concatenated source), and ``kind`` (``ew``: elementwise, ``red``:
    reduction, ``fin``: second pass of a split reduction, ``op``: a primitive's kernel)."""

    __slots__ = ("name", "src", "kind")

    def __init__(self, kind: str, body: str):
        h = kernel_hash(body)
        self.kind = kind
        self.name = f"fj_{kind}_{h}"
        text = body.replace("__NAME__", self.name)
        guard = f"FJ_K_{h}_{kind}"
        self.src = f"#ifndef {guard}\n#define {guard}\n{text}#endif\n"


class NestLaunch:
    """How a plan runs one rendered kernel: grid/block, and the arguments as ``(role, Buf or
    (name, shape, dtype))`` with role ``in``, ``out`` or ``tmp`` (a partials buffer)."""

    __slots__ = ("kernel", "grid", "block", "args", "temps")

    def __init__(self, kernel: CudaKernel, grid: tuple, block: tuple, args: list, temps: list):
        self.kernel, self.grid, self.block, self.args, self.temps = kernel, grid, block, args, temps


def _cstrides(shape: tuple) -> tuple:
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= d
    return tuple(reversed(st))


def _pow2_at_least(n: int, lo: int, hi: int) -> int:
    p = lo
    while p < n and p < hi:
        p *= 2
    return p


class _Names:
    """C names of the nest's SSA values, constants and buffers."""

    def __init__(self, consts: dict, root: dict):
        self.consts = consts
        self.root = root  # buffer name -> the buffer whose memory it views (Reshape)
        self.used_consts: dict = {}

    def val(self, x: str) -> str:
        c = self.consts.get(x)
        if c is not None:
            self.used_consts[x] = c
        return x

    def buf(self, b: ir.Buf) -> ir.Buf:
        return self.root.get(b.name, b)


def _index_type(nest: ir.LoopNest, bufs: list, extra: int = 0) -> str:
    big = max([nest.size, extra] + [math.prod(b.shape) for b in bufs] + [1])
    return "int" if big < _I32_LIMIT else "long long"


def _offset(ld: ir.Load, names: _Names, IDX: str, ax: dict, lines: list, ind: str, li: int) -> tuple[str, list]:
    """The element offset of ``ld`` in its buffer, and its guard conditions (empty: unguarded)."""
    shape = ld.buf.shape
    strides = _cstrides(shape)
    terms, ok = [], []
    for k, e in enumerate(ld.index):
        if e is None:
            continue
        if not isinstance(e, ir.Ix):
            idx = ax[e]
        else:
            parts = []
            if e.axis is not None:
                parts.append(ax[e.axis] if e.scale == 1 else f"({IDX})({e.scale}) * {ax[e.axis]}")
            if e.offset or not parts:
                parts.append(f"({IDX})({e.offset})")
            for v, c, lo, hi in e.dyn:
                d = f"({IDX})fj_imin(fj_imax((long long)({names.val(v)}), {lo}LL), {hi}LL)"
                parts.append(d if c == 1 else f"({IDX})({c}) * {d}")
            raw = " + ".join(parts)
            if e.ext is None:
                idx = f"({raw})" if e.div == 1 else f"(({raw}) / {e.div})"
            else:
                q, cl = f"q{li}_{k}", f"cl{li}_{k}"
                lines.append(f"{ind}const {IDX} {q} = {raw};")
                lines.append(f"{ind}const {IDX} {cl} = fj_imin(fj_imax({q}, ({IDX})0), ({IDX}){(e.ext - 1) * e.div});")
                idx = cl if e.div == 1 else f"({cl} / {e.div})"
                ok.append(f"{cl} == {q}" + (f" && {cl} % {e.div} == 0" if e.div != 1 else ""))
        if strides[k] == 1:
            terms.append(idx)
        elif shape[k] != 1:
            terms.append(f"{idx} * {strides[k]}")
    return (" + ".join(terms) if terms else "0"), ok


def _body_lines(
    nest: ir.LoopNest, names: _Names, IDX: str, ax: dict, ind: str, params: dict, lane: dict | None = None
) -> list:
    """The nest's loads, ops and iotas in order (each an SSA ``const``); ``lane`` maps body
    positions of loads to the expression that holds their value (a lane of a vector load)."""
    lines: list = []
    for li, s in enumerate(nest.body):
        if isinstance(s, ir.Load):
            b = names.buf(s.buf)
            T = ctype(s.dtype)
            if s.buf.dtype != s.dtype:
                raise NotImplementedError(f"CUDA backend: a load of {s.buf} as {s.dtype}")
            p = params.setdefault(b.name, (f"p{len(params)}", b))[0]
            if lane and li in lane:
                lines.append(f"{ind}const {T} {s.out} = {lane[li]};")
                continue
            off, ok = _offset(s, names, IDX, ax, lines, ind, li)
            ld = load_expr(s.dtype, f"{p}[{off}]")
            if ok:
                fill = names.val(s.fill)
                lines.append(f"{ind}const {T} {s.out} = ({' && '.join(ok)}) ? {ld} : {fill};")
            else:
                lines.append(f"{ind}const {T} {s.out} = {ld};")
        elif isinstance(s, ir.Op):
            args = [names.val(a) for a in s.args]
            lines.append(
                f"{ind}const {ctype(s.dtype)} {s.out} = {render_op(args, s)};  // {s.op}{ir.params_text(s.params)}"
            )
        elif isinstance(s, ir.Iota):
            lines.append(f"{ind}const {ctype(s.dtype)} {s.out} = ({ctype(s.dtype)}){ax[s.axis]};  // iota")
        else:
            raise NotImplementedError(f"CUDA backend: loop-nest statement {type(s).__name__}")
    return lines


def _split_lines(var: str, axes: list, domain: tuple, IDX: str, ind: str) -> tuple[list, dict]:
    """``ix<a>`` for the ``axes`` (outermost first) from the flat index ``var`` over them."""
    lines, ax = [], {}
    if not axes:
        return lines, ax
    rem = var
    for j in range(len(axes) - 1, -1, -1):
        a = axes[j]
        if j == 0:
            lines.append(f"{ind}const {IDX} ix{a} = {rem};")
        else:
            lines.append(f"{ind}const {IDX} ix{a} = {rem} % {domain[a]};")
            nxt = f"q_{a}"
            lines.append(f"{ind}const {IDX} {nxt} = {rem} / {domain[a]};")
            rem = nxt
        ax[a] = f"ix{a}"
    return lines, ax


def _const_lines(names: _Names, ind: str) -> list:
    return [
        f"{ind}const {ctype(c.dtype)} {c.name} = {const_expr(c.value, c.dtype)};" for c in names.used_consts.values()
    ]


def _signature(params: dict, outs: list) -> str:
    ps = [f"const {stype(b.dtype)}* __restrict__ {p}" for p, b in params.values()]
    ps += [f"{stype(dt)}* __restrict__ {p}" for p, dt in outs]
    return ", ".join(ps)


def render_nest(nest: ir.LoopNest, consts: dict, root: dict) -> list[NestLaunch]:
    """The kernels and launches of one loop nest (empty when its domain is empty)."""
    if nest.size == 0 and not (nest.reductions and _kept_size(nest) > 0):
        return []
    if nest.reductions:
        return _render_reduction(nest, consts, root)
    return [_render_elementwise(nest, consts, root)]


def _kept_size(nest: ir.LoopNest) -> int:
    red = set(nest.reduce_axes or ())
    return math.prod(d for a, d in enumerate(nest.domain) if a not in red)


# vector types of 16 (or 8) bytes: (C type, lanes) -> (the CUDA vector type, its size = alignment)
_VEC = {
    ("float", 4): ("float4", 16),
    ("float", 2): ("float2", 8),
    ("int", 4): ("int4", 16),
    ("int", 2): ("int2", 8),
    ("unsigned int", 4): ("uint4", 16),
    ("unsigned int", 2): ("uint2", 8),
    ("double", 2): ("double2", 16),
    ("long long", 2): ("longlong2", 16),
    ("unsigned long long", 2): ("ulonglong2", 16),
}
_LANE = "xyzw"
VEC_MIN_SIZE = 64  # smaller nests keep the scalar loop only
VEC_MAX_STMTS = 64  # bodies longer than this are compute-bound: not replicated per lane


def _flat_load(s: ir.Load, domain: tuple) -> bool:
    """``s`` reads its buffer at the flat position of the loop index (same shape, every axis
    in order, unguarded): a contiguous run of lanes maps to a contiguous run of memory."""
    if tuple(s.buf.shape) != tuple(domain) or len(s.index) != len(domain):
        return False
    for k, e in enumerate(s.index):
        if domain[k] == 1:
            continue
        if isinstance(e, ir.Ix):
            if tuple(e) != tuple(ir.Ix(k)):
                return False
        elif e != k:
            return False
    return True


def _vector_plan(nest: ir.LoopNest) -> tuple[int, dict, dict] | None:
    """The lanes per thread of the vector path, the vector loads (body position -> vector type)
    and the vector stores (store index -> vector type); None when the nest keeps the scalar loop
    only. Buffers of other element sizes (bool, int8, ...) and non-flat loads (broadcasts,
    gathers) are read or written per lane inside the vector path."""
    if nest.size < VEC_MIN_SIZE or len(nest.body) > VEC_MAX_STMTS:
        return None
    flat = {
        li: stype(s.dtype) for li, s in enumerate(nest.body) if isinstance(s, ir.Load) and _flat_load(s, nest.domain)
    }
    st = {j: stype(b.dtype) for j, (b, _) in enumerate(nest.stores)}
    cand = [t for t in list(flat.values()) + list(st.values()) if (t, 4) in _VEC or (t, 2) in _VEC]
    if not cand:
        return None
    # 8-byte elements anywhere: 2 lanes (double2; 4-byte buffers then as float2), else 4
    lanes = 2 if any((t, 4) not in _VEC for t in cand) else 4
    vl = {li: _VEC[(t, lanes)] for li, t in flat.items() if (t, lanes) in _VEC}
    vs = {j: _VEC[(t, lanes)] for j, t in st.items() if (t, lanes) in _VEC}
    if not vl and not vs:
        return None
    return lanes, vl, vs


def _ew_block(nest: ir.LoopNest) -> int:
    """Threads per block of an elementwise nest (a warp multiple, at most ``BLOCK``)."""
    return min(BLOCK, max(32, -(-nest.size // 32) * 32))


def _render_elementwise(
    nest: ir.LoopNest, consts: dict, root: dict, block: int | None = None, segment: bool = False
) -> NestLaunch:
    """A grid-stride loop over the flat domain. With a vector plan (``_vector_plan``) each thread
    first takes ``lanes`` consecutive elements per step, loading and storing the flat buffers as
    float4/double2/... when every one of them is aligned to the vector's size (checked on the
    pointers at run time: a view at an odd offset, e.g. a scan's slice, takes the scalar loop for
    everything); the scalar loop then does the rest (the tail, or all when unaligned).

    ``segment``: the loop as a ``__device__`` function of the block index and grid size it is
    given (``fj_bx``, ``fj_gx``), one segment of a horizontally fused kernel (``render_group``)."""
    names = _Names(consts, root)
    n = len(nest.domain)
    N = nest.size
    bufs = [s.buf for s in nest.body if isinstance(s, ir.Load)] + [b for b, _ in nest.stores]
    IDX = _index_type(nest, bufs)
    ind = "    "
    split, ax = _split_lines("fi", list(range(n)), nest.domain, IDX, ind)
    params: dict = {}
    body = _body_lines(nest, names, IDX, ax, ind, params)
    outs = [(f"y{j}", b.dtype) for j, (b, _) in enumerate(nest.stores)]
    stores = [f"{ind}y{j}[fi] = {store_expr(b.dtype, names.val(v))};" for j, (b, v) in enumerate(nest.stores)]
    block = block or _ew_block(nest)
    vec = _vector_plan(nest)
    lanes = vec[0] if vec else 1
    threads = -(-N // lanes)  # one per vector (or element)
    grid = min(MAX_GRID, -(-threads // block))
    bx, gx = ("fj_bx", "fj_gx") if segment else ("blockIdx.x", "gridDim.x")
    tid = f"({IDX}){bx} * {block} + threadIdx.x"
    stride = f"({IDX}){block} * {gx}"
    vsrc: list = []
    first = "0"
    if vec:
        lanes, vl, vs = vec
        nv = N // lanes
        pname = {li: params[names.buf(nest.body[li].buf).name][0] for li in vl}
        al = [f"((unsigned long long)(const void*){pname[li]} & {t[1] - 1}ull)" for li, t in vl.items()]
        al += [f"((unsigned long long)(const void*)y{j} & {t[1] - 1}ull)" for j, t in vs.items()]
        seen: dict = {}
        vars_ = {}
        for li, (t, _) in vl.items():
            p = pname[li]
            if p not in seen:
                seen[p] = f"v_{p}"
                vsrc.append(f"    const {t} v_{p} = reinterpret_cast<const {t}*>({p})[fv];")
            vars_[li] = seen[p]
        res = []
        for j, (b, _) in enumerate(nest.stores):
            if j in vs:
                res.append(f"    {ctype(b.dtype)} {', '.join(f'r{j}_{c}' for c in range(lanes))};")
        lane_blocks = []
        for c in range(lanes):
            lsplit, lax_ = _split_lines("fi", list(range(n)), nest.domain, IDX, "      ")
            lbody = _body_lines(
                nest, names, IDX, lax_, "      ", params, {li: f"{v}.{_LANE[c]}" for li, v in vars_.items()}
            )
            lst = []
            for j, (b, v) in enumerate(nest.stores):
                val = names.val(v)
                lst.append(f"      r{j}_{c} = {val};" if j in vs else f"      y{j}[fi] = {store_expr(b.dtype, val)};")
            lane_blocks += [
                "    {",
                f"      const {IDX} fi = fv * {lanes} + {c};",
                "      (void)fi;",
                *lsplit,
                *lbody,
                *lst,
                "    }",
            ]
        vst = [
            f"    reinterpret_cast<{t}*>(y{j})[fv] = make_{t}({', '.join(f'r{j}_{c}' for c in range(lanes))});"
            for j, (t, _) in vs.items()
        ]
        vsrc = [
            f"  // vector path: {lanes} elements per thread and step when every flat buffer is aligned",
            f"  const bool fj_aligned = ({' | '.join(al)}) == 0;",
            f"  const {IDX} fj_nv = fj_aligned ? ({IDX}){nv} : ({IDX})0;",
            f"  for ({IDX} fv = {tid}; fv < fj_nv; fv += {stride}) {{",
            *vsrc,
            *res,
            *lane_blocks,
            *vst,
            "  }",
        ]
        first = f"fj_nv * {lanes}"
    sig = _signature(params, outs)
    head = (
        f"__device__ __forceinline__ void __NAME__({sig}, const unsigned fj_bx, const unsigned fj_gx) {{"
        if segment
        else f'extern "C" __global__ void __launch_bounds__({block}) __NAME__({sig}) {{'
    )
    src = [
        f"// elementwise loop nest over {list(nest.domain)}" + (" (a segment of a fused kernel)" if segment else ""),
        head,
        *_const_lines(names, "  "),
        *vsrc,
        f"  for ({IDX} fi = {first} + {tid}; fi < {N}; fi += {stride}) {{",
        *split,
        *body,
        *stores,
        "  }",
        "}",
        "",
    ]
    k = CudaKernel("seg" if segment else "ew", "\n".join(src))
    args = [("in", b) for _, b in params.values()] + [("out", b) for b, _ in nest.stores]
    return NestLaunch(k, (grid, 1, 1), (block, 1, 1), args, [])


# horizontal fusion: at most this many independent elementwise nests share one launch
GROUP_MAX = 8


def groupable(nest: ir.LoopNest) -> bool:
    """An elementwise nest with work (rendered as one grid-stride launch)."""
    return not nest.reductions and nest.size > 0


def render_group(nests: list, consts: dict, root: dict) -> NestLaunch:
    """Independent elementwise nests (none reads what another writes) as ONE launch: each nest's
    loop becomes a ``__device__`` segment, and the kernel's blocks are split between them (blocks
    ``[g0, g0 + g1)`` run segment 1 with block index ``blockIdx.x - g0`` in a grid of ``g1``), so
    the launch does exactly the work of the separate launches. One launch instead of several for
    e.g. the parameter updates ending a training step (CUDA-graph nodes or host launches saved)."""
    block = max(_ew_block(n) for n in nests)
    segs = [_render_elementwise(n, consts, root, block=block, segment=True) for n in nests]
    params, calls, defs = [], [], []
    first = 0
    for i, sg in enumerate(segs):
        names = []
        for j, (role, b) in enumerate(sg.args):
            q = "const " if role == "in" else ""
            params.append(f"{q}{stype(b.dtype)}* __restrict__ s{i}_{j}")
            names.append(f"s{i}_{j}")
        g = sg.grid[0]
        calls.append(
            f"  if (blockIdx.x < {first + g}u) {{ {sg.kernel.name}({', '.join(names)}, blockIdx.x - {first}u, {g}u);"
            " return; }"
        )
        defs.append(sg.kernel.src)
        first += g
    src = [
        *defs,
        f"// {len(segs)} independent elementwise nests in one launch (blocks split between them)",
        f'extern "C" __global__ void __launch_bounds__({block}) __NAME__({", ".join(params)}) {{',
        *calls,
        "}",
        "",
    ]
    k = CudaKernel("ew", "\n".join(src))
    args = [a for sg in segs for a in sg.args]
    return NestLaunch(k, (first, 1, 1), (block, 1, 1), args, [])


def _final(r: ir.Reduction, acc: str) -> str:
    """The stored value of reduction ``r``'s accumulator ``acc`` (cast, or rounded to 16 bits)."""
    return store_expr(r.out.dtype, f"({ctype(r.out.dtype)}){acc}")


def _warp_reduce(kind: str, acc: str, dt: np.dtype, ind: str) -> list:
    # the shuffle is its own statement: inside ``a && b`` a lane could skip it, and every lane of
    # the warp must take part in ``__shfl_down_sync(0xffffffff, ...)``
    return [
        f"{ind}for (int o = 16; o > 0; o >>= 1) {{",
        f"{ind}  const {ctype(dt)} other = fj_shfl_down({acc}, o);",
        f"{ind}  {acc} = {combine_expr(kind, acc, 'other', dt)};",
        f"{ind}}}",
    ]


def _block_reduce(reds: list, accs: list, nw: int, ind: str) -> list:
    """Warp shuffles, then one shared-memory step across the ``nw`` warps; thread 0 ends with the
    block's value in each accumulator."""
    lines = []
    for r, acc in zip(reds, accs):
        lines += _warp_reduce(r.kind, acc, r.acc_dtype, ind)
    if nw > 1:
        lines.append(f"{ind}if (lane == 0) {{")
        lines += [f"{ind}  sh{j}[warp] = {acc};" for j, acc in enumerate(accs)]
        lines.append(f"{ind}}}")
        lines.append(f"{ind}__syncthreads();")
        lines.append(f"{ind}if (warp == 0) {{")
        for j, (r, acc) in enumerate(zip(reds, accs)):
            lines.append(f"{ind}  {acc} = lane < {nw} ? sh{j}[lane] : {ident_expr(r.kind, r.acc_dtype)};")
            lines += _warp_reduce(r.kind, acc, r.acc_dtype, ind + "  ")
        lines.append(f"{ind}}}")
    return lines


def _render_reduction(nest: ir.LoopNest, consts: dict, root: dict) -> list[NestLaunch]:
    names = _Names(consts, root)
    n = len(nest.domain)
    red = tuple(sorted(nest.reduce_axes or ()))
    kept = [a for a in range(n) if a not in red]
    nk = math.prod(nest.domain[a] for a in kept)
    nr = math.prod(nest.domain[a] for a in red)
    reds = nest.reductions
    tpb = RED_BLOCK if nr >= RED_BLOCK else _pow2_at_least(nr, 32, RED_BLOCK)
    split = 1
    if nk < SPLIT_MIN_OUTPUTS and nr > 8 * tpb:
        split = max(1, min(MAX_SPLIT // max(nk, 1), -(-nr // (8 * tpb)), 65535))
    nw = tpb // 32
    bufs = [s.buf for s in nest.body if isinstance(s, ir.Load)] + [b for b, _ in nest.stores]
    IDX = _index_type(nest, bufs, nk * split)
    ind = "      "
    ksplit, kax = _split_lines("k", kept, nest.domain, IDX, "    ")
    rsplit, rax = _split_lines("r", list(red), nest.domain, IDX, ind)
    ax = {**kax, **rax}
    params: dict = {}
    body = _body_lines(nest, names, IDX, ax, ind, params)
    dstrides = _cstrides(nest.domain)
    full = " + ".join(
        f"ix{a} * {dstrides[a]}" if dstrides[a] != 1 else f"ix{a}" for a in range(n) if nest.domain[a] != 1
    )
    full = full or "0"
    stores = [f"{ind}y{j}[{full}] = {store_expr(b.dtype, names.val(v))};" for j, (b, v) in enumerate(nest.stores)]
    accs = [f"acc{j}" for j in range(len(reds))]
    accum = [
        f"{ind}{acc} = {combine_expr(r.kind, acc, f'({ctype(r.acc_dtype)}){names.val(r.value)}', r.acc_dtype)};"
        for r, acc in zip(reds, accs)
    ]
    outs = [(f"y{j}", b.dtype) for j, (b, _) in enumerate(nest.stores)]
    if split == 1:
        outs += [(f"z{j}", r.out.dtype) for j, r in enumerate(reds)]
        fin = [f"      z{j}[k] = {_final(r, acc)};" for j, (r, acc) in enumerate(zip(reds, accs))]
    else:
        outs += [(f"part{j}", r.acc_dtype) for j, r in enumerate(reds)]
        fin = [f"      part{j}[k * {split} + blockIdx.y] = {acc};" for j, acc in enumerate(accs)]
    if split == 1 and COLUMN_REDUCTIONS and kept and kept[-1] == n - 1 and nk >= 32 and nr >= 8:
        # the innermost axis is kept: 32 neighbouring outputs per block, one per lane, so every
        # load and store of a warp is one contiguous run (one thread per output would read a
        # column: a 32-byte sector per element)
        return [_render_columns(nest, names, reds, params, body, stores, accum, accs, outs, ksplit, rsplit, IDX)]
    grid_x = max(1, min(nk, 65535))
    src = [
        f"// reduction loop nest over {list(nest.domain)}, reduce axes {list(red)}: {nk} outputs x {nr} positions"
        + (f", each split over {split} blocks (partials)" if split > 1 else ""),
        f'extern "C" __global__ void __launch_bounds__({tpb}) __NAME__({_signature(params, outs)}) {{',
        *_const_lines(names, "  "),
        *[f"  __shared__ {ctype(r.acc_dtype)} sh{j}[{max(nw, 1)}];" for j, r in enumerate(reds)],
        "  const int lane = threadIdx.x & 31;",
        "  const int warp = threadIdx.x >> 5;",
        "  (void)lane; (void)warp;",
        f"  for ({IDX} k = blockIdx.x; k < {nk}; k += gridDim.x) {{",
        *ksplit,
        *[f"    {ctype(r.acc_dtype)} {acc} = {ident_expr(r.kind, r.acc_dtype)};" for r, acc in zip(reds, accs)],
        f"    for ({IDX} r = ({IDX})blockIdx.y * {tpb} + threadIdx.x; r < {nr}; r += ({IDX}){tpb} * gridDim.y) {{",
        *rsplit,
        *body,
        *stores,
        *accum,
        "    }",
        *_block_reduce(reds, accs, nw, "    "),
        "    if (threadIdx.x == 0) {",
        *fin,
        "    }",
        "    __syncthreads();",
        "  }",
        "}",
        "",
    ]
    k = CudaKernel("red", "\n".join(src))
    args: list = [("in", b) for _, b in params.values()] + [("out", b) for b, _ in nest.stores]
    temps = []
    if split == 1:
        args += [("out", r.out) for r in reds]
    else:
        for r in reds:
            t = (f"{r.out.name}_part", (nk * split,), r.acc_dtype)
            temps.append(t)
            args.append(("tmp", t))
    launches = [NestLaunch(k, (grid_x, split, 1), (tpb, 1, 1), args, temps)]
    if split > 1:
        launches.append(_render_finish(reds, nk, split, temps))
    return launches


def _render_columns(
    nest: ir.LoopNest, names: Any, reds: list, params: dict, body: list, stores: list, accum: list, accs: list,
    outs: list, ksplit: list, rsplit: list, IDX: str,
) -> NestLaunch:  # fmt: skip
    """A reduction whose outputs are contiguous in the innermost axis: block = 32 outputs (lanes)
    x ``COL_WARPS`` warps striding the reduced positions; the warps' partial values meet in shared
    memory and warp 0 combines them in warp order (a fixed order: deterministic)."""
    n = len(nest.domain)
    red = tuple(sorted(nest.reduce_axes or ()))
    nk = math.prod(nest.domain[a] for a in range(n) if a not in red)
    nr = math.prod(nest.domain[a] for a in red)
    # more warps over the positions when there are few blocks of outputs (the MLP's [256, 512] bias
    # gradients: 16 blocks), within 40 KB of shared memory for the warps' partial values
    nw = COL_WARPS
    while nw < 32 and -(-nk // 32) < 64 and nr >= 16 * nw:
        nw *= 2
    while nw > 1 and nw * 33 * sum(np.dtype(r.acc_dtype).itemsize for r in reds) > 40000:
        nw //= 2
    tpb = 32 * nw
    fin = [f"        z{j}[k] = {_final(r, acc)};" for j, (r, acc) in enumerate(zip(reds, accs))]
    src = [
        f"// reduction loop nest over {list(nest.domain)}, reduce axes {list(red)}: {nk} outputs x {nr} positions,"
        f" 32 neighbouring outputs per block x {nw} warps over the positions",
        f'extern "C" __global__ void __launch_bounds__({tpb}) __NAME__({_signature(params, outs)}) {{',
        *_const_lines(names, "  "),
        *[f"  __shared__ {ctype(r.acc_dtype)} sh{j}[{nw}][33];" for j, r in enumerate(reds)],
        "  const int lane = threadIdx.x & 31;",
        "  const int warp = threadIdx.x >> 5;",
        f"  for ({IDX} kb = ({IDX})blockIdx.x * 32; kb < {nk}; kb += ({IDX})gridDim.x * 32) {{",
        f"    const {IDX} k = kb + lane;",
        *[f"    {ctype(r.acc_dtype)} {acc} = {ident_expr(r.kind, r.acc_dtype)};" for r, acc in zip(reds, accs)],
        f"    if (k < {nk}) {{",
        *["  " + ln for ln in ksplit],
        f"      for ({IDX} r = warp; r < {nr}; r += {nw}) {{",
        *["  " + ln for ln in rsplit],
        *["  " + ln for ln in body],
        *["  " + ln for ln in stores],
        *["  " + ln for ln in accum],
        "      }",
        "    }",
        *[f"    sh{j}[warp][lane] = {acc};" for j, acc in enumerate(accs)],
        "    __syncthreads();",
        "    if (warp == 0) {",
        *[f"      {acc} = sh{j}[0][lane];" for j, acc in enumerate(accs)],
        f"      for (int w = 1; w < {nw}; ++w) {{",
        *[
            f"        {acc} = {combine_expr(r.kind, acc, f'sh{j}[w][lane]', r.acc_dtype)};"
            for j, (r, acc) in enumerate(zip(reds, accs))
        ],
        "      }",
        f"      if (k < {nk}) {{",
        *fin,
        "      }",
        "    }",
        "    __syncthreads();",
        "  }",
        "}",
        "",
    ]
    k = CudaKernel("red", "\n".join(src))
    args: list = [("in", b) for _, b in params.values()] + [("out", b) for b, _ in nest.stores]
    args += [("out", r.out) for r in reds]
    grid_x = max(1, min(-(-nk // 32), 65535))
    return NestLaunch(k, (grid_x, 1, 1), (tpb, 1, 1), args, [])


def _render_finish(reds: list, nk: int, split: int, temps: list) -> NestLaunch:
    """The second pass of a split reduction: each output's ``split`` partials in a fixed order."""
    tpb = _pow2_at_least(split, 32, RED_BLOCK)
    nw = tpb // 32
    IDX = "int" if nk * split < _I32_LIMIT else "long long"
    accs = [f"acc{j}" for j in range(len(reds))]
    ps = [f"const {ctype(r.acc_dtype)}* __restrict__ part{j}" for j, r in enumerate(reds)]
    ps += [f"{stype(r.out.dtype)}* __restrict__ z{j}" for j, r in enumerate(reds)]
    src = [
        f"// second pass: {nk} outputs x {split} partials",
        f'extern "C" __global__ void __launch_bounds__({tpb}) __NAME__({", ".join(ps)}) {{',
        *[f"  __shared__ {ctype(r.acc_dtype)} sh{j}[{nw}];" for j, r in enumerate(reds)],
        "  const int lane = threadIdx.x & 31;",
        "  const int warp = threadIdx.x >> 5;",
        "  (void)lane; (void)warp;",
        f"  for ({IDX} k = blockIdx.x; k < {nk}; k += gridDim.x) {{",
        *[f"    {ctype(r.acc_dtype)} {acc} = {ident_expr(r.kind, r.acc_dtype)};" for r, acc in zip(reds, accs)],
        f"    for (int g = threadIdx.x; g < {split}; g += {tpb}) {{",
        *[
            f"      {acc} = {combine_expr(r.kind, acc, f'part{j}[k * {split} + g]', r.acc_dtype)};"
            for j, (r, acc) in enumerate(zip(reds, accs))
        ],
        "    }",
        *_block_reduce(reds, accs, nw, "    "),
        "    if (threadIdx.x == 0) {",
        *[f"      z{j}[k] = {_final(r, acc)};" for j, (r, acc) in enumerate(zip(reds, accs))],
        "    }",
        "    __syncthreads();",
        "  }",
        "}",
        "",
    ]
    k = CudaKernel("fin", "\n".join(src))
    args: list = [("tmp", t) for t in temps] + [("out", r.out) for r in reds]
    return NestLaunch(k, (max(1, min(nk, 65535)), 1, 1), (tpb, 1, 1), args, [])


def describe(nest: ir.LoopNest) -> str:
    """A one-line summary of a nest for the launch-sequence comments."""
    red = f" reduce {list(nest.reduce_axes)}" if nest.reduce_axes else ""
    ops = [s.op for s in nest.body if isinstance(s, ir.Op)]
    shown = ", ".join(ops[:8]) + (f", ... ({len(ops)} ops)" if len(ops) > 8 else "")
    return f"nest over {list(nest.domain)}{red}: {shown}" if ops else f"nest over {list(nest.domain)}{red}"


def buffer_args(launch: NestLaunch) -> list[Any]:
    return launch.args
