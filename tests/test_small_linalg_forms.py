"""``lu``, ``triangular_solve`` and ``lu_pivots_to_permutation`` of small matrices inside loop
bodies compile (``fjax/lax/_small_linalg_forms.py``), with LAPACK's pivots and BLAS's solves.

The forms themselves are checked eagerly (no compile: many shapes, every parameter combination)
against scipy's LAPACK ``getrf`` and ``solve_triangular``; a few compiled loops then check that the
loop has no host step left and gives the same values, gradients included. Also here: a loop body
holding a nested ``jit`` that closes over an array constant compiles (``mlir.expand`` makes the
constant an operand; lineax's ``linear_solve`` is such a ``jit``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
import fjax.scipy.linalg as jsl
from fjax import lax
from fjax.interpreters import mlir
from fjax.lax import _small_linalg_forms as slf
from fjax.lax import linalg as lax_linalg

_TOL = {np.float32: 2e-5, np.float64: 1e-12}


def _getrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """scipy's LAPACK ``getrf`` on each matrix of ``a``: packed factors and 0-based pivots."""
    flat = a.reshape((-1,) + a.shape[-2:])
    (getrf,) = sla.get_lapack_funcs(("getrf",), (flat[0],))
    k = min(a.shape[-2:])
    outs = [getrf(x)[:2] for x in flat]
    lu = np.stack([o[0] for o in outs]).reshape(a.shape)
    piv = np.stack([o[1][:k] for o in outs]).reshape(a.shape[:-2] + (k,))
    return lu, piv


def _perm(piv: np.ndarray, m: int) -> np.ndarray:
    flat = piv.reshape(-1, piv.shape[-1])
    out = np.tile(np.arange(m), (flat.shape[0], 1))
    for r, p in enumerate(flat):
        for i, j in enumerate(p):
            out[r, [i, j]] = out[r, [j, i]]
    return out.reshape(piv.shape[:-1] + (m,))


def _check_lu(a: np.ndarray, lu, piv, perm) -> None:
    want_lu, want_piv = _getrf(a)
    m = a.shape[-2]
    np.testing.assert_array_equal(np.asarray(piv), want_piv)
    np.testing.assert_array_equal(np.asarray(perm), _perm(want_piv, m))
    assert np.asarray(piv).dtype == np.int32 and np.asarray(perm).dtype == np.int32
    scale = max(1.0, float(np.abs(want_lu).max(initial=0)))
    np.testing.assert_allclose(np.asarray(lu), want_lu, rtol=0, atol=_TOL[a.dtype.type] * 10 * scale)


# ---- the forms, evaluated eagerly ------------------------------------------------------------


@settings(deadline=None)
@given(
    st.integers(1, 11),
    st.integers(1, 11),
    st.sampled_from([(), (3,)]),
    st.sampled_from([np.float32, np.float64]),
    st.integers(0, 2**31 - 1),
)
def test_lu_form_matches_getrf(m, n, batch, dtype, seed):
    # random normal entries: no ties between pivot candidates, so LAPACK's pivots are the only right ones
    a = np.random.default_rng(seed).standard_normal(batch + (m, n)).astype(dtype)
    with fjax.enable_x64():
        _check_lu(a, *slf._lu_form(jnp.asarray(a)))


@pytest.mark.parametrize("n", [12, 20])  # past UNROLL: the steps run as a fori_loop
def test_lu_form_looped_steps(n):
    a = np.random.default_rng(n).standard_normal((n, n + 1))
    b = np.random.default_rng(n).standard_normal((2, n, n))
    with fjax.enable_x64():
        _check_lu(a, *slf._lu_form(jnp.asarray(a)))
        _check_lu(b, *slf._lu_form(jnp.asarray(b)))


