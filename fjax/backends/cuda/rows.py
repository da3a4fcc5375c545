"""Row fusion: loop nests of one kernel that work row by row over the same rows, as ONE launch
with a warp per row (the softmax / log-sum-exp / layer-norm pattern and their gradients).

A *row nest* has a domain ``R + C`` whose leading axes ``R`` are the rows: a reduction over all of
its trailing axes ``C`` (one output per row), an elementwise nest over ``R + C``, or an
elementwise nest over the rows alone (``R``, with trailing extent-1 axes allowed: the ``[256, 1]``
of a ``keepdims`` result). Consecutive row nests over the same rows, each reading what the earlier
ones wrote only inside its own row, are *phases* of one kernel: a warp takes a row, runs each
phase over it (lanes stride the phase's ``C``; a reduction ends in warp shuffles and lane 0 stores
the row's value) with ``__syncwarp()`` between phases, so a phase sees the stores of the earlier
ones (``__syncwarp`` orders memory among the warp's lanes). Buffers the kernel writes and reads are
passed without ``__restrict__``.

``schedule`` finds the groups: it walks a kernel's statements in order and keeps a group open
while later row nests can join it; statements that read what the group (or a statement held back
behind it) writes are held back until the group is launched, the others go before it, so the
order stays a valid schedule (buffers are written once). The loss of an MLP step (bias add and
row max, the exponentials' sum, the log, the loss terms and their gradient) becomes one launch
instead of five, and its mean (a reduction to a scalar and the division after it) one instead of
two. ``FJAX_CUDA_ROWS=0`` turns it off.
"""

from __future__ import annotations

import math
import os
from typing import Any

from fjax.backends import kernel_ir as ir
from fjax.backends.cuda.ops import combine_expr, ctype, ident_expr, store_expr, stype
from fjax.backends.cuda.render import (
    CudaKernel,
    NestLaunch,
    _body_lines,
    _const_lines,
    _cstrides,
    _final,
    _Names,
    _split_lines,
    _warp_reduce,
    describe,
)

ENABLED = os.environ.get("FJAX_CUDA_ROWS", "1") != "0"
MAX_COLS = 4096  # the most positions one phase loops over per row (a warp per row: 128 per lane)
# rows longer than SHORT_COLS fuse only when there are MANY_ROWS of them: a warp per row is then
# enough parallelism (8 rows of 4,000 keep their own launches, which split a row over blocks)
SHORT_COLS = 512
MANY_ROWS = 512
MAX_HELD = 16  # statements held back behind an open group before it is closed
_I32_LIMIT = (1 << 31) - (1 << 21)


def _strip(shape: tuple) -> tuple:
    s = list(shape)
    while s and s[-1] == 1:
        s.pop()
    return tuple(s)


class RowGroup:
    """Row nests over ``rows`` (the stripped row shape) launched as one kernel."""

    def __init__(self, rows: tuple):
        self.rows = rows
        self.nrows = math.prod(rows)
        self.nests: list[ir.LoopNest] = []
        self.prefix: list[int] = []  # per nest: how many leading axes of its domain are the rows
        self.written: set = set()  # root names of the buffers its nests write

    @property
    def fusable(self) -> bool:
        return len(self.nests) >= 2 and any(n.reductions for n in self.nests)


def _row_prefix(nest: ir.LoopNest) -> tuple[tuple, int] | None:
    """``(stripped rows, number of leading row axes)`` of a row nest, or None."""
    if nest.size == 0 or any(isinstance(s, ir.Load) and s.buf.dtype != s.dtype for s in nest.body):
        return None
    d = nest.domain
    if nest.reductions:
        red = tuple(sorted(nest.reduce_axes or ()))
        if not red or red != tuple(range(len(d) - len(red), len(d))):
            return None
        p = len(d) - len(red)
        if math.prod(d[p:]) > MAX_COLS:
            return None
        return _strip(d[:p]), p
    # an elementwise nest: over the rows alone, or rows + columns (decided by the group's rows)
    return _strip(d), len(d)


def _same_row(ld: ir.Load, nest: ir.LoopNest, p: int, nrows: int) -> bool:
    """``ld`` (of a buffer the group writes) reads, at every loop position, inside the row the
    position belongs to: the row axes of ``nest`` (its first ``p``) address the buffer's row
    blocks, the other axes stay inside one block."""
    size = math.prod(ld.buf.shape)
    if nrows == 0 or size % nrows:
        return False
    rs = size // nrows  # elements of one row of the buffer
    rowst = _cstrides(nest.domain[:p])
    bst = _cstrides(ld.buf.shape)
    seen: set = set()
    inner = 0
    for k, e in enumerate(ld.index):
        if e is None or ld.buf.shape[k] == 1:
            continue
        if isinstance(e, ir.Ix):
            if not (e.plain and not e.dyn and e.axis is not None and e.scale == 1 and e.offset == 0):
                return False
            a = e.axis
        else:
            a = e
        if a in seen:
            return False
        seen.add(a)
        if a < p:
            if bst[k] != rowst[a] * rs:
                return False
        else:
            inner += (nest.domain[a] - 1) * bst[k]
    if inner >= rs:
        return False
    return all(a in seen for a in range(p) if nest.domain[a] > 1)


