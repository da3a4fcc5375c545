"""fjax.numpy against JAX 0.10.2 on a differential sweep: ~2,900 calls of jnp functions over many
dtypes (float32/16, bfloat16, int8/32, uint8/32, bool, complex64), special values (+-0, +-inf,
NaN, integer extremes), mixed-kind pairs and Python-scalar operands, and a few keyword-argument
cases. JAX's results were recorded by ``tests/data/make_jnp_differential.py`` into
``tests/data/jnp_differential.json``; the calls are in ``tests/data/jnp_differential_cases.py``.

Each call must give JAX's dtype, shape, weak type and values (floats within a tolerance per
dtype, NaNs equal, integers exactly), or raise JAX's exception type. ``KNOWN`` lists the accepted
differences, each with its reason; a known difference that starts to match fails the test, so
the list stays honest. Deterministic: no hypothesis here.
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
import fjax.numpy as jnp
import fjax.scipy.special  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "data"))

from jnp_differential_cases import BIN_PAIRS, DTYPES, all_cases, run  # noqa: E402

with open(os.path.join(HERE, "data", "jnp_differential.json")) as _f:
    RECORDED = json.load(_f)["results"]

_UNSORTED = "searchsorted/digitize of an unsorted array: the result is undefined (numpy's docs)"
_CANCEL = (
    "float32 sum of +-2**31 terms that cancel: the result depends on the accumulation order of the "
    "convolution (XLA's and fjax's differ)"
)
_COMPLEX_NAN_ORDER = (
    "max/min of complex values with a NaN: XLA folds with a lexicographic compare that is "
    "order-dependent at NaN (the result is the maximum of the elements after the last NaN); fjax "
    "propagates the NaN"
)

_XLA_COMPLEX = (
    "complex function at an infinite or NaN argument: XLA's formula (no C99 Annex G special cases) "
    "and numpy's (which fjax's eager impl uses) give NaN in different parts"
)

KNOWN: dict[str, str] = {
    **{f"unary:{n}:complex64:0": _XLA_COMPLEX for n in ("arctan", "arctanh", "cos", "sin", "tan")},
    **{
        f"unary:fix:{dt}:{i}": "jnp.fix was removed in JAX 0.10 (AttributeError); fjax keeps it"
        for dt in DTYPES
        for i in (0, 1)
    },
    **{f"binary:{n}:{a}:{b}": _UNSORTED for n in ("searchsorted", "digitize") for a, b in BIN_PAIRS},
    "binary:dot:uint8:py_int": (
        "JAX raises on uint8 . weak int (preferred_element_type uint8 narrower than int32), a JAX quirk; "
        "fjax computes the product"
    ),
    "binary:convolve:bool:int32": _CANCEL,
    "binary:polymul:bool:int32": _CANCEL,
    "unary:max:complex64:0": _COMPLEX_NAN_ORDER,
    "unary:min:complex64:0": _COMPLEX_NAN_ORDER,
    "unary:ptp:complex64:0": _COMPLEX_NAN_ORDER,
}

# tolerances per dtype (the 16-bit floats round after each op, and fjax's op order may differ)
_RTOL = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 2e-3, "complex64": 2e-3, "float64": 1e-6, "complex128": 1e-6}
_ATOL = {"float16": 1e-3, "bfloat16": 1e-2}


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
    assert isinstance(want, dict) and isinstance(got, dict)
    for field in ("dtype", "shape", "weak"):
        if want[field] != got[field]:
            return f"{field}: JAX {want[field]} vs fjax {got[field]}"
    if want["values"] is None:
        return None
    if want["dtype"] in _RTOL:
        w, g = _values(want), _values(got)
        rtol, atol = _RTOL[want["dtype"]], _ATOL.get(want["dtype"], 1e-5)
        parts = (w.real, g.real, w.imag, g.imag) if np.iscomplexobj(w) else (w, g, None, None)
        for a, b in zip(parts[::2], parts[1::2]):
            if a is None:
                continue
            # infinities must match exactly (allclose treats inf == inf, and inf != finite)
            if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
                bad = np.flatnonzero(~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True))[:4]
                return f"values at {bad.tolist()}: JAX {w[bad].tolist()} vs fjax {g[bad].tolist()}"
        return None
    if want["values"] != got["values"]:
        return f"values: JAX {want['values']!s:.120} vs fjax {got['values']!s:.120}"
    return None


def _check(key: str, want: dict, got: dict) -> str | None:
    if "err" in want or "err" in got:
        if want.get("err") != got.get("err"):
            return f"JAX {want.get('err', 'ok')} vs fjax {got.get('err', 'ok')}"
        return None
    return _compare(want["ok"], got["ok"])


@pytest.fixture(scope="module")
def fjax_results() -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {k: run(fn) for k, fn in all_cases(fjax, jnp).items()}


def test_every_recorded_case_is_run(fjax_results: dict) -> None:
    assert set(fjax_results) == set(RECORDED)
    assert set(KNOWN) <= set(RECORDED), sorted(set(KNOWN) - set(RECORDED))


@pytest.mark.parametrize("group", ["unary", "binary", "extra"])
def test_matches_jax(group: str, fjax_results: dict) -> None:
    diffs = {}
    for key, want in RECORDED.items():
        if not key.startswith(group + ":") or key in KNOWN:
            continue
        d = _check(key, want, fjax_results[key])
        if d:
            diffs[key] = d
    assert not diffs, f"{len(diffs)} differences from JAX:\n" + "\n".join(f"{k}: {v}" for k, v in diffs.items())


def test_known_differences_still_differ(fjax_results: dict) -> None:
    # a known difference that now matches JAX should leave KNOWN
    # (unsorted searchsorted/digitize are undefined: some agree by chance)
    matching = [k for k, why in KNOWN.items() if why != _UNSORTED and _check(k, RECORDED[k], fjax_results[k]) is None]
    assert not matching, f"now matching JAX, remove from KNOWN: {matching}"