@pytest.mark.parametrize(
    "a",
    [
        [[1.0, 2.0], [1.0, 3.0]],  # tie: the first row of largest magnitude
        [[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 5.0, 7.0]],  # zero column: no scaling, no swap
        [[2.0, 4.0, 1.0], [1.0, 2.0, 5.0], [3.0, 6.0, 0.0]],  # a zero pivot after the first step
        [[-3.0, 1.0], [3.0, 2.0]],  # equal magnitudes of opposite sign
        [[0.0, 0.0], [0.0, 0.0]],
    ],
)
def test_lu_form_ties_and_singular_matrices(a):
    a = np.array(a)
    with fjax.enable_x64():
        _check_lu(a, *slf._lu_form(jnp.asarray(a)))


_TRS_PARAMS = list(itertools.product([True, False], repeat=5))


@settings(deadline=None)
@given(
    st.sampled_from(_TRS_PARAMS),
    st.integers(1, 11),
    st.integers(1, 4),
    st.sampled_from([(), (2,)]),
    st.sampled_from([np.float32, np.float64]),
    st.integers(0, 2**31 - 1),
)
def test_triangular_solve_form_matches_blas(params, m, r, batch, dtype, seed):
    left, lower, trans, conj, unit = params
    rng = np.random.default_rng(seed)
    # well conditioned: a strong diagonal; the other triangle holds garbage the solve must not read
    a = rng.standard_normal(batch + (m, m)) + 4 * np.eye(m) * np.sign(rng.standard_normal(m))
    b = rng.standard_normal(batch + ((m, r) if left else (r, m)))
    a, b = a.astype(dtype), b.astype(dtype)
    kw = dict(left_side=left, lower=lower, transpose_a=trans, conjugate_a=conj, unit_diagonal=unit)
    with fjax.enable_x64():
        got = np.asarray(slf._trsolve_form(jnp.asarray(a), jnp.asarray(b), **kw))
        # the host implementation (BLAS trsm) the rewrite replaces
        host = np.asarray(lax_linalg.triangular_solve_p.bind(jnp.asarray(a), jnp.asarray(b), **kw))
    fa, fb = a.reshape((-1, m, m)), b.reshape((-1,) + b.shape[-2:])
    want = []
    for x, y in zip(fa, fb):
        if left:
            want.append(sla.solve_triangular(x, y, trans=int(trans), lower=lower, unit_diagonal=unit))
        else:  # x op(a) = y  <=>  op(a)^T x^T = y^T
            want.append(sla.solve_triangular(x, y.T, trans=1 - int(trans), lower=lower, unit_diagonal=unit).T)
    want = np.stack(want).reshape(b.shape)
    np.testing.assert_allclose(got, want, rtol=_TOL[dtype] * 10, atol=_TOL[dtype] * 10)
    np.testing.assert_allclose(got, host, rtol=_TOL[dtype] * 10, atol=_TOL[dtype] * 10)


def test_triangular_solve_form_long_substitution():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((30, 30)) + 8 * np.eye(30)
    b = rng.standard_normal((30, 3))
    for lower in (True, False):
        with fjax.enable_x64():
            got = slf._trsolve_form(
                jnp.asarray(a), jnp.asarray(b), left_side=True, lower=lower, transpose_a=False, conjugate_a=False,
                unit_diagonal=False,
            )  # fmt: skip
        np.testing.assert_allclose(np.asarray(got), sla.solve_triangular(a, b, lower=lower), rtol=1e-12)


def test_triangular_solve_form_zero_diagonal_gives_inf_as_blas():
    a = np.array([[0.0, 0.0], [1.0, 2.0]])
    b = np.array([[1.0], [1.0]])
    kw = dict(left_side=True, lower=True, transpose_a=False, conjugate_a=False, unit_diagonal=False)
    with fjax.enable_x64():
        got = np.asarray(slf._trsolve_form(jnp.asarray(a), jnp.asarray(b), **kw))
        host = np.asarray(lax_linalg.triangular_solve_p.bind(jnp.asarray(a), jnp.asarray(b), **kw))
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(host))


