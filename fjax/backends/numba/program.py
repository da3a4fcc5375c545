"""Kernel IR -> readable Python source -> callable (the CPU backend of ``fjax.jit``).

A program is compiled into two kinds of generated code:

- one plain Python function ``program`` (one line per step, ``# eqn`` comments) that allocates
  buffers, runs every ``Dot`` as ``np.dot``/``np.matmul`` on numpy's BLAS (transposed operands are
  ``.T`` views, never copied; a large float GEMM through ``pgemm``: its blocks on all cores without
  OpenBLAS's spinning team), calls the loop-nest kernels, and evaluates the host-fallback
  equations with their primitive's numpy ``impl``;
- one small ``numba.njit`` kernel per fused loop nest. Kernels are shape-generic (extents are
  arguments, constants are module-level) and written to ``config.fjax_cache_dir/kernels/
  k_<source hash>.py`` with ``cache=True``, so identical nests -- the two ``tanh`` layers of an MLP,
  the SGD updates of every parameter, the same nest in another program or process -- share one
  compiled kernel. Each kernel is compiled for one signature (inputs read-only C arrays, which
  writable arrays convert to; outputs writable) and then frozen (``disable_compile``).

Memory planning (``fjax.backends.memory.plan_memory``, an IR pass): intermediates that never
escape a call (not returned, not handed to a host impl) live in a per-program buffer set that
calls take from a pool at entry and give back at exit, and buffers of the same shape/dtype with
disjoint lifetimes share a slot. Fresh large ``np.empty`` buffers cost a page fault per 4 KiB page
on first touch (glibc returns freed heap memory to the OS); on this machine that was 2500 faults
and more than half of the MLP step.

Why not one numba function per program (the first design): numba's typing and LLVM time grow with
function size and every program paid them again; for the MLP train step that was ~8 s cold. Small
deduplicated kernels plus Python orchestration cost ~1 us per step at run time.

Loop nests are rendered by ``render`` (``NumbaRenderer``), control flow by ``loops``.
"""

from __future__ import annotations

import logging
import math
import re
from typing import Any, Callable

import numba
import numpy as np
from numba import types

from fjax import _blas, core
from fjax.backends import kernel_ir as ir
from fjax.backends import memory
from fjax.backends.numba import disk_cache, pgemm
from fjax.backends.numba import loops as numba_loops
from fjax.backends.numba.host_kernels import host_kernel
from fjax.backends.numba.render import NestCode, _shape, renderer
from fjax.config import config

log = logging.getLogger("fjax.lowering")

