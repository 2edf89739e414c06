"""ioadvisor: trace h5py/zarr access, model HDF5 and Zarr cost, recommend a layout.

``advisor.trace`` is the front door::

    import advisor
    with advisor.trace("run.jsonl"):
        ...  # existing h5py / zarr code
"""
from importlib import import_module

_EXPORTS = {"AdviseOptions": "advisor.api", "advise": "advisor.api", "trace": "instrumentation.tracer"}
"""Public name -> its module, imported at first use (PEP 562): ``ioadvisor run`` of a C program imports this
package but neither the models nor numpy (benchmarks/speed/tracing_overhead.py, fixed cost)."""

__all__ = ["AdviseOptions", "advise", "trace"]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'advisor' has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_EXPORTS])
