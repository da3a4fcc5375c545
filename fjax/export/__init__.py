"""``fjax.export``: JAX's ``jax.export`` API: export a jitted function for fixed argument
shapes, call it, serialize it, and load it in another process.

    exp = fjax.export.export(fjax.jit(f))(fjax.ShapeDtypeStruct((3,), jnp.float32))
    exp.call(x)                      # runs; composes with jit, vmap and grad
    blob = exp.serialize()           # bytearray
    fjax.export.deserialize(blob).call(x)   # e.g. in a fresh process

What differs from JAX, and why:

* The exported program is the **closed jaxpr** ``jit`` traced, not a StableHLO module: fjax
  compiles jaxprs with numba (or CUDA), never through XLA. ``Exported.mlir_module()`` and
  ``mlir_module_serialized`` raise ``NotImplementedError`` rather than return text that is not
  MLIR; ``Exported.jaxpr`` is the program (print it to read it).
* ``serialize`` writes **fjax's own format** (``fjax/export/_serialization.py``: a versioned,
  JSON-described, pickle-free container). JAX cannot load it and fjax cannot load JAX's
  serializations. ``deserialize`` rejects other formats and other format versions with a
  ``ValueError``. ``custom_jvp`` rules and ``custom_vjp`` ``fwd``/``bwd`` rules are serialized by
  tracing them to jaxprs (two nested orders deep; past that the derivative of the primal jaxpr
  stands in), so a deserialized program differentiates with the custom rules; a ``custom_vjp``
  defined with ``symbolic_zeros=True`` is refused with ``NotImplementedError``. Other parameters
  that are Python callables (host callbacks, remat policies) cannot be serialized: ``serialize``
  raises ``NotImplementedError`` naming the primitive and parameter.
* Because the program keeps its primitives, ``Exported.call`` works under ``jit``, ``grad`` and
  also ``vmap`` (JAX's ``call_exported`` has no batching rule), after deserialization too, and
  ``has_vjp()`` is always true. ``serialize(vjp_order=...)`` is accepted and needs nothing more.
* ``platforms`` defaults to ``("cpu",)`` (``default_export_platform()``) and is recorded and
  checked at call time as in JAX (``DisabledSafetyCheck.platform()`` turns the check off); the
  jaxpr itself runs on either fjax backend. ``nr_devices`` is 1, shardings are ``None``.
* ``calling_convention_version`` is nominal (JAX's current version, 10); the serialization
  format has its own version, ``_serialization.FORMAT_VERSION``.
* Shape polymorphism is not implemented: ``symbolic_shape``/``symbolic_args_specs`` parse JAX's
  specifications and ``is_symbolic_dim`` recognises the result, but exporting with a symbolic
  dimension raises ``NotImplementedError``.
* Typed PRNG key arguments are seen through to their uint32 data, as by fjax's ``jit``: the
  ``in_avals`` show that data (``uint32[..., 2]``), and ``in_tree`` a ``PRNGKeyArray`` node.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Sequence, TypeVar

from fjax import core
from fjax import _tree_lifted as tu
from fjax.core import ClosedJaxpr, ShapedArray
from fjax.export import _serialization as ser
from fjax.export._shape_poly import (
    SymbolicScope,
    check_concrete,
    is_symbolic_dim,
    symbolic_args_specs,
    symbolic_shape,
)

__all__ = [
    "DisabledSafetyCheck",
    "Exported",
    "SymbolicScope",
    "default_export_platform",
    "deserialize",
    "export",
    "is_symbolic_dim",
    "maximum_supported_calling_convention_version",
    "minimum_supported_calling_convention_version",
    "register_namedtuple_serialization",
    "register_pytree_node_serialization",
    "symbolic_args_specs",
    "symbolic_shape",
]

T = TypeVar("T")

minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10
_CALLING_CONVENTION_VERSION = 10


class DisabledSafetyCheck:
    """A safety check to skip, as ``jax.export.DisabledSafetyCheck``: ``platform()`` lets an
    Exported run on a platform it was not exported for; ``custom_call(name)`` is accepted and has
    no effect (fjax programs contain no custom calls)."""

    def __init__(self, _impl: str) -> None:
        self._impl = _impl

    @classmethod
    def platform(cls) -> DisabledSafetyCheck:
        """Allow the calling platform to differ from the export platforms."""
        return DisabledSafetyCheck("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> DisabledSafetyCheck:
        """Allow a custom call target (no effect in fjax)."""
        return DisabledSafetyCheck(f"custom_call:{target_name}")

    def is_custom_call(self) -> str | None:
        m = re.match(r"custom_call:(.+)$", self._impl)
        return m.group(1) if m else None

    def __str__(self) -> str:
        return self._impl

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self) -> int:
        return hash(self._impl)


def default_export_platform() -> str:
    """The platform ``export`` uses when none is given: that of the default backend (``"cpu"``,
    or ``"cuda"`` where fjax runs on a GPU)."""
    from fjax._devices import default_backend  # noqa: PLC0415

    p = default_backend()
    return "cuda" if p == "gpu" else p


def _canonical_platform(p: str) -> str:
    p = str(p).lower()
    return "cuda" if p == "gpu" else p


@dataclasses.dataclass(frozen=True)
class Exported:
    """An exported function: its calling convention (pytree structures and avals of inputs and
    outputs), the platforms it was exported for, and the program (``jaxpr``, a closed jaxpr whose
    leading ``len(consts)`` inputs take ``consts``). See the module doc for what differs from JAX."""

    fun_name: str
    in_tree: tu.PyTreeDef
    in_avals: tuple[ShapedArray, ...]
    out_tree: tu.PyTreeDef
    out_avals: tuple[ShapedArray, ...]
    in_shardings_hlo: tuple[None, ...]
    out_shardings_hlo: tuple[None, ...]
    nr_devices: int
    platforms: tuple[str, ...]
    ordered_effects: tuple
    unordered_effects: tuple
    disabled_safety_checks: tuple[DisabledSafetyCheck, ...]
    calling_convention_version: int
    module_kept_var_idx: tuple[int, ...]
    uses_global_constants: bool
    jaxpr: ClosedJaxpr = dataclasses.field(repr=False, compare=False)
    consts: tuple = dataclasses.field(repr=False, compare=False)

    def __str__(self) -> str:
        return f"Exported(fun_name={self.fun_name}, ...)"

    @property
    def mlir_module_serialized(self) -> bytes:
        raise NotImplementedError(
            "fjax.export: fjax does not produce StableHLO, so an Exported has no MLIR module; the program is a "
            "fjax jaxpr (Exported.jaxpr) and Exported.serialize() writes fjax's own format"
        )

    def mlir_module(self) -> str:
        """Not available in fjax (no StableHLO): raises ``NotImplementedError``. Read
        ``str(exported.jaxpr)`` for the program."""
        return self.mlir_module_serialized  # type: ignore[return-value]

    def in_shardings_jax(self, mesh: Any) -> Sequence[Any]:
        """The input shardings: ``None`` for each input (fjax exports for one device)."""
        return tuple(None for _ in self.in_avals)

    def out_shardings_jax(self, mesh: Any) -> Sequence[Any]:
        """The output shardings: ``None`` for each output."""
        return tuple(None for _ in self.out_avals)

    def has_vjp(self) -> bool:
        """True: the program keeps its primitives, so it can always be differentiated."""
        return True

    def vjp(self) -> Exported:
        """The VJP as an Exported, as in JAX: it takes the flat primal inputs followed by the flat
        output cotangents and returns the flat input cotangents."""
        from fjax.api import ShapeDtypeStruct, vjp  # noqa: PLC0415
        from fjax.interpreters.ad import tangent_aval  # noqa: PLC0415
        from fjax.jit import jit  # noqa: PLC0415

        n = len(self.in_avals)

        def fun_vjp(*args_and_cts: Any) -> Any:
            primals, cts = args_and_cts[:n], args_and_cts[n:]
            _, pullback = vjp(lambda *xs: self._call_flat(list(xs)), *primals)
            return pullback(list(cts))

        fun_vjp.__name__ = f"vjp({self.fun_name})"
        avals = list(self.in_avals) + [tangent_aval(a) for a in self.out_avals]
        specs = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
        return export(jit(fun_vjp), platforms=self.platforms, disabled_checks=self.disabled_safety_checks)(*specs)

    # ---- calling -------------------------------------------------------------------------------

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Call the exported function with arguments of the exported structure, shapes and dtypes.
        Works eagerly and under ``jit``, ``vmap``, ``grad`` and the other transforms."""
        self._check_platform()
        flat, tree = tu.tree_flatten((args, kwargs))
        if tree != self.in_tree:
            try:
                self.in_tree.flatten_up_to((args, kwargs))
                detail = f"   - expected {self.in_tree}, got {tree}"
            except ValueError as e:
                detail = "   - " + str(e)
            raise ValueError(
                "The invocation args and kwargs must have the same pytree structure as when the function "
                f"'{self.fun_name}' was exported, but they have the following structural differences:\n{detail}"
            )
        self._check_avals(flat, args, kwargs)
        return tu.tree_unflatten(self.out_tree, self._call_flat(flat))

    def _call_flat(self, flat: list) -> list:
        from fjax.jit import jit_p  # noqa: PLC0415

        return core.bind(jit_p, [*self.consts, *flat], dict(jaxpr=self.jaxpr, name=self.fun_name))

    def _check_platform(self) -> None:
        if DisabledSafetyCheck.platform() in self.disabled_safety_checks:
            return
        here = default_export_platform()
        if here not in self.platforms:
            raise ValueError(
                f"Function '{self.fun_name}' was exported for platforms '{self.platforms}' but it is used on "
                f"'{(here,)}'."
            )

    def _check_avals(self, flat: list, args: tuple, kwargs: dict) -> None:
        from fjax.jit import _leaf_signature  # noqa: PLC0415

        for i, (x, want) in enumerate(zip(flat, self.in_avals)):
            shape, dtype, _ = _leaf_signature(x)
            if len(shape) != len(want.shape):
                where = self._arg_name(i, args, kwargs)
                raise ValueError(f"Rank mismatch for {where}: expected {want.shape} and called with {shape}")
            for d, (got_d, want_d) in enumerate(zip(shape, want.shape)):
                if got_d != want_d:
                    raise ValueError(
                        f"Shape mismatch for {self._arg_name(i, args, kwargs)}.shape[{d}] (expected same constant): "
                        f"expected {want.shape} and called with {shape}"
                    )
            if dtype != want.dtype:
                where = self._arg_name(i, args, kwargs)
                raise ValueError(f"Dtype mismatch for {where}: expected {want.dtype} and called with {dtype}")

    @staticmethod
    def _arg_name(i: int, args: tuple, kwargs: dict) -> str:
        leaves, _ = tu.tree_flatten_with_path((args, kwargs))
        if i >= len(leaves):
            return f"argument leaf {i}"
        path = leaves[i][0]
        head = "args" if getattr(path[0], "idx", 0) == 0 else "kwargs"
        return head + tu.keystr(tuple(path[1:]))

    # ---- serialization -------------------------------------------------------------------------

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """fjax's own serialization (see ``fjax/export/_serialization.py``; JAX cannot read it).
        ``vjp_order`` is accepted for JAX's signature: the program keeps its primitives, so a
        deserialized Exported is differentiable to any order without serialized VJPs."""
        enc = ser.encoder()
        try:
            jaxpr_idx = enc.jaxpr(self.jaxpr)
            consts = [enc.value(c) for c in self.consts]
        except NotImplementedError as e:
            if ser.is_not_serializable(e) and not str(e).startswith("fjax.export"):
                raise NotImplementedError(f"fjax.export: cannot serialize {e}") from None
            raise
        header = {
            "format": "fjax.export",
            "fun_name": self.fun_name,
            "in_tree": ser.encode_treedef(self.in_tree),
            "out_tree": ser.encode_treedef(self.out_tree),
            "in_avals": [enc.aval(a) for a in self.in_avals],
            "out_avals": [enc.aval(a) for a in self.out_avals],
            "platforms": list(self.platforms),
            "nr_devices": self.nr_devices,
            "disabled_safety_checks": [str(c) for c in self.disabled_safety_checks],
            "calling_convention_version": self.calling_convention_version,
            "jaxpr": jaxpr_idx,
            "consts": consts,
        }
        return ser.pack(header, enc)


