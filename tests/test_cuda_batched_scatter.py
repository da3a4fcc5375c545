"""Scatters with operand batching dims on the CUDA backend (``host_ops._update``): what ``vmap``
makes of an indexed update or of a gather's transpose (per-example cross-entropy gradients under
vmap or pmap), at top level and inside scan bodies. Run on the cupy stand-in against the CPU."""

from __future__ import annotations

import _standin_gpu  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed():
        yield


def _xent_grad(logits, labels):
    def loss(l, y):
        return -jnp.mean(jnp.take_along_axis(fjax.nn.log_softmax(l), y[:, None], axis=-1))

    return fjax.vmap(fjax.grad(loss))(logits, labels)


def _scan_body(c, v):
    upd = fjax.vmap(lambda a, j: a.at[j].add(2.0))(v[0], v[1])
    return c + jnp.sum(upd * (1.0 + jnp.arange(upd.shape[0]))[:, None]), 0  # rows weighted: a row mix-up shows


CASES = {
    "xent_grad": (_xent_grad, "f"),
    "add": (fjax.vmap(lambda x, i: x.at[i].add(1.5)), "f"),
    "set": (fjax.vmap(lambda x, i: x.at[i].set(-2.0)), "f"),
    "max_int": (fjax.vmap(lambda x, i: x.at[i].max(3)), "i"),
    "add_2d": (fjax.vmap(lambda x, i: x.at[i, 1:3].add(jnp.ones((i.shape[0], 2), x.dtype))), "f"),
    "scan": (lambda x, i: lax.scan(_scan_body, 0.0, (x, i))[0], "f"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_batched_scatter_matches_the_cpu(name, seed):
    fn, kind = CASES[name]
    rng = np.random.default_rng(seed)
    b, n, m = rng.integers(1, 5), rng.integers(1, 6), rng.integers(3, 8)
    if name == "xent_grad":
        args = (rng.standard_normal((b, n, m)).astype(np.float32), rng.integers(0, m, (b, n)).astype(np.int32))
    elif name == "scan":
        args = (rng.standard_normal((3, b, m)).astype(np.float32), rng.integers(0, m, (3, b, n)).astype(np.int32))
    elif name == "add_2d":
        args = (rng.standard_normal((b, m, 4)).astype(np.float32), rng.integers(0, m, (b, n)).astype(np.int32))
    else:
        x = rng.standard_normal((b, m)) * 4
        args = (x.astype(np.float32 if kind == "f" else np.int32), rng.integers(0, m, (b, n)).astype(np.int32))
    got, want = _standin_gpu.both(fn, *args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
