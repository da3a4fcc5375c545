"""``jax.experimental.checkify``: runtime checks as values.

``check(pred, msg, *fmt_args)`` asserts ``pred``; ``checkify(f, errors=...)`` turns ``f`` into a
function returning ``(Error, out)`` whose error records the first failed check instead of
raising, so checks work under ``jit``, ``vmap`` and ``grad`` as JAX's do.

How: ``checkify`` traces ``f`` to a jaxpr and evaluates it with an interpreter that carries one
``(failed, payload)`` slot per check site (the ``Error`` pytree's leaves, so an Error can leave a
``jit``). ``check`` is a primitive (``check_p``, effectful); the interpreter turns each of its
equations into an update of its slot. Nested ``jit`` calls are inlined. Automatic checks:
``nan_checks`` (a primitive produced a NaN from NaN-free inputs) and ``div_checks`` (a ``div``
by zero, of any dtype, as JAX's; ``rem`` is not checked) and ``index_checks`` (out-of-bounds start indices of gather,
scatter, dynamic_slice and dynamic_update_slice: ``fjax.experimental._checkify_index``; not inside
``cond``/``while_loop``/``scan`` bodies). Checks inside those bodies raise ``NotImplementedError`` under
``checkify``; with nan checks those primitives' outputs are checked as a whole.

Outside ``checkify`` a ``check`` raises ``checkify.JaxRuntimeError`` (a ``ValueError``, as JAX's,
not ``jax.errors.JaxRuntimeError``) when it fails: eagerly at once, and
under ``jit`` when the compiled program runs (JAX refuses to stage an un-functionalized check;
fjax runs it as a host step).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core
from fjax.dtypes import kind as _dkind
from fjax.experimental import _checkify_index as _ci
from fjax.interpreters import ad, batching
from fjax.interpreters import partial_eval as pe

__all__ = [
    "Error",
    "ErrorCategory",
    "JaxRuntimeError",
    "all_checks",
    "automatic_checks",
    "check",
    "check_error",
    "checkify",
    "debug_check",
    "div_checks",
    "float_checks",
    "index_checks",
    "init_error",
    "nan_checks",
    "user_checks",
]


class JaxRuntimeError(ValueError):
    """A failed check, raised by ``check`` outside ``checkify``, ``Error.throw`` and ``check_error``.

    JAX's is a ``ValueError`` (libraries such as chex catch it as one), distinct from
    ``jax.errors.JaxRuntimeError``; the message is the check's, ``(`check` failed)`` appended for
    user checks, as JAX writes it."""


class ErrorCategory:
    """A kind of check (``user``, ``nan``, ``div``, ``index``) selectable in ``checkify(errors=)``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ErrorCategory({self.name})"


_USER = ErrorCategory("user")
_NAN = ErrorCategory("nan")
_DIV = ErrorCategory("div")
_INDEX = ErrorCategory("index")

user_checks = frozenset({_USER})
nan_checks = frozenset({_NAN})
div_checks = frozenset({_DIV})
index_checks = frozenset({_INDEX})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


# ---------------------------------------------------------------------------------------------
# check primitive


@dataclasses.dataclass(frozen=True)
class _Site:
    """A check site: the message template and the structure of its format arguments."""

    msg: str
    fmt_tree: Any
    category: ErrorCategory = _USER

    def format(self, args: list[Any]) -> str:
        # payloads as Arrays, so a formatted pytree reads ``Array(nan, dtype=float32)`` as JAX's
        a, kw = tu.tree_unflatten(self.fmt_tree, [core.Array(np.asarray(x)) for x in args])
        msg = self.msg.format(*a, **kw)
        # JAX marks user checks so (its FailedCheckError); automatic checks' messages stand alone
        return msg + " (`check` failed)" if self.category is _USER else msg


check_p = core.Primitive("check")
check_p.multiple_results = True
check_p.effectful = True


