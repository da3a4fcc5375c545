"""``fjax.scipy.sparse.linalg`` (cg, bicgstab, gmres): iterates against scipy's, solutions against
``numpy.linalg.solve``, values recorded from JAX 0.10.2, implicit gradients against finite
differences, pytrees, preconditioners, complex systems, jit/vmap/jvp, and JAX's errors.

Most tests run under ``fjax.disable_jit()`` (the solvers' while loops evaluated eagerly: the same
program, without a compile per test); ``test_jit_compiled`` runs them compiled.
"""

import numpy as np
import pytest
import scipy.sparse.linalg as ssl
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
import fjax.scipy
import fjax.scipy.sparse.linalg as spl

pytestmark = pytest.mark.usefixtures("x64")

SOLVERS = {
    "cg": spl.cg,
    "bicgstab": spl.bicgstab,
    "gmres_b": lambda *a, **k: spl.gmres(*a, solve_method="batched", **k),
    "gmres_i": lambda *a, **k: spl.gmres(*a, solve_method="incremental", **k),
    "gmres_r2": lambda *a, **k: spl.gmres(*a, restart=2, solve_method="incremental", **k),
    "gmres_r2b": lambda *a, **k: spl.gmres(*a, restart=2, **k),
}


def _problem(n: int = 6, seed: int = 0):
    rng = np.random.RandomState(seed)
    q = rng.randn(n, n)
    spd = q @ q.T + n * np.eye(n)
    general = rng.randn(n, n) + 3 * np.eye(n)
    return spd, general, rng.randn(n)


# Recorded from JAX 0.10.2 (/tmp/jaxenv, jax_enable_x64) on _problem(): each solver (cg on the SPD
# matrix, the others on the general one) with tol=1e-3 ("tol"), with maxiter=2 ("mx2"), and the
# gradient of sum(solve(A, b, tol=1e-10)[0]) w.r.t. A (first row, first three) and b (first three).
# fmt: off
JAX_REF = {
    ('cg', 'tol'):
        [0.06326434527247261, -0.12983875135134515, 0.02770963400027946, -0.048626048726617285,
         -0.031171075724492323, -0.020871931085023138],
    ('cg', 'mx2'):
        [0.059187943370226814, -0.11785496960957313, 0.026861128065732674, -0.05039842771214105,
         -0.04747434009850344, -0.01897479546095088],
    ('cg', 'grad'):
        ([-0.003493990941670358, 0.007167446154921168, -0.0015269947589118705],
         [0.05519718752042034, 0.10373866474102007, 0.0869493139219674]),
    ('bicgstab', 'tol'):
        [0.4148348383597101, -0.12388280440528827, 0.6564865811689966, -0.1916140467066409,
         -0.10290436200454536, 0.26674748055719294],
    ('bicgstab', 'mx2'):
        [0.3301250574612684, -0.2700093299445899, 0.40774482167243276, -0.24408855920051298,
         -0.3101308582985265, 0.19511750252213145],
    ('bicgstab', 'grad'):
        ([-0.7019379627516147, 0.2083255304893134, -1.1113011974404177],
         [1.6899631528974026, -0.3131919502694437, 1.8227243959593495]),
    ('gmres_b', 'tol'):
        [0.4153569629894924, -0.12327223237509363, 0.6575890104675429, -0.19130391884031733,
         -0.10195742440835576, 0.26724842627436646],
    ('gmres_i', 'tol'):
        [0.41535696298949315, -0.12327223237509333, 0.657589010467545, -0.1913039188403175,
         -0.10195742440835527, 0.26724842627436785],
    ('gmres_i', 'mx2'):
        [0.41535696298949315, -0.12327223237509333, 0.657589010467545, -0.1913039188403175,
         -0.10195742440835527, 0.26724842627436785],
    ('gmres_r2', 'tol'):
        [0.4149070688453274, -0.12366603440910048, 0.6562290452833132, -0.19146021055441503,
         -0.1028370823705984, 0.2668604514583958],
    ('gmres_r2', 'mx2'):
        [0.28389532806685147, -0.2476788084160724, 0.30408680841292557, -0.23218218845623864,
         -0.30252339937994843, 0.11105996421406465],
    ('gmres_r2', 'grad'):
        ([-0.7019379627940765, 0.2083255304695175, -1.1113011974255524],
         [1.6899631528964556, -0.31319195029690855, 1.8227243959562125]),
    ('gmres_r2b', 'tol'):
        [0.41490706884532746, -0.12366603440910055, 0.6562290452833132, -0.19146021055441498,
         -0.10283708237059834, 0.2668604514583959],
    ('gmres_r2b', 'mx2'):
        [0.28389532806685147, -0.24767880841607234, 0.3040868084129256, -0.23218218845623861,
         -0.3025233993799484, 0.11105996421406465],
}
# fmt: on


