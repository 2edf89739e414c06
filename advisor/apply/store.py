"""``apply --out s3://bucket/prefix.zarr`` (issues #34, #35): the advised Zarr layout written on an object store,
verified, made visible only when complete, resumable after a kill.

An object store has no rename (a "move" is a copy of every object), so the copy is written under its final prefix
and **the root metadata document (``zarr.json``) is written last**: it is held back while the arrays' metadata and
chunks are written (``HeldRootStore``), then put, then rewritten with the consolidated metadata of the whole tree.
The guarantee: until the copy is complete and every block verified, opening the destination as a Zarr group
(``zarr.open_group``, ``zarr.open_consolidated``, ``xarray.open_zarr``) fails, as for a prefix holding nothing; an
array opened directly by its full path can be seen partly written. Nothing outside the destination prefix and its
journal (``<dest>.ioadvisor-partial/``) is written; a destination that holds anything without that journal is
never written to.

The journal is on the store beside the destination: ``header.json`` (the run's fingerprint: source, its size and
time, the layouts, the block budget) and one object per finished step (``journal/<seq>.json``: the structure with
the held root document, each block written, read back and compared, each array, the end). A PUT is whole or absent,
so a kill (SIGKILL included) loses at most the step in flight; the same command run again resumes from the journal.
A run with another fingerprint starts over (the partial copy it finds is its own: the journal says so).

The arrays and their layouts: the store advice (``advisor.objectstore``, with the codec search on a sample of the
data) for data on a store, the local advice for a local file (``targets.resolve_targets``), or ``--layout``.
"""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from zarr.storage import WrapperStore

from iomodel.objectstore_calibrate import remove_prefix

from .bounds import resolve_bounds
from .copy import BlockJob, array_at, copy_block, fill_of, grid_of, open_source, stored_bytes
from .journal import Journal
from .plan import plan_copy
from .result import ApplyResult, ArraySummary
from .structure import create_structure
from .targets import KEEP, ApplyError, ArrayLayout, Targets, layout_from_spec, library_of_path, resolve_targets

ROOT = "zarr.json"
PARTIAL = ".ioadvisor-partial"
ZARR_BLOCK_COPIES = 4
"""Arrays of one block alive at once (as ``pipeline``: the block, its read-back, the encoded chunks)."""


class HeldRootStore(WrapperStore):
    """A store whose root metadata document is held in memory (``held``), never written to the store below:
    the group it describes stays invisible until ``publish``."""

    def __init__(self, store, held: bytes | None = None):
        super().__init__(store)
        self.held = held

    async def set(self, key, value) -> None:
        if key == ROOT:
            self.held = value.to_bytes()
            return
        await self._store.set(key, value)

    async def set_if_not_exists(self, key, value) -> None:
        if key == ROOT:
            self.held = self.held if self.held is not None else value.to_bytes()
            return
        await self._store.set_if_not_exists(key, value)

    async def get(self, key, prototype, byte_range=None):
        if key == ROOT:
            return None if self.held is None else prototype.buffer.from_bytes(self.held)
        return await self._store.get(key, prototype, byte_range)

    async def exists(self, key) -> bool:
        if key == ROOT:
            return self.held is not None
        return await self._store.exists(key)

    async def delete(self, key) -> None:
        if key == ROOT:
            self.held = None
            return
        await self._store.delete(key)


class StoreJournal(Journal):
    """``Journal`` kept on the object store: a header object and one object per step."""

    def __init__(self, fs, prefix: str, header: dict, entries: list[dict]):
        super().__init__(Path(prefix) / "journal", header, entries)
        self.fs = fs
        self.prefix = prefix
        self.seq = len(entries)

    @classmethod
    def open_on(cls, fs, prefix: str, header: dict) -> tuple["StoreJournal", bool]:
        try:
            old = json.loads(fs.cat_file(f"{prefix}/header.json"))
        except (FileNotFoundError, OSError, ValueError):
            old = None
        if old == header:
            keys = sorted(fs.find(f"{prefix}/journal"))
            entries = [{**json.loads(fs.cat_file(k)), "prior": True} for k in keys]
            return cls(fs, prefix, header, entries), True
        remove_prefix(fs, prefix)
        fs.pipe_file(f"{prefix}/header.json", json.dumps(header).encode())
        return cls(fs, prefix, header, []), False

    def record(self, entry: dict) -> None:
        self.fs.pipe_file(f"{self.prefix}/journal/{self.seq:08d}.json", json.dumps(entry).encode())
        self.seq += 1
        self.entries.append(entry)

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------------------------------- what to write

