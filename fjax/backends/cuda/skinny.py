"""Small-output GEMMs as one fjax kernel instead of cuBLAS: a warp per output element, its 32 lanes
striding the contraction and combining with warp shuffles.

On the H100 (2026-11-27, ``bench/gpu_kernels.py``) cuBLAS ran the MLP step's two GEMMs with a
10-wide output (the logits, ``h2 @ W3``, and ``dW3 = h2^T @ g``) as split-K GEMMs of 5-8 us each
plus a 4 us reduction kernel, about 21 us of the step's 69 us on the device; XLA's fused Triton GEMMs
took 3-4 us each. A product qualifies when its output has at most ``MAX_OUT`` elements and its
contraction at least ``MIN_K`` (so every lane has work): float32/float64 operands of the output's
dtype, no operand permutation. The sums are in the output dtype, as cuBLAS's float32 compute, with
no TF32 rounding of the operands (at least as accurate as any ``precision``).
``FJAX_CUDA_SKINNY=0`` sends every GEMM to cuBLAS."""

from __future__ import annotations

import os

import numpy as np

from fjax.backends.cuda.ops import ctype
from fjax.backends.cuda.render import CudaKernel

__all__ = ["MAX_OUT", "MIN_K", "applies", "enabled", "kernel"]

MAX_OUT = 8192  # output elements (batches included): a warp each, 8 per block, up to 1024 blocks
MIN_K = 128  # contraction length: 4 or more products per lane
BLOCK = 256


def enabled() -> bool:
    """``FJAX_CUDA_SKINNY``, read when a plan is built."""
    return os.environ.get("FJAX_CUDA_SKINNY", "0") != "0"


def applies(dims: tuple, lhs_perm: object, rhs_perm: object, dtypes: tuple) -> bool:
    """Whether a ``Dot`` of ``dims`` = (nb, nl, nk, nr) with these operand/output dtypes runs here."""
    nb, nl, nk, nr = dims
    d = np.dtype(dtypes[-1])
    return (
        enabled()
        and lhs_perm is None
        and rhs_perm is None
        and d in (np.dtype(np.float32), np.dtype(np.float64))
        and all(np.dtype(t) == d for t in dtypes)
        and 0 < nb * nl * nr <= MAX_OUT
        and nk >= MIN_K
    )


_DROP = {"tf32": 13, "f16": 13, "bf16": 16}  # low mantissa bits a fast compute mode drops (emulate)


def kernel(
    dims: tuple, lhs_t: bool, rhs_t: bool, dtype: np.dtype, compute: str = ""
) -> tuple[CudaKernel, tuple, tuple]:
    """The kernel computing ``out[b, l, r] = sum_k lhs[b, l, k] * rhs[b, k, r]`` (``lhs_t``: lhs
    stored (b, k, l); ``rhs_t``: rhs stored (b, r, k)), its grid and block. ``compute`` ("tf32",
    "bf16", "f16": ``records.gemm_compute``) rounds float32 operands as cuBLAS's fast modes read
    them, so a product gives the same numbers on either path (up to the order of the sums)."""
    nb, nl, nk, nr = dims
    T = ctype(np.dtype(dtype))
    drop = _DROP.get(compute) if np.dtype(dtype) == np.float32 else None
    x, y = (
        (f"fj_keep_bits(pa[k * {{a}}], {drop}u)", f"fj_keep_bits(pb[k * {{b}}], {drop}u)")
        if drop
        else ("pa[k * {a}]", "pb[k * {b}]")
    )
    n = nb * nl * nr
    a_off = "l" if lhs_t else f"l * {nk}LL"
    a_step = f"{nl}LL" if lhs_t else "1LL"
    b_off = f"r * {nk}LL" if rhs_t else "r"
    b_step = "1LL" if rhs_t else f"{nr}LL"
    body = (
        f"// skinny GEMM: {nb} x ({nl}, {nk}){'^T' if lhs_t else ''} @ ({nk}, {nr}){'^T' if rhs_t else ''} "
        f"{np.dtype(dtype).name}{' ' + compute if drop else ''}, a warp per output element\n"
        f'extern "C" __global__ void __launch_bounds__({BLOCK}) __NAME__(const {T}* __restrict__ a, '
        f"const {T}* __restrict__ b, {T}* __restrict__ o) {{\n"
        "  const int lane = threadIdx.x & 31;\n"
        f"  for (long long w = ((long long)blockIdx.x * {BLOCK} + threadIdx.x) >> 5; w < {n}LL;\n"
        f"       w += ((long long)gridDim.x * {BLOCK}) >> 5) {{\n"
        f"    const long long r = w % {nr}LL, q = w / {nr}LL, l = q % {nl}LL, bt = q / {nl}LL;\n"
        f"    const {T}* pa = a + bt * {nl * nk}LL + {a_off};\n"
        f"    const {T}* pb = b + bt * {nk * nr}LL + {b_off};\n"
        f"    {T} acc = ({T})0;\n"
        f"    for (long long k = lane; k < {nk}LL; k += 32) acc += {x.format(a=a_step)} * {y.format(b=b_step)};\n"
        "    for (int s = 16; s > 0; s >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, s);\n"
        "    if (lane == 0) o[w] = acc;\n"
        "  }\n}\n"
    )
    warps_per_block = BLOCK // 32
    grid = (max(1, min(1024, -(-n // warps_per_block))), 1, 1)
    return CudaKernel("mm", body), grid, (BLOCK, 1, 1)
