"""Relative error bounds made absolute with the valid range of the source's values (``rel:X`` is X times the
whole field's range), journaled so that a resumed copy uses the range the first run read. Shared by the local
copy (``pipeline``) and the copy to an object store (``store``)."""
from __future__ import annotations

from dataclasses import replace

from .copy import array_at, data_range, fill_of, grid_of
from .plan import plan_copy
from .targets import Targets


def resolve_bounds(targets: Targets, src_root, src_lib: str, journal, block_budget: int) -> None:
    """Give every lossy layout of ``targets`` without an absolute bound one (``journal``: a ``Journal`` or a
    ``StoreJournal``, its ``entries`` and ``record``)."""
    from compression_model.error_bound import ErrorBound

    for path, lay in list(targets.layouts.items()):
        if not lay.lossy or lay.abs_bound is not None:
            continue
        bound = ErrorBound.parse(lay.error_bound)
        done = [e for e in journal.entries if e.get("kind") == "range" and e.get("array") == path]
        if done:
            rng = done[0]["range"]
        elif bound.mode == "abs":
            rng = 0.0
        else:
            src = array_at(src_root, path)
            grid = grid_of(src, src_lib)
            stage = plan_copy(src.shape, src.dtype.itemsize, grid, grid, block_budget).stages[0]
            rng = data_range(src, stage, fill_of(src, src_lib))
            journal.record({"kind": "range", "array": path, "range": rng})
        targets.layouts[path] = replace(lay, abs_bound=bound.absolute(rng) if bound.mode == "rel" else bound.value)


__all__ = ["resolve_bounds"]
