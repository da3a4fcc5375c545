"""lax.create_token / lax.after_all and the Token value (JAX 0.10.2's behaviour: the argument of
create_token is ignored, after_all takes only tokens, tokens pass in and out of jit). fjax runs
effects in program order, so a token orders nothing; it is a pytree with no leaves."""

import re

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.extend.core import AbstractToken, Token


def test_create_and_merge():
    t = lax.create_token()
    assert isinstance(t, Token)
    assert re.fullmatch(r"<fjax\._tokens\.Token object at 0x[0-9a-f]+>", repr(t))
    assert isinstance(lax.create_token(jnp.ones(3)), Token)  # the argument is ignored
    assert isinstance(lax.after_all(t, lax.create_token()), Token)
    assert isinstance(lax.after_all(), Token)
    assert repr(AbstractToken()) == "AbstractToken()" and AbstractToken().str_short() == "Tok"


def test_after_all_rejects_non_tokens():
    with pytest.raises(TypeError, match="Arguments to after_all must be tokens"):
        lax.after_all(1.0)
    with pytest.raises(TypeError, match="Arguments to after_all must be tokens"):
        lax.after_all(lax.create_token(), jnp.ones(2))


def test_tokens_under_transforms():
    t = lax.create_token()
    out = fjax.jit(lambda x: lax.after_all(lax.create_token(), lax.create_token(x)))(1.0)
    assert isinstance(out, Token)
    tok, y = fjax.jit(lambda t, x: (lax.after_all(t), x * 2))(t, 3.0)
    assert isinstance(tok, Token) and float(y) == 6.0
    tok, xs = fjax.vmap(lambda x: (lax.create_token(x), x + 1))(jnp.ones(2))
    assert isinstance(tok, Token)
    np.testing.assert_allclose(xs, [2.0, 2.0])
    assert float(fjax.grad(lambda x: (lax.create_token(x), x * x)[1])(3.0)) == 6.0
    (tok, s), _ = lax.scan(lambda c, x: ((lax.after_all(c[0]), c[1] + x), None), (t, 0.0), jnp.ones(3))
    assert isinstance(tok, Token) and float(s) == 3.0
    # no equations: there is no effect to order
    assert "create_token" not in str(fjax.make_jaxpr(lambda x: lax.after_all(lax.create_token(x)))(1.0))
