"""Capture of h5py and zarr array accesses into trace records (the contract)."""
from .records import (
    READ,
    SCHEMA_VERSION,
    WRITE,
    AccessRecord,
    ChunkCache,
    DatasetRecord,
    Filter,
    RecordError,
    ResizeRecord,
    Selection,
    TraceHeader,
)
from .tracefile import Trace, TraceError, TraceWriter, load_trace, merge_traces, write_trace
