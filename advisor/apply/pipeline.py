"""``advisor.apply.apply``: a trace in, a complete, verified copy of the traced file in the advised layout
out, written under a temporary name and renamed only when done.

Work happens in ``<DEST>.ioadvisor-partial/``: the copy being written, the two-pass intermediates and the
journal. A rerun of the same command finds it and resumes; a run for another source, layout or memory
budget starts it over. The source is opened read-only throughout.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from compression_model.codecs.plugin import hdf5plugin

from .bounds import resolve_bounds
from .copy import (NAN_UNSAFE_HDF5, BlockJob, array_at, copy_block, create_dest, fill_of, flush, grid_of,
                   is_root_array, open_array, open_dest, open_source, remote_copy_block, stored_bytes)
from .journal import Journal
from .plan import CopyPlan, Stage, plan_copy
from .result import ApplyResult, ArraySummary
from .structure import create_structure
from .targets import KEEP, ApplyError, Targets, library_of_path, resolve_targets

PARTIAL = ".ioadvisor-partial"
BACKUP = ".ioadvisor-backup"
DISTRIBUTED_BYTES = 256 << 30
"""Above this many bytes to move, the plan runs on a local dask.distributed cluster without --scheduler."""
OVERHEAD_BYTES = 48 << 20
"""Of --max-memory, what the libraries' own buffers and caches are left (beside the blocks)."""
BLOCK_COPIES = 3
"""Arrays of one block alive at once: the block read, its read-back, the codec's buffers."""
ZARR_BLOCK_COPIES = 4
"""Zarr encodes (and decodes) every chunk of a block at once and holds the encoded bytes beside it: the
shards case of benchmarks/validation/apply.py peaked at 3.4 blocks with BLOCK_COPIES."""


