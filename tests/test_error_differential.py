"""Errors on bad input against JAX 0.10.2: each invalid call of ``tests/data/error_cases.py`` must
raise in fjax what it raises in JAX, recorded in ``tests/data/error_cases.json`` by
``tests/data/make_error_cases.py``.

Per case: where JAX raised nothing, fjax must not raise; otherwise fjax's exception must be an
instance of the most specific builtin exception class along JAX's MRO (TypeError, ValueError,
IndexError, ...), and every ``jax.errors`` class along JAX's MRO (e.g. TracerBoolConversionError,
ConcretizationTypeError) must be along fjax's MRO under the same name. Messages are not compared;
fjax's must be non-empty and, where JAX's names a shape or a dtype, name one too.

A few of JAX's errors are accidents of its implementation (an IndexError from indexing a shape
tuple with an out-of-range axis, an MLIR verifier error, an ``assert``, numpy's ValueError eagerly
where the traced call raises JAX's own TypeError): for those (``ACCIDENTAL``) fjax may raise the
class JAX raises or the one JAX raises on the same mistake elsewhere. Where JAX silently returns a
wrong result, fjax raises on purpose (``FJAX_STRICTER``).
"""

from __future__ import annotations

import builtins
import functools
import json
import pathlib
import re
import sys
import warnings

import pytest

import fjax
import fjax.errors

sys.path.insert(0, str(pathlib.Path(__file__).parent / "data"))
from error_cases import all_cases, run  # noqa: E402

RECORDED = json.loads((pathlib.Path(__file__).parent / "data" / "error_cases.json").read_text())["cases"]

_AXIS = "an out-of-range axis is a ValueError elsewhere in JAX (jnp.sum, jnp.moveaxis)"
_RESHAPE = "eager JAX raises numpy's ValueError; traced (jit), its own TypeError, which fjax raises"
_SHAPE = "JAX's error comes from its MLIR verifier; a bad shape is a TypeError/ValueError elsewhere"
ACCIDENTAL: dict[str, tuple[tuple[str, ...], str]] = {
    "jnp.mean axis oob": (("IndexError", "ValueError"), _AXIS),
    "jnp.argmax axis oob": (("IndexError", "ValueError"), _AXIS),
    "jnp.split axis oob": (("IndexError", "ValueError"), _AXIS),
    "jnp.swapaxes oob": (("IndexError", "ValueError"), _AXIS),
    "lax.slice_in_dim axis oob": (("IndexError", "ValueError"), _AXIS),
    "dynamic_index_in_dim oob axis": (("IndexError", "ValueError"), _AXIS),
    "standardize axis oob": (("IndexError", "ValueError"), _AXIS),
    "random.categorical axis oob": (("IndexError", "ValueError"), _AXIS),
    "scan scalar xs": (("IndexError", "ValueError"), "JAX indexes the shape () of a scalar xs"),
    "jnp.tile negative": (("MLIRError", "ValueError", "TypeError"), _SHAPE),
    "random.normal bad shape": (("MLIRError", "ValueError", "TypeError"), _SHAPE),
    "random.split negative num": (("MLIRError", "ValueError", "TypeError"), _SHAPE),
    "nn.glu odd size": (("AssertionError", "ValueError"), "JAX checks this with an assert"),
    "jnp.linalg.cholesky 1d": (("TypeError", "ValueError"), "JAX fails in a transpose inside"),
    "jnp.linalg.eigh non-square": (("TypeError", "ValueError"), "JAX fails in an add inside"),
    "reshape size mismatch": (("ValueError", "TypeError"), "JAX's error comes from its MLIR verifier"),
    "jit reshape size": (("ValueError", "TypeError"), "JAX's error comes from its MLIR verifier"),
    "vmap reshape size": (("ValueError", "TypeError"), "JAX's error comes from its MLIR verifier"),
    "jnp.reshape bad size": (("ValueError", "TypeError"), _RESHAPE),
    "jnp.reshape two -1": (("ValueError", "TypeError"), _RESHAPE),
    "jnp.reshape -1 indivisible": (("ValueError", "TypeError"), _RESHAPE),
    "slice arity": (("ValueError", "TypeError"), "eager JAX fails in a strict zip; traced, its shape rule's TypeError"),
    "slice zero stride": (("ZeroDivisionError", "TypeError", "ValueError"), "JAX divides by the stride"),
    "jnp.where one arg under size": (("TypeError", "ValueError"), "JAX fails checking the None y"),
    "random.uniform minval shape": (("TypeError", "ValueError"), "JAX fails in a mul inside"),
    "typed key astype float": (("NotImplementedError", "ValueError"), "JAX leaves the method abstract"),
    "jnp.mean int axis tuple oob": (("IndexError", "ValueError"), _AXIS),
    "lax.scan xs pytree with scalar leaf": (("IndexError", "ValueError"), "JAX indexes the shape () of a scalar xs"),
    "jacfwd has_aux not pair": (("UnexpectedTracerError", "TypeError"), "JAX leaks a tracer before checking"),
    "jnp.array_split zero sections": (("ZeroDivisionError", "ValueError"), "JAX divides by it; numpy: ValueError"),
    "jnp.diagonal same axes": (("TypeError", "ValueError"), "JAX fails in a transpose inside; numpy: ValueError"),
    "jnp.ravel_multi_index arity": (("AssertionError", "ValueError"), "JAX checks this with an assert"),
    "pure_callback bad result spec": (("AttributeError", "TypeError"), "JAX reads .dtype off the spec"),
    "lax.conv_transpose rank": (("AssertionError", "TypeError"), "JAX checks this with an assert"),
    "lax.rng_bit_generator key shape": (("AssertionError", "TypeError"), "JAX checks this with an assert"),
    "lax.linalg.cholesky 1d": (("TypeError", "ValueError"), "JAX fails in a transpose inside"),
}

