"""``verify`` for arrays on an object store (issue #35): the finalists rebuilt on the same store, replayed there.

For each traced array named by a URL (``s3://bucket/key``), the store advice (``advisor.objectstore``) gives the
current layout and its top-K layouts with their predicted seconds. Each is written under a scratch prefix of the
same store (``<parent>/ioadvisor-verify-<random>/``, same endpoint and storage options; ``parent`` is the data's
bucket unless ``workdir`` names another URL), holding the user's data when it can be read from the store (else a
smooth synthetic field), and the traced accesses are replayed on it (a program whose blocks follow the chunk grid,
``dask.array.from_zarr``, replays the blocks it would take in each layout: ``advisor.objectstore_tiles``): a new client for each replay (no fsspec
cache, block cache or listing kept between replays), the array opened as the advice's code opens it, the
accesses issued with the traced calls in flight (dask threads) when they only read, timed from the opening to the
last access. Each layout is read once untimed after it is written (SeaweedFS serves the first reads after a write
slower, and the traced program read data that was not just written); that read checks the values against the data.

The scratch prefix is removed afterwards, also on an error, Ctrl-C or SIGTERM; a prefix left by a killed run
(SIGKILL) carries a marker naming its host and process, and the next verify on the same parent removes it once
that process is gone.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from advisor.objectstore import StoreAdvice, StoreLayout, advise_dataset
from advisor.objectstore_build import (StoreArray, build_on_store, close_client, default_scratch_parent,
                                       read_store_array, store_filesystem, strip_protocol)
from advisor.objectstore_reference import REFERENCE
from advisor.verify_data import synthetic
from advisor.verify_results import VerifyError, VerifyRow, dataset_name
from instrumentation.parts import process_alive
from instrumentation.records import READ
from iomodel.replay import index_of

MARKER = "ioadvisor-scratch.json"
"""The object in a scratch prefix naming the host and process that made it."""
SCRATCH_KIND = "verify"


@dataclass(frozen=True)
class StoreChoice:
    """One layout to rebuild on the store: its label, the advice's candidate and the filters it is built with."""

    label: str
    layout: StoreLayout
    predicted_seconds: float
    filters: tuple = ()

    @property
    def stored_as(self) -> tuple:
        """Layouts differing only in how they are read (fsspec block size, cache type) share one stored copy."""
        lay = self.layout
        return (lay.library, lay.chunks, lay.shards, lay.paged, lay.page_size if lay.paged else 0, self.filters,
                lay.codec, lay.error_bound)

    @property
    def compressor(self) -> str | None:
        if self.layout.codec:
            return None if self.layout.codec == "none" else self.layout.codec
        return "+".join(f.name for f in self.filters if f.name not in ("bytes", "sharding_indexed")) or None

    def create_kwargs(self, data: np.ndarray) -> dict | None:
        """zarr's codec arguments of a layout with a compressor of the codec search (a relative bound resolved
        with the whole array's valid range); None: built with ``filters``."""
        codec = self.layout.codec
        if not codec:
            return None
        if codec == "none":
            return {"compressors": None}
        from compression_model.codecs import get_codec

        finite = data[np.isfinite(data)] if data.dtype.kind == "f" else data
        rng = float(finite.max() - finite.min()) if finite.size else 0.0
        return get_codec(codec, self.layout.error_bound, rng).zarr_codecs()


def store_choices(advice: StoreAdvice, filters: Sequence, current_library: str, top: int) -> list[StoreChoice]:
    """The current layout (with its recorded filters) and the top-``top`` ranked ones. A candidate in the current
    library keeps its filters (the advice prices the stored bytes the traced requests show); one in the other
    library is stored uncompressed, as the advice priced it. A virtual Zarr reference is left out (not rebuilt)."""
    out = [StoreChoice("current", advice.current.layout, advice.current.seconds, tuple(filters))]
    recorded = {f.name for f in filters}

    def as_built(lay):  # the codec search's own estimate of the recorded compressor builds what is recorded
        return replace(lay, codec=None, error_bound=None) if lay.codec in recorded and \
            lay.library == current_library else lay

    seen = {advice.current.layout}
    ranked = []
    for c in advice.ranked:
        if c.layout.library == REFERENCE:  # a virtual reference to the file is not rebuilt under a scratch prefix
            continue
        if as_built(c.layout) not in seen:
            seen.add(as_built(c.layout))
            ranked.append(c)
    ranked = ranked[:top]
    for k, c in enumerate(ranked, 1):
        lay = c.layout
        how = ""
        if lay.library == "hdf5":
            how = " (paged)" if lay.paged else f" ({lay.cache_type} {lay.block_size >> 10} KiB)"
        out.append(StoreChoice(f"#{k}{how}", lay, c.seconds,
                               tuple(filters) if lay.library == current_library else ()))
    return out


