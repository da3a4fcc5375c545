"""Autodiff and vmap benchmarks, as ratios measured side by side in one process.

1. Eager ``fjax.grad`` of an MLP loss (784-512-512-10, batch 256, f32) against the same
   forward+backward written by hand in numpy.
2. Hessian-vector product by grad-of-grad (forward-over-reverse) on 100k elements, against the
   closed form in numpy.
3. Per-example gradients of a 512 x 100 logistic regression: vmap(grad) against a Python loop of
   grad and against hand-written numpy.

Items 2 and 3 also time ``fjax.jit`` on the numba backend side by side with ``jax.jit`` when jax is
installed (fjax itself never imports jax), and print the fjax/JAX ratio (target: within 2x).
Neither uses BLAS on the fjax side; to let numpy use its best kernels in item 1, as JAX does, run
``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_autodiff.py`` (ARCHITECTURE.md).

Run: python bench/bench_autodiff.py
"""

from __future__ import annotations

import time

import numpy as np

import fjax
from fjax import lax

fjax.config.update("fjax_jit_backend", "numba")


def best_of(fn, repeat: int = 5, number: int = 3) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def mm(a, b):
    return lax.dot_general(a, b, (((a.ndim - 1,), (0,)), ((), ())))


def mlp_loss(params, x, y_onehot):
    h = x
    for w, b in params[:-1]:
        h = lax.tanh(lax.add(mm(h, w), lax.broadcast_in_dim(b, (h.shape[0], b.shape[0]), (1,))))
    w, b = params[-1]
    logits = lax.add(mm(h, w), lax.broadcast_in_dim(b, (h.shape[0], b.shape[0]), (1,)))
    m = lax.stop_gradient(lax.reduce_max(logits, (1,)))
    shifted = lax.sub(logits, lax.broadcast_in_dim(m, logits.shape, (0,)))
    lse = lax.log(lax.reduce_sum(lax.exp(shifted), (1,)))
    picked = lax.reduce_sum(lax.mul(shifted, y_onehot), (1,))
    return lax.div(lax.reduce_sum(lax.sub(lse, picked), (0,)), float(x.shape[0]))


def mlp_grad_numpy(params, x, y_onehot):
    hs = [x]
    h = x
    for w, b in params[:-1]:
        h = np.tanh(h @ w + b)
        hs.append(h)
    w, b = params[-1]
    logits = h @ w + b
    shifted = logits - logits.max(1, keepdims=True)
    p = np.exp(shifted)
    p /= p.sum(1, keepdims=True)
    loss = np.mean(np.log(np.exp(shifted).sum(1)) - (shifted * y_onehot).sum(1))
    d = (p - y_onehot) / x.shape[0]
    grads = [None] * len(params)
    grads[-1] = (hs[-1].T @ d, d.sum(0))
    d = d @ params[-1][0].T
    for i in range(len(params) - 2, -1, -1):
        d = d * (1 - hs[i + 1] ** 2)
        grads[i] = (hs[i].T @ d, d.sum(0))
        if i:
            d = d @ params[i][0].T
    return loss, grads


def bench_mlp() -> None:
    rng = np.random.RandomState(0)
    sizes = [784, 512, 512, 10]
    params_np = [
        ((rng.randn(m, n) / np.sqrt(m)).astype(np.float32), np.zeros(n, np.float32))
        for m, n in zip(sizes[:-1], sizes[1:])
    ]
    x = rng.randn(256, 784).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 256)]
    params = [(fjax.Array(w.copy()), fjax.Array(b.copy())) for w, b in params_np]
    xf, yf = fjax.Array(x.copy()), fjax.Array(y.copy())
    vg = fjax.value_and_grad(mlp_loss)
    loss_f, g_f = vg(params, xf, yf)
    loss_n, g_n = mlp_grad_numpy(params_np, x, y)
    np.testing.assert_allclose(float(loss_f), loss_n, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(g_f[0][0]), g_n[0][0], rtol=1e-3, atol=1e-5)
    t_f = best_of(lambda: vg(params, xf, yf))
    t_n = best_of(lambda: mlp_grad_numpy(params_np, x, y))
    print(
        f"MLP 784-512-512-10 b256 eager value_and_grad: fjax {t_f * 1e3:.2f} ms, numpy by hand "
        f"{t_n * 1e3:.2f} ms, ratio {t_f / t_n:.2f}x"
    )


def _jax():
    """jax, or None when it is not installed (fjax itself never imports it)."""
    try:
        import jax  # noqa: PLC0415

        return jax
    except ImportError:
        return None


