"""fjax's own serialization of an ``Exported``: a versioned, code-free binary format.

This is **not** JAX's format. JAX serializes a StableHLO module in a flatbuffer; fjax never
produces StableHLO, so it serializes the closed jaxpr itself, and neither library can load the
other's bytes. Layout::

    b"fjax.export\\x00"           12 bytes, the magic
    version                      uint32, little-endian (``FORMAT_VERSION``)
    header length                uint64, little-endian
    header                       UTF-8 JSON (the program, see below)
    data                         the raw bytes of every array, at offsets named in the header

The header is plain JSON: scalars are JSON values, everything else a tagged list
(``["tuple", ...]``, ``["dtype", "float32"]``, ``["nd", index]``, ``["jaxpr", index]``, ...).
Primitives are named (``["prim", name, module, attribute]``) and looked up among fjax's own;
parameter classes (enums, named tuples, dataclasses such as ``GatherDimensionNumbers``) are
looked up by ``module:qualname`` and only inside the ``fjax`` package. Deserializing therefore
never runs code from the bytes (no pickle): it parses JSON, copies array bytes, imports fjax's
own modules and builds fjax's own parameter types. Pytree nodes of the calling convention
(``in_tree``/``out_tree``) need ``register_pytree_node_serialization`` /
``register_namedtuple_serialization``, whose functions are the user's, as in JAX.

A ``custom_jvp`` rule (a Python callable) is traced to a jaxpr and deserialized as a rule that
evaluates it. So are a ``custom_vjp`` function's ``fwd`` and ``bwd`` rules: ``fwd`` is traced
with every input perturbed to ``(*consts, *primals) -> (*residuals, *primals_out)``, ``bwd`` to
``(*residuals, *cotangents) -> cotangents_in`` (the inputs it gave no cotangent, ``None``, are
recorded and come back as symbolic zeros), and they deserialize as callables with the calling
convention of ``fjax._custom_vjp``. Rules nest (a rule calling the custom function): two levels
are traced, past that the derivative (VJP) of the primal jaxpr stands in. A ``custom_vjp`` rule
defined with ``symbolic_zeros=True`` is refused (``NotImplementedError``): its rules may depend
on which inputs are perturbed and which cotangents are zero, which one traced jaxpr cannot
capture. Other parameters that are Python callables (host callbacks, remat policies) have no
serialized form: ``serialize`` raises ``NotImplementedError`` naming the primitive and the
parameter.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import json
import math
import pkgutil
import struct
import sys
from typing import Any, Callable

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core, dtypes
from fjax.core import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, ShapedArray, Var

MAGIC = b"fjax.export\x00"
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<IQ")


class _NotSerializable(NotImplementedError):
    pass


# ---------------------------------------------------------------------------------------------
# primitives by name


_prim_index: dict[int, tuple[str, str]] = {}


def _scan_modules(into: dict[int, tuple[str, str]]) -> None:
    for mod_name, mod in sorted(sys.modules.items()):
        if mod is None or not (mod_name == "fjax" or mod_name.startswith("fjax.")):
            continue
        for attr, v in list(vars(mod).items()):
            if isinstance(v, core.Primitive) and id(v) not in into:
                into[id(v)] = (mod_name, attr)


def _where_defined(prim: core.Primitive) -> tuple[str, str]:
    loc = _prim_index.get(id(prim))
    if loc is None:
        _scan_modules(_prim_index)
        loc = _prim_index.get(id(prim))
    if loc is None:
        raise _NotSerializable(
            f"fjax.export: cannot serialize primitive {prim.name!r}: it is not one of fjax's own primitives "
            "(a primitive defined outside the fjax package has no name fjax can look up when deserializing)"
        )
    return loc


def _import_all_fjax() -> None:
    import fjax  # noqa: PLC0415

    for info in pkgutil.walk_packages(fjax.__path__, "fjax."):
        if info.name.startswith(("fjax.backends", "fjax.compat", "fjax.__main__", "fjax.export")):
            continue
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - an optional module that cannot import holds no primitive we need
            pass


def _resolve_primitive(name: str, module: str, attr: str) -> core.Primitive:
    if module == "fjax" or module.startswith("fjax."):
        try:
            p = getattr(importlib.import_module(module), attr, None)
        except ImportError:
            p = None
        if isinstance(p, core.Primitive) and p.name == name:
            return p
    for attempt in range(2):  # the primitive moved: look for it by name
        for mod_name, mod in list(sys.modules.items()):
            if mod is not None and (mod_name == "fjax" or mod_name.startswith("fjax.")):
                for v in list(vars(mod).values()):
                    if isinstance(v, core.Primitive) and v.name == name:
                        return v
        if attempt == 0:
            _import_all_fjax()
    raise ValueError(f"fjax.export.deserialize: unknown primitive {name!r} (not defined by this version of fjax)")


# ---------------------------------------------------------------------------------------------
# dtypes and classes


def _dtype_name(dt: Any) -> str:
    if isinstance(dt, dtypes.KeyDtype):
        return "key<fry>"
    dt = np.dtype(dt)
    if dt == dtypes.float0:
        return "float0"
    if dt.kind in "OV":
        raise _NotSerializable(f"dtype {dt}")
    return dt.name


def _dtype_from_name(name: str) -> Any:
    if name == "float0":
        return dtypes.float0
    if name == "key<fry>":
        return dtypes.KEY_DTYPE
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes  # noqa: PLC0415

        t = getattr(ml_dtypes, name, None)
        if t is None:
            raise ValueError(f"fjax.export.deserialize: unknown dtype {name!r}") from None
        return np.dtype(t)


def _jnp_scalar_meta() -> type:
    from fjax.numpy._creation import _ScalarMeta  # noqa: PLC0415 - fjax.numpy imports export's users

    return _ScalarMeta


def _jnp_scalar_type(name: str) -> Any:
    """``fjax.numpy``'s scalar type (``jnp.float32``, ``jnp.bool_``, ...) of the dtype ``name``."""
    import fjax.numpy as jnp  # noqa: PLC0415

    dt = _dtype_from_name(name)
    t = getattr(jnp, "bool_" if name == "bool" else name, None)
    if not isinstance(t, _jnp_scalar_meta()) or t.dtype != dt:
        raise ValueError(f"fjax.export.deserialize: no fjax.numpy scalar type for dtype {name!r}")
    return t


