"""``fjax.jit``: trace once per signature into a jaxpr, then run it through the ``jit``
higher-order primitive. Because jit is a primitive carrying its jaxpr, grad, vmap and jit
itself pass through it (rules below). The primitive's impl runs the backend's compiled
callable (``fjax.backends.dispatch``) when one is registered, else evaluates the jaxpr.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import operator
import sys
import threading
import types
import weakref
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from fjax import _debug_nans, _jit_fast, core, dtypes
from fjax import _tree_lifted as tu
from fjax._tree_prefix import fun_sourceinfo
from fjax.config import config
from fjax.core import Array, ClosedJaxpr, Jaxpr, ShapedArray, _eval_main
from fjax.interpreters import ad, batching
from fjax.interpreters import partial_eval as pe
from fjax.interpreters.ad import UndefinedPrimal, Zero, is_undefined_primal
from fjax.tree_util import _flatten

log = logging.getLogger("fjax.jit")
_compile_log = logging.getLogger("jax._src.dispatch")

# called as listener(platform, name) each time jit compiles a function for a new signature, before the
# result is cached: a listener that raises aborts that compile (a later call compiles again).
# fjax.compat's ``jax._src.compiler`` routes it to ``backend_compile_and_load`` (chex's
# restrict_backends patches that)
compile_listeners: list[Callable[[str, str], None]] = []

_FLOAT0 = dtypes.float0

jit_p = core.Primitive("jit")
jit_p.multiple_results = True

# set by the lowering module: (ClosedJaxpr) -> callable on numpy arrays returning a list of arrays
compile_hook: Callable | None = None


# set by fjax.lax the first time a dot_general precision the CPU refuses is traced (a preset such
# as TF32_TF32_F32, a DotAlgorithm): (ClosedJaxpr) -> None, raising JAX's CPU error for a program
# holding one (fjax/lax/lax_reductions.py); None until then, so other programs pay nothing
cpu_precision_check: Callable | None = None


# set by fjax.interpreters.mlir once a primitive has a ``mlir.lower_fun`` rule: (ClosedJaxpr) ->
# ClosedJaxpr with those primitives expanded into their functions' jaxprs (cached per jaxpr)
lowering_expander: Callable | None = None


def _expanded(jaxpr: ClosedJaxpr) -> ClosedJaxpr:
    return lowering_expander(jaxpr) if lowering_expander is not None else jaxpr


def _jit_impl(*args: Any, jaxpr: ClosedJaxpr, name: str) -> list:
    backward = _debug_nans.active and jaxpr in _BACKWARD
    if cpu_precision_check is not None:
        cpu_precision_check(jaxpr)
    if lowering_expander is not None:
        jaxpr = lowering_expander(jaxpr)
    fn = compile_hook(jaxpr) if compile_hook is not None and not config.jax_disable_jit else None
    if fn is None:
        fn = functools.partial(_eval_flat, jaxpr)
    if _debug_nans.active:  # jax_debug_nans / jax_debug_infs: check the outputs, name the primitive
        return _debug_nans.call_jit_checked(fn, args, jaxpr, name, backward)
    return fn(*args)


# the transposed jaxprs of jit equations (named as the function, as JAX): jax_debug_nans reports a
# NaN made by one as found "in the backward pass"
_BACKWARD: weakref.WeakSet = weakref.WeakSet()


# ---- jax_no_tracing / jax_no_execution --------------------------------------------------------


_fun_sourceinfo = fun_sourceinfo  # ``f at file:line``, as JAX names functions in its errors


def _no_tracing_error(fun: Callable) -> RuntimeError:
    return RuntimeError(f"re-tracing function {_fun_sourceinfo(fun)} for `jit`, but 'no_tracing' is set")


def _check_execution(name: str) -> None:
    if config.jax_no_execution:
        raise RuntimeError(f"JAX tried to execute function jit({name}), but the no_execution config option is set")


_jit_impl_plain = _jit_impl


# ---- buffer donation -------------------------------------------------------------------------

_donate = _jit_fast.donate  # (fjax/_jit_fast.py)

_NO_GENERATION = [0]


def _run_key() -> tuple | None:
    """What the callable ``_jit_impl`` runs for a program depends on, beside the options checked on
    each call: the compile hook, the lowering expander and the generations of their caches (as a
    list and the value it held); None when one of them keeps no generation fjax knows."""
    hook, expander = compile_hook, lowering_expander
    dgen = _NO_GENERATION if hook is None else getattr(hook, "generation", None)
    if expander is None:
        mgen: Any = _NO_GENERATION
    else:  # fjax.interpreters.mlir.expand: its results change only with its generation
        mlir = sys.modules.get("fjax.interpreters.mlir")
        mgen = getattr(mlir, "_generation", None) if getattr(mlir, "expand", None) is expander else None
    if dgen is None or mgen is None:
        return None
    return (hook, expander, mgen, mgen[0], dgen, dgen[0])


def _settle(fe: _jit_fast.FastEntry) -> None:
    """Keep on ``fe`` the callable ``_jit_impl`` runs for its program once that is final (its compile
    done, no retry pending), so later calls with that signature run it directly while ``_run_key``
    holds (checked on each call)."""
    fe.run_for = None
    if _jit_impl is not _jit_impl_plain or _debug_nans.active:
        return
    key = _run_key()
    if key is None:
        return
    hook = compile_hook
    jaxpr = _expanded(fe.closed)
    if hook is None:
        fn = None
    else:
        done, fn = hook.settled(jaxpr)
        if not done:
            return
    fe.run_for = (*key, fn if fn is not None else functools.partial(_eval_flat, jaxpr))


def _jit_impl_guarded(*args: Any, jaxpr: ClosedJaxpr, name: str) -> list:
    _check_execution(name)
    return _jit_impl_plain(*args, jaxpr=jaxpr, name=name)


def _guarding(inner: Callable) -> Callable:
    """The eager evaluator ``inner`` refusing to run while ``jax_no_execution`` is on (every eager op
    is a jitted computation in JAX, named ``jit(op)``; a jit equation by its function's name)."""

    def guarded(prim: core.Primitive, args: Sequence[Any], params: dict) -> Any:
        _check_execution(params["name"] if prim is jit_p else prim.name)
        return inner(prim, args, params)

    return guarded


def _refresh_no_execution(global_value: Any = None) -> None:
    """While ``jax_no_execution`` may be on in some thread, jit's runner and the eager evaluator
    check it (swapped in, so neither pays anything otherwise)."""
    global _jit_impl
    if global_value is None:
        global_value = config.global_value("jax_no_execution")
    on = bool(global_value) or config.overridden("jax_no_execution")
    _jit_impl = _jit_impl_guarded if on else _jit_impl_plain
    core.set_eval_wrapper("no_execution", _guarding if on else None)


def _on_config_update(name: str, value: Any) -> None:
    if name == "jax_no_execution":  # listeners run before the value is stored: pass the new one
        _refresh_no_execution(value)


def _on_config_override(name: str) -> None:
    if name == "jax_no_execution":
        _refresh_no_execution()


config._listeners.append(_on_config_update)
config._override_listeners.append(_on_config_override)
_refresh_no_execution()  # the options may come from the environment (JAX_NO_EXECUTION=1)


def _eval_flat(jaxpr: ClosedJaxpr, *args: Any) -> list:
    ins = [core.Array(a, av.weak_type) for a, av in zip(args, jaxpr.in_avals)]
    outs = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *ins)
    return [o._value if isinstance(o, core.Array) else np.asarray(o) for o in outs]


