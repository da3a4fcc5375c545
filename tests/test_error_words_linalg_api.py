"""JAX 0.10.2's error messages, word for word, for invalid calls beyond the recorded corpus
(``tests/data/error_cases.py``): linalg, einsum, tree_map, vmap, custom_jvp/vjp, ``.at[]``,
jnp.array conversion, pad, searchsorted and grad's integer-input wording.

Each expected (type, message) was printed by JAX 0.10.2 (CPU, ``pip install jax``) running the
same call in a separate virtual environment; the suite itself never imports jax.
"""

# ruff: noqa: E501 - the expected messages are JAX's, kept on one line each where they fit
from __future__ import annotations

import collections

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
import fjax.scipy.linalg as sl
from fjax.lax import linalg as LL


def _ones(*shape):
    return np.ones(shape, np.float32)


LINALG = [
    (lambda: jnp.linalg.eig(_ones(2, 3, 4)), ValueError, "The input to eig must be a square matrix. Got shape (3, 4)."),
    (lambda: jnp.linalg.eigvals(_ones(3)), TypeError, "Input 0 to eig must have rank at least 2, but got shape=(3,)"),
    (
        lambda: jnp.linalg.eigvals(_ones(2, 3)),
        ValueError,
        "The input to eig must be a square matrix. Got shape (2, 3).",
    ),
    (
        lambda: jnp.linalg.eigh(_ones(3)),
        TypeError,
        "transpose permutation isn't a permutation of operand dimensions, got permutation (0, -1) for operand shape (3,).",
    ),
    (
        lambda: jnp.linalg.eigvalsh(_ones(2, 3)),
        TypeError,
        "add got incompatible shapes for broadcasting: (2, 3), (3, 2).",
    ),
    (
        lambda: jnp.linalg.cholesky(_ones(2, 3)),
        TypeError,
        "add got incompatible shapes for broadcasting: (2, 3), (3, 2).",
    ),
    (
        lambda: jnp.linalg.cholesky(_ones()),
        TypeError,
        "transpose permutation isn't a permutation of operand dimensions, got permutation (-1, -2) for operand shape ().",
    ),
    (
        lambda: jnp.linalg.solve(_ones(2, 3), _ones(2)),
        ValueError,
        "inconsistent size for core dimension 'm': 3 vs 2 on vectorized function with excluded=frozenset() and "
        "signature='(m,m),(m)->(m)'",
    ),
    (
        lambda: jnp.linalg.solve(_ones(3, 3), _ones(4, 2)),
        ValueError,
        "inconsistent size for core dimension 'm': 4 vs 3 on vectorized function with excluded=frozenset() and "
        "signature='(m,m),(m,n)->(m,n)'",
    ),
    (
        lambda: jnp.linalg.solve(_ones(3, 3), _ones()),
        ValueError,
        "input with shape () does not have enough dimensions for all core dimensions ('m', 'n') on vectorized "
        "function with excluded=frozenset() and signature='(m,m),(m,n)->(m,n)'",
    ),
    (
        lambda: jnp.linalg.solve(_ones(2, 3, 3), _ones(4, 3)),
        ValueError,
        "Invalid shapes for solve: (2, 3, 3), (4, 3). Prior to JAX v0.5.0, this would have been treated as a "
        "batched 1-dimensional solve. To recover this behavior, use solve(a, b[..., None]).squeeze(-1).",
    ),
    (
        lambda: jnp.linalg.solve(_ones(3), _ones(3)),
        ValueError,
        "left hand array must be at least two dimensional; got a.shape=(3,)",
    ),
    (lambda: jnp.linalg.matrix_power(_ones(2, 3), 2), TypeError, "Last 2 dimensions of the array must be square"),
    (
        lambda: jnp.linalg.matrix_power(_ones(), 2),
        TypeError,
        "0-dimensional array given. Array must be at least two-dimensional",
    ),
    (lambda: jnp.linalg.lstsq(_ones(3, 2), _ones(4, 2)), ValueError, "Leading dimensions of input arrays must match"),
    (
        lambda: jnp.linalg.lstsq(_ones(3), _ones(3)),
        TypeError,
        "1-dimensional array given. Array must be two-dimensional",
    ),
    (lambda: jnp.linalg.pinv(_ones()), ValueError, "not enough values to unpack (expected 2, got 0)"),
    (lambda: jnp.linalg.qr(_ones()), TypeError, "Input 0 to qr must have rank at least 2, but got shape=()"),
    (lambda: jnp.linalg.svd(_ones()), TypeError, "Input 0 to svd must have rank at least 2, but got shape=()"),
    (lambda: jnp.linalg.inv(_ones()), ValueError, "Argument to inv must have shape [..., n, n], got ()."),
    (lambda: jnp.linalg.det(_ones(3)), ValueError, "Argument to _det() must have shape [..., n, n], got (3,)"),
    (
        lambda: jnp.linalg.cond(_ones(3)),
        ValueError,
        "jnp.linalg.cond: input array must be at least 2D; got arr.shape=(3,)",
    ),
    (lambda: LL.eigh(_ones(2, 3)), TypeError, "add got incompatible shapes for broadcasting: (2, 3), (3, 2)."),
    (lambda: LL.eig(_ones(2, 3)), ValueError, "The input to eig must be a square matrix. Got shape (2, 3)."),
    (
        lambda: LL.cholesky(_ones(2, 3), symmetrize_input=False),
        ValueError,
        "The input to cholesky must be a square matrix. Got shape (2, 3).",
    ),
    (
        lambda: LL.cholesky(_ones(3), symmetrize_input=False),
        TypeError,
        "Input 0 to cholesky must have rank at least 2, but got shape=(3,)",
    ),
    (
        lambda: LL.eigh(_ones(3), symmetrize_input=False),
        TypeError,
        "Input 0 to eigh must have rank at least 2, but got shape=(3,)",
    ),
    (
        lambda: LL.eigh(_ones(2, 3), symmetrize_input=False),
        ValueError,
        "Argument to symmetric eigendecomposition must have shape [..., n, n], got shape (2, 3)",
    ),
    (
        lambda: jnp.linalg.eigh(_ones(2, 3), symmetrize_input=False),
        ValueError,
        "Argument to symmetric eigendecomposition must have shape [..., n, n], got shape (2, 3)",
    ),
    (lambda: LL.svd(_ones(3)), TypeError, "Input 0 to svd must have rank at least 2, but got shape=(3,)"),
    (lambda: LL.qr(_ones(3)), TypeError, "Input 0 to qr must have rank at least 2, but got shape=(3,)"),
    (lambda: LL.lu(_ones(3)), TypeError, "Input 0 to lu must have rank at least 2, but got shape=(3,)"),
    (lambda: LL.schur(_ones(2, 3)), ValueError, "The input to schur must be a square matrix. Got shape (2, 3)."),
    (
        lambda: LL.hessenberg(_ones(2, 3)),
        ValueError,
        "Argument to Hessenberg reduction must have shape [..., n, n], got shape (2, 3)",
    ),
    (
        lambda: LL.triangular_solve(_ones(2, 3, 3), _ones(3, 3, 4)),
        ValueError,
        "Incompatible shapes for arguments to triangular_solve: (3, 3) and (3, 4).",
    ),
    (
        lambda: LL.triangular_solve(_ones(3, 3), _ones(2, 3, 4)),
        TypeError,
        "All inputs to triangular_solve must have the same number of batch dimensions, but got [0, 1] batch "
        "dimensions for the inputs.",
    ),
    (
        lambda: LL.triangular_solve(_ones(3, 3), _ones(3, 4), left_side=False),
        ValueError,
        "Incompatible shapes for arguments to triangular_solve: (3, 3) and (3, 4).",
    ),
    (
        lambda: LL.triangular_solve(_ones(2, 3), _ones(3, 4)),
        ValueError,
        "The first input to triangular_solve must be a square matrix. Got shape (2, 3).",
    ),
    (
        lambda: LL.triangular_solve(_ones(3), _ones(3, 4)),
        TypeError,
        "Input 0 to triangular_solve must have rank at least 2, but got shape=(3,)",
    ),
    (
        lambda: sl.solve_triangular(_ones(3, 3), _ones(4, 2)),
        ValueError,
        "inconsistent size for core dimension 'n': 4 vs 3 on vectorized function with excluded=frozenset() and "
        "signature='(n,n),(n,k)->(n,k)'",
    ),
    (
        lambda: sl.solve_triangular(_ones(3), _ones(3)),
        ValueError,
        "input with shape (3,) does not have enough dimensions for all core dimensions ('n', 'n') on vectorized "
        "function with excluded=frozenset() and signature='(n,n),(n)->(n)'",
    ),
    (
        lambda: sl.cho_solve((_ones(3, 3), True), _ones(4, 2)),
        ValueError,
        "inconsistent size for core dimension 'n': 4 vs 3 on vectorized function with excluded=frozenset() and "
        "signature='(n,n),(n,k)->(n,k)'",
    ),
    # batched: JAX's shape rules name the matrix shape only
    (
        lambda: LL.cholesky(_ones(2, 2, 3), symmetrize_input=False),
        ValueError,
        "The input to cholesky must be a square matrix. Got shape (2, 3).",
    ),
    (
        lambda: LL.eigh(_ones(2, 2, 3), symmetrize_input=False),
        ValueError,
        "Argument to symmetric eigendecomposition must have shape [..., n, n], got shape (2, 3)",
    ),
    (
        lambda: LL.triangular_solve(_ones(2, 2, 3), _ones(2, 3, 4)),
        ValueError,
        "The first input to triangular_solve must be a square matrix. Got shape (2, 3).",
    ),
    (
        lambda: jnp.linalg.eigh(_ones(2, 2, 3)),
        TypeError,
        "add got incompatible shapes for broadcasting: (2, 2, 3), (2, 3, 2).",
    ),
    (lambda: sl.expm(_ones(3)), ValueError, "Expected A to be a (batched) square matrix, got A.shape=(3,)."),
]