def _class_name(cls: type) -> str:
    mod = cls.__module__
    if not (mod == "fjax" or mod.startswith("fjax.")) or "<locals>" in cls.__qualname__:
        raise _NotSerializable(f"a value of class {mod}.{cls.__qualname__}, defined outside fjax")
    return f"{mod}:{cls.__qualname__}"


def _resolve_class(ref: str, kind: str) -> type:
    mod_name, _, qual = ref.partition(":")
    if not (mod_name == "fjax" or mod_name.startswith("fjax.")):
        raise ValueError(f"fjax.export.deserialize: refusing class {ref!r}, which is not fjax's own")
    obj: Any = importlib.import_module(mod_name)
    for part in qual.split("."):
        obj = getattr(obj, part)
    ok = isinstance(obj, type) and (
        (kind == "enum" and issubclass(obj, enum.Enum))
        or (kind == "namedtuple" and issubclass(obj, tuple) and hasattr(obj, "_fields"))
        or (kind == "dataclass" and dataclasses.is_dataclass(obj))
    )
    if not ok:
        raise ValueError(f"fjax.export.deserialize: {ref!r} is not a {kind} class")
    return obj


# ---------------------------------------------------------------------------------------------
# encoding


class _Encoder:
    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self.jaxprs: list[Any] = []
        self._jaxpr_ids: dict[int, int] = {}
        self._keep: list[Any] = []  # keeps encoded objects alive, so their ids stay unique
        self.rule_depth = 0  # how many custom_jvp/custom_vjp rules deep the jaxpr being encoded is
        self._vjp_rules: dict[int, dict[str, list]] = {}  # id(custom_vjp_call eqn) -> its encoded fwd, bwd

    def array(self, a: np.ndarray) -> int:
        self.arrays.append(a)
        return len(self.arrays) - 1

    def aval(self, a: Any) -> list:
        if type(a) is not ShapedArray:
            raise _NotSerializable(f"an abstract value of type {type(a).__name__}")
        return ["aval", list(a.shape), _dtype_name(a.dtype), a.weak_type]

    def value(self, v: Any) -> Any:
        t = type(v)
        if v is None or t is bool or t is str:
            return v
        if t is int:
            return v
        if t is float:
            return v if math.isfinite(v) else ["float", repr(v)]
        if t is complex:
            return ["complex", self.value(v.real), self.value(v.imag)]
        if isinstance(v, (ClosedJaxpr, Jaxpr)):
            return ["jaxpr", self.jaxpr(v)]
        if t is tuple:
            return ["tuple", [self.value(x) for x in v]]
        if t is list:
            return ["list", [self.value(x) for x in v]]
        if t is dict:
            return ["dict", [[self.value(k), self.value(x)] for k, x in v.items()]]
        if t is frozenset:
            return ["frozenset", [self.value(x) for x in sorted(v, key=repr)]]
        if t is slice:
            return ["slice", self.value(v.start), self.value(v.stop), self.value(v.step)]
        if isinstance(v, np.dtype) or isinstance(v, dtypes.KeyDtype):
            return ["dtype", _dtype_name(v)]
        if isinstance(v, type) and issubclass(v, np.generic):
            return ["sctype", _dtype_name(v)]
        if isinstance(v, _jnp_scalar_meta()):  # jnp.float32 etc. (e.g. in a lax.DotAlgorithm precision)
            return ["jnptype", _dtype_name(v.dtype)]
        if isinstance(v, np.ndarray):
            return ["nd", self._ndarray(v)]
        if isinstance(v, np.generic):
            return ["np", self._ndarray(np.asarray(v))]
        if isinstance(v, core.Array):
            return ["array", self._ndarray(np.asarray(v)), v.weak_type]
        if t is ShapedArray:
            return self.aval(v)
        if isinstance(v, core.Primitive):
            return ["prim", v.name, *_where_defined(v)]
        if isinstance(v, enum.Enum):
            return ["enum", _class_name(t), v.name]
        if isinstance(v, tuple) and hasattr(t, "_fields"):
            return ["namedtuple", _class_name(t), [self.value(x) for x in v]]
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            fields = [[f.name, self.value(getattr(v, f.name))] for f in dataclasses.fields(v) if f.init]
            return ["dataclass", _class_name(t), fields]
        if isinstance(v, core.Tracer):
            raise _NotSerializable("a tracer (a value of an enclosing transform)")
        if callable(v):
            name = getattr(v, "__qualname__", None) or type(v).__name__
            raise _NotSerializable(f"a Python callable ({name})")
        raise _NotSerializable(f"a value of type {t.__module__}.{t.__qualname__}")

    def _ndarray(self, a: np.ndarray) -> list:
        name = _dtype_name(a.dtype)
        if name == "float0":
            return [list(a.shape), name, None]
        return [list(a.shape), name, self.array(np.ascontiguousarray(a))]

    def jaxpr(self, j: ClosedJaxpr | Jaxpr) -> int:
        idx = self._jaxpr_ids.get(id(j))
        if idx is not None:
            return idx
        if isinstance(j, ClosedJaxpr):
            enc: Any = ["closed", self.jaxpr(j.jaxpr), [self.value(c) for c in j.consts]]
        else:
            enc = self._open_jaxpr(j)
        self.jaxprs.append(enc)
        idx = self._jaxpr_ids[id(j)] = len(self.jaxprs) - 1
        self._keep.append(j)
        return idx

    def _open_jaxpr(self, j: Jaxpr) -> list:
        ids: dict[Var, int] = {}

        def bind(v: Var) -> list:
            ids[v] = len(ids)
            return self.aval(v.aval)

        def atom(x: Any) -> Any:
            if type(x) is Literal:
                return ["lit", self.value(x.val), self.aval(x.aval)]
            return ids[x]

        constvars = [bind(v) for v in j.constvars]
        invars = [bind(v) for v in j.invars]
        eqns = []
        for e in j.eqns:
            prim = ["prim", e.primitive.name, *_where_defined(e.primitive)]
            ins = [atom(x) for x in e.invars]
            params = []
            for k, p in e.params.items():
                try:
                    if k == "jvp" and e.primitive.name == "custom_jvp_call" and callable(p):
                        params.append([k, self._custom_jvp_rule(e, p)])
                        continue
                    if k in ("fwd", "bwd") and e.primitive.name == "custom_vjp_call" and callable(p):
                        params.append([k, self._custom_vjp_rules(e)[k]])
                        continue
                    params.append([k, self.value(p)])
                except _NotSerializable as err:
                    if err.args and str(err.args[0]).startswith("fjax.export"):
                        raise
                    raise NotImplementedError(
                        f"fjax.export: cannot serialize parameter {k!r} of primitive {e.primitive.name!r}: it holds "
                        f"{err.args[0]}, which has no serialized form. Python callables other than custom_jvp "
                        "and custom_vjp rules (host callbacks such as pure_callback and debug.print, remat "
                        "policies) cannot be serialized; the Exported still runs in this process with .call"
                    ) from None
            outs = [[*self.aval(v.aval), type(v) is DropVar] for v in e.outvars]
            for v in e.outvars:
                ids[v] = len(ids)
            eqns.append([prim, ins, outs, params])
        return ["open", constvars, invars, eqns, [atom(x) for x in j.outvars]]

    def _custom_jvp_rule(self, eqn: JaxprEqn, jvp: Callable) -> list:
        """A ``custom_jvp`` rule, traced to a jaxpr ``(*lead, *primals, *tangents) -> (*primals_out,
        *tangents_out)``. Rules nest (a rule calls the custom function for its primal output): past
        ``_MAX_RULE_DEPTH`` levels the derivative of the primal jaxpr stands in for the rule."""
        n_lead = eqn.params["num_consts"]
        n_prim = len(eqn.invars) - n_lead
        if self.rule_depth >= _MAX_RULE_DEPTH:
            return ["jvp_of_primal", n_lead]
        from fjax.interpreters import ad  # noqa: PLC0415
        from fjax.interpreters import partial_eval as pe  # noqa: PLC0415

        avals = [x.aval for x in eqn.invars]
        tan_avals = [ad.tangent_aval(a) for a in avals[n_lead:]]

        def flat_rule(*xs: Any) -> list:
            lead, prims, tans = xs[:n_lead], xs[n_lead : n_lead + n_prim], xs[n_lead + n_prim :]
            po, to = jvp(list(lead), list(prims), list(tans))
            to = [
                _zeros_for(p) if t is None or type(t).__name__ in ("Zero", "SymbolicZero") else t
                for p, t in zip(po, to)
            ]
            return [*po, *to]

        try:
            jaxpr, consts, _ = pe.trace_to_jaxpr(flat_rule, [*avals, *tan_avals], "custom_jvp rule")
        except Exception as err:  # noqa: BLE001 - a rule that cannot be traced abstractly
            raise _NotSerializable(
                f"a Python callable that could not be traced to a jaxpr ({type(err).__name__}: {err})"
            )
        self.rule_depth += 1
        try:
            idx = self.jaxpr(ClosedJaxpr(jaxpr, consts))
        finally:
            self.rule_depth -= 1
        return ["traced_jvp", idx, n_lead, n_prim]

    def _custom_vjp_rules(self, eqn: JaxprEqn) -> dict[str, list]:
        """The ``fwd`` and ``bwd`` rules of a ``custom_vjp_call`` equation, traced to jaxprs:
        ``fwd: (*consts, *primals) -> (*residuals, *primals_out)`` (every input perturbed) and
        ``bwd: (*residuals, *cotangents_out) -> nonzero cotangents_in``, with which cotangents the
        rule returned as symbolic zeros (``None``) recorded beside it. Past ``_MAX_RULE_DEPTH``
        nested rules the VJP of the primal jaxpr stands in (``fwd`` then keeps the inputs)."""
        cached = self._vjp_rules.get(id(eqn))
        if cached is not None:
            return cached
        ps = eqn.params
        if ps.get("symbolic_zeros"):
            raise _NotSerializable(
                f"fjax.export: cannot serialize the custom_vjp function {ps.get('name')!r}: it was defined with "
                "defvjp(..., symbolic_zeros=True), whose fwd rule may depend on which inputs are perturbed and whose "
                "bwd rule may depend on which cotangents are symbolic zeros, so one traced jaxpr per rule cannot "
                "stand in for it. Define the rule with symbolic_zeros=False to serialize it; the Exported still runs "
                "in this process with .call"
            )
        n_lead = ps["num_consts"]
        n_prim = len(eqn.invars) - n_lead
        if self.rule_depth >= _MAX_RULE_DEPTH:
            out = {"fwd": ["vjp_of_primal_fwd", n_lead], "bwd": ["vjp_of_primal_bwd", n_lead]}
            self._vjp_rules[id(eqn)] = out
            self._keep.append(eqn)
            return out
        from fjax.interpreters import ad  # noqa: PLC0415
        from fjax.interpreters import partial_eval as pe  # noqa: PLC0415

        fwd, bwd = ps["fwd"], ps["bwd"]
        avals = [x.aval for x in eqn.invars]
        n_out = len(eqn.outvars)
        ct_avals = [ad.tangent_aval(v.aval) for v in eqn.outvars]
        n_res: list[int] = []

        def flat_fwd(*xs: Any) -> list:
            res, outs = fwd(list(xs[:n_lead]), list(xs[n_lead:]), [True] * n_prim)
            if len(outs) != n_out:
                raise TypeError(f"the fwd rule returned {len(outs)} primal outputs where {n_out} were traced")
            n_res.append(len(res))
            return [*res, *outs]

        zeros: list[list] = []

        def flat_bwd(*xs: Any) -> list:
            k = n_res[-1]
            cts_in = list(bwd(list(xs[:k]), list(xs[k:])))
            if len(cts_in) != n_prim:
                raise TypeError(f"the bwd rule returned {len(cts_in)} cotangents for {n_prim} inputs")
            zeros.append([self.aval(c.aval) if type(c) is ad.Zero else None for c in cts_in])
            return [c for c in cts_in if type(c) is not ad.Zero]

        try:
            fj, fconsts, fouts = pe.trace_to_jaxpr(flat_fwd, avals, "custom_vjp fwd rule")
            res_avals = [t.aval for t in fouts[: n_res[-1]]]
            bj, bconsts, _ = pe.trace_to_jaxpr(flat_bwd, [*res_avals, *ct_avals], "custom_vjp bwd rule")
        except Exception as err:  # noqa: BLE001 - a rule that cannot be traced abstractly
            raise _NotSerializable(
                f"a Python callable that could not be traced to a jaxpr ({type(err).__name__}: {err})"
            )
        self.rule_depth += 1
        try:
            fidx = self.jaxpr(ClosedJaxpr(fj, fconsts))
            bidx = self.jaxpr(ClosedJaxpr(bj, bconsts))
        finally:
            self.rule_depth -= 1
        out = {"fwd": ["traced_vjp_fwd", fidx, n_res[-1]], "bwd": ["traced_vjp_bwd", bidx, zeros[-1]]}
        self._vjp_rules[id(eqn)] = out
        self._keep.append(eqn)
        return out


