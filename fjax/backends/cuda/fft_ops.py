"""``lax.fft`` on the CUDA backend: one ``Fft`` plan record, which a runtime executes with cuFFT
(``runtime.fft``: ``cupy.fft.fftn/ifftn/rfftn/irfftn`` over the trailing ``len(fft_lengths)`` axes,
written into the output buffer the plan allocates), so the data never leaves the device.

Types as JAX's: FFT/IFFT of complex64/complex128 (same dtype out; IFFT includes the 1/N), RFFT of
float32/float64 (complex64/complex128 out, the last axis ``n // 2 + 1``) and IRFFT of complex
(real out, ``fft_lengths[-1]`` long). Single precision stays single precision (cuFFT's C2C/R2C/C2R
in float32, as XLA's GPU FFT). Another dtype (float16, ...) raises ``NotImplementedError`` naming
fft and the dtype. A transform with an empty operand or a zero length (the RFFT of length 0 has
one output bin) has no cuFFT plan: its output is zero-filled by a kernel, as the CPU impl's zeros.
An IRFFT of a half spectrum that is not Hermitian (an imaginary part in the DC or Nyquist bin, or
in a multi-axis transform bins that are not conjugate pairs) is undefined in cuFFT's C2R, as in
XLA's GPU FFT: there the GPU may differ from the CPU (pocketfft), never for spectra of real data.

A one-axis FFT step runs on fjax's own cuFFT plans and may be captured into a CUDA graph
(``fft_exec``); one over several axes is not (``executor.graph_steps``).
``reference`` is the same transform with numpy's pocketfft, in the operand's precision: the CPU
emulator's and the cupy stand-in's cuFFT.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from fjax.backends.cuda.kernel_util import _block, _loop
from fjax.backends.cuda.records import Alloc, Fft

__all__ = ["FFT_FUNCS", "reference", "render"]

# lax.FftType's values (FFT, IFFT, RFFT, IRFFT) -> the cupy.fft / numpy.fft function
FFT_FUNCS = ("fftn", "ifftn", "rfftn", "irfftn")

_COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))
_REAL = (np.dtype(np.float32), np.dtype(np.float64))


def _check_dtypes(kind: int, d_in: np.dtype, d_out: np.dtype) -> None:
    # (in, out) allowed for each type: the operand's precision kept
    if kind in (0, 1):
        ok = d_in in _COMPLEX and d_out == d_in
    elif kind == 2:
        ok = d_in in _REAL and d_out == _COMPLEX[_REAL.index(d_in)]
    else:
        ok = d_in in _COMPLEX and d_out == _REAL[_COMPLEX.index(d_in)]
    if not ok:
        name = FFT_FUNCS[kind] if 0 <= kind < 4 else str(kind)
        bad = d_in if d_in not in _COMPLEX + _REAL else d_out
        raise NotImplementedError(
            f"CUDA backend: fft ({name}) on dtype {bad.name} (cuFFT here: complex64/complex128, "
            "float32/float64 for RFFT input and IRFFT output)"
        )


def render(params: dict, in_avals: list, out_avals: list, ins: list, outs: list, launch: Callable) -> list:
    """Plan records of one ``fft`` step: ``Alloc`` of the output, then an ``Fft`` record (or, for
    an empty transform, a kernel writing zeros). ``launch(kind, src, n, block, args, comment)``
    is ``host_ops.render``'s launch-record maker."""
    kind = int(params["fft_type"])
    lengths = tuple(int(n) for n in params["fft_lengths"])
    a, o = in_avals[0], out_avals[0]
    d_in, d_out = np.dtype(a.dtype), np.dtype(o.dtype)
    if kind not in (0, 1, 2, 3):
        raise NotImplementedError(f"CUDA backend: fft of type {kind}")
    _check_dtypes(kind, d_in, d_out)
    shape_in, shape_out = tuple(a.shape), tuple(o.shape)
    recs: list = [Alloc(outs[0], shape_out, d_out)]
    n_out = math.prod(shape_out)
    if not n_out:
        return recs
    if not math.prod(shape_in) or not math.prod(lengths):
        # nothing to transform (RFFT of length 0: one zero bin per line): zeros, as the CPU impl
        words = n_out * d_out.itemsize // 4  # (every FFT dtype is a whole number of 4-byte words)
        blk = _block(words)
        src = (
            f"// fft ({FFT_FUNCS[kind]}) of an empty transform: {n_out} zeros of {d_out.name}\n"
            f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(unsigned int* __restrict__ o) {{\n'
            f"  {_loop(words, blk)}\n    o[t] = 0u;\n}}\n"
        )
        return recs + launch("op", src, words, blk, (outs[0],), "fft of an empty transform: zeros")
    comment = "lax.fft"
    return recs + [Fft(outs[0], ins[0], kind, lengths, shape_in, d_in, d_out, comment)]


def reference(x: Any, fft_type: int, lengths: tuple) -> np.ndarray:
    """The transform with numpy's pocketfft over the trailing ``len(lengths)`` axes of ``x``, in
    its precision (numpy computes float32/complex64 in single precision; the result is cast to
    the single-precision dtype all the same, as cuFFT returns it)."""
    x = np.asarray(x)
    k = len(lengths)
    axes = tuple(range(x.ndim - k, x.ndim))
    fn = getattr(np.fft, FFT_FUNCS[fft_type])
    y = fn(x, s=tuple(lengths), axes=axes) if fft_type == 3 else fn(x, axes=axes)
    single = x.dtype in (np.float32, np.complex64)
    if fft_type == 3:
        want = np.float32 if single else np.float64
    else:
        want = np.complex64 if single else np.complex128
    return np.asarray(y, dtype=want)
