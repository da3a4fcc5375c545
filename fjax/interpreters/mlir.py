"""``jax.interpreters.mlir``: lowering rules for primitives defined outside fjax.

JAX lowers each primitive to MLIR (StableHLO); a library that defines its own primitive registers
a rule with ``mlir.register_lowering(prim, rule)``, most often ``mlir.lower_fun(impl)``: "lower
this primitive as the traced jaxpr of ``impl``". fjax has no MLIR, but that second kind of rule
means something here too, and fjax honours it: under ``jit`` an equation of such a primitive is
replaced by the jaxpr of ``impl`` traced at the equation's avals (``expand``), so its operations
are compiled and fused with the rest of the program instead of running as a host step.

A rule written against MLIR itself (building ``hlo`` ops from a ``LoweringRuleContext``) cannot be
used. It is recorded (``lowerings``), and the primitive runs as it does without any rule: compiled
programs call its ``impl`` as a host step on the CPU backend; the CUDA backend refuses it by name.
``emit_python_callback`` likewise has no MLIR to emit into and raises ``NotImplementedError``.
"""

from __future__ import annotations

import importlib
import threading
import weakref
from typing import Any, Callable

from fjax import core
from fjax.interpreters import partial_eval as pe

__all__ = [
    "LoweringRuleContext",
    "emit_python_callback",
    "expand",
    "lower_fun",
    "lowerings",
    "register_lowering",
]

#: every rule registered: primitive -> {platform or None: rule}
lowerings: dict[core.Primitive, dict[str | None, Callable]] = {}
#: the primitives with a ``lower_fun`` rule for all platforms or the CPU/GPU: primitive -> LoweredFun
_expandable: dict[core.Primitive, LoweredFun] = {}

#: fjax's own per-equation rewrites (``register_rewrite``): primitive -> rule(eqn) -> function or None
_rewrites: dict[core.Primitive, Callable] = {}
_body_rewrites: dict[core.Primitive, Callable] = {}  # only inside loop and branch bodies
#: fjax's own whole-body rewrites (``register_body_pass``): jaxpr -> rewritten jaxpr or None
_body_passes: list[Callable[[core.Jaxpr], core.Jaxpr | None]] = []
_CONTROL = frozenset({"while", "scan", "cond"})

_PLATFORMS = (None, "cpu", "cuda", "gpu")