def interleaved(fns: dict, repeat: int = 15, number: int = 20) -> dict:
    """(median, best) per-call time of each function, sampled round-robin so that the load of a
    shared machine hits all of them alike. (The fjax/JAX pair is sampled apart from the numpy
    references: OpenBLAS worker threads keep spinning after a numpy BLAS call and slowed whichever
    of the two ran next, jax.jit by up to 3x.)"""
    for f in fns.values():
        f()
        f()
    ts: dict = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(number):
                f()
            ts[k].append((time.perf_counter() - t0) / number)
    return {k: (float(np.median(v)), min(v)) for k, v in ts.items()}


def _report(title: str, res: dict, fjax_key: str, jax_key: str | None, unit: float, uname: str) -> None:
    print(title)
    for k, (med, best) in res.items():
        print(f"  {k:34s} median {med / unit:9.4g} {uname}   best {best / unit:9.4g} {uname}")
    if jax_key is not None:
        med = res[fjax_key][0] / res[jax_key][0]
        best = res[fjax_key][1] / res[jax_key][1]
        print(f"  {fjax_key} / {jax_key}: {med:.2f}x (median), {best:.2f}x (best)  [target: within 2x]")


def bench_hvp() -> None:
    """Hessian-vector product by grad-of-grad (forward-over-reverse): fjax eager, jit(fjax) on
    the numba backend, jax.jit, and the closed form in numpy."""
    rng = np.random.RandomState(1)
    n = 100_000
    xn = rng.randn(n).astype(np.float32)
    vn = rng.randn(n).astype(np.float32)
    x, v = fjax.Array(xn.copy()), fjax.Array(vn.copy())

    def f(x):
        return lax.reduce_sum(lax.mul(lax.sin(x), lax.exp(lax.mul(x, 0.1))), (0,))

    def hvp(x, v):
        return fjax.jvp(fjax.grad(f), (x,), (v,))[1]

    hvp_jit = fjax.jit(hvp)
    e = np.exp(0.1 * xn)
    closed = (-np.sin(xn) * e + 0.2 * np.cos(xn) * e + 0.01 * np.sin(xn) * e) * vn
    np.testing.assert_allclose(np.asarray(hvp(x, v)), closed, rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(np.asarray(hvp_jit(x, v)), closed, rtol=2e-3, atol=1e-4)

    def closed_np():
        e = np.exp(0.1 * xn)
        s, c = np.sin(xn), np.cos(xn)
        return (-s * e + 0.2 * c * e + 0.01 * s * e) * vn

    fns = {"fjax.jit (numba)": lambda: hvp_jit(x, v)}
    jax = _jax()
    if jax is not None:
        jnp = jax.numpy

        def jf(x):
            return jnp.sum(jnp.sin(x) * jnp.exp(x * 0.1))

        jhvp = jax.jit(lambda x, v: jax.jvp(jax.grad(jf), (x,), (v,))[1])
        jx, jv = jax.device_put(xn), jax.device_put(vn)
        np.testing.assert_allclose(np.asarray(jhvp(jx, jv)), closed, rtol=2e-3, atol=1e-4)
        fns["jax.jit"] = lambda: jhvp(jx, jv).block_until_ready()
    res = interleaved(fns, number=5)
    res.update(interleaved({"fjax eager": lambda: hvp(x, v), "closed form in numpy": closed_np}, number=5))
    _report("HVP (jvp of grad) on 100k f32", res, "fjax.jit (numba)", "jax.jit" if jax else None, 1e-3, "ms")


def bench_per_example() -> None:
    """Per-example gradients of a 512 x 100 logistic regression: jit(vmap(grad)) in fjax (numba
    backend) and in JAX, eager vmap(grad), a Python loop of grad, and numpy by hand."""
    rng = np.random.RandomState(2)
    xs_n = rng.randn(512, 100).astype(np.float32)
    ys_n = (rng.rand(512) > 0.5).astype(np.float32)
    w_n = (rng.randn(100) * 0.1).astype(np.float32)
    xs, ys, w = fjax.Array(xs_n.copy()), fjax.Array(ys_n.copy()), fjax.Array(w_n.copy())

    def loss(w, x, y):
        z = lax.reduce_sum(lax.mul(w, x), (0,))
        # binary cross-entropy with logits, stable form
        return lax.sub(lax.add(lax.max(z, 0.0), lax.log1p(lax.exp(lax.neg(lax.abs(z))))), lax.mul(z, y))

    per_ex = fjax.vmap(fjax.grad(loss), in_axes=(None, 0, 0))
    per_ex_jit = fjax.jit(per_ex)

    def numpy_version():
        z = xs_n @ w_n
        p = 1 / (1 + np.exp(-z))
        return (p - ys_n)[:, None] * xs_n

    np.testing.assert_allclose(np.asarray(per_ex(w, xs, ys)), numpy_version(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.asarray(per_ex_jit(w, xs, ys)), numpy_version(), rtol=1e-4, atol=1e-6)
    fns = {"fjax.jit(vmap(grad)) (numba)": lambda: per_ex_jit(w, xs, ys)}
    jax = _jax()
    if jax is not None:
        jnp = jax.numpy

        def jloss(w, x, y):
            z = jnp.sum(w * x)
            return jnp.maximum(z, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(z))) - z * y

        jper_ex = jax.jit(jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0)))
        jw, jxs, jys = jax.device_put(w_n), jax.device_put(xs_n), jax.device_put(ys_n)
        np.testing.assert_allclose(np.asarray(jper_ex(jw, jxs, jys)), numpy_version(), rtol=1e-4, atol=1e-6)
        fns["jax.jit(vmap(grad))"] = lambda: jper_ex(jw, jxs, jys).block_until_ready()
    res = interleaved(fns)
    res.update(interleaved({"fjax eager vmap(grad)": lambda: per_ex(w, xs, ys), "numpy by hand": numpy_version}))
    _report(
        "per-example grads, 512x100 logistic regression",
        res,
        "fjax.jit(vmap(grad)) (numba)",
        "jax.jit(vmap(grad))" if jax else None,
        1e-6,
        "us",
    )
    gl = fjax.grad(loss)
    t_loop = best_of(lambda: [gl(w, xs_n[i], ys_n[i]) for i in range(64)], repeat=3, number=1) * (512 / 64)
    print(
        f"  python loop of eager grad (512 examples): {t_loop * 1e6:.0f} us "
        f"({t_loop / res['fjax eager vmap(grad)'][1]:.0f}x eager vmap(grad))"
    )


