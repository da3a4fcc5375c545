"""fjax raises JAX 0.10.2's exception class and message word for word on the calls of
``tests/data/error_messages_extra_cases.py`` (recorded from JAX by ``make_error_messages_extra.py``
into ``error_messages_extra.json``): the message families of the error differential sweep over more
ops than that sweep holds (code written for JAX matches on these messages)."""

from __future__ import annotations

import json
import pathlib
import sys
import warnings

import pytest

import fjax

sys.path.insert(0, str(pathlib.Path(__file__).parent / "data"))
from error_messages_extra_cases import CASES, namespace, run  # noqa: E402

RECORDED = json.loads((pathlib.Path(__file__).parent / "data" / "error_messages_extra.json").read_text())["cases"]
_NS = namespace(fjax)


def test_every_case_is_recorded() -> None:
    assert set(RECORDED) == set(CASES)
    assert all(v is not None for v in RECORDED.values())  # each case is an error under JAX


@pytest.mark.parametrize("key", sorted(CASES))
def test_message_is_jaxs(key: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = run(CASES[key], _NS)
    assert got == RECORDED[key]
