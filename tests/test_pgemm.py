"""fjax.backends.numba.pgemm: large GEMMs of jit programs cut into blocks that the calling thread
and a helper thread claim from a shared counter (OpenBLAS single-threaded per block).

Checked against numpy in float64: every transpose combination, both split directions, extents that
are not multiples of the block alignment, float32 and float64; the caller alone (no helper on the
control block), a control block owned by another caller, concurrent callers, a forked child, exit
with the helper running, and the jit programs that use it (MLP forward and backward)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import _blas
from fjax.backends.numba import pgemm

fjax.config.update("fjax_jit_backend", "numba")

needs_blas = pytest.mark.skipif(not pgemm.available(), reason="needs numpy's OpenBLAS (ILP64 cblas symbols)")
pytestmark = needs_blas


def _operands(rng, m, k, n, ta, tb, dt):
    a_full = rng.standard_normal((m, k)).astype(dt)
    b_full = rng.standard_normal((k, n)).astype(dt)
    a = np.ascontiguousarray(a_full.T) if ta else a_full
    b = np.ascontiguousarray(b_full.T) if tb else b_full
    return a, b, a_full.astype(np.float64) @ b_full.astype(np.float64)


def _tol(dt):
    return dict(rtol=2e-4, atol=2e-3) if dt == np.float32 else dict(rtol=1e-10, atol=1e-9)


@given(
    m=st.sampled_from([1, 7, 33, 130, 256, 300]),
    k=st.sampled_from([1, 5, 64, 257]),
    n=st.sampled_from([1, 10, 47, 256, 513]),
    ta=st.booleans(),
    tb=st.booleans(),
    f64=st.booleans(),
)
def test_gemm_matches_numpy(m, k, n, ta, tb, f64):
    dt = np.float64 if f64 else np.float32
    a, b, ref = _operands(np.random.default_rng(m * 1000 + k * 10 + n), m, k, n, ta, tb, dt)
    o = np.full((m, n), np.nan, dt)
    pgemm.gemm(a, b, o, ta, tb)
    np.testing.assert_allclose(o, ref, **_tol(dt))


@pytest.mark.parametrize("shape", [(256, 784, 512), (784, 256, 512), (512, 256, 40), (40, 256, 4096)])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_caller_alone_runs_every_block(shape, ta, tb):
    """A control block no helper reads: the caller claims all blocks (2 or 4 of them) itself."""
    m, k, n = shape
    a, b, ref = _operands(np.random.default_rng(0), m, k, n, ta, tb, np.float32)
    ctl = np.zeros_like(pgemm._pool.ctl)
    o = np.full((m, n), np.nan, np.float32)
    pgemm.run(ctl, a, b, o, ta, tb)
    np.testing.assert_allclose(o, ref, **_tol(np.float32))
    nb = (int(ctl[pgemm.NEXT]) >> 16) & 0xFFFF
    ext = max(m, n)
    assert nb == (4 if ext >= 256 else 2)  # split along the larger of m, n
    assert ctl[pgemm.DONE] == nb and ctl[pgemm.SEQ] == 1 and ctl[pgemm.OWNER] == 0
    bounds = ctl[pgemm.PARAMS + 16 : pgemm.PARAMS + 17 + nb]
    assert bounds[0] == 0 and bounds[-1] == ext and np.all(np.diff(bounds) >= 0)
    assert np.all(bounds[:-1] % pgemm._ALIGN == 0)


def test_owned_control_block_runs_alone_and_small_gemms_are_not_split():
    a, b, ref = _operands(np.random.default_rng(1), 256, 784, 512, False, False, np.float32)
    ctl = np.zeros_like(pgemm._pool.ctl)
    ctl[pgemm.OWNER] = 1  # another thread's job holds the pool
    o = np.full((256, 512), np.nan, np.float32)
    pgemm.run(ctl, a, b, o, False, False)
    np.testing.assert_allclose(o, ref, **_tol(np.float32))
    assert ctl[pgemm.SEQ] == 0 and ctl[pgemm.OWNER] == 1  # nothing published, owner untouched
    a, b, ref = _operands(np.random.default_rng(2), 64, 64, 64, False, False, np.float32)
    ctl[pgemm.OWNER] = 0
    o = np.empty((64, 64), np.float32)
    pgemm.run(ctl, a, b, o, False, False)  # 262k multiply-adds < MIN_PAR_MACS
    np.testing.assert_allclose(o, ref, **_tol(np.float32))
    assert ctl[pgemm.SEQ] == 0


def test_helper_runs_blocks_and_threads_restored(monkeypatch):
    if pgemm.threads() < 2 and pgemm._want_threads() < 2:
        pytest.skip("one core: no helper thread")
    monkeypatch.setattr(pgemm, "cores_busy", lambda now=None: False)  # (a busy CI machine runs solo)
    a, b, ref = _operands(np.random.default_rng(3), 256, 784, 512, False, False, np.float32)
    o = np.empty((256, 512), np.float32)
    before = int(pgemm._pool.ctl[pgemm.HELPED])
    for _ in range(400):  # the helper wakes within a few of these (it may start asleep)
        pgemm.gemm(a, b, o, False, False)
        if int(pgemm._pool.ctl[pgemm.HELPED]) > before:
            break
    _blas.restore()
    assert pgemm.threads() == 2
    assert int(pgemm._pool.ctl[pgemm.HELPED]) > before
    np.testing.assert_allclose(o, ref, **_tol(np.float32))


def test_non_contiguous_operands_fall_back_to_numpy():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((300, 600)).astype(np.float32)[:, ::2]  # (300, 300), strided
    b = rng.standard_normal((300, 256)).astype(np.float32)
    o = np.empty((300, 256), np.float32)
    pgemm.gemm(a, b, o, False, False)
    np.testing.assert_allclose(o, a.astype(np.float64) @ b, **_tol(np.float32))


def test_concurrent_callers():
    """Four threads' GEMMs at once: one at a time owns the pool, the others run alone."""
    rng = np.random.default_rng(5)
    jobs = [_operands(rng, 256, 384, 512, i % 2 == 1, i % 3 == 0, np.float32) for i in range(4)]
    errors: list = []

    def run(i):
        a, b, ref = jobs[i]
        o = np.empty(ref.shape, np.float32)
        for _ in range(30):
            pgemm.gemm(a, b, o, i % 2 == 1, i % 3 == 0)
            if not np.allclose(o, ref, **_tol(np.float32)):
                errors.append(i)
                return

    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    assert pgemm._pool.ctl[pgemm.OWNER] == 0


