"""Mismatches with JAX 0.10.2 fixed in one pass (every expectation below was recorded by running
the same program under JAX 0.10.2 on the CPU; the notes say where fjax's jaxprs differ in ways
that do not concern the check):

- the transpose and batching rules of dot_general / conv_general_dilated rebind through the
  public wrappers, so a None precision takes config ``jax_default_matmul_precision`` as it is
  when the rule runs (JVP rules keep the param as it is);
- ``jnp.convolve`` / ``jnp.correlate`` are one ``conv_general_dilated`` carrying ``precision``
  and ``preferred_element_type``;
- a dot_general precision the CPU refuses (TF32_TF32_F32) raises inside an eager ``lax.scan``;
- ``jnp.unique`` sorts bfloat16 / float8 inputs with NaNs (and works under jit with ``size``);
  the Array API ``unique_*`` functions keep NaNs apart (``equal_nan=False``);
- the fnuz float8 dtypes sort their NaN first (sort, argsort, lexsort, searchsorted, unique).
"""

import ml_dtypes
import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.extend.core import jaxpr_as_fun

P = lax.Precision
H = (P.HIGHEST, P.HIGHEST)
F32 = np.float32
DN = (((1,), (0,)), ((), ()))

X = jnp.asarray(np.random.default_rng(0).standard_normal((3, 4)).astype(F32))
W = jnp.asarray(np.random.default_rng(1).standard_normal((4, 5)).astype(F32))
XC = jnp.asarray(np.random.default_rng(2).standard_normal((1, 2, 8)).astype(F32))
KC = jnp.asarray(np.random.default_rng(3).standard_normal((3, 2, 3)).astype(F32))


def _precisions(jaxpr):
    """precision params of the dot_general / conv_general_dilated equations, sub-jaxprs included."""
    out = []

    def walk(j):
        j = getattr(j, "jaxpr", j)
        for e in j.eqns:
            if e.primitive.name in ("dot_general", "conv_general_dilated"):
                out.append(e.params["precision"])
            for v in e.params.values():
                for u in v if isinstance(v, (tuple, list)) else (v,):
                    if hasattr(u, "eqns") or hasattr(getattr(u, "jaxpr", None), "eqns"):
                        walk(u)

    walk(jaxpr)
    return out


def _ctx():
    return fjax.default_matmul_precision("float32")


# functions whose dot_general / conv carries precision=None: their jaxprs are traced outside the
# context, so evaluating them inside it binds the primitives with None (as jax.extend's
# jaxpr_as_fun does in JAX)
_F = jaxpr_as_fun(fjax.make_jaxpr(lambda x: jnp.sum(jnp.sin(x @ W)))(X))
_G = jaxpr_as_fun(fjax.make_jaxpr(lambda x, w: lax.dot_general(x, w, DN))(X, W))
_C = jaxpr_as_fun(fjax.make_jaxpr(lambda x, k: lax.conv_general_dilated(x, k, (1,), "SAME"))(XC, KC))


def _f1(x):
    return _F(x)[0]


# ---------------------------------------------------------------------------------------------
# 1. precision in the transpose / batching rules


def test_grad_under_and_outside_the_context():
    f = lambda x: jnp.sum(jnp.sin(x @ W))  # noqa: E731
    assert _precisions(fjax.make_jaxpr(fjax.grad(f))(X)) == [None, None]
    with _ctx():
        assert _precisions(fjax.make_jaxpr(fjax.grad(f))(X)) == [H, H]

    def f_in(x):  # the product traced inside the context, its transpose outside: both HIGHEST
        with _ctx():
            y = x @ W
        return jnp.sum(jnp.sin(y))

    assert _precisions(fjax.make_jaxpr(fjax.grad(f_in))(X)) == [H, H]


def test_transpose_of_a_none_precision_takes_the_config():
    with _ctx():
        # JAX: the forward product keeps None, its transpose takes the config
        assert _precisions(fjax.make_jaxpr(fjax.grad(_f1))(X)) == [None, H]
        lt = fjax.linear_transpose(lambda a: _G(a, W)[0], X)
        assert _precisions(fjax.make_jaxpr(lt)(jnp.ones((3, 5), F32))) == [H]
        # the JVP rule binds the param as it is
        assert _precisions(fjax.make_jaxpr(lambda a, t: fjax.jvp(_f1, (a,), (t,)))(X, X)) == [None, None]
        # a vjp function made outside the context, called inside it
    _, f_vjp = fjax.vjp(lambda a: _G(a, W)[0], X)
    with _ctx():
        assert _precisions(fjax.make_jaxpr(f_vjp)(jnp.ones((3, 5), F32))) == [H]
    lt = fjax.linear_transpose(lambda a: _G(a, W)[0], X)
    assert _precisions(fjax.make_jaxpr(lt)(jnp.ones((3, 5), F32))) == [None]
    with fjax.default_matmul_precision("BF16_BF16_F32"):
        assert _precisions(fjax.make_jaxpr(fjax.grad(_f1))(X)) == [None, lax.DotAlgorithmPreset.BF16_BF16_F32]


