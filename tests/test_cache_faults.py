"""Faults in the on-disk kernel cache: every later process still gets correct results from
compiled (not eagerly evaluated) functions, and never crashes.

Each case runs fresh Python processes on a cache directory of its own: a first one fills the
cache, the test damages it, the next one must repair it."""

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import fjax, fjax.numpy as jnp
    from fjax import lax
    from fjax.backends import dispatch
    from fjax.backends.numba import disk_cache

    x = jnp.linspace(-2.0, 2.0, 1000, dtype=jnp.float32)

    def chain(x):
        return jnp.sum(jnp.tanh(x) * 1.2345678 + jnp.exp(-x * x) * 0.3141592)

    def rnn(x):
        def step(h, xi):
            h = jnp.tanh(h * 0.9 + xi * 0.37)
            return h, h * 2.0
        return lax.scan(step, jnp.zeros(10, jnp.float32), x.reshape(100, 10))

    out, compiled = {}, {}
    def cum(x):
        return jnp.cumsum(x) * 2.0  # a compiled host kernel: a module-level numba helper

    for name, f in [("chain", chain), ("rnn", rnn), ("grad", fjax.grad(chain)), ("cum", cum)]:
        jf = fjax.jit(f)
        r = jf(x)
        leaves = fjax.tree_util.tree_leaves(r)
        out[name] = [np.asarray(a, np.float64).ravel().tolist() for a in leaves]
        closed = jf.lower(x).jaxpr
        entry = (closed.compiled or {}).get(dispatch.DEFAULT_BACKEND)  # keyed by backend name
        compiled[name] = entry is not None and entry[1] is not None and entry[2] == 0
    kernels = list(disk_cache._by_hash.values())
    hits = sum(sum(k.stats.cache_hits.values()) for k in kernels)
    misses = sum(sum(k.stats.cache_misses.values()) for k in kernels)
    print("RESULT " + json.dumps({"out": out, "compiled": compiled, "hits": hits, "misses": misses}))
    """
)


def _env(cache_dir, **extra):
    env = dict(os.environ)
    env["FJAX_CACHE_DIR"] = str(cache_dir)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def _run(cache_dir, preexec_fn=None, prefix=(), **extra):
    p = subprocess.run(
        [*prefix, sys.executable, "-c", CHILD],
        env=_env(cache_dir, **extra),
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=preexec_fn,
    )
    assert p.returncode == 0, f"child died ({p.returncode}):\n{p.stderr[-3000:]}"
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    res = json.loads(line[len("RESULT ") :])
    res["stderr"] = p.stderr
    return res


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Results from a healthy cold cache, and a warm copy of that cache to damage."""
    d = tmp_path_factory.mktemp("healthy")
    first = _run(d)
    assert all(first["compiled"].values())
    warm = _run(d)
    assert warm["misses"] == 0 and warm["hits"] > 0, "a healthy warm cache loads every kernel"
    return first, d


def _copy_cache(src, dst):
    shutil.copytree(src, dst)
    return dst


def _check(res, ref):
    assert all(res["compiled"].values()), res["compiled"]
    for k, want in ref["out"].items():
        for a, b in zip(res["out"][k], want):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, err_msg=k)


def _kernel_sources(d):
    return sorted((d / "kernels").glob("k_*.py"))


def test_truncated_sources_are_rewritten(reference, tmp_path):
    ref, healthy = reference
    d = _copy_cache(healthy, tmp_path / "c")
    for f in _kernel_sources(d):
        text = f.read_text()
        cut = text.rfind("\n", 0, int(len(text) * 0.8))
        st = f.stat()
        f.write_text(text[: cut + 1])
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with the old timestamp
    res = _run(d)
    _check(res, ref)
    assert "damaged kernel source" in res["stderr"]
    again = _run(d)  # repaired for good: everything loads from the cache
    _check(again, ref)
    assert again["misses"] == 0 and "damaged" not in again["stderr"]


def test_tampered_constant_is_not_trusted(reference, tmp_path):
    ref, healthy = reference
    d = _copy_cache(healthy, tmp_path / "c")
    changed = 0
    for f in _kernel_sources(d):
        text = f.read_text()
        m = re.search(r"0x1\.([0-9a-f])", text)
        if m is None:
            continue
        digit = "0" if m.group(1) != "0" else "1"
        st = f.stat()
        f.write_text(text[: m.start(1)] + digit + text[m.end(1) :])  # same size
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime: numba's stamp still matches
        changed += 1
    assert changed
    _check(_run(d), ref)


