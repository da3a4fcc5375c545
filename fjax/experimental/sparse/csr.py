"""``jax.experimental.sparse.csr``: the legacy 2-D CSR and CSC formats."""

from fjax.experimental.sparse.legacy import (  # noqa: F401
    CSC,
    CSR,
    csr_fromdense,
    csr_matmat,
    csr_matvec,
    csr_todense,
)
