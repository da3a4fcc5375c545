"""``precision=`` of dot_general / conv_general_dilated kept on the equations in JAX's canonical
form (JAX 0.10.2, checked with it): a pair of ``lax.Precision``, a ``DotAlgorithmPreset`` (or a
``DotAlgorithm``), or None; config ``jax_default_matmul_precision`` filling in None at trace
time (jit retraces when it changes); grad / vmap / jvp / transpose carrying it; jaxprs printing
it as JAX does; fjax.export round-tripping it; the CPU refusing what JAX's CPU refuses and
computing every other one exactly as ``precision=None``."""

import contextlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import export, lax
from fjax.lax._dot_algorithms import canonicalize_precision

P = lax.Precision
D = lax.DotAlgorithmPreset
F32 = np.float32
DN = (((1,), (0,)), ((), ()))

X = jnp.asarray(np.random.default_rng(0).standard_normal((4, 5)).astype(F32))
W = jnp.asarray(np.random.default_rng(1).standard_normal((5, 3)).astype(F32))
XC = jnp.asarray(np.random.default_rng(2).standard_normal((2, 3, 6, 6)).astype(F32))
WC = jnp.asarray(np.random.default_rng(3).standard_normal((4, 3, 3, 3)).astype(F32))


def _hp(p):
    return (P[p], P[p])


# argument -> the param JAX 0.10.2 puts on the equation
CANONICAL = [
    (None, None),
    ("highest", _hp("HIGHEST")),
    ("float32", _hp("HIGHEST")),
    ("high", _hp("HIGH")),
    ("bfloat16_3x", _hp("HIGH")),
    ("tensorfloat32", _hp("HIGH")),
    ("default", _hp("DEFAULT")),
    ("bfloat16", _hp("DEFAULT")),
    ("fastest", _hp("DEFAULT")),
    (P.HIGH, _hp("HIGH")),
    (P.HIGHEST, _hp("HIGHEST")),
    (("high", "default"), (P.HIGH, P.DEFAULT)),
    (["high", "highest"], (P.HIGH, P.HIGHEST)),
    ((P.HIGH, P.DEFAULT), (P.HIGH, P.DEFAULT)),
    ("F32_F32_F32", D.F32_F32_F32),
    (D.BF16_BF16_F32, D.BF16_BF16_F32),
    ("TF32_TF32_F32", D.TF32_TF32_F32),
    ("DEFAULT", D.DEFAULT),
]

# the arguments JAX refuses ("Precision argument must be one of"): strings are case sensitive
INVALID = ["HIGHEST", "High", "bogus", (None, None), (P.HIGH, "high"), ("high",), 0, 2, ("F32_F32_F32", "high")]

# presets JAX's CPU backend refuses for dot_general (any dtype), when the program runs
CPU_REFUSED = [
    "ANY_F8_ANY_F8_F32",
    "ANY_F8_ANY_F8_F32_FAST_ACCUM",
    "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM",
    "F16_F16_F32",
    "BF16_BF16_BF16",
    "BF16_BF16_F32_X9",
    "TF32_TF32_F32",
    "TF32_TF32_F32_X3",
]
CPU_OK = [n for n in D.__members__ if n not in CPU_REFUSED]


def _eqns(closed, names=("dot_general", "conv_general_dilated")):
    """Every dot_general / conv equation of ``closed``, sub-jaxprs included."""
    out = []

    def walk(jx):
        for e in jx.eqns:
            if e.primitive.name in names:
                out.append(e)
            for v in e.params.values():
                for sub in v if isinstance(v, tuple) else (v,):
                    if isinstance(sub, fjax.core.ClosedJaxpr):
                        walk(sub.jaxpr)
                    elif isinstance(sub, fjax.core.Jaxpr):
                        walk(sub)

    walk(closed.jaxpr)
    return out


def _precisions(closed, names=("dot_general", "conv_general_dilated")):
    return [e.params["precision"] for e in _eqns(closed, names)]


