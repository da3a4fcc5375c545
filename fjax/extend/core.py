"""``jax.extend.core``: primitives and jaxprs, for writing custom primitives and interpreters.

``Primitive`` (``def_impl``/``def_abstract_eval``/``bind``), ``Jaxpr``/``ClosedJaxpr``/
``JaxprEqn``/``Var``/``Literal``/``DropVar``, ``jaxpr_as_fun``, ``check_jaxpr`` and the rule
tables live where fjax keeps them (``fjax.interpreters.ad.primitive_jvps``, ...).
"""

from __future__ import annotations

from typing import Any

from fjax._tokens import AbstractToken, Token
from fjax.core import (
    ClosedJaxpr,
    DropVar,
    Jaxpr,
    JaxprEqn,
    JaxprTypeError,
    Literal,
    Primitive,
    Var,
    check_jaxpr,
    concrete_or_error,
    find_top_trace,
    jaxpr_as_fun,
)
from fjax.dtypes import kind as _dkind

__all__ = [
    "AbstractToken",
    "ClosedJaxpr",
    "DropVar",
    "Jaxpr",
    "JaxprEqn",
    "JaxprTypeError",
    "Literal",
    "Primitive",
    "Token",
    "Var",
    "array_types",
    "check_jaxpr",
    "concrete_or_error",
    "find_top_trace",
    "jaxpr_as_fun",
    "new_jaxpr_eqn",
    "primal_dtype_to_tangent_dtype",
    "valid_jaxtype",
]


def _array_types() -> set[type]:
    import numpy as np

    from fjax.core import Array

    return {Array, np.ndarray, np.generic, bool, int, float, complex}


array_types = _array_types()


def new_jaxpr_eqn(
    invars: list, outvars: list, primitive: Primitive, params: dict, *args: Any, **kwargs: Any
) -> JaxprEqn:
    """An equation ``outvars = primitive[params] invars`` (JAX's effects/source-info arguments are ignored)."""
    return JaxprEqn(primitive, list(invars), list(outvars), dict(params))


def valid_jaxtype(x: Any) -> bool:
    """Whether ``x`` can be an argument of a traced function (an array or a scalar)."""
    from fjax.core import Tracer

    return isinstance(x, (Tracer, *array_types))


def primal_dtype_to_tangent_dtype(primal_dtype: Any) -> Any:
    """The tangent dtype of ``primal_dtype``: itself for inexact dtypes, ``float0`` otherwise."""
    import numpy as np

    from fjax import dtypes

    dt = np.dtype(primal_dtype)
    return dt if _dkind(dt) in "fc" else dtypes.float0
