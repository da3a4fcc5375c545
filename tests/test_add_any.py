"""``add_any``: the primitive JVP rules and the transpose bind to sum tangents and cotangents
(JAX's ``jax.extend.core.primitives.add_jaxvals_p``, printed ``add_any``).

The expected jaxpr texts were printed by JAX 0.10.2 (CPU, x64 off) for the same functions, with
``np.int64(1)`` read as ``1``.
"""

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax.backends import lowering
from fjax.extend.core import primitives as P

add_any_p = P.add_jaxvals_p


def _f(x):
    return (x * jnp.sin(x)).sum()


def test_grad_sums_cotangents_with_add_any():
    got = str(fjax.make_jaxpr(fjax.grad(_f))(jnp.ones(3)))
    assert got == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = sin a\n"
        "    c:f32[3] = cos a\n"
        "    d:f32[3] = mul a b\n"
        "    _:f32[] = reduce_sum[axes=(0,) out_sharding=None] d\n"
        "    e:f32[3] = broadcast_in_dim 1.0:f32[]\n"
        "    f:f32[3] = mul a e\n"
        "    g:f32[3] = mul e b\n"
        "    h:f32[3] = mul f c\n"
        "    i:f32[3] = add_any g h\n"
        "  in (i,) }"
    )


def test_jvp_sums_tangents_with_add_any():
    got = str(fjax.make_jaxpr(lambda x, t: fjax.jvp(lambda x: x * jnp.sin(x), (x,), (t,)))(1.0, 1.0))
    assert got == (
        "{ lambda ; a:f32[] b:f32[]. let\n"
        "    c:f32[] = sin a\n"
        "    d:f32[] = cos a\n"
        "    e:f32[] = mul b d\n"
        "    f:f32[] = mul a c\n"
        "    g:f32[] = mul b c\n"
        "    h:f32[] = mul a e\n"
        "    i:f32[] = add_any g h\n"
        "  in (f, i) }"
    )


def test_eager_and_weak_type():
    out = add_any_p.bind(jnp.float32(1.5), jnp.float32(2.0))
    assert out.dtype == np.float32 and float(out) == 3.5
    ints = add_any_p.bind(jnp.arange(3), jnp.arange(3))
    np.testing.assert_array_equal(ints, [0, 2, 4])
    # the result has the first operand's type, weak_type included (JAX: ``lambda x, y: x``)
    assert str(fjax.make_jaxpr(lambda x: add_any_p.bind(x, jnp.float32(1)))(2.0)) == (
        "{ lambda ; a:f32[]. let b:f32[] = add_any a 1.0:f32[] in (b,) }"
    )


@pytest.mark.parametrize(
    "x,y",
    [(np.ones(3, np.float32), np.ones(2, np.float32)), (np.ones(3, np.float32), np.ones(3, np.int32))],
)
def test_operands_must_have_one_type(x, y):
    # no scalar broadcasting or promotion, eager or traced
    with pytest.raises(TypeError, match="add_any requires operands of one type"):
        add_any_p.bind(x, y)
    with pytest.raises(TypeError, match="add_any requires operands of one type"):
        fjax.jit(lambda a, b: add_any_p.bind(a, b))(x, y)
    with pytest.raises(TypeError, match=r"f32\[3\] and f32\[\]"):
        add_any_p.bind(np.ones(3, np.float32), np.float32(1))


