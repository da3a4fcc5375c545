"""Small JAX 0.10.2 names: jax.stages.ArgInfo/CompilerOptions, jax.random.random_gamma_p, the
helpers jax.example_libraries.optimizers re-exports, jax.experimental.compilation_cache and
jnp.fromfile (unimplemented in JAX too). Messages are JAX's."""

import dataclasses
import functools

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import config
from fjax.core import ShapedArray
from fjax.example_libraries import optimizers as opt


def test_arginfo_and_compiler_options():
    info = fjax.stages.ArgInfo(ShapedArray((2, 3), np.dtype("float32")), False)
    assert info.shape == (2, 3) and info.dtype == np.float32 and info.donated is False
    assert info == fjax.stages.ArgInfo(ShapedArray((2, 3), np.dtype("float32")), False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.donated = True  # frozen dataclass, as in JAX
    with pytest.raises(TypeError, match="No shape attribute with aval of type"):
        _ = fjax.stages.ArgInfo(object(), True).shape
    assert fjax.stages.CompilerOptions(a=True) == {"a": True}


def test_random_gamma_p_is_the_primitive():
    from fjax._random_dists import random_gamma_p

    assert fjax.random.random_gamma_p is random_gamma_p
    jaxpr = fjax.make_jaxpr(lambda k, a: fjax.random.gamma(k, a))(fjax.random.PRNGKey(0), 2.0)
    assert random_gamma_p.name in str(jaxpr)


def test_optimizers_helpers():
    assert opt.map is opt.safe_map and opt.zip is opt.safe_zip and opt.partial is functools.partial
    assert opt.zip([1, 2], [3, 4]) == [(1, 3), (2, 4)]
    assert opt.map(lambda a: a + 1, [1]) == [2]
    assert opt.unzip2([(1, 2), (3, 4)]) == ((1, 3), (2, 4))
    with pytest.raises(ValueError, match=r"safe_zip\(\) argument 2 has length 2 but argument 0 has length 1\. "):
        opt.safe_zip([1], [2], [3, 4])
    with pytest.raises(ValueError, match=r"safe_map\(\) argument 2 is shorter than argument 1"):
        opt.safe_map(lambda a, b: a, [1, 2], [2])
    with pytest.raises(ValueError, match=r"safe_map\(\) argument 3 is longer than argument 1"):
        opt.safe_map(lambda a, b, c: a, [1], [2], [3, 4])
    # the optimizers still work with the module's map/zip being the checked versions
    init, update, get = opt.adam(0.1)
    state = update(0, {"w": jnp.ones(2)}, init({"w": jnp.zeros(2)}))
    np.testing.assert_allclose(get(state)["w"], [-0.1, -0.1], rtol=1e-5)


def test_compilation_cache(tmp_path):
    from fjax.experimental.compilation_cache import compilation_cache as cc

    old = config.fjax_cache_dir
    try:
        cc.set_cache_dir(tmp_path / "c")
        assert config.fjax_cache_dir == str(tmp_path / "c")
        cc.reset_cache()
        assert config.fjax_cache_dir == str(tmp_path / "c")  # reset keeps the directory (as JAX)
    finally:
        config.update("fjax_cache_dir", old)
    assert fjax.experimental.compilation_cache.compilation_cache is cc


def test_fromfile_is_unimplemented(tmp_path):
    p = tmp_path / "a.bin"
    np.arange(3, dtype=np.float32).tofile(p)
    with pytest.raises(NotImplementedError, match=r"jnp\.fromfile\(\) is not implemented because it may be non-pure"):
        jnp.fromfile(p, dtype=np.float32)
