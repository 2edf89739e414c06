"""Chunk byte offsets of the HDF5 datasets a trace read, listed once and after the reads (``ListLater``).

Listing a chunked dataset's chunks (``H5Dchunk_iter``) reads its whole chunk index. Done at the first sight of a
dataset, ahead of the program's own reads, it warmed the index those reads then found in memory: the traced reads
of a cold file ran faster than the same reads untraced (benchmarks/validation/realsize.py r01, the recipe's
40 pencil reads over 32,400 chunks, against ``advisor.verify``'s cold replay), and the first traced call took the
whole cold listing (r03: 16,384 chunks, tens of milliseconds), done once by the h5py hooks and again by the
libhdf5 interposer. So, for a file open read-only, neither recorder lists at first sight: the trace's sink writes
the dataset record at once (later accesses refer to it) and, at its close, lists the chunks once per dataset and
writes the record again with ``chunk_offsets`` (a later ``d`` record of an id replaces the earlier: docs/trace-format.md).
The libhdf5 interposer lists a native program's datasets itself, in the traced process, at the program's
``H5Dclose`` or the trace's end (its ``o`` lines, ``remember_listed``): the end uses those first, and reopens a
file only where h5py is loaded already. A read-only file's chunks cannot change while it is open that way, so
the end's list is the one at first sight.
A file open for writing is still listed at first sight: the models need the chunks on disk before the run (a
chunk the run allocates is an allocation, not an overwrite).
"""
from __future__ import annotations

import os
import sys
import weakref
from dataclasses import replace

import numpy as np

MAX_OFFSET_CHUNKS = 100_000
"""Chunk byte offsets are recorded for datasets with at most this many allocated chunks
(``chunk_iter`` costs about 1 µs per chunk with the index in memory: 0.1 s at the cap, once per dataset)."""

_open_ids: dict[str, weakref.ref] = {}
"""key (file::path) -> the h5py DatasetID the hooks saw, listed through while it is still open."""
_listed: dict[str, np.ndarray] = {}
"""key (file::path) -> the offsets the libhdf5 interposer listed as the program closed the dataset (``o`` lines)."""


def list_offsets(dsid, chunks) -> np.ndarray | None:
    """(n, ndim + 2) of an open h5py DatasetID: chunk-grid coordinates, byte offset, stored size; None when too
    many or unknown."""
    if not hasattr(dsid, "chunk_iter") or dsid.get_num_chunks() > MAX_OFFSET_CHUNKS:
        return None
    rows = []
    dsid.chunk_iter(lambda info: rows.append((*info.chunk_offset, info.byte_offset, info.size)))
    arr = np.asarray(rows, dtype=np.int64).reshape(-1, len(chunks) + 2)
    arr[:, : len(chunks)] //= np.asarray(chunks, dtype=np.int64)
    return arr


def listed_later(record) -> bool:
    """Whether ``record``'s chunk offsets are left to the trace's end: an HDF5 chunked dataset that was not created
    under tracing, in a file open read-only, whose record has none yet."""
    return (record.library == "hdf5" and record.chunks is not None and not record.created
            and record.chunk_offsets is None and record.mode == "r" and bool(record.shape))


def remember_open(key: str, dsid) -> None:
    """The h5py hooks' DatasetID of ``key``: the end lists through it while it is open (no file to reopen)."""
    try:
        _open_ids[key] = weakref.ref(dsid)
    except TypeError:
        pass


def remember_listed(key: str, offsets: np.ndarray) -> None:
    """The chunk offsets of ``key`` the interposer listed at the dataset's close, in the traced process."""
    _listed[key] = offsets


def _listed_by_interposer(record):
    return _listed.get(record.key)


def _through_open_id(record):
    ref = _open_ids.get(record.key)
    dsid = ref() if ref is not None else None
    if dsid is None or not dsid.valid:
        return None
    return list_offsets(dsid, record.chunks)


class _Files:
    """Files reopened read-only by name at the end, each once for all its datasets (a program that read many
    datasets of one file, or many files, pays one open per file). Through h5py's low-level ids with the default
    close degree: closing them closes nothing the program still has open on that file."""

    def __init__(self):
        self._open: dict[str, object] = {}

    def offsets(self, record):
        """Where the record names a local file the dataset is still in (with its chunk shape)."""
        if record.driver not in (None, "sec2") or not os.path.isfile(record.file) or "h5py" not in sys.modules:
            # without h5py loaded (``ioadvisor run``'s launcher of a native program): importing it at the exit
            # would cost the run more than the listing (benchmarks/speed/tracing_overhead.py --fixed-only); the
            # interposer lists at the program's H5Dclose instead (``_listed``)
            return None
        import h5py

        fid = self._open.get(record.file)
        if fid is None:
            fid = self._open[record.file] = h5py.h5f.open(os.fsencode(record.file), h5py.h5f.ACC_RDONLY)
        dsid = h5py.h5d.open(fid, record.path.encode())
        if dsid.get_create_plist().get_chunk() != tuple(record.chunks):
            return None
        return list_offsets(dsid, record.chunks)

    def close(self) -> None:
        for fid in self._open.values():
            try:
                fid.close()
            except Exception:  # noqa: BLE001 - a file the library closed already
                pass
        self._open.clear()


def offsets_of(record, files: _Files | None = None) -> np.ndarray | None:
    """``record``'s chunk offsets now, through the dataset the h5py hooks saw if it is still open, else by
    reopening its file (``files``: those already reopened); None where neither works (the file is gone, changed,
    or locked by a writer)."""
    own = files is None
    files = _Files() if own else files
    try:
        for way in (_listed_by_interposer, _through_open_id, files.offsets):
            try:
                found = way(record)
            except Exception:  # noqa: BLE001 - optional detail: a trace is never lost for it
                found = None
            if found is not None:
                return found
        return None
    finally:
        if own:
            files.close()


class ListLater:
    """The datasets of one trace whose chunk offsets its close lists (``note`` at registration, ``finish`` once)."""

    def __init__(self):
        self._records: dict[int, object] = {}

    def note(self, record) -> None:
        """``record`` (with the trace's id) was just written: keep it if its offsets are left to the end."""
        if listed_later(record):
            self._records[record.id] = record

    def finish(self, write) -> None:
        """List each kept dataset's chunks once and ``write`` its record again with them."""
        records, self._records = self._records, {}
        files = _Files()
        try:
            for record in sorted(records.values(), key=lambda r: r.file):
                offsets = offsets_of(record, files)
                if offsets is None:
                    continue
                try:
                    write(replace(record, chunk_offsets=offsets))
                except OSError:  # the run's registry gone (a merge already done): the first record stands
                    pass
        finally:
            files.close()


__all__ = ["MAX_OFFSET_CHUNKS", "ListLater", "list_offsets", "listed_later", "offsets_of", "remember_listed", "remember_open"]
