"""Structured control flow compiled as real loops and branches (the numba backend of ``scan``,
``while`` and ``cond``).

A control-flow equation whose sub-jaxprs lower completely (``lowering.control_unsupported_reason``)
becomes one ``numba.njit`` function, written to the kernel cache like every other kernel: its
bodies' loop nests are module-level kernels of that file and the loop itself is a plain ``for`` /
``while`` / ``if`` in the function, so a scan over 10,000 steps is one call, compiles in the time a
scan over 10 steps does, and never unrolls. Inside it:

- the carry lives in two buffers allocated once: each step reads the current one and writes its
  new value into the other, then the two swap (no allocation, and no hazard when a new carry value
  is a view of another carry, e.g. ``(a, b) -> (b, a)``);
- ``xs`` are read in place (``xs[t]`` is a view) and ``ys`` are written in place into arrays
  allocated before the loop;
- a ``cond`` writes the chosen branch's outputs into buffers allocated before the ``if``;
- every buffer of the loop function, nested loops' and branches' included, is allocated once at
  its start (``Hoist``), and then borrowed (``borrow``): numba counts no references in the loop;
- host callbacks in bodies are called through a small object-mode helper (``emit_callback``);
- GEMMs call the OpenBLAS that numpy's wheels bundle directly (``np.dot`` inside numba needs
  SciPy, which fjax does not depend on), or loop matmuls when that library is not found.

This module only emits source lines; ``program.ProgramSource`` renders the bodies.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Callable

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from fjax.backends.kernel_ir import ControlStep, Step

_mm = dict(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})

# ---------------------------------------------------------------------------------------------
# views: ``as_shape(a, shape)`` is ``a.reshape(shape)`` for a C-contiguous ``a`` whose size is known to
# match (the generator knows every shape statically). numba's reshape calls a C helper (about 30 ns
# here, several per loop step); this builds the view's struct directly (under 1 ns).


@intrinsic
def as_shape(typingctx, arr, shape):  # noqa: ANN001, ANN201, ARG001
    if not isinstance(arr, types.Array) or not isinstance(shape, types.BaseTuple):
        return None
    if arr.layout != "C":
        raise TypeError(f"fjax: view of a non-contiguous array ({arr})")
    retty = arr.copy(ndim=len(shape), layout="C")

    def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202
        ary = make_array(sig.args[0])(context, builder, args[0])
        ret = make_array(retty)(context, builder)
        vals = cgutils.unpack_tuple(builder, args[1])
        dims = [context.cast(builder, v, t, types.intp) for v, t in zip(vals, sig.args[1])]
        strides, acc = [], ary.itemsize
        for d in reversed(dims):
            strides.append(acc)
            acc = builder.mul(acc, d)
        populate_array(
            ret,
            data=ary.data,
            shape=dims,
            strides=strides[::-1],
            itemsize=ary.itemsize,
            meminfo=ary.meminfo,
            parent=ary.parent,
        )
        return impl_ret_borrowed(context, builder, retty, ret._getvalue())

    return retty(arr, shape), codegen


@intrinsic
def borrow(typingctx, arr):  # noqa: ANN001, ANN201, ARG001
    """``arr`` without its owner (meminfo and parent null): numba's reference counting skips it.
    A compiled loop function borrows its arguments and every buffer it allocates before the loop
    (``keep_alive`` holds the owners to the end): each array variable of a loop body otherwise costs
    an atomic increment and decrement per use, which was 70% of a 1000-step diffrax Tsit5 solve
    (1.0 ms; 0.27 ms borrowed). Views of a borrowed array are borrowed too."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202
        ary = make_array(sig.args[0])(context, builder, args[0])
        ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
        ary.parent = cgutils.get_null_value(ary.parent.type)
        return ary._getvalue()

    return arr(arr), codegen


@intrinsic
def keep_alive(typingctx, owners):  # noqa: ANN001, ANN201, ARG001
    """No code: a use of ``owners`` (a tuple of arrays) that keeps them alive up to this point."""

    def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202
        return context.get_dummy_value()

    return types.none(owners), codegen


