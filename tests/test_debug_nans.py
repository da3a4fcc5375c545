"""``jax_debug_nans`` / ``jax_debug_infs`` and the ``fjax.debug_nans`` / ``fjax.debug_infs``
context managers: eager primitives, jitted programs (re-run de-optimized to name the primitive),
nested jits, the backward pass of ``grad(jit(f))``, vmap, control flow. Expected messages follow
JAX 0.10.2 ("invalid value (nan) encountered in log")."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import _debug_nans, config, core, lax


@pytest.fixture
def nans():
    old = config.jax_debug_nans
    config.update("jax_debug_nans", True)
    try:
        yield
    finally:
        config.update("jax_debug_nans", old)


@pytest.fixture
def infs():
    old = config.jax_debug_infs
    config.update("jax_debug_infs", True)
    try:
        yield
    finally:
        config.update("jax_debug_infs", old)


# module-level jitted functions: each compiles once for the whole module
_log2 = fjax.jit(lambda x: jnp.log(x) * 2.0)
_inner = fjax.jit(lambda y: jnp.sqrt(y))
_outer = fjax.jit(lambda x: _inner(x) + 1.0)
_ident = fjax.jit(lambda x: x)
_exp1 = fjax.jit(lambda x: jnp.exp(x) + 1.0)
_sqrt0 = fjax.jit(lambda x: jnp.sqrt(x) * 0.0)
_where_log = fjax.jit(lambda x: jnp.where(x > 0, jnp.log(x), 0.0))


def test_off_by_default_and_no_cost():
    assert config.jax_debug_nans is False and config.jax_debug_infs is False
    # nothing checks when off: the eager evaluator is the plain one and jit's guard is False
    assert core.eval_primitive is core._eval_primitive_plain
    assert _debug_nans.active is False
    assert np.isnan(np.asarray(jnp.log(-1.0)))
    assert np.isnan(np.asarray(_log2(-1.0)))


def test_eager_primitive_named(nans):
    with pytest.raises(FloatingPointError, match=r"^invalid value \(nan\) encountered in log$"):
        jnp.log(-1.0)
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in sin"):
        jnp.sin(jnp.inf)
    with pytest.raises(FloatingPointError, match=r"encountered in div"):
        jnp.float32(0.0) / jnp.float32(0.0)
    # a NaN already in an input is caught at the first primitive that outputs it (as JAX)
    with pytest.raises(FloatingPointError, match=r"encountered in add"):
        jnp.asarray(np.float32(np.nan)) + 1.0
    # infinities pass unless jax_debug_infs is on; integer outputs are never checked
    assert np.isinf(np.asarray(jnp.exp(1000.0)))
    np.testing.assert_array_equal(jnp.array([1, 2]) // 1, [1, 2])
    # complex outputs are checked
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\)"):
        jnp.array(1 + 0j) * jnp.nan


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_eager_transforms_and_control_flow(nans):
    with pytest.raises(FloatingPointError, match=r"encountered in log"):
        fjax.vmap(jnp.log)(jnp.array([1.0, -1.0]))
    with pytest.raises(FloatingPointError, match=r"encountered in log"):
        fjax.jvp(jnp.log, (-1.0,), (1.0,))
    # the NaN of the backward pass (0 * inf) is named in the transposed computation
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in"):
        fjax.grad(lambda x: jnp.sqrt(x) * 0.0)(0.0)
    with pytest.raises(FloatingPointError, match=r"encountered in scan"):
        lax.scan(lambda c, x: (c + jnp.log(x), c), 0.0, jnp.array([1.0, -1.0]))
    with pytest.raises(FloatingPointError, match=r"encountered in reduce_sum"):
        jnp.sum(jnp.array([np.inf, -np.inf]))
    # a masked-out NaN still raises eagerly: log ran on -1 (JAX does the same)
    with pytest.raises(FloatingPointError, match=r"encountered in log"):
        jnp.where(jnp.array([True, False]), 1.0, jnp.log(jnp.array([1.0, -1.0])))
    assert float(jnp.sqrt(4.0)) == 2.0


def test_jit_reruns_deoptimized(nans, capsys):
    with pytest.raises(FloatingPointError, match=r"^invalid value \(nan\) encountered in log$"):
        _log2(-1.0)
    assert "Calling the de-optimized version" in capsys.readouterr().out
    assert float(_log2(np.e)) == pytest.approx(2.0)
    # nested jits: the inner primitive is named
    with pytest.raises(FloatingPointError, match=r"encountered in sqrt"):
        _outer(-1.0)
    # vmap of jit and jit of vmap
    with pytest.raises(FloatingPointError, match=r"encountered in log"):
        fjax.vmap(_log2)(jnp.array([1.0, -1.0]))
    with pytest.raises(FloatingPointError, match=r"encountered in log"):
        fjax.jit(fjax.vmap(jnp.log))(jnp.array([1.0, -1.0]))


def test_jit_backward_pass(nans, capsys):
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in"):
        fjax.grad(_sqrt0)(0.0)
    assert "backward pass" in capsys.readouterr().out


def test_jit_checks_outputs_only(nans):
    # a NaN made inside a jitted program but not returned is not an error (as JAX)
    np.testing.assert_array_equal(_where_log(jnp.array([1.0, -1.0])), [0.0, 0.0])


def test_jit_nan_not_reproduced(nans):
    # the identity program makes no NaN itself: JAX's "did not produce invalid values" error
    with pytest.raises(FloatingPointError, match=r"jit\(<lambda>\).*did not produce invalid values"):
        _ident(jnp.asarray(np.float32(np.nan)))


def test_interpret_backend(nans):
    old = config.fjax_jit_backend
    config.update("fjax_jit_backend", "interpret")
    try:
        with pytest.raises(FloatingPointError, match=r"encountered in log"):
            fjax.jit(lambda x: jnp.log(x) + 1.0)(-1.0)
        with pytest.raises(FloatingPointError, match=r"did not produce invalid values"):
            fjax.jit(lambda x: x)(jnp.asarray(np.float32(np.nan)))
    finally:
        config.update("fjax_jit_backend", old)


def test_infs(infs):
    with pytest.raises(FloatingPointError, match=r"^invalid value \(inf\) encountered in exp$"):
        jnp.exp(1000.0)
    with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in exp"):
        _exp1(1000.0)
    # NaNs pass when only infs are checked
    assert np.isnan(np.asarray(jnp.log(-1.0)))


def test_context_managers(capsys):
    with fjax.debug_nans(True):
        assert fjax.debug_nans.value is True
        with pytest.raises(FloatingPointError, match=r"encountered in log"):
            jnp.log(-1.0)
        with pytest.raises(FloatingPointError, match=r"encountered in log"):
            _log2(-1.0)
        with fjax.debug_nans(False):
            assert np.isnan(np.asarray(jnp.log(-1.0)))
    assert fjax.debug_nans.value is False
    assert core.eval_primitive is core._eval_primitive_plain
    assert np.isnan(np.asarray(jnp.log(-1.0)))
    with fjax.debug_infs(True):
        with pytest.raises(FloatingPointError, match=r"\(inf\) encountered in exp"):
            jnp.exp(1000.0)
    assert np.isinf(np.asarray(jnp.exp(1000.0)))

    @fjax.debug_nans(True)
    def f(x):
        return jnp.log(x)

    with pytest.raises(FloatingPointError):
        f(-1.0)
    assert np.isnan(np.asarray(jnp.log(-1.0)))
    with pytest.raises(TypeError):
        fjax.debug_nans()  # JAX requires the new value
    capsys.readouterr()


def test_context_manager_is_thread_local():
    seen = []
    with fjax.debug_nans(True):
        t = threading.Thread(target=lambda: seen.append(float(jnp.log(-1.0))))
        t.start()
        t.join()
        with pytest.raises(FloatingPointError):
            jnp.log(-1.0)
    assert len(seen) == 1 and np.isnan(seen[0])


def test_global_option_with_context_off(nans):
    with fjax.debug_nans(False):
        assert np.isnan(np.asarray(jnp.log(-1.0)))
    with pytest.raises(FloatingPointError):
        jnp.log(-1.0)


def test_unknown_option_still_rejected():
    with pytest.raises(AttributeError):
        config.update("jax_debug_nan", True)


def test_environment_variable():
    code = (
        "import fjax.numpy as jnp\ntry:\n    jnp.log(-1.0)\nexcept FloatingPointError as e:\n    print('raised:', e)\n"
    )
    env = dict(os.environ, JAX_DEBUG_NANS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "raised: invalid value (nan) encountered in log" in out.stdout, out.stderr


_normal_jit = fjax.jit(lambda k: fjax.random.normal(k, (256,)))


def test_no_false_positives_from_library_internals(nans, infs):
    # fjax's own multi-primitive versions of single JAX operations (random's float32 log/erf_inv,
    # nan-reductions, quantiles, hypot) select NaN/inf constants away; only their outputs count
    k = fjax.random.PRNGKey(0)
    assert np.isfinite(np.asarray(fjax.random.normal(k, (256,)))).all()
    assert np.isfinite(np.asarray(_normal_jit(k))).all()
    fjax.random.uniform(k, (8,))
    fjax.random.gumbel(k, (8,))
    fjax.random.truncated_normal(k, -1.0, 1.0, (8,))
    a = jnp.array([[1.0, np.nan], [3.0, -1.0]], jnp.float32)
    for f in (jnp.nanmax, jnp.nanmin, jnp.nanargmax, jnp.nanargmin, jnp.nanmedian):
        f(a)
    b = jnp.array([[1.0, 2.0], [3.0, -1.0]], jnp.float32)
    jnp.var(b)
    jnp.median(b)
    jnp.hypot(b, b)
    # a NaN in the output of such a function is still reported, under its name
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in nanmax"):
        jnp.nanmax(jnp.array([np.nan, np.nan], jnp.float32))