# ---------------------------------------------------------------------------------------------- scratch

def remove_stale_scratch(parent: str, storage_options: dict | None) -> list[str]:
    """Remove the verify scratch prefixes under ``parent`` that a process of this host made and that is gone
    (killed by SIGKILL before it could clean up); the prefixes removed."""
    fs = store_filesystem(parent, storage_options)
    try:
        return _remove_stale(fs, parent)
    finally:
        close_client(fs)


def _remove_stale(fs, parent: str) -> list[str]:
    from iomodel.objectstore_calibrate import remove_prefix

    try:
        entries = fs.ls(strip_protocol(parent), detail=False)
    except (FileNotFoundError, OSError):
        return []
    removed = []
    host = socket.gethostname()
    for e in entries:
        if not e.rstrip("/").rsplit("/", 1)[-1].startswith(f"ioadvisor-{SCRATCH_KIND}-"):
            continue
        try:
            mark = json.loads(fs.cat_file(f"{e.rstrip('/')}/{MARKER}"))
        except (FileNotFoundError, OSError, ValueError):
            continue
        if mark.get("host") != host or process_alive(int(mark.get("pid", 0))):
            continue
        remove_prefix(fs, e.rstrip("/"))
        removed.append(f"{parent.split('://', 1)[0]}://{e.rstrip('/')}")
    return removed


@contextlib.contextmanager
def scratch_prefix(parent: str, storage_options: dict | None):
    """A new scratch prefix under ``parent`` (its URL), removed on exit, also on SIGTERM (turned into
    KeyboardInterrupt while it exists, in the main thread)."""
    from iomodel.objectstore_calibrate import Scratch, StoreTarget

    scratch = Scratch(StoreTarget(parent, storage_options or {}), 0, SCRATCH_KIND)
    previous = None
    if threading.current_thread() is threading.main_thread():
        def interrupted(signum, frame):
            raise KeyboardInterrupt(f"signal {signum}")

        previous = signal.signal(signal.SIGTERM, interrupted)
    try:
        with scratch:
            scratch.fs.pipe_file(f"{scratch.prefix}/{MARKER}", json.dumps(
                {"host": socket.gethostname(), "pid": os.getpid(), "created": time.time()}).encode())
            yield f"{parent.split('://', 1)[0]}://{scratch.prefix}"
    finally:
        close_client(scratch.fs)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


# ---------------------------------------------------------------------------------------------- replay

@dataclass(frozen=True)
class Op:
    """One access to replay: ``kind`` and ``key`` as ``iomodel.replay.index_of`` gives them, and whether it reads."""

    kind: str
    key: tuple
    read: bool

    @property
    def index(self):
        return np.ix_(*self.key) if self.kind == "orthogonal" else self.key


def traced_ops(trace, ds) -> list[Op]:
    """The traced accesses of ``ds`` in time order."""
    out = []
    for a in sorted((a for a in trace.accesses if a.dataset == ds.id), key=lambda a: a.t_start):
        kind, key = index_of(a.selection)
        out.append(Op(kind, key, a.op == READ))
    return out


def tile_ops(follow, chunks, shape) -> list[Op]:
    """The blocks a grid-following program (``advisor.objectstore_tiles``) reads or writes in a layout of
    ``chunks``: what it would do there, not the traced blocks of the current chunks."""
    boxes, writes, _ = follow.tiles(tuple(chunks or shape), tuple(shape))
    out = []
    for dims, w in zip(boxes, writes):
        contiguous = all(len(d) and int(d[-1]) - int(d[0]) + 1 == len(d) for d in dims)
        if contiguous:
            out.append(Op("basic", tuple(slice(int(d[0]), int(d[-1]) + 1) for d in dims), not w))
        else:
            out.append(Op("orthogonal", tuple(np.asarray(d, np.int64) for d in dims), not w))
    return out


