"""``jax._src.tree_util``: the public tree utilities and the registry of pytree node types,
which flax's nnx reads (``_registry``: node type -> its flatten/unflatten functions)."""

from fjax.tree_util import *  # noqa: F403
from fjax.tree_util import _registry  # noqa: F401
