"""JAX-fidelity checks, session 11: the x64 truncation warning for explicitly requested 64-bit
dtypes, the index dtype of nonzero & co., lax comparisons of complex operands, and the fast
path of the eager complex division (bit-identical to the reference formula).

The expected warnings (function name in the message, how many, in which order) were recorded
from JAX 0.10.2 with x64 off by calling each expression below under
``warnings.catch_warnings(record=True)`` and keeping the messages starting "Explicitly requested".
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import config, lax

_MSG = (
    "Explicitly requested dtype {req}{where} is not available, and will be truncated to dtype {got}. To enable more "
    "dtypes, set the jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell environment variable. "
    "See https://github.com/jax-ml/jax#current-gotchas for more."
)


@pytest.fixture
def x64() -> Any:
    old = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    yield
    config.update("jax_enable_x64", old)


@pytest.fixture
def x32() -> Any:
    old = config.jax_enable_x64
    config.update("jax_enable_x64", False)
    yield
    config.update("jax_enable_x64", old)


_x = jnp.ones(3)
_m = jnp.ones((2, 2))

# name -> (call, [(requested dtype, function named in the message, truncated-to dtype)]),
# recorded from JAX 0.10.2 (see the module docstring)
WARNING_CASES: dict[str, tuple[Callable[[], Any], list[tuple[str, str, str]]]] = {
    "zeros": (lambda: jnp.zeros(3, jnp.float64), [("float64", "zeros", "float32")]),
    "zeros_np": (lambda: jnp.zeros(3, np.float64), [("float64", "zeros", "float32")]),
    "zeros_str": (lambda: jnp.zeros(3, "float64"), [("float64", "zeros", "float32")]),
    "zeros_np_dtype": (lambda: jnp.zeros(3, np.dtype("float64")), [("float64", "zeros", "float32")]),
    "zeros_intp": (lambda: jnp.zeros(3, np.intp), [("int64", "zeros", "int32")]),
    "zeros_float_": (lambda: jnp.zeros(3, jnp.float_), [("float64", "zeros", "float32")]),
    "ones": (lambda: jnp.ones(3, jnp.int64), [("int64", "ones", "int32")]),
    "empty": (lambda: jnp.empty(3, jnp.uint64), [("uint64", "empty", "uint32")]),
    "full": (lambda: jnp.full(3, 1, jnp.complex128), [("complex128", "full", "complex64")]),
    "zeros_like": (lambda: jnp.zeros_like(_x, jnp.float64), [("float64", "zeros_like", "float32")]),
    "ones_like": (lambda: jnp.ones_like(_x, jnp.float64), [("float64", "ones_like", "float32")]),
    # sic: JAX's empty_like names ones_like
    "empty_like": (lambda: jnp.empty_like(_x, jnp.float64), [("float64", "ones_like", "float32")]),
    "full_like": (lambda: jnp.full_like(_x, 2, jnp.float64), [("float64", "full_like", "float32")]),
    "array": (lambda: jnp.array([1, 2], jnp.float64), [("float64", "array", "float32")]),
    "asarray": (lambda: jnp.asarray([1, 2], jnp.float64), [("float64", "asarray", "float32")]),
    "asarray_of_array": (lambda: jnp.asarray(_x, jnp.float64), [("float64", "asarray", "float32")]),
    "arange": (lambda: jnp.arange(3, dtype=jnp.int64), [("int64", "arange", "int32")]),
    "linspace": (lambda: jnp.linspace(0, 1, 3, dtype=jnp.float64), [("float64", "linspace", "float32")]),
    "linspace_i64": (lambda: jnp.linspace(0, 3, 4, dtype=jnp.int64), [("int64", "linspace", "int32")]),
    "logspace": (lambda: jnp.logspace(0, 1, 3, dtype=jnp.float64), [("float64", "logspace", "float32")]),
    "geomspace": (lambda: jnp.geomspace(1, 2, 3, dtype=jnp.float64), [("float64", "geomspace", "float32")]),
    "eye": (lambda: jnp.eye(3, dtype=jnp.float64), [("float64", "eye", "float32")]),
    "identity": (lambda: jnp.identity(3, dtype=jnp.float64), [("float64", "identity", "float32")]),
    "tri": (lambda: jnp.tri(3, dtype=jnp.float64), [("float64", "tri", "float32")]),
    "indices": (lambda: jnp.indices((2,), dtype=jnp.int64), [("int64", "indices", "int32")]),
    "astype_method": (lambda: _x.astype(jnp.float64), [("float64", "astype", "float32")]),
    "astype_method_c128": (lambda: _x.astype(jnp.complex128), [("complex128", "astype", "complex64")]),
    "astype_method_str": (lambda: _x.astype("int64"), [("int64", "astype", "int32")]),
    "astype_fn": (lambda: jnp.astype(_x, jnp.float64), [("float64", "astype", "float32")]),
    "scalar_f64": (lambda: jnp.float64(1), [("float64", "asarray", "float32")]),
    "scalar_i64": (lambda: jnp.int64(1), [("int64", "asarray", "int32")]),
    "scalar_u64": (lambda: jnp.uint64(3), [("uint64", "asarray", "uint32")]),
    "scalar_c128": (lambda: jnp.complex128(1), [("complex128", "asarray", "complex64")]),
    "sum": (
        lambda: jnp.sum(_x, dtype=jnp.float64),
        [("float64", n, "float32") for n in ("sum", "convert_element_type")],
    ),
    "sum_method": (
        lambda: _x.sum(dtype=jnp.float64),
        [("float64", n, "float32") for n in ("sum", "convert_element_type")],
    ),
    "prod": (
        lambda: jnp.prod(_x, dtype=jnp.float64),
        [("float64", n, "float32") for n in ("prod", "convert_element_type")],
    ),
    "cumsum": (lambda: jnp.cumsum(_x, dtype=jnp.float64), [("float64", "cumsum", "float32")]),
    "cumprod": (lambda: jnp.cumprod(_x, dtype=jnp.float64), [("float64", "cumprod", "float32")]),
    "cumsum_method": (lambda: _x.cumsum(dtype=jnp.float64), [("float64", "cumsum", "float32")]),
    "nancumsum": (lambda: jnp.nancumsum(_x, dtype=jnp.float64), [("float64", "nancumsum", "float32")]),
    "nancumprod": (lambda: jnp.nancumprod(_x, dtype=jnp.float64), [("float64", "nancumprod", "float32")]),
    "cumulative_sum": (lambda: jnp.cumulative_sum(_x, dtype=jnp.float64), [("float64", "", "float32")]),
    "mean": (lambda: jnp.mean(_x, dtype=jnp.float64), [("float64", "mean", "float32")]),
    "var": (lambda: jnp.var(_x, dtype=jnp.float64), [("float64", "var", "float32")]),
    "var_method": (lambda: _x.var(dtype=jnp.float64), [("float64", "var", "float32")]),
    "std": (lambda: jnp.std(_x, dtype=jnp.float64), [("float64", "std", "float32")]),
    "nansum": (lambda: jnp.nansum(_x, dtype=jnp.float64), [("float64", "nanprod", "float32")]),  # sic
    "nanprod": (lambda: jnp.nanprod(_x, dtype=jnp.float64), [("float64", "nanprod", "float32")]),
    "nanmean": (lambda: jnp.nanmean(_x, dtype=jnp.float64), [("float64", "mean", "float32")]),  # sic
    "nanvar": (lambda: jnp.nanvar(_x, dtype=jnp.float64), [("float64", "nanvar", "float32")]),
    "nanstd": (lambda: jnp.nanstd(_x, dtype=jnp.float64), [("float64", "nanstd", "float32")]),
    "trace": (lambda: jnp.trace(_m, dtype=jnp.float64), [("float64", "trace", "float32")]),
    "trace_method": (lambda: _m.trace(dtype=jnp.float64), [("float64", "trace", "float32")]),
    "dot": (lambda: jnp.dot(_x, _x, preferred_element_type=jnp.float64), [("float64", "dot", "float32")]),
    "vdot": (lambda: jnp.vdot(_x, _x, preferred_element_type=jnp.float64), [("float64", "dot", "float32")]),
    "matmul": (lambda: jnp.matmul(_x, _x, preferred_element_type=jnp.float64), [("float64", "matmul", "float32")]),
    "inner": (lambda: jnp.inner(_x, _x, preferred_element_type=jnp.float64), [("float64", "tensordot", "float32")]),
    "tensordot": (
        lambda: jnp.tensordot(_x, _x, 1, preferred_element_type=jnp.float64),
        [("float64", "tensordot", "float32")],
    ),
    "einsum": (
        lambda: jnp.einsum("i,i", _x, _x, preferred_element_type=jnp.float64),
        [("float64", "einsum", "float32")],
    ),
    "vecdot": (lambda: jnp.vecdot(_x, _x, preferred_element_type=jnp.float64), []),
    "add_reduce": (
        lambda: jnp.add.reduce(_x, dtype=jnp.float64),
        [("float64", n, "float32") for n in ("sum", "convert_element_type")],
    ),
    "add_accumulate": (lambda: jnp.add.accumulate(_x, dtype=jnp.float64), [("float64", "cumsum", "float32")]),
    "logaddexp_reduce": (
        lambda: jnp.logaddexp.reduce(_x, dtype=jnp.float64),
        [("float64", "jnp.logaddexp.reduce", "float32")],
    ),
    "subtract_reduce": (
        lambda: jnp.subtract.reduce(_x, dtype=jnp.float64),
        [("float64", "astype", "float32")] * 2,
    ),
    "lax_convert": (
        lambda: lax.convert_element_type(_x, jnp.float64),
        [("float64", "convert_element_type", "float32")],
    ),
    "lax_convert_py": (
        lambda: lax.convert_element_type(1.0, np.float64),
        [("float64", "convert_element_type", "float32")],
    ),
    "lax_bitcast": (
        lambda: lax.bitcast_convert_type(jnp.ones((3, 2), jnp.int32), np.float64),
        [("float64", "bitcast_convert_type", "float32")],
    ),
    "lax_full": (lambda: lax.full((3,), 1, jnp.float64), [("float64", "full", "float32")]),
    "lax_full_like_np": (lambda: lax.full_like(_x, 0, np.float64), [("float64", "dtype", "float32")]),  # sic
    "lax_full_like_jnp": (lambda: lax.full_like(_x, 1, jnp.float64), []),
    "lax_iota": (lambda: lax.iota(jnp.int64, 3), [("int64", "broadcasted_iota", "int32")]),
    "lax_broadcasted_iota": (
        lambda: lax.broadcasted_iota(jnp.int64, (3,), 0),
        [("int64", "broadcasted_iota", "int32")],
    ),
    "lax_argmax": (lambda: lax.argmax(_x, 0, jnp.int64), [("int64", "argmax", "int32")]),
    "lax_argmin": (lambda: lax.argmin(_x, 0, jnp.int64), [("int64", "argmin", "int32")]),
    "lax_dot": (lambda: lax.dot(_x, _x, preferred_element_type=jnp.float64), [("float64", "dot", "float32")]),
    "lax_dot_general": (
        lambda: lax.dot_general(_x, _x, (((0,), (0,)), ((), ())), preferred_element_type=jnp.float64),
        [("float64", "dot", "float32")],
    ),
    "lax_conv": (
        lambda: lax.conv(
            jnp.ones((1, 1, 3, 3)), jnp.ones((1, 1, 2, 2)), (1, 1), "VALID", preferred_element_type=np.float64
        ),
        [("float64", "conv_general_dilated", "float32")],
    ),
    "lax_conv_general_dilated": (
        lambda: lax.conv_general_dilated(
            jnp.ones((1, 1, 3, 3)), jnp.ones((1, 1, 2, 2)), (1, 1), "VALID", preferred_element_type=np.float64
        ),
        [("float64", "conv_general_dilated", "float32")],
    ),
    "lax_rng_bit_generator": (
        lambda: lax.rng_bit_generator(jnp.zeros(4, jnp.uint32), (2,), dtype=jnp.uint64),
        [("uint64", "rng_bit_generator", "uint32")],
    ),
    "jit_zeros": (lambda: fjax.jit(lambda: jnp.zeros(3, jnp.float64))(), [("float64", "zeros", "float32")]),
    # no warning: Python scalar types, arrays of 64-bit values, 32-bit requests, dtype queries
    "zeros_float": (lambda: jnp.zeros(3, float), []),
    "zeros_int": (lambda: jnp.zeros(3, int), []),
    "array_of_f64_values": (lambda: jnp.array(np.ones(2)), []),
    "asarray_np_scalar": (lambda: jnp.asarray(np.float64(1)), []),
    "astype_f32": (lambda: _x.astype(jnp.float32), []),
    "full_of_f64_value": (lambda: jnp.full(3, np.float64(1.0)), []),
    "zeros_like_of_f64": (lambda: jnp.zeros_like(np.ones(3)), []),
    "arange_np_f64": (lambda: jnp.arange(np.float64(3.0)), []),
    "canonicalize_dtype": (lambda: fjax.dtypes.canonicalize_dtype(jnp.float64), []),
    "result_type_jnp_type": (lambda: jnp.result_type(jnp.float64), []),
    "result_type": (
        lambda: jnp.result_type(np.int64, "float64", np.dtype("uint64"), np.float32, 1.0, float),
        [("int64", "dtype", "int32"), ("float64", "dtype", "float32"), ("uint64", "dtype", "uint32")],
    ),
    "result_type_c_i": (lambda: jnp.result_type(np.complex64, np.int64), [("int64", "dtype", "int32")]),
    "promote_types": (lambda: jnp.promote_types(jnp.float64, jnp.float32), []),
    "finfo": (lambda: jnp.finfo(jnp.float64), []),
    "iinfo": (lambda: jnp.iinfo(jnp.int64), []),
    "issubdtype": (lambda: jnp.issubdtype(jnp.float64, jnp.floating), []),
    "frombuffer": (lambda: jnp.frombuffer(np.ones(2).tobytes(), dtype=jnp.float64), []),
}


@pytest.mark.parametrize("name", sorted(WARNING_CASES))
def test_explicit_x64_request_warns_as_jax(name: str, x32: Any) -> None:
    fn, expected = WARNING_CASES[name]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        fn()
    got = [w for w in rec if "Explicitly requested dtype" in str(w.message)]
    want = [_MSG.format(req=r, where=f" requested in {f}" if f else "", got=t) for r, f, t in expected]
    assert [str(w.message) for w in got] == want
    for w in got:
        assert w.category is UserWarning
        # the warning points at the line that made the request (this file), not at fjax
        assert w.filename == __file__, (w.filename, w.lineno)


def test_explicit_x64_request_result_is_truncated(x32: Any) -> None:
    with pytest.warns(UserWarning, match="requested in zeros"):
        assert jnp.zeros(3, jnp.float64).dtype == np.float32
    with pytest.warns(UserWarning, match="requested in astype"):
        assert _x.astype(np.complex128).dtype == np.complex64
    with pytest.warns(UserWarning, match="requested in argmax"):
        assert lax.argmax(_x, 0, np.int64).dtype == np.int32


@pytest.mark.parametrize("name", sorted(n for n, (_, e) in WARNING_CASES.items() if e))
def test_no_warning_with_x64(name: str, x64: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        WARNING_CASES[name][0]()


def test_internal_requests_do_not_warn(x32: Any) -> None:
    """fjax's own code passes 64-bit dtypes (np.float64 for float64-by-default computations,
    int64 indices, ...): none of that reaches the user as a truncation warning."""
    a = jnp.arange(12.0).reshape(3, 4)
    k = fjax.random.key(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jnp.linalg.norm(a)
        jnp.mean(jnp.arange(5))
        jnp.var(jnp.arange(5))
        jnp.std(a, axis=0)
        jnp.nanmean(jnp.array([1.0, np.nan]))
        jnp.histogram(a, bins=3)
        jnp.interp(jnp.array([0.5]), jnp.arange(3.0), jnp.arange(3.0))
        jnp.linalg.solve(a[:, :3] + 3 * jnp.eye(3), jnp.ones(3))
        jnp.fft.fft(jnp.ones(4))
        jnp.quantile(a, 0.5)
        jnp.polyfit(jnp.arange(4.0), jnp.arange(4.0), 1)
        jnp.argsort(a)
        jnp.unique(jnp.array([1, 2, 2]))
        fjax.random.normal(k, (3,))
        fjax.random.randint(k, (3,), 0, 5)
        fjax.nn.softmax(a)
        fjax.grad(lambda v: jnp.sum(jnp.sin(v) ** 2))(a)
        fjax.jit(lambda v: jnp.cumsum(v, axis=1) @ jnp.ones(4))(a)
        fjax.vmap(jnp.dot)(a, a)


# ---------------------------------------------------------------------------------------------
# 2. nonzero / argwhere / flatnonzero / where(cond): JAX's default int dtype (int64 with x64)

_NZ = np.array([[0, 1], [2, 0]])
NONZERO_CASES: dict[str, Callable[[Any], Any]] = {
    "nonzero": lambda x: jnp.nonzero(x),
    "nonzero_size": lambda x: jnp.nonzero(x, size=3, fill_value=-1),
    "nonzero_method": lambda x: x.nonzero(),
    "nonzero_jit_size": lambda x: fjax.jit(lambda a: jnp.nonzero(a, size=3))(x),
    "argwhere": lambda x: jnp.argwhere(x),
    "argwhere_size": lambda x: jnp.argwhere(x, size=1),
    "argwhere_0d": lambda x: jnp.argwhere(jnp.array(3)),
    "flatnonzero": lambda x: jnp.flatnonzero(x),
    "flatnonzero_size": lambda x: jnp.flatnonzero(x, size=5),
    "where1": lambda x: jnp.where(x),
    "where1_size": lambda x: jnp.where(x, size=3, fill_value=(7, 8)),
    "where1_jit_size": lambda x: fjax.jit(lambda a: jnp.where(a, size=3))(x),
}


@pytest.mark.parametrize("name", sorted(NONZERO_CASES))
@pytest.mark.parametrize("enable", [False, True])
def test_nonzero_index_dtype(name: str, enable: bool) -> None:
    old = config.jax_enable_x64
    config.update("jax_enable_x64", enable)
    try:
        out = NONZERO_CASES[name](jnp.asarray(_NZ))
    finally:
        config.update("jax_enable_x64", old)
    want = np.dtype(np.int64 if enable else np.int32)
    for leaf in out if isinstance(out, tuple) else (out,):
        assert leaf.dtype == want


def test_where_one_argument_is_nonzero() -> None:
    """As JAX's ``where(condition)`` is ``nonzero(condition)``: 0-d refused, a tuple fill_value,
    and a static size under jit (values recorded from JAX 0.10.2)."""
    x = jnp.asarray(_NZ)
    with pytest.raises(ValueError, match="Calling nonzero on 0d arrays is not allowed"):
        jnp.where(jnp.array(3))
    r = jnp.where(x, size=3, fill_value=(7, 8))
    assert [np.asarray(a).tolist() for a in r] == [[0, 1, 7], [1, 0, 8]]
    r = fjax.jit(lambda a: jnp.where(a, size=3))(x)
    assert [np.asarray(a).tolist() for a in r] == [[0, 1, 0], [1, 0, 0]]


# ---------------------------------------------------------------------------------------------
# 3. lax.lt/le/gt/ge refuse complex operands (JAX 0.10.2's TypeError); jnp still orders them

_Z = np.array([1 + 2j, 3 - 1j], np.complex64)
_W = np.array([1 + 3j, 2 + 0j], np.complex64)


def _cmp_msg(name: str, dtype: str, pos: int) -> str:
    return (
        f"{name} does not accept dtype {dtype} at position {pos}. Accepted dtypes at position {pos} are "
        "subtypes of integer, floating, bool."
    )


@pytest.mark.parametrize("name", ["lt", "le", "gt", "ge"])
def test_lax_ordering_comparisons_refuse_complex(name: str, x32: Any) -> None:
    op = getattr(lax, name)
    z, w = jnp.asarray(_Z), jnp.asarray(_W)
    for args, pos in [((z, w), 0), ((z, jnp.ones(2)), 0), ((z, 1 + 0j), 0), ((jnp.ones(1), 1j), 1)]:
        with pytest.raises(TypeError) as e:
            op(*args)
        assert str(e.value) == _cmp_msg(name, "complex64", pos)
    with pytest.raises(TypeError) as e:
        fjax.jit(op)(z, w)
    assert str(e.value) == _cmp_msg(name, "complex64", 0)
    # real operands are unaffected
    assert np.asarray(op(jnp.array([1.0, 2.0]), jnp.array([2.0, 2.0]))).dtype == np.bool_


def test_lax_ordering_comparisons_refuse_complex128_with_x64(x64: Any) -> None:
    with pytest.raises(TypeError) as e:
        lax.lt(jnp.asarray(_Z.astype(np.complex128)), jnp.asarray(_W.astype(np.complex128)))
    assert str(e.value) == _cmp_msg("lt", "complex128", 0)


def test_jnp_orders_complex_lexicographically(x32: Any) -> None:
    """JAX's jnp comparisons, operators, fmax/fmin, sort and max accept complex (values from JAX)."""
    z, w = jnp.asarray(_Z), jnp.asarray(_W)
    assert np.asarray(jnp.less(z, w)).tolist() == [True, False]
    assert np.asarray(jnp.less_equal(z, w)).tolist() == [True, False]
    assert np.asarray(jnp.greater(z, w)).tolist() == [False, True]
    assert np.asarray(jnp.greater_equal(z, w)).tolist() == [False, True]
    assert np.asarray(z < w).tolist() == [True, False]
    assert np.asarray(z >= w).tolist() == [False, True]
    assert np.asarray(jnp.fmax(z, w)).tolist() == [1 + 3j, 3 - 1j]
    assert np.asarray(jnp.fmin(z, w)).tolist() == [1 + 2j, 2 + 0j]
    assert np.asarray(jnp.sort(jnp.asarray(_Z[::-1]))).tolist() == [1 + 2j, 3 - 1j]
    assert complex(jnp.max(z)) == 3 - 1j
    assert np.asarray(jnp.searchsorted(z, w)).tolist() == [1, 1]
    with pytest.raises(TypeError, match="gt does not accept dtype complex64 at position 0"):
        jnp.argmax(z)


