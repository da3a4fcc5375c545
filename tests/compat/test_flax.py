"""flax on fjax through ``fjax.compat``: linen modules, lifted transforms (``nn.scan``,
``nn.vmap``, ``nn.remat``), ``TrainState`` with optax, serialization, and the nnx API
(``nnx.Linear``/``BatchNorm``/``Dropout``, ``nnx.jit``/``grad``/``scan``/``vmap``/``remat``,
``nnx.Optimizer``, split/merge).

flax (it declares dependencies on jax, orbax-checkpoint and tensorstore, which it does not need
for these) is installed with ``pip install --no-deps`` together with what it imports (msgpack,
rich and its deps, PyYAML, treescope, opt_einsum, typing_extensions); without network access (or
pip) the test skips with the reason. The checks (``_flax_checks.py``) are ours, each against
numpy, finite differences or a closed form from the parameters flax made; the same script passes
under JAX 0.10.2.
"""

from __future__ import annotations

from . import _subset

PACKAGES = [
    "flax==0.12.8",
    "msgpack",
    "rich",
    "markdown-it-py",
    "mdurl",
    "pygments",
    "pyyaml",
    "treescope",
    "opt_einsum",
    "typing_extensions",
    "optax==0.2.8",
]
MODULES = [
    "flax",
    "msgpack",
    "rich",
    "markdown_it",
    "mdurl",
    "pygments",
    "yaml",
    "treescope",
    "opt_einsum",
    "typing_extensions",
    "optax",
]


def test_flax_on_fjax():
    _subset.installed_site(PACKAGES, MODULES, "flax")
    _subset.run_check_script("flax", 16)
