"""The fjax Array and tracers as numpy-style arrays: repr, immutability, host conversion,
operators (including reflected ones and numpy operands), methods and properties."""

import operator

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp


def test_repr_and_str():
    assert repr(jnp.array([1.0, 2.0])) == "Array([1., 2.], dtype=float32)"
    assert repr(jnp.sin(0.0) + 2.5) == "Array(2.5, dtype=float32, weak_type=True)"
    assert repr(jnp.zeros((2, 0))) == "Array([], shape=(2, 0), dtype=float32)"
    assert repr(jnp.arange(3)) == "Array([0, 1, 2], dtype=int32)"
    assert str(jnp.arange(3)) == "[0 1 2]"


def test_immutability():
    x = jnp.arange(3.0)
    with pytest.raises(TypeError, match=r"\.at"):
        x[0] = 1.0
    with pytest.raises(TypeError):
        hash(x)
    v = np.asarray(x)
    assert not v.flags.writeable


def test_host_conversion():
    x = jnp.arange(4.0)
    v = np.asarray(x)
    assert np.shares_memory(v, np.asarray(x))  # zero-copy
    assert x.block_until_ready() is x
    assert jnp.array(3.5).item() == 3.5 and isinstance(jnp.array(3).item(), int)
    assert float(jnp.array(2.5)) == 2.5 and int(jnp.array(7)) == 7 and complex(jnp.array(1.0)) == 1 + 0j
    assert bool(jnp.array(True))
    assert [float(r) for r in x] == [0.0, 1.0, 2.0, 3.0]
    assert [r.shape for r in jnp.ones((2, 3))] == [(3,), (3,)]
    assert len(jnp.ones((5, 2))) == 5
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert operator.index(jnp.array(3)) == 3
    with pytest.raises(TypeError):
        len(jnp.array(1.0))
    with pytest.raises(TypeError):
        iter(jnp.array(1.0))
    assert np.asarray(x, dtype=np.float64).dtype == np.float64