_MAX_RULE_DEPTH = 2


def _zeros_for(p: Any) -> Any:
    from fjax.interpreters import ad  # noqa: PLC0415

    return ad._zeros_like(ad.tangent_aval(core.get_aval(p)))


class _TracedJvp:
    """A deserialized ``custom_jvp`` rule: evaluates the traced rule (``jaxpr``), or, for
    ``jaxpr=None``, differentiates the primal jaxpr ``call_jaxpr``."""

    def __init__(self, jaxpr: ClosedJaxpr | None, n_lead: int) -> None:
        self.jaxpr = jaxpr
        self.n_lead = n_lead
        self.call_jaxpr: ClosedJaxpr | None = None
        self.__name__ = "deserialized_custom_jvp_rule"

    def __call__(self, lead: list, primals: list, tangents: list) -> tuple[list, list]:
        from fjax.interpreters import ad  # noqa: PLC0415

        tans = [
            ad._zeros_like(ad.tangent_aval(t.aval)) if type(t).__name__ in ("Zero", "SymbolicZero") else t
            for t in tangents
        ]
        if self.jaxpr is not None:
            outs = core.eval_jaxpr(self.jaxpr.jaxpr, self.jaxpr.consts, *lead, *primals, *tans)
            k = len(outs) // 2
            return outs[:k], outs[k:]
        from fjax.api import jvp  # noqa: PLC0415

        cj = self.call_jaxpr
        assert cj is not None
        po, to = jvp(lambda *p: core.eval_jaxpr(cj.jaxpr, cj.consts, *lead, *p), tuple(primals), tuple(tans))
        return list(po), list(to)


