"""Data-parallel training of the digits MLP over MPI processes with fjax.

    mpiexec -n 2 python examples/digits_dp.py     # two processes, the global batch split in two
    python examples/digits_dp.py                  # one process (the same program, one shard)

The program is what a JAX user writes for multi-process data parallelism: ``fjax.distributed.
initialize()`` joins the MPI job; every process builds the same model from the same key (and
``broadcast_one_to_all`` makes sure of it); each step, every process takes its slice of the global
minibatch, computes gradients with a ``pmap``'d step, and ``lax.pmean`` averages them over the
``batch`` axis, which spans all processes (an MPI Allreduce inside the compiled step). The
optimizer then applies the same update everywhere.

At the end the script checks, and prints, that
  * the parameters are bit-identical on every rank (``multihost_utils.process_allgather``), and
  * the per-epoch training loss curve equals a single-process run of ``examples/digits_mlp.py``'s
    train step on the same global minibatches, within float32 tolerance.
Exits with status 1 if either check fails.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from _common import base_parser, device_scope, minibatches, parse, set_backend
from digits_mlp import init_model, loss_fn, make_optimizer, make_train_step, prepare_data

import fjax
import fjax.numpy as jnp
from fjax import lax, optim, random
from fjax import tree_util as tu
from fjax.experimental import multihost_utils

# float32 losses of the two runs differ only by the rounding of the summation order of the
# gradient (a mean of shard means against one mean)
LOSS_RTOL = 1e-4


def make_dp_step(opt: optim.GradientTransformation, weight_decay: float) -> Any:
    """``(model, opt_state, x_shard, y_shard) -> (model, opt_state, loss)``, with ``x_shard``
    mapped over this process's devices and gradients averaged over every process's."""

    def step(model: Any, opt_state: Any, x: Any, y: Any) -> tuple:
        loss, grads = fjax.value_and_grad(loss_fn)(model, x, y, weight_decay)
        grads = lax.pmean(grads, "batch")
        loss = lax.pmean(loss, "batch")
        updates, opt_state = opt.update(grads, opt_state, model)
        return optim.apply_updates(model, updates), opt_state, loss

    # the model and optimizer state are replicated: unmapped in, and (being computed from averaged
    # gradients) unmapped out; pmap raises if they were not
    return fjax.pmap(step, axis_name="batch", in_axes=(None, None, 0, 0), out_axes=(None, None, 0))


def global_batches(key: Any, n: int, batch_size: int, epochs: int) -> list[list[np.ndarray]]:
    """The index arrays of every epoch's minibatches (the same on every process)."""
    out = []
    for _ in range(epochs):
        key, sub = random.split(key)
        out.append(minibatches(sub, n, batch_size))
    return out


def train_dp(model: Any, data: tuple, batches: list, args: Any) -> tuple[Any, list[float], float]:
    x_tr, y_tr = data[0], data[1]
    nproc, rank = fjax.process_count(), fjax.process_index()
    ndev = fjax.local_device_count()
    shard = args.batch_size // (nproc * ndev)
    opt = make_optimizer(args.lr, sum(len(b) for b in batches))
    opt_state = opt.init(model)
    step = make_dp_step(opt, args.weight_decay)
    curve = []
    t0 = None
    nsteps = 0
    for epoch_batches in batches:
        losses = []
        for idx in epoch_batches:
            mine = idx[rank * ndev * shard : (rank + 1) * ndev * shard]
            xb = jnp.asarray(x_tr[mine].reshape(ndev, shard, -1))
            yb = jnp.asarray(y_tr[mine].reshape(ndev, shard))
            model, opt_state, loss = step(model, opt_state, xb, yb)
            losses.append(float(loss[0]))
            if t0 is None:
                t0 = time.perf_counter()  # after the first (compiling) step
            else:
                nsteps += 1
        curve.append(float(np.mean(losses)))
    step_ms = 1e3 * (time.perf_counter() - t0) / max(nsteps, 1)
    return model, curve, step_ms