def deserialize(blob: bytearray | bytes) -> Exported:
    """Load an Exported written by ``Exported.serialize`` (fjax's format only: JAX's StableHLO
    serializations cannot be loaded). Raises ``ValueError`` for other data or format versions."""
    header, data = ser.unpack(blob)
    dec = ser.decoder(header, data)
    try:
        jaxpr = dec.jaxpr(header["jaxpr"])
        consts = tuple(dec.value(c) for c in header["consts"])
        in_avals = tuple(dec.aval(a) for a in header["in_avals"])
        out_avals = tuple(dec.aval(a) for a in header["out_avals"])
    except (KeyError, IndexError, TypeError) as e:
        raise ValueError(f"fjax.export.deserialize: corrupt serialization ({type(e).__name__}: {e})") from None
    if not isinstance(jaxpr, ClosedJaxpr):
        raise ValueError("fjax.export.deserialize: corrupt serialization (the program is not a closed jaxpr)")
    core.check_jaxpr(jaxpr.jaxpr)
    return _make(
        str(header["fun_name"]),
        ser.decode_treedef(header["in_tree"]),
        in_avals,
        ser.decode_treedef(header["out_tree"]),
        out_avals,
        tuple(header["platforms"]),
        tuple(DisabledSafetyCheck(c) for c in header["disabled_safety_checks"]),
        int(header["calling_convention_version"]),
        jaxpr,
        consts,
    )


