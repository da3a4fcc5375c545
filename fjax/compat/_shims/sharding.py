"""Stand-in for ``jax.sharding`` until fjax has its own (which then takes precedence).

fjax runs on one CPU device: every array has a ``SingleDeviceSharding``. ``Sharding`` is the
abstract base that ``isinstance`` checks and annotations name.
"""

import abc

from fjax._devices import SingleDeviceSharding

__all__ = ["Sharding", "SingleDeviceSharding"]


class Sharding(abc.ABC):  # noqa: B024  (an interface for isinstance checks)
    """Base of the sharding classes; fjax's arrays carry a ``SingleDeviceSharding``."""


Sharding.register(SingleDeviceSharding)
