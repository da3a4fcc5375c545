"""Public names JAX 0.10 has that libraries run on fjax (``import jax`` -> fjax) reach for:
``jax.ad_checkpoint`` policy values, ``jax.extend.linear_util``, ``jax.stages.Compiled``."""

from __future__ import annotations

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import ad_checkpoint, stages
from fjax.extend import linear_util as lu


def _f(x):
    return jnp.sum(jnp.sin(jnp.sin(x)) * 2.0)


@pytest.mark.parametrize(
    "policy",
    [
        lambda prim, *_, **__: ad_checkpoint.Saveable,
        lambda prim, *_, **__: ad_checkpoint.Recompute,
        lambda prim, *_, **__: ad_checkpoint.Offloadable("device", "pinned_host"),
    ],
    ids=["saveable", "recompute", "offloadable"],
)
def test_policy_values_drive_checkpoint(policy):
    x = jnp.array([0.1, 0.5, -1.0])
    g = fjax.grad(fjax.checkpoint(_f, policy=policy))(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(fjax.grad(_f)(x)), rtol=1e-6)


def test_policy_values_truthiness_and_repr():
    assert bool(ad_checkpoint.Saveable) and not bool(ad_checkpoint.Recompute)
    assert isinstance(ad_checkpoint.Recompute, ad_checkpoint.RecomputeType)
    assert repr(ad_checkpoint.Saveable) == "Saveable"
    off = ad_checkpoint.Offloadable(src="device", dst="pinned_host")
    assert off.src == "device" and off.dst == "pinned_host" and bool(off)
    assert {"Saveable", "Recompute", "Offloadable"} <= set(ad_checkpoint.__all__)


def test_policy_returning_recompute_saves_nothing(capsys):
    # print_saved_residuals lists what vjp keeps; Recompute keeps only the argument (as False)
    x = jnp.array([0.1, 0.5])
    rec = fjax.checkpoint(_f, policy=lambda *_, **__: ad_checkpoint.Recompute)
    no = fjax.checkpoint(_f, policy=lambda *_, **__: False)
    ad_checkpoint.print_saved_residuals(rec, x)
    a = capsys.readouterr().out
    ad_checkpoint.print_saved_residuals(no, x)
    assert a == capsys.readouterr().out


def test_linear_util_wrap_init_and_params():
    def f(x, *, scale):
        return x * scale

    fun = lu.wrap_init(f, {"scale": 3}, debug_info=None)
    assert fun.call_wrapped(2) == 6
    assert fun.params == (("scale", 3),) and fun.__name__ == "f"
    assert fun == lu.wrap_init(f, {"scale": 3}) and hash(fun) == hash(lu.wrap_init(f, {"scale": 3}))
    assert fun != lu.wrap_init(f, {"scale": 4})


def test_linear_util_transformations_new_and_generator_style():
    @lu.transformation2
    def add(f, k, x):
        return f(x + k)

    @lu.transformation_with_aux2
    def record(f, store, x):
        out = f(x)
        store.store(("saw", x))
        return out

    @lu.transformation
    def double(x):
        ans = yield (x,), {}
        yield 2 * ans

    @lu.transformation_with_aux
    def with_aux(x):
        ans = yield (x,), {}
        yield ans, "aux"

    base = lu.wrap_init(lambda x: x * 10)
    fun, aux = record(add(base, 1))  # record(add(f)): x -> (x + 1) * 10
    assert fun.call_wrapped(2) == 30 and aux() == ("saw", 2)
    assert double(base).call_wrapped(3) == 60
    fun2, aux2 = with_aux(base)
    assert fun2.call_wrapped(1) == 10 and aux2() == "aux"
    with pytest.raises(lu.StoreException):
        fun.call_wrapped(5)  # the store is written once
    assert len(fun.transforms) == 2


def test_linear_util_cache_and_merge_aux():
    calls = []

    @lu.cache
    def trace(fun, n):
        calls.append(n)
        return fun.call_wrapped(n)

    def g(x):
        return x + 1

    assert trace(lu.wrap_init(g), 1) == 2 and trace(lu.wrap_init(g), 1) == 2
    assert calls == [1]
    trace.cache_clear()
    assert trace(lu.wrap_init(g), 1) == 2 and calls == [1, 1]

    def empty():
        raise lu.StoreException("empty")

    assert lu.merge_linear_aux(lambda: "a", empty) == (True, "a")
    assert lu.merge_linear_aux(empty, lambda: "b") == (False, "b")
    with pytest.raises(lu.StoreException):
        lu.merge_linear_aux(empty, empty)


def test_stages_names():
    assert {"Compiled", "Lowered", "Traced", "Wrapped"} <= set(stages.__all__)
    assert isinstance(fjax.jit(_f), stages.Wrapped)
    assert isinstance(fjax.jit(_f).lower(jnp.ones(2)), stages.Lowered)
    assert isinstance(stages.Compiled, type)


def test_names_reachable_through_the_import_hook():
    import subprocess
    import sys

    code = (
        "import fjax.compat; fjax.compat.install()\n"
        "import jax, jax.stages, jax.ad_checkpoint\n"
        "from jax.extend import linear_util as lu\n"
        "from jax.ad_checkpoint import Saveable, Recompute, Offloadable\n"
        "assert jax.stages.Compiled and lu.wrap_init(abs).call_wrapped(-2) == 2\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_top_level_sharding_names_through_the_import_hook():
    # JAX 0.10 has jax.P / jax.NamedSharding / jax.Device at the top level (chex reads jax.Device
    # at import); fjax keeps them in fjax.sharding
    import subprocess
    import sys

    code = (
        "import fjax.compat; fjax.compat.install()\n"
        "import jax, fjax.sharding as s\n"
        "assert jax.P is s.PartitionSpec and jax.NamedSharding is s.NamedSharding and jax.Device is s.Device\n"
        "assert {'P', 'NamedSharding', 'Device'} <= set(dir(jax))\n"
        "m = jax.make_mesh((1,), ('x',))\n"
        "print(jax.NamedSharding(m, jax.P('x')).spec)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "P('x',)", out.stderr[-2000:]
