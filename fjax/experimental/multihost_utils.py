"""``jax.experimental.multihost_utils``: host-level collectives for multi-process programs
(``process_allgather``, ``broadcast_one_to_all``, ``sync_global_devices``, ``assert_equal``),
implemented over MPI in ``fjax._multihost``."""

from fjax._multihost import (  # noqa: F401
    assert_equal,
    broadcast_one_to_all,
    process_allgather,
    sync_global_devices,
)

__all__ = ["assert_equal", "broadcast_one_to_all", "process_allgather", "sync_global_devices"]