def _traced(trace, names):
    from iomodel.predict import pick_dataset

    if names:
        return [pick_dataset(trace, n) for n in names]
    seen = {int(i) for i in set(trace.columns.ds.tolist())} if trace.columns.rows else set()
    out = [d for i, d in sorted(trace.datasets.items()) if i in seen and d.shape]
    if not out:
        raise ApplyError(f"{trace.source or 'trace'}: no array with recorded accesses")
    return out


def layout_from_store_advice(advice) -> ArrayLayout:
    """The first-ranked Zarr layout of a store advice (the recommendation, or the best Zarr one when an HDF5 file
    read with other fsspec settings is first) as apply's ``ArrayLayout``."""
    best = next((c for c in advice.ranked if c.layout.library == "zarr"), None)
    if best is None:
        raise ApplyError(f"{advice.label}: the store advice ranks no Zarr layout; give --layout zarr:chunks=...")
    lay = best.layout
    codec = KEEP if lay.codec is None else None if lay.codec == "none" else lay.codec
    return ArrayLayout("zarr", lay.chunks, lay.shards, None, None, codec, lay.error_bound, None,
                       origin="advice" if best is advice.recommendation else "advice (best zarr)")


def store_targets(trace, options, storage_options: dict | None) -> Targets:
    """The source and each array's Zarr layout: ``--layout``, the store advice (data on a store) or the local one."""
    from advisor.objectstore import advise_dataset, on_store

    arrays = _traced(trace, options.datasets)
    files = sorted({d.file for d in arrays})
    if len(files) != 1:
        raise ApplyError(f"the datasets to apply live in {len(files)} files ({', '.join(files)}): "
                         "name the datasets of one file with --dataset")
    if options.layouts:
        if len(options.layouts) not in (1, len(arrays)):
            raise ApplyError(f"{len(options.layouts)} --layout for {len(arrays)} datasets: give one, or one per "
                             "--dataset")
        specs = list(options.layouts) * len(arrays) if len(options.layouts) == 1 else list(options.layouts)
        layouts = {"/" + d.path.strip("/"): layout_from_spec(s, d) for d, s in zip(arrays, specs)}
    elif on_store(files[0]):
        from advisor.objectstore_codecs import estimate_store_codecs
        from instrumentation.storerequests import load_requests
        from iomodel.objectstore import load_stores
        from iomodel.profile import default_profile_path

        kw = options.advise_kwargs or {}
        stores = load_stores(kw.get("profile") or default_profile_path())
        req = load_requests(trace.source) if trace.source else {}
        layouts = {}
        for d in arrays:
            codecs, _ = estimate_store_codecs(d, storage_options, max_error=kw.get("max_error"),
                                              lossless_only=bool(kw.get("lossless_only")))
            layouts["/" + d.path.strip("/")] = layout_from_store_advice(
                advise_dataset(trace, d, req, stores, top=50, codecs=codecs))
    else:
        return resolve_targets(trace, datasets=options.datasets, dest_library="zarr",
                               advise_kwargs=options.advise_kwargs)
    bad = [p for p, lay in layouts.items() if lay.library != "zarr"]
    if bad:
        raise ApplyError(f"{bad[0]}: the layout is {layouts[bad[0]].label}; on an object store apply writes Zarr "
                         "(--layout zarr:...)")
    return Targets(files[0], layouts)


# ---------------------------------------------------------------------------------------------- source

