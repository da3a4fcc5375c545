"""``dot_general`` the cuBLAS path does not take (``plan.py`` sends float and complex GEMMs there):
integer and bool products, and products whose operands are converted to another output dtype
(``preferred_element_type``, e.g. float32 operands with a complex64 product), as one kernel with
a thread per output element looping over the contraction. Operands are converted to the output
dtype first and the sum accumulates in it, as the CPU impl (numpy's ``matmul`` of the converted
operands: integers wrap around, a bool product is the OR of ANDs). Tried by ``host_ops.render``
(``_MORE``).

Not run on a GPU: checked on the CUDA emulator against the CPU and compiled by nvcc.
"""

from __future__ import annotations

import math

import numpy as np

from fjax.backends.cuda.kernel_util import _block, _loop
from fjax.backends.cuda.ops import LOW_FLOATS, ctype

__all__ = ["render"]


def render(  # noqa: ANN201
    name: str,
    params: dict,
    in_avals: list,
    out_avals: list,
    ins: list,
    outs: list,
    launch,
    alloc,  # noqa: ANN001
):
    """The launch computing ``dot_general`` into ``outs[0]``, or None for another primitive."""
    if name != "dot_general":
        return None
    la, ra, oa = in_avals[0], in_avals[1], out_avals[0]
    d = np.dtype(oa.dtype)
    for a in (la, ra, oa):
        dt = np.dtype(a.dtype)
        if dt in LOW_FLOATS or (dt.kind == "c" and d.kind != "c"):
            raise NotImplementedError(
                f"CUDA backend: dot_general of {np.dtype(la.dtype).name} x {np.dtype(ra.dtype).name} -> {d.name}"
            )
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    L, R, O = tuple(la.shape), tuple(ra.shape), tuple(oa.shape)
    lfree = [k for k in range(len(L)) if k not in lc and k not in lb]
    rfree = [k for k in range(len(R)) if k not in rc and k not in rb]
    lstr = [math.prod(L[k + 1 :]) for k in range(len(L))]
    rstr = [math.prod(R[k + 1 :]) for k in range(len(R))]
    n, nk = math.prod(O), math.prod(L[k] for k in lc)
    if not n:
        return alloc(0)
    T, LT, RT = ctype(d), ctype(la.dtype), ctype(ra.dtype)
    lines = ["    long long r = t;"]
    for p in range(len(O) - 1, -1, -1):
        lines.append(f"    const long long o{p} = r % {O[p]}LL; r /= {O[p]}LL;")
    nb, nlf = len(lb), len(lfree)
    lo = [f"o{i} * {lstr[k]}LL" for i, k in enumerate(lb)] + [f"o{nb + j} * {lstr[k]}LL" for j, k in enumerate(lfree)]
    ro = [f"o{i} * {rstr[k]}LL" for i, k in enumerate(rb)]
    ro += [f"o{nb + nlf + j} * {rstr[k]}LL" for j, k in enumerate(rfree)]
    lines.append(f"    const long long lo = {' + '.join(lo) or '0'}, ro = {' + '.join(ro) or '0'};")
    bool_out = d == np.bool_
    lines.append(f"    {T} acc = ({T})0;")
    lines.append(f"    for (long long k = 0; k < {nk}LL; ++k) {{")
    lines.append("      long long q = k, li = lo, ri = ro;")
    for i in range(len(lc) - 1, -1, -1):
        size = L[lc[i]]
        lines.append(f"      {{ const long long c = q % {size}LL; q /= {size}LL; ")
        lines.append(f"        li += c * {lstr[lc[i]]}LL; ri += c * {rstr[rc[i]]}LL; }}")
    x, y = f"({T})a[li]", f"({T})b[ri]"
    if d.kind == "c":  # complex products of operands converted to the output's complex type
        lines[lines.index(f"    {T} acc = ({T})0;")] = f"    {T} acc({T}(0, 0));"
        lines.append(f"      acc = fj_cadd(acc, fj_cmul({x}, {y}));")
    elif bool_out:
        lines.append(f"      acc = acc || ({x} && {y});")
    else:
        lines.append(f"      acc = ({T})(acc + ({T})({x} * {y}));")
    lines.append("    }")
    lines.append("    o[t] = acc;")
    blk = _block(n)
    src = (
        f"// dot_general {np.dtype(la.dtype).name}{list(L)} x {np.dtype(ra.dtype).name}{list(R)} -> {d.name}{list(O)}"
        f" (contracting {list(lc)}/{list(rc)}, batch {list(lb)}/{list(rb)}), accumulated in {d.name}\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const {LT}* __restrict__ a, '
        f"const {RT}* __restrict__ b, {T}* __restrict__ o) {{\n  {_loop(n, blk)} {{\n" + "\n".join(lines) + "\n  }\n}\n"
    )
    return alloc(0) + launch("op", src, n, blk, (ins[0], ins[1], outs[0]), "dot_general")