@pytest.mark.parametrize("key", sorted(JAX_REF), ids="-".join)
def test_matches_jax(key):
    name, kind = key
    spd, general, b = _problem()
    a = jnp.asarray(spd if name == "cg" else general)
    solve = SOLVERS[name]
    with fjax.disable_jit():
        if kind == "tol":
            got = solve(a, jnp.asarray(b), tol=1e-3)[0]
        elif kind == "mx2":
            got = solve(a, jnp.asarray(b), maxiter=2)[0]
        else:
            ga, gb = fjax.grad(lambda m, v: solve(m, v, tol=1e-10)[0].sum(), argnums=(0, 1))(a, jnp.asarray(b))
            np.testing.assert_allclose(ga[0, :3], JAX_REF[key][0], rtol=1e-9)
            np.testing.assert_allclose(gb[:3], JAX_REF[key][1], rtol=1e-9)
            return
    np.testing.assert_allclose(got, JAX_REF[key], rtol=1e-12, atol=1e-14)


def _matrices(draw, n, spd):
    m = np.array(draw(st.lists(st.floats(-1, 1), min_size=n * n, max_size=n * n))).reshape(n, n)
    return m @ m.T + np.eye(n) if spd else m + n * np.eye(n)


@given(st.sampled_from(["cg", "bicgstab", "gmres"]), st.integers(2, 5), st.integers(1, 4), st.data())
def test_iterates_match_scipy(name, n, k, data):
    # scipy's solvers take the same steps: stopping after k iterations (k restart cycles of 2
    # for gmres) gives the same iterate
    a = _matrices(data.draw, n, spd=name == "cg")
    b = np.array(data.draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n)))
    b[0] += 1.0
    with fjax.disable_jit():
        if name == "gmres":
            got = spl.gmres(jnp.asarray(a), jnp.asarray(b), maxiter=k, restart=2, tol=1e-14)[0]
        else:
            got = getattr(spl, name)(jnp.asarray(a), jnp.asarray(b), maxiter=k, tol=1e-14)[0]
    if name == "gmres":
        want = ssl.gmres(a, b, maxiter=k, restart=2, rtol=1e-14, atol=0.0)[0]
    else:
        want = getattr(ssl, name)(a, b, maxiter=k, rtol=1e-14, atol=0.0)[0]
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


@given(st.sampled_from(sorted(SOLVERS)), st.integers(1, 6), st.data())
def test_solution_vs_numpy(name, n, data):
    a = _matrices(data.draw, n, spd=name == "cg")
    b = np.array(data.draw(st.lists(st.floats(-2, 2), min_size=n, max_size=n)))
    b[-1] += 0.5
    with fjax.disable_jit():
        x, info = SOLVERS[name](jnp.asarray(a), jnp.asarray(b), tol=1e-12)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-8, atol=1e-9)
    if name.startswith("gmres"):
        assert int(info) == 0
    else:
        assert info is None


@settings(max_examples=6)
@given(st.sampled_from(["cg", "bicgstab", "gmres_b", "gmres_i"]), st.data())
def test_gradients_vs_finite_differences(name, data):
    n = 3
    a = _matrices(data.draw, n, spd=name == "cg")
    b = np.array(data.draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n))) + 0.5
    w = np.array(data.draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n)))
    da = np.array(data.draw(st.lists(st.floats(-1, 1), min_size=n * n, max_size=n * n))).reshape(n, n)
    if name == "cg":
        da = da + da.T  # stay symmetric
    db = np.array(data.draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n)))

    def loss(m, v):
        x = SOLVERS[name](m, v, tol=1e-13)[0]
        return jnp.dot(x, w) + jnp.sum(x**2)

    eps = 1e-5
    with fjax.disable_jit():
        ga, gb = fjax.grad(loss, argnums=(0, 1))(jnp.asarray(a), jnp.asarray(b))
        fd = float(loss(jnp.asarray(a + eps * da), jnp.asarray(b + eps * db)))
        fd = (fd - float(loss(jnp.asarray(a - eps * da), jnp.asarray(b - eps * db)))) / (2 * eps)
    np.testing.assert_allclose(np.sum(ga * da) + np.dot(gb, db), fd, rtol=1e-6, atol=1e-8)


