"""Run under ``mpiexec -n 2`` by tests/test_distributed.py: a multi-process pmap over GPU arrays on
the cupy stand-in (one stand-in GPU per process, kernels run by the CUDA emulator). The
collectives across processes are MPI calls on host copies (``fjax/backends/cuda/callbacks.py``:
the MPI from PyPI is not CUDA-aware); everything else runs as kernels. Checked against numpy on the
global data and against the same step on the CPU. Prints ``OK <rank>`` at the end."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import fjax  # noqa: E402

fjax.distributed.initialize(cluster_detection_method="mpi4py", initialization_timeout=60)

import _standin_gpu  # noqa: E402

import fjax.numpy as jnp  # noqa: E402
from fjax import lax  # noqa: E402

P, r = fjax.process_count(), fjax.process_index()
G = np.random.default_rng(0).standard_normal((P, 6, 5)).astype(np.float32)
LAB = np.random.default_rng(1).integers(0, 5, (P, 6)).astype(np.int32)


def step(w, x, y):
    """A data-parallel gradient step: per-example cross-entropy through take_along_axis (its
    gradient is a scatter-add with batching dims under pmap), gradients averaged over processes."""

    def loss(w):
        logp = fjax.nn.log_softmax(jnp.tanh(x @ w))
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    val, g = fjax.value_and_grad(loss)(w)
    g = lax.pmean(g, "b")
    return w - 0.5 * g, lax.pmean(val, "b"), lax.all_gather(val, "b"), lax.psum(x, "b")


f = fjax.pmap(step, axis_name="b", in_axes=(None, 0, 0), out_axes=(None, 0, 0, 0))
w0 = np.eye(5, dtype=np.float32)
res = {}
with _standin_gpu.installed():
    gpu = fjax.local_devices()[0]
    assert gpu.platform == "gpu", gpu
    args = [fjax.device_put(a, gpu) for a in (w0, G[r : r + 1], LAB[r : r + 1])]
    for _ in range(2):  # a second call: the plan (with its host-side MPI steps) runs again
        res["gpu"] = f(*args)
    assert all(next(iter(a.devices())).platform == "gpu" for a in fjax.tree_util.tree_leaves(res["gpu"]))
    res["gpu"] = [np.asarray(a) for a in res["gpu"]]
fjax.config.update("jax_platforms", "cpu")
res["cpu"] = [np.asarray(a) for a in f(w0, G[r : r + 1], LAB[r : r + 1])]
for a, b in zip(res["gpu"], res["cpu"], strict=True):
    np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
np.testing.assert_allclose(res["gpu"][3][0], G.sum(0), rtol=1e-5, atol=1e-6)
assert not np.allclose(res["gpu"][0], w0)
print(f"OK {r}", flush=True)
