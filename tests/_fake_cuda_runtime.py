"""A TEST DOUBLE of ``fjax.backends.cuda.runtime`` and of the CUDA backend: nothing here touches a GPU.

``FakeRuntime`` implements the runtime's functions over numpy: its "device buffers" are
``FakeBuffer`` objects holding a numpy array and a device index. They refuse ``__array__``, so a
host copy that fjax makes anywhere but through ``to_host`` fails the test instead of silently
working, and the runtime counts uploads and downloads. ``FakeCudaBackend`` stands in for
``CudaBackend`` under the name ``"cuda"``: it runs the kernel IR program it is given with the numba
backend on the fake buffers' arrays. Together they test fjax's placement and dispatch logic (which
device a computation runs on, that device buffers go in and come out, that nothing is copied back
to the host behind the user's back); they say nothing about CUDA code generation or a real GPU.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from fjax.backends import dispatch
from fjax.backends.backend import Backend

RUNTIME_API = (
    "available",
    "unavailable_reason",
    "device_count",
    "device_kind",
    "device",
    "memory_stats",
    "synchronize",
    "empty",
    "to_device",
    "to_host",
    "matmul",
    "module",
    "launch",
)


class FakeBuffer:
    """A stand-in for a cupy array: the metadata fjax reads, a numpy array inside."""

    __slots__ = ("array", "device_id")

    def __init__(self, array: np.ndarray, device_id: int):
        self.array = array
        self.device_id = device_id

    @property
    def shape(self) -> tuple:
        return self.array.shape

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def ndim(self) -> int:
        return self.array.ndim

    @property
    def size(self) -> int:
        return self.array.size

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise AssertionError("a fake device buffer was read as a host array outside runtime.to_host")

    @property
    def __cuda_array_interface__(self) -> dict:
        return {
            "shape": self.array.shape,
            "typestr": self.array.dtype.str,
            "data": (self.array.ctypes.data, True),
            "version": 3,
        }

    def __repr__(self) -> str:
        return f"FakeBuffer(device={self.device_id}, shape={self.shape}, dtype={self.dtype})"


class FakeRuntime:
    """The runtime's functions on numpy buffers, with ``n_devices`` pretend GPUs."""

    def __init__(self, n_devices: int = 2, kind: str = "Fake GPU (test double)"):
        self.n_devices = n_devices
        self.kind = kind
        self.current = [0]
        self.uploads = 0
        self.downloads = 0

    def available(self) -> bool:
        return self.n_devices > 0

    def unavailable_reason(self) -> str:
        return "" if self.n_devices else "the test double has no devices"

    def device_count(self) -> int:
        return self.n_devices

    def device_kind(self, index: int) -> str:
        return self.kind

    @contextlib.contextmanager
    def device(self, index: int) -> Iterator[None]:
        assert 0 <= index < self.n_devices, index
        self.current.append(index)
        try:
            yield
        finally:
            self.current.pop()

    def memory_stats(self, index: int) -> dict:
        return {"bytes_in_use": 0, "bytes_limit": 1 << 30}

    def synchronize(self) -> None:
        pass

    def wrap(self, a: np.ndarray) -> FakeBuffer:
        """A buffer on the current device holding ``a`` (what a kernel writes; not a transfer)."""
        return FakeBuffer(a if a.flags.c_contiguous else np.array(a, order="C"), self.current[-1])

    def empty(self, shape: tuple, dtype: Any) -> FakeBuffer:
        return self.wrap(np.empty(shape, dtype))

    def to_device(self, x: np.ndarray) -> FakeBuffer:
        assert type(x) is np.ndarray, type(x)
        self.uploads += 1
        return self.wrap(np.array(x, copy=True))

    def to_host(self, buf: FakeBuffer) -> np.ndarray:
        assert isinstance(buf, FakeBuffer), type(buf)
        self.downloads += 1
        return buf.array.copy()

    def matmul(self, a: FakeBuffer, b: FakeBuffer, out: FakeBuffer, compute: str = "") -> FakeBuffer:
        np.matmul(a.array, b.array, out=out.array)
        return out

    def module(self, source: str, options: tuple = ()) -> Any:
        return ("fake module", source, tuple(options))

    def launch(self, module: Any, kernel_name: str, grid: tuple, block: tuple, args: tuple, shared_mem: int = 0):
        raise NotImplementedError("the test double runs no CUDA kernels")


def _host_step_name(step: Any) -> str | None:
    """The primitive name of a host step (``HostCall``), across the IR's old and new spellings."""
    if type(step).__name__ != "HostCall":
        return None
    name = getattr(step, "op", None)
    if name is None:
        eqn = getattr(step, "eqn", None)
        name = eqn.primitive.name if eqn is not None else None
    return name


class FakeCudaBackend(Backend):
    """Stands in for ``CudaBackend`` (registered as ``"cuda"``): runs the program it is given with the
    numba backend on the arrays inside the fake buffers, and returns fake buffers on the current
    device. ``unsupported``: primitives it raises NotImplementedError for (as the real backend does
    for one without a CUDA lowering)."""

    name = "cuda"

    def __init__(self, unsupported: tuple = ()):
        self._numba = dispatch.get_backend("numba")
        self.capabilities = self._numba.capabilities
        self.unsupported = frozenset(unsupported)
        self.programs: list = []
        self.calls = 0

    def compile(self, program: Any, runtime: Any = None) -> Any:
        for step in program.steps:
            name = _host_step_name(step)
            if name in self.unsupported:
                raise NotImplementedError(f"{name} has no CUDA lowering (test double)")
        fn = self._numba.compile(program)
        self.programs.append(program)

        def call(*bufs: Any) -> list:
            for b in bufs:
                assert isinstance(b, FakeBuffer), f"the CUDA backend was handed a {type(b).__name__}"
            self.calls += 1
            outs = fn(*[b.array for b in bufs])
            return [runtime.wrap(np.asarray(o)) for o in outs]

        return call


def install(monkeypatch: Any, fake: FakeRuntime, backend: FakeCudaBackend) -> None:
    """Stand ``fake`` in for ``fjax.backends.cuda.runtime`` and ``backend`` for the "cuda" backend."""
    from fjax import _devices, _placement
    from fjax.backends.cuda import runtime as rt

    for name in RUNTIME_API:
        monkeypatch.setattr(rt, name, getattr(fake, name))
    monkeypatch.setattr(rt, "wrap", fake.wrap, raising=False)
    dispatch.register_backend("cuda", backend)
    _devices._reset_platforms()
    _placement._clear()
    _placement.rearm()


def uninstall() -> None:
    from fjax import _devices, _placement

    dispatch.register_backend("cuda", "fjax.backends.cuda.backend:CudaBackend")
    _devices._reset_platforms()
    _placement._clear()
    _placement.rearm()
