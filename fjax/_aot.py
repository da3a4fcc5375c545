"""Ahead-of-time compilation as JAX spells it: ``jit(f).trace(*args)`` / ``.lower(*args)`` carry the
call's signature (``in_tree``, ``args_info``, ``out_info``, ``donate_argnums``, ...) and
``.compile()`` returns a :class:`Compiled`: called with the arguments of ``f`` (static ones left
out, as in JAX) it checks their structure and types against the compiled ones with JAX's
``TypeError``s, then runs the program compiled at ``.compile()``.

``cost_analysis()`` counts over the jaxpr (a loop body times its trip count where it is static):
one flop per element of each arithmetic result, ``2 * M * N * K`` per matrix product, a
transcendental per element of exp/log/sin/...; ``bytes accessed`` is the arguments and results.
These are fjax's own estimates, not XLA's (the numbers JAX prints come from XLA's cost model).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, NamedTuple

import numpy as np

from fjax import core
from fjax import tree_util as tu

__all__ = ["Compiled", "Signature", "signature_of"]


class Signature(NamedTuple):
    """What a traced call looked like: the tree of ``(dynamic args, dynamic kwargs)``, the output
    tree, the flat input avals, which flat inputs are donated, and the flat inputs' names."""

    in_tree: Any
    out_tree: Any
    in_avals: tuple
    donated: tuple
    names: tuple
    donate_argnums: tuple
    fun_name: str


def signature_of(
    fun: Callable,
    args: tuple,
    kwargs: dict,
    static_idx: tuple,
    static_argnames: tuple,
    donate_argnums: tuple,
    closed: Any,
    out_tree: Any,
) -> Signature:
    """The :class:`Signature` of ``jit(fun)`` traced at ``args``/``kwargs`` (``closed``: its jaxpr)."""
    nargs = len(args)
    dyn_pos = [i for i in range(nargs) if i not in static_idx]
    dyn_args = tuple(args[i] for i in dyn_pos)
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
    in_tree = tu.tree_structure((dyn_args, dyn_kwargs))
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    pos_names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
    donate = {i % nargs for i in donate_argnums if -nargs <= i < nargs} if nargs else set()
    names, donated = [], []
    for j, i in enumerate(dyn_pos):
        base = pos_names[i] if i < len(pos_names) else (f"{var}[{i - len(pos_names)}]" if var else f"args[{i}]")
        for path, _ in tu.tree_flatten_with_path(dyn_args[j])[0]:
            names.append(base + tu.keystr(path))
            donated.append(i in donate)
    for k in sorted(dyn_kwargs):  # dict children flatten in key order
        for path, _ in tu.tree_flatten_with_path(dyn_kwargs[k])[0]:
            names.append(k + tu.keystr(path))
            donated.append(False)
    in_avals = tuple(closed.in_avals[len(closed.in_avals) - len(names) :])  # (constants come first)
    name = getattr(fun, "__name__", "fun")
    return Signature(in_tree, out_tree, in_avals, tuple(donated), tuple(names), tuple(sorted(donate)), name)


def args_info(sig: Signature) -> Any:
    from fjax.stages import ArgInfo  # noqa: PLC0415

    return tu.tree_unflatten(sig.in_tree, [ArgInfo(a, d) for a, d in zip(sig.in_avals, sig.donated)])


def out_info(sig: Signature, closed: Any) -> Any:
    from fjax.api import ShapeDtypeStruct, shapes_of_keys  # noqa: PLC0415

    outs = [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals]  # (JAX's drop weak types)
    return shapes_of_keys(tu.tree_unflatten(sig.out_tree, outs))


# ---- cost analysis ------------------------------------------------------------------------------

_TRANSCENDENTAL = frozenset(
    "exp exp2 expm1 log log1p sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh logistic "
    "erf erfc erf_inv lgamma digamma pow sqrt rsqrt cbrt".split()
)
_FREE = frozenset(
    "reshape broadcast_in_dim squeeze expand_dims transpose convert_element_type slice dynamic_slice "
    "concatenate pad gather rev copy copy_p iota select_n stop_gradient bitcast_convert_type".split()
)


def _size(aval: Any) -> int:
    return int(np.prod(getattr(aval, "shape", ()), dtype=np.int64))


def _bytes(aval: Any) -> int:
    try:
        return _size(aval) * np.dtype(aval.dtype).itemsize
    except TypeError:  # key arrays: two uint32 words per key
        return _size(aval) * 8


