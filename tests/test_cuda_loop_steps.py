"""Host-step primitives (the CPU backend's numpy/numba host steps: sort, cumulative ops, argmax,
convolution, special functions, factorizations, ...) inside scan/while/cond bodies on the CUDA
backend: each is kernels (and cuBLAS/cuFFT calls) of the body's plan, so the loop stays on the
device (``backend.LOOP_OPS``). Run through ``device_put`` + ``jit`` on the cupy stand-in (kernels
compiled by g++ against ``cuda_emu.h``) against the CPU backend."""

from __future__ import annotations

import _standin_gpu  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed():
        yield


def _scan(body_op):
    return lambda a: lax.scan(lambda c, v: (c + body_op(v), c), jnp.zeros(a.shape[1], a.dtype), a)


CASES = {
    "cumsum": _scan(lambda v: jnp.cumsum(v)),
    "cumprod_reverse": _scan(lambda v: lax.cumprod(v * 0.5, reverse=True)),
    "sort": _scan(lambda v: jnp.sort(v)),
    "argmax": lambda a: lax.scan(lambda c, v: (c + jnp.argmax(v), c), 0, a),
    "top_k": _scan(lambda v: jnp.concatenate([lax.top_k(v, 3)[0], jnp.zeros(5, v.dtype)])),
    "digamma": _scan(lambda v: lax.digamma(jnp.abs(v) + 1)),
    "conv": _scan(lambda v: jnp.convolve(v, v, mode="same", precision="highest")),
    "cholesky": _scan(lambda v: jnp.linalg.cholesky(jnp.outer(v, v) + jnp.eye(8)).sum(0)),
    "solve": _scan(lambda v: jnp.linalg.solve(jnp.outer(v, v) + 3 * jnp.eye(8), v)),
    "fori_sort": lambda a: lax.fori_loop(0, 3, lambda i, c: jnp.sort(c * -1.0) + a[i], a[0]),
    "while_cumsum": lambda a: lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.cumsum(c[1]) * 0.1), (0, a[0])
    ),
    "cond_argsort": lambda a: lax.cond(a[0, 0] > 0, lambda v: jnp.argsort(v[1]), lambda v: jnp.argsort(-v[2]), a),
    "scan_grad_sort": lambda a: fjax.grad(lambda t: jnp.sum(_scan(lambda v: jnp.sort(v) * v)(t)[1] ** 2))(a),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_host_steps_in_loop_bodies_run_on_the_device(name):
    x = np.random.default_rng(len(name)).standard_normal((5, 8)).astype(np.float32)
    got, want = _standin_gpu.both(CASES[name], x)
    for g, w in zip(fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


def test_a_primitive_with_no_cuda_form_in_a_loop_body_names_itself():
    x = fjax.device_put(np.eye(4, dtype=np.float32), fjax.devices("gpu")[0])
    f = fjax.jit(lambda a: lax.scan(lambda c, v: (c + fjax.scipy.linalg.schur(a + c)[0][0], v), jnp.zeros(4), a))
    with pytest.raises(NotImplementedError, match="schur"):
        f(x)
