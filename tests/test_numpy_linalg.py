"""Tests of fjax.numpy products (matmul, dot, tensordot, einsum, ...) and fjax.numpy.linalg norms.

Expected values from numpy; dtypes and error behaviour checked against jax 0.10.2 (x64 off).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
from fjax import core
from fjax.numpy import _linalg as L
from fjax.numpy import linalg as LA

try:
    from fjax.test_util import check_grads
except ImportError:  # pragma: no cover
    check_grads = None


def A(v):
    return core.to_array(np.asarray(v))


def close(r, e, tol=1e-4):
    r = np.asarray(r)
    e = np.asarray(e)
    assert r.shape == e.shape, (r.shape, e.shape)
    np.testing.assert_allclose(r, e, rtol=tol, atol=tol)


def val(shape, seed=0, dtype=np.float32):
    return np.asarray(np.random.RandomState(seed).randn(*shape)).astype(dtype)


small = st.integers(0, 3)


@given(
    st.lists(st.integers(1, 3), min_size=0, max_size=2),
    st.lists(st.integers(1, 3), min_size=0, max_size=2),
    small,
    small,
    small,
    st.integers(0, 3),
    st.data(),
)
def test_matmul_broadcasting(b1, b2, n, k, m, mode, data):
    # make the batch shapes broadcast-compatible by setting some dims to 1
    b2 = [1 if data.draw(st.booleans()) else s for s in b2]
    nb = min(len(b1), len(b2))
    b1 = list(b1)
    for i in range(1, nb + 1):
        if b1[-i] != b2[-i] and b2[-i] != 1:
            b1[-i] = 1
    s1 = tuple(b1) + (n, k) if mode & 1 else (k,)
    s2 = tuple(b2) + (k, m) if mode & 2 else (k,)
    x, y = val(s1), val(s2, 1)
    close(L.matmul(A(x), A(y)), np.matmul(x, y))


def test_matmul_dtypes_and_errors():
    assert L.matmul(A(np.ones(3, np.int8)), A(np.ones(3, np.uint8))).dtype == np.int16
    assert L.matmul(A(np.ones(3, np.int32)), A(np.ones(3, np.float32))).dtype == np.float32
    assert (
        L.matmul(A(np.ones((2, 3), np.float32)), A(np.ones(3, np.float32)), preferred_element_type=np.float32).dtype
        == np.float32
    )
    assert L.dot(A(np.ones(3, np.float32)), 2).dtype == np.float32
    with pytest.raises(
        TypeError,
        match=r"^dot_general requires contracting dimensions to have the same shape, got \(3,\) and \(4,\)\.$",
    ):  # JAX's, word for word
        L.matmul(A(np.ones(3)), A(np.ones(4)))
    with pytest.raises(ValueError, match="matmul input operand 0 must have ndim at least 1, but it has ndim 0"):
        L.matmul(A(np.float32(1)), A(np.ones(4)))
    with pytest.raises(TypeError, match=r"dot_general requires contracting dimensions to have the same shape"):
        L.tensordot(A(np.ones((2, 3))), A(np.ones((4,))), 1)
    with pytest.raises(ValueError, match="label 'j'"):
        L.einsum("ij,jk", A(np.ones((2, 3))), A(np.ones((4, 5))))


@given(st.lists(st.integers(0, 3), min_size=0, max_size=3), st.lists(st.integers(0, 3), min_size=0, max_size=3))
def test_dot_inner_outer_kron(s1, s2):
    x, y = val(tuple(s1)), val(tuple(s2), 1)
    if x.ndim and y.ndim and x.shape[-1] == (y.shape[-2] if y.ndim >= 2 else y.shape[0]):
        close(L.dot(A(x), A(y)), np.dot(x, y))
    if not x.ndim or not y.ndim:
        close(L.dot(A(x), A(y)), np.dot(x, y))
    if not x.ndim or not y.ndim or x.shape[-1] == y.shape[-1]:
        close(L.inner(A(x), A(y)), np.inner(x, y))
    close(L.outer(A(x), A(y)), np.outer(x, y))
    close(L.kron(A(x), A(y)), np.kron(x, y))
    if x.size == y.size:
        close(L.vdot(A(x), A(y.reshape(x.shape))), np.vdot(x, y.reshape(x.shape)))


def test_vdot_complex_and_vecdot_cross():
    a = np.array([1 + 2j, 3 - 1j], np.complex64)
    close(L.vdot(A(a), A(a)), np.vdot(a, a))
    x, y = val((2, 3)), val((3,), 1)
    close(L.vecdot(A(x), A(y)), np.sum(x * y, -1))
    close(L.cross(A(x), A(y)), np.cross(x, y))
    close(L.cross(A(x[:, :2]), A(y[:2])), np.cross(x[:, :2], y[:2]) if hasattr(np, "cross") else None)
    close(LA.cross(A(x), A(y)), np.cross(x, y))


@given(st.lists(st.integers(0, 3), min_size=0, max_size=4), st.data())
def test_tensordot(shape, data):
    x = val(tuple(shape))
    n = data.draw(st.integers(0, len(shape)))
    yshape = tuple(shape[len(shape) - n :]) + tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    y = val(yshape, 1)
    close(L.tensordot(A(x), A(y), n), np.tensordot(x, y, n))
    if shape:
        perm = data.draw(st.permutations(range(len(shape))))
        k = data.draw(st.integers(0, len(shape)))
        ax = perm[:k]
        z = val(tuple(shape[i] for i in ax) + (2,), 2)
        close(L.tensordot(A(x), A(z), (list(ax), list(range(k)))), np.tensordot(x, z, (list(ax), list(range(k)))))


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ijk,kl->jil", [(2, 3, 4), (4, 5)]),
    ("...k,kl", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(1, 3, 4), (5, 1, 4, 2)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("iji->j", [(3, 2, 3)]),
    ("ij->", [(3, 2)]),
    ("ij->ji", [(3, 2)]),
    ("i,i", [(5,), (5,)]),
    ("i,j", [(2,), (3,)]),
    ("i,j->", [(2,), (3,)]),
    ("ijk,ijk,ij->", [(2, 3, 4), (2, 3, 4), (2, 3)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 2), (2, 5)]),
    ("bij,bjk->bik", [(3, 2, 4), (3, 4, 2)]),
    ("ij,ij->i", [(0, 3), (0, 3)]),
    (",ij->ij", [(), (2, 3)]),
    ("ijj,jk->ik", [(2, 3, 3), (3, 2)]),
    ("...,...->...", [(2, 1), (3,)]),
    ("i...->...", [(2, 3, 4)]),
]


@pytest.mark.parametrize("subs,shapes", EINSUM_CASES)
def test_einsum_matches_numpy(subs, shapes):
    ops = [val(s, i) for i, s in enumerate(shapes)]
    close(L.einsum(subs, *[A(o) for o in ops]), np.einsum(subs, *ops))


def test_einsum_interleaved_dtypes_and_grads():
    a, b = val((2, 3, 4)), val((4, 5), 1)
    close(L.einsum(A(a), [0, 1, 2], A(b), [2, 3], [3, 0]), np.einsum(a, [0, 1, 2], b, [2, 3], [3, 0]))
    close(L.einsum(A(a), [0, Ellipsis, 2], A(b), [2, 3]), np.einsum(a, [0, Ellipsis, 2], b, [2, 3]))
    assert L.einsum("i,i", A(np.ones(3, np.int32)), A(np.ones(3, np.float32))).dtype == np.float32
    assert L.einsum("i,i", A(np.ones(3, np.int8)), A(np.ones(3, np.int8))).dtype == np.int8
    assert L.einsum("ii->i", A(np.eye(3, dtype=bool))).dtype == np.bool_
    if check_grads is not None:
        check_grads(lambda x, y: L.einsum("ijk,kl->jil", x, y), (A(a), A(b)), order=1)
        check_grads(lambda x: L.einsum("iji->j", x), (A(val((3, 2, 3))),), order=1)
        check_grads(lambda x, y: L.matmul(x, y), (A(val((2, 3, 4))), A(val((4,), 1))), order=2)
        check_grads(lambda x, y: L.tensordot(x, y, 1), (A(a), A(b)), order=1)
        check_grads(lambda x, y: L.kron(x, y), (A(val((2, 2))), A(val((3,), 1))), order=1)


def test_einsum_under_jit_and_vmap():
    a, b = val((4, 2, 3)), val((4, 3, 5), 1)
    out = fjax.vmap(lambda x, y: L.einsum("ij,jk->ik", x, y))(A(a), A(b))
    close(out, np.einsum("bij,bjk->bik", a, b))
    out = fjax.jit(lambda x, y: L.matmul(x, y))(A(a), A(b))
    close(out, a @ b)
    jaxpr = str(fjax.make_jaxpr(lambda x, y: L.einsum("ij,jk->ik", x, y))(A(a[0]), A(b[0])))
    assert "dot_general" in jaxpr and "preferred_element_type=float32" in jaxpr


# ---------------------------------------------------------------------------------------------
# norms

VEC_ORDS = [None, 1, 2, np.inf, -np.inf, 0, 3, -1.5, 0.5]
MAT_ORDS = [None, "fro", 1, -1, np.inf, -np.inf]


@pytest.mark.parametrize("ord", VEC_ORDS)
def test_vector_norm(ord):
    x = val((3, 4))
    x[0, 1] = 0.0
    close(LA.norm(A(x[0]), ord), np.linalg.norm(x[0], ord))
    close(LA.norm(A(x), ord, axis=1), np.linalg.norm(x, ord, axis=1))
    close(LA.norm(A(x), ord, axis=0, keepdims=True), np.linalg.norm(x, ord, axis=0, keepdims=True))
    o = 2 if ord is None else ord
    close(LA.vector_norm(A(x), ord=o), np.linalg.norm(x.ravel(), o))
    close(LA.vector_norm(A(x), ord=o, axis=1, keepdims=True), np.linalg.norm(x, o, axis=1, keepdims=True))


@pytest.mark.parametrize("ord", MAT_ORDS)
def test_matrix_norm(ord):
    x = val((2, 3, 4))
    close(LA.norm(A(x[0]), ord), np.linalg.norm(x[0], ord))
    close(LA.norm(A(x), ord, axis=(2, 0)), np.linalg.norm(x, ord, axis=(2, 0)))
    close(LA.norm(A(x), ord, axis=(1, 2), keepdims=True), np.linalg.norm(x, ord, axis=(1, 2), keepdims=True))
    o = "fro" if ord is None else ord
    close(LA.matrix_norm(A(x), ord=o), np.linalg.norm(x, o, axis=(-2, -1)))


def test_norm_misc():
    x = val((2, 3, 4))
    close(LA.norm(A(x)), np.linalg.norm(x))
    close(LA.norm(A(x), keepdims=True), np.linalg.norm(x, keepdims=True))
    assert LA.norm(A(np.ones((3, 3), np.int32))).dtype == np.float32
    c = np.array([3 + 4j, 1j], np.complex64)
    close(LA.norm(A(c)), np.linalg.norm(c))
    assert LA.norm(A(c)).dtype == np.float32
    close(LA.norm(A(c), 1), np.linalg.norm(c, 1))
    with pytest.raises(ValueError, match="Improper number of dimensions"):
        LA.norm(A(x), 1)
    with pytest.raises(ValueError, match="Invalid order"):
        LA.norm(A(x[0, 0]), "fro")
    close(LA.norm(A(x[0]), "nuc"), np.linalg.norm(x[0], "nuc"))
    close(LA.norm(A(x[0]), 2), np.linalg.norm(x[0], 2))
    close(LA.trace(A(x)), np.trace(x, axis1=-2, axis2=-1))


def test_norm_grads():
    x = A(val((3, 4)))
    if check_grads is None:
        return
    for o in [None, 2, 1, np.inf, 3]:
        check_grads(lambda v: LA.norm(v, o, axis=1), (x,), order=1)
    for o in ["fro", 1, np.inf]:
        check_grads(lambda v: LA.norm(v, o), (x,), order=1)
    check_grads(lambda v: LA.norm(v), (x,), order=2)


def test_norm_grad_at_zero_matches_jax():
    # jax 0.10.2: grad(jnp.linalg.norm)(zeros(3)) is NaN (sqrt at 0); grad of the 1-norm is 1 (abs' at 0)
    g = np.asarray(fjax.grad(lambda v: LA.norm(v))(A(np.zeros(3, np.float32))))
    assert np.isnan(g).all()
