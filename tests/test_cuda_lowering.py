"""The CUDA backend without a GPU: a corpus of programs lowered to CUDA C
(``jit(f).trace(*args).lower(lowering_platforms=("cuda",)).as_text()``), compiled with nvcc for
sm_80 and sm_90 (one translation unit per arch for the whole corpus; no register spills in the
elementwise kernels), and run on the CPU emulator (the same source compiled with g++ against
``cuda_emu.h``) against the numba backend. Programs that need a primitive with no CUDA form check
that the error names it. Skips cleanly without nvcc (compile checks) or g++ (emulation)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate

rng = np.random.default_rng(0)


@pytest.fixture(autouse=True, scope="module")
def _float32_matmuls():
    """Results are compared with the CPU's float32 ones: GEMMs in full float32 here (a GPU's default
    is TF32, as JAX's; tests/test_cuda_precision.py checks that)."""
    with fjax.default_matmul_precision("float32"):
        yield


def _f32(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# the corpus: name -> (function, args)


def chain(x):
    y = jnp.tanh(x) * jnp.exp(-x * x) + jnp.sin(x) * 0.5
    z = jnp.log1p(jnp.abs(x)) + jnp.expm1(x * 0.1) - lax.erf(x) + jax_nn_sigmoid(x)
    return jnp.where(x > 0, y, z) / (1.0 + x * x), jnp.sqrt(jnp.abs(x)) * jnp.cos(x) + jnp.floor(x * 3.0)


def jax_nn_sigmoid(x):
    return fjax.nn.sigmoid(x)


def chain64(x):
    return jnp.tanh(x) * jnp.exp(-x * x) + jnp.arctan2(x, 1.0 + x * x) + jnp.cbrt(x) + lax.rsqrt(1.0 + x * x)


def int_ops(a, b):
    u = a.astype(jnp.uint32)
    return (
        a // b,
        a % b,
        lax.shift_right_logical(u, jnp.uint32(3)) ^ (u << 2),
        lax.shift_right_arithmetic(a, jnp.int32(2)),
        (a.astype(jnp.float32) * 1e9).astype(jnp.int32),
        jnp.maximum(a, b) - jnp.minimum(a, b) * a,
        jnp.sign(a) * jnp.abs(b),
    )


def reductions(x):
    return (
        x.sum(axis=1),
        x.max(axis=0),
        x.min(),
        jnp.prod(x[:, :3] * 0.5 + 1.0, axis=1),
        x.sum(),
        (x > 0).any(axis=1),
        (x > -3).all(),
    )


def big_sum(x):
    return jnp.sum(jnp.tanh(x) * jnp.exp(-x * x) + jnp.sin(x) * 0.5), jnp.max(x)


def softmax(x):
    return fjax.nn.softmax(x, axis=-1), fjax.nn.log_softmax(x, axis=0)


def mlp_step(params, x, y):
    def loss(p):
        h = jnp.tanh(x @ p[0] + p[1])
        o = h @ p[2] + p[3]
        return jnp.mean((o - y) ** 2)

    lval, g = fjax.value_and_grad(loss)(params)
    return lval, [p - 0.1 * gi for p, gi in zip(params, g)]


def _rnn(w, h0, xs):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h.sum()

    return lax.scan(step, h0, xs)


def rnn(w, h0, xs):
    return _rnn(w, h0, xs)


def rnn_grad(w, h0, xs):
    return fjax.grad(lambda w: _rnn(w, h0, xs)[0].sum() + _rnn(w, h0, xs)[1].sum())(w)


def conv(x, k):
    return lax.conv_general_dilated(x, k, (1, 1), "SAME")


def conv_grad(x, k):
    return fjax.grad(lambda k: conv(x, k).sum())(k)


def cumsum(x):
    return jnp.cumsum(x, axis=1), lax.cummax(x, axis=0, reverse=True), jnp.argmax(x, axis=0)


def conv_nhwc_strided(x, k):
    y = lax.conv_general_dilated(
        x, k, (2, 2), ((1, 0), (0, 1)), rhs_dilation=(1, 2), dimension_numbers=("NHWC", "HWIO", "NHWC")
    )
    return y, fjax.grad(
        lambda x: (
            lax.conv_general_dilated(x, k, (2, 2), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")) ** 2
        ).sum()
    )(x)


def grouped_conv(x, k):
    y = lax.conv_general_dilated(x, k, (1, 1), "SAME", feature_group_count=2)
    return y, fjax.grad(lambda k: (lax.conv_general_dilated(x, k, (1, 1), "SAME", feature_group_count=2) ** 2).sum())(k)


def batch_grouped_conv(x, k):
    return lax.conv_general_dilated(x, k, (1, 1), "SAME", batch_group_count=2)


def sort(x, i):
    y = x.at[0, 2].set(jnp.nan).at[1, :3].set(0.0).at[1, 4].set(-0.0)
    return jnp.sort(y, axis=-1), jnp.sort(y, axis=0), jnp.argsort(y, axis=1), lax.sort((i, x), num_keys=1)


def sort_long(x, i):
    # longer than one shared-memory tile (1024): the tile sort, then two global merge passes
    return jnp.sort(x), jnp.argsort(x), lax.sort((i, x), num_keys=2)


def elementwise_vec(x, y, i, b):
    # flat float32 / int32 buffers (the vector path; sizes not multiples of 4), with a broadcast
    # operand, an iota and a bool output read and written per lane (float64: test_vector_path_*)
    return (
        x * 2.0 + 1.0,
        y * y - 0.5,
        i * 3 + 1,
        (x[:, None] * b + lax.broadcasted_iota(jnp.float32, (1003, 3), 1)),
        x > 0,
    )


def gather_scatter(x, idx, v):
    return x[idx], x.at[idx].add(v), jnp.take_along_axis(x[:6], idx[:, None] % 4, axis=1)


def gather_grad(x, idx):
    return fjax.grad(lambda x: (x[idx] ** 2).sum())(x)


def while_cond(x, n):
    def body(i, c):
        return c * 0.9 + jnp.sin(c) * 0.1

    y = lax.fori_loop(0, n, body, x)
    z = lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.1), (jnp.int32(0), x))[1]
    w = lax.cond(n > 3, lambda v: v * 2.0, lambda v: v - 1.0, x)
    return y, z, w


