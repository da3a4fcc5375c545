"""A kernel IR ``Program`` -> one CUDA C++ translation unit + a launch plan (data), and the plan's
executor over a runtime (``runtime.py`` on cupy, ``emulate.py`` on the CPU).

The plan is a list of records a runtime executes in order over named device buffers:

- ``Launch``: one kernel launch (name, grid, block, shared memory, argument buffer names and
  scalars in order); outputs it writes are allocated by the ``Alloc`` records before it;
- ``Alloc``: a device buffer (``rt.empty``);
- ``View``: a buffer seen with another shape (``reshape`` of contiguous data: no copy);
- ``MatMul``: ``dot_general`` as batched GEMMs (``rt.matmul``, cuBLAS through cupy);
- ``Loop``: ``scan`` / ``while`` with sub-plans (``body``, ``cond``), driven from the host with the
  carry on the device (a ``while`` reads its 0-d predicate back each iteration);
- ``Branch``: ``cond`` / ``switch``: the index is read back, the chosen sub-plan runs.

- ``HostCallback``: the user's Python function (``pure_callback``, ``io_callback``,
  ``debug_callback``) or ``eig``'s LAPACK, on the host, with its operands and results copied
  (``callbacks.py``).

Nothing else runs on the CPU: a step with no CUDA form raises ``NotImplementedError`` naming it
when the plan is built (``CudaBackend.source``/``plan``/``compile``), never a silent host round trip.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from fjax import core
from fjax.backends import kernel_ir as ir
from fjax.backends.cuda import callbacks, complex_ops, host_ops, matvec_rows, skinny
from fjax.backends.cuda.ops import LOW_FLOATS, PRELUDE, stype
from fjax.backends.cuda.records import Alloc, Branch, Launch, Loop, MatMul, Plan, View, gemm_compute
from fjax.backends.cuda.render import GROUP_MAX, CudaKernel, describe, groupable, render_group, render_nest
from fjax.backends.cuda.rows import RowGroup, local_buffers, render_rows, schedule

__all__ = ["Alloc", "Branch", "Launch", "Loop", "MatMul", "Plan", "View", "build", "source"]


# ---------------------------------------------------------------------------------------------
# step adapter: the one place that reads a step's primitive and params (IR steps carry
# prim/params/in_avals/out_avals/aux, ``kernel_ir.Step``; no JaxprEqn reaches this backend)


def step_info(step: Any, io: tuple) -> tuple[str, dict, list, list]:
    """``(primitive name, params, input avals, output avals)`` of a host/inline/control step."""
    return step.op, step.params, list(step.in_avals), list(step.out_avals)


def step_aux(step: Any) -> dict:
    """The backend-neutral facts the step's lowering rule declares (``registry.aux``)."""
    return dict(step.aux or {})


# ---------------------------------------------------------------------------------------------
# building


class Module:
    """The kernels of one translation unit (deduplicated by name) and the launch-sequence text."""

    def __init__(self) -> None:
        self.kernels: dict[str, CudaKernel] = {}
        self.kinds: dict[str, str] = {}

    def add(self, k: CudaKernel) -> str:
        self.kernels.setdefault(k.name, k)
        self.kinds[k.name] = k.kind
        return k.name

    def source(self, comments: list) -> str:
        head = [
            "// fjax CUDA translation unit (generated): every kernel of the program, then the host-side",
            "// launch sequence as comments. Compiles with nvcc (-arch=sm_80/sm_90) and NVRTC (cupy).",
            "",
        ]
        parts = ["\n".join(head), PRELUDE]
        if any(complex_ops.uses_complex(k.src) for k in self.kernels.values()):
            parts.append(complex_ops.PRELUDE)
        parts += [k.src for k in self.kernels.values()]
        parts.append("// ---- host-side launch sequence\n" + "\n".join("// " + c if c else "//" for c in comments))
        return "\n".join(parts) + "\n"