@dataclass(frozen=True)
class ApplyOptions:
    """``ioadvisor apply``'s options. ``out`` is the destination (None with ``in_place``)."""

    out: str | None = None
    datasets: tuple[str, ...] = ()
    layouts: tuple[str, ...] = ()
    max_memory: int = 1 << 30
    jobs: int = 1
    scheduler: str | None = None
    in_place: bool = False
    backup: bool = True
    advise_kwargs: dict = field(default_factory=dict, compare=False)
    storage_options: dict | None = field(default=None, compare=False, repr=False)
    """fsspec's options to reach an object store (``--out s3://...``, or traced data on one): never recorded."""

    def block_budget(self, copies: int = BLOCK_COPIES) -> int:
        overhead = min(OVERHEAD_BYTES, self.max_memory // 2)
        return max((self.max_memory - overhead) // (copies * max(self.jobs, 1)), 1)


def _fingerprint(source: Path) -> dict:
    st = source.stat()
    meta = [source / n for n in ("zarr.json", ".zgroup", ".zmetadata")] if source.is_dir() else []
    mt = max([st.st_mtime_ns] + [m.stat().st_mtime_ns for m in meta if m.exists()])
    return {"source": source.as_posix(), "size": st.st_size, "mtime_ns": mt}


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


class _Run:
    """One run of a copy: the handles, the journal, the progress callback."""

    def __init__(self, targets: Targets, dest_library: str, work: Path, options: ApplyOptions,
                 progress: Callable[[str, int], None] | None):
        self.targets = targets
        self.src_lib = library_of_path(targets.source) if not Path(targets.source).is_dir() else "zarr"
        self.dst_lib = dest_library
        self.work = work
        self.options = options
        self.progress = progress or (lambda kind, n: None)
        self.out = work / ("copy" + (".zarr" if dest_library == "zarr" else ".h5"))
        self.client = None
        self.plans: dict[str, CopyPlan] = {}

    # ---- structure
    def open(self, journal: Journal) -> tuple[object, object, list, list[str]]:
        src = open_source(self.targets.source, self.src_lib)
        if journal.has("structure"):
            try:
                dst = open_dest(self.out, self.dst_lib)
                entry = next(e for e in journal.entries if e.get("kind") == "structure")
                return src, dst, entry["arrays"], entry["notes"]
            except (OSError, ValueError, KeyError) as exc:
                raise ApplyError(f"{self.out}: the partial copy cannot be reopened ({exc}); remove {self.work} "
                                 "to start over") from None
        _remove(self.out)
        dst = create_dest(self.out, self.dst_lib, src)
        entries, notes = create_structure(src, self.src_lib, dst, self.dst_lib, self.targets.layouts)
        if is_root_array(src):  # ``dst`` was the store the root array was made in
            dst = open_dest(self.out, self.dst_lib)
        flush(dst)
        arrays = [e.path for e in entries]
        journal.record({"kind": "structure", "arrays": arrays, "notes": notes})
        return src, dst, arrays, notes

    # ---- one array
    def plan(self, src, dst) -> CopyPlan:
        s_grid = grid_of(src, self.src_lib)
        d_grid = grid_of(dst, self.dst_lib)
        itemsize = max(src.dtype.itemsize, 1) if src.dtype.kind != "O" else 64
        copies = ZARR_BLOCK_COPIES if "zarr" in (self.src_lib, self.dst_lib) else BLOCK_COPIES
        return plan_copy(src.shape, itemsize, s_grid, d_grid, self.options.block_budget(copies))

    def resolve_bounds(self, journal: Journal) -> None:
        """Relative error bounds of ``--layout`` made absolute with the valid range of the source's values
        (one read of the array, journaled)."""
        lossy = {p: lay for p, lay in self.targets.layouts.items() if lay.lossy and lay.abs_bound is None}
        if not lossy:
            return
        src_root = open_source(self.targets.source, self.src_lib)
        try:
            resolve_bounds(self.targets, src_root, self.src_lib, journal, self.options.block_budget())
        finally:
            src_root.close() if hasattr(src_root, "close") else None

    def run_stage(self, journal: Journal, path: str, stage_no: int, job: BlockJob, src, dst_open, dst_root,
                  remote_spec: dict | None) -> None:
        done = journal.blocks_done(path, stage_no)
        todo = [i for i in range(job.stage.n_blocks) if i not in done]
        kind = f"{path} pass {stage_no + 1}"

        def record(entry):
            journal.record({"kind": "block", "array": path, "stage": stage_no, **entry})
            self.progress(kind, entry["nbytes"])

        if remote_spec is not None and todo:
            from distributed import as_completed

            futures = [self.client.submit(remote_copy_block, remote_spec, i, pure=False) for i in todo]
            for fut in as_completed(futures):
                record(fut.result())
            return
        jobs = self.options.jobs if self.dst_lib == "zarr" and stage_no == len(self.plans[path].stages) - 1 else 1
        if jobs > 1 and len(todo) > 1:
            with ThreadPoolExecutor(jobs) as pool:
                for entry in pool.map(lambda i: copy_block(job, i, src, dst_open, dst_root), todo):
                    record(entry)
        else:
            for i in todo:
                record(copy_block(job, i, src, dst_open, dst_root))

    def intermediate(self, path: str, src, journal: Journal):
        """The contiguous, early-allocated intermediate of a two-pass array (made again unless journaled)."""
        import h5py
        from h5py import h5d, h5p, h5s, h5t

        name = intermediate_name(self.work, path)
        if journal.has("intermediate", array=path):
            f = h5py.File(name, "r+")
            return f, f["data"]
        _remove(name)
        f = h5py.File(name, "w")
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_layout(h5d.CONTIGUOUS)
        dcpl.set_alloc_time(h5d.ALLOC_TIME_EARLY)
        dcpl.set_fill_time(h5d.FILL_TIME_NEVER)
        h5d.create(f.id, b"data", h5t.py_create(src.dtype, logical=True), h5s.create_simple(src.shape), dcpl=dcpl)
        f.flush()
        journal.record({"kind": "intermediate", "array": path, "file": name.name})
        return f, f["data"]


def intermediate_name(work: Path, path: str) -> Path:
    return work / f"intermediate-{hashlib.sha1(path.encode()).hexdigest()[:12]}.h5"


def apply(trace_or_path, options: ApplyOptions, progress: Callable[[str, int], None] | None = None,
          on_start: Callable[[int, int], None] | None = None) -> ApplyResult:
    """Copy the traced file into ``options.out`` (or in place) with the advised layouts.

    ``progress(label, nbytes)`` is called after each block; ``on_start(total_bytes, done_bytes)`` once the
    plan is known (``done_bytes``: finished by an earlier run)."""
    from instrumentation.tracefile import Trace, load_trace

    t0 = time.perf_counter()
    trace = trace_or_path if isinstance(trace_or_path, Trace) else load_trace(trace_or_path)
    if options.out is not None and "://" in options.out:  # an object store: no rename there (apply.store)
        from advisor.objectstore import on_store

        if on_store(options.out):
            from .store import apply_to_store

            return apply_to_store(trace, options, options.storage_options, progress, on_start)
    if options.in_place == (options.out is not None):
        raise ApplyError("give --out DEST or --in-place (one of them)")
    if options.max_memory < 1 << 20:
        raise ApplyError(f"--max-memory {options.max_memory} bytes: at least 1MiB")
    if options.jobs < 1:
        raise ApplyError("--jobs must be >= 1")
    dest_hint = options.out
    if options.in_place:
        files = {Path(d.file).resolve() for d in trace.datasets.values()}
        if len(files) != 1:
            raise ApplyError("--in-place needs a trace of one file")
        dest_hint = str(files.pop())
    final = Path(dest_hint).absolute()
    dest_library = library_of_path(final)
    if options.in_place:  # killed between its renames: finished before the advice, which would read the moved source
        finished = _finished_before(final.parent / (final.name + PARTIAL), final, final, t0)
        if finished is not None:
            return finished
    targets = resolve_targets(trace, datasets=options.datasets, layouts=options.layouts, dest_library=dest_library,
                              advise_kwargs=options.advise_kwargs)
    source = Path(targets.source)
    work = final.parent / (final.name + PARTIAL)
    finished = _finished_before(work, final, source, t0)
    if finished is not None:
        return finished
    if options.in_place:
        final = source
    elif final.exists() or final.is_symlink():
        raise ApplyError(f"{final} exists: apply never overwrites; choose another --out or remove it")
    elif final == source:
        raise ApplyError("--out is the source: use --in-place")
    if not final.parent.is_dir():
        raise ApplyError(f"{final.parent}: no such directory for --out")
    if not source.exists():
        raise ApplyError(f"{source}: the traced file does not exist")
    plugins = sorted({lay.compressor for lay in targets.layouts.values()
                      if lay.compressor not in (None, KEEP, "gzip")}) if dest_library == "hdf5" else []
    # HDF5 plugin filters: without hdf5plugin this fails in one line, before any output exists
    plugin = hdf5plugin(f"writing the HDF5 {', '.join(plugins)} filter") if plugins else None
    header = {**_fingerprint(source), "layouts": targets.get_config()["layouts"], "dest_library": dest_library,
              "budget": options.block_budget()}
    work.mkdir(exist_ok=True)
    journal, resumed = Journal.open(work, header)
    if not resumed:
        for p in work.iterdir():
            if p.name != "journal.jsonl":
                _remove(p)
    run = _Run(targets, dest_library, work, options, progress)
    run.resolve_bounds(journal)
    src_root, dst_root, arrays, notes = run.open(journal)
    try:
        summaries = _copy_arrays(run, journal, src_root, dst_root, arrays, on_start, resumed)
    finally:
        if run.client is not None:
            run.client.close()
    dst_root.close() if hasattr(dst_root, "close") else None
    src_root.close() if hasattr(src_root, "close") else None
    if dest_library == "zarr" and not is_root_array(dst_root):  # a root array has no metadata to consolidate
        import warnings

        import zarr

        with warnings.catch_warnings():  # "consolidated metadata is not part of the Zarr 3 spec": xarray reads it
            warnings.simplefilter("ignore")
            zarr.consolidate_metadata(str(run.out))
    journal.record({"kind": "complete"})
    journal.close()
    if plugins:
        notes = list(notes) + [f"{', '.join(plugins)}: HDF5 plugin filters; readers other than h5py with "
                               f"hdf5plugin imported (netCDF4, xarray's default engine, h5dump) need "
                               f"HDF5_PLUGIN_PATH={plugin.PLUGIN_PATH}"]
    backup = None
    if options.in_place:
        backup = source.with_name(source.name + BACKUP)
        if backup.exists():
            raise ApplyError(f"{backup} exists: move it away before an in-place apply")
        os.rename(source, backup)
        os.rename(run.out, source)
        if not options.backup:
            _remove(backup)
            backup = None
    else:
        os.rename(run.out, final)
    shutil.rmtree(work, ignore_errors=True)
    return ApplyResult(str(source), str(final), tuple(summaries), time.perf_counter() - t0, resumed,
                       None if backup is None else str(backup), tuple(notes))


def _finished_before(work: Path, final: Path, source: Path, t0: float) -> ApplyResult | None:
    """A run killed after its rename but before removing its work directory (DEST is complete), or an
    in-place run killed between its two renames (the verified copy is still in the work directory): the
    rerun finishes it and reports the journaled summary."""
    journal = work / "journal.jsonl"
    if not journal.exists():
        return None
    backup = source.with_name(source.name + BACKUP)
    copies = [p for p in work.glob("copy.*")]
    swap = final == source and not source.exists() and backup.exists() and len(copies) == 1
    if not (final.exists() or swap):
        return None
    import json

    entries = []
    for line in journal.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            break
    if not any(e.get("kind") == "complete" for e in entries):
        return None
    summaries = tuple(ArraySummary.from_config(e["summary"]) for e in entries if e.get("kind") == "array")
    if swap:  # an in-place run killed between its two renames: the original is the backup already
        os.rename(copies[0], source)
    shutil.rmtree(work, ignore_errors=True)
    return ApplyResult(str(source), str(final), summaries, time.perf_counter() - t0, True,
                       str(backup) if backup.exists() else None)


def _copy_arrays(run: _Run, journal: Journal, src_root, dst_root, arrays: Sequence[str], on_start,
                 resumed: bool) -> list[ArraySummary]:
    run.plans = {p: run.plan(array_at(src_root, p), array_at(dst_root, p)) for p in arrays}
    total = sum(array_at(src_root, p).nbytes * len(run.plans[p].stages) for p in arrays)
    done = sum(e.get("nbytes", 0) for e in journal.entries if e.get("kind") == "block")
    if total > DISTRIBUTED_BYTES or run.options.scheduler:
        run.client = _client(run.options)
    if on_start:
        on_start(total, done)
    out = []
    for path in arrays:
        src = array_at(src_root, path)
        dst_open = lambda p=path: open_array(dst_root, p, run.dst_lib)  # noqa: E731
        plan = run.plans[path]
        if journal.has("array", array=path):
            entry = next(e for e in journal.entries if e.get("kind") == "array" and e.get("array") == path)
            summary = ArraySummary.from_config(entry["summary"])
            out.append(replace(summary, blocks_resumed=summary.blocks) if entry.get("prior") else summary)
            continue
        lay = run.targets.layouts.get(path)
        bound = lay.abs_bound if lay is not None and lay.lossy else None
        fill = fill_of(src, run.src_lib)
        unsafe = lay.compressor if lay is not None and run.dst_lib == "hdf5" and lay.compressor in NAN_UNSAFE_HDF5 \
            else None
        t0 = time.perf_counter()
        if plan.two_pass:
            import h5py

            inter_file, inter = run.intermediate(path, src, journal)
            try:
                run.run_stage(journal, path, 0, BlockJob(path, plan.stages[0], None), src, lambda: inter, inter_file,
                              None)
            finally:
                inter_file.close()
            name = intermediate_name(run.work, path)
            with h5py.File(name, "r") as inter_file:  # read-only: dask workers may open it too
                run.run_stage(journal, path, 1, BlockJob(path, plan.stages[1], bound, fill, unsafe), inter_file["data"],
                              dst_open, dst_root, _remote(run, path, plan.stages[1], bound, fill, (str(name), "hdf5", "/data")))
        else:
            run.run_stage(journal, path, 0, BlockJob(path, plan.stages[0], bound, fill, unsafe), src, dst_open, dst_root,
                          _remote(run, path, plan.stages[0], bound, fill,
                                  (run.targets.source, run.src_lib, path)))
        blocks = [e for e in journal.entries if e.get("kind") == "block" and e.get("array") == path]
        lay = run.targets.layouts.get(path)
        summary = ArraySummary(
            path, lay.label if lay is not None else "as is",
            "two-pass " + " -> ".join("x".join(map(str, s.block)) for s in plan.stages) if plan.two_pass
            else "direct " + "x".join(map(str, plan.stages[0].block)),
            int(src.nbytes), stored_bytes(src, run.src_lib), stored_bytes(array_at(dst_root, path), run.dst_lib),
            max([e["max_error"] for e in blocks], default=0.0),
            max(time.perf_counter() - t0, 0.0) + sum(e["seconds"] for e in blocks if e.get("prior")),
            sum(s.n_blocks for s in plan.stages), sum(1 for e in blocks if e.get("prior")))
        journal.record({"kind": "array", "array": path, "summary": summary.get_config()})
        if plan.two_pass:
            _remove(intermediate_name(run.work, path))
        out.append(summary)
    return out


def _remote(run: _Run, path: str, stage: Stage, bound, fill, source: tuple[str, str, str]) -> dict | None:
    """The spec of a stage the dask cluster runs: only stages writing a Zarr destination (an HDF5 file has
    one writer). ``source``: (file, library, array path) read by the stage."""
    if run.client is None or run.dst_lib != "zarr":
        return None
    fill = fill.item() if isinstance(fill, np.generic) else fill
    return {"source": source[0], "source_library": source[1], "source_array": source[2], "dest": str(run.out),
            "array": path, "stage": stage.get_config(), "bound": bound, "fill": fill}


def _client(options: ApplyOptions):
    from distributed import Client, LocalCluster

    if options.scheduler and options.scheduler != "local":
        return Client(options.scheduler)
    cluster = LocalCluster(n_workers=options.jobs, threads_per_worker=1, processes=True,
                           memory_limit=max(options.max_memory // options.jobs, 256 << 20), dashboard_address=None)
    return Client(cluster)