def _jit_abstract(*avals: Any, jaxpr: ClosedJaxpr, name: str) -> list:
    for a, b in zip(avals, jaxpr.in_avals):
        if not core.typematch(a, b):
            raise TypeError(
                f"jit({name}): argument of type {core.get_aval(a).str_short()} where {b.str_short()} was traced"
            )
    return jaxpr.out_avals


jit_p.def_impl(_jit_impl)
jit_p.def_abstract_eval(_jit_abstract)


def _closed(jaxpr: Jaxpr, consts: list) -> tuple[ClosedJaxpr, list]:
    """Hoist constants into leading arguments so jit's jaxpr param carries no values."""
    return ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), consts


def trace_flat(fun: Callable, in_avals: Sequence[ShapedArray], name: str) -> tuple[ClosedJaxpr, list]:
    jaxpr, consts, _ = pe.trace_to_jaxpr(fun, in_avals, f"jit({name})")
    return _closed(jaxpr, consts)


# ---- rules -------------------------------------------------------------------------------


def _jit_jvp(primals: list, tangents: list, *, jaxpr: ClosedJaxpr, name: str) -> tuple:
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    new, consts, _ = ad.jvp_jaxpr(jaxpr, nonzeros, True)  # every tangent output present
    # the equation keeps the function's name under every transformation (as JAX's pjit)
    outs = jit_p.bind(*consts, *primals, *[t for t in tangents if type(t) is not Zero], jaxpr=new, name=name)
    n = len(jaxpr.out_avals)
    return outs[:n], outs[n:]


ad.primitive_jvps[jit_p] = _jit_jvp


@batching.wants_axis_size
def _jit_batch(vals: list, dims: list, *, jaxpr: ClosedJaxpr, name: str, axis_size: int) -> tuple:
    # outputs that do not vary along the batch stay unbatched (as JAX's pjit rule): jacfwd of a
    # jitted function vmaps a jvp whose primal outputs must come back unmapped
    new, consts, out_b = batching.batch_jaxpr(jaxpr, dims, axis_size, False, "vmap")
    outs = jit_p.bind(*consts, *vals, jaxpr=new, name=name)
    return outs, [0 if b else batching.not_mapped for b in out_b]


batching.primitive_batchers[jit_p] = _jit_batch
batching.register_higher_order(jit_p)  # collectives in the body reach their named axis


@core.cache_in_context(maxsize=4096)
def _transpose_jaxpr(jaxpr: ClosedJaxpr, undef: tuple, in_avals: tuple, name: str) -> tuple[ClosedJaxpr, list]:
    """The transposed jaxpr (cached, so ``grad(jit(f))`` compiles its backward program once)."""
    und_avals = [a for a, u in zip(jaxpr.in_avals, undef) if u]

    def f(*xs: Any) -> list:
        nd = len(undef) - len(und_avals)
        dvals, ctv = list(xs[:nd]), list(xs[nd:])
        it, ut = iter(dvals), iter(und_avals)
        full = [UndefinedPrimal(next(ut)) if u else next(it) for u in undef]
        res = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, full, ctv)
        return [ad.instantiate_zeros(r) for r, u in zip(res, undef) if u]

    new, consts = trace_flat(f, list(in_avals), f"transpose({name})")
    _BACKWARD.add(new)
    return new, consts