def _check(thunk, exc, msg):
    with pytest.raises(exc) as info:
        thunk()
    assert str(info.value) == msg


@pytest.mark.parametrize("case", range(len(LINALG)))
def test_linalg_words(case):
    _check(*LINALG[case])


def test_vectorize_names_its_signature():
    f = jnp.vectorize(lambda a, b: a @ b, signature="(n),(n)->()")
    _check(
        lambda: f(_ones(3), _ones(4)),
        ValueError,
        "inconsistent size for core dimension 'n': 4 vs 3 on vectorized function with excluded=frozenset() and "
        "signature='(n),(n)->()'",
    )
    np.testing.assert_allclose(f(_ones(2, 3), _ones(3)), [3.0, 3.0])


EINSUM = [
    (
        lambda: jnp.einsum("ij"),
        ValueError,
        "Number of einsum subscripts, 1, must be equal to the number of operands, 0.",
    ),
    (lambda: jnp.einsum("i->j->k", _ones(3)), ValueError, "Subscripts can only contain one '->'."),
    (lambda: jnp.einsum("i-j", _ones(3)), ValueError, "Subscripts can only contain one '->'."),
    (lambda: jnp.einsum("..i.->i", _ones(3)), ValueError, "Invalid Ellipses."),
    (lambda: jnp.einsum("...ijk->i", _ones(2, 3)), ValueError, "Ellipses lengths do not match."),
    (
        lambda: jnp.einsum("ii->i", _ones(2, 3)),
        ValueError,
        "Size of label 'i' for operand 0 (2) does not match previous terms (3).",
    ),
    (
        lambda: jnp.einsum("ij,jk,kl->il", _ones(2, 3), _ones(3, 4), _ones(5, 2)),
        ValueError,
        "Size of label 'k' for operand 2 (4) does not match previous terms (5).",
    ),
    (
        lambda: jnp.einsum("i,i", _ones(3), _ones(3), _ones(3)),
        ValueError,
        "Number of einsum subscripts, 2, must be equal to the number of operands, 3.",
    ),
    (
        lambda: jnp.einsum("ij->ii", _ones(2, 2)),
        ValueError,
        "Output character 'i' appeared more than once in the output.",
    ),
    (
        lambda: jnp.einsum("ij,jk->il", _ones(2, 3), _ones(3, 2)),
        ValueError,
        "Output character 'l' did not appear in the input",
    ),
    (
        lambda: jnp.einsum("ijk->i", _ones(2, 3)),
        ValueError,
        "Einstein sum subscript 'ijk' does not contain the correct number of indices for operand 0.",
    ),
]


