"""Lowering of jaxprs to the backend-neutral kernel IR (``fjax.backends.kernel_ir``).

Pipeline: ``ClosedJaxpr`` -> (inline nested ``jit`` and custom_jvp/custom_vjp calls) -> segments
-> ``Program`` of ``Kernel`` IR, control steps and host steps -> a backend renders and compiles it
(``fjax.backends.dispatch``).

Fusion: equations are taken in order; an elementwise op joins the most recent loop nest with the
same domain when that nest may read all its inputs (a value produced in another nest is stored
there and loaded here); a reduction joins the nest that computes its operand, so
``sum(tanh(x) * exp(-x * x) + sin(x) * 0.5)`` is one loop with one accumulator and no temporary.
Layout ops of materialized data become load indices; of values still inside a loop they force
that value to be stored first.

Indexing ops are loads too: ``slice``/``rev``/``dynamic_slice`` become affine index expressions
(``Ix``: scale, offset, clamped runtime offsets), ``pad``/``concatenate`` guarded loads (the index
is clamped and out-of-range positions read the padding value; ``concatenate`` selects its part by
position), and the pointwise ``gather`` forms (``x[iota, labels]``, ``take_along_axis``) loads whose
index is itself a loaded value. They fuse with their consumers and copy nothing.

What does not lower (dtypes the backend does not hold, ops it renders only for some dtypes
(``Capabilities.op_reason``: asin of complex values on numba), windowed gather, scatter, control
flow and other primitives without a rule here) runs on the host between kernels: the jaxpr is cut into segments
and the unsupported equation is evaluated with its primitive's numpy ``impl`` (never through numba
objmode; only host callbacks in compiled loop bodies are called through it, ``numba.loops``).
``compile_jaxpr`` returns None (jit then evaluates the jaxpr eagerly) only when nothing at all would
be compiled. Fallbacks are logged on the ``fjax.lowering`` logger, naming the primitive.
"""

from __future__ import annotations

import itertools
import logging
import math
from typing import Any

import ml_dtypes
import numpy as np

from fjax import core
from fjax.backends.backend import Capabilities
from fjax.backends.kernel_ir import (
    Buf,
    Const,
    ControlStep,
    Dot,
    HostCall,
    InlineStep,
    Iota,
    Ix,
    Kernel,
    Load,
    LoopNest,
    Op,
    Program,
    Reduction,
    Reshape,
    _denorm,
    _norm,
)
from fjax.backends.lowering_dots import FUSED_DOT_MAX_K, _swap_transposed_dots, dot_fuses
from fjax.backends.registry import (
    ELEMENTWISE,
    HOST,
    INDEXING,
    ITERATION,
    LAYOUT,
    LIBRARY,
    REDUCTION,
    lowering_rule,
)
from fjax.backends.registry import aux as registry_aux
from fjax.config import config
from fjax.core import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, ShapedArray, Var

log = logging.getLogger("fjax.lowering")

# ---------------------------------------------------------------------------------------------
# what lowers

SUPPORTED_DTYPES = frozenset(
    np.dtype(t)
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float32,
        np.float64,
    )
)


# 16-bit floats a backend may hold (``Capabilities.dtypes``): sums and products accumulate in float64
_LOW_FLOATS = frozenset({np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)})


def _dtypes_ok(eqn: JaxprEqn, extra: frozenset = frozenset()) -> bool:
    for v in list(eqn.invars) + list(eqn.outvars):
        d = v.aval.dtype
        if d not in SUPPORTED_DTYPES and d not in extra:
            return False
    return True


def unsupported_reason(eqn: JaxprEqn, caps: Capabilities) -> str | None:
    """None if ``eqn`` lowers into a kernel for a backend that can do ``caps``, else why not."""
    name = eqn.primitive.name
    if not _dtypes_ok(eqn, caps.dtypes):
        dts = sorted({v.aval.dtype.name for v in list(eqn.invars) + list(eqn.outvars)})
        return f"{name} on dtypes {dts}"
    rule = lowering_rule(name)
    if rule is None:
        return f"no lowering rule for primitive {name}"
    if rule.kind == HOST:
        return f"{name} runs as a host step"
    if rule.kind == ELEMENTWISE and (rule.op or name) not in caps.ops and name != "stop_gradient":
        return f"the backend has no rendering of {name}"
    if caps.op_reason is not None and rule.kind in (ELEMENTWISE, REDUCTION):
        why = caps.op_reason(rule.op or name, eqn.outvars[0].aval.dtype, tuple(v.aval.dtype for v in eqn.invars))
        if why is not None:
            return why
    return rule.check(eqn) if rule.check is not None else None


CONTROL = frozenset({"scan", "while", "cond"})


def _sub_jaxprs(eqn: JaxprEqn) -> dict:
    p = eqn.params
    name = eqn.primitive.name
    if name == "scan":
        return {"body": p["jaxpr"]}
    if name == "while":
        return {"cond": p["cond_jaxpr"], "body": p["body_jaxpr"]}
    return {f"branch{i}": b for i, b in enumerate(p["branches"])}


def control_unsupported_reason(eqn: JaxprEqn, caps: Capabilities) -> str | None:
    """None if the control-flow equation ``eqn`` compiles as a loop/branch: every equation of its
    sub-jaxprs (after inlining nested jit) lowers, recursively, with no host fallback."""
    if not _dtypes_ok(eqn, caps.dtypes):
        dts = sorted({v.aval.dtype.name for v in list(eqn.invars) + list(eqn.outvars)})
        return f"{eqn.primitive.name} on dtypes {dts}"
    for closed in _sub_jaxprs(eqn).values():
        if not _dtypes_ok_vars(list(closed.jaxpr.invars) + list(closed.jaxpr.outvars), caps.dtypes):
            return f"{eqn.primitive.name} with a body on unsupported dtypes"
        for e in _inline_jits(closed.jaxpr):
            if isinstance(e, _Alias):
                continue
            why = control_unsupported_reason(e, caps) if e.primitive.name in CONTROL else unsupported_reason(e, caps)
            if why is not None and e.primitive.name in caps.loop_ops and _dtypes_ok(e, caps.dtypes):
                why = caps.loop_op_reason(_node(InlineStep, e))
            if why is not None:
                return f"its body has {why}"
    return None


