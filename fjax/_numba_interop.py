"""fjax arrays as arguments of numba-compiled functions, as JAX arrays are.

A JAX CPU array exposes its data through the buffer protocol, so ``numba.njit`` functions (and
numpy) take it directly as a read-only array: ``jax.pure_callback(numba_fn, ...)`` passes JAX
arrays to ``numba_fn`` (jaxopt's isotonic regression does). ``fjax.Array`` is a Python class, and
Python 3.11 gives such classes no buffer protocol, so numba cannot type it. ``register()`` teaches
numba to: an ``fjax.Array`` argument is typed as a read-only array of its dtype and rank (what
numba makes of a read-only buffer) and unboxed from the frozen numpy array fjax keeps inside it.

``register()`` runs only once numba is imported (fjax never imports numba for it): the host
callbacks (``pure_callback``, ``io_callback``, ``debug.callback``) call it before running one;
other code calling numba functions on fjax arrays may call it itself.
"""

from __future__ import annotations

import sys
import threading

_done = False
_lock = threading.Lock()


def register() -> bool:
    """Register ``fjax.Array`` with numba's typing and unboxing if numba has been imported; True
    once registered (later calls return at once)."""
    global _done
    if _done:
        return True
    if "numba" not in sys.modules:
        return False
    with _lock:
        if not _done:
            _register()
            _done = True
    return True


def _register() -> None:
    from numba.core import boxing, types  # noqa: PLC0415 - numba is imported only when present
    from numba.core.datamodel import models, register_default
    from numba.core.extending import typeof_impl, unbox
    from numba.np import numpy_support

    from fjax._core_values import Array  # noqa: PLC0415

    class FjaxArrayType(types.Array):
        """A read-only array that arrived as an ``fjax.Array``: its own numba type so that its
        unboxing can reach the numpy array inside; arrays derived from it (``copy``: slices,
        reshapes) are plain read-only arrays."""

        def __init__(self, dtype, ndim, layout):  # noqa: ANN001
            super().__init__(dtype, ndim, layout, readonly=True, name=f"fjax.Array({dtype}, {ndim}d, {layout})")

    # importable by name, so that numba's on-disk cache can pickle signatures holding it
    FjaxArrayType.__module__, FjaxArrayType.__qualname__ = __name__, "FjaxArrayType"
    globals()["FjaxArrayType"] = FjaxArrayType
    register_default(FjaxArrayType)(models.ArrayModel)

    @typeof_impl.register(Array)
    def _typeof_fjax_array(val, c):  # noqa: ANN001, ANN202
        v = val._value
        dtype = numpy_support.from_dtype(v.dtype)
        return FjaxArrayType(dtype, v.ndim, numpy_support.map_layout(v))

    @unbox(FjaxArrayType)
    def _unbox_fjax_array(typ, obj, c):  # noqa: ANN001, ANN202
        # the frozen ndarray, a new reference (never NULL: typing a deleted array already raised)
        value = c.pyapi.object_getattr_string(obj, "_value")
        native = boxing.unbox_array(typ, value, c)
        # the native array keeps its own reference (NRT meminfo or ``parent``) to the ndarray
        c.pyapi.decref(value)
        return native


def __getattr__(name: str) -> type:
    # ``FjaxArrayType`` exists once registered (unpickling a cached numba signature asks for it)
    if name == "FjaxArrayType" and register():
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
