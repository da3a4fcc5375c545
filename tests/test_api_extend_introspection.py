"""jax.version, the jax.extend.core introspection helpers and the ufuncs' out=/where= keywords.

Expected behaviour was recorded by hand from JAX 0.10.2 on CPU: ``jax.version`` is a module with
``__version__``/``__version_info__``/``_version``; ``mapped_aval(4, 1, f32[3,4,5])`` is
``f32[3,5]`` and ``unmapped_aval(7, 0, .)`` is ``f32[7,3,4,5]`` (a size mismatch fails an
assertion); ``unsafe_am_i_under_a_jit`` is True inside jit, make_jaxpr and an eager scan body and
False under plain grad; ``unsafe_am_i_under_a_vmap`` is True in any vmap and
``unsafe_get_axis_names`` lists the named axes (``['i']``); ``subjaxprs`` of
``cond(...) + jit(sin)(x)`` yields both cond branches and the jit body; ``jnp.add(1, 2, out=None)``
is 3 and a non-None ``out``/``where`` raises ``NotImplementedError("out argument of <jnp.ufunc
'add'>")``, while ``jnp.sin`` (not a ufunc object) takes no ``out`` at all.
"""

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax.core import ShapedArray
from fjax.extend import core as ec


def test_version_module():
    assert fjax.version.__version__ == fjax.__version__
    assert fjax.version.__version_info__ == tuple(int(p) for p in fjax.__version__.split("."))
    assert fjax.version._version == fjax.__version__


def test_mapped_and_unmapped_aval():
    a = ShapedArray((3, 4, 5), np.float32)
    assert ec.mapped_aval(4, 1, a) == ShapedArray((3, 5), np.float32)
    assert ec.unmapped_aval(7, 0, a) == ShapedArray((7, 3, 4, 5), np.float32)
    assert ec.mapped_aval(4, None, a) is a and ec.unmapped_aval(4, None, a) is a
    with pytest.raises(AssertionError):
        ec.mapped_aval(3, 1, a)


def test_gensym_makes_fresh_vars():
    g = ec.gensym()
    v, w = g(ShapedArray((2,), np.float32)), g(ShapedArray((2,), np.float32))
    assert isinstance(v, ec.Var) and v is not w and v.aval == ShapedArray((2,), np.float32)


def test_subjaxprs_and_jaxprs_in_params():
    cj = fjax.make_jaxpr(lambda x: fjax.lax.cond(x > 0, jnp.sin, jnp.cos, x) + fjax.jit(jnp.sin)(x))(1.0)
    subs = list(ec.subjaxprs(cj.jaxpr))
    assert len(subs) == 3 and all(isinstance(j, ec.Jaxpr) for j in subs)
    prims = sorted(e.primitive.name for j in subs for e in j.eqns)
    assert prims == ["cos", "sin", "sin"]
    (jit_eqn,) = [e for e in cj.jaxpr.eqns if e.primitive.name == "jit"]
    assert [e.primitive.name for j in ec.jaxprs_in_params(jit_eqn.params) for e in j.eqns] == ["sin"]
    assert list(ec.jaxprs_in_params({"a": 1, "b": (2, 3)})) == []


def test_trace_introspection():
    seen = {}

    def probe(tag):
        def f(x):
            seen[tag] = (
                ec.unsafe_am_i_under_a_jit_DO_NOT_USE(),
                ec.unsafe_am_i_under_a_vmap_DO_NOT_USE(),
                ec.unsafe_get_axis_names_DO_NOT_USE(),
                ec.nonempty_axis_env_DO_NOT_USE(),
            )
            return x

        return f

    probe("eager")(1.0)
    fjax.jit(probe("jit"))(1.0)
    fjax.make_jaxpr(probe("make_jaxpr"))(1.0)
    fjax.grad(probe("grad"))(1.0)
    fjax.vmap(probe("vmap_named"), axis_name="i")(jnp.ones(2))
    fjax.vmap(probe("vmap"))(jnp.ones(2))
    fjax.lax.scan(lambda c, x: (c, probe("scan")(x)), 0.0, jnp.ones(2))
    assert seen["eager"] == (False, False, [], False)
    assert seen["jit"][0] and seen["make_jaxpr"][0] and seen["scan"][0]
    assert seen["grad"][:2] == (False, False)
    assert seen["vmap_named"][1:] == (True, ["i"], True)
    assert seen["vmap"][1:] == (True, [], False)


def test_primitives_module():
    from fjax.extend.core import primitives as P

    assert P.add_p is fjax.lax.add_p and P.add_p.name == "add"
    assert P.rng_bit_generator_p is fjax.lax.rng_bit_generator_p
    assert P.cholesky_p is fjax.lax.linalg.cholesky_p
    assert P.jit_p.name == "jit" and P.while_p.name == "while"
    jaxpr = fjax.make_jaxpr(lambda x: jnp.sin(x) + 1)(1.0)
    assert {e.primitive for e in jaxpr.jaxpr.eqns} <= {getattr(P, n) for n in P.__all__}
    assert all(isinstance(getattr(P, n), ec.Primitive) for n in P.__all__)


def test_ufunc_out_and_where_none():
    assert int(jnp.add(1, 2, out=None)) == 3
    assert float(jnp.negative(1.0, out=None, where=None)) == -1.0
    assert float(fjax.jit(lambda x: jnp.multiply(x, 2, out=None))(3.0)) == 6.0
    with pytest.raises(NotImplementedError, match="out argument of <jnp.ufunc 'add'>"):
        jnp.add(1, 2, out=np.zeros(()))
    with pytest.raises(NotImplementedError, match="where argument of <jnp.ufunc 'maximum'>"):
        jnp.maximum(1, 2, where=True)
    with pytest.raises(TypeError):
        jnp.sin(1.0, out=None)
