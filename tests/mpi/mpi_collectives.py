"""Run under ``mpiexec -n N`` by tests/test_distributed.py: cross-process collectives of a
multi-process pmap checked against numpy on the global data (which every rank can rebuild).

argv[1]: local devices per process. Prints ``OK <rank>`` at the end."""

import sys

import numpy as np

import fjax

fjax.config.update("jax_num_cpu_devices", int(sys.argv[1]))
# the collectives are checked with the interpreting jit (fast to start); one program below is
# compiled with numba to check that MPI calls run as host steps of compiled code
fjax.config.update("fjax_jit_backend", "interpret")
fjax.distributed.initialize(cluster_detection_method="mpi4py", initialization_timeout=60)

import fjax.numpy as jnp  # noqa: E402
from fjax import lax  # noqa: E402
from fjax.experimental import multihost_utils as mu  # noqa: E402
from fjax.sharding import NamedSharding, PartitionSpec  # noqa: E402
from fjax.sharding import PartitionSpec as P_  # noqa: E402

P, r, L = fjax.process_count(), fjax.process_index(), fjax.local_device_count()
N = P * L  # the global axis size
assert fjax.device_count() == N and [d.id for d in fjax.local_devices()] == list(range(r * L, (r + 1) * L))
assert all(d.process_index == i // L for i, d in enumerate(fjax.devices()))

# the global data: one row block per global device; this process holds rows r*L .. r*L+L-1
G = np.random.default_rng(0).standard_normal((N, N * 2, 3)).astype(np.float32)
mine = G[r * L : (r + 1) * L]
me = slice(r * L, (r + 1) * L)


def close(a, b, rtol=1e-5):
    np.testing.assert_allclose(np.asarray(a), b, rtol=rtol, atol=1e-5)


f = fjax.pmap(
    lambda x: (
        lax.psum(x, "i"),
        lax.pmax(x, "i"),
        lax.pmin(x, "i"),
        lax.pmean(x, "i"),
        lax.all_gather(x, "i"),
        lax.all_gather(x, "i", axis=1, tiled=True),
        lax.axis_index("i"),
        lax.psum(1, "i"),
    ),
    axis_name="i",
)
s, mx, mn, mean, g, gt, idx, n = f(mine)
close(s, np.broadcast_to(G.sum(0), mine.shape))
close(mx, np.broadcast_to(G.max(0), mine.shape))
close(mn, np.broadcast_to(G.min(0), mine.shape))
close(mean, np.broadcast_to(G.mean(0), mine.shape))
close(g, np.broadcast_to(G, (L,) + G.shape))
close(gt, np.broadcast_to(np.concatenate(list(G), axis=1), (L, N * 2, 3 * N)))
assert np.asarray(idx).tolist() == list(range(r * L, (r + 1) * L)) and np.asarray(n).tolist() == [N] * L

# psum_scatter / all_to_all / ppermute over the global axis
sc = fjax.pmap(lambda x: lax.psum_scatter(x, "i", scatter_dimension=0, tiled=True), axis_name="i")(mine)
close(sc, G.sum(0).reshape(N, 2, 3)[me])
sc1 = fjax.pmap(lambda x: lax.psum_scatter(x[:N], "i"), axis_name="i")(mine)  # non-tiled: (3,) per member
close(sc1, G[:, :N].sum(0)[me])
# gradients: all_gather transposes to a Reduce_scatter, psum_scatter to an Allgather
c = np.arange(N, dtype=np.float32)[:, None, None]
gg = fjax.pmap(fjax.grad(lambda x: jnp.sum(lax.all_gather(x, "i") * c)), axis_name="i")(mine)
close(gg, np.broadcast_to(N * c[me], mine.shape))
w = np.arange(2 * 3, dtype=np.float32).reshape(2, 3)
gs = fjax.pmap(fjax.grad(lambda x: jnp.sum(lax.psum_scatter(x, "i", tiled=True) * w)), axis_name="i")(mine)
close(gs, np.broadcast_to(np.tile(w, (N, 1)), mine.shape))
a2a = fjax.pmap(lambda x: lax.all_to_all(x, "i", 0, 1, tiled=True), axis_name="i")(mine)
ref = np.stack([np.concatenate([G[j, 2 * i : 2 * i + 2] for j in range(N)], axis=1) for i in range(N)])
close(a2a, ref[me])
perm = [(i, (i + 1) % N) for i in range(N)]
pp = fjax.pmap(lambda x: lax.ppermute(x, "i", perm), axis_name="i")(mine)
close(pp, np.roll(G, 1, axis=0)[me])
part = [(i, N - 1 - i) for i in range(0, N, 2)]  # a partial permutation: other members get zeros
pp2 = fjax.pmap(lambda x: lax.ppermute(x * 2, "i", part), axis_name="i")(mine)
ref2 = np.zeros_like(G)
for s_, d_ in part:
    ref2[d_] = 2 * G[s_]
close(pp2, ref2[me])
gp = fjax.pmap(fjax.grad(lambda x: jnp.sum(lax.ppermute(x, "i", perm) * jnp.arange(3.0))), axis_name="i")(mine)
close(gp, np.broadcast_to(np.arange(3.0), mine.shape))

# gradients through cross-process collectives (per-device cotangents, as JAX's pmap)
W = np.random.default_rng(1).standard_normal((N, 3)).astype(np.float32)
loss = lambda w, x: jnp.sum(jnp.sin(lax.psum(x @ w, "i")))  # noqa: E731
gw = fjax.pmap(fjax.grad(loss), axis_name="i")(W[me], mine[:, :, :])
tot = np.einsum("jkc,jc->k", G, W)
close(gw, np.stack([N * (G[i].T @ np.cos(tot)) for i in range(N)])[me], rtol=1e-4)
# the data-parallel pattern: pmean of per-device gradients equals the global gradient
w0 = W[0]
dp = fjax.pmap(
    lambda w, x: lax.pmean(fjax.grad(lambda w: jnp.mean((x @ w) ** 2))(w), "i"), axis_name="i", in_axes=(None, 0)
)
glob = fjax.grad(lambda w: jnp.mean((jnp.asarray(G.reshape(-1, 3)) @ w) ** 2))(w0)
close(dp(w0, mine), np.broadcast_to(glob, (L, 3)), rtol=1e-4)

# psum of a pytree across processes: bucketed (the default) and one Allreduce per leaf agree, grads too
tree = {"a": mine, "b": mine[:, :1, :2] * 3, "n": np.arange(L, dtype=np.int32)}
pm = fjax.pmap(lambda t: lax.psum(t, "i"), axis_name="i")
fused = pm(tree)
fjax.config.update("fjax_allreduce_bucket_mb", 0.0)
single = pm(tree)
fjax.config.update("fjax_allreduce_bucket_mb", 1e-5)  # a bucket per leaf or two
tiny = pm(tree)
fjax.config.update("fjax_allreduce_bucket_mb", 25.0)
for k in tree:
    close(fused[k], single[k])
    close(tiny[k], single[k])
close(fused["b"], np.broadcast_to(G[:, :1, :2].sum(0) * 3, (L, 1, 2)))
n_sum = np.asarray(fused["n"])  # device l of every process holds l
assert n_sum.dtype == np.int32 and n_sum.tolist() == [P * L * (L - 1) // 2] * L, n_sum
gb = fjax.pmap(
    fjax.grad(lambda t: jnp.sum(jnp.sin(lax.pmean(t, "i")["a"])) + jnp.sum(lax.pmean(t, "i")["b"] ** 2)), axis_name="i"
)({"a": mine, "b": mine[:, :1, :2]})
close(gb["a"], np.broadcast_to(np.cos(G.mean(0)), mine.shape), rtol=1e-4)
close(gb["b"], np.broadcast_to(2 * G[:, :1, :2].mean(0), (L, 1, 2)), rtol=1e-4)

# compiled with numba in strict mode: the MPI calls are host steps between kernels, also in a scan
fjax.config.update("fjax_jit_backend", "numba")
fjax.config.update("fjax_lowering_strict", True)
h = fjax.pmap(lambda x: jnp.tanh(lax.psum(jnp.sin(x), "i")) * 2.0, axis_name="i")
close(h(mine), np.broadcast_to(np.tanh(np.sin(G).sum(0)) * 2.0, mine.shape), rtol=1e-4)
fjax.config.update("fjax_lowering_strict", False)


def body(c, x):
    return c + lax.psum(x, "i"), lax.pmax(x, "i")


sc2 = fjax.pmap(lambda x: lax.scan(body, jnp.zeros(3), x), axis_name="i")
c, ys = sc2(mine)
close(c, np.broadcast_to(G.sum((0, 1)), (L, 3)), rtol=1e-4)
close(ys, np.broadcast_to(G.max(0), mine.shape))

# host-level utilities
ga = mu.process_allgather(np.array([r, r * 10]))
assert ga.tolist() == [[q, q * 10] for q in range(P)], ga
assert mu.process_allgather(np.arange(2) + 2 * r, tiled=True).tolist() == list(range(2 * P))
b = mu.broadcast_one_to_all(np.full(3, r + 7.0))
assert np.asarray(b).tolist() == [7.0] * 3
mu.sync_global_devices("end")
mu.assert_equal(np.ones(2))
arr = fjax.make_array_from_process_local_data(NamedSharding(fjax.make_mesh((N,), ("b",)), PartitionSpec("b")), mine)
assert arr.shape == G.shape and np.array_equal(np.asarray(arr), G)
assert len(arr.addressable_shards) == L and arr.addressable_shards[0].device == fjax.local_devices()[0]
# host-local <-> global arrays over a 2-d mesh (processes x 1 when L == 1; else processes' devices
# along "b", a replicated "r" axis of size 1): rows split over processes, columns replicated
m2 = fjax.make_mesh((N, 1), ("b", "r"))
loc = {"w": G[me], "c": np.full((2,), 3.0, np.float32)}
glob = mu.host_local_array_to_global_array(loc, m2, {"w": P_("b"), "c": P_()})
assert glob["w"].shape == G.shape and np.array_equal(np.asarray(glob["w"]), G)
assert glob["w"].sharding == NamedSharding(m2, P_("b")) and np.array_equal(np.asarray(glob["c"]), loc["c"])
back = mu.global_array_to_host_local_array(glob, m2, {"w": P_("b"), "c": P_()})
assert np.array_equal(np.asarray(back["w"]), G[me]) and np.array_equal(np.asarray(back["c"]), loc["c"])
# columns sharded over the processes (dimension 1 of the global array)
gcol = mu.host_local_array_to_global_array(G[0][:, None, :].repeat(L, 1), m2, P_(None, "b"))
assert gcol.shape == (2 * N, N, 3) and all(np.array_equal(np.asarray(gcol)[:, j], G[0]) for j in range(N))
try:
    mu.host_local_array_to_global_array(np.zeros((L * (r + 1), 2), np.float32), m2, P_("b"))
except ValueError as e:
    assert "differ in shape" in str(e), e
else:
    raise AssertionError("host-local arrays of different shapes were accepted")
assert mu.reached_preemption_sync_point(1) is False
if r == P - 1:  # a preemption notice to one process: every process stops at the next sync point
    import os
    import signal

    os.kill(os.getpid(), signal.SIGTERM)
assert mu.reached_preemption_sync_point(2) is True

# shard_map over a mesh of every process's devices (the first axis spans the processes)
mesh = fjax.make_mesh((N,), ("b",))
total = fjax.shard_map(lambda b: lax.psum(jnp.sum(jnp.sin(b)), "b"), mesh=mesh, in_specs=P_("b"), out_specs=P_())
close(total(arr), np.sin(G).sum(), rtol=1e-4)
close(fjax.grad(total)(arr), np.cos(G), rtol=1e-4)  # the global gradient, on every process
ident = fjax.shard_map(lambda b: b * 2 + lax.axis_index("b"), mesh=mesh, in_specs=P_("b"), out_specs=P_("b"))
close(ident(arr), 2 * G + np.arange(N)[:, None, None])
close(fjax.grad(lambda x: jnp.sum(ident(x) ** 2))(arr), 2 * 2 * (2 * G + np.arange(N)[:, None, None]), rtol=1e-4)
close(fjax.jit(total)(arr), np.sin(G).sum(), rtol=1e-4)
# gradients taken inside the body (JAX's check_vma semantics): for replicated parameters, summed
# over every instance of every process; the pmean'd loss plus a replicated term gives the global
# mean gradient plus that term's gradient once
w0 = np.array([0.5, -1.0, 2.0], np.float32)
per = np.stack([np.cos(blk @ w0) @ blk / blk.shape[0] for blk in G])  # d mean(sin(blk @ w)) / dw
inner = fjax.shard_map(
    lambda w, b: (
        fjax.grad(lambda w: jnp.mean(jnp.sin(b[0] @ w)))(w),
        fjax.grad(lambda w: lax.pmean(jnp.mean(jnp.sin(b[0] @ w)), "b") + 0.5 * jnp.sum(w * w))(w),
    ),
    mesh=mesh,
    in_specs=(P_(), P_("b")),
    out_specs=(P_(), P_()),
)
g_sum, g_mean = inner(w0, arr)
close(g_sum, per.sum(0), rtol=1e-4)
close(g_mean, per.mean(0) + w0, rtol=1e-4)
# jit with in/out shardings over the global mesh: the numbers of the global computation, results
# laid out on every process's devices
rows = NamedSharding(mesh, PartitionSpec("b"))
jitted = fjax.jit(lambda x: jnp.sin(x) * 2, in_shardings=rows, out_shardings=rows)
out = jitted(arr)
close(out, np.sin(G) * 2)
assert out.sharding == rows and [s.device for s in out.addressable_shards] == fjax.local_devices()
print(f"OK {r}", flush=True)
