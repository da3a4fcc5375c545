"""Control-flow errors word for word as JAX 0.10.2 raises them: the messages recorded in
``tests/data/error_cases.json`` (by ``tests/data/make_error_cases.py`` under JAX 0.10.2) for
scan/while_loop/fori_loop/cond/switch carry and branch mismatches, and the formatting of
several differences at once (JAX's bullet lists, reproduced from its source's layout)."""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import lax

DATA = pathlib.Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from error_cases import all_cases, run  # noqa: E402

RECORDED = json.loads((DATA / "error_cases.json").read_text())["cases"]
CASES = all_cases(fjax)

# the cases whose message fjax reproduces exactly (where JAX names a function's source file, the
# path of error_cases.py in the checkout that recorded them is replaced by this checkout's)
VERBATIM_KEYS = [
    "cond branch dtype mismatch",
    "cond branch shape mismatch",
    "cond branch structure mismatch",
    "cond pred string",
    "fori_loop carry dtype change",
    "fori_loop carry shape change",
    "grad cond branches",
    "grad of fori_loop traced bound",
    "grad of while_loop",
    "jit cond branches",
    "jit scan carry",
    "jit while carry",
    "lax.while_loop body non-callable",
    "map length mismatch",
    "scan body returns non-pair",
    "scan carry dtype change",
    "scan carry shape change",
    "scan length mismatch",
    "scan xs length mismatch",
    "switch branch mismatch",
    "vmap cond branches",
    "vmap scan carry",
    "vmap while carry",
    "while_loop carry dtype change",
    "while_loop carry shape change",
    "while_loop structure change",
    # (these name the class of a carry leaf as JAX prints it, jax._src.core.ShapedArray)
    "scan carry structure change",
    "lax.fori_loop body returns tuple for scalar",
]


@pytest.mark.parametrize("key", VERBATIM_KEYS)
def test_message_verbatim(key):
    want = RECORDED[key]
    got = run(CASES[key])
    assert got is not None and got["type"] == want["type"]
    expected = want["message"].replace("/work/main/tests/data/error_cases.py", str(DATA / "error_cases.py"))
    assert got["message"] == expected


def test_carry_several_differences_layout():
    # JAX 0.10.2 gave exactly this (run by hand); it joins "  * d;\n" bullets with "\n": a blank line
    # after each but the next-to-last
    init = (jnp.float32(0), jnp.zeros(2), jnp.int32(0))
    with pytest.raises(TypeError) as e:
        lax.scan(lambda c, x: ((c[0].astype(jnp.int32), c[1][:1], c[2] * 1.5), x), init, jnp.zeros(3))
    assert str(e.value) == (
        "scan body function carry input and carry output must have equal types, but they differ:\n\n"
        "  * the input carry component c[0] has type float32[] but the corresponding output carry component "
        "has type int32[], so the dtypes do not match;\n\n"
        "  * the input carry component c[1] has type float32[2] but the corresponding output carry component "
        "has type float32[1], so the shapes do not match;\n"
        "  * the input carry component c[2] has type int32[] but the corresponding output carry component "
        "has type float32[], so the dtypes do not match.\n\n"
        "Revise the function so that all output types match the corresponding input types."
    )


def test_dtype_and_shape_both_differ():
    with pytest.raises(TypeError, match=r"float32\[2\], so the dtypes do not match, and the shapes do not match\."):
        lax.while_loop(lambda v: False, lambda v: jnp.zeros(2), jnp.int32(0))


def test_cond_several_differences_and_paths():
    def f(x):
        return {"a": x, "b": x}

    def g(x):
        return {"a": x.astype(jnp.int32), "b": jnp.stack([x, x])}

    with pytest.raises(TypeError) as e:
        lax.cond(True, f, g, jnp.float32(1))
    msg = str(e.value)
    assert msg.startswith("cond branches must have equal output types but they differ.\n\ntrue_fun is f at ")
    assert (
        "  * the output of true_fun at path ['a'] has type float32[] but the corresponding output of false_fun "
        "has type int32[], so the dtypes do not match;\n"
        "  * the output of true_fun at path ['b'] has type float32[] but the corresponding output of false_fun "
        "has type float32[2], so the shapes do not match.\n\n"
        "Revise true_fun and/or false_fun so that all output types match."
    ) in msg


def test_cond_structure_lengths():
    with pytest.raises(TypeError) as e:
        lax.cond(True, lambda x: (x, x), lambda x: (x,), 1.0)
    assert "true_fun output is a tuple of length 2 but false_fun output is a tuple of length 1, so the " in str(e.value)


def test_switch_names_branches_as_jax():
    brs = [lambda x: x, lambda x: x, lambda x: jnp.stack([x, x])]
    with pytest.raises(TypeError) as e:
        lax.switch(0, brs, jnp.float32(1))
    msg = str(e.value)
    assert "branch 0 is <lambda> at " in msg and "branch2 is <lambda> at " in msg
    want = "The output of branch 0 has type float32[] but the corresponding output of branch2 has type float32[2]"
    assert want in msg


def test_pred_sequence_types():
    with pytest.raises(TypeError, match=r"Pred must be a scalar, got \[True\] of type <class 'list'>"):
        lax.cond([True], lambda: 1, lambda: 2)
    with pytest.raises(TypeError, match=r"Pred must be a scalar, got \[ True False\] of shape \(2,\)\."):
        lax.cond(np.array([True, False]), lambda: 1, lambda: 2)


def test_scan_non_pair_shows_avals():
    with pytest.raises(TypeError, match=r"scan body output must be a pair, got \(ShapedArray\(float32\[\]\), "):
        lax.scan(lambda c, x: (c, x, x), jnp.float32(0), jnp.zeros(3))