class _Source:
    """The source opened read-only where it is (a local path, or a URL with the storage options)."""

    def __init__(self, where: str, storage_options: dict | None):
        from advisor.objectstore import on_store

        self.where = where
        self.remote = on_store(where)
        self.library = "zarr" if where.rstrip("/").endswith(".zarr") or (not self.remote and Path(where).is_dir()) \
            else library_of_path(where)
        self.storage_options = storage_options
        self._closers: list = []

    def fingerprint(self) -> dict:
        if not self.remote:
            p = Path(self.where)
            meta = p / ROOT if p.is_dir() and (p / ROOT).exists() else p
            return {"source": p.as_posix(), "size": meta.stat().st_size, "mtime_ns": meta.stat().st_mtime_ns}
        from advisor.objectstore_build import store_filesystem, strip_protocol

        from advisor.objectstore_build import close_client

        fs = store_filesystem(self.where, self.storage_options)
        key = strip_protocol(self.where) + ("/" + ROOT if self.library == "zarr" else "")
        try:
            info = fs.info(key)
        except (FileNotFoundError, OSError) as exc:
            raise ApplyError(f"{self.where}: the traced data cannot be read on its store ({exc})") from None
        finally:
            close_client(fs)
        return {"source": self.where, "size": info.get("size"), "etag": str(info.get("ETag") or info.get("etag")),
                "modified": str(info.get("LastModified") or info.get("mtime"))}

    def open(self):
        if not self.remote:
            return open_source(self.where, self.library)
        from compression_model.codecs.plugin import register_filters

        register_filters()
        if self.library == "zarr":
            import zarr

            store = zarr.storage.FsspecStore.from_url(self.where, storage_options=self.storage_options or {},
                                                      read_only=True)
            return zarr.open(store=store, mode="r")
        import h5py

        from advisor.objectstore_build import store_filesystem, strip_protocol

        from advisor.objectstore_build import close_client

        fs = store_filesystem(self.where, self.storage_options)
        fh = fs.open(strip_protocol(self.where), "rb", block_size=16 << 20)
        self._closers += [fh, _Closing(fs, close_client)]
        return h5py.File(fh, "r")

    def close(self) -> None:
        for c in self._closers:
            c.close()
        self._closers = []


class _Closing:
    def __init__(self, obj, fn):
        self.obj, self.fn = obj, fn

    def close(self) -> None:
        self.fn(self.obj)


# ---------------------------------------------------------------------------------------------- the run

def apply_to_store(trace, options, storage_options: dict | None = None, progress=None, on_start=None) -> ApplyResult:
    """``apply`` with ``options.out`` a URL on an object store (``advisor.apply.apply`` comes here)."""
    from advisor.objectstore_build import store_filesystem

    from advisor.objectstore_build import close_client

    fs = store_filesystem(options.out, storage_options)
    try:
        return _apply(trace, options, storage_options, progress, on_start, fs)
    finally:
        close_client(fs)


def _apply(trace, options, storage_options, progress, on_start, fs) -> ApplyResult:
    import zarr

    from advisor.objectstore_build import strip_protocol

    t0 = time.perf_counter()
    progress = progress or (lambda kind, n: None)
    dest = options.out.rstrip("/")
    if options.in_place:
        raise ApplyError("--in-place on an object store: give --out s3://bucket/new.zarr")
    if library_of_path(dest) != "zarr":
        raise ApplyError(f"--out {dest}: on an object store apply writes a Zarr store (name it .zarr)")
    targets = store_targets(trace, options, storage_options)
    source = _Source(targets.source, storage_options)
    key = strip_protocol(dest)
    partial = key + PARTIAL
    budget = options.block_budget(ZARR_BLOCK_COPIES)
    header = {**source.fingerprint(), "layouts": targets.get_config()["layouts"], "dest": dest, "budget": budget}
    has_journal = fs.exists(f"{partial}/header.json")
    if not has_journal:
        if fs.exists(key) and (fs.ls(key) if fs.isdir(key) else True):
            raise ApplyError(f"{dest} exists: apply never overwrites; choose another --out or remove it")
        if key.split("/", 1)[0] and not fs.exists(key.split("/", 1)[0]):
            raise ApplyError(f"{dest}: no bucket {key.split('/', 1)[0]!r} on the store")
    journal, resumed = StoreJournal.open_on(fs, partial, header)
    if journal.has("complete"):  # killed after publishing: the copy is whole, only the journal is left
        summaries = tuple(ArraySummary.from_config(e["summary"]) for e in journal.entries if e.get("kind") == "array")
        remove_prefix(fs, partial)
        return ApplyResult(targets.source, dest, summaries, time.perf_counter() - t0, True)
    if not resumed and fs.exists(key):  # a partial copy of an earlier run with another fingerprint: ours
        remove_prefix(fs, key)
    src_root = source.open()
    try:
        inner = zarr.storage.FsspecStore.from_url(dest, storage_options=storage_options or {})
        held = HeldRootStore(inner)
        entry = next((e for e in journal.entries if e.get("kind") == "structure"), None)
        if entry is None:
            root_array = not hasattr(src_root, "keys")
            dst_root = held if root_array else zarr.open_group(held, mode="w-", zarr_format=3)
            resolve_bounds(targets, src_root, source.library, journal, options.block_budget())
            entries, notes = create_structure(src_root, source.library, dst_root, "zarr", targets.layouts)
            arrays = [e.path for e in entries]
            journal.record({"kind": "structure", "arrays": arrays, "notes": notes,
                            "root": None if held.held is None else held.held.decode()})
        else:
            held.held = None if entry["root"] is None else entry["root"].encode()
            arrays, notes = entry["arrays"], entry["notes"]
            resolve_bounds(targets, src_root, source.library, journal, options.block_budget())
        summaries = _copy(arrays, src_root, source.library, held, journal, targets, options, budget, progress,
                          on_start)
    finally:
        if hasattr(src_root, "close"):
            src_root.close()
        source.close()
    fs.pipe_file(f"{key}/{ROOT}", held.held)  # the group (or root array) becomes visible: the copy is whole
    if summaries and not (len(arrays) == 1 and arrays[0].strip("/") == ""):
        import warnings

        with warnings.catch_warnings():  # "consolidated metadata is not part of the Zarr 3 spec": xarray reads it
            warnings.simplefilter("ignore")
            zarr.consolidate_metadata(inner)
    journal.record({"kind": "complete"})
    remove_prefix(fs, partial)
    return ApplyResult(targets.source, dest, tuple(summaries), time.perf_counter() - t0, resumed,
                       notes=tuple(notes) + ("the root metadata (zarr.json, consolidated) was written last: "
                                             "the group was not visible before the copy was whole",))