def test_vmap_of_a_none_precision_takes_the_config():
    xs, ws = jnp.stack([X, X]), jnp.stack([W, W])
    with _ctx():
        assert _precisions(fjax.make_jaxpr(fjax.vmap(lambda a: _G(a, W)[0]))(xs)) == [H]
        assert _precisions(fjax.make_jaxpr(fjax.vmap(lambda b: _G(X, b)[0]))(ws)) == [H]
        assert _precisions(fjax.make_jaxpr(fjax.vmap(lambda a, b: _G(a, b)[0]))(xs, ws)) == [H]
        # JAX runs dot_general's batching rule even when no input is mapped: the primal product
        # of a JVP under vmap (jacfwd) takes the config as well
        vj = fjax.vmap(lambda t: fjax.jvp(_f1, (X,), (t,)), out_axes=(None, 0))
        assert _precisions(fjax.make_jaxpr(vj)(xs)) == [H, H]
        assert _precisions(fjax.make_jaxpr(fjax.jacfwd(_f1))(X)) == [H, H]
        assert _precisions(fjax.make_jaxpr(fjax.vmap(lambda a: _G(X, W)[0] + a))(jnp.ones((2, 3, 5), F32))) == [H]
        # JAX's hessian holds four products, all HIGHEST (fjax drops a dead one)
        assert set(_precisions(fjax.make_jaxpr(fjax.hessian(_f1))(X))) == {H}
    # outside the context nothing changes
    assert _precisions(fjax.make_jaxpr(fjax.vmap(lambda a: _G(a, W)[0]))(xs)) == [None]
    assert _precisions(fjax.make_jaxpr(fjax.jacfwd(_f1))(X)) == [None, None]


def test_scan_transpose_under_the_context():
    def h(c):
        return jnp.sum(lax.scan(lambda c, _: (jnp.tanh(c @ jnp.ones((4, 4), F32)), None), c, None, length=2)[0])

    hj = jaxpr_as_fun(fjax.make_jaxpr(h)(X))
    with _ctx():
        assert _precisions(fjax.make_jaxpr(fjax.grad(lambda c: hj(c)[0]))(X)) == [None, H]


def test_conv_rules_take_the_config():
    with _ctx():
        g = fjax.make_jaxpr(fjax.grad(lambda a, b: jnp.sum(_C(a, b)[0]), argnums=(0, 1)))(XC, KC)
        # JAX: [None, H, H] (its jaxpr keeps the dead forward conv, fjax's drops it)
        assert [p for p in _precisions(g) if p is not None] == [H, H]
        assert _precisions(fjax.make_jaxpr(fjax.vmap(lambda a: _C(a, KC)[0]))(jnp.stack([XC, XC]))) == [H]
        assert _precisions(fjax.make_jaxpr(fjax.vmap(lambda b: _C(XC, b)[0]))(jnp.stack([KC, KC]))) == [H]
        jv = fjax.make_jaxpr(lambda a, t: fjax.jvp(lambda a: _C(a, KC)[0], (a,), (t,)))(XC, XC)
        assert _precisions(jv) == [None, None]


def test_rules_keep_an_explicit_precision_whatever_the_config():
    pair = (P.HIGH, P.DEFAULT)
    f = lambda a: jnp.sum(jnp.sin(lax.dot_general(a, W, DN, precision=pair)))  # noqa: E731
    with fjax.default_matmul_precision("bfloat16"):
        assert _precisions(fjax.make_jaxpr(fjax.grad(f))(X)) == [pair, pair]


# ---------------------------------------------------------------------------------------------
# 2. jnp.convolve / jnp.correlate


def _eqns(jaxpr):
    """The equations in order, those of sub-jaxprs in place of their call (JAX nests jnp
    functions in jit calls, fjax does not)."""
    out = []
    for e in getattr(jaxpr, "jaxpr", jaxpr).eqns:
        subs = [u for v in e.params.values() for u in (v if isinstance(v, (tuple, list)) else (v,))]
        subs = [u for u in subs if hasattr(getattr(u, "jaxpr", u), "eqns")]
        if subs:
            for u in subs:
                out.extend(_eqns(u))
        else:
            out.append(e)
    return out