@njit(cache=True, nogil=True)
def copy_into(dst, src):  # noqa: ANN001, ANN201
    """``dst[...] = src`` for C-contiguous arrays of one size. numba's generic setitem emits a
    strided broadcasting copy per call site; with a dozen ``ys[t] = y`` in a loop body that
    tripled the loop's compile time (5.1 s against 1.9 s for an LSTM cell)."""
    d = as_shape(dst, (dst.size,))
    s = as_shape(src, (src.size,))
    for i in range(d.size):
        d[i] = s[i]


# ---------------------------------------------------------------------------------------------
# GEMMs inside compiled loops: o = a @ b with a as (nl, nk) or, ``t``, (nk, nl) and b as (nk, nr)
# or (nr, nk). Loop orders keep the innermost loop contiguous; only the reductions over k may be
# reassociated (fastmath "reassoc" allows vectorizing them, as BLAS does).


@njit(**_mm)
def mm_nn(a, b, o):  # noqa: ANN001, ANN201
    # k unrolled by 8: each pass over the output row adds 8 rank-1 terms (the row is loaded and
    # stored an eighth as often; measured 2-3x faster than the plain i-k-j loop for 1x64 @ 64x64)
    nl, nk = a.shape
    nr = b.shape[1]
    k8 = nk - nk % 8
    for i in range(nl):
        for j in range(nr):
            o[i, j] = 0
        for k in range(0, k8, 8):
            a0, a1, a2, a3 = a[i, k], a[i, k + 1], a[i, k + 2], a[i, k + 3]
            a4, a5, a6, a7 = a[i, k + 4], a[i, k + 5], a[i, k + 6], a[i, k + 7]
            for j in range(nr):
                o[i, j] += ((a0 * b[k, j] + a1 * b[k + 1, j]) + (a2 * b[k + 2, j] + a3 * b[k + 3, j])) + (
                    (a4 * b[k + 4, j] + a5 * b[k + 5, j]) + (a6 * b[k + 6, j] + a7 * b[k + 7, j])
                )
        for k in range(k8, nk):
            aik = a[i, k]
            for j in range(nr):
                o[i, j] += aik * b[k, j]


@njit(**_mm)
def mm_nt(a, b, o):  # noqa: ANN001, ANN201
    nl, nk = a.shape
    nr = b.shape[0]
    for i in range(nl):
        for j in range(nr):
            acc = o.dtype.type(0)
            for k in range(nk):
                acc += a[i, k] * b[j, k]
            o[i, j] = acc


@njit(**_mm)
def mm_tn(a, b, o):  # noqa: ANN001, ANN201
    nk, nl = a.shape
    nr = b.shape[1]
    k4 = nk - nk % 4
    for i in range(nl):
        for j in range(nr):
            o[i, j] = 0
        for k in range(0, k4, 4):
            a0, a1, a2, a3 = a[k, i], a[k + 1, i], a[k + 2, i], a[k + 3, i]
            for j in range(nr):
                o[i, j] += (a0 * b[k, j] + a1 * b[k + 1, j]) + (a2 * b[k + 2, j] + a3 * b[k + 3, j])
        for k in range(k4, nk):
            aki = a[k, i]
            for j in range(nr):
                o[i, j] += aki * b[k, j]


@njit(**_mm)
def mm_tt(a, b, o):  # noqa: ANN001, ANN201
    nk, nl = a.shape
    nr = b.shape[0]
    for i in range(nl):
        for j in range(nr):
            acc = o.dtype.type(0)
            for k in range(nk):
                acc += a[k, i] * b[j, k]
            o[i, j] = acc


# BLAS: numpy's wheels bundle OpenBLAS (ILP64, symbols ``scipy_cblas_?gemm64_``). Its gemm is
# registered with LLVM under a fixed name and called as an external function, so compiled loops
# reference it by name (numba's disk cache stays valid across processes; the address is registered
# again at every import). Without it the loop matmuls above are used.


def _register_blas() -> str | None:
    try:
        import ctypes  # noqa: PLC0415
        import glob  # noqa: PLC0415
        import os  # noqa: PLC0415

        import llvmlite.binding as llvm  # noqa: PLC0415

        d = os.path.dirname(np.__file__)
        for path in sorted(glob.glob(os.path.join(d, "..", "numpy.libs", "libscipy_openblas64_*"))):
            lib = ctypes.CDLL(path)
            s, dd = lib.scipy_cblas_sgemm64_, lib.scipy_cblas_dgemm64_
            llvm.add_symbol("fjax_sgemm64", ctypes.cast(s, ctypes.c_void_p).value)
            llvm.add_symbol("fjax_dgemm64", ctypes.cast(dd, ctypes.c_void_p).value)
            return os.path.basename(path)
    except (OSError, AttributeError, ImportError):
        pass
    return None