def dus_loop(x):
    def body(i, c):
        return c.at[i].set(c[i] * 2.0 + 1.0)

    return lax.fori_loop(0, 4, body, x)


def random_bits(key):
    k1, k2 = fjax.random.split(key)
    return fjax.random.bits(k1, (64,)), fjax.random.uniform(k2, (32,)), fjax.random.normal(k2, (16,))


def truncated_normal(key, x):
    # what nn initializers draw (examples/digits_mlp.py on a GPU): nextafter, erf_inv, clamp
    return fjax.random.truncated_normal(key, -2.0, 2.0, (64,)), lax.nextafter(x, jnp.float32(np.inf))


def vmap_grad(w, xs, ys):
    def loss(w, x, y):
        return jnp.log1p(jnp.exp(-y * jnp.dot(x, w)))

    return fjax.vmap(fjax.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)


def per_example(w, b, xs, ys):
    # a 100-long contraction: the product z = x @ w joins its consumers' row kernel (matvec_rows.py)
    def loss(w, b, x, y):
        return jnp.logaddexp(0.0, -y * (jnp.dot(x, w) + b))

    return fjax.vmap(fjax.grad(loss, argnums=(0, 1)), in_axes=(None, None, 0, 0))(w, b, xs, ys)


def special(x, a, i):
    # the host-step primitives of fjax/backends/cuda/special_ops.py, and cumlogsumexp
    v, j = lax.top_k(x, 3)
    return (
        lax.digamma(a) + lax.bessel_i1e(x) + lax.igamma(a, a * 1.5) + lax.cumlogsumexp(x, axis=1),
        lax.reduce_precision(x, 5, 10) * lax.bessel_i0e(x),
        v,
        j,
        lax.top_k(x, 70)[1],
        lax.clz(i) + lax.population_count(i),
        fjax.scipy.special.ndtri(a / 8.0) + fjax.scipy.special.log_ndtr(x) + fjax.scipy.special.erfcx(x),
    )


def special2(x, a):
    # the special_ops2.py kernels (x in (0, 1), a > 0)
    sp = fjax.scipy.special
    return (
        lax.betainc(a, a + 0.5, x) + lax.zeta(a + 1.5, a) + sp.expi(x - 0.5) + sp.owens_t(x, a),
        sp.bessel_jn(a * 3.0, v=2)[2] + sp.spence(a) + sp.gamma(x - 0.5) + sp.fresnel(a)[0] + sp.sici(a)[1],
    )


