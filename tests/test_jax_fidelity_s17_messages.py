"""More differences from JAX 0.10.2 fixed in session 17 (the rest are in
``tests/test_jax_fidelity_s17.py``): eager ``lax.slice`` sizes, ``device_put``, the jnp functions JAX
jits itself, list indices and ``jnp.eye``'s k, where masks, PRNG key checks, ``jnp.average``,
``register_dataclass``, leaked tracers, ``jax.scipy``/``fft``/``vectorize`` messages, and traced
values where a function needs a static one.

Every expected message here was printed by JAX 0.10.2 (CPU, x64 off, numpy 2.4) in a separate
virtual environment (``pip install jax``), running the same call from a file at another path; the
file and line JAX names are those of the function traced, so they are rebuilt here from the
function's code object. The suite never imports jax; this file itself was run under JAX
0.10.2 with ``sys.modules["fjax"] = jax`` (and ``fjax.numpy`` = ``jax.numpy``), where it passes too.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp

_PAGE = "\nSee https://docs.jax.dev/en/latest/errors.html#jax.errors."
_JIT_HINT = "\nIf using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions."
_N = "the value of the argument n"


def _raises(fn) -> tuple[str, str]:
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value).__name__, str(info.value)


def _where(fn) -> str:
    code = fn.__code__
    return f"{fn.__name__} at {code.co_filename}:{code.co_firstlineno}"


def _origin(fn, args: str) -> str:
    return (
        f"\nThe error occurred while tracing the function {_where(fn)} for jit. This concrete value was "
        f"not available in Python because it depends on {args}."
    )


def _concrete(shape: str, context: str, fn, args: str) -> str:
    return (
        f"Abstract tracer value encountered where concrete value is expected: traced array with shape {shape}\n"
        f"{context}{_origin(fn, args)}\n{_PAGE}ConcretizationTypeError"
    )


# ---------------------------------------------------------------------------------------------
# an eager unit-stride lax.slice whose sizes do not fit: JAX evaluates it as a dynamic_slice of
# numpy-computed sizes, so its message is that rule's (under jit, and with strides, slice's own)

_SL = "slice slice_sizes must be"
_LIM = "slice limit_indices must be less than or equal to operand shape, got limit_indices"


@pytest.mark.parametrize(
    "call, msg",
    [
        (
            lambda: fjax.lax.slice(jnp.ones(5), (0,), (7,)),
            f"{_SL} less than or equal to operand shape, got slice_sizes (np.int64(7),) for operand shape (5,).",
        ),
        (
            lambda: fjax.lax.slice(jnp.ones(5), (3,), (2,)),
            f"{_SL} greater than or equal to zero, got slice_sizes of (np.int64(-1),).",
        ),
        (
            lambda: fjax.lax.slice(jnp.ones((4, 5)), (0, 1), (5, 6)),
            f"{_SL} less than or equal to operand shape, got slice_sizes (np.int64(5), np.int64(5)) for operand "
            "shape (4, 5).",
        ),
        (
            lambda: fjax.lax.slice(jnp.ones((4, 5)), (2, 3), (1, 2)),
            f"{_SL} greater than or equal to zero, got slice_sizes of (np.int64(-1), np.int64(-1)).",
        ),
        (lambda: fjax.lax.slice(jnp.ones(5), (0,), (7,), (2,)), f"{_LIM} (7,) for operand shape (5,)."),
        (
            lambda: fjax.jit(lambda x: fjax.lax.slice(x, (0,), (7,)))(jnp.ones(5)),
            f"{_LIM} (7,) for operand shape (5,).",
        ),
        (lambda: fjax.lax.slice_in_dim(jnp.ones(5), 0, 7), f"{_LIM} (7,) for operand shape (5,)."),
    ],
)
def test_slice_size_errors_are_jaxs(call, msg):
    assert _raises(call) == ("TypeError", msg)


@given(st.integers(0, 5), st.integers(0, 5))
def test_valid_slices_still_computed(a, b):
    lo, hi = min(a, b), max(a, b)
    x = np.arange(5.0, dtype=np.float32)
    np.testing.assert_array_equal(fjax.lax.slice(jnp.asarray(x), (lo,), (hi,)), x[lo:hi])


# ---------------------------------------------------------------------------------------------
# device_put of a value that is not an array (JAX 0.10.2's messages)


@pytest.mark.parametrize(
    "call, msg",
    [
        (
            lambda: fjax.device_put(object()),
            "Cannot interpret value of type <class 'object'> as an abstract array; it does not have a dtype attribute",
        ),
        (
            lambda: fjax.device_put({"a": object()}),
            "Cannot interpret value of type <class 'object'> as an abstract array; it does not have a dtype attribute",
        ),
        (
            lambda: fjax.device_put(object(), fjax.devices()[0]),
            "Cannot interpret value of type <class 'object'> as an abstract array; it does not have a dtype attribute",
        ),
        (lambda: fjax.device_put("abc"), "Argument 'abc' of type <class 'str'> is not a valid JAX type"),
        (
            lambda: fjax.device_put(np.array(["a"])),
            "Dtype <U1 is not a valid JAX array type. Only arrays of numeric types are supported by JAX.",
        ),
        (
            lambda: fjax.device_put(np.array([object()])),
            "Dtype object is not a valid JAX array type. Only arrays of numeric types are supported by JAX.",
        ),
    ],
)
def test_device_put_errors_are_jaxs(call, msg):
    assert _raises(call) == ("TypeError", msg)


def test_device_put_still_puts():
    assert fjax.device_put(None) is None
    out = fjax.device_put({"a": [1, 2.0], "b": np.ones(2, np.float32)})
    assert out["a"][0].dtype == np.int32 and out["a"][1].weak_type
    np.testing.assert_array_equal(out["b"], np.ones(2))


# ---------------------------------------------------------------------------------------------
# jnp functions that JAX itself jits (unique, nonzero, argwhere, flatnonzero) name themselves as
# the traced function: the recorded messages match fjax's but for where the library lives

import json as _json  # noqa: E402
import pathlib as _pathlib  # noqa: E402
import re as _re  # noqa: E402
import sys as _sys  # noqa: E402

_DATA = _pathlib.Path(__file__).parent / "data"
_sys.path.insert(0, str(_DATA))
_RECORDED = _json.loads((_DATA / "error_cases.json").read_text())["cases"]


def _lib_path(msg: str) -> str:
    return _re.sub(r"the function (\w+) at \S+:\d+ for jit", r"the function \1 at <library> for jit", msg)


@pytest.mark.parametrize(
    "key", ["jnp.unique non-static", "jnp.nonzero under jit", "jnp.argwhere under jit", "jnp.flatnonzero under jit"]
)
def test_library_jitted_functions_messages_match_but_for_path(key):
    from error_cases import all_cases, run

    got, want = run(all_cases(fjax)[key]), _RECORDED[key]
    assert (got["type"], _lib_path(got["message"])) == (want["type"], _lib_path(want["message"]))


# ---------------------------------------------------------------------------------------------
# a list used as an index (JAX suggests a tuple when an entry indexes a dimension of its own);
# jnp.eye's k (a traced k works, as in JAX; a non-integer one is JAX's ValueError)

_SEQ = (
    "Using a non-tuple sequence for multidimensional indexing is not allowed; use `arr[{}]` instead of `arr[seq]`. "
    "See https://github.com/jax-ml/jax/issues/4564 for more information."
)


@pytest.mark.parametrize(
    "index, seq",
    [
        ([[0]], "tuple(seq)"),
        ([0, 1], "array(seq)"),
        ([slice(None)], "tuple(seq)"),
        ([None], "tuple(seq)"),
        ([jnp.array([0])], "tuple(seq)"),
        ([jnp.array(0)], "array(seq)"),
    ],
)
def test_list_index_message_is_jaxs(index, seq):
    assert _raises(lambda: jnp.ones((2, 3))[index]) == ("TypeError", _SEQ.format(seq))


def test_eye_k_is_jaxs():
    assert _raises(lambda: jnp.eye(3, k=1.5)) == ("ValueError", "k must be a scalar integer; got 1.5")
    assert _raises(lambda: jnp.eye(3, k=np.float32(1))) == ("ValueError", "k must be a scalar integer; got 1.0")
    assert _raises(lambda: jnp.eye(3, k=jnp.ones(2, jnp.int32))) == (
        "ValueError",
        "k must be a scalar integer; got [1 1]",
    )
    np.testing.assert_array_equal(fjax.jit(lambda k: jnp.eye(3, k=k))(-1), np.eye(3, k=-1))
    np.testing.assert_array_equal(jnp.eye(2, k=2**40), np.zeros((2, 2)))


@given(st.integers(1, 4), st.integers(1, 4), st.integers(-4, 4))
def test_eye_values(n, m, k):
    np.testing.assert_array_equal(jnp.eye(n, m, k=k), np.eye(n, m, k=k, dtype=np.float32))
    np.testing.assert_array_equal(fjax.jit(lambda k: jnp.eye(n, m, k=k))(k), np.eye(n, m, k=k, dtype=np.float32))


# ---------------------------------------------------------------------------------------------
# a reduction's where mask that does not fit (JAX's jnp.where names the three shapes; mean and var
# count first, a broadcast_to); associative_scan's axis (JAX 0.10.2's words)

_XW = jnp.ones((2, 3))
_W4 = jnp.ones(4, bool)


@pytest.mark.parametrize(
    "call, msg",
    [
        (lambda: jnp.sum(_XW, where=_W4), "Incompatible shapes for broadcasting: shapes=[(4,), (2, 3), ()]"),
        (
            lambda: jnp.max(_XW, where=_W4, initial=0.0),
            "Incompatible shapes for broadcasting: shapes=[(4,), (2, 3), ()]",
        ),
        (
            lambda: jnp.prod(_XW, where=jnp.ones((3, 2), bool)),
            "Incompatible shapes for broadcasting: shapes=[(3, 2), (2, 3), ()]",
        ),
        (lambda: jnp.all(_XW > 0, where=_W4), "Incompatible shapes for broadcasting: shapes=[(4,), (2, 3), ()]"),
        (
            lambda: jnp.sum(_XW, where=jnp.ones((2, 3, 2), bool)),
            "Incompatible shapes for broadcasting: shapes=[(2, 3, 2), (2, 3), ()]",
        ),
        (
            lambda: jnp.mean(_XW, where=_W4),
            "Incompatible types for broadcasting: input type=bool[4] and requested type=bool[2,3]",
        ),
        (
            lambda: jnp.var(_XW, where=_W4),
            "Incompatible types for broadcasting: input type=bool[4] and requested type=bool[2,3]",
        ),
        (
            lambda: fjax.lax.associative_scan(lambda a, b: a + b, jnp.ones(3), axis=2),
            "axis 2 is out of bounds for array of dimension 1",
        ),
    ],
)
def test_where_mask_and_axis_errors_are_jaxs(call, msg):
    assert _raises(call) == ("ValueError", msg)


def test_where_masks_still_reduce():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    w = np.array([True, False, True])
    wb = np.broadcast_to(w, x.shape)
    np.testing.assert_allclose(jnp.mean(x, where=w), np.mean(x, where=wb))
    np.testing.assert_allclose(jnp.var(x, where=w), np.var(x, where=wb))
    np.testing.assert_allclose(jnp.sum(x, where=w), np.sum(x, where=wb))


# ---------------------------------------------------------------------------------------------
# PRNG key checks in JAX's order and words; lax's reduce_precision, dynamic_slice index dtypes and
# widening bitcast messages (each as JAX 0.10.2 printed it)

_RAW2 = fjax.random.split(fjax.random.PRNGKey(0))
_BAD = "JAX encountered invalid PRNG key data: expected "


@pytest.mark.parametrize(
    "call, typ, msg",
    [
        (
            lambda: fjax.random.fold_in(fjax.random.split(fjax.random.key(0)), 1),
            "ValueError",
            "fold_in accepts a single key, but was given a key array of shape (2,) != (). Use jax.vmap for batching.",
        ),
        (
            lambda: fjax.random.fold_in(_RAW2, 1),
            "ValueError",
            "fold_in accepts a single key, but was given a key array of shape (2, 2) != (). Use jax.vmap for batching.",
        ),
        (
            lambda: fjax.random.normal(1.5),
            "TypeError",
            _BAD + "key_data to have ndim, shape, and dtype attributes. Got 1.5",
        ),
        (lambda: fjax.random.split(3), "TypeError", _BAD + "key_data to have ndim, shape, and dtype attributes. Got 3"),
        (lambda: fjax.random.normal(np.float32(1)), "TypeError", _BAD + "key_data.ndim >= 1; got ndim=0"),
        (lambda: fjax.random.uniform([1, 2]), "TypeError", "unexpected PRNG key type <class 'list'>"),
        (
            lambda: fjax.lax.reduce_precision(jnp.ones(2), exponent_bits=0, mantissa_bits=2),
            "ValueError",
            "reduce_precision: exponent_bits must be positive; got 0",
        ),
        (
            lambda: fjax.lax.reduce_precision(jnp.ones(2), exponent_bits=2, mantissa_bits=-1),
            "ValueError",
            "reduce_precision: mantissa_bits must be non-negative; got -1",
        ),
        (
            lambda: fjax.lax.dynamic_slice(jnp.ones((2, 3)), (0.0, 0), (1, 1)),
            "TypeError",
            "index arguments to dynamic_slice must be integers of the same type, got: float32, int32",
        ),
        (
            lambda: fjax.lax.dynamic_update_slice(jnp.ones(3), jnp.ones(1), (0.5,)),
            "TypeError",
            "index arguments to dynamic_update_slice must be integers of the same type, got float32",
        ),
        (
            lambda: fjax.lax.bitcast_convert_type(jnp.ones((3, 4), jnp.int16), jnp.float32),
            "ValueError",
            "Attempting to convert array of shape (3, 4) from int16 of size 16 bits to float32 of size 32, bits but "
            "4 * 16 != 32",
        ),
        (
            lambda: fjax.lax.bitcast_convert_type(jnp.ones((3,), jnp.int8), jnp.int16),
            "ValueError",
            "Attempting to convert array of shape (3,) from int8 of size 8 bits to int16 of size 16, bits but "
            "3 * 8 != 16",
        ),
    ],
)
def test_key_and_lax_messages_are_jaxs(call, typ, msg):
    assert _raises(call) == (typ, msg)


def test_keys_and_bitcasts_still_work():
    assert fjax.random.normal(fjax.random.PRNGKey(1)).shape == ()
    np.testing.assert_array_equal(
        fjax.lax.bitcast_convert_type(jnp.array([[1, 0], [0, 1]], jnp.int16), jnp.int32), [1, 65536]
    )


# ---------------------------------------------------------------------------------------------
# jnp.average's weights along several axes (JAX's rule and message), fftn's repeated axes, and
# jnp.array's order (JAX 0.10.2 implements only order='K')


def test_average_weights_along_axes():
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    w = np.arange(1.0, 13.0, dtype=np.float32).reshape(4, 3)
    want = (a * w.T[None]).sum((1, 2)) / w.sum()
    np.testing.assert_allclose(jnp.average(a, axis=(2, 1), weights=w), want, rtol=1e-6)
    np.testing.assert_allclose(
        jnp.average(a, axis=1, weights=np.array([1.0, 2.0, 3.0])), np.average(a, axis=1, weights=[1.0, 2.0, 3.0])
    )
    assert _raises(lambda: jnp.average(a, axis=1, weights=np.ones(2))) == (
        "ValueError",
        "Shape of weights must be consistent with shape of a along specified axis.",
    )


def test_fftn_repeated_axes_and_array_order_are_jaxs():
    assert _raises(lambda: jnp.fft.fftn(jnp.ones((2, 3)), axes=(0, 0))) == (
        "ValueError",
        "jax.numpy.fft.fftn does not support repeated axes. Got axes (0, 0).",
    )
    for call in (
        lambda: jnp.asarray(jnp.ones(3), order="C"),
        lambda: jnp.array(jnp.ones(3), order="C"),
        lambda: jnp.asarray(jnp.ones(3), order="F"),
        lambda: jnp.array([1], order="A"),
    ):
        assert _raises(call) == ("NotImplementedError", "Only implemented for order='K'")
    assert jnp.array(jnp.ones(3), order="K").shape == (3,)
    assert jnp.asarray(jnp.ones(3), order=None).shape == (3,)


def test_device_get_passes_tracers_through():
    # JAX 0.10.2 returns a traced value as it is (jit(lambda x: jax.device_get(x))(1.0) is an Array)
    np.testing.assert_array_equal(fjax.jit(lambda x: fjax.device_get(x) * 2)(jnp.arange(3.0)), [0.0, 2.0, 4.0])
    assert type(fjax.device_get(jnp.ones(2))) is np.ndarray


# ---------------------------------------------------------------------------------------------
# tree_util.register_dataclass's messages (JAX 0.10.2's)


def test_register_dataclass_messages_are_jaxs():
    import dataclasses

    @dataclasses.dataclass
    class D:
        a: int
        b: int

    tu = fjax.tree_util
    assert _raises(lambda: tu.register_dataclass(int)) == (
        "TypeError",
        "register_dataclass: data_fields and meta_fields are required when nodetype is not a dataclass. "
        "Got nodetype=<class 'int'>.",
    )
    assert _raises(lambda: tu.register_dataclass(D, data_fields=["a"])) == (
        "TypeError",
        "register_dataclass: data_fields and meta_fields must both be specified when either is specified. "
        "Got data_fields=['a'] meta_fields=None.",
    )
    fields = "data_fields and meta_fields must include all dataclass fields with ``init=True`` and only them."
    assert _raises(lambda: tu.register_dataclass(D, data_fields=["a"], meta_fields=[])) == (
        "ValueError",
        fields + " Missing fields: {'b'}. Add them to drop_fields to suppress this error.",
    )
    assert _raises(lambda: tu.register_dataclass(D, data_fields=["a", "b", "c"], meta_fields=[])) == (
        "ValueError",
        fields + " Unexpected fields: {'c'}.",
    )
    assert _raises(lambda: tu.register_dataclass(D, data_fields=["a", "b"], meta_fields=["a"])) == (
        "ValueError",
        "data_fields and meta_fields must not overlap. Overlapping fields: {'a'}.",
    )


# ---------------------------------------------------------------------------------------------
# a leaked tracer: JAX 0.10.2's UnexpectedTracerError, naming the function traced for jit (the
# creation-line parts are empty, as JAX's are for a leaked argument; fjax's equations carry no
# source lines)

_UNEXPECTED = (
    "Encountered an unexpected tracer. A function transformed by JAX had a side effect, allowing for a reference to "
    "an intermediate value with type float32[] wrapped in a {} to escape the scope of the transformation.\n"
    "JAX transformations require that functions explicitly return their outputs, and disallow saving intermediate "
    "values to global state.\n"
)
_CATCH = (
    "To catch the leak earlier, try setting the environment variable JAX_CHECK_TRACER_LEAKS or using the "
    "`jax.checking_leaks` context manager.\nSee https://docs.jax.dev/en/latest/errors.html#jax.errors.UnexpectedTracerError"
)


def test_leaked_jit_argument_message_is_jaxs():
    box = []
    f = lambda x: box.append(x) or x  # noqa: E731
    fjax.jit(f)(1.0)
    bar = "-" * 30
    assert _raises(lambda: box[0] + 1) == (
        "UnexpectedTracerError",
        _UNEXPECTED.format("DynamicJaxprTracer")
        + f"The function being traced when the value leaked was {_where(f)} traced for jit.\n{bar}\n"
        f"The leaked intermediate value was created on line . \n{bar}\n"
        "When the value was created, the final 5 stack frames (most recent last) excluding JAX-internal frames "
        f"were:\n{bar}\n\n{bar}\n\n" + _CATCH,
    )


def test_leaked_jvp_tracer_message_is_jaxs():
    box = []
    fjax.jvp(lambda x: box.append(x * 2) or x, (1.0,), (1.0,))
    assert _raises(lambda: jnp.cos(box[0])) == ("UnexpectedTracerError", _UNEXPECTED.format("JVPTracer") + _CATCH)


# ---------------------------------------------------------------------------------------------
# more of JAX 0.10.2's messages: jax.scipy.special on complex input (the lax primitive's dtype
# rule, or the function's own), scipy.signal/ndimage, fft norm, tensordot, gradient, sort's kind
# and order, vectorize's output core dimensions; a batched tracer prints as JAX's VmapTracer

_Z = jnp.ones(2) + 1j
_FL = "does not accept dtype complex64. Accepted dtypes are subtypes of floating."


@pytest.mark.parametrize(
    "call, typ, msg",
    [
        (lambda: fjax.scipy.special.erf(_Z), "TypeError", "erf " + _FL),
        (lambda: fjax.scipy.special.erfc(_Z), "TypeError", "erfc " + _FL),
        (lambda: fjax.scipy.special.erfinv(_Z), "TypeError", "erf_inv " + _FL),
        (lambda: fjax.scipy.special.gammaln(_Z), "TypeError", "lgamma " + _FL),
        (lambda: fjax.scipy.special.betaln(_Z, _Z), "TypeError", "lgamma " + _FL),
        (lambda: fjax.scipy.special.digamma(_Z), "TypeError", "digamma " + _FL),
        (lambda: fjax.scipy.special.i0e(_Z), "TypeError", "bessel_i0e " + _FL),
        (lambda: fjax.scipy.special.i1e(_Z), "TypeError", "bessel_i1e " + _FL),
        (
            lambda: fjax.scipy.special.ndtri(_Z),
            "TypeError",
            "x.dtype=complex64 is not supported, see docstring for supported types.",
        ),
        (lambda: fjax.scipy.special.log_ndtr(_Z), "TypeError", "x.dtype=complex64 is not supported."),
        (
            lambda: fjax.scipy.special.zeta(_Z, _Z),
            "TypeError",
            "zeta does not accept dtype complex64 at position 0. Accepted dtypes at position 0 are subtypes of "
            "floating.",
        ),
        (lambda: fjax.scipy.special.entr(_Z), "ValueError", "entr does not support complex-valued inputs."),
        (
            lambda: fjax.scipy.ndimage.map_coordinates(_XW, [jnp.ones(2), jnp.ones(2)], order=3),
            "NotImplementedError",
            "jax.scipy.ndimage.map_coordinates currently requires order<=1",
        ),
        (
            lambda: fjax.scipy.signal.convolve(_XW, _XW, mode="foo"),
            "ValueError",
            "mode must be one of ['full', 'same', 'valid']",
        ),
        (
            lambda: fjax.scipy.signal.fftconvolve(_XW, _XW, mode="foo"),
            "ValueError",
            "mode must be one of ['same', 'full', 'valid']",
        ),
        (
            lambda: jnp.fft.fft(_XW, norm="foo"),
            "ValueError",
            'Invalid norm value foo; should be "backward","ortho" or "forward".',
        ),
        (
            lambda: jnp.tensordot(_XW, _XW, axes=3),
            "TypeError",
            "Number of tensordot axes (axes 3) exceeds input ranks ((2, 3) and (2, 3))",
        ),
        (
            lambda: jnp.gradient(_XW, 1.0, 2.0, 3.0),
            "TypeError",
            "Invalid number of spacing arguments 3 for axis=None",
        ),
        (
            lambda: jnp.sort(_XW, kind="foo"),
            "TypeError",
            "'kind' argument to sort is not supported. Use stable=True or stable=False to specify sort stability.",
        ),
        (
            lambda: jnp.argsort(_XW, kind="stable"),
            "TypeError",
            "'kind' argument to argsort is not supported. Use stable=True or stable=False to specify sort stability.",
        ),
        (lambda: jnp.sort(_XW, order="a"), "TypeError", "'order' argument to sort is not supported."),
    ],
)
def test_more_messages_are_jaxs(call, typ, msg):
    assert _raises(call) == (typ, msg)


_CTX = "on vectorized function with excluded=frozenset() and signature='{}'"


def test_vectorize_checks_output_core_dims_as_jax():
    v = jnp.vectorize
    assert _raises(lambda: v(lambda a: a, signature="(n)->()")(_XW)) == (
        "ValueError",
        "output shape (3,) does not match core dimensions () " + _CTX.format("(n)->()"),
    )
    assert _raises(lambda: v(lambda a: (a, a), signature="(n)->(n)")(_XW)) == (
        "TypeError",
        "wrong number of output arguments: expected 1, got 2 " + _CTX.format("(n)->(n)"),
    )
    assert _raises(lambda: v(lambda a: a, signature="(n)->(n),(n)")(_XW)) == (
        "TypeError",
        "output must be a tuple when multiple outputs are expected, got: "
        "VmapTracer(aval=float32[3], batched=float32[2,3])\n" + _CTX.format("(n)->(n),(n)"),
    )
    assert _raises(lambda: v(lambda a: a[:2], signature="(n)->(n)")(_XW)) == (
        "ValueError",
        "inconsistent size for core dimension 'n': 2 vs 3 " + _CTX.format("(n)->(n)"),
    )
    # what still works
    assert v(lambda a: a.sum(), signature="(n)->()")(_XW).shape == (2,)
    assert v(lambda a: (a, a.sum()), signature="(n)->(n),()")(_XW)[1].shape == (2,)
    assert v(lambda a: a[:2], signature="(n)->(m)")(_XW).shape == (2, 2)


@pytest.mark.parametrize("shift, want", [(1.5, 1), (2.7, 2), (-1.2, -1), (np.float32(2.0), 2)])
def test_roll_truncates_a_float_shift_as_jax(shift, want):
    # JAX 0.10.2: jnp.roll(jnp.arange(5.), 1.5) == [4, 0, 1, 2, 3] (the shift converted to an int)
    v = np.arange(5.0, dtype=np.float32)
    np.testing.assert_array_equal(jnp.roll(v, shift), np.roll(v, want))
    np.testing.assert_array_equal(fjax.jit(lambda s: jnp.roll(v, s))(shift), np.roll(v, want))


# ---------------------------------------------------------------------------------------------
# a traced value where a jnp/lax/random/nn function needs a static one: JAX 0.10.2's error class and
# context (each recorded from JAX running the same call)

_V4 = jnp.ones(4)
_N3 = "the value of the argument n"
_A = "the value of the argument a"


def _index_msg(fn, args: str) -> str:
    return (
        "The __index__() method was called on traced array with shape int32[]"
        f"{_origin(fn, args)}{_PAGE}TracerIntegerConversionError"
    )


_sum_a = lambda a: jnp.sum(_XW, axis=a)  # noqa: E731
_moveaxis_a = lambda a: jnp.moveaxis(_XW, a, 0)  # noqa: E731
_expand_a = lambda a: jnp.expand_dims(_XW, a)  # noqa: E731
_squeeze_a = lambda a: jnp.squeeze(jnp.ones((1, 2)), a)  # noqa: E731
_roll_a = lambda a: jnp.roll(_XW, 1, axis=a)  # noqa: E731
_argmax_a = lambda a: jnp.argmax(_XW, axis=a)  # noqa: E731
_concat_a = lambda a: jnp.concatenate([_XW, _XW], axis=a)  # noqa: E731
_take_a = lambda a: jnp.take(_XW, 0, axis=a)  # noqa: E731
_diag_k = lambda k: jnp.diag(_XW, k)  # noqa: E731
_index_in_dim_i = lambda i: fjax.lax.index_in_dim(_V4, i)  # noqa: E731
_slice_in_dim_i = lambda i: fjax.lax.slice_in_dim(_V4, 0, i)  # noqa: E731
_linspace_n = lambda n: jnp.linspace(0, 1, n)  # noqa: E731
_pad_n = lambda n: jnp.pad(_V4, n)  # noqa: E731
_perm_n = lambda n: fjax.random.permutation(fjax.random.key(0), n)  # noqa: E731
_one_hot_n = lambda n: fjax.nn.one_hot(jnp.ones(2, jnp.int32), n)  # noqa: E731
_hist_n = lambda n: jnp.histogram(_V4, bins=n)  # noqa: E731
_where_n = lambda n: jnp.where(_V4 > 0, size=n)  # noqa: E731
_rp_n = lambda n: fjax.lax.reduce_precision(_V4, n, 2)  # noqa: E731
_item = lambda a: a.item()  # noqa: E731
_tri_n = lambda n: jnp.tri(n)  # noqa: E731
_STATIC_IDX = "expected a static index or sequence of indices."
_NONZERO = (
    "The size argument of jnp.nonzero must be statically specified to use jnp.nonzero within JAX transformations."
)

TRACED_ARG_CASES = {
    "sum axis": (
        lambda: fjax.jit(_sum_a)(0),
        "ConcretizationTypeError",
        _concrete("int32[]", "The axis argument must be known statically.", _sum_a, _A),
    ),
    "moveaxis": (
        lambda: fjax.jit(_moveaxis_a)(1),
        "ConcretizationTypeError",
        _concrete("int32[]", _STATIC_IDX, _moveaxis_a, _A),
    ),
    "expand_dims": (
        lambda: fjax.jit(_expand_a)(1),
        "ConcretizationTypeError",
        _concrete("int32[]", _STATIC_IDX, _expand_a, _A),
    ),
    "squeeze": (
        lambda: fjax.jit(_squeeze_a)(0),
        "ConcretizationTypeError",
        _concrete("int32[]", _STATIC_IDX, _squeeze_a, _A),
    ),
    "roll axis": (
        lambda: fjax.jit(_roll_a)(0),
        "ConcretizationTypeError",
        _concrete("int32[]", _STATIC_IDX, _roll_a, _A),
    ),
    "argmax axis": (lambda: fjax.jit(_argmax_a)(0), "TracerIntegerConversionError", _index_msg(_argmax_a, _A)),
    "concatenate axis": (lambda: fjax.jit(_concat_a)(0), "TracerIntegerConversionError", _index_msg(_concat_a, _A)),
    "take axis": (lambda: fjax.jit(_take_a)(0), "TracerIntegerConversionError", _index_msg(_take_a, _A)),
    "diag k": (
        lambda: fjax.jit(_diag_k)(1),
        "TracerIntegerConversionError",
        _index_msg(_diag_k, "the value of the argument k"),
    ),
    "index_in_dim": (
        lambda: fjax.jit(_index_in_dim_i)(1),
        "TracerIntegerConversionError",
        _index_msg(_index_in_dim_i, "the value of the argument i"),
    ),
    "slice_in_dim": (
        lambda: fjax.jit(_slice_in_dim_i)(2),
        "TracerIntegerConversionError",
        _index_msg(_slice_in_dim_i, "the value of the argument i"),
    ),
    "linspace num": (
        lambda: fjax.jit(_linspace_n)(3),
        "ConcretizationTypeError",
        _concrete("int32[]", "'num' argument of jnp.linspace", _linspace_n, _N3),
    ),
    "pad width": (
        lambda: fjax.jit(_pad_n)(1),
        "ConcretizationTypeError",
        _concrete("int32[]", "pad_width argument of jnp.pad", _pad_n, _N3),
    ),
    "random.permutation": (
        lambda: fjax.jit(_perm_n)(3),
        "ConcretizationTypeError",
        _concrete("int32[]", "argument x of jax.random.permutation()", _perm_n, _N3),
    ),
    "one_hot num_classes": (
        lambda: fjax.jit(_one_hot_n)(3),
        "ConcretizationTypeError",
        _concrete("int32[]", "The error arose in jax.nn.one_hot argument `num_classes`.", _one_hot_n, _N3),
    ),
    "histogram bins": (
        lambda: fjax.jit(_hist_n)(3),
        "ConcretizationTypeError",
        _concrete("int32[]", "bins argument of histogram_bin_edges", _hist_n, _N3),
    ),
    "where size": (
        lambda: fjax.jit(_where_n)(2),
        "ConcretizationTypeError",
        _concrete("int32[]", _NONZERO, _where_n, _N3),
    ),
    "reduce_precision": (
        lambda: fjax.jit(_rp_n)(5),
        "ConcretizationTypeError",
        _concrete("int32[]", "exponent_bits argument of lax.reduce_precision", _rp_n, _N3),
    ),
    "item": (
        lambda: fjax.jit(_item)(jnp.float32(1)),
        "ConcretizationTypeError",
        _concrete("float32[]", "This occurred in the item() method of jax.Array", _item, _A),
    ),
    "tri": (
        lambda: fjax.jit(_tri_n)(2),
        "TypeError",
        "Shapes must be 1D sequences of concrete values of integer type, got "
        "(JitTracer(~int32[]), JitTracer(~int32[]))." + _JIT_HINT + _origin(_tri_n, _N3) * 2,
    ),
    "hash": (lambda: fjax.jit(lambda a: hash(a))(1.0), "TypeError", "unhashable type: 'DynamicJaxprTracer'"),
    "format": (
        lambda: fjax.jit(lambda a: f"{a:.2f}")(1.0),
        "TypeError",
        "unsupported format string passed to DynamicJaxprTracer.__format__",
    ),
}


@pytest.mark.parametrize("name", TRACED_ARG_CASES)
def test_traced_argument_errors_are_jaxs(name):
    call, typ, msg = TRACED_ARG_CASES[name]
    assert _raises(call) == (typ, msg)


def test_static_arguments_still_work():
    np.testing.assert_array_equal(jnp.sum(_XW, axis=jnp.int32(0)), [2.0, 2.0, 2.0])
    assert jnp.moveaxis(_XW, np.int64(1), 0).shape == (3, 2)
    assert jnp.expand_dims(_XW, (0, 3)).shape == (1, 2, 3, 1)
    assert jnp.tri(np.int64(2)).shape == (2, 2)
    assert fjax.jit(lambda x: jnp.roll(x, 1, axis=(0, 1)))(_XW).shape == (2, 3)
    assert f"{jnp.float32(1.5):.2f}" == "1.50"