def _check_impl(pred: Any, *fmt: Any, site: _Site, debug: bool = False) -> list:
    p = np.asarray(pred)
    if not p.all():
        if p.ndim:  # batched: report the first failing example
            i = int(np.argmin(p.reshape(-1)))
            fmt = [np.asarray(f).reshape((-1, *np.shape(f)[p.ndim :]))[i] for f in fmt]
        raise JaxRuntimeError(site.format(list(fmt)))
    return []


def _check_abstract(pred: Any, *fmt: Any, site: _Site, debug: bool = False) -> list:
    if pred.dtype != np.bool_:
        raise TypeError(f"check takes a scalar boolean predicate, got {pred.str_short()}")
    return []


check_p.def_impl(_check_impl)
check_p.def_abstract_eval(_check_abstract)


def _check_jvp(primals: list, tangents: list, **params: Any) -> tuple[list, list]:
    return check_p.bind(*primals, **params), []


@batching.wants_axis_size
def _check_batch(vals: list, dims: list, *, axis_size: int, **params: Any) -> tuple[list, list]:
    # every operand gets the batch axis in front (unmapped ones broadcast), so a batched check's
    # predicate has shape (batch dims...) and each payload starts with the same dims
    vals = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims)]
    return check_p.bind(*vals, **params), []


ad.primitive_jvps[check_p] = _check_jvp
batching.primitive_batchers[check_p] = _check_batch
ad.primitive_transposes[check_p] = lambda cts, *args, **params: [None] * len(args)


def _bind_check(pred: Any, msg: str, fmt_args: tuple, fmt_kwargs: dict, debug: bool) -> None:
    from fjax import numpy as jnp

    pred = jnp.asarray(pred)
    if pred.dtype != np.bool_ or pred.shape != ():
        raise TypeError(f"check takes a scalar boolean predicate, got {pred.dtype}{list(pred.shape)}")
    if not isinstance(msg, str):
        raise TypeError(f"check takes a string as its message, got {type(msg).__name__}")
    leaves, tree = tu.tree_flatten((fmt_args, fmt_kwargs))
    check_p.bind(pred, *[jnp.asarray(x) for x in leaves], site=_Site(msg, tree), debug=debug)


def check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """Assert the scalar boolean ``pred``; ``msg.format(*fmt_args, **fmt_kwargs)`` describes a failure.

    Under ``checkify`` the failure is recorded in the returned ``Error``; elsewhere it raises
    ``JaxRuntimeError`` (under ``jit``: when the program runs).
    """
    _bind_check(pred, msg, fmt_args, fmt_kwargs, debug=False)


def debug_check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """``check`` that is a no-op outside ``checkify`` (JAX drops it there; fjax does too)."""
    _bind_check(pred, msg, fmt_args, fmt_kwargs, debug=True)


# ---------------------------------------------------------------------------------------------
# Error


class Error:
    """The checks of one ``checkify``'d call: per site whether it failed and its payload.

    ``get()`` is the message of the first failed check (None if none failed), ``throw()`` raises
    it as ``JaxRuntimeError``. A pytree (its flags and payloads are leaves).
    """

    def __init__(self, sites: tuple, failed: list[Any], payloads: list[list[Any]]) -> None:
        self._sites = sites
        self._failed = failed
        self._payloads = payloads

    def get(self) -> str | None:
        """The first failure's message, or None. Of a ``vmap``'d checkify (batched flags), one
        line per failing example, ``at mapped index i, j: message`` (its first failed check)."""
        flags = [np.asarray(f) for f in self._failed]
        if any(f.ndim for f in flags):
            shape = next(f.shape for f in flags if f.ndim)
            lines = []
            for idx in np.ndindex(*shape):
                for site, f, p in zip(self._sites, flags, self._payloads):
                    if np.broadcast_to(f, shape)[idx]:
                        p = [np.broadcast_to(x, (*shape, *np.shape(x)[f.ndim :]))[idx] for x in p]
                        lines.append(f"at mapped index {', '.join(map(str, idx))}: " + site.format(p))
                        break
            return "\n".join(lines) or None
        for site, f, p in zip(self._sites, flags, self._payloads):
            if f.any():
                return site.format(p)
        return None

    def get_exception(self) -> JaxRuntimeError | None:
        """The failure as an exception object (not raised), or None."""
        msg = self.get()
        return None if msg is None else JaxRuntimeError(msg)

    def throw(self) -> None:
        """Raise ``JaxRuntimeError`` if a check failed."""
        check_error(self)

    def __str__(self) -> str:
        return self.get() or "Error(No errors)"

    __repr__ = __str__


