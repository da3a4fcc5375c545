"""dm-haiku on fjax through ``fjax.compat``: ``hk.transform``/``transform_with_state``, its modules
(``Linear``, ``nets.MLP``, ``Conv2D``, ``BatchNorm``, ``LayerNorm``, ``LSTM`` with
``dynamic_unroll``/``static_unroll``, ``GRU`` in a ``DeepRNN``, ``MultiHeadAttention``, ``Embed``,
pools, ``GroupNorm``/``RMSNorm``), ``dropout`` and rng keys, haiku's lifted transforms
(``hk.vmap``/``scan``/``remat``/``cond``/``switch``/``fori_loop``/``while_loop``, ``layer_stack``,
``experimental.lift``), ``multi_transform``, ``mixed_precision`` (jmp), ``eval_summary``/``tabulate``,
``data_structures`` and training with optax under ``jax.jit``.

dm-haiku (it declares a dependency on jax) and what it imports (jmp, tabulate) are installed with
``pip install --no-deps`` when missing, so the real JAX is never pulled in; without network access
(or pip) the test skips with the reason. The checks (``_haiku_checks.py``) are ours, each against
numpy, finite differences or a closed form from the parameters haiku made; the same script passes
under JAX 0.10.2.
"""

from __future__ import annotations

from . import _subset

PACKAGES = ["dm-haiku==0.0.17", "jmp", "tabulate", "optax==0.2.8", "chex==0.1.92", "absl-py", "toolz"]
MODULES = ["haiku", "jmp", "tabulate", "optax", "chex", "absl", "toolz"]


def test_haiku_on_fjax():
    _subset.installed_site(PACKAGES, MODULES, "haiku")
    _subset.run_check_script("haiku", 21)
