"""Defer a module that a library imports at module level but uses only on paths this process never takes.

pydarshan's ``darshan.backend.cffi_backend`` and ``darshan.report`` import pandas at module level, for their
``dtype="pandas"`` outputs; the log reader server (``instrumentation.darshan_raw``) asks only for numpy
records. Importing pandas there is most of the server's start (benchmarks/speed/triage.py, the rerun after
adding 1% new logs). ``defer("pandas")`` puts a stand-in in ``sys.modules``: ``import pandas as pd`` binds the
stand-in, and the first attribute looked up on it (``pd.DataFrame``, ``pd.__path__`` for a submodule) imports
the real module, so a library that does use it gets it, whole, on first use. Only for a process whose code is
all known (a server of ours), never in a user's process.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types


class DeferredModule(types.ModuleType):
    """Stands in for a module until the first of its attributes is looked up (then imports it)."""

    def __getattr__(self, attr):
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        value = getattr(importlib.import_module(self.__name__), attr)
        setattr(self, attr, value)  # found here from now on
        return value


def defer(name: str) -> bool:
    """Stand in for the top-level module ``name`` until it is used; False (nothing done) when it is imported
    already or not installed (an import of it then fails as it would have)."""
    if name in sys.modules or importlib.util.find_spec(name) is None:
        return False
    sys.modules[name] = DeferredModule(name)
    return True


__all__ = ["DeferredModule", "defer"]
