"""fjax: composable function transformations (jvp, grad, vmap, jit) for numpy-style programs.

Use it as you would JAX: ``import fjax as jax; import fjax.numpy as jnp; from fjax import lax``.
"""

from fjax.config import config
from fjax import dtypes, tree_util
from fjax.core import (
    Array,
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from fjax import lax
from fjax.api import (
    ShapeDtypeStruct,
    eval_shape,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    make_jaxpr,
    value_and_grad,
    vjp,
    vmap,
)
from fjax.jit import clear_caches, disable_jit, jit
from fjax._debug_nans import debug_infs, debug_nans


def _on_config_change(name: str, value: object) -> None:
    if name == "fjax_jit_backend":
        if value not in ("interpret", "numba"):
            raise ValueError(f"fjax_jit_backend must be 'interpret' or 'numba', got {value!r}")
        import importlib

        from fjax.backends import dispatch

        # the top-level package wires jit to the backend, so neither imports the other's internals
        # (``fjax.jit`` names the function; the module is reached through importlib)
        jit_mod = importlib.import_module("fjax.jit")
        jit_mod.compile_hook = dispatch.compile_jaxpr if value == "numba" else None
        if dispatch.clear_cache not in jit_mod.cache_clearers:
            jit_mod.cache_clearers.append(dispatch.clear_cache)
    elif name == "jax_numpy_dtype_promotion" and value != config.global_value(name):
        # against the global value: the caller may sit in a promotion block of its own
        _clear_trace_caches()


def _clear_trace_caches() -> None:
    """Drop traced jaxprs (jit signatures, fjax's lru caches of traced functions), so functions
    traced under one promotion mode are retraced under the other, as JAX's cache keys include it;
    compiled kernels stay cached."""
    import functools
    import importlib
    import sys

    jit_mod = importlib.import_module("fjax.jit")
    for cache in list(jit_mod._live_caches):
        cache.clear()
    for mod_name, mod in list(sys.modules.items()):
        if mod_name.startswith("fjax.") and not mod_name.startswith("fjax.backends"):
            for v in list(vars(mod).values()):
                if isinstance(v, functools._lru_cache_wrapper):
                    v.cache_clear()
    for c in sys.modules["fjax.core"].context_caches:
        c.cache_clear()


config._listeners.append(_on_config_change)
if config.fjax_jit_backend == "numba":
    _on_config_change("fjax_jit_backend", "numba")
from fjax.custom_derivatives import custom_jvp, custom_vjp
from fjax.checkpoint import checkpoint, checkpoint_policies, remat

from fjax import version  # noqa: E402
from fjax.version import __version__  # noqa: E402

__all__ = [
    "Array",
    "block_until_ready",
    "checkpoint",
    "checkpoint_policies",
    "clear_caches",
    "custom_jvp",
    "custom_vjp",
    "disable_jit",
    "remat",
    "ConcretizationTypeError",
    "ShapeDtypeStruct",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
    "config",
    "debug",
    "debug_infs",
    "debug_nans",
    "default_backend",
    "device_count",
    "device_get",
    "device_put",
    "devices",
    "dtypes",
    "ensure_compile_time_eval",
    "eval_shape",
    "grad",
    "hessian",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "lax",
    "linearize",
    "local_device_count",
    "local_devices",
    "make_array_from_process_local_data",
    "make_jaxpr",
    "make_mesh",
    "nn",
    "numpy",
    "optim",
    "process_count",
    "process_index",
    "pmap",
    "pure_callback",
    "random",
    "shard_map",
    "sharding",
    "distributed",
    "tree_util",
    "value_and_grad",
    "vjp",
    "vmap",
]

# operators and methods of Array and Tracer come from fjax.numpy
from fjax import numpy  # noqa: E402
from fjax.numpy import _key_shape  # noqa: E402

_key_shape.install(vars(lax), _key_shape.LAX_FUNCTIONS)  # lax's shape functions take key arrays too
from fjax import nn, optim, random  # noqa: E402
from fjax._devices import (  # noqa: E402
    block_until_ready,
    default_backend,
    device_count,
    device_get,
    device_put,
    devices,
    local_device_count,
    local_devices,
    process_count,
    process_index,
)
from fjax import _placement  # noqa: E402  (GPU arrays, committed placement, dispatch by device)
from fjax._callback import pure_callback  # noqa: E402
from fjax._compile_time import ensure_compile_time_eval  # noqa: E402
from fjax import debug  # noqa: E402
from fjax import distributed, sharding  # noqa: E402
from fjax._pmap import pmap  # noqa: E402
from fjax._shard_map import shard_map  # noqa: E402
from fjax.sharding import make_mesh  # noqa: E402
from fjax._multihost import make_array_from_process_local_data  # noqa: E402


def __getattr__(name: str):
    # fjax.scipy and fjax.image load scipy.signal/stats (~0.5 s): imported on first use, as attributes;
    # so is fjax.export (jax.export), which few programs use
    if name in ("scipy", "image", "export", "api_util"):
        import importlib

        return importlib.import_module(f"fjax.{name}")
    raise AttributeError(f"module 'fjax' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "scipy", "image", "export", "api_util"])


from fjax import tree, typing  # noqa: E402
from fjax._linear_call import fwd_and_bwd  # noqa: E402
from fjax._api_more import (  # noqa: E402
    closure_convert,
    custom_gradient,
    default_device,
    default_matmul_precision,
    effects_barrier,
    enable_x64,
    explain_cache_misses,
    float0,
    host_count,
    host_id,
    host_ids,
    jacobian,
    linear_transpose,
    log_compiles,
    named_call,
    named_scope,
    numpy_rank_promotion,
    print_environment_info,
    process_indices,
    typeof,
)
from fjax import errors, experimental, flatten_util  # noqa: E402
from fjax import ad_checkpoint, ops, stages  # noqa: E402
from fjax import extend  # noqa: E402
from fjax import ref  # noqa: E402
from fjax.ref import Ref, empty_ref, free_ref, freeze, new_ref  # noqa: E402
from fjax import custom_batching, dlpack, monitoring, profiler  # noqa: E402
from fjax._devices import Device  # noqa: E402
from fjax.sharding import NamedSharding, P, Shard, reshard, set_mesh  # noqa: E402
from fjax._api_top import (  # noqa: E402
    allow_f16_reductions,
    check_tracer_leaks,
    checking_leaks,
    copy_to_host_async,
    debug_key_reuse,
    default_prng_impl,
    enable_checks,
    live_arrays,
    make_array_from_callback,
    make_array_from_single_device_arrays,
    no_execution,
    no_tracing,
    numpy_dtype_promotion,
    threefry_partitionable,
    transfer_guard,
    transfer_guard_device_to_device,
    transfer_guard_device_to_host,
    transfer_guard_host_to_device,
)
from fjax._flag_states import enable_custom_prng, legacy_prng_key, thread_guard  # noqa: E402
from fjax._smap import smap  # noqa: E402