def _dtypes_ok_vars(vs: list, extra: frozenset = frozenset()) -> bool:
    return all(type(v) is Literal or v.aval.dtype in SUPPORTED_DTYPES or v.aval.dtype in extra for v in vs)


# ---------------------------------------------------------------------------------------------
# values during lowering


class _BufVal:
    __slots__ = ("buf",)

    def __init__(self, buf: Buf):
        self.buf = buf


class _ViewVal:
    """``shape``-shaped value reading ``buf`` through ``index_map`` (per buf dim: out axis, None or
    an ``Ix`` whose ``dyn`` entries hold 0-d values); ``fill`` (a 0-d value) is read where a
    guarded entry is out of range (pad, concatenate)."""

    __slots__ = ("buf", "index_map", "shape", "fill")

    def __init__(self, buf: Buf, index_map: tuple, shape: tuple, fill: Any = None):
        self.buf, self.index_map, self.shape, self.fill = buf, tuple(index_map), tuple(shape), fill

    def deps(self) -> list:
        """The 0-d values the view's loads read besides ``buf``."""
        out = [self.fill] if self.fill is not None else []
        for e in self.index_map:
            if isinstance(e, Ix):
                out.extend(d[0] for d in e.dyn)
        return out


class _ConstVal:
    __slots__ = ("value", "dtype", "shape")

    def __init__(self, value: Any, dtype: np.dtype, shape: tuple):
        self.value, self.dtype, self.shape = value, np.dtype(dtype), tuple(shape)


class _ScalarVal:
    __slots__ = ("nest", "name", "aval", "stored")

    def __init__(self, nest: LoopNest, name: str, aval: ShapedArray):
        self.nest, self.name, self.aval = nest, name, aval
        self.stored: Buf | None = None


def _eqn_comment(eqn: JaxprEqn) -> str:
    # (``precision`` left out: it picks a GPU GEMM's compute mode, never the generated loops, and a
    # kernel's text is its cache key: one kernel for every precision)
    params = {k: v for k, v in eqn.params.items() if v is not None and k != "precision" and not core._has_jaxpr(v)}
    # one line: the comment must not spill into the generated code
    ps = " ".join(" ".join(f"{k}={v}".split()) for k, v in params.items())
    outs = ", ".join(v.aval.str_short() for v in eqn.outvars)
    return f"{eqn.primitive.name}{'[' + ps + ']' if ps else ''} -> {outs}"