def linalg(a, b):
    # the factorizations of fjax/backends/cuda/linalg_ops.py, and a solve on top of them
    spd = a @ a.T + 8.0 * jnp.eye(8)
    L = lax.linalg.cholesky(spd)
    q, r = jnp.linalg.qr(a[:, :5])
    lu, piv, perm = lax.linalg.lu(a)
    w, v = jnp.linalg.eigh(spd)
    u, s, vt = jnp.linalg.svd(a[:, :6], full_matrices=False)
    return (
        w,
        v * v,  # (eigenvectors are unique up to sign)
        s,
        (u * s) @ vt,
        L,
        lax.linalg.triangular_solve(L, b, left_side=True, lower=True),
        q,
        r,
        lu,
        piv,
        perm,
        jnp.linalg.solve(spd, b),
    )


def special3(x, a, z):
    # kernels the H100 run of 2026-11-27 had not reached: special_hyp.py, wofz, sph_harm_y
    sp = fjax.scipy.special
    n = jnp.array([0, 1, 2, 3], jnp.int32)
    m = jnp.array([0, 1, -1, 2], jnp.int32)
    return (
        sp.hyp1f1(a, a + 1.0, x) + sp.hyp2f1(a, 0.5, a + 1.5, x * 0.5),
        sp.wofz(z),
        sp.sph_harm_y(n, m, x[0, :4] * 3.0, x[1, :4] * 6.0, n_max=3),
    )


def linalg_extra(dl, d, du, b, a):
    # tridiagonal_solve and householder_product (linalg_extra.py), complex Cholesky/QR (linalg_ops.py)
    x = lax.linalg.tridiagonal_solve(dl, d, du, b)
    q = lax.linalg.householder_product(a, jnp.array([1.2, 0.7, 0.0], a.dtype))
    c = lax.complex(a, a * 0.5)
    h = c @ jnp.conj(c).T + 6.0 * jnp.eye(6)
    qc, rc = jnp.linalg.qr(c)
    return x, q, lax.linalg.cholesky(h), qc @ rc


def complex_chain(x, y):
    z = lax.complex(x, y)
    w = jnp.exp(z * 0.1) * jnp.conj(z) / (z + 2.0) + jnp.sqrt(z) * jnp.tanh(z) - jnp.log1p(z**3)
    return jnp.abs(w), jnp.sum(w * 1j, axis=1), z @ z.T


