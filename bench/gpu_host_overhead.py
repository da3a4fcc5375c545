"""The host-side work of one jitted GPU call, measured WITHOUT a GPU.

fjax's CUDA runtime, plan executor, CUDA-graph replay and GPU placement run against
``fjax.backends.cuda.cupy_standin`` in its no-op mode: a cupy stand-in whose kernels, copies and
GEMMs do nothing. What this
measures is fjax's own Python per call (dispatch, placement, the executor, graph replay, GEMM
argument setup) plus numpy-priced buffer bookkeeping, and how many cupy operations a call makes
(each costs a few microseconds of cupy's own host time on a real GPU, not included). On a real
GPU, ``bench/gpu_profile.py`` profiles the same calls.

Run: ``python bench/gpu_host_overhead.py [--calls 2000] [--profile NAME]``.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--profile", default="", help="a workload to profile (cProfile, top functions)")
    ap.add_argument("--only", default="", help="comma-separated substrings of workload names")
    args = ap.parse_args()
    from fjax.backends.cuda import cupy_standin as standin  # noqa: PLC0415

    standin.install(compute=False)
    from bench_gpu import workloads  # noqa: PLC0415

    import fjax  # noqa: PLC0415
    import fjax.numpy as jnp  # noqa: PLC0415
    from fjax import lax  # noqa: PLC0415

    gpu = fjax.devices("gpu")[0]
    print(f"device: {gpu} ({gpu.device_kind}); kernels, copies and GEMMs are no-ops")
    print(f"{'workload':<28} {'host us/call':>12}   cupy operations per call")
    for name, (f, a) in workloads(fjax, jnp, lax, True).items():
        if args.only and not any(s in name for s in args.only.split(",")):
            continue
        a = fjax.tree_util.tree_map(lambda v: fjax.device_put(v, gpu), a)
        for _ in range(5):  # launch by launch, capture, replays
            out = f(*a)
        n = args.calls if "rnn" not in name else max(20, args.calls // 50)
        best = float("inf")
        for _ in range(5):
            standin.calls.clear()
            t0 = time.perf_counter()
            for _ in range(n):
                out = f(*a)
            best = min(best, (time.perf_counter() - t0) / n)
        counts = ", ".join(f"{k} {v / n:g}" for k, v in sorted(standin.calls.items()))
        print(f"{name:<28} {best * 1e6:12.1f}   {counts}")
        if args.profile and args.profile in name:
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(n):
                out = f(*a)
            pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(25)
    del out
    return 0


if __name__ == "__main__":
    sys.exit(main())