def _jit_transpose(cts: list, *args: Any, jaxpr: ClosedJaxpr, name: str) -> list:
    undef = tuple(is_undefined_primal(a) for a in args)
    defined = [a for a in args if not is_undefined_primal(a)]
    ct_avals = [ad.tangent_aval(a) for a in jaxpr.out_avals]
    cts = [ad._zeros_like(a) if type(c) is Zero else c for c, a in zip(cts, ct_avals)]
    in_avals = tuple(core.get_aval(d) for d in defined) + tuple(core.get_aval(c) for c in cts)
    new, consts = _transpose_jaxpr(jaxpr, undef, in_avals, name)
    outs = jit_p.bind(*consts, *defined, *cts, jaxpr=new, name=name)
    it = iter(outs)
    return [next(it) if u else None for u in undef]


ad.primitive_transposes[jit_p] = _jit_transpose


def _forwarded(srcs: tuple, known_ins: list, kept_outs: list) -> list:
    """The known jaxpr's outputs from the pruned equation's outputs and the known inputs."""
    ko = iter(kept_outs)
    outs: list = []
    for kind, i in srcs:
        outs.append(known_ins[i] if kind == "in" else outs[i] if kind == "out" else next(ko))
    return outs


def _jit_partial_eval(trace: pe.StagingTrace, tracers: list, *, jaxpr: ClosedJaxpr, name: str) -> list:
    unknowns = [not pe.is_known(t) for t in tracers]
    jk, ju, out_uk, num_res, srcs = _pe_split(jaxpr, tuple(unknowns))
    known_vals = [t.const for t, u in zip(tracers, unknowns) if not u]
    kept = core.bind(jit_p, known_vals, dict(jaxpr=jk, name=name))
    known_outs = _forwarded(srcs, known_vals, kept)
    n_known_out = len(known_outs) - num_res
    res = known_outs[n_known_out:]
    res_tracers = [trace.get_or_make_const_tracer(r) for r in res]
    un_tracers = [t for t, u in zip(tracers, unknowns) if u]
    un_outs = trace.default_process_primitive(jit_p, res_tracers + un_tracers, dict(jaxpr=ju, name=name))
    ki, ui = iter(known_outs[:n_known_out]), iter(un_outs)
    return [next(ui) if u else next(ki) for u in out_uk]


@core.cache_in_context(maxsize=4096)
def _pe_split(jaxpr: ClosedJaxpr, unknowns: tuple, forward_primals: bool = True) -> tuple:
    """The known and unknown jaxprs; the known one returns no residual that is one of its inputs
    or primal outputs, nor (``forward_primals``) a primal output that is one of its inputs: those
    are forwarded around the equation, as JAX's pjit partial evaluation does. ``srcs`` says where
    each known output comes from: ``("in", i)`` the i-th known input, ``("out", j)`` the j-th
    known output, ``("eqn", None)`` the equation."""
    jk, ju, out_uk, num_res = pe.partial_eval_jaxpr(jaxpr.jaxpr, list(unknowns))
    n_primal = len(jk.outvars) - num_res
    in_pos = {v: i for i, v in enumerate(jk.invars)}
    primal_pos: dict = {}
    srcs, kept = [], []
    for j, v in enumerate(jk.outvars):
        if type(v) is core.Var and v in in_pos and (forward_primals or j >= n_primal):
            srcs.append(("in", in_pos[v]))
        elif j >= n_primal and type(v) is core.Var and v in primal_pos:
            srcs.append(("out", primal_pos[v]))
        else:
            srcs.append(("eqn", None))
            kept.append(v)
        if j < n_primal and type(v) is core.Var:
            primal_pos.setdefault(v, j)
    if len(kept) < len(jk.outvars):
        jk = pe.dce_jaxpr(jk, [k == "eqn" for k, _ in srcs], keep_inputs=True)
    return ClosedJaxpr(jk, []), ClosedJaxpr(ju, []), out_uk, num_res, tuple(srcs)


pe.partial_eval_rules[jit_p] = _jit_partial_eval


def _jit_partial_eval_jaxpr(eqn: core.JaxprEqn, unknowns: list) -> tuple:
    """Split a jit equation nested in a jaxpr being partially evaluated."""
    jaxpr = eqn.params["jaxpr"]
    name = eqn.params["name"]
    # an equation cannot bind an outer variable to one of its inputs: primal outputs stay outputs
    jk, ju, out_uk, num_res, srcs = _pe_split(jaxpr, tuple(unknowns), False)
    known_ins = [x for x, u in zip(eqn.invars, unknowns) if not u]
    unknown_ins = [x for x, u in zip(eqn.invars, unknowns) if u]
    known_outs = [v for v, u in zip(eqn.outvars, out_uk) if not u]
    unknown_outs = [v for v, u in zip(eqn.outvars, out_uk) if u]
    res = [core.Var(a) for a in ju.in_avals[:num_res]]
    # a forwarded residual is the known input (or output) variable itself
    kept_outs = [v for v, (kind, _) in zip(known_outs + res, srcs) if kind == "eqn"]
    res = _forwarded(srcs, known_ins, kept_outs)[len(known_outs) :]
    eqn_known = core.JaxprEqn(jit_p, known_ins, kept_outs, dict(jaxpr=jk, name=name))
    eqn_unknown = core.JaxprEqn(jit_p, res + unknown_ins, unknown_outs, dict(jaxpr=ju, name=name))
    return eqn_known, eqn_unknown, out_uk


pe.partial_eval_jaxpr_rules[jit_p] = _jit_partial_eval_jaxpr