class _TracedVjpFwd:
    """A deserialized ``custom_vjp`` fwd rule ``fwd(consts, primals, perturbed) -> (residuals,
    primals_out)``: evaluates the traced rule (``jaxpr``, its first ``n_res`` outputs the
    residuals), or, for ``jaxpr=None``, the primal jaxpr ``call_jaxpr``, keeping its inputs as
    the residuals (for ``_TracedVjpBwd`` to differentiate it)."""

    def __init__(self, jaxpr: ClosedJaxpr | None, n_res: int) -> None:
        self.jaxpr = jaxpr
        self.n_res = n_res
        self.call_jaxpr: ClosedJaxpr | None = None
        self.__name__ = "deserialized_custom_vjp_fwd"

    def __call__(self, consts: list, primals: list, perturbed: list) -> tuple[list, list]:
        if self.jaxpr is not None:
            outs = core.eval_jaxpr(self.jaxpr.jaxpr, self.jaxpr.consts, *consts, *primals)
            return list(outs[: self.n_res]), list(outs[self.n_res :])
        cj = self.call_jaxpr
        assert cj is not None
        return [*consts, *primals], list(core.eval_jaxpr(cj.jaxpr, cj.consts, *consts, *primals))


class _TracedVjpBwd:
    """A deserialized ``custom_vjp`` bwd rule ``bwd(residuals, cotangents_out) -> cotangents_in``
    (``Zero`` where the rule returned a symbolic zero): evaluates the traced rule, or, for
    ``jaxpr=None``, the VJP of the primal jaxpr at the inputs ``_TracedVjpFwd`` kept."""

    def __init__(self, jaxpr: ClosedJaxpr | None, zeros: list, n_lead: int) -> None:
        self.jaxpr = jaxpr
        self.zeros = zeros  # per input: the aval of a symbolic-zero cotangent, or None
        self.n_lead = n_lead
        self.call_jaxpr: ClosedJaxpr | None = None
        self.__name__ = "deserialized_custom_vjp_bwd"

    def __call__(self, res: list, cts: list) -> list:
        from fjax.interpreters import ad  # noqa: PLC0415

        cts = [ad._zeros_like(c.aval) if type(c).__name__ in ("Zero", "SymbolicZero") else c for c in cts]
        if self.jaxpr is None:
            from fjax.api import vjp  # noqa: PLC0415

            cj = self.call_jaxpr
            assert cj is not None
            lead, prims = list(res[: self.n_lead]), list(res[self.n_lead :])
            _, f_vjp = vjp(lambda *p: list(core.eval_jaxpr(cj.jaxpr, cj.consts, *lead, *p)), *prims)
            return list(f_vjp(list(cts)))
        outs = iter(core.eval_jaxpr(self.jaxpr.jaxpr, self.jaxpr.consts, *res, *cts))
        return [next(outs) if z is None else ad.Zero(z) for z in self.zeros]


