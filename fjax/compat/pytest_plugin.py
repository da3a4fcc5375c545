"""pytest plugin (``pytest -p fjax.compat.pytest_plugin``): ``import jax`` -> fjax in every worker.

Loading it as a plugin (rather than wrapping pytest in ``python -m fjax.compat``) also reaches
pytest-xdist's worker processes, which load the same ``-p`` plugins.
"""

from fjax.compat import install

install()
