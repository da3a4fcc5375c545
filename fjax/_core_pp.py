"""Jaxprs printed in JAX's format (``str(jaxpr)``, ``print(make_jaxpr(f)(x))``): split from
``fjax/core.py`` for size; ``core``'s ``Jaxpr``/``ClosedJaxpr``/``JaxprEqn`` call these.

The layout is JAX's: a jaxpr is a document of text, breaks, groups and nests (Lindig's
"strictly pretty" printer, as ``jax._src.pretty_printer``) laid out in 80 columns: a group is
printed on one line when it fits in what is left of the line, else each of its breaks is a
newline. So short jaxprs print on one line with equations joined by ``; ``, parameters of an
equation go one per line when they do not fit, and so on. Which parameters an equation shows
(and how) follows JAX's per-primitive rules (``fjax._core_pp_rules``). Unused binders of the
printed (outermost) jaxpr print as ``_``, as JAX's ``_dropvars``; inner jaxprs used more than
once, or with more than 10 equations, are printed first as ``let name = { ... } in``.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterator

import numpy as np

from fjax._core_pp_rules import printed_name, printed_params
from fjax.core import Array, Atom, ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var

# ---- documents: ("t", text) | ("b", text) | ("c", children) | ("g", child) | ("n", indent, child)

_NIL = ("c", ())


def text(s: str) -> tuple:
    return ("t", s)


def brk(s: str = " ") -> tuple:
    """A break: ``s`` when its enclosing group is printed flat, else a newline."""
    return ("b", s)


def concat(*docs: tuple) -> tuple:
    return ("c", docs)


def group(doc: tuple) -> tuple:
    return ("g", doc)


def nest(n: int, doc: tuple) -> tuple:
    return ("n", n, doc)


def join(sep: tuple, docs: list) -> tuple:
    if not docs:
        return _NIL
    out = [docs[0]]
    for d in docs[1:]:
        out += [sep, d]
    return ("c", tuple(out))


def _flat(doc: tuple, width: int) -> str | None:
    """``doc`` printed flat (every break as its text), or None if that takes more than ``width``
    columns. Only the group itself counts, not what follows it, as JAX's printer."""
    out: list[str] = []
    stack = [doc]
    while stack:
        d = stack.pop()
        kind = d[0]
        if kind in ("t", "b"):
            width -= len(d[1])
            if width < 0:
                return None
            out.append(d[1])
        elif kind == "c":
            stack.extend(reversed(d[1]))
        else:
            stack.append(d[-1])
    return "".join(out)


def format_doc(doc: tuple, width: int = 80) -> str:
    lines: list[str] = []
    line: list[str] = []
    k = 0
    agenda = [(0, doc)]  # (indent, doc) laid out in break mode; a group that fits is written flat
    while agenda:
        i, d = agenda.pop()
        kind = d[0]
        if kind == "t":
            line.append(d[1])
            k += len(d[1])
        elif kind == "c":
            agenda.extend((i, c) for c in reversed(d[1]))
        elif kind == "b":
            lines.append("".join(line))
            line, k = [" " * i], i
        elif kind == "n":
            agenda.append((i + d[1], d[2]))
        else:  # group: flat when it fits in the rest of the line (then so does every group inside it)
            flat = _flat(d, width - k)
            if flat is None:
                agenda.append((i, d[1]))
            else:
                line.append(flat)
                k += len(flat)
    lines.append("".join(line))
    return "\n".join(lines)


# ---- names


def _encode_name(i: int) -> str:
    s = ""
    while not s or i:
        i, r = divmod(i, 26)
        s = chr(97 + r) + s
    return s