# ---------------------------------------------------------------------------------------------
# decoding


class _Decoder:
    def __init__(self, header: dict, data: memoryview) -> None:
        self.data = data
        self.array_table = header["arrays"]
        self.jaxpr_table = header["jaxprs"]
        self.jaxprs: dict[int, Any] = {}
        self.prims: dict[tuple, core.Primitive] = {}

    def ndarray(self, enc: list) -> np.ndarray:
        shape, name, idx = enc
        dt = _dtype_from_name(name)
        if idx is None:
            return np.zeros(shape, dt)
        off, nbytes = self.array_table[idx]
        if off < 0 or nbytes < 0 or off + nbytes > len(self.data):
            raise ValueError("fjax.export.deserialize: truncated or corrupt data section")
        count = int(np.prod(shape, dtype=np.int64))
        if count * dt.itemsize != nbytes:
            raise ValueError("fjax.export.deserialize: array size does not match its shape and dtype")
        return np.frombuffer(self.data[off : off + nbytes], dtype=dt).reshape(shape).copy()

    def aval(self, enc: list) -> ShapedArray:
        tag, shape, name, weak = enc[:4]
        if tag != "aval":
            raise ValueError(f"fjax.export.deserialize: expected an aval, found {tag!r}")
        return ShapedArray(tuple(int(d) for d in shape), _dtype_from_name(name), bool(weak))

    def prim(self, enc: list) -> core.Primitive:
        key = tuple(enc[1:4])
        p = self.prims.get(key)
        if p is None:
            p = self.prims[key] = _resolve_primitive(*key)
        return p

    def value(self, enc: Any) -> Any:
        if not isinstance(enc, list):
            return enc
        tag = enc[0]
        if tag == "float":
            return float(enc[1])
        if tag == "complex":
            return complex(self.value(enc[1]), self.value(enc[2]))
        if tag == "tuple":
            return tuple(self.value(x) for x in enc[1])
        if tag == "list":
            return [self.value(x) for x in enc[1]]
        if tag == "dict":
            return {self.value(k): self.value(x) for k, x in enc[1]}
        if tag == "frozenset":
            return frozenset(self.value(x) for x in enc[1])
        if tag == "slice":
            return slice(self.value(enc[1]), self.value(enc[2]), self.value(enc[3]))
        if tag == "dtype":
            return _dtype_from_name(enc[1])
        if tag == "sctype":
            return _dtype_from_name(enc[1]).type
        if tag == "jnptype":
            return _jnp_scalar_type(enc[1])
        if tag == "nd":
            return self.ndarray(enc[1])
        if tag == "np":
            return self.ndarray(enc[1])[()]
        if tag == "array":
            return core.Array(self.ndarray(enc[1]), bool(enc[2]))
        if tag == "aval":
            return self.aval(enc)
        if tag == "jaxpr":
            return self.jaxpr(enc[1])
        if tag == "prim":
            return self.prim(enc)
        if tag == "enum":
            return _resolve_class(enc[1], "enum")[enc[2]]
        if tag == "namedtuple":
            return _resolve_class(enc[1], "namedtuple")(*[self.value(x) for x in enc[2]])
        if tag == "dataclass":
            cls = _resolve_class(enc[1], "dataclass")
            return cls(**{k: self.value(x) for k, x in enc[2]})
        raise ValueError(f"fjax.export.deserialize: unknown value tag {tag!r}")

    def jaxpr(self, idx: int) -> Any:
        j = self.jaxprs.get(idx)
        if j is not None:
            return j
        enc = self.jaxpr_table[idx]
        if enc[0] == "closed":
            j = ClosedJaxpr(self.jaxpr(enc[1]), [self.value(c) for c in enc[2]])
        elif enc[0] == "open":
            j = self._open_jaxpr(enc)
        else:
            raise ValueError(f"fjax.export.deserialize: unknown jaxpr tag {enc[0]!r}")
        self.jaxprs[idx] = j
        return j

    def _rule(self, enc: list) -> _TracedJvp:
        if enc[0] == "traced_jvp":
            return _TracedJvp(self.jaxpr(enc[1]), enc[2])
        if enc[0] == "jvp_of_primal":
            return _TracedJvp(None, enc[1])
        raise ValueError(f"fjax.export.deserialize: unknown custom_jvp rule tag {enc[0]!r}")

    def _vjp_rule(self, enc: list) -> _TracedVjpFwd | _TracedVjpBwd:
        if enc[0] == "traced_vjp_fwd":
            return _TracedVjpFwd(self.jaxpr(enc[1]), int(enc[2]))
        if enc[0] == "traced_vjp_bwd":
            return _TracedVjpBwd(self.jaxpr(enc[1]), [None if z is None else self.aval(z) for z in enc[2]], 0)
        if enc[0] == "vjp_of_primal_fwd":
            return _TracedVjpFwd(None, 0)
        if enc[0] == "vjp_of_primal_bwd":
            return _TracedVjpBwd(None, [], int(enc[1]))
        raise ValueError(f"fjax.export.deserialize: unknown custom_vjp rule tag {enc[0]!r}")

    def _open_jaxpr(self, enc: list) -> Jaxpr:
        _, constvars, invars, eqns, outvars = enc
        env: list[Var] = []

        def new(aval_enc: list, drop: bool = False) -> Var:
            v = (DropVar if drop else Var)(self.aval(aval_enc))
            env.append(v)
            return v

        def atom(x: Any) -> Any:
            if isinstance(x, list):
                return Literal(self.value(x[1]), self.aval(x[2]))
            return env[x]

        cvs = [new(a) for a in constvars]
        ivs = [new(a) for a in invars]
        new_eqns = []
        for prim_enc, ins, outs, params in eqns:
            prim = self.prim(prim_enc)
            in_atoms = [atom(x) for x in ins]
            out_vars = [new(o[:4], bool(o[4])) for o in outs]
            ps = {}
            for k, p in params:
                if k == "jvp" and prim.name == "custom_jvp_call":
                    ps[k] = self._rule(p)
                elif k in ("fwd", "bwd") and prim.name == "custom_vjp_call":
                    ps[k] = self._vjp_rule(p)
                else:
                    ps[k] = self.value(p)
            for k in ("jvp", "fwd", "bwd"):
                rule = ps.get(k)
                if isinstance(rule, (_TracedJvp, _TracedVjpFwd, _TracedVjpBwd)) and rule.jaxpr is None:
                    rule.call_jaxpr = ps["call_jaxpr"]
            new_eqns.append(JaxprEqn(prim, in_atoms, out_vars, ps))
        return Jaxpr(cvs, ivs, [atom(x) for x in outvars], new_eqns)