class _KernelBuilder:
    """Lowers one segment of supported equations into a ``Kernel``.

    Values are shared within a nest: a load of the same buffer element (no nest reads a buffer it
    writes), and an ``Op`` or ``Iota`` identical to one already in the nest's body (same op,
    argument names, params and dtypes; every elementwise op is pure) reuse its SSA name, so e.g.
    the ``sin``/``cos`` recomputed by each level of ``grad(grad(f))`` are evaluated once."""

    def __init__(self, name: str, fused_dot_max_k: int = FUSED_DOT_MAX_K):
        self.name = name
        self.fused_dot_max_k = fused_dot_max_k
        self.stmts: list = []
        self.params: list[Buf] = []
        self.consts: dict = {}
        self.env: dict = {}
        self._names = itertools.count()
        self._bufs = itertools.count()
        self._values: dict = {}  # (nest index, op key) -> SSA name, for reuse within a nest

    # -- naming
    def _ssa(self) -> str:
        return f"v{next(self._names)}"

    def _op(
        self, nest: LoopNest, op: str, args: tuple, dtype: Any, in_dtypes: tuple, params: dict, comment: str
    ) -> str:
        """The SSA name of ``op(args)`` in ``nest``: an identical earlier value of the nest, or a new ``Op``."""
        dtype = np.dtype(dtype)
        in_dtypes = tuple(np.dtype(d) for d in in_dtypes)
        try:  # params by value and type (1, 1.0 and True are different params); unhashable: no reuse
            ps = tuple(sorted((k, type(v), v) for k, v in params.items()))
            key = (nest.index, "op", op, tuple(args), dtype, in_dtypes, ps)
            hash(key)
        except TypeError:
            key = None
        name = self._values.get(key) if key is not None else None
        if name is None:
            name = self._ssa()
            nest.body.append(Op(name, op, tuple(args), dtype, in_dtypes, dict(params), comment))
            if key is not None:
                self._values[key] = name
        return name

    def _iota(self, nest: LoopNest, axis: int, dtype: Any, comment: str) -> str:
        """The SSA name of the loop index along ``axis`` as ``dtype`` in ``nest`` (one per axis and dtype)."""
        key = (nest.index, "iota", axis, np.dtype(dtype))
        name = self._values.get(key)
        if name is None:
            name = self._values[key] = self._ssa()
            nest.body.append(Iota(name, axis, dtype, comment))
        return name

    def _new_buf(self, shape: tuple, dtype: np.dtype, producer: int, prefix: str = "b") -> Buf:
        return Buf(f"{prefix}{next(self._bufs)}", shape, dtype, producer, True)

    def const(self, value: Any, dtype: np.dtype) -> str:
        dtype = np.dtype(dtype)
        v = np.asarray(value).astype(dtype).item()
        key = (dtype.str, repr(v) if not (isinstance(v, float) and math.isnan(v)) else "nan")
        c = self.consts.get(key)
        if c is None:
            c = Const(f"c{len(self.consts)}_{core.short_dtype_name(dtype)}", v, dtype)
            self.consts[key] = c
        return c.name

    # -- inputs
    def add_param(self, var: Var) -> None:
        buf = Buf(f"a{len(self.params)}", var.aval.shape, var.aval.dtype, -1, False)
        self.params.append(buf)
        self.env[var] = _BufVal(buf)

    def read(self, atom: Any) -> Any:
        if type(atom) is Literal:
            return _ConstVal(atom.val, atom.aval.dtype, atom.aval.shape)
        return self.env[atom]

    # -- materialization
    def materialize(self, val: Any) -> Buf:
        if isinstance(val, _BufVal):
            return val.buf
        if isinstance(val, _ScalarVal):
            if val.stored is None:
                nest = val.nest
                buf = self._new_buf(val.aval.shape, val.aval.dtype, nest.index)
                nest.stores.append((buf, val.name))
                val.stored = buf
            return val.stored
        shape = val.shape
        dtype = val.dtype if isinstance(val, _ConstVal) else val.buf.dtype
        nest = self._nest_for(shape, [val], None)
        ref = self._ref(val, nest)
        buf = self._new_buf(shape, dtype, nest.index)
        nest.stores.append((buf, ref))
        return buf

    # -- nests
    def _new_nest(self, domain: tuple) -> LoopNest:
        nest = LoopNest(len(self.stmts), domain)
        self.stmts.append(nest)
        return nest

    def _nest_for(self, domain: tuple, vals: list, reduce_axes: tuple | None) -> LoopNest:
        """The most recent nest with ``domain`` that can read every value in ``vals``, else a new one."""
        cand = None
        for s in reversed(self.stmts):
            if isinstance(s, LoopNest) and s.domain == domain:
                cand = s
                break
        if cand is not None:
            ok = not (reduce_axes is not None and cand.reduce_axes not in (None, reduce_axes))
            for v in vals:
                if isinstance(v, _ScalarVal):
                    # a value of another nest is stored there, so that nest must come first
                    if v.nest is not cand and v.nest.index >= cand.index:
                        ok = False
                elif isinstance(v, (_BufVal, _ViewVal)) and v.buf.producer >= cand.index:
                    ok = False  # written by this nest (or later): not readable inside it
                stack = list(v.deps()) if isinstance(v, _ViewVal) else []
                while stack:
                    d = stack.pop()
                    if isinstance(d, (_BufVal, _ViewVal)) and d.buf.producer >= cand.index:
                        ok = False
                    if isinstance(d, _ViewVal):
                        stack.extend(d.deps())
            if ok:
                return cand
        return self._new_nest(domain)

    def _ref(self, val: Any, nest: LoopNest) -> str:
        """The SSA name (or constant name) of ``val`` at ``nest``'s current index."""
        if isinstance(val, _ConstVal):
            return self.const(val.value, val.dtype)
        if isinstance(val, _ScalarVal):
            if val.nest is nest:
                return val.name
            val = _BufVal(self.materialize(val))
        if isinstance(val, _BufVal):
            buf = val.buf
            nd = len(buf.shape)
            index = () if nd == 0 else tuple(range(len(nest.domain) - nd, len(nest.domain)))
            if nd and buf.shape != nest.domain[len(nest.domain) - nd :]:
                raise AssertionError(f"load of {buf} in domain {nest.domain}")
            fill = None
        else:
            buf, fill = val.buf, None
            index = []
            for e in val.index_map:
                if isinstance(e, Ix) and e.dyn:
                    e = Ix(*e[:5], tuple((self._ref(v, nest), c, lo, hi) for v, c, lo, hi in e.dyn))
                index.append(e)
            index = tuple(index)
            if val.fill is not None and any(isinstance(e, Ix) and e.ext is not None for e in index):
                fill = self._ref(val.fill, nest)
        key = (buf.name, index, fill)
        name = nest._loads.get(key)
        if name is None:
            name = self._ssa()
            nest.body.append(Load(name, buf, index, buf.dtype, fill))
            nest._loads[key] = name
        return name

    # -- equations
    def lower_eqn(self, eqn: JaxprEqn) -> None:
        name = eqn.primitive.name
        rule = lowering_rule(name)
        kind = rule.kind
        ins = [self.read(a) for a in eqn.invars]
        out = eqn.outvars[0]
        params = eqn.params
        if name == "stop_gradient" or (name == "convert_element_type" and eqn.invars[0].aval.dtype == out.aval.dtype):
            self.env[out] = ins[0]
            return
        if kind == ELEMENTWISE:
            # an operand with size-1 dims where the result has more (``add`` of f32[3,1] and
            # f32[1,4]) reads its one element along them: a broadcast view, as broadcast_in_dim's
            ins = [self._expand_size1(v, a.aval.shape, out.aval.shape) for v, a in zip(ins, eqn.invars)]
        if kind == ELEMENTWISE and all(isinstance(v, _ConstVal) for v in ins):
            # constant folding (tracing leaves e.g. ``neg 1.0``, ``div -1.0 256.0``)
            vals = [np.asarray(v.value, v.dtype) for v in ins]
            res = np.asarray(eqn.primitive.impl(*vals, **params), out.aval.dtype)
            self.env[out] = _ConstVal(res.item(), out.aval.dtype, out.aval.shape)
            return
        if kind == ELEMENTWISE:
            domain = out.aval.shape
            nest = self._nest_for(domain, ins, None)
            refs = tuple(self._ref(v, nest) for v in ins)
            in_dtypes = tuple(a.aval.dtype for a in eqn.invars)
            ssa = self._op(nest, rule.op or name, refs, out.aval.dtype, in_dtypes, params, _eqn_comment(eqn))
            self.env[out] = _ScalarVal(nest, ssa, out.aval)
            return
        if kind == ITERATION:
            nest = self._nest_for(out.aval.shape, [], None)
            ssa = self._iota(nest, params["dimension"], out.aval.dtype, _eqn_comment(eqn))
            self.env[out] = _ScalarVal(nest, ssa, out.aval)
            return
        if kind == REDUCTION:
            axes = tuple(sorted(params["axes"]))
            x = ins[0]
            if not axes:
                self.env[out] = x
                return
            in_shape = eqn.invars[0].aval.shape
            if all(in_shape[a] == 1 for a in axes) and out.aval.dtype == eqn.invars[0].aval.dtype:
                # a reduction over extent-1 axes is its one element (sum, prod, max, min, and, or):
                # a view, which fuses with its producer and consumers (the gradient of a keepdims
                # broadcast leaves such sums: each was a loop nest and a GPU launch of its own)
                kept = [a for a in range(len(in_shape)) if a not in axes]
                amap = tuple(kept.index(a) if a in kept else None for a in range(len(in_shape)))
                self.env[out] = self._compose(x, in_shape, amap, out.aval.shape)
                return
            nest = self._nest_for(in_shape, [x], axes)
            ref = self._ref(x, nest)
            nest.reduce_axes = axes
            buf = self._new_buf(out.aval.shape, out.aval.dtype, nest.index)
            dt = out.aval.dtype
            flt = dt.kind == "f" or dt in _LOW_FLOATS
            acc = np.dtype(np.float64) if (flt and rule.monoid in ("sum", "prod")) else dt
            if dt.kind == "c" and rule.monoid in ("sum", "prod"):
                acc = np.dtype(np.complex128)  # complex64 sums in complex128, as float32's in float64
            if dt in _LOW_FLOATS and acc == dt:
                acc = np.dtype(np.float32)  # max/min of 16-bit floats: exact in float32
            nest.reductions.append(Reduction(rule.monoid, ref, buf, acc, _eqn_comment(eqn)))
            self.env[out] = _BufVal(buf)
            return
        if kind == LAYOUT:
            self.env[out] = self._layout(eqn, ins[0])
            return
        if kind == LIBRARY and name == "dot_general":
            la, ra = eqn.invars[0].aval.shape, eqn.invars[1].aval.shape
            if dot_fuses(la, ra, params["dimension_numbers"], self.fused_dot_max_k):
                self.env[out] = self._dot_fused(eqn, ins)
            else:
                self.env[out] = self._dot_mixed(eqn, ins)
            return
        if kind == INDEXING:
            self.env[out] = self._indexing(eqn, ins)
            return
        raise NotImplementedError(name)

    def _scalar_operand(self, v: Any) -> Any:
        """A 0-d value usable as a view's ``fill``/``dyn`` (scalars of nests are stored first)."""
        if isinstance(v, _ScalarVal):
            return _BufVal(self.materialize(v))
        return v

    def _indexing(self, eqn: JaxprEqn, ins: list) -> Any:
        name = eqn.primitive.name
        p = eqn.params
        in_shape = eqn.invars[0].aval.shape
        out_shape = eqn.outvars[0].aval.shape
        nd = len(in_shape)
        x = ins[0]
        if name == "slice":
            st = p["strides"] or (1,) * nd
            t = tuple(Ix(k, st[k], p["start_indices"][k]) for k in range(nd))
            return self._compose(x, in_shape, t, out_shape)
        if name == "rev":
            dims = set(p["dimensions"])
            t = tuple(Ix(k, -1, in_shape[k] - 1) if k in dims else k for k in range(nd))
            return self._compose(x, in_shape, t, out_shape)
        if name == "dynamic_slice":
            sizes = p["slice_sizes"]
            t = []
            for k in range(nd):
                iv = self._scalar_operand(ins[1 + k])
                hi = in_shape[k] - sizes[k]
                if isinstance(iv, _ConstVal):
                    t.append(Ix(k, 1, int(min(max(int(iv.value), 0), hi))))
                else:
                    t.append(Ix(k, 1, 0, dyn=((iv, 1, 0, hi),)))
            return self._compose(x, in_shape, tuple(t), out_shape)
        if name == "gather":
            return self._gather(eqn, ins)
        if name == "pad":
            cfg = p["padding_config"]
            if any(n == 0 for n in in_shape):
                return self._fill_value(ins[1], out_shape, eqn)
            t = tuple(Ix(k, 1, -lo, it + 1, in_shape[k]) for k, (lo, _, it) in enumerate(cfg))
            if isinstance(x, _ConstVal):
                x = _BufVal(self.materialize(x))
            return self._compose(x, in_shape, t, out_shape, fill=self._scalar_operand(ins[1]))
        if name == "concatenate":
            dim = p["dimension"]
            parts = [(v, a.aval.shape) for v, a in zip(ins, eqn.invars) if a.aval.shape[dim] > 0]
            dt = eqn.outvars[0].aval.dtype
            zero = _ConstVal(np.zeros((), dt).item(), dt, ())
            if not parts:  # every operand is empty along ``dim``: so is the (empty) output
                return _ConstVal(zero.value, dt, out_shape)
            if len(parts) == 1:
                return parts[0][0]
            views, off = [], 0
            for v, shp in parts:
                t = tuple(Ix(k, 1, -off, 1, shp[k]) if k == dim else k for k in range(nd))
                views.append((off, self._compose(v, shp, t, out_shape, fill=zero)))
                off += shp[dim]
            nest = self._nest_for(out_shape, [v for _, v in views], None)
            refs = [self._ref(v, nest) for _, v in views]
            i64 = np.dtype(np.int64)
            pos = self._iota(nest, dim, i64, _eqn_comment(eqn))
            acc = refs[-1]
            for k in range(len(views) - 2, -1, -1):
                o_end = views[k + 1][0]  # part k holds positions below where part k + 1 starts
                cond = self._op(nest, "lt", (pos, self.const(o_end, i64)), np.bool_, (i64, i64), {}, "concatenate")
                bdt = (np.dtype(np.bool_), dt, dt)
                acc = self._op(nest, "select_n", (cond, acc, refs[k]), dt, bdt, {}, "concatenate")
            return _ScalarVal(nest, acc, eqn.outvars[0].aval)
        raise NotImplementedError(name)

    def _gather(self, eqn: JaxprEqn, ins: list) -> Any:
        """Pointwise gather: a view of the operand whose index along dim ``start_index_map[k]`` is
        the loaded index component ``k`` (clamped; or guarded with the fill value for
        ``FILL_OR_DROP``)."""
        p = eqn.params
        facts = registry_aux(eqn)
        dn = p["dimension_numbers"]
        x_shape = eqn.invars[0].aval.shape
        idx_shape = eqn.invars[1].aval.shape
        out_shape = eqn.outvars[0].aval.shape
        dt = eqn.outvars[0].aval.dtype
        x, iv = ins
        if isinstance(x, _ConstVal):
            return _ConstVal(x.value, x.dtype, out_shape)
        if isinstance(x, _ScalarVal):
            x = _BufVal(self.materialize(x))
        if isinstance(x, _ViewVal):
            x = _BufVal(self.materialize(x))
        if isinstance(iv, _ScalarVal):
            iv = _BufVal(self.materialize(iv))
        nb = len(idx_shape) - 1
        fill_mode = facts["fill_or_drop"]
        big = 1 << 62
        index = []
        for d in range(len(x_shape)):
            k = list(dn.start_index_map).index(d)
            # component k of the index vectors, as a value of the output shape
            amap = tuple(range(nb)) + (Ix(None, 0, k),)
            comp = self._compose(iv, idx_shape, amap, out_shape)
            if fill_mode:
                index.append(Ix(None, 0, 0, 1, x_shape[d], ((comp, 1, -big, big),)))
            else:
                index.append(Ix(None, 0, 0, dyn=((comp, 1, 0, x_shape[d] - 1),)))
        fill = None
        if fill_mode:
            fill = _ConstVal(np.asarray(facts["fill_value"]).astype(dt).item(), dt, ())
        return _ViewVal(x.buf, tuple(index), out_shape, fill)

    def _fill_value(self, pv: Any, out_shape: tuple, eqn: JaxprEqn) -> Any:
        pv = self._scalar_operand(pv)
        if isinstance(pv, _ConstVal):
            return _ConstVal(pv.value, pv.dtype, out_shape)
        return _ViewVal(pv.buf, (), out_shape)

    def _layout(self, eqn: JaxprEqn, x: Any) -> Any:
        name = eqn.primitive.name
        params = eqn.params
        out_shape = eqn.outvars[0].aval.shape
        in_shape = eqn.invars[0].aval.shape
        if isinstance(x, _ConstVal):
            return _ConstVal(x.value, x.dtype, out_shape)
        if name == "reshape":
            if params.get("dimensions") is not None:
                x = self._transpose(x, in_shape, tuple(params["dimensions"]))
            src = self.materialize(x) if not isinstance(x, _BufVal) else x.buf
            idx = len(self.stmts)
            out = Buf(f"r{next(self._bufs)}", out_shape, src.dtype, idx, True)
            self.stmts.append(Reshape(idx, out, src))
            return _BufVal(out)
        if name == "transpose":
            return self._transpose(x, in_shape, tuple(params["permutation"]))
        if name == "squeeze":
            dims = set(params["dimensions"])
            kept = [i for i in range(len(in_shape)) if i not in dims]
            # operand dim i -> output axis kept.index(i), squeezed dims read index 0
            amap = tuple(kept.index(i) if i in kept else None for i in range(len(in_shape)))
            return self._compose(x, in_shape, amap, out_shape)
        if name == "broadcast_in_dim":
            bd = params["broadcast_dimensions"]
            amap = tuple(None if (in_shape[i] == 1 and out_shape[d] != 1) else d for i, d in enumerate(bd))
            return self._compose(x, in_shape, amap, out_shape)
        if name == "expand_dims":
            kept = [i for i in range(len(out_shape)) if i not in params["dimensions"]]
            return self._compose(x, in_shape, tuple(kept), out_shape)
        raise NotImplementedError(name)

    def _expand_size1(self, x: Any, in_shape: tuple, out_shape: tuple) -> Any:
        if not in_shape or in_shape == out_shape:
            return x
        amap = tuple(None if (d == 1 and o != 1) else i for i, (d, o) in enumerate(zip(in_shape, out_shape)))
        return self._compose(x, in_shape, amap, out_shape)

    def _transpose(self, x: Any, in_shape: tuple, perm: tuple) -> Any:
        # output axis k reads operand dim perm[k]: operand dim i -> output axis perm.index(i)
        amap = tuple(perm.index(i) for i in range(len(in_shape)))
        out_shape = tuple(in_shape[p] for p in perm)
        return self._compose(x, in_shape, amap, out_shape)

    def _compose(self, x: Any, in_shape: tuple, amap: tuple, out_shape: tuple, fill: Any = None) -> Any:
        """View of ``x`` (shape ``in_shape``) where operand dim i is output axis ``amap[i]`` (or 0),
        or, for an ``Ix`` entry, that index expression of the output axes (``fill`` read where a
        guarded entry is out of range)."""
        if isinstance(x, _ConstVal):
            return _ConstVal(x.value, x.dtype, out_shape)
        if isinstance(x, _ScalarVal):
            x = _BufVal(self.materialize(x))
        if isinstance(x, _BufVal):
            return _ViewVal(x.buf, tuple(_denorm(_norm(a)) for a in amap), out_shape, fill)
        if isinstance(x, _ViewVal):
            guarded = any(isinstance(a, Ix) and not a.plain for a in amap)
            elementwise_dyn = any(isinstance(d, _ViewVal) and d.shape for d in x.deps())
            if (x.fill is not None or elementwise_dyn) and guarded:
                return self._compose(_BufVal(self.materialize(x)), in_shape, amap, out_shape, fill)
            if guarded:
                # a guard on an axis that x's view never reads (pad of a broadcast scalar: the view
                # of a 0-d buffer has no index entry to carry it) would be lost: read from memory
                read = {_norm(e).axis for e in x.index_map}
                if any(isinstance(a, Ix) and not a.plain and i not in read for i, a in enumerate(amap)):
                    return self._compose(_BufVal(self.materialize(x)), in_shape, amap, out_shape, fill)

            def follow(dv: Any) -> Any:
                # a per-element index value (gather) is a value of x's shape: apply the same map
                if isinstance(dv, _ViewVal) and dv.shape:
                    return self._compose(dv, in_shape, amap, out_shape)
                return dv

            new = []
            for e in x.index_map:
                e = _norm(e)
                if e.axis is None:
                    e = Ix(
                        None, e.scale, e.offset, e.div, e.ext, tuple((follow(v), c, lo, hi) for v, c, lo, hi in e.dyn)
                    )
                    new.append(_denorm(e))
                    continue
                t = _norm(amap[e.axis])
                if not t.plain:
                    if e.plain and e.scale == 1 and e.offset == 0 and not e.dyn:
                        new.append(t)
                        continue
                    # an index expression of a division/guard: read the view from memory
                    return self._compose(_BufVal(self.materialize(x)), in_shape, amap, out_shape, fill)
                # buf index = (e.scale * (t.scale * i + t.offset + t.dyn) + e.offset + e.dyn) // e.div
                dyn = tuple((follow(v), c, lo, hi) for v, c, lo, hi in e.dyn)
                dyn += tuple((v, c * e.scale, lo, hi) for v, c, lo, hi in t.dyn)
                if t.axis is None:
                    new.append(_denorm(Ix(None, 0, e.scale * t.offset + e.offset, e.div, e.ext, dyn)))
                else:
                    new.append(_denorm(Ix(t.axis, e.scale * t.scale, e.scale * t.offset + e.offset, e.div, e.ext, dyn)))
            return _ViewVal(x.buf, tuple(new), out_shape, x.fill if x.fill is not None else fill)
        raise AssertionError(type(x))

    def _convert(self, val: Any, aval: ShapedArray, dt: Any, comment: str) -> _ScalarVal:
        """``val`` (of ``aval``) converted to ``dt`` elementwise (a nest that fuses with its producer)."""
        nest = self._nest_for(aval.shape, [val], None)
        ref = self._ref(val, nest)
        cvt = {"new_dtype": np.dtype(dt), "weak_type": False, "sharding": None}
        c = self._op(nest, "convert_element_type", (ref,), np.dtype(dt), (aval.dtype,), cvt, comment)
        return _ScalarVal(nest, c, ShapedArray(aval.shape, np.dtype(dt)))

    def _dot_mixed(self, eqn: JaxprEqn, ins: list) -> Any:
        """A GEMM; with operands of different dtypes (a 16-bit float and float32, as in the
        transpose of a mixed-precision product) the 16-bit ones are widened to float32 first, and a
        16-bit result of float32 operands is the float32 product rounded once."""
        la, ra = eqn.invars[0].aval, eqn.invars[1].aval
        if la.dtype == ra.dtype:
            return _BufVal(self._dot(eqn, ins))
        f32 = np.dtype(np.float32)
        comment = _eqn_comment(eqn)
        ins = [self._convert(v, a, f32, comment) if a.dtype != f32 else v for v, a in zip(ins, (la, ra))]
        out = eqn.outvars[0].aval
        if out.dtype == f32:
            return _BufVal(self._dot(eqn, ins))
        prod = self._dot(eqn, ins, f32)
        return self._convert(_BufVal(prod), ShapedArray(out.shape, f32), out.dtype, comment)

    def _dot(self, eqn: JaxprEqn, ins: list, out_dtype: Any = None) -> Buf:
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        la, ra = eqn.invars[0].aval, eqn.invars[1].aval
        lhs = self._contig(ins[0])
        rhs = self._contig(ins[1])
        lfree = tuple(i for i in range(la.ndim) if i not in lc and i not in lb)
        rfree = tuple(i for i in range(ra.ndim) if i not in rc and i not in rb)
        nb = math.prod(la.shape[i] for i in lb)
        nk = math.prod(la.shape[i] for i in lc)
        nl = math.prod(la.shape[i] for i in lfree)
        nr = math.prod(ra.shape[i] for i in rfree)
        ident_l = tuple(range(la.ndim))
        ident_r = tuple(range(ra.ndim))
        # lhs blocks are (nl, nk); a (nk, nl)-ordered operand is used transposed without a copy
        lp = tuple(lb) + lfree + tuple(lc)
        lp_t = tuple(lb) + tuple(lc) + lfree
        rp = tuple(rb) + tuple(rc) + rfree
        rp_t = tuple(rb) + rfree + tuple(rc)
        if lp == ident_l:
            lperm, lt = None, False
        elif lp_t == ident_l:
            lperm, lt = None, True
        else:
            lperm, lt = lp, False
        if rp == ident_r:
            rperm, rt = None, False
        elif rp_t == ident_r:
            rperm, rt = None, True
        else:
            rperm, rt = rp, False
        idx = len(self.stmts)
        out = self._new_buf(eqn.outvars[0].aval.shape, out_dtype or eqn.outvars[0].aval.dtype, idx)
        self.stmts.append(
            Dot(
                idx, out, lhs, rhs, (nb, nl, nk, nr), lperm, rperm, lt, rt, _eqn_comment(eqn),
                eqn.params.get("precision"),
            )
        )  # fmt: skip
        return out

    def _dot_fused(self, eqn: JaxprEqn, ins: list) -> Any:
        """``dot_general`` with a small contraction (``dot_fuses``) as elementwise code over the
        output: the sum over the contracting positions (in order, in the output dtype, as a GEMM
        sums) of the products of the operands read at that position. It fuses with the operands'
        producers and the output's consumers like any elementwise op."""
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        la, ra = eqn.invars[0].aval, eqn.invars[1].aval
        out = eqn.outvars[0].aval
        dt = out.dtype
        ksizes = tuple(la.shape[a] for a in lc)
        if math.prod(ksizes) == 0:
            return _ConstVal(np.zeros((), dt).item(), dt, out.shape)
        lfree = [i for i in range(la.ndim) if i not in lc and i not in lb]
        rfree = [i for i in range(ra.ndim) if i not in rc and i not in rb]
        lmap: list = [None] * la.ndim
        rmap: list = [None] * ra.ndim
        for j, (a, b) in enumerate(zip(lb, rb)):
            lmap[a], rmap[b] = j, j
        for j, a in enumerate(lfree):
            lmap[a] = len(lb) + j
        for j, b in enumerate(rfree):
            rmap[b] = len(lb) + len(lfree) + j
        views = []
        for pos in itertools.product(*[range(k) for k in ksizes]):
            lm, rm = list(lmap), list(rmap)
            for a, b, k in zip(lc, rc, pos):  # operand dims read at the contracting position k
                lm[a] = rm[b] = _denorm(Ix(None, 0, k))
            views.append(self._compose(ins[0], la.shape, tuple(lm), out.shape))
            views.append(self._compose(ins[1], ra.shape, tuple(rm), out.shape))
        nest = self._nest_for(out.shape, views, None)
        comment = _eqn_comment(eqn)
        refs = [self._ref(v, nest) for v in views]
        # the output dtype (the rule's check), but 16-bit floats in float32, rounded once at the
        # end, as a GEMM accumulates them (and 16-bit operands of a float32 product widened)
        cdt = np.dtype(np.float32) if dt in _LOW_FLOATS else dt
        srcs = [eqn.invars[k % 2].aval.dtype for k in range(len(refs))]
        cvt = {"new_dtype": cdt, "weak_type": False, "sharding": None}
        refs = [
            r if s == cdt else self._op(nest, "convert_element_type", (r,), cdt, (s,), cvt, comment)
            for r, s in zip(refs, srcs)
        ]
        acc = None
        for k in range(0, len(refs), 2):
            p = self._op(nest, "mul", (refs[k], refs[k + 1]), cdt, (cdt, cdt), {}, comment)
            acc = p if acc is None else self._op(nest, "add", (acc, p), cdt, (cdt, cdt), {}, comment)
        if cdt != dt:
            acc = self._op(
                nest,
                "convert_element_type",
                (acc,),
                dt,
                (cdt,),
                {"new_dtype": dt, "weak_type": False, "sharding": None},
                comment,
            )
        return _ScalarVal(nest, acc, out)

    def _contig(self, val: Any) -> Buf:
        if isinstance(val, _BufVal):
            return val.buf
        return self.materialize(val)

    def finish(self, outvars: list) -> Kernel:
        outs = []
        for v in outvars:
            val = self.read(v)
            outs.append(self.materialize(val))
        for s in self.stmts:
            if isinstance(s, LoopNest):
                del s._loads
        return Kernel(self.name, self.params, self.stmts, outs, list(self.consts.values()))