def _count(jaxpr: Any, acc: dict, times: float) -> None:
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        subs = [v for v in eqn.params.values() if hasattr(v, "eqns") or hasattr(getattr(v, "jaxpr", None), "eqns")]
        subs += [b for v in eqn.params.values() if isinstance(v, (tuple, list)) for b in v if hasattr(b, "jaxpr")]
        if subs:
            trips = float(eqn.params.get("length", 1)) if name == "scan" else 1.0
            for s in subs:
                _count(getattr(s, "jaxpr", s), acc, times * trips)
            continue
        out = sum(_size(v.aval) for v in eqn.outvars)
        if name == "dot_general":
            (lc, _), _ = eqn.params["dimension_numbers"]
            k = int(np.prod([eqn.invars[0].aval.shape[d] for d in lc], dtype=np.int64))
            acc["flops"] += times * 2.0 * out * k
        elif name in _TRANSCENDENTAL:
            acc["transcendentals"] += times * out
            acc["flops"] += times * out
        elif name.startswith("reduce_") or name in ("argmax", "argmin"):
            acc["flops"] += times * sum(_size(v.aval) for v in eqn.invars)
        elif name not in _FREE:
            acc["flops"] += times * out


def cost_analysis(closed: Any) -> dict:
    acc = {"flops": 0.0, "transcendentals": 0.0}
    _count(closed.jaxpr, acc, 1.0)
    acc["bytes accessed"] = float(sum(_bytes(a) for a in closed.in_avals) + sum(_bytes(a) for a in closed.out_avals))
    return acc


@dataclasses.dataclass(frozen=True)
class CompiledMemoryStats:
    """Sizes of a compiled program's arguments and results (``Compiled.memory_analysis()``); fjax
    does not track its temporaries or generated code, which read 0."""

    generated_code_size_in_bytes: int
    argument_size_in_bytes: int
    output_size_in_bytes: int
    alias_size_in_bytes: int
    temp_size_in_bytes: int
    host_generated_code_size_in_bytes: int = 0
    host_argument_size_in_bytes: int = 0
    host_output_size_in_bytes: int = 0
    host_alias_size_in_bytes: int = 0
    host_temp_size_in_bytes: int = 0


# ---- the compiled object ------------------------------------------------------------------------


def _equality_errors(path: tuple, t1: Any, t2: Any) -> list:
    """Where two pytrees (of placeholder leaves) differ in structure, as JAX describes it."""
    if tu.treedef_is_leaf(tu.tree_structure(t1)) and tu.treedef_is_leaf(tu.tree_structure(t2)):
        return []
    if type(t1) is not type(t2):
        return [(path, str(type(t1)), str(type(t2)), "their Python types differ")]
    if isinstance(t1, (list, tuple)) and len(t1) != len(t2):
        n1, n2 = type(t1).__name__, type(t2).__name__
        return [(path, f"{n1} of length {len(t1)}", f"{n2} of length {len(t2)}", "the lengths do not match")]
    from fjax._tree_extra import flatten_one_level_with_keys  # noqa: PLC0415

    c1, m1 = flatten_one_level_with_keys(t1)
    c2, m2 = flatten_one_level_with_keys(t2)
    if len(c1) != len(c2):
        k1, k2 = {getattr(k, "key", k) for k, _ in c1}, {getattr(k, "key", k) for k, _ in c2}
        diff = " ".join(repr(k) for k in k1 ^ k2) if isinstance(t1, dict) else ""

        def kids(n: int) -> str:
            return f"{n} child{'ren' if n > 1 else ''}"

        return [
            (
                path,
                f"{type(t1)} with {kids(len(c1))}",
                f"{type(t2)} with {kids(len(c2))}",
                "the numbers of children do not match"
                + (f", with the symmetric difference of key sets: {{{diff}}}" if diff else ""),
            )
        ]
    if m1 != m2:
        meta = "the pytree node metadata does not match"
        return [(path, f"{type(t1)} with pytree metadata {m1}", f"{type(t2)} with pytree metadata {m2}", meta)]
    errs = []
    for (k, a), (_, b) in zip(c1, c2):
        errs += _equality_errors((*path, k), a, b)
    return errs


class _Leaf:
    def __repr__(self) -> str:
        return "pytree leaf"


def _tree_mismatch(compiled_tree: Any, given_tree: Any) -> TypeError:
    leaf = _Leaf()
    given = tu.tree_unflatten(given_tree, [leaf] * given_tree.num_leaves)
    seen = tu.tree_unflatten(compiled_tree, [leaf] * compiled_tree.num_leaves)
    errs = _equality_errors((), given, seen)
    lines = [
        "Function compiled with input pytree does not match the input pytree it was called with. "
        f"There are {len(errs)} mismatches, including:"
    ]
    for path, now, was, why in errs:
        fst, *rest = path
        base = ["args", "kwargs"][getattr(fst, "idx", 0)]
        now = "pytree leaf" if now == str(_Leaf) else now
        was = "pytree leaf" if was == str(_Leaf) else was
        lines.append(f"    * at {base}{tu.keystr(tuple(rest))}, seen {was} but now given {now}, so {why}")
    return TypeError("\n".join(lines))