@pytest.mark.parametrize("case", range(len(EINSUM)))
def test_einsum_words(case):
    _check(*EINSUM[case])


def test_einsum_still_broadcasts_size_one_and_ellipses():
    a, b = np.arange(6.0, dtype=np.float32).reshape(2, 3), np.arange(2.0, dtype=np.float32).reshape(1, 2)
    np.testing.assert_allclose(
        jnp.einsum("ij,jk", a, b), np.einsum("ij,jk", np.repeat(a.sum(1, keepdims=True), 1, 1), b)
    )
    x, y = np.ones((2, 3), np.float32), np.arange(3.0, dtype=np.float32)
    np.testing.assert_allclose(jnp.einsum("...i,...i->...", x, y), np.einsum("...i,...i->...", x, y))
    np.testing.assert_allclose(jnp.einsum("...ii->...i", np.ones((2, 3, 3))), np.ones((2, 3)))


# tree_map(f, a, b) where ``a`` is no prefix of ``b``: JAX names the first mismatch and its key path
_P = collections.namedtuple("_P", "x y")
_Q = collections.namedtuple("_Q", "x y")
_TYPES = "pytree structure error: different types at key path\n    tree_map tree{}\nAt that key path, the prefix pytree tree_map tree has a subtree of type\n    {}\nbut at the same key path the full pytree has a subtree of different type\n    {}."
_LENGTHS = "pytree structure error: different lengths of {0} at key path\n    tree_map tree{1}\nAt that key path, the prefix pytree tree_map tree has a subtree of type {0} of length {2}, but the full pytree has a subtree of the same type but of length {3}."
TREE_MAP = [
    ((1, 2), (1, 2, 3), _LENGTHS.format("tuple", "", 2, 3)),
    ([[1]], [[1, 2]], _LENGTHS.format("list", "[0]", 1, 2)),
    ({"a": (1, 2)}, {"a": (1,)}, _LENGTHS.format("tuple", "['a']", 2, 1)),
    ([1, 2], (1, 2), _TYPES.format("", "<class 'list'>", "<class 'tuple'>")),
    (None, 1, _TYPES.format("", "<class 'NoneType'>", "<class 'int'>")),
    ((None,), (1,), _TYPES.format("[0]", "<class 'NoneType'>", "<class 'int'>")),
    ({"a": [1]}, {"a": 1}, _TYPES.format("['a']", "<class 'list'>", "<class 'int'>")),
    (_P(1, 2), _Q(1, 2), _TYPES.format("", repr(_P), repr(_Q))),
    (
        {"a": 1},
        {"b": 1},
        "pytree structure error: different pytree metadata at key path\n    tree_map tree\nAt that key path, the prefix pytree tree_map tree has a subtree of type\n    <class 'dict'>\nwith metadata\n    ('a',)\nbut at the same key path the full pytree has a subtree of the same type but with metadata\n    ('b',)\nso the diff in the metadata at these pytree nodes is\n    - ('a',)\n    ?   ^\n\n    + ('b',)\n    ?   ^\n",
    ),
    (
        (1, {"x": 2}),
        (1, {"x": 2, "y": 3}),
        "pytree structure error: different numbers of pytree children at key path\n    tree_map tree[1]\nAt that key path, the prefix pytree tree_map tree has a subtree of type\n    <class 'dict'>\nwith 1 child keys\n    x\nbut at the same key path the full pytree has a subtree of the same type but with 2 child keys\n    x y\nso the symmetric difference on key sets is\n    y",
    ),
    (
        collections.OrderedDict(a=1, b=2),
        collections.OrderedDict(b=1, a=2),
        "pytree structure error: different pytree metadata at key path\n    tree_map tree\nAt that key path, the prefix pytree tree_map tree has a subtree of type\n    <class 'collections.OrderedDict'>\nwith metadata\n    ('a', 'b')\nbut at the same key path the full pytree has a subtree of the same type but with metadata\n    ('b', 'a')\nso the diff in the metadata at these pytree nodes is\n    - ('a', 'b')\n    + ('b', 'a')",
    ),
]


@pytest.mark.parametrize("case", range(len(TREE_MAP)))
def test_tree_map_prefix_words(case):
    a, b, msg = TREE_MAP[case]
    _check(lambda: fjax.tree_util.tree_map(lambda *x: 0, a, b), ValueError, msg)
    _check(lambda: fjax.tree.map(lambda *x: 0, a, b), ValueError, msg)


def test_tree_map_prefix_still_maps():
    assert fjax.tree_util.tree_map(lambda a, b: (a, b), (1, 2), (3, [4, 5])) == ((1, 3), (2, [4, 5]))
    assert fjax.tree_util.tree_map(lambda a, b: a + b, {"a": 1}, {"a": 2}) == {"a": 3}


def test_tree_unflatten_counts():
    t = fjax.tree_util.tree_structure((1, 2))
    _check(lambda: fjax.tree_util.tree_unflatten(t, [1]), ValueError, "Too few leaves for PyTreeDef; expected 2, got 1")
    _check(
        lambda: fjax.tree_util.tree_unflatten(t, [1, 2, 3]), ValueError, "Too many leaves for PyTreeDef; expected 2."
    )


def _o(shape):
    return np.ones(shape, np.float32)


