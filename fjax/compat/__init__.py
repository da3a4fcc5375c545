"""Run code written for JAX on fjax: ``import jax`` resolves to fjax.

``fjax.compat.install()`` puts an import hook on ``sys.meta_path`` after which ``import jax``,
``import jax.numpy as jnp``, ``from jax import lax``, ``import jax.scipy.special`` and every other
``jax.X.Y`` resolve to fjax's module of the same path (``fjax.X.Y``), so unmodified libraries
written for JAX (optax, chex, ...) import and run on fjax. ``jaxlib`` resolves to a small module
that reports a version. The same from the command line::

    python -m fjax.compat script.py [args...]      # or: python -m fjax run script.py
    python -m fjax.compat -m pytest --pyargs optax # run a module, as ``python -m``

Submodules are the fjax modules themselves (``jax.numpy is fjax.numpy``); only the top-level
``jax`` is a thin view of ``fjax`` that forwards every attribute read and write to it and reports
``__version__`` as the JAX API version fjax follows (libraries compare it).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

__all__ = ["JAX_API_VERSION", "install", "installed", "uninstall"]

#: The JAX release whose documented API fjax follows; ``jax.__version__`` under the hook.
JAX_API_VERSION = "0.10.2"

# modules under ``jax.`` that fjax does not (yet) have under the same path, provided by
# fjax.compat._shims so libraries importing them at module level can start
_SHIM_PACKAGE = "fjax.compat._shims"


def _array_types() -> tuple[type, ...]:
    from fjax._prng import PRNGKeyArray
    from fjax.core import Array, Tracer

    return (Array, Tracer, PRNGKeyArray)


class _ArrayMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _array_types())

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _array_types())


class Array(metaclass=_ArrayMeta):
    """``jax.Array`` under the hook: ``isinstance(x, jax.Array)`` holds for fjax arrays, for
    tracers, as JAX's does inside transforms, and for typed key arrays (``random.key(0)``), which
    are arrays of a key dtype in JAX (``fjax.Array`` itself is the concrete class)."""


# names JAX 0.10 has at the top level that fjax keeps in a submodule: name -> (module, attribute).
# fjax's own top-level attribute of the same name, once it has one, takes precedence.
_TOP_LEVEL_ALIASES = {
    "Device": ("fjax.sharding", "Device"),
    "NamedSharding": ("fjax.sharding", "NamedSharding"),
    "P": ("fjax.sharding", "PartitionSpec"),
}


class _JaxView(types.ModuleType):
    """The module object ``sys.modules["jax"]``: attribute reads and writes go to ``fjax``."""

    def __getattr__(self, name: str) -> Any:
        import fjax

        if name == "Array":
            return Array
        try:
            return getattr(fjax, name)
        except AttributeError:
            if name in _TOP_LEVEL_ALIASES:
                mod_name, attr = _TOP_LEVEL_ALIASES[name]
                return getattr(importlib.import_module(mod_name), attr)
            # ``import jax; jax.scipy.special`` works in JAX for the submodules jax imports itself
            if name.startswith("_"):
                raise
            mod = _import_existing("fjax." + name) or _import_existing(_SHIM_PACKAGE + "." + name)
            if mod is None:
                raise AttributeError(f"module 'jax' (fjax) has no attribute {name!r}") from None
            return mod

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__") and name.endswith("__"):
            super().__setattr__(name, value)
        else:
            import fjax

            setattr(fjax, name, value)

    def __delattr__(self, name: str) -> None:
        import fjax

        delattr(fjax, name)

    def __dir__(self) -> list[str]:
        import fjax

        return sorted(set(dir(fjax)) | set(_TOP_LEVEL_ALIASES) | {"Array", "__version__", "__version_info__"})

    @property  # type: ignore[override]
    def __dict__(self) -> dict[str, Any]:
        """fjax's namespace, where reads and writes go: ``mock.patch("jax.jit", ...)`` and pytest's
        ``monkeypatch`` look an attribute up here to decide whether to restore it by ``setattr``
        (found) or by ``delattr`` (not found, which would delete ``fjax.jit`` for good)."""
        import fjax

        return fjax.__dict__


def _target_names(fullname: str) -> list[str] | None:
    """The fjax module paths to try for ``fullname`` (``jax...`` or ``jaxlib...``), in order."""
    if fullname == "jax" or fullname.startswith("jax."):
        rest = fullname[3:]
        if rest == "":
            return ["fjax"]
        return ["fjax" + rest, _SHIM_PACKAGE + rest]
    if fullname == "jaxlib" or fullname.startswith("jaxlib."):
        return ["fjax.compat._jaxlib" + fullname[6:]]
    return None


def _import_existing(name: str) -> types.ModuleType | None:
    """Import module ``name``; None if it (or a parent package) does not exist."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        # a missing module *inside* an existing one is a real error, not "no such alias"
        if e.name is not None and (name == e.name or name.startswith(e.name + ".")):
            return None
        raise