def train_single(model: Any, data: tuple, batches: list, args: Any) -> list[float]:
    x_tr, y_tr = data[0], data[1]
    opt = make_optimizer(args.lr, sum(len(b) for b in batches))
    opt_state = opt.init(model)
    step = make_train_step(opt, args.weight_decay)
    curve = []
    for epoch_batches in batches:
        losses = []
        for idx in epoch_batches:
            model, opt_state, loss = step(model, opt_state, jnp.asarray(x_tr[idx]), jnp.asarray(y_tr[idx]))
            losses.append(float(loss))
        curve.append(float(np.mean(losses)))
    return curve


def main(argv: Sequence[str] | None = None) -> int:
    p = base_parser(__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=64, help="the global minibatch size")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--hidden", type=int, nargs="+", default=[128, 64])
    p.add_argument("--no-reference", action="store_true", help="skip the single-process comparison")
    args = parse(p, argv)
    if fjax.distributed.mpi_launched():
        fjax.distributed.initialize()
    backend = set_backend(args.backend)
    nproc, rank = fjax.process_count(), fjax.process_index()
    say = print if rank == 0 else (lambda *a, **k: None)
    if args.batch_size % (nproc * fjax.local_device_count()):
        say(f"--batch-size {args.batch_size} must be divisible by {nproc * fjax.local_device_count()} devices")
        return 2
    with device_scope(args.device):
        return _train_and_check(args, backend, nproc, rank, say)


def _train_and_check(args: Any, backend: str, nproc: int, rank: int, say: Any) -> int:
    key = random.PRNGKey(args.seed)
    k_split, k_init, k_train = random.split(key, 3)
    data = prepare_data(k_split)
    model = init_model(k_init, args.hidden)
    # every rank built the same model; broadcasting rank 0's makes that a guarantee
    leaves, tree = tu.tree_flatten(model)
    model = tu.tree_unflatten(tree, list(multihost_utils.broadcast_one_to_all(leaves)))
    batches = global_batches(k_train, len(data[0]), args.batch_size, args.epochs)
    say(
        f"fjax {backend if args.device == 'cpu' else 'cuda'} backend: {nproc} process(es) x "
        f"{fjax.local_device_count()} {args.device.upper()} device(s), global batch "
        f"{args.batch_size} ({args.batch_size // (nproc * fjax.local_device_count())} per device), "
        f"{args.epochs} epochs"
    )

    t = time.perf_counter()
    model, curve, step_ms = train_dp(model, data, batches, args)
    say(f"data-parallel training: {time.perf_counter() - t:.1f} s, {step_ms:.2f} ms per step after the first")
    say("data-parallel loss curve:  " + " ".join(f"{v:.5f}" for v in curve))

    ok = True
    flat = np.concatenate([np.asarray(v).ravel() for v in tu.tree_leaves(model)])
    gathered = multihost_utils.process_allgather(flat)
    identical = all(gathered[0].tobytes() == g.tobytes() for g in gathered)
    say(f"parameters bit-identical on all {nproc} ranks: {identical}")
    ok &= identical

    if not args.no_reference:
        if rank == 0:
            ref = train_single(init_model(k_init, args.hidden), data, batches, args)
            say("single-process loss curve: " + " ".join(f"{v:.5f}" for v in ref))
            err = float(np.max(np.abs(np.array(curve) - np.array(ref)) / np.abs(np.array(ref))))
            same = err <= LOSS_RTOL
            say(f"loss curves agree: {same} (max relative difference {err:.2e}, tolerance {LOSS_RTOL:.0e})")
        else:
            same = True
        same = bool(multihost_utils.broadcast_one_to_all(np.array(same))) if nproc > 1 else same
        ok &= same
    multihost_utils.sync_global_devices("digits_dp done")
    if not ok:
        print(f"FAILED on rank {rank}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
