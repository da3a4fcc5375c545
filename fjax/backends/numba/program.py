"""Kernel IR -> readable Python source -> callable (the CPU backend of ``fjax.jit``).

A program is compiled into two kinds of generated code:

- one plain Python function ``program`` (one line per step, ``# eqn`` comments) that allocates
  buffers, runs every ``Dot`` as ``np.dot``/``np.matmul`` on numpy's BLAS (transposed operands are
  ``.T`` views, never copied), calls the loop-nest kernels, and evaluates the host-fallback
  equations with their primitive's numpy ``impl``;
- one small ``numba.njit`` kernel per fused loop nest. Kernels are shape-generic (extents are
  arguments, constants are module-level) and written to ``config.fjax_cache_dir/kernels/
  k_<source hash>.py`` with ``cache=True``, so identical nests -- the two ``tanh`` layers of an MLP,
  the SGD updates of every parameter, the same nest in another program or process -- share one
  compiled kernel. Each kernel is compiled for one signature (inputs read-only C arrays, which
  writable arrays convert to; outputs writable) and then frozen (``disable_compile``).

Memory planning (``plan_memory``): intermediates that never escape a call (not returned, not handed
to a host impl) live in a per-program buffer set that calls take from a pool at entry and give
back at exit, and buffers of the same shape/dtype with disjoint lifetimes share a slot. Fresh large
``np.empty`` buffers cost a page fault per 4 KiB page on first touch (glibc returns freed heap
memory to the OS); on this machine that was 2500 faults and more than half of the MLP step.

Why not one numba function per program (the first design): numba's typing and LLVM time grow with
function size and every program paid them again; for the MLP train step that was ~8 s cold. Small
deduplicated kernels plus Python orchestration cost ~1 us per step at run time.

Kernels are compiled without fastmath, so NaN/inf semantics are IEEE exact. Reductions run the
body over tiles into a small buffer (vectorizable), combine each tile pairwise (float32 sums in
float64) and the tiles in order, so results do not depend on vector width or thread count. Tiled
loops run float32 sin/cos through ``vmath``'s fast paths and rerun a tile with the exact functions
when it holds an input out of their range (``NumbaRenderer.fast_for_op``). Scalar ops render through
``NumbaRenderer.code_for_op`` (op name -> snippet); a CUDA renderer can subclass it.
"""

from __future__ import annotations

import logging
import math
import re
from typing import Any, Callable

import numba
import numpy as np
from numba import types

from fjax import core
from fjax.backends import kernel_ir as ir
from fjax.backends import lowering as L
from fjax.backends.numba import disk_cache
from fjax.backends.numba import loops as numba_loops
from fjax.backends.numba.host_kernels import host_kernel
from fjax.config import config
from fjax.core import ClosedJaxpr

log = logging.getLogger("fjax.lowering")

# nests with at least this much work (elements x body cost) and elements run with prange. A
# parallel kernel costs ~1 s more to compile (numba outlines the loop into a gufunc), and on 2 cores
# nests of ~1e5 elements gain a few tens of us: only large nests are worth it
PARALLEL_WORK_THRESHOLD = 300_000
PARALLEL_MIN_SIZE = 1 << 19
REDUCE_CHUNKS = 64
TILE = 512
# row reductions with at most this many elements per row run several rows per tile
SHORT_ROWS = 32
# LLVM's x86 tuning for AVX-512 parts prefers 256-bit vectors; for these compute-bound loop bodies
# (the vmath polynomials) 512-bit vectors ran ~1.4x faster on this machine (exp_f32 0.78 -> 0.57 ns
# per element). Kernels ask for this width through ``wide_vectors`` (None: leave LLVM's choice)
VECTOR_WIDTH: int | None = 512
# memory planning (``plan_memory``): intermediates live in per-program buffer sets reused across calls
POOL_BUFFERS = True


# ---------------------------------------------------------------------------------------------
# rendering


def _T(dt: np.dtype) -> str:
    dt = np.dtype(dt)
    return "np.bool_" if dt == np.bool_ else f"np.{dt.name}"


def _vm(fn: str, dt: np.dtype) -> str:
    return f"vm.{fn}_{'f32' if np.dtype(dt) == np.float32 else 'f64'}"


def _ident(kind: str, dt: np.dtype) -> str:
    dt = np.dtype(dt)
    if kind == "sum":
        return f"{_T(dt)}(0)"
    if kind == "prod":
        return f"{_T(dt)}(1)"
    if kind in ("max", "min"):
        big = kind == "min"
        if dt == np.bool_:
            return "True" if big else "False"
        if dt.kind == "f":
            return f"{_T(dt)}({'np.inf' if big else '-np.inf'})"
        info = np.iinfo(dt)
        return f"{_T(dt)}({info.max if big else info.min})"
    if kind == "and":
        return "True"
    if kind == "or":
        return "False"
    raise NotImplementedError(kind)


def _combine(kind: str, acc: str, v: str, dt: np.dtype) -> str:
    dt = np.dtype(dt)
    if kind == "sum":
        return f"{acc} + {_T(dt)}({v})" if dt.kind == "f" else f"{_T(dt)}({acc} + {v})"
    if kind == "prod":
        return f"{acc} * {_T(dt)}({v})" if dt.kind == "f" else f"{_T(dt)}({acc} * {v})"
    if kind in ("max", "min"):
        if dt == np.bool_:
            return f"({acc} or {v})" if kind == "max" else f"({acc} and {v})"
        if dt.kind == "f":
            return f"rt.f{kind}({acc}, {v})"
        return f"{kind}({acc}, {v})"
    if kind == "and":
        return f"({acc} and {v})"
    if kind == "or":
        return f"({acc} or {v})"
    raise NotImplementedError(kind)