tu.register_pytree_node(
    Error,
    lambda e: ((e._failed, e._payloads), e._sites),
    lambda sites, ch: Error(sites, list(ch[0]), [list(p) for p in ch[1]]),
)


def init_error() -> Error:
    """An Error with no checks (nothing failed)."""
    return Error((), [], [])


def check_error(error: Error) -> None:
    """Raise ``JaxRuntimeError`` if ``error`` records a failed check (inside ``checkify`` the
    error is merged into the checkified function's error instead)."""
    if not isinstance(error, Error):
        raise TypeError(f"check_error takes an Error, got {type(error).__name__}")
    for site, f, p in zip(error._sites, error._failed, error._payloads):
        if isinstance(f, core.Tracer):
            from fjax import numpy as jnp

            check_p.bind(jnp.logical_not(jnp.any(f)), *p, site=site, debug=False)
            continue
    msg = error.get() if not any(isinstance(f, core.Tracer) for f in error._failed) else None
    if msg is not None:
        raise JaxRuntimeError(msg)


# ---------------------------------------------------------------------------------------------
# the checkify interpreter


_NAN_SITE_CACHE: dict[str, _Site] = {}


def _nan_site(name: str) -> _Site:
    site = _NAN_SITE_CACHE.get(name)
    if site is None:
        site = _NAN_SITE_CACHE[name] = _Site(f"nan generated by primitive: {name}.", tu.tree_structure(((), {})), _NAN)
    return site


_DIV_SITE = _Site("division by zero", tu.tree_structure(((), {})), _DIV)
_LOOP_PRIMS = ("cond", "while", "scan")


class _State:
    def __init__(self, errors: frozenset) -> None:
        self.errors = errors
        self.sites: list[_Site] = []
        self.failed: list[Any] = []
        self.payloads: list[list[Any]] = []

    def add(self, site: _Site, failed: Any, payload: list[Any]) -> None:
        self.sites.append(site)
        self.failed.append(failed)
        self.payloads.append(payload)


def _has_check(jaxpr: core.Jaxpr) -> bool:
    for eqn in jaxpr.eqns:
        if eqn.primitive is check_p:
            return True
        for p in eqn.params.values():
            for sub in p if isinstance(p, (tuple, list)) else (p,):
                inner = getattr(sub, "jaxpr", sub)
                if isinstance(inner, core.Jaxpr) and _has_check(inner):
                    return True
    return False


def _reduce_batched_check(pred: Any, payload: list) -> tuple[Any, list]:
    """(failed, payload) of one check; a check batched by a ``vmap`` inside ``checkify`` (its
    predicate has the batch dims, see ``_check_batch``) reports one example, the last failing
    one, as JAX's checkify does (no "at mapped index" prefix: that is for ``vmap(checkify(f))``)."""
    from fjax import numpy as jnp

    bad = jnp.logical_not(pred)
    if not bad.ndim:
        return bad, payload
    flat = bad.reshape(-1)
    last = flat.shape[0] - 1 - jnp.argmax(flat[::-1])
    return jnp.any(flat), [x.reshape((-1, *x.shape[bad.ndim :]))[last] for x in payload]


