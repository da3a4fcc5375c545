"""``jax.no_tracing``, ``jax.no_execution`` and ``jax.allow_f16_reductions``, and how config options
read (``jax_numpy_dtype_promotion`` as an enum, ``config.read``). Expected behaviour recorded with
JAX 0.10.2 (messages, which calls raise)."""

import importlib
import threading

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import core, lax
from fjax.config import NumpyDtypePromotion, config

jit_mod = importlib.import_module("fjax.jit")  # (``fjax.jit`` names the function)


def _double(x):
    return x * 2


def _src(fn):
    return f"{fn.__name__} at {fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"


# ---- no_tracing ------------------------------------------------------------------------------


def test_no_tracing_cached_signature_runs_new_one_raises():
    jf = fjax.jit(_double)
    x = jnp.float32(1.0)
    jf(x)
    with fjax.no_tracing():
        assert float(jf(x)) == 2.0
        assert jf.lower(x) is not None  # a cached trace is lowered again without tracing
        with pytest.raises(RuntimeError) as e:
            jf(jnp.ones(5))
    assert str(e.value) == f"re-tracing function {_src(_double)} for `jit`, but 'no_tracing' is set"
    assert float(jf(jnp.float32(3.0))) == 6.0  # on again after the block


def test_no_tracing_transforms_of_jitted_function_raise():
    # JAX retraces a jitted function called with tracers (grad, vmap, inside another jit), even
    # when its eager signature is cached
    jf = fjax.jit(_double)
    x, xs = jnp.float32(1.0), jnp.ones(3)
    jf(x), fjax.grad(jf)(x), fjax.vmap(jf)(xs)
    outer = fjax.jit(lambda v: jf(v) + 1)
    with fjax.no_tracing():
        for call in (lambda: fjax.grad(jf)(x), lambda: fjax.vmap(jf)(xs)):
            with pytest.raises(RuntimeError, match="re-tracing function _double at .* 'no_tracing' is set"):
                call()
        with pytest.raises(RuntimeError, match="re-tracing function <lambda> at "):
            outer(x)
        assert float(jnp.sin(x)) == pytest.approx(np.sin(1.0))  # fjax's eager ops trace nothing


def test_no_tracing_names_partials_and_callables():
    import functools

    assert jit_mod._fun_sourceinfo(functools.partial(_double)) == _src(_double)
    assert jit_mod._fun_sourceinfo(fjax.jit(_double)) == _src(_double)

    class Call:
        def __call__(self, x):
            return x

    assert jit_mod._fun_sourceinfo(Call()) == "<unknown>"


def test_no_tracing_global_update_and_threads():
    jf = fjax.jit(lambda v: v + 1)
    seen = {}

    def other():
        try:
            jf(jnp.ones(7))
            seen["other"] = "ran"
        except RuntimeError:
            seen["other"] = "raised"

    with fjax.no_tracing():
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen["other"] == "ran"  # the block holds in its own thread only
    config.update("jax_no_tracing", True)
    try:
        with pytest.raises(RuntimeError, match="'no_tracing' is set"):
            jf(jnp.ones(8))
    finally:
        config.update("jax_no_tracing", False)


# ---- no_execution ----------------------------------------------------------------------------


def test_no_execution_refuses_jit_and_eager_ops_not_tracing():
    jf = fjax.jit(_double)
    x = jnp.float32(1.0)
    jf(x)
    y = jnp.ones(3) + 1
    with fjax.no_execution():
        with pytest.raises(RuntimeError) as e:
            jf(x)
        assert str(e.value) == "JAX tried to execute function jit(_double), but the no_execution config option is set"
        with pytest.raises(RuntimeError, match=r"^JAX tried to execute function jit\(sin\), but the no_execution"):
            jnp.sin(x)
        with pytest.raises(RuntimeError, match=r"function jit\(mul\)"):
            fjax.grad(_double)(x)
        with pytest.raises(RuntimeError, match=r"function jit\(_double\)"):  # through bind too
            core.bind(jit_mod.jit_p, [x], dict(jaxpr=jf.lower(x).jaxpr, name="_double"))
        # tracing, lowering and reading computed values do not execute anything
        assert jf.lower(x) is not None
        assert fjax.make_jaxpr(_double)(x).out_avals[0].shape == ()
        assert fjax.eval_shape(_double, x).shape == ()
        assert float(x) == 1.0 and np.asarray(y).tolist() == [2.0, 2.0, 2.0]
    assert float(jf(x)) == 2.0


def test_no_execution_checks_cost_nothing_when_off():
    with fjax.no_execution():
        assert jit_mod._jit_impl is jit_mod._jit_impl_guarded
        assert core.eval_primitive is not core._eval_primitive_plain
    assert jit_mod._jit_impl is jit_mod._jit_impl_plain
    assert core.eval_primitive is core._eval_primitive_plain


def test_no_execution_composes_with_debug_nans():
    with fjax.debug_nans(True):
        with fjax.no_execution():
            with pytest.raises(RuntimeError, match="no_execution"):
                jnp.log(jnp.float32(-1.0))
        with pytest.raises(FloatingPointError):
            jnp.log(jnp.float32(-1.0))
    assert core.eval_primitive is core._eval_primitive_plain