@contextlib.contextmanager
def _config(name, value):
    old = getattr(fjax.config, name)
    fjax.config.update(name, value)
    try:
        yield
    finally:
        fjax.config.update(name, old)


# ---------------------------------------------------------------------------------------------
# canonical forms


@pytest.mark.parametrize("arg,want", CANONICAL, ids=[repr(a) for a, _ in CANONICAL])
def test_canonical_param(arg, want):
    for f in (
        lambda a, b: lax.dot_general(a, b, DN, precision=arg),
        lambda a, b: lax.dot(a, b, precision=arg),
        lambda a, b: jnp.dot(a, b, precision=arg),
    ):
        (got,) = _precisions(fjax.make_jaxpr(f)(X, W))
        assert got == want and type(got) is type(want)
        hash(got)
    assert canonicalize_precision(arg) == want
    assert canonicalize_precision(want) == want  # canonical values canonicalize to themselves
    (conv,) = _precisions(fjax.make_jaxpr(lambda a, b: lax.conv(a, b, (1, 1), "SAME", precision=arg))(XC, WC))
    assert conv == want


def test_printed_like_jax():
    # (JAX 0.10.2's text; the parameters go one a line when the equation is longer than 80 columns)
    text = str(fjax.make_jaxpr(lambda a, b: lax.dot(a, b, precision="highest"))(X, W))
    assert (
        "dot_general[\n      dimension_numbers=(([1], [0]), ([], []))\n"
        "      precision=(Precision.HIGHEST, Precision.HIGHEST)\n    ] a b" in text
    )
    text = str(fjax.make_jaxpr(lambda a, b: lax.dot(a, b, precision=("high", "default")))(X, W))
    assert "precision=(Precision.HIGH, Precision.DEFAULT)\n    ]" in text
    text = str(fjax.make_jaxpr(lambda a, b: lax.dot(a, b, precision="F32_F32_F32"))(X, W))
    assert "precision=F32_F32_F32\n    ]" in text
    # as JAX: a None precision / preferred_element_type is not printed for dot_general
    text = str(fjax.make_jaxpr(lambda a, b: lax.dot(a, b))(X, W))
    assert "dot_general[dimension_numbers=(([1], [0]), ([], []))] a b" in text
    text = str(fjax.make_jaxpr(lambda a, b: jnp.dot(a, b, precision="high"))(X, W))
    assert "precision=(Precision.HIGH, Precision.HIGH)\n      preferred_element_type=float32\n    ]" in text
    text = str(fjax.make_jaxpr(lambda a, b: lax.conv(a, b, (1, 1), "SAME", precision="highest"))(XC, WC))
    assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in text
    assert repr(P.HIGHEST) == "Precision.HIGHEST" and str(D.F32_F32_F32) == "F32_F32_F32"


_one = st.sampled_from(list(P) + ["highest", "float32", "high", "bfloat16_3x", "tensorfloat32", "default", "bfloat16"])


@given(_one, _one)
def test_random_pairs(a, b):
    want = (canonicalize_precision(a)[0], canonicalize_precision(b)[0])
    if isinstance(a, P) != isinstance(b, P):  # JAX takes a pair of Precisions or a pair of strings
        with pytest.raises(ValueError, match="Precision argument must be one of"):
            lax.dot_general(X, W, DN, precision=(a, b))
        return
    (got,) = _precisions(fjax.make_jaxpr(lambda x, w: lax.dot_general(x, w, DN, precision=(a, b)))(X, W))
    assert got == want and all(type(p) is P for p in got)
    assert canonicalize_precision(got) is got
    # and through grad: both cotangent products carry the same pair
    g = fjax.make_jaxpr(fjax.grad(lambda x, w: lax.dot_general(x, w, DN, precision=(a, b)).sum(), (0, 1)))(X, W)
    assert _precisions(g) == [want] * 3  # the primal product (kept, as JAX) and the two cotangent ones


