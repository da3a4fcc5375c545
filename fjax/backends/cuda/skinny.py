"""Small-output GEMMs as fjax's own kernels instead of cuBLAS: a warp per output element, its 32
lanes striding the contraction and combining with warp shuffles; when ``lhs`` is used transposed
(a weight gradient ``h^T @ g``), a block per 32 neighbouring outputs (``_columns_kernel``).

A product qualifies when its output has at most ``MAX_OUT`` elements and its contraction at least
``MIN_K`` (so every lane has work): float32/float64 operands of the output's dtype, no operand
permutation. Sums are in the output dtype, as cuBLAS's float32 compute; float32 operands are read as
the ``precision``'s compute mode reads them (TF32 by default, ``records.gemm_compute``), so a product
gives cuBLAS's numbers up to the order of the sums.

Measured on an H100 (2026-11-27, ``bench/gpu_ab.sh``, ``bench/gpu_kernels.py``): cuBLAS ran the MLP
step's two 10-wide GEMMs (the logits ``h2 @ W3`` and ``dW3 = h2^T @ g``) in 7.9 and 5.4 us; the
warp-per-output kernels took 3.5 (logits) and 7.4 us (``dW3``, read with a stride: hence the column
kernel). The RNN gradient's 256-wide matrix-vector products inside its scan went from cuBLAS's gemv
(2.7 us each) to these kernels: 2,559 -> 2,291 us of device time per call, 2.79 -> 2.52 ms a call.
``FJAX_CUDA_SKINNY=0`` (read when a plan is built) sends every GEMM to cuBLAS."""

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
    return os.environ.get("FJAX_CUDA_SKINNY", "1") != "0"


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


DROP = {"tf32": 13, "f16": 13, "bf16": 16}  # low mantissa bits a fast compute mode drops (emulate)