def _make(
    fun_name: str,
    in_tree: tu.PyTreeDef,
    in_avals: tuple,
    out_tree: tu.PyTreeDef,
    out_avals: tuple,
    platforms: tuple,
    disabled: tuple,
    ccv: int,
    jaxpr: ClosedJaxpr,
    consts: tuple,
) -> Exported:
    return Exported(
        fun_name=fun_name,
        in_tree=in_tree,
        in_avals=in_avals,
        out_tree=out_tree,
        out_avals=out_avals,
        in_shardings_hlo=(None,) * len(in_avals),
        out_shardings_hlo=(None,) * len(out_avals),
        nr_devices=1,
        platforms=platforms,
        ordered_effects=(),
        unordered_effects=(),
        disabled_safety_checks=disabled,
        calling_convention_version=ccv,
        module_kept_var_idx=tuple(range(len(in_avals))),
        uses_global_constants=False,
        jaxpr=jaxpr,
        consts=consts,
    )


def export(
    fun_jit: Any,
    *,
    platforms: Sequence[str] | None = None,
    disabled_checks: Sequence[DisabledSafetyCheck] = (),
) -> Callable[..., Exported]:
    """``export(jit(f))(*args, **kwargs)``: trace ``f`` for the shapes and dtypes of the arguments
    (arrays or ``ShapeDtypeStruct``\\ s; static arguments of the jit are given as values and are
    baked in) and return the ``Exported``. ``platforms`` defaults to ``(default_export_platform(),)``."""
    from fjax.jit import JitWrapped  # noqa: PLC0415

    if not isinstance(fun_jit, JitWrapped):
        raise ValueError(f"Function to be exported must be the result of `jit` but is: {fun_jit!r}")
    plats = tuple(_canonical_platform(p) for p in platforms) if platforms is not None else (default_export_platform(),)
    if not plats:
        raise ValueError("export: platforms must not be empty")
    checks = tuple(disabled_checks)
    for c in checks:
        if not isinstance(c, DisabledSafetyCheck):
            raise TypeError(f"export: disabled_checks must hold DisabledSafetyCheck values, got {c!r}")

    def do_export(*args: Any, **kwargs: Any) -> Exported:
        args, kwargs = fun_jit._abstract_keys(args, kwargs)
        for x in tu.tree_leaves((args, kwargs)):
            shape = getattr(x, "shape", ())
            check_concrete(shape, "an argument")
        (closed, consts, out_tree), _ = fun_jit._get(args, kwargs)
        _, _, _, dyn_args, dyn_kwargs = fun_jit._split(args, kwargs)
        in_tree = tu.tree_structure((dyn_args, dyn_kwargs))
        in_avals = tuple(closed.in_avals[len(consts) :])
        consts = tuple(consts)
        if any(isinstance(c, core.Tracer) for c in consts):
            raise ValueError("export: the function closes over a value of an enclosing transform (a tracer)")
        return _make(
            fun_jit.name,
            in_tree,
            in_avals,
            out_tree,
            tuple(closed.out_avals),
            plats,
            checks,
            _CALLING_CONVENTION_VERSION,
            closed,
            consts,
        )

    return do_export


