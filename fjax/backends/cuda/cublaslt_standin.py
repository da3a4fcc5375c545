"""A CPU stand-in for the part of cuBLASLt that ``cublaslt.py`` calls through ctypes, installed by
``cupy_standin.install`` beside its cuBLAS: descriptors and layouts are Python objects behind
integer handles, ``cublasLtMatmulAlgoGetHeuristic`` checks that the layouts describe one
consistent product (``op(A)`` m x k, ``op(B)`` k x n, ``C``/``D`` m x n, column-major, ``ld >=
rows``, equal batch counts; ``CUBLAS_STATUS_INVALID_VALUE`` otherwise, as cuBLASLt) and proposes
four algorithms, and ``cublasLtMatmul`` computes ``D = alpha op(A) op(B) + beta C`` with numpy over
the raw pointers on the stream it is given (recorded while that stream captures a graph).

Algorithms, for tests of the tuner: ``ALGO0`` and ``ALGO0 + 1`` compute correctly, ``ALGO0 + 2``
gives a wrong product (the tuner must reject it), ``ALGO0 + 3`` answers
``CUBLAS_STATUS_NOT_SUPPORTED``; ``delays[id]`` seconds are slept per call of algorithm ``id``
(outside captures), so a test decides which one measures fastest.
"""

from __future__ import annotations

import ctypes
import itertools
import time
from collections import Counter
from typing import Any

import numpy as np

ALGO0 = 1000
INVALID, NOT_SUPPORTED = 7, 15
_DTYPES = {0: np.dtype(np.float32), 1: np.dtype(np.float64)}
_MODES = {68: "", 70: "", 77: "tf32", 75: "bf16", 74: "f16"}

calls: Counter = Counter()
delays: dict = {}


def _v(x: Any) -> Any:
    """The value behind a ctypes scalar or a ``byref`` of one."""
    x = getattr(x, "_obj", x)
    return x.value if hasattr(x, "value") else x


