"""Checking a record's fields as read from JSON (instrumentation/records.py, header.py): one ``RecordError`` naming
the field."""
from __future__ import annotations

from dataclasses import MISSING, fields
from functools import cache
from typing import Any

from .errors import IoadvisorError

_PLAIN_INT = {int}


class RecordError(IoadvisorError, ValueError):
    """A record does not match the schema; the message names the field."""


def ints(value: Any, name: str) -> tuple[int, ...]:
    if type(value) is list and set(map(type, value)) <= _PLAIN_INT:
        return tuple(value)  # the JSON case, checked at C speed: loading is dominated by this
    import numpy as np

    if not isinstance(value, (list, tuple)) or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value
    ):
        raise RecordError(f"field '{name}' must be a list of integers, got {value!r:.80}")
    return tuple(int(v) for v in value)


def opt_ints(value: Any, name: str) -> tuple[int, ...] | None:
    return None if value is None else ints(value, name)


def positive(value: tuple[int, ...] | None, name: str, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """A chunk or shard grid: integers >= 1, or 0 along an axis of extent 0 (zarr allows that grid)."""
    if value is not None and any(v < 0 or (v == 0 and (i >= len(shape) or shape[i] != 0))
                                 for i, v in enumerate(value)):
        raise RecordError(f"field '{name}' must hold integers >= 1 (0 only along an empty axis), got {list(value)}")
    return value


def typed(value: Any, types: type | tuple[type, ...], name: str) -> Any:
    # bool is an int subclass; JSON true is never a valid count or id here
    if not isinstance(value, types) or isinstance(value, bool):
        raise RecordError(f"field '{name}' has wrong type {type(value).__name__}")
    return value


def flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise RecordError(f"field '{name}' must be true or false, got {type(value).__name__}")
    return value


@cache
def required(cls: type) -> tuple[str, ...]:
    # once per class: dataclasses.fields() builds its list anew on every call (a third of reading a header)
    return tuple(f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING)


def require(config: dict, cls: type) -> None:
    if not isinstance(config, dict):
        raise RecordError(f"{cls.__name__} record must be a JSON object")
    for name in required(cls):
        if name not in config:
            raise RecordError(f"missing field '{name}' in {cls.__name__} record")


__all__ = ["RecordError", "flag", "ints", "opt_ints", "positive", "require", "required", "typed"]