@settings(deadline=None)
@given(st.integers(1, 14), st.integers(0, 3), st.sampled_from([(), (3,)]), st.integers(0, 2**31 - 1))
def test_pivots_to_permutation_form(k, extra, batch, seed):
    size = k + extra
    piv = np.random.default_rng(seed).integers(0, size, batch + (k,)).astype(np.int32)
    got = np.asarray(slf._l2p_form(jnp.asarray(piv), permutation_size=size))
    np.testing.assert_array_equal(got, _perm(piv, size))
    assert got.dtype == np.int32


def _eqn(prim, *avals, **params):
    from fjax import core  # noqa: PLC0415

    return core.JaxprEqn(prim, [core.Var(a) for a in avals], [], params)


def test_rewrite_rules_keep_lapack_for_large_complex_and_empty():
    from fjax.core import ShapedArray  # noqa: PLC0415

    f32, c64 = np.dtype(np.float32), np.dtype(np.complex64)
    assert slf._lu_rewrite(_eqn(lax_linalg.lu_p, ShapedArray((4, 4), f32))) is not None
    assert slf._lu_rewrite(_eqn(lax_linalg.lu_p, ShapedArray((65, 65), f32))) is None
    assert slf._lu_rewrite(_eqn(lax_linalg.lu_p, ShapedArray((4, 4), c64))) is None
    assert slf._lu_rewrite(_eqn(lax_linalg.lu_p, ShapedArray((0, 4), f32))) is None
    trs = dict(left_side=True, lower=True, transpose_a=False, conjugate_a=False, unit_diagonal=False)
    a, b = ShapedArray((8, 8), f32), ShapedArray((8, 2), f32)
    assert slf._trsolve_rewrite(_eqn(lax_linalg.triangular_solve_p, a, b, **trs)) is not None
    big = ShapedArray((100, 100), f32)
    assert slf._trsolve_rewrite(_eqn(lax_linalg.triangular_solve_p, big, ShapedArray((100, 2), f32), **trs)) is None
    ca = ShapedArray((8, 8), c64)
    assert slf._trsolve_rewrite(_eqn(lax_linalg.triangular_solve_p, ca, ShapedArray((8, 2), c64), **trs)) is None


# ---- compiled loops ----------------------------------------------------------------------------


def _solve_loop(a, b):
    """Ten steps of ``x <- solve(a + i I, x) + x / 10`` by ``lu_factor``/``lu_solve``."""
    n = a.shape[-1]

    def body(i, x):
        lu, piv = jsl.lu_factor(a + i.astype(a.dtype) * jnp.eye(n, dtype=a.dtype))
        return jsl.lu_solve((lu, piv), x) + 0.1 * x

    return lax.fori_loop(0, 10, body, b)


def _solve_loop_ref(a, b):
    x = b.astype(np.float64)
    for i in range(10):
        x = sla.lu_solve(sla.lu_factor(a.astype(np.float64) + i * np.eye(a.shape[-1])), x) + 0.1 * x
    return x


_solve_jit = fjax.jit(_solve_loop)


@pytest.mark.parametrize("n", [4, 12])  # unrolled steps, then fori_loop steps nested in the loop
def test_lu_solve_loop_compiles_without_host_steps(n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    text = _solve_jit.lower(a, b).as_text("ir")
    assert "host" not in text and "compiled" in text, text[:2000]
    got = np.asarray(_solve_jit(a, b))
    want = _solve_loop_ref(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_loop_of_batched_lu_and_solve_compiles():
    # vmap inside the body: lu of a stack (per-matrix pivots), triangular solves of a stack
    def f(a, b):
        def body(i, x):
            m = a + i.astype(a.dtype)
            lu, piv, perm = fjax.vmap(lax_linalg.lu)(m)
            y = jnp.take_along_axis(x, perm, axis=-1)[..., None]
            y = lax_linalg.triangular_solve(lu, y, left_side=True, lower=True, unit_diagonal=True)
            return lax_linalg.triangular_solve(lu, y, left_side=True, lower=False)[..., 0] + piv.astype(a.dtype)

        return lax.fori_loop(0, 3, body, b)

    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5, 5))
    b = rng.standard_normal((3, 5))
    g = fjax.jit(f)
    with fjax.enable_x64():
        assert "host" not in g.lower(a, b).as_text("ir")
        got = np.asarray(g(a, b))
    x = b.copy()
    for i in range(3):
        x = np.stack([sla.lu_solve(sla.lu_factor(a[j] + i), x[j]) + _getrf(a[j] + i)[1] for j in range(3)])
    np.testing.assert_allclose(got, x, rtol=1e-10)


