"""Symbolic dimensions for ``fjax.export``: spelled as in JAX, not implemented beyond that.

``symbolic_shape("a, 4")`` parses JAX's shape specification into a tuple of ints and
``SymbolicDim`` objects, and ``is_symbolic_dim`` recognises them, so code can build and inspect
polymorphic specifications. fjax does not implement shape polymorphism: exporting with a
symbolic dimension, or doing arithmetic on one, raises ``NotImplementedError``.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_NOT_IMPLEMENTED = (
    "fjax.export does not implement shape polymorphism (symbolic dimensions such as {dim!r}); export with "
    "concrete shapes, once per shape you need"
)


class SymbolicScope:
    """JAX's ``jax.export.SymbolicScope``: the scope (and constraints) symbolic dimensions share.
    Kept for the spelling; fjax checks no constraint."""

    def __init__(self, constraints_str: Sequence[str] = ()) -> None:
        if isinstance(constraints_str, str):
            raise ValueError(f"The symbolic constraints should be a sequence of strings. Got {constraints_str!r}")
        self.constraints = tuple(constraints_str)

    def __repr__(self) -> str:
        return f"SymbolicScope(constraints={list(self.constraints)})"


class SymbolicDim:
    """A symbolic dimension (``a``, ``2*b``, ...), kept as its text. fjax cannot compute with it."""

    __slots__ = ("text", "scope")

    def __init__(self, text: str, scope: SymbolicScope) -> None:
        self.text = text
        self.scope = scope

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SymbolicDim) and other.text == self.text and other.scope is self.scope

    def __hash__(self) -> int:
        return hash(self.text)

    def _unsupported(self, *args: Any) -> Any:
        raise NotImplementedError(_NOT_IMPLEMENTED.format(dim=self.text))

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _unsupported
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __neg__ = _unsupported
    __lt__ = __le__ = __gt__ = __ge__ = __index__ = __int__ = _unsupported


def _split_terms(spec: str) -> list[str]:
    terms, depth, cur = [], 0, ""
    for ch in spec:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        terms.append(cur.strip())
    return terms


def symbolic_shape(
    shape_spec: str | None,
    *,
    constraints: Sequence[str] = (),
    scope: SymbolicScope | None = None,
    like: Sequence[int | None] | None = None,
) -> tuple:
    """Parse a shape specification as ``jax.export.symbolic_shape`` does (``"a, 4"``, ``"(b, _)"``,
    ``"..."`` with ``like``): integers stay ints, other terms become ``SymbolicDim``. Only the
    spelling: fjax cannot export with symbolic dimensions (see the module doc)."""
    if scope is None:
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot use both `scope` and `constraints`")
    spec = (shape_spec or "").strip()
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1]
    terms = _split_terms(spec) if spec else []
    if "..." in terms:
        if terms[-1] != "..." or terms.count("...") > 1:
            raise ValueError(f"Syntax error in polymorphic shape {shape_spec!r}: '...' must be the last term")
        if like is None:
            raise ValueError(f"polymorphic shape {shape_spec!r} has '...' but no `like` shape to take it from")
        terms = terms[:-1] + ["_"] * (len(like) - len(terms) + 1)
    if like is not None and len(like) != len(terms):
        raise ValueError(
            f"polymorphic shape {shape_spec!r} has rank {len(terms)}, but the `like` shape has {len(like)}"
        )
    out: list = []
    for i, t in enumerate(terms):
        if t == "_":
            if like is None or like[i] is None:
                raise ValueError(
                    f"polymorphic shape {shape_spec!r}: '_' at position {i} needs a known `like` dimension"
                )
            out.append(int(like[i]))  # type: ignore[arg-type]
        elif re.fullmatch(r"\d+", t):
            out.append(int(t))
        elif t:
            if not _NAME.match(t) and not re.fullmatch(r"[A-Za-z0-9_+\-*/%() ]+", t):
                raise ValueError(f"Syntax error in polymorphic shape {shape_spec!r} at term {t!r}")
            out.append(SymbolicDim(t, scope))
        else:
            raise ValueError(f"Syntax error in polymorphic shape {shape_spec!r}: empty dimension")
    return tuple(out)


def is_symbolic_dim(p: Any) -> bool:
    """Whether ``p`` is a symbolic dimension (from ``symbolic_shape``)."""
    return isinstance(p, SymbolicDim)


def symbolic_args_specs(
    args: Any, shapes_specs: Any, constraints: Sequence[str] = (), scope: SymbolicScope | None = None
) -> Any:
    """``ShapeDtypeStruct``\\ s for ``args`` (a pytree of arrays) with the shapes ``shapes_specs``
    (a string, None, or a pytree prefix of strings), as ``jax.export.symbolic_args_specs``."""
    from fjax import tree_util  # noqa: PLC0415
    from fjax.api import ShapeDtypeStruct  # noqa: PLC0415

    if scope is None:
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot use both `scope` and `constraints`")
    leaves, tree = tree_util.tree_flatten(args)
    if shapes_specs is None or isinstance(shapes_specs, str):
        specs = [shapes_specs] * len(leaves)
    else:
        specs = tree_util.tree_leaves(
            tree_util.tree_map(
                lambda s, a: [s] * len(tree_util.tree_leaves(a)),
                shapes_specs,
                args,
                is_leaf=lambda s: s is None or isinstance(s, str),
            )  # fmt: skip
        )
    out = []
    for a, s in zip(leaves, specs):
        shape = tuple(a.shape) if s is None else symbolic_shape(s, scope=scope, like=tuple(a.shape))
        out.append(ShapeDtypeStruct(shape, a.dtype))
    return tree_util.tree_unflatten(tree, out)


def check_concrete(shape: Sequence[Any], where: str) -> None:
    for d in shape:
        if is_symbolic_dim(d):
            raise NotImplementedError(_NOT_IMPLEMENTED.format(dim=d.text) + f" ({where} has shape {tuple(shape)})")