def register_pytree_node_serialization(
    nodetype: type[T],
    *,
    serialized_name: str,
    serialize_auxdata: Callable[[Any], bytes],
    deserialize_auxdata: Callable[[bytes], Any],
    from_children: Callable[[Any, Sequence[Any]], Any] | None = None,
) -> type[T]:
    """Register how a custom pytree node type of ``in_tree``/``out_tree`` is serialized, as
    ``jax.export.register_pytree_node_serialization``: ``serialize_auxdata(aux) -> bytes``,
    ``deserialize_auxdata(bytes) -> aux`` and ``from_children(aux, children)`` (default: the
    registered unflatten function). Returns ``nodetype`` (usable as a class decorator)."""
    if nodetype in ser.serialization_registry:
        raise ValueError(
            f"Duplicate serialization registration for type `{nodetype}`. Previous registration was with "
            f"serialized_name `{ser.serialization_registry[nodetype][0]}`."
        )
    if serialized_name in ser.deserialization_registry:
        raise ValueError(
            f"Duplicate serialization registration for serialized_name `{serialized_name}`. Previous registration "
            f"was for type `{ser.deserialization_registry[serialized_name][0]}`."
        )
    if from_children is None:
        node = tu._registry.get(nodetype)
        if node is None:
            raise ValueError(
                "If `from_children` is not present, you must call first`jax.tree_util.register_pytree_node` for "
                f"`{nodetype}`"
            )
        from_children = node.unflatten
    ser.serialization_registry[nodetype] = (serialized_name, serialize_auxdata)
    ser.deserialization_registry[serialized_name] = (nodetype, deserialize_auxdata, from_children)
    return nodetype


