"""Kernel IR -> readable Python source -> ``numba.njit`` callable (the CPU backend of ``fjax.jit``).

Each kernel becomes a module written to ``config.fjax_cache_dir/kernels/k_<source hash>.py``
(a real file, so tracebacks point at it and numba's on-disk cache, ``cache=True``, works across
processes). The source has:

- one ``_nestN`` function per fused loop nest holding the nest's scalar body, one line per
  equation with a ``# eqn`` comment naming the primitive. It is compiled without any fastmath
  flag, so NaN/inf semantics are IEEE exact; LLVM inlines it into the loop.
- the kernel function: buffer allocation, the loops (``prange`` for large nests, chunked for
  full reductions so the result is deterministic), loads, stores and accumulators, GEMMs through
  ``np.dot``. Only this function gets ``fastmath={'reassoc', 'contract'}``, which lets LLVM
  vectorize the accumulators of reductions; float32 sums accumulate in float64.

Scalar ops render through ``NumbaRenderer.code_for_op`` (op name -> snippet); a CUDA renderer can
subclass and override what differs. Compiled callables are cached in memory by source hash (and,
in ``lowering``, by the identity of the ClosedJaxpr). With a single kernel the numba dispatcher
itself is returned: per-call overhead is numba's argument unboxing (well under a microsecond per
array).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import math
import os
import sys
import tempfile
from typing import Any, Callable

import numba
import numpy as np
from numba import njit, types

from fjax import core
from fjax.config import config
from fjax.core import ClosedJaxpr
from fjax.interpreters import lowering as L

log = logging.getLogger("fjax.lowering")

# nests with at least this much work (elements x body cost) run with prange; measured on the
# 2-core reference machine: below ~1e5 the thread pool wake-up (~20-50 us) is not repaid
PARALLEL_WORK_THRESHOLD = 300_000
PARALLEL_MIN_SIZE = 8192
REDUCE_CHUNKS = 64
TILE = 512

_opts = dict(nogil=True, cache=True, error_model="numpy", inline="always")

# ---------------------------------------------------------------------------------------------
# runtime helpers the generated code calls (as ``rt.<name>``)


@njit(**_opts)
def fmax(a, b):
    """NaN-propagating maximum (np.maximum)."""
    return a if (a > b or a != a) else b


@njit(**_opts)
def fmin(a, b):
    """NaN-propagating minimum (np.minimum)."""
    return a if (a < b or a != a) else b


@njit(**_opts)
def fsign(x):
    return x if x != x else (x - x + 1 if x > 0 else (x - x - 1 if x < 0 else x))


@njit(**_opts)
def idiv(x, y):
    """Integer division rounding toward zero; x / 0 = -1 (XLA on CPU)."""
    if y == 0:
        return -1
    q = x // y
    if q < 0 and q * y != x:
        q += 1
    return q


@njit(**_opts)
def irem(x, y):
    """Integer remainder with the dividend's sign (C fmod); x % 0 = x."""
    if y == 0:
        return x
    return x - y * idiv(x, y)


@njit(**_opts)
def f2i(x, lo, hi):
    """float -> integer as XLA: truncate, NaN -> 0, saturate to [lo, hi] (as float64 bounds)."""
    if x != x:
        return 0.0
    t = np.trunc(x)
    return lo if t <= lo else (hi if t >= hi else t)


@njit(**_opts)
def shl(x, y, bits):
    return x << y if (y >= 0 and y < bits) else x - x


@njit(**_opts)
def shra(x, y, bits):
    if y >= 0 and y < bits:
        return x >> y
    return x - x - 1 if x < 0 else x - x