@pytest.mark.parametrize("arg", INVALID, ids=repr)
def test_invalid_precision_raises(arg):
    with pytest.raises(ValueError, match="Precision argument must be one of"):
        lax.dot_general(X, W, DN, precision=arg)
    with pytest.raises(ValueError, match="Precision argument must be one of"):
        fjax.make_jaxpr(lambda a, b: jnp.matmul(a, b, precision=arg))(X, W)
    with pytest.raises(ValueError, match="Precision argument must be one of"):
        lax.conv(XC, WC, (1, 1), "SAME", precision=arg)


# ---------------------------------------------------------------------------------------------
# what the CPU refuses (when it runs the program, as JAX) and what it computes


@pytest.mark.parametrize("name", CPU_REFUSED)
def test_cpu_refuses_at_run_time_like_jax(name):
    f = lambda a, b: lax.dot(a, b, precision=name) + 1.0  # noqa: E731
    # tracing is fine (JAX refuses when lowering for the CPU): a GPU backend reads the param
    assert _precisions(fjax.make_jaxpr(f)(X, W)) == [D[name]]
    assert fjax.eval_shape(f, X, W).shape == (4, 3)
    msg = f"The precision '{name}' is not supported by dot_general on CPU"
    with pytest.raises(ValueError, match=msg):
        f(X, W)
    with pytest.raises(ValueError, match=msg):
        fjax.jit(f)(X, W)
    with _config("fjax_jit_backend", "interpret"), pytest.raises(ValueError, match=msg):
        fjax.jit(lambda a, b: lax.dot(a, b, precision=name) * 2.0)(X, W)
    # nested in a jit, in a scan body, differentiated: the program is refused before it runs
    outer = fjax.jit(lambda a, b: fjax.jit(f)(a, b).sum() + lax.scan(lambda c, _: (f(c, b) @ b.T, None), a, None, 2)[0])
    assert sorted(_precisions(fjax.jit(outer).trace(X, W).jaxpr), key=repr) == [D[name]] * 2 + [None]
    with pytest.raises(ValueError, match=msg):
        outer(X, W)
    with pytest.raises(ValueError, match=msg):
        fjax.jit(fjax.grad(lambda a, b: fjax.jit(f)(a, b).sum()))(X, W)
    # under config as well
    with fjax.default_matmul_precision(name), pytest.raises(ValueError, match=msg):
        fjax.jit(lambda a, b: jnp.tanh(a @ b))(X, W)
    # a convolution takes every preset on the CPU (as JAX 0.10.2)
    np.testing.assert_array_equal(lax.conv(XC, WC, (1, 1), "SAME", precision=name), lax.conv(XC, WC, (1, 1), "SAME"))


def test_dot_algorithm_refused_on_cpu_but_traced():
    alg = lax.DotAlgorithm(jnp.float32, jnp.float32, jnp.float32)
    (got,) = _precisions(fjax.make_jaxpr(lambda a, b: lax.dot(a, b, precision=alg))(X, W))
    assert got == alg
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
        lax.dot(X, W, precision=alg)
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
        fjax.jit(lambda a, b: lax.dot(a, b, precision=alg))(X, W)
    np.testing.assert_array_equal(lax.conv(XC, WC, (1, 1), "SAME", precision=alg), lax.conv(XC, WC, (1, 1), "SAME"))


ACCEPTED = [a for a, _ in CANONICAL if not (isinstance(a, str) and a in CPU_REFUSED)] + CPU_OK


