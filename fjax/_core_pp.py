"""Jaxprs printed in JAX's format (``str(jaxpr)``, ``print(make_jaxpr(f)(x))``): split from
``fjax/core.py`` for size; ``core``'s ``Jaxpr``/``ClosedJaxpr``/``JaxprEqn`` call these."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from fjax.core import Array, Atom, ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var, _has_jaxpr
from fjax.dtypes import kind as _dkind


class _Namer:
    def __init__(self) -> None:
        self.names: dict[Var, str] = {}
        self.counter = itertools.count()

    def __call__(self, v: Var) -> str:
        if type(v) is DropVar:
            return "_"
        name = self.names.get(v)
        if name is None:
            name = self.names[v] = _encode_name(next(self.counter))
        return name


def _encode_name(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    s = ""
    while True:
        s = letters[i % 26] + s
        i //= 26
        if i == 0:
            break
    return s


def _pp_literal(x: Literal) -> str:
    v = np.asarray(x.val) if not isinstance(x.val, Array) else x.val._value
    if v.dtype == np.bool_:
        s = str(bool(v))
    elif _dkind(v.dtype) == "f":
        s = repr(float(v))
        if s in ("inf", "-inf", "nan"):
            s = s
    elif _dkind(v.dtype) in "iu":
        s = str(int(v))
    else:
        s = str(v.item())
    return f"{s}:{x.aval.str_short()}"


def _pp_atom(x: Atom, namer: _Namer) -> str:
    if type(x) is Literal:
        return _pp_literal(x)
    return namer(x)


def _pp_param(v: Any, namer: _Namer, indent: int) -> str:
    if isinstance(v, ClosedJaxpr):
        return _pp_jaxpr_inner(v.jaxpr, namer, indent)
    if isinstance(v, Jaxpr):
        return _pp_jaxpr_inner(v, namer, indent)
    if isinstance(v, np.dtype):
        return v.name
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    if isinstance(v, tuple) and v and all(isinstance(e, (ClosedJaxpr, Jaxpr)) for e in v):
        return (
            "(\n" + "".join(" " * (indent + 2) + _pp_param(e, namer, indent + 2) + "\n" for e in v) + " " * indent + ")"
        )
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return str(v)


def _dot_general_params(params: dict) -> dict:
    # as JAX's dot_general pp rule: precision / preferred_element_type only when set (a precision
    # prints as JAX's: ``(Precision.HIGHEST, Precision.HIGHEST)`` or a preset's bare name
    # ``F32_F32_F32``), the dimension numbers as lists
    out = {k: v for k, v in params.items() if v is not None}
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    out["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
    return out


def pp_eqn(eqn: JaxprEqn, namer: _Namer, indent: int) -> str:
    lhs = " ".join(f"{namer(v)}:{v.aval.str_short()}" if type(v) is not DropVar else "_" for v in eqn.outvars)
    params = eqn.params
    if eqn.primitive.name == "dot_general" and "dimension_numbers" in params:
        params = _dot_general_params(params)
    items = list(params.items())
    if any(_has_jaxpr(v) for _, v in items):
        # higher-order primitive: one parameter per line, sub-jaxprs last and nested (as JAX prints)
        items.sort(key=lambda kv: _has_jaxpr(kv[1]))
        pad = " " * (indent + 6)
        lines = "".join(f"\n{pad}{k}={_pp_param(v, namer, indent + 6)}" for k, v in items)
        name = f"{eqn.primitive.name}[{lines}\n{' ' * (indent + 4)}]"
    else:
        params = " ".join(f"{k}={_pp_param(v, namer, indent + 4)}" for k, v in items)
        name = eqn.primitive.name + (f"[{params}]" if params else "")
    rhs = " ".join([name] + [_pp_atom(x, namer) for x in eqn.invars])
    return f"{lhs} = {rhs}" if lhs else rhs


def _pp_jaxpr_inner(jaxpr: Jaxpr, namer: _Namer, indent: int) -> str:
    consts = " ".join(f"{namer(v)}:{v.aval.str_short()}" for v in jaxpr.constvars)
    ins = " ".join(f"{namer(v)}:{v.aval.str_short()}" for v in jaxpr.invars)
    eqn_strs = [pp_eqn(e, namer, indent) for e in jaxpr.eqns]
    outs = ", ".join(_pp_atom(x, namer) for x in jaxpr.outvars)
    outs = f"({outs},)" if len(jaxpr.outvars) == 1 else f"({outs})"
    head = "{ lambda " + (consts + "; " if consts else "; ") + ins + ". let"
    one_line = head + "".join(" " + s for s in eqn_strs) + " in " + outs + " }"
    if len(eqn_strs) <= 1 and "\n" not in one_line and len(one_line) + indent <= 80:
        return one_line
    pad = " " * (indent + 4)
    body = "".join(f"\n{pad}{s}" for s in eqn_strs)
    return f"{head}{body}\n{' ' * (indent + 2)}in {outs} }}"


def pp_jaxpr(jaxpr: Jaxpr) -> str:
    """Print ``jaxpr`` as JAX does: ``{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }``."""
    return _pp_jaxpr_inner(jaxpr, _Namer(), 0)