def _jit_dce(used_outputs: list, eqn: core.JaxprEqn) -> tuple:
    """Drop unused outputs of a jit equation, and the inputs and inner work only they needed."""
    if not any(used_outputs):
        return [False] * len(eqn.invars), None
    new, used_in = _dce_split(eqn.params["jaxpr"], tuple(used_outputs))
    new_eqn = eqn.replace(
        invars=[x for x, u in zip(eqn.invars, used_in) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
        params=dict(eqn.params, jaxpr=new),
    )
    return list(used_in), new_eqn


@functools.lru_cache(maxsize=4096)
def _dce_split(closed: ClosedJaxpr, used_outputs: tuple) -> tuple[ClosedJaxpr, tuple]:
    """The pruned inner jaxpr (cached: the same object every time, so its compiled program is
    reused by ``grad(jit(f))``, which prunes on every call) and which inputs it keeps."""
    inner = closed.jaxpr
    new = pe.dce_jaxpr(inner, list(used_outputs), keep_inputs=False)
    kept = set(new.invars)
    out = ClosedJaxpr(new, [])
    if closed in _BACKWARD:
        _BACKWARD.add(out)
    return out, tuple(v in kept for v in inner.invars)


pe.dce_rules[jit_p] = _jit_dce


# ---- the user-facing wrapper ------------------------------------------------------------------


# (defined beside the fast path; the names here are the ones other modules import)
_RefArgument = _jit_fast.RefArgument
_leaf_signature = _jit_fast.leaf_signature


from fjax._lowered import _PLATFORM_BACKENDS, Lowered  # noqa: E402, F401 - (fjax.jit.Lowered, as before)


class _TraceCache(dict):
    """The traces of one function under one set of jit options: signature -> (jaxpr, consts,
    out_tree). Shared by every ``jit(f)`` wrapper of the same ``f`` (as JAX caches by the function)
    and dropped with the function."""

    __slots__ = ("lock", "inflight", "fast", "__weakref__")
    __hash__ = object.__hash__  # identity: kept in a WeakSet

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.inflight: dict = {}
        self.fast: dict = {}  # fast key -> _jit_fast.FastEntry (eager calls; fjax/_jit_fast.py)

    def clear(self) -> None:
        self.fast.clear()
        super().clear()


# function (weakly) -> {jit options: _TraceCache}
_trace_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# every live _TraceCache, for ``fjax.clear_caches``
_live_caches: weakref.WeakSet = weakref.WeakSet()
_trace_caches_lock = threading.Lock()


def _cache_for(fun: Callable, options: tuple) -> _TraceCache:
    try:
        with _trace_caches_lock:
            per_fun = _trace_caches.get(fun)
            if per_fun is None:
                per_fun = _trace_caches[fun] = {}
            cache = per_fun.get(options)
            if cache is None:
                cache = per_fun[options] = _TraceCache()
                _live_caches.add(cache)
            return cache
    except TypeError:  # not weakly referenceable (or unhashable): a cache of this wrapper's own
        cache = _TraceCache()
        _live_caches.add(cache)
        return cache


# set by the backends: each clears its in-memory (and, with ``disk=True``, on-disk) caches
cache_clearers: list[Callable[[bool], None]] = []


def clear_caches(*, disk: bool = False) -> None:
    """Clear every cache fjax keeps: traced signatures of jitted functions, transformed jaxprs and
    compiled programs, as ``jax.clear_caches()``; ``disk=True`` also empties the on-disk kernel
    cache of the backends."""
    for cache in list(_live_caches):
        cache.clear()
    for name, mod in list(sys.modules.items()):
        if name == "fjax" or name.startswith("fjax."):
            for v in list(vars(mod).values()):
                if isinstance(v, functools._lru_cache_wrapper):
                    v.cache_clear()
    for cache in core.context_caches:
        cache.cache_clear()
    for clear in cache_clearers:
        clear(disk)


class JitWrapped:
    """A jitted function: call it like the original; ``.lower(*args)`` shows what it compiles to."""

    def __init__(
        self,
        fun: Callable,
        static_argnums: tuple,
        static_argnames: tuple,
        donate_argnums: tuple,
        retry_refs: bool = True,
    ):
        functools.update_wrapper(self, fun, updated=())
        # the function's attributes, as JAX's (functools.wraps); the jit's own, set below, win
        self.__dict__.update(getattr(fun, "__dict__", {}))
        self.__wrapped__ = fun  # after the copy, as functools.wraps (fun's own __wrapped__ is not ours)
        # refs (fjax.ref) the function closes over, found while tracing; threaded through the call
        self._refs: tuple = ()
        self._ref_jit: Any = None
        self._retry_refs = retry_refs
        self.fun = fun
        self.static_argnums = static_argnums
        self.static_argnames = static_argnames
        self.donate_argnums = donate_argnums
        self.name = getattr(fun, "__name__", type(fun).__name__)
        self._cache = _cache_for(fun, (static_argnums, static_argnames, donate_argnums))
        self._fast = self._cache.fast
        self._plans: dict = {}  # (nargs, keyword names) -> where static and dynamic arguments are

    def _split(self, args: tuple, kwargs: dict) -> tuple:
        nargs = len(args)
        static_idx = tuple(i % nargs for i in self.static_argnums if -nargs <= i < nargs)
        try:
            static_pos = tuple((i, args[i]) for i in static_idx)
            static_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in self.static_argnames))
            hash(static_pos)
            hash(static_kw)
        except TypeError:  # ValueError, as JAX raises, naming the first unhashable value
            _unhashable_static([v for _, v in static_pos + static_kw])
            raise
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static_idx)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return static_idx, static_pos, static_kw, dyn_args, dyn_kwargs

    def _get(self, args: tuple, kwargs: dict) -> tuple:
        if not kwargs and not self.static_argnums:
            # fast path: no static or keyword arguments
            flat, in_tree = tu.tree_flatten(args)
            sig = []
            for x in flat:
                if type(x) is core.Array:
                    v = x._value
                    sig.append((v.shape, v.dtype, x.weak_type))
                else:
                    sig.append(_leaf_signature(x))
            # the named axes in scope are part of the signature (all_gather's shape, axis_size)
            env = batching.axis_env() if len(core._state.stack) > 1 else ()
            prec = config.jax_default_matmul_precision  # _trace_config(), inline on the fast path
            cfg = config.jax_enable_x64 if prec is None and not core._odd_trace_config else _trace_config()
            key = (in_tree, tuple(sig), cfg, env)
            entry = self._cache.get(key)
            if entry is not None:
                return entry, flat
        static_idx, static_pos, static_kw, dyn_args, dyn_kwargs = self._split(args, kwargs)
        flat, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
        sig = tuple(_leaf_signature(x) for x in flat)
        key = (in_tree, sig, static_pos, static_kw, _trace_config(), batching.axis_env())
        entry = self._cache.get(key)
        if entry is None:
            entry = self._trace_once(key, args, kwargs, static_idx, dyn_kwargs, in_tree, sig)
        return entry, flat

    def _trace_once(
        self, key: tuple, args: tuple, kwargs: dict, static_idx: tuple, dyn_kwargs: dict, in_tree: Any, sig: tuple
    ) -> tuple:
        """Trace for a new signature; threads racing for the same one trace it once (one waits
        for the other; a wait over a few seconds, e.g. mutual recursion across threads, traces
        on its own instead of risking a deadlock)."""
        cache = self._cache
        with cache.lock:
            lock = cache.inflight.get(key)
            if lock is None:
                lock = cache.inflight[key] = threading.RLock()
        got = lock.acquire(timeout=5.0)
        try:
            entry = cache.get(key)
            if entry is not None:
                return entry
            if config.jax_no_tracing:
                raise _no_tracing_error(self.fun)
            if config.jax_explain_cache_misses and cache:
                log.warning("TRACING CACHE MISS at jit(%s): %s", self.name, _explain_miss(key, cache))
            entry = self._trace(args, kwargs, static_idx, dyn_kwargs, in_tree, sig)
            if compile_listeners:
                from fjax._devices import default_backend  # noqa: PLC0415

                platform = self._backend or default_backend()
                for listener in list(compile_listeners):
                    listener(platform, self.name)
            if config.jax_log_compiles:
                # JAX's message, on a logger under "jax" so handlers written for JAX see it
                _compile_log.warning("Finished fjax compilation of jit(%s)", self.name)
            cache[key] = entry
            if not kwargs and not self.static_argnums:
                cache[(tu.tree_structure(args), sig, key[4], batching.axis_env())] = entry
            return entry
        finally:
            if got:
                lock.release()
            with cache.lock:
                if cache.inflight.get(key) is lock:
                    del cache.inflight[key]

    def _trace(self, args: tuple, kwargs: dict, static_idx: tuple, dyn_kwargs: dict, in_tree: Any, sig: tuple) -> tuple:
        in_avals = [ShapedArray(s, d, w) for s, d, w in sig]
        out_tree_box: list = []
        fun = self.fun
        nargs = len(args)

        def flat_fun(*leaves: Any) -> list:
            dargs, dkw = tu.tree_unflatten(in_tree, list(leaves))
            it = iter(dargs)
            full = [args[i] if i in static_idx else next(it) for i in range(nargs)]
            kw = dict(kwargs)
            kw.update(dkw)
            out = fun(*full, **kw)
            o_flat, o_tree = tu.tree_flatten(out)
            out_tree_box.append(o_tree)
            for o in o_flat:
                _leaf_signature(o) if not isinstance(o, core.Tracer) else None
            return o_flat

        closed, consts = trace_flat(flat_fun, in_avals, self.name)
        return closed, consts, out_tree_box[0]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if config.jax_disable_jit:
            return self.fun(*args, **kwargs)
        st = _trace_state
        if st.dynamic[-1] is not _eval_main or len(st.stack) != 1 or self._refs:
            return self._call(args, kwargs, None, None)
        # an eager call: look its signature up in the fast keys (fjax/_jit_fast.py)
        prec = config.jax_default_matmul_precision
        cfg = config.jax_enable_x64 if prec is None and not core._odd_trace_config else _trace_config()
        if kwargs or self.static_argnums:
            got = _jit_fast.general_key(self, args, kwargs, cfg)
            if got is None:
                return self._call(args, kwargs, None, None)
            key, leaves, vals, convert = got
        else:
            key = [cfg, None]
            vals = []
            convert = False
            for x in args:
                if type(x) is not Array:
                    vals.clear()
                    del key[2:]
                    leaves = None  # (collected when needed: a miss, the placement hook)
                    if not _jit_fast.tree_key(args, key, vals):  # leaves other than plain arrays or custom nodes
                        leaves = []
                        key[1] = _flatten(args, leaves.append)
                        vals.clear()
                        del key[2:]
                        convert = _jit_fast.leaf_key(leaves, key, vals)
                        if convert is None:
                            return self._call(args, kwargs, None, None)
                    break
                v = x._value
                key.append((v.shape, v.dtype, x.weak_type))
                vals.append(v)
            else:
                leaves = args
                key[1] = _jit_fast.tuple_spec(len(args))
            key = tuple(key)
        try:
            fe = self._fast.get(key)
        except TypeError:  # an unhashable static argument: the general path raises JAX's error
            return self._call(args, kwargs, None, None)
        if fe is None:
            return self._call(args, kwargs, key, _jit_fast.leaves_of(args) if leaves is None else leaves)
        closed = fe.closed
        hook = core.placement_hook
        if hook is not None:
            if leaves is None:
                leaves = _jit_fast.leaves_of(args)
            # inputs on a GPU or committed to a device, or a default device that is not the host's:
            # run where they live (fjax._placement)
            ins = fe.consts + list(leaves) if fe.consts else list(leaves)
            outs = hook(jit_p, ins, dict(jaxpr=closed, name=self.name))
            if outs is not core.NOT_HANDLED:
                return tu.tree_unflatten(fe.out_tree, outs)
        if convert:  # Python scalars, numpy values, Array subclasses
            for i, v in enumerate(vals):
                if v is None:
                    vals[i] = core.to_array(leaves[i], self.name)._value
        if fe.const_vals:
            vals = fe.const_vals + vals
        rf = fe.run_for
        if (
            rf is not None
            and _jit_impl is _jit_impl_plain
            and not _debug_nans.active
            and compile_hook is rf[0]
            and lowering_expander is rf[1]
            and rf[2][0] == rf[3]
            and rf[4][0] == rf[5]
        ):
            # (what _jit_impl would run, settled for this program: _settle)
            if cpu_precision_check is not None:
                cpu_precision_check(closed)
            outs = rf[6](*vals)
        else:
            outs = _jit_impl(*vals, jaxpr=closed, name=self.name)
            _settle(fe)
        if self.donate_argnums:
            _donate(args, self.donate_argnums, closed)
        if fe.single:  # one array out (wrap_outputs inline)
            (o,) = outs
            dt, weak, f0, shape = fe.out_meta[0]
            if f0 or type(o) is not np.ndarray or (o.dtype is not dt and o.dtype != dt):
                return _jit_fast.wrap_outputs(outs, fe.out_meta)[0]
            o.setflags(write=False)
            a = _new_array(Array)
            a._value = o
            a.weak_type = weak
            return a
        return fe.out_tree._unflatten_unchecked(_jit_fast.wrap_outputs(outs, fe.out_meta))

    def _call(self, args: tuple, kwargs: dict, fast_key: Any, leaves: Any) -> Any:
        """The general path: traces a new signature, runs under transforms (binding ``jit_p``),
        threads refs; with ``fast_key``, an eager call whose signature the fast path missed,
        remembered there (``leaves``: the fast path's leaves) when it can run it."""
        if self._refs:
            from fjax import ref  # noqa: PLC0415

            return ref.call_with_refs(self, args, kwargs)
        try:
            entry, flat = self._get(args, kwargs)
        except NotImplementedError as e:
            r = getattr(e, "fjax_ref", None)
            if r is None or not self._retry_refs:
                raise
            self._refs = (r,)  # the function uses a ref created outside it: thread it (fjax.ref)
            return self(*args, **kwargs)
        except _RefArgument:
            from fjax import ref  # noqa: PLC0415

            if not self._retry_refs:
                raise NotImplementedError("fjax.jit: a Ref passed to a jitted function under another one") from None
            return ref.call_with_ref_args(self, args, kwargs)  # refs passed as arguments
        closed, consts, out_tree = entry
        if fast_key is not None:
            fe = _jit_fast.make_entry(entry, flat, list(leaves))
            if fe is not None:
                fast = self._fast
                if len(fast) >= _jit_fast.MAX_FAST_KEYS:
                    fast.clear()
                fast[fast_key] = fe
        ins = consts + flat if consts else flat
        st = core._state
        if st.dynamic[-1] is core._eval_main and (
            len(st.stack) == 1 or batching.params_axis_main({"jaxpr": closed}) is None
        ):
            # eager fast path: skip bind and the abstract re-check (the signature already matched)
            vals: list | None = []
            for x in ins:
                if type(x) is core.Array:
                    vals.append(x._value)
                elif isinstance(x, core.Tracer):  # (a tracer of an outer transform, e.g. a closure)
                    vals = None
                    break
                else:
                    vals.append(None)  # (an Array subclass or a Python/numpy value: converted below)
            if vals is not None:
                if core.placement_hook is not None:
                    # inputs on a GPU or committed to a device, or a default device that is not the
                    # host's: run where they live (fjax._placement)
                    outs = core.placement_hook(jit_p, ins, dict(jaxpr=closed, name=self.name))
                    if outs is not core.NOT_HANDLED:
                        return tu.tree_unflatten(out_tree, outs)
                for i, v in enumerate(vals):
                    if v is None:
                        vals[i] = core.to_array(ins[i], self.name)._value
                outs = _jit_impl(*vals, jaxpr=closed, name=self.name)
                res = []
                for o, a in zip(outs, closed.out_avals):
                    if type(o) is not np.ndarray or o.dtype != a.dtype:
                        o = np.asarray(o, dtype=a.dtype)
                    if o.dtype.kind == "V" and o.dtype == _FLOAT0:  # a vjp's cotangent of an integer input
                        res.append(np.zeros(a.shape, a.dtype))  # a numpy array, as JAX returns
                        continue
                    res.append(core.Array(o, a.weak_type))
                if self.donate_argnums:
                    _donate(args, self.donate_argnums, closed, 4)
                return tu.tree_unflatten(out_tree, res)
        if config.jax_no_tracing:  # JAX retraces a jitted function called under a transform
            raise _no_tracing_error(self.fun)
        outs = core.bind(jit_p, ins, dict(jaxpr=closed, name=self.name))
        outs = [np.zeros(o.shape, o.dtype) if type(o) is core.Array and o.dtype == _FLOAT0 else o for o in outs]
        return tu.tree_unflatten(out_tree, outs)

    @staticmethod
    def _abstract_keys(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """A ShapeDtypeStruct of the key dtype given to lower/trace/eval_shape stands for a key array."""
        from fjax.api import _key_shapes_in  # noqa: PLC0415

        return _key_shapes_in(args), _key_shapes_in(kwargs)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        from fjax import _aot  # noqa: PLC0415

        args, kwargs = self._abstract_keys(args, kwargs)
        (closed, consts, out_tree), _ = self._get(args, kwargs)

        def sig() -> Any:
            static_idx = self._split(args, kwargs)[0]
            return _aot.signature_of(
                self.fun, args, kwargs, static_idx, self.static_argnames, self.donate_argnums, closed, out_tree
            )

        return Lowered(closed, consts, self.name, sig=sig)

    def trace(self, *args: Any, **kwargs: Any) -> Lowered:
        return self.lower(*args, **kwargs)

    def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
        from fjax.api import ShapeDtypeStruct, shapes_of_keys  # noqa: PLC0415

        args, kwargs = self._abstract_keys(args, kwargs)
        (closed, _, out_tree), _ = self._get(args, kwargs)
        outs = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in closed.out_avals]
        return shapes_of_keys(tu.tree_unflatten(out_tree, outs))

    def clear_cache(self) -> None:
        self._cache.clear()

    def _cache_size(self) -> int:
        return len(self._cache)

    # jit(f, backend="cpu"): the platform compile_listeners are told (fjax picks where a program runs
    # from its inputs' placement and the default device)
    _backend: str | None = None

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        # a bound method, as JAX's PjitFunction gives (cheaper to make and call than a partial)
        if obj is None:
            return self
        return types.MethodType(self, obj)

    def __repr__(self) -> str:
        # JAX's wording: chex's is_traceable (assert_max_traces' ordering check) looks for it
        return f"<PjitFunction of {self.fun!r}>"

    @property
    def __signature__(self) -> inspect.Signature | None:
        """The wrapped function's signature, as JAX's jitted functions report it: also for
        ``inspect.signature(f, follow_wrapped=False)`` (chex's fake_pmap asks so), which would
        otherwise take the object for a builtin, having ``__get__``."""
        try:
            return inspect.signature(self.fun)
        except (TypeError, ValueError):
            return None


