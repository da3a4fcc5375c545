"""GPU benchmark: fjax's CUDA backend against JAX on the same GPU, in one process, round-robin.

Workloads (the issue's list), each written once and run by both libraries:

- ``chain``: a transcendental elementwise chain (tanh, exp, sin, log1p, ...) over 4M and 64M float32
  elements, reported also as achieved bandwidth (bytes read + written per second) against a
  device-to-device copy of the same size through cupy (the memory-bandwidth yardstick);
- ``scale``: ``x * 2 + 1`` over 64M float32, bound by memory alone (its bandwidth vs the copy's);
- ``mlp``: the 784-512-512-10 tanh MLP train step (value_and_grad + SGD), batch 256; the same
  in bfloat16 (``mlp bf16``);
- ``rnn``: a 256-unit tanh RNN over 200 steps with ``lax.scan``, loss and gradient;
- ``per_example``: ``vmap(grad(logistic loss))`` over 512 examples of 100 features.

Times are the median of rounds of back-to-back calls, each round ending with a device sync
(``block_until_ready``); the first call (trace + compile + run) is reported separately.

Run on a machine with a GPU: ``python bench/bench_gpu.py [--quick] [--json out.json]``. Without
cupy or a GPU it says so and exits 0. fjax never imports jax; this script does, when installed, to
compare.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def workloads(lib: Any, jnp: Any, lax: Any, quick: bool) -> dict[str, tuple[Callable, tuple]]:
    """name -> (jitted function of ``lib``, numpy arguments)."""
    rng = np.random.default_rng(0)

    def chain(x):
        y = jnp.tanh(x) * jnp.exp(-x * x) + jnp.sin(x) * 0.5
        return y + jnp.log1p(jnp.abs(y)) * jnp.cos(x)

    def mlp_step(params, x, y):
        def loss(p):
            h = x
            for w, b in p[:-1]:
                h = jnp.tanh(h @ w + b)
            w, b = p[-1]
            logits = h @ w + b
            m = lax.stop_gradient(jnp.max(logits, axis=1, keepdims=True))
            lse = jnp.log(jnp.sum(jnp.exp(logits - m), axis=1, keepdims=True)) + m
            return -jnp.mean(jnp.sum(y * (logits - lse), axis=1))

        lval, g = lib.value_and_grad(loss)(params)
        return lval, [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, g)]

    def rnn_loss(w, u, h0, xs):
        def step(h, x):
            h = jnp.tanh(h @ w + x @ u)
            return h, h

        h, hs = lax.scan(step, h0, xs)
        return jnp.sum(hs * hs) + jnp.sum(h)

    def rnn(w, u, h0, xs):
        return lib.value_and_grad(rnn_loss, argnums=(0, 1))(w, u, h0, xs)

    def per_example(w, b, x, y):
        def loss(w, b, x, y):
            z = jnp.dot(x, w) + b
            return jnp.logaddexp(0.0, -y * z)

        return lib.vmap(lib.grad(loss, argnums=(0, 1)), in_axes=(None, None, 0, 0))(w, b, x, y)

    f32 = np.float32
    sizes = (784, 512, 512, 10)
    params = [
        ((rng.standard_normal((m, n)) / np.sqrt(m)).astype(f32), np.zeros(n, f32)) for m, n in zip(sizes, sizes[1:])
    ]
    out: dict[str, tuple[Callable, tuple]] = {
        "chain 4M": (lib.jit(chain), (rng.standard_normal(1 << 22).astype(f32),)),
    }
    if not quick:
        out["chain 64M"] = (lib.jit(chain), (rng.standard_normal(1 << 26).astype(f32),))
        # bound by memory alone: a fused kernel's bandwidth against the copy's
        out["scale 64M"] = (lib.jit(lambda x: x * 2.0 + 1.0), (rng.standard_normal(1 << 26).astype(f32),))
    out["mlp 784-512-512-10 b256"] = (
        lib.jit(mlp_step),
        (
            params,
            rng.standard_normal((256, 784)).astype(f32),
            np.eye(10, dtype=f32)[rng.integers(0, 10, 256)],
        ),
    )
    # the same step in bfloat16 (parameters, data and activations; GEMMs accumulate in float32)
    bf = jnp.bfloat16
    out["mlp bf16 784-512-512-10 b256"] = (
        lib.jit(mlp_step),
        (
            [(np.asarray(w).astype(bf), np.asarray(b).astype(bf)) for w, b in params],
            rng.standard_normal((256, 784)).astype(bf),
            np.eye(10, dtype=f32)[rng.integers(0, 10, 256)].astype(bf),
        ),
    )
    hid, steps = 256, 200
    out["rnn 256x200 grad"] = (
        lib.jit(rnn),
        (
            (rng.standard_normal((hid, hid)) * 0.5 / np.sqrt(hid)).astype(f32),
            (rng.standard_normal((hid, hid)) * 0.5 / np.sqrt(hid)).astype(f32),
            np.zeros(hid, f32),
            rng.standard_normal((steps, hid)).astype(f32),
        ),
    )
    out["per-example grad 512x100"] = (
        lib.jit(per_example),
        (
            (rng.standard_normal(100) * 0.1).astype(f32),
            np.float32(0.0),
            rng.standard_normal((512, 100)).astype(f32),
            np.sign(rng.standard_normal(512)).astype(f32),
        ),
    )

    # complex64 kernels (complex_ops.py) and cuFFT (fft_ops.py): a complex elementwise chain, and
    # the power spectrum of a batch of real signals with its gradient
    def cchain(x, y):
        z = lax.complex(x, y)
        w = jnp.exp(z * 0.1) * jnp.conj(z) / (z + 2.0) + jnp.sqrt(z) * jnp.tanh(z)
        return jnp.sum(jnp.abs(w) ** 2)

    def spectrum(x):
        return lib.value_and_grad(lambda s: jnp.sum(jnp.log1p(jnp.abs(jnp.fft.rfft(s, axis=-1)) ** 2)))(x)

    out["complex chain 4M"] = (
        lib.jit(cchain),
        (rng.standard_normal(1 << 22).astype(f32), rng.standard_normal(1 << 22).astype(f32)),
    )
    out["rfft power spectrum + grad 64x16384"] = (lib.jit(spectrum), (rng.standard_normal((64, 16384)).astype(f32),))
    return out


def _copy_bandwidth(n: int) -> float:
    """Bytes/s of a device-to-device copy of ``n`` float32 (read + written) through cupy."""
    import cupy as cp  # noqa: PLC0415

    a = cp.random.standard_normal(n, dtype=cp.float32)
    b = cp.empty_like(a)
    for _ in range(3):
        cp.copyto(b, a)
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(20):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for _ in range(10):
            cp.copyto(b, a)
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) / 1e3 / 10)
    return 2 * n * 4 / statistics.median(ts)


def _bench_pair(calls: dict[str, Callable[[], Any]], syncs: dict[str, Callable], rounds: int) -> dict[str, float]:
    """Median seconds per call of each callable, rounds interleaved."""
    per: dict[str, float] = {}
    for k, f in calls.items():
        syncs[k](f())
        t = time.perf_counter()
        syncs[k](f())
        per[k] = max(time.perf_counter() - t, 1e-6)
    number = {k: max(1, min(500, int(0.05 / per[k]))) for k in calls}
    ts: dict[str, list] = {k: [] for k in calls}
    for _ in range(rounds):
        for k, f in calls.items():
            t = time.perf_counter()
            for _ in range(number[k]):
                out = f()
            syncs[k](out)
            ts[k].append((time.perf_counter() - t) / number[k])
    return {k: statistics.median(v) for k, v in ts.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default="", help="comma-separated substrings of workload names")
    ap.add_argument(
        "--precision",
        default=None,
        help="jax_default_matmul_precision for both libraries (e.g. float32; default: each one's default, TF32)",
    )
    args = ap.parse_args()

    import fjax  # noqa: PLC0415
    import fjax.numpy as fnp  # noqa: PLC0415
    from fjax import lax as flax  # noqa: PLC0415
    from fjax.backends.cuda import runtime  # noqa: PLC0415

    if not runtime.available():
        print(f"bench_gpu: no GPU ({runtime.unavailable_reason()}); nothing measured")
        return 0
    gdev = fjax.devices("gpu")[0]
    print(f"fjax devices: {fjax.devices()}  kind: {gdev.device_kind}")
    try:
        import jax  # noqa: PLC0415
        import jax.numpy as jjnp  # noqa: PLC0415
        from jax import lax as jlax  # noqa: PLC0415

        jdev = jax.devices("gpu")[0]
        print(f"jax {jax.__version__} devices: {jax.devices()}")
    except Exception as e:  # noqa: BLE001 - no jax, or jax without its CUDA plugin
        print(f"jax on the GPU not available ({type(e).__name__}: {e}); fjax figures only")
        jax = None

    if args.precision:
        fjax.config.update("jax_default_matmul_precision", args.precision)
        if jax is not None:
            jax.config.update("jax_default_matmul_precision", args.precision)
        print(f"matmul precision: {args.precision} (both libraries)")
    results: list[dict] = []
    for n in (1 << 22, 1 << 26):
        bw = _copy_bandwidth(n)
        print(f"copy {n * 4 >> 20} MiB device-to-device: {bw / 1e9:.0f} GB/s (read + write)")
        results.append({"name": f"copy {n * 4 >> 20} MiB", "bandwidth_GBs": bw / 1e9})

    fw = workloads(fjax, fnp, flax, args.quick)
    jw = workloads(jax, jjnp, jlax, args.quick) if jax is not None else {}
    for name, (ff, a) in fw.items():
        if args.only and not any(s in name for s in args.only.split(",")):
            continue
        row: dict[str, Any] = {"name": name}
        try:
            fa = fjax.tree_util.tree_map(lambda v: fjax.device_put(v, gdev), a)
            t = time.perf_counter()
            out = ff(*fa)
            fjax.block_until_ready(out)
            row["fjax_first_s"] = time.perf_counter() - t
            leaves = fjax.tree_util.tree_leaves(out)
            if not all(o.devices() == {gdev} for o in leaves):
                row["note"] = "fjax outputs not on the GPU"
            calls: dict[str, Callable] = {"fjax": lambda: ff(*fa)}
            syncs: dict[str, Callable] = {"fjax": fjax.block_until_ready}
            if name in jw:
                jf = jw[name][0]
                ja = jax.tree_util.tree_map(lambda v: jax.device_put(v, jdev), a)
                t = time.perf_counter()
                jout = jf(*ja)
                jax.block_until_ready(jout)
                row["jax_first_s"] = time.perf_counter() - t
                # same numbers (float tolerance)
                errs = [
                    float(np.max(np.abs(np.asarray(x) - np.asarray(y)) / (1e-3 + np.abs(np.asarray(y)))))
                    for x, y in zip(leaves, jax.tree_util.tree_leaves(jout))
                ]
                row["max_rel_diff_vs_jax"] = max(errs) if errs else 0.0
                calls["jax"] = lambda: jf(*ja)
                syncs["jax"] = jax.block_until_ready
            med = _bench_pair(calls, syncs, args.rounds)
            row["fjax_s"] = med["fjax"]
            row["jax_s"] = med.get("jax")
            if row["jax_s"]:
                row["ratio"] = row["fjax_s"] / row["jax_s"]
            if name.startswith(("chain", "scale")):
                nbytes = 2 * a[0].size * 4
                row["fjax_GBs"] = nbytes / row["fjax_s"] / 1e9
                if row["jax_s"]:
                    row["jax_GBs"] = nbytes / row["jax_s"] / 1e9
        except Exception as e:  # noqa: BLE001 - report and go on to the next workload
            row["error"] = f"{type(e).__name__}: {e}"
            traceback.print_exc()
        results.append(row)
        print(json.dumps(row), flush=True)

    print("\n| workload | fjax | JAX | fjax/JAX | first call fjax / JAX |")
    print("|---|---|---|---|---|")
    for r in results:
        if "fjax_s" in r:
            jx = f"{r['jax_s'] * 1e3:.3f} ms" if r.get("jax_s") else "-"
            ra = f"{r['ratio']:.2f}" if r.get("ratio") else "-"
            first = f"{r['fjax_first_s']:.2f} s / {r.get('jax_first_s', float('nan')):.2f} s"
            print(f"| {r['name']} | {r['fjax_s'] * 1e3:.3f} ms | {jx} | {ra} | {first} |")
        elif "error" in r:
            print(f"| {r['name']} | error: {r['error'][:120]} | | | |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