def _conv_eqn(jaxpr):
    (e,) = [e for e in _eqns(jaxpr) if e.primitive.name == "conv_general_dilated"]
    return e


@pytest.mark.parametrize("fn", [jnp.convolve, jnp.correlate])
def test_convolve_correlate_carry_precision(fn):
    a = jnp.arange(5.0, dtype=F32)
    v = jnp.array([1.0, 2.0, 0.5], F32)
    for kw, prec, pet in [
        ({}, None, None),
        (dict(precision="highest"), H, None),
        (dict(precision=P.HIGH), (P.HIGH, P.HIGH), None),
        (dict(precision=("highest", "default")), (P.HIGHEST, P.DEFAULT), None),
        (dict(preferred_element_type=jnp.float32), None, np.dtype(F32)),
    ]:
        e = _conv_eqn(fjax.make_jaxpr(lambda a, v: fn(a, v, **kw))(a, v))
        assert e.params["precision"] == prec and e.params["preferred_element_type"] == pet
    with _ctx():
        assert _conv_eqn(fjax.make_jaxpr(lambda a, v: fn(a, v))(a, v)).params["precision"] == H
    # the CPU computes TF32 convolutions (JAX returns the full float32 result)
    r = fn(a, v, precision=lax.DotAlgorithmPreset.TF32_TF32_F32)
    np.testing.assert_allclose(np.asarray(r), np.asarray(fn(a, v)))


def test_convolve_preferred_element_type_keeps_integer_inputs():
    ai = jnp.arange(5, dtype=jnp.int8)
    vi = jnp.array([1, 2, 3], jnp.int8)
    # JAX: without preferred_element_type the inputs go to float32 first
    r = jnp.convolve(ai, vi)
    assert r.dtype == F32 and np.asarray(r).tolist() == [0, 1, 4, 10, 16, 17, 12]
    j = fjax.make_jaxpr(lambda a, v: jnp.convolve(a, v))(ai, vi)
    assert [e.primitive.name for e in _eqns(j)].count("convert_element_type") == 2
    for pet in (jnp.int32, jnp.float32):
        r = jnp.convolve(ai, vi, preferred_element_type=pet)
        assert r.dtype == np.dtype(pet) and np.asarray(r).tolist() == [0, 1, 4, 10, 16, 17, 12]
        e = _conv_eqn(fjax.make_jaxpr(lambda a, v: jnp.convolve(a, v, preferred_element_type=pet))(ai, vi))
        assert [v.aval.dtype for v in e.invars] == [np.dtype(np.int8)] * 2
    r = jnp.correlate(
        np.array([1, 2, 3, 100], np.int8), np.array([3, 4], np.int8), mode="full", preferred_element_type=jnp.int16
    )
    assert r.dtype == np.int16 and np.asarray(r).tolist() == [4, 11, 18, 409, 300]
    bf = jnp.correlate(jnp.arange(5.0, dtype=jnp.bfloat16), jnp.ones(3, jnp.bfloat16), preferred_element_type=F32)
    assert bf.dtype == F32


def test_convolve_correlate_values_every_mode():
    # JAX agrees with numpy on all of these (checked); shorter first inputs swap as in JAX
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 5):
        for m in (1, 2, 4, 6):
            a = rng.standard_normal(n).astype(F32)
            v = (rng.standard_normal(m) + 1j * rng.standard_normal(m)).astype(np.complex64)
            for fn in ("convolve", "correlate"):
                for mode in ("full", "same", "valid"):
                    for vv in (v.real.copy(), v):
                        got = np.asarray(getattr(jnp, fn)(a, vv, mode=mode))
                        np.testing.assert_allclose(got, getattr(np, fn)(a, vv, mode=mode), rtol=1e-5, atol=1e-5)
    # JAX: a shorter first input to correlate reverses the conv output
    j = fjax.make_jaxpr(lambda a, v: jnp.correlate(a, v, mode="full"))(jnp.ones(2, F32), jnp.ones(4, F32))
    assert [e.primitive.name for e in _eqns(j)][-3:] == ["conv_general_dilated", "rev", "squeeze"]


# ---------------------------------------------------------------------------------------------
# 3. a dot preset the CPU refuses, inside an eager scan

_TF32 = lax.DotAlgorithmPreset.TF32_TF32_F32
_MSG = "The precision 'TF32_TF32_F32' is not supported by dot_general on CPU"