class _Namer:
    """Variable names shared by a jaxpr and its inner jaxprs (JAX's ``JaxprPpContext``)."""

    def __init__(self, names: dict | None = None) -> None:
        self.names: dict[Var, str] = dict(names or {})
        self.shared: dict[Jaxpr, str] = {}  # inner jaxprs printed first, by name
        self.types: dict = {}  # aval -> its short form (``f32[3]``)
        self._fresh = self._gen()

    def _gen(self) -> Iterator[str]:
        i = 0
        while True:
            name = _encode_name(i)
            i += 1
            if name not in self.shared.values():
                yield name

    def __call__(self, v: Var) -> str:
        if type(v) is DropVar:
            return "_"
        name = self.names.get(v)
        if name is None:
            name = self.names[v] = next(self._fresh)
        return name

    def type_of(self, aval: Any) -> str:
        s = self.types.get(aval)
        if s is None:
            s = self.types[aval] = aval.str_short()
        return s

    def suggest_same_names(self, for_vars: list, like_vars: list) -> None:
        """Name the binders of an inner jaxpr like the outer atoms they alias (JAX's
        ``suggest_same_var_names``: jit's inner jaxpr reads ``a`` where the outer one passes ``a``)."""
        if len(for_vars) != len(like_vars):
            return
        used: set = set()
        for f, like in zip(for_vars, like_vars):
            if type(like) is Literal or type(f) is Literal or like in used or f in self.names:
                continue
            used.add(like)
            self.names[f] = self(like)


def _dropvars(jaxpr: Jaxpr) -> dict:
    """The outermost jaxpr's unused binders, printed ``_`` (JAX's ``_dropvars``)."""
    names: dict = {}
    used = {v for v in jaxpr.outvars if type(v) is not Literal}
    for eqn in reversed(jaxpr.eqns):
        for v in eqn.outvars:
            if v not in used:
                names[v] = "_"
        used.update(v for v in eqn.invars if type(v) is not Literal)
    return names


# ---- atoms and values


def _pp_literal(x: Literal, print_dtype: bool = True) -> str:
    v = x.val._value if isinstance(x.val, Array) else np.asarray(x.val)
    s = str(np.asarray(v).item()) if np.ndim(v) == 0 else "[...]"
    return f"{s}:{x.aval.str_short()}" if print_dtype else s


def _pp_atom(x: Atom, namer: _Namer) -> str:
    if type(x) is Literal:
        return _pp_literal(x)
    return namer(x)


def pp_vars(vs: list, namer: _Namer, separator: str = "", print_shapes: bool = False) -> tuple:
    if len(vs) == 1:  # (no break: the group and nest would change nothing)
        v = vs[0]
        return text(_pp_atom(v, namer) + ":" + namer.type_of(v.aval) if print_shapes else _pp_atom(v, namer))
    if print_shapes:
        docs = [text(_pp_atom(v, namer) + ":" + namer.type_of(v.aval)) for v in vs]
    else:
        docs = [text(_pp_atom(v, namer)) for v in vs]
    return nest(2, group(join(concat(text(separator), group(brk())), docs)))


def _plain(v: Any) -> Any:
    """numpy scalars inside parameters print as plain numbers (JAX shows ``np.int64(1)`` for some
    axes; fjax does not imitate that repr)."""
    if isinstance(v, tuple):
        items = [_plain(e) for e in v]
        return type(v)(*items) if hasattr(v, "_fields") else tuple(items)  # (namedtuples keep their repr)
    if isinstance(v, list):
        return [_plain(e) for e in v]
    if isinstance(v, (np.integer, np.bool_)):
        return v.item()
    return v


def pp_value(v: Any) -> str:
    """A parameter value as JAX prints it (``str``), with fjax's objects named as JAX's are."""
    if isinstance(v, np.dtype):
        return v.name
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    if isinstance(v, frozenset):
        return f"frozenset({{{', '.join(repr(e) for e in sorted(v))}}})"
    if callable(v) and not isinstance(v, type) and hasattr(v, "__name__"):
        return v.__name__
    return re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)), str(_plain(v)))


def _is_jaxpr(v: Any) -> bool:
    return isinstance(v, (Jaxpr, ClosedJaxpr))


def _pp_kv(k: str, v: Any, namer: _Namer) -> tuple:
    if type(v) is tuple and v and all(_is_jaxpr(j) for j in v):
        docs = [_pp_jaxpr_doc(j.jaxpr if isinstance(j, ClosedJaxpr) else j, namer) for j in v]
        val = group(concat(nest(2, concat(text("("), brk(""), join(brk(), docs))), brk(""), text(")")))
    elif _is_jaxpr(v):
        val = _pp_jaxpr_doc(v.jaxpr if isinstance(v, ClosedJaxpr) else v, namer)
    else:
        val = text(pp_value(v))
    return concat(text(f"{k}="), val)


def _pp_kv_pairs(items: list, namer: _Namer) -> tuple:
    if not items:
        return _NIL
    kvs = [_pp_kv(k, v, namer) for k, v in items]
    return group(concat(nest(2, concat(text("["), brk(""), join(brk(), kvs))), brk(""), text("]")))