def test_pytree_operator_x0_and_preconditioner():
    scale = {"u": jnp.array([2.0, 4.0]), "v": jnp.array([[1.0, 3.0, 5.0]])}

    def op(t):
        return {"u": scale["u"] * t["u"], "v": scale["v"] * t["v"]}

    b = {"u": jnp.array([1.0, -2.0]), "v": jnp.array([[3.0, 0.5, 1.0]])}
    x0 = fjax.tree.map(jnp.ones_like, b)
    want = fjax.tree.map(lambda bb, s: np.asarray(bb) / np.asarray(s), b, scale)
    with fjax.disable_jit():
        for name in ("cg", "bicgstab", "gmres_b", "gmres_i"):
            for kw in ({}, {"x0": x0}, {"M": lambda t: fjax.tree.map(lambda tt, s: tt / s, t, scale)}):
                x = SOLVERS[name](op, b, tol=1e-12, **kw)[0]
                assert fjax.tree.structure(x) == fjax.tree.structure(b)
                for k in b:
                    np.testing.assert_allclose(x[k], want[k], rtol=1e-10, err_msg=f"{name} {kw}")


@pytest.mark.parametrize("name", ["cg", "bicgstab", "gmres_b", "gmres_i"])
def test_preconditioner_matrix_matches_scipy(name):
    spd, general, b = _problem(5, seed=3)
    a = spd if name == "cg" else general
    m = np.diag(1.0 / np.diag(a))
    with fjax.disable_jit():
        got = SOLVERS[name](jnp.asarray(a), jnp.asarray(b), M=jnp.asarray(m), maxiter=2)[0]
    if name == "cg":
        want = ssl.cg(a, b, M=m, maxiter=2, rtol=1e-5, atol=0.0)[0]
    elif name == "bicgstab":
        want = ssl.bicgstab(a, b, M=m, maxiter=2, rtol=1e-5, atol=0.0)[0]
    else:  # scipy's gmres preconditions on the right, JAX's on the left: compare the solution
        got = SOLVERS[name](jnp.asarray(a), jnp.asarray(b), M=jnp.asarray(m), tol=1e-12)[0]
        want = np.linalg.solve(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["cg", "bicgstab", "gmres_b", "gmres_i"])
def test_complex(name):
    rng = np.random.RandomState(2)
    c = rng.randn(4, 4) + 1j * rng.randn(4, 4)
    a = c @ c.conj().T + 4 * np.eye(4)  # Hermitian positive definite
    if name != "cg":
        a = a + 1j * np.eye(4)
    b = rng.randn(4) + 1j * rng.randn(4)
    with fjax.disable_jit():
        x = SOLVERS[name](jnp.asarray(a), jnp.asarray(b), tol=1e-12)[0]
        # gradient of the real |x|^2 w.r.t. complex b, in JAX's convention (dL = Re(g . db)):
        # dL = 2 Re(x^H A^-1 db), so g = A^-T (2 conj(x))
        g = fjax.grad(lambda v: jnp.sum(jnp.abs(SOLVERS[name](jnp.asarray(a), v, tol=1e-12)[0]) ** 2))(jnp.asarray(b))
    assert x.dtype == jnp.complex128
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-9)
    xs = np.linalg.solve(a, b)
    np.testing.assert_allclose(g, np.linalg.solve(a.T, 2 * xs.conj()), rtol=1e-8)


def test_float32():
    spd, general, b = _problem(5, seed=4)
    with fjax.enable_x64(False), fjax.disable_jit():
        for name in ("cg", "bicgstab", "gmres_b", "gmres_i"):
            a = jnp.asarray(spd if name == "cg" else general, jnp.float32)
            x = SOLVERS[name](a, jnp.asarray(b, jnp.float32))[0]
            assert x.dtype == jnp.float32
            np.testing.assert_allclose(x, np.linalg.solve(np.asarray(a, np.float64), b), rtol=2e-4, atol=1e-5)


def test_vmap_and_jvp():
    spd, general, b = _problem(4, seed=5)
    bs = jnp.asarray(np.stack([b, 2 * b + 1, -b]))
    with fjax.disable_jit():
        for name in ("cg", "bicgstab", "gmres_b", "gmres_i"):
            a = spd if name == "cg" else general
            xs = fjax.vmap(lambda v: SOLVERS[name](jnp.asarray(a), v, tol=1e-12)[0])(bs)
            np.testing.assert_allclose(xs, np.linalg.solve(a, np.asarray(bs).T).T, rtol=1e-9)
            mats = jnp.asarray(np.stack([a, 2 * a]))
            xs = fjax.vmap(lambda m: SOLVERS[name](m, jnp.asarray(b), tol=1e-12)[0])(mats)
            np.testing.assert_allclose(xs, [np.linalg.solve(a, b), np.linalg.solve(2 * a, b)], rtol=1e-9)
            _, tangent = fjax.jvp(lambda v: SOLVERS[name](jnp.asarray(a), v, tol=1e-12)[0], (bs[0],), (bs[1],))
            np.testing.assert_allclose(tangent, np.linalg.solve(a, np.asarray(bs[1])), rtol=1e-9)


