"""``ArrayStorage``: how one array is stored (library, chunks, shards, chunk cache, codec), the part a search
candidate (``advisor.candidates.Candidate``) and a layout ``apply`` writes (``advisor.apply.targets.ArrayLayout``)
share; each adds its own error bound and origin."""
from __future__ import annotations

from dataclasses import dataclass


def _dims(x) -> tuple[int, ...] | None:
    return None if x is None else tuple(x)


@dataclass(frozen=True)
class ArrayStorage:
    """``chunks`` None: HDF5 contiguous."""

    library: str
    chunks: tuple[int, ...] | None
    shards: tuple[int, ...] | None = None
    cache_bytes: int | None = None
    """HDF5 ``rdcc_nbytes`` (None for Zarr, which has no chunk cache)."""
    cache_slots: int | None = None
    compressor: str | None = None

    def storage_config(self) -> dict:
        """These fields as JSON (the first keys of the subclasses' ``get_config``)."""
        return {"library": self.library, "chunks": None if self.chunks is None else list(self.chunks),
                "shards": None if self.shards is None else list(self.shards), "cache_bytes": self.cache_bytes,
                "cache_slots": self.cache_slots, "compressor": self.compressor}

    @staticmethod
    def storage_args(c: dict) -> tuple:
        """These fields, in order, from ``storage_config``'s JSON (``shards`` and the rest may be missing)."""
        return (c["library"], _dims(c["chunks"]), _dims(c.get("shards")), c.get("cache_bytes"), c.get("cache_slots"),
                c.get("compressor"))


__all__ = ["ArrayStorage"]