# Where JAX silently returns a wrong result, fjax raises (the class named here) on purpose.
FJAX_STRICTER: dict[str, tuple[str, str]] = {
    "slice negative start": ("TypeError", "JAX clamps lax.slice's negative start, returning a wrong length"),
    "broadcast_in_dim non-increasing": ("TypeError", "JAX ignores the order of broadcast_dimensions"),
    "jnp.tensordot axes negative int": ("TypeError", "JAX (as numpy) takes a negative axis count as some other count"),
    "jnp.unravel_index float": ("TypeError", "JAX returns float 'indices'; numpy refuses float indices too"),
}

# Cases where fjax still differs; strict, so fixing one makes its xfail fail.
XFAIL: dict[str, str] = {}

_JAX_ERRORS = set(fjax.errors.__all__)
# JAX's message is concrete when it names a dtype or a shape; fjax's (which may spell dtypes the
# short way, f32[3]) is then expected to hold at least a number, a bool or a key dtype
_JAX_CONCRETE = re.compile(r"\b(bfloat16|float\d+|u?int\d+|complex\d+|bool)\b|\(\d+(, ?\d+)*,?\)")
_FJAX_CONCRETE = re.compile(r"\d|\b(bool|float|int|complex)\b|key<")


def _builtin_base(mro: list[str]) -> type:
    """The most specific builtin exception class along a recorded MRO."""
    for name in mro:
        cls = getattr(builtins, name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            return cls
    return Exception


@pytest.fixture(scope="module")
def fjax_results() -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {k: run(fn, fjax.block_until_ready) for k, fn in all_cases(fjax).items()}


def test_every_recorded_case_is_run(fjax_results: dict) -> None:
    assert set(fjax_results) == set(RECORDED)
    assert len(RECORDED) > 150


def _mismatch(key: str, want: dict | None, got: dict | None) -> str | None:
    if key in FJAX_STRICTER:
        assert want is None, f"{key}: JAX now raises; drop it from FJAX_STRICTER"
        if got is None or FJAX_STRICTER[key][0] not in got["mro"]:
            return f"fjax should raise {FJAX_STRICTER[key][0]} ({FJAX_STRICTER[key][1]}); got {got}"
        return None
    if want is None:
        return None if got is None else f"JAX raises nothing; fjax raised {got['type']}: {got['message'][:300]}"
    if got is None:
        return f"JAX raises {want['type']}: {want['message'][:200]}; fjax raised nothing"
    if key in ACCIDENTAL:
        allowed = ACCIDENTAL[key][0]
        if not any(n in got["mro"] for n in allowed):
            return f"fjax raised {got['type']} ({got['mro']}), want one of {allowed}"
    else:
        base = _builtin_base(want["mro"])
        if base.__name__ not in got["mro"]:
            return f"JAX raises {want['type']} (a {base.__name__}); fjax raised {got['type']}: {got['message'][:300]}"
        if want["type"] in _JAX_ERRORS and got["type"] != want["type"]:
            return f"JAX raises jax.errors.{want['type']}; fjax raised {got['type']}: {got['message'][:300]}"
        for name in want["mro"]:
            if name in _JAX_ERRORS and name not in got["mro"]:
                return f"JAX's {want['type']} is a jax.errors.{name}; fjax raised {got['type']} ({got['mro']})"
    msg = got["message"].strip()
    if not msg:
        return f"fjax raised {got['type']} with an empty message"
    if _JAX_CONCRETE.search(want["message"]) and not _FJAX_CONCRETE.search(msg):
        return f"JAX's message names a shape or dtype; fjax's names neither: {msg[:300]}"
    return None


@pytest.mark.parametrize("key", sorted(RECORDED))
def test_error_matches_jax(key: str, fjax_results: dict, request: pytest.FixtureRequest) -> None:
    if key in XFAIL:
        request.applymarker(pytest.mark.xfail(strict=True, reason=XFAIL[key]))
    problem = _mismatch(key, RECORDED[key], fjax_results[key])
    assert problem is None, f"{key}: {problem}"


def test_known_lists_name_recorded_cases() -> None:
    assert set(ACCIDENTAL) <= set(RECORDED)
    assert set(FJAX_STRICTER) <= set(RECORDED)
    assert set(XFAIL) <= set(RECORDED)


@functools.cache
def _cases() -> dict:
    return all_cases(fjax)


VERBATIM = json.loads((pathlib.Path(__file__).parent / "data" / "error_messages_verbatim.json").read_text())["keys"]


@pytest.mark.parametrize("key", VERBATIM)
def test_message_is_jaxs_verbatim(key):
    """The calls whose JAX message fjax already raises word for word keep raising it (a reworded
    message is a regression for code that matches on it, as tests written for JAX do)."""
    want = RECORDED[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = run(_cases()[key])
    assert got is not None and (got["type"], _here(got["message"])) == (want["type"], _here(want["message"])), got


def _here(message: str) -> str:
    """Messages naming a function of ``tests/data/error_cases.py`` by path (JAX's ``f at file:line``)
    name the checkout's path: JAX's were recorded in /work/main, a CI clone is elsewhere."""
    return re.sub(r"\S*/tests/data/error_cases\.py", "tests/data/error_cases.py", message)
