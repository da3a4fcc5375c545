"""JAX 0.10.2's error messages for invalid calls, fixed in session 16 (the families of
``tests/data/error_cases.json`` not yet matched: creation shapes, jax.random, collectives over
unbound axis names, lax and jnp shape/dtype checks), with each family's neighbours and a check that
the valid calls beside them still compute.

Every expected message here was printed by JAX 0.10.2 (CPU, x64 off, numpy 2.4) in a separate
virtual environment (``pip install jax``), running the same call; the suite never imports jax.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp


def _raises(fn) -> tuple[str, str]:
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value).__name__, str(info.value)


# ---------------------------------------------------------------------------------------------
# JAX's messages for bad shapes given to the creation functions (each printed by JAX 0.10.2)

_NONINT = "Shapes must be 1D sequences of concrete values of integer type, got {}."
_NEG = "broadcast_in_dim shape must have every element be nonnegative, got {}."
_F3 = jnp.ones(3, jnp.float32)

CREATION_CASES = [
    *[
        (fn, lambda fn=fn, shape=shape: getattr(jnp, fn)(shape), "TypeError", msg)
        for fn in ("zeros", "ones", "empty")
        for shape, msg in [
            ((2.5,), _NONINT.format("(2.5,)")),
            (2.5, _NONINT.format("(2.5,)")),
            ((2, None), _NONINT.format("(2, None)")),
            ("a", _NONINT.format("('a',)")),
            ((np.float32(2),), _NONINT.format("(np.float32(2.0),)")),
            (((2,),), _NONINT.format("((2,),)")),
            ((-1,), _NEG.format("(-1,)")),
            (-1, _NEG.format("(-1,)")),
            ((2, -3), _NEG.format("(2, -3)")),
        ]
    ],
    *[
        (fn, lambda fn=fn, shape=shape: getattr(jnp, fn)(_F3, shape=shape), "TypeError", msg)
        for fn in ("zeros_like", "ones_like", "empty_like")
        for shape, msg in [((-1,), _NEG.format("(-1,)")), ((2.5,), _NONINT.format("(2.5,)"))]
    ],
    ("full float", lambda: jnp.full((2.5,), 1.0), "TypeError", _NONINT.format("(2.5,)")),
    ("full neg", lambda: jnp.full((-1,), 1.0), "TypeError", _NEG.format("(-1,)")),
    (
        "full neg with array fill",
        lambda: jnp.full((-1,), _F3),
        "ValueError",
        "Incompatible types for broadcasting: input type=float32[3] and requested type=float32[-1]",
    ),
    (
        "full mismatch",
        lambda: jnp.full((2,), _F3),
        "ValueError",
        "Incompatible types for broadcasting: input type=float32[3] and requested type=float32[2]",
    ),
    (
        "full mismatch, dtype given",
        lambda: jnp.full((2,), _F3, dtype=jnp.int32),
        "ValueError",
        "Incompatible types for broadcasting: input type=int32[3] and requested type=int32[2]",
    ),
    (
        "full fewer dims",
        lambda: jnp.full((3,), jnp.ones((2, 3))),
        "ValueError",
        "Cannot broadcast to shape with fewer dimensions: arr_shape=(2, 3) shape=(3,)",
    ),
    (
        "full 2d mismatch",
        lambda: jnp.full((2, 4), jnp.ones((2, 3))),
        "ValueError",
        "Incompatible types for broadcasting: input type=float32[2,3] and requested type=float32[2,4]",
    ),
    (
        "full numpy fill",
        lambda: jnp.full((2,), np.ones(3)),
        "ValueError",
        "Incompatible types for broadcasting: input type=float32[3] and requested type=float32[2]",
    ),
    ("full_like neg", lambda: jnp.full_like(_F3, 1.0, shape=(-1,)), "TypeError", _NEG.format("(-1,)")),
    ("full_like float", lambda: jnp.full_like(_F3, 1.0, shape=(2.5,)), "TypeError", _NONINT.format("(2.5,)")),
    (
        "full_like mismatch",
        lambda: jnp.full_like(_F3, _F3, shape=(2,)),
        "ValueError",
        "Incompatible types for broadcasting: input type=float32[3] and requested type=float32[2]",
    ),
    ("eye -1", lambda: jnp.eye(-1), "ValueError", "negative dimensions are not allowed, got -1 and None"),
    ("eye -1 2", lambda: jnp.eye(-1, 2), "ValueError", "negative dimensions are not allowed, got -1 and 2"),
    ("eye 2 -1", lambda: jnp.eye(2, -1), "ValueError", "negative dimensions are not allowed, got 2 and -1"),
    (
        "eye 2.5",
        lambda: jnp.eye(2.5),
        "TypeError",
        "Shapes must be 1D sequences of concrete values of integer type, got (2.5,). argument of 'N' jnp.eye().",
    ),
    ("identity -1", lambda: jnp.identity(-1), "ValueError", "negative dimensions are not allowed, got -1 and None"),
    (
        "bincount negative length",
        lambda: jnp.bincount(jnp.ones(3, jnp.int32), length=-1),
        "TypeError",
        _NEG.format("(-1,)"),
    ),
]


@pytest.mark.parametrize("case", CREATION_CASES, ids=lambda c: c[0])
def test_creation_shape_errors_are_jaxs(case) -> None:
    _, fn, typ, msg = case
    assert _raises(fn) == (typ, msg)


@given(shape=st.lists(st.integers(0, 3), max_size=3), fill_shape_len=st.integers(0, 3))
def test_full_broadcasts_compatible_fills(shape: list, fill_shape_len: int) -> None:
    fill_shape = tuple(shape[len(shape) - min(fill_shape_len, len(shape)) :])
    fill = np.arange(int(np.prod(fill_shape)), dtype=np.float32).reshape(fill_shape)
    np.testing.assert_array_equal(jnp.full(tuple(shape), fill), np.full(tuple(shape), fill))
    np.testing.assert_array_equal(jnp.zeros(np.array(shape, np.int64)), np.zeros(shape, np.float32))
    np.testing.assert_array_equal(jnp.eye(len(shape) + 1, len(shape)), np.eye(len(shape) + 1, len(shape)))


# ---------------------------------------------------------------------------------------------
# jax.random: JAX 0.10.2's messages for bad seeds, shapes, parameter shapes and implementations

_K = fjax.random.PRNGKey(0)
_SHAPES = "Shapes must be 1D sequences of concrete values of integer type, got {}."
_IMPLS = '"philox2x32", "philox4x32", "threefry2x32", "rbg", "unsafe_rbg", "threefry4x32"'

RANDOM_CASES = [
    ("PRNGKey float", lambda: fjax.random.PRNGKey(1.5), "PRNG key seed must be an integer; got JitTracer(~float32[])"),
    (
        "PRNGKey np.float32",
        lambda: fjax.random.PRNGKey(np.float32(1.5)),
        "PRNG key seed must be an integer; got JitTracer(float32[])",
    ),
    (
        "PRNGKey complex",
        lambda: fjax.random.PRNGKey(1.5 + 0j),
        "PRNG key seed must be an integer; got JitTracer(~complex64[])",
    ),
    (
        "PRNGKey under jit",
        lambda: fjax.jit(fjax.random.PRNGKey)(1.5),
        "PRNG key seed must be an integer; got JitTracer(~float32[])",
    ),
    (
        "key np.float64",
        lambda: fjax.random.key(np.float64(1.5)),
        "PRNG key seed must be an integer; got JitTracer(float32[])",
    ),
    (
        "PRNGKey str",
        lambda: fjax.random.PRNGKey("a"),
        "Value 'a' with dtype <U1 is not a valid JAX array type. Only arrays of numeric types are supported by JAX.",
    ),
    (
        "PRNGKey list",
        lambda: fjax.random.PRNGKey([1]),
        "PRNGKey accepts a scalar seed, but was given an array of shape (1,) != (). Use jax.vmap for batching",
    ),
    ("split float", lambda: fjax.random.split(_K, 2.5), "'float' object cannot be interpreted as an integer"),
    ("split float tuple", lambda: fjax.random.split(_K, (2.5,)), "'float' object cannot be interpreted as an integer"),
    (
        "split np.float32",
        lambda: fjax.random.split(_K, np.float32(2.0)),
        "'numpy.float32' object cannot be interpreted as an integer",
    ),
    ("split str", lambda: fjax.random.split(_K, "a"), "'str' object cannot be interpreted as an integer"),
    ("normal float dim", lambda: fjax.random.normal(_K, (2.0,)), _SHAPES.format("(2.0,)")),
    ("normal float shape", lambda: fjax.random.normal(_K, 2.5), "'float' object is not iterable"),
    ("normal str dim", lambda: fjax.random.normal(_K, ("a",)), _SHAPES.format("('a',)")),
    ("normal None dim", lambda: fjax.random.normal(_K, (None,)), _SHAPES.format("(None,)")),
    ("uniform float dim", lambda: fjax.random.uniform(_K, (2, 2.5)), _SHAPES.format("(2, 2.5)")),
    ("gumbel float dim", lambda: fjax.random.gumbel(_K, (2.5,)), _SHAPES.format("(2.5,)")),
    ("normal typed key", lambda: fjax.random.normal(fjax.random.key(0), (2.5,)), _SHAPES.format("(2.5,)")),
]
RANDOM_VALUE_ERRORS = [
    (
        "bernoulli p",
        lambda: fjax.random.bernoulli(_K, jnp.ones(3), (2,)),
        "Incompatible shapes for broadcasting: shapes=[(2,), (3,)]",
    ),
    (
        "bernoulli p 2d",
        lambda: fjax.random.bernoulli(_K, jnp.ones((3, 4)), (2,)),
        "Incompatible shapes for broadcasting: shapes=[(2,), (3, 4)]",
    ),
    (
        "randint minval",
        lambda: fjax.random.randint(_K, (2,), np.zeros(3, np.int32), 5),
        "Incompatible shapes for broadcasting: shapes=[(2,), (3,), ()]",
    ),
    (
        "randint maxval",
        lambda: fjax.random.randint(_K, (2,), 0, np.zeros(3, np.int32)),
        "Incompatible shapes for broadcasting: shapes=[(2,), (), (3,)]",
    ),
    (
        "randint both",
        lambda: fjax.random.randint(_K, (2,), np.zeros(4, np.int32), np.zeros(3, np.int32)),
        "Incompatible shapes for broadcasting: shapes=[(2,), (4,), (3,)]",
    ),
    (
        "truncated_normal lower",
        lambda: fjax.random.truncated_normal(_K, jnp.ones(3), 1.0, (2,)),
        "Incompatible shapes for broadcasting: shapes=[(2,), (3,), ()]",
    ),
    (
        "uniform minval rank 2",
        lambda: fjax.random.uniform(_K, (2,), minval=jnp.ones((2, 3))),
        "Incompatible shapes for broadcasting: shapes=[(2,), (2, 3)]",
    ),
    (
        "key bad impl",
        lambda: fjax.random.key(0, impl="nope"),
        f'unrecognized PRNG implementation "nope". Did you mean one of: {_IMPLS}?',
    ),
    (
        "key_dtype bad impl",
        lambda: fjax.random.key_dtype("nope"),
        f'unrecognized PRNG implementation "nope". Did you mean one of: {_IMPLS}?',
    ),
]
RANDOM_UNIFORM_TYPE_ERRORS = [
    ("minval", dict(minval=jnp.ones(3)), "mul got incompatible shapes for broadcasting: (2,), (3,)."),
    ("maxval", dict(maxval=jnp.ones(3)), "mul got incompatible shapes for broadcasting: (2,), (3,)."),
    ("both", dict(minval=jnp.ones(4), maxval=jnp.ones(3)), "sub got incompatible shapes for broadcasting: (3,), (4,)."),
]


@pytest.mark.parametrize("case", RANDOM_CASES, ids=lambda c: c[0])
def test_random_type_errors_are_jaxs(case) -> None:
    _, fn, msg = case
    assert _raises(fn) == ("TypeError", msg)


@pytest.mark.parametrize("case", RANDOM_VALUE_ERRORS, ids=lambda c: c[0])
def test_random_value_errors_are_jaxs(case) -> None:
    _, fn, msg = case
    assert _raises(fn) == ("ValueError", msg)


@pytest.mark.parametrize("case", RANDOM_UNIFORM_TYPE_ERRORS, ids=lambda c: c[0])
def test_uniform_bounds_errors_are_jaxs(case) -> None:
    _, kw, msg = case
    assert _raises(lambda: fjax.random.uniform(_K, (2,), **kw)) == ("TypeError", msg)


def test_fold_in_array_data_message_is_jaxs() -> None:
    # JAX 0.10.2 prints "ofshape" (sic)
    assert _raises(lambda: fjax.random.fold_in(_K, jnp.ones((2, 2), jnp.int32))) == (
        "TypeError",
        "fold_in accepts a scalar, but was given an array ofshape (2, 2) != (). Use jax.vmap for batching.",
    )


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg", "philox2x32", "philox4x32", "threefry4x32"])
def test_jaxs_other_prng_impls_are_not_implemented(impl: str) -> None:
    for fn in (lambda: fjax.random.key(0, impl=impl), lambda: fjax.random.PRNGKey(0, impl=impl)):
        with pytest.raises(NotImplementedError, match=f'"{impl}" is not supported by fjax'):
            fn()


def test_bool_seed_is_seed_one_as_in_jax() -> None:
    # JAX 0.10.2: PRNGKey(True) == PRNGKey(1) == [0, 1]
    np.testing.assert_array_equal(fjax.random.PRNGKey(True), [0, 1])
    np.testing.assert_array_equal(fjax.random.key_data(fjax.random.key(True)), [0, 1])


@given(
    lo=st.sampled_from([(), (1,), (2,), (3,), (2, 1)]),
    hi=st.sampled_from([(), (1,), (2,), (3,), (1, 2)]),
)
def test_uniform_bounds_that_fit_still_sample(lo: tuple, hi: tuple) -> None:
    # bounds broadcasting to the shape (2,) sample in [lo, hi); the others raise (as in JAX)
    fits = all(s in ((), (1,), (2,)) for s in (lo, hi))
    call = lambda: fjax.random.uniform(_K, (2,), minval=-jnp.ones(lo), maxval=2 * jnp.ones(hi))  # noqa: E731
    if fits:
        u = np.asarray(call())
        assert u.shape == (2,) and np.all(u >= -1) and np.all(u < 2)
    else:
        with pytest.raises((TypeError, ValueError), match="shapes"):
            call()


# ---------------------------------------------------------------------------------------------
# collectives over an unbound axis name: JAX 0.10.2's NameError, plain where JAX looks the axis
# size up, "Found an unbound axis name" where its bind checks the names


def _found(name: str, who: str) -> str:
    return f"Found an unbound axis name: {name}. To fix this, please call {who} under `jax.shard_map`."


_X3 = jnp.ones(3)
_COLLECTIVES = {
    "psum": (lambda v, n: fjax.lax.psum(v, n), "psum"),
    "pmax": (lambda v, n: fjax.lax.pmax(v, n), "psum"),
    "pmin": (lambda v, n: fjax.lax.pmin(v, n), "psum"),
    "pmean": (lambda v, n: fjax.lax.pmean(v, n), "psum"),
    "axis_index": (lambda v, n: fjax.lax.axis_index(n), "axis_index"),
    "all_gather": (lambda v, n: fjax.lax.all_gather(v, n), None),
    "axis_size": (lambda v, n: fjax.lax.axis_size(n), None),
    "psum_scatter": (lambda v, n: fjax.lax.psum_scatter(v, n), None),
    "all_to_all": (lambda v, n: fjax.lax.all_to_all(v, n, 0, 0), None),
}
# where JAX's message is the plain one although the collective is found by name elsewhere: an eager
# psum / pmean looks the size up
_EAGER_PLAIN = {"psum", "pmean"}


def _unbound_cases():
    for op, (fn, who) in _COLLECTIVES.items():
        plain = lambda n: f"unbound axis name: {n}"  # noqa: E731
        msg = (lambda n, who=who: _found(n, who)) if who else plain
        eager = plain if op in _EAGER_PLAIN or who is None else msg
        yield f"{op} eager", lambda fn=fn: fn(_X3, "i"), eager("i")
        yield f"{op} jit", lambda fn=fn: fjax.jit(lambda v: fn(v, "i"))(_X3), msg("i")
        yield f"{op} vmap other name", lambda fn=fn: fjax.vmap(lambda v: fn(v, "j"), axis_name="i")(_X3), msg("j")
        yield (
            f"{op} vmap names tuple",
            lambda fn=fn: fjax.vmap(lambda v: fn(v, ("i", "j")), axis_name="i")(_X3),
            msg("j"),
        )
        if op in ("psum", "pmean", "axis_index"):
            yield f"{op} grad", lambda fn=fn: fjax.grad(lambda v: jnp.sum(fn(v, "i") * 1.0))(_X3), msg("i")
    yield (
        "psum nested vmap",
        lambda: fjax.vmap(fjax.vmap(lambda v: fjax.lax.psum(v, "k"), axis_name="j"), axis_name="i")(jnp.ones((2, 3))),
        _found("k", "psum"),
    )
    yield (
        "ppermute jit",
        lambda: fjax.jit(lambda v: fjax.lax.ppermute(v, "i", [(0, 1)]))(_X3),
        _found("i", "ppermute"),
    )


@pytest.mark.parametrize("case", list(_unbound_cases()), ids=lambda c: c[0])
def test_unbound_axis_name_errors_are_jaxs(case) -> None:
    _, fn, msg = case
    assert _raises(fn) == ("NameError", msg)


def test_bound_collectives_still_compute() -> None:
    x = jnp.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(fjax.vmap(lambda v: fjax.lax.psum(v, "i"), axis_name="i")(x), np.tile(x.sum(0), (2, 1)))
    got = fjax.vmap(lambda v: fjax.lax.pmean(v, "i"), axis_name="i")(x)
    np.testing.assert_allclose(got, np.tile(np.asarray(x).mean(0), (2, 1)))
    np.testing.assert_array_equal(fjax.vmap(lambda v: fjax.lax.axis_index("i"), axis_name="i")(x), [0, 1])
    got = fjax.vmap(lambda v: fjax.lax.ppermute(v, "i", [(0, 1), (1, 0)]), axis_name="i")(x)
    np.testing.assert_array_equal(got, np.asarray(x)[::-1])
    assert fjax.lax.psum(1, ()) == 1


# ---------------------------------------------------------------------------------------------
# lax shape/dtype checks worded as JAX 0.10.2's (each message printed by JAX for the same call)

_X23 = jnp.ones((2, 3), jnp.float32)
_F = lambda *s: jnp.ones(s, jnp.float32)  # noqa: E731
_I = lambda *s: jnp.ones(s, jnp.int32)  # noqa: E731
_DOT = (
    "jax.lax.dot: dimension_numbers must be specified when not performing simple un-batched matrix-matrix, "
    "matrix-vector, or vector-vector products; got lhs_shape={} rhs_shape={}"
)
_SPATIAL = "convolution dimension_numbers elements must each have the same set of spatial characters, got {}."

LAX_CASES = [
    *[
        case
        for nm in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod")
        for case in [
            (
                f"{nm} oob",
                lambda nm=nm: getattr(fjax.lax, nm)(_X23, (2,)),
                "ValueError",
                "reduction axes (2,) contains out-of-bounds indices for float32[2,3].",
            ),
            (
                f"{nm} negative",
                lambda nm=nm: getattr(fjax.lax, nm)(_X23, (-1,)),
                "ValueError",
                "reduction axes (-1,) contains out-of-bounds indices for float32[2,3].",
            ),
            (
                f"{nm} duplicate",
                lambda nm=nm: getattr(fjax.lax, nm)(_X23, (0, 0)),
                "ValueError",
                "duplicate value in 'axes' of reduction: (0, 0)",
            ),
            (
                f"{nm} jit oob",
                lambda nm=nm: fjax.jit(lambda v: getattr(fjax.lax, nm)(v, (2,)))(_X23),
                "ValueError",
                "reduction axes (2,) contains out-of-bounds indices for float32[2,3].",
            ),
        ]
    ],
    (
        "int32 reduce_sum oob",
        lambda: fjax.lax.reduce_sum(_I(2, 3), (3,)),
        "ValueError",
        "reduction axes (3,) contains out-of-bounds indices for int32[2,3].",
    ),
    (
        "bfloat16 reduce_sum oob",
        lambda: fjax.lax.reduce_sum(jnp.ones((2,), jnp.bfloat16), (3,)),
        "ValueError",
        "reduction axes (3,) contains out-of-bounds indices for bfloat16[2].",
    ),
    (
        "reduce oob",
        lambda: fjax.lax.reduce(_X23, 0.0, fjax.lax.add, (3,)),
        "ValueError",
        "reduction axes (3,) contains out-of-bounds indices for float32[2,3].",
    ),
    (
        "reduce duplicate",
        lambda: fjax.lax.reduce(_X23, 0.0, fjax.lax.add, (0, 0)),
        "ValueError",
        "duplicate value in 'axes' of reduction: (0, 0)",
    ),
    (
        "reduce more operands",
        lambda: fjax.lax.reduce((_X23, _X23), (0.0,), lambda a, b: a, (0,)),
        "ValueError",
        "Operands must have the same tree structure as init_values: PyTreeDef((*, *)) vs. PyTreeDef((*,))",
    ),
    (
        "reduce more inits",
        lambda: fjax.lax.reduce((_X23,), (0.0, 0.0), lambda a, b: a, (0,)),
        "ValueError",
        "Operands must have the same tree structure as init_values: PyTreeDef((*,)) vs. PyTreeDef((*, *))",
    ),
    (
        "reduce dict operands",
        lambda: fjax.lax.reduce({"a": _X23}, (0.0,), lambda a, b: a, (0,)),
        "ValueError",
        "Operands must have the same tree structure as init_values: PyTreeDef({'a': *}) vs. PyTreeDef((*,))",
    ),
    *[
        (f"{fn} axis {ax}", lambda fn=fn, ax=ax: getattr(fjax.lax, fn)(_X23, ax, jnp.int32), "ValueError", msg)
        for fn, ax, msg in [
            ("argmax", 2, "Invalid axis 2 for operand shape (2, 3)"),
            ("argmax", -1, "Invalid axis -1 for operand shape (2, 3)"),
            ("argmin", 3, "Invalid axis 3 for operand shape (2, 3)"),
        ]
    ],
    (
        "argmax float index",
        lambda: fjax.lax.argmax(_X23, 0, jnp.float32),
        "TypeError",
        "index_dtype must be an integer type, but got float32",
    ),
    (
        "argmin float16 index",
        lambda: fjax.lax.argmin(_X23, 0, jnp.float16),
        "TypeError",
        "index_dtype must be an integer type, but got float16",
    ),
    (
        "argmax bool index",
        lambda: fjax.lax.argmax(_X23, 0, jnp.bool_),
        "TypeError",
        "index_dtype must be an integer type, but got bool",
    ),
    (
        "sort shapes",
        lambda: fjax.lax.sort((_F(3), _F(4))),
        "TypeError",
        "Arguments to sort must have equal shapes, got: (3,) (4,)",
    ),
    (
        "sort three shapes",
        lambda: fjax.lax.sort((_F(3), _F(4), _F(2, 2))),
        "TypeError",
        "Arguments to sort must have equal shapes, got: (3,) (4,) (2, 2)",
    ),
    (
        "sort_key_val shapes",
        lambda: fjax.lax.sort_key_val(_F(3), _F(4)),
        "TypeError",
        "Arguments to sort must have equal shapes, got: (3,) (4,)",
    ),
    (
        "sort num_keys 3",
        lambda: fjax.lax.sort((_F(3), _F(3)), num_keys=3),
        "ValueError",
        "num_keys=3 must be between 1 and len(operand)=2",
    ),
    (
        "sort num_keys 0",
        lambda: fjax.lax.sort((_F(3), _F(3)), num_keys=0),
        "ValueError",
        "num_keys=0 must be between 1 and len(operand)=2",
    ),
    (
        "sort num_keys one operand",
        lambda: fjax.lax.sort(_F(3), num_keys=2),
        "ValueError",
        "num_keys=2 must equal 1 for a single operand.",
    ),
    (
        "reduce_window dims",
        lambda: fjax.lax.reduce_window(_F(4, 4), 0.0, fjax.lax.add, (2,), (1, 1), "VALID"),
        "TypeError",
        "reduce_window got the wrong number of window_dimensions for operand: got operand shape (4, 4) with "
        "window_dimensions (2,).",
    ),
    (
        "reduce_window strides",
        lambda: fjax.lax.reduce_window(_F(4, 4), 0.0, fjax.lax.add, (2, 2), (1,), "VALID"),
        "TypeError",
        "reduce_window got inconsistent window_strides and window_dimensions: got window_strides (1,) and "
        "window_dimensions (2, 2).",
    ),
    (
        "reduce_window dims 3",
        lambda: fjax.lax.reduce_window(_F(4, 4), 0.0, fjax.lax.add, (2, 2, 2), (1, 1, 1), "VALID"),
        "TypeError",
        "reduce_window got the wrong number of window_dimensions for operand: got operand shape (4, 4) with "
        "window_dimensions (2, 2, 2).",
    ),
    ("dot", lambda: fjax.lax.dot(_F(2, 3), _F(4, 2)), "ValueError", _DOT.format("(2, 3)", "(4, 2)")),
    ("dot rank 3", lambda: fjax.lax.dot(_F(2, 3, 4), _F(3, 4)), "ValueError", _DOT.format("(2, 3, 4)", "(3, 4)")),
    ("dot vectors", lambda: fjax.lax.dot(_F(3), _F(4)), "ValueError", _DOT.format("(3,)", "(4,)")),
    (
        "fft type",
        lambda: fjax.lax.fft(_F(4).astype(jnp.complex64), "BOGUS", (4,)),
        "ValueError",
        "Unknown FFT type 'BOGUS'",
    ),
    (
        "fft type lower case",
        lambda: fjax.lax.fft(_F(4).astype(jnp.complex64), "bogus", (4,)),
        "ValueError",
        "Unknown FFT type 'bogus'",
    ),
    (
        "fft lengths",
        lambda: fjax.lax.fft(_F(4).astype(jnp.complex64), "FFT", (5,)),
        "ValueError",
        "FFT input shape (4,) minor dimensions must be equal to fft_lengths (5,)",
    ),
    (
        "fft lengths 2d",
        lambda: fjax.lax.fft(_F(3, 4).astype(jnp.complex64), "FFT", (2, 4)),
        "ValueError",
        "FFT input shape (3, 4) minor dimensions must be equal to fft_lengths (2, 4)",
    ),
    (
        "rfft lengths",
        lambda: fjax.lax.fft(_F(4), "RFFT", (5,)),
        "ValueError",
        "RFFT input shape (4,) minor dimensions must be equal to fft_lengths (5,)",
    ),
    (
        "conv dtypes",
        lambda: fjax.lax.conv_general_dilated(_F(1, 2, 5, 5), _I(3, 2, 3, 3), (1, 1), "VALID"),
        "TypeError",
        "lax.conv_general_dilated requires arguments to have the same dtypes, got float32, int32.",
    ),
    (
        "conv dtypes float16",
        lambda: fjax.lax.conv(_F(1, 2, 5, 5), _F(3, 2, 3, 3).astype(jnp.float16), (1, 1), "VALID"),
        "TypeError",
        "lax.conv_general_dilated requires arguments to have the same dtypes, got float32, float16.",
    ),
    (
        "conv strides",
        lambda: fjax.lax.conv_general_dilated(_F(1, 2, 5, 5), _F(3, 2, 3, 3), (1,), "VALID"),
        "ValueError",
        "conv_general_dilated window and window_strides must have the same number of dimensions, but got 2 and 1",
    ),
    (
        "conv strides 3",
        lambda: fjax.lax.conv_general_dilated(_F(1, 2, 5, 5), _F(3, 2, 3, 3), (1, 1, 1), "VALID"),
        "ValueError",
        "conv_general_dilated window and window_strides must have the same number of dimensions, but got 2 and 3",
    ),
    (
        "conv out spec",
        lambda: fjax.lax.conv_general_dilated(
            _F(1, 2, 5, 5), _F(3, 2, 3, 3), (1, 1), "VALID", dimension_numbers=("NCHW", "OIHW", "NCXW")
        ),
        "TypeError",
        _SPATIAL.format("('NCHW', 'OIHW', 'NCXW')"),
    ),
    (
        "conv rhs spec",
        lambda: fjax.lax.conv_general_dilated(
            _F(1, 2, 5, 5), _F(3, 2, 3, 3), (1, 1), "VALID", dimension_numbers=("NCHW", "OIXW", "NCHW")
        ),
        "TypeError",
        _SPATIAL.format("('NCHW', 'OIXW', 'NCHW')"),
    ),
    *[
        (
            f"jnp.{fn} empty",
            lambda fn=fn, shape=shape, axis=axis: getattr(jnp, fn)(jnp.ones(shape), axis=axis),
            "ValueError",
            f"attempt to get {fn} of an empty sequence",
        )
        for fn, shape, axis in [("argmax", (0,), None), ("argmin", (0, 3), 0), ("argmax", (2, 0), 1)]
    ],
]


@pytest.mark.parametrize("case", LAX_CASES, ids=lambda c: c[0])
def test_lax_errors_are_jaxs(case) -> None:
    _, fn, typ, msg = case
    assert _raises(fn) == (typ, msg)


@given(
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    data=st.data(),
)
def test_valid_reductions_and_sorts_still_compute(shape: list, data) -> None:
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)[..., ::-1].copy()
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1)))))
    np.testing.assert_allclose(fjax.lax.reduce_sum(jnp.asarray(x), axes), x.sum(axes))
    np.testing.assert_allclose(fjax.lax.reduce(jnp.asarray(x), 0.0, fjax.lax.add, axes), x.sum(axes))
    ax = data.draw(st.integers(0, len(shape) - 1))
    np.testing.assert_array_equal(fjax.lax.argmax(jnp.asarray(x), ax, jnp.int32), x.argmax(ax))
    np.testing.assert_array_equal(fjax.lax.sort(jnp.asarray(x), ax), np.sort(x, ax))


# ---------------------------------------------------------------------------------------------
# jnp axis and shape checks worded as JAX 0.10.2's (each message printed by JAX for the same call)

_DUP = "duplicate value in 'axis': {}"
_ONES13 = jnp.ones((1, 3))
_PERM = "transpose permutation isn't a permutation of operand dimensions, got permutation {} for operand shape (2, 3)."
_QMETHOD = "method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' or 'inverted_cdf'"

JNP_CASES = [
    *[
        (f"{fn} duplicate axis", lambda fn=fn: getattr(jnp, fn)(_X23, axis=(0, 0)), "ValueError", _DUP.format("(0, 0)"))
        for fn in ("sum", "prod", "max", "min", "any", "all", "mean", "var", "std", "nansum", "count_nonzero", "ptp")
    ],
    ("sum (1, -1)", lambda: jnp.sum(_X23, (1, -1)), "ValueError", _DUP.format("(1, -1)")),
    ("vector_norm duplicate", lambda: jnp.linalg.vector_norm(_X23, axis=(0, 0)), "ValueError", _DUP.format("(0, 0)")),
    ("median duplicate axis", lambda: jnp.median(_X23, axis=(0, 0)), "ValueError", "repeated axis"),
    ("average duplicate axis", lambda: jnp.average(_X23, axis=(0, 0)), "ValueError", "repeated axis: (0, 0)"),
    ("squeeze duplicate", lambda: jnp.squeeze(_ONES13, (0, 0)), "ValueError", "dimensions are not unique: (0, 0)"),
    (
        "method squeeze duplicate",
        lambda: jnp.ones((1, 3)).squeeze((0, 0)),
        "ValueError",
        "dimensions are not unique: (0, 0)",
    ),
    ("flip duplicate", lambda: jnp.flip(_X23, (0, 0)), "TypeError", "rev dimensions must be unique, got (0, 0)."),
    (
        "expand_dims repeated",
        lambda: jnp.expand_dims(jnp.ones(3), (0, 0)),
        "ValueError",
        "repeated axis in lax.expand_dims: (0, 0)",
    ),
    (
        "expand_dims repeated list",
        lambda: jnp.expand_dims(jnp.ones(3), [1, 1]),
        "ValueError",
        "repeated axis in lax.expand_dims: (1, 1)",
    ),
    (
        "lax.expand_dims repeated",
        lambda: fjax.lax.expand_dims(jnp.ones(3), (0, 0)),
        "ValueError",
        "repeated axis in lax.expand_dims: (0, 0)",
    ),
    ("transpose", lambda: jnp.transpose(_X23, (1, 1)), "TypeError", _PERM.format("(1, 1)")),
    ("transpose negative", lambda: jnp.transpose(_X23, (-1, 1)), "TypeError", _PERM.format("(1, 1)")),
    ("method transpose", lambda: _X23.transpose((1, 1)), "TypeError", _PERM.format("(1, 1)")),
    ("method transpose args", lambda: _X23.transpose(1, 1), "TypeError", _PERM.format("(1, 1)")),
    ("permute_dims", lambda: jnp.permute_dims(_X23, (1, 1)), "TypeError", _PERM.format("(1, 1)")),
    (
        "take_along_axis float",
        lambda: jnp.take_along_axis(_X23, jnp.ones((2, 1)), 1),
        "TypeError",
        "take_along_axis indices must be of integer type, got float32",
    ),
    (
        "take_along_axis bool",
        lambda: jnp.take_along_axis(_X23, jnp.ones((2, 1), bool), 1),
        "TypeError",
        "take_along_axis indices must be of integer type, got bool",
    ),
    (
        "take_along_axis shape",
        lambda: jnp.take_along_axis(_X23, jnp.ones((3, 1), jnp.int32), 1),
        "ValueError",
        "Incompatible shapes for broadcasting: shapes=[(3, 1), (2, 1)]",
    ),
    (
        "take_along_axis shape axis 0",
        lambda: jnp.take_along_axis(_X23, jnp.ones((1, 4), jnp.int32), 0),
        "ValueError",
        "Incompatible shapes for broadcasting: shapes=[(1, 4), (1, 3)]",
    ),
    (
        "take_along_axis 3d",
        lambda: jnp.take_along_axis(jnp.ones((2, 3, 4)), jnp.ones((3, 1, 4), jnp.int32), 1),
        "ValueError",
        "Incompatible shapes for broadcasting: shapes=[(3, 1, 4), (2, 1, 4)]",
    ),
    (
        "rot90 1d",
        lambda: jnp.rot90(jnp.ones(3)),
        "ValueError",
        "rot90 requires its first argument to have ndim at least two, but got first argument of shape (3,), which "
        "has ndim 1",
    ),
    ("rot90 same axes", lambda: jnp.rot90(_X23, axes=(0, 0)), "ValueError", "Axes must be different"),
    ("rot90 same axes negative", lambda: jnp.rot90(_X23, axes=(1, -1)), "ValueError", "Axes must be different"),
    ("rot90 3 axes", lambda: jnp.rot90(_X23, axes=(0, 1, 2)), "ValueError", "too many values to unpack (expected 2)"),
    ("tril 1d", lambda: jnp.tril(jnp.ones(3)), "ValueError", "Argument to jax.numpy.tril must be at least 2D"),
    ("triu 1d", lambda: jnp.triu(jnp.ones(3)), "ValueError", "Argument to jax.numpy.triu must be at least 2D"),
    ("trace 1d", lambda: jnp.trace(jnp.ones(3)), "ValueError", "axis 1 is out of bounds for array of dimension 1"),
    (
        "interp lengths",
        lambda: jnp.interp(1.0, jnp.ones(3), jnp.ones(4)),
        "ValueError",
        "xp and fp must be one-dimensional arrays of equal size",
    ),
    (
        "interp 2d",
        lambda: jnp.interp(1.0, jnp.ones((3, 1)), jnp.ones(3)),
        "ValueError",
        "xp and fp must be one-dimensional arrays of equal size",
    ),
    ("quantile method", lambda: jnp.quantile(_X23, 0.5, method="bogus"), "ValueError", _QMETHOD),
    ("percentile method", lambda: jnp.percentile(_X23, 50, method="bogus"), "ValueError", _QMETHOD),
    ("nanquantile method", lambda: jnp.nanquantile(_X23, 0.5, method="bogus"), "ValueError", _QMETHOD),
]


@pytest.mark.parametrize("case", JNP_CASES, ids=lambda c: c[0])
def test_jnp_errors_are_jaxs(case) -> None:
    _, fn, typ, msg = case
    assert _raises(fn) == (typ, msg)


@given(shape=st.lists(st.integers(1, 3), min_size=2, max_size=3), data=st.data())
def test_valid_axes_still_compute(shape: list, data) -> None:
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    np.testing.assert_array_equal(jnp.transpose(jnp.asarray(x), perm), np.transpose(x, perm))
    np.testing.assert_array_equal(jnp.asarray(x).transpose(*perm), x.transpose(*perm))
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
    np.testing.assert_allclose(jnp.sum(jnp.asarray(x), axes), x.sum(axes))
    np.testing.assert_allclose(jnp.average(jnp.asarray(x), axes), np.average(x, axes))
    np.testing.assert_array_equal(jnp.rot90(jnp.asarray(x), 1, (0, 1)), np.rot90(x, 1, (0, 1)))
    np.testing.assert_array_equal(jnp.tril(jnp.asarray(x)), np.tril(x))
    idx = np.zeros(shape[:-1] + [1], np.int32)
    np.testing.assert_array_equal(jnp.take_along_axis(jnp.asarray(x), idx, -1), np.take_along_axis(x, idx, -1))


# ---------------------------------------------------------------------------------------------
# jnp argument checks worded as JAX 0.10.2's: non-array arguments, bitwise dtypes, FFT sizes and
# float slice entries (each message printed by JAX for the same call)

_X5 = jnp.ones(5)
_ARRAYLIKE = "{} requires ndarray or scalar arguments, got {} at position {}."


def _bitwise(op: str, dt: str = "float32", kinds: str = "integer, bool") -> str:
    return f"{op} does not accept dtype {dt} at position 0. Accepted dtypes at position 0 are subtypes of {kinds}."


JNP_ARG_CASES = [
    ("where None y", lambda: jnp.where(_X5 > 0, _X5, None), _ARRAYLIKE.format("where", "<class 'NoneType'>", 2)),
    ("where None x", lambda: jnp.where(_X5 > 0, None, _X5), _ARRAYLIKE.format("where", "<class 'NoneType'>", 1)),
    ("where list", lambda: jnp.where(_X5 > 0, [1.0] * 5, _X5), _ARRAYLIKE.format("where", "<class 'list'>", 1)),
    ("sum list", lambda: jnp.sum([1, 2]), _ARRAYLIKE.format("sum", "<class 'list'>", 0)),
    ("sum None", lambda: jnp.sum(None), _ARRAYLIKE.format("sum", "<class 'NoneType'>", 0)),
    ("sum dict", lambda: jnp.sum({"a": 1}), _ARRAYLIKE.format("sum", "<class 'dict'>", 0)),
    ("add list", lambda: jnp.add([1, 2], _X5[:2]), _ARRAYLIKE.format("add", "<class 'list'>", 0)),
    ("full list", lambda: jnp.full((2,), [1.0, 2.0]), _ARRAYLIKE.format("full", "<class 'list'>", 0)),
    ("sin tuple", lambda: jnp.sin((1.0, 2.0)), _ARRAYLIKE.format("sin", "<class 'tuple'>", 0)),
    ("bitwise_and", lambda: jnp.bitwise_and(_X5, 1), _bitwise("and")),
    ("bitwise_and int, float", lambda: jnp.bitwise_and(1, _X5), _bitwise("and")),
    ("bitwise_or", lambda: jnp.bitwise_or(_X5, _X5), _bitwise("or")),
    ("bitwise_xor bool, float", lambda: jnp.bitwise_xor(_X5 > 0, _X5), _bitwise("xor")),
    ("bitwise_and complex", lambda: jnp.bitwise_and(_X5.astype(jnp.complex64), 1), _bitwise("and", "complex64")),
    ("operator &", lambda: _X5 & 1, _bitwise("and")),
    ("operator |", lambda: 1 | _X5, _bitwise("or")),
    ("left_shift", lambda: jnp.left_shift(_X5, 1), _bitwise("shift_left", kinds="integer")),
    (
        "left_shift int, float",
        lambda: jnp.left_shift(jnp.ones(5, jnp.int32), _X5),
        _bitwise("shift_left", kinds="integer"),
    ),
    ("right_shift", lambda: jnp.right_shift(_X5, 1), _bitwise("shift_right_arithmetic", kinds="integer")),
    (
        "right_shift uint, float",
        lambda: jnp.right_shift(jnp.ones(5, jnp.uint32), _X5),
        _bitwise("shift_right_arithmetic", kinds="integer"),
    ),
    ("operator <<", lambda: _X5 << 1, _bitwise("shift_left", kinds="integer")),
    ("operator >>", lambda: _X5 >> 1, _bitwise("shift_right_arithmetic", kinds="integer")),
    *[
        (name, fn, "not does not accept dtype float32. Accepted dtypes are subtypes of integer, bool.")
        for name, fn in [("invert", lambda: jnp.invert(_X5)), ("operator ~", lambda: ~_X5)]
    ],
    (
        "bitwise_count",
        lambda: jnp.bitwise_count(_X5),
        "population_count does not accept dtype float32. Accepted dtypes are subtypes of integer.",
    ),
    ("slice float step", lambda: _X5[0:2:0.5], "'float' object cannot be interpreted as an integer"),
    ("slice float start", lambda: _X5[0.5:2], "'float' object cannot be interpreted as an integer"),
    ("slice float stop", lambda: _X5[0:2.5], "'float' object cannot be interpreted as an integer"),
    (
        "slice numpy float step",
        lambda: _X5[0 : 2 : np.float32(1)],
        "'numpy.float32' object cannot be interpreted as an integer",
    ),
    ("at[] float step", lambda: _X5.at[0:2:0.5].set(1.0), "'float' object cannot be interpreted as an integer"),
]

FFT_SIZES = [
    ("fft n=0", lambda: jnp.fft.fft(_X5, n=0)),
    ("fft n=-1", lambda: jnp.fft.fft(_X5, n=-1)),
    ("irfft n=-2", lambda: jnp.fft.irfft(_X5, n=-2)),
    ("rfft n=0", lambda: jnp.fft.rfft(_X5, n=0)),
    ("ifft n=0", lambda: jnp.fft.ifft(_X5, n=0)),
    ("hfft n=0", lambda: jnp.fft.hfft(_X5, n=0)),
    ("fft2 s=(0, 2)", lambda: jnp.fft.fft2(jnp.ones((5, 5)), s=(0, 2))),
    ("fftn s=(2, -1)", lambda: jnp.fft.fftn(jnp.ones((5, 5)), s=(2, -1))),
]


@pytest.mark.parametrize("case", JNP_ARG_CASES, ids=lambda c: c[0])
def test_jnp_argument_type_errors_are_jaxs(case) -> None:
    _, fn, msg = case
    assert _raises(fn) == ("TypeError", msg)


@pytest.mark.parametrize("case", FFT_SIZES, ids=lambda c: c[0])
def test_fft_sizes_are_jaxs(case) -> None:
    assert _raises(case[1]) == ("ValueError", "Shape should be positive.")


@given(a=st.integers(-8, 8), b=st.integers(0, 3), lo=st.integers(0, 4), step=st.integers(1, 3))
def test_bitwise_shift_and_slices_still_compute(a: int, b: int, lo: int, step: int) -> None:
    x = np.array([a, a + 1], np.int32)
    np.testing.assert_array_equal(jnp.bitwise_and(x, 3), x & 3)
    np.testing.assert_array_equal(jnp.left_shift(x, b), x << b)
    np.testing.assert_array_equal(jnp.right_shift(x, b), x >> b)
    np.testing.assert_array_equal(jnp.invert(x), ~x)
    y = np.arange(6.0, dtype=np.float32)
    np.testing.assert_array_equal(jnp.asarray(y)[lo : 5 : np.int64(step)], y[lo:5:step])
    np.testing.assert_array_equal(jnp.where(y > 2, y, -y), np.where(y > 2, y, -y))


# ---------------------------------------------------------------------------------------------
# JAX's class names in control-flow structure reports, and lax.stop_gradient's type check


def test_scan_carry_structure_report_names_jaxs_aval_class() -> None:
    # JAX 0.10.2 names the carry leaf <class 'jax._src.core.ShapedArray'>
    msg = _raises(lambda: fjax.lax.scan(lambda c, x: ((c, c), x), jnp.float32(0), jnp.ones(3)))[1]
    assert "is a <class 'jax._src.core.ShapedArray'> but the corresponding component of the carry output is a " in msg
    assert "<class 'tuple'>, so their Python types differ." in msg
    msg = _raises(lambda: fjax.lax.fori_loop(0, 3, lambda i, c: (c, c), jnp.float32(0)))[1]
    assert "<class 'jax._src.core.ShapedArray'>" in msg and "_core_values" not in msg


@pytest.mark.parametrize(
    "value, shown",
    [("abc", "Argument 'abc' of type <class 'str'>"), ([1.0, "x"], "Argument 'x' of type <class 'str'>")],
)
def test_stop_gradient_of_non_arrays_is_jaxs_type_error(value, shown: str) -> None:
    assert _raises(lambda: fjax.lax.stop_gradient(value)) == ("TypeError", f"{shown} is not a valid JAX type")


def test_stop_gradient_still_stops_gradients() -> None:
    g = fjax.grad(lambda x: jnp.sum(x * fjax.lax.stop_gradient({"a": x, "b": None})["a"]))(jnp.arange(3.0))
    np.testing.assert_array_equal(g, np.arange(3.0))


# JAX 0.10.2 transforms empty axes to empty results (shape, dtype as it printed them)
EMPTY_FFTS = [
    ("fft of (0,)", lambda: jnp.fft.fft(jnp.ones(0)), (0,), "complex64"),
    ("ifft ortho of (0,)", lambda: jnp.fft.ifft(jnp.ones(0), norm="ortho"), (0,), "complex64"),
    ("fft2 of (0, 3)", lambda: jnp.fft.fft2(jnp.ones((0, 3))), (0, 3), "complex64"),
    ("fft axis 0 of (3, 0)", lambda: jnp.fft.fft(jnp.ones((3, 0)), axis=0), (3, 0), "complex64"),
    ("irfft of (1,)", lambda: jnp.fft.irfft(jnp.ones(1)), (0,), "float32"),
    ("irfft of (0,)", lambda: jnp.fft.irfft(jnp.ones(0)), (0,), "float32"),
    ("irfftn of (2, 1)", lambda: jnp.fft.irfftn(jnp.ones((2, 1))), (2, 0), "float32"),
    ("hfft of (1,)", lambda: jnp.fft.hfft(jnp.ones(1)), (0,), "float32"),
]


@pytest.mark.parametrize("case", EMPTY_FFTS, ids=lambda c: c[0])
def test_empty_ffts_are_empty_as_in_jax(case) -> None:
    _, fn, shape, dtype = case
    out = fn()
    assert (out.shape, str(out.dtype)) == (shape, dtype)