# vmap's in_axes/out_axes/size errors (the calls of tests/data, more shapes of them)
VMAP = [
    (
        lambda: fjax.vmap(lambda x: (x, {"a": x}), out_axes=(0, {"a": None}))(_o(3)),
        ValueError,
        "at vmap out_axes[1]['a'], got axis spec None but output was batched on axis 0",
    ),
    (
        lambda: fjax.vmap(lambda x: (x, x), out_axes=None)(_o(3)),
        ValueError,
        "at vmap out_axes[0], got axis spec None but output was batched on axis 0",
    ),
    (
        lambda: fjax.vmap(lambda x: x.T, in_axes=1, out_axes=None)(_o((2, 3))),
        ValueError,
        "at vmap out_axes, got axis spec None but output was batched on axis 1",
    ),
    (
        lambda: fjax.vmap(lambda x, y: x, in_axes=(0, -1))(_o(3), _o((2, 4))),
        ValueError,
        "vmap got inconsistent sizes for array axes to be mapped:\n  * one axis had size 3: axis 0 of argument x of type float32[3];\n  * one axis had size 4: axis -1 of argument y of type float32[2,4]",
    ),
    (
        lambda: fjax.vmap(lambda x, y, z: x, in_axes=(0, 0, 1))(_o(3), _o(3), _o((2, 4))),
        ValueError,
        "vmap got inconsistent sizes for array axes to be mapped:\n  * most axes (2 of them) had size 3, e.g. axis 0 of argument x of type float32[3];\n  * one axis had size 4: axis 1 of argument z of type float32[2,4]",
    ),
    (
        lambda: fjax.vmap(lambda *a: a[0])(_o(3), _o(4)),
        ValueError,
        "vmap got inconsistent sizes for array axes to be mapped:\n  * one axis had size 3: axis 0 of argument a of type float32[3];\n  * one axis had size 4: axis 0 of args[1] of type float32[4]",
    ),
    (
        lambda: fjax.vmap(lambda x: x)({"a": _o(3), "b": [_o(4)]}),
        ValueError,
        "vmap got inconsistent sizes for array axes to be mapped:\n  * one axis had size 3: axis 0 of argument x['a'] of type float32[3];\n  * one axis had size 4: axis 0 of argument x['b'][0] of type float32[4]",
    ),
    (
        lambda: fjax.vmap(lambda x: x, out_axes=0.5),
        TypeError,
        "vmap out_axes must be an int, None, or (nested) container with those types as leaves, but got 0.5.",
    ),
    (
        lambda: fjax.vmap(lambda x: x, in_axes={"a": 0}),
        TypeError,
        "vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional arguments passed to the function, but got {'a': 0}.",
    ),
    (
        lambda: fjax.vmap(lambda x: x, in_axes=(0.5,)),
        TypeError,
        "vmap in_axes must be an int, None, or (nested) container with those types as leaves, but got (0.5,).",
    ),
    (
        lambda: fjax.vmap(lambda x: x)(),
        ValueError,
        "vmap wrapped function must be passed at least one argument containing an array or axis_size must be specified, got empty *args=() and **kwargs={}",
    ),
    (
        lambda: fjax.vmap(lambda x: x)(None),
        ValueError,
        "vmap wrapped function must be passed at least one argument containing an array or axis_size must be specified, got empty *args=(None,) and **kwargs={}",
    ),
    (
        lambda: fjax.vmap(lambda x: x, in_axes=None)(_o(3)),
        ValueError,
        "vmap must have at least one non-None value in in_axes or axis_size must be specified",
    ),
    (
        lambda: fjax.vmap(lambda x, y: x, in_axes=(0, None), axis_size=5)(_o(3), 2),
        ValueError,
        "vmap got inconsistent sizes for array axes to be mapped:\n  * the `axis_size` argument was 5;\n  * one axis had size 3: axis 0 of argument x of type float32[3]",
    ),
    (
        lambda: fjax.vmap(lambda x, y: x, in_axes=[0, (0, 0)])(_o(3), (_o(3),)),
        ValueError,
        "vmap in_axes specification must be a tree prefix of the corresponding value; \n  Mismatch details (1 found):\n  pytree structure error: different lengths of tuple at key path\n    vmap in_axes[1]\nAt that key path, the prefix pytree vmap in_axes has a subtree of type tuple of length 2, but the full pytree has a subtree of the same type but of length 1.",
    ),
    (
        lambda: fjax.vmap(lambda x, y: x)(np.ones(3, np.int8), np.ones(2, np.bool_)),
        ValueError,
        "vmap got inconsistent sizes for array axes to be mapped:\n  * one axis had size 3: axis 0 of argument x of type int8[3];\n  * one axis had size 2: axis 0 of argument y of type bool[2]",
    ),
    (
        lambda: fjax.vmap(lambda x, y: x)(_o(3), y=_o(4)),
        ValueError,
        "vmap got inconsistent sizes for array axes to be mapped:\n  * one axis had size 3: axis 0 of argument x of type float32[3];\n  * one axis had size 4: axis 0 of kwargs['y'] of type float32[4]",
    ),
    (
        lambda: fjax.vmap(lambda x, y: x, in_axes=({"b": 0}, 0))({"a": _o(3)}, _o(3)),
        ValueError,
        "vmap in_axes specification must be a tree prefix of the corresponding value; \n  Mismatch details (1 found):\n  pytree structure error: different pytree metadata at key path\n    vmap in_axes[0]\nAt that key path, the prefix pytree vmap in_axes has a subtree of type\n    <class 'dict'>\nwith metadata\n    ('b',)\nbut at the same key path the full pytree has a subtree of the same type but with metadata\n    ('a',)\nso the diff in the metadata at these pytree nodes is\n    - ('b',)\n    ?   ^\n\n    + ('a',)\n    ?   ^\n",
    ),
    (
        lambda: fjax.vmap(lambda x, y: x, in_axes=(0, 0, 0))(_o(3), _o(3)),
        ValueError,
        "vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional arguments passed to the function, but got len(in_axes)=3, len(args)=2",
    ),
    (
        lambda: fjax.vmap(lambda x: {"a": x, "b": x}, out_axes={"a": 0, "c": 0})(_o(3)),
        ValueError,
        "vmap out_axes specification must be a tree prefix of the corresponding value; \n  Mismatch details (1 found):\n  pytree structure error: different pytree metadata at key path\n    vmap out_axes\nAt that key path, the prefix pytree vmap out_axes has a subtree of type\n    <class 'dict'>\nwith metadata\n    ('a', 'c')\nbut at the same key path the full pytree has a subtree of the same type but with metadata\n    ('a', 'b')\nso the diff in the metadata at these pytree nodes is\n    - ('a', 'c')\n    ?        ^\n\n    + ('a', 'b')\n    ?        ^\n",
    ),
]


@pytest.mark.parametrize("case", range(len(VMAP)))
def test_vmap_words(case):
    _check(*VMAP[case])