BLAS = _register_blas()  # the library's file name, or None
# GEMMs of at most this many multiply-adds run as loops even with BLAS: in bench/bench_scan.py the
# RNN's forward step (1x64 @ 64x64 and 1x16 @ 16x64) took 0.23 us with loops, 0.38 us with OpenBLAS
SMALL_GEMM = 8192

_i32, _i64, _vp = types.int32, types.int64, types.voidptr


def _gemm_sig(t: types.Type) -> types.Type:
    # cblas_?gemm(layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc), 64-bit ints
    return types.void(_i32, _i32, _i32, _i64, _i64, _i64, t, _vp, _i64, _vp, _i64, t, _vp, _i64)


_sgemm = types.ExternalFunction("fjax_sgemm64", _gemm_sig(types.float32))
_dgemm = types.ExternalFunction("fjax_dgemm64", _gemm_sig(types.float64))


@njit(cache=True, nogil=True)
def _gemm(a, b, o, ta, tb):  # noqa: ANN001, ANN201
    """o = op(a) @ op(b), row-major, a and b as stored (C-contiguous 2-D)."""
    m, n = o.shape
    k = a.shape[0] if ta else a.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:
        o[...] = 0
        return
    t_a, t_b = (112 if ta else 111), (112 if tb else 111)
    lda, ldb, ldc = max(1, a.shape[1]), max(1, b.shape[1]), max(1, n)
    if o.itemsize == 4:  # float32 (dot_general lowers only float32/float64 here)
        _sgemm(101, t_a, t_b, m, n, k, np.float32(1), a.ctypes, lda, b.ctypes, ldb, np.float32(0), o.ctypes, ldc)
    else:
        _dgemm(101, t_a, t_b, m, n, k, 1.0, a.ctypes, lda, b.ctypes, ldb, 0.0, o.ctypes, ldc)


@njit(cache=True, nogil=True)
def gemm_nn(a, b, o):  # noqa: ANN001, ANN201
    _gemm(a, b, o, False, False)


@njit(cache=True, nogil=True)
def gemm_nt(a, b, o):  # noqa: ANN001, ANN201
    _gemm(a, b, o, False, True)


@njit(cache=True, nogil=True)
def gemm_tn(a, b, o):  # noqa: ANN001, ANN201
    _gemm(a, b, o, True, False)


@njit(cache=True, nogil=True)
def gemm_tt(a, b, o):  # noqa: ANN001, ANN201
    _gemm(a, b, o, True, True)


@njit(**_mm)
def bmm_nn(a, b, o):  # noqa: ANN001, ANN201
    for n in range(o.shape[0]):
        mm_nn(a[n], b[n], o[n])


@njit(**_mm)
def bmm_nt(a, b, o):  # noqa: ANN001, ANN201
    for n in range(o.shape[0]):
        mm_nt(a[n], b[n], o[n])


@njit(**_mm)
def bmm_tn(a, b, o):  # noqa: ANN001, ANN201
    for n in range(o.shape[0]):
        mm_tn(a[n], b[n], o[n])


@njit(**_mm)
def bmm_tt(a, b, o):  # noqa: ANN001, ANN201
    for n in range(o.shape[0]):
        mm_tt(a[n], b[n], o[n])


@njit(cache=True, nogil=True)
def bgemm_nn(a, b, o):  # noqa: ANN001, ANN201
    for n in range(o.shape[0]):
        gemm_nn(a[n], b[n], o[n])


@njit(cache=True, nogil=True)
def bgemm_nt(a, b, o):  # noqa: ANN001, ANN201
    for n in range(o.shape[0]):
        gemm_nt(a[n], b[n], o[n])


@njit(cache=True, nogil=True)
def bgemm_tn(a, b, o):  # noqa: ANN001, ANN201
    for n in range(o.shape[0]):
        gemm_tn(a[n], b[n], o[n])