def _eval(jaxpr: core.Jaxpr, consts: list, args: list, st: _State) -> list:
    from fjax import numpy as jnp

    env: dict[Any, Any] = {}

    def read(v: Any) -> Any:
        return v.as_array() if type(v) is core.Literal else env[v]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        name = eqn.primitive.name
        if eqn.primitive is check_p:
            site = eqn.params["site"]
            if _USER in st.errors:
                st.add(site, *_reduce_batched_check(ins[0], list(ins[1:])))
            outs: Any = []
        elif name == "jit":
            closed = eqn.params["jaxpr"]
            outs = _eval(closed.jaxpr, list(closed.consts), ins, st)
        else:
            if name in _LOOP_PRIMS or name.startswith("custom"):
                for p in eqn.params.values():
                    for sub in p if isinstance(p, (tuple, list)) else (p,):
                        inner = getattr(sub, "jaxpr", sub)
                        if isinstance(inner, core.Jaxpr) and _has_check(inner):
                            raise NotImplementedError(
                                f"checkify: checks inside a {name} body are not implemented in fjax"
                            )
            if _INDEX in st.errors and (name in _ci.INDEX_PRIMS or name.startswith("scatter")):
                found = _ci.index_check(eqn, ins)
                if found is not None:
                    msg, failed, payload = found
                    st.add(_Site(msg, _ci.payload_tree(), _INDEX), failed, payload)
            if _DIV in st.errors and name == "div":  # any dtype, and not rem: as JAX's div_error_check
                st.add(_DIV_SITE, jnp.any(jnp.equal(ins[1], 0)), [])
            outs = core.bind(eqn.primitive, ins, eqn.params)
            if _NAN in st.errors:
                outs_l = outs if eqn.primitive.multiple_results else [outs]
                fl = [o for o in outs_l if _dkind(np.dtype(core.get_aval(o).dtype)) in "fc"]
                if fl:
                    any_nan_out = functools.reduce(jnp.logical_or, [jnp.any(jnp.isnan(o)) for o in fl])
                    fin = [x for x in ins if _dkind(np.dtype(core.get_aval(x).dtype)) in "fc"]
                    any_nan_in = functools.reduce(
                        jnp.logical_or, [jnp.any(jnp.isnan(x)) for x in fin], jnp.asarray(False)
                    )
                    st.add(_nan_site(name), jnp.logical_and(any_nan_out, jnp.logical_not(any_nan_in)), [])
        if eqn.primitive.multiple_results:
            for v, o in zip(eqn.outvars, outs):
                env[v] = o
        else:
            env[eqn.outvars[0]] = outs
    return [read(v) for v in jaxpr.outvars]


def checkify(f: Callable[..., Any], errors: frozenset = user_checks) -> Callable[..., tuple[Error, Any]]:
    """Return ``f`` changed to return ``(error, out)``: ``error`` records the first failed check
    (user ``check`` calls and the automatic checks in ``errors``) instead of raising."""
    errors = frozenset(errors)

    @functools.wraps(f)
    def checked(*args: Any, **kwargs: Any) -> tuple[Error, Any]:
        from fjax.api import _abstractify

        flat, in_tree = tu.tree_flatten((args, kwargs))
        out_tree_box: list = []

        def flat_fun(*leaves: Any) -> list:
            a, kw = tu.tree_unflatten(in_tree, list(leaves))
            out = f(*a, **kw)
            o_flat, o_tree = tu.tree_flatten(out)
            out_tree_box.append(o_tree)
            return o_flat

        jaxpr, consts, _ = pe.trace_to_jaxpr(flat_fun, [_abstractify(x) for x in flat], "checkify")
        st = _State(errors)
        outs = _eval(jaxpr, list(consts), list(flat), st)
        err = Error(tuple(st.sites), st.failed, st.payloads)
        return err, tu.tree_unflatten(out_tree_box[0], outs)

    return checked