def test_vmap_still_maps_with_negative_axes_and_kwargs():
    out = fjax.vmap(lambda x, y: x + y, in_axes=(0, -1))(_o(3), np.arange(6.0, dtype=np.float32).reshape(2, 3))
    np.testing.assert_allclose(out, 1 + np.arange(6.0).reshape(2, 3).T)
    np.testing.assert_allclose(fjax.vmap(lambda x, y: x * y)(_o(3), y=2 * _o(3)), 2 * np.ones(3))
    np.testing.assert_allclose(fjax.vmap(lambda x: x, axis_size=3, in_axes=None)(_o(2)), np.ones((3, 2)))


# custom_jvp / custom_vjp / vjp type errors name types JAX's long way (float32[2], not f32[2])
@fjax.custom_jvp
def _two_out(x, y):
    return x, y


_two_out.defjvp(lambda p, t: (p, (t[0], jnp.ones(3))))


@fjax.custom_jvp
def _f16_tangent(x):
    return x


_f16_tangent.defjvp(lambda p, t: (p[0], t[0].astype(jnp.float16)))


@fjax.custom_vjp
def _bad_bwd(x):
    return x


_bad_bwd.defvjp(lambda x: (x, None), lambda r, g: (jnp.ones((2, 2)),))


def _vjp_fun(f):
    return fjax.vjp(f, _o(2))[1]


CUSTOM = [
    (
        lambda: fjax.jvp(_two_out, (_o(()), _o(2)), (_o(()), _o(2))),
        TypeError,
        "Custom JVP rule must produce primal and tangent outputs with corresponding shapes and dtypes, but got:\n  primal float32[2] with tangent float32[3], expecting tangent float32[2]",
    ),
    (
        lambda: fjax.jvp(_f16_tangent, (_o(2),), (_o(2),)),
        TypeError,
        "Custom JVP rule must produce primal and tangent outputs with corresponding shapes and dtypes. Expected float32[2] (tangent type of float32[2]) but got float16[2].",
    ),
    (
        lambda: fjax.grad(lambda x: _bad_bwd(x).sum())(_o(3)),
        ValueError,
        "Custom VJP bwd rule must produce an output with the same type as the args tuple of the primal function, but at output[0] the bwd rule produced an output of type float32[2,2] corresponding to an input of type float32[3], so the shapes do not match",
    ),
    (
        lambda: _vjp_fun(lambda x: (x, 2 * x))((_o(2), _o(3))),
        ValueError,
        "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got float32[3], but expected float32[2] because the corresponding output of the differentiated function had JAX type float32[2]",
    ),
    (
        lambda: _vjp_fun(lambda x: (x, 2 * x))((_o(2), np.ones(2, np.float16))),
        ValueError,
        "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got float16[2], but expected float32[2] because the corresponding output of the differentiated function had JAX type float32[2]",
    ),
    (
        lambda: _vjp_fun(lambda x: {"a": x[None]})({"a": _o(2)}),
        ValueError,
        "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got float32[2], but expected float32[1,2] because the corresponding output of the differentiated function had JAX type float32[1,2]",
    ),
]


@pytest.mark.parametrize("case", range(len(CUSTOM)))
def test_custom_and_vjp_words(case):
    _check(*CUSTOM[case])


# .at[] updates and jnp.broadcast_to: JAX broadcasts the (promoted) updates with jnp.broadcast_to
AT = [
    (
        lambda: jnp.asarray(_o((3, 4))).at[0].add(np.ones(3, np.int32)),
        ValueError,
        "Incompatible types for broadcasting: input type=float32[3] and requested type=float32[4]",
    ),
    (
        lambda: jnp.asarray(_o((3, 4))).at[0].set(_o((2, 4))),
        ValueError,
        "Cannot broadcast to shape with fewer dimensions: arr_shape=(2, 4) shape=(4,)",
    ),
    (
        lambda: jnp.asarray(_o((3, 4))).at[:, 1:].mul(_o((3, 4))),
        ValueError,
        "Incompatible types for broadcasting: input type=float32[3,4] and requested type=float32[3,3]",
    ),
    (
        lambda: jnp.asarray(_o((3, 4))).at[jnp.array([0, 1])].min(_o((3, 4))),
        ValueError,
        "Incompatible types for broadcasting: input type=float32[3,4] and requested type=float32[2,4]",
    ),
    (
        lambda: jnp.asarray(_o(5)).at[1].set(_o(2)),
        ValueError,
        "Cannot broadcast to shape with fewer dimensions: arr_shape=(2,) shape=()",
    ),
    (
        lambda: jnp.asarray(_o(5)).at[1].set(_o((1, 1))),
        ValueError,
        "Cannot broadcast to shape with fewer dimensions: arr_shape=(1, 1) shape=()",
    ),
    (
        lambda: jnp.asarray(_o((3, 4))).at[:].set(_o(3)),
        ValueError,
        "Incompatible types for broadcasting: input type=float32[3] and requested type=float32[3,4]",
    ),
    (
        lambda: jnp.broadcast_to(_o(3), (-1,)),
        ValueError,
        "Incompatible types for broadcasting: input type=float32[3] and requested type=float32[-1]",
    ),
    (
        lambda: jnp.broadcast_to(_o(1), (-2,)),
        TypeError,
        "broadcast_in_dim shape must have every element be nonnegative, got (-2,).",
    ),
    (
        lambda: jnp.broadcast_to(np.ones(3, np.int8), 4),
        ValueError,
        "Incompatible types for broadcasting: input type=int8[3] and requested type=int8[4]",
    ),
    (
        lambda: jnp.broadcast_to(3.0, (2, -1)),
        TypeError,
        "broadcast_in_dim shape must have every element be nonnegative, got (2, -1).",
    ),
    (
        lambda: jnp.broadcast_to(_o((2, 5)), (3, 4, 5)),
        ValueError,
        "Incompatible types for broadcasting: input type=float32[2,5] and requested type=float32[3,4,5]",
    ),
]


@pytest.mark.parametrize("case", range(len(AT)))
def test_at_and_broadcast_to_words(case):
    _check(*AT[case])


def test_at_updates_still_broadcast():
    x = jnp.zeros((3, 4), jnp.float32)
    np.testing.assert_array_equal(
        x.at[0].add(np.arange(4.0, dtype=np.float32)), np.r_[[np.arange(4.0)], np.zeros((2, 4))]
    )
    np.testing.assert_array_equal(x.at[:, 1].set(1.0), np.c_[np.zeros(3), np.ones(3), np.zeros((3, 2))])
    np.testing.assert_array_equal(jnp.broadcast_to(np.ones((1, 4)), (2, 3, 4)), np.ones((2, 3, 4)))


