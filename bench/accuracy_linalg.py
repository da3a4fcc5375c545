"""Accuracy of fjax's linear algebra and FFT, as printed in the README's table.

For each function and dtype, the worst over 20 random inputs (n = 64 matrices, well conditioned:
random normal plus n on the diagonal, SPD where needed; 4096-point signals) of a normwise
relative residual, in units of the dtype's machine epsilon:

* factorizations: ``||reconstruction - A||_F / ||A||_F`` (cholesky L L^T, eigh V W V^T, svd
  U S Vh, qr Q R, lu P^T L U) and, for the orthogonal factors, ``||Q^T Q - I||_F``
* solve/inv/triangular_solve: ``||A x - b||_F / (||A||_F ||x||_F)``
* det/slogdet, expm, fft/rfft: relative error against a float64 (for float32) or extended
  precision (numpy longdouble, for float64) reference

Run: python bench/accuracy_linalg.py
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

import fjax
import fjax.numpy as jnp
import fjax.scipy.linalg as fsl
from fjax.lax import linalg as LL

fjax.config.update("jax_enable_x64", True)
N = 64
TRIALS = 20


def fro(x):
    return float(np.linalg.norm(np.asarray(x, np.float64 if np.isrealobj(x) else np.complex128)))


def dft_longdouble(x):
    n = x.shape[-1]
    k = np.arange(n)
    # reduce k*j modulo n exactly in integers, so the angles carry no large-argument error
    pi = 4 * np.arctan(np.longdouble(1))
    ang = -2 * pi * (np.outer(k, k) % n).astype(np.longdouble) / n
    xr = np.asarray(x, np.longdouble)
    return (np.cos(ang) @ xr).astype(np.float64) + 1j * (np.sin(ang) @ xr).astype(np.float64)


def measures(dt, rng):
    a = rng.standard_normal((N, N))
    g = (a + N * np.eye(N)).astype(dt)
    s = (a @ a.T + N * np.eye(N)).astype(dt)
    b = rng.standard_normal((N, 4)).astype(dt)
    out = {}
    L = np.asarray(LL.cholesky(s), np.float64)
    out["cholesky"] = fro(L @ L.T - s) / fro(s)
    v, w = (np.asarray(z, np.float64) for z in LL.eigh(s))
    out["eigh"] = max(fro(v * w @ v.T - s) / fro(s), fro(v.T @ v - np.eye(N)))
    uu, sv, vh = (np.asarray(z, np.float64) for z in LL.svd(g))
    out["svd"] = max(fro(uu * sv @ vh - g) / fro(g), fro(uu.T @ uu - np.eye(N)), fro(vh @ vh.T - np.eye(N)))
    q, r = (np.asarray(z, np.float64) for z in LL.qr(g))
    out["qr"] = max(fro(q @ r - g) / fro(g), fro(q.T @ q - np.eye(N)))
    lu_, _, perm = LL.lu(g)
    lu_ = np.asarray(lu_, np.float64)
    lo = np.tril(lu_, -1) + np.eye(N)
    up = np.triu(lu_)
    out["lu"] = fro(lo @ up - g[np.asarray(perm)]) / fro(g)
    for name, x, m in [
        ("solve", jnp.linalg.solve(g, b), g),
        ("cho_solve", fsl.cho_solve(fsl.cho_factor(s), b), s),
        ("triangular_solve", LL.triangular_solve(np.tril(g), b, left_side=True, lower=True), np.tril(g)),
    ]:
        x = np.asarray(x, np.float64)
        out[name] = fro(m.astype(np.float64) @ x - b) / (fro(m) * fro(x))
    x = np.asarray(jnp.linalg.inv(g), np.float64)
    out["inv"] = fro(g.astype(np.float64) @ x - np.eye(N)) / (fro(g) * fro(x))
    ref = np.linalg.slogdet(g.astype(np.float64))[1]
    out["slogdet"] = abs(float(jnp.linalg.slogdet(g)[1]) - ref) / abs(ref)
    e_in = (a / fro(a) * 3).astype(dt)
    e_ref = sla.expm(e_in.astype(np.float64))
    out["expm"] = fro(np.asarray(fsl.expm(e_in), np.float64) - e_ref) / fro(e_ref)
    sig = rng.standard_normal(4096).astype(dt)
    ref = dft_longdouble(sig.astype(np.float64)) if dt == np.float64 else np.fft.fft(sig.astype(np.float64))
    out["fft"] = fro(np.asarray(jnp.fft.fft(sig)) - ref) / fro(ref)
    out["rfft"] = fro(np.asarray(jnp.fft.rfft(sig)) - ref[: 4096 // 2 + 1]) / fro(ref[: 4096 // 2 + 1])
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    table = {}
    for dt in (np.float32, np.float64):
        eps = np.finfo(dt).eps
        worst: dict = {}
        for _ in range(TRIALS):
            for k, v in measures(dt, rng).items():
                worst[k] = max(worst.get(k, 0.0), v / eps)
        table[dt] = worst
    print("| function | measure | float32 (eps) | float64 (eps) |")
    print("| --- | --- | ---: | ---: |")
    for k in table[np.float32]:
        print(f"| {k} | see bench/accuracy_linalg.py | {table[np.float32][k]:.1f} | {table[np.float64][k]:.1f} |")


if __name__ == "__main__":
    main()