# str(type(jit(f))) names PjitFunction, as JAX's (jaxlib's PjitFunction): chex's is_traceable, behind
# assert_max_traces' ordering check, matches that text; the alias keeps the qualified name importable
JitWrapped.__qualname__ = "PjitFunction"
PjitFunction = JitWrapped


# the trace-time config a jit cache key holds, as the calling thread sees it (the context managers
# set options per thread), as JAX's cache keys hold its trace context
_trace_config = core.trace_context
_trace_state = core._state  # (thread-local: each thread sees its own stacks)
_new_array = Array.__new__


def _config_parts(c: Any) -> tuple:
    """(x64, matmul precision, promotion, allow f16 reductions, rank promotion) of a
    ``_trace_config()`` value."""
    return c if isinstance(c, tuple) else (c, None, "standard", True, "allow")


def _explain_miss(key: tuple, cache: dict) -> str:
    in_tree, sig, static_pos, static_kw = key[:4]
    for k in cache:
        if len(k) != len(key) or k[0] != in_tree:
            continue
        if k[1] != sig:
            diffs = [
                f"arg {i}: {core.ShapedArray(*a).str_short()} vs cached {core.ShapedArray(*b).str_short()}"
                for i, (a, b) in enumerate(zip(sig, k[1]))
                if a != b
            ]
            return "different argument types: " + "; ".join(diffs)
        if k[2] != static_pos or k[3] != static_kw:
            return f"different static arguments: {static_pos or static_kw} vs cached {k[2] or k[3]}"
        if k[4] != key[4]:
            (x64, prec, mode, f16, rank) = _config_parts(key[4])
            (old_x64, old_prec, old_mode, old_f16, old_rank) = _config_parts(k[4])
            if x64 != old_x64:
                return f"different jax_enable_x64: {x64} vs cached {old_x64}"
            if prec != old_prec:
                return f"different jax_default_matmul_precision: {prec!r} vs cached {old_prec!r}"
            if mode != old_mode:
                return f"different jax_numpy_dtype_promotion: {mode!r} vs cached {old_mode!r}"
            if rank != old_rank:
                return f"different jax_numpy_rank_promotion: {rank!r} vs cached {old_rank!r}"
            return f"different jax_allow_f16_reductions: {f16} vs cached {old_f16}"
    return "different argument tree structure"


