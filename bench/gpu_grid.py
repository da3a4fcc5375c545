"""How the grid size of a grid-stride elementwise kernel moves its bandwidth on this GPU.

``x * 2 + 1`` over float32 with float4 loads (the shape fjax's CUDA renderer gives elementwise
nests), 256 threads a block, at several grid sizes: whole waves of resident blocks (SMs x 8), the
renderer's cap, and one vector per thread. Times are CUDA-event medians; bandwidth counts read +
write. Usage: python bench/gpu_grid.py [--n 67108864]"""

from __future__ import annotations

import argparse

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void __launch_bounds__(256) scale(const float* __restrict__ x,
                                                        float* __restrict__ y, long long nv) {
  for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < nv; i += (long long)256 * gridDim.x) {
    float4 v = reinterpret_cast<const float4*>(x)[i];
    reinterpret_cast<float4*>(y)[i] = make_float4(v.x * 2.0f + 1.0f, v.y * 2.0f + 1.0f,
                                                  v.z * 2.0f + 1.0f, v.w * 2.0f + 1.0f);
  }
}
"""


def _time(fn, reps: int = 60) -> float:
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(5):
        fn()
    ts = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ts.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
    return float(np.median(ts))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="*", default=[1 << 22, 1 << 24, 1 << 26])
    args = ap.parse_args()
    k = cp.RawModule(code=SRC).get_function("scale")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    print(f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}: {sms} SMs")
    for n in args.n:
        x = cp.random.standard_normal(n, dtype=cp.float32)
        y = cp.empty_like(x)
        nv = n // 4
        t = _time(lambda: y.__setitem__(slice(None), x))
        print(f"n={n}: copy {2 * 4 * n / t / 1e9:.0f} GB/s")
        full = -(-nv // 256)
        grids = sorted({sms * 8, sms * 16, sms * 32, 4096, 8192, 16384, full})
        for g in grids:
            if g > full:
                continue
            t = _time(lambda: k((g,), (256,), (x, y, np.int64(nv))))
            print(f"  grid {g:>7} ({g / (sms * 8):6.2f} waves): {t * 1e6:8.1f} us  {2 * 4 * n / t / 1e9:6.0f} GB/s")
        assert cp.allclose(y, x * 2 + 1)


if __name__ == "__main__":
    main()
