"""``fjax.scipy.sparse``: the ``jax.scipy.sparse`` namespace (its ``linalg`` Krylov solvers)."""

from fjax.scipy.sparse import linalg

__all__ = ["linalg"]