# ---------------------------------------------------------------------------------------------
# 4. the eager complex division's fast path is bit-identical to the reference formula


def _old_compose(re: np.ndarray, im: np.ndarray, dtype: np.dtype) -> np.ndarray:
    out = np.empty(np.broadcast(re, im).shape, dtype)
    out.real = re
    out.imag = im
    return out


def _old_signed_unit(mask: np.ndarray, sign_of: np.ndarray) -> np.ndarray:
    return np.copysign(np.where(mask, 1, 0).astype(sign_of.dtype), sign_of)


def _old_complex_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Verbatim copy of fjax.lax._complex_ref.complex_div before its fast path (the reference)."""
    dtype = np.result_type(a, b)
    ar, ai, br, bi = np.real(a), np.imag(a), np.real(b), np.imag(b)
    inf = np.array(np.inf, ar.dtype)
    # Smith's algorithm, dividing by the larger of |br| and |bi|
    r1 = br / bi
    d1 = bi + br * r1
    r2 = bi / br
    d2 = br + bi * r2
    by_imag = np.abs(br) < np.abs(bi)
    cr = np.where(by_imag, (ar * r1 + ai) / d1, (ar + ai * r2) / d2)
    ci = np.where(by_imag, (ai * r1 - ar) / d1, (ai - ar * r2) / d2)
    # corner cases, used only where both parts came out NaN
    zero_den = (br == 0) & (bi == 0) & ~(np.isnan(ar) & np.isnan(ai))
    s = np.copysign(inf, br)
    a_inf_r, a_inf_i = np.abs(ar) == inf, np.abs(ai) == inf
    b_inf_r, b_inf_i = np.abs(br) == inf, np.abs(bi) == inf
    inf_num = (a_inf_r | a_inf_i) & np.isfinite(br) & np.isfinite(bi)
    inf_den = (b_inf_r | b_inf_i) & np.isfinite(ar) & np.isfinite(ai)
    ur, ui = _old_signed_unit(a_inf_r, ar), _old_signed_unit(a_inf_i, ai)
    vr, vi = _old_signed_unit(b_inf_r, br), _old_signed_unit(b_inf_i, bi)
    zero = np.zeros((), ar.dtype)
    both_nan = np.isnan(cr) & np.isnan(ci)
    re = np.select(
        [both_nan & zero_den, both_nan & inf_num, both_nan & inf_den],
        [s * ar, inf * (ur * br + ui * bi), zero * (ar * vr + ai * vi)],
        cr,
    )
    im = np.select(
        [both_nan & zero_den, both_nan & inf_num, both_nan & inf_den],
        [s * ai, inf * (ui * br - ur * bi), zero * (ai * vr - ar * vi)],
        ci,
    )
    return _old_compose(re, im, dtype)


def _specials(real: type) -> np.ndarray:
    fi = np.finfo(real)
    tiny = [fi.smallest_subnormal, fi.tiny]
    huge = [fi.max, fi.max / 4]
    vals = [0.0, 1.0, 1.5, 2.0, *tiny, *huge, np.inf, np.nan]
    return np.array(vals + [-v for v in vals], real)


def _assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Equal shape and dtype; in each part NaN at the same places and every other value with the
    same bits (signed zeros included). A NaN's payload and sign are not compared."""
    assert got.shape == want.shape and got.dtype == want.dtype
    bits = np.uint32 if want.dtype == np.complex64 else np.uint64
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        gn, wn = np.isnan(g), np.isnan(w)
        np.testing.assert_array_equal(gn, wn)
        gb, wb = np.ascontiguousarray(g).view(bits), np.ascontiguousarray(w).view(bits)
        bad = np.flatnonzero((gb != wb) & ~wn)
        assert bad.size == 0, (bad[:5], g.ravel()[bad[:5]], w.ravel()[bad[:5]])


