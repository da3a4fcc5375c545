"""``jax.experimental.sparse`` for fjax: BCOO sparse arrays built from jnp/lax ops."""

from fjax.experimental.sparse._base import JAXSparse as JAXSparse
from fjax.experimental.sparse._util import (
    CuSparseEfficiencyWarning as CuSparseEfficiencyWarning,
)
from fjax.experimental.sparse._util import (
    SparseEfficiencyError as SparseEfficiencyError,
)
from fjax.experimental.sparse._util import (
    SparseEfficiencyWarning as SparseEfficiencyWarning,
)
from fjax.experimental.sparse.bcoo import (
    BCOO as BCOO,
)
from fjax.experimental.sparse.bcoo import (
    bcoo_extract as bcoo_extract,
)
from fjax.experimental.sparse.bcoo import (
    bcoo_fromdense as bcoo_fromdense,
)
from fjax.experimental.sparse.bcoo import (
    bcoo_sort_indices as bcoo_sort_indices,
)
from fjax.experimental.sparse.bcoo import (
    bcoo_sum_duplicates as bcoo_sum_duplicates,
)
from fjax.experimental.sparse.bcoo import (
    bcoo_todense as bcoo_todense,
)
from fjax.experimental.sparse.bcoo import (
    bcoo_transpose as bcoo_transpose,
)
from fjax.experimental.sparse.bcoo import (
    bcoo_update_layout as bcoo_update_layout,
)