# ---------------------------------------------------------------------------------------------
# jaxpr preprocessing: inline nested jit, cut into segments


def _inlinable(eqn: JaxprEqn) -> tuple[Jaxpr, list] | None:
    """The body of a nested ``jit`` (without consts) or ``remat2`` (checkpoint: inside a compiled
    program the saved/recomputed split is already in the jaxpr, so its body runs as it is), with
    the equation's operands its inputs take."""
    name = eqn.primitive.name
    if name == "jit" and not eqn.params["jaxpr"].consts:
        return eqn.params["jaxpr"].jaxpr, eqn.invars
    if name == "remat2" and not eqn.params["jaxpr"].constvars:
        return eqn.params["jaxpr"], eqn.invars
    if name in ("custom_jvp_call", "custom_vjp_call"):
        # under jit only the primal computation runs (the rules were used by the transforms that
        # produced this jaxpr), so its equations fuse with their neighbours like any others
        closed = eqn.params["call_jaxpr"]  # closed-over values arrive as leading args (num_consts)
        return (closed.jaxpr, eqn.invars) if not closed.consts else None
    if name == "custom_linear_solve":
        # likewise only its ``solve`` runs (operands: the four groups of constants, then b)
        lengths = eqn.params["const_lengths"]
        solve = eqn.params["jaxprs"][2]
        if solve.consts:
            return None
        start = lengths[0] + lengths[1]
        return solve.jaxpr, list(eqn.invars[start : start + lengths[2]]) + list(eqn.invars[sum(lengths) :])
    return None


