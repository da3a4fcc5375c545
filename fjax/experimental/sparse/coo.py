"""``jax.experimental.sparse.coo``: the legacy 2-D COO format."""

from fjax.experimental.sparse.legacy import (  # noqa: F401
    COO,
    coo_fromdense,
    coo_matmat,
    coo_matvec,
    coo_todense,
)