CORPUS = {
    "chain": (chain, (_f32(3, 1000),)),
    "chain64": (chain64, (rng.standard_normal(300),)),
    "int_ops": (
        int_ops,
        (rng.integers(-100, 100, 200).astype(np.int32), rng.integers(-3, 4, 200).astype(np.int32)),
    ),
    "reductions": (reductions, (_f32(33, 40),)),
    "big_sum": (big_sum, (_f32(70000),)),
    "softmax": (softmax, (_f32(16, 10),)),
    "mlp_step": (
        mlp_step,
        # contractions over 16 (24, 20 and the batch of 20): GEMMs; the 4-wide one is fused code
        ([_f32(24, 20) * 0.2, _f32(20) * 0.1, _f32(20, 4) * 0.3, _f32(4) * 0.1], _f32(20, 24), _f32(20, 4)),
    ),
    "rnn": (rnn, (_f32(8, 8) * 0.3, _f32(8), _f32(5, 8))),
    "rnn_grad": (rnn_grad, (_f32(8, 8) * 0.3, _f32(8), _f32(5, 8))),
    "cumsum": (cumsum, (_f32(6, 7),)),
    "gather_scatter": (
        gather_scatter,
        (_f32(10, 4), np.array([1, 3, 3, 0, 9, 2], np.int32), _f32(6, 4)),
    ),
    "gather_grad": (gather_grad, (_f32(10, 4), np.array([1, 3, 3, 0, 9, 2], np.int32))),
    "while_cond": (while_cond, (_f32(20), np.int32(5))),
    "dus_loop": (dus_loop, (_f32(6, 3),)),
    "random": (random_bits, (fjax.random.PRNGKey(42),)),
    "truncated_normal": (truncated_normal, (fjax.random.PRNGKey(3), _f32(16))),
    "vmap_grad": (vmap_grad, (_f32(5), _f32(7, 5), np.sign(_f32(7)))),
    "per_example": (per_example, (_f32(100) * 0.1, np.float32(0.3), _f32(64, 100), np.sign(_f32(64)))),
    "conv": (conv, (_f32(2, 3, 8, 8), _f32(4, 3, 3, 3))),
    "sort": (sort, (_f32(4, 9), rng.integers(0, 3, (4, 9)).astype(np.int32))),
    "sort_long": (
        sort_long,
        (
            np.where(rng.random(2100) < 0.1, np.nan, rng.integers(-5, 5, 2100)).astype(np.float32),
            rng.integers(0, 3, 2100).astype(np.int32),
        ),
    ),
    "elementwise_vec": (
        elementwise_vec,
        (_f32(1003), rng.standard_normal(517), rng.integers(-100, 100, 1001).astype(np.int32), _f32(3)),
    ),
    "grouped_conv": (grouped_conv, (_f32(2, 4, 6, 6), _f32(6, 2, 3, 3))),
    "batch_grouped_conv": (batch_grouped_conv, (_f32(4, 2, 6, 6), _f32(4, 2, 3, 3))),
    "conv_grad": (conv_grad, (_f32(2, 3, 8, 8), _f32(4, 3, 3, 3))),
    "conv_nhwc_strided": (conv_nhwc_strided, (_f32(2, 9, 9, 3), _f32(3, 3, 3, 5))),
    "linalg": (linalg, (_f32(8, 8), _f32(8, 3))),
    "gamma": (
        lambda k, a: fjax.random.gamma(fjax.random.wrap_key_data(k), a),
        (np.array([7, 11], np.uint32), np.abs(_f32(64)) + 0.2),
    ),
    "poisson_binomial": (
        lambda k, lam, n, p: (
            fjax.random.poisson(fjax.random.wrap_key_data(k), lam, (2, 6)),
            fjax.random.binomial(fjax.random.wrap_key_data(k), n, p, (2, 6)),
        ),
        (
            np.array([7, 11], np.uint32),
            np.array([0.5, 3, 9.99, 10, 40, 500], np.float32),
            np.array([3, 20, 50, 1e3, 2.5, 7], np.float32),
            np.array([0.2, 0.5, 0.3, 0.9, 0.4, 0.7], np.float32),
        ),
    ),
    "special": (special, (_f32(4, 80), np.abs(_f32(4, 80)) + 0.5, rng.integers(-9, 9, 12).astype(np.int32))),
    # cuFFT steps (fft_ops.py): a real signal through its half spectrum and back, 1-D and 2-D
    "fft": (lambda x: (jnp.fft.irfft(jnp.fft.rfft(x), n=16), jnp.fft.irfftn(jnp.fft.rfftn(x))), (_f32(3, 16),)),
    "special2": (special2, (rng.uniform(0.01, 0.99, (4, 8)).astype(np.float32), np.abs(_f32(4, 8)) + 0.2)),
    "special3": (
        special3,
        (
            rng.uniform(0.01, 0.99, (4, 8)).astype(np.float32),
            rng.uniform(0.3, 3.0, (4, 8)).astype(np.float32),
            (rng.standard_normal(12) + 1j * rng.uniform(0.1, 2.0, 12)).astype(np.complex64),
        ),
    ),
    "linalg_extra": (
        linalg_extra,
        (_f32(7) * 0.1, np.abs(_f32(7)) + 4.0, _f32(7) * 0.1, _f32(7, 2), _f32(6, 3)),
    ),
    # complex64 values in the kernels (complex_ops.py): arithmetic, transcendentals, a sum, a GEMM
    "complex": (complex_chain, (_f32(8, 40), _f32(8, 40))),
    # host calls (callbacks.py): the user's function and eig's LAPACK on the host, between kernels
    "host_calls": (
        lambda x: (
            fjax.pure_callback(np.tanh, fjax.ShapeDtypeStruct(x.shape, x.dtype), x * 2) + 1,
            jnp.linalg.eigvals(x[:4, :4] @ x[:4, :4].T),
        ),
        (_f32(6, 8),),
    ),
    # compare-and-swap loops on 32-bit words holding 1- and 2-byte elements (host_ops._subword_update)
    "narrow_scatters": (
        lambda x, b, i, u, v: (x.at[i].multiply(u), x.at[i].max(u), b.at[i].add(v), b.at[i].multiply(v)),
        (
            rng.integers(-9, 9, 13).astype(np.int8),
            rng.random(13) < 0.5,
            rng.integers(0, 13, 40).astype(np.int32),
            rng.integers(-3, 4, 40).astype(np.int8),
            rng.random(40) < 0.5,
        ),
    ),
    # geqp3's column pivoting in the Householder kernel
    "qr_pivoting": (lambda x: fjax.scipy.linalg.qr(x, pivoting=True, mode="economic"), (_f32(7, 5),)),
    # custom_linear_solve inlined as its solve: conjugate gradients in a while loop
    "linear_solve": (
        lambda a, b: fjax.scipy.sparse.linalg.cg(a @ a.T + 6.0 * jnp.eye(6), b, tol=1e-6)[0],
        (_f32(6, 6), _f32(6)),
    ),
}
# programs needing a primitive with no CUDA form: the primitive the error must name
UNSUPPORTED = {
    "schur": (lambda x: fjax.scipy.linalg.schur(x), (_f32(4, 4),), "schur"),
}