def kernel(
    dims: tuple, lhs_t: bool, rhs_t: bool, dtype: np.dtype, compute: str = ""
) -> tuple[CudaKernel, tuple, tuple]:
    """The kernel computing ``out[b, l, r] = sum_k lhs[b, l, k] * rhs[b, k, r]`` (``lhs_t``: lhs
    stored (b, k, l); ``rhs_t``: rhs stored (b, r, k)), its grid and block. ``compute`` ("tf32",
    "bf16", "f16": ``records.gemm_compute``) rounds float32 operands as cuBLAS's fast modes read
    them, so a product gives the same numbers on either path (up to the order of the sums)."""
    nb, nl, nk, nr = dims
    T = ctype(np.dtype(dtype))
    drop = DROP.get(compute) if np.dtype(dtype) == np.float32 else None
    x, y = (
        (f"fj_keep_bits(pa[k * {{a}}], {drop}u)", f"fj_keep_bits(pb[k * {{b}}], {drop}u)")
        if drop
        else ("pa[k * {a}]", "pb[k * {b}]")
    )
    # rhs element k of output column r: b[bt * nk * nr + b_off + k * b_step]
    b_off, b_step = (f"r * {nk}LL", "1LL") if rhs_t else ("r", f"{nr}LL")
    what = f"{np.dtype(dtype).name}{' ' + compute if drop else ''}"
    head = (
        f'extern "C" __global__ void __launch_bounds__({BLOCK}) __NAME__(const {T}* __restrict__ a, '
        f"const {T}* __restrict__ b, {T}* __restrict__ o) {{\n"
    )
    if lhs_t:
        return _columns_kernel(dims, rhs_t, T, what, head, x.format(a=f"{nl}LL"), y.format(b=b_step), b_off)
    n = nb * nl * nr
    body = (
        f"// skinny GEMM: {nb} x ({nl}, {nk}) @ ({nk}, {nr}){'^T' if rhs_t else ''} {what}, a warp per output\n"
        + head
        + "  const int lane = threadIdx.x & 31;\n"
        f"  for (long long w = ((long long)blockIdx.x * {BLOCK} + threadIdx.x) >> 5; w < {n}LL;\n"
        f"       w += ((long long)gridDim.x * {BLOCK}) >> 5) {{\n"
        f"    const long long r = w % {nr}LL, q = w / {nr}LL, l = q % {nl}LL, bt = q / {nl}LL;\n"
        f"    const {T}* pa = a + bt * {nl * nk}LL + l * {nk}LL;\n"
        f"    const {T}* pb = b + bt * {nk * nr}LL + {b_off};\n"
        f"    {T} acc = ({T})0;\n"
        f"    for (long long k = lane; k < {nk}LL; k += 32) acc += {x.format(a='1LL')} * {y.format(b=b_step)};\n"
        "    for (int s = 16; s > 0; s >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, s);\n"
        "    if (lane == 0) o[w] = acc;\n"
        "  }\n}\n"
    )
    warps_per_block = BLOCK // 32
    grid = (max(1, min(1024, -(-n // warps_per_block))), 1, 1)
    return CudaKernel("mm", body), grid, (BLOCK, 1, 1)


def _columns_kernel(dims: tuple, rhs_t: bool, T: str, what: str, head: str, x: str, y: str, b_off: str) -> tuple:
    """``lhs`` stored (b, k, l) (a weight gradient ``h^T @ g``): a warp-per-output kernel would read
    it with a stride of ``nl`` across its lanes (7.4 us for the MLP step's 512x10 ``dW3`` on the H100).
    Here a block owns 32 neighbouring ``l`` of one ``r``: its lanes read 32 consecutive elements of
    a row of ``lhs``, its 8 warps each sum a contiguous eighth of the contraction, and warp 0 adds the
    8 partial sums from shared memory in a fixed order (deterministic)."""
    nb, nl, nk, nr = dims
    nw = BLOCK // 32
    lblocks = -(-nl // 32)
    nblocks = nb * lblocks * nr
    chunk = -(-nk // nw)
    body = (
        f"// skinny GEMM: {nb} x ({nl}, {nk})^T @ ({nk}, {nr}){'^T' if rhs_t else ''} {what}, 32 outputs along l "
        f"per block, the contraction split over its {nw} warps\n" + head + f"  __shared__ {T} part[{nw}][32];\n"
        "  const int lane = threadIdx.x & 31, wi = threadIdx.x >> 5;\n"
        f"  for (long long blk = blockIdx.x; blk < {nblocks}LL; blk += gridDim.x) {{\n"
        f"    const long long r = blk % {nr}LL, q = blk / {nr}LL, lb = q % {lblocks}LL, bt = q / {lblocks}LL;\n"
        "    const long long l = lb * 32 + lane;\n"
        f"    {T} acc = ({T})0;\n"
        f"    if (l < {nl}LL) {{\n"
        f"      const {T}* pa = a + bt * {nl * nk}LL + l;\n"
        f"      const {T}* pb = b + bt * {nk * nr}LL + {b_off};\n"
        f"      const long long k1 = fj_imin((long long)(wi + 1) * {chunk}LL, {nk}LL);\n"
        "#pragma unroll 4\n"
        f"      for (long long k = (long long)wi * {chunk}LL; k < k1; ++k) acc += {x} * {y};\n"
        "    }\n"
        "    part[wi][lane] = acc;\n"
        "    __syncthreads();\n"
        f"    if (wi == 0 && l < {nl}LL) {{\n"
        f"      {T} s = part[0][lane];\n"
        f"      for (int j = 1; j < {nw}; ++j) s += part[j][lane];\n"
        f"      o[(bt * {nl}LL + l) * {nr}LL + r] = s;\n"
        "    }\n"
        "    __syncthreads();  // before the next block's partial sums\n"
        "  }\n}\n"
    )
    grid = (max(1, min(4096, nblocks)), 1, 1)
    return CudaKernel("mm", body), grid, (BLOCK, 1, 1)
