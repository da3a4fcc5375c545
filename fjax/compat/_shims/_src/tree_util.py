"""``jax._src.tree_util``: the public tree utilities and ``_registry``, the pytree node types
(flax's nnx reads it to tell nodes from leaves: ``type(x) in _registry``).

As JAX's, the registry holds the built-in containers (tuple, list, dict, None) and every
registered node type; key arrays are leaves, as in JAX (fjax's transforms look through them to
their data by a registration of their own, which this view leaves out).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from fjax import _tree_lifted
from fjax import tree_util as _tu
from fjax.tree_util import *  # noqa: F403

_BUILTIN = (tuple, list, dict, type(None))


class _RegistryView(Mapping):
    """The node types: built-in containers and ``fjax.tree_util._registry`` without the
    lifted leaves, read live (types registered later appear)."""

    def _hidden(self, t: Any) -> bool:
        return t in _tree_lifted._lifted

    def __getitem__(self, t: Any) -> Any:
        if t in _BUILTIN:
            return t
        if self._hidden(t):
            raise KeyError(t)
        return _tu._registry[t]

    def __contains__(self, t: object) -> bool:
        return t in _BUILTIN or (t in _tu._registry and not self._hidden(t))

    def __iter__(self) -> Iterator[Any]:
        yield from _BUILTIN
        yield from (t for t in _tu._registry if not self._hidden(t))

    def __len__(self) -> int:
        return sum(1 for _ in self)


_registry = _RegistryView()