def test_flipped_bits_in_object_code(reference, tmp_path):
    ref, healthy = reference
    d = _copy_cache(healthy, tmp_path / "c")
    nbc = sorted((d / "kernels" / "__pycache__").glob("*.nbc"))
    assert nbc
    rng = np.random.default_rng(0)
    for f in nbc:
        data = bytearray(f.read_bytes())
        for pos in rng.integers(len(data) // 4, len(data), 8):  # 8 bits in the body
            data[pos] ^= 1 << int(rng.integers(8))
        f.write_bytes(bytes(data))
    res = _run(d)
    _check(res, ref)
    assert "damaged compiled code" in res["stderr"]
    again = _run(d)
    _check(again, ref)
    assert again["misses"] == 0


def test_checksum_files_naming_other_files_are_not_trusted(reference, tmp_path):
    # a seal is read before anything is listed: one naming files outside its kernel (or garbage)
    # counts as no seal, so the object code is recompiled
    ref, healthy = reference
    d = _copy_cache(healthy, tmp_path / "c")
    sums = sorted((d / "kernels" / "__pycache__").glob("*.sum"))
    assert sums
    for i, f in enumerate(sums):
        f.write_text('{"../../k_x.nbi": "00"}' if i % 2 else "not json")
    res = _run(d)
    _check(res, ref)
    assert res["hits"] == 0
    assert _run(d)["misses"] == 0


def test_unsealed_object_code_is_recompiled(reference, tmp_path):
    # object code without its checksum file (a process died between numba's write and the seal)
    ref, healthy = reference
    d = _copy_cache(healthy, tmp_path / "c")
    for f in (d / "kernels" / "__pycache__").glob("*.sum"):
        f.unlink()
    res = _run(d)
    _check(res, ref)
    assert res["hits"] == 0
    assert _run(d)["misses"] == 0


def _unprivileged():
    """(command prefix, env) for a child that cannot write a directory we make read-only: root
    ignores permission bits, so as root the child runs as ``nobody`` (through util-linux's
    ``setpriv``), with no HOME."""
    if os.geteuid() != 0:
        return (), {}
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make a directory read-only for the child")
    return (setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"), {"HOME": "/nonexistent"}


def test_read_only_cache_missing_kernels(reference, tmp_path):
    ref, healthy = reference
    d = _copy_cache(healthy, tmp_path / "c")
    victims = _kernel_sources(d)[:2]
    for f in victims:
        f.unlink()  # kernels the read-only cache does not hold
    for root, dirs, files in os.walk(d):
        for n in files:
            os.chmod(os.path.join(root, n), 0o444)
        for n in dirs:
            os.chmod(os.path.join(root, n), 0o555)
    os.chmod(d, 0o555)
    os.chmod(tmp_path, 0o755)
    prefix, env = _unprivileged()
    try:
        res = _run(d, prefix=prefix, **env)
    finally:
        for root, dirs, _ in os.walk(d):
            for n in dirs:
                os.chmod(os.path.join(root, n), 0o755)
        os.chmod(d, 0o755)
    _check(res, ref)
    assert "compile in memory" in res["stderr"]
    assert res["stderr"].count("compile in memory") == 1  # said once


def test_uncreatable_cache_dir_and_unwritable_home(reference, tmp_path):
    ref, _ = reference
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    prefix, _ = _unprivileged()
    res = _run(blocker / "cache", prefix=prefix, HOME="/nonexistent")
    _check(res, ref)
    assert res["stderr"].count("compile in memory") == 1


def _limit_file_size():
    # a full disk: every write past 2 KB fails (EFBIG) instead of killing the process
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))


def test_full_disk(reference, tmp_path):
    ref, _ = reference
    # a NUMBA_CACHE_DIR of its own: the backend's helpers must be compiled (and fail to save) too
    res = _run(tmp_path / "c", preexec_fn=_limit_file_size, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    _check(res, ref)


def test_two_processes_compile_into_one_cache(reference, tmp_path):
    ref, _ = reference
    d = tmp_path / "c"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD], env=_env(d), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads([ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1][7:]))
    for r in results:
        _check(r, ref)
    # one compile per kernel: whatever one process compiled, the other loaded
    assert sum(r["misses"] for r in results) == ref["misses"]
    third = _run(d)
    assert third["misses"] == 0 and third["hits"] > 0


def test_flipped_bits_in_helper_object_code(reference, tmp_path):
    # numba's cache of the backend's own helpers (here in a NUMBA_CACHE_DIR of this test's own)
    ref, _ = reference
    nb = tmp_path / "numba"
    first = _run(tmp_path / "c", NUMBA_CACHE_DIR=str(nb))
    _check(first, ref)
    nbc = sorted(nb.rglob("host_kernels.*.nbc"))
    assert nbc and list(nb.rglob("fjax_host_kernels.sum"))  # compiled, then sealed
    for f in nbc:
        data = bytearray(f.read_bytes())
        for pos in range(len(data) // 3, len(data), max(1, len(data) // 9))[:8]:
            data[pos] ^= 0x10
        f.write_bytes(bytes(data))
    res = _run(tmp_path / "c", NUMBA_CACHE_DIR=str(nb))
    _check(res, ref)
    assert "damaged compiled helpers of host_kernels" in res["stderr"]
    _check(_run(tmp_path / "c", NUMBA_CACHE_DIR=str(nb)), ref)