# memory planning (``memory.plan_memory``): intermediates live in per-program buffer sets reused across calls
POOL_BUFFERS = True


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

    __slots__ = ("name", "shape", "dtype", "fill", "slot", "key")

    def __init__(self, name: str, shape: tuple, dtype: np.dtype, fill: str | None = None, key: Any = None):
        self.name, self.shape, self.dtype, self.fill = name, tuple(shape), np.dtype(dtype), fill
        self.slot: str | None = None
        self.key = key  # the buffer's key in ``memory.MemoryPlan`` / ``memory.body_outputs``

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
        self.callbacks: list = []  # nopython: the ``numba_loops.HostCallback`` objects the loop calls
        self.helpers: dict = {}  # nopython: name -> source of functions the loop calls (callbacks)
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
        allocs = {ln.key: ln for ln in lines if isinstance(ln, _Alloc) and ln.key is not None}
        written: set = set()
        inplace: set = set()
        taken: set = set()
        sources = memory.body_outputs(prog)
        for k, tgt in enumerate(targets or ()):
            src_k = sources[k]
            if tgt is None or src_k is None:
                continue
            key = src_k[1] if src_k[0] == "alloc" else ("inline", src_k[1])
            a = allocs.get(key)
            v = prog.out_slots[k]
            if a is None or a.fill is not None or key in taken:
                continue
            if a.shape != tuple(v.aval.shape) or a.dtype != v.aval.dtype:
                continue
            carry = carries[k] if carries and k < len(carries) else None
            if src_k[0] == "inline" and src_k[3] and carry is not None and ps._names.get(src_k[2]) == carry:
                # the update's operand is this carry, read by nothing else: update it in place
                i = next(j for j, ln in enumerate(lines) if ln is a)
                assert lines[i + 1] == f"lp.copy_into({a.name}, {carry})", lines[i + 1]
                a.slot = carry
                del lines[i + 1]
                inplace.add(k)
            else:
                a.slot = tgt
            taken.add(key)
            written.add(k)
        allocs = {id(ln): ln for ln in lines if isinstance(ln, _Alloc)}
        # every other allocation of the body moves before the loop: one buffer reused by each
        # iteration (an accumulator is filled with its identity in the loop), and so do the
        # buffers of loops and branches nested in the body (``numba_loops.Hoist``)
        hoist = [ln for ln in allocs.values() if ln.slot is None and ln.fill is None]
        pre = [numba_loops.Hoist(ln.render()) for ln in hoist]
        for ln in allocs.values():
            if ln.slot is None and ln.fill is not None:
                ln.slot = ln.name + "_h"
                pre.append(numba_loops.Hoist(f"{ln.slot} = np.empty({_shape(ln.shape)}, np.{ln.dtype.name})"))
        moved = {id(ln) for ln in hoist}
        rest = []
        for ln in lines:
            if isinstance(ln, numba_loops.Hoist):
                pre.append(ln)
            elif id(ln) not in moved:
                rest.append(ln.render() if isinstance(ln, _Alloc) else ln)
        return pre, rest, ps.out_names, written, inplace

    def _build_body(self) -> None:
        """A loop body: straight-line numba code (no host calls, no buffer pools)."""
        prog = self.prog
        for v, c in zip(prog.in_slots, prog.consts):
            self._names[v] = self._const(np.ascontiguousarray(np.asarray(c)))
        for si, (step, (ins, outs)) in enumerate(zip(prog.steps, prog.step_io)):
            if isinstance(step, ir.Kernel):
                self._kernel(si, step, ins, outs, prefix=f"s{self.ctx.count('s')}")
            elif isinstance(step, ir.InlineStep) and step.op in numba_loops.CALLBACK_OPS:
                cb = numba_loops.HostCallback(step.prim, step.params)
                self.ctx.callbacks.append(cb)
                names = []
                self.lines.append(f"# {step.describe()}")
                for o in outs:
                    n = self.ctx.fresh("cb")
                    self.lines.append(_Alloc(n, o.aval.shape, o.aval.dtype))
                    names.append(n)
                cid = self._const(np.asarray(cb.id, np.int64))
                lines, helper = numba_loops.emit_callback(step, [self._var(a) for a in ins], names, cid)
                self.lines += lines
                self.ctx.helpers[helper[0]] = helper[1]
                for o, n in zip(outs, names):
                    self.lines.append(f"{self._var(o)} = {n}")
            elif isinstance(step, ir.InlineStep):
                names = [self._var(a) for a in ins]
                o, aval = self.ctx.fresh("o"), outs[0].aval
                self.lines.append(f"# {step.describe()}")
                self.lines += [_Alloc(o, aval.shape, aval.dtype, key=("inline", si)), f"lp.copy_into({o}, {names[0]})"]
                self.lines += numba_loops.emit_op(step, names, o, self.ctx.fresh)
                self.lines.append(f"{self._var(outs[0])} = {o}")
            elif isinstance(step, ir.ControlStep):
                lines, names = numba_loops.emit(step, [self._var(a) for a in ins], self.ctx.fresh, self._child)
                self.lines += lines
                for o, n in zip(outs, names):
                    self.lines.append(f"{self._var(o)} = {n}")
            else:
                raise AssertionError(f"host call in a compiled loop body: {step.describe()}")
        self.out_names = [self._var(v) for v in prog.out_slots]

    def _control_call(self, step: ir.ControlStep, ins: list, outs: list, used: set | None = None) -> None:
        """A control-flow step of the (Python) program: one call of a compiled loop function that
        returns the outputs in ``used`` (all when None; boxing an array costs ~0.3 us)."""
        mctx = _Ctx(nopython=True)
        root = ProgramSource(None, mctx)
        args = [f"a{j}" for j in range(len(ins))]
        lines, names = numba_loops.emit(step, args, mctx.fresh, root._child)
        lines = [ln.render() if isinstance(ln, _Alloc) else ln for ln in lines]
        params = args + [n for n, _ in mctx.consts]
        # every buffer is allocated first, then it and the arguments are borrowed (no reference
        # counting in the loop: ``numba_loops.borrow``); the results are copied out of the buffers
        hoisted = [ln for ln in lines if isinstance(ln, numba_loops.Hoist)]
        owned = params + [ln.split(" = ", 1)[0] for ln in hoisted]
        head = hoisted + [f"_own = ({''.join(n + ', ' for n in owned)})"]
        head += [f"{n} = lp.borrow({n})" for n in owned]
        lines = head + [ln for ln in lines if not isinstance(ln, numba_loops.Hoist)]
        fn = ["@njit(cache=CACHE, nogil=True, error_model='numpy')", f"def loop({', '.join(params)}):"]
        fn += ["    " + ln for ln in lines]
        # each result is the owned buffer its borrowed name views (``_own[k]``), taken before
        # ``_own``'s last use: numba frees what it alone holds right after it
        keep = [k for k, o in enumerate(outs) if used is None or o in used]
        pos = {n: i for i, n in enumerate(owned)}
        res = []
        for k in keep:
            cand = numba_loops.buffer_pair(names[k])
            if all(c in pos for c in cand):
                own = [f"_own[{pos[c]}]" for c in cand]
                res.append(own[0] if len(own) == 1 else f"lp.pick({names[k]}, {', '.join(own)})")
            else:
                res.append(f"{names[k]}.copy()")
        fn.append(f"    _res = ({''.join(r + ', ' for r in res)})")
        fn.append("    lp.keep_alive(_own)")
        fn.append("    return _res")
        parts = [f"# fjax compiled {step.kind} (generated; runtime {disk_cache._RT_VERSION})", _PRELUDE]
        parts.append(f"from fjax.backends.numba import loops as lp  # BLAS: {numba_loops.BLAS}\n")
        if mctx.callbacks:
            parts.append("import numba\n")
            # the program holds the callbacks its loop calls by id (``numba_loops.HostCallback``)
            self.ns[self.ctx.fresh("_callbacks")] = list(mctx.callbacks)
        parts += list(mctx.helpers.values())
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
        self.lines.append(f"# {step.describe()}")
        self.lines.append(f"_r = {lname}({', '.join(call)})")
        for j, k in enumerate(keep):
            self.lines.append(f"{self._var(outs[k])} = _r[{j}]")

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
        # the values each step's successors (or the program's result) read
        read_after: list = [set() for _ in prog.steps]
        live = {v for v in prog.out_slots if type(v) is not core.Literal}
        for si in range(len(prog.steps) - 1, -1, -1):
            read_after[si] = set(live)
            live.update(a for a in prog.step_io[si][0] if type(a) is not core.Literal)
        for si, (step, (ins, outs)) in enumerate(zip(prog.steps, prog.step_io)):
            if isinstance(step, ir.ControlStep):
                self._control_call(step, ins, outs, read_after[si])
                continue
            if isinstance(step, ir.HostCall):
                kern = host_kernel(step)
                if kern is not None:
                    call = f"{self._const(kern)}({', '.join(self._var(a) for a in ins)})"
                    self._blas_threads_for_host(step)
                else:
                    f = self._const(step.prim.impl)
                    p = self._const(dict(step.params))
                    call = f"{f}({', '.join(self._var(a) for a in ins)}, **{p})"
                body.append(f"# {'compiled op' if kern is not None else 'host'}: {step.describe()}")
                if step.prim.multiple_results:
                    body.append(_Host(f"_r = {call}"))
                    for k, o in enumerate(outs):
                        body.append(_Host(f"{self._var(o)} = _host_out(_r[{k}], {self._const(o.aval.dtype)})"))
                else:
                    body.append(_Host(f"{self._var(outs[0])} = _host_out({call}, {self._const(outs[0].aval.dtype)})"))
                continue
            self._kernel(si, step, ins, outs)
        outs = ", ".join(self._var(v) for v in prog.out_slots)
        if "_blas" in self.ns:
            body.append("_blas.restore()  # numpy's BLAS threads as they were (see _dot)")
        body.append(f"return [{outs}]")
        self.slots = self._plan_memory() if POOL_BUFFERS else []
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

    def _plan_memory(self) -> list:
        """Slots of the per-program buffer set from the IR memory plan (``memory.plan_memory``)."""
        plan = memory.plan_memory(self.prog)
        for ln in self.lines:
            if isinstance(ln, _Alloc) and ln.key in plan.slot:
                k = plan.slot[ln.key]
                # the slot has the IR buffer's shape; a dot writes (with out=) in its 2-d/3-d shape
                same = tuple(plan.slots[k][0]) == ln.shape
                ln.slot = f"_m{k}" if same else f"_m{k}.reshape({_shape(ln.shape)})"
        return plan.slots

    def _kernel(self, si: int, k: ir.Kernel, ins: list, outs: list, prefix: str | None = None) -> None:
        """Lines running kernel ``k`` (step ``si`` of the program; ``prefix`` names its buffers)."""
        bufname: dict = {}
        for p, v in zip(k.params, ins):
            bufname[p.name] = self._var(v)
        pre = prefix if prefix is not None else f"s{si}"

        def bn(b: ir.Buf) -> str:
            n = bufname.get(b.name)
            if n is None:
                n = bufname[b.name] = f"{pre}{b.name}"
            return n

        consts = {c.name: c for c in k.consts}
        body = self.lines
        for j, st in enumerate(k.stmts):
            if isinstance(st, ir.LoopNest):
                nc = renderer.render_nest(st, consts)
                # one name per source and signature: a nest whose source serves two dtypes or ranks
                # (a copy of int32 pivots and of float32 values) gets each overload installed
                nkey = (nc.src, nc.signature())
                fname = self._nest_names.get(nkey)
                if fname is None:
                    fname = self._nest_names[nkey] = f"_nest{len(self.nests)}"
                    self.nests.append((fname, nc))
                body.append(
                    f"# nest: domain {list(st.domain)}" + (f" reduce {list(st.reduce_axes)}" if st.reduce_axes else "")
                )
                # the equations fused into it, in order
                body.extend(f"#   {s.comment}" for s in st.body if isinstance(s, (ir.Op, ir.Iota)))
                body.extend(f"#   {r.comment}" for r in st.reductions)
                for b, _ in st.stores:
                    body.append(_Alloc(bn(b), b.shape, b.dtype, key=(si, b.name)))
                for ri, r in enumerate(st.reductions):
                    if nc.acc_mode:
                        ident = np.asarray(_ident_value(r.kind, r.acc_dtype), r.acc_dtype)
                        fill = self._const(ident) + ("[()]" if self.nopython else "")
                        key = memory.acc_key(si, j, ri)
                        body.append(_Alloc(f"{bn(r.out)}_acc", nc.kept_shape, r.acc_dtype, fill, key=key))
                    else:
                        body.append(_Alloc(bn(r.out), r.out.shape, r.out.dtype, key=(si, r.out.name)))
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
                self._dot(st, bn, key=(si, st.out.name))
            elif isinstance(st, ir.Reshape):
                if self.nopython:
                    body.append(f"{bn(st.out)} = lp.as_shape({bn(st.src)}, {_shape(st.out.shape)})")
                else:
                    body.append(f"{bn(st.out)} = {bn(st.src)}.reshape({_shape(st.out.shape)})")
        for o, v in zip(k.outputs, outs):
            n = bn(o)
            if n != self._var(v):
                body.append(f"{self._var(v)} = {n}")

    def _blas_threads_for_host(self, step: ir.HostCall) -> None:
        """A compiled conv's GEMMs (numba's ``np.dot``: scipy's OpenBLAS) get threads by their
        size and the machine's load, as ``Dot`` steps do (``fjax._blas``)."""
        if step.op != "conv_general_dilated":
            return
        rhs, out = step.in_avals[1], step.out_avals[0]
        cout = rhs.shape[tuple(step.params["dimension_numbers"][1])[0]]
        macs = math.prod(out.shape) * (math.prod(rhs.shape) // max(cout, 1))
        if macs > _blas.SERIAL_MACS:
            _blas.include_scipy()
            self.ns["_blas"] = _blas
            self.lines.append(f"_blas.for_gemm({macs})")

    def _dot(self, d: ir.Dot, bn: Callable, key: Any = None) -> None:
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
        macs = nb * nl * nk * nr
        dt = d.out.dtype
        if (
            nb == 1
            and d.lhs_perm is None
            and d.rhs_perm is None
            and macs >= pgemm.MIN_PAR_MACS
            and dt in (np.float32, np.float64)
            and d.lhs.dtype == dt == d.rhs.dtype
            and pgemm.available()
        ):
            # a large GEMM: blocks shared by this thread and pgemm's helper (no OpenBLAS team)
            self.ns["_blas"], self.ns["_pg"] = _blas, pgemm.gemm
            lx = f"{lhs}.reshape({nk}, {nl})" if d.lhs_t else f"{lhs}.reshape({nl}, {nk})"
            rx = f"{rhs}.reshape({nr}, {nk})" if d.rhs_t else f"{rhs}.reshape({nk}, {nr})"
            body.append(_Alloc(o, (nl, nr), dt, key=key))
            body.append(f"_pg({lx}, {rx}, {o}, {d.lhs_t}, {d.rhs_t})")
            body.append(f"{o} = {o}.reshape({_shape(d.out.shape)})")
            return
        if macs > _blas.SERIAL_MACS:
            # small and medium GEMMs single-threaded (fjax._blas: OpenBLAS's team spins under load)
            self.ns["_blas"] = _blas
            body.append(f"_blas.for_gemm({macs})")
        if nb == 1:
            lx = f"{lhs}.reshape({nk}, {nl}).T" if d.lhs_t else f"{lhs}.reshape({nl}, {nk})"
            rx = f"{rhs}.reshape({nr}, {nk}).T" if d.rhs_t else f"{rhs}.reshape({nk}, {nr})"
            body.append(_Alloc(o, (nl, nr), d.out.dtype, key=key))
            body.append(f"np.dot({lx}, {rx}, {o})")
        else:
            lx = (
                f"{lhs}.reshape({nb}, {nk}, {nl}).transpose(0, 2, 1)" if d.lhs_t else f"{lhs}.reshape({nb}, {nl}, {nk})"
            )
            rx = (
                f"{rhs}.reshape({nb}, {nr}, {nk}).transpose(0, 2, 1)" if d.rhs_t else f"{rhs}.reshape({nb}, {nk}, {nr})"
            )
            body.append(_Alloc(o, (nb, nl, nr), d.out.dtype, key=key))
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
        # (complex GEMMs: the loop matmuls; the BLAS call is bound to sgemm/dgemm)
        fn = numba_loops.gemm_name(nb, nl, nk, nr, d.lhs_t, d.rhs_t, blas=d.out.dtype.kind != "c")
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
from fjax.backends.numba import complex_math as cm
"""


def compile_program(prog: ir.Program) -> Callable:
    """Load (or compile) the program's kernels and loops, and return its ``program`` function."""
    ps = ProgramSource(prog)
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


def clear_cache() -> None:
    disk_cache.clear_cache()


def clear_disk_cache() -> None:
    disk_cache.clear_disk_cache()


def _guard_helper_caches() -> None:
    from fjax.backends.numba import complex_math, conv, host_kernels, runtime, vmath  # noqa: PLC0415

    disk_cache.guard_module_caches([numba_loops, host_kernels, conv, runtime, vmath, complex_math])


_guard_helper_caches()