@pytest.mark.parametrize("arg", ACCEPTED, ids=repr)
def test_results_unchanged_on_cpu(arg):
    """The CPU computes float32 exactly whatever is asked (as JAX's CPU): bit for bit the product
    of precision=None, eagerly, under jit (numba lowering and interpreted) and differentiated."""
    ref = np.asarray(lax.dot(X, W))
    np.testing.assert_array_equal(np.asarray(lax.dot(X, W, precision=arg)), ref)
    f = fjax.jit(lambda a, b: jnp.tanh(lax.dot_general(a, b, DN, precision=arg)))
    np.testing.assert_array_equal(np.asarray(f(X, W)), np.asarray(fjax.jit(lambda a, b: jnp.tanh(a @ b))(X, W)))
    with _config("fjax_jit_backend", "interpret"):
        g = fjax.jit(lambda a, b: lax.dot_general(a, b, DN, precision=arg) * 3.0)
        np.testing.assert_array_equal(np.asarray(g(X, W)), ref * F32(3.0))
    loss = lambda p: lambda a, b: (lax.dot(a, b, precision=p) ** 2).sum()  # noqa: E731
    for got, want in zip(fjax.grad(loss(arg), (0, 1))(X, W), fjax.grad(loss(None), (0, 1))(X, W)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    c_ref = np.asarray(lax.conv(XC, WC, (1, 1), "SAME"))
    np.testing.assert_array_equal(np.asarray(lax.conv(XC, WC, (1, 1), "SAME", precision=arg)), c_ref)
    cj = fjax.jit(lambda a, b: lax.conv(a, b, (1, 1), "SAME", precision=arg))
    c_jit = np.asarray(fjax.jit(lambda a, b: lax.conv(a, b, (1, 1), "SAME"))(XC, WC))
    np.testing.assert_array_equal(np.asarray(cj(XC, WC)), c_jit)
    # the compiled convolution sums in its own order (eager is numpy's): equal up to rounding; on
    # some CPUs bit for bit, not on all (AVX-512 machines differ by an ulp)
    np.testing.assert_allclose(c_jit, c_ref, rtol=2e-6, atol=2e-6)


# ---------------------------------------------------------------------------------------------
# config jax_default_matmul_precision


# config value -> param of a dot traced with precision=None (JAX 0.10.2)
CONFIG = [
    ("highest", _hp("HIGHEST")),
    ("float32", _hp("HIGHEST")),
    ("high", _hp("HIGH")),
    ("tensorfloat32", _hp("HIGH")),
    ("default", _hp("DEFAULT")),
    ("bfloat16", _hp("DEFAULT")),
    ("F32_F32_F32", D.F32_F32_F32),
    ("TF32_TF32_F32", D.TF32_TF32_F32),
    ("BF16_BF16_F32", D.BF16_BF16_F32),
]


@pytest.mark.parametrize("value,want", CONFIG, ids=[v for v, _ in CONFIG])
def test_config_default(value, want):
    assert fjax.config.jax_default_matmul_precision is None
    dot = lambda a, b: jnp.dot(a, b)  # noqa: E731
    conv = lambda a, b: lax.conv(a, b, (1, 1), "SAME")  # noqa: E731
    with fjax.default_matmul_precision(value):
        assert fjax.config.jax_default_matmul_precision == value
        assert _precisions(fjax.make_jaxpr(dot)(X, W)) == [want]
        assert _precisions(fjax.make_jaxpr(conv)(XC, WC)) == [want]
        # an explicit precision wins over the config
        assert _precisions(fjax.make_jaxpr(lambda a, b: jnp.dot(a, b, precision="default"))(X, W)) == [_hp("DEFAULT")]
    assert fjax.config.jax_default_matmul_precision is None
    assert _precisions(fjax.make_jaxpr(dot)(X, W)) == [None]
    with _config("jax_default_matmul_precision", value):
        assert _precisions(fjax.make_jaxpr(dot)(X, W)) == [want]
        # transformations of what was traced under the config keep it
        g = fjax.make_jaxpr(fjax.grad(lambda a, b: (a @ b).sum(), (0, 1)))(X, W)
        assert _precisions(g) == [want] * 3
    assert fjax.config.jax_default_matmul_precision is None


@pytest.mark.parametrize(
    "value", ["bfloat16_3x", "fastest", "HIGHEST", "DEFAULT", "bogus", P.HIGH, D.F32_F32_F32, ("high", "high")]
)
def test_config_refuses_what_jax_refuses(value):
    with pytest.raises(ValueError, match="new enum value must be None or in"):
        fjax.config.update("jax_default_matmul_precision", value)
    with pytest.raises(ValueError, match="new enum value must be None or in"):
        with fjax.default_matmul_precision(value):
            pass
    assert fjax.config.jax_default_matmul_precision is None


def test_jit_retraces_under_another_default():
    traces = []

    def f(a, b):
        traces.append(1)
        return jnp.tanh(a @ b)

    jf = fjax.jit(f)
    ref = np.asarray(jf(X, W))
    assert len(traces) == 1
    assert _precisions(fjax.make_jaxpr(jf)(X, W)) == [None]
    with fjax.default_matmul_precision("float32"):
        np.testing.assert_array_equal(np.asarray(jf(X, W)), ref)
        assert len(traces) == 2
        jf(X, W)
        assert len(traces) == 2
        assert _precisions(fjax.make_jaxpr(jf)(X, W)) == [_hp("HIGHEST")]
        # grad / vmap of the jitted function under the config see its precision too
        g = fjax.make_jaxpr(fjax.grad(lambda a, b: jf(a, b).sum(), (0, 1)))(X, W)
        assert set(_precisions(g)) == {_hp("HIGHEST")} and len(_precisions(g)) == 3
        v = fjax.make_jaxpr(fjax.vmap(jf, (0, None)))(jnp.stack([X, X]), W)
        assert _precisions(v) == [_hp("HIGHEST")]
    n = len(traces)
    jf(X, W)  # the first trace is still cached
    assert len(traces) == n
    with _config("jax_default_matmul_precision", "F32_F32_F32"):
        jf(X, W)
        assert len(traces) == n + 1
        assert _precisions(fjax.make_jaxpr(jf)(X, W)) == [D.F32_F32_F32]
    # static arguments and keyword arguments take the slow path of the cache: same behaviour
    js = fjax.jit(lambda a, b, k: jnp.dot(a, b) * k, static_argnums=2)
    assert _precisions(fjax.make_jaxpr(js, static_argnums=2)(X, W, 2.0)) == [None]
    js(X, W, 2.0)
    with fjax.default_matmul_precision("high"):
        np.testing.assert_array_equal(np.asarray(js(X, W, 2.0)), np.asarray(lax.dot(X, W)) * F32(2.0))
        jaxpr = fjax.jit(lambda a, b: js(a, b, 2.0)).trace(X, W).jaxpr
        assert _precisions(jaxpr) == [_hp("HIGH")]


def test_explain_cache_miss_names_the_config(caplog):
    jf = fjax.jit(lambda a, b, k=1.0: a @ b * k)
    jf(X, W, k=2.0)
    with _config("jax_explain_cache_misses", True), fjax.default_matmul_precision("highest"):
        with caplog.at_level("WARNING"):
            jf(X, W, k=2.0)
    assert "different jax_default_matmul_precision: 'highest' vs cached None" in caplog.text


# ---------------------------------------------------------------------------------------------
# transformations


def test_grad_vmap_jvp_keep_precision():
    pair = (P.HIGH, P.HIGHEST)
    dot = lambda a, b: lax.dot_general(a, b, DN, precision=pair)  # noqa: E731
    g = fjax.make_jaxpr(fjax.grad(lambda a, b: dot(a, b).sum(), (0, 1)))(X, W)
    assert _precisions(g) == [pair] * 3  # the primal and cotangent products, as JAX's transpose rules
    v = fjax.make_jaxpr(fjax.vmap(dot, (0, None)))(jnp.stack([X, X]), W)
    assert _precisions(v) == [pair]
    v = fjax.make_jaxpr(fjax.vmap(dot, (None, 1)))(X, jnp.stack([W, W], 1))
    assert _precisions(v) == [pair]
    v = fjax.make_jaxpr(fjax.vmap(dot))(jnp.stack([X, X]), jnp.stack([W, W]))
    assert _precisions(v) == [pair]
    j = fjax.make_jaxpr(lambda a, b: fjax.jvp(dot, (a, b), (a, b)))(X, W)
    assert _precisions(j) == [pair] * 3
    lt = fjax.make_jaxpr(fjax.linear_transpose(lambda a: dot(a, W), X))(jnp.ones((4, 3), F32))
    assert _precisions(lt) == [pair]
    h = fjax.make_jaxpr(fjax.hessian(lambda a: lax.dot(a, a.T, precision="highest").sum()))(X)
    assert set(_precisions(h)) == {_hp("HIGHEST")}
    vg = fjax.make_jaxpr(fjax.vmap(fjax.grad(lambda a, b: dot(a, b).sum()), (0, None)))
    assert _precisions(vg(jnp.stack([X, X]), W)) == [pair] * 2
    # a scan body and remat keep it as well
    s = fjax.make_jaxpr(lambda a: lax.scan(lambda c, x: (dot(c, W) @ W.T, None), a, None, length=2)[0])(X)
    assert pair in _precisions(s)
    r = fjax.make_jaxpr(fjax.grad(fjax.checkpoint(lambda a: dot(a, W).sum())))(X)
    assert set(_precisions(r)) == {pair}


def test_conv_transforms_keep_precision():
    pre = D.F32_F32_F32
    conv = lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME", precision=pre)  # noqa: E731
    g = fjax.make_jaxpr(fjax.grad(lambda a, b: conv(a, b).sum(), (0, 1)))(XC, WC)
    assert _precisions(g) == [pre] * 3
    v = fjax.make_jaxpr(fjax.vmap(conv))(jnp.stack([XC, XC]), jnp.stack([WC, WC]))
    assert _precisions(v) == [pre]
    v = fjax.make_jaxpr(fjax.vmap(conv, (0, None)))(jnp.stack([XC, XC]), WC)
    assert _precisions(v) == [pre]
    j = fjax.make_jaxpr(lambda a, b: fjax.jvp(conv, (a, b), (a, b)))(XC, WC)
    assert _precisions(j) == [pre] * 3
    t = fjax.make_jaxpr(lambda a, b: lax.conv_transpose(a, b, (2, 2), "SAME", precision="highest"))(
        jnp.ones((1, 5, 5, 2), F32), jnp.ones((3, 3, 2, 4), F32)
    )
    assert _precisions(t) == [_hp("HIGHEST")]
    grouped = lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "VALID", feature_group_count=3, precision="high")  # noqa: E731
    g = fjax.make_jaxpr(fjax.grad(lambda a, b: grouped(a, b).sum(), (0, 1)))(XC, jnp.ones((6, 1, 3, 3), F32))
    assert _precisions(g) == [_hp("HIGH")] * 3