def _lowered(fn, args):
    return fjax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))


@pytest.fixture(scope="module")
def sources() -> dict:
    return {name: _lowered(fn, args).as_text() for name, (fn, args) in CORPUS.items()}


def test_lowering_text_is_one_translation_unit(sources):
    src = sources["mlp_step"]
    assert src.count("FJAX_CUDA_PRELUDE") >= 1
    assert 'extern "C" __global__' in src
    assert "cublas gemm" in src and "// ---- host-side launch sequence" in src
    assert "launch fj_" in src
    # the default platform is unchanged: numba source
    fn, args = CORPUS["softmax"]
    assert "def program(" in fjax.jit(fn).trace(*args).lower().as_text()
    assert "__global__" in fjax.jit(fn).trace(*args).lower(lowering_platforms=("gpu",)).as_text()
    with pytest.raises(ValueError, match="lowering platform"):
        fjax.jit(fn).trace(*args).lower(lowering_platforms=("tpu",))
    # control flow and host steps appear in the launch sequence
    assert "scan for t in range(5)" in sources["rnn"]
    assert "while:" in sources["while_cond"] and "switch on" in sources["while_cond"]


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_names_the_primitive(name):
    fn, args, prim = UNSUPPORTED[name]
    with pytest.raises(NotImplementedError, match=re.escape(prim)):
        _lowered(fn, args).as_text()


# ---------------------------------------------------------------------------------------------
# nvcc: the whole corpus as one translation unit per arch