def test_no_execution_other_thread_runs():
    out = {}
    with fjax.no_execution():
        t = threading.Thread(target=lambda: out.setdefault("v", float(jnp.sin(jnp.float32(0.0)))))
        t.start()
        t.join()
    assert out["v"] == 0.0


# ---- allow_f16_reductions ----------------------------------------------------------------------


@pytest.mark.parametrize("dt", [jnp.bfloat16, jnp.float16])
def test_allow_f16_reductions(dt):
    x = jnp.ones((2, 3), dt)
    assert float(lax.reduce_sum(x, (1,))[0]) == 3.0
    with fjax.allow_f16_reductions(False):
        name = "bf16" if dt == jnp.bfloat16 else "f16"
        msg = f"reduce_sum on operand {name}[2,3] is not allowed when jax_allow_f16_reductions=False."
        with pytest.raises(ValueError) as e:
            lax.reduce_sum(x, (1,))
        assert str(e.value) == msg
        with pytest.raises(ValueError, match="jax_allow_f16_reductions=False"):
            fjax.make_jaxpr(lambda a: lax.reduce_sum(a, (0,)))(x)
        with pytest.raises(ValueError, match="jax_allow_f16_reductions=False"):
            jnp.sum(x, dtype=dt)  # an explicit dtype sums in it, as JAX
        assert lax.reduce_sum(jnp.ones((1, 3), dt), (0,)).shape == (3,)  # along length-1 axes only
        assert float(lax.reduce_sum(jnp.ones(3, jnp.float32), (0,))) == 3.0
        # jnp.sum / prod / mean compute float16 and bfloat16 in float32
        assert float(jnp.sum(x)) == 6.0 and jnp.sum(x).dtype == dt
        assert float(jnp.mean(x)) == 1.0 and float(jnp.prod(x)) == 1.0


def test_allow_f16_reductions_is_in_the_jit_key():
    jf = fjax.jit(lambda a: lax.reduce_sum(a, (0,)))
    x = jnp.ones(3, jnp.bfloat16)
    assert float(jf(x)) == 3.0
    with fjax.allow_f16_reductions(False):
        assert core._odd_trace_config
        with pytest.raises(ValueError, match="jax_allow_f16_reductions=False"):
            jf(x)
    assert not core._odd_trace_config
    assert float(jf(x)) == 3.0


def test_jnp_sum_f16_jaxpr_upcasts():
    # as JAX: convert_element_type to float32, reduce_sum, convert back
    closed = fjax.make_jaxpr(lambda a: jnp.sum(a, axis=1))(jnp.ones((2, 3), jnp.float16))
    eqns = closed.jaxpr.eqns
    assert [e.primitive.name for e in eqns] == ["convert_element_type", "reduce_sum", "convert_element_type"]
    assert eqns[1].outvars[0].aval.dtype == np.float32
    assert closed.out_avals[0].dtype == np.float16


# ---- how options read --------------------------------------------------------------------------


def test_numpy_dtype_promotion_reads_as_enum():
    v = config.jax_numpy_dtype_promotion
    assert v is NumpyDtypePromotion.STANDARD and v == "standard" and isinstance(v, str)
    assert repr(v) == "<NumpyDtypePromotion.STANDARD: 'standard'>"
    with fjax.numpy_dtype_promotion("strict"):
        assert config.jax_numpy_dtype_promotion is NumpyDtypePromotion.STRICT
    config.update("jax_numpy_dtype_promotion", NumpyDtypePromotion.STRICT)
    try:
        assert config.jax_numpy_dtype_promotion is NumpyDtypePromotion.STRICT
    finally:
        config.update("jax_numpy_dtype_promotion", "standard")
    with pytest.raises(ValueError, match="'foo' is not a valid NumpyDtypePromotion"):
        config.update("jax_numpy_dtype_promotion", "foo")
    with pytest.raises(ValueError, match="'foo' is not a valid NumpyDtypePromotion"):
        with fjax.numpy_dtype_promotion("foo"):
            pass
    with pytest.raises(TypeError, match="new enum value must be an instance of"):
        config.update("jax_numpy_dtype_promotion", None)
    assert config.jax_numpy_dtype_promotion is NumpyDtypePromotion.STANDARD


def test_config_read_refuses_context_manager_flags():
    assert config.read("jax_enable_x64") is False  # the one jax_ option JAX reads this way
    assert config.read("fjax_jit_backend") == config.fjax_jit_backend
    for name in ("jax_numpy_dtype_promotion", "jax_disable_jit", "jax_no_tracing", "jax_platforms"):
        with pytest.raises(AttributeError) as e:
            config.read(name)
        assert str(e.value) == (
            f"For flags with a corresponding contextmanager, read their value via e.g. `config.{name}` "
            f"rather than `config.FLAGS.{name}`."
        )


def test_promotion_update_inside_a_block_compares_with_the_global_value(monkeypatch):
    cleared = []
    monkeypatch.setattr(fjax, "_clear_trace_caches", lambda: cleared.append(True))
    with fjax.numpy_dtype_promotion("strict"):
        config.update("jax_numpy_dtype_promotion", "standard")  # the global value already
        assert cleared == []
        config.update("jax_numpy_dtype_promotion", "strict")  # a change, though this thread is strict
        assert cleared == [True]
    config.update("jax_numpy_dtype_promotion", "standard")
    assert cleared == [True, True]