# grad/jacrev/jacfwd input and output dtype checks (JAX's order: holomorphic inputs first)
GRAD = [
    (
        lambda: fjax.grad(lambda x: x.sum())(
            np.ones(2, np.int32),
        ),
        TypeError,
        "grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact), but got int32. If you want to use Boolean- or integer-valued inputs, use vjp or set allow_int to True.",
    ),
    (
        lambda: fjax.jacfwd(lambda x: x)(np.ones(2, np.int32)),
        TypeError,
        "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of np.floating), but got int32. For holomorphic differentiation, pass holomorphic=True. For differentiation of non-holomorphic functions involving complex inputs or integer inputs, use jax.jvp directly.",
    ),
    (
        lambda: fjax.jacrev(lambda x: x)(np.ones(2, np.int32)),
        TypeError,
        "jacrev requires real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact), but got int32. If you want to use Boolean- or integer-valued inputs, use vjp or set allow_int to True.",
    ),
    (
        lambda: fjax.hessian(lambda x: x.sum())(np.ones(2, np.int32)),
        TypeError,
        "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of np.floating), but got int32. For holomorphic differentiation, pass holomorphic=True. For differentiation of non-holomorphic functions involving complex inputs or integer inputs, use jax.jvp directly.",
    ),
    (
        lambda: fjax.value_and_grad(lambda x: x.sum())(np.ones(2, np.uint8)),
        TypeError,
        "grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact), but got uint8. If you want to use Boolean- or integer-valued inputs, use vjp or set allow_int to True.",
    ),
    (
        lambda: fjax.grad(lambda x: x.sum(), holomorphic=True)(np.ones(2, np.float32)),
        TypeError,
        "grad with holomorphic=True requires inputs with complex dtype, but got float32.",
    ),
    (
        lambda: fjax.grad(lambda x: x.sum(), holomorphic=True)(np.ones(2, np.int32)),
        TypeError,
        "grad with holomorphic=True requires inputs with complex dtype, but got int32.",
    ),
    (
        lambda: fjax.jacfwd(lambda x: x, holomorphic=True)(np.ones(2, np.float32)),
        TypeError,
        "jacfwd with holomorphic=True requires inputs with complex dtype, but got float32.",
    ),
    (
        lambda: fjax.jacrev(lambda x: x, holomorphic=True)(np.ones(2, np.float32)),
        TypeError,
        "jacrev with holomorphic=True requires inputs with complex dtype, but got float32.",
    ),
    (
        lambda: fjax.grad(lambda x: x)(np.complex64(1)),
        TypeError,
        "grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but got complex64. For holomorphic differentiation, pass holomorphic=True. For differentiation of non-holomorphic functions involving complex outputs, use jax.vjp directly.",
    ),
    (
        lambda: fjax.grad(lambda x: x * 1j)(np.float32(1)),
        TypeError,
        "grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but got complex64. For holomorphic differentiation, pass holomorphic=True. For differentiation of non-holomorphic functions involving complex outputs, use jax.vjp directly.",
    ),
    (
        lambda: fjax.grad(lambda x: x.sum())(np.ones(2, bool)),
        TypeError,
        "grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact), but got bool. If you want to use Boolean- or integer-valued inputs, use vjp or set allow_int to True.",
    ),
    (
        lambda: fjax.jacrev(lambda x: x)(np.ones(2, bool)),
        TypeError,
        "jacrev requires real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact), but got bool. If you want to use Boolean- or integer-valued inputs, use vjp or set allow_int to True.",
    ),
]


@pytest.mark.parametrize("case", range(len(GRAD)))
def test_grad_dtype_words(case):
    _check(*GRAD[case])


def test_grad_allow_int_still_works():
    g = fjax.grad(lambda x, y: (x * y).sum(), argnums=(0, 1), allow_int=True)(_o(2), np.ones(2, np.int32))
    np.testing.assert_array_equal(g[0], np.ones(2))
    assert g[1].dtype == fjax.dtypes.float0


def _o2(*shape):
    return np.ones(shape, np.float32)


