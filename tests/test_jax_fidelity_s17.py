"""Differences from JAX 0.10.2 fixed in session 17 (more in ``tests/test_jax_fidelity_s17_messages.py``):
the tracing errors under ``jit`` and ``make_jaxpr`` (``if`` on a traced value, ``int()``/``float()``/
``__index__``/``__array__``/``tolist()`` of one) say what JAX's say: the traced array's type with full
dtype names, the traced function (``name at file:line``) and the arguments the value depends on (by
their names and key paths), then the link to the error's page; a staged tracer prints
``JitTracer(~int32[])``. Also: traced and non-integer shapes, traced boolean masks and
non-broadcasting advanced indices, int overflow in ``jnp.array``, typed-key arithmetic, unsupported
dtypes, the ``convert_element_type`` a weak operand gets in a jaxpr, ``lax.bitcast_convert_type_p``
and ``jax.debug.callback``'s printed parameters.

Every expected message and jaxpr here was printed by JAX 0.10.2 (CPU, x64 off, numpy 2.4) in a
separate virtual environment (``pip install jax``), running the same call from a file at another
path; the file and line JAX names are those of the function traced, so they are rebuilt here from
the function's code object. The suite never imports jax; this file itself was run under JAX
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


def _raises(fn) -> tuple[str, str]:
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value).__name__, str(info.value)


def _g(x):
    if x > 0:
        return x
    return -x


def _where(fn) -> str:
    code = fn.__code__
    return f"{fn.__name__} at {code.co_filename}:{code.co_firstlineno}"


def _origin(fn, args: str) -> str:
    return (
        f"\nThe error occurred while tracing the function {_where(fn)} for jit. This concrete value was "
        f"not available in Python because it depends on {args}."
    )


def _bool_msg(fn, args: str, shape: str = "bool[]") -> str:
    origin = _origin(fn, args)
    return f"Attempted boolean conversion of traced array with shape {shape}.{origin}{_PAGE}TracerBoolConversionError"


_two = lambda a, b: _g(a + b)  # noqa: E731
_three = lambda a, b, c: _g(a + b + c)  # noqa: E731
_dict = lambda d: _g(d["a"])  # noqa: E731
_star = lambda *a: _g(a[1])  # noqa: E731
_kw = lambda a, k=2.0: _g(k)  # noqa: E731

# (call, the function JAX names, the arguments it names), as JAX 0.10.2 printed them
BOOL_CASES = {
    "make_jaxpr": (lambda: fjax.make_jaxpr(_g)(1.0), _g, "the value of the argument x"),
    "jit": (lambda: fjax.jit(_g)(1.0), _g, "the value of the argument x"),
    "two arguments": (lambda: fjax.jit(_two)(1.0, 2.0), _two, "the values of the arguments a and b"),
    "three arguments": (lambda: fjax.jit(_three)(1.0, 2.0, 3.0), _three, "the values of the arguments a, b, and c"),
    "dict argument": (lambda: fjax.jit(_dict)({"a": 1.0}), _dict, "the value of the argument d['a']"),
    "*args": (lambda: fjax.jit(_star)(1.0, 2.0), _star, "the value of the argument a[1]"),
    "keyword": (lambda: fjax.jit(_kw)(1.0, k=3.0), _kw, "the value of the argument k"),
}


@pytest.mark.parametrize("name", BOOL_CASES)
def test_bool_conversion_names_the_function_and_arguments(name):
    call, fn, args = BOOL_CASES[name]
    assert _raises(call) == ("TracerBoolConversionError", _bool_msg(fn, args))


def test_static_argument_is_not_counted():
    f = lambda a, k: _g(k)  # noqa: E731
    got = _raises(lambda: fjax.jit(f, static_argnums=0)(1.0, 3.0))
    assert got == ("TracerBoolConversionError", _bool_msg(f, "the value of the argument k"))


def test_nested_jit_names_the_inner_function_and_its_argument():
    inner = lambda b: _g(OUTER[0] + b)  # noqa: E731
    OUTER: list = []

    def outer(a):
        OUTER[:] = [a]
        return fjax.jit(inner)(a)

    # JAX: the outer value is a constant of the inner jit; only the inner argument b is named
    got = _raises(lambda: fjax.jit(outer)(1.0))
    assert got == ("TracerBoolConversionError", _bool_msg(inner, "the value of the argument b"))


def _conv(fn_name: str) -> str:
    return (
        f"The problem arose with the `{fn_name}` function. If trying to convert the data type of a value, try "
        f"using `x.astype({fn_name})` or `jnp.array(x, {fn_name})` instead."
    )


def _concrete(shape: str, context: str, fn, args: str) -> str:
    return (
        f"Abstract tracer value encountered where concrete value is expected: traced array with shape {shape}\n"
        f"{context}{_origin(fn, args)}\n{_PAGE}ConcretizationTypeError"
    )


_int = lambda x: int(x)  # noqa: E731
_float = lambda x: float(x)  # noqa: E731
_complex = lambda x: complex(x)  # noqa: E731
_index = lambda i: [1, 2, 3][i]  # noqa: E731
_asarray = lambda x: np.asarray(x)  # noqa: E731
_tolist = lambda x: x.tolist()  # noqa: E731
_X = "the value of the argument x"

CONVERSION_CASES = {
    "int": (
        lambda: fjax.jit(_int)(1.0),
        "ConcretizationTypeError",
        _concrete("float32[]", _conv("int"), _int, _X),
    ),
    "float": (
        lambda: fjax.jit(_float)(1.0),
        "ConcretizationTypeError",
        _concrete("float32[]", _conv("float"), _float, _X),
    ),
    "complex": (
        lambda: fjax.jit(_complex)(jnp.float32(1.0)),
        "ConcretizationTypeError",
        _concrete("float32[]", _conv("complex"), _complex, _X),
    ),
    "__index__": (
        lambda: fjax.jit(_index)(1),
        "TracerIntegerConversionError",
        "The __index__() method was called on traced array with shape int32[]"
        f"{_origin(_index, 'the value of the argument i')}{_PAGE}TracerIntegerConversionError",
    ),
    "__array__": (
        lambda: fjax.jit(_asarray)(jnp.ones(2)),
        "TracerArrayConversionError",
        "The numpy.ndarray conversion method __array__() was called on traced array with shape float32[2]"
        f"{_origin(_asarray, _X)}{_PAGE}TracerArrayConversionError",
    ),
    # JAX names the origin twice: in the tolist() context and after it
    "tolist": (
        lambda: fjax.jit(_tolist)(jnp.ones(3)),
        "ConcretizationTypeError",
        _concrete(
            "float32[3]",
            f"The tolist() method was called on traced array with shape float32[3].{_origin(_tolist, _X)}",
            _tolist,
            _X,
        ),
    ),
}


@pytest.mark.parametrize("name", CONVERSION_CASES)
def test_conversion_errors_are_jaxs(name):
    call, typ, msg = CONVERSION_CASES[name]
    assert _raises(call) == (typ, msg)


def test_staged_tracer_repr_is_jaxs():
    seen = []

    @fjax.jit
    def f(x, n):
        seen.extend([repr(x), repr(n), str(x), f"{x}"])
        return x

    f(jnp.ones(3), 2)
    # JAX 0.10.2: a weakly typed tracer's type is marked with ~
    assert seen == ["JitTracer(float32[3])", "JitTracer(~int32[])", "JitTracer(float32[3])", "JitTracer(float32[3])"]


def test_jax_error_classes_take_jaxs_arguments():
    # libraries raise jax.errors classes with a tracer (JAX's constructors)
    seen = []

    def f(x):
        seen.append(fjax.errors.ConcretizationTypeError(x, "some context"))
        seen.append(fjax.errors.TracerBoolConversionError(x))
        return x

    fjax.jit(f)(1.0)
    assert str(seen[0]) == _concrete("float32[]", "some context", f, _X)
    assert str(seen[1]) == _bool_msg(f, _X, "float32[]")


@given(st.integers(1, 6), st.integers(0, 5))
def test_named_argument_is_the_one_the_value_depends_on(n, k):
    # a function of n arguments branching on the k-th one names exactly that argument
    k = k % n
    names = [f"a{i}" for i in range(n)]
    src = f"lambda {', '.join(names)}: _g({names[k]})"
    fn = eval(src, {"_g": _g})  # noqa: S307 - a generated signature
    got = _raises(lambda: fjax.jit(fn)(*[float(i) for i in range(n)]))
    assert got[0] == "TracerBoolConversionError"
    assert f"depends on the value of the argument {names[k]}.\n" in got[1]


def test_values_still_computed():
    # the valid neighbours: a static argument, a concrete value under grad
    assert fjax.jit(_g, static_argnums=0)(2.0) == 2.0
    assert float(fjax.grad(_g)(-2.0)) == -1.0
    assert fjax.jit(lambda x: x.shape[0] + 0)(jnp.ones(4)) == 4


# ---------------------------------------------------------------------------------------------
# a traced size where a shape needs a concrete one (JAX's canonicalize_shape), and other shapes
# that are not integers; each message as JAX 0.10.2 printed it

_JIT_HINT = "\nIf using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions."
_N = "the value of the argument n"


def _shape_msg(got: str, fn=None, context: str = "") -> str:
    msg = f"Shapes must be 1D sequences of concrete values of integer type, got {got}.{context}"
    return msg if fn is None else msg + _JIT_HINT + _origin(fn, _N)


_X6 = jnp.ones(6)
_reshape_n = lambda x, n: x.reshape(n, -1)  # noqa: E731
_jnp_reshape_n = lambda x, n: jnp.reshape(x, (n, -1))  # noqa: E731
_ones_n2 = lambda n: jnp.ones((n, 2))  # noqa: E731
_full_2n = lambda n: jnp.full((2, n), 1.0)  # noqa: E731
_empty_n = lambda n: jnp.empty(n)  # noqa: E731
_zeros_like_n = lambda n: jnp.zeros_like(_X6, shape=(n,))  # noqa: E731
_broadcast_to_n = lambda x, n: jnp.broadcast_to(x, (n, 6))  # noqa: E731
_lax_full_n = lambda n: fjax.lax.full((n,), 1.0)  # noqa: E731
_iota_n = lambda n: fjax.lax.iota(jnp.int32, n)  # noqa: E731
_lax_reshape_n = lambda x, n: fjax.lax.reshape(x, (n, 3))  # noqa: E731
_normal_n = lambda n: fjax.random.normal(fjax.random.key(0), (n,))  # noqa: E731
_eye_n = lambda n: jnp.eye(n)  # noqa: E731
_dslice_n = lambda x, n: fjax.lax.dynamic_slice(x, (0,), (n,))  # noqa: E731
_dslice_in_dim_n = lambda x, n: fjax.lax.dynamic_slice_in_dim(x, 0, n)  # noqa: E731
_repeat_n = lambda x, n: jnp.repeat(x, n)  # noqa: E731

SHAPE_CASES = {
    "jnp.reshape float": (lambda: jnp.reshape(_X6, (2.5, -1)), "TypeError", _shape_msg("(2.5, -1)")),
    "jnp.reshape None": (lambda: jnp.reshape(_X6, (None, -1)), "TypeError", _shape_msg("(None, -1)")),
    "Array.reshape float": (lambda: _X6.reshape(2.5, -1), "TypeError", _shape_msg("(2.5, -1)")),
    "Array.reshape traced": (
        lambda: fjax.jit(_reshape_n)(_X6, 2),
        "TypeError",
        _shape_msg("(JitTracer(~int32[]), -1)", _reshape_n),
    ),
    "jnp.reshape traced": (
        lambda: fjax.jit(_jnp_reshape_n)(_X6, 2),
        "TypeError",
        _shape_msg("(JitTracer(~int32[]), -1)", _jnp_reshape_n),
    ),
    "lax.dynamic_slice float size": (
        lambda: fjax.lax.dynamic_slice(_X6, (0,), (2.5,)),
        "TypeError",
        _shape_msg("(2.5,)"),
    ),
    "lax.dynamic_slice traced size": (
        lambda: fjax.jit(_dslice_n)(_X6, 2),
        "TypeError",
        _shape_msg("(JitTracer(~int32[]),)", _dslice_n),
    ),
    "lax.dynamic_slice_in_dim traced size": (
        lambda: fjax.jit(_dslice_in_dim_n)(_X6, 2),
        "TracerIntegerConversionError",
        "The __index__() method was called on traced array with shape int32[]"
        f"{_origin(_dslice_in_dim_n, _N)}{_PAGE}TracerIntegerConversionError",
    ),
    "jnp.ones traced": (lambda: fjax.jit(_ones_n2)(2), "TypeError", _shape_msg("(JitTracer(~int32[]), 2)", _ones_n2)),
    "jnp.full traced": (lambda: fjax.jit(_full_2n)(2), "TypeError", _shape_msg("(2, JitTracer(~int32[]))", _full_2n)),
    "jnp.empty traced": (lambda: fjax.jit(_empty_n)(2), "TypeError", _shape_msg("(JitTracer(~int32[]),)", _empty_n)),
    "jnp.zeros_like traced shape": (
        lambda: fjax.jit(_zeros_like_n)(2),
        "TypeError",
        _shape_msg("(JitTracer(~int32[]),)", _zeros_like_n),
    ),
    "jnp.broadcast_to traced": (
        lambda: fjax.jit(_broadcast_to_n)(_X6, 2),
        "TypeError",
        _shape_msg("(JitTracer(~int32[]), 6)", _broadcast_to_n),
    ),
    "lax.full traced": (
        lambda: fjax.jit(_lax_full_n)(2),
        "TypeError",
        _shape_msg("(JitTracer(~int32[]),)", _lax_full_n),
    ),
    "lax.iota traced": (lambda: fjax.jit(_iota_n)(2), "TypeError", _shape_msg("(JitTracer(~int32[]),)", _iota_n)),
    "lax.reshape traced": (
        lambda: fjax.jit(_lax_reshape_n)(_X6, 2),
        "TypeError",
        _shape_msg("(JitTracer(~int32[]), 3)", _lax_reshape_n),
    ),
    "random.normal traced shape": (
        lambda: fjax.jit(_normal_n)(2),
        "TypeError",
        _shape_msg("(JitTracer(~int32[]),)", _normal_n),
    ),
    "jnp.eye traced": (
        lambda: fjax.jit(_eye_n)(2),
        "TypeError",
        _shape_msg("(JitTracer(~int32[]),)", _eye_n, " argument of 'N' jnp.eye()."),
    ),
    "jnp.repeat traced repeats": (
        lambda: fjax.jit(_repeat_n)(_X6, 2),
        "ConcretizationTypeError",
        _concrete(
            "int32[]",
            "When jit-compiling jnp.repeat, the total number of repeats must be static. To fix this, either specify "
            "a static value for `repeats`, or pass a static value to `total_repeat_length`.",
            _repeat_n,
            _N,
        ),
    ),
}


@pytest.mark.parametrize("name", SHAPE_CASES)
def test_shape_errors_are_jaxs(name):
    call, typ, msg = SHAPE_CASES[name]
    assert _raises(call) == (typ, msg)


def test_shapes_still_computed():
    # the valid neighbours: concrete sizes given as arrays and numpy integers, static sizes under jit
    assert jnp.zeros(jnp.int32(3)).shape == (3,)
    assert jnp.ones((jnp.array(2), np.int64(3))).shape == (2, 3)
    assert _X6.reshape(jnp.array(2), 3).shape == (2, 3)
    assert fjax.jit(_jnp_reshape_n, static_argnums=1)(_X6, 2).shape == (2, 3)
    assert fjax.jit(_dslice_n, static_argnums=1)(_X6, 4).shape == (4,)
    np.testing.assert_array_equal(fjax.lax.dynamic_slice(jnp.arange(6), (np.int32(1),), (np.int64(3),)), [1, 2, 3])


# ---------------------------------------------------------------------------------------------
# indexing: a traced boolean mask, advanced indices that do not broadcast (JAX's ValueError)

_A456 = jnp.ones((4, 5, 6))
_MASK = jnp.array([True, False, True, False])

INDEX_CASES = {
    "mask under jit": (lambda: fjax.jit(lambda m: _A456[m])(_MASK), "NonConcreteBooleanIndexError"),
    "mask at[].set under jit": (
        lambda: fjax.jit(lambda m: _A456.at[m].set(0.0))(_MASK),
        "NonConcreteBooleanIndexError",
    ),
    "mask under vmap": (
        lambda: fjax.vmap(lambda m: _A456[m])(jnp.stack([_MASK, _MASK])),
        "NonConcreteBooleanIndexError",
    ),
}


@pytest.mark.parametrize("name", INDEX_CASES)
def test_traced_mask_error_is_jaxs(name):
    call, typ = INDEX_CASES[name]
    assert _raises(call) == (
        typ,
        f"Array boolean indices must be concrete; got bool[4]\n{_PAGE}NonConcreteBooleanIndexError",
    )


@pytest.mark.parametrize(
    "index, shapes",
    [
        (([0, 1], [1, 2, 3]), "[(2,), (3,)]"),
        ((0, [0, 1], [1, 2, 3]), "[(), (2,), (3,)]"),
        (([0, 1], slice(None), [1, 2, 3]), "[(2,), (3,)]"),
        ((np.array([[0], [1]]), [1, 2, 3], [1, 2]), "[(2, 1), (3,), (2,)]"),
    ],
)
def test_index_broadcast_error_is_jaxs(index, shapes):
    want = ("ValueError", f"Incompatible shapes for broadcasting: shapes={shapes}")
    assert _raises(lambda: _A456[index]) == want
    assert _raises(lambda: _A456.at[index].set(0.0)) == want


# ---------------------------------------------------------------------------------------------
# jnp.array of a Python int outside an explicit integer dtype: numpy's words (JAX converts with
# np.array); beyond 64 bits, and without a dtype, JAX's own


@pytest.mark.parametrize(
    "call, msg",
    [
        (lambda: jnp.array(2**40, dtype=jnp.int32), "Python integer 1099511627776 out of bounds for int32"),
        (lambda: jnp.asarray(2**40, dtype=jnp.int32), "Python integer 1099511627776 out of bounds for int32"),
        (lambda: jnp.array(2**31, dtype=jnp.int32), "Python integer 2147483648 out of bounds for int32"),
        (lambda: jnp.array(-(2**31) - 1, jnp.int32), "Python integer -2147483649 out of bounds for int32"),
        (lambda: jnp.array(300, jnp.uint8), "Python integer 300 out of bounds for uint8"),
        (lambda: jnp.array(-1, jnp.uint32), "Python integer -1 out of bounds for uint32"),
        (lambda: jnp.array([1, 2**40], jnp.int32), "Python integer 1099511627776 out of bounds for int32"),
        (lambda: jnp.int32(2**40), "Python integer 1099511627776 out of bounds for int32"),
        (lambda: jnp.array(2**64), "Python int 18446744073709551616 too large to convert to int32"),
        (lambda: jnp.array(2**40), "Python int 1099511627776 too large to convert to int32"),
    ],
)
def test_int_overflow_messages_are_jaxs(call, msg):
    assert _raises(call) == ("OverflowError", msg)


@given(st.integers(-(2**31), 2**31 - 1))
def test_ints_in_range_still_convert(v):
    assert int(jnp.array(v, dtype=jnp.int32)) == v
    assert int(jnp.array(20, jnp.int4)) == 4  # int4 wraps, as JAX's (ml_dtypes)


# ---------------------------------------------------------------------------------------------
# smaller families: the context of a traced jnp.arange / jnp.split argument, nn.one_hot's axis,
# digitize's 2-D bins (JAX's digitize is jitted, so it names bins as a tracer), logsumexp's b

_arange_n = lambda n: jnp.arange(n)  # noqa: E731
_arange_1n = lambda n: jnp.arange(1, n)  # noqa: E731
_split_n = lambda x, n: jnp.split(x, n)  # noqa: E731

SMALL_CASES = {
    "jnp.arange traced stop": (
        lambda: fjax.jit(_arange_n)(3),
        "ConcretizationTypeError",
        _concrete("int32[]", "It arose in the jnp.arange argument 'stop'", _arange_n, _N),
    ),
    "jnp.arange traced second": (
        lambda: fjax.jit(_arange_1n)(3),
        "ConcretizationTypeError",
        _concrete("int32[]", "It arose in the jnp.arange argument 'stop'", _arange_1n, _N),
    ),
    "jnp.split traced sections": (
        lambda: fjax.jit(_split_n)(_X6, 2),
        "ConcretizationTypeError",
        _concrete("int32[]", "in jax.numpy.split argument 1", _split_n, _N),
    ),
    "one_hot axis": (
        lambda: fjax.nn.one_hot(jnp.arange(3), 4, axis=3),
        "ValueError",
        "axis 3 is out of bounds for array of dimension 2",
    ),
    "digitize 2-D bins": (
        lambda: jnp.digitize(jnp.ones(3), jnp.ones((2, 2))),
        "ValueError",
        "digitize: bins must be a 1-dimensional array; got bins=JitTracer(float32[2,2])",
    ),
    "logsumexp b shape": (
        lambda: fjax.scipy.special.logsumexp(jnp.ones(3), b=jnp.ones(4)),
        "ValueError",
        "Incompatible shapes for broadcasting: shapes=[(4,), (3,), ()]",
    ),
}


@pytest.mark.parametrize("name", SMALL_CASES)
def test_small_families_are_jaxs(name):
    call, typ, msg = SMALL_CASES[name]
    assert _raises(call) == (typ, msg)


def test_logsumexp_with_b_still_computed():
    a, b = np.arange(3.0, dtype=np.float32), np.array([[1.0, 0.0, 2.0], [0.5, 1.0, 1.0]], np.float32)
    want = np.log(np.sum(b * np.exp(a)))
    np.testing.assert_allclose(fjax.scipy.special.logsumexp(jnp.asarray(a), b=jnp.asarray(b)), want, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# arithmetic on typed PRNG keys: JAX's TypeErrors (jnp's, naming both dtypes, against a number;
# lax's, naming the accepted dtypes, between two keys) and its conversion error

_K = fjax.random.key(0)
_I16 = jnp.ones(2, jnp.int16)
_ARITH = "integer, floating, complexfloating"
_BITS = "integer, bool"
_CMP = "integer, floating, bool"
# operator: (jnp's name, lax's name, accepted kinds; None where JAX fails on numpy's dtype parsing)
_KEY_OPS = {
    "+": ("add", "add", _ARITH),
    "-": ("subtract", "sub", _ARITH),
    "*": ("multiply", "mul", _ARITH),
    "/": ("true_divide", None, None),
    "//": ("floor_divide", None, None),
    "%": ("remainder", None, None),
    "&": ("bitwise_and", "and", _BITS),
    "|": ("bitwise_or", "or", _BITS),
    "^": ("bitwise_xor", "xor", _BITS),
    "<<": ("left_shift", None, None),
    ">>": ("right_shift", None, None),
    "<": ("less", "lt", _CMP),
    "<=": ("less_equal", "le", _CMP),
    ">": ("greater", "gt", _CMP),
    ">=": ("greater_equal", "ge", _CMP),
}
_MIRROR = {"<": "greater", "<=": "greater_equal", ">": "less", ">=": "less_equal"}


def _apply(op: str, a, b):
    return eval(f"a {op} b", {"a": a, "b": b})  # noqa: S307 - one of the operators above


@pytest.mark.parametrize("op", _KEY_OPS)
@pytest.mark.parametrize("other, other_dtype", [(1, "int32"), (2.0, "float32"), (_I16, "int16")])
def test_key_arithmetic_with_numbers_is_jaxs_error(op, other, other_dtype):
    jnp_name = _KEY_OPS[op][0]
    assert _raises(lambda: _apply(op, _K, other)) == (
        "TypeError",
        f"{jnp_name} does not accept dtypes key<fry>, {other_dtype}.",
    )
    if isinstance(other, (int, float)):
        # a Python number on the left: JAX reflects comparisons to their mirror
        if op in _MIRROR:
            want = f"{_MIRROR[op]} does not accept dtypes key<fry>, {other_dtype}."
        else:
            want = f"{jnp_name} does not accept dtypes {other_dtype}, key<fry>."
        assert _raises(lambda: _apply(op, other, _K)) == ("TypeError", want)


@pytest.mark.parametrize("op", _KEY_OPS)
def test_key_arithmetic_between_keys_is_jaxs_error(op):
    _, lax_name, kinds = _KEY_OPS[op]
    if lax_name is None:
        want = "Cannot interpret 'key<fry>' as a data type"
    else:
        want = (
            f"{lax_name} does not accept dtype key<fry> at position 0. Accepted dtypes at position 0 are subtypes "
            f"of {kinds}."
        )
    assert _raises(lambda: _apply(op, _K, _K)) == ("TypeError", want)


def test_key_unary_and_conversion_errors_are_jaxs():
    assert _raises(lambda: -_K) == (
        "TypeError",
        f"neg does not accept dtype key<fry>. Accepted dtypes are subtypes of {_ARITH}.",
    )
    assert _raises(lambda: abs(_K)) == (
        "TypeError",
        "abs does not accept dtype key<fry>. Accepted dtypes are subtypes of floating, complexfloating, signedinteger.",
    )
    assert _raises(lambda: ~_K) == (
        "TypeError",
        f"not does not accept dtype key<fry>. Accepted dtypes are subtypes of {_BITS}.",
    )
    assert _raises(lambda: jnp.asarray(_K, dtype=np.float32)) == (
        "ValueError",
        "Cannot convert_element_type from key<fry> to float32",
    )
    assert _raises(lambda: fjax.lax.convert_element_type(_K, jnp.uint32)) == (
        "ValueError",
        "Cannot convert_element_type from key<fry> to uint32",
    )
    # what still works: +key, comparing keys, their data
    assert bool(+_K == _K)
    assert bool(_K == _K) and not bool(_K != _K)
    assert fjax.random.key_data(_K).dtype == np.uint32


# ---------------------------------------------------------------------------------------------
# a dtype fjax (like JAX) does not support, given to a public function: JAX's TypeError naming it


@pytest.mark.parametrize(
    "call, msg",
    [
        (lambda: fjax.lax.convert_element_type(jnp.ones(2), object), "<class 'object'> in convert_element_type"),
        (lambda: jnp.ones(2).astype(object), "<class 'object'> in astype"),
        (lambda: jnp.zeros(2, object), "<class 'object'> in zeros"),
        (lambda: jnp.array([1.0], dtype=object), "<class 'object'> in array"),
        (lambda: jnp.asarray(jnp.ones(2), dtype="O"), "O in asarray"),
        (lambda: fjax.lax.convert_element_type(jnp.ones(2), np.str_), "<class 'numpy.str_'> in convert_element_type"),
        (lambda: fjax.lax.convert_element_type(jnp.ones(2), np.dtype("V4")), "|V4 in convert_element_type"),
        (lambda: jnp.ones(2, np.datetime64), "<class 'numpy.datetime64'> in ones"),
    ],
)
def test_unsupported_dtype_messages_are_jaxs(call, msg):
    assert _raises(call) == ("TypeError", f"JAX only supports number, bool, and string dtypes, got dtype {msg}")
    assert _raises(lambda: jnp.zeros(2, "foo")) == ("TypeError", "data type 'foo' not understood")


# ---------------------------------------------------------------------------------------------
# make_jaxpr: a weakly typed traced scalar meeting a strongly typed array of its dtype is converted
# first (convert_element_type[... weak_type=False]), as JAX's promotion does; two weak operands,
# and lax (which does not promote), stage no conversion. Texts printed by JAX 0.10.2.

_F32_3, _I32_3 = jnp.ones(3), jnp.ones(3, jnp.int32)


def _conv_then(op: str, a: str, b: str, dt: str, short: str, out: str, first: bool = True) -> str:
    args = "c b" if first else "b c"
    return (
        f"{{ lambda ; a:{a}[] b:{b}[3]. let\n"
        f"    c:{short}[] = convert_element_type[new_dtype={dt} weak_type=False] a\n"
        f"    d:{out}[3] = {op} {args}\n"
        "  in (d,) }"
    )


WEAK_CASES = {
    "weak + f32": (lambda x, y: x + y, (1.0, _F32_3), _conv_then("add", "f32", "f32", "float32", "f32", "f32")),
    "weak + f16": (
        lambda x, y: x + y,
        (1.0, jnp.ones(3, jnp.float16)),
        _conv_then("add", "f32", "f16", "float16", "f16", "f16"),
    ),
    "f16 + weak": (
        lambda x, y: y + x,
        (1.0, jnp.ones(3, jnp.float16)),
        _conv_then("add", "f32", "f16", "float16", "f16", "f16", first=False),
    ),
    "weak int + i32": (lambda x, y: x + y, (1, _I32_3), _conv_then("add", "i32", "i32", "int32", "i32", "i32")),
    "weak int * f32": (lambda x, y: x * y, (1, _F32_3), _conv_then("mul", "i32", "f32", "float32", "f32", "f32")),
    "maximum": (
        lambda x, y: jnp.maximum(x, y),
        (1.0, _F32_3),
        _conv_then("max", "f32", "f32", "float32", "f32", "f32"),
    ),
    "weak * weak": (lambda x, y: x * y, (1.0, 2.0), "{ lambda ; a:f32[] b:f32[]. let c:f32[] = mul a b in (c,) }"),
    "lax.add": (
        lambda x, y: fjax.lax.add(x, y),
        (1.0, jnp.float32(2)),
        "{ lambda ; a:f32[] b:f32[]. let c:f32[] = add a b in (c,) }",
    ),
}


@pytest.mark.parametrize("name", WEAK_CASES)
def test_weak_operand_is_converted_as_jax(name):
    fn, args, want = WEAK_CASES[name]
    assert str(fjax.make_jaxpr(fn)(*args)) == want


@given(st.floats(-10, 10, allow_nan=False, width=32), st.sampled_from([np.float16, np.float32, np.int32]))
def test_weak_promotion_values_unchanged(s, dt):
    y = jnp.arange(3).astype(dt)
    got = fjax.jit(lambda a, b: a * b + a)(s if dt != np.int32 else int(s), y)
    sv = s if dt != np.int32 else int(s)
    want = (np.asarray(sv, dtype=dt) * np.arange(3).astype(dt) + np.asarray(sv, dtype=dt)).astype(dt)
    assert got.dtype == dt
    np.testing.assert_allclose(np.asarray(got, np.float64), want.astype(np.float64), rtol=1e-3)


# ---------------------------------------------------------------------------------------------
# lax.bitcast_convert_type_p: the primitive an equal-width bitcast stages (JAX 0.10.2's text)


def test_bitcast_convert_type_p_is_the_staged_primitive():
    closed = fjax.make_jaxpr(lambda x: fjax.lax.bitcast_convert_type(x, jnp.int32))(jnp.ones(3))
    assert str(closed) == (
        "{ lambda ; a:f32[3]. let\n    b:i32[3] = bitcast_convert_type[new_dtype=int32] a\n  in (b,) }"
    )
    assert closed.jaxpr.eqns[0].primitive is fjax.lax.bitcast_convert_type_p
    assert closed.jaxpr.eqns[0].params == {"new_dtype": np.dtype("int32")}
    np.testing.assert_array_equal(
        fjax.lax.bitcast_convert_type(jnp.ones(3), jnp.int32), np.ones(3, np.float32).view(np.int32)
    )


# ---------------------------------------------------------------------------------------------
# jax.debug.callback's staged equation prints JAX 0.10.2's parameters (its callback's address
# masked, as JAX masks it; the number of X's is the address's length, so it is normalized here)


def _cb_text(effect: str, operands: str) -> str:
    return (
        "    debug_callback[\n"
        "      callback=<function debug_callback.<locals>._debug_callback.<locals>._flat_callback at 0xX>\n"
        f"      effect={effect}\n"
        "      partitioned=False\n"
        f"    ] {operands}\n"
    )


def _masked(closed) -> str:
    import re

    return re.sub(r"0xX+>", "0xX>", str(closed))


def test_debug_callback_prints_jaxs_params():
    def cb(*_):
        pass

    def f(x):
        fjax.debug.callback(cb, x)
        return x + 1

    def g(x):
        fjax.debug.callback(cb, x, ordered=True)
        return x

    def h(x):
        fjax.debug.callback(lambda a, b: None, x, b=x * 2)
        return x

    assert _masked(fjax.make_jaxpr(f)(jnp.ones(3))) == (
        "{ lambda ; a:f32[3]. let\n" + _cb_text("Debug", "a") + "    b:f32[3] = add a 1.0:f32[]\n  in (b,) }"
    )
    assert (
        _masked(fjax.make_jaxpr(g)(1.0)) == "{ lambda ; a:f32[]. let\n" + _cb_text("OrderedDebug", "a") + "  in (a,) }"
    )
    assert _masked(fjax.make_jaxpr(h)(1.0)) == (
        "{ lambda ; a:f32[]. let\n    b:f32[] = mul a 2.0:f32[]\n" + _cb_text("Debug", "a b") + "  in (a,) }"
    )


def test_debug_callback_still_called_with_values():
    seen = []
    fjax.jit(lambda x: fjax.debug.callback(lambda v: seen.append(np.asarray(v)), x) or x)(jnp.arange(3.0))
    fjax.debug.callback(lambda v, w=None: seen.append((float(v), float(w))), 2.0, w=3.0)
    np.testing.assert_array_equal(seen[0], [0.0, 1.0, 2.0])
    assert seen[1] == (2.0, 3.0)
