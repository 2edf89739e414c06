"""Capture of h5py and zarr array accesses into trace records (the contract).

The names below are imported at first use (PEP 562): a light launcher (``ioadvisor run`` of a C program,
``instrumentation.launch``) imports submodules of this package without numpy."""
from importlib import import_module

_RECORDS = ("READ", "SCHEMA_VERSION", "WRITE", "AccessRecord", "ChunkCache", "DatasetRecord", "Filter",
            "RecordError", "ResizeRecord", "Selection", "TraceHeader")
_TRACEFILE = ("Trace", "TraceError", "TraceWriter", "load_trace", "merge_traces", "write_trace")
__all__ = [*_RECORDS, *_TRACEFILE]


def __getattr__(name: str):
    if name in _RECORDS:
        module = ".records"
    elif name in _TRACEFILE:
        module = ".tracefile"
    else:
        raise AttributeError(f"module 'instrumentation' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *__all__])
