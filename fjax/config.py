"""Configuration, read with ``fjax.config.NAME`` and changed with ``fjax.config.update``.

Names follow JAX (``jax_enable_x64``, ``jax_disable_jit``, ``jax_explain_cache_misses``);
fjax's own options start with ``fjax_``.

As in JAX, ``config.update`` sets the global value every thread sees, while the context managers
(``with fjax.enable_x64(True):``, ``fjax.default_matmul_precision``, ``fjax.disable_jit``, ...)
go through ``config.override``: the value holds in the calling thread only, for the block, and
other threads keep seeing the global one. ``config.NAME`` gives the calling thread's effective
value; ``config.read(NAME)`` too, but as in JAX it refuses the ``jax_*`` options that have a context
manager (all but ``jax_enable_x64``), whose values are read as attributes. As in JAX,
``jax_numpy_dtype_promotion`` reads as a ``NumpyDtypePromotion`` (a ``str`` enum).

Reads are on every eager op and jit call, so the common case costs what a plain attribute costs:
global values live in the instance ``__dict__``. Only while some thread has an override of an
option open is a data descriptor for that option installed on the class (it takes precedence over
the instance ``__dict__``); it looks up the calling thread's override stack and falls back to the
global value. The last override of the option to close removes the descriptor again.
"""

from __future__ import annotations

import contextlib
import enum
import itertools
import os
import sys
import threading
from typing import Any, Callable, Iterator


class _Local(threading.local):
    def __init__(self) -> None:  # runs once in each thread that reads it
        # the thread's override stacks: ``stacks[name]`` is a non-empty list, innermost last
        self.stacks: dict[str, list] = {}


_local = _Local()