def test_jit_compiled():
    spd, general, b = _problem(5, seed=6)

    @fjax.jit
    def solve_all(s, g, v):
        return (
            spl.cg(s, v, tol=1e-12)[0],
            spl.bicgstab(g, v, tol=1e-12)[0],
            spl.gmres(g, v, tol=1e-12)[0],
            spl.gmres(g, v, tol=1e-12, restart=3, solve_method="incremental")[0],
        )

    out = solve_all(jnp.asarray(spd), jnp.asarray(general), jnp.asarray(b))
    for x, a in zip(out, (spd, general, general, general)):
        np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-9)
    g = fjax.jit(fjax.grad(lambda v: spl.gmres(jnp.asarray(general), v, tol=1e-12)[0].sum()))(jnp.asarray(b))
    np.testing.assert_allclose(g, np.linalg.solve(general.T, np.ones(5)), rtol=1e-9)


def test_zero_rhs_and_zero_maxiter():
    spd, general, b = _problem(4, seed=7)
    x0 = jnp.asarray(b[::-1].copy())
    with fjax.disable_jit():
        for name in ("cg", "bicgstab", "gmres_b", "gmres_i"):
            a = jnp.asarray(spd if name == "cg" else general)
            x = SOLVERS[name](a, jnp.zeros(4))[0]
            np.testing.assert_array_equal(x, np.zeros(4))
            np.testing.assert_array_equal(SOLVERS[name](a, jnp.asarray(b), x0=x0, maxiter=0)[0], x0)


class _Scaled:
    """An operator known only by ``@`` (no shape), as a user's sparse-matrix class might be."""

    def __init__(self, d):
        self.d = d

    def __matmul__(self, x):
        return self.d * x


def test_matmul_operator():
    d = jnp.array([1.0, 2.0, 4.0])
    b = jnp.array([1.0, 1.0, 2.0])
    with fjax.disable_jit():
        for solve in (spl.cg, spl.bicgstab, spl.gmres):
            x = solve(_Scaled(d), b, tol=1e-12)[0]
            np.testing.assert_allclose(x, [1.0, 0.5, 0.5], rtol=1e-10)
            x = solve(jnp.diag(d), b, M=_Scaled(1 / d), tol=1e-12)[0]
            np.testing.assert_allclose(x, [1.0, 0.5, 0.5], rtol=1e-10)


def test_namespace():
    import fjax.scipy.sparse

    assert fjax.scipy.sparse.linalg.cg is spl.cg
    assert {"cg", "bicgstab", "gmres"} <= set(dir(fjax.scipy.sparse.linalg))


def test_errors():
    a, b = jnp.eye(4), jnp.ones(4)
    with fjax.disable_jit():
        for solve in (spl.cg, spl.bicgstab, spl.gmres):
            with pytest.raises(ValueError, match=r"must be a square matrix, but has shape: \(3, 4\)"):
                solve(jnp.ones((3, 4)), b)
            with pytest.raises(TypeError, match="linear operator must be either a function or ndarray"):
                solve("abc", b)
            with pytest.raises(ValueError, match="x0 and b must have matching tree structure"):
                solve(a, b, x0=(b,))
        for solve in (spl.cg, spl.bicgstab):
            with pytest.raises(
                ValueError, match=r"arrays in x0 and b must have matching shapes: \[\(3,\)\] vs \[\(4,\)\]"
            ):
                solve(a, b, x0=jnp.ones(3))
        with pytest.raises(ValueError, match="invalid solve_method foo"):
            spl.gmres(a, b, solve_method="foo")
        with pytest.raises(TypeError, match="while_loop"):  # JAX fails in its while_loop too
            spl.cg(a, jnp.ones(4, jnp.int32))


def test_solvers_run_compiled_on_the_cuda_backend():
    """Under jit ``custom_linear_solve`` is inlined (its ``solve``), so the solvers compile on the
    CUDA backend too: run on the cupy stand-in GPU against the CPU."""
    import _standin_gpu  # noqa: PLC0415

    from fjax.backends.cuda import emulate  # noqa: PLC0415

    if emulate.compiler() is None:
        pytest.skip("no C++ compiler for the CUDA emulator")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 5)).astype(np.float32)
    a = a @ a.T + 5 * np.eye(5, dtype=np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    with _standin_gpu.installed():
        for solver in (fjax.scipy.sparse.linalg.cg, fjax.scipy.sparse.linalg.gmres):
            got, want = _standin_gpu.both(lambda a, b, s=solver: s(a, b, tol=1e-6)[0], a, b)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got, np.linalg.solve(a, b), rtol=1e-4, atol=1e-5)