def replay_on_store(ops: list[Op], layout: StoreLayout, url: str, storage_options: dict | None, *,
                    workers: int = 1, data: np.ndarray | None = None, keep: bool = False) -> tuple[float, list]:
    """Seconds from opening the array to its last access, with a new (connected) client; the values read when
    ``keep``. ``workers`` > 1: the accesses (reads only) issued by that many threads, in order."""
    writes = any(not op.read for op in ops)
    if writes and layout.library != "zarr":
        raise VerifyError(f"{url}: writes to HDF5 on an object store cannot be replayed (fsspec file objects do not "
                          "update in place)")
    opened = StoreArray(layout, url, storage_options, writable=writes)
    values: list = []

    def one(op: Op):
        arr = opened.array
        target = arr if op.kind == "basic" else arr.oindex if op.kind == "orthogonal" else arr.vindex
        if op.read:
            got = target[op.key]
            return np.asarray(got) if keep else None
        target[op.key] = data[op.index] if data is not None else 0
        return None

    try:
        client = opened.warm_client()
        t0 = time.perf_counter()
        opened.open(client)
        if workers > 1 and not writes:
            with ThreadPoolExecutor(workers) as pool:
                values = list(pool.map(one, ops))
        else:
            values = [one(op) for op in ops]
        seconds = time.perf_counter() - t0
    finally:
        opened.close()
    return seconds, values


def max_read_error(ops: list[Op], values: list, data: np.ndarray) -> float | None:
    """Largest |read - data| over the reads (None when none was kept)."""
    worst = None
    for op, v in zip(ops, values):
        if not op.read or v is None:
            continue
        exp = data[op.index]
        diff = np.abs(np.asarray(v, np.float64).reshape(exp.shape) - exp.astype(np.float64)) if exp.size else \
            np.zeros(0)
        worst = max(worst or 0.0, float(np.nanmax(diff)) if diff.size and not np.isnan(diff).all() else 0.0)
    return worst


# ---------------------------------------------------------------------------------------------- the API

def load_store_data(ds, shape, storage_options: dict | None, seed: int = 0) -> tuple[np.ndarray, str]:
    """The user's array read from the store when it is readable and of the traced shape and dtype, else synthetic."""
    try:
        arr = read_store_array(ds.file, ds.path, ds.library, storage_options)
    except Exception:  # noqa: BLE001 - any client or library failure: verify with synthetic data, as locally
        return synthetic(shape, ds.dtype, seed), "synthetic"
    if tuple(arr.shape) != tuple(shape) or np.dtype(arr.dtype) != np.dtype(ds.dtype):
        return synthetic(shape, ds.dtype, seed), "synthetic"
    return arr, "user"


