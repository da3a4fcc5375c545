"""``fjax.compat``: ``import jax`` (and ``jax.*``, ``jaxlib``) resolves to fjax's modules."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import fjax
import fjax.compat


@pytest.fixture
def hook():
    if "jax" in sys.modules and not fjax.compat.installed():
        pytest.skip("the real jax is imported in this process")
    fjax.compat.install()
    yield
    fjax.compat.uninstall()


def test_submodules_are_fjax_modules(hook):
    import jax
    import jax.numpy as jnp
    import jax.scipy.special  # noqa: F401  (fjax.scipy, or the stand-in until it exists)
    from jax import lax, tree_util

    import fjax.numpy

    assert jnp is fjax.numpy
    assert lax is fjax.lax
    assert tree_util is fjax.tree_util
    assert jax.numpy is fjax.numpy
    assert jax.jit is fjax.jit
    assert jax.__version__ == fjax.compat.JAX_API_VERSION
    # the shared module keeps its own name and spec
    assert jnp.__name__ == "fjax.numpy" and jnp.__spec__.name == "fjax.numpy"
    x = jnp.arange(3.0)
    assert float(jax.grad(lambda x: (x * x).sum())(x)[2]) == 4.0


def test_attribute_writes_reach_fjax(hook):
    import jax

    jax.config.update("jax_enable_x64", False)
    jax._compat_probe = 1
    try:
        assert fjax._compat_probe == 1
    finally:
        del jax._compat_probe
    assert not hasattr(fjax, "_compat_probe")


def test_missing_module_raises_module_not_found(hook):
    with pytest.raises(ModuleNotFoundError):
        import jax.no_such_module  # noqa: F401


def test_functions_named_like_fjax_modules_are_not_modules(hook):
    # fjax/jit.py, fjax/config.py, fjax/checkpoint.py exist; JAX has no jax.jit module, and
    # importing one would replace jax.jit (the function) with it
    import importlib

    import jax

    for name in ("jit", "config", "checkpoint"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("jax." + name)
    assert callable(jax.jit) and jax.jit is fjax.jit
    assert jax.config is fjax.config


def test_mock_patch_of_a_jax_function_is_undone(hook):
    # mock.patch imports "jax.jit" before falling back to getattr, and restores by setattr only
    # when it finds the name in the module's __dict__ (else it deletes the attribute)
    from unittest import mock

    import jax

    jit = fjax.jit
    with mock.patch("jax.jit", lambda f: f):
        assert jax.jit(len) is len and fjax.jit(len) is len
    assert jax.jit is jit and fjax.jit is jit
    with mock.patch.object(jax, "pmap", None):
        assert fjax.pmap is None
    assert callable(jax.pmap)
    assert "vmap" in vars(jax)


def test_jax_src_names_that_chex_reads(hook):
    import jax
    from jax._src import compiler, xla_bridge  # noqa: F401

    jax.devices()
    assert "cpu" in jax._src.xla_bridge._backends


def test_jax_src_compiler_is_called_on_each_jit_compile(hook):
    # chex's restrict_backends patches jax._src.compiler.backend_compile_and_load
    import jax
    import jax.numpy as jnp
    from jax._src import compiler

    seen = []
    original = compiler.backend_compile_and_load

    def refuse_tpu(backend, *args, **kwargs):
        seen.append(backend.platform)
        if backend.platform == "tpu":
            raise RuntimeError("no tpu compiles")
        return original(backend, *args, **kwargs)

    compiler.backend_compile_and_load = refuse_tpu
    g = jax.jit(lambda x: x * 2, backend="tpu")  # (fjax runs it where its inputs live)
    try:
        f = jax.jit(lambda x: x + 1)
        assert float(f(jnp.float32(1))) == 2.0 and float(f(jnp.float32(2))) == 3.0  # compiled once
        with pytest.raises(RuntimeError, match="no tpu"):
            g(1.0)
        assert seen == [jax.default_backend(), "tpu"]
    finally:
        compiler.backend_compile_and_load = original
    assert float(g(1.0)) == 2.0  # the refused compile left nothing cached


def test_jaxlib_reports_a_version(hook):
    import jaxlib

    assert jaxlib.__version__ == fjax.compat.JAX_API_VERSION


def test_install_refuses_when_real_jax_is_loaded(monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "jax", types.ModuleType("jax"))
    with pytest.raises(RuntimeError, match="already imported"):
        fjax.compat.install()


def test_runner_runs_a_script(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import jax, jax.numpy as jnp
            from jax import random
            print(jax.__name__, jnp.__name__, sys.argv[1:])
            print(jax.jit(lambda x: x * 2)(jnp.float32(3)))
            """
        )
    )
    for cmd in (
        [sys.executable, "-m", "fjax.compat", str(script), "a"],
        [sys.executable, "-m", "fjax", "run", str(script), "a"],
    ):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split("\n")[:2] == ["jax fjax.numpy ['a']", "6.0"]