def _reads(st: Any, root: dict) -> set:
    if isinstance(st, ir.LoopNest):
        return {root.get(x.buf.name, x.buf).name for x in st.body if isinstance(x, ir.Load)}
    if isinstance(st, ir.Reshape):
        return {root.get(st.src.name, st.src).name}
    if isinstance(st, ir.Dot):
        return {root.get(b.name, b).name for b in (st.lhs, st.rhs)}
    return set()


def _writes(st: Any) -> set:
    if isinstance(st, ir.LoopNest):
        return {b.name for b, _ in st.stores} | {r.out.name for r in st.reductions}
    if isinstance(st, ir.Reshape):
        return {st.out.name}
    if isinstance(st, ir.Dot):
        return {st.out.name}
    return set()


def _try_join(g: RowGroup, nest: ir.LoopNest, root: dict) -> bool:
    rp = _row_prefix(nest)
    if rp is None:
        return False
    rows, p = rp
    if not nest.reductions and rows != g.rows:
        # rows + columns: the rows are a prefix of the domain
        p = next((q for q in range(len(nest.domain) + 1) if _strip(nest.domain[:q]) == g.rows), None)
        if p is None or p == len(nest.domain) or math.prod(nest.domain[p:]) > MAX_COLS:
            return False
        # the longest such prefix: the column axes start at the first axis past the rows
        while p < len(nest.domain) and nest.domain[p] == 1 and _strip(nest.domain[: p + 1]) == g.rows:
            p += 1
    elif rows != g.rows:
        return False
    if math.prod(nest.domain[p:]) > SHORT_COLS and g.nrows < MANY_ROWS:
        return False
    linked = not g.nests  # the opening nest; the others read what the group writes
    for s in nest.body:
        if isinstance(s, ir.Load) and root.get(s.buf.name, s.buf).name in g.written:
            if not _same_row(s, nest, p, g.nrows):
                return False
            linked = True
    if not linked:
        # nothing to share: an independent nest keeps its own launch (or a horizontal group)
        return False
    g.nests.append(nest)
    g.prefix.append(p)
    g.written |= _writes(nest)
    return True


def schedule(stmts: list, root: dict) -> list:
    """``stmts`` reordered, with row groups (``RowGroup``, two or more nests, one a reduction) in
    place of the nests they fuse."""
    out: list = []
    queue = list(stmts)
    while queue:
        st = queue.pop(0)
        rp = _row_prefix(st) if isinstance(st, ir.LoopNest) and st.reductions else None
        if rp is None:
            out.append(st)
            continue
        g = RowGroup(rp[0])
        if not _try_join(g, st, root):
            out.append(st)
            continue
        held: list = []
        held_w: set = set()
        rest: list = []
        while queue:
            s = queue.pop(0)
            r = _reads(s, root)
            if isinstance(s, ir.LoopNest) and not (r & held_w) and _try_join(g, s, root):
                continue
            if r & (g.written | held_w):
                if not isinstance(s, (ir.LoopNest, ir.Reshape)) or len(held) >= MAX_HELD:
                    rest = [s, *queue]
                    queue = []
                    break
                held.append(s)
                held_w |= _writes(s)
            else:
                out.append(s)
        if g.fusable:
            out.append(g)
            queue = held + rest  # what was held back may start a group of its own
        else:
            # nothing to fuse: the opening nest goes out, the rest is looked at again in order
            order = {id(s): i for i, s in enumerate(stmts)}
            again = sorted(g.nests[1:] + held, key=lambda s: order[id(s)])
            out.append(g.nests[0])
            queue = again + rest
    return out


def local_buffers(g: RowGroup, stmts: list, outputs: list, root: dict) -> set:
    """Names of the group's reduction results that never leave it: not a kernel output, read by no
    statement outside the group, and inside it only by phases over the rows alone (run by lane 0,
    which holds the warp's sum). ``render_rows`` keeps them in a register: no buffer, no store."""
    outside: set = {root.get(b.name, b).name for b in outputs}
    for st in stmts:
        if st is not g:
            for n in st.nests if isinstance(st, RowGroup) else [st]:
                outside |= _reads(n, root)
    local = set()
    for i, n in enumerate(g.nests):
        for r in n.reductions:
            b = r.out
            if b.name in outside or b.dtype.kind not in "fiub" or b.dtype.itemsize < 4:
                continue
            if any(v.name == b.name for v in root.values()):
                continue  # (a view of it exists)
            readers = [(m, q) for m, q in zip(g.nests, g.prefix) if b.name in _reads(m, root)]
            if all(g.nests.index(m) > i and q == len(m.domain) for m, q in readers):
                local.add(b.name)
    return local


