"""lax.scan's forwarding as JAX 0.10's: carries the body passes straight through become loop
constants (the result is the initial value) and ys that are just the xs are the xs (dropped from
the body). ``make_jaxpr`` prints as JAX 0.10.2 printed the same functions (recorded below), and
results, vmap and grad are those of the same scan without forwarding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.lax.control_flow._scan_forwarding import scan_forwarding

F = np.float32
X3 = np.arange(3.0, dtype=np.float32)
X23 = np.arange(6.0, dtype=np.float32).reshape(2, 3)


def carry_passthrough(c, xs):
    def body(carry, x):
        a, b = carry
        return (a, b + x), a * x

    return lax.scan(body, c, xs)


def ys_is_xs(c, xs):
    return lax.scan(lambda c, x: (c + x, x), c, xs)


def ys_is_carry_in(c, xs):
    return lax.scan(lambda c, x: (c + x, c), c, xs)


def ys_is_const(c, xs, k):
    return lax.scan(lambda c, x: (c + x, k), c, xs)


def only_passthrough(c, xs):
    return lax.scan(lambda c, x: (c, x * c), c, xs)


def swap(c, xs):
    return lax.scan(lambda c, x: ((c[1], c[0] + x), x * 2), c, xs)


def pass_and_ys_carry(c, xs):
    return lax.scan(lambda c, x: ((c[0], c[1] + x), c[0]), c, xs)


def carry_out_const(c, xs, k):
    return lax.scan(lambda c, x: ((k, c[1] + x), x), c, xs)


def reverse(c, xs):
    return lax.scan(lambda c, x: ((c[0], c[1] * x), x), c, xs, reverse=True)


CASES = {
    "carry_passthrough": (carry_passthrough, ((F(1.0), F(2.0)), X3)),
    "ys_is_xs": (ys_is_xs, (F(1.0), X3)),
    "ys_is_carry_in": (ys_is_carry_in, (F(1.0), X3)),
    "ys_is_const": (ys_is_const, (F(1.0), X3, F(2.0))),
    "only_passthrough": (only_passthrough, (F(1.0), X3)),
    "swap": (swap, ((F(1.0), F(2.0)), X3)),
    "pass_and_ys_carry": (pass_and_ys_carry, ((F(1.0), F(2.0)), X3)),
    "carry_out_const": (carry_out_const, ((F(1.0), F(2.0)), X3, F(5.0))),
    "reverse": (reverse, ((F(1.0), F(2.0)), X3)),
}

# str(jax.make_jaxpr(fn)(*args)) for CASES under JAX 0.10.2 (jax CPU, by hand in a venv)
JAX_PRINTS = {
    "carry_passthrough": """{ lambda ; a:f32[] b:f32[] c:f32[3]. let
    d:f32[] e:f32[3] = scan[
      jaxpr={ lambda ; f:f32[] g:f32[] h:f32[]. let
          i:f32[] = add g h
          j:f32[] = mul f h
        in (i, j) }
      length=3
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] a b c
  in (a, d, e) }""",
    "ys_is_xs": """{ lambda ; a:f32[] b:f32[3]. let
    c:f32[] = scan[
      jaxpr={ lambda ; d:f32[] e:f32[]. let f:f32[] = add d e in (f,) }
      length=3
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] a b
  in (c, b) }""",
    "ys_is_carry_in": """{ lambda ; a:f32[] b:f32[3]. let
    c:f32[] d:f32[3] = scan[
      jaxpr={ lambda ; e:f32[] f:f32[]. let g:f32[] = add e f in (g, e) }
      length=3
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] a b
  in (c, d) }""",
    "ys_is_const": """{ lambda ; a:f32[] b:f32[3] c:f32[]. let
    d:f32[] e:f32[3] = scan[
      jaxpr={ lambda ; f:f32[] g:f32[] h:f32[]. let
          i:f32[] = add g h
        in (i, f) }
      length=3
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] c a b
  in (d, e) }""",
    "only_passthrough": """{ lambda ; a:f32[] b:f32[3]. let
    c:f32[3] = scan[
      jaxpr={ lambda ; d:f32[] e:f32[]. let f:f32[] = mul e d in (f,) }
      length=3
      num_carry=0
      num_consts=1
      reverse=False
      unroll=1
    ] a b
  in (a, c) }""",
    "swap": """{ lambda ; a:f32[] b:f32[] c:f32[3]. let
    d:f32[] e:f32[] f:f32[3] = scan[
      jaxpr={ lambda ; g:f32[] h:f32[] i:f32[]. let
          j:f32[] = add g i
          k:f32[] = mul i 2.0:f32[]
        in (h, j, k) }
      length=3
      num_carry=2
      num_consts=0
      reverse=False
      unroll=1
    ] a b c
  in (d, e, f) }""",
    "pass_and_ys_carry": """{ lambda ; a:f32[] b:f32[] c:f32[3]. let
    d:f32[] e:f32[3] = scan[
      jaxpr={ lambda ; f:f32[] g:f32[] h:f32[]. let
          i:f32[] = add g h
        in (i, f) }
      length=3
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] a b c
  in (a, d, e) }""",
    "carry_out_const": """{ lambda ; a:f32[] b:f32[] c:f32[3] d:f32[]. let
    e:f32[] f:f32[] = scan[
      jaxpr={ lambda ; g:f32[] h:f32[] i:f32[] j:f32[]. let
          k:f32[] = add i j
        in (g, k) }
      length=3
      num_carry=2
      num_consts=1
      reverse=False
      unroll=1
    ] d a b c
  in (e, f, c) }""",
    "reverse": """{ lambda ; a:f32[] b:f32[] c:f32[3]. let
    d:f32[] = scan[
      jaxpr={ lambda ; e:f32[] f:f32[] g:f32[]. let h:f32[] = mul f g in (h,) }
      length=3
      num_carry=1
      num_consts=1
      reverse=True
      unroll=1
    ] a b c
  in (a, d, c) }""",
}


@pytest.mark.parametrize("name", list(CASES))
def test_make_jaxpr_as_jax(name):
    fn, args = CASES[name]
    assert str(fjax.make_jaxpr(fn)(*args)) == JAX_PRINTS[name]


def _unforwarded(fn):
    """The same scan, its body's pass-throughs hidden behind a no-op (so nothing is forwarded)."""

    def wrapped(*args):
        orig = lax.scan

        def scan(f, init, xs, **kw):
            def g(c, x):
                c2, y = f(c, x)
                return fjax.tree.map(lambda v: v + 0.0, c2), fjax.tree.map(lambda v: v + 0.0, y)

            return orig(g, init, xs, **kw)

        lax.scan = scan
        try:
            return fn(*args)
        finally:
            lax.scan = orig

    return wrapped


