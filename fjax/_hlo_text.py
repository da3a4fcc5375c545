"""An HLO-style text rendering of a jaxpr, for ``jit(f).lower(x).compiler_ir(dialect=...)``.

fjax does not compile through XLA, so there is no real HLO module. Code written for JAX inspects
``compiler_ir(dialect="hlo").as_hlo_text()`` (or ``str(compiler_ir("stablehlo"))``) to compare what
two functions compile to; this module renders the jaxpr in HLO's text syntax with XLA's opcode
names and the expansions JAX's lowering makes (``integer_pow`` becomes a chain of multiplies,
``square`` a multiply, ``pjit`` is inlined), so such comparisons give JAX's answers. Primitives
without an HLO counterpart here appear under their own names.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import core
from fjax.dtypes import finfo as _finfo

_OPCODES = {
    "add": "add", "add_any": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "neg": "negate",
    "max": "maximum",
    "min": "minimum", "exp": "exponential", "exp2": "exponential", "log": "log", "log1p": "log-plus-one",
    "expm1": "exponential-minus-one", "sin": "sine", "cos": "cosine", "tan": "tan", "tanh": "tanh",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "abs": "abs", "sign": "sign", "pow": "power",
    "rem": "remainder", "floor": "floor", "ceil": "ceil", "round": "round-nearest-even", "atan2": "atan2",
    "logistic": "logistic", "not": "not", "and": "and", "or": "or", "xor": "xor", "select_n": "select",
    "convert_element_type": "convert", "broadcast_in_dim": "broadcast", "reshape": "reshape",
    "transpose": "transpose", "dot_general": "dot", "reduce_sum": "reduce", "reduce_max": "reduce",
    "reduce_min": "reduce", "reduce_prod": "reduce", "real": "real", "imag": "imag", "complex": "complex",
    "iota": "iota", "concatenate": "concatenate", "pad": "pad", "slice": "slice",
    "dynamic_slice": "dynamic-slice", "dynamic_update_slice": "dynamic-update-slice", "gather": "gather",
    "scatter": "scatter", "scatter-add": "scatter", "rev": "reverse", "clamp": "clamp", "is_finite": "is-finite",
    "while": "while", "cond": "conditional", "sort": "sort", "cumsum": "reduce-window", "erf": "erf",
    "population_count": "popcnt", "shift_left": "shift-left", "copy": "copy", "copy_p": "copy",
}  # fmt: skip
_COMPARE = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}


def _shape_str(aval: Any) -> str:
    dt = np.dtype(aval.dtype)
    name = {"bool": "pred"}.get(dt.name, core._short_names.get(dt.name, dt.name))
    return f"{name}[{','.join(map(str, aval.shape))}]"


class _Printer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.counter = 0
        self.names: dict[Any, str] = {}

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}.{self.counter}"

    def operand(self, v: Any) -> str:
        if isinstance(v, core.Literal):
            name = self.fresh("constant")
            val = np.asarray(v.val)
            self.lines.append(f"  {name} = {_shape_str(v.aval)} constant({val.tolist()})")
            return name
        return self.names[v]

    def emit(self, opcode: str, aval: Any, args: list[str], attrs: str = "") -> str:
        name = self.fresh(opcode.replace("-", "_"))
        extra = f", {attrs}" if attrs else ""
        self.lines.append(f"  {name} = {_shape_str(aval)} {opcode}({', '.join(args)}){extra}")
        return name

    def jaxpr(self, jaxpr: Any, args: list[str]) -> list[str]:
        for v, a in zip(jaxpr.invars, args):
            self.names[v] = a
        for eqn in jaxpr.eqns:
            self.eqn(eqn)
        return [self.operand(v) for v in jaxpr.outvars]

    def eqn(self, eqn: Any) -> None:
        name = eqn.primitive.name
        args = [self.operand(v) for v in eqn.invars]
        outs = eqn.outvars
        if name in ("pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "remat", "checkpoint"):
            inner = eqn.params.get("jaxpr") or eqn.params.get("call_jaxpr") or eqn.params.get("fun_jaxpr")
            if inner is not None:
                closed = inner if hasattr(inner, "consts") else None
                jx = inner.jaxpr if closed is not None else inner
                if closed is not None:
                    for cv, c in zip(jx.constvars, closed.consts):
                        self.names[cv] = self.operand(core.Literal(c, core.get_aval(c)))
                results = self.jaxpr(jx, args)
                for o, r in zip(outs, results):
                    self.names[o] = r
                return
        if name == "square":
            self.names[outs[0]] = self.emit("multiply", outs[0].aval, [args[0], args[0]])
            return
        if name == "integer_pow":
            self.names[outs[0]] = self._integer_pow(args[0], outs[0].aval, int(eqn.params["y"]))
            return
        if name in _COMPARE:
            self.names[outs[0]] = self.emit("compare", outs[0].aval, args, f"direction={_COMPARE[name]}")
            return
        if name == "conj":
            re = self.emit("real", outs[0].aval.update(dtype=_finfo(outs[0].aval.dtype).dtype), args)
            im = self.emit("imag", outs[0].aval.update(dtype=_finfo(outs[0].aval.dtype).dtype), args)
            nim = self.emit("negate", outs[0].aval.update(dtype=_finfo(outs[0].aval.dtype).dtype), [im])
            self.names[outs[0]] = self.emit("complex", outs[0].aval, [re, nim])
            return
        if name == "dot_general":
            self.names[outs[0]] = self.emit("dot", outs[0].aval, args, _dot_attrs(eqn.params))
            return
        if name == "conv_general_dilated":
            attrs = _conv_attrs(eqn.params, eqn.invars[1].aval.shape)
            self.names[outs[0]] = self.emit("convolution", outs[0].aval, args, attrs)
            return
        opcode = _OPCODES.get(name, name.replace("_", "-"))
        attrs = ", ".join(f"{k}={_attr(v)}" for k, v in sorted(eqn.params.items()) if not _is_jaxpr(v))
        if len(outs) == 1:
            self.names[outs[0]] = self.emit(opcode, outs[0].aval, args, attrs)
            return
        tup = self.fresh(opcode.replace("-", "_"))
        shapes = ", ".join(_shape_str(o.aval) for o in outs)
        extra = f", {attrs}" if attrs else ""
        self.lines.append(f"  {tup} = ({shapes}) {opcode}({', '.join(args)}){extra}")
        for i, o in enumerate(outs):
            self.names[o] = self.emit("get-tuple-element", o.aval, [tup], f"index={i}")

    def _integer_pow(self, x: str, aval: Any, y: int) -> str:
        # JAX lowers integer_pow by binary exponentiation (jax._src.lax.lax._integer_pow)
        if y == 0:
            return self.emit("constant", aval, ["1"])
        recip, y = y < 0, abs(y)
        acc = None
        while y > 0:
            if y & 1:
                acc = x if acc is None else self.emit("multiply", aval, [acc, x])
            y >>= 1
            if y > 0:
                x = self.emit("multiply", aval, [x, x])
        if recip:
            one = self.emit("constant", aval, ["1"])
            acc = self.emit("divide", aval, [one, acc])
        return acc


def _precision_attr(precision: Any) -> list[str]:
    names = [getattr(p, "name", str(p)).lower() for p in precision or ()]
    return [f"operand_precision={{{','.join(names)}}}"] if any(n != "default" for n in names) else []


def _conv_labels(spec: tuple, first: str, second: str) -> str:
    labels = [""] * len(spec)
    labels[spec[0]], labels[spec[1]] = first, second
    for i, d in enumerate(spec[2:]):
        labels[d] = str(i)
    return "".join(labels)


def _conv_attrs(params: dict, rhs_shape: tuple) -> str:
    """XLA's convolution attributes as JAX's lowering writes them: the window (size, and stride,
    padding and dilations where not trivial), dim_labels, group counts above 1, operand_precision."""
    lspec, rspec, ospec = params["dimension_numbers"]
    window = ["size=" + "x".join(str(rhs_shape[d]) for d in rspec[2:])]
    if any(s != 1 for s in params["window_strides"]):
        window.append("stride=" + "x".join(map(str, params["window_strides"])))
    if any(p != (0, 0) for p in map(tuple, params["padding"])):
        window.append("pad=" + "x".join(f"{lo}_{hi}" for lo, hi in params["padding"]))
    for key, label in (("lhs_dilation", "lhs_dilate"), ("rhs_dilation", "rhs_dilate")):
        if any(d != 1 for d in params[key]):
            window.append(f"{label}=" + "x".join(map(str, params[key])))
    labels = f"{_conv_labels(lspec, 'b', 'f')}_{_conv_labels(rspec, 'o', 'i')}->{_conv_labels(ospec, 'b', 'f')}"
    parts = [f"window={{{' '.join(window)}}}", f"dim_labels={labels}"]
    for key in ("feature_group_count", "batch_group_count"):
        if params.get(key, 1) != 1:
            parts.append(f"{key}={params[key]}")
    return ", ".join(parts + _precision_attr(params.get("precision")))


def _dot_attrs(params: dict) -> str:
    """XLA's dot attributes as JAX's lowering writes them: the batch and contracting dimensions,
    and ``operand_precision`` unless both operands use the default precision."""
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    dims = {"lhs_batch_dims": lb, "lhs_contracting_dims": lc, "rhs_batch_dims": rb, "rhs_contracting_dims": rc}
    parts = [f"{k}={{{','.join(map(str, v))}}}" for k, v in dims.items() if len(v) or "contracting" in k]
    return ", ".join(parts + _precision_attr(params.get("precision")))


def _is_jaxpr(v: Any) -> bool:
    return isinstance(v, (core.Jaxpr, core.ClosedJaxpr)) or (
        isinstance(v, (tuple, list)) and any(isinstance(x, (core.Jaxpr, core.ClosedJaxpr)) for x in v)
    )


def _attr(v: Any) -> str:
    if isinstance(v, (tuple, list)):
        return "{" + ",".join(_attr(x) for x in v) + "}"
    return str(v).replace(" ", "")


def hlo_text(closed: Any, name: str) -> str:
    """HLO-style module text of the ClosedJaxpr ``closed`` (see the module docstring)."""
    p = _Printer()
    jx = closed.jaxpr
    params = []
    for i, v in enumerate(jx.invars):
        a = p.fresh("Arg_" + str(i))
        p.lines.append(f"  {a} = {_shape_str(v.aval)} parameter({i})")
        params.append(a)
    for cv, c in zip(jx.constvars, closed.consts):
        p.names[cv] = p.operand(core.Literal(c, core.get_aval(c)))
    outs = p.jaxpr(jx, params)
    out_avals = [v.aval for v in jx.outvars]
    if len(outs) == 1:
        root = outs[0]
        out_sig = _shape_str(out_avals[0])
    else:
        root = p.fresh("tuple")
        out_sig = "(" + ", ".join(_shape_str(a) for a in out_avals) + ")"
        p.lines.append(f"  {root} = {out_sig} tuple({', '.join(outs)})")
    # the last line defining the root becomes ROOT
    for i in range(len(p.lines) - 1, -1, -1):
        if p.lines[i].lstrip().startswith(root + " "):
            p.lines[i] = "  ROOT " + p.lines[i].lstrip()
            break
    else:  # the output is a parameter or an input passed through
        p.lines.append(f"  ROOT {p.fresh('copy')} = {out_sig} copy({root})")
    in_sig = ", ".join(_shape_str(v.aval) for v in jx.invars)
    header = f"HloModule jit_{name}, entry_computation_layout={{({in_sig})->{out_sig}}}"
    return "\n".join([header, "", f"ENTRY main.{p.counter + 1} {{", *p.lines, "}", ""])


class CompilerIR:
    """What ``Lowered.compiler_ir`` returns: the text of the module, printed by ``str``;
    ``as_hlo_text()`` as XLA's ``HloModule`` has."""

    def __init__(self, text: str, dialect: str) -> None:
        self._text = text
        self.dialect = dialect

    def as_hlo_text(self) -> str:
        """The module's text."""
        return self._text

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"<fjax CompilerIR ({self.dialect})>"
