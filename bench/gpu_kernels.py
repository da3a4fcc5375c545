"""Where the time of a small jitted GPU call goes, fjax beside JAX: host time per call (calls
enqueued back to back, no sync), time per call with a sync, and the device's kernels per call
(names, counts, microseconds) read through CUPTI by ``torch.profiler`` (which sees every
library's kernels in the process, CUDA-graph nodes included). Needs cupy, a GPU, and for the
kernel table PyTorch with CUDA; JAX with CUDA for its side.

Run: ``python bench/gpu_kernels.py [--only mlp,rnn] [--calls 200] [--top 12]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _host_and_total(f: Callable[[], Any], sync: Callable, calls: int) -> tuple[float, float]:
    """(host seconds per call with no sync, seconds per call including the final sync); best of 5."""
    host, total = [], []
    for _ in range(5):
        sync(f())
        t = time.perf_counter()
        for _ in range(calls):
            out = f()
        t1 = time.perf_counter()
        sync(out)
        t2 = time.perf_counter()
        host.append((t1 - t) / calls)
        total.append((t2 - t) / calls)
    return min(host), min(total)


def _kernels(f: Callable[[], Any], sync: Callable, calls: int) -> dict[str, list[float]] | str:
    """kernel name -> [launches per call, device microseconds per call], via torch.profiler."""
    try:
        import torch  # noqa: PLC0415
        from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415
    except Exception as e:  # noqa: BLE001
        return f"no torch.profiler ({type(e).__name__}: {e})"
    torch.cuda.init()
    sync(f())
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            out = f()
        sync(out)
    agg: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for ev in prof.events():
        dev_t = getattr(ev, "device_time", None)
        if dev_t is None:
            dev_t = getattr(ev, "cuda_time", 0.0)
        if not dev_t:
            continue
        a = agg[ev.name]
        a[0] += 1.0 / calls
        a[1] += dev_t / calls
    return dict(agg)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="mlp,rnn,per-example")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--top", type=int, default=14)
    args = ap.parse_args()
    import fjax  # noqa: PLC0415
    import fjax.numpy as fnp  # noqa: PLC0415
    from fjax import lax as flax  # noqa: PLC0415
    from fjax.backends.cuda import runtime  # noqa: PLC0415

    if not runtime.available():
        print("gpu_kernels: no GPU; nothing measured")
        return 0
    from bench_gpu import workloads  # noqa: PLC0415

    libs: dict[str, Any] = {"fjax": (fjax, fnp, flax)}
    try:
        import jax  # noqa: PLC0415
        import jax.numpy as jjnp  # noqa: PLC0415
        from jax import lax as jlax  # noqa: PLC0415

        libs["jax"] = (jax, jjnp, jlax)
    except Exception as e:  # noqa: BLE001
        print(f"no JAX ({e}); fjax only")
    for wname in args.only.split(","):
        for lname, (lib, np_, lax_) in libs.items():
            ws = workloads(lib, np_, lax_, True)
            name = next(k for k in ws if wname in k)
            f, a = ws[name]
            dev = lib.devices("gpu")[0]
            a = lib.tree_util.tree_map(lambda v, lib=lib, dev=dev: lib.device_put(v, dev), a)

            def call(f=f, a=a):
                return f(*a)

            for _ in range(10):
                lib.block_until_ready(call())
            host, total = _host_and_total(call, lib.block_until_ready, args.calls)
            ks = _kernels(call, lib.block_until_ready, args.calls)
            print(f"\n== {name} [{lname}]: host {host * 1e6:.1f} us/call (no sync), {total * 1e6:.1f} us/call (sync)")
            if isinstance(ks, str):
                print("  ", ks)
                continue
            dev_us = sum(v[1] for v in ks.values())
            launches = sum(v[0] for v in ks.values())
            print(f"   device: {launches:.1f} kernels/copies per call, {dev_us:.1f} us busy per call")
            for k, (n, us) in sorted(ks.items(), key=lambda kv: -kv[1][1])[: args.top]:
                print(f"   {us:8.2f} us  x{n:4.1f}  {k[:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
