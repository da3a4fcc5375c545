"""Eager calls (no jit around them) of composite jnp / nn / scipy.special functions, side by side with JAX.

Run: ``PYTHONPATH=. /tmp/jaxenv/bin/python bench/bench_eager_composites.py [--only var,triu] [--number N]``
(unset OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE for the JAX venv). Without JAX importable it prints the
fjax columns alone. All in one process, each function's calls one after the other.

Columns (microseconds per call, the best of ``--rounds`` interleaved rounds of 3 repeats: JAX's
timings on a shared 2-core machine swing several-fold between runs; fjax with
``fjax_tiered_compile`` "auto", the default):

- ``first``: the first call of the signature (JAX: tracing and compiling; fjax: op by op);
- ``op-by-op``: fjax's steady state without fjax/_eager_compile.py's wrapper (the plain function);
- ``fjax``: the exported function's steady state: after two calls and the background compile they
  start (``wait_compiled``, at most ``--wait`` seconds: the brief's "2 s sleep");
- ``jax``: JAX's steady state; the ratios are fjax over JAX (before = op by op, after = exported).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import timeit
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import fjax  # noqa: E402
import fjax.nn  # noqa: E402
import fjax.numpy  # noqa: E402
import fjax.scipy.special  # noqa: E402

try:
    import jax
    import jax.nn  # noqa: F401
    import jax.numpy  # noqa: F401
    import jax.scipy.special  # noqa: F401
except ImportError:
    jax = None

rng = np.random.RandomState(0)
V = rng.standard_normal(100).astype(np.float32)  # a 100-vector
M = rng.standard_normal((32, 32)).astype(np.float32)  # a 32x32 matrix
P = rng.uniform(0.1, 1.0, 100).astype(np.float32)  # positive
IDX = rng.randint(0, 32, (32, 4)).astype(np.int32)
LAB = rng.randint(0, 10, 64).astype(np.int32)
V3 = rng.standard_normal((50, 3)).astype(np.float32)
MASK = V > 0

# (name, module path under the library, args (numpy arrays converted to the library's arrays), kwargs)
CASES: list[tuple[str, str, tuple, dict]] = [
    ("linspace", "numpy.linspace", (0.0, 1.0, 50), {}),
    ("logspace", "numpy.logspace", (0.0, 2.0, 50), {}),
    ("geomspace", "numpy.geomspace", (1.0, 100.0, 50), {}),
    ("mean", "numpy.mean", (V,), {}),
    ("mean where", "numpy.mean", (V,), {"where": MASK}),
    ("var", "numpy.var", (V,), {}),
    ("std", "numpy.std", (V,), {}),
    ("nanmean", "numpy.nanmean", (V,), {}),
    ("nanvar", "numpy.nanvar", (V,), {}),
    ("average w", "numpy.average", (V,), {"weights": P}),
    ("median", "numpy.median", (V,), {}),
    ("triu", "numpy.triu", (M,), {}),
    ("tril", "numpy.tril", (M,), {}),
    ("take_along_axis", "numpy.take_along_axis", (M, IDX), {"axis": 1}),
    ("diff", "numpy.diff", (V,), {}),
    ("cumsum 2-d", "numpy.cumsum", (M,), {"axis": 0}),
    ("outer", "numpy.outer", (V, V), {}),
    ("kron", "numpy.kron", (M[:8, :8], M[:4, :4]), {}),
    ("trace", "numpy.trace", (M,), {}),
    ("linalg.norm", "numpy.linalg.norm", (M,), {}),
    ("linalg.norm ord=2 vec", "numpy.linalg.norm", (V,), {}),
    ("cross", "numpy.cross", (V3, V3[::-1]), {}),
    ("isclose", "numpy.isclose", (V, V), {}),
    ("allclose", "numpy.allclose", (V, V), {}),
    ("polyval", "numpy.polyval", (V[:5], V), {}),
    ("convolve", "numpy.convolve", (V, V[:5]), {}),
    ("interp", "numpy.interp", (V, np.sort(V), P), {}),
    ("cov", "numpy.cov", (M[:4],), {}),
    ("corrcoef", "numpy.corrcoef", (M[:4],), {}),
    ("clip", "numpy.clip", (V, -0.5, 0.5), {}),
    ("moveaxis", "numpy.moveaxis", (M, 0, 1), {}),
    ("concatenate", "numpy.concatenate", ([V, V],), {}),
    ("meshgrid", "numpy.meshgrid", (V[:10], V[:20]), {}),
    ("histogram", "numpy.histogram", (V,), {"bins": 10}),
    ("log_softmax", "nn.log_softmax", (M,), {}),
    ("softmax", "nn.softmax", (M,), {}),
    ("standardize", "nn.standardize", (M,), {}),
    ("logsumexp", "nn.logsumexp", (M,), {"axis": -1}),
    ("one_hot", "nn.one_hot", (LAB, 10), {}),
    ("sigmoid", "nn.sigmoid", (V,), {}),
    ("silu", "nn.silu", (V,), {}),
    ("gelu", "nn.gelu", (V,), {}),
    ("gelu exact", "nn.gelu", (V,), {"approximate": False}),
    ("glu", "nn.glu", (M,), {}),
    ("celu", "nn.celu", (V,), {}),
    ("selu", "nn.selu", (V,), {}),
    ("elu", "nn.elu", (V,), {}),
    ("softplus", "nn.softplus", (V,), {}),
    ("log_sigmoid", "nn.log_sigmoid", (V,), {}),
    ("hard_swish", "nn.hard_swish", (V,), {}),
    ("special.xlogy", "scipy.special.xlogy", (P, P), {}),
    ("special.entr", "scipy.special.entr", (P,), {}),
    ("special.logsumexp", "scipy.special.logsumexp", (M,), {"axis": 1}),
    ("special.log_ndtr", "scipy.special.log_ndtr", (V,), {}),
    ("special.ndtr", "scipy.special.ndtr", (V,), {}),
    ("special.logit", "scipy.special.logit", (P * 0.9,), {}),
    ("special.kl_div", "scipy.special.kl_div", (P, P[::-1]), {}),
    ("special.i0", "scipy.special.i0", (V,), {}),
]


def _resolve(lib: Any, path: str) -> Callable:
    obj = lib
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _convert(lib: Any, x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return lib.numpy.asarray(x)
    if isinstance(x, list):
        return [_convert(lib, v) for v in x]
    return x


def _sync(lib: Any, out: Any) -> Any:
    if lib is jax:
        return jax.block_until_ready(out)
    return out


def _per_call_us(f: Callable, number: int) -> float:
    f()
    return min(timeit.repeat(f, number=number, repeat=3)) / number * 1e6


def _first_us(f: Callable) -> float:
    t = time.perf_counter()
    f()
    return (time.perf_counter() - t) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--number", type=int, default=200, help="calls per timing repeat")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (the best counts)")
    ap.add_argument("--wait", type=float, default=60.0, help="longest wait for the background compiles (s)")
    a = ap.parse_args()
    fjax.config.update("fjax_tiered_compile", "auto")
    from fjax import _eager_compile  # noqa: PLC0415

    only = {s.strip() for s in a.only.split(",") if s.strip()}
    print(f"jax {jax.__version__ if jax else 'not importable'}; fjax tiering auto; us per call")
    head = f"{'case':24s} {'first':>9s} {'jax 1st':>9s} {'op-by-op':>9s} {'fjax':>8s} {'jax':>7s}"
    print(f"{head} {'before':>7s} {'after':>7s}")
    befores, afters = [], []
    for name, path, args, kwargs in CASES:
        if only and name not in only:
            continue
        try:
            f = _resolve(fjax, path)
        except AttributeError:
            print(f"{name:24s} missing in fjax")
            continue
        plain = getattr(f, "__wrapped_eager__", f)
        fa, fk = tuple(_convert(fjax, x) for x in args), {k: _convert(fjax, v) for k, v in kwargs.items()}
        try:
            first = _first_us(lambda: f(*fa, **fk))
        except Exception as e:  # noqa: BLE001
            print(f"{name:24s} fjax failed: {type(e).__name__}: {e}")
            continue
        f(*fa, **fk)  # the second call queues the compile
        t0 = time.perf_counter()
        _eager_compile.wait_compiled(a.wait)
        waited = time.perf_counter() - t0
        jx = jfirst = jcall = None
        if jax is not None:
            try:
                g = _resolve(jax, path)
                ja, jk = tuple(_convert(jax, x) for x in args), {k: _convert(jax, v) for k, v in kwargs.items()}
                jfirst = _first_us(lambda: _sync(jax, g(*ja, **jk)))
                jcall = lambda: _sync(jax, g(*ja, **jk))  # noqa: E731
            except Exception as e:  # noqa: BLE001
                print(f"   ({name}: jax failed: {type(e).__name__}: {e})")
        # interleaved rounds, the best of each: the machine's load shifts between them
        op = wrapped = float("inf")
        for _ in range(a.rounds):
            op = min(op, _per_call_us(lambda: plain(*fa, **fk), max(1, a.number // 10)))
            wrapped = min(wrapped, _per_call_us(lambda: f(*fa, **fk), a.number))
            if jcall is not None:
                jx = min(jx or float("inf"), _per_call_us(jcall, a.number))
        nan = float("nan")
        cols = f"{name:24s} {first:9.0f} {jfirst or nan:9.0f} {op:9.1f} {wrapped:8.1f} {jx or nan:7.1f}"
        if jx:
            befores.append(op / jx)
            afters.append(wrapped / jx)
            cols += f" {op / jx:6.1f}x {wrapped / jx:6.1f}x"
        wrapped_mark = "" if f is plain else f"  [wrapped; compile wait {waited:.1f} s]"
        print(cols + wrapped_mark, flush=True)
    if befores:
        gm = lambda r: float(np.exp(np.mean(np.log(r))))  # noqa: E731
        print(f"geometric mean fjax/jax: before {gm(befores):.2f}x, after {gm(afters):.2f}x ({len(befores)} cases)")


if __name__ == "__main__":
    main()
