"""``jax.extend.core.primitives``: the primitive objects, by the names JAX gives them.

Only primitives fjax really binds are listed (each is what a jaxpr shows). JAX's names that
fjax builds from other primitives instead (``reduce_window_*_p``, ``select_and_scatter_add_p``,
``copy_p``, ``bitcast_convert_type_p``, the ``random_*``/``threefry2x32`` key primitives, ...)
are absent rather than stand-ins that nothing binds. JAX's call primitives ``call_p`` and
``closed_call_p`` exist and bind (interpreters written for JAX key rules by them), but inline:
binding one runs the function in the current trace, so fjax's jaxprs never show them.
"""

from __future__ import annotations

import importlib
from typing import Any

from fjax import core as _core
from fjax import lax as _lax
from fjax.lax import linalg as _linalg

_checkpoint = importlib.import_module("fjax.checkpoint")  # ``fjax.checkpoint`` is also a function
_jit = importlib.import_module("fjax.jit")
_custom_derivatives = importlib.import_module("fjax.custom_derivatives")
_dists = importlib.import_module("fjax._random_dists")

name_p = _checkpoint.name_p
remat_p = _checkpoint.remat_p
jit_p = _jit.jit_p
custom_jvp_call_p = _custom_derivatives.custom_jvp_call_p
custom_vjp_call_p = _custom_derivatives.custom_vjp_call_p
custom_lin_p = _custom_derivatives.custom_lin_p
random_gamma_p = _dists.random_gamma_p

_LAX = """stop_gradient abs acos acosh add and argmax argmin asin asinh atan atan2 atanh broadcast_in_dim
cbrt ceil clamp clz concatenate conj convert_element_type cos cosh div dot_general eq exp exp2 expm1
floor ge gt imag integer_pow iota is_finite le log1p log logistic lt max min mul ne neg nextafter not
or pad population_count pow real reduce_and reduce_max reduce_min reduce_or reduce_precision
reduce_prod reduce_sum reduce_xor rem reshape rev rng_bit_generator rng_uniform round rsqrt select_n
shift_left shift_right_arithmetic shift_right_logical sign sin sinh sort sqrt square squeeze sub tan
tanh top_k transpose xor bessel_i0e bessel_i1e digamma erfc erf_inv erf igammac igamma_grad_a igamma
lgamma polygamma regularized_incomplete_beta zeta dynamic_slice dynamic_update_slice gather
scatter_add scatter_max scatter_min scatter_mul scatter slice conv_general_dilated cond cumlogsumexp
cummax cummin cumprod cumsum linear_solve scan while fft all_gather all_to_all axis_index pmax pmin
ppermute psum""".split()
_LINALG = "cholesky eig eigh hessenberg lu householder_product qr svd triangular_solve tridiagonal_solve schur".split()


class _InlineCallPrimitive(_core.Primitive):
    """JAX's ``call_p``/``closed_call_p``: ``bind(fun, *args)`` (``fun`` a ``WrappedFun`` from
    ``jax.extend.linear_util`` or a plain callable) or ``bind(*args, call_jaxpr=jaxpr)`` (as an
    equation's params rebind) returns the function's outputs, computed in the current trace."""

    multiple_results = True

    def bind(self, *args: Any, **params: Any) -> Any:
        jaxpr = params.get("call_jaxpr")
        if jaxpr is None:
            fun, *args = args
            call = getattr(fun, "call_wrapped", fun)
            return list(call(*args))
        if isinstance(jaxpr, _core.ClosedJaxpr):
            return list(_core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args))
        return list(_core.eval_jaxpr(jaxpr, (), *args))


call_p = _InlineCallPrimitive("call")
closed_call_p = _InlineCallPrimitive("closed_call")

globals().update({f"{n}_p": getattr(_lax, f"{n}_p") for n in _LAX})
globals().update({f"{n}_p": getattr(_linalg, f"{n}_p") for n in _LINALG})
add_jaxvals_p = _lax.lax.add_any_p  # what JVPs and transposes bind to sum tangents; prints ``add_any``

__all__ = sorted(
    [f"{n}_p" for n in _LAX + _LINALG]
    + [
        "add_jaxvals_p",
        "call_p",
        "closed_call_p",
        "name_p",
        "remat_p",
        "jit_p",
        "custom_jvp_call_p",
        "custom_vjp_call_p",
        "custom_lin_p",
        "random_gamma_p",
    ]
)
