"""fjax's transforms against JAX 0.10.2 on a differential sweep: grad, jacfwd/jacrev, jvp, vjp,
hessian and vmap (in_axes/out_axes variants) of jnp/lax/nn/scipy functions on fixed inputs with
awkward points (zeros, ties for max/min/sort/abs/maximum, sqrt/log of negatives, large values,
integer and bool inputs), in float32 and (x64 on) float64, plus the exception types of invalid
transforms. JAX's results were recorded by ``tests/data/make_transform_differential.py`` into
``tests/data/transform_differential.json``; the calls are in
``tests/data/transform_differential_cases.py``.

Each call must give JAX's dtype, shape, weak type and values (within a tolerance per dtype, NaN
and infinity positions exactly), or raise JAX's exception type. ``KNOWN`` lists the accepted
differences, each with its reason; one that starts to match fails the test, so the list stays
honest. Deterministic: no hypothesis here.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

import _recorded  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest

import fjax
import fjax.numpy  # noqa: F401
import fjax.scipy.linalg  # noqa: F401
import fjax.scipy.special  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "data"))

from transform_differential_cases import all_cases, run  # noqa: E402

with open(os.path.join(HERE, "data", "transform_differential.json")) as _f:
    RECORDED = json.load(_f)["results"]

_SPENCE = (
    "JAX differentiates through its piecewise spence implementation: derivative 0 at x = 1 and NaN at x = 2, "
    "where log(x) / (1 - x) is -1 and -0.693; fjax gives those"
)

_TRIGAMMA_INF = (
    "trigamma (digamma's derivative, polygamma(1, x)) at +-inf: JAX's series gives NaN at +inf and inf at "
    "-inf, fjax's (scipy's) 0 and NaN; the limit at +inf is 0"
)

KNOWN: dict[str, str] = {
    **{f"{dt}:unary:sp.spence:{t}": _SPENCE for dt in ("float32", "float64") for t in ("jvp", "vmap_grad", "grad2")},
    **{f"{dt}:unary_special:sp.spence:vmap_grad": _SPENCE + " (and 0 at -inf)" for dt in ("float32", "float64")},
    **{
        f"{dt}:unary_special:sp.{n}:vmap_grad": _TRIGAMMA_INF
        for dt in ("float32", "float64")
        for n in ("digamma", "polygamma1")
    },
    "float32:unary:sp.log_ndtr:grad2": (
        "second derivative of log_ndtr at x = -100 in float32 (exactly -1 in the limit): JAX's is 1.9 and "
        "fjax's -3.05, both rounding noise of the asymptotic series; float64 agrees"
    ),
    **{
        f"float64:vector:correlate_full:{v}:jacfwd": (
            "NaN/inf input: XLA's float64 batched convolution leaves some NaN*0 terms out (JAX's float32 "
            "jacfwd and its float64 jacrev of the same call are NaN there, as fjax)"
        )
        for v in ("nan", "pinf")
    },
    **{
        f"float32:matrix_special:{n}:jacrev": (
            "a NaN in a max/min pooling window: the value is NaN in both; XLA's select_and_scatter gives the "
            "gradient to a non-NaN element (its compare is false for NaN), fjax to the NaN"
        )
        for n in ("max_pool", "min_pool")
    },
    **{
        f"{dt}:cplx:power_half:special": (
            "derivative of z**0.5 at z = i*inf: JAX's complex pow gives NaN, fjax's 0 (the limit); complex "
            "functions at infinities follow no single convention (see the jnp sweep's XLA_COMPLEX)"
        )
        for dt in ("float32", "float64")
    },
    "float32:linalg:expm:jacrev": (
        "float32 reverse-mode derivative of expm: JAX's is 0.4% off its own float64 result (its float32 "
        "Pade/scaling choice); fjax's is within 2e-6 of it"
    ),
}

# derivatives lose a few more bits than forward values (chains of ops, cancellation in linalg)
_RTOL = {"float32": 2e-3, "float64": 1e-6, "complex64": 2e-3, "complex128": 1e-6, "float16": 1e-2, "bfloat16": 2e-2}
_ATOL = {"float32": 1e-4, "float64": 1e-9, "complex64": 1e-4, "complex128": 1e-9, "float16": 1e-3, "bfloat16": 1e-2}


_decode, _values = _recorded.decode, _recorded.values


def _close(w: np.ndarray, g: np.ndarray, dtype: str) -> np.ndarray:
    """Elementwise match: NaN where NaN, the same infinity, finite values within tolerance."""
    rtol, atol = _RTOL[dtype], _ATOL[dtype]
    same_nan = np.isnan(w) & np.isnan(g)
    same_inf = np.isinf(w) & (w == g)
    both_finite = np.isfinite(w) & np.isfinite(g)
    with np.errstate(invalid="ignore", over="ignore"):
        near = both_finite & (np.abs(w - g) <= atol + rtol * np.abs(w))
    return same_nan | same_inf | near


def _compare(want: object, got: object) -> str | None:
    """None when ``got`` matches ``want`` (both encoded), else what differs."""
    if isinstance(want, dict) and "dict" in want:
        if not (isinstance(got, dict) and "dict" in got):
            return f"structure {want!r:.80} vs {got!r:.80}"
        return _compare(want["dict"], got["dict"])
    if isinstance(want, list) or isinstance(got, list):
        if not (isinstance(want, list) and isinstance(got, list)) or len(want) != len(got):
            return f"structure {want!r:.80} vs {got!r:.80}"
        for w, g in zip(want, got):
            d = _compare(w, g)
            if d:
                return d
        return None
    assert isinstance(want, dict) and isinstance(got, dict), (want, got)
    for field in ("dtype", "shape", "weak"):
        if want[field] != got.get(field):
            return f"{field}: JAX {want[field]} vs fjax {got.get(field)}"
    if want["values"] is None:
        return None
    if want["dtype"] in _RTOL:
        w, g = _values(want), _values(got)
        parts = [(w.real, g.real), (w.imag, g.imag)] if np.iscomplexobj(w) else [(w, g)]
        for a, b in parts:
            ok = _close(a, b, want["dtype"])
            if not ok.all():
                bad = np.flatnonzero(~ok)[:4]
                return f"values at {bad.tolist()}: JAX {w[bad].tolist()} vs fjax {g[bad].tolist()}"
        return None
    if want["values"] != got["values"]:
        return f"values: JAX {want['values']!s:.120} vs fjax {got['values']!s:.120}"
    return None


def _check(want: dict, got: dict) -> str | None:
    if "err" in want or "err" in got:
        if want.get("err") != got.get("err"):
            return f"JAX {want.get('err', 'ok')} vs fjax {got.get('err', 'ok')}"
        return None
    return _compare(want["ok"], got["ok"])


@pytest.fixture(scope="module")
def fjax_results() -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {k: run(fn) for k, fn in all_cases(fjax, "float32").items()}
        old = fjax.config.jax_enable_x64
        fjax.config.update("jax_enable_x64", True)
        try:
            out.update({k: run(fn) for k, fn in all_cases(fjax, "float64").items()})
        finally:
            fjax.config.update("jax_enable_x64", old)
    return out


def test_every_recorded_case_is_run(fjax_results: dict) -> None:
    assert set(fjax_results) == set(RECORDED)
    assert set(KNOWN) <= set(RECORDED), sorted(set(KNOWN) - set(RECORDED))


GROUPS = sorted({":".join(k.split(":")[:2]) for k in RECORDED})


@pytest.mark.parametrize("group", GROUPS)
def test_matches_jax(group: str, fjax_results: dict) -> None:
    diffs = {}
    for key, want in RECORDED.items():
        if not key.startswith(group + ":") or key in KNOWN:
            continue
        d = _check(want, fjax_results[key])
        if d:
            diffs[key] = d
    assert not diffs, f"{len(diffs)} differences from JAX:\n" + "\n".join(f"{k}: {v}" for k, v in diffs.items())


def test_known_differences_still_differ(fjax_results: dict) -> None:
    matching = [k for k in KNOWN if _check(RECORDED[k], fjax_results[k]) is None]
    assert not matching, f"now matching JAX, remove from KNOWN: {matching}"