# ---------------------------------------------------------------------------------------------
# pytree structures (the calling convention)


# type -> (serialized name, serialize_auxdata); serialized name -> (type, deserialize_auxdata, from_children)
serialization_registry: dict[type, tuple[str, Callable[[Any], bytes]]] = {}
deserialization_registry: dict[str, tuple[type, Callable[[bytes], Any], Callable[[Any, Any], Any]]] = {}


def _prng_key_type() -> type:
    from fjax._prng import PRNGKeyArray  # noqa: PLC0415

    return PRNGKeyArray


def encode_treedef(td: tu.PyTreeDef) -> Any:
    return _encode_spec(td._spec)


def _encode_spec(spec: Any) -> Any:
    if spec is None:
        return "*"
    t, aux, kids = spec
    ch = [_encode_spec(s) for s in kids]
    if t is type(None):
        return ["none"]
    if t is tuple:
        return ["tuple", ch]
    if t is list:
        return ["list", ch]
    if t is dict:
        for k in aux:
            if not isinstance(k, str):
                raise TypeError(
                    "Serialization is supported only for dictionaries with string keys. "
                    f"Found key {k} of type {type(k)}."
                )
        return ["dict", list(aux), ch]
    if t is _prng_key_type():
        return ["prng_key", ch]
    reg = serialization_registry.get(t)
    if reg is None:
        raise ValueError(
            f"Cannot serialize PyTreeDef containing an unregistered type `{t}`. Use "
            "`export.register_pytree_node_serialization` or `export.register_namedtuple_serialization`."
        )
    name, ser = reg
    blob = ser(aux)
    if not isinstance(blob, (bytes, bytearray)):
        raise ValueError(
            "The custom serialization function for `node_type` must return a `bytes` object. "
            f"It returned a {type(blob)}."
        )
    return ["custom", name, bytes(blob).hex(), ch]


