"""ioadvisor: trace h5py/zarr access, model HDF5 and Zarr cost, recommend a layout.

``advisor.trace`` is the front door::

    import advisor
    with advisor.trace("run.jsonl"):
        ...  # existing h5py / zarr code
"""
from advisor.api import advise
from instrumentation.tracer import trace

__all__ = ["advise", "trace"]
