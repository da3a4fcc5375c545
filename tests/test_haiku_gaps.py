"""fjax gaps found running dm-haiku on fjax (tests/compat/test_haiku.py), each checked here on its own."""

from __future__ import annotations

import pytest

from fjax.extend import core as jex_core


def test_trace_context_names_exist_and_raise_clearly():
    # haiku's dot.py picks these from jax.extend.core at import (JAX >= 0.10); fjax has no
    # user-defined Trace contexts, so using them raises NotImplementedError naming the feature
    for name in ("take_current_trace", "set_current_trace", "TraceTag"):
        assert name in jex_core.__all__
    with pytest.raises(NotImplementedError, match="take_current_trace"):
        jex_core.take_current_trace()
    with pytest.raises(NotImplementedError, match="set_current_trace"):
        jex_core.set_current_trace(None)
    with pytest.raises(NotImplementedError, match="TraceTag"):
        jex_core.TraceTag()


def _dot_line(precision, a, b, dims):
    import fjax
    from fjax import lax

    f = fjax.jit(lambda a, b: lax.dot_general(a, b, dims, precision=precision))
    text = f.lower(a, b).compiler_ir(dialect="hlo").as_hlo_text()
    (line,) = [ln for ln in text.split("\n") if " dot(" in ln]
    return line.split("), ", 1)[1]


@pytest.mark.parametrize(
    "precision,expected",
    [
        (None, ""),
        ("default", ""),
        ("highest", ", operand_precision={highest,highest}"),
        ("float32", ", operand_precision={highest,highest}"),
        ("bfloat16_3x", ", operand_precision={high,high}"),
        (("high", "default"), ", operand_precision={high,default}"),
    ],
)
def test_hlo_text_dot_attributes_as_jax(precision, expected):
    # as JAX 0.10.2's as_hlo_text() prints them (haiku's basic_test greps operand_precision)
    import numpy as np

    from fjax import lax

    if isinstance(precision, tuple):
        precision = tuple(lax.Precision(p) for p in precision)
    a, b = np.ones((3, 2, 4), np.float32), np.ones((3, 4, 5), np.float32)
    line = _dot_line(precision, a, b, (((2,), (1,)), ((0,), (0,))))
    dims = "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"
    assert line == dims + expected
    line = _dot_line(precision, a[0], b[0], (((1,), (0,)), ((), ())))
    assert line == "lhs_contracting_dims={1}, rhs_contracting_dims={0}" + expected