def _logistic_per_example(np_, nn_, grad, vmap):
    """Per-example gradients of a logistic regression written with jnp.dot and nn.log_sigmoid
    (a custom_jvp in both libraries) -- the form the issue measured."""

    def loss(w, b, x, y):
        z = np_.dot(x, w) + b
        return -(y * nn_.log_sigmoid(z) + (1 - y) * nn_.log_sigmoid(-z))

    return vmap(grad(loss), in_axes=(None, None, 0, 0))


def run(quick: bool = False) -> list:
    """Rows for bench/run_all.py: HVP on 100k and per-example gradients (512x100), jitted, fjax
    vs JAX side by side."""
    from _pairs import jax_or_none, row  # noqa: PLC0415

    import fjax.numpy as fnp  # noqa: PLC0415
    from fjax import nn  # noqa: PLC0415

    jax = jax_or_none()
    rng = np.random.RandomState(1)
    xn, vn = rng.randn(100_000).astype(np.float32), rng.randn(100_000).astype(np.float32)

    def f(x):
        return lax.reduce_sum(lax.mul(lax.sin(x), lax.exp(lax.mul(x, 0.1))), (0,))

    hvp = fjax.jit(lambda x, v: fjax.jvp(fjax.grad(f), (x,), (v,))[1])
    x, v = fjax.numpy.asarray(xn), fjax.numpy.asarray(vn)
    jhvp = None
    if jax is not None:
        jnp = jax.numpy
        jh = jax.jit(lambda x, v: jax.jvp(jax.grad(lambda x: jnp.sum(jnp.sin(x) * jnp.exp(x * 0.1))), (x,), (v,))[1])
        jx, jv = jax.device_put(xn), jax.device_put(vn)
        jhvp = lambda: jh(jx, jv).block_until_ready()  # noqa: E731
    rows = [row("HVP (jvp of grad), 100k f32", lambda: hvp(x, v), jhvp, quick)]

    xs = rng.randn(512, 100).astype(np.float32)
    ys = (rng.rand(512) > 0.5).astype(np.float32)
    w = (rng.randn(100) * 0.1).astype(np.float32)
    b = np.float32(0.1)
    pe = fjax.jit(_logistic_per_example(fnp, nn, fjax.grad, fjax.vmap))
    fargs = [fnp.asarray(a) for a in (w, b, xs, ys)]
    jpe = None
    if jax is not None:
        jf = jax.jit(_logistic_per_example(jax.numpy, jax.nn, jax.grad, jax.vmap))
        jargs = [jax.device_put(a) for a in (w, b, xs, ys)]
        np.testing.assert_allclose(np.asarray(pe(*fargs)), np.asarray(jf(*jargs)), rtol=1e-4, atol=1e-6)
        jpe = lambda: jf(*jargs).block_until_ready()  # noqa: E731
    rows.append(row("per-example grads jit(vmap(grad)), 512x100", lambda: pe(*fargs), jpe, quick))
    return rows


if __name__ == "__main__":
    bench_mlp()
    bench_hvp()
    bench_per_example()
