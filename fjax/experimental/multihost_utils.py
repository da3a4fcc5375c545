"""``jax.experimental.multihost_utils``: host-level collectives for multi-process programs
(``process_allgather``, ``broadcast_one_to_all``, ``sync_global_devices``, ``assert_equal``,
``host_local_array_to_global_array`` and its inverse, ``reached_preemption_sync_point``),
implemented over MPI in ``fjax._multihost``."""

from fjax._multihost import (  # noqa: F401
    assert_equal,
    broadcast_one_to_all,
    global_array_to_host_local_array,
    host_local_array_to_global_array,
    process_allgather,
    reached_preemption_sync_point,
    sync_global_devices,
)

__all__ = [
    "assert_equal",
    "broadcast_one_to_all",
    "global_array_to_host_local_array",
    "host_local_array_to_global_array",
    "process_allgather",
    "reached_preemption_sync_point",
    "sync_global_devices",
]