def _nvcc_info(src: str, arch: str, tmp) -> str:
    cu = tmp / f"corpus_{arch}.cu"
    cu.write_text(src)
    cmd = ["nvcc", f"-arch={arch}", "-c", str(cu), "-o", str(tmp / f"corpus_{arch}.o"), "-Xptxas", "-v"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    return r.stderr + r.stdout


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_corpus_without_spills(sources, arch, tmp_path):
    src = "\n".join(sources.values())
    info = _nvcc_info(src, arch, tmp_path)
    spills: dict = {}
    func = None
    for line in info.splitlines():
        m = re.search(r"Function properties for (\w+)", line) or re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            func = m.group(1)
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and func:
            spills[func] = int(m.group(1)) + int(m.group(2))
    names = set(re.findall(r'extern "C" __global__ void __launch_bounds__\(\d+\) (\w+)\(', src))
    assert names and names <= set(spills), sorted(names - set(spills))[:5]
    ew = {n: s for n, s in spills.items() if n.startswith("fj_ew_")}
    assert ew and all(s == 0 for s in ew.values()), {n: s for n, s in ew.items() if s}


# ---------------------------------------------------------------------------------------------
# emulation against the numba backend


@pytest.fixture(scope="module")
def runtime(sources):
    if emulate.compiler() is None:
        pytest.skip("no C++ compiler for the CUDA emulator")
    rt = emulate.EmulatedRuntime()
    # every program's source, one g++ compile (kernel definitions are guarded by name)
    full = {name: _lowered(fn, args) for name, (fn, args) in CORPUS.items()}
    rt.preload("\n".join(sources[n] for n in full))
    return rt


def _tol(dt: np.dtype) -> dict:
    return dict(rtol=2e-5, atol=2e-6) if dt == np.float32 else dict(rtol=1e-12, atol=1e-13)


@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler")
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_emulated_matches_numba(name, runtime):
    fn, args = CORPUS[name]
    got = emulate.run_lowered(_lowered(fn, args), *args, runtime=runtime)
    want = [np.asarray(w) for w in fjax.tree_util.tree_leaves(fjax.jit(fn)(*args))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if w.dtype.kind in "fc":
            single = w.dtype.itemsize <= 4 or w.dtype == np.complex64
            np.testing.assert_allclose(g, w, **_tol(np.float32 if single else np.float64))
        else:
            np.testing.assert_array_equal(g, w)


# programs with cooperative kernels: barriers, shared memory, warp shuffles or atomics, whose
# threads share data (the ones a thread order could change)
_COOPERATIVE = re.compile(r"__syncthreads|__shared__|__shfl|atomic")


def _cooperative() -> list:
    return sorted(n for n, (fn, args) in CORPUS.items() if _COOPERATIVE.search(_lowered(fn, args).as_text()))


@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler")
@pytest.mark.parametrize("order", ["reverse", "shuffle"])
def test_emulated_in_any_thread_order(order, runtime, monkeypatch):
    """The cooperative programs of the corpus give numba's numbers when the emulator runs blocks,
    and the threads of a block between barriers, in reverse or in a shuffled order
    (``FJAX_EMU_ORDER``): no kernel reads what another thread writes between the same two barriers
    or what another block writes, which a GPU's free order would expose."""
    names = _cooperative()
    assert len(names) >= 10, names  # (the check itself: cooperative kernels were found)
    monkeypatch.setenv("FJAX_EMU_ORDER", order)
    monkeypatch.setenv("FJAX_EMU_SEED", "7")
    for name in names:
        fn, args = CORPUS[name]
        got = emulate.run_lowered(_lowered(fn, args), *args, runtime=runtime)
        want = [np.asarray(w) for w in fjax.tree_util.tree_leaves(fjax.jit(fn)(*args))]
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype, (name, g.shape, w.shape)
            if w.dtype.kind in "fc":
                single = w.dtype.itemsize <= 4 or w.dtype == np.complex64
                np.testing.assert_allclose(g, w, err_msg=name, **_tol(np.float32 if single else np.float64))
            else:
                np.testing.assert_array_equal(g, w, err_msg=name)


@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler")
def test_threefry_bits_identical(runtime):
    fn, args = CORPUS["random"]
    got = emulate.run_lowered(_lowered(fn, args), *args, runtime=runtime)
    want = [np.asarray(w) for w in fjax.tree_util.tree_leaves(fjax.jit(fn)(*args))]
    np.testing.assert_array_equal(got[0], want[0])  # uint32 bits
    np.testing.assert_array_equal(got[1].view(np.uint32), want[1].view(np.uint32))  # uniform: bit for bit


def test_compile_without_cupy_is_a_clear_error():
    from fjax.backends import dispatch

    fn, args = CORPUS["softmax"]
    b = dispatch.get_backend("cuda")
    prog = dispatch.lower(fjax.jit(fn).trace(*args).jaxpr, b)
    try:
        import cupy  # noqa: F401

        pytest.skip("cupy is installed")
    except ImportError:
        pass
    if os.path.exists(os.path.join(os.path.dirname(emulate.__file__), "runtime.py")):
        with pytest.raises(RuntimeError):
            b.compile(prog)
    else:
        with pytest.raises(RuntimeError, match="cupy"):
            b.compile(prog)
    plan = b.plan(prog)
    assert any(type(s).__name__ == "Launch" for s in plan)


# ---------------------------------------------------------------------------------------------
# the emulator itself: barriers, shuffles and deadlocks behave as on a GPU

_EMU_SRC = r"""
#ifdef FJAX_EMULATE
#include "cuda_emu.h"
#endif
// each thread writes its id to shared memory; after the barrier it reads its neighbour's slot
// (only correct if every thread's write happened before any read: phases, not thread order)
extern "C" __global__ void __launch_bounds__(64) emu_rotate(int* out) {
  __shared__ int sh[64];
  sh[threadIdx.x] = (int)(blockIdx.x * 1000 + threadIdx.x);
  __syncthreads();
  out[blockIdx.x * 64 + threadIdx.x] = sh[(threadIdx.x + 1) % 64];
}
// a warp sum by shuffles: lane 0 gets the sum of its warp
extern "C" __global__ void __launch_bounds__(64) emu_warp_sum(const float* x, float* out) {
  float v = x[threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) out[threadIdx.x >> 5] = v;
}
// a race: each thread reads its right neighbour's slot with no barrier between the write and the
// read, so what it sees depends on the order threads run in (``racy_blocks``: across blocks)
extern "C" __global__ void __launch_bounds__(64) emu_racy(int* buf, int* out) {
  buf[threadIdx.x] = (int)threadIdx.x + 1;
  out[threadIdx.x] = buf[(threadIdx.x + 1) % 64];
}
extern "C" __global__ void __launch_bounds__(32) emu_racy_blocks(int* buf, int* out) {
  if (threadIdx.x == 0) buf[blockIdx.x] = (int)blockIdx.x + 1;
  if (threadIdx.x == 0) out[blockIdx.x] = buf[(blockIdx.x + 1) % gridDim.x];
}
// lanes 0..15 shuffle, the others do not: a deadlock (undefined on a GPU)
extern "C" __global__ void __launch_bounds__(32) emu_divergent(float* out) {
  float v = 1.0f;
  if (threadIdx.x < 16) v = __shfl_down_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}
"""


@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler")
def test_emulator_barriers_shuffles_deadlocks():
    rt = emulate.EmulatedRuntime()
    mod = rt.module(_EMU_SRC)
    out = rt.empty((3 * 64,), np.int32)
    rt.launch(mod, "emu_rotate", (3, 1, 1), (64, 1, 1), (out,))
    want = np.array([b * 1000 + (t + 1) % 64 for b in range(3) for t in range(64)], np.int32)
    np.testing.assert_array_equal(out, want)
    x = rt.to_device(np.arange(64, dtype=np.float32))
    s = rt.empty((2,), np.float32)
    rt.launch(mod, "emu_warp_sum", (1, 1, 1), (64, 1, 1), (x, s))
    np.testing.assert_array_equal(s, [sum(range(32)), sum(range(32, 64))])
    with pytest.raises(RuntimeError, match="deadlocked"):
        rt.launch(mod, "emu_divergent", (1, 1, 1), (32, 1, 1), (rt.empty((32,), np.float32),))


@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler")
def test_emulator_thread_orders_expose_races(monkeypatch):
    """FJAX_EMU_ORDER changes what a racy kernel reads (threads of a block between barriers, or
    blocks) and not what a correct one computes (the barrier kernels above, in every order)."""
    rt = emulate.EmulatedRuntime()
    mod = rt.module(_EMU_SRC)
    seen: dict = {}
    for order in ("forward", "reverse", "shuffle"):
        monkeypatch.setenv("FJAX_EMU_ORDER", order)
        for kernel, grid, block, n in (("emu_racy", 1, 64, 64), ("emu_racy_blocks", 8, 32, 8)):
            buf, out = np.zeros(n, np.int32), rt.empty((n,), np.int32)
            rt.launch(mod, kernel, (grid, 1, 1), (block, 1, 1), (buf, out))
            seen[order, kernel] = out.copy()
        out = rt.empty((3 * 64,), np.int32)
        rt.launch(mod, "emu_rotate", (3, 1, 1), (64, 1, 1), (out,))
        want = np.array([b * 1000 + (t + 1) % 64 for b in range(3) for t in range(64)], np.int32)
        np.testing.assert_array_equal(out, want)
    for kernel in ("emu_racy", "emu_racy_blocks"):
        # forward: a thread (block) reads its neighbour's slot before the neighbour writes it,
        # except the last one, whose neighbour is the first; reverse: after it, but the last
        fwd, rev, shf = (seen[o, kernel] for o in ("forward", "reverse", "shuffle"))
        assert fwd[-1] == 1 and (fwd[:-1] == 0).all(), fwd
        np.testing.assert_array_equal(rev, [*range(2, len(rev) + 1), 0])
        assert not np.array_equal(shf, fwd) and not np.array_equal(shf, rev), shf


# ---------------------------------------------------------------------------------------------
# sort: the merge sort against the impl (hypothesis over shapes, keys, duplicates, NaNs, -0.0)

# (shape, axis, key dtypes, extra operand dtypes); lengths 1, odd, one tile, over a tile (1024)
SORT_CASES = [
    ((1, 5), 0, ("float32",), ()),
    ((7,), 0, ("float32",), ("int32",)),
    ((3, 33), 1, ("int32", "float32"), ("float32",)),
    ((33, 2), 0, ("bool", "float32"), ()),
    ((2, 1024), 1, ("float32",), ()),
    ((1500, 2), 0, ("float32", "int32"), ("float32",)),
    ((4100,), 0, ("float32",), ()),
]


def _sort_case(case):
    shape, axis, kd, od = case

    def f(*ops):
        # the last operand is an iota along the axis: the permutation (argsort), as jnp.argsort
        iota = lax.broadcasted_iota(jnp.int32, shape, axis)
        return lax.sort((*ops, iota), dimension=axis, num_keys=len(kd))

    return f


def _sort_args(case, seed, distinct, nan_frac):
    shape, _, kd, od = case
    r = np.random.default_rng(seed)
    out = []
    for dt in kd + od:
        v = r.integers(-distinct, distinct + 1, shape)
        if dt == "float32":
            x = v.astype(np.float32) * 0.5
            x[x == 0] = np.where(r.random(int((x == 0).sum())) < 0.5, -0.0, 0.0)
            x[r.random(shape) < nan_frac] = np.nan
        else:
            x = v.astype(dt) if dt != "bool" else v > 0
        out.append(x)
    return out


@pytest.fixture(scope="module")
def sort_runtime():
    if emulate.compiler() is None:
        pytest.skip("no C++ compiler for the CUDA emulator")
    rt = emulate.EmulatedRuntime()
    srcs = [_lowered(_sort_case(c), _sort_args(c, 0, 2, 0.1)).as_text() for c in SORT_CASES]
    rt.preload("\n".join(srcs))
    return rt


@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler")
@given(
    case=st.sampled_from(SORT_CASES),
    seed=st.integers(0, 2**16),
    distinct=st.integers(0, 6),
    nan_frac=st.sampled_from([0.0, 0.1, 0.9]),
)
def test_sort_matches_impl(sort_runtime, case, seed, distinct, nan_frac):
    f = _sort_case(case)
    args = _sort_args(case, seed, distinct, nan_frac)
    got = emulate.run_lowered(_lowered(f, args), *args, runtime=sort_runtime)
    want = [np.ascontiguousarray(w) for w in f(*args)]  # eager: the impl (numpy lexsort)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))  # bits: -0.0 and NaN in place


def test_sort_launches_are_fixed_by_the_shape():
    # no host reads: only allocations and launches, one tile sort + ceil(log2(n / 1024)) merges
    from fjax.backends import dispatch
    from fjax.backends.cuda.records import Alloc, Launch

    for n, merges in ((1000, 0), (1025, 1), (4100, 3)):
        x = np.zeros(n, np.float32)
        b = dispatch.get_backend("cuda")
        plan = b.plan(dispatch.lower(fjax.jit(jnp.sort).trace(x).jaxpr, b))
        assert all(isinstance(s, (Alloc, Launch)) for s in plan)
        comments = [s.comment for s in plan if isinstance(s, Launch)]
        assert sum(c.startswith("sort: tiles") for c in comments) == 1
        assert sum(c.startswith("sort: merge") for c in comments) == merges


# ---------------------------------------------------------------------------------------------
# the vector path of elementwise kernels: aligned buffers (vector loads), views at odd offsets
# (the scalar loop), sizes not multiples of the lanes, float32 / float64 / int32 / int64


def _vec_fn(x, y):
    return x * 2 + 1, x - y, x > y


@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler")
def test_vector_path_aligned_and_misaligned(x64, tmp_path):
    from fjax.backends import dispatch

    r = np.random.default_rng(1)
    cases = [(dt, n) for dt in ("float32", "float64", "int32", "int64") for n in (1003, 130)]
    args = {c: [(r.standard_normal(c[1]) * 50).astype(c[0]) for _ in range(2)] for c in cases}
    low = {c: _lowered(_vec_fn, args[c]) for c in cases}
    srcs = [lo.as_text() for lo in low.values()]
    for want in ("float4", "double2", "int4", "longlong2", "make_float4"):
        assert any(want in s for s in srcs), want
    rt = emulate.EmulatedRuntime()
    rt.preload("\n".join(srcs))
    b = dispatch.get_backend("cuda")
    for c in cases:
        ex = b.compile(dispatch.lower(low[c].jaxpr, b), runtime=rt)
        want = [np.asarray(w) for w in fjax.jit(_vec_fn)(*args[c])]
        for off in (0, 1):  # element offset 1: no buffer 16-byte aligned
            views = []
            for a in args[c]:
                big = np.zeros(a.size + 2, a.dtype)
                assert big.ctypes.data % 16 == 0
                v = big[off : off + a.size]
                v[...] = a
                views.append(v)
            got = [rt.to_host(o) for o in ex(*views)]
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w)
    if shutil.which("nvcc"):
        info = _nvcc_info("\n".join(srcs), "sm_90", tmp_path)
        assert "ptxas" in info and not re.search(r"[1-9]\d* bytes spill", info)