_RT_VERSION = ""

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
            def r(a: list, op: L.Op) -> str:
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
            def r(a: list, op: L.Op) -> str:
                if op.dtype == np.bool_:
                    return f"({a[0]} {'or' if kind == 'max' else 'and'} {a[1]})"
                if op.dtype.kind == "f":
                    return f"rt.f{kind}({a[0]}, {a[1]})"
                return f(f"{kind}({a[0]}, {a[1]})", op)

            return r

        def div(a: list, op: L.Op) -> str:
            if op.dtype.kind == "f":
                return f(f"{a[0]} / {a[1]}", op)
            return f(f"rt.idiv({a[0]}, {a[1]})", op)

        def rem(a: list, op: L.Op) -> str:
            if op.dtype.kind == "f":
                return f(f"np.fmod({a[0]}, {a[1]})", op)
            return f(f"rt.irem({a[0]}, {a[1]})", op)

        def sign(a: list, op: L.Op) -> str:
            if op.dtype.kind == "f":
                return f(f"rt.fsign({a[0]})", op)
            if op.dtype.kind == "u":
                return f(f"{a[0]} > 0", op)
            return f(f"({a[0]} > 0) - ({a[0]} < 0)", op)

        def round_(a: list, op: L.Op) -> str:
            if int(op.params.get("rounding_method", 0)) == 1:
                return f(f"np.rint({a[0]})", op)
            return f(f"np.sign({a[0]}) * np.floor(np.abs({a[0]}) + {c(op.dtype)}(0.5))", op)

        def not_(a: list, op: L.Op) -> str:
            return f"(not {a[0]})" if op.dtype == np.bool_ else f(f"~{a[0]}", op)

        def integer_pow(a: list, op: L.Op) -> str:
            y = int(op.params["y"])
            if y == 0:
                return f"{c(op.dtype)}(1)"
            e = _ipow_expr(a[0], abs(y))
            return f(f"{c(op.dtype)}(1) / {e}", op) if y < 0 else f(e, op)

        def convert(a: list, op: L.Op) -> str:
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

        def select_n(a: list, op: L.Op) -> str:
            w, cases = a[0], a[1:]
            if len(cases) == 1:
                return cases[0]
            if np.dtype(op.in_dtypes[0]) == np.bool_:
                return f"({cases[1]} if {w} else {cases[0]})"
            e = cases[-1]
            for i in range(len(cases) - 2, -1, -1):
                e = f"({cases[i]} if {w} == {i} else {e})"
            return e

        def clamp(a: list, op: L.Op) -> str:
            lo, x, hi = a
            if op.dtype.kind == "f":
                return f"rt.fmin(rt.fmax({x}, {lo}), {hi})"
            return f(f"min(max({x}, {lo}), {hi})", op)

        def shift(kind: str) -> Callable:
            def r(a: list, op: L.Op) -> str:
                bits = op.dtype.itemsize * 8
                if kind == "left":
                    return f(f"rt.shl({a[0]}, {a[1]}, {bits})", op)
                if kind == "arith":
                    return f(f"rt.shra({a[0]}, {a[1]}, {bits})", op)
                u = f"np.uint{bits}"
                return f(f"({u}({a[0]}) >> {u}({a[1]}) if ({a[1]} >= 0 and {a[1]} < {bits}) else {u}(0))", op)

            return r

        def erf(a: list, op: L.Op) -> str:
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

    def const(self, c: L.Const) -> str:
        v = c.value
        if c.dtype == np.bool_:
            return f"np.bool_({bool(v)})"
        if c.dtype.kind == "f":
            return f"{_T(c.dtype)}(float.fromhex({float(v).hex()!r}))"
        return f"{_T(c.dtype)}({int(v)})"

    # -- whole kernels
    def render(self, k: L.Kernel, fastmath: bool = True, cache: bool = True) -> str:
        lines = [
            f"# fjax kernel {k.name} (generated; runtime {_RT_VERSION})",
            "import math",
            "import numpy as np",
            "from numba import njit, prange",
            "from fjax.interpreters import vmath as vm",
            "from fjax.interpreters import numba_cpu as rt",
            "",
        ]
        for c in k.consts:
            lines.append(f"{c.name} = {self.const(c)}")
        lines.append("")
        any_par = any(n.parallel for n in k.loop_nests())
        nest_fns = []
        for i, s in enumerate(k.stmts):
            if isinstance(s, L.LoopNest):
                nest_fns.append(self._render_body(i, s, lines))
        body: list[str] = []
        for i, s in enumerate(k.stmts):
            if isinstance(s, L.LoopNest):
                self._render_nest(i, s, body)
            elif isinstance(s, L.Dot):
                self._render_dot(s, body)
            elif isinstance(s, L.Reshape):
                src = s.src.name if s.src.contiguous else f"np.ascontiguousarray({s.src.name})"
                body.append(f"{s.out.name} = {src}.reshape({_shape(s.out.shape)})  # eqn: reshape")
        fm = ""  # no fastmath: the inlined bodies must keep IEEE semantics (NaN, inf, rounding)
        par = ", parallel=True" if any_par else ""
        lines.append(f"@njit(cache=CACHE, error_model='numpy'{fm}{par})")
        lines.append(f"def {k.name}({', '.join(p.name for p in k.params)}):")
        for b in body:
            lines.append("    " + b)
        outs = ", ".join(o.name for o in k.outputs)
        lines.append(f"    return ({outs}{',' if len(k.outputs) == 1 else ''})")
        return "\n".join(lines).replace("CACHE", str(bool(cache))) + "\n"

    def _render_body(self, i: int, nest: L.LoopNest, lines: list) -> None:
        args = [s.out for s in nest.body if isinstance(s, L.Load)]
        iotas = sorted({s.axis for s in nest.body if isinstance(s, L.Iota)})
        params = args + [f"i{a}" for a in iotas]
        red = ", ".join(str(a) for a in nest.reduce_axes or ())
        lines.append(f"# nest {i}: domain {list(nest.domain)}" + (f", reduce over axes ({red})" if red else ""))
        lines.append("@njit(cache=CACHE, error_model='numpy', inline='always')")
        lines.append(f"def _nest{i}({', '.join(params)}):")
        for s in nest.body:
            if isinstance(s, L.Op):
                code = self.code_for_op[s.op](list(s.args), s)
                lines.append(f"    {s.out} = {code}  # eqn: {s.comment}")
            elif isinstance(s, L.Iota):
                lines.append(f"    {s.out} = {_T(s.dtype)}(i{s.axis})  # eqn: {s.comment}")
        rets = [r for _, r in nest.stores] + [r.value for r in nest.reductions]
        lines.append(f"    return ({''.join(r + ', ' for r in rets).rstrip()})")
        lines.append("")

    def _render_nest(self, i: int, nest: L.LoopNest, out: list) -> None:
        loads = [s for s in nest.body if isinstance(s, L.Load)]
        iotas = sorted({s.axis for s in nest.body if isinstance(s, L.Iota)})
        n = len(nest.domain)
        red = tuple(nest.reduce_axes or ())
        stores, reds = nest.stores, nest.reductions
        red_tag = f", reduce {list(red)}" if red else ""
        out.append(f"# nest {i}: domain {list(nest.domain)}{red_tag}{' (parallel)' if nest.parallel else ''}")
        for b, _ in stores:
            out.append(f"{b.name} = np.empty({_shape(b.shape)}, {_T(b.dtype)})")
        for r in reds:
            out.append(f"{r.out.name} = np.empty({_shape(r.out.shape)}, {_T(r.out.dtype)})")
        rets = [f"s{j}" for j in range(len(stores))] + [f"r{j}" for j in range(len(reds))]
        call_args = [ld.out for ld in loads] + [f"i{a}" for a in iotas]
        lhs = f"{', '.join(rets)}{',' if len(rets) == 1 else ''} = " if rets else ""
        call = f"{lhs}_nest{i}({', '.join(call_args)})"
        size = nest.size
        # 0-d operands are loop-invariant: read once before the loops (prange bodies cannot index
        # 0-d arrays either)
        for ld in loads:
            if ld.index == ():
                out.append(f"{ld.out} = {ld.buf.name}[()]")
        loads = [ld for ld in loads if ld.index != ()]

        # collapse to 1-D (or kept x reduced 2-D) when every access is the identity or a scalar
        simple = not iotas and all(
            ld.index == () or (ld.index == tuple(range(n)) and ld.buf.shape == nest.domain) for ld in loads
        )
        trailing = nest.trailing_reduce()
        if n == 0:
            out.append(call)
            for j, (b, _) in enumerate(stores):
                out.append(f"{b.name}[()] = s{j}")
            return
        if simple and (not red or trailing) and n >= 1:
            kept = n - len(red)
            nk = math.prod(nest.domain[:kept])
            nr = math.prod(nest.domain[kept:])
            flat = {}
            for ld in loads:
                if ld.index:
                    flat[ld.buf.name] = ld.buf
            for b, _ in stores:
                flat[b.name] = b
            fl = {}
            for name, b in flat.items():
                src = name if b.contiguous else f"np.ascontiguousarray({name})"
                fl[name] = f"{name}_f"
                out.append(f"{name}_f = {src}.reshape({_shape((size,))})")
            if not red:
                self._flat_loop(out, loads, stores, fl, call, size, nest.parallel)
                return
            if kept == 0:
                self._full_reduce(out, loads, stores, reds, fl, call, size, nest.parallel)
                return
            # kept outer (parallel), reduced inner
            rng = "prange" if nest.parallel else "range"
            for r in reds:
                out.append(f"{r.out.name}_f = {r.out.name}.reshape({_shape((nk,))})")
            out.append(f"for k in {rng}({nk}):")
            out.append(f"    base = k * {nr}")
            self._tiled_reduce(out, "    ", loads, stores, reds, fl, call, "base", f"base + {nr}", "i")
            for j, r in enumerate(reds):
                out.append(f"    {r.out.name}_f[k] = {_T(r.out.dtype)}(acc{j})")
            return

        # general nest: natural loop order over the domain
        if red and trailing:
            kept = n - len(red)
            ind = ""
            for a in range(kept):
                rng = "prange" if (nest.parallel and a == 0) else "range"
                out.append(f"{ind}for i{a} in {rng}({nest.domain[a]}):")
                ind += "    "
            for j, r in enumerate(reds):
                out.append(f"{ind}acc{j} = {_ident(r.kind, r.acc_dtype)}")
            ind2 = ind
            for a in range(kept, n):
                out.append(f"{ind2}for i{a} in range({nest.domain[a]}):")
                ind2 += "    "
            self._nd_body(out, ind2, loads, stores, call, n)
            for j, r in enumerate(reds):
                out.append(f"{ind2}acc{j} = {_combine(r.kind, f'acc{j}', f'r{j}', r.acc_dtype)}  # eqn: {r.comment}")
            kidx = ", ".join(f"i{a}" for a in range(kept))
            for j, r in enumerate(reds):
                out.append(f"{ind}{r.out.name}[{kidx}] = {_T(r.out.dtype)}(acc{j})")
            return
        # non-trailing reductions accumulate into buffers (serial)
        for j, r in enumerate(reds):
            out.append(f"acc{j} = np.full({_shape(r.out.shape)}, {_ident(r.kind, r.acc_dtype)}, {_T(r.acc_dtype)})")
        ind = ""
        for a in range(n):
            rng = "prange" if (nest.parallel and a == 0 and not red) else "range"
            out.append(f"{ind}for i{a} in {rng}({nest.domain[a]}):")
            ind += "    "
        self._nd_body(out, ind, loads, stores, call, n)
        kept_idx = ", ".join(f"i{a}" for a in range(n) if a not in red) or "()"
        for j, r in enumerate(reds):
            cur = f"acc{j}[{kept_idx}]"
            out.append(f"{ind}{cur} = {_combine(r.kind, cur, f'r{j}', r.acc_dtype)}  # eqn: {r.comment}")
        for j, r in enumerate(reds):
            if r.acc_dtype == r.out.dtype:
                out.append(f"{r.out.name} = acc{j}")
            else:
                out.append(f"{r.out.name} = acc{j}.astype({_T(r.out.dtype)})")

    def _nd_body(self, out: list, ind: str, loads: list, stores: list, call: str, n: int) -> None:
        for ld in loads:
            idx = ", ".join("0" if a is None else f"i{a}" for a in ld.index) if ld.index else "()"
            out.append(f"{ind}{ld.out} = {ld.buf.name}[{idx}]")
        out.append(ind + call)
        full = ", ".join(f"i{a}" for a in range(n))
        for j, (b, _) in enumerate(stores):
            out.append(f"{ind}{b.name}[{full}] = s{j}")

    def _loads_stores(self, out: list, ind: str, loads: list, stores: list, fl: dict, call: str, i: str) -> None:
        for ld in loads:
            src = f"{fl[ld.buf.name]}[{i}]" if ld.index else f"{ld.buf.name}[()]"
            out.append(f"{ind}{ld.out} = {src}")
        out.append(ind + call)
        for j, (b, _) in enumerate(stores):
            out.append(f"{ind}{fl[b.name]}[{i}] = s{j}")

    def _flat_loop(self, out: list, loads: list, stores: list, fl: dict, call: str, size: int, par: bool) -> None:
        out.append(f"for i in {'prange' if par else 'range'}({size}):")
        self._loads_stores(out, "    ", loads, stores, fl, call, "i")

    def _full_reduce(
        self, out: list, loads: list, stores: list, reds: list, fl: dict, call: str, size: int, par: bool
    ) -> None:
        nch = REDUCE_CHUNKS if par else 1
        for j, r in enumerate(reds):
            out.append(f"part{j} = np.empty({nch}, {_T(r.acc_dtype)})")
        out.append(f"for c in {'prange' if par else 'range'}({nch}):")
        out.append(f"    lo = (c * {size}) // {nch}")
        out.append(f"    hi = ((c + 1) * {size}) // {nch}")
        self._tiled_reduce(out, "    ", loads, stores, reds, fl, call, "lo", "hi", "i")
        for j in range(len(reds)):
            out.append(f"    part{j}[c] = acc{j}")
        for j, r in enumerate(reds):
            out.append(f"acc{j} = {_ident(r.kind, r.acc_dtype)}")
            out.append(f"for c in range({nch}):")
            out.append(f"    acc{j} = {_combine(r.kind, f'acc{j}', f'part{j}[c]', r.acc_dtype)}")
            out.append(f"{r.out.name}[()] = {_T(r.out.dtype)}(acc{j})")

    def _tiled_reduce(
        self, out: list, ind: str, loads: list, stores: list, reds: list, fl: dict, call: str, lo: str, hi: str, i: str
    ) -> None:
        """Reduce the body over [lo, hi): the body runs over tiles into a small buffer (a loop
        without a loop-carried dependency, so it vectorizes), then the tile is accumulated in
        order (no reassociation: results do not depend on vector width)."""
        for j, r in enumerate(reds):
            out.append(f"{ind}tile{j} = np.empty({TILE}, {_T(r.acc_dtype)})")
            out.append(f"{ind}acc{j} = {_ident(r.kind, r.acc_dtype)}")
        out.append(f"{ind}for t0 in range({lo}, {hi}, {TILE}):")
        out.append(f"{ind}    t1 = min(t0 + {TILE}, {hi})")
        out.append(f"{ind}    for {i} in range(t0, t1):")
        self._loads_stores(out, ind + "        ", loads, stores, fl, call, i)
        for j in range(len(reds)):
            out.append(f"{ind}        tile{j}[{i} - t0] = r{j}")
        out.append(f"{ind}    for t in range(t1 - t0):")
        for j, r in enumerate(reds):
            out.append(
                f"{ind}        acc{j} = {_combine(r.kind, f'acc{j}', f'tile{j}[t]', r.acc_dtype)}  # eqn: {r.comment}"
            )

    def _render_dot(self, d: L.Dot, out: list) -> None:
        nb, nl, nk, nr = d.dims
        out.append(f"# eqn: {d.comment}")
        for nm, buf, perm, shp in (
            ("L", d.lhs, d.lhs_perm, (nb, nk, nl) if d.lhs_t else (nb, nl, nk)),
            ("R", d.rhs, d.rhs_perm, (nb, nr, nk) if d.rhs_t else (nb, nk, nr)),
        ):
            src = buf.name
            if perm is not None:
                src = f"np.ascontiguousarray(np.transpose({src}, {perm}))"
            elif not buf.contiguous:
                src = f"np.ascontiguousarray({src})"
            out.append(f"{d.out.name}_{nm} = {src}.reshape({_shape(shp)})")
        o = d.out.name
        out.append(f"{o}_O = np.empty({_shape((nb, nl, nr))}, {_T(d.out.dtype)})")
        if nk == 0:
            out.append(f"{o}_O[...] = 0")
        elif nb and nl and nr:
            lt = ".T" if d.lhs_t else ""
            rt_ = ".T" if d.rhs_t else ""
            out.append(f"for b in range({nb}):")
            out.append(f"    np.dot({o}_L[b]{lt}, {o}_R[b]{rt_}, {o}_O[b])")
        out.append(f"{o} = {o}_O.reshape({_shape(d.out.shape)})")


