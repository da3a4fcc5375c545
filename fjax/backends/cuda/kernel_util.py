"""Launch-shape helpers shared by the CUDA kernels of the host-step primitives (``host_ops``,
``special_ops``, ``random_ops``): block size, grid and the grid-stride loop header."""

from __future__ import annotations


def _grid(n: int, block: int) -> tuple:
    return (max(1, min(4096, -(-n // block))), 1, 1)


def _block(n: int) -> int:
    return 256 if n >= 256 else max(32, -(-n // 32) * 32)


def _loop(n: int, block: int) -> str:
    start = f"(long long)blockIdx.x * {block} + threadIdx.x"
    return f"for (long long t = {start}; t < {n}LL; t += (long long){block} * gridDim.x)"
