"""What consolidated metadata would save on an object store (issue #35), measured from the trace's request log.

Opening a Zarr group without consolidated metadata fetches each array's metadata document when the array is
opened (zarr 3 through FsspecStore: a HEAD and a GET of ``<array>/zarr.json``; zarr 2: ``.zarray`` and
``.zattrs``), one after another as the program opens them, each a round trip. ``zarr.consolidate_metadata``
folds them into the group's own ``zarr.json`` (``.zmetadata`` for zarr 2), read once at the group's open. The
saving is the time those requests took in the traced run: the request log holds each one's start and duration,
so nothing is modelled here. Requests for the group's own documents (and zarr's probes for other formats at the
group's root) are still made after consolidating and are not counted.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass

import numpy as np

METADATA_DOCUMENTS = ("zarr.json", ".zarray", ".zattrs", ".zgroup")
"""Per-node metadata documents a consolidated group no longer reads below its root."""


@dataclass(frozen=True)
class MetadataSavings:
    """Metadata requests below the group at ``root`` that consolidated metadata would not send."""

    root: str
    nodes: int
    """Arrays and subgroups whose own metadata was fetched."""
    requests: int
    seconds: float
    """Wall time of those requests in the traced run (overlaps counted once)."""
    store_seconds: float
    """Wall time of all the run's requests to the store (overlaps counted once), for scale."""

    def render(self) -> str:
        share = self.seconds / self.store_seconds if self.store_seconds > 0 else 0.0
        return (f"Consolidated metadata for {self.root}: {self.requests} requests for the metadata of {self.nodes} "
                f"arrays/groups took {self.seconds:.2f} s ({share:.0%} of the run's time on the store); "
                f"zarr.consolidate_metadata(store) folds them into the group's zarr.json, read once at open "
                f"(then open with zarr.open_consolidated or xr.open_zarr(consolidated=True))")

    def get_config(self) -> dict:
        return {"root": self.root, "nodes": self.nodes, "requests": self.requests, "seconds": self.seconds,
                "store_seconds": self.store_seconds}


def _covered(t0: np.ndarray, dt: np.ndarray) -> float:
    """Seconds covered by the union of the intervals [t0, t0 + dt)."""
    covered, end = 0.0, -np.inf
    for a, b in sorted(zip(t0.tolist(), (t0 + dt).tolist())):
        if b > end:
            covered += b - max(a, end)
            end = b
    return covered


def metadata_savings(req: dict) -> list[MetadataSavings]:
    """Per Zarr group root seen in the request log, the metadata requests below it that consolidating would save
    (none when the log shows no per-array metadata read, as with consolidated metadata)."""
    urls = np.asarray(req.get("url", ()), dtype=object)
    if not len(urls):
        return []
    names = np.array([posixpath.basename(str(u)) for u in urls], dtype=object)
    dirs = np.array([posixpath.dirname(str(u)) for u in urls], dtype=object)
    ops = np.asarray(req.get("op", ["GET"] * len(urls)), dtype=object)
    meta = np.isin(names, METADATA_DOCUMENTS) & np.isin(ops, ("GET", "HEAD"))  # reads: writing them stays
    nodes = sorted(set(dirs[meta].tolist()), key=len)
    roots: list[str] = []
    for d in nodes:  # a group root: a node not below another node
        if not any(d.startswith(r + "/") for r in roots):
            roots.append(d)
    t0, dt = np.asarray(req["t0"], np.float64), np.asarray(req["dt"], np.float64)
    total = _covered(t0, dt)
    out = []
    for root in roots:
        below = meta & np.array([str(d).startswith(root + "/") for d in dirs])
        if below.any():
            out.append(MetadataSavings(root, len(set(dirs[below].tolist())), int(below.sum()),
                                       _covered(t0[below], dt[below]), total))
    return out


__all__ = ["METADATA_DOCUMENTS", "MetadataSavings", "metadata_savings"]