# ---- equations and jaxprs


def _eqn_doc(eqn: JaxprEqn, namer: _Namer, col: int | None = None) -> tuple:
    """``col``: where the equation's line starts when its jaxpr is broken into lines (known for
    the outermost jaxpr): an equation that fits there is one text, the layout it would get anyway."""
    lhs = pp_vars(eqn.outvars, namer, print_shapes=True)  # names the binders first, as JAX
    items = printed_params(eqn, namer)
    doc = _eqn_rest(eqn, items, namer, lhs)
    if col is not None:
        flat = _flat(doc, 80 - col)
        if flat is not None:
            return text(flat)
    return doc


def _eqn_rest(eqn: JaxprEqn, items: list, namer: _Namer, lhs: tuple) -> tuple:
    rhs = concat(text(printed_name(eqn)), _pp_kv_pairs(items, namer), text(" "), pp_vars(eqn.invars, namer))
    if not eqn.outvars:
        return rhs
    return concat(lhs, text(" = "), rhs)


def _pp_jaxpr_doc(jaxpr: Jaxpr, namer: _Namer) -> tuple:
    name = namer.shared.get(jaxpr)
    if name is not None:
        return text(name)
    return _skeleton(jaxpr, namer)


def _skeleton(jaxpr: Jaxpr, namer: _Namer, col: int | None = None) -> tuple:
    consts = pp_vars(jaxpr.constvars, namer, print_shapes=True)
    ins = pp_vars(jaxpr.invars, namer, print_shapes=True)
    eqns = join(brk("; "), [_eqn_doc(e, namer, col) for e in jaxpr.eqns])
    outs = concat(
        text("("), pp_vars(jaxpr.outvars, namer, separator=","), text(",)" if len(jaxpr.outvars) == 1 else ")")
    )
    body = concat(
        text("{ lambda "),
        consts,
        text("; "),
        ins,
        text(". let"),
        nest(2, concat(brk(), eqns)),
        brk(),
        text("in "),
        outs,
    )
    return group(concat(nest(2, body), text(" }")))


def _sub_jaxprs(params: dict) -> Iterator[Jaxpr]:
    for v in params.values():
        if _is_jaxpr(v):
            yield v.jaxpr if isinstance(v, ClosedJaxpr) else v
        elif type(v) is tuple:
            for j in v:
                if _is_jaxpr(j):
                    yield j.jaxpr if isinstance(j, ClosedJaxpr) else j


def _shared_jaxprs(top: Jaxpr) -> list[tuple[str, Jaxpr]]:
    """Inner jaxprs printed once before the outermost one (JAX's ``pp_toplevel_jaxpr``): those used
    more than once and those with more than 10 equations, named after their equation's ``name``."""
    names: dict = {}
    counts: Counter = Counter()
    todo = [top]
    while todo:
        j = todo.pop(0)
        counts[j] += 1
        if j is not top and len(j.eqns) > 10:
            counts[j] += 1
        for eqn in j.eqns:
            name = eqn.params.get("name")
            subs = list(_sub_jaxprs(eqn.params))
            todo.extend(subs)
            if isinstance(name, str):
                for s in subs:
                    names.setdefault(s, name.strip("<>"))
    used: Counter = Counter()
    out = []
    for j, c in counts.items():
        if c == 1:
            continue
        name = names.get(j, "jaxpr")
        if used[name]:
            used[name] += 1
            name += str(used[name] - 1)
        used[name] += 1
        out.append((name, j))
    return out


def pp_eqn(eqn: JaxprEqn, namer: _Namer, indent: int = 0) -> str:
    return format_doc(nest(indent, _eqn_doc(eqn, namer)))


def pp_jaxpr(jaxpr: Jaxpr) -> str:
    """Print ``jaxpr`` as JAX does: ``{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }``."""
    namer = _Namer(_dropvars(jaxpr))
    shared = _shared_jaxprs(jaxpr)
    for name, j in shared:
        namer.shared[j] = name
    docs = []
    for name, j in shared:
        docs.append(concat(text(f"let {name} = "), _skeleton(j, namer), text(" in"), brk()))
    docs.append(_skeleton(jaxpr, namer, 4))
    return format_doc(concat(*docs))
