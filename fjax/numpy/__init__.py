"""``fjax.numpy``: numpy's API on fjax arrays, following ``jax.numpy`` (x64 off by default).

Use it as ``import fjax.numpy as jnp``. Functions promote dtypes with JAX's weak-type-aware
rules (``fjax.dtypes.result_type``), return immutable ``fjax.Array``s eagerly, and work on
tracers under every transform. Importing this package also gives ``fjax.Array`` and every
tracer type their operators and numpy-style methods (``x + y``, ``x.sum()``, ``x[i]``, ``x.at``).
"""

from fjax.numpy._ufuncs import *  # noqa: F401,F403
from fjax.numpy._creation import *  # noqa: F401,F403
from fjax.numpy._reductions import *  # noqa: F401,F403
from fjax.numpy._shape import *  # noqa: F401,F403
from fjax.numpy._indexing import *  # noqa: F401,F403
from fjax.numpy._linalg import *  # noqa: F401,F403
from fjax.numpy._sorting import *  # noqa: F401,F403
from fjax.numpy import linalg  # noqa: F401
from fjax.numpy import fft  # noqa: F401

from fjax.core import Array as _Array, Tracer as _Tracer
from fjax.numpy._array_methods import _install

from fjax.numpy._array_methods_more import install_more as _install_more

_install(_Array)
_install(_Tracer)
_install_more(_Array)
_install_more(_Tracer)
del _install, _install_more, _Array, _Tracer
from fjax.numpy._more import *  # noqa: F401,F403
from fjax.numpy._more2 import *  # noqa: F401,F403
from fjax.numpy._more3 import *  # noqa: F401,F403

# shape and indexing functions take typed key arrays, as in JAX
from fjax.numpy import _key_shape as _ks  # noqa: E402

_ks.install(globals(), _ks.JNP_FUNCTIONS)

# the elementwise functions that are ufuncs in JAX (jnp.add.reduce, jnp.multiply.outer, ...)
from fjax.numpy._ufunc_class import frompyfunc, ufunc, install_builtins as _install_ufuncs  # noqa: E402,F401

_install_ufuncs(globals())
del _install_ufuncs
from fjax.numpy._io_stubs import fromfile  # noqa: E402,F401

# eager calls of composites run compiled once a call signature repeats (fjax/_eager_compile.py)
from fjax import _eager_compile as _ec  # noqa: E402

_ec.install(globals(), _ec.JNP)
del _ec
