"""``jax.experimental.sparse.util``: sparse efficiency errors/warnings and helpers."""

from fjax.experimental.sparse._util import (  # noqa: F401
    CuSparseEfficiencyWarning,
    SparseEfficiencyError,
    SparseEfficiencyWarning,
    SparseInfo,
    nfold_vmap,
)