def test_eager_scan_refuses_a_preset_the_cpu_refuses():
    w = jnp.ones((4, 4), F32)
    c = jnp.ones((2, 4), F32)

    def body(c, _):
        return lax.dot(c, w, precision=_TF32), None

    for run in [
        lambda: lax.scan(body, c, None, length=3),
        lambda: lax.fori_loop(0, 3, lambda i, c: lax.dot(c, w, precision=_TF32), c),
        lambda: lax.map(lambda r: lax.dot(r, w, precision=_TF32), c),
        lambda: fjax.grad(lambda c: jnp.sum(lax.scan(body, c, None, length=3)[0]))(c),
        lambda: fjax.jit(lambda c: lax.scan(body, c, None, length=3)[0])(c),
    ]:
        with pytest.raises(ValueError, match=_MSG):
            run()
    # tracing alone is fine (a GPU computes it)
    fjax.make_jaxpr(lambda c: lax.scan(body, c, None, length=3)[0])(c)
    with fjax.disable_jit():
        with pytest.raises(ValueError, match=_MSG):
            lax.scan(body, c, None, length=3)


# ---------------------------------------------------------------------------------------------
# 4. / 5. unique and the NaN order of the low-precision floats

_VALS = [3.0, np.nan, -1.0, 0.5, np.nan, 3.0, -0.0, 0.0, 2.0]


def _x(dt):
    return jnp.asarray(np.array(_VALS, F32).astype(dt))


def _f(a):
    return [str(v) for v in np.asarray(a).astype(F32).ravel().tolist()]


_SIGNED_NAN_LAST = ["bfloat16", "float16", "float32", "float8_e4m3fn", "float8_e5m2", "float8_e3m4", "float8_e4m3"]
_FNUZ = ["float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz"]


@pytest.mark.parametrize("name", _SIGNED_NAN_LAST)
def test_unique_nan_low_precision(name):
    x = _x(getattr(ml_dtypes, name, None) or np.dtype(name))
    assert _f(jnp.unique(x)) == ["-1.0", "-0.0", "0.5", "2.0", "3.0", "nan"]
    assert _f(jnp.unique(x, equal_nan=False)) == ["-1.0", "-0.0", "0.5", "2.0", "3.0", "nan", "nan"]
    v, i, inv, c = jnp.unique(x, return_index=True, return_inverse=True, return_counts=True)
    assert np.asarray(i).tolist() == [2, 6, 3, 8, 0, 1]
    assert np.asarray(inv).tolist() == [4, 5, 0, 2, 5, 4, 1, 1, 3]
    assert np.asarray(c).tolist() == [1, 2, 1, 1, 2, 2]
    # the Array API functions keep NaNs apart
    assert _f(jnp.unique_values(x)) == ["-1.0", "-0.0", "0.5", "2.0", "3.0", "nan", "nan"]
    assert np.asarray(jnp.unique_counts(x).counts).tolist() == [1, 2, 1, 1, 2, 1, 1]


@pytest.mark.parametrize("name", _SIGNED_NAN_LAST)
def test_unique_nan_low_precision_jit(name):
    x = _x(getattr(ml_dtypes, name, None) or np.dtype(name))
    jf = fjax.jit(lambda x: jnp.unique(x, size=9, fill_value=0))
    for _ in range(3):  # the first call may run the primitives' impls, later ones the compiled program
        # JAX pads with fill_value
        assert _f(jf(x)) == ["-1.0", "-0.0", "0.5", "2.0", "3.0", "nan", "0.0", "0.0", "0.0"]


def test_unique_float8_e8m0fnu():
    x = jnp.asarray(np.array([4.0, np.nan, 1.0, 0.5, np.nan, 4.0, 2.0, 1.0, 2.0], F32).astype(ml_dtypes.float8_e8m0fnu))
    v, i, inv, c = jnp.unique(x, return_index=True, return_inverse=True, return_counts=True)
    assert _f(v) == ["0.5", "1.0", "2.0", "4.0", "nan"]
    assert np.asarray(i).tolist() == [3, 2, 6, 0, 1]
    assert np.asarray(inv).tolist() == [3, 4, 1, 0, 4, 3, 2, 1, 2]
    assert np.asarray(c).tolist() == [1, 2, 2, 2, 2]