def _div_pair(dtype: type, a: np.ndarray, b: np.ndarray) -> None:
    from fjax.lax import _complex_ref

    with np.errstate(all="ignore"):
        _assert_same_bits(_complex_ref.complex_div(a, b), _old_complex_div(a, b))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_div_special_grid_bit_identical(dtype: type) -> None:
    """Every combination of special values (zeros of both signs, +-1, +-1.5, +-2, subnormal and
    smallest normal, the largest finite values, +-inf, NaN) in the four parts."""
    real = np.float32 if dtype == np.complex64 else np.float64
    v = _specials(real)
    ar, ai, br, bi = (g.ravel() for g in np.meshgrid(v, v, v, v, indexing="ij"))
    a, b = np.empty(ar.shape, dtype), np.empty(br.shape, dtype)
    a.real, a.imag = ar, ai
    b.real, b.imag = br, bi
    _div_pair(dtype, a, b)


def _complex_arrays(draw: Any, dtype: type, n: int) -> np.ndarray:
    from hypothesis import strategies as st

    real = np.float32 if dtype == np.complex64 else np.float64
    width = 32 if real == np.float32 else 64
    special = st.sampled_from(list(_specials(real)))
    anyfloat = st.floats(width=width, allow_nan=True, allow_infinity=True, allow_subnormal=True)
    parts = draw(st.lists(st.one_of(special, anyfloat), min_size=2 * n, max_size=2 * n))
    out = np.empty(n, dtype)
    out.real, out.imag = np.array(parts[0::2], real), np.array(parts[1::2], real)
    return out


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_div_drawn_values_bit_identical(dtype: type, monkeypatch: Any) -> None:
    """Drawn values of all magnitudes mixed with the special ones, in several shapes (broadcast,
    0-d) and with a small block so that several blocks and a short last one are used."""
    from hypothesis import given
    from hypothesis import strategies as st

    from fjax.lax import _complex_ref

    monkeypatch.setattr(_complex_ref, "_DIV_BLOCK", 5)

    @given(st.data())
    def run(data: Any) -> None:
        n = data.draw(st.integers(1, 23))
        a = _complex_arrays(data.draw, dtype, n)
        b = _complex_arrays(data.draw, dtype, n)
        _div_pair(dtype, a, b)
        _div_pair(dtype, a[:1].reshape(()), b)  # 0-d numerator broadcast
        _div_pair(dtype, a, b[:1])  # one divisor for all
        _div_pair(dtype, a.reshape(n, 1), b.reshape(1, n))  # an outer division

    run()


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_div_large_random_bit_identical(dtype: type) -> None:
    """More elements than one block: random magnitudes, 1% special values."""
    real = np.float32 if dtype == np.complex64 else np.float64
    rng = np.random.default_rng(11)
    n = 3 * 8192 + 17
    parts = [rng.standard_normal(n) * 10.0 ** rng.integers(-40, 40, n) for _ in range(4)]
    sp = _specials(real)
    for p in parts:
        hit = rng.random(n) < 0.01
        p[hit] = rng.choice(sp, hit.sum())
    a, b = np.empty(n, dtype), np.empty(n, dtype)
    with np.errstate(all="ignore"):
        a.real, a.imag, b.real, b.imag = (p.astype(real) for p in parts)
    _div_pair(dtype, a, b)
    _div_pair(dtype, a[:0], b[:0])