def _shape(shape: tuple) -> str:
    return "(" + "".join(f"{s}, " for s in shape).rstrip(" ") + ")" if shape else "()"


renderer = NumbaRenderer()


def _work(nest: L.LoopNest) -> int:
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
    cost = 1 + sum(20 if (isinstance(s, L.Op) and s.op in heavy) else 1 for s in nest.body)
    return nest.size * cost


def annotate(kernel: L.Kernel) -> None:
    for nest in kernel.loop_nests():
        nest.parallel = (
            len(nest.domain) > 0 and nest.size >= PARALLEL_MIN_SIZE and _work(nest) >= PARALLEL_WORK_THRESHOLD
        )


# ---------------------------------------------------------------------------------------------
# compiling and caching


def _runtime_version() -> str:
    h = hashlib.sha1()
    here = os.path.dirname(os.path.abspath(__file__))
    for f in ("vmath.py", "numba_cpu.py", "lowering.py"):
        try:
            with open(os.path.join(here, f), "rb") as fh:
                h.update(fh.read())
        except OSError:
            pass
    return h.hexdigest()[:12]


_RT_VERSION = _runtime_version()
_by_hash: dict[str, Any] = {}
_tmpdir: str | None = None


def _kernel_dir() -> tuple[str, bool]:
    global _tmpdir
    if config.fjax_disk_cache:
        d = os.path.join(os.path.expanduser(str(config.fjax_cache_dir)), "kernels")
        try:
            os.makedirs(d, exist_ok=True)
            return d, True
        except OSError:
            log.warning("fjax: cannot create cache dir %s; compiling without the disk cache", d)
    if _tmpdir is None:
        _tmpdir = tempfile.mkdtemp(prefix="fjax_kernels_")
    return _tmpdir, False


