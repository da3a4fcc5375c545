"""The kernel IR: what ``fjax.backends.lowering`` produces and every backend renders.

Nodes (renderers for other targets, e.g. CUDA, reuse them):

- ``Buf``: an n-d array in the kernel (a parameter, an allocated output/temporary, or a view).
- ``LoopNest``: one fused loop nest over an iteration ``domain``. Its ``body`` is SSA: ``Load``
  (a buffer element at an index whose entries are loop axes or ``None`` for 0, which is how
  ``broadcast_in_dim``, ``transpose`` and ``squeeze`` become index arithmetic with no copy),
  ``Op`` (a scalar op named after its primitive, rendered through the renderer's
  ``code_for_op`` table), ``Iota``. Values leave the nest through ``stores`` (materialized
  elementwise outputs, written at the full index) and ``reductions`` (sum/prod/max/min/and/or
  over ``reduce_axes``). Intermediate elementwise values are never stored.
- ``Reshape``: a reshaped view of a contiguous buffer (``reshape`` of contiguous data).
- ``Dot``: ``dot_general`` as batched 2-D GEMMs on BLAS (operands are transposed/reshaped views;
  a copy is made only when the contracting/free dims are not contiguous groups).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fjax import core


def f2i_bounds(dtype: Any) -> tuple[float, float]:
    """The float range an integer ``dtype`` saturates to when a float converts to it (XLA's
    semantics; every backend's ``convert_element_type``): ``[min, max]``, except that float64's
    nearest value to int64's max rounds up past the range, so the bound is the float below it."""
    info = np.iinfo(dtype)
    lo, hi = float(info.min), float(info.max)
    if np.dtype(dtype).itemsize == 8:
        hi = float(np.nextafter(np.float64(info.max), 0.0))
    return lo, hi


class Buf:
    """An n-d array inside a kernel. ``producer`` is the index of the statement that writes it
    (-1 for kernel parameters); ``contiguous`` says whether it is known C-contiguous."""

    __slots__ = ("name", "shape", "dtype", "producer", "contiguous")

    def __init__(self, name: str, shape: tuple, dtype: np.dtype, producer: int, contiguous: bool):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.producer = producer
        self.contiguous = contiguous

    def __repr__(self) -> str:
        return f"{self.name}:{core.short_dtype_name(self.dtype)}{list(self.shape)}"


class Load:
    """``out = buf[index]``: index has one entry per buffer dim, a loop axis, None (meaning 0) or an
    ``Ix``; ``fill`` (an SSA/constant name) is read where a guarded ``Ix`` is out of range."""

    __slots__ = ("out", "buf", "index", "dtype", "fill")

    def __init__(self, out: str, buf: Buf, index: tuple, dtype: np.dtype, fill: str | None = None):
        self.out, self.buf, self.index, self.dtype, self.fill = out, buf, index, dtype, fill


class Ix(tuple):
    """A general index of one buffer dim (``Load.index`` entries are otherwise a loop axis or
    None): ``raw = scale * i<axis> + offset + sum(coef * clamp(int(v), lo, hi) for v, coef, lo, hi
    in dyn)`` (no axis term when ``axis`` is None; ``v`` are SSA names of scalars); the index is
    ``raw // div``. With ``ext`` set the load is guarded: positions with ``raw`` outside
    ``[0, (ext - 1) * div]`` or not a multiple of ``div`` read the load's ``fill`` value instead
    (the index is clamped, so memory is never read out of bounds)."""

    __slots__ = ()

    def __new__(cls, axis, scale=1, offset=0, div=1, ext=None, dyn=()):
        return tuple.__new__(cls, (axis, scale, offset, div, ext, tuple(dyn)))

    axis = property(lambda self: self[0])
    scale = property(lambda self: self[1])
    offset = property(lambda self: self[2])
    div = property(lambda self: self[3])
    ext = property(lambda self: self[4])
    dyn = property(lambda self: self[5])

    @property
    def plain(self) -> bool:
        """An affine index without division or guard."""
        return self.div == 1 and self.ext is None


def _norm(e: Any) -> Ix:
    if isinstance(e, Ix):
        return e
    return Ix(None, 0, 0) if e is None else Ix(e)


def _denorm(e: Ix) -> Any:
    """The legacy entry (an axis, or None for 0) when ``e`` is that simple."""
    if e.plain and not e.dyn:
        if e.axis is not None and e.scale == 1 and e.offset == 0:
            return e.axis
        if e.axis is None and e.offset == 0:
            return None
    return e


class Const:
    """A scalar constant."""

    __slots__ = ("name", "value", "dtype")

    def __init__(self, name: str, value: Any, dtype: np.dtype):
        self.name, self.value, self.dtype = name, value, np.dtype(dtype)


class Op:
    """``out = op(args)`` on scalars; ``op`` is a primitive name, ``params`` its static params,
    ``in_dtypes`` the argument dtypes, ``comment`` the equation it came from."""

    __slots__ = ("out", "op", "args", "dtype", "in_dtypes", "params", "comment")

    def __init__(self, out: str, op: str, args: tuple, dtype: np.dtype, in_dtypes: tuple, params: dict, comment: str):
        self.out, self.op, self.args, self.dtype = out, op, args, np.dtype(dtype)
        self.in_dtypes, self.params, self.comment = in_dtypes, params, comment


class Iota:
    """``out = dtype(loop index along axis)``."""

    __slots__ = ("out", "axis", "dtype", "comment")

    def __init__(self, out: str, axis: int, dtype: np.dtype, comment: str):
        self.out, self.axis, self.dtype, self.comment = out, axis, np.dtype(dtype), comment


class Reduction:
    """Accumulate ``value`` with ``kind`` over the nest's reduce axes into ``out``."""

    __slots__ = ("kind", "value", "out", "acc_dtype", "comment")

    def __init__(self, kind: str, value: str, out: Buf, acc_dtype: np.dtype, comment: str):
        self.kind, self.value, self.out, self.acc_dtype, self.comment = kind, value, out, np.dtype(acc_dtype), comment


class LoopNest:
    """A fused loop nest over ``domain``; see the module docstring."""

    def __init__(self, index: int, domain: tuple):
        self.index = index
        self.domain = tuple(domain)
        self.reduce_axes: tuple | None = None
        self.body: list = []
        self.stores: list[tuple[Buf, str]] = []
        self.reductions: list[Reduction] = []
        # schedule (``passes.schedule``): prange or not; the loop layout ('scalar', 'flat', 'full',
        # 'rows', 'nd'); whether reductions accumulate in a separate kept-shape buffer; the tile
        # size of reductions and the number of chunks a parallel reduction is split into
        self.parallel = False
        self.layout: str | None = None
        self.accumulate = False
        self.tile = 512
        self.chunks = 1
        self._loads: dict = {}

    @property
    def size(self) -> int:
        return math.prod(self.domain)

    def trailing_reduce(self) -> bool:
        r = self.reduce_axes or ()
        n = len(self.domain)
        return tuple(sorted(r)) == tuple(range(n - len(r), n))


class Reshape:
    """``out = src`` viewed with ``out.shape`` (copied first if ``src`` is not contiguous)."""

    def __init__(self, index: int, out: Buf, src: Buf):
        self.index, self.out, self.src = index, out, src


class Dot:
    """``out = dot_general(lhs, rhs)`` as ``nb`` GEMMs of (nl, nk) x (nk, nr).

    ``lhs_perm``/``rhs_perm`` bring the operands to (batch, free, contract) / (batch, contract,
    free) order; ``lhs_t``/``rhs_t`` say the 2-D blocks are used transposed (so no copy is needed
    when the operand's dims are contiguous in the other order)."""

    def __init__(
        self,
        index: int,
        out: Buf,
        lhs: Buf,
        rhs: Buf,
        dims: tuple,
        lhs_perm: tuple,
        rhs_perm: tuple,
        lhs_t: bool,
        rhs_t: bool,
        comment: str,
        precision: Any = None,
    ):
        self.index, self.out, self.lhs, self.rhs = index, out, lhs, rhs
        self.dims = dims  # (nb, nl, nk, nr)
        self.lhs_perm, self.rhs_perm, self.lhs_t, self.rhs_t = lhs_perm, rhs_perm, lhs_t, rhs_t
        self.comment = comment
        # the equation's ``precision`` param (None, a pair of lax.Precision, a DotAlgorithmPreset):
        # the CPU computes every one at full precision; a GPU picks TF32 or float32 by it, as JAX
        self.precision = precision


class Kernel:
    """One compiled function: ``params`` in, ``outputs`` (buffers, possibly params) out."""

    def __init__(self, name: str, params: list[Buf], stmts: list, outputs: list[Buf], consts: list[Const]):
        self.name, self.params, self.stmts, self.outputs, self.consts = name, params, stmts, outputs, consts

    def loop_nests(self) -> list[LoopNest]:
        return [s for s in self.stmts if isinstance(s, LoopNest)]

    def __repr__(self) -> str:
        kinds = ", ".join(type(s).__name__ for s in self.stmts)
        return f"Kernel({self.name}: {kinds})"


class Step:
    """A program step that is not a fused kernel: one primitive application, described by the
    primitive, its static ``params``, the abstract values it reads and writes and the backend-
    neutral ``aux`` facts its lowering rule declares (``registry.aux``). ``op`` is the primitive's
    name. No jaxpr equation reaches a renderer: this node is all a backend sees of the step."""

    __slots__ = ("prim", "params", "in_avals", "out_avals", "aux")

    def __init__(self, prim: Any, params: dict, in_avals: tuple, out_avals: tuple, aux: dict | None = None):
        self.prim = prim
        self.params = dict(params)
        self.in_avals = tuple(in_avals)
        self.out_avals = tuple(out_avals)
        self.aux = dict(aux or {})

    @property
    def op(self) -> str:
        return self.prim.name

    def describe(self) -> str:
        """``name[params] -> out avals`` on one line (the comment generated code carries)."""
        outs = ", ".join(a.str_short() for a in self.out_avals)
        return f"{self.op}{params_text(self.params)} -> {outs}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"


class HostCall(Step):
    """A step evaluated on the host: the primitive's impl (``prim.impl(*ins, **params)``) or a
    backend's compiled host kernel for it (``Backend.host_step``)."""

    __slots__ = ()


class InlineStep(Step):
    """An indexed update inside a compiled loop body (a backend capability,
    ``Capabilities.loop_ops``; numba: ``loops.INLINE_OPS``), rendered as generated loops in the
    loop function (outside loops it is a ``HostCall``)."""

    __slots__ = ()


class ControlStep(Step):
    """A ``scan``/``while``/``cond`` compiled as a real loop or branch. ``kind`` is the primitive
    name; ``params`` are its static params (no jaxprs: the sub-jaxprs are lowered to ``bodies``,
    programs with no host calls, keyed ``body`` (scan), ``cond``/``body`` (while) or
    ``branch<i>`` (cond))."""

    __slots__ = ("bodies",)

    def __init__(self, prim: Any, params: dict, in_avals: tuple, out_avals: tuple, bodies: dict):
        super().__init__(prim, {k: v for k, v in params.items() if not core._has_jaxpr(v)}, in_avals, out_avals)
        self.bodies = bodies

    @property
    def kind(self) -> str:
        return self.prim.name


class Program:
    """Steps (``Kernel``, ``HostCall``, ``ControlStep``, or in loop bodies ``InlineStep``) over a
    value table; slots name jaxpr variables."""

    def __init__(self, steps: list, in_slots: list, out_slots: list, step_io: list, consts: list):
        self.steps, self.in_slots, self.out_slots = steps, in_slots, out_slots
        self.step_io, self.consts = step_io, consts

    def as_text(self) -> str:
        """The program as readable text (``program_text``)."""
        return program_text(self)

    def __str__(self) -> str:
        return program_text(self)


# ---------------------------------------------------------------------------------------------
# printer: ``Program.as_text()``


def _dt(dtype: Any) -> str:
    return core.short_dtype_name(np.dtype(dtype))


def const_text(value: Any, dtype: Any) -> str:
    """A constant in decimal (shortest repr in its dtype), with the exact hex for floats."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        v = dtype.type(value)
        return f"{v!s} ({float(v).hex()})"
    return str(dtype.type(value).item())


def _ix_text(e: Any) -> str:
    if e is None:
        return "0"
    if not isinstance(e, Ix):
        return f"i{e}"
    terms = []
    if e.axis is not None:
        terms.append(f"i{e.axis}" if e.scale == 1 else f"{e.scale}*i{e.axis}")
    if e.offset or not terms:
        terms.append(str(e.offset))
    for v, coef, lo, hi in e.dyn:
        c = f"clamp({v}, {lo}, {hi})"
        terms.append(c if coef == 1 else f"{coef}*{c}")
    s = " + ".join(terms)
    if e.div != 1:
        s = f"({s}) // {e.div}"
    if e.ext is not None:
        s = f"{s} if in [0, {e.ext})"
    return s


def params_text(params: dict) -> str:
    """``[k=v ...]`` of an equation's static params (none: empty), on one line."""
    ps = {k: v for k, v in params.items() if v is not None and not core._has_jaxpr(v)}
    return "[" + " ".join(" ".join(f"{k}={v}".split()) for k, v in ps.items()) + "]" if ps else ""


def _nest_text(nest: LoopNest, ind: str) -> list[str]:
    red = f" reduce {list(nest.reduce_axes)}" if nest.reduce_axes else ""
    par = " parallel" if nest.parallel else ""
    lay = f" layout={nest.layout} tile={nest.tile}" if nest.layout else ""
    lay += f" chunks={nest.chunks}" if nest.chunks > 1 else ""
    acc = " accumulate" if nest.accumulate else ""
    lines = [f"{ind}nest{nest.index} over {list(nest.domain)}{red}{par}{lay}{acc}:"]
    ind2 = ind + "  "
    for s in nest.body:
        if isinstance(s, Load):
            idx = ", ".join(_ix_text(e) for e in s.index)
            fill = f" else {s.fill}" if s.fill is not None else ""
            lines.append(f"{ind2}{s.out}: {_dt(s.dtype)} = load {s.buf.name}[{idx}]{fill}")
        elif isinstance(s, Op):
            lines.append(f"{ind2}{s.out}: {_dt(s.dtype)} = {s.op}{params_text(s.params)}({', '.join(s.args)})")
        elif isinstance(s, Iota):
            lines.append(f"{ind2}{s.out}: {_dt(s.dtype)} = index i{s.axis}")
        else:
            lines.append(f"{ind2}{s!r}")
    for buf, v in nest.stores:
        lines.append(f"{ind2}store {buf!r} = {v}")
    for r in nest.reductions:
        lines.append(f"{ind2}reduce_{r.kind} {r.out!r} += {r.value} (accumulate in {_dt(r.acc_dtype)})")
    return lines


def _kernel_text(k: Kernel, ind: str) -> list[str]:
    ins = ", ".join(repr(p) for p in k.params)
    outs = ", ".join(repr(b) for b in k.outputs)
    lines = [f"{ind}buffers ({ins}) -> ({outs})"]
    ind2 = ind
    for c in k.consts:
        lines.append(f"{ind2}const {c.name}: {_dt(c.dtype)} = {const_text(c.value, c.dtype)}")
    for s in k.stmts:
        if isinstance(s, LoopNest):
            lines += _nest_text(s, ind2)
        elif isinstance(s, Dot):
            nb, nl, nk, nr = s.dims
            lt, rt = "^T" if s.lhs_t else "", "^T" if s.rhs_t else ""
            lines.append(
                f"{ind2}{s.out!r} = dot({s.lhs.name}{lt}, {s.rhs.name}{rt})  "
                f"# {nb} x ({nl}, {nk}) @ ({nk}, {nr}); {s.comment}"
            )
        elif isinstance(s, Reshape):
            lines.append(f"{ind2}{s.out!r} = reshape {s.src.name}")
        else:
            lines.append(f"{ind2}{s!r}")
    return lines


def _step_text(step: Step, ins: list, outs: list, names: Any) -> str:
    i = ", ".join(names(a) for a in ins)
    o = ", ".join(names(v) for v in outs)
    return f"({o}) = {step.op}{params_text(step.params)}({i})"


def program_text(prog: Program, ind: str = "") -> str:
    """``prog`` as text: one block per step (kernels with their loop nests, host steps and
    compiled control flow with their body programs); values are named ``%0, %1, ...``."""
    names: dict = {}

    def nm(v: Any) -> str:
        if type(v) is core.Literal:
            return const_text(v.val, v.aval.dtype)
        if v not in names:
            names[v] = f"%{len(names)}"
        return names[v]

    ins = ", ".join(f"{nm(v)}: {v.aval.str_short()}" for v in prog.in_slots)
    lines = [f"{ind}program({ins}):"]
    ind2 = ind + "  "
    for step, (s_in, s_out) in zip(prog.steps, prog.step_io):
        if isinstance(step, Kernel):
            outs = ", ".join(nm(v) for v in s_out)
            lines.append(f"{ind2}({outs}) = {step.name}({', '.join(nm(a) for a in s_in)}):")
            lines += _kernel_text(step, ind2 + "  ")
        elif isinstance(step, HostCall):
            lines.append(f"{ind2}host {_step_text(step, s_in, s_out, nm)}")
        elif isinstance(step, InlineStep):
            lines.append(f"{ind2}inline {_step_text(step, s_in, s_out, nm)}")
        elif isinstance(step, ControlStep):
            lines.append(f"{ind2}compiled {_step_text(step, s_in, s_out, nm)}:")
            for bname, body in step.bodies.items():
                lines.append(f"{ind2}  {bname}:")
                lines.append(program_text(body, ind2 + "    ").rstrip("\n"))
        else:
            lines.append(f"{ind2}{step!r}")
    lines.append(f"{ind2}return ({', '.join(nm(v) for v in prog.out_slots)})")
    return "\n".join(lines) + "\n"
