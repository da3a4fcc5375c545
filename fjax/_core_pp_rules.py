"""Which parameters a printed equation shows, per primitive, as JAX 0.10.2 prints them.

JAX prints an equation's parameters sorted by name, except where a primitive has its own
printing rule (``core.pp_eqn_rules``): those hide parameters implied by the binder's type
(``shape``/``sharding`` of ``broadcast_in_dim``, ``out_sharding`` of ``dot_general``), hide
trivial ones (``accuracy=None``, ``out_dtype=None``, empty ``broadcast_dimensions``) or move
``name`` first (``jit``, ``custom_jvp_call``). Some JAX primitives carry parameters fjax does
not have (shardings, which fjax does not model, and scatter's combiner jaxpr): their printed
values are the ones JAX shows when they are unset, so a jaxpr prints as JAX's does. The rules
are kept in this table, beside the printer, because they are about printing alone.
"""

from __future__ import annotations

from typing import Any, Callable

from fjax.core import Jaxpr, JaxprEqn, Var

# primitive name -> rule(params dict, eqn, namer) -> [(name, value)] in printed order
pp_rules: dict[str, Callable] = {}


def printed_name(eqn: JaxprEqn) -> str:
    """The primitive name an equation prints with: a ``debug.print``'s ``debug_callback`` prints as
    JAX's ``debug_print`` (fjax stages it as a ``debug_callback``, which the backends run)."""
    name = eqn.primitive.name
    if name == "random_bitcast":  # (fjax's name for JAX's bitcast_convert_type primitive)
        return "bitcast_convert_type"
    if name == "debug_callback":
        shown = getattr(eqn.params["callback"], "printed", None)
        if shown is not None:
            return shown[0]
    return name


def printed_params(eqn: JaxprEqn, namer: Any) -> list[tuple[str, Any]]:
    rule = pp_rules.get(eqn.primitive.name)
    if rule is None:
        return sorted(eqn.params.items())
    return rule(dict(eqn.params), eqn, namer)


def _sorted_with(**extra: Any) -> Callable:
    """Parameters sorted by name, with fjax-absent JAX parameters shown at their unset value."""

    def rule(params: dict, eqn: JaxprEqn, namer: Any) -> list:
        for k, v in extra.items():
            params.setdefault(k, v)
        return sorted(params.items())

    return rule


pp_rules["reduce_sum"] = _sorted_with(out_sharding=None)
pp_rules["reshape"] = _sorted_with(sharding=None)
pp_rules["iota"] = _sorted_with(sharding=None)


def _drop_none(*names: str) -> Callable:
    def rule(params: dict, eqn: JaxprEqn, namer: Any) -> list:
        for n in names:
            if params.get(n, 0) is None:
                del params[n]
        return sorted(params.items())

    return rule


for _name in ("exp", "exp2", "log", "expm1", "log1p", "tanh", "logistic", "sin", "cos", "tan", "sqrt", "rsqrt", "cbrt"):
    pp_rules[_name] = _drop_none("accuracy")
pp_rules["mul"] = _drop_none("out_dtype")


def _broadcast_in_dim(params: dict, eqn: JaxprEqn, namer: Any) -> list:
    params.pop("shape", None)  # implied by the binder's type
    params.pop("sharding", None)
    if not params.get("broadcast_dimensions"):
        params.pop("broadcast_dimensions", None)
    return sorted(params.items())


pp_rules["broadcast_in_dim"] = _broadcast_in_dim


def _convert_element_type(params: dict, eqn: JaxprEqn, namer: Any) -> list:
    params.pop("sharding", None)
    return sorted(params.items())


pp_rules["convert_element_type"] = _convert_element_type


def _dot_general(params: dict, eqn: JaxprEqn, namer: Any) -> list:
    # precision / preferred_element_type only when set, the dimension numbers as lists
    out = {k: v for k, v in params.items() if v is not None}
    out.pop("out_sharding", None)
    if "dimension_numbers" in params:
        (lc, rc), (lb, rb) = params["dimension_numbers"]
        out["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
    return sorted(out.items())


pp_rules["dot_general"] = _dot_general


def _jit(params: dict, eqn: JaxprEqn, namer: Any) -> list:
    inner = params["jaxpr"]
    inner = getattr(inner, "jaxpr", inner)
    if inner not in namer.shared:
        namer.suggest_same_names(inner.invars, eqn.invars)
        namer.suggest_same_names(inner.outvars, eqn.outvars)
    name = params.pop("name")
    return [("name", name)] + sorted(params.items())


pp_rules["jit"] = _jit


def _custom_call(params: dict, eqn: JaxprEqn, namer: Any) -> list:
    if not params.get("num_consts"):
        params.pop("num_consts", None)
    name = params.pop("name", None)
    items = sorted(params.items())
    return ([("name", name)] if name is not None else []) + items


pp_rules["custom_jvp_call"] = _custom_call
pp_rules["custom_vjp_call"] = _custom_call


class _Named:
    """A primitive stand-in for printing a scatter's combiner (``update_jaxpr``)."""

    multiple_results = False

    def __init__(self, name: str) -> None:
        self.name = name


_COMBINERS = {"scatter-add": "add", "scatter-mul": "mul", "scatter-min": "min", "scatter-max": "max"}


def _scatter(params: dict, eqn: JaxprEqn, namer: Any) -> list:
    # JAX's scatter equations carry the combiner as a jaxpr of two scalars (``update_jaxpr``)
    params.setdefault("update_consts", ())
    if "update_jaxpr" not in params:
        op = _COMBINERS.get(eqn.primitive.name)
        jaxpr = None
        if op is not None:
            aval = eqn.invars[0].aval.update(shape=()) if hasattr(eqn.invars[0].aval, "update") else None
            if aval is not None:
                a, b, c = Var(aval), Var(aval), Var(aval)
                jaxpr = Jaxpr([], [a, b], [c], [JaxprEqn(_Named(op), [a, b], [c], {})])
        params["update_jaxpr"] = jaxpr
    return sorted(params.items())


for _name in ("scatter", "scatter-add", "scatter-mul", "scatter-min", "scatter-max"):
    pp_rules[_name] = _scatter
pp_rules["pure_callback"] = _sorted_with(sharding=None)


def _debug_callback(params: dict, eqn: JaxprEqn, namer: Any) -> list:
    shown = getattr(params["callback"], "printed", None)
    return sorted(params.items()) if shown is None else list(shown[1])


pp_rules["debug_callback"] = _debug_callback