# jnp.less & co. of complex64 values on the grid of (re, im) in [0, 1, 2, nan, inf, -inf]^2, every
# pair (a from the meshgrid's rows, b from its columns, raveled): recorded from JAX 0.10.2 with
# np.packbits(np.asarray(jnp.less(A, B))).tobytes().hex() (A, B = np.meshgrid(zs, zs) raveled)
_JAX_COMPLEX_ORDER = {
    "greater": (
        "6bffc0fc02bffc0fc00bffc0fc003ffc0fc003ffc0fc0ebffc0fc001afc0fc000afc0fc0002fc0fc"
        "0000fc0fc0000fc0fc003afc0fc0000680fc0000280fc0000080fc0000000fc0000000fc0000e80f"
        "c0000000000000000000000000000000000000000000000000000000000000680000000280000000"
        "080000000000000000000000000e80ffffc0fdaffffc0fcaffffc0fc2ffffc0fc0ffffc0fc0ffffc"
        "0ffa"
    ),
    "greater_equal": (
        "ebffc0fc06bffc0fc02bffc0fc003ffc0fc00bffc0fc0efffc0fc003afc0fc001afc0fc000afc0fc"
        "0000fc0fc0002fc0fc003bfc0fc0000e80fc0000680fc0000280fc0000000fc0000080fc0000ec0f"
        "c0000000000000000000000000000000000000000000000000000000000000e80000000680000000"
        "280000000000000000080000000ec0ffffc0ffaffffc0fdaffffc0fcaffffc0fc0ffffc0fc2ffffc"
        "0ffb"
    ),
    "less": (
        "04000003f84000003fc4000003f00000003fe4000003f00000003ffc100003ffe100003fff100003"
        "ffc000003fff900003ffc000003ffff04003ffff84003ffffc4003ffff00003ffffe4003ffff0000"
        "3f000000000000000000000000000000000000000000000000000000ffffc007fffffc087fffffc0"
        "c7fffffc003fffffc0e7fffffc003f00000000100000002100000003100000000000000003900000"
        "0000"
    ),
    "less_equal": (
        "84000003fc4000003fe4000003f00000003fec000003f04000003ffe100003fff100003fff900003"
        "ffc000003fffb00003ffc100003ffff84003ffffc4003ffffe4003ffff00003ffffec003ffff0400"
        "3f000000000000000000000000000000000000000000000000000000ffffc087fffffc0c7fffffc0"
        "e7fffffc003fffffc0effffffc007f00000002100000003100000003900000000000000003b00000"
        "0001"
    ),
}