def test_operators_and_reflected():
    x = jnp.array([1.0, 2.0, 4.0])
    xn = np.asarray(x)
    i = jnp.array([5, -3, 7])
    i_n = np.asarray(i)
    cases = [
        (x + 1, xn + 1),
        (1 + x, 1 + xn),
        (x - 1, xn - 1),
        (1 - x, 1 - xn),
        (x * 2, xn * 2),
        (2.0 * x, 2.0 * xn),
        (x / 2, xn / 2),
        (2 / x, 2 / xn),
        (x // 3, xn // 3),
        (7 // x, 7 // xn),
        (x % 3, xn % 3),
        (7 % x, 7 % xn),
        (x**2, xn**2),
        (2**x, 2**xn),
        (-x, -xn),
        (+x, +xn),
        (abs(-x), np.abs(-xn)),
        (i & 3, i_n & 3),
        (3 | i, 3 | i_n),
        (i ^ 1, i_n ^ 1),
        (~i, ~i_n),
        (i << 1, i_n << 1),
        (i >> 1, i_n >> 1),
        (1 << jnp.array(3), 8),
        (i // 2, i_n // 2),
        (i % 4, i_n % 4),
    ]
    for got, want in cases:
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    q, r = divmod(i, 4)
    np.testing.assert_array_equal(q, i_n // 4)
    np.testing.assert_array_equal(r, i_n % 4)
    assert (x * 2).dtype == np.float32 and (2.0 * x).dtype == np.float32
    assert (i * 2.5).dtype == np.float32


def test_comparisons_return_arrays():
    x = jnp.array([1.0, 2.0, 3.0])
    for got, want in [
        (x == 2, [False, True, False]),
        (x != 2, [True, False, True]),
        (x < 2, [True, False, False]),
        (x <= 2, [True, True, False]),
        (x > 2, [False, False, True]),
        (x >= 2, [False, True, True]),
        (2 < x, [False, False, True]),
    ]:
        assert isinstance(got, fjax.Array) and got.dtype == np.bool_
        np.testing.assert_array_equal(got, want)


def test_numpy_on_the_left():
    x = jnp.arange(3.0)
    for out in (np.ones(3) + x, np.ones(3, np.float32) * x, np.float32(2) * x, np.ones(3) > x):
        assert isinstance(out, fjax.Array)
    assert (np.ones(3) + x).dtype == np.float32
    np.testing.assert_allclose(np.ones(3) - x, [1, 0, -1])


def test_unknown_operand_types():
    x = jnp.arange(3.0)
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        x + [1, 2, 3]
    assert (x == "a") is False


def test_methods():
    a = jnp.arange(12.0).reshape(3, 4)
    an = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(a.sum(), an.sum())
    np.testing.assert_allclose(a.sum(axis=0), an.sum(axis=0))
    np.testing.assert_allclose(a.mean(axis=1, keepdims=True), an.mean(axis=1, keepdims=True))
    np.testing.assert_allclose(a.max(0), an.max(0))
    np.testing.assert_allclose(a.min(), an.min())
    np.testing.assert_allclose((a + 1).prod(axis=1), (an + 1).prod(axis=1))
    np.testing.assert_allclose(a.std(), an.std(), rtol=1e-6)
    np.testing.assert_allclose(a.var(ddof=1), an.var(ddof=1), rtol=1e-6)
    assert bool(a.any()) and not bool(a.all())
    np.testing.assert_array_equal(a.argmax(axis=1), an.argmax(axis=1))
    np.testing.assert_array_equal(a.argmin(), an.argmin())
    np.testing.assert_allclose(a.cumsum(axis=1), an.cumsum(axis=1))
    np.testing.assert_allclose((a + 1).cumprod(), (an + 1).cumprod())
    assert a.reshape(4, 3).shape == (4, 3) and a.reshape((2, -1)).shape == (2, 6) and a.reshape(-1).shape == (12,)
    np.testing.assert_array_equal(a.reshape(2, 6), an.reshape(2, 6))
    np.testing.assert_array_equal(a.T, an.T)
    np.testing.assert_array_equal(a.transpose(), an.transpose())
    b = jnp.ones((2, 3, 4))
    assert b.transpose(1, 0, 2).shape == (3, 2, 4) and b.transpose((2, 0, 1)).shape == (4, 2, 3)
    assert b.mT.shape == (2, 4, 3) and b.swapaxes(0, 2).shape == (4, 3, 2)
    np.testing.assert_array_equal(a.ravel(), an.ravel())
    np.testing.assert_array_equal(a.flatten(), an.flatten())
    assert jnp.ones((1, 3, 1)).squeeze().shape == (3,) and jnp.ones((1, 3, 1)).squeeze(0).shape == (3, 1)
    with pytest.raises(ValueError):
        jnp.ones((1, 3)).squeeze(1)
    assert a.astype(jnp.int32).dtype == np.int32 and a.astype("float16").dtype == np.float16
    assert a.astype(np.float64).dtype == np.float32
    np.testing.assert_array_equal(a.clip(2, 5), an.clip(2, 5))
    np.testing.assert_array_equal((a / 3).round(1), (an / 3).round(1))
    assert round(jnp.array(2.6)) == 3
    z = jnp.array([1 + 2j, 3 - 1j], dtype=jnp.complex64)
    np.testing.assert_array_equal(z.real, [1, 3])
    np.testing.assert_array_equal(z.imag, [2, -1])
    np.testing.assert_array_equal(z.conj(), np.conj(np.asarray(z)))
    np.testing.assert_array_equal(a.real, an)
    np.testing.assert_array_equal(a.imag, np.zeros_like(an))
    np.testing.assert_allclose(a.ptp(axis=0), np.ptp(an, axis=0))
    np.testing.assert_array_equal(jnp.array([0, 3, 0, 4]).nonzero()[0], [1, 3])
    assert jnp.array(3.5).item() == 3.5


def test_indexing_matmul_and_at():
    a = jnp.arange(12.0).reshape(3, 4)
    an = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(a[1], an[1])
    np.testing.assert_array_equal(a[:, 1:3], an[:, 1:3])
    np.testing.assert_array_equal(a[..., -1], an[..., -1])
    np.testing.assert_allclose(a @ a.T, an @ an.T)
    np.testing.assert_allclose(an @ a.T, an @ an.T)
    np.testing.assert_allclose(a.dot(a.T), an.dot(an.T))
    b = a.at[0, 0].set(100.0)
    assert float(b[0, 0]) == 100.0 and float(a[0, 0]) == 0.0


def test_tracer_operators_under_every_transform():
    def f(x):
        y = (2.0 * x + 1) ** 2 / (1 + x) - x // 2 + x % 3 - (-x) + abs(x)
        y = y + (x > 1) * 1.0 + (x == 2).astype(jnp.float32)
        return (y.reshape(-1).sum() + y.T.mean() + y.max() + x.std() + x[0] + (x @ x)).astype(jnp.float32)

    x = jnp.array([1.3, 2.6, 3.7])  # away from the jumps of //, % and >
    ref = f(x)
    np.testing.assert_allclose(fjax.jit(f)(x), ref, rtol=1e-5)
    np.testing.assert_allclose(fjax.vmap(f)(jnp.stack([x, x])), [ref, ref], rtol=1e-5)
    g = fjax.grad(f)(x)
    eps = 1e-2
    fd = [(f(x.at[i].add(eps)) - f(x.at[i].add(-eps))) / (2 * eps) for i in range(3)]
    np.testing.assert_allclose(g, fd, rtol=2e-2, atol=2e-2)
    _, t = fjax.jvp(f, (x,), (jnp.ones(3),))
    np.testing.assert_allclose(t, np.sum(fd), rtol=2e-2)
    np.testing.assert_allclose(fjax.grad(lambda v: (2**v).sum())(x), np.log(2) * 2 ** np.asarray(x), rtol=1e-5)


def test_tracer_item_and_bool_errors():
    with pytest.raises(fjax.ConcretizationTypeError):
        fjax.jit(lambda x: x.item())(1.0)
    with pytest.raises(fjax.TracerBoolConversionError):
        fjax.jit(lambda x: 1.0 if x > 0 else 0.0)(1.0)
    with pytest.raises(TypeError, match=r"\.at"):
        fjax.jit(lambda x: x.__setitem__(0, 1.0))(jnp.ones(3))
