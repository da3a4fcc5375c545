"""Linear algebra and FFT benchmarks, side by side with JAX in one process (when jax is installed;
fjax itself never imports jax): fjax eager and fjax.jit against jax.jit, as time ratios.

1. batched cholesky + solve: 256 SPD 64x64 matrices, L = cholesky(A), x = cho_solve(L, b)
1b. batched general solve (LU): 1000 64x64 matrices, ``jnp.linalg.solve``
2. eigh of one 512x512 symmetric matrix
3. svd of one 512x512 matrix (singular values and vectors)
4. rfft of 2^20 float32 points
5. Gaussian-process negative log marginal likelihood and its gradient with respect to the
   (log) lengthscale, amplitude and noise, n = 1000, float64

All in the precision stated (float32 except item 5). OpenBLAS is pinned to Haswell kernels by
OPENBLAS_CORETYPE on these machines (ARCHITECTURE.md); JAX brings its own kernels, so compare
with ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_linalg.py``.

Run: python bench/bench_linalg.py (best-of timings, one workload after the other), or through
``run(quick)`` (``python -m bench`` / bench/run_all.py: medians of round-robin rounds, fjax and
JAX interleaved, eager rows for the two batched workloads as well).
"""

from __future__ import annotations

import time

import numpy as np

import fjax
import fjax.numpy as fnp
import fjax.scipy.linalg as fsl

try:
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    jax.config.update("jax_enable_x64", True)
except ImportError:  # pragma: no cover - optional
    jax = None

fjax.config.update("jax_enable_x64", True)


def best_of(fn, repeat: int = 5, number: int = 3) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def block(x):
    if hasattr(x, "block_until_ready"):
        return x.block_until_ready()
    if isinstance(x, (tuple, list)):
        return [block(y) for y in x]
    return x


def cases():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 64, 64)).astype(np.float32)
    spd = (a @ np.swapaxes(a, -1, -2) + 64 * np.eye(64, dtype=np.float32)).astype(np.float32)
    rhs = rng.standard_normal((256, 64, 1)).astype(np.float32)
    g = rng.standard_normal((1000, 64, 64)).astype(np.float32) + 8 * np.eye(64, dtype=np.float32)
    g_rhs = rng.standard_normal((1000, 64, 1)).astype(np.float32)
    s512 = rng.standard_normal((512, 512)).astype(np.float32)
    sym = ((s512 + s512.T) / 2).astype(np.float32)
    sig = rng.standard_normal(2**20).astype(np.float32)
    xs = rng.uniform(0, 10, (1000, 1))
    ys = np.sin(xs[:, 0]) + 0.1 * rng.standard_normal(1000)
    params = np.array([0.0, 0.0, np.log(0.1)])

    def gp_nll(np_, sl_, p, x, y):
        ls, amp, noise = np_.exp(p[0]), np_.exp(p[1]), np_.exp(p[2])
        d2 = (x - x.T) ** 2
        k = amp**2 * np_.exp(-0.5 * d2 / ls**2) + (noise**2 + 1e-6) * np_.eye(x.shape[0])
        c, low = sl_.cho_factor(k, lower=True)
        alpha = sl_.cho_solve((c, low), y)
        return 0.5 * y @ alpha + np_.sum(np_.log(np_.diagonal(c))) + 0.5 * x.shape[0] * np_.log(2 * np_.pi)

    return [
        (
            "cholesky+solve 256x64x64 f32",
            lambda np_, sl_: lambda A, b: sl_.cho_solve(sl_.cho_factor(A), b),
            (spd, rhs),
        ),
        ("solve 1000x64x64 f32", lambda np_, sl_: lambda A, b: np_.linalg.solve(A, b), (g, g_rhs)),
        ("eigh 512x512 f32", lambda np_, sl_: lambda A: np_.linalg.eigh(A), (sym,)),
        ("svd 512x512 f32", lambda np_, sl_: lambda A: np_.linalg.svd(A), (s512,)),
        ("rfft 2^20 f32", lambda np_, sl_: lambda x: np_.fft.rfft(x), (sig,)),
        (
            "GP nll+grad n=1000 f64",
            lambda np_, sl_: lambda p, x, y: (gp_nll(np_, sl_, p, x, y), None),
            (params, xs, ys),
        ),
    ]


def main() -> None:
    head = f"{'case':34s} {'fjax eager':>11s} {'fjax.jit':>10s} {'jax.jit':>10s} {'jit ratio':>10s}"
    print(head + f" {'eager ratio':>12s}")
    for name, make, args in cases():
        if name.startswith("GP"):
            f_fj = lambda p, x, y, _m=make: _m(fnp, fsl)(p, x, y)[0]  # noqa: E731
            fj = fjax.value_and_grad(f_fj)
            fjj = fjax.jit(fj)
        else:
            fj = make(fnp, fsl)
            fjj = fjax.jit(fj)
        rep = dict(repeat=3, number=1) if name.startswith(("GP", "eigh", "svd")) else {}
        t_eager = best_of(lambda: block(fj(*args)), **rep)
        t_jit = best_of(lambda: block(fjj(*args)), **rep)
        t_jax = float("nan")
        if jax is not None:
            if name.startswith("GP"):
                f_jx = lambda p, x, y, _m=make: _m(jnp, jsl)(p, x, y)[0]  # noqa: E731
                jf = jax.jit(jax.value_and_grad(f_jx))
            else:
                jf = jax.jit(make(jnp, jsl))
            jargs = [jnp.asarray(a) for a in args]
            t_jax = best_of(lambda: block(jf(*jargs)), **rep)
        print(
            f"{name:34s} {t_eager * 1e3:9.2f}ms {t_jit * 1e3:8.2f}ms {t_jax * 1e3:8.2f}ms "
            f"{t_jit / t_jax:9.2f}x {t_eager / t_jax:11.2f}x",
            flush=True,
        )


def run(quick: bool = False) -> list:
    """Rows for bench/run_all.py: each workload under fjax.jit against jax.jit, and the two batched
    ones (cholesky + cho_solve, solve) also eagerly (fjax's and JAX's op-by-op dispatch), sampled
    round-robin (``_pairs.pair``). ``--quick`` leaves out eigh/svd/GP (the slow ones)."""
    from _pairs import row  # noqa: PLC0415

    rows = []
    for name, make, args in cases():
        if quick and name.startswith(("eigh", "svd", "GP")):
            continue
        is_gp = name.startswith("GP")
        if is_gp:
            fj = fjax.value_and_grad(lambda p, x, y, _m=make: _m(fnp, fsl)(p, x, y)[0])
        else:
            fj = make(fnp, fsl)
        fjj = fjax.jit(fj)
        jf = je = None
        if jax is not None:
            if is_gp:
                je = jax.value_and_grad(lambda p, x, y, _m=make: _m(jnp, jsl)(p, x, y)[0])
            else:
                je = make(jnp, jsl)
            jf = jax.jit(je)
            jargs = [jnp.asarray(a) for a in args]
        seconds = 2.0 if is_gp or name.startswith(("eigh", "svd")) else 0.6
        rows.append(
            row(
                f"linalg {name}, jit",
                lambda f=fjj: block(f(*args)),
                None if jf is None else (lambda f=jf: block(f(*jargs))),
                quick,
                seconds=seconds,
            )
        )
        if name.startswith(("cholesky", "solve")):
            rows.append(
                row(
                    f"linalg {name}, eager",
                    lambda f=fj: block(f(*args)),
                    None if je is None else (lambda f=je: block(f(*jargs))),
                    quick,
                    note="eager: op-by-op on both sides",
                )
            )
    return rows


if __name__ == "__main__":
    main()