def _inline_jits(jaxpr: Jaxpr) -> list[JaxprEqn]:
    """Equations of ``jaxpr`` with nested ``jit``, ``remat2`` and custom-derivative call equations
    replaced by their bodies."""
    out: list[JaxprEqn] = []
    for eqn in jaxpr.eqns:
        found = _inlinable(eqn)
        if found is not None:
            inner, operands = found
            sub: dict = {}
            for iv, a in zip(inner.invars, operands):
                sub[iv] = a

            def rd(a: Any) -> Any:
                return a if type(a) is Literal else sub.get(a, a)

            for e in _inline_jits(inner):
                new_outs = []
                for ov in e.outvars:
                    nv = Var(ov.aval) if not isinstance(ov, DropVar) else ov
                    sub[ov] = nv
                    new_outs.append(nv)
                if isinstance(e, _Alias):
                    out.append(_Alias(rd(e.invars[0]), new_outs[0]))
                else:
                    out.append(JaxprEqn(e.primitive, [rd(a) for a in e.invars], new_outs, e.params))
            # outputs of the inner jaxpr: alias through a substitution recorded as copies
            for ov, io in zip(eqn.outvars, inner.outvars):
                src = rd(io)
                out.append(_Alias(src, ov))
        else:
            out.append(eqn)
    return out