@pytest.mark.parametrize("name", sorted(_JAX_COMPLEX_ORDER))
def test_complex_ordering_comparisons_are_jaxs_lexicographic_order(name: str) -> None:
    """A NaN imaginary part decides only where the real parts are equal (numpy's order differs:
    110 of the 1296 pairs); eager and jitted (a host step of the numba backend) alike."""
    vals = [0.0, 1.0, 2.0, np.nan, np.inf, -np.inf]
    zs = np.array([complex(a, b) for a in vals for b in vals], np.complex64)
    A, B = (m.ravel() for m in np.meshgrid(zs, zs))
    want = np.unpackbits(np.frombuffer(bytes.fromhex(_JAX_COMPLEX_ORDER[name]), np.uint8))[: A.size].astype(bool)
    f = getattr(jnp, name)
    np.testing.assert_array_equal(np.asarray(f(A, B)), want)
    np.testing.assert_array_equal(np.asarray(fjax.jit(f)(A, B)), want)
    with np.errstate(invalid="ignore"):
        assert (getattr(np, name)(A, B) != want).sum() == 110  # (numpy's own order: the grid tells them apart)


def test_random_dtype_warnings_point_at_the_callers_line() -> None:
    """As JAX's: the 'Explicitly requested dtype' warning of a sampler names the user's file, not
    fjax's eager-tier or sampler frames between."""
    k = fjax.random.key(0)
    for call in (
        lambda: fjax.random.normal(k, (3,), dtype=jnp.float64),
        lambda: fjax.random.uniform(k, (1000,), dtype=jnp.float64),
        lambda: fjax.random.randint(k, (3,), 0, 5, dtype=jnp.int64),
    ):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            call()
        hits = [x for x in w if "Explicitly requested dtype" in str(x.message)]
        assert hits and all(x.filename == __file__ for x in hits), [(x.filename, x.lineno) for x in hits]


