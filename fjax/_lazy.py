"""A module imported on first attribute access (keeps ``import fjax`` from loading scipy)."""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """Stands for module ``name``; the first attribute read imports it."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)