class Compiled:
    """``jax.stages.Compiled``: a ``jit`` program compiled for one signature (see the module doc)."""

    def __init__(self, lowered: Any, program: Callable | None):
        self._lowered = lowered
        self._program = program
        self._sig: Signature = lowered._sig

    # the signature: the Lowered's
    in_tree = property(lambda self: self._lowered.in_tree)
    out_tree = property(lambda self: self._lowered.out_tree)
    donate_argnums = property(lambda self: self._lowered.donate_argnums)
    args_info = property(lambda self: self._lowered.args_info)
    out_info = property(lambda self: self._lowered.out_info)
    in_avals = property(lambda self: self._lowered.in_avals)

    @property
    def input_shardings(self) -> Any:
        from fjax import _devices, sharding  # noqa: PLC0415

        s = sharding.SingleDeviceSharding(_devices.devices()[0])
        return tu.tree_unflatten(self._sig.in_tree, [s] * self._sig.in_tree.num_leaves)

    @property
    def output_shardings(self) -> Any:
        from fjax import _devices, sharding  # noqa: PLC0415

        s = sharding.SingleDeviceSharding(_devices.devices()[0])
        return tu.tree_unflatten(self._sig.out_tree, [s] * self._sig.out_tree.num_leaves)

    def as_text(self) -> str:
        """The generated source of the program (numba source, or the CUDA translation unit)."""
        return self._lowered.as_text()

    def cost_analysis(self) -> dict:
        return self._lowered.cost_analysis()

    def memory_analysis(self) -> CompiledMemoryStats:
        closed = self._lowered.jaxpr
        args = sum(_bytes(a) for a in self._sig.in_avals)
        outs = sum(_bytes(a) for a in closed.out_avals)
        alias = sum(_bytes(a) for a, d in zip(self._sig.in_avals, self._sig.donated) if d)
        return CompiledMemoryStats(0, args, outs, alias, 0)

    def runtime_executable(self) -> Callable | None:
        """The backend's program: a callable on the flat list of input arrays (constants first)."""
        return self._program

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        flat, tree = tu.tree_flatten((args, kwargs))
        sig = self._sig
        if tree != sig.in_tree:
            raise _tree_mismatch(sig.in_tree, tree)
        bad = []
        for name, x, a in zip(sig.names, flat, sig.in_avals):
            shape, dtype = _shape_dtype(x)
            if shape != tuple(a.shape) or dtype != a.dtype:
                was, now = _long(a.dtype, a.shape), _long(dtype, shape)
                bad.append(f"Argument '{name}' compiled with {was} and called with {now}")
        if bad:
            raise TypeError(
                "Argument types differ from the types for which this computation was compiled. Perhaps you are "
                "calling the compiled executable with a different enable_x64 mode than when it was AOT compiled? "
                "The mismatches are:\n" + "\n".join(bad)
            )
        if any(isinstance(x, core.Tracer) for x in flat):
            t = next(type(x) for x in flat if isinstance(x, core.Tracer))
            raise TypeError(
                "Cannot apply JAX transformations to a function lowered and compiled for a particular signature. "
                f"Detected argument of Tracer type {t}."
            )
        from fjax.jit import jit_p  # noqa: PLC0415

        closed, consts = self._lowered.jaxpr, self._lowered.consts
        outs = core.bind(jit_p, list(consts) + flat, dict(jaxpr=closed, name=self._lowered.name))
        return tu.tree_unflatten(sig.out_tree, outs)

    call = __call__

    def __repr__(self) -> str:
        return f"<fjax.stages.Compiled object of {self._lowered.name} at {id(self):#x}>"


def _shape_dtype(x: Any) -> tuple:
    from fjax import dtypes  # noqa: PLC0415

    if hasattr(x, "aval"):
        a = x.aval
        return tuple(a.shape), a.dtype
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return tuple(x.shape), dtypes.canonicalize_dtype(x.dtype)
    return (), dtypes.canonicalize_dtype(dtypes.dtype(x))


def _long(dtype: Any, shape: tuple) -> str:
    return f"{np.dtype(dtype).name if isinstance(dtype, np.dtype) else dtype}[{','.join(map(str, shape))}]"