@njit(cache=True, nogil=True)
def bgemm_tt(a, b, o):  # noqa: ANN001, ANN201
    for n in range(o.shape[0]):
        gemm_tt(a[n], b[n], o[n])


def gemm_name(nb: int, nl: int, nk: int, nr: int, lhs_t: bool, rhs_t: bool, blas: bool = True) -> str:
    """The function a compiled loop calls for this GEMM: BLAS, or loops when it is small (or no
    BLAS was found, or ``blas`` is False: complex GEMMs, which ``_gemm`` does not call)."""
    tt = ("t" if lhs_t else "n") + ("t" if rhs_t else "n")
    kind = "gemm" if blas and BLAS and nl * nk * nr > SMALL_GEMM else "mm"
    return ("b" if nb != 1 else "") + kind + "_" + tt


# ---------------------------------------------------------------------------------------------
# emitting the loops

# (body program, input names, target buffer per output or None) ->
#     (allocations to hoist before the loop, lines, output names, indices of outputs written to targets)
Child = Callable[..., tuple]


def _indent(lines: list) -> list:
    return ["    " + ln for ln in lines] if lines else ["    pass"]


class Hoist(str):
    """An allocation line (``np.empty`` of a static shape) that may move before the enclosing
    compiled loop: every iteration reuses the buffer. The loops, branches and bodies emitted here
    keep such lines at their top level, so a loop nested in a loop body (diffrax's Runge-Kutta
    stages inside its step loop) allocates nothing per outer step: numba's ``np.empty`` costs
    ~40 ns, and 30 of them per step were most of a 1000-step Tsit5 solve."""


def _alloc(name: str, shape: tuple, dtype: np.dtype) -> Hoist:
    return Hoist(f"{name} = np.empty({tuple(shape)!r}, np.{np.dtype(dtype).name})")


def _carry(ins: list, avals: list, fresh: Callable[[str], str]) -> tuple[list, list, list]:
    """Two buffers per carry (current, next), the current one filled with the initial value. They
    are named ``c<k>`` and ``n<k>`` with one ``k`` (nothing else takes those prefixes): after the
    loop a carry is in one of the two (``buffer_pair``)."""
    cur, nxt, lines = [], [], []
    for a, av in zip(ins, avals):
        c, n = fresh("c"), fresh("n")
        lines += [_alloc(c, av.shape, av.dtype), _alloc(n, av.shape, av.dtype), f"lp.copy_into({c}, {a})"]
        cur.append(c)
        nxt.append(n)
    return cur, nxt, lines


def buffer_pair(name: str) -> tuple[str, ...]:
    """The buffers a loop output named ``name`` may be in: both of a carry's (``_carry``), else itself."""
    if name[:1] == "c" and name[1:].isdigit():
        return name, "n" + name[1:]
    return (name,)


@njit(cache=True, nogil=True)
def pick(v, a, b):  # noqa: ANN001, ANN201
    """``a`` if ``v`` (a borrowed view of ``a`` or ``b``) points at ``a``'s data, else ``b``: the
    owned buffer a loop function returns for a carry that ended in either of its two buffers."""
    return a if v.ctypes.data == a.ctypes.data else b


def emit(step: ControlStep, ins: list, fresh: Callable[[str], str], child: Child) -> tuple[list, list]:
    """Source lines evaluating the control-flow ``step`` on the arrays named ``ins``, and the names
    of its outputs."""
    name, bodies = step.kind, step.bodies
    if name == "scan":
        return _emit_scan(step, bodies["body"], ins, fresh, child)
    if name == "while":
        return _emit_while(step, bodies["cond"], bodies["body"], ins, fresh, child)
    if name == "cond":
        return _emit_cond(step, [bodies[f"branch{i}"] for i in range(len(bodies))], ins, fresh, child)
    raise NotImplementedError(f"fjax.jit: no compiled loop form for primitive {name}")


def _swapped(cur: list, nxt: list, inplace: set) -> tuple[list, list]:
    """The carries to swap: all but those updated in place."""
    keep = [k for k in range(len(cur)) if k not in inplace]
    return [cur[k] for k in keep], [nxt[k] for k in keep]


def _swap(cur: list, nxt: list) -> list:
    """Rebind current <-> next (the new carry becomes current; the old buffer is reused)."""
    if not cur:
        return []
    tmp = [c + "_" for c in cur]
    return [
        f"{', '.join(tmp)}, = {', '.join(cur)},",
        f"{', '.join(cur)}, = {', '.join(nxt)},",
        f"{', '.join(nxt)}, = {', '.join(tmp)},",
    ]


