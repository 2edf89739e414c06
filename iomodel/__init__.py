"""I/O cost model (Kang et al.): trace + candidate layout + system profile -> predicted seconds by term.

Pure computation on trace records: no h5py or zarr import here, so a trace from
another machine replays anywhere.
"""
import sys
import types

from ._jitcache import invalidate_if_stale, kernels, uncached_kernels

invalidate_if_stale()

# The rest loads on first use (PEP 562): ``iomodel.filelevel`` (the Darshan report's and triage's file-level model)
# and ``iomodel.profile`` need neither numba nor the kernels, and a triage rerun or a dask worker's start would
# otherwise pay numba's import (most of a second: benchmarks/speed/triage.py, "rerun with nothing new").
_LAZY = {"TERMS": "cost", "term_seconds": "cost", "Layout": "layout", "LayoutError": "layout",
         "parse_layout": "layout", "contention_factor": "parallel", "pick_dataset": "predict", "predict": "predict",
         "Prediction": "prediction", "ProfileError": "profile", "SystemProfile": "profile",
         "load_profile": "profile", "save_profile": "profile", "FEATURES": "variables", "Variables": "variables",
         "count_variables": "variables"}


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    else:
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value) -> None:
        # importing the submodule iomodel.predict binds it here; ``iomodel.predict`` stays the function, as
        # when this package imported it eagerly
        if name == "predict" and isinstance(value, types.ModuleType):
            value = value.predict
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "FEATURES", "TERMS", "Layout", "LayoutError", "Prediction", "ProfileError", "SystemProfile", "Variables",
    "contention_factor", "count_variables", "kernels", "load_profile", "parse_layout", "pick_dataset", "predict",
    "save_profile", "term_seconds", "uncached_kernels",
]
