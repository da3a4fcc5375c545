"""``fjax.scipy.stats``: the distribution families of ``jax.scipy.stats`` (each a submodule,
e.g. ``fjax.scipy.stats.norm.logpdf``), ``mode``, ``rankdata``, ``sem`` and ``gaussian_kde``."""

import sys as _sys
import types as _types

from fjax.scipy.stats import _continuous, _discrete
from fjax.scipy.stats._misc import ModeResult, gaussian_kde, mode, rankdata, sem

_FAMILIES = {
    **{
        n: getattr(_continuous, n)
        for n in (
            "norm",
            "uniform",
            "expon",
            "laplace",
            "logistic",
            "cauchy",
            "gumbel_r",
            "gumbel_l",
            "gamma",
            "chi2",
            "beta",
            "t",
            "pareto",
            "vonmises",
            "wrapcauchy",
            "gennorm",
            "truncnorm",
            "dirichlet",
            "multivariate_normal",
        )
    },
    **{
        n: getattr(_discrete, n)
        for n in ("bernoulli", "binom", "nbinom", "geom", "poisson", "betabinom", "multinomial")
    },
}


def _as_module(name, cls):
    mod = _types.ModuleType(f"{__name__}.{name}", cls.__doc__)
    for attr, val in vars(cls).items():
        if not attr.startswith("_"):
            setattr(mod, attr, val.__func__ if isinstance(val, staticmethod) else val)
    _sys.modules[mod.__name__] = mod
    return mod


for _n, _cls in _FAMILIES.items():
    globals()[_n] = _as_module(_n, _cls)
del _n, _cls
