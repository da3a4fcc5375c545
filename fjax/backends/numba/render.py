"""Loop-nest renderer of the numba backend: a ``kernel_ir.LoopNest`` -> the source of one
``numba.njit`` kernel (``NestCode``), through the op table ``NumbaRenderer.code_for_op``.

Kernels are compiled without fastmath, so NaN/inf semantics are IEEE exact. Reductions run the
body over tiles into a small buffer (vectorizable), combine each tile pairwise (float32 sums in
float64) and the tiles in order, so results do not depend on vector width or thread count. Tiled
loops run float32 sin/cos through ``vmath``'s fast paths and rerun a tile with the exact functions
when it holds an input out of their range (``NumbaRenderer.fast_for_op``). Scalar ops render through
``NumbaRenderer.code_for_op`` (op name -> snippet); a CUDA renderer can subclass it. Ops with a
complex operand or result render as calls to ``complex_math`` (``cm.<name>``).

Which nests run in parallel is decided before rendering, by the IR pass ``passes.schedule`` with
``parallel_policy``; tile sizes and chunking follow from the constants below.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable

import numba
import numpy as np
from numba import types

from fjax.backends import kernel_ir as ir
from fjax.backends import passes
from fjax.backends.numba import complex_math as cm

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
    if dt.kind == "c" and kind in ("sum", "prod"):  # (complex64 values widen to a complex128 acc)
        return f"({acc} {'+' if kind == 'sum' else '*'} {v})"
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
            def r(a: list, op: ir.Op) -> str:
                if op.dtype in _ARG_FLOATS and all(d == op.dtype for d in op.in_dtypes):
                    # float32 op float32 is float32 in numba already: no cast call to type and lower
                    return f"({a[0]} {sym} {a[1]})"
                return f(f"{a[0]} {sym} {a[1]}", op)

            return r

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
            if op.dtype in _ARG_FLOATS and all(d == op.dtype for d in op.in_dtypes):
                return f"({a[0]} / {a[1]})"
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
                lo, hi = ir.f2i_bounds(dst)
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
            # fjax.random's private primitives: a fused multiply-add rounded once, a bit cast
            "random_fma": lambda a, op: f"rt.fma({', '.join(f(x, op) for x in a)})",
            "random_bitcast": lambda a, op: f"rt.bitcast({a[0]}, {op.dtype.name!r})",
        }

        # ops with a complex operand or result: ``complex_math``'s spelling (real/imag/conj have no
        # other); ``select_n`` holds any type as it is
        def complex_or(fn: Callable | None) -> Callable:
            def r(a: list, op: ir.Op) -> str:
                if fn is None or cm.involves_complex(op):
                    return cm.render_op(a, op, f2i)
                return fn(a, op)

            return r

        def f2i(x: str, dst: np.dtype) -> str:
            lo, hi = ir.f2i_bounds(dst)
            return f"{c(dst)}(rt.f2i(np.float64({x}), {lo!r}, {hi!r}))"

        for name in cm.OPS - {"select_n"}:
            self.code_for_op[name] = complex_or(self.code_for_op.get(name))

    def const(self, c: ir.Const) -> str:
        v = c.value
        if c.dtype == np.bool_:
            return f"np.bool_({bool(v)})"
        if c.dtype.kind == "f":
            return f"{_T(c.dtype)}(float.fromhex({float(v).hex()!r}))"
        if c.dtype.kind == "c":
            return cm.const(v, c.dtype)
        return f"{_T(c.dtype)}({int(v)})"

    # -- loop nests: one small shape-generic njit kernel each ---------------------------------
    def render_nest(self, nest: ir.LoopNest, consts: dict) -> NestCode:
        """A shape-generic kernel for ``nest``: extents are arguments, so one compiled kernel serves
        every nest with the same structure (across programs, processes via the disk cache)."""
        loads = [s for s in nest.body if isinstance(s, ir.Load)]
        n = len(nest.domain)
        red = tuple(sorted(nest.reduce_axes or ()))
        stores, reds = nest.stores, nest.reductions
        local: dict = {}
        kconsts: list = []
        # (name, value): float constants taken as trailing arguments (``passes.split_nests``
        # marks the pieces of a cut nest so: pieces differing only in constants share a kernel)
        cargs: list = []
        const_args = getattr(nest, "const_args", False)

        def nm(x: str) -> str:
            if x not in local:
                c = consts.get(x)
                if const_args and c is not None and c.dtype in _ARG_FLOATS and not np.isnan(c.value):
                    local[x] = f"k{len(kconsts)}"
                    cargs.append((f"k{len(kconsts)}", ScalarArg(c.value, c.dtype)))
                    kconsts.append(None)
                elif x in consts:
                    local[x] = f"k{len(kconsts)}"
                    c = consts[x]
                    note = str(c.dtype.type(c.value)) if c.dtype.kind in "fc" else ""
                    kconsts.append(f"k{len(kconsts)} = {self.const(c)}  # {c.dtype} {note}".rstrip())
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
                body.append(f"{nm(s.out)} = {code}  # {s.op}{ir.params_text(s.params)}")
                fast = self.fast_for_op.get(s.op)
                fast = fast(args, s) if fast is not None else None
                if fast is None:
                    fast_body.append(body[-1])
                    rerun_body.append(body[-1])
                else:
                    fast_body.append(f"{nm(s.out)} = {fast[0]}  # {s.op}{ir.params_text(s.params)} (fast path)")
                    rerun_body.append(f"{nm(s.out)} = {fast[2]}  # {s.op}{ir.params_text(s.params)}")
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

        if nest.layout is None:  # not scheduled (a nest rendered on its own)
            passes.schedule_nest(nest, parallel_policy, TILE, REDUCE_CHUNKS)
        mode = nest.layout
        tile = nest.tile  # the schedule's tile size
        trailing = nest.trailing_reduce()
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
        acc_mode = nest.accumulate
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

        def ld_lines(ind: str, idx_of: Callable, skip: frozenset | set = frozenset()) -> list:
            lines = []
            for li, ld in enumerate(inner_loads):
                if li in skip:
                    continue
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

        copies = [0]

        def tile_loop(ind: str, fast: bool) -> list:
            lines = [f"{ind}{nm(ld.out)} = {ins[ld.buf.name][0]}t[i]" for ld in inner_loads]
            lines += [ind + b for b in (fast_body if fast else rerun_body)]
            if fast:
                # an int32 count: an int64 one makes LLVM vectorize the float32 body 8 lanes wide
                lines.append(f"{ind}oob = np.int32(oob + {' + '.join(oob)})")
            lines += [f"{ind}y{j}t[i] = s{j}" for j in range(len(stores))]
            lines += [f"{ind}tile{j}[i] = r{j}" for j in range(len(reds))]
            copies[0] += 1
            if copies[0] > 1:
                # every copy of the body gets its own names: a name assigned in several places
                # makes numba's SSA reconstruction walk every block once per such name, which is
                # quadratic in the body's length (a 200-op chain took 20 s in it)
                own = {m.group(1) for ln in lines if (m := _ASSIGNED.match(ln))}
                own.discard("oob")

                def rename(m: re.Match, k: int = copies[0]) -> str:
                    return f"{m.group(1)}_{k}" if m.group(1) in own else m.group(1)

                lines = [_NAME.sub(rename, ln) for ln in lines]
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
                    out.append(f"{ind}tb{j} = np.empty({tile + tile // 2}, {_T(ad)})")
                    out.append(f"{ind}tile{j} = tb{j}[{tile // 2}:]")
                elif ad.itemsize % td.itemsize == 0:
                    out.append(f"{ind}tb{j} = np.empty({tile // 2 + tile * td.itemsize // ad.itemsize}, {_T(ad)})")
                    out.append(f"{ind}tile{j} = tb{j}[{tile // 2}:].view({_T(td)})")
                else:
                    out.append(f"{ind}tb{j} = np.empty({tile // 2}, {_T(ad)})")
                    out.append(f"{ind}tile{j} = np.zeros({tile}, {_T(td)})")
                out.append(f"{ind}tw{j} = tb{j}[: {tile // 2}]")

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
            out.append(f"{ind}for t0 in range({lo}, {hi}, {tile}):")
            out.append(f"{ind}    t1 = min(t0 + {tile}, {hi})")
            for x in tile_ins:
                out.append(f"{ind}    {x}t = {view(x)}")
            for j in range(len(stores)):
                out.append(f"{ind}    y{j}t = {view(f'y{j}')}")
            tile_pass(ind + "    ", "t1 - t0")
            if not reds:
                return
            out.append(f"{ind}    w = {tile // 2}")
            out.append(f"{ind}    if t1 - t0 < {tile}:  # a last short tile: pad to a power of two")
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
            nch = nest.chunks
            for x in [*tile_ins, *(f"y{j}" for j in range(len(stores)))]:
                out.append(f"{x}f = {x}.reshape(nk * nr)")
            start = len(out)
            out.append(f"for c in {'prange' if par else 'range'}({nch}):")
            tile_bufs("    ")
            out.append(f"    klo = (c * nk) // {nch}" if nch > 1 else "    klo = 0")
            out.append(f"    khi = ((c + 1) * nk) // {nch}" if nch > 1 else "    khi = nk")
            branch = len(out)
            out.append(f"    if 0 < nr <= {SHORT_ROWS}:")
            # short rows (softmax over 10 classes): the body runs vectorized over as many whole
            # rows as fit in a tile, then each row is combined in order
            out.append(f"        rpt = {tile} // nr")
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
            other = len(out)
            out.append("    else:")
            out.append("        for k in range(klo, khi):")
            tiled("            ", "0", "nr", lambda a: f"{a}[k, t0:t1]")
            for j, r in enumerate(reds):
                out.append(f"            z{j}[k] = {_T(r.out.dtype)}(acc{j})")
            # the row length is static: keep only its path (the source names the class, so a
            # kernel shared by another nest of the same body is one of the same class; numba
            # compiles half the code: ~0.7 s less per row-reduction kernel)
            short = 0 < extents[1][1] <= SHORT_ROWS
            kept_lines = out[branch + 1 : other] if short else out[other + 1 :]
            out[branch:] = [f"    # rows of {'at most' if short else 'more than'} {SHORT_ROWS}"] + [
                ln[4:] for ln in kept_lines
            ]
            if nch == 1:  # one chunk: no chunk loop
                out[start:] = [ln[4:] for ln in out[start + 1 :]]
        elif mode in ("full", "flat"):
            nch = nest.chunks
            if nch == 1:  # one chunk: the tiles of the whole range, no chunk loop or partials
                tile_bufs("")
                tiled("", "0", "n", lambda a: f"{a}[t0:t1]")
            else:
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
            for j, r in enumerate(reds):
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
            elif getattr(nest, "blocks", None) and not red:
                # a transpose (``passes.transpose_blocks``): the other axes outermost, then axes b
                # (read contiguously by some load) and a (written contiguously) in blocks of
                # ``bb`` x ``ba``, each block's elements looping along ``a``. Loads at plain
                # indices and the stores go through per-block views indexed from 0 (as the tiled
                # loops: absolute indices keep numba's negative-index wrap-around, ~1.5x slower)
                b, a, bb, ba = nest.blocks
                first = True
                for ax in range(n):
                    if ax not in (a, b):
                        out.append(f"{ind}for i{ax} in {'prange' if (par and first) else 'range'}(d{ax}):")
                        ind += "    "
                        first = False
                if par and first:
                    out.append(f"{ind}for kb{b} in prange((d{b} + {bb - 1}) // {bb}):")
                    out.append(f"{ind}    ob{b} = kb{b} * {bb}")
                else:
                    out.append(f"{ind}for ob{b} in range(0, d{b}, {bb}):")
                ind += "    "
                out.append(f"{ind}nb{b} = min({bb}, d{b} - ob{b})")
                out.append(f"{ind}for ob{a} in range(0, d{a}, {ba}):")
                ind += "    "
                out.append(f"{ind}nb{a} = min({ba}, d{a} - ob{a})")

                def sl(e: Any) -> str:
                    if e in (a, b):
                        return f"ob{e} : ob{e} + nb{e}"
                    return "0" if e is None else f"i{e}"

                viewed = []
                for li, ld in enumerate(inner_loads):
                    if all(e is None or type(e) is int for e in ld.index) and (a in ld.index or b in ld.index):
                        out.append(f"{ind}w{li} = {ins[ld.buf.name][0]}[{', '.join(sl(e) for e in ld.index)}]")
                        viewed.append(li)
                for j in range(len(stores)):
                    out.append(f"{ind}v{j} = y{j}[{', '.join(sl(e) for e in range(n))}]")
                out.append(f"{ind}for l{b} in range(nb{b}):")
                ind += "    "
                out.append(f"{ind}i{b} = ob{b} + l{b}")
                out.append(f"{ind}for l{a} in range(nb{a}):")
                ind += "    "
                out.append(f"{ind}i{a} = ob{a} + l{a}")
                for li in viewed:
                    idx = ", ".join(f"l{e}" for e in inner_loads[li].index if e in (a, b))
                    out.append(f"{ind}{nm(inner_loads[li].out)} = w{li}[{idx}]")
                out.extend(ld_lines(ind, nd_idx, set(viewed)))
                out.extend(ind + b_ for b_ in body)
                out.extend(f"{ind}v{j}[l{b}, l{a}] = s{j}" for j in range(len(stores)))  # b < a = n - 1
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
        kconsts = [k for k in kconsts if k is not None]
        if cargs:
            # passed as Python floats (float64, exact for both dtypes): no conversion call per
            # argument in the calling program
            body_names = {n: f"{n}_" for n, _ in cargs}
            out = [_NAME.sub(lambda m: body_names.get(m.group(1), m.group(1)), ln) for ln in out]
            out[:0] = [f"{n}_ = {_T(a.dtype)}({n})" for n, a in cargs]
            extents = extents + cargs
        params = [a[0] for a in args] + [e[0] for e in extents]
        blk = getattr(nest, "blocks", None)
        deco = f"@njit(cache=CACHE, error_model='numpy', nogil=True{', parallel=True' if par else ''})"
        src = "\n".join(
            [
                f"# {mode} loop nest"
                + (f", reduce axes {list(red)}" if red else "")
                + (f", axes {blk[0]} x {blk[1]} in blocks" if blk and not red else ""),
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
        return tuple(sig) + tuple(types.float64 if isinstance(e[1], ScalarArg) else types.int64 for e in self.extents)


_ARG_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class ScalarArg(str):
    """A constant passed to a nest kernel as a trailing argument (after the loop extents): the
    source text of a Python float (``str`` of it is what the calling program writes)."""

    def __new__(cls, value: float, dtype: np.dtype) -> "ScalarArg":
        v = float(value)
        self = str.__new__(cls, repr(v) if math.isfinite(v) else ("1e999" if v > 0 else "-1e999"))
        self.dtype = np.dtype(dtype)
        return self


_NAME = re.compile(r"\b([A-Za-z_]\w*)\b")
_ASSIGNED = re.compile(r"\s*([A-Za-z_]\w*) = ")


def _shape(shape: tuple) -> str:
    return "(" + "".join(f"{s}, " for s in shape).rstrip(" ") + ")" if shape else "()"


renderer = NumbaRenderer()


_HEAVY = {
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


def _heavy(op: ir.Op) -> bool:
    # (complex division, powers and functions: a few real functions and branches each)
    return op.op in _HEAVY or (op.op in cm.HEAVY and cm.involves_complex(op))


# the compile budget of one loop-nest kernel (``passes.split_nests``), in ``compile_weight`` units
NEST_BUDGET = 64


def compile_weight(op: ir.Op) -> int:
    """What an op costs to compile, roughly: the transcendental functions are inlined polynomials
    (with range reductions and, for sin/cos, an exact rerun path), several times a plain op."""
    return 4 if _heavy(op) else 1


def _work(nest: ir.LoopNest) -> int:
    cost = 1 + sum(20 if (isinstance(s, ir.Op) and _heavy(s)) else 1 for s in nest.body)
    return nest.size * cost


def parallel_policy(nest: ir.LoopNest) -> bool:
    """Whether ``nest`` runs with ``prange`` (the scheduling pass asks, ``passes.schedule``)."""
    return len(nest.domain) > 0 and nest.size >= PARALLEL_MIN_SIZE and _work(nest) >= PARALLEL_WORK_THRESHOLD


def annotate_nest(nest: ir.LoopNest) -> None:
    nest.parallel = parallel_policy(nest)


def annotate(kernel: ir.Kernel) -> None:
    for nest in kernel.loop_nests():
        annotate_nest(nest)