def load_kernel(src: str, name: str) -> Any:
    """Write ``src`` to ``<cache>/k_<hash>.py`` (once), import it and return its ``name``."""
    disk = bool(config.fjax_disk_cache)
    key = hashlib.sha1(src.encode()).hexdigest()[:24]
    hit = _by_hash.get((key, disk))
    if hit is not None:
        return hit
    d, disk = _kernel_dir()
    modname = f"fjax_k_{key}"
    path = os.path.join(d, f"k_{key}.py")
    text = src
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)  # atomic: never rewrite an existing file (its mtime keys numba's cache)
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    fn = getattr(mod, name)
    fn.__fjax_source__ = text
    fn.__fjax_path__ = path
    _by_hash[(key, disk)] = fn
    return fn


def _render_kernel(kernel: L.Kernel) -> str:
    annotate(kernel)
    return renderer.render(kernel, cache=bool(config.fjax_disk_cache))


class _ProgramRunner:
    """Runs a multi-step program (kernels with host calls between them)."""

    def __init__(self, prog: L.Program, fns: list):
        self.prog = prog
        self.fns = fns
        self.__fjax_source__ = "\n".join(getattr(f, "__fjax_source__", "") for f in fns if f is not None)

    def __call__(self, *args: Any) -> list:
        prog = self.prog
        env: dict = {}
        for v, x in zip(prog.in_slots, list(prog.consts) + list(args)):
            env[v] = x

        def rd(a: Any) -> Any:
            if type(a) is core.Literal:
                return np.asarray(a.val, a.aval.dtype)
            return env[a]

        for step, fn, (ins, outs) in zip(prog.steps, self.fns, prog.step_io):
            vals = [rd(a) for a in ins]
            if fn is None:
                eqn = step.eqn
                res = eqn.primitive.impl(*vals, **eqn.params)
                res = res if eqn.primitive.multiple_results else [res]
                res = [np.asarray(r, dtype=o.aval.dtype) for r, o in zip(res, eqn.outvars)]
            else:
                res = fn(*vals)
            for v, r in zip(outs, res):
                env[v] = r
        return [rd(v) for v in prog.out_slots]


