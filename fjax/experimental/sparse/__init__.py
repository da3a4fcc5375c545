"""``jax.experimental.sparse`` for fjax: BCOO/BCSR (and legacy COO/CSR/CSC) sparse arrays and
``sparsify``, all composed from jnp/lax operations, so they run under jit/vmap/grad on every
backend. JAX's ``*_p`` primitives are not provided: fjax adds no sparse primitives."""

# ruff: noqa: I001, E402
from fjax.experimental.sparse._base import JAXSparse as JAXSparse
from fjax.experimental.sparse._util import CuSparseEfficiencyWarning as CuSparseEfficiencyWarning
from fjax.experimental.sparse._util import SparseEfficiencyError as SparseEfficiencyError
from fjax.experimental.sparse._util import SparseEfficiencyWarning as SparseEfficiencyWarning

from fjax.experimental.sparse.bcoo import BCOO as BCOO
from fjax.experimental.sparse.bcoo import bcoo_extract as bcoo_extract
from fjax.experimental.sparse.bcoo import bcoo_fromdense as bcoo_fromdense
from fjax.experimental.sparse.bcoo import bcoo_sort_indices as bcoo_sort_indices
from fjax.experimental.sparse.bcoo import bcoo_sum_duplicates as bcoo_sum_duplicates
from fjax.experimental.sparse.bcoo import bcoo_todense as bcoo_todense
from fjax.experimental.sparse.bcoo import bcoo_transpose as bcoo_transpose
from fjax.experimental.sparse.bcoo import bcoo_update_layout as bcoo_update_layout
from fjax.experimental.sparse.bcoo_ops import bcoo_broadcast_in_dim as bcoo_broadcast_in_dim
from fjax.experimental.sparse.bcoo_ops import bcoo_concatenate as bcoo_concatenate
from fjax.experimental.sparse.bcoo_ops import bcoo_dot_general as bcoo_dot_general
from fjax.experimental.sparse.bcoo_ops import bcoo_dot_general_sampled as bcoo_dot_general_sampled
from fjax.experimental.sparse.bcoo_ops import bcoo_dynamic_slice as bcoo_dynamic_slice
from fjax.experimental.sparse.bcoo_ops import bcoo_gather as bcoo_gather
from fjax.experimental.sparse.bcoo_ops import bcoo_multiply_dense as bcoo_multiply_dense
from fjax.experimental.sparse.bcoo_ops import bcoo_multiply_sparse as bcoo_multiply_sparse
from fjax.experimental.sparse.bcoo_ops import bcoo_reduce_sum as bcoo_reduce_sum
from fjax.experimental.sparse.bcoo_ops import bcoo_reshape as bcoo_reshape
from fjax.experimental.sparse.bcoo_ops import bcoo_rev as bcoo_rev
from fjax.experimental.sparse.bcoo_ops import bcoo_slice as bcoo_slice
from fjax.experimental.sparse.bcoo_ops import bcoo_squeeze as bcoo_squeeze

from fjax.experimental.sparse.bcsr import BCSR as BCSR
from fjax.experimental.sparse.bcsr import bcsr_broadcast_in_dim as bcsr_broadcast_in_dim
from fjax.experimental.sparse.bcsr import bcsr_concatenate as bcsr_concatenate
from fjax.experimental.sparse.bcsr import bcsr_dot_general as bcsr_dot_general
from fjax.experimental.sparse.bcsr import bcsr_extract as bcsr_extract
from fjax.experimental.sparse.bcsr import bcsr_fromdense as bcsr_fromdense
from fjax.experimental.sparse.bcsr import bcsr_sum_duplicates as bcsr_sum_duplicates
from fjax.experimental.sparse.bcsr import bcsr_todense as bcsr_todense

from fjax.experimental.sparse.legacy import COO as COO
from fjax.experimental.sparse.legacy import CSC as CSC
from fjax.experimental.sparse.legacy import CSR as CSR
from fjax.experimental.sparse.legacy import coo_fromdense as coo_fromdense
from fjax.experimental.sparse.legacy import coo_matmat as coo_matmat
from fjax.experimental.sparse.legacy import coo_matvec as coo_matvec
from fjax.experimental.sparse.legacy import coo_todense as coo_todense
from fjax.experimental.sparse.legacy import csr_fromdense as csr_fromdense
from fjax.experimental.sparse.legacy import csr_matmat as csr_matmat
from fjax.experimental.sparse.legacy import csr_matvec as csr_matvec
from fjax.experimental.sparse.legacy import csr_todense as csr_todense

from fjax.experimental.sparse.api import empty as empty
from fjax.experimental.sparse.api import eye as eye
from fjax.experimental.sparse.api import todense as todense
from fjax.experimental.sparse.random import random_bcoo as random_bcoo
from fjax.experimental.sparse.transform import sparsify as sparsify
from fjax.experimental.sparse.ad import grad as grad
from fjax.experimental.sparse.ad import jacfwd as jacfwd
from fjax.experimental.sparse.ad import jacobian as jacobian
from fjax.experimental.sparse.ad import jacrev as jacrev
from fjax.experimental.sparse.ad import value_and_grad as value_and_grad

from fjax.experimental.sparse import coo as coo
from fjax.experimental.sparse import csr as csr
from fjax.experimental.sparse import util as util
