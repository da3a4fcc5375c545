"""The launch-plan records (data a runtime executes; see ``fjax.backends.cuda.plan``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Alloc:
    name: str
    shape: tuple
    dtype: np.dtype


@dataclass
class View:
    name: str
    src: str
    shape: tuple


@dataclass
class Launch:
    kernel: str
    grid: tuple
    block: tuple
    args: tuple  # buffer names (str) and scalars (numpy scalars of the kernel's parameter dtype)
    shared_mem: int = 0
    comment: str = ""


@dataclass
class MatMul:
    """``out = lhs @ rhs`` as ``nb`` GEMMs of (nl, nk) x (nk, nr); ``*_perm`` transposes an operand
    first, ``*_t`` uses its 2-D blocks transposed (a view, no copy)."""

    out: str
    lhs: str
    rhs: str
    dims: tuple
    lhs_perm: tuple | None
    rhs_perm: tuple | None
    lhs_t: bool
    rhs_t: bool
    out_shape: tuple
    dtype: np.dtype
    comment: str = ""
    # float32 GEMMs: "tf32" / "bf16" / "f16" (cuBLAS's fast compute modes), "" full float32
    compute: str = ""
    # the operands' dtype when it is not ``dtype`` (16-bit floats with a float32 product)
    in_dtype: Any = None


_FFT_NAMES = ("FFT", "IFFT", "RFFT", "IRFFT")  # lax.FftType's values, in order


@dataclass(repr=False)
class Fft:
    """``out = fft(src)`` over the trailing ``len(lengths)`` axes (``lax.fft``, cuFFT through
    ``cupy.fft``): ``fft_type`` is ``lax.FftType``'s value (0 FFT, 1 IFFT with the 1/N, 2 RFFT,
    3 IRFFT, ``lengths[-1]`` its real output length); ``out`` is allocated before it (an ``Alloc``)
    and written in place. Its ``repr`` is its line of the launch sequence (``plan.plan_text``)."""

    out: str
    src: str
    fft_type: int
    lengths: tuple
    in_shape: tuple
    in_dtype: np.dtype
    out_dtype: np.dtype
    comment: str = ""

    def __repr__(self) -> str:
        kind = _FFT_NAMES[self.fft_type]
        k = len(self.lengths)
        dt_in, dt_out = np.dtype(self.in_dtype).name, np.dtype(self.out_dtype).name
        return (
            f"{self.out} = cufft {kind} {self.src}: {dt_in}{list(self.in_shape)} -> {dt_out}, over the last {k} "
            f"axes, lengths {list(self.lengths)}  # {self.comment}"
        )


@dataclass(repr=False)
class HostCallback:
    """A Python function the program calls on the host (``pure_callback``, ``io_callback``,
    ``debug_callback``; ``eig``, LAPACK on the host as JAX's GPU ``eig`` without MAGMA): ``ins``
    are copied to the host (waiting for the work that writes them), ``fn(*host arrays)`` runs,
    and its results are copied to new device buffers ``outs`` of ``out_avals`` ((shape, dtype)
    each). The copies are the user's request, not the backend's choice. ``in_avals`` are the
    operands' (shape, dtype) (bfloat16 buffers hold bits; a loop's 0-d carry may be a 1-element
    buffer). Its ``repr`` is its line of the launch
    sequence; ``label`` names the function without an address (the translation unit's text, and
    so the compiled module's cache key, stays the same for every program with the same steps)."""

    fn: Any
    ins: list
    outs: list
    in_avals: list
    out_avals: list
    label: str
    comment: str = ""

    def __repr__(self) -> str:
        outs = ", ".join(self.outs) or "nothing"
        return (
            f"{outs} = host call {self.label}({', '.join(self.ins)}): device -> host copies, the function on "
            f"the host, host -> device copies  # {self.comment}"
        )


@dataclass
class Plan:
    inputs: list
    outputs: list
    steps: list
    consts: dict = field(default_factory=dict)  # name -> numpy array (uploaded once)


@dataclass
class Loop:
    """``scan`` (``length`` steps, ``reverse``) or ``while`` (``cond`` plan's 0-d bool output).
    The body plan takes ``consts + carries (+ x slices)`` and returns ``carries (+ y slices)``; ys
    are written into ``ys`` buffers (allocated before the loop) by ``copy kernels``."""

    kind: str
    consts: list
    carries: list
    xs: list
    body: Plan
    outs: list
    length: int = 0
    reverse: bool = False
    cond: Plan | None = None
    cond_consts: list = field(default_factory=list)
    ys: list = field(default_factory=list)  # (name, shape, dtype, copy kernel name, block)


@dataclass
class Branch:
    index: str
    ins: list
    branches: list
    outs: list


_FAST = {"DEFAULT": "tf32", "HIGH": "tf32", "TF32_TF32_F32": "tf32", "BF16_BF16_F32": "bf16", "F16_F16_F32": "f16"}


def gemm_compute(precision: Any, dtype: Any) -> str:
    """cuBLAS's compute mode for a GEMM of ``dtype`` with a dot_general's ``precision`` param, as
    JAX's GPU backend reads it: float32 with no precision, ``DEFAULT`` or ``HIGH`` (either operand;
    ``HIGHEST`` on either wins) runs on TF32 tensor cores ("tf32"); ``HIGHEST`` / ``F32_F32_F32``
    (and the other presets) in full float32 (""); ``BF16_BF16_F32`` / ``F16_F16_F32`` round the
    operands to bfloat16 / float16. Other dtypes: "" (their own precision)."""
    if np.dtype(dtype) != np.float32:
        return ""
    if precision is None:
        return "tf32"
    if isinstance(precision, (tuple, list)):
        names = {getattr(p, "name", str(p)).upper() for p in precision if p is not None}
        return "" if "HIGHEST" in names else "tf32"
    return _FAST.get(getattr(precision, "name", str(precision)).upper(), "")
