"""Test configuration: hypothesis profiles (``ci`` by default, ``thorough`` via
FJAX_HYPOTHESIS_PROFILE=thorough) and fixtures shared by the suite."""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=True,
)
settings.register_profile(
    "thorough",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("FJAX_HYPOTHESIS_PROFILE", "ci"))

# a failure of the numba lowering fails the test instead of silently falling back to eager
# evaluation (FJAX_LOWERING_STRICT=0 turns this off to see whether a failure is lowering-only)
if os.environ.get("FJAX_LOWERING_STRICT", "1") == "1":
    from fjax import config as _config

    _config.update("fjax_lowering_strict", True)

# jit compiles before the first call returns, here and in the processes tests start (fjax's
# default, "auto", evaluates some first calls eagerly; tests/test_tiered_compile.py tests that)
from fjax import config as _cfg  # noqa: E402

_cfg.update("fjax_tiered_compile", False)
os.environ["FJAX_TIERED_COMPILE"] = "0"


@pytest.fixture
def x64():
    """Run a test with jax_enable_x64 on, restoring the setting afterwards."""
    from fjax import config

    old = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        config.update("jax_enable_x64", old)


@pytest.fixture(scope="module")
def fresh_numba_cache(tmp_path_factory):
    """jit compiles through the numba lowering, with a kernel cache dir of this module's own."""
    import importlib

    from fjax import config

    old_dir, old_disk = config.fjax_cache_dir, config.fjax_disk_cache
    config.update("fjax_cache_dir", str(tmp_path_factory.mktemp("fjax_cache")))
    config.update("fjax_disk_cache", True)
    jit_mod = importlib.import_module("fjax.jit")
    old_hook, old_backend = jit_mod.compile_hook, config.fjax_jit_backend
    config.update("fjax_jit_backend", "numba")
    yield
    config.update("fjax_jit_backend", old_backend)
    jit_mod.compile_hook = old_hook
    config.update("fjax_cache_dir", old_dir)
    config.update("fjax_disk_cache", old_disk)
