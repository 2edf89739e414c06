"""Rows of Python values (dicts) as an Arrow table of a given schema, built from numpy buffers.

Not ``pa.array``/``pa.table``/``Table.from_pylist``: the first of them in a process imports pandas (pyarrow
probes every input, lists and numpy arrays alike, for pandas objects; about 0.3 s of CPU), which a triage
rerun with a few new logs would pay for nothing (benchmarks/speed/triage.py, the rerun). Arrays built with
``Array.from_buffers`` never touch that probe. The result equals pyarrow's own conversion of the same rows
(tests/advisor/test_triage_arrowrows.py): None is null, NaN stays a float value.

Types: string, int64 (and the other fixed-width integers), float64/float32, bool, timestamp (from numbers in
its unit), and list and struct of those, nested.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa


def table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """The table of ``rows`` (missing keys are null), columns and types as ``schema``."""
    return pa.Table.from_arrays([column([r.get(f.name) for r in rows], f.type) for f in schema], schema=schema)


def column(values: list, type_: pa.DataType) -> pa.Array:
    """One Arrow array of ``type_`` from Python values (None: null)."""
    n = len(values)
    valid = np.fromiter((v is not None for v in values), bool, count=n)
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    if pa.types.is_string(type_):
        encoded = [_utf8(v) if ok else b"" for v, ok in zip(values, valid)]
        offsets = _offsets([len(b) for b in encoded])
        return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])
    if pa.types.is_boolean(type_):
        bits = np.fromiter((bool(v) if ok else False for v, ok in zip(values, valid)), bool, count=n)
        return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(np.packbits(bits, bitorder="little"))])
    if pa.types.is_list(type_):
        items = [v if ok else () for v, ok in zip(values, valid)]
        child = column([x for v in items for x in v], type_.value_type)
        return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(_offsets([len(v) for v in items]))],
                                     children=[child])
    if pa.types.is_struct(type_):
        fields = [type_.field(i) for i in range(type_.num_fields)]
        children = [column([v.get(f.name) if ok else None for v, ok in zip(values, valid)], f.type) for f in fields]
        return pa.Array.from_buffers(type_, n, [validity], children=children)
    if pa.types.is_floating(type_):
        dtype = np.dtype(f"f{type_.bit_width // 8}")
    elif pa.types.is_integer(type_) or pa.types.is_timestamp(type_):
        dtype = np.dtype(f"{'u' if pa.types.is_unsigned_integer(type_) else 'i'}{type_.bit_width // 8}")
    else:
        raise TypeError(f"no Arrow conversion here for {type_}")
    data = np.array([v if ok else 0 for v, ok in zip(values, valid)])
    if data.dtype.kind == "f" and dtype.kind != "f" and not np.array_equal(data, np.trunc(data)):
        raise TypeError(f"a fractional number for the integer Arrow type {type_}")  # as pa.array refuses it
    return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(np.ascontiguousarray(data, dtype))])


def _utf8(value) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"expected a str for an Arrow string column, got {type(value).__name__}")
    return value.encode("utf-8")


def _offsets(lengths: list[int]) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError("more than 2 GiB in one Arrow string or list column: write fewer rows at a time")
    return offsets.astype(np.int32)


__all__ = ["column", "table"]
