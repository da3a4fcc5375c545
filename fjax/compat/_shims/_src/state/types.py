"""``jax._src.state.types``: the abstract type of a mutable reference (flax's nnx checks for it);
fjax's ``AbstractRef`` from ``fjax.ref``."""

from fjax.ref import AbstractRef, Ref  # noqa: F401