class LoweringRuleContext:
    """The type JAX's rules receive; fjax never calls an MLIR rule, so none is ever made."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("jax.interpreters.mlir.LoweringRuleContext: fjax does not lower to MLIR")


class LoweredFun:
    """What ``lower_fun(fun, multiple_results)`` returns: the rule "lower as ``fun``'s jaxpr"."""

    __slots__ = ("fun", "multiple_results", "__weakref__")

    def __init__(self, fun: Callable, multiple_results: bool) -> None:
        self.fun = fun
        self.multiple_results = bool(multiple_results)

    def __call__(self, ctx: Any, *args: Any, **params: Any) -> Any:
        raise NotImplementedError(
            f"mlir.lower_fun({getattr(self.fun, '__name__', self.fun)!r}): fjax does not lower to MLIR; "
            "under fjax.jit the primitive is expanded into the function's jaxpr instead"
        )

    def __repr__(self) -> str:
        return f"lower_fun({getattr(self.fun, '__name__', self.fun)!r}, multiple_results={self.multiple_results})"


def lower_fun(fun: Callable, multiple_results: bool = True) -> LoweredFun:
    """The lowering rule "this primitive is ``fun``" (``fun(*args, **params)``, returning a list of
    outputs when ``multiple_results``, else one output)."""
    return LoweredFun(fun, multiple_results)


def register_lowering(
    prim: core.Primitive, rule: Callable, platform: str | None = None, inline: bool = True, cacheable: bool = True
) -> Callable:
    """Register ``rule`` as ``prim``'s lowering (on ``platform``, or on all of them). A
    ``lower_fun`` rule makes ``jit`` expand ``prim``'s equations into the function's jaxpr."""
    del inline, cacheable  # (MLIR-level options)
    if not isinstance(prim, core.Primitive):
        raise TypeError(f"register_lowering: expected a Primitive, got {type(prim).__name__}")
    lowerings.setdefault(prim, {})[platform] = rule
    if platform in _PLATFORMS:
        if isinstance(rule, LoweredFun):
            _expandable[prim] = rule
            _install()
        elif platform is None:
            _expandable.pop(prim, None)
    return rule


def register_rewrite(
    prim: core.Primitive, rule: Callable[[core.JaxprEqn], Callable | None], bodies_only: bool = False
) -> None:
    """fjax-internal: ``rule(eqn)`` gives a function (``fun(*args, **params)``, as ``lower_fun``'s)
    that ``jit`` expands the equation into, or None to keep it as it is (a canonical form the
    backends compile better, decided per equation). ``bodies_only``: only inside the bodies of
    ``while``/``scan``/``cond``, which compile as a whole or not at all (outside them the
    primitive's own host step may be the better form)."""
    (_body_rewrites if bodies_only else _rewrites)[prim] = rule
    _install()


def register_body_pass(fn: Callable[[core.Jaxpr], core.Jaxpr | None]) -> None:
    """fjax-internal: ``fn(jaxpr)`` gives a rewritten ``jaxpr`` (same inputs and outputs), or None
    to keep it; run on every loop and branch body before the per-equation rewrites, for forms that
    span several equations (``fjax/lax/_select_fold.py``)."""
    if fn not in _body_passes:
        _body_passes.append(fn)
    _install()


def emit_python_callback(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("jax.interpreters.mlir.emit_python_callback: fjax does not lower to MLIR")


# ---- expansion of lower_fun primitives in the programs jit compiles -------------------------------

_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # ClosedJaxpr -> expanded ClosedJaxpr
_body_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # the same, as a loop/branch body
_lf_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # lower_fun rules only (CUDA)
_lock = threading.Lock()
_MISSING = object()
_EXPANDED = "mlir.expand"  # the key of a jaxpr's expansion in its ``compiled`` dict
_UNCHANGED = object()
_generation = [0]


def _install() -> None:
    # a rule registered after a jaxpr was expanded: expansions are made again
    _generation[0] += 1
    _cache.clear()
    _body_cache.clear()
    _lf_cache.clear()
    jit_mod = importlib.import_module("fjax.jit")  # (``fjax.jit`` the attribute is the function)
    jit_mod.lowering_expander = expand


def _trace_rule(rule: LoweredFun, eqn: core.JaxprEqn) -> core.ClosedJaxpr:
    fun, many = rule.fun, rule.multiple_results
    params = eqn.params

    def flat(*xs: Any) -> list:
        out = fun(*xs, **params)
        return list(out) if many else [out]

    in_avals = [v.aval for v in eqn.invars]
    jaxpr, consts, _ = pe.trace_to_jaxpr(flat, in_avals, f"lower_fun({eqn.primitive.name})")
    return core.ClosedJaxpr(jaxpr, list(consts))


def _expand_jaxpr(
    jaxpr: core.Jaxpr, body: bool = False, own: bool = True, consts: list | None = None
) -> core.Jaxpr | None:
    """``jaxpr`` with ``lower_fun`` primitives replaced by ``jit`` equations of their functions'
    jaxprs (recursively, also in sub-jaxprs); None when nothing changed. ``body``: ``jaxpr`` is
    (inside) the body of a loop or branch, where the rewrites registered for bodies apply too.
    ``own=False``: only the ``lower_fun`` rules, not fjax's own rewrites. ``consts`` (a list):
    the constants a function's jaxpr closes over become new constvars of ``jaxpr``, their values
    appended to ``consts``, and operands of the ``jit`` equation (a ``jit`` with constants of its
    own is not inlined by the backends: a loop body holding one ran on the host)."""
    from fjax.jit import jit_p  # noqa: PLC0415 - fjax.jit imports the interpreters

    changed = False
    hoisted: list = []
    if body and own:
        for fn in _body_passes:
            new = fn(jaxpr)
            if new is not None:
                jaxpr, changed = new, True
    eqns = []
    for eqn in jaxpr.eqns:
        rule = _expandable.get(eqn.primitive)
        if rule is None and own:
            for table in (_rewrites, _body_rewrites) if body else (_rewrites,):
                if eqn.primitive in table:
                    fun = table[eqn.primitive](eqn)
                    if fun is not None:
                        rule = LoweredFun(fun, eqn.primitive.multiple_results)
                        break
        if rule is not None:
            inner = _trace_rule(rule, eqn)
            inner = expand(inner, body, own)
            if len(inner.out_avals) != len(eqn.outvars):
                raise TypeError(
                    f"lower_fun rule of '{eqn.primitive.name}' returned {len(inner.out_avals)} outputs; "
                    f"the primitive has {len(eqn.outvars)}"
                )
            params = {"jaxpr": inner, "name": eqn.primitive.name}
            new = core.JaxprEqn(jit_p, list(eqn.invars), list(eqn.outvars), params)
            eqns.append(_hoisted(new, hoisted, consts if body else None))
            changed = True
            continue
        new_params = _expand_params(eqn.params, body or eqn.primitive.name in _CONTROL, own)
        if eqn.primitive is jit_p and body and consts is not None and (new_params or eqn.params)["jaxpr"].consts:
            new = core.JaxprEqn(eqn.primitive, list(eqn.invars), list(eqn.outvars), new_params or eqn.params)
            eqns.append(_hoisted(new, hoisted, consts))
            changed = True
        elif new_params is not None:
            eqns.append(core.JaxprEqn(eqn.primitive, list(eqn.invars), list(eqn.outvars), new_params))
            changed = True
        else:
            eqns.append(eqn)
    if not changed:
        return None
    return core.Jaxpr([*jaxpr.constvars, *hoisted], jaxpr.invars, jaxpr.outvars, eqns)


def _hoisted(eqn: core.JaxprEqn, hoisted: list, consts: list | None) -> core.JaxprEqn:
    """The ``jit`` equation ``eqn`` with its jaxpr's constants made operands: new constvars of the
    enclosing jaxpr (appended to ``hoisted``, their values to ``consts``). Unchanged when
    ``consts`` is None (a jaxpr without a place for constants)."""
    inner = eqn.params["jaxpr"]
    if not inner.consts or consts is None:
        return eqn
    cvars = [core.Var(v.aval) for v in inner.jaxpr.constvars]
    hoisted += cvars
    consts += inner.consts
    ij = inner.jaxpr
    flat = core.ClosedJaxpr(core.Jaxpr([], [*ij.constvars, *ij.invars], ij.outvars, ij.eqns), [])
    return core.JaxprEqn(eqn.primitive, cvars + list(eqn.invars), list(eqn.outvars), {**eqn.params, "jaxpr": flat})


def _expand_params(params: dict, body: bool, own: bool) -> dict | None:
    new: dict | None = None
    for k, v in params.items():
        nv = _expand_value(v, body, own)
        if nv is not None:
            if new is None:
                new = dict(params)
            new[k] = nv
    return new


def _expand_value(v: Any, body: bool, own: bool) -> Any:
    if isinstance(v, core.ClosedJaxpr):
        out = expand(v, body, own)
        return out if out is not v else None
    if isinstance(v, core.Jaxpr):
        return _expand_jaxpr(v, body, own)
    if isinstance(v, (tuple, list)) and any(isinstance(x, (core.ClosedJaxpr, core.Jaxpr)) for x in v):
        items = [_expand_value(x, body, own) for x in v]
        if all(x is None for x in items):
            return None
        return type(v)(o if n is None else n for o, n in zip(v, items))
    return None


def expand(closed: core.ClosedJaxpr, body: bool = False, own: bool = True) -> core.ClosedJaxpr:
    """``closed`` with every equation of a ``lower_fun`` primitive replaced by the traced jaxpr of
    its function (``closed`` itself when it holds none); cached per jaxpr, so the expanded program
    keeps its compile cache. ``body``: ``closed`` is the body of a loop or branch. ``own=False``:
    the ``lower_fun`` rules only (the CUDA backend, which compiles fjax's own forms itself)."""
    if not own:
        if not _expandable:
            return closed
        hit = _lf_cache.get(closed, _MISSING)
        if hit is _MISSING:
            consts = list(closed.consts)
            new = _expand_jaxpr(closed.jaxpr, body, False, consts)
            with _lock:
                hit = _lf_cache.setdefault(closed, None if new is None else core.ClosedJaxpr(new, consts))
        return closed if hit is None else hit
    if not _expandable and not _rewrites and not _body_rewrites and not _body_passes:
        return closed
    if not body:  # (jit's per-call lookup: a key in the jaxpr's own compile cache, no weak reference)
        comp = closed.compiled
        hit = comp.get(_EXPANDED) if comp is not None else None
        if hit is not None and hit[0] == _generation[0]:
            return closed if hit[1] is _UNCHANGED else hit[1]
    cache = _body_cache if body else _cache
    hit = cache.get(closed, _MISSING)
    if hit is not _MISSING:
        return closed if hit is None else hit
    consts = list(closed.consts)
    new = _expand_jaxpr(closed.jaxpr, body, consts=consts)
    # (an unchanged jaxpr is cached as None: a value referring to its key would keep it alive)
    out = None if new is None else core.ClosedJaxpr(new, consts)
    with _lock:
        out = cache.setdefault(closed, out)
        if not body:
            if closed.compiled is None:
                closed.compiled = {}
            closed.compiled[_EXPANDED] = (_generation[0], _UNCHANGED if out is None else out)
    return closed if out is None else out