class _AliasPrim:
    name = "__alias__"
    multiple_results = False


class _Alias(JaxprEqn):
    __slots__ = ()

    def __init__(self, src: Any, dst: Var):
        super().__init__(_AliasPrim, [src], [dst], {})


def _avals(eqn: JaxprEqn) -> tuple[tuple, tuple]:
    return tuple(a.aval for a in eqn.invars), tuple(v.aval for v in eqn.outvars)


def _node(cls: type, eqn: JaxprEqn) -> Any:
    """The IR step (``HostCall``/``InlineStep``) for ``eqn``: what a backend sees of it."""
    return cls(eqn.primitive, eqn.params, *_avals(eqn), registry_aux(eqn))


def _has_control_flow(jaxpr: Jaxpr) -> bool:
    return any(e.primitive.name in CONTROL for e in _inline_jits(jaxpr))


def build_program(
    closed: ClosedJaxpr, caps: Capabilities, nopython: bool = False, loops: bool = True
) -> Program | None:
    """Cut ``closed`` into kernels, compiled loops/branches and host calls for a backend that can
    do ``caps``; None if nothing would be compiled. ``nopython``: the body of a compiled loop (no
    host calls; always a program).
    ``loops=False``: control flow runs on the host (a fallback when compiling a loop failed)."""
    jaxpr = closed.jaxpr
    eqns = _inline_jits(jaxpr)
    # resolve aliases into a substitution
    sub: dict = {}

    def rd(a: Any) -> Any:
        while type(a) is not Literal and a in sub:
            a = sub[a]
        return a

    flat: list[JaxprEqn] = []
    for e in eqns:
        if isinstance(e, _Alias):
            sub[e.outvars[0]] = rd(e.invars[0])
            continue
        flat.append(JaxprEqn(e.primitive, [rd(a) for a in e.invars], e.outvars, e.params))
    outvars = [rd(v) for v in jaxpr.outvars]
    in_vars = list(jaxpr.constvars) + list(jaxpr.invars)
    flat = _swap_transposed_dots(flat, outvars)

    # segments: runs of supported equations; each unsupported one is a host call
    segments: list = []
    cur: list = []
    for e in flat:
        if e.primitive.name in CONTROL:
            why = (
                control_unsupported_reason(e, caps)
                if config.fjax_compile_loops and loops
                else "compiled loops are off (fjax_compile_loops)"
            )
            if why is None:
                if cur:
                    segments.append(cur)
                    cur = []
                bodies = {k: build_program(c, caps, nopython=True) for k, c in _sub_jaxprs(e).items()}
                segments.append((ControlStep(e.primitive, e.params, *_avals(e), bodies), e))
                continue
        else:
            why = unsupported_reason(e, caps)
            if why is not None and nopython and e.primitive.name in caps.loop_ops:
                if cur:
                    segments.append(cur)
                    cur = []
                segments.append((_node(InlineStep, e), e))
                continue
        if why is None:
            cur.append(e)
        else:
            if nopython:
                raise AssertionError(f"host call inside a compiled loop body: {e.primitive.name}: {why}")
            log.info("fjax.jit: %s runs on the host (not compiled): %s", e.primitive.name, why)
            if cur:
                segments.append(cur)
                cur = []
            segments.append((_node(HostCall, e), e))
    if cur:
        segments.append(cur)
    if not nopython and not any(
        isinstance(s, list) or isinstance(s[0], ControlStep) or s[0].op in caps.host_kernels for s in segments
    ):
        return None

    # liveness: which variables each step reads from outside / must hand on
    used_after: list[set] = [set() for _ in segments]
    live: set = {v for v in outvars if type(v) is not Literal}
    for i in range(len(segments) - 1, -1, -1):
        used_after[i] = set(live)
        seg = segments[i]
        es = [seg[1]] if isinstance(seg, tuple) else seg
        for e in es:
            for a in e.invars:
                if type(a) is not Literal:
                    live.add(a)

    steps, step_io = [], []
    for i, seg in enumerate(segments):
        if isinstance(seg, tuple):
            step, e = seg
            steps.append(step)
            step_io.append((list(e.invars), list(e.outvars)))
            continue
        defined: set = set()
        params: list = []
        for e in seg:
            for a in e.invars:
                if type(a) is not Literal and a not in defined and a not in params:
                    params.append(a)
            defined.update(e.outvars)
        outs = [
            v
            for v in dict.fromkeys(v for e in seg for v in e.outvars)
            if v in used_after[i] and not isinstance(v, DropVar)
        ]
        if len(segments) == 1:
            # the whole program is this kernel: take exactly the jaxpr's inputs and outputs
            params, outs = list(in_vars), list(outvars)
        kb = _KernelBuilder(f"kernel{i}", getattr(caps, "fused_dot_max_k", FUSED_DOT_MAX_K))
        for p in params:
            kb.add_param(p)
        for e in seg:
            kb.lower_eqn(e)
        steps.append(kb.finish(outs))
        step_io.append((params, outs))
    return Program(steps, in_vars, outvars, step_io, list(closed.consts))