@pytest.mark.parametrize("name", list(CASES))
def test_results_as_without_forwarding(name):
    fn, args = CASES[name]
    got = fn(*args)
    want = _unforwarded(fn)(*args)
    for a, b in zip(fjax.tree.leaves(got), fjax.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert a.dtype == b.dtype and a.shape == b.shape
    jitted = fjax.jit(fn)(*args)
    for a, b in zip(fjax.tree.leaves(jitted), fjax.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_ys_are_the_xs_object_and_carry_the_init():
    xs = jnp.arange(3.0)
    c0 = jnp.float32(4.0)
    (a, _), ys = lax.scan(lambda c, x: ((c[0], c[1] + x), x), (c0, c0), xs)
    assert ys is xs and a is c0


def test_forwarding_is_cached_per_body():
    def body(c, x):
        return (c[0], c[1] + x), x

    def f(c, xs):
        return lax.scan(body, c, xs)

    inner = [fjax.make_jaxpr(f)((F(1.0), F(2.0)), X3).jaxpr.eqns[0].params["jaxpr"] for _ in range(2)]
    assert len(inner[0].jaxpr.invars) == 3 and len(inner[0].jaxpr.outvars) == 1  # c[0] a const, ys the xs
    assert inner[0] is inner[1]  # the rewritten body is built once per traced body
    assert scan_forwarding(inner[0], 1, 1) is None  # nothing left to forward


# str(jax.make_jaxpr(...)) under JAX 0.10.2 for vmap / grad of carry_passthrough
JAX_TRANSFORMED = {
    "vmap_xs": """{ lambda ; a:f32[] b:f32[] c:f32[2,3]. let
    d:f32[2] = broadcast_in_dim b
    e:f32[3,2] = transpose[permutation=(1, 0)] c
    f:f32[2] g:f32[3,2] = scan[
      jaxpr={ lambda ; h:f32[] i:f32[2] j:f32[2]. let
          k:f32[2] = add i j
          l:f32[2] = mul h j
        in (k, l) }
      length=3
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] a d e
    m:f32[2] = broadcast_in_dim a
    n:f32[2,3] = transpose[permutation=(1, 0)] g
  in (m, f, n) }""",
    "vmap_a": """{ lambda ; a:f32[2] b:f32[] c:f32[3]. let
    d:f32[] e:f32[3,2] = scan[
      jaxpr={ lambda ; f:f32[2] g:f32[] h:f32[]. let
          i:f32[] = add g h
          j:f32[2] = mul f h
        in (i, j) }
      length=3
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] a b c
    k:f32[2] = broadcast_in_dim d
    l:f32[2,3] = transpose[permutation=(1, 0)] e
  in (a, k, l) }""",
    "grad": """{ lambda ; a:f32[] b:f32[3]. let
    c:f32[] d:f32[3] = scan[
      jaxpr={ lambda ; e:f32[] f:f32[] g:f32[]. let
          h:f32[] = add f g
          i:f32[] = mul e g
        in (h, i) }
      length=3
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] a 2.0:f32[] b
    j:f32[] = mul a c
    k:f32[] = reduce_sum[axes=(0,) out_sharding=None] d
    _:f32[] = add j k
    l:f32[3] = broadcast_in_dim 1.0:f32[]
    m:f32[] = mul 1.0:f32[] c
    n:f32[] = scan[
      jaxpr={ lambda ; o:f32[] p:f32[] q:f32[]. let
          r:f32[] = mul p q
          s:f32[] = add_any o r
        in (s,) }
      length=3
      num_carry=1
      num_consts=0
      reverse=True
      unroll=1
    ] 0.0:f32[] l b
    t:f32[] = add_any m n
  in (t,) }""",
}


def _loss(a, xs):
    (c0, c1), ys = carry_passthrough((a, F(2.0)), xs)
    return c0 * c1 + ys.sum()


def test_vmap_and_grad_print_as_jax():
    got = fjax.make_jaxpr(fjax.vmap(carry_passthrough, in_axes=(None, 0)))((F(1.0), F(2.0)), X23)
    assert str(got) == JAX_TRANSFORMED["vmap_xs"]
    a2 = np.array([1.0, 2.0], np.float32)
    got = fjax.make_jaxpr(fjax.vmap(carry_passthrough, in_axes=((0, None), None)))((a2, F(2.0)), X3)
    assert str(got) == JAX_TRANSFORMED["vmap_a"]
    assert str(fjax.make_jaxpr(fjax.grad(_loss))(F(1.5), X3)) == JAX_TRANSFORMED["grad"]
    assert float(fjax.grad(_loss)(F(1.5), X3)) == 8.0  # JAX 0.10.2 gave 8.0


def _numpy_scan(kinds, ykinds, init, xs, k, dt=np.float32):
    """A Python loop over the same body: carry i is passed through ('p'), or c_i * 0.5 + x ('u');
    y j is x ('x'), carry-in 0 ('c'), the constant k ('k') or c_0 * x ('m')."""
    c = [dt(v) for v in init]
    ys = []
    for x in xs:
        y = [{"x": x, "c": c[0], "k": k, "m": c[0] * x}[t] for t in ykinds]
        c = [ci if t == "p" else ci * dt(0.5) + x for ci, t in zip(c, kinds)]
        ys.append(y)
    return c, [np.array([y[j] for y in ys], dt) for j in range(len(ykinds))]


def _fjax_scan(kinds, ykinds, init, xs, k, rev=False):
    def body(c, x):
        new = tuple(ci if t == "p" else ci * 0.5 + x for ci, t in zip(c, kinds))
        y = tuple({"x": x, "c": c[0], "k": k, "m": c[0] * x}[t] for t in ykinds)
        return new, y

    return lax.scan(body, tuple(init), xs, reverse=rev)


kinds_st = st.lists(st.sampled_from("pu"), min_size=1, max_size=3)
ykinds_st = st.lists(st.sampled_from("xckm"), min_size=0, max_size=3)


@given(kinds_st, ykinds_st, st.booleans())
def test_random_bodies_match_loop_vmap_grad(kinds, ykinds, rev):
    init = [F(1.0 + i) for i in range(len(kinds))]
    xs = np.linspace(-1.0, 1.0, 4).astype(np.float32)
    k = F(3.0)
    c, ys = _fjax_scan(kinds, ykinds, init, xs, k, rev)
    rc, rys = _numpy_scan(kinds, ykinds, init, xs[::-1] if rev else xs, k)
    if rev:
        rys = [y[::-1] for y in rys]
    for a, b in zip(c, rc):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-6)
    for a, b in zip(ys, rys):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-6)

    # vmap over xs (carry unbatched) and over the carry (xs unbatched)
    X = np.stack([xs, xs * 2]).astype(np.float32)
    vc, vys = fjax.vmap(lambda x: _fjax_scan(kinds, ykinds, init, x, k, rev))(X)
    for b in range(2):
        c1, ys1 = _fjax_scan(kinds, ykinds, init, X[b], k, rev)
        for a, e in zip(vc, c1):
            np.testing.assert_allclose(np.asarray(a)[b], np.asarray(e), rtol=1e-6)
        for a, e in zip(vys, ys1):
            np.testing.assert_allclose(np.asarray(a)[b], np.asarray(e), rtol=1e-6)
    C = np.array([1.0, -2.0], np.float32)
    vc, vys = fjax.vmap(lambda c0: _fjax_scan(kinds, ykinds, [c0, *init[1:]], xs, k, rev))(C)
    for b in range(2):
        c1, ys1 = _fjax_scan(kinds, ykinds, [C[b], *init[1:]], xs, k, rev)
        for a, e in zip(vc, c1):
            np.testing.assert_allclose(np.asarray(a)[b], np.asarray(e), rtol=1e-6)
        for a, e in zip(vys, ys1):
            np.testing.assert_allclose(np.asarray(a)[b] if np.ndim(a) else a, np.asarray(e), rtol=1e-6)

    # grad against central differences (the loss is polynomial of low degree: float64 exact enough)
    def loss(c0, x):
        c, ys = _fjax_scan(kinds, ykinds, [c0, *init[1:]], x, k, rev)
        return sum(ci * ci for ci in c) + sum(jnp.sum(y * y) for y in ys)

    g0, gx = fjax.grad(loss, argnums=(0, 1))(F(0.7), xs)
    x64 = xs.astype(np.float64)
    h = 1e-3

    def num(c0, x):
        c, ys = _numpy_scan(kinds, ykinds, [c0, *init[1:]], (x[::-1] if rev else x), np.float64(k), np.float64)
        return float(sum(ci * ci for ci in c) + sum(np.sum(y.astype(np.float64) ** 2) for y in ys))

    fd0 = (num(0.7 + h, x64) - num(0.7 - h, x64)) / (2 * h)
    np.testing.assert_allclose(float(g0), fd0, rtol=2e-3, atol=1e-3)
    for i in range(len(xs)):
        e = np.zeros_like(x64)
        e[i] = h
        fdi = (num(0.7, x64 + e) - num(0.7, x64 - e)) / (2 * h)
        np.testing.assert_allclose(float(gx[i]), fdi, rtol=2e-3, atol=1e-3)