class _ThreadValue:
    """Class attribute for option ``name`` while some thread holds an override of it: the calling
    thread's innermost override, else the global value."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        st = _local.stacks.get(self.name)
        return st[-1] if st else obj.__dict__[self.name]

    def __set__(self, obj: Any, value: Any) -> None:  # a data descriptor, so it shadows __dict__
        obj.update(self.name, value)


def _env_bool(name: str, default: bool) -> bool:
    val = os.environ.get(name.upper())
    if val is None:
        return default
    return val.strip().lower() in ("1", "true", "yes", "on")


class NumpyDtypePromotion(enum.StrEnum):
    """The value of ``jax_numpy_dtype_promotion`` (equal to its string, as JAX's enum)."""

    STANDARD = "standard"
    STRICT = "strict"


def _promotion(value: Any) -> NumpyDtypePromotion:
    if value is None:
        raise TypeError(f"new enum value must be an instance of {NumpyDtypePromotion}, got None of type {type(None)}.")
    return NumpyDtypePromotion(value)  # ValueError "'x' is not a valid NumpyDtypePromotion", as JAX


def _rank_promotion(value: Any) -> str:
    if value not in ("allow", "warn", "raise"):
        raise ValueError(f"new enum value must be in ['allow', 'warn', 'raise'], got {value} of type {type(value)}.")
    return value


class LegacyPrngKeyState(enum.StrEnum):
    """The value of ``jax_legacy_prng_key`` (raw uint32 keys in fjax.random: allow, warn, error)."""

    ALLOW = "allow"
    WARN = "warn"
    ERROR = "error"


def _legacy_prng_key(value: Any) -> LegacyPrngKeyState:
    if value is None:
        raise TypeError(f"new enum value must be an instance of {LegacyPrngKeyState}, got None of type {type(None)}.")
    return LegacyPrngKeyState(value)  # ValueError "'x' is not a valid LegacyPrngKeyState", as JAX


class ExplicitX64Mode(enum.IntEnum):
    """``jax_explicit_x64_dtypes``: what an explicitly requested 64-bit dtype does with x64 off."""

    WARN = 1
    ERROR = 2
    ALLOW = 3

    @classmethod
    def _missing_(cls, value: object) -> ExplicitX64Mode | None:
        return {"warn": cls.WARN, "error": cls.ERROR, "allow": cls.ALLOW}.get(value)  # type: ignore[arg-type]


def _explicit_x64(value: Any) -> ExplicitX64Mode:
    mode = ExplicitX64Mode(value)  # ValueError "'x' is not a valid ExplicitX64Mode", as JAX
    if mode is ExplicitX64Mode.ALLOW:
        raise NotImplementedError(
            "jax_explicit_x64_dtypes='allow' (64-bit arrays with jax_enable_x64 off): fjax keeps 64-bit "
            "values only with jax_enable_x64 on"
        )
    return mode


# options whose values are converted on the way in (strings to enums, as JAX's enum_class_state)
_COERCE: dict[str, Callable[[Any], Any]] = {
    "jax_numpy_dtype_promotion": _promotion,
    "jax_numpy_rank_promotion": _rank_promotion,
    "jax_legacy_prng_key": _legacy_prng_key,
    "jax_explicit_x64_dtypes": _explicit_x64,
}


class Config:
    """Holds fjax's options; ``update(name, value)`` changes one and rejects unknown names."""

    _defaults: dict[str, Any] = {
        "jax_enable_x64": False,
        "jax_disable_jit": False,
        "jax_explain_cache_misses": False,
        # raise FloatingPointError at the primitive whose output holds a NaN / an inf (fjax/_debug_nans.py)
        "jax_debug_nans": False,
        "jax_debug_infs": False,
        # CPU devices per process (-1: one); fixed at first use of devices (fjax._devices)
        "jax_num_cpu_devices": -1,
        # platforms to use, the first present one the default ("cpu", "cuda,cpu", ...; the
        # JAX_PLATFORMS environment variable); None/"": a GPU when cupy finds one, else the CPU
        "jax_platforms": None,
        # the device of computations on uncommitted arrays (a Device, a platform name, or None: the
        # default backend's first device); ``fjax.default_device(d)`` sets it for a block
        "jax_default_device": None,
        # collectives across MPI processes first compare operand shapes across ranks (8 bytes each)
        "fjax_mpi_check_shapes": True,
        # psum/pmean of a pytree across processes: leaves are fused into buckets of this many MB,
        # one MPI Allreduce each (0: one Allreduce per leaf); 25 MB is PyTorch DDP's default
        "fjax_allreduce_bucket_mb": 25.0,
        # seconds a process may wait in one collective across processes before the job is aborted
        # with an error naming the collective (0: no limit); 30 minutes, torch.distributed's default
        "fjax_mpi_timeout": 1800.0,
        # log a line (on the "jax._src.dispatch" logger, as JAX) each time jit traces anew
        "jax_log_compiles": False,
        # "standard" (JAX's promotion lattice) or "strict" (no implicit promotion between different
        # dtypes: jax.dtypes.TypePromotionError); fjax/dtypes.py
        "jax_numpy_dtype_promotion": "standard",
        # implicit rank promotion in jnp's elementwise functions (operands of two non-scalar ranks):
        # "allow", "warn" (a UserWarning) or "raise" (ValueError), as JAX; fjax/numpy/_util.py
        "jax_numpy_rank_promotion": "allow",
        # the precision of dot_general / conv_general_dilated called with precision=None, filled in
        # when they are traced (None, 'default', 'high', 'highest', 'bfloat16', 'tensorfloat32',
        # 'float32' or a DotAlgorithmPreset name; fjax/lax/_dot_algorithms.py checks values set);
        # jit's trace cache keys on it. The CPU computes every one in full precision; a GPU
        # backend reads the equations' param
        "jax_default_matmul_precision": None,
        # accepted for JAX code (fjax/_api_top.py says what each does in fjax): fjax type-checks
        # every jaxpr it builds anyway; it does not check tracer leaks or key reuse (enabling them
        # warns); only the PRNG and threefry mode fjax implements; only transfers allowed
        "jax_enable_checks": False,
        "jax_check_tracer_leaks": False,
        "jax_debug_key_reuse": False,
        "jax_default_prng_impl": "threefry2x32",
        "jax_threefry_partitionable": True,
        "jax_transfer_guard": None,
        # raw uint32 keys passed to fjax.random functions: "allow", "warn" or "error"; custom PRNG:
        # PRNGKey and split/fold_in of raw keys give typed keys (fjax/_flag_states.py)
        "jax_legacy_prng_key": "allow",
        "jax_explicit_x64_dtypes": ExplicitX64Mode.WARN,
        "jax_enable_custom_prng": False,
        # jax.thread_guard: multi-process operations only from the thread inside the block
        "jax_thread_guard": False,
        "jax_transfer_guard_host_to_device": None,
        "jax_transfer_guard_device_to_host": None,
        "jax_transfer_guard_device_to_device": None,
        # jax.no_tracing: jit raises RuntimeError instead of tracing (a signature not traced before,
        # or a call with tracers); jax.no_execution: running a jitted function or an eager op raises
        # (fjax/jit.py)
        "jax_no_tracing": False,
        "jax_no_execution": False,
        # False: reduce_sum of float16/bfloat16 along an axis longer than 1 raises ValueError (jnp.sum
        # computes in float32 and is unaffected); jit's trace cache keys on it (fjax/jit.py)
        "jax_allow_f16_reductions": True,
        "fjax_disk_cache": True,
        # "numba": jit lowers jaxprs to fused numba loops (fjax/backends/lowering.py);
        # "interpret": jit evaluates the traced jaxpr primitive by primitive (numpy)
        "fjax_jit_backend": "numba",
        # tiered compilation: jit evaluates a program it has not compiled yet primitive by primitive
        # (as "interpret") while a background thread compiles it; later calls run the compiled code.
        # "auto": only programs cheap to interpret that this machine has not compiled before
        # (fjax/backends/tiering.py); True: every program; False: never
        "fjax_tiered_compile": "auto",
        # raise instead of falling back to eager evaluation when the numba lowering fails
        # (the test suite turns this on so lowering bugs surface)
        "fjax_lowering_strict": False,
        # compile scan/while/cond into loops of one numba function (False: the loop runs on the
        # host, calling the compiled body each step)
        "fjax_compile_loops": True,
        "fjax_cache_dir": os.path.join(os.path.expanduser("~"), ".cache", "fjax"),
        # bounds of the kernel cache: megabytes on disk (least recently used kernels are evicted),
        # kernels loaded in memory
        "fjax_cache_max_mb": 1024,
        "fjax_kernel_cache_entries": 4096,
    }

    def __init__(self) -> None:
        for name, default in self._defaults.items():
            if isinstance(default, bool):
                self.__dict__[name] = _env_bool(name, default)
            else:
                self.__dict__[name] = os.environ.get(name.upper(), default)
            if name in _COERCE:
                self.__dict__[name] = _COERCE[name](self.__dict__[name])
        # fn(name, value), before any change, global or in one thread: validate (may raise)
        self._validators: list[Callable[[str, Any], None]] = []
        # fn(name, value), before a global change (after the validators): may raise too, and
        # refresh module state derived from the global value
        self._listeners: list[Callable[[str, Any], None]] = []
        # fn(name), after an override of ``name`` opened or closed in any thread (under the lock):
        # refresh module state that must know whether any thread may hold another value
        self._override_listeners: list[Callable[[str], None]] = []
        # overrides open per option, all threads together
        self._n_open: dict[str, int] = {}
        self._lock = threading.RLock()
        self._absl_parsed = False

    def _check(self, name: str, value: Any, what: str) -> Any:
        """``value`` validated and converted for option ``name``."""
        if name not in self._defaults:
            known = ", ".join(sorted(self._defaults))
            raise AttributeError(f"fjax.config.{what}: unknown option {name!r}; known options: {known}")
        coerce = _COERCE.get(name)
        if coerce is not None:
            value = coerce(value)
        for fn in self._validators:
            fn(name, value)
        return value

    def update(self, name: str, value: Any) -> None:
        """Set the global value of option ``name`` (e.g. ``update("jax_enable_x64", True)``), seen
        by every thread outside an override of it (an override open in the calling thread stays in
        force until its block ends, as in JAX)."""
        value = self._check(name, value, "update")
        with self._lock:
            for fn in self._listeners:  # listeners may raise before the value is set
                fn(name, value)
            self.__dict__[name] = value

    def read(self, name: str) -> Any:
        """The value of option ``name`` in the calling thread. As JAX, refuses the ``jax_*`` options
        that have a context manager (all but ``jax_enable_x64``): read ``config.NAME`` instead."""
        if name.startswith("jax_") and name != "jax_enable_x64" and name in self._defaults:
            raise AttributeError(
                "For flags with a corresponding contextmanager, read their value "
                f"via e.g. `config.{name}` rather than `config.FLAGS.{name}`."
            )
        return getattr(self, name)

    def global_value(self, name: str) -> Any:
        """The global value of option ``name`` (what threads outside an override of it see)."""
        return self.__dict__[name]

    def overridden(self, name: str) -> bool:
        """Whether some thread (any) has an override of option ``name`` open."""
        return self._n_open.get(name, 0) > 0

    @contextlib.contextmanager
    def override(self, name: str, value: Any) -> Iterator[None]:
        """Context manager: option ``name`` is ``value`` in the calling thread for the block (as
        JAX's configuration context managers); other threads, and threads started inside the
        block, see the global value. Blocks nest, and the previous value comes back however the
        block ends."""
        value = self._check(name, value, "override")
        stacks = _local.stacks
        with self._lock:
            n = self._n_open.get(name, 0)
            if n == 0:
                setattr(type(self), name, _ThreadValue(name))
            self._n_open[name] = n + 1
            stacks.setdefault(name, []).append(value)
            for fn in self._override_listeners:
                fn(name)
        try:
            yield
        finally:
            with self._lock:
                st = stacks[name]
                st.pop()
                if not st:
                    del stacks[name]
                n = self._n_open[name] - 1
                self._n_open[name] = n
                if n == 0:
                    delattr(type(self), name)
                for fn in self._override_listeners:
                    fn(name)

    def parse_flags_with_absl(self) -> None:
        """Set options from the command line's ``--jax_NAME=VALUE`` / ``--jax_NAME`` /
        ``--nojax_NAME`` arguments (before a ``--``), as JAX's does with absl (test suites call
        it at import); other arguments are left alone. Parsed once per process."""
        if self._absl_parsed:
            return
        object.__setattr__(self, "_absl_parsed", True)
        for arg in itertools.takewhile(lambda a: a != "--", sys.argv[1:]):
            if not (arg.startswith("--jax") or arg.startswith("--nojax")):
                continue
            name, eq, raw = arg[2:].partition("=")
            negated = name.startswith("no") and not eq
            if negated:
                name = name[2:]
            if name not in self._defaults:
                continue
            default = self._defaults[name]
            value: Any = raw
            if isinstance(default, bool):
                value = (not negated) if not eq else raw.strip().lower() in ("1", "true", "yes", "on")
            elif isinstance(default, int) and eq:
                value = int(raw)
            elif isinstance(default, float) and eq:
                value = float(raw)
            self.update(name, value)

    config_with_absl = parse_flags_with_absl

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            self.update(name, value)


config = Config()