def _mlp_loss(params, x, y):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    return jnp.mean((x @ w + b - y) ** 2)


_mlp_grad = fjax.jit(fjax.value_and_grad(_mlp_loss))


def _np_mlp_grad(params, x, y):
    (w1, b1), (w2, b2) = [(w.astype(np.float64), b.astype(np.float64)) for w, b in params]
    x, y = x.astype(np.float64), y.astype(np.float64)
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    val = np.mean((z - y) ** 2)
    dz = 2 * (z - y) / z.size
    dh = (dz @ w2.T) * (1 - h * h)
    return val, [(x.T @ dh, dh.sum(0)), (h.T @ dz, dz.sum(0))]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_jit_mlp_gradient_uses_pgemm(dt, x64):
    rng = np.random.default_rng(6)
    params = [
        (rng.standard_normal((300, 512)).astype(dt) / 17, np.zeros(512, dt)),
        (rng.standard_normal((512, 64)).astype(dt) / 23, np.zeros(64, dt)),
    ]
    x, y = rng.standard_normal((256, 300)).astype(dt), rng.standard_normal((256, 64)).astype(dt)
    src = _mlp_grad.lower(params, x, y).as_text()
    # x@w1 (39M), dh@... : the 39M and 8M multiply-add GEMMs go through the pool, in every layout
    assert src.count("_pg(") >= 3, src
    assert "True, False)" in src and "False, True)" in src
    val, grads = _mlp_grad(params, x, y)
    rval, rgrads = _np_mlp_grad(params, x, y)
    tol = dict(rtol=2e-3, atol=1e-5) if dt == np.float32 else dict(rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(float(val), rval, **tol)
    for (gw, gb), (rw, rb) in zip(grads, rgrads):
        np.testing.assert_allclose(np.asarray(gw), rw, **tol)
        np.testing.assert_allclose(np.asarray(gb), rb, **tol)
    if _blas._get is not None:
        assert _blas._get() == _blas.DEFAULT  # numpy's team back after the call


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_computes_alone():
    a, b, ref = _operands(np.random.default_rng(7), 256, 784, 512, False, False, np.float32)
    o = np.empty((256, 512), np.float32)
    pgemm.gemm(a, b, o, False, False)  # the parent's helper is running
    pid = os.fork()
    if pid == 0:  # the child: no helper thread, a fresh control block
        code = 1
        try:
            o2 = np.full((256, 512), np.nan, np.float32)
            pgemm.gemm(a, b, o2, False, False)
            ok = np.allclose(o2, ref, **_tol(np.float32)) and pgemm._pool.ctl[pgemm.OWNER] == 0
            code = 0 if ok else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_process_exits_with_helper_running():
    code = (
        "import numpy as np\n"
        "from fjax.backends.numba import pgemm\n"
        "a = np.ones((256, 784), np.float32); b = np.ones((784, 512), np.float32)\n"
        "o = np.empty((256, 512), np.float32)\n"
        "for _ in range(5): pgemm.gemm(a, b, o, False, False)\n"
        "assert (o == 784).all()\n"
        "print('threads', pgemm.threads())\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "threads" in p.stdout


def test_read_only_inputs_share_one_overload_per_dtype():
    """fjax Arrays are read-only numpy arrays: they and writable ones run the same compiled overload
    (installed once per dtype; the dispatcher never compiles another)."""
    for dt in (np.float32, np.float64):
        a, b, ref = _operands(np.random.default_rng(8), 256, 200, 300, False, True, dt)
        for ro_a, ro_b in ((True, True), (False, True), (True, False), (False, False)):
            av, bv = a.view(), b.view()
            av.flags.writeable, bv.flags.writeable = not ro_a, not ro_b
            o = np.full((256, 300), np.nan, dt)
            pgemm.gemm(av, bv, o, False, True)
            np.testing.assert_allclose(o, ref, **_tol(dt))
    assert len(pgemm._gemm.overloads) == 2
    assert len(pgemm._worker.overloads) == 1


def test_busy_machine_runs_gemms_in_one_call(monkeypatch):
    """While other threads take every other core (``pgemm.cores_busy``) a GEMM is one call on the
    calling thread: no job is published to the helper."""
    a, b, ref = _operands(np.random.default_rng(9), 256, 784, 512, False, False, np.float32)
    o = np.full((256, 512), np.nan, np.float32)
    pgemm.gemm(a, b, o, False, False)  # the pool started
    seq = int(pgemm._pool.ctl[pgemm.SEQ])
    monkeypatch.setattr(pgemm, "cores_busy", lambda now=None: True)
    o[...] = np.nan
    pgemm.gemm(a, b, o, False, False)
    np.testing.assert_allclose(o, ref, **_tol(np.float32))
    assert int(pgemm._pool.ctl[pgemm.SEQ]) == seq
    monkeypatch.setattr(pgemm, "cores_busy", lambda now=None: False)
    pgemm.gemm(a, b, o, False, False)
    assert int(pgemm._pool.ctl[pgemm.SEQ]) == seq + 1
    np.testing.assert_allclose(o, ref, **_tol(np.float32))


def test_no_helper_means_one_call(monkeypatch):
    """Without a helper thread (``FJAX_GEMM_THREADS=1``, one core) a GEMM is one BLAS call: the
    blocks would only add their cost."""
    a, b, ref = _operands(np.random.default_rng(10), 256, 784, 512, True, False, np.float32)
    o = np.full((256, 512), np.nan, np.float32)
    pgemm.gemm(a, b, o, True, False)  # the pool started
    seq = int(pgemm._pool.ctl[pgemm.SEQ])
    monkeypatch.setattr(pgemm._pool, "threads", [])
    monkeypatch.setattr(pgemm, "cores_busy", lambda now=None: False)
    o[...] = np.nan
    pgemm.gemm(a, b, o, True, False)
    np.testing.assert_allclose(o, ref, **_tol(np.float32))
    assert int(pgemm._pool.ctl[pgemm.SEQ]) == seq


def test_one_thread_setting_starts_no_helper():
    code = (
        "import numpy as np\n"
        "from fjax.backends.numba import pgemm\n"
        "a = np.ones((256, 784), np.float32); b = np.ones((784, 512), np.float32)\n"
        "o = np.empty((256, 512), np.float32)\n"
        "pgemm.gemm(a, b, o, False, False)\n"
        "assert (o == 784).all() and pgemm.threads() == 1 and pgemm._pool.ctl[pgemm.SEQ] == 0\n"
    )
    env = dict(os.environ, FJAX_GEMM_THREADS="1")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr


def test_cores_busy_reads_the_runnable_count(monkeypatch):
    assert pgemm.others_running(b"2.60 3.20 3.91 3/83 5556\n", 1) == 2
    assert pgemm.others_running(b"0.00 0.01 0.05 1/83 5556\n", 2) == -1
    monkeypatch.setattr(pgemm, "_NCPU", 2)
    texts = iter([b"5.0 5.0 5.0 2/90 1\n", b"0.1 0.1 0.1 1/90 1\n"])
    monkeypatch.setattr(pgemm.os, "pread", lambda fd, n, off: next(texts))
    monkeypatch.setattr(pgemm, "_loadavg", [3])
    monkeypatch.setattr(pgemm, "_busy", [-1.0, False])
    monkeypatch.setattr(pgemm._pool, "threads", [])
    assert pgemm.cores_busy(now=10.0)  # this thread and one other runnable: the other core is taken
    assert pgemm.cores_busy(now=10.001)  # decided at most every BUSY_RECHECK_S
    assert not pgemm.cores_busy(now=10.1)  # only this thread runs
    monkeypatch.setattr(pgemm, "_loadavg", [None])  # no /proc/loadavg: the load average decides
    monkeypatch.setattr(_blas, "machine_busy", lambda now=None: True)
    assert pgemm.cores_busy(now=11.0)