def render_rows(g: RowGroup, consts: dict, root: dict, local: frozenset = frozenset()) -> NestLaunch:
    """The group's one kernel: a warp per row, the nests as phases (see the module docstring).
    ``local`` (``local_buffers``): reduction results held in a register of lane 0, not stored."""
    names = _Names(consts, root)
    nrows = g.nrows
    big = max([nrows] + [n.size for n in g.nests] + [1])
    IDX = "int" if big < _I32_LIMIT else "long long"
    # buffers the kernel writes: stores and reductions, in order; loads of them use these names
    outs: list = []
    params: dict = {}
    regs: list = []  # (register, buffer) of the local results
    for n in g.nests:
        for b in [b for b, _ in n.stores] + [r.out for r in n.reductions]:
            if b.name in local:
                params[b.name] = (f"rv{len(regs)}", b)
                regs.append((f"rv{len(regs)}", b))
                continue
            params[b.name] = (f"y{len(outs)}", b)
            outs.append(b)
    phases: list = []
    for i, (n, p) in enumerate(zip(g.nests, g.prefix)):
        d = n.domain
        ncols = math.prod(d[p:])
        ind = "        "
        rsplit, rax = _split_lines("row", list(range(p)), d, IDX, "      ")
        csplit, cax = _split_lines("c", list(range(p, len(d))), d, IDX, ind)
        # loads of a local result read its register (lane 0 runs the phases that read one)
        held = {
            li: params[x.buf.name][0] for li, x in enumerate(n.body) if isinstance(x, ir.Load) and x.buf.name in local
        }
        body = _body_lines(n, names, IDX, {**rax, **cax}, ind, params, held)
        flat = f"row * {ncols} + c" if ncols != 1 else "row"
        stores = [f"{ind}{params[b.name][0]}[{flat}] = {store_expr(b.dtype, names.val(v))};" for b, v in n.stores]
        head = f"      // phase {i}: {describe(n)}"
        if n.reductions:
            accs = [f"acc{j}" for j in range(len(n.reductions))]
            phases += [
                "    {",
                head,
                *rsplit,
                *[
                    f"      {ctype(r.acc_dtype)} {a} = {ident_expr(r.kind, r.acc_dtype)};"
                    for r, a in zip(n.reductions, accs)
                ],
                f"      for ({IDX} c = lane; c < {ncols}; c += 32) {{",
                *csplit,
                *body,
                *stores,
                *[
                    f"{ind}{a} = {combine_expr(r.kind, a, f'({ctype(r.acc_dtype)}){names.val(r.value)}', r.acc_dtype)};"
                    for r, a in zip(n.reductions, accs)
                ],
                "      }",
                *[ln for r, a in zip(n.reductions, accs) for ln in _warp_reduce(r.kind, a, r.acc_dtype, "      ")],
                "      if (lane == 0) {",
                *[
                    f"        {params[r.out.name][0]} = {_final(r, a)};"
                    if r.out.name in local
                    else f"        {params[r.out.name][0]}[row] = {_final(r, a)};"
                    for r, a in zip(n.reductions, accs)
                ],
                "      }",
                "    }",
            ]
        elif ncols == 1:
            phases += [
                "    if (lane == 0) {",
                head,
                *rsplit,
                f"{ind}const {IDX} c = 0;",
                f"{ind}(void)c;",
                *csplit,
                *body,
                *stores,
                "    }",
            ]
        else:
            phases += [
                "    {",
                head,
                *rsplit,
                f"      for ({IDX} c = lane; c < {ncols}; c += 32) {{",
                *csplit,
                *body,
                *stores,
                "      }",
                "    }",
            ]
        if i + 1 < len(g.nests):
            phases.append("    __syncwarp();")
    # warps per block: enough blocks to spread small row counts over the multiprocessors
    wpb = 1
    while wpb < 8 and -(-nrows // wpb) > 128:
        wpb *= 2
    tpb = 32 * wpb
    written = {b.name for b in outs} | {b.name for _, b in regs}
    sig = [f"const {stype(b.dtype)}* __restrict__ {q}" for q, b in params.values() if b.name not in written]
    sig += [f"{stype(b.dtype)}* {params[b.name][0]}" for b in outs]
    src = [
        f"// {len(g.nests)} loop nests over the same {nrows} rows {list(g.rows)}: phases of one kernel, a warp a row",
        f'extern "C" __global__ void __launch_bounds__({tpb}) __NAME__({", ".join(sig)}) {{',
        *_const_lines(names, "  "),
        "  const int lane = threadIdx.x & 31;",
        f"  for ({IDX} row = ({IDX})blockIdx.x * {wpb} + (threadIdx.x >> 5); row < {nrows};"
        f" row += ({IDX})gridDim.x * {wpb}) {{",
        *[f"    {ctype(b.dtype)} {q} = 0;  // {b.name}: a reduction result kept in lane 0's register" for q, b in regs],
        *phases,
        "    __syncwarp();",
        "  }",
        "}",
        "",
    ]
    k = CudaKernel("row", "\n".join(src))
    args: list = [("in", b) for q, b in params.values() if b.name not in written]
    args += [("out", b) for b in outs]
    grid = max(1, min(-(-nrows // wpb), 65535))
    return NestLaunch(k, (grid, 1, 1), (tpb, 1, 1), args, [])