@pytest.mark.parametrize("name", _FNUZ)
def test_fnuz_nan_sorts_first(name):
    x = _x(getattr(ml_dtypes, name))
    srt = ["nan", "nan", "-1.0", "0.0", "0.0", "0.5", "2.0", "3.0", "3.0"]
    order = [1, 4, 2, 6, 7, 3, 8, 0, 5]
    assert _f(jnp.sort(x)) == srt
    assert _f(lax.sort(x)) == srt
    assert _f(fjax.jit(jnp.sort)(x)) == srt
    assert np.asarray(jnp.argsort(x)).tolist() == order
    assert np.asarray(lax.sort((x, jnp.arange(9)), num_keys=1)[1]).tolist() == order
    assert np.asarray(jnp.lexsort((x,))).tolist() == order
    assert np.asarray(jnp.argsort(x, descending=True)).tolist() == [0, 5, 8, 3, 6, 7, 2, 1, 4]
    assert _f(jnp.sort(x, descending=True)) == ["3.0", "3.0", "2.0", "0.5", "0.0", "0.0", "-1.0", "nan", "nan"]
    assert np.asarray(jnp.searchsorted(jnp.sort(x), x)).tolist() == [7, 0, 2, 5, 0, 7, 3, 3, 6]
    assert np.asarray(jnp.searchsorted(jnp.sort(x), x, side="right")).tolist() == [9, 2, 3, 6, 2, 9, 5, 5, 7]
    v, i, inv, c = jnp.unique(x, return_index=True, return_inverse=True, return_counts=True)
    assert _f(v) == ["nan", "-1.0", "0.0", "0.5", "2.0", "3.0"]
    assert np.asarray(i).tolist() == [1, 2, 6, 3, 8, 0]
    assert np.asarray(inv).tolist() == [5, 0, 1, 3, 0, 5, 2, 2, 4]
    assert np.asarray(c).tolist() == [2, 1, 2, 1, 1, 2]
    assert _f(jnp.unique(x, equal_nan=False)) == ["nan", "nan", "-1.0", "0.0", "0.5", "2.0", "3.0"]
    # unchanged, as JAX: top_k ranks that NaN lowest too; argmax/argmin and max/min take it as NaN
    vals, idx = lax.top_k(x, 4)
    assert _f(vals) == ["3.0", "3.0", "2.0", "0.5"] and np.asarray(idx).tolist() == [0, 5, 8, 3]
    assert int(jnp.argmax(x)) == 1 and int(jnp.argmin(x)) == 1
    assert _f(jnp.max(x)) == ["nan"] and _f(jnp.min(x)) == ["nan"]


def test_unique_matches_jax_edge_cases():
    nan = np.nan
    v, c = jnp.unique(np.array([[nan, 2], [nan, 2], [1, 2]], F32), axis=0, return_counts=True)
    assert _f(v.ravel()) == ["1.0", "2.0", "nan", "2.0"] and np.asarray(c).tolist() == [1, 2]
    v, c = jnp.unique(np.array([[nan, 2], [nan, 2], [1, 2]], F32), axis=0, return_counts=True, equal_nan=False)
    assert np.asarray(c).tolist() == [1, 1, 1]
    # complex: a NaN in either part is one NaN
    v, c = jnp.unique(
        np.array([1 + 1j, complex(1, nan), complex(nan, 0), 1 + 1j, 0j], np.complex64), return_counts=True
    )
    assert np.asarray(c).tolist() == [1, 2, 2] and np.isnan(np.asarray(v)[-1])
    x = np.array([4.0, 1.0, nan, 2.0, 1.0], F32)
    v, i, inv, c = jnp.unique(x, size=7, return_index=True, return_inverse=True, return_counts=True)
    assert _f(v) == ["1.0", "2.0", "4.0", "nan", "1.0", "1.0", "1.0"]
    assert np.asarray(i).tolist() == [1, 3, 0, 2, 1, 1, 1]
    assert np.asarray(inv).tolist() == [2, 0, 3, 1, 0]
    assert np.asarray(c).tolist() == [2, 1, 1, 1, 0, 0, 0]
    v, i, inv, c = jnp.unique(x, size=2, return_index=True, return_inverse=True, return_counts=True)
    assert _f(v) == ["1.0", "2.0"] and np.asarray(i).tolist() == [1, 3] and np.asarray(c).tolist() == [2, 1]
    v, i, inv, c = jnp.unique(
        np.zeros(0, F32), size=3, fill_value=1.0, return_index=True, return_inverse=True, return_counts=True
    )
    assert _f(v) == ["1.0", "1.0", "1.0"] and np.asarray(i).shape == np.asarray(c).shape == (0,)
    with pytest.raises(ValueError, match="fill_value must be specified"):
        jnp.unique(np.zeros(0, F32), size=3)
    # under vmap and jit (size given)
    out = fjax.vmap(lambda r: jnp.unique(r, size=3))(np.array([[1.0, 1.0, 2.0], [nan, 0.0, nan]], F32))
    assert _f(out.ravel()) == ["1.0", "2.0", "1.0", "0.0", "nan", "0.0"]
    with pytest.raises(fjax.errors.ConcretizationTypeError, match="first argument of jnp.unique"):
        fjax.jit(jnp.unique)(x)