class _Builder:
    def __init__(self, module: Module, caps: Any):
        self.module = module
        self.caps = caps
        self.count = 0
        # independent elementwise nests of a kernel share one launch (FJAX_CUDA_HFUSE=0: one each)
        self.hfuse = os.environ.get("FJAX_CUDA_HFUSE", "1") != "0"
        # nests over the same rows as one warp-per-row launch (FJAX_CUDA_ROWS=0: one each)
        self.rows = os.environ.get("FJAX_CUDA_ROWS", "1") != "0"

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def build(self, prog: ir.Program, in_names: list | None = None) -> Plan:
        names: dict = {}
        plan = Plan([], [], [])

        def nm(v: Any) -> str:
            if type(v) is core.Literal:
                n = self.fresh("lit")
                plan.consts[n] = np.asarray(v.val, v.aval.dtype)
                return n
            n = names.get(v)
            if n is None:
                n = names[v] = self.fresh("v")
            return n

        nconst = len(prog.consts)
        for j, v in enumerate(prog.in_slots):
            if j < nconst:
                n = nm(v)
                plan.consts[n] = np.array(prog.consts[j], order="C", copy=None)
            else:
                if in_names is not None:
                    names[v] = in_names[j - nconst]
                plan.inputs.append(nm(v))
        for step, (ins, outs) in zip(prog.steps, prog.step_io):
            if isinstance(step, ir.Kernel):
                self._kernel(plan, step, [nm(a) for a in ins], outs, names)
            elif isinstance(step, ir.ControlStep):
                self._control(plan, step, (ins, outs), [nm(a) for a in ins], [nm(o) for o in outs])
            elif isinstance(step, (ir.HostCall, ir.InlineStep)):
                name, params, in_avals, out_avals = step_info(step, (ins, outs))
                closed = params.get("call_jaxpr")
                if isinstance(closed, core.ClosedJaxpr):
                    # a call (custom_jvp_call, custom_vjp_call): its body, lowered and inlined
                    self._inline_call(plan, name, closed, [nm(a) for a in ins], outs, names)
                    continue
                out_names = [nm(o) for o in outs]
                if name in callbacks.NAMES:  # the user's functions (and eig's LAPACK) on the host
                    plan.steps.extend(
                        callbacks.render(step.prim, params, in_avals, out_avals, [nm(a) for a in ins], out_names)
                    )
                    continue
                recs = host_ops.render(
                    name, params, in_avals, out_avals, step_aux(step), [nm(a) for a in ins], out_names, self
                )
                plan.steps.extend(recs)
            else:
                raise NotImplementedError(f"CUDA backend: program step {type(step).__name__}")
        plan.outputs = [nm(v) for v in prog.out_slots]
        return plan

    def _inline_call(self, plan: Plan, name: str, closed: Any, in_names: list, outs: list, names: dict) -> None:
        from fjax.backends import lowering  # noqa: PLC0415

        sub = lowering.build_program(closed, self.caps)
        if sub is None:
            raise NotImplementedError(f"CUDA backend: the body of {name} has nothing that compiles")
        splan = self.build(sub, in_names)
        plan.steps.extend(splan.steps)
        plan.consts.update(splan.consts)
        for o, n in zip(outs, splan.outputs):
            if o not in names:
                names[o] = n
            elif names[o] != n:
                plan.steps.append(View(names[o], n, tuple(o.aval.shape)))

    @staticmethod
    def _compute(st: ir.Dot) -> str:
        return gemm_compute(st.precision, st.out.dtype)

    def _kernel(self, plan: Plan, k: ir.Kernel, in_names: list, outs: list, names: dict) -> None:
        tag = self.fresh("k")
        bufname: dict = {p.name: n for p, n in zip(k.params, in_names)}
        root: dict = {}  # Reshape views -> the buffer whose memory they alias
        for st in k.stmts:
            if isinstance(st, ir.Reshape):
                root[st.out.name] = root.get(st.src.name, st.src)
        if self.rows:
            # matrix-vector products join the row groups their consumers form (matvec_rows.py)
            conv, back = matvec_rows.convert(k.stmts, self._compute) if matvec_rows.enabled() else (k.stmts, {})
            stmts = matvec_rows.restore(schedule(conv, root), back)
        else:
            stmts = k.stmts

        def bn(b: ir.Buf) -> str:
            n = bufname.get(b.name)
            if n is None:
                n = bufname[b.name] = f"{tag}_{b.name}"
            return n

        consts = {c.name: c for c in k.consts}

        def emit(nl: Any, comment: str) -> None:
            kname = self.module.add(nl.kernel)
            for t in nl.temps:
                plan.steps.append(Alloc(f"{tag}_{t[0]}", t[1], np.dtype(t[2])))
            args = []
            for role, b in nl.args:
                if role == "tmp":
                    args.append(f"{tag}_{b[0]}")
                    continue
                if role == "out" and b.name not in bufname:
                    plan.steps.append(Alloc(bn(b), b.shape, b.dtype))
                args.append(bn(b))
            plan.steps.append(Launch(kname, nl.grid, nl.block, tuple(args), 0, comment))

        def finish(st: ir.LoopNest, local: frozenset = frozenset()) -> None:
            # outputs of an empty nest (no launch) still exist (but a row group's register results)
            for b, _ in st.stores:
                if b.name not in bufname:
                    plan.steps.append(Alloc(bn(b), b.shape, b.dtype))
            for r in st.reductions:
                if r.out.name not in bufname and r.out.name not in local:
                    plan.steps.append(Alloc(bn(r.out), r.out.shape, r.out.dtype))

        group: list = []  # consecutive independent elementwise nests, launched together

        def flush() -> None:
            if len(group) == 1:
                for nl in render_nest(group[0], consts, root):
                    emit(nl, describe(group[0]))
            elif group:
                emit(render_group(group, consts, root), " | ".join(describe(g) for g in group))
            for g in group:
                finish(g)
            group.clear()

        def written(nests: list) -> set:
            return {root.get(b.name, b).name for g in nests for b, _ in g.stores}

        for st in stmts:
            if isinstance(st, RowGroup):
                flush()
                local = frozenset(local_buffers(st, stmts, k.outputs, root))
                emit(render_rows(st, consts, root, local), " ; ".join(describe(n) for n in st.nests))
                for n in st.nests:
                    finish(n, local)
                continue
            if isinstance(st, ir.LoopNest) and groupable(st) and self.hfuse:
                reads = {root.get(x.buf.name, x.buf).name for x in st.body if isinstance(x, ir.Load)}
                if len(group) >= GROUP_MAX or reads & written(group):
                    flush()
                group.append(st)
                continue
            flush()
            if isinstance(st, ir.LoopNest):
                for nl in render_nest(st, consts, root):
                    emit(nl, describe(st))
                finish(st)
            elif isinstance(st, ir.Reshape):
                plan.steps.append(View(bn(st.out), bn(st.src), st.out.shape))
            elif isinstance(st, ir.Dot):
                if st.out.dtype.kind not in "fc" and st.out.dtype not in LOW_FLOATS:
                    raise NotImplementedError(
                        f"CUDA backend: dot_general on dtype {st.out.dtype.name} (cuBLAS: floats and complex)"
                    )
                o = bn(st.out)
                if skinny.applies(st.dims, st.lhs_perm, st.rhs_perm, (st.lhs.dtype, st.rhs.dtype, st.out.dtype)):
                    sk, grid, block = skinny.kernel(
                        tuple(st.dims),
                        bool(st.lhs_t),
                        bool(st.rhs_t),
                        st.out.dtype,
                        gemm_compute(st.precision, st.out.dtype),
                    )
                    plan.steps.append(Alloc(o, tuple(st.out.shape), np.dtype(st.out.dtype)))
                    args = (bn(st.lhs), bn(st.rhs), o)
                    plan.steps.append(Launch(self.module.add(sk), grid, block, args, 0, f"{st.comment} (skinny)"))
                    continue
                plan.steps.append(
                    MatMul(
                        o,
                        bn(st.lhs),
                        bn(st.rhs),
                        tuple(st.dims),
                        tuple(st.lhs_perm) if st.lhs_perm is not None else None,
                        tuple(st.rhs_perm) if st.rhs_perm is not None else None,
                        bool(st.lhs_t),
                        bool(st.rhs_t),
                        tuple(st.out.shape),
                        st.out.dtype,
                        st.comment,
                        # 16-bit operands: cuBLAS's float32 compute on them, whatever the precision
                        gemm_compute(st.precision, st.out.dtype) if st.lhs.dtype == st.out.dtype else "",
                        st.lhs.dtype if st.lhs.dtype != st.out.dtype else None,
                    )
                )
            else:
                raise NotImplementedError(f"CUDA backend: kernel statement {type(st).__name__}")
        flush()
        for o, v in zip(k.outputs, outs):
            n = bn(o)
            if v not in names:
                names[v] = n
            elif names[v] != n:
                plan.steps.append(View(names[v], n, tuple(o.shape)))

    def _control(self, plan: Plan, step: ir.ControlStep, io: tuple, ins: list, outs: list) -> None:
        kind, params, in_avals, out_avals = step_info(step, io)
        if kind == "scan":
            nc, nk = int(params["num_consts"]), int(params["num_carry"])
            T, rev = int(params["length"]), bool(params["reverse"])
            body_prog = step.bodies["body"]
            bplan = self.build(body_prog)
            y_avals = [v.aval for v in body_prog.out_slots[nk:]]
            # every stacked output of a step is written by one launch (a scan of 200 steps with 4
            # ys makes 200 copy launches, not 800)
            sizes = [(a.dtype, math.prod(a.shape)) for a in y_avals]
            kname, block = (
                self.copy_kernel_multi([sz for sz in sizes if sz[1]]) if any(n for _, n in sizes) else ("", 0)
            )
            ys = [(n, (T, *a.shape), np.dtype(a.dtype), kname, block) for a, n in zip(y_avals, outs[nk:])]
            plan.steps.append(Loop("scan", ins[:nc], ins[nc : nc + nk], ins[nc + nk :], bplan, outs, T, rev, ys=ys))
        elif kind == "while":
            cn, bn_ = int(params["cond_nconsts"]), int(params["body_nconsts"])
            cplan = self.build(step.bodies["cond"])
            bplan = self.build(step.bodies["body"])
            plan.steps.append(
                Loop("while", ins[cn : cn + bn_], ins[cn + bn_ :], [], bplan, outs, cond=cplan, cond_consts=ins[:cn])
            )
        elif kind == "cond":
            branches = [self.build(step.bodies[f"branch{i}"]) for i in range(len(step.bodies))]
            plan.steps.append(Branch(ins[0], ins[1:], branches, outs))
        else:
            raise NotImplementedError(f"CUDA backend: control flow {kind!r}")

    def copy_kernel(self, dtype: Any, n: int) -> tuple[str, int]:
        """A kernel copying ``n`` elements (``dst[i] = src[i]``)."""
        T = stype(dtype)
        block = 256 if n >= 256 else max(32, -(-n // 32) * 32)
        src = (
            f"// copy of {n} {T}\n"
            f'extern "C" __global__ void __launch_bounds__({block}) __NAME__(const {T}* __restrict__ src, '
            f"{T}* __restrict__ dst) {{\n"
            f"  for (long long i = (long long)blockIdx.x * {block} + threadIdx.x; i < {n}LL;"
            f" i += (long long){block} * gridDim.x)\n"
            "    dst[i] = src[i];\n}\n"
        )
        return self.module.add(CudaKernel("copy", src)), block

    def copy_kernel_multi(self, sizes: list) -> tuple[str, int]:
        """One kernel copying several buffers (``sizes``: (dtype, elements) of each, all > 0):
        arguments ``src0..srcN-1, dst0..dstN-1``, one grid-stride loop over the largest."""
        if len(sizes) == 1:
            return self.copy_kernel(*sizes[0])
        big = max(n for _, n in sizes)
        block = 256 if big >= 256 else max(32, -(-big // 32) * 32)
        params = [f"const {stype(dt)}* __restrict__ s{i}" for i, (dt, _) in enumerate(sizes)]
        params += [f"{stype(dt)}* __restrict__ d{i}" for i, (dt, _) in enumerate(sizes)]
        body = "".join(
            f"    if (i < {n}LL) d{i}[i] = s{i}[i];\n" if n < big else f"    d{i}[i] = s{i}[i];\n"
            for i, (_, n) in enumerate(sizes)
        )
        src = (
            f"// copy of {len(sizes)} buffers ({', '.join(f'{n} {stype(dt)}' for dt, n in sizes)})\n"
            f'extern "C" __global__ void __launch_bounds__({block}) __NAME__({", ".join(params)}) {{\n'
            f"  for (long long i = (long long)blockIdx.x * {block} + threadIdx.x; i < {big}LL;"
            f" i += (long long){block} * gridDim.x) {{\n{body}  }}\n}}\n"
        )
        return self.module.add(CudaKernel("copy", src)), block


def launch_grid(n: int, block: int) -> tuple:
    return (max(1, min(4096, -(-n // block))), 1, 1)


def build(prog: ir.Program, caps: Any) -> tuple[Plan, Module]:
    """The launch plan of ``prog`` and the module holding its kernels (``caps``: the backend's
    capabilities, for lowering the bodies of calls)."""
    module = Module()
    plan = _Builder(module, caps).build(prog)
    return plan, module


# ---------------------------------------------------------------------------------------------
# the launch sequence as text (comments of the translation unit)


def _dt(d: Any) -> str:
    return core.short_dtype_name(np.dtype(d))


def plan_text(plan: Plan, ind: str = "") -> list[str]:
    lines = [f"{ind}plan({', '.join(plan.inputs)}):"]
    i2 = ind + "  "
    for n, c in plan.consts.items():
        lines.append(f"{i2}{n} = upload {_dt(c.dtype)}{list(c.shape)}")
    for s in plan.steps:
        if isinstance(s, Alloc):
            lines.append(f"{i2}{s.name} = empty({list(s.shape)}, {_dt(s.dtype)})")
        elif isinstance(s, View):
            lines.append(f"{i2}{s.name} = view {s.src} as {list(s.shape)}")
        elif isinstance(s, Launch):
            args = ", ".join(a if isinstance(a, str) else f"{_dt(a.dtype)}({a})" for a in s.args)
            lines.append(f"{i2}launch {s.kernel}<<<{s.grid}, {s.block}, {s.shared_mem}>>>({args})  # {s.comment}")
        elif isinstance(s, MatMul):
            nb, nl, nk, nr = s.dims
            lt, rt = "^T" if s.lhs_t else "", "^T" if s.rhs_t else ""
            lines.append(
                f"{i2}{s.out} = cublas gemm {s.lhs}{lt} @ {s.rhs}{rt}: {nb} x ({nl}, {nk}) @ ({nk}, {nr}) "
                f"{_dt(s.dtype)}{' ' + s.compute if s.compute else ''}  # {s.comment}"
            )
        elif isinstance(s, Loop):
            if s.kind == "scan":
                head = f"for t in range({s.length}){' reversed' if s.reverse else ''}"
                lines.append(
                    f"{i2}scan {head}: consts ({', '.join(s.consts)}) carry ({', '.join(s.carries)}) "
                    f"xs ({', '.join(s.xs)}) -> ({', '.join(s.outs)})"
                )
                for y in s.ys:
                    lines.append(f"{i2}  {y[0]} = empty({list(y[1])}, {_dt(y[2])}); ys[t] written by {y[3]}")
            else:
                lines.append(
                    f"{i2}while: consts ({', '.join(s.consts)}) carry ({', '.join(s.carries)}) -> ({', '.join(s.outs)})"
                )
                lines.append(f"{i2}  cond (0-d bool read back to the host each iteration):")
                lines += plan_text(s.cond, i2 + "    ")
            lines.append(f"{i2}  body:")
            lines += plan_text(s.body, i2 + "    ")
        elif isinstance(s, Branch):
            lines.append(f"{i2}switch on {s.index} (read back): ({', '.join(s.ins)}) -> ({', '.join(s.outs)})")
            for b, p in enumerate(s.branches):
                lines.append(f"{i2}  branch {b}:")
                lines += plan_text(p, i2 + "    ")
        else:
            lines.append(f"{i2}{s!r}")
    lines.append(f"{i2}return ({', '.join(plan.outputs)})")
    return lines


def source(prog: ir.Program, caps: Any) -> str:
    """One CUDA C++ translation unit: every kernel of ``prog`` and its launch sequence as comments."""
    plan, module = build(prog, caps)
    return module.source(plan_text(plan))