def test_explicit_x64_dtypes_error_mode():
    """``jax_explicit_x64_dtypes="error"``: a truncated explicit request raises JAX 0.10.2's ValueError
    (its text, recorded, with its missing space before "See"); "allow" is not supported."""
    want = (
        "Explicitly requested dtype float64 requested in zeros is not available. To enable more dtypes, set "
        "the jax_enable_x64 or allow_explicit_x64_dtypes configuration options.See "
        "https://github.com/jax-ml/jax#current-gotchas for more."
    )
    fjax.config.update("jax_explicit_x64_dtypes", "error")
    try:
        with pytest.raises(ValueError) as e:
            jnp.zeros(3, jnp.float64)
        assert str(e.value) == want
        with pytest.raises(ValueError, match="complex128 requested in astype"):
            jnp.ones(2).astype(np.complex128)
        assert jnp.zeros(3).dtype == np.float32 and float(jnp.sum(jnp.linspace(0, 1, 3))) == 1.5  # internal: fine
        with fjax.enable_x64():
            assert jnp.zeros(3, jnp.float64).dtype == np.float64
    finally:
        fjax.config.update("jax_explicit_x64_dtypes", "warn")
    with pytest.raises(ValueError, match="'bogus' is not a valid ExplicitX64Mode"):
        fjax.config.update("jax_explicit_x64_dtypes", "bogus")
    with pytest.raises(NotImplementedError, match="allow"):
        fjax.config.update("jax_explicit_x64_dtypes", "allow")
    assert fjax.config.jax_explicit_x64_dtypes == 1  # WARN