class CublasLt:
    """The library object; ``cs`` is the cupy stand-in module (its pointers, streams, captures)."""

    def __init__(self, cs: Any) -> None:
        self.cs = cs
        self._ids = itertools.count(1)
        self.objects: dict = {}

    def _new(self, out: Any, obj: dict) -> int:
        i = next(self._ids)
        self.objects[i] = obj
        out._obj.value = i
        return 0

    def _get(self, h: Any) -> dict:
        return self.objects[_v(h)]

    def _set(self, h: Any, attr: Any, buf: Any, size: Any, sizes: dict) -> int:
        a, n = int(_v(attr)), int(_v(size))
        if a not in sizes or sizes[a] != n or ctypes.sizeof(buf._obj) != n:
            return INVALID
        self._get(h)[a] = _v(buf)
        return 0

    # handles, descriptors, layouts, preferences
    def cublasLtCreate(self, out: Any) -> int:
        calls["create"] += 1
        return self._new(out, {"kind": "handle"})

    def cublasLtMatmulDescCreate(self, out: Any, compute: Any, scale: Any) -> int:
        if int(_v(compute)) not in _MODES or int(_v(scale)) not in _DTYPES:
            return INVALID
        return self._new(out, {"kind": "desc", "compute": int(_v(compute)), 3: 0, 4: 0})

    def cublasLtMatmulDescSetAttribute(self, h: Any, attr: Any, buf: Any, size: Any) -> int:
        return self._set(h, attr, buf, size, {3: 4, 4: 4})

    def cublasLtMatrixLayoutCreate(self, out: Any, dtype: Any, rows: Any, cols: Any, ld: Any) -> int:
        if not all(
            isinstance(v, t) for v, t in ((rows, ctypes.c_uint64), (cols, ctypes.c_uint64), (ld, ctypes.c_int64))
        ):
            return INVALID  # (uint64/int64 in the C prototype: a plain int would be truncated)
        r, c, ld_ = int(_v(rows)), int(_v(cols)), int(_v(ld))
        if int(_v(dtype)) not in _DTYPES or ld_ < max(1, r):
            return INVALID
        return self._new(out, {"kind": "layout", "dtype": _DTYPES[int(_v(dtype))], "rows": r, "cols": c, "ld": ld_})

    def cublasLtMatrixLayoutSetAttribute(self, h: Any, attr: Any, buf: Any, size: Any) -> int:
        return self._set(h, attr, buf, size, {5: 4, 6: 8})

    def cublasLtMatmulPreferenceCreate(self, out: Any) -> int:
        return self._new(out, {"kind": "pref"})

    def cublasLtMatmulPreferenceSetAttribute(self, h: Any, attr: Any, buf: Any, size: Any) -> int:
        return self._set(h, attr, buf, size, {1: 8, 5: 4, 6: 4, 7: 4, 8: 4})

    def cublasLtMatmulPreferenceDestroy(self, h: Any) -> int:
        self.objects.pop(_v(h), None)
        return 0

    def _problem(self, desc: Any, la: Any, lb: Any, lc: Any, ld: Any) -> tuple | None:
        d, A, B, C, D = (self._get(x) for x in (desc, la, lb, lc, ld))
        ta, tb = d[3], d[4]
        m, k = (A["cols"], A["rows"]) if ta else (A["rows"], A["cols"])
        k2, n = (B["cols"], B["rows"]) if tb else (B["rows"], B["cols"])
        batches = {L.get(5, 1) for L in (A, B, C, D)}
        if k != k2 or (C["rows"], C["cols"]) != (m, n) or C != D or len(batches) != 1:
            return None
        if len({L["dtype"] for L in (A, B, C)}) != 1:
            return None
        return d, A, B, C, m, n, k, batches.pop()

    def cublasLtMatmulAlgoGetHeuristic(
        self, h: Any, desc: Any, la: Any, lb: Any, lc: Any, ld: Any, pref: Any, count: Any, results: Any, got: Any
    ) -> int:
        calls["heuristic"] += 1
        if self._problem(desc, la, lb, lc, ld) is None:
            return INVALID
        n = min(4, int(_v(count)))
        for i in range(n):
            results[i].algo.data[0] = ALGO0 + i
            results[i].workspaceSize = 1024 * i
            results[i].state = 0
        got._obj.value = n
        return 0

    def cublasLtMatmul(self, h: Any, desc: Any, alpha: Any, a: Any, la: Any, b: Any, lb: Any, beta: Any, c: Any,
                       lc: Any, d: Any, ld: Any, algo: Any, ws: Any, ws_size: Any, stream: Any) -> int:  # fmt: skip
        from fjax.backends.cuda.emulate import round_operand  # noqa: PLC0415

        cs = self.cs

        prob = self._problem(desc, la, lb, lc, ld)
        aid = int(algo._obj.data[0])
        calls["matmul"] += 1
        calls[f"matmul {aid}"] += 1
        if prob is None:
            return INVALID
        if aid == ALGO0 + 3:
            return NOT_SUPPORTED
        if int(_v(ws_size)) < 1024 * (aid - ALGO0) or (int(_v(ws_size)) and not _v(ws)):
            return INVALID
        if _v(c) != _v(d):
            return INVALID  # (the runtime always computes in place)
        dsc, A, B, C, m, n, k, nb = prob
        dt, mode = A["dtype"], _MODES[dsc["compute"]]
        al, be = float(_v(alpha)), float(_v(beta))
        pa, pb, pc = int(_v(a)), int(_v(b)), int(_v(c))
        it = dt.itemsize
        s = [L.get(6, 0) * it for L in (A, B, C)]

        def run() -> None:
            for i in range(nb):
                X = cs._colmajor(pa + i * s[0], A["rows"], A["cols"], A["ld"], dt)
                Y = cs._colmajor(pb + i * s[1], B["rows"], B["cols"], B["ld"], dt)
                Z = cs._colmajor(pc + i * s[2], m, n, C["ld"], dt)
                X, Y = (X.T if dsc[3] else X), (Y.T if dsc[4] else Y)
                r = al * (round_operand(X, mode) @ round_operand(Y, mode))
                if aid == ALGO0 + 2:
                    r = r + 1.0  # a broken algorithm
                Z[...] = (r if be == 0 else r + be * Z).astype(dt)
            if not stream_capturing and delays.get(aid):
                time.sleep(delays[aid])

        s_obj = cs._streams_by_ptr.get(_v(stream) or 0, cs._default)
        stream_capturing = s_obj.capture is not None
        if not cs._state["compute"]:
            return 0
        cs._issue(s_obj, run, "gemm")
        return 0