def test_gradient_through_compiled_lu_solve_loop():
    a = np.random.default_rng(3).standard_normal((3, 3)).astype(np.float32) + 2 * np.eye(3, dtype=np.float32)
    b = np.array([1.0, -2.0, 0.5], np.float32)

    def loss(a, b):
        return jnp.sum(_solve_loop(a, b) ** 2)

    g = fjax.jit(fjax.grad(loss, argnums=(0, 1)))
    text = g.lower(a, b).as_text("ir")  # the forward loop and its transpose (transposed solves)
    assert "host" not in text and text.count("compiled") >= 2
    got = g(a, b)
    want = fjax.grad(loss, argnums=(0, 1))(a, b)  # op by op: LAPACK and BLAS
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-3, atol=2e-3 * np.abs(w).max())
    # and against central differences in float64
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = lambda a_, b_: float(np.sum(_solve_loop_ref(a_, b_) ** 2))  # noqa: E731
    eps = 1e-6
    for idx in [(0, 0), (1, 2), (2, 1)]:
        d = np.zeros_like(a64)
        d[idx] = eps
        fd = (ref(a64 + d, b64) - ref(a64 - d, b64)) / (2 * eps)
        np.testing.assert_allclose(float(got[0][idx]), fd, rtol=2e-3, atol=2e-3)


# ---- constants of nested jits inside loop bodies -------------------------------------------------


def test_loop_body_with_a_nested_jit_closing_over_an_array_compiles():
    table = np.array([[1.0, 2.0], [3.0, 5.0]], np.float32)

    @fjax.jit
    def inner(x):
        return x @ table + 1.0  # ``table`` is a constant of the inner jit's jaxpr

    def f(x):
        return lax.fori_loop(0, 3, lambda i, x: inner(x) * 0.5, x)

    x = np.array([0.5, -1.0], np.float32)
    g = fjax.jit(f)
    assert "host" not in g.lower(x).as_text("ir")
    want = x
    for _ in range(3):
        want = (want @ table + 1.0) * 0.5
    np.testing.assert_allclose(np.asarray(g(x)), want, rtol=1e-6)


def test_expand_makes_constants_of_rewritten_equations_operands():
    from fjax import core  # noqa: PLC0415

    prim = core.Primitive("fjax_test_table_lookup")
    table = np.array([2.0, 3.0, 5.0], np.float32)
    prim.def_impl(lambda x: x * table)
    prim.def_abstract_eval(lambda x: core.ShapedArray(x.shape, x.dtype))
    # the rule's jaxpr closes over ``table`` (a constant, not a literal)
    mlir.register_lowering(prim, mlir.lower_fun(lambda x: x * jnp.asarray(table), multiple_results=False))

    def f(x):
        return lax.fori_loop(0, 2, lambda i, x: prim.bind(x) + 1.0, x)

    x = np.ones(3, np.float32)
    closed = fjax.make_jaxpr(f)(x)
    ex = mlir.expand(closed)
    loop = next(e for e in ex.jaxpr.eqns if e.primitive.name in ("scan", "while"))
    body = loop.params["jaxpr"] if "jaxpr" in loop.params else loop.params["body_jaxpr"]
    assert body.consts, "the body's closed jaxpr holds the hoisted constant"
    jits = [e for e in body.jaxpr.eqns if e.primitive.name == "jit"]
    assert jits and all(not e.params["jaxpr"].consts for e in jits)
    g = fjax.jit(f)
    assert "host" not in g.lower(x).as_text("ir")
    np.testing.assert_allclose(np.asarray(g(x)), (x * table + 1.0) * table + 1.0)
