"""``jax.experimental.shard_map.shard_map`` (positional ``mesh, in_specs, out_specs``)."""

from fjax._shard_map import shard_map  # noqa: F401

__all__ = ["shard_map"]
