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