def test_numpy_contractions_pass_precision():
    x3 = jnp.stack([X, X])
    w3 = jnp.stack([W, W])
    want = [_hp("HIGHEST")]
    cases = [
        lambda: jnp.dot(X, W, precision="highest"),
        lambda: jnp.matmul(x3, w3, precision="highest"),
        lambda: jnp.einsum("ij,jk->ik", X, W, precision="highest"),
        lambda: jnp.einsum("bij,bjk,kl->bil", x3, w3, W.T, precision="highest"),
        lambda: jnp.tensordot(X, W, 1, precision="highest"),
        lambda: jnp.inner(X, X, precision="highest"),
        lambda: jnp.vdot(X, X, precision="highest"),
        lambda: jnp.vecdot(X, X, precision="highest"),
        lambda: jnp.linalg.multi_dot([X, W, W.T], precision="highest"),
        lambda: lax.batch_matmul(x3, w3, precision="highest"),
        lambda: X.dot(W, precision="highest"),
    ]
    for f in cases:
        got = _precisions(fjax.make_jaxpr(f)())
        assert got and set(got) == set(want), (f, got)
    assert _precisions(fjax.make_jaxpr(lambda a, b: a @ b)(X, W)) == [None]
    with fjax.default_matmul_precision("highest"):
        assert _precisions(fjax.make_jaxpr(lambda a, b: a @ b)(X, W)) == want