def compile_program(closed: ClosedJaxpr) -> Callable | None:
    prog = L.build_program(closed)
    if prog is None:
        return None
    fns = []
    for step in prog.steps:
        if isinstance(step, L.Kernel):
            fns.append(load_kernel(_render_kernel(step), step.name))
        else:
            fns.append(None)
    # compile now for the usual argument types (fjax passes read-only C-contiguous arrays) so a
    # failure shows here, where jit can still fall back to eager evaluation; other layouts compile
    # lazily on first use
    for fn, (ins, _) in zip(fns, prog.step_io):
        if fn is not None:
            sig = tuple(types.Array(numba.from_dtype(v.aval.dtype), v.aval.ndim, "C", readonly=True) for v in ins)
            fn.compile(sig)
    if len(fns) == 1 and not prog.consts:
        return fns[0]  # the numba dispatcher itself: returns a tuple of arrays
    return _ProgramRunner(prog, fns)


def source_for(closed: ClosedJaxpr) -> str:
    """Generated source for ``closed`` (host-evaluated equations appear as comments)."""
    prog = L.build_program(closed)
    if prog is None:
        return "# nothing to compile: evaluated eagerly\n"
    parts = []
    for step in prog.steps:
        if isinstance(step, L.Kernel):
            parts.append(_render_kernel(step))
        else:
            parts.append(f"# host: {L._eqn_comment(step.eqn)} (numpy impl)\n")
    return "\n".join(parts)


def clear_cache() -> None:
    _by_hash.clear()
