"""``fjax.lax``: the primitive operations and structured control flow, following ``jax.lax``."""

import warnings as _warnings

from numpy.exceptions import ComplexWarning as _ComplexWarning

# numpy's floating-point RuntimeWarnings (log(0), 0/0, overflow) raised from inside fjax's
# primitives: JAX computes the IEEE result silently, and so does fjax
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"fjax\.")
# but not numpy's ComplexWarning (a RuntimeWarning): casting complex to real warns, as in JAX
_warnings.filterwarnings("default", category=_ComplexWarning, module=r"fjax\.")

from fjax.lax.lax import *  # noqa: F401,F403
from fjax.lax.lax import (  # noqa: F401
    RoundingMethod,
    abs,
    max,
    min,
    pow,
    round,
)
from fjax.lax.slicing import *  # noqa: F401,F403
from fjax.lax.slicing import slice  # noqa: F401
from fjax.lax.other import *  # noqa: F401,F403
from fjax.lax.assoc import associative_scan  # noqa: F401
from fjax.lax.convolution import *  # noqa: F401,F403
from fjax.lax.control_flow import *  # noqa: F401,F403
from fjax.lax import linalg  # noqa: F401
from fjax.lax.linear_solve import custom_linear_solve, custom_root  # noqa: F401
from fjax.lax.fourier import FftType, fft, fft_p  # noqa: F401
from fjax.lax.parallel import (  # noqa: F401
    all_gather,
    all_to_all,
    axis_index,
    axis_size,
    pmax,
    pmean,
    pmin,
    ppermute,
    pshuffle,
    psum,
    psum_scatter,
    pswapaxes,
    with_sharding_constraint,
)
from fjax.lax.special import *  # noqa: F401,F403
from fjax.lax._extra import *  # noqa: F401,F403
from fjax.lax import _batching_dims  # noqa: F401  (jit compiles batched gathers/scatters in index form)
from fjax.lax import _body_forms  # noqa: F401  (argmax/windowed gathers compile inside loop bodies)
from fjax.lax import _compiled_forms  # noqa: F401  (float64 erf_inv and nextafter compile, in loops too)
from fjax.lax import _small_linalg_forms  # noqa: F401  (small lu/triangular_solve compile inside loop bodies)
from fjax.lax._precision_shapes import *  # noqa: F401,F403
from fjax.lax._dot_algorithms import *  # noqa: F401,F403
from fjax.lax._api_gaps import *  # noqa: F401,F403
from fjax._tokens import after_all, create_token  # noqa: F401,E402
from fjax.lax._rng import rng_bit_generator, rng_bit_generator_p, rng_uniform, rng_uniform_p  # noqa: F401,E402
from fjax.lax._api_gaps_more import pbroadcast, scaled_dot, scaled_dot_p, scatter_apply  # noqa: F401,E402
from fjax.lax._collective_gaps import ragged_all_to_all, stage  # noqa: F401,E402