def _replay(choice: StoreChoice, ds, ops: list[Op], url: str, storage_options, **kw) -> tuple[float, list]:
    """``replay_on_store``, a library's failure said in one line naming the dataset and layout."""
    try:
        return replay_on_store(ops, choice.layout, url, storage_options, **kw)
    except VerifyError:
        raise
    except (ValueError, KeyError, RuntimeError, OSError, TypeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise VerifyError(f"dataset {ds.label}, layout {choice.label} ({choice.layout.describe()}): {first}") from None


def verify_dataset_on_store(trace, ds, advice: StoreAdvice, scratch: str, storage_options: dict | None, *,
                            top: int = 3, repeat: int = 1, max_bytes: int = 2 << 30) -> list[VerifyRow]:
    """Build the current and top-``top`` layouts of ``advice`` under ``scratch`` and replay ``ds``'s accesses."""
    shape = tuple(int(s) for s in trace.extent(ds.id))
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(ds.dtype).itemsize
    if nbytes > max_bytes:
        raise VerifyError(f"dataset {ds.label}: {nbytes / 2**30:.1f} GiB is more than verify rebuilds "
                          f"({max_bytes / 2**30:.1f} GiB); pass a larger max_bytes or a smaller trace")
    if any(r.dataset == ds.id for r in trace.resizes):
        raise VerifyError(f"dataset {ds.label}: a trace that resizes an array on an object store is not replayed")
    traced = traced_ops(trace, ds)
    follow = getattr(advice, "follows", None)

    def ops_of(c: StoreChoice) -> list[Op]:  # a program that takes its blocks from the layout takes them there
        return traced if follow is None else tile_ops(follow, c.layout.chunks, shape)

    data, source = load_store_data(ds, shape, storage_options)
    choices = store_choices(advice, ds.filters, ds.library, top)
    workers = max(1, int(round(advice.calls_in_flight)))
    stored: dict[tuple, tuple[str, int]] = {}
    for c in choices:  # every layout written, then read once untimed (checking the values), before any timed replay
        if c.stored_as not in stored:
            url = f"{scratch}/l{len(stored)}" + (".zarr" if c.layout.library == "zarr" else ".h5")
            stored[c.stored_as] = (url, build_on_store(c.layout, data, url, storage_options, filters=c.filters,
                                                       create_kwargs=c.create_kwargs(data)))
    errors = {}
    for c in choices:
        _, values = _replay(c, ds, ops_of(c), stored[c.stored_as][0], storage_options, workers=workers, data=data,
                            keep=source == "user")
        errors[c.label] = max_read_error(ops_of(c), values, data) if source == "user" else None
    times: dict[str, list[float]] = {c.label: [] for c in choices}
    order = list(range(len(choices)))
    rng = np.random.default_rng(0)
    for k in range(max(1, repeat)):  # round robin, a new order each round (as the local verify)
        if k:
            order = [order[i] for i in rng.permutation(len(order))]
        for i in order:
            c = choices[i]
            seconds, _ = _replay(c, ds, ops_of(c), stored[c.stored_as][0], storage_options, workers=workers,
                                 data=data)
            times[c.label].append(seconds)
    rows = []
    for c in choices:
        lay = c.layout
        rows.append(VerifyRow(
            dataset=dataset_name(ds), label=c.label, library=lay.library, chunks=lay.chunks, shards=lay.shards,
            cache_bytes=None, compressor=c.compressor, error_bound=lay.error_bound,
            predicted_seconds=c.predicted_seconds, measured_seconds=statistics.median(times[c.label]),
            measured_all=tuple(times[c.label]), stored_bytes=stored[c.stored_as][1], data=source,
            max_error=errors[c.label], parallel=workers > 1))
    return rows


def verify_on_store(trace, datasets: Sequence, *, top: int = 3, repeat: int = 1, profile=None,
                    storage_options: dict | None = None, scratch_parent: str | None = None,
                    max_bytes: int = 2 << 30, constraints=None) -> list[VerifyRow]:
    """``verify`` of the traced arrays that live on an object store (``datasets``): their store advice (with the
    codec search on a sample of the data unless ``constraints.read_data`` is False; ``max_error`` and
    ``lossless_only`` from ``constraints``, an ``AdviseOptions``), each measured under a scratch prefix removed
    afterwards."""
    from instrumentation.storerequests import load_requests
    from iomodel.objectstore import load_stores
    from iomodel.profile import default_profile_path

    path = profile if isinstance(profile, (str, os.PathLike)) else default_profile_path()
    stores = load_stores(path)
    req = load_requests(trace.source) if trace.source else {}
    rows: list[VerifyRow] = []
    for ds in datasets:
        codecs = []
        if constraints is None or constraints.read_data:
            from advisor.objectstore_codecs import estimate_store_codecs

            codecs, _ = estimate_store_codecs(ds, storage_options,
                                              max_error=getattr(constraints, "max_error", None),
                                              lossless_only=bool(getattr(constraints, "lossless_only", False)))
        advice = advise_dataset(trace, ds, req, stores, top=2 * top + 2, codecs=codecs)  # room for duplicates
        parent = scratch_parent or default_scratch_parent(ds.file)
        try:
            remove_stale_scratch(parent, storage_options)
            with scratch_prefix(parent, storage_options) as scratch:
                rows += verify_dataset_on_store(trace, ds, advice, scratch, storage_options, top=top, repeat=repeat,
                                                max_bytes=max_bytes)
        except (OSError, PermissionError) as exc:
            raise VerifyError(f"dataset {ds.label}: the store at {parent}: {type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
    return rows


__all__ = ["MARKER", "Op", "StoreChoice", "tile_ops", "traced_ops", "load_store_data", "max_read_error", "remove_stale_scratch", "replay_on_store",
           "scratch_prefix", "store_choices", "verify_dataset_on_store", "verify_on_store"]