def jit(
    fun: Callable | None = None,
    *,
    in_shardings: Any = None,
    out_shardings: Any = None,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    donate_argnums: int | Sequence[int] | None = None,
    donate_argnames: str | Sequence[str] | None = None,
    keep_unused: bool = False,
    device: Any = None,
    backend: str | None = None,
    inline: bool = False,
    compiler_options: dict[str, Any] | None = None,
) -> Any:
    """Compile ``fun``: trace once per signature (pytree structure, shapes, dtypes, weak types and
    static argument values), then run the compiled function on later calls. ``donate_argnames``
    adds the positions of those parameters to ``donate_argnums``. ``keep_unused``, ``inline``,
    ``device`` and ``compiler_options`` (XLA's options) change nothing in fjax's compiler."""
    kwargs = dict(in_shardings=in_shardings, out_shardings=out_shardings, backend=backend)
    if fun is None:
        return lambda f: jit(
            f,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            donate_argnums=donate_argnums,
            donate_argnames=donate_argnames,
            **kwargs,
        )
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    if donate_argnames is not None:
        donate_argnums = _donate_names(fun, donate_argnames, donate_argnums)
    sn, sa, dn = _resolve_argnums(fun, static_argnums, static_argnames, donate_argnums)
    in_sh, out_sh = kwargs.get("in_shardings"), kwargs.get("out_shardings")
    if in_sh is not None or out_sh is not None:
        from fjax.sharding import jit_with_shardings  # noqa: PLC0415

        return jit_with_shardings(JitWrapped(fun, sn, sa, dn), in_sh, out_sh)
    wrapped = JitWrapped(fun, sn, sa, dn)
    if kwargs.get("backend") is not None:
        wrapped._backend = str(kwargs["backend"])
    return wrapped


