"""Where the host time of a small jitted GPU call goes: cProfile over repeated calls of the
per-example-gradient workload of bench_gpu.py (the fjax side only). Needs cupy and a GPU.
Run: ``python bench/gpu_profile.py [--calls 2000] [--workload NAME]``."""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--workload", default="per-example grad 512x100")
    args = ap.parse_args()
    import fjax  # noqa: PLC0415
    import fjax.numpy as jnp  # noqa: PLC0415
    from fjax import lax  # noqa: PLC0415
    from fjax.backends.cuda import runtime  # noqa: PLC0415

    if not runtime.available():
        print("gpu_profile: no GPU; nothing measured")
        return 0
    from bench_gpu import workloads  # noqa: PLC0415

    f, a = workloads(fjax, jnp, lax, True)[args.workload]
    g = fjax.devices("gpu")[0]
    a = fjax.tree_util.tree_map(lambda v: fjax.device_put(v, g), a)
    for _ in range(20):
        fjax.block_until_ready(f(*a))
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(args.calls):
        out = f(*a)
    fjax.block_until_ready(out)
    pr.disable()
    st = pstats.Stats(pr)
    print(f"{args.workload}: {st.total_tt / args.calls * 1e6:.1f} us of host time per call (profiled)")
    st.sort_stats("tottime").print_stats(18)
    return 0


if __name__ == "__main__":
    sys.exit(main())