def register_namedtuple_serialization(nodetype: type[T], *, serialized_name: str) -> type[T]:
    """Register a ``collections.namedtuple`` type for serialization in ``in_tree``/``out_tree``,
    as ``jax.export.register_namedtuple_serialization``."""
    import json  # noqa: PLC0415

    fields = getattr(nodetype, "_fields", None)
    if not (
        isinstance(nodetype, type)
        and issubclass(nodetype, tuple)
        and isinstance(fields, Sequence)
        and all(isinstance(f, str) for f in fields)
    ):
        raise ValueError(
            "Use `jax.export.register_pytree_node_serialization` for types other than `collections.namedtuple`."
        )

    def serialize_auxdata(aux: Any) -> bytes:
        return json.dumps(list(nodetype._fields)).encode("utf-8")  # type: ignore[attr-defined]

    def deserialize_auxdata(blob: bytes) -> Any:
        return json.loads(blob.decode("utf-8"))

    def from_children(keys: Any, children: Sequence[Any]) -> Any:
        if list(keys) != list(nodetype._fields):  # type: ignore[attr-defined]
            raise ValueError(
                f"The namedtuple `{serialized_name}` was serialized with fields {list(keys)} but "
                f"{nodetype.__name__} now has {list(nodetype._fields)}"  # type: ignore[attr-defined]
            )
        return nodetype(**dict(zip(keys, children)))

    return register_pytree_node_serialization(
        nodetype,
        serialized_name=serialized_name,
        serialize_auxdata=serialize_auxdata,
        deserialize_auxdata=deserialize_auxdata,
        from_children=from_children,
    )
