"""A rule of the CUDA kernels, checked on the lowering corpus: a kernel that synchronizes its threads
(``__syncthreads``) does not read back a buffer it declares ``__restrict__`` and writes.

Threads of such kernels hand values to each other through global memory across the barrier. With
``__restrict__`` nvcc may keep a value read before the barrier in a register: on an H100
(2026-11-27) the Cholesky kernel's threads divided a column by the pivot read before its square
root was stored, and LU and QR had the same pattern. The emulator runs threads in an order that
hides it, so this is checked on the source."""

from __future__ import annotations

import re

from test_cuda_lowering import CORPUS, _lowered

_KERNEL = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(([^)]*)\)')


def _read_back_restrict(src: str) -> dict:
    """Kernel name -> the written ``__restrict__`` buffers it also reads, for kernels with barriers."""
    found: dict = {}
    for k in re.split(r'(?=extern "C" __global__)', src)[1:]:
        m = _KERNEL.match(k)
        if not m or "__syncthreads" not in k:
            continue
        name, sig = m.groups()
        for p in (p.strip() for p in sig.split(",")):
            if "__restrict__" not in p or p.startswith("const"):
                continue
            v = p.split()[-1]
            for a in re.finditer(rf"\b{v}\[", k):
                i, depth = a.end(), 1
                while depth:
                    depth += {"[": 1, "]": -1}.get(k[i], 0)
                    i += 1
                if not re.match(r"\s*=[^=]", k[i : i + 3]):  # anything but a plain store reads it
                    found.setdefault(name, set()).add(v)
    return found


def test_synchronizing_kernels_do_not_read_back_restrict_buffers():
    src = "\n".join(_lowered(fn, args).as_text() for fn, args in CORPUS.values())
    assert "__syncthreads" in src and "cholesky" in src
    assert _read_back_restrict(src) == {}


def test_the_rule_sees_a_read_back():
    bad = (
        'extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ L) {\n'
        "  if (threadIdx.x == 0) L[0] = sqrtf(L[0]);\n  __syncthreads();\n  L[threadIdx.x + 1] /= L[0];\n}\n"
    )
    assert _read_back_restrict(bad) == {"k": {"L"}}
    assert _read_back_restrict(bad.replace("float* __restrict__ L", "float* L")) == {}