# jnp.pad / lax.pad, jnp.searchsorted and jnp.array conversion
PAD_SEARCH_ARRAY = [
    (
        lambda: jnp.pad(_o2(2), ((1, 1), (1, 1))),
        ValueError,
        "jnp.pad: pad_width with nd=1 has unsupported shape (2, 2). Valid shapes are (1, 2), (1, 2), (2,), (1,), or ().",
    ),
    (
        lambda: jnp.pad(_o2(2, 3), ((1, 1), (1, 1), (1, 1))),
        ValueError,
        "jnp.pad: pad_width with nd=2 has unsupported shape (3, 2). Valid shapes are (2, 2), (1, 2), (2,), (1,), or ().",
    ),
    (
        lambda: jnp.pad(_o2(2, 3), (1, 2, 3)),
        ValueError,
        "jnp.pad: pad_width with nd=2 has unsupported shape (3,). Valid shapes are (2, 2), (1, 2), (2,), (1,), or ().",
    ),
    (lambda: jnp.pad(_o2(2), -1), ValueError, "index can't contain negative values"),
    (lambda: jnp.pad(_o2(2), ((0, -2),)), ValueError, "index can't contain negative values"),
    (lambda: jnp.pad(_o2(2), 1, mode="bogus"), NotImplementedError, "Unimplemented padding mode 'bogus' for np.pad."),
    (lambda: jnp.pad(_o2(2), 1.5), TypeError, "`pad_width` must be of integral type."),
    (
        lambda: jnp.pad(_o2(2), 1, constant_values=_o2(3)),
        ValueError,
        "jnp.pad: constant_values has unsupported shape (3,). If the shape is 1D or 2D, the last dimension must be of size 1 or 2.",
    ),
    (
        lambda: jnp.pad(_o2(2), 1, mode="edge", constant_values=1),
        ValueError,
        "unsupported keyword arguments for mode 'edge': {'constant_values'}",
    ),
    (
        lambda: fjax.lax.pad(_o2(2), np.float32(0), [(1, 1, 0), (1, 1, 0)]),
        ValueError,
        "length of padding_config must equal the number of axes of operand, got padding_config ((1, 1, 0), (1, 1, 0)) for operand shape (2,)",
    ),
    (
        lambda: fjax.lax.pad(_o2(2), _o2(1), [(1, 1, 0)]),
        ValueError,
        "padding_value must be a scalar; got np.shape(padding_value)=(1,)",
    ),
    (
        lambda: fjax.lax.pad(_o2(2), np.float32(0), [(1, 1, -1)]),
        ValueError,
        "interior padding in padding_config must be nonnegative, got padding_config ((1, 1, -1),)",
    ),
    (
        lambda: fjax.lax.pad(_o2(2), np.int32(0), [(1, 1, 0)]),
        TypeError,
        "pad operand and padding_value must be same dtype: got float32 and int32.",
    ),
    (lambda: jnp.searchsorted(_o2(2, 2), 1.0), ValueError, "a should be 1-dimensional"),
    (
        lambda: jnp.searchsorted(_o2(3), 1.0, side="middle"),
        ValueError,
        "invalid argument side='middle', expected 'left' or 'right'",
    ),
    (
        lambda: jnp.searchsorted(_o2(3), 1.0, method="bogus"),
        ValueError,
        "invalid argument method='bogus', expected one of ['compare_all', 'scan', 'scan_unrolled', 'sort']",
    ),
    (
        lambda: jnp.array("a"),
        TypeError,
        "Value 'a' with dtype <U1 is not a valid JAX array type. Only arrays of numeric types are supported by JAX.",
    ),
    (
        lambda: jnp.array({"a": 1}),
        TypeError,
        "Value '{'a': 1}' with dtype object is not a valid JAX array type. Only arrays of numeric types are supported by JAX.",
    ),
    (
        lambda: jnp.array(["a", "b"]),
        TypeError,
        "Value 'a' with dtype <U1 is not a valid JAX array type. Only arrays of numeric types are supported by JAX.",
    ),
    (
        lambda: jnp.asarray("a"),
        TypeError,
        "Value 'a' with dtype <U1 is not a valid JAX array type. Only arrays of numeric types are supported by JAX.",
    ),
    (
        lambda: jnp.array([1, "a"]),
        TypeError,
        "Value 'a' with dtype <U1 is not a valid JAX array type. Only arrays of numeric types are supported by JAX.",
    ),
    (
        lambda: jnp.array([[1, 2], [3]]),
        ValueError,
        "setting an array element with a sequence. The requested array has an inhomogeneous shape after 1 dimensions. The detected shape was (2,) + inhomogeneous part.",
    ),
    (lambda: jnp.array(None), ValueError, "None is not a valid value for jnp.array"),
    (lambda: jnp.array([None]), ValueError, "None is not a valid value for jnp.array"),
    (
        lambda: jnp.array(b"ab"),
        TypeError,
        "Value 'b'ab'' with dtype |S2 is not a valid JAX array type. Only arrays of numeric types are supported by JAX.",
    ),
]


@pytest.mark.parametrize("case", range(len(PAD_SEARCH_ARRAY)))
def test_pad_searchsorted_array_words(case):
    _check(*PAD_SEARCH_ARRAY[case])


def test_pad_widths_jax_takes():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    # (a float width, 2.0, is refused as JAX 0.10.2 refuses it: tests/test_jax_fidelity_s16.py)
    for pw in [((1, 2), (0, 1)), ((1, 2),), (1, 2), (1,), 1]:
        np.testing.assert_array_equal(jnp.pad(x, pw), np.pad(x, np.asarray(pw, dtype=np.int64).tolist()))
    np.testing.assert_array_equal(jnp.pad(x, 1, constant_values=(3, 4)), np.pad(x, 1, constant_values=(3, 4)))
    np.testing.assert_array_equal(jnp.searchsorted(np.arange(5.0), 2.5, side="right"), 3)


# transformations given (or returning) values that are no JAX type; grad's argnums check
NOT_JAX_TYPES = [
    (lambda: fjax.grad(lambda x: 1.0)("a"), TypeError, "Argument 'a' of type <class 'str'> is not a valid JAX type."),
    (lambda: fjax.vjp(lambda x: x, "a"), TypeError, "Argument 'a' of type <class 'str'> is not a valid JAX type."),
    (
        lambda: fjax.jvp(lambda x: x, ("a",), (1.0,)),
        TypeError,
        "Argument 'a' of type <class 'str'> is not a valid JAX type",
    ),
    (lambda: fjax.jacfwd(lambda x: x)("a"), TypeError, "Argument 'a' of type <class 'str'> is not a valid JAX type."),
    (lambda: fjax.jacrev(lambda x: x)("a"), TypeError, "Argument 'a' of type <class 'str'> is not a valid JAX type."),
    (lambda: fjax.linearize(lambda x: x, "a"), TypeError, "Argument 'a' of type <class 'str'> is not a valid JAX type"),
    (lambda: fjax.vmap(lambda x: x)("a"), TypeError, "Argument 'a' of type <class 'str'> is not a valid JAX type"),
    (
        lambda: fjax.vmap(lambda x: "a")(_o(3)),
        TypeError,
        "Output from batched function 'a' with type <class 'str'> is not a valid JAX type",
    ),
    (
        lambda: fjax.value_and_grad(lambda x: 1.0)("a"),
        TypeError,
        "Argument 'a' of type <class 'str'> is not a valid JAX type.",
    ),
    (
        lambda: fjax.grad(lambda x, y: x, argnums=5)(1.0, 2.0),
        TypeError,
        "differentiating with respect to argnums=5 requires at least 6 positional arguments to be passed by the caller, but got only 2 positional arguments.",
    ),
    (
        lambda: fjax.grad(lambda x, y: x, argnums=[0, 5])(1.0, 2.0),
        TypeError,
        "differentiating with respect to argnums=(0, 5) requires at least 6 positional arguments to be passed by the caller, but got only 2 positional arguments.",
    ),
    (lambda: fjax.jacrev(lambda x: "a")(1.0), TypeError, "Argument 'a' of type <class 'str'> is not a valid JAX type"),
    (lambda: fjax.vjp(lambda x: "a", 1.0), TypeError, "Argument 'a' of type <class 'str'> is not a valid JAX type"),
]


@pytest.mark.parametrize("case", range(len(NOT_JAX_TYPES)))
def test_not_a_jax_type_words(case):
    _check(*NOT_JAX_TYPES[case])


