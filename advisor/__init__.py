"""ioadvisor: trace h5py/zarr access, model HDF5 and Zarr cost, recommend a layout.

``advisor.trace`` is the front door::

    import advisor
    with advisor.trace("run.jsonl"):
        ...  # existing h5py / zarr code
"""
__all__ = ["advise", "trace"]


def __getattr__(name: str):
    # loaded on first use: `ioadvisor COMMAND` starts (and shows its progress bar) before numpy and the
    # tracer are imported
    if name == "advise":
        from advisor.api import advise

        return advise
    if name == "trace":
        from instrumentation.tracer import trace

        return trace
    raise AttributeError(f"module 'advisor' has no attribute {name!r}")