def decode_treedef(enc: Any) -> tu.PyTreeDef:
    # as JAX: build a tree with placeholder leaves, then take its structure
    return tu.tree_structure(_decode_tree(enc))


def _decode_tree(enc: Any) -> Any:
    if enc == "*":
        return 0.0
    tag = enc[0]
    if tag == "none":
        return None
    if tag == "dict":
        return dict(zip(enc[1], [_decode_tree(c) for c in enc[2]]))
    if tag == "custom":
        name = enc[1]
        reg = deserialization_registry.get(name)
        if reg is None:
            raise ValueError(
                f"Cannot deserialize a PyTreeDef containing an unregistered type `{name}`. Use "
                "`export.register_pytree_node_serialization` or `export.register_namedtuple_serialization`."
            )
        _, deser, from_children = reg
        return from_children(deser(bytes.fromhex(enc[2])), [_decode_tree(c) for c in enc[3]])
    kids = [_decode_tree(c) for c in enc[1]]
    if tag == "tuple":
        return tuple(kids)
    if tag == "list":
        return kids
    if tag == "prng_key":
        return _prng_key_type()(kids[0])
    raise ValueError(f"fjax.export.deserialize: unknown pytree node kind {tag!r}")


# ---------------------------------------------------------------------------------------------
# the container


