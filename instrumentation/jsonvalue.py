"""Plain values for what the libraries hand over (fill values, numpy scalars, bytes), their JSON form, and back.

One conversion for every writer of a trace (the h5py and zarr hooks, the libhdf5 log converter, ``dumps``):
``plain`` turns numpy scalars and arrays into Python numbers and lists and bytes into text, so a record holds
the same value whichever library described it; ``json_value`` also writes a complex number as ``[re, im]``
(JSON has no complex; ``repr`` would give the string "(1+2j)"); ``fill_from_json`` reads a fill value back
as the dataset's dtype expects it (``[re, im]`` of a complex dtype: a complex).

numpy is imported in the functions: ``instrumentation.records`` uses this module and imports no numpy at
module level.
"""
from __future__ import annotations

from typing import Any


def plain(value: Any) -> Any:
    """A Python value: numpy scalars/arrays as Python numbers/lists (long double as float, complex256 as
    complex), bytes as UTF-8 text (undecodable bytes replaced), tuples and lists element by element."""
    import numpy as np

    if isinstance(value, np.ndarray | np.generic):
        value = value.tolist()
    if isinstance(value, np.generic):  # long double / complex256 have no Python equivalent
        value = complex(value) if np.iscomplexobj(value) else float(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    return value


def json_value(value: Any) -> Any:
    """``plain(value)`` with every complex number as [re, im]: a value ``json.dumps`` writes."""
    value = plain(value)
    if isinstance(value, complex):
        return [value.real, value.imag]
    if isinstance(value, list):
        return [json_value(v) for v in value]
    return value


def fill_from_json(value: Any, dtype: str) -> Any:
    """A fill value as ``json_value`` wrote it, read back for an array of ``dtype``: ``[re, im]`` of a
    complex dtype is a complex; anything else is returned as it is."""
    if (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)):
        import numpy as np

        try:
            if np.dtype(dtype).kind == "c":
                return complex(value[0], value[1])
        except (TypeError, ValueError):
            pass
    return value