def _emit_scan(step: Step, body, ins: list, fresh, child) -> tuple[list, list]:  # noqa: ANN001
    p = step.params
    nc, nk, T, rev = p["num_consts"], p["num_carry"], p["length"], p["reverse"]
    consts, inits, xs = ins[:nc], ins[nc : nc + nk], ins[nc + nk :]
    # per-iteration slices: the stacked inputs/outputs without their leading (time) axis
    x_avals = [a.update(shape=a.shape[1:]) for a in step.in_avals[nc + nk :]]
    y_avals = [a.update(shape=a.shape[1:]) for a in step.out_avals[nk:]]
    cur, nxt, lines = _carry(inits, step.in_avals[nc : nc + nk], fresh)
    ys = []
    for a in y_avals:
        y = fresh("ys")
        lines.append(_alloc(y, (T, *a.shape), a.dtype))
        ys.append(y)
    it, t = fresh("i"), fresh("t")
    body_lines = [f"{t} = {T - 1} - {it}" if rev else f"{t} = {it}"]
    xn = []
    for x, a in zip(xs, x_avals):
        v = fresh("x")
        body_lines.append(f"{v} = lp.as_shape({x}[{t}:{t} + 1], ())" if a.ndim == 0 else f"{v} = {x}[{t}]")
        xn.append(v)
    pre, blines, bouts, written, inplace = child(body, consts + cur + xn, nxt, cur)
    lines += pre
    lines.append(f"for {it} in range({T}):")
    body_lines += blines
    body_lines += [f"lp.copy_into({n}, {v})" for k, (n, v) in enumerate(zip(nxt, bouts[:nk])) if k not in written]
    for y, v, a in zip(ys, bouts[nk:], y_avals):
        body_lines.append(f"{y}[{t}] = {v}[()]" if a.ndim == 0 else f"lp.copy_into({y}[{t}], {v})")
    body_lines += _swap(*_swapped(cur, nxt, inplace))
    lines += _indent(body_lines)
    return lines, cur + ys


def _emit_while(step: Step, cond, body, ins: list, fresh, child) -> tuple[list, list]:  # noqa: ANN001
    p = step.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    cconsts, bconsts, inits = ins[:cn], ins[cn : cn + bn], ins[cn + bn :]
    cur, nxt, lines = _carry(inits, step.in_avals[cn + bn :], fresh)
    cpre, clines, couts, _, _ = child(cond, cconsts + cur)
    body_lines = clines + [f"if not {couts[0]}[()]:", "    break"]
    bpre, blines, bouts, written, inplace = child(body, bconsts + cur, nxt, cur)
    lines += cpre + bpre
    lines.append("while True:")
    body_lines += blines
    body_lines += [f"lp.copy_into({n}, {v})" for k, (n, v) in enumerate(zip(nxt, bouts)) if k not in written]
    body_lines += _swap(*_swapped(cur, nxt, inplace))
    lines += _indent(body_lines)
    return lines, cur


def _emit_cond(step: Step, branches: list, ins: list, fresh, child) -> tuple[list, list]:  # noqa: ANN001
    idx, ops = ins[0], ins[1:]
    out_avals = list(step.out_avals)
    outs, lines, alloc = [], [], []
    for a in out_avals:
        o = fresh("o")
        alloc.append(_alloc(o, a.shape, a.dtype))
        outs.append(o)
    ix = fresh("ix")
    nb = len(branches)
    lines.append(f"{ix} = min(max(int({idx}[()]), 0), {nb - 1})")
    for b, prog in enumerate(branches):
        head = "else:" if b == nb - 1 and nb > 1 else ("if" if b == 0 else "elif") + f" {ix} == {b}:"
        if nb == 1:
            head = "if True:"
        pre, blines, bouts, written, _ = child(prog, list(ops), outs)
        copies = [f"lp.copy_into({o}, {v})" for k, (o, v) in enumerate(zip(outs, bouts)) if k not in written]
        # the branch's buffers are allocated before the ``if`` (and so before an enclosing loop)
        alloc += [Hoist(ln) for ln in pre]
        lines.append(head)
        lines += _indent(blines + copies)
    return alloc + lines, outs