def _shadowed(name: str) -> bool:
    """Whether fjax module ``name``'s parent has an attribute of the same name that is not it:
    ``fjax.jit`` is the function although ``fjax/jit.py`` exists (likewise ``config``,
    ``checkpoint``). JAX has no such module (``import jax.jit`` fails), and importing the alias
    would set the module over the function (``mock.patch("jax.jit")`` imports ``jax.jit``
    before falling back to getattr)."""
    parent_name, _, child = name.rpartition(".")
    parent = sys.modules.get(parent_name)
    if parent is None:
        return False
    try:
        attr = getattr(parent, child)  # (fjax's top level resolves some names lazily)
    except AttributeError:
        return False
    return not isinstance(attr, types.ModuleType)


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.original_spec = getattr(module, "__spec__", None)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        # importlib stamped the alias spec on the shared module object; fjax's own name stays
        if self.original_spec is not None and module is not sys.modules.get("jax"):
            module.__spec__ = self.original_spec


class _JaxAliasFinder(importlib.abc.MetaPathFinder):
    """Meta-path finder resolving ``jax`` / ``jax.*`` / ``jaxlib`` to fjax's modules."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        names = _target_names(fullname)
        if names is None:
            return None
        if _shadowed(names[0]):
            # (returning None would let the path finder load a second copy from fjax's __path__)
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        module = None
        for name in names:
            module = _import_existing(name)
            if module is not None:
                break
        if module is None:
            return None
        if fullname == "jax":
            module = _make_view(module)
        is_pkg = hasattr(module, "__path__")
        spec = importlib.util.spec_from_loader(fullname, _AliasLoader(module), is_package=is_pkg)
        if is_pkg:
            spec.submodule_search_locations = list(module.__path__)
        return spec


_FINDER = _JaxAliasFinder()
_VIEW: _JaxView | None = None


def _make_view(fjax_module: types.ModuleType) -> _JaxView:
    global _VIEW
    if _VIEW is None:
        view = _JaxView("jax", fjax_module.__doc__)
        types.ModuleType.__setattr__(view, "__version__", JAX_API_VERSION)
        version_info = tuple(int(p) for p in JAX_API_VERSION.split("."))
        types.ModuleType.__setattr__(view, "__version_info__", version_info)
        types.ModuleType.__setattr__(view, "__path__", list(fjax_module.__path__))
        types.ModuleType.__setattr__(view, "__file__", fjax_module.__file__)
        _VIEW = view
    return _VIEW


def install() -> None:
    """Make ``import jax`` (and ``jax.*``, ``jaxlib``) resolve to fjax from now on in this process.

    Raises ``RuntimeError`` if the real ``jax`` was already imported (modules holding it would
    mix two libraries). Calling it twice is harmless.
    """
    existing = sys.modules.get("jax")
    if existing is not None and existing is not _VIEW:
        raise RuntimeError(
            "fjax.compat.install(): the real 'jax' module is already imported; call install() "
            "before anything imports jax"
        )
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    """Remove the hook and forget the ``jax``/``jaxlib`` aliases imported so far."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in list(sys.modules):
        if name in ("jax", "jaxlib") or name.startswith(("jax.", "jaxlib.")):
            del sys.modules[name]


def installed() -> bool:
    """Whether the ``import jax`` hook is active."""
    return _FINDER in sys.meta_path
