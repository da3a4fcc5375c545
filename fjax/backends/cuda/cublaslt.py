"""GEMMs through cuBLASLt with the algorithm chosen by measurement (opt-in: ``FJAX_CUDA_CUBLASLT=1``).

cuBLAS's ``cublas*gemmStridedBatched*`` calls run the one kernel its heuristic ranks first. For the
small GEMMs of a training step that choice can be slower than others cuBLASLt offers (on an H200
the MLP step's TF32 GEMMs took 51 us where XLA's autotuned Triton GEMMs took 39). Here a GEMM
layout seen for the first time outside a CUDA-graph capture asks ``cublasLtMatmulAlgoGetHeuristic``
for up to ``FJAX_CUDA_CUBLASLT_ALGOS`` (default 8) algorithms, runs each on the call's own
buffers, keeps those whose product agrees with cuBLAS's (a guard against a wrong binding or a
broken algorithm: a wrong answer is never kept), times them with CUDA events and keeps the fastest
for every later call of that layout (captured graphs included). Anything unexpected (the library
missing, a status other than success, no algorithm agreeing) makes that layout use plain cuBLAS
again, said once.

The library is reached through ctypes (the ``libcublasLt`` that cupy's cuBLAS loaded); every
argument is passed as an explicit ctypes value, so the calls do not depend on declared argtypes.
Enum values and the heuristic-result layout are those of ``cublasLt.h`` (CUDA 11-13).

Status: written and tested without a GPU (against a stand-in of the library in
``cublaslt_standin.py`` that implements the documented semantics with numpy). It has never run on
real hardware, hence off by default.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from typing import Any, Callable

import numpy as np

# cublasLtMatmulDescAttributes_t
DESC_TRANSA, DESC_TRANSB = 3, 4
# cublasLtMatrixLayoutAttribute_t
LAYOUT_BATCH_COUNT, LAYOUT_STRIDED_BATCH_OFFSET = 5, 6
# cublasLtMatmulPreferenceAttributes_t
PREF_MAX_WORKSPACE_BYTES = 1
PREF_MIN_ALIGNMENT = (5, 6, 7, 8)  # A, B, C, D
# cublasComputeType_t / cudaDataType_t
COMPUTE_32F, COMPUTE_64F = 68, 70
COMPUTE_FAST = {"tf32": 77, "bf16": 75, "f16": 74}
R_32F, R_64F = 0, 1
STATUS_NOT_SUPPORTED = 15

WORKSPACE_BYTES = 4 << 20
ALIGNMENT = 16  # bytes: the pointers of a call must be this aligned to use a tuned algorithm


class Algo(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64 * 8)]


class HeuristicResult(ctypes.Structure):
    _fields_ = [
        ("algo", Algo),
        ("workspaceSize", ctypes.c_size_t),
        ("state", ctypes.c_int),
        ("wavesCount", ctypes.c_float),
        ("reserved", ctypes.c_int * 4),
    ]


assert ctypes.sizeof(HeuristicResult) == 96  # noqa: S101 - cublasLt.h's layout


def enabled() -> bool:
    return os.environ.get("FJAX_CUDA_CUBLASLT", "0") == "1"


def _n_algos() -> int:
    try:
        return max(1, int(os.environ.get("FJAX_CUDA_CUBLASLT_ALGOS", "8")))
    except ValueError:
        return 8


_lib: list = []  # [library or None]
_handles: dict = {}  # device -> cublasLtHandle_t (c_void_p)
_workspaces: dict = {}  # device -> workspace buffer (kept for the process: graphs bake its pointer)
_choices: dict = {}  # id(gemm plan) -> (plan, Choice or None)
_lock = threading.Lock()
_said: set = set()


def _say_once(message: str) -> None:
    if message not in _said:
        _said.add(message)
        import warnings  # noqa: PLC0415

        warnings.warn(message, stacklevel=5)


def library() -> Any:
    """libcublasLt through ctypes (the one loaded beside cupy's cuBLAS), or None."""
    if not _lib:
        lib = None
        for name in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so"):
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        _lib.append(lib)
    return _lib[0]


def _check(st: int, what: str) -> None:
    if st != 0:
        raise RuntimeError(f"cuBLASLt {what} failed with status {st}")


class Choice:
    """The descriptors and the measured algorithm of one GEMM layout."""

    def __init__(self, lib: Any, desc: Any, layouts: tuple, algo: Algo, ws_size: int, scalars: tuple):
        self.lib, self.desc, self.layouts, self.algo, self.ws_size = lib, desc, layouts, algo, ws_size
        self.alpha, self.beta = scalars
        self.algo_ref = ctypes.byref(algo)
        self.alpha_ref, self.beta_ref = ctypes.byref(self.alpha), ctypes.byref(self.beta)

    def run(self, handle: Any, a_ptr: int, b_ptr: int, out_ptr: int, ws: Any, stream: int) -> int:
        la, lb, lc = self.layouts
        c = ctypes.c_void_p(out_ptr)
        return self.lib.cublasLtMatmul(
            handle, self.desc, self.alpha_ref, ctypes.c_void_p(a_ptr), la, ctypes.c_void_p(b_ptr), lb,
            self.beta_ref, c, lc, c, lc, self.algo_ref, ctypes.c_void_p(ws), ctypes.c_size_t(self.ws_size),
            ctypes.c_void_p(stream),
        )  # fmt: skip


def _layout(lib: Any, dtype: int, rows: int, cols: int, ld: int, batch: int, stride: int) -> ctypes.c_void_p:
    lay = ctypes.c_void_p()
    _check(
        lib.cublasLtMatrixLayoutCreate(
            ctypes.byref(lay), ctypes.c_int(dtype), ctypes.c_uint64(rows), ctypes.c_uint64(cols), ctypes.c_int64(ld)
        ),
        "MatrixLayoutCreate",
    )
    if batch > 1:
        n, s = ctypes.c_int32(batch), ctypes.c_int64(stride)
        _check(
            lib.cublasLtMatrixLayoutSetAttribute(
                lay, ctypes.c_int(LAYOUT_BATCH_COUNT), ctypes.byref(n), ctypes.c_size_t(4)
            ),
            "MatrixLayoutSetAttribute",
        )
        _check(
            lib.cublasLtMatrixLayoutSetAttribute(
                lay, ctypes.c_int(LAYOUT_STRIDED_BATCH_OFFSET), ctypes.byref(s), ctypes.c_size_t(8)
            ),
            "MatrixLayoutSetAttribute",
        )
    return lay


def describe(lib: Any, plan: tuple) -> tuple:
    """(matmul descriptor, (A, B, C) layouts, scalars, dtype) of a ``runtime._gemm_plan`` plan:
    the same column-major problem cuBLAS is given there (``C^T = op(B^T) op(A^T)``, the first
    operand the right-hand buffer)."""
    _, fn, tb, ta, n, m, k, _, ldb, sb, lda, sa, _, ldc, sc, nb, _, ex = plan
    f64 = "Dgemm" in getattr(fn, "__name__", "")
    dt, scale = (R_64F, R_64F) if f64 else (R_32F, R_32F)
    compute = COMPUTE_64F if f64 else (ex if isinstance(ex, int) else COMPUTE_32F)
    desc = ctypes.c_void_p()
    _check(lib.cublasLtMatmulDescCreate(ctypes.byref(desc), ctypes.c_int(compute), ctypes.c_int(scale)), "DescCreate")
    for attr, op in ((DESC_TRANSA, tb), (DESC_TRANSB, ta)):
        v = ctypes.c_int32(op)
        _check(
            lib.cublasLtMatmulDescSetAttribute(desc, ctypes.c_int(attr), ctypes.byref(v), ctypes.c_size_t(4)),
            "DescSetAttribute",
        )
    sb_, sa_, sc_ = (v.value if hasattr(v, "value") else int(v) for v in (sb, sa, sc))
    # the first operand (the right-hand buffer): n x k, or k x n stored and transposed
    l1 = _layout(lib, dt, *((k, n) if tb else (n, k)), ldb, nb, sb_)
    l2 = _layout(lib, dt, *((m, k) if ta else (k, m)), lda, nb, sa_)
    l3 = _layout(lib, dt, n, m, ldc, nb, sc_)
    ct = ctypes.c_double if f64 else ctypes.c_float
    return desc, (l1, l2, l3), (ct(1.0), ct(0.0)), dt


def heuristics(lib: Any, handle: Any, desc: Any, layouts: tuple, count: int) -> list:
    """Up to ``count`` (algorithm, workspace size) pairs cuBLASLt proposes for this problem."""
    pref = ctypes.c_void_p()
    _check(lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "PreferenceCreate")
    try:
        ws = ctypes.c_uint64(WORKSPACE_BYTES)
        _check(
            lib.cublasLtMatmulPreferenceSetAttribute(
                pref, ctypes.c_int(PREF_MAX_WORKSPACE_BYTES), ctypes.byref(ws), ctypes.c_size_t(8)
            ),
            "PreferenceSetAttribute",
        )
        for attr in PREF_MIN_ALIGNMENT:
            al = ctypes.c_uint32(ALIGNMENT)
            _check(
                lib.cublasLtMatmulPreferenceSetAttribute(
                    pref, ctypes.c_int(attr), ctypes.byref(al), ctypes.c_size_t(4)
                ),
                "PreferenceSetAttribute",
            )
        results = (HeuristicResult * count)()
        got = ctypes.c_int(0)
        la, lb, lc = layouts
        st = lib.cublasLtMatmulAlgoGetHeuristic(
            handle, desc, la, lb, lc, lc, pref, ctypes.c_int(count), results, ctypes.byref(got)
        )
        if st != 0:
            return []
        out = []
        for r in results[: max(0, min(got.value, count))]:
            if r.state == 0 and r.workspaceSize <= WORKSPACE_BYTES:
                algo = Algo()
                ctypes.memmove(ctypes.byref(algo), ctypes.byref(r.algo), ctypes.sizeof(Algo))
                out.append((algo, int(r.workspaceSize)))
        return out
    finally:
        lib.cublasLtMatmulPreferenceDestroy(pref)


def _timer(cp: Any, stream: Any) -> Callable[[Callable[[], Any], int], float]:
    """``time(run, reps)``: seconds per run of ``run`` on ``stream`` (CUDA events where cupy has
    them, else wall time after a synchronize)."""
    ev = getattr(cp.cuda, "Event", None)

    def with_events(run: Callable[[], Any], reps: int) -> float:
        start, end = ev(), ev()
        start.record(stream)
        for _ in range(reps):
            run()
        end.record(stream)
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / 1e3 / reps

    def with_clock(run: Callable[[], Any], reps: int) -> float:
        stream.synchronize()
        t = time.perf_counter()
        for _ in range(reps):
            run()
        stream.synchronize()
        return (time.perf_counter() - t) / reps

    return with_events if ev is not None and hasattr(cp.cuda, "get_elapsed_time") else with_clock


def _agrees(cp: Any, got: Any, ref: Any, k: int) -> bool:
    """Whether an algorithm's product matches cuBLAS's: equal NaN/inf positions and finite values
    within what reordered (TF32) accumulation can change."""
    g, r = cp.asnumpy(got).astype(np.float64), cp.asnumpy(ref).astype(np.float64)
    fin = np.isfinite(r)
    if not np.array_equal(fin, np.isfinite(g)) or not np.array_equal(g[~fin], r[~fin]):
        return False
    if not fin.any():
        return True
    scale = float(np.abs(r[fin]).max()) or 1.0
    return float(np.abs(g[fin] - r[fin]).max()) <= 1e-2 * scale + 1e-30


class _Workspace:
    """A device buffer with a ``.data.ptr`` (as a cupy array has)."""

    def __init__(self, mem: Any):
        self.data = mem


def workspace(cp: Any, dev: int) -> Any:
    """The device's workspace, from cupy's default pool even when a graph's private pool is the
    current allocator (graphs bake its pointer in: it must outlive them)."""
    ws = _workspaces.get(dev)
    if ws is None:
        try:
            ws = _Workspace(cp.get_default_memory_pool().malloc(WORKSPACE_BYTES))
        except Exception:  # noqa: BLE001 - (the cupy stand-in's pool does not hand out memory)
            ws = cp.empty(WORKSPACE_BYTES, np.uint8)
        _workspaces[dev] = ws
    return ws


def handle(dev: int) -> Any:
    h = _handles.get(dev)
    if h is None:
        lib = library()
        h = ctypes.c_void_p()
        _check(lib.cublasLtCreate(ctypes.byref(h)), "Create")
        _handles[dev] = h
    return h


def choose(cp: Any, plan: tuple, a: Any, b: Any, out: Any, dev: int, reference: Callable[[], Any]) -> Choice | None:
    """Measure the proposed algorithms for ``plan`` on these buffers and return the fastest whose
    product agrees with ``reference()`` (cuBLAS's call, which writes ``out``); None when there is
    none. ``out`` holds a correct product afterwards either way."""
    reference()
    lib = library()
    if lib is None:
        _say_once("fjax: FJAX_CUDA_CUBLASLT=1 but libcublasLt could not be loaded; GEMMs use cuBLAS")
        return None
    k = plan[6]
    stream = cp.cuda.get_current_stream()
    try:
        h = handle(dev)
        desc, layouts, scalars, _ = describe(lib, plan)
        candidates = heuristics(lib, h, desc, layouts, _n_algos())
    except RuntimeError as e:
        _say_once(f"fjax: cuBLASLt setup failed ({e}); GEMMs use cuBLAS")
        return None
    if not candidates:
        return None
    ref = out.copy()
    ws = workspace(cp, dev)
    timer = _timer(cp, stream)
    best: tuple[float, Choice] | None = None
    rejected = 0
    for algo, ws_size in candidates:
        ch = Choice(lib, desc, layouts, algo, ws_size, scalars)

        def run(ch: Choice = ch) -> int:
            return ch.run(h, b.data.ptr, a.data.ptr, out.data.ptr, ws.data.ptr, stream.ptr)

        if run() != 0:
            continue
        if not _agrees(cp, out, ref, k):
            rejected += 1
            continue
        run()  # warm
        t = timer(run, 3)
        if best is None or t < best[0]:
            best = (t, ch)
    if rejected:
        _say_once(f"fjax: cuBLASLt proposed {rejected} algorithm(s) whose product disagreed with cuBLAS's; not used")
    if best is None:
        reference()
        return None
    best[1].run(h, b.data.ptr, a.data.ptr, out.data.ptr, ws.data.ptr, stream.ptr)
    return best[1]


def matmul(
    cp: Any, plan: tuple, a: Any, b: Any, out: Any, dev: int, capturing: bool, reference: Callable[[], Any]
) -> bool:
    """``out = a @ b`` by the algorithm measured for this layout; False when the caller should
    make cuBLAS's call instead (not tuned yet inside a capture, no algorithm qualified, or a
    complex GEMM: ``describe`` builds real layouts only, so cuBLAS's cgemm/zgemm runs those)."""
    if out.dtype.kind == "c":
        return False
    ptrs = (a.data.ptr, b.data.ptr, out.data.ptr)
    if any(p % ALIGNMENT for p in ptrs):
        return False
    entry = _choices.get(id(plan))
    if entry is None:
        if capturing:
            return False
        with _lock:
            entry = _choices.get(id(plan))
            if entry is None:
                if len(_choices) >= 4096:
                    _choices.clear()
                entry = _choices[id(plan)] = (plan, choose(cp, plan, a, b, out, dev, reference))
                return True
    ch = entry[1]
    if ch is None:
        return False
    st = ch.run(handle(dev), ptrs[1], ptrs[0], ptrs[2], workspace(cp, dev).data.ptr, cp.cuda.get_current_stream().ptr)
    if st != 0:
        _say_once(f"fjax: cublasLtMatmul failed with status {st}; this GEMM layout uses cuBLAS from now on")
        _choices[id(plan)] = (plan, None)
        return False
    return True


def clear() -> None:
    """Forget the measured choices (the handles and workspaces stay: graphs may hold them)."""
    with _lock:
        _choices.clear()