def _ipow_expr(x: str, y: int) -> str:
    """x**y (y >= 1) by binary exponentiation, as one expression."""
    if y == 1:
        return x
    half = _ipow_expr(x, y // 2)
    sq = f"(({half}) * ({half}))" if y // 2 > 1 else f"({x} * {x})"
    return f"({sq} * {x})" if y % 2 else sq


class NumbaRenderer:
    """Scalar op -> Python/numba snippet. ``code_for_op[name](args, op)``; ``op`` carries dtypes/params."""

    def __init__(self) -> None:
        c = _T
        f = lambda e, op: f"{c(op.dtype)}({e})"  # noqa: E731

        def vmath_or(fn: str, fallback: str) -> Callable:
            def r(a: list, op: ir.Op) -> str:
                if op.dtype in (np.float32, np.float64):
                    return f"{_vm(fn, op.dtype)}({a[0]})"
                return f(f"{fallback}({a[0]})", op)

            return r

        def arith(sym: str) -> Callable:
            return lambda a, op: f(f"{a[0]} {sym} {a[1]}", op)

        def cmp(sym: str) -> Callable:
            return lambda a, op: f"{a[0]} {sym} {a[1]}"

        def bitop(sym: str, logical: str) -> Callable:
            return lambda a, op: f"({a[0]} {logical} {a[1]})" if op.dtype == np.bool_ else f(f"{a[0]} {sym} {a[1]}", op)

        def npf(fn: str) -> Callable:
            return lambda a, op: f(f"np.{fn}({a[0]})", op)

        def mathf(fn: str) -> Callable:
            return lambda a, op: f(f"math.{fn}({a[0]})", op)

        def minmax(kind: str) -> Callable:
            def r(a: list, op: ir.Op) -> str:
                if op.dtype == np.bool_:
                    return f"({a[0]} {'or' if kind == 'max' else 'and'} {a[1]})"
                if op.dtype.kind == "f":
                    return f"rt.f{kind}({a[0]}, {a[1]})"
                return f(f"{kind}({a[0]}, {a[1]})", op)

            return r

        def div(a: list, op: ir.Op) -> str:
            if op.dtype.kind == "f":
                return f(f"{a[0]} / {a[1]}", op)
            return f(f"rt.idiv({a[0]}, {a[1]})", op)

        def rem(a: list, op: ir.Op) -> str:
            if op.dtype.kind == "f":
                return f(f"np.fmod({a[0]}, {a[1]})", op)
            return f(f"rt.irem({a[0]}, {a[1]})", op)

        def sign(a: list, op: ir.Op) -> str:
            if op.dtype.kind == "f":
                return f(f"rt.fsign({a[0]})", op)
            if op.dtype.kind == "u":
                return f(f"{a[0]} > 0", op)
            return f(f"({a[0]} > 0) - ({a[0]} < 0)", op)

        def round_(a: list, op: ir.Op) -> str:
            if int(op.params.get("rounding_method", 0)) == 1:
                return f(f"np.rint({a[0]})", op)
            return f(f"np.sign({a[0]}) * np.floor(np.abs({a[0]}) + {c(op.dtype)}(0.5))", op)

        def not_(a: list, op: ir.Op) -> str:
            return f"(not {a[0]})" if op.dtype == np.bool_ else f(f"~{a[0]}", op)

        def integer_pow(a: list, op: ir.Op) -> str:
            y = int(op.params["y"])
            if y == 0:
                return f"{c(op.dtype)}(1)"
            e = _ipow_expr(a[0], abs(y))
            return f(f"{c(op.dtype)}(1) / {e}", op) if y < 0 else f(e, op)

        def convert(a: list, op: ir.Op) -> str:
            src, dst = np.dtype(op.in_dtypes[0]), op.dtype
            if dst == np.bool_:
                return f"{a[0]} != 0" if src != np.bool_ else a[0]
            if src.kind == "f" and dst.kind in "iu":
                info = np.iinfo(dst)
                lo, hi = float(info.min), float(info.max)
                if dst.itemsize == 8:  # float64(max) rounds up past the range: saturate below it
                    hi = float(np.nextafter(np.float64(info.max), 0.0))
                return f(f"rt.f2i(np.float64({a[0]}), {lo!r}, {hi!r})", op)
            return f(a[0], op)

        def select_n(a: list, op: ir.Op) -> str:
            w, cases = a[0], a[1:]
            if len(cases) == 1:
                return cases[0]
            if np.dtype(op.in_dtypes[0]) == np.bool_:
                return f"({cases[1]} if {w} else {cases[0]})"
            e = cases[-1]
            for i in range(len(cases) - 2, -1, -1):
                e = f"({cases[i]} if {w} == {i} else {e})"
            return e

        def clamp(a: list, op: ir.Op) -> str:
            lo, x, hi = a
            if op.dtype.kind == "f":
                return f"rt.fmin(rt.fmax({x}, {lo}), {hi})"
            return f(f"min(max({x}, {lo}), {hi})", op)

        def shift(kind: str) -> Callable:
            def r(a: list, op: ir.Op) -> str:
                bits = op.dtype.itemsize * 8
                if kind == "left":
                    return f(f"rt.shl({a[0]}, {a[1]}, {bits})", op)
                if kind == "arith":
                    # unsigned operands shift their bit pattern as signed (XLA), so the top bit fills
                    x = f"np.int{bits}({a[0]})" if op.dtype.kind == "u" else a[0]
                    return f(f"rt.shra({x}, {a[1]}, {bits})", op)
                u = f"np.uint{bits}"
                return f(f"({u}({a[0]}) >> {u}({a[1]}) if ({a[1]} >= 0 and {a[1]} < {bits}) else {u}(0))", op)

            return r

        def fast_trig(fn: str) -> Callable:
            def r(a: list, op: ir.Op) -> tuple | None:
                if op.dtype == np.float32:
                    return f"vm.{fn}_fast_f32({a[0]})", f"vm.trig_oob_f32({a[0]})", f"vm.{fn}_call_f32({a[0]})"
                return None

            return r

        # ops with a fast path for part of their domain: ``(args, op) -> (fast snippet, int32
        # out-of-range count snippet, exact snippet)`` or None. Loop nests that tile their loop run
        # the fast paths and run a tile again with the exact snippets when any count is nonzero
        self.fast_for_op: dict[str, Callable] = {"sin": fast_trig("sin"), "cos": fast_trig("cos")}

        def erf(a: list, op: ir.Op) -> str:
            if op.dtype == np.float32:
                return f"vm.erf_f32({a[0]})"
            return f(f"math.erf({a[0]})", op)

        self.code_for_op: dict[str, Callable] = {
            "add": arith("+"),
            "sub": arith("-"),
            "mul": arith("*"),
            "div": div,
            "rem": rem,
            "pow": lambda a, op: f(f"np.power({a[0]}, {a[1]})", op),
            "max": minmax("max"),
            "min": minmax("min"),
            "atan2": lambda a, op: f(f"np.arctan2({a[0]}, {a[1]})", op),
            "eq": cmp("=="),
            "ne": cmp("!="),
            "lt": cmp("<"),
            "le": cmp("<="),
            "gt": cmp(">"),
            "ge": cmp(">="),
            "and": bitop("&", "and"),
            "or": bitop("|", "or"),
            "xor": lambda a, op: f"({a[0]} != {a[1]})" if op.dtype == np.bool_ else f(f"{a[0]} ^ {a[1]}", op),
            "not": not_,
            "shift_left": shift("left"),
            "shift_right_arithmetic": shift("arith"),
            "shift_right_logical": shift("logical"),
            "neg": lambda a, op: f(f"-{a[0]}", op),
            "sign": sign,
            "floor": npf("floor"),
            "ceil": npf("ceil"),
            "round": round_,
            "is_finite": lambda a, op: f"np.isfinite({a[0]})",
            "abs": lambda a, op: f(f"abs({a[0]})", op),
            "exp": vmath_or("exp", "np.exp"),
            "log": vmath_or("log", "np.log"),
            "log1p": vmath_or("log1p", "np.log1p"),
            "expm1": vmath_or("expm1", "np.expm1"),
            "tanh": vmath_or("tanh", "np.tanh"),
            "logistic": vmath_or("logistic", "None"),
            "sin": vmath_or("sin", "np.sin"),
            "cos": vmath_or("cos", "np.cos"),
            "erf": erf,
            "exp2": npf("exp2"),
            "sqrt": npf("sqrt"),
            "rsqrt": lambda a, op: f(f"{c(op.dtype)}(1) / np.sqrt({a[0]})", op),
            "cbrt": npf("cbrt"),
            "tan": npf("tan"),
            "asin": npf("arcsin"),
            "acos": npf("arccos"),
            "atan": npf("arctan"),
            "sinh": npf("sinh"),
            "cosh": npf("cosh"),
            "asinh": npf("arcsinh"),
            "acosh": npf("arccosh"),
            "atanh": npf("arctanh"),
            "erfc": mathf("erfc"),
            "lgamma": mathf("lgamma"),
            "square": lambda a, op: f(f"{a[0]} * {a[0]}", op),
            "integer_pow": integer_pow,
            "convert_element_type": convert,
            "select_n": select_n,
            "clamp": clamp,
        }

    def const(self, c: ir.Const) -> str:
        v = c.value
        if c.dtype == np.bool_:
            return f"np.bool_({bool(v)})"
        if c.dtype.kind == "f":
            return f"{_T(c.dtype)}(float.fromhex({float(v).hex()!r}))"
        return f"{_T(c.dtype)}({int(v)})"

    # -- loop nests: one small shape-generic njit kernel each ---------------------------------
    def render_nest(self, nest: ir.LoopNest, consts: dict) -> NestCode:
        """A shape-generic kernel for ``nest``: extents are arguments, so one compiled kernel serves
        every nest with the same structure (across programs, processes via the disk cache)."""
        loads = [s for s in nest.body if isinstance(s, ir.Load)]
        iotas = sorted({s.axis for s in nest.body if isinstance(s, ir.Iota)})
        n = len(nest.domain)
        red = tuple(sorted(nest.reduce_axes or ()))
        stores, reds = nest.stores, nest.reductions
        local: dict = {}
        kconsts: list = []

        def nm(x: str) -> str:
            if x not in local:
                if x in consts:
                    local[x] = f"k{len(kconsts)}"
                    kconsts.append(f"k{len(kconsts)} = {self.const(consts[x])}  # {consts[x].dtype}")
                else:
                    local[x] = f"u{len(local) - len(kconsts)}"
            return local[x]

        for s in nest.body:
            if isinstance(s, (ir.Load, ir.Iota)):
                nm(s.out)
        body: list = []
        # the body with the fast paths (``fast_for_op``) and their out-of-range counts, and the
        # body for the (rare) exact reruns of tiles, with the exact functions out of line
        fast_body: list = []
        rerun_body: list = []
        oob: list = []
        for s in nest.body:
            if isinstance(s, ir.Op):
                args = [nm(a) for a in s.args]
                code = self.code_for_op[s.op](args, s)
                body.append(f"{nm(s.out)} = {code}  # {s.op}")
                fast = self.fast_for_op.get(s.op)
                fast = fast(args, s) if fast is not None else None
                if fast is None:
                    fast_body.append(body[-1])
                    rerun_body.append(body[-1])
                else:
                    fast_body.append(f"{nm(s.out)} = {fast[0]}  # {s.op} (fast path)")
                    rerun_body.append(f"{nm(s.out)} = {fast[2]}  # {s.op}")
                    if fast[1] not in oob:
                        oob.append(fast[1])
            elif isinstance(s, ir.Iota):
                body.append(f"{nm(s.out)} = {_T(s.dtype)}(i{s.axis})  # iota")
                fast_body.append(body[-1])
                rerun_body.append(body[-1])
        for j, (_, r) in enumerate(stores):
            body.append(f"s{j} = {nm(r)}")
        for j, r in enumerate(reds):
            body.append(f"r{j} = {nm(r.value)}")
        fast_body += body[len(fast_body) :]
        rerun_body += body[len(rerun_body) :]

        simple = not iotas and all(
            ld.index == () or (ld.index == tuple(range(n)) and ld.buf.shape == nest.domain) for ld in loads
        )
        trailing = nest.trailing_reduce()
        if n == 0:
            mode = "scalar"
        elif simple and not red:
            mode = "flat"
        elif simple and trailing:
            mode = "full" if len(red) == n else "rows"
        else:
            mode = "nd"
        kept = n - len(red)
        kept_shape = tuple(nest.domain[a] for a in range(n) if a not in red)
        # arguments: input buffers (each once), stores, reduction outputs (or accumulators)
        ins: dict = {}
        for ld in loads:
            if ld.buf.name not in ins:
                ins[ld.buf.name] = (f"x{len(ins)}", ld.buf, "one" if ld.index == () else mode)
        args = []  # (local name, Buf, view, readonly)
        for lname, buf, view in ins.values():
            args.append((lname, buf, view, True, buf.dtype))
        for j, (b, _) in enumerate(stores):
            args.append((f"y{j}", b, "one" if mode == "scalar" else mode, False, b.dtype))
        acc_mode = bool(mode == "nd" and red and not trailing)
        for j, r in enumerate(reds):
            view = "acc" if acc_mode else ("one" if kept == 0 else ("keptflat" if mode == "rows" else "nd"))
            args.append((f"z{j}", r.out, view, False, r.acc_dtype if acc_mode else r.out.dtype))
        if mode in ("flat", "full"):
            extents = [("n", nest.size)]
        elif mode == "rows":
            extents = [("nk", math.prod(kept_shape)), ("nr", math.prod(nest.domain[kept:]))]
        else:
            extents = [(f"d{a}", nest.domain[a]) for a in range(n)]

        out: list = []
        for lname, buf, view in ins.values():
            if view == "one":
                for ld in loads:
                    if ld.buf.name == buf.name:
                        out.append(f"{nm(ld.out)} = {lname}[0]")
                        break
        inner_loads = [ld for ld in loads if ld.index != ()]
        par = nest.parallel

        def ld_lines(ind: str, idx_of: Callable) -> list:
            lines = []
            for li, ld in enumerate(inner_loads):
                if not any(isinstance(e, ir.Ix) for e in ld.index):
                    lines.append(f"{ind}{nm(ld.out)} = {ins[ld.buf.name][0]}[{idx_of(ld)}]")
                    continue
                idx, ok = [], []
                for k, e in enumerate(ld.index):
                    if not isinstance(e, ir.Ix):
                        idx.append("0" if e is None else f"i{e}")
                        continue
                    terms = []
                    if e.axis is not None:
                        terms.append({1: f"i{e.axis}", -1: f"-i{e.axis}"}.get(e.scale, f"{e.scale} * i{e.axis}"))
                    if e.offset or not (terms or e.dyn):
                        terms.append(str(e.offset))
                    for v, c, lo, hi in e.dyn:
                        d = f"min(max(np.int64({nm(v)}), {lo}), {hi})"
                        terms.append(d if c == 1 else f"{c} * {d}")
                    raw = " + ".join(terms)
                    if e.ext is None:
                        idx.append(raw if e.div == 1 else f"({raw}) // {e.div}")
                        continue
                    q, cl = f"q{li}_{k}", f"c{li}_{k}"
                    lines.append(f"{ind}{q} = {raw}")
                    lines.append(f"{ind}{cl} = min(max({q}, 0), {(e.ext - 1) * e.div})")
                    idx.append(cl if e.div == 1 else f"{cl} // {e.div}")
                    ok.append(f"({cl} == {q})" + (f" & ({cl} % {e.div} == 0)" if e.div != 1 else ""))
                lines.append(f"{ind}{nm(ld.out)} = {ins[ld.buf.name][0]}[{', '.join(idx)}]")
                if ok:
                    lines.append(f"{ind}{nm(ld.out)} = {nm(ld.out)} if {' & '.join(ok)} else {nm(ld.fill)}")
            return lines

        def st_lines(ind: str, idx: str) -> list:
            return [f"{ind}y{j}[{idx}] = s{j}" for j in range(len(stores))]

        # tiled loops read and write through per-tile views indexed from 0: with ``x[i]`` for ``i``
        # in ``range(t0, t1)`` LLVM cannot prove ``i >= 0``, keeps numba's negative-index
        # wrap-around per element and turns every load into a gather (3x slower)
        tile_ins = list(dict.fromkeys(ins[ld.buf.name][0] for ld in inner_loads))

        def tile_loop(ind: str, fast: bool) -> list:
            lines = [f"{ind}{nm(ld.out)} = {ins[ld.buf.name][0]}t[i]" for ld in inner_loads]
            lines += [ind + b for b in (fast_body if fast else rerun_body)]
            if fast:
                # an int32 count: an int64 one makes LLVM vectorize the float32 body 8 lanes wide
                lines.append(f"{ind}oob = np.int32(oob + {' + '.join(oob)})")
            lines += [f"{ind}y{j}t[i] = s{j}" for j in range(len(stores))]
            lines += [f"{ind}tile{j}[i] = r{j}" for j in range(len(reds))]
            return lines

        def tile_dtype(r: ir.Reduction) -> np.dtype:
            # the body's values, in their own dtype: a float32 body storing float64 would vectorize
            # at the float64 width (half the lanes); the first pairwise step converts
            return r.out.dtype if (r.out.dtype.kind == "f" and r.acc_dtype.kind == "f") else r.acc_dtype

        def tile_bufs(ind: str) -> None:
            # one allocation per reduction: ``tw`` (the pairwise sums) and the ``tile`` after it
            for j, r in enumerate(reds):
                td, ad = tile_dtype(r), r.acc_dtype
                if td == ad:
                    out.append(f"{ind}tb{j} = np.empty({TILE + TILE // 2}, {_T(ad)})")
                    out.append(f"{ind}tile{j} = tb{j}[{TILE // 2}:]")
                elif ad.itemsize % td.itemsize == 0:
                    out.append(f"{ind}tb{j} = np.empty({TILE // 2 + TILE * td.itemsize // ad.itemsize}, {_T(ad)})")
                    out.append(f"{ind}tile{j} = tb{j}[{TILE // 2}:].view({_T(td)})")
                else:
                    out.append(f"{ind}tb{j} = np.empty({TILE // 2}, {_T(ad)})")
                    out.append(f"{ind}tile{j} = np.zeros({TILE}, {_T(td)})")
                out.append(f"{ind}tw{j} = tb{j}[: {TILE // 2}]")

        def tile_pass(ind: str, count: str) -> None:
            # the body over one tile: with the fast paths, then exactly if any input was out of range
            if oob:
                out.append(f"{ind}oob = np.int32(0)")
            out.append(f"{ind}for i in range({count}):")
            out.extend(tile_loop(ind + "    ", bool(oob)))
            if oob:
                out.append(f"{ind}if oob != 0:")
                out.append(f"{ind}    for i in range({count}):")
                out.extend(tile_loop(ind + "        ", False))

        def tiled(ind: str, lo: str, hi: str, view: Callable) -> None:
            # the body runs over tiles, into a small buffer when it reduces (no loop-carried
            # dependency, so it vectorizes). With fast paths (``fast_for_op``) each tile runs them
            # and counts the inputs out of their range; a tile with any runs again with the exact
            # functions. Each reduction tile is then combined pairwise (vectorizes, and the order
            # depends only on the tile's length, not on the vector width or thread count)
            for j, r in enumerate(reds):
                out.append(f"{ind}acc{j} = {_ident(r.kind, r.acc_dtype)}")
            out.append(f"{ind}for t0 in range({lo}, {hi}, {TILE}):")
            out.append(f"{ind}    t1 = min(t0 + {TILE}, {hi})")
            for x in tile_ins:
                out.append(f"{ind}    {x}t = {view(x)}")
            for j in range(len(stores)):
                out.append(f"{ind}    y{j}t = {view(f'y{j}')}")
            tile_pass(ind + "    ", "t1 - t0")
            if not reds:
                return
            out.append(f"{ind}    w = {TILE // 2}")
            out.append(f"{ind}    if t1 - t0 < {TILE}:  # a last short tile: pad to a power of two")
            out.append(f"{ind}        w = 1")
            out.append(f"{ind}        while 2 * w < t1 - t0:")
            out.append(f"{ind}            w *= 2")
            for j, r in enumerate(reds):
                out.append(f"{ind}        tile{j}[t1 - t0 : 2 * w] = {_ident(r.kind, tile_dtype(r))}")
            # (the upper halves are views too: ``tile[t + w]`` would be a gather, as above)
            for j in range(len(reds)):
                out.append(f"{ind}    th{j} = tile{j}[w:]")
            out.append(f"{ind}    for t in range(w):")
            for j, r in enumerate(reds):
                comb = _combine(r.kind, f"{_T(r.acc_dtype)}(tile{j}[t])", f"th{j}[t]", r.acc_dtype)
                out.append(f"{ind}        tw{j}[t] = {comb}  # reduce_{r.kind}")
            out.append(f"{ind}    while w > 1:")
            out.append(f"{ind}        w //= 2")
            for j in range(len(reds)):
                out.append(f"{ind}        th{j} = tw{j}[w:]")
            out.append(f"{ind}        for t in range(w):")
            for j, r in enumerate(reds):
                comb = _combine(r.kind, f"tw{j}[t]", f"th{j}[t]", r.acc_dtype)
                out.append(f"{ind}            tw{j}[t] = {comb}")
            for j, r in enumerate(reds):
                out.append(f"{ind}    acc{j} = {_combine(r.kind, f'acc{j}', f'tw{j}[0]', r.acc_dtype)}")

        if mode == "scalar":
            # indexed loads (slice/dynamic_slice/gather of a buffer into a 0-d value) read at 0
            # plus their index expressions; "one" loads were emitted above
            out.extend(ld_lines("", lambda ld: ", ".join("0" for _ in ld.index)))
            out.extend(body)
            out.extend(st_lines("", "0"))
        elif mode == "flat" and not oob:
            out.append(f"for i in {'prange' if par else 'range'}(n):")
            out.extend(ld_lines("    ", lambda ld: "i"))
            out.extend("    " + b for b in body)
            out.extend(st_lines("    ", "i"))
        elif mode == "rows":
            # rows in chunks (one chunk per prange iteration), each with its tile buffers
            nch = REDUCE_CHUNKS if par else 1
            for x in [*tile_ins, *(f"y{j}" for j in range(len(stores)))]:
                out.append(f"{x}f = {x}.reshape(nk * nr)")
            out.append(f"for c in {'prange' if par else 'range'}({nch}):")
            tile_bufs("    ")
            out.append(f"    klo = (c * nk) // {nch}")
            out.append(f"    khi = ((c + 1) * nk) // {nch}")
            out.append(f"    if 0 < nr <= {SHORT_ROWS}:")
            # short rows (softmax over 10 classes): the body runs vectorized over as many whole
            # rows as fit in a tile, then each row is combined in order
            out.append(f"        rpt = {TILE} // nr")
            out.append("        for kk in range(klo, khi, rpt):")
            out.append("            m = (min(kk + rpt, khi) - kk) * nr")
            for x in [*tile_ins, *(f"y{j}" for j in range(len(stores)))]:
                out.append(f"            {x}t = {x}f[kk * nr : kk * nr + m]")
            tile_pass("            ", "m")
            out.append("            for k in range(m // nr):")
            for j, r in enumerate(reds):
                out.append(f"                tr{j} = tile{j}[k * nr : k * nr + nr]")
                out.append(f"                acc{j} = {_ident(r.kind, r.acc_dtype)}")
            out.append("                for t in range(nr):")
            for j, r in enumerate(reds):
                comb = _combine(r.kind, f"acc{j}", f"tr{j}[t]", r.acc_dtype)
                out.append(f"                    acc{j} = {comb}  # reduce_{r.kind}")
            for j, r in enumerate(reds):
                out.append(f"                z{j}[kk + k] = {_T(r.out.dtype)}(acc{j})")
            out.append("    else:")
            out.append("        for k in range(klo, khi):")
            tiled("            ", "0", "nr", lambda a: f"{a}[k, t0:t1]")
            for j, r in enumerate(reds):
                out.append(f"            z{j}[k] = {_T(r.out.dtype)}(acc{j})")
        elif mode in ("full", "flat"):
            nch = REDUCE_CHUNKS if par else 1
            for j, r in enumerate(reds):
                out.append(f"part{j} = np.empty({nch}, {_T(r.acc_dtype)})")
            out.append(f"for c in {'prange' if par else 'range'}({nch}):")
            out.append(f"    lo = (c * n) // {nch}")
            out.append(f"    hi = ((c + 1) * n) // {nch}")
            tile_bufs("    ")
            tiled("    ", "lo", "hi", lambda a: f"{a}[t0:t1]")
            for j in range(len(reds)):
                out.append(f"    part{j}[c] = acc{j}")
            for j, r in enumerate(reds):
                out.append(f"acc{j} = {_ident(r.kind, r.acc_dtype)}")
                out.append(f"for c in range({nch}):")
                out.append(f"    acc{j} = {_combine(r.kind, f'acc{j}', f'part{j}[c]', r.acc_dtype)}")
                out.append(f"z{j}[0] = {_T(r.out.dtype)}(acc{j})")
        else:

            def nd_idx(ld: Any) -> str:
                return ", ".join("0" if a is None else f"i{a}" for a in ld.index)

            full = ", ".join(f"i{a}" for a in range(n))
            ind = ""
            if red and trailing:
                for a in range(kept):
                    out.append(f"{ind}for i{a} in {'prange' if (par and a == 0) else 'range'}(d{a}):")
                    ind += "    "
                for j, r in enumerate(reds):
                    out.append(f"{ind}acc{j} = {_ident(r.kind, r.acc_dtype)}")
                ind2 = ind
                for a in range(kept, n):
                    out.append(f"{ind2}for i{a} in range(d{a}):")
                    ind2 += "    "
                out.extend(ld_lines(ind2, nd_idx))
                out.extend(ind2 + b for b in body)
                out.extend(st_lines(ind2, full))
                for j, r in enumerate(reds):
                    out.append(f"{ind2}acc{j} = {_combine(r.kind, f'acc{j}', f'r{j}', r.acc_dtype)}  # reduce_{r.kind}")
                kidx = ", ".join(f"i{a}" for a in range(kept)) if kept else "0"
                for j, r in enumerate(reds):
                    out.append(f"{ind}z{j}[{kidx}] = {_T(r.out.dtype)}(acc{j})")
            else:
                for a in range(n):
                    p = "prange" if (par and a == 0 and not red) else "range"
                    out.append(f"{ind}for i{a} in {p}(d{a}):")
                    ind += "    "
                out.extend(ld_lines(ind, nd_idx))
                out.extend(ind + b for b in body)
                out.extend(st_lines(ind, full))
                kidx = ", ".join(f"i{a}" for a in range(n) if a not in red)
                for j, r in enumerate(reds):
                    cur = f"z{j}[{kidx}]"
                    out.append(f"{ind}{cur} = {_combine(r.kind, cur, f'r{j}', r.acc_dtype)}  # reduce_{r.kind}")
        if VECTOR_WIDTH and mode != "scalar":
            # the function and each outlined prange body ask LLVM for VECTOR_WIDTH-bit vectors
            for k in range(len(out) - 1, -1, -1):
                if " in prange(" in out[k]:
                    ind = out[k][: len(out[k]) - len(out[k].lstrip())]
                    out.insert(k + 1, f"{ind}    rt.wide_vectors({int(VECTOR_WIDTH)})")
            out.insert(0, f"rt.wide_vectors({int(VECTOR_WIDTH)})")
        params = [a[0] for a in args] + [e[0] for e in extents]
        deco = f"@njit(cache=CACHE, error_model='numpy', nogil=True{', parallel=True' if par else ''})"
        src = "\n".join(
            [
                f"# {mode} loop nest" + (f", reduce axes {list(red)}" if red else ""),
                *kconsts,
                deco,
                f"def nest({', '.join(params)}):",
            ]
            + ["    " + o for o in out]
            + ["    return", ""]
        )
        return NestCode(src, args, extents, mode, kept_shape, acc_mode)


class NestCode:
    """A rendered loop-nest kernel and how the program calls it: ``args`` are
    ``(local name, Buf, view, readonly)`` with view ``one`` ((1,)-shaped), ``flat``, ``rows``
    ((kept, reduced) 2-D), ``keptflat``, ``full``, ``nd`` (as is) or ``acc`` (an accumulator
    array the program allocates and converts); ``extents`` are ``(name, value)``."""

    def __init__(self, src: str, args: list, extents: list, mode: str, kept_shape: tuple, acc_mode: bool):
        self.src, self.args, self.extents, self.mode = src, args, extents, mode
        self.kept_shape, self.acc_mode = kept_shape, acc_mode

    def view_ndim(self, view: str, buf: ir.Buf) -> int:
        return {"one": 1, "flat": 1, "full": 1, "keptflat": 1, "rows": 2}.get(view, len(buf.shape))

    def signature(self) -> tuple:
        """numba argument types: inputs read-only C arrays (writable arrays convert to them)."""
        sig = []
        for _, buf, view, ro, dt in self.args:
            nd = self.view_ndim(view, buf) if view != "acc" else len(self.kept_shape)
            sig.append(types.Array(numba.from_dtype(np.dtype(dt)), nd, "C", readonly=ro))
        return tuple(sig) + (types.int64,) * len(self.extents)


def _shape(shape: tuple) -> str:
    return "(" + "".join(f"{s}, " for s in shape).rstrip(" ") + ")" if shape else "()"


renderer = NumbaRenderer()


def _work(nest: ir.LoopNest) -> int:
    heavy = {
        "exp",
        "log",
        "log1p",
        "expm1",
        "tanh",
        "logistic",
        "sin",
        "cos",
        "erf",
        "pow",
        "tan",
        "atan2",
        "sinh",
        "cosh",
        "asin",
        "acos",
        "atan",
        "asinh",
        "acosh",
        "atanh",
        "erfc",
        "lgamma",
        "exp2",
        "cbrt",
    }
    cost = 1 + sum(20 if (isinstance(s, ir.Op) and s.op in heavy) else 1 for s in nest.body)
    return nest.size * cost


def _host_out(r: Any, dtype: np.dtype) -> np.ndarray:
    r = np.asarray(r, dtype=dtype)
    return r if r.flags.c_contiguous else np.ascontiguousarray(r)


def _contig(x: Any) -> np.ndarray:
    if type(x) is np.ndarray and x.flags.c_contiguous:
        return x
    return np.ascontiguousarray(x)


_VIEW = {
    "one": lambda n, nc: f"{n}.reshape(1)",
    "flat": lambda n, nc: f"{n}.reshape(-1)",
    "full": lambda n, nc: f"{n}.reshape(-1)",
    "keptflat": lambda n, nc: f"{n}.reshape(-1)",
    "rows": lambda n, nc: f"{n}.reshape({nc.extents[0][1]}, {nc.extents[1][1]})",
    "nd": lambda n, nc: n,
    "acc": lambda n, nc: n,
    "scalar": lambda n, nc: n,  # an indexed load (slice/gather) feeding a 0-d loop: the whole buffer
}


class _Alloc:
    """A buffer allocation line of the program (``fill`` None for ``np.empty``)."""

    __slots__ = ("name", "shape", "dtype", "fill", "slot")

    def __init__(self, name: str, shape: tuple, dtype: np.dtype, fill: str | None = None):
        self.name, self.shape, self.dtype, self.fill = name, tuple(shape), np.dtype(dtype), fill
        self.slot: str | None = None

    def render(self) -> str:
        if self.slot is None:
            if self.fill is not None:
                return f"{self.name} = np.full({_shape(self.shape)}, {self.fill})"
            return f"{self.name} = np.empty({_shape(self.shape)}, np.{self.dtype.name})"
        if self.fill is not None:
            return f"{self.name} = {self.slot}; {self.name}.fill({self.fill})"
        return f"{self.name} = {self.slot}"


class _Host(str):
    """A program line evaluating a host-fallback equation (its inputs may be aliased by its output)."""


_IN_DONE = "# (inputs converted)"

_IDENT = re.compile(r"[A-Za-z_]\w*")


def plan_memory(lines: list) -> list:
    """Memory planning: give every allocation that never escapes the call (is not returned, and is
    not handed to a host impl, which may return a view of it) a slot of a per-program buffer set,
    reused across calls (fresh large allocations cost a page fault per 4 KiB page, which on a loaded
    machine costs more than the loop that fills them) and shared within a call by buffers of the
    same shape and dtype whose lifetimes do not overlap. Returns the slots as ``(shape, dtype)``;
    sets ``_Alloc.slot``."""
    allocs = {ln.name: ln for ln in lines if isinstance(ln, _Alloc)}
    root: dict = {n: n for n in allocs}  # name -> allocation it may alias
    last: dict = {}
    escapes: set = set()
    for i, ln in enumerate(lines):
        if isinstance(ln, _Alloc):
            last[ln.name] = i
            continue
        if ln.startswith("#"):
            continue
        ids = _IDENT.findall(ln)
        refs = {root[t] for t in ids if t in root}
        for r in refs:
            last[r] = i
        if isinstance(ln, _Host) or ln.startswith("return"):
            escapes |= refs
            continue
        m = re.match(r"\s*([A-Za-z_]\w*) = (.*)$", ln)
        if m and refs:
            lhs, rhs = m.groups()
            rrefs = {root[t] for t in _IDENT.findall(rhs) if t in root}
            if ".astype(" in rhs or not rrefs:
                continue
            if len(rrefs) > 1:  # not produced by this generator; be conservative
                escapes |= rrefs
                continue
            root[lhs] = next(iter(rrefs))
    # a name rebound to an alias of an escaping root escapes with it (handled through ``root``)
    slots: list = []
    free: dict = {}  # (shape, dtype) -> [slot index]
    busy: list = []  # (last use, key, slot index)
    for i, ln in enumerate(lines):
        if not isinstance(ln, _Alloc) or ln.name in escapes:
            continue
        for entry in [b for b in busy if b[0] < i]:
            busy.remove(entry)
            free.setdefault(entry[1], []).append(entry[2])
        key = (ln.shape, ln.dtype.str)
        pool = free.get(key)
        if pool:
            k = pool.pop()
        else:
            k = len(slots)
            slots.append((ln.shape, ln.dtype))
        ln.slot = f"_m{k}"
        busy.append((last.get(ln.name, i), key, k))
    return slots


def _new_slots(slots: list) -> Callable:
    def make() -> tuple:
        return tuple(np.empty(shape, dtype) for shape, dtype in slots)

    return make


class _Ctx:
    """Naming state shared by a program and the loop bodies rendered into it (or into one compiled
    loop function, ``nopython``): namespace, nests, fresh-name counters, constants."""

    def __init__(self, nopython: bool):
        self.nopython = nopython
        self.ns: dict = {"np": np, "_contig": _contig, "_host_out": _host_out}
        self.nests: list = []
        self.nest_names: dict = {}
        self.loops: list = []
        self.consts: list = []  # nopython: (name, value) passed as arguments, never frozen globals
        self._counts: dict = {}

    def count(self, prefix: str) -> int:
        k = self._counts.get(prefix, 0)
        self._counts[prefix] = k + 1
        return k

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{self.count(prefix)}"


class ProgramSource:
    """The program as a plain Python function (readable, one line per step) that allocates
    buffers, calls the loop-nest kernels, runs GEMMs through numpy's BLAS (transposed operands
    as ``.T`` views, never copied) and evaluates host-fallback equations with their numpy impl."""

    def __init__(self, prog: ir.Program | None, ctx: _Ctx | None = None, in_names: dict | None = None):
        self.prog = prog
        self.ctx = ctx = ctx if ctx is not None else _Ctx(nopython=False)
        self.nopython = ctx.nopython
        self.ns = ctx.ns
        self.nests = ctx.nests  # (namespace name, NestCode)
        self._nest_names = ctx.nest_names
        self.loops: list = ctx.loops  # (namespace name, module source, signature) of compiled control flow
        self.lines: list = []
        self._names: dict = dict(in_names or {})
        self.out_names: list = []
        if prog is None:
            return
        if self.nopython:
            self._build_body()
        else:
            self._build()

    def _const(self, value: Any) -> str:
        name = self.ctx.fresh("_k")
        self.ns[name] = value
        if self.nopython:
            self.ctx.consts.append((name, value))
        return name

    def _var(self, v: Any) -> str:
        if type(v) is core.Literal:
            return self._const(np.asarray(v.val, v.aval.dtype))
        name = self._names.get(v)
        if name is None:
            name = self._names[v] = self.ctx.fresh("v")
        return name

    def _child(self, prog: ir.Program, ins: list, targets: list | None = None, carries: list | None = None) -> tuple:
        """A loop body ``prog`` reading the arrays named ``ins``: ``(pre, lines, outs, written,
        inplace)`` with ``pre`` the allocations that can move before the loop (buffers reused by
        every iteration), ``outs`` the output names, ``written`` the indices of the outputs computed
        directly into their ``targets`` buffer (named per output, or None) and ``inplace`` those
        updated in place in the buffer named ``carries[k]`` (an indexed update of a carry that
        nothing else reads: ``x.at[i].set(v)`` in a loop then costs O(1) per step, not O(size))."""
        ps = ProgramSource(prog, self.ctx, dict(zip(prog.in_slots[len(prog.consts) :], ins)))
        lines = ps.lines
        assigned: dict = {}  # name -> distinct right-hand sides binding it
        alias: dict = {}
        for ln in lines:
            if isinstance(ln, str):
                m = re.match(r"([A-Za-z_]\w*) = (.*)$", ln)
                if m:
                    assigned.setdefault(m.group(1), set()).add(m.group(2))
                    if _IDENT.fullmatch(m.group(2)):
                        alias[m.group(1)] = m.group(2)
        allocs = {ln.name: ln for ln in lines if isinstance(ln, _Alloc) and not assigned.get(ln.name)}
        written: set = set()
        inplace: set = set()
        taken: set = set()
        uses: dict = {}
        for ln in lines:
            if isinstance(ln, str) and not ln.lstrip().startswith("#"):
                for t in _IDENT.findall(ln):
                    uses[t] = uses.get(t, 0) + 1
        for t in ps.out_names:
            uses[t] = uses.get(t, 0) + 1
        for k, tgt in enumerate(targets or ()):
            name = ps.out_names[k]
            while name in alias and len(assigned[name]) == 1:
                name = alias[name]
            a = allocs.get(name)
            v = prog.out_slots[k]
            if tgt is None or a is None or a.fill is not None or name in taken or type(v) is core.Literal:
                continue
            if a.shape != tuple(v.aval.shape) or a.dtype != v.aval.dtype:
                continue
            i = next(j for j, ln in enumerate(lines) if ln is a)
            src = carries[k] if carries and k < len(carries) else None
            copy = f"lp.copy_into({a.name}, {src})"
            if src is not None and i + 1 < len(lines) and lines[i + 1] == copy and uses.get(src) == 1:
                a.slot = src  # the update's operand is this carry, read by nothing else: update it in place
                del lines[i + 1]
                inplace.add(k)
            else:
                a.slot = tgt
            taken.add(name)
            written.add(k)
        hoist = [ln for ln in allocs.values() if ln.slot is None and ln.fill is None]
        pre = [ln.render() for ln in hoist]
        moved = {id(ln) for ln in hoist}
        rest = [ln.render() if isinstance(ln, _Alloc) else ln for ln in lines if id(ln) not in moved]
        return pre, rest, ps.out_names, written, inplace

    def _build_body(self) -> None:
        """A loop body: straight-line numba code (no host calls, no buffer pools)."""
        prog = self.prog
        for v, c in zip(prog.in_slots, prog.consts):
            self._names[v] = self._const(np.ascontiguousarray(np.asarray(c)))
        for step, (ins, outs) in zip(prog.steps, prog.step_io):
            if isinstance(step, ir.Kernel):
                self._kernel(self.ctx.count("s"), step, ins, outs)
            elif isinstance(step, ir.InlineStep):
                names = [self._var(a) for a in ins]
                o, aval = self.ctx.fresh("o"), outs[0].aval
                self.lines.append(f"# {L._eqn_comment(step.eqn)}")
                self.lines += [_Alloc(o, aval.shape, aval.dtype), f"lp.copy_into({o}, {names[0]})"]
                self.lines += numba_loops.emit_op(step.eqn, names, o, self.ctx.fresh)
                self.lines.append(f"{self._var(outs[0])} = {o}")
            elif isinstance(step, ir.ControlStep):
                lines, names = numba_loops.emit(
                    step.eqn, step.bodies, [self._var(a) for a in ins], self.ctx.fresh, self._child
                )
                self.lines += lines
                for o, n in zip(outs, names):
                    self.lines.append(f"{self._var(o)} = {n}")
            else:
                raise AssertionError(f"host call in a compiled loop body: {L._eqn_comment(step.eqn)}")
        self.out_names = [self._var(v) for v in prog.out_slots]

    def _control_call(self, step: ir.ControlStep, ins: list, outs: list) -> None:
        """A control-flow step of the (Python) program: one call of a compiled loop function."""
        mctx = _Ctx(nopython=True)
        root = ProgramSource(None, mctx)
        args = [f"a{j}" for j in range(len(ins))]
        lines, names = numba_loops.emit(step.eqn, step.bodies, args, mctx.fresh, root._child)
        lines = [ln.render() if isinstance(ln, _Alloc) else ln for ln in lines]
        params = args + [n for n, _ in mctx.consts]
        fn = ["@njit(cache=CACHE, nogil=True, error_model='numpy')", f"def loop({', '.join(params)}):"]
        fn += ["    " + ln for ln in lines]
        fn.append(f"    return ({''.join(n + ', ' for n in names)})")
        parts = [f"# fjax compiled {step.eqn.primitive.name} (generated; runtime {disk_cache._RT_VERSION})", _PRELUDE]
        parts.append(f"from fjax.backends.numba import loops as lp  # BLAS: {numba_loops.BLAS}\n")
        for fname, nc in mctx.nests:
            # one module holds every nest: module-level constants ``k<j>`` get the nest's prefix
            nsrc = re.sub(r"\bk(\d+)\b", rf"{fname}_k\1", nc.src)
            parts.append(re.sub(r"^def nest\(", f"def {fname}(", nsrc, count=1, flags=re.M))
        parts.append("\n".join(fn) + "\n")
        src = "\n".join(parts).replace("CACHE", str(bool(config.fjax_disk_cache)))
        lname = self.ctx.fresh("_loop")
        # one signature, every argument a read-only C array (writable arrays convert to it): a
        # loop is compiled once, whichever of its inputs happen to be writable on a given call
        arrs = [a.aval for a in ins] + [np.asarray(v) for _, v in mctx.consts]
        sig = tuple(types.Array(numba.from_dtype(np.dtype(a.dtype)), a.ndim, "C", readonly=True) for a in arrs)
        self.loops.append((lname, src, sig))
        call = [self._var(a) for a in ins] + [self._const(v) for _, v in mctx.consts]
        self.lines.append(f"# {L._eqn_comment(step.eqn)}")
        self.lines.append(f"_r = {lname}({', '.join(call)})")
        for k, o in enumerate(outs):
            self.lines.append(f"{self._var(o)} = _r[{k}]")

    def _build(self) -> None:
        prog = self.prog
        nconst = len(prog.consts)
        args = []
        body = self.lines
        kernel_inputs = set()
        for step, (ins, _) in zip(prog.steps, prog.step_io):
            if isinstance(step, (ir.Kernel, ir.ControlStep)):
                kernel_inputs.update(ins)
        for j, v in enumerate(prog.in_slots):
            if j < nconst:
                c = np.asarray(prog.consts[j])
                self._names[v] = self._const(np.ascontiguousarray(c))
            else:
                n = self._var(v)
                args.append(n)
                if v in kernel_inputs:
                    body.append(f"{n} = _contig({n})")
        body.append(_IN_DONE)
        for si, (step, (ins, outs)) in enumerate(zip(prog.steps, prog.step_io)):
            if isinstance(step, ir.ControlStep):
                self._control_call(step, ins, outs)
                continue
            if isinstance(step, ir.HostCall):
                eqn = step.eqn
                kern = host_kernel(eqn)
                if kern is not None:
                    call = f"{self._const(kern)}({', '.join(self._var(a) for a in eqn.invars)})"
                else:
                    f = self._const(eqn.primitive.impl)
                    p = self._const(dict(eqn.params))
                    call = f"{f}({', '.join(self._var(a) for a in eqn.invars)}, **{p})"
                body.append(f"# {'compiled op' if kern is not None else 'host'}: {L._eqn_comment(eqn)}")
                if eqn.primitive.multiple_results:
                    body.append(_Host(f"_r = {call}"))
                    for k, o in enumerate(outs):
                        body.append(_Host(f"{self._var(o)} = _host_out(_r[{k}], {self._const(o.aval.dtype)})"))
                else:
                    body.append(_Host(f"{self._var(outs[0])} = _host_out({call}, {self._const(outs[0].aval.dtype)})"))
                continue
            self._kernel(si, step, ins, outs)
        outs = ", ".join(self._var(v) for v in prog.out_slots)
        body.append(f"return [{outs}]")
        self.slots = plan_memory(body) if POOL_BUFFERS else []
        if self.slots:
            # one buffer set per concurrent call: taken at entry, given back at exit (list.pop and
            # append are atomic, so threads and re-entrant calls each get their own set)
            self.ns["_pool"] = []
            self.ns["_new_slots"] = _new_slots(self.slots)
            names = "".join(f"_m{k}, " for k in range(len(self.slots)))
            head = ["try:", "    _b = _pool.pop()", "except IndexError:", "    _b = _new_slots()", f"({names}) = _b"]
            body[body.index(_IN_DONE) : body.index(_IN_DONE) + 1] = head
            body.insert(len(body) - 1, "_pool.append(_b)")
        else:
            body.remove(_IN_DONE)

    def _kernel(self, si: int, k: ir.Kernel, ins: list, outs: list) -> None:
        bufname: dict = {}
        for p, v in zip(k.params, ins):
            bufname[p.name] = self._var(v)

        def bn(b: ir.Buf) -> str:
            n = bufname.get(b.name)
            if n is None:
                n = bufname[b.name] = f"s{si}{b.name}"
            return n

        consts = {c.name: c for c in k.consts}
        body = self.lines
        for st in k.stmts:
            if isinstance(st, ir.LoopNest):
                annotate_nest(st)
                nc = renderer.render_nest(st, consts)
                fname = self._nest_names.get(nc.src)
                if fname is None:
                    fname = self._nest_names[nc.src] = f"_nest{len(self.nests)}"
                    self.nests.append((fname, nc))
                body.append(
                    f"# nest: domain {list(st.domain)}" + (f" reduce {list(st.reduce_axes)}" if st.reduce_axes else "")
                )
                for b, _ in st.stores:
                    body.append(_Alloc(bn(b), b.shape, b.dtype))
                for r in st.reductions:
                    if nc.acc_mode:
                        ident = np.asarray(_ident_value(r.kind, r.acc_dtype), r.acc_dtype)
                        fill = self._const(ident) + ("[()]" if self.nopython else "")
                        body.append(_Alloc(f"{bn(r.out)}_acc", nc.kept_shape, r.acc_dtype, fill))
                    else:
                        body.append(_Alloc(bn(r.out), r.out.shape, r.out.dtype))
                call = []
                for _, buf, view, _, _ in nc.args:
                    n = bn(buf) + ("_acc" if view == "acc" else "")
                    call.append(self._loop_view(n, view, nc, buf) if self.nopython else _VIEW[view](n, nc))
                call += [str(e[1]) for e in nc.extents]
                body.append(f"{fname}({', '.join(call)})")
                if nc.acc_mode:
                    for r in st.reductions:
                        body.append(f"{bn(r.out)} = {bn(r.out)}_acc.astype(np.{r.out.dtype.name})")
            elif isinstance(st, ir.Dot):
                self._dot(st, bn)
            elif isinstance(st, ir.Reshape):
                if self.nopython:
                    body.append(f"{bn(st.out)} = lp.as_shape({bn(st.src)}, {_shape(st.out.shape)})")
                else:
                    body.append(f"{bn(st.out)} = {bn(st.src)}.reshape({_shape(st.out.shape)})")
        for o, v in zip(k.outputs, outs):
            n = bn(o)
            if n != self._var(v):
                body.append(f"{self._var(v)} = {n}")

    def _dot(self, d: ir.Dot, bn: Callable) -> None:
        if self.nopython:
            self._loop_dot(d, bn)
            return
        nb, nl, nk, nr = d.dims
        body = self.lines
        body.append(f"# {d.comment}")
        lhs, rhs = bn(d.lhs), bn(d.rhs)
        if d.lhs_perm is not None:
            lhs = f"np.transpose({lhs}, {d.lhs_perm})"
        if d.rhs_perm is not None:
            rhs = f"np.transpose({rhs}, {d.rhs_perm})"
        o = bn(d.out)
        if nb == 1:
            lx = f"{lhs}.reshape({nk}, {nl}).T" if d.lhs_t else f"{lhs}.reshape({nl}, {nk})"
            rx = f"{rhs}.reshape({nr}, {nk}).T" if d.rhs_t else f"{rhs}.reshape({nk}, {nr})"
            body.append(_Alloc(o, (nl, nr), d.out.dtype))
            body.append(f"np.dot({lx}, {rx}, {o})")
        else:
            lx = (
                f"{lhs}.reshape({nb}, {nk}, {nl}).transpose(0, 2, 1)" if d.lhs_t else f"{lhs}.reshape({nb}, {nl}, {nk})"
            )
            rx = (
                f"{rhs}.reshape({nb}, {nr}, {nk}).transpose(0, 2, 1)" if d.rhs_t else f"{rhs}.reshape({nb}, {nk}, {nr})"
            )
            body.append(_Alloc(o, (nb, nl, nr), d.out.dtype))
            body.append(f"np.matmul({lx}, {rx}, out={o})")
        body.append(f"{o} = {o}.reshape({_shape(d.out.shape)})")

    @staticmethod
    def _loop_view(n: str, view: str, nc: NestCode, buf: ir.Buf) -> str:
        """``_VIEW`` inside a compiled loop: ``lp.as_shape`` with the static shape (no reshape call)."""
        if view == "one":
            return f"lp.as_shape({n}, (1,))"
        if view in ("flat", "full", "keptflat"):
            return f"lp.as_shape({n}, ({math.prod(buf.shape)},))"
        if view == "rows":
            return f"lp.as_shape({n}, ({nc.extents[0][1]}, {nc.extents[1][1]}))"
        return n

    def _loop_dot(self, d: ir.Dot, bn: Callable) -> None:
        """A GEMM inside a compiled loop: ``numba_loops``' loop matmuls on contiguous blocks."""
        nb, nl, nk, nr = d.dims
        body = self.lines
        body.append(f"# {d.comment}")
        lhs, rhs = bn(d.lhs), bn(d.rhs)
        if d.lhs_perm is not None:
            lhs = f"np.ascontiguousarray(np.transpose({lhs}, {d.lhs_perm}))"
        if d.rhs_perm is not None:
            rhs = f"np.ascontiguousarray(np.transpose({rhs}, {d.rhs_perm}))"
        lsh = (nk, nl) if d.lhs_t else (nl, nk)
        rsh = (nr, nk) if d.rhs_t else (nk, nr)
        fn = numba_loops.gemm_name(nb, nl, nk, nr, d.lhs_t, d.rhs_t)
        o = bn(d.out)
        g = o + "g"  # the GEMM's block (allocated once when the loop hoists it); ``o`` views it
        if nb == 1:
            body.append(_Alloc(g, (nl, nr), d.out.dtype))
            body.append(f"lp.{fn}(lp.as_shape({lhs}, {_shape(lsh)}), lp.as_shape({rhs}, {_shape(rsh)}), {g})")
        else:
            body.append(_Alloc(g, (nb, nl, nr), d.out.dtype))
            lx, rx = f"lp.as_shape({lhs}, {_shape((nb, *lsh))})", f"lp.as_shape({rhs}, {_shape((nb, *rsh))})"
            body.append(f"lp.{fn}({lx}, {rx}, {g})")
        body.append(f"{o} = lp.as_shape({g}, {_shape(d.out.shape)})")

    def source(self) -> str:
        args = [self._names[v] for v in self.prog.in_slots[len(self.prog.consts) :]]
        head = f"def program({', '.join(args)}):"
        lines = [ln.render() if isinstance(ln, _Alloc) else ln for ln in self.lines]
        return "\n".join([head] + ["    " + ln for ln in lines]) + "\n"


def _ident_value(kind: str, dt: np.dtype) -> Any:
    dt = np.dtype(dt)
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if kind in ("max", "min"):
        big = kind == "min"
        if dt == np.bool_:
            return big
        if dt.kind == "f":
            return np.inf if big else -np.inf
        info = np.iinfo(dt)
        return info.max if big else info.min
    return kind == "and"


def annotate_nest(nest: ir.LoopNest) -> None:
    nest.parallel = len(nest.domain) > 0 and nest.size >= PARALLEL_MIN_SIZE and _work(nest) >= PARALLEL_WORK_THRESHOLD


def annotate(kernel: ir.Kernel) -> None:
    for nest in kernel.loop_nests():
        annotate_nest(nest)


def _nest_module_source(nc: NestCode) -> str:
    src = f"# fjax loop-nest kernel (generated; runtime {disk_cache._RT_VERSION})\n{_PRELUDE}\n{nc.src}"
    return src.replace("CACHE", str(bool(config.fjax_disk_cache)))


def load_nest(nc: NestCode) -> Any:
    # the same nest source can be shared by programs with other signatures: reopen it to compile
    return disk_cache.load_compiled(_nest_module_source(nc), "nest", nc.signature(), reenable=True)


_PRELUDE = """import math
import numpy as np
from numba import njit, prange
from fjax.backends.numba import vmath as vm
from fjax.backends.numba import runtime as rt
"""


def build(closed: ClosedJaxpr, loops: bool = True) -> ProgramSource | None:
    prog = L.build_program(closed, loops=loops)
    if prog is None:
        return None
    return ProgramSource(prog)


def compile_program(closed: ClosedJaxpr, loops: bool = True) -> Callable | None:

    ps = build(closed, loops)
    if ps is None:
        return None
    for fname, nc in ps.nests:
        ps.ns[fname] = load_nest(nc)
    for lname, lsrc, sig in ps.loops:
        ps.ns[lname] = disk_cache.load_compiled(lsrc, "loop", sig, reenable=True)
    src = ps.source()
    path = disk_cache.write_program(src)
    exec(compile(src, path, "exec"), ps.ns)  # noqa: S102 - generated from the jaxpr
    fn = ps.ns["program"]
    fn.__fjax_source__ = source_of(ps)
    fn.__fjax_path__ = path
    fn.__fjax_kernels__ = [ps.ns[fname] for fname, _ in ps.nests]
    return fn


def source_of(ps: ProgramSource) -> str:
    parts = [ps.source()]
    for fname, nc in ps.nests:
        parts.append(
            f"# ---- {fname}: {nc.mode} loop nest\n{nc.src.replace('CACHE', str(bool(config.fjax_disk_cache)))}"
        )
    for lname, lsrc, _ in ps.loops:
        parts.append(f"# ---- {lname}: compiled control flow\n{lsrc}")
    return "\n".join(parts)


def source_for(closed: ClosedJaxpr) -> str:
    """Generated source for ``closed``: the program function, then its loop-nest kernels."""
    ps = build(closed)
    if ps is None:
        return "# nothing to compile: evaluated eagerly\n"
    return source_of(ps)


def clear_cache() -> None:
    disk_cache.clear_cache()


def clear_disk_cache() -> None:
    disk_cache.clear_disk_cache()


def _guard_helper_caches() -> None:
    from fjax.backends.numba import conv, host_kernels, runtime, vmath  # noqa: PLC0415

    disk_cache.guard_module_caches([numba_loops, host_kernels, conv, runtime, vmath])


_guard_helper_caches()
