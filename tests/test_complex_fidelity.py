"""fjax.numpy / fjax.lax / autodiff on complex numbers against JAX 0.10.2: ~380 calls, each with
x64 off and on, on complex64/complex128 arrays and mixed real/complex operands: ordering (argmax,
sort, max, clip, comparisons, cummax), rounding/sign/angle, predicates, polynomials, linalg and
fft result dtypes, reductions (var of complex is real), products and their conjugation rules,
casts, weak types and Python complex scalars, and grad/jvp/vjp rules (grad of a complex output
needs holomorphic=True). JAX's results were recorded by ``tests/data/make_complex_fidelity.py``
into ``tests/data/complex_fidelity.json``; the calls are in ``tests/data/complex_fidelity_cases.py``.

Each call must give JAX's dtype, shape, weak type and values (within a tolerance per dtype, NaNs
equal), or raise JAX's exception type; the warning categories raised must match too. ``KNOWN``
lists the accepted differences with their reasons; a known difference that starts to match fails
the test, so the list stays honest.
"""

from __future__ import annotations

import json
import os
import sys

import _recorded  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest

import fjax
import fjax.numpy  # noqa: F401
import fjax.scipy.special  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "data"))

from complex_fidelity_cases import all_cases, run  # noqa: E402

with open(os.path.join(HERE, "data", "complex_fidelity.json")) as _f:
    RECORDED = json.load(_f)["results"]


KNOWN: dict[str, str] = {
    **{f"{m}:fix": "jnp.fix was removed in JAX 0.10 (AttributeError); fjax keeps it" for m in ("x64_off", "x64_on")},
    **{
        f"{m}:lax_cumlogsumexp": "lax.cumlogsumexp of complex values: JAX computes it, fjax refuses (floating only)"
        for m in ("x64_off", "x64_on")
    },
    **{
        f"{m}:full_like_c": "JAX warns ComplexWarning before raising the same TypeError; fjax only raises"
        for m in ("x64_off", "x64_on")
    },
}

_RTOL = {"float32": 2e-3, "complex64": 2e-3, "float64": 1e-6, "complex128": 1e-6, "float16": 1e-2, "bfloat16": 2e-2}


_decode, _values = _recorded.decode, _recorded.values


def _compare(want: object, got: object) -> str | None:
    """None when ``got`` matches ``want`` (both encoded), else what differs."""
    if isinstance(want, list) or isinstance(got, list):
        if not (isinstance(want, list) and isinstance(got, list)) or len(want) != len(got):
            return f"structure {want!r:.80} vs {got!r:.80}"
        for w, g in zip(want, got):
            d = _compare(w, g)
            if d:
                return d
        return None
    if isinstance(want, str) or isinstance(got, str):
        return None if want == got else f"JAX {want!r} vs fjax {got!r}"
    for field in ("dtype", "shape", "weak"):
        if want[field] != got[field]:
            return f"{field}: JAX {want[field]} vs fjax {got[field]}"
    if want["values"] is None:
        return None
    if want["dtype"] in _RTOL:
        w, g = _values(want), _values(got)
        rtol = _RTOL[want["dtype"]]
        parts = ((w.real, g.real), (w.imag, g.imag)) if np.iscomplexobj(w) else ((w, g),)
        for a, b in parts:
            if not np.allclose(a, b, rtol=rtol, atol=1e-5, equal_nan=True):
                bad = np.flatnonzero(~np.isclose(a, b, rtol=rtol, atol=1e-5, equal_nan=True))[:4]
                return f"values at {bad.tolist()}: JAX {w[bad].tolist()} vs fjax {g[bad].tolist()}"
        return None
    if want["values"] != got["values"]:
        return f"values: JAX {want['values']!s:.120} vs fjax {got['values']!s:.120}"
    return None


# error messages that differ from JAX's (the exception type still matches): fjax's own wording
_MSG_DIFFERS = set(
    """median floor ceil trunc fix lax_round signbit fabs lax_real_of_real isposinf c64_mod
    lax_rem lax_is_finite i0 nextafter divmod bitwise_not left_shift jvp_real_tangent_mismatch
    vjp_ct_dtype_mismatch""".split()
)


def _check(want: dict, got: dict, name: str = "") -> str | None:
    if "err" in want and "err" in got and name not in _MSG_DIFFERS:
        # the first line of the message, up to the module name (jax.numpy vs fjax.numpy)
        if want["msg"] != got["msg"].replace("fjax", "jax"):
            return f"message: JAX {want['msg']!r} vs fjax {got['msg']!r}"
    if "err" in want or "err" in got:
        if want.get("err") != got.get("err"):
            w, g = (
                f"{want.get('err', 'ok')} {want.get('msg', '')!s:.150}",
                f"{got.get('err', 'ok')} {got.get('msg', '')!s:.150}",
            )
            return f"JAX {w} vs fjax {g}"
    else:
        d = _compare(want["ok"], got["ok"])
        if d:
            return d
    if want["warn"] != got["warn"]:
        return f"warnings: JAX {want['warn']} vs fjax {got['warn']}"
    return None


@pytest.fixture(scope="module")
def fjax_results() -> dict:
    return {k: run(fn) for k, fn in all_cases(fjax).items()}


def test_every_recorded_case_is_run(fjax_results: dict) -> None:
    assert set(fjax_results) == set(RECORDED)
    assert set(KNOWN) <= set(RECORDED), sorted(set(KNOWN) - set(RECORDED))


@pytest.mark.parametrize("mode", ["x64_off", "x64_on"])
def test_matches_jax(mode: str, fjax_results: dict) -> None:
    diffs = {}
    for key, want in RECORDED.items():
        if not key.startswith(mode + ":") or key in KNOWN:
            continue
        d = _check(want, fjax_results[key], key.split(":", 1)[1])
        if d:
            diffs[key] = d
    assert not diffs, f"{len(diffs)} differences from JAX:\n" + "\n".join(f"{k}: {v}" for k, v in diffs.items())


def test_known_differences_still_differ(fjax_results: dict) -> None:
    stale = [k for k in KNOWN if _check(RECORDED[k], fjax_results[k], k.split(":", 1)[1]) is None]
    assert not stale, f"these now match JAX; drop them from KNOWN: {stale}"