# ---------------------------------------------------------------------------------------------
# indexed updates inside compiled loops (``x.at[i].set(v)`` in a ``fori_loop`` body): generated
# loops over the update, with the primitive's clamping / dropping rules (lax/slicing.py)

# host callbacks: called from the compiled loop through a numba ``objmode`` block (``emit_callback``)
CALLBACK_OPS = frozenset({"pure_callback", "io_callback", "debug_callback"})
INLINE_OPS = frozenset(
    {"dynamic_update_slice", "scatter", "scatter-add", "scatter-mul", "scatter-min", "scatter-max", *CALLBACK_OPS}
)

_COMBINE = {
    "scatter": "{u}",
    "scatter-add": "{o} + {u}",
    "scatter-mul": "{o} * {u}",
    "scatter-min": "min({o}, {u})",
    "scatter-max": "max({o}, {u})",
}
_COMBINE_BOOL = {"scatter-add": "{o} or {u}", "scatter-mul": "{o} and {u}", "scatter-min": "{o} and {u}"}
_COMBINE_BOOL["scatter-max"] = "{o} or {u}"


def inline_op_unsupported_reason(step: Step) -> str | None:
    """None if ``emit_op`` renders ``step`` inside a compiled loop."""
    name = step.op
    if name not in INLINE_OPS:
        return f"no lowering rule for primitive {name}"
    if name in CALLBACK_OPS:
        return None
    if name != "dynamic_update_slice":
        dn = step.params["dimension_numbers"]
        if dn.operand_batching_dims:
            return f"{name} with operand_batching_dims"
        dt = step.out_avals[0].dtype
        if name in ("scatter-min", "scatter-max") and dt.kind == "f":
            return f"{name} on floats (NaN propagation)"
    return None


def emit_op(step: Step, ins: list, o: str, fresh: Callable[[str], str]) -> list:
    """Lines computing ``step`` (an ``INLINE_OPS`` primitive) from the arrays named ``ins`` into the
    array ``o``, which the caller has filled with a copy of the operand ``ins[0]``."""
    if step.op == "dynamic_update_slice":
        return _emit_dus(step, ins, o, fresh)
    return _emit_scatter(step, ins, o, fresh)


def _emit_dus(step: Step, ins: list, o: str, fresh: Callable[[str], str]) -> list:
    upd, starts = ins[1], ins[2:]
    D, U = step.in_avals[0].shape, step.in_avals[1].shape
    lines: list = []
    st = []
    for d, s in enumerate(starts):
        v = fresh("st")
        lines.append(f"{v} = min(max(int({s}[()]), 0), {D[d] - U[d]})")
        st.append(v)
    if not D:
        return [f"lp.copy_into({o}, {upd})"]
    js = [fresh("j") for _ in D]
    ind = ""
    for d, j in enumerate(js):
        lines.append(f"{ind}for {j} in range({U[d]}):")
        ind += "    "
    tgt = ", ".join(f"{s} + {j}" for s, j in zip(st, js))
    lines.append(f"{ind}{o}[{tgt}] = {upd}[{', '.join(js)}]")
    return lines


