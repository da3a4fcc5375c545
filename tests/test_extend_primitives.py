"""Primitives defined outside fjax with JAX's extension API (``jax.extend.core.Primitive``,
``jax.interpreters.mlir/ad/batching``), as equinox and other libraries define theirs.

- ``impl`` computes with ``jax.numpy`` on arrays and receives fjax Arrays (fjax's own primitives
  get numpy arrays); the abstract-eval rule receives avals, also eagerly;
- ``mlir.register_lowering(p, mlir.lower_fun(impl))`` makes ``jit`` expand ``p`` into ``impl``'s
  jaxpr, so it compiles and fuses (without it, a compiled program calls ``impl`` as a host step);
- ``batching.axis_primitive_batchers`` / ``fancy_primitive_batchers`` rules see the axis.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.core import ShapedArray
from fjax.extend import core as ec
from fjax.interpreters import ad, batching, mlir


def _make(name: str, lowered: bool) -> ec.Primitive:
    p = ec.Primitive(name)
    seen: dict = {}

    def impl(x, *, k):
        seen["type"] = type(x)
        return jnp.sin(x) * k + x.at[0].get()  # ``.at`` exists on Arrays, not on numpy arrays

    def abstract(x, *, k):
        seen["aval"] = type(x)
        return ShapedArray(x.shape, x.dtype)

    p.def_impl(impl)
    p.def_abstract_eval(abstract)
    ad.primitive_jvps[p] = lambda primals, tangents, *, k: (
        p.bind(primals[0], k=k),
        ad.instantiate_zeros(tangents[0]) * jnp.cos(primals[0]) * k + ad.instantiate_zeros(tangents[0])[0],
    )
    if lowered:
        mlir.register_lowering(p, mlir.lower_fun(impl, multiple_results=False))
    p.seen = seen  # type: ignore[attr-defined]
    return p


def _ref(x: np.ndarray, k: float) -> np.ndarray:
    return np.sin(x) * k + x[0]


@pytest.mark.parametrize("lowered", [False, True])
def test_impl_gets_arrays_and_abstract_eval_gets_avals(lowered):
    p = _make(f"ext_sin_{lowered}", lowered)
    x = np.array([0.5, 1.0, -2.0], np.float32)
    # eagerly, as JAX's evaluation: impl on the arguments as given, no abstract evaluation
    out = p.bind(jnp.asarray(x), k=3.0)
    assert p.seen == {"type": fjax.Array}
    np.testing.assert_allclose(np.asarray(out), _ref(x, 3.0), rtol=1e-6)
    jitted = fjax.jit(lambda x: p.bind(x, k=3.0) * 2.0)
    np.testing.assert_allclose(np.asarray(jitted(x)), 2 * _ref(x, 3.0), rtol=1e-6)
    assert p.seen["aval"] is ShapedArray  # tracing: avals
    if not lowered:  # compiled: impl runs as a host step, on Arrays over the program's buffers
        assert p.seen["type"] is fjax.Array


def test_eager_bind_passes_python_scalars_to_impl():
    p = ec.Primitive("ext_scalar")
    got = []
    p.def_impl(lambda x: got.append(type(x)) or x * 2 + 1)
    p.def_abstract_eval(lambda x: x)
    assert p.bind(1) == 3 and got == [int]
    assert isinstance(fjax.jit(p.bind)(1), fjax.Array)


def test_lower_fun_expands_under_jit_into_fused_kernels():
    plain, lowered = _make("ext_host", False), _make("ext_lowered", True)
    x = jnp.ones(4)
    ir_plain = fjax.jit(lambda x: plain.bind(x, k=2.0) + 1).lower(x).as_text("ir")
    ir_lowered = fjax.jit(lambda x: lowered.bind(x, k=2.0) + 1).lower(x).as_text("ir")
    assert "host" in ir_plain and "ext_host" in ir_plain  # no rule: impl runs as a host step
    assert "host" not in ir_lowered and "ext_lowered" not in ir_lowered
    assert "sin(" in ir_lowered  # impl's operations are compiled
    # the jaxpr the user sees keeps the primitive
    assert "ext_lowered" in str(fjax.make_jaxpr(lambda x: lowered.bind(x, k=2.0))(x))


@settings(deadline=None, max_examples=15)
@given(
    hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=5),
        elements=st.floats(-3, 3, width=32),
    ),
    st.floats(-2, 2),
)
def test_lower_fun_in_control_flow_grad_and_vmap(x, k):
    p = _make("ext_cf", True)
    k = float(np.float32(k))

    def f(x):
        def body(c, row):
            return c + jnp.sum(p.bind(row, k=k)), None

        return lax.scan(body, jnp.float32(0), x.reshape(x.shape[0], -1))[0]

    want = sum(float(np.sum(_ref(r, k))) for r in x.reshape(x.shape[0], -1))
    np.testing.assert_allclose(float(fjax.jit(f)(x)), want, rtol=1e-5, atol=1e-5)
    g = fjax.jit(fjax.grad(f))(x)
    rows = x.reshape(x.shape[0], -1)
    want_g = np.cos(rows) * k
    want_g[:, 0] += rows.shape[1]
    np.testing.assert_allclose(np.asarray(g).reshape(rows.shape), want_g, rtol=1e-5, atol=1e-5)


def test_lower_fun_with_multiple_results_and_constants():
    p = ec.Primitive("ext_two")
    p.multiple_results = True
    table = np.arange(4.0, dtype=np.float32)

    def impl(x):
        return [x + jnp.asarray(table), x * 2]

    p.def_impl(impl)
    p.def_abstract_eval(lambda x: [ShapedArray(x.shape, x.dtype)] * 2)
    mlir.register_lowering(p, mlir.lower_fun(impl))
    a, b = fjax.jit(lambda x: p.bind(x))(jnp.ones(4))
    np.testing.assert_array_equal(np.asarray(a), 1 + table)
    np.testing.assert_array_equal(np.asarray(b), 2 * np.ones(4))


def test_mlir_rules_that_need_mlir_are_recorded_and_impl_runs():
    p = ec.Primitive("ext_mlir_only")
    p.def_impl(lambda x: x + 1)
    p.def_abstract_eval(lambda x: x)

    def rule(ctx, x):  # written against MLIR: cannot be used by fjax
        raise AssertionError("never called")

    mlir.register_lowering(p, rule, platform="cpu")
    assert mlir.lowerings[p]["cpu"] is rule
    np.testing.assert_array_equal(np.asarray(fjax.jit(lambda x: p.bind(x))(jnp.zeros(2))), [1, 1])
    with pytest.raises(NotImplementedError, match="emit_python_callback"):
        mlir.emit_python_callback(None, None)
    with pytest.raises(NotImplementedError, match="lower_fun"):
        mlir.lower_fun(lambda x: x)(None, 1.0)


def test_axis_primitive_batchers_get_axis_size_and_name():
    p = ec.Primitive("ext_axis")
    p.def_impl(lambda x: x * 2)
    p.def_abstract_eval(lambda x: x)
    got = {}

    def rule(axis_size, axis_name, trace_type, vals, dims):
        got.update(size=axis_size, name=axis_name)
        (x,), (d,) = vals, dims
        return p.bind(x) + axis_size, d

    batching.axis_primitive_batchers[p] = rule
    assert p in batching.axis_primitive_batchers and batching.axis_primitive_batchers[p] is rule
    out = fjax.vmap(lambda x: p.bind(x), axis_name="i")(jnp.arange(6.0).reshape(3, 2))
    assert got == {"size": 3, "name": "i"}
    np.testing.assert_array_equal(np.asarray(out), np.arange(6.0).reshape(3, 2) * 2 + 3)
    # unbatched operands do not reach the rule
    out = fjax.vmap(lambda x: x + p.bind(jnp.ones(2)))(jnp.zeros((3, 2)))
    np.testing.assert_array_equal(np.asarray(out), np.full((3, 2), 2.0))


def test_every_primitive_is_an_extend_primitive():
    assert isinstance(lax.sin_p, ec.Primitive)
    assert issubclass(type(lax.add_p), ec.Primitive)
    assert not isinstance(object(), ec.Primitive)
    assert ec.Primitive("x").get_bind_params({"a": 1}) == {"a": 1}


@pytest.mark.parametrize(
    "dtype, want",
    [(np.float32, "float32[2]"), (np.int32, "float0[2]"), (np.bool_, "float0[2]"), (np.complex64, "complex64[2]")],
)
def test_to_tangent_aval(dtype, want):
    t = ShapedArray((2,), dtype).to_tangent_aval()
    assert str(t) == want and repr(t) == f"ShapedArray({want})"
    assert ShapedArray((), np.float32, True).to_tangent_aval().weak_type


def test_lower_fun_primitives_run_on_the_standin_gpu():
    import _standin_gpu  # noqa: PLC0415  (tests/ is on the path)

    from fjax.backends.cuda import emulate  # noqa: PLC0415

    if emulate.compiler() is None:
        pytest.skip("the CUDA emulator needs a C++ compiler")
    p = _make("ext_gpu", True)
    x = np.array([0.5, 1.0, -2.0], np.float32)
    with _standin_gpu.installed():
        got, want = _standin_gpu.both(lambda x: p.bind(x, k=3.0) + 1, x)
        # eagerly on a GPU array: the one-primitive program is expanded too
        on_gpu = fjax.device_put(x, fjax.devices("gpu")[0])
        eager = np.asarray(fjax.lax.add(p.bind(on_gpu * 1.0, k=3.0), 0.0))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(got, _ref(x, 3.0) + 1, rtol=1e-6)
    np.testing.assert_allclose(eager, _ref(x, 3.0), rtol=1e-6)