# ---------------------------------------------------------------------------------------------
# fjax.export


EXPORTED = [
    "highest",
    ("high", "default"),
    "F32_F32_F32",
    D.BF16_BF16_F32,
    lax.DotAlgorithm(jnp.float32, jnp.float32, np.float32),
    lax.DotAlgorithm("F32", "F32", "F32", 2, 1, 3, True),
    None,
]


@pytest.mark.parametrize("arg", EXPORTED, ids=repr)
def test_export_round_trip(arg):
    def f(a, b, c, k):
        return jnp.tanh(lax.dot(a, b, precision=arg)), lax.conv(c, k, (1, 1), "SAME", precision=arg)

    exp = export.export(fjax.jit(f))(X, W, XC, WC)
    back = export.deserialize(exp.serialize())
    want = _precisions(exp.jaxpr)
    got = _precisions(back.jaxpr)
    assert len(got) == 2 and got == want and [hash(p) for p in got] == [hash(p) for p in want]
    assert [type(p) for p in got] == [type(p) for p in want]
    if isinstance(arg, lax.DotAlgorithm):
        assert [type(t) for t in got[0]] == [type(t) for t in arg]
        with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
            back.call(X, W, XC, WC)
        return
    for a, b in zip(back.call(X, W, XC, WC), fjax.jit(f)(X, W, XC, WC)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # and under grad (the cotangent products carry the deserialized param)
    loss = lambda a, b: back.call(a, b, XC, WC)[0].sum()  # noqa: E731
    g = fjax.make_jaxpr(fjax.grad(loss, (0, 1)))(X, W)
    assert set(_precisions(g, ("dot_general",))) == {want[0]}


def test_export_of_a_preset_the_cpu_refuses():
    exp = export.export(fjax.jit(lambda a, b: jnp.tanh(lax.dot(a, b, precision="TF32_TF32_F32"))))(X, W)
    back = export.deserialize(exp.serialize())
    assert _precisions(back.jaxpr) == [D.TF32_TF32_F32]
    with pytest.raises(ValueError, match="'TF32_TF32_F32' is not supported by dot_general on CPU"):
        back.call(X, W)
    with pytest.raises(ValueError, match="'TF32_TF32_F32' is not supported by dot_general on CPU"):
        fjax.jit(back.call)(X, W)


def test_export_under_config_default():
    with fjax.default_matmul_precision("tensorfloat32"):
        exp = export.export(fjax.jit(lambda a, b: a @ b))(X, W)
    back = export.deserialize(exp.serialize())
    assert _precisions(back.jaxpr) == [_hp("HIGH")]
    np.testing.assert_array_equal(np.asarray(back.call(X, W)), np.asarray(X @ W))


# ---------------------------------------------------------------------------------------------
# params stay hashable and comparable (jaxpr caches, CSE, the backends' caches)


def test_params_hashable_and_jit_caches_by_value():
    for arg in ["highest", ("high", "default"), "F32_F32_F32", lax.DotAlgorithm("F32", "F32", "F32")]:
        (e,) = _eqns(fjax.make_jaxpr(lambda a, b: lax.dot(a, b, precision=arg))(X, W))
        hash(tuple(sorted(e.params.items(), key=lambda kv: kv[0])))
    # two traces with equal precisions share one compiled program: equal params compare equal
    p1 = _precisions(fjax.make_jaxpr(lambda a, b: lax.dot(a, b, precision="float32"))(X, W))
    p2 = _precisions(fjax.make_jaxpr(lambda a, b: lax.dot(a, b, precision=P.HIGHEST))(X, W))
    assert p1 == p2 and hash(p1[0]) == hash(p2[0])