def _emit_scatter(step: Step, ins: list, o: str, fresh: Callable[[str], str]) -> list:
    name = step.op
    _, idx, upd = ins
    p = step.params
    dn = p["dimension_numbers"]
    D = step.in_avals[0].shape
    I_shape = step.in_avals[1].shape
    U_shape = step.in_avals[2].shape
    nd = len(D)
    win = list(dn.update_window_dims)
    body_dims = [d for d in range(nd) if d not in dn.inserted_window_dims]  # operand dims with windows
    sizes = [1] * nd
    for d, u in zip(body_dims, win):
        sizes[d] = U_shape[u]
    clip = "CLIP" in str(p["mode"])
    lines: list = []
    bs = [fresh("b") for _ in I_shape[:-1]]
    ind = ""
    for b, n in zip(bs, I_shape[:-1]):
        lines.append(f"{ind}for {b} in range({n}):")
        ind += "    "
    st = [fresh("st") for _ in range(nd)]
    for d in range(nd):
        if d in dn.scatter_dims_to_operand_dims:
            k = list(dn.scatter_dims_to_operand_dims).index(d)
            v = f"int({idx}[{', '.join([*bs, str(k)])}])"
            lines.append(f"{ind}{st[d]} = " + (f"min(max({v}, 0), {D[d] - sizes[d]})" if clip else v))
        else:
            lines.append(f"{ind}{st[d]} = 0")
    if not clip and nd:
        inb = " and ".join(f"0 <= {st[d]} <= {D[d] - sizes[d]}" for d in range(nd))
        lines.append(f"{ind}if {inb}:")
        ind += "    "
    ws = {u: fresh("w") for u in win}
    for u in win:
        lines.append(f"{ind}for {ws[u]} in range({U_shape[u]}):")
        ind += "    "
    oi = []
    for d in range(nd):
        oi.append(f"{st[d]} + {ws[win[body_dims.index(d)]]}" if d in body_dims else st[d])
    ui = []
    bit = iter(bs)
    for i in range(len(U_shape)):
        ui.append(ws[i] if i in ws else next(bit))
    oref = f"{o}[{', '.join(oi)}]" if nd else f"{o}[()]"
    uref = f"{upd}[{', '.join(ui)}]" if U_shape else f"{upd}[()]"
    table = _COMBINE_BOOL if step.out_avals[0].dtype == np.bool_ and name != "scatter" else _COMBINE
    lines.append(f"{ind}{oref} = {table[name].format(o=oref, u=uref)}")
    return lines


# ---------------------------------------------------------------------------------------------
# host callbacks inside compiled loops and branches (equinox's ``error_if``: a ``pure_callback`` in
# a ``cond`` branch taken only on error, inside diffrax's step loop). The loop stays compiled; the
# branch that calls back enters numba's object mode for the call only, so a loop whose callback
# never runs pays nothing for it, and one that calls back calls in program order, as the host
# loop did. The callback's primitive impl runs exactly as a host step would run it (inputs copied
# for the user function, results checked against ``result_avals``); an exception it raises
# propagates out of the compiled loop unchanged.


class HostCallback:
    """The primitive and params of one callback equation of a compiled loop, called by id (the
    loop's source and cache entry do not depend on which callback it calls). The generated
    program holds this object; the table only refers to it weakly."""

    __slots__ = ("prim", "params", "id", "__weakref__")
    _next = itertools.count(1)

    def __init__(self, prim: object, params: dict):
        self.prim, self.params = prim, dict(params)
        self.id = next(HostCallback._next)
        _CALLBACKS[self.id] = self


_CALLBACKS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def host_call(cid: np.ndarray, ins: tuple, outs: tuple) -> None:
    """Run callback ``cid`` (object mode, from a compiled loop) on the arrays ``ins`` and write its
    results into the loop's buffers ``outs``."""
    cb = _CALLBACKS[int(cid[()])]
    res = cb.prim.impl(*ins, **cb.params)
    for o, r in zip(outs, res):
        np.copyto(o, r, casting="unsafe")


def callback_helper(nin: int, nout: int) -> tuple[str, str]:
    """The name and source of the function a compiled loop calls a callback with ``nin`` inputs
    and ``nout`` outputs through: a small function whose body is the object-mode block (numba
    lowers such blocks wrongly inside large loop functions: 'Instruction does not dominate all
    uses'; called, they propagate the callback's exception as any call does)."""
    name = f"_host_call_{nin}_{nout}"
    ins, outs = [f"i{k}" for k in range(nin)], [f"o{k}" for k in range(nout)]
    tup = lambda ns: "(" + "".join(n + ", " for n in ns) + ")"  # noqa: E731
    src = (
        f"@njit(cache=CACHE, error_model='numpy')\ndef {name}({', '.join(['cid', *ins, *outs])}):\n"
        f"    with numba.objmode():\n        lp.host_call(cid, {tup(ins)}, {tup(outs)})\n"
    )
    return name, src


def emit_callback(step: Step, ins: list, outs: list, cid: str) -> tuple[list, tuple[str, str]]:
    """Lines calling the callback ``step`` (id in the 0-d array named ``cid``) on the arrays named
    ``ins``, its results written into the arrays named ``outs``, and the helper they call."""
    name, src = callback_helper(len(ins), len(outs))
    return [f"{name}({', '.join([cid, *ins, *outs])})"], (name, src)