def pack(header: dict, enc: _Encoder) -> bytearray:
    table, chunks, off = [], [], 0
    for a in enc.arrays:
        b = a.tobytes()
        table.append([off, len(b)])
        chunks.append(b)
        off += len(b)
    header = dict(header, arrays=table, jaxprs=enc.jaxprs)
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    out = bytearray(MAGIC)
    out += _PREFIX.pack(FORMAT_VERSION, len(text))
    out += text
    for c in chunks:
        out += c
    return out


def unpack(blob: bytes | bytearray | memoryview) -> tuple[dict, memoryview]:
    mv = memoryview(bytes(blob))
    if bytes(mv[: len(MAGIC)]) != MAGIC:
        hint = " (it looks like JAX's StableHLO flatbuffer, which fjax cannot load)" if len(mv) > 8 else ""
        raise ValueError(
            f"fjax.export.deserialize: not an fjax.export serialization{hint}; fjax reads only what "
            "fjax's Exported.serialize wrote"
        )
    start = len(MAGIC) + _PREFIX.size
    if len(mv) < start:
        raise ValueError("fjax.export.deserialize: truncated serialization")
    version, n = _PREFIX.unpack(mv[len(MAGIC) : start])
    if version != FORMAT_VERSION:
        raise ValueError(
            f"fjax.export.deserialize: serialization format version {version} is not supported by this fjax "
            f"(it reads version {FORMAT_VERSION}); re-export with a matching fjax"
        )
    if start + n > len(mv):
        raise ValueError("fjax.export.deserialize: truncated serialization")
    try:
        header = json.loads(bytes(mv[start : start + n]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"fjax.export.deserialize: corrupt header ({e})") from None
    if not isinstance(header, dict) or header.get("format") != "fjax.export":
        raise ValueError("fjax.export.deserialize: corrupt header")
    return header, mv[start + n :]


def decoder(header: dict, data: memoryview) -> _Decoder:
    return _Decoder(header, data)


def encoder() -> _Encoder:
    return _Encoder()


def is_not_serializable(e: BaseException) -> bool:
    return isinstance(e, _NotSerializable)
