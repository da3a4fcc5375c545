"""Matrix-vector products that join a row group (``rows.py``) instead of a GEMM launch of their own.

``x @ w`` with ``x`` a ``[rows, k]`` matrix (row-major, as every CUDA buffer) and ``w`` a vector is, row by row, a
reduction over the row's ``k`` products: a row nest. When the elementwise work after the product
reads it row by row, as in per-example gradients (``z = x @ w + b``, the loss's derivative at
``z``, then ``g_w = x * dz``: a cuBLAS gemv and two launches), the whole program is one
warp-per-row launch. ``convert`` turns every such ``Dot`` into its reduction nest before
``rows.schedule`` runs; ``restore`` puts back the ``Dot`` of each nest that did not join a group
(alone, a product stays on cuBLAS or ``skinny.py``).

The products are read as the dot's ``precision`` computes on a GPU (``records.gemm_compute``):
TF32 by default for float32, each operand rounded to nearest even on 10 mantissa bits (as
``skinny.py`` reads them), and sums in the output dtype, as cuBLAS's float32 compute; float64 in full.
``FJAX_CUDA_MATVEC_ROWS=0`` (read when a plan is built) keeps every product a GEMM.
"""

from __future__ import annotations

import os

import numpy as np

from fjax.backends import kernel_ir as ir
from fjax.backends.cuda import skinny
from fjax.backends.cuda.rows import MAX_COLS, RowGroup

__all__ = ["convert", "enabled", "restore"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def enabled() -> bool:
    """``FJAX_CUDA_MATVEC_ROWS``, read when a plan is built."""
    return os.environ.get("FJAX_CUDA_MATVEC_ROWS", "1") != "0"


def _nest(st: ir.Dot, compute: str) -> ir.LoopNest | None:
    """The reduction nest computing ``st`` (a matrix times a vector), or None when it is not one."""
    nb, nl, nk, nr = st.dims
    d = st.out.dtype
    if nb != 1 or nr != 1 or nl < 1 or not 1 <= nk <= MAX_COLS or st.lhs_perm is not None or st.lhs_t:
        return None
    if d not in _FLOATS or st.lhs.dtype != d or st.rhs.dtype != d:
        return None
    if st.lhs.shape != (nl, nk) or tuple(e for e in st.out.shape if e != 1) != ((nl,) if nl != 1 else ()):
        return None  # (an output [nl, 1] is written row by row as [nl] is)
    rshape = st.rhs.shape
    if rshape == (nk,):
        rix: tuple = (1,)
    elif rshape == (nk, 1):
        rix = (1, None)
    elif rshape == (1, nk):
        rix = (None, 1)
    else:
        return None
    n = ir.LoopNest(st.index, (nl, nk))
    n.reduce_axes = (1,)
    tag = f"mv{st.index}_"
    a, b = tag + "a", tag + "b"
    n.body += [ir.Load(a, st.lhs, (0, 1), d), ir.Load(b, st.rhs, rix, d)]
    drop = skinny.DROP.get(compute) if d == np.float32 else None
    if drop is not None:  # each operand as the compute mode reads it (ops.py: gemm_operand)
        for v in (a, b):
            n.body.append(ir.Op(v + "r", "gemm_operand", (v,), d, (d,), {"drop": drop}, f"{compute} operand"))
        a, b = a + "r", b + "r"
    n.body.append(ir.Op(tag + "p", "mul", (a, b), d, (d, d), {}, st.comment))
    n.reductions.append(ir.Reduction("sum", tag + "p", st.out, d, f"{st.comment} (a row reduction)"))
    return n


def convert(stmts: list, compute_of: object) -> tuple[list, dict]:
    """``stmts`` with each matrix-vector ``Dot`` replaced by its reduction nest, and the map from
    each nest (by id) back to its ``Dot``. ``compute_of(dot)`` is the dot's GPU compute mode."""
    out, back = [], {}
    for st in stmts:
        n = _nest(st, compute_of(st)) if isinstance(st, ir.Dot) else None  # type: ignore[operator]
        if n is None:
            out.append(st)
        else:
            back[id(n)] = st
            out.append(n)
    return out, back


def restore(scheduled: list, back: dict) -> list:
    """The scheduled statements with each converted nest that is not part of a ``RowGroup`` turned
    back into its ``Dot`` (in the same place: it reads and writes the same buffers)."""
    if not back:
        return scheduled
    return [back.get(id(s), s) if not isinstance(s, RowGroup) else s for s in scheduled]