def _donate_names(fun: Callable, names: Any, donate_argnums: Any) -> tuple:
    """``donate_argnums`` with the positions of the parameters named in ``donate_argnames`` (JAX's
    ValueError for a name the function does not take)."""
    names = (names,) if isinstance(names, str) else tuple(names)
    nums = _index_tuple(donate_argnums)
    try:
        params = inspect.signature(fun).parameters
    except (TypeError, ValueError):
        return nums
    kinds = [p.kind for p in params.values()]
    if inspect.Parameter.VAR_KEYWORD not in kinds:
        named = {k for k, p in params.items() if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
        if bad := set(names) - named:
            raise ValueError(
                f"Jitted function has invalid argnames {bad} in donate_argnames. Function does not take these args."
            )
    pk = inspect.Parameter.POSITIONAL_OR_KEYWORD
    pos = tuple(i for i, (k, p) in enumerate(params.items()) if p.kind == pk and k in names)
    return tuple(dict.fromkeys(nums + pos))


def _index_tuple(x: Any) -> tuple:
    """An int or an iterable of ints as a tuple (as JAX's ``_ensure_index_tuple``)."""
    if x is None:
        return ()
    try:
        return (operator.index(x),)
    except TypeError:
        return tuple(map(operator.index, x))


def _resolve_argnums(fun: Callable, static_argnums: Any, static_argnames: Any, donate_argnums: Any) -> tuple:
    """Static argument numbers and names (each inferred from the other through the signature when
    only one is given) and donated numbers, validated against the signature as JAX does: an index
    past the positional parameters or a name the function does not take raises ValueError when
    ``jit`` is called (functions without a signature are not checked)."""
    sn = _index_tuple(static_argnums)
    sa = (
        ()
        if static_argnames is None
        else ((static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames))
    )
    dn = _index_tuple(donate_argnums)
    try:
        params = inspect.signature(fun).parameters
    except (TypeError, ValueError):
        return sn, sa, dn
    pk = inspect.Parameter.POSITIONAL_OR_KEYWORD
    if static_argnames is not None and static_argnums is None:
        # static_argnames also make the matching positional parameters static
        sn = tuple(i for i, (k, p) in enumerate(params.items()) if p.kind == pk and k in sa)
    elif static_argnums is not None and static_argnames is None:
        sa = tuple(k for i, (k, p) in enumerate(params.items()) if p.kind == pk and i in sn)
    kinds = [p.kind for p in params.values()]
    if inspect.Parameter.VAR_POSITIONAL not in kinds:
        n_pos = sum(k in (inspect.Parameter.POSITIONAL_ONLY, pk) for k in kinds)
        for what, nums in (("static_argnums", sn), ("donate_argnums", dn)):
            if nums and (-min(nums) > n_pos or max(nums) >= n_pos):
                raise ValueError(f"Jitted function has {what}={nums}, but only accepts {n_pos} positional arguments.")
    pos_only = {k for k, p in params.items() if p.kind == inspect.Parameter.POSITIONAL_ONLY}
    if bad := pos_only & set(sa):
        raise ValueError(f"Jitted function has invalid argnames {bad} in static_argnames. These are positional-only")
    if inspect.Parameter.VAR_KEYWORD not in kinds:
        named = {k for k, p in params.items() if p.kind in (pk, inspect.Parameter.KEYWORD_ONLY)}
        if bad := set(sa) - named:
            raise ValueError(
                f"Jitted function has invalid argnames {bad} in static_argnames. Function does not take these args."
            )
    donated_names = {k for i, (k, p) in enumerate(params.items()) if p.kind == pk and i in dn}
    if both := donated_names & set(sa):
        raise ValueError(
            "static_argnames and donate_argnames cannot intersect. Argument names "
            f"{both} appear in both static_argnames and donate_argnames"
        )
    return sn, sa, dn


@contextlib.contextmanager
def disable_jit(disable: bool = True) -> Iterator[None]:
    """Run jitted functions as plain Python inside the block (``with fjax.disable_jit(): ...``),
    so prints and breakpoints see concrete values, as ``jax.disable_jit``; in the calling thread
    only, as JAX (``config.update("jax_disable_jit", True)`` sets it for every thread)."""
    with config.override("jax_disable_jit", disable):
        yield


def _unhashable_static(values: list) -> None:
    """Raise JAX 0.10.2's ValueError for the first static argument value that cannot be hashed."""
    for v in values:
        try:
            hash(v)
        except TypeError as e:
            raise ValueError(
                "Non-hashable static arguments are not supported. An error occurred while trying to hash an "
                f"object of type {type(v)}, {v}. The error was:\nTypeError: {e}\n"
            ) from None