def test_array_scalar_conversion_and_setitem_words():
    x, y = jnp.ones(1), jnp.ones((2, 2))
    _check(lambda: float(x), TypeError, "Only scalar arrays can be converted to Python scalars; got arr.ndim=1")
    _check(lambda: int(y), TypeError, "Only scalar arrays can be converted to Python scalars; got arr.ndim=2")
    _check(lambda: complex(x), TypeError, "Only scalar arrays can be converted to Python scalars; got arr.ndim=1")
    _check(lambda: x.__index__(), TypeError, "Only integer scalar arrays can be converted to a scalar index.")
    _check(
        lambda: y.__setitem__(0, 1),
        TypeError,
        "JAX arrays are immutable and do not support in-place item assignment. Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html",
    )
    assert float(jnp.ones(())) == 1.0 and int(jnp.int32(3)) == 3 and [1, 2, 3][jnp.int32(1)] == 2


# a vjp function called with a cotangent of another tree structure: JAX names the function and
# each difference
def _vjp_f1(x):
    return (x, 2 * x)


def _vjp_f2(x):
    return {"a": x, "b": [x, x]}


_, _v1 = fjax.vjp(_vjp_f1, _o(2))
_, _v2 = fjax.vjp(_vjp_f2, _o(2))
VJP_TREES = [
    (
        lambda: _v1(_o(2)),
        "unexpected tree structure.\n\nThe argument to a VJP function returned by `jax.vjp` must match the pytree\nstructure of the differentiated function {f1}.\n\nBut the tree structures differ:\n  * out was a <class 'tuple'> in the original output, but a pytree leaf here, so their Python types differ.",
    ),
    (
        lambda: _v1((_o(2),)),
        "unexpected tree structure.\n\nThe argument to a VJP function returned by `jax.vjp` must match the pytree\nstructure of the differentiated function {f1}.\n\nBut the tree structures differ:\n  * out was a tuple of length 2 in the original output, but a tuple of length 1 here, so the lengths do not match.",
    ),
    (
        lambda: _v1([_o(2), _o(2)]),
        "unexpected tree structure.\n\nThe argument to a VJP function returned by `jax.vjp` must match the pytree\nstructure of the differentiated function {f1}.\n\nBut the tree structures differ:\n  * out was a <class 'tuple'> in the original output, but a <class 'list'> here, so their Python types differ.",
    ),
    (
        lambda: _v2({"a": _o(2), "c": [_o(2), _o(2)]}),
        "unexpected tree structure.\n\nThe argument to a VJP function returned by `jax.vjp` must match the pytree\nstructure of the differentiated function {f2}.\n\nBut the tree structures differ:\n  * out was a <class 'dict'> with pytree metadata ('a', 'b') in the original output, but a <class 'dict'> with pytree metadata ('a', 'c') here, so the pytree node metadata does not match.",
    ),
    (
        lambda: _v2({"a": _o(2), "b": [_o(2)]}),
        "unexpected tree structure.\n\nThe argument to a VJP function returned by `jax.vjp` must match the pytree\nstructure of the differentiated function {f2}.\n\nBut the tree structures differ:\n  * out['b'] was a list of length 2 in the original output, but a list of length 1 here, so the lengths do not match.",
    ),
    (
        lambda: _v2({"a": _o(2)}),
        "unexpected tree structure.\n\nThe argument to a VJP function returned by `jax.vjp` must match the pytree\nstructure of the differentiated function {f2}.\n\nBut the tree structures differ:\n  * out was a <class 'dict'> with 2 children in the original output, but a <class 'dict'> with 1 child here, so the numbers of children do not match, with the symmetric difference of key sets: {'b'}.",
    ),
    (
        lambda: _v2({"a": _o(2), "b": [_o(2), _o(2)], "c": _o(2)}),
        "unexpected tree structure.\n\nThe argument to a VJP function returned by `jax.vjp` must match the pytree\nstructure of the differentiated function {f2}.\n\nBut the tree structures differ:\n  * out was a <class 'dict'> with 2 children in the original output, but a <class 'dict'> with 3 children here, so the numbers of children do not match, with the symmetric difference of key sets: {'c'}.",
    ),
    (
        lambda: _v2({"a": _o(2), "b": [_o(2), (_o(2), _o(2))]}),
        "unexpected tree structure.\n\nThe argument to a VJP function returned by `jax.vjp` must match the pytree\nstructure of the differentiated function {f2}.\n\nBut the tree structures differ:\n  * out['b'][1] was a pytree leaf in the original output, but a <class 'tuple'> here, so their Python types differ.",
    ),
]


def _src(f):
    return f"{f.__name__} at {f.__code__.co_filename}:{f.__code__.co_firstlineno}"


@pytest.mark.parametrize("case", range(len(VJP_TREES)))
def test_vjp_tree_words(case):
    thunk, msg = VJP_TREES[case]
    _check(thunk, ValueError, msg.replace("{f1}", _src(_vjp_f1)).replace("{f2}", _src(_vjp_f2)))


def test_index_words():
    x = jnp.ones((3, 4))
    bad_type = "Indexer must have integer or boolean type, got indexer with type {}"
    _check(lambda: x[1.0], TypeError, bad_type.format("float64"))
    _check(lambda: x[np.float32(1)], TypeError, bad_type.format("float32"))
    _check(lambda: x[0, 1.5], TypeError, bad_type.format("float64"))
    _check(lambda: x.at[1.0].set(1.0), TypeError, bad_type.format("float64"))
    mask = "boolean index did not match shape of indexed array in index {}: got {}, expected {}"
    _check(lambda: x[np.array([True, False])], IndexError, mask.format(0, (2,), [3]))
    _check(lambda: x[:, np.array([True, False])], IndexError, mask.format(1, (2,), [4]))
    _check(lambda: x[np.ones((2, 2), bool)], IndexError, mask.format(0, (2, 2), [3, 4]))
    bad = "only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and integer or boolean arrays are valid indices. Got {0: 1}"
    _check(lambda: x[{0: 1}], IndexError, bad)
    _check(lambda: x[0, {0: 1}], IndexError, bad)
    np.testing.assert_array_equal(x[np.array([True, False, True])], np.ones((2, 4)))
