"""Lowering registrations: how each primitive lowers to the kernel IR, declared beside the primitive
(as JAX's ``mlir.register_lowering(sin_p, ...)``), e.g. in ``fjax/lax/lax.py``::

    sin_p = standard_unop("sin", np.sin, _fc)
    register_lowering(sin_p, ELEMENTWISE)

Kinds (what ``fjax.backends.lowering`` does with an equation of the primitive):

- ``ELEMENTWISE``: a scalar ``kernel_ir.Op`` named after the primitive (or ``op``, for a primitive
  that computes what another one does: ``add_any`` is ``add``), fused into loop nests; each
  backend renders it through its own op table (the numba one: ``NumbaRenderer.code_for_op``);
- ``REDUCTION``: a ``kernel_ir.Reduction`` with ``monoid`` (sum, prod, max, min, and, or) over the
  equation's ``axes``;
- ``LAYOUT``: index arithmetic on loads (broadcast, transpose, squeeze, reshape): no copy;
- ``INDEXING``: affine or guarded loads (slice, rev, pad, concatenate, dynamic_slice, gather);
- ``ITERATION``: the loop index itself (iota);
- ``LIBRARY``: a library call node (``dot_general`` -> ``kernel_ir.Dot``, BLAS on numba);
- ``HOST``: a host step (as with no registration) whose ``aux`` facts a backend's compiled host
  kernel reads (scatter-add's window sizes and index mode).

``aux(eqn)`` (optional) returns a dict of backend-neutral facts about an equation that the
lowering or a backend needs (e.g. gather's fill value), so no backend imports ``fjax.lax``.
``check(eqn)`` (optional) returns why a particular equation cannot lower (then it runs as a host
step), or None. A primitive with no registration runs as a host step under ``jit``: its numpy
``impl`` is called between compiled kernels (or a backend's compiled host kernel, if it has one).

This module imports only ``fjax.core``, so primitives anywhere in fjax can register.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from fjax.core import JaxprEqn, Primitive

ELEMENTWISE = "elementwise"
REDUCTION = "reduction"
LAYOUT = "layout"
INDEXING = "indexing"
ITERATION = "iteration"
LIBRARY = "library"
HOST = "host"
KINDS = frozenset({ELEMENTWISE, REDUCTION, LAYOUT, INDEXING, ITERATION, LIBRARY, HOST})
MONOIDS = frozenset({"sum", "prod", "max", "min", "and", "or"})


class LoweringRule(NamedTuple):
    """How one primitive lowers: its ``kind``, a reduction's ``monoid``, and an optional
    ``check(eqn) -> reason | None`` for equations of it that cannot lower; an elementwise
    primitive's kernel IR ``op`` name (None: the primitive's own name)."""

    kind: str
    monoid: str | None = None
    check: Callable[[JaxprEqn], str | None] | None = None
    aux: Callable[[JaxprEqn], dict] | None = None
    op: str | None = None


_rules: dict[str, LoweringRule] = {}


def register_lowering(
    prim: Primitive,
    kind: str,
    *,
    monoid: str | None = None,
    check: Callable[[JaxprEqn], str | None] | None = None,
    aux: Callable[[JaxprEqn], dict] | None = None,
    op: str | None = None,
) -> None:
    """Declare how ``prim`` lowers to the kernel IR (see the module docstring for the kinds)."""
    if kind not in KINDS:
        raise ValueError(f"register_lowering({prim.name}): unknown kind {kind!r}; expected one of {sorted(KINDS)}")
    if (kind == REDUCTION) != (monoid is not None) or (monoid is not None and monoid not in MONOIDS):
        raise ValueError(f"register_lowering({prim.name}): a {kind} with monoid {monoid!r}")
    if op is not None and kind != ELEMENTWISE:
        raise ValueError(f"register_lowering({prim.name}): op={op!r} given for a {kind}")
    _rules[prim.name] = LoweringRule(kind, monoid, check, aux, op)


def lowering_rule(name: str) -> LoweringRule | None:
    """The rule registered for the primitive called ``name`` (None: it runs as a host step)."""
    return _rules.get(name)


def aux(eqn: JaxprEqn) -> dict:
    """The registered ``aux`` facts of ``eqn`` (empty without any)."""
    rule = _rules.get(eqn.primitive.name)
    return rule.aux(eqn) if rule is not None and rule.aux is not None else {}


def registered(kind: str) -> frozenset[str]:
    """Names of the primitives registered with ``kind``."""
    return frozenset(n for n, r in _rules.items() if r.kind == kind)