def test_jvp_transpose_and_higher_order():
    x, y = jnp.float32(1.0), jnp.float32(2.0)
    p, t = fjax.jvp(lambda a, b: add_any_p.bind(a, b), (x, y), (jnp.float32(3.0), jnp.float32(4.0)))
    assert float(p) == 3.0 and float(t) == 7.0
    out, vjp = fjax.vjp(lambda a, b: add_any_p.bind(a, b), jnp.ones(3), jnp.ones(3))
    ga, gb = vjp(jnp.arange(3.0))
    np.testing.assert_array_equal(ga, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(gb, [0.0, 1.0, 2.0])
    # second derivative of x**3 goes through the JVP and the transpose of add_any
    d2 = fjax.grad(fjax.grad(lambda a: a * a * a))(jnp.float32(2.0))
    assert float(d2) == 12.0


@pytest.mark.parametrize(
    "in_axes,shapes,expected",
    [
        (
            (0, None),
            ((2, 3), (3,)),
            "{ lambda ; a:f32[2,3] b:f32[3]. let\n"
            "    c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,)] b\n"
            "    d:f32[2,3] = add_any a c\n"
            "  in (d,) }",
        ),
        (
            (1, 0),
            ((3, 2), (2, 3)),
            "{ lambda ; a:f32[3,2] b:f32[2,3]. let\n"
            "    c:f32[2,3] = transpose[permutation=(1, 0)] a\n"
            "    d:f32[2,3] = add_any c b\n"
            "  in (d,) }",
        ),
    ],
)
def test_vmap_prints_like_jax_and_computes(in_axes, shapes, expected):
    fn = fjax.vmap(lambda a, b: add_any_p.bind(a, b), in_axes=in_axes)
    a = np.arange(np.prod(shapes[0]), dtype=np.float32).reshape(shapes[0])
    b = np.arange(np.prod(shapes[1]), dtype=np.float32).reshape(shapes[1]) * 10
    assert str(fjax.make_jaxpr(fn)(a, b)) == expected
    want = (np.moveaxis(a, in_axes[0], 0) if in_axes[1] is not None else a) + b
    np.testing.assert_array_equal(fn(a, b), want)
    # an unmapped scalar with a mapped scalar (tangents of a vmapped scalar function)
    np.testing.assert_array_equal(
        fjax.vmap(lambda s: add_any_p.bind(s, jnp.float32(1.0)))(jnp.arange(3.0)), [1.0, 2.0, 3.0]
    )
    np.testing.assert_array_equal(
        fjax.vmap(lambda s: add_any_p.bind(jnp.ones(2), s), in_axes=1)(jnp.ones((2, 3))), 2 * np.ones((3, 2))
    )


def test_jit_fuses_add_any_as_add():
    # the compiled program: one fused loop nest whose last op is the add of the two products
    x = np.linspace(-1, 1, 7, dtype=np.float32)
    lowered = fjax.jit(fjax.grad(_f)).trace(x).lower()
    src = lowered.as_text()
    assert "add_any -> f32[7]" in src and "# add\n" in src and "host" not in src
    np.testing.assert_allclose(fjax.jit(fjax.grad(_f))(x), np.sin(x) + x * np.cos(x), rtol=1e-6)
    cuda = fjax.jit(fjax.grad(_f)).trace(x).lower(lowering_platforms=("cuda",)).as_text()
    assert "// add\n" in cuda
    hlo = fjax.jit(fjax.grad(_f)).lower(x).compiler_ir("hlo").as_hlo_text()
    assert "add(multiply" in hlo and "add_any" not in hlo


def test_lowering_rule_is_add():
    eqn = fjax.make_jaxpr(lambda a, b: add_any_p.bind(a, b))(np.ones(2, np.float32), np.ones(2, np.float32))
    rule = lowering.lowering_rule("add_any")
    assert rule.kind == "elementwise" and rule.op == "add"
    assert eqn.jaxpr.eqns[0].primitive is add_any_p


def test_max_min_jvp_print_and_split_ties_like_jax():
    # JAX 0.10.2: make_jaxpr of jvp(lax.max, (x, y), (a, b)) on f32 scalars
    got = str(fjax.make_jaxpr(lambda x, y, a, b: fjax.jvp(fjax.lax.max, (x, y), (a, b)))(1.0, 2.0, 3.0, 4.0))
    assert got == (
        "{ lambda ; a:f32[] b:f32[] c:f32[] d:f32[]. let\n"
        "    e:f32[] = max a b\n"
        "    f:bool[] = eq a e\n"
        "    g:f32[] = select_n f 0.0:f32[] 1.0:f32[]\n"
        "    h:bool[] = eq b e\n"
        "    i:f32[] = select_n h 1.0:f32[] 2.0:f32[]\n"
        "    j:f32[] = div g i\n"
        "    k:f32[] = mul c j\n"
        "    l:bool[] = eq b e\n"
        "    m:f32[] = select_n l 0.0:f32[] 1.0:f32[]\n"
        "    n:bool[] = eq a e\n"
        "    o:f32[] = select_n n 1.0:f32[] 2.0:f32[]\n"
        "    p:f32[] = div m o\n"
        "    q:f32[] = mul d p\n"
        "    r:f32[] = add_any k q\n"
        "  in (e, r) }"
    )
    # tangents JAX gives for these (ties split, NaN results give 0)
    x = np.array([1.0, 2.0, np.nan, 3.0, -0.0, 0.0], np.float32)
    y = np.array([2.0, 2.0, 1.0, np.nan, 0.0, -0.0], np.float32)
    tx, ty = np.ones(6, np.float32), np.full(6, 10.0, np.float32)
    np.testing.assert_array_equal(fjax.jvp(fjax.lax.max, (x, y), (tx, ty))[1], [10.0, 5.5, 0.0, 0.0, 5.5, 5.5])
    np.testing.assert_array_equal(fjax.jvp(fjax.lax.min, (x, y), (tx, ty))[1], [1.0, 5.5, 0.0, 0.0, 5.5, 5.5])
    np.testing.assert_array_equal(fjax.vmap(fjax.grad(fjax.lax.max))(x, y), [0.0, 0.5, 0.0, 0.0, 0.5, 0.5])
