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
    valid = None if None not in values else np.fromiter((v is not None for v in values), bool, count=n)
    validity = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    if valid is not None and pa.types.is_string(type_):
        values = [v if v is not None else "" for v in values]
    if pa.types.is_string(type_):
        return pa.Array.from_buffers(type_, n, [validity, *_utf8(values)])
    if pa.types.is_list(type_):
        items = values if valid is None else [v if v is not None else () for v in values]
        child = column([x for v in items for x in v], type_.value_type)
        return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(_offsets(list(map(len, items))))],
                                     children=[child])
    if pa.types.is_struct(type_):
        items = values if valid is None else [v if v is not None else {} for v in values]
        children = [column([v.get(f.name) for v in items], f.type) for f in type_]
        return pa.Array.from_buffers(type_, n, [validity], children=children)
    filled = values if valid is None else [v if v is not None else 0 for v in values]
    if pa.types.is_boolean(type_):
        bits = np.fromiter(map(bool, filled), bool, count=n)
        return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(np.packbits(bits, bitorder="little"))])
    if pa.types.is_floating(type_):
        dtype = np.dtype(f"f{type_.bit_width // 8}")
    elif pa.types.is_integer(type_) or pa.types.is_timestamp(type_):
        dtype = np.dtype(f"{'u' if pa.types.is_unsigned_integer(type_) else 'i'}{type_.bit_width // 8}")
    else:
        raise TypeError(f"no Arrow conversion here for {type_}")
    data = np.array(filled)
    if data.dtype.kind not in "biuf" or (data.dtype.kind == "f" and dtype.kind != "f"
                                         and not np.array_equal(data, np.trunc(data))):
        raise TypeError(f"values of {type_} expected, got {data.dtype}")  # as pa.array refuses them
    return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(np.ascontiguousarray(data, dtype))])


def _utf8(values: list) -> tuple[pa.Buffer, pa.Buffer]:
    """Offsets and bytes of a string column (str values only, as pa.array wants)."""
    joined = "".join(values)  # a TypeError for any value not a str
    if joined.isascii():  # one byte a character: the lengths are the strings'
        return pa.py_buffer(_offsets(list(map(len, values)))), pa.py_buffer(joined.encode("ascii"))
    encoded = [v.encode("utf-8") for v in values]
    return pa.py_buffer(_offsets(list(map(len, encoded)))), pa.py_buffer(b"".join(encoded))


def _offsets(lengths: list[int]) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError("more than 2 GiB in one Arrow string or list column: write fewer rows at a time")
    return offsets.astype(np.int32)


__all__ = ["column", "table"]