def _copy(arrays, src_root, src_lib: str, held: HeldRootStore, journal: StoreJournal, targets: Targets, options,
          budget: int, progress, on_start) -> list[ArraySummary]:
    import zarr

    def dst_open(path):
        return zarr.open_array(store=held, path=path.strip("/") or None, mode="r+")

    plans = {}
    for p in arrays:
        src = array_at(src_root, p)
        itemsize = max(src.dtype.itemsize, 1) if src.dtype.kind != "O" else 64
        plans[p] = plan_copy(src.shape, itemsize, grid_of(src, src_lib), grid_of(dst_open(p), "zarr"), budget)
        if plans[p].two_pass:
            raise ApplyError(f"{p}: its source and new chunks need a two-pass copy in --max-memory "
                             f"{options.max_memory} bytes; on an object store give more --max-memory")
    if on_start:
        on_start(sum(array_at(src_root, p).nbytes for p in arrays),
                 sum(e.get("nbytes", 0) for e in journal.entries if e.get("kind") == "block"))
    out = []
    for path in arrays:
        done_entry = next((e for e in journal.entries if e.get("kind") == "array" and e.get("array") == path), None)
        if done_entry is not None:
            summary = ArraySummary.from_config(done_entry["summary"])
            out.append(replace(summary, blocks_resumed=summary.blocks))
            continue
        src = array_at(src_root, path)
        lay = targets.layouts.get(path)
        stage = plans[path].stages[0]
        job = BlockJob(path, stage, lay.abs_bound if lay is not None and lay.lossy else None, fill_of(src, src_lib))
        todo = [i for i in range(stage.n_blocks) if i not in journal.blocks_done(path, 0)]
        t0 = time.perf_counter()

        def one(i, path=path, job=job, src=src):
            return copy_block(job, i, src, lambda: dst_open(path), None)

        def record(entry, path=path):
            journal.record({"kind": "block", "array": path, "stage": 0, **entry})
            progress(path, entry["nbytes"])

        if options.jobs > 1 and len(todo) > 1:
            with ThreadPoolExecutor(options.jobs) as pool:
                for entry in pool.map(one, todo):
                    record(entry)
        else:
            for i in todo:
                record(one(i))
        blocks = [e for e in journal.entries if e.get("kind") == "block" and e.get("array") == path]
        summary = ArraySummary(
            path, lay.label if lay is not None else "as is", "direct " + "x".join(map(str, stage.block)),
            int(src.nbytes), stored_bytes(src, src_lib), stored_bytes(dst_open(path), "zarr"),
            max([e["max_error"] for e in blocks], default=0.0),
            time.perf_counter() - t0 + sum(e["seconds"] for e in blocks if e.get("prior")), stage.n_blocks,
            sum(1 for e in blocks if e.get("prior")))
        journal.record({"kind": "array", "array": path, "summary": summary.get_config()})
        out.append(summary)
    return out


__all__ = ["HeldRootStore", "PARTIAL", "StoreJournal", "apply_to_store", "layout_from_store_advice", "remove_prefix",
           "store_targets"]
