"""Shared helpers of ``fjax.experimental.sparse``: errors, layout info, batched vmap."""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

import fjax
from fjax import lax, tree_util
from fjax import numpy as jnp
from fjax._core_values import Tracer, concrete_or_error


class SparseEfficiencyError(ValueError):
    """Raised when an operation would store many explicit zeros."""


class SparseEfficiencyWarning(UserWarning):
    """Warned when an operation would store many explicit zeros."""


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
    """Kept for API compatibility with JAX; fjax has no cuSPARSE lowering."""


Shape = tuple[int, ...]


class SparseInfo(NamedTuple):
    shape: Shape
    indices_sorted: bool = False
    unique_indices: bool = False


def is_tracer(x: Any) -> bool:
    return isinstance(x, Tracer)


def static_int(x: Any, what: str) -> int:
    """``x`` as a Python int; a traced value raises ConcretizationTypeError naming ``what``."""
    return operator.index(int(np.asarray(concrete_or_error(x, what))))


def nfold_vmap(fun: Callable, n: int, *, broadcasted: bool = True) -> Callable:
    """Apply vmap ``n`` times over the leading axes; with ``broadcasted``, size-1 axes broadcast."""
    for _ in range(n):
        fun = _broadcasting_vmap(fun) if broadcasted else fjax.vmap(fun)
    return fun


def _broadcasting_vmap(fun: Callable) -> Callable:
    @functools.wraps(fun)
    def batched(*args: Any) -> Any:
        flat, tree = tree_util.tree_flatten(args)
        size = max(a.shape[0] for a in flat)
        if any(a.shape[0] not in (1, size) for a in flat):
            raise ValueError("sparse: mismatched batch dimensions " + str([a.shape for a in flat]))
        axes = []
        new = []
        for a in flat:
            if a.shape[0] == 1 and size != 1:
                new.append(lax.squeeze(a, (0,)))
                axes.append(None)
            else:
                new.append(a)
                axes.append(0)
        return fjax.vmap(fun, in_axes=tuple(tree_util.tree_unflatten(tree, axes)))(*tree_util.tree_unflatten(tree, new))

    return batched


def count_stored_elements_per_batch(mat: Any, n_batch: int = 0, n_dense: int = 0) -> Any:
    """Number of nonzero (sparse-index) entries of ``mat`` per batch element."""
    mask = jnp.asarray(mat) != 0
    if n_dense > 0:
        mask = mask.any(tuple(range(mask.ndim - n_dense, mask.ndim)))
    return mask.sum(tuple(range(n_batch, mask.ndim)))


def count_stored_elements(mat: Any, n_batch: int = 0, n_dense: int = 0) -> Any:
    """The largest per-batch number of nonzero entries of ``mat``."""
    counts = count_stored_elements_per_batch(mat, n_batch, n_dense)
    return counts.max(initial=0) if counts.ndim else counts


def dot_general_shape(lhs_shape: Shape, rhs_shape: Shape, dimension_numbers: Any) -> Shape:
    """The output shape of lax.dot_general, validated as lax.dot_general validates it."""
    out = fjax.eval_shape(
        lambda a, b: lax.dot_general(a, b, dimension_numbers),
        fjax.ShapeDtypeStruct(tuple(lhs_shape), np.float32),
        fjax.ShapeDtypeStruct(tuple(rhs_shape), np.float32),
    )
    return tuple(out.shape)


def canonical_dimension_numbers(dimension_numbers: Any) -> tuple:
    (lc, rc), (lb, rb) = dimension_numbers
    as_t = lambda d: tuple(operator.index(i) for i in (d if isinstance(d, (tuple, list)) else (d,)))  # noqa: E731
    return (as_t(lc), as_t(rc)), (as_t(lb), as_t(rb))


def remaining(original: Sequence[int], *removed: Sequence[int]) -> list[int]:
    gone = set().union(*map(set, removed))
    return [i for i in original if i not in gone]


def batch_iotas(batch_shape: Shape, nse: int) -> tuple:
    """Index arrays of shape ``batch_shape + (nse,)`` that address each batch element."""
    full = (*batch_shape, nse)
    return tuple(lax.broadcasted_iota(np.int32, full, d) for d in range(len(batch_shape)))


__all__ = [
    "SparseEfficiencyError",
    "SparseEfficiencyWarning",
    "CuSparseEfficiencyWarning",
    "SparseInfo",
    "nfold_vmap",
]
