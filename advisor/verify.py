"""``advisor.verify``: rebuild the traced arrays in the current and the recommended layouts, replay for real.

For each dataset of a trace, the current layout and the top-K layouts of
``advisor.advise`` are built on disk (with the user's data when the recorded
file is readable, else a smooth random field of the same shape and dtype),
the page cache is emptied and the recorded accesses are replayed through h5py
or zarr (``iomodel.replay``). The measured seconds sit next to the predicted
ones; that closes the loop for the user (does the advice hold here?) and for
the models (``measured / predicted``).

Traces from several MPI ranks: when every access of a dataset is a read, the
ranks replay at the same time, one process each, and the time is the slowest
rank's (the parallel model's max over ranks). Serial h5py cannot have two
writers on one file, so a multi-rank trace with writes replays its accesses
in time order in one process (``VerifyRow.parallel`` is False then).

With a ``deadline`` every replay runs in a separate process that is killed
when it runs past it (some default layouts take minutes); its time is then a
lower bound (``VerifyRow.timed_out``).
"""
from __future__ import annotations

import contextlib
import json
import os
import pickle
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from advisor import progress
from instrumentation.records import READ, AccessRecord, DatasetRecord, Filter, ResizeRecord
from instrumentation.tracefile import Trace, load_trace
from iomodel.layout import Layout, layout_text
from iomodel.predict import pick_dataset
from iomodel.replay import (DATASET_NAME, LayoutSpec, ReplayError, build, data_path, evict, index_of, replay,
                            stored_bytes)
from instrumentation.errors import IoadvisorError

MAX_BYTES = 2 << 30
"""Largest array region verify rebuilds per layout (the user's data is held in memory once)."""


class VerifyError(IoadvisorError, ValueError):
    """A dataset cannot be rebuilt or replayed; the message names the dataset and the reason."""


@dataclass(frozen=True)
class Choice:
    """One layout to rebuild: the recorded one ("current") or a recommended candidate.

    Compression is given either as the recorded filter pipeline (``filters``,
    the current layout) or as a compression_model codec name and error bound
    (candidates); the bound is resolved against the data's range when built.
    """

    label: str
    layout: Layout
    predicted_seconds: float | None = None
    predicted_ci: tuple[float, float] | None = None
    filters: tuple[Filter, ...] = ()
    compressor: str | None = None
    error_bound: str | None = None


@dataclass(frozen=True)
class VerifyRow:
    """Predicted and measured time of one dataset in one layout."""

    dataset: str
    label: str
    library: str
    chunks: tuple[int, ...] | None
    shards: tuple[int, ...] | None
    cache_bytes: int | None
    compressor: str | None
    error_bound: str | None
    predicted_seconds: float | None
    measured_seconds: float
    measured_all: tuple[float, ...]
    stored_bytes: int
    data: str  # "user" | "synthetic"
    max_error: float | None  # largest |read or stored - original| (user data only)
    parallel: bool = False
    timed_out: bool = False  # stopped at the deadline: measured_seconds is a lower bound

    @property
    def description(self) -> str:
        """``hdf5 1000x16 cache=8MiB blosc-zstd``: the library, layout and codec measured."""
        text = f"{self.library} {layout_text(self.chunks, self.shards, self.cache_bytes)}"
        if self.compressor:
            text += f" {self.compressor}" + (f"({self.error_bound})" if self.error_bound else "")
        return text

    @property
    def ratio(self) -> float | None:
        """measured / predicted (> 1: the model is optimistic)."""
        if not self.predicted_seconds:
            return None
        return self.measured_seconds / self.predicted_seconds

    def get_config(self) -> dict:
        cfg = {f.name: getattr(self, f.name) for f in fields(self)}
        for k in ("chunks", "shards", "measured_all"):
            cfg[k] = None if cfg[k] is None else list(cfg[k])
        cfg["ratio"] = self.ratio
        return cfg

    @classmethod
    def from_config(cls, config: dict) -> "VerifyRow":
        kw = {f.name: config.get(f.name) for f in fields(cls)}
        for k in ("chunks", "shards", "measured_all"):
            kw[k] = None if kw[k] is None else tuple(kw[k])
        return cls(**kw)


@dataclass(frozen=True)
class VerifyResult:
    """All rows of one ``verify`` run, dataset by dataset, current layout first."""

    source: str
    rows: tuple[VerifyRow, ...]
    workdir: str
    repeat: int = 1

    def rows_of(self, dataset: str) -> tuple[VerifyRow, ...]:
        return tuple(r for r in self.rows if r.dataset == dataset)

    @property
    def datasets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.dataset for r in self.rows))

    def get_config(self) -> dict:
        return {"source": self.source, "workdir": self.workdir, "repeat": self.repeat,
                "rows": [r.get_config() for r in self.rows]}

    @classmethod
    def from_config(cls, config: dict) -> "VerifyResult":
        return cls(config["source"], tuple(VerifyRow.from_config(r) for r in config["rows"]),
                   config["workdir"], int(config.get("repeat", 1)))

    def table(self) -> str:
        """Predicted vs measured, one block per dataset, with the measured speed-up over the current layout."""
        out = []
        for name in self.datasets:
            rows = self.rows_of(name)
            src = rows[0].data
            upto = "up to " if any(len(r.measured_all) < self.repeat for r in rows) else ""
            ranks = " ranks replayed concurrently," if any(r.parallel for r in rows) else ""
            out.append(f"{name}  ({'user data' if src == 'user' else 'synthetic data: file not readable'},"
                       f"{ranks} cold page cache, " + (f"median of {upto}{self.repeat} replays)" if self.repeat > 1
                                                       else "one replay)"))
            out.append(f"  {'':<12} {'library':<7} {'layout (chunks, cache/shards)':<32} {'codec':<18} "
                       f"{'predicted':>10} {'measured':>10} {'meas/pred':>9} {'stored':>10} {'speed-up':>8}")
            base = next((r.measured_seconds for r in rows if r.label == "current"), None)
            for r in rows:
                chunks = layout_text(r.chunks, r.shards, r.cache_bytes)
                codec = r.compressor or "none"
                if r.error_bound:
                    codec += f" {r.error_bound}"
                pred = "-" if r.predicted_seconds is None else f"{r.predicted_seconds:.3f} s"
                ratio = "-" if r.ratio is None else f"{r.ratio:.2f}"
                speed = "-" if not base or not r.measured_seconds else f"{base / r.measured_seconds:.2f}x"
                meas = (">" if r.timed_out else "") + f"{r.measured_seconds:.3f}"
                out.append(f"  {r.label:<12} {r.library:<7} {chunks:<32} {codec:<18} {pred:>10} "
                           f"{meas:>8} s {ratio:>9} {_mb(r.stored_bytes):>10} {speed:>8}")
            errs = [r for r in rows if r.max_error is not None]
            if errs:
                worst = max(errs, key=lambda r: r.max_error)
                out.append(f"  data read back: max |error| {worst.max_error:.3g} ({worst.label})")
            if any(not r.parallel for r in rows) and any(r.parallel for r in rows):
                out.append("  note: some layouts replayed sequentially (writes from several ranks)")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


# ---- data ------------------------------------------------------------------------------------------


def synthetic(shape: Sequence[int], dtype: Any, seed: int = 0) -> np.ndarray:
    """A smooth random field plus 1% noise, of the dtype: compresses like simulation output, not like noise.

    Separable (a product of low-frequency cosines per axis, three terms), so it costs one pass.
    """
    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in shape)
    out = np.zeros(shape, dtype=np.float64 if np.dtype(dtype).itemsize > 4 else np.float32)
    for _ in range(3):
        term = np.ones((1,) * len(shape), dtype=out.dtype)
        for d, n in enumerate(shape):
            axis = np.cos(2 * np.pi * rng.uniform(0.5, 4.0) * np.arange(n) / max(n, 1) + rng.uniform(0, 2 * np.pi))
            term = term * axis.astype(out.dtype).reshape((1,) * d + (n,) + (1,) * (len(shape) - d - 1))
        out += term
    out += rng.standard_normal(shape).astype(out.dtype) * 0.01
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return out.astype(dt)
    if dt.kind in "iu":
        hi = min(np.iinfo(dt).max, 1 << 20)
        lo = 0 if dt.kind == "u" else -hi
        return np.clip(np.rint(lo + (out + 3.1) / 6.2 * (hi - lo)), lo, hi).astype(dt)
    if dt.kind == "b":
        return out > 0
    raise VerifyError(f"cannot make synthetic data of dtype {dt}")


def _open_user(ds: DatasetRecord):
    """The recorded array, opened read-only, or None when its file is not readable here."""
    if not os.path.exists(ds.file):
        return None
    try:
        if ds.library == "hdf5":
            import h5py

            f = h5py.File(ds.file, "r")
            return f[ds.path]
        import zarr

        return zarr.open_array(store=ds.file, path=ds.path or None, mode="r")
    except Exception:  # unreadable, moved, other format: verify with synthetic data instead
        return None


def load_data(ds: DatasetRecord, shape: Sequence[int], seed: int = 0) -> tuple[np.ndarray, str]:
    """The array's content over ``shape``: the user's (padded with synthetic values where the file is smaller
    than the traced extent) or synthetic; and which one ("user" | "synthetic")."""
    arr = _open_user(ds)
    if arr is None or tuple(arr.shape) == () or np.dtype(arr.dtype) != np.dtype(ds.dtype):
        return synthetic(shape, ds.dtype, seed), "synthetic"
    try:
        have = tuple(min(a, s) for a, s in zip(arr.shape, shape))
        part = np.asarray(arr[tuple(slice(0, h) for h in have)])
    finally:
        f = getattr(arr, "file", None)
        if f is not None:
            f.close()
    if have == tuple(shape):
        return part, "user"
    data = synthetic(shape, ds.dtype, seed)
    data[tuple(slice(0, h) for h in have)] = part
    return data, "user"


# ---- building and replaying ------------------------------------------------------------------------


def _spec(choice: Choice, ds: DatasetRecord) -> LayoutSpec:
    layout = replace(choice.layout, filtered=False)
    return LayoutSpec.of(layout, dtype=ds.dtype, filters=choice.filters)


def _codec(choice: Choice, data: np.ndarray):
    if not choice.compressor or choice.compressor == "none":
        return None
    from compression_model.codecs import get_codec

    finite = data[np.isfinite(data)] if data.dtype.kind == "f" else data
    rng = float(finite.max() - finite.min()) if finite.size else 0.0
    return get_codec(choice.compressor, choice.error_bound, rng)


def build_choice(choice: Choice, ds: DatasetRecord, workdir: Path, data: np.ndarray, *,
                 fill: bool, shape: Sequence[int], resizable: bool) -> Path:
    """Create the array of ``choice`` under workdir; written whole from ``data`` when ``fill``."""
    spec = _spec(choice, ds)
    codec = _codec(choice, data)
    kwargs = None if codec is None else codec.hdf5_kwargs() if spec.library == "hdf5" else codec.zarr_codecs()
    return build(spec, workdir, fill=fill, data=data, shape=shape, resizable=resizable, create_kwargs=kwargs)


def _events(trace: Trace, ds: DatasetRecord, rank: int | None = None) -> list:
    """The dataset's accesses and resizes in time order (one rank's, or every rank's). The accesses and resizes of
    a folded run carry interpolated start times, which can put an access just before the resize that made room
    for it: an access beyond the array's shape comes after the resizes that precede it."""
    accesses = sorted((a for a in trace.accesses if a.dataset == ds.id and (rank is None or a.rank == rank)),
                      key=lambda e: e.t_start)
    resizes = sorted((one for r in trace.resizes if r.dataset == ds.id and (rank is None or r.rank == rank)
                      for one in r.expanded()), key=lambda e: e.t_start)
    shape, ev, i = tuple(ds.shape), [], 0
    for a in accesses:
        while i < len(resizes) and (resizes[i].t_start <= a.t_start
                                    or any(h > s for h, s in zip(a.selection.bounds()[1], shape))):
            shape = tuple(resizes[i].shape)
            ev.append(resizes[i])
            i += 1
        ev.append(a)
    return ev + resizes[i:]


def _written_mask(events: list, shape, created: bool) -> np.ndarray | None:
    """Where the trace wrote (None: not a fresh array, every element holds data)."""
    if not created:
        return None
    mask = np.zeros(shape, dtype=bool)
    for e in events:
        if isinstance(e, AccessRecord) and e.op != READ:
            kind, key = index_of(e.selection)
            mask[np.ix_(*key) if kind == "orthogonal" else key] = True
    return mask


def _error(got: np.ndarray, expected: np.ndarray) -> float:
    if not expected.size:
        return 0.0
    diff = np.abs(np.asarray(got).reshape(expected.shape).astype(np.float64) - expected.astype(np.float64))
    return 0.0 if np.all(np.isnan(diff)) else float(np.nanmax(diff))


def _max_error(events: list, values: list[np.ndarray], data: np.ndarray, created: bool) -> float | None:
    """Largest |read - expected| over the reads (None when there are none); expected = the data, or 0 (the
    fill value) where a fresh array had not been written yet."""
    written = np.zeros(data.shape, dtype=bool) if created else None
    worst, i = None, 0
    for e in events:
        if isinstance(e, ResizeRecord):
            continue
        kind, key = index_of(e.selection)
        idx = np.ix_(*key) if kind == "orthogonal" else key
        if e.op != READ:
            if written is not None:
                written[idx] = True
            continue
        expected = data[idx] if written is None else np.where(written[idx], data[idx], 0)
        worst = max(worst or 0.0, _error(values[i], expected))
        i += 1
    return worst


def _stored_error(spec: LayoutSpec, workdir: Path, data: np.ndarray, events: list, created: bool) -> float:
    """Largest |stored - expected| over the whole array after the replay (checks what writes left behind)."""
    path = data_path(spec, workdir)
    if spec.library == "hdf5":
        import h5py

        with h5py.File(path, "r") as f:
            stored = f[DATASET_NAME][...]
    else:
        import zarr

        stored = zarr.open_array(str(path), mode="r")[...]
    expected = data[tuple(slice(0, s) for s in stored.shape)]
    mask = _written_mask(events, data.shape, created)
    if mask is not None:
        expected = np.where(mask[tuple(slice(0, s) for s in stored.shape)], expected, 0)
    return _error(stored, expected)


def _rank_main() -> None:
    """A process of ``ReplayPool``: per job, read it, say ready, wait for go, replay, answer; EOF ends it."""
    # imported up front so no rank pays it inside a timed replay; hdf5plugin and zarr_sz3 register the
    # compressed candidates' HDF5 filters and zarr codec
    import h5py  # noqa: F401
    import hdf5plugin  # noqa: F401
    import zarr  # noqa: F401

    import compression_model.zarr_sz3  # noqa: F401

    while True:
        try:
            events, spec, workdir, data_file = pickle.load(sys.stdin.buffer)
        except EOFError:
            return
        data = None if data_file is None else np.load(data_file, mmap_mode="r")
        print("ready", flush=True)
        sys.stdin.buffer.readline()
        try:
            out = {"seconds": replay(events, spec, workdir, rebuild=False, cold=True, data=data).total_seconds}
        except Exception as exc:  # reported by the parent, which owns the error message
            out = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(out), flush=True)


class ReplayTimeout(Exception):
    """A replay ran past its deadline (its processes were killed)."""


class ReplayPool:
    """Long-lived replay processes, one per rank, started together on each job.

    Used for the ranks of an MPI read trace (run concurrently) and for serial
    replays that must be stoppable (a deadline: some default layouts take
    minutes). Fresh interpreters, not fork: HDF5 reads HDF5_USE_FILE_LOCKING
    once at start-up and every rank opens the one file (replay opens it r+);
    not multiprocessing's spawn either, which re-runs the caller's ``__main__``.
    Started once per dataset so the imports are paid once.
    """

    def __init__(self, nprocs: int):
        self.nprocs = nprocs
        self.procs: list[subprocess.Popen] = []
        self._start()

    def _start(self) -> None:
        env = {**os.environ, "HDF5_USE_FILE_LOCKING": "FALSE"}
        cmd = [sys.executable, "-c", "from advisor.verify import _rank_main; _rank_main()"]
        self.procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
                      for _ in range(self.nprocs)]

    def _line(self, p: subprocess.Popen, until: float | None) -> bytes:
        if until is not None:
            ready, _, _ = select.select([p.stdout], [], [], max(0.0, until - time.monotonic()))
            if not ready:
                raise ReplayTimeout
        return p.stdout.readline()

    def run(self, rank_events: list[list], spec: LayoutSpec, workdir: Path, *, data_file: str | None = None,
            timeout: float | None = None) -> float:
        """Every rank's events at once (each empties the page cache first); the slowest rank's seconds.

        ``data_file``: .npy of the array's values (written values come from it). Past ``timeout`` seconds
        the processes are killed (and restarted for the next job) and ReplayTimeout is raised.
        """
        for p, ev in zip(self.procs, rank_events):
            pickle.dump((ev, spec, str(workdir), data_file), p.stdin)
            p.stdin.flush()
        for r, p in enumerate(self.procs):
            if p.stdout.readline().strip() != b"ready":
                raise VerifyError(f"replay process {r} stopped (exit {p.poll()})")
        for p in self.procs:
            p.stdin.write(b"go\n")
            p.stdin.flush()
        until = None if timeout is None else time.monotonic() + timeout
        try:
            got = [json.loads(self._line(p, until) or b'{"error": "no result"}') for p in self.procs]
        except ReplayTimeout:
            for p in self.procs:
                p.kill()
                p.wait()
            self._start()
            raise
        failed = [f"rank {r}: {g['error']}" for r, g in enumerate(got) if "error" in g]
        if failed:
            raise ReplayError(failed[0])
        return max(g["seconds"] for g in got)

    def close(self) -> None:
        for p in self.procs:
            p.stdin.close()
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()

    def __enter__(self) -> "ReplayPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class _Runs:
    """Measurements of one distinct layout so far."""

    workdir: Path
    times: list = field(default_factory=list)
    stored: int = 0
    error: float | None = None
    timed_out: bool = False


ROUND_ROBIN_BYTES = 4 << 30
"""Keep every layout of a read-only trace built at once (replays interleaved) up to this many bytes in all."""
ROUND_ORDER_SEED = 0
"""Seed of the layouts' order in each round after the first (a fixed seed: two runs replay in the same order)."""


def measure_all(choices: Sequence[Choice], trace: Trace, ds: DatasetRecord, data: np.ndarray, workdir: Path, *,
                repeat: int = 1, check: bool = False, budget: float | None = None,
                deadline: float | None = None) -> tuple[list[_Runs], bool]:
    """Replay every choice ``repeat`` times, round robin (repeat i of every layout before repeat i+1, so a
    burst of load on the shared machine hits all layouts alike; each round after the first in a new order, so
    no layout always follows the same one); identical layouts are measured once.

    A layout stops repeating once its replays took ``budget`` seconds; a replay
    still running after ``deadline`` seconds is stopped and counts as
    ``deadline`` (a lower bound, ``timed_out``). Returns the runs per choice and
    whether the ranks ran concurrently.
    """
    events = _events(trace, ds)
    ranks = sorted({e.rank for e in events if isinstance(e, AccessRecord)})
    reads_only = all(e.op == READ for e in events if isinstance(e, AccessRecord))
    resizes = [e for e in events if isinstance(e, ResizeRecord)]
    parallel = len(ranks) > 1 and reads_only and not resizes
    shape = tuple(int(s) for s in (ds.shape if ds.created else data.shape))
    distinct: dict[tuple, _Runs] = {}
    keys = []
    for c in choices:
        key = (c.layout, c.filters, c.compressor, c.error_bound)
        keys.append(key)
        if key not in distinct:
            distinct[key] = _Runs(workdir / f"layout{len(distinct)}")
    keep_built = reads_only and data.nbytes * len(distinct) <= ROUND_ROBIN_BYTES
    first = {k: choices[keys.index(k)] for k in distinct}
    jobs = [_events(trace, ds, r) for r in ranks] if parallel else [events]
    pooled = parallel or deadline is not None
    data_file = None
    if pooled and not reads_only:
        workdir.mkdir(parents=True, exist_ok=True)
        data_file = str(workdir / "values.npy")
        np.save(data_file, data)
    if keep_built:  # all built and written out before the first replay: no write-back under a timed read
        for key, runs in distinct.items():
            build_choice(first[key], ds, runs.workdir, data, fill=not ds.created, shape=shape,
                         resizable=bool(resizes))
        for key, runs in distinct.items():
            evict(data_path(_spec(first[key], ds), runs.workdir))
    order = list(distinct)
    rounds = np.random.default_rng(ROUND_ORDER_SEED)
    bar = progress.current()
    bar.add_total(len(order) * max(1, repeat))
    with ReplayPool(len(jobs)) if pooled else contextlib.nullcontext() as pool:
        for k in range(max(1, repeat)):
            if k:  # the layout replayed after a long one ran slower (w09: 5-20%): no layout keeps one place
                order = [order[i] for i in rounds.permutation(len(order))]
            for key in order:
                runs = distinct[key]
                if runs.timed_out or (budget is not None and runs.times and sum(runs.times) > budget):
                    bar.advance()
                    continue  # a slow layout: more replays would not change its rank, only the run time
                choice, spec = first[key], _spec(first[key], ds)
                if not keep_built:
                    build_choice(choice, ds, runs.workdir, data, fill=not ds.created, shape=shape,
                                 resizable=bool(resizes))
                want = check and runs.error is None
                try:
                    if pooled:
                        runs.times.append(pool.run(jobs, spec, runs.workdir, data_file=data_file, timeout=deadline))
                        runs.stored = stored_bytes(data_path(spec, runs.workdir))
                    else:
                        res = replay(events, spec, runs.workdir, rebuild=False, cold=True, data=data,
                                     keep_values=want)
                        runs.times.append(res.total_seconds)
                        runs.stored = res.stored_bytes
                        if want and reads_only:
                            runs.error = _max_error(events, res.values, data, ds.created)
                except ReplayTimeout:
                    runs.times.append(float(deadline))
                    runs.timed_out = True
                    bar.advance()
                    continue
                except ReplayError as exc:
                    raise VerifyError(f"dataset {dataset_name(ds)}, layout {choice.label}: {exc}") from None
                if want and not reads_only:  # what the writes left behind (and, in process, what reads saw)
                    seen = 0.0 if pooled else (_max_error(events, res.values, data, ds.created) or 0.0)
                    runs.error = max(seen, _stored_error(spec, runs.workdir, data, events, ds.created))
                elif want and pooled:
                    # the replay processes keep nothing: read back once in this process to check the data
                    res = replay(events, spec, runs.workdir, rebuild=False, cold=False, data=data,
                                 keep_values=True)
                    runs.error = _max_error(events, res.values, data, ds.created)
                if not keep_built:
                    shutil.rmtree(runs.workdir, ignore_errors=True)
                bar.advance()
    for runs in distinct.values():
        shutil.rmtree(runs.workdir, ignore_errors=True)
    if data_file is not None:
        os.unlink(data_file)
    return [distinct[k] for k in keys], parallel


# ---- choices from the advice ------------------------------------------------------------------------


def current_choice(ds: DatasetRecord, predicted: float | None = None,
                   ci: tuple[float, float] | None = None) -> Choice:
    """The recorded layout, built with the recorded filters (zarr's default zstd included)."""
    return Choice("current", Layout.from_dataset(ds), predicted, ci, filters=tuple(ds.filters))


def dataset_advice(advice, ds: DatasetRecord):
    """The ``DatasetAdvice`` of ``ds`` in an ``Advice``."""
    for entry in advice.datasets:
        if entry.name in (ds.key, ds.label) or (entry.path == ds.path and Path(entry.name.split("::")[0]) == Path(ds.file)):
            return entry
    raise VerifyError(f"dataset {ds.key}: the advice has no entry for it")


def choice_of(rec, label: str, ds: DatasetRecord, shape: Sequence[int]) -> Choice:
    """A ``Recommendation`` of the advice as a layout to build."""
    c = rec.candidate
    layout = c.layout(shape, ds.itemsize, maxshape=ds.maxshape)
    return Choice(label, layout, rec.seconds, tuple(rec.seconds_ci) if rec.seconds_ci else None,
                  compressor=c.compressor, error_bound=None if c.error_bound is None else str(c.error_bound))


def choices_from_advice(advice, trace: Trace, ds: DatasetRecord, top: int, *, defaults: bool = False) -> list[Choice]:
    """Current layout + the top-``top`` ranked candidates (+ the libraries' defaults) of the advice for ``ds``."""
    entry = dataset_advice(advice, ds)
    shape = trace.extent(ds.id)
    cur = entry.current
    out = [current_choice(ds, cur.seconds, tuple(cur.seconds_ci) if cur.seconds_ci else None)]
    out += [choice_of(rec, f"#{k}", ds, shape) for k, rec in enumerate(entry.candidates[:top], 1)]
    rec = entry.recommendation  # a near-tie rule (robust at size, the program's own library) may pick another
    if top and entry.verdict == "change" and rec.candidate not in {r.candidate for r in entry.candidates[:top]}:
        out.append(choice_of(rec, "recommended", ds, shape))
    if defaults:
        out += [choice_of(rec, f"{lib} default", ds, shape) for lib, rec in entry.defaults.items()]
    return out


def whatif_choices(advice, trace: Trace, ds: DatasetRecord) -> list[tuple[Trace, Choice]]:
    """The advice's what-if rewrites of ``ds``'s accesses: (the trace with them, the current layout to replay)."""
    from advisor.whatif import rewrites, rewritten_trace

    entry = dataset_advice(advice, ds)
    if not entry.whatifs:
        return []
    layout = Layout.from_dataset(ds)
    found = rewrites(trace.accesses_of(ds.id), layout.chunks, trace.extent(ds.id), ds.itemsize)
    return [(rewritten_trace(trace, ds.id, found[w.kind]),
             replace(current_choice(ds, w.seconds, tuple(w.seconds_ci)), label=f"what-if {w.kind}"))
            for w in entry.whatifs if w.kind in found]


def given_choices(trace: Trace, ds: DatasetRecord, specs: Sequence[str], profile=None) -> list[Choice]:
    """The layouts the user named (``--layout`` specs), predicted by ``iomodel.predict`` (uncalibrated)."""
    from iomodel import load_profile, parse_layout, predict

    out = []
    prof = None
    for k, spec in enumerate(specs, 1):
        lay = parse_layout(spec, ds)
        if spec.strip() == "current":
            continue
        shape = trace.extent(ds.id)
        if lay.shape != tuple(shape):
            lay = replace(lay, shape=tuple(shape))
        prof = prof or (profile if profile is not None and not isinstance(profile, (str, os.PathLike))
                        else load_profile(profile))
        seconds = predict(trace, lay, prof, dataset=ds).seconds
        out.append(Choice(f"layout {k}", lay, seconds))
    return out


# ---- the API ---------------------------------------------------------------------------------------


def verify_choices(trace: Trace, ds: DatasetRecord, choices: Sequence[Choice], workdir: str | os.PathLike, *,
                   repeat: int = 1, budget: float | None = None, deadline: float | None = None,
                   max_bytes: int = MAX_BYTES, seed: int = 0) -> list[VerifyRow]:
    """Measure each choice for one dataset (user data when readable) and pair it with its prediction."""
    shape = trace.extent(ds.id)
    nbytes = int(np.prod(shape, dtype=np.int64)) * ds.itemsize
    if nbytes > max_bytes:
        raise VerifyError(f"dataset {dataset_name(ds)}: {nbytes / 2**30:.1f} GiB is more than verify rebuilds "
                          f"({max_bytes / 2**30:.1f} GiB); pass a larger max_bytes or a smaller trace")
    data, source = load_data(ds, shape, seed)
    runs, parallel = measure_all(choices, trace, ds, data, Path(workdir) / f"ds{ds.id}", repeat=repeat,
                                 check=source == "user", budget=budget, deadline=deadline)
    rows = []
    for choice, r in zip(choices, runs):
        lay = choice.layout
        rows.append(VerifyRow(
            dataset=dataset_name(ds), label=choice.label, library=lay.library, chunks=lay.chunks,
            shards=lay.shards, cache_bytes=lay.rdcc_nbytes if lay.library == "hdf5" and lay.chunks else None,
            compressor=choice.compressor or _filters_name(choice.filters), error_bound=choice.error_bound,
            predicted_seconds=choice.predicted_seconds, measured_seconds=statistics.median(r.times),
            measured_all=tuple(r.times), stored_bytes=r.stored, data=source, max_error=r.error,
            parallel=parallel, timed_out=r.timed_out))
    return rows


def dataset_name(ds: DatasetRecord) -> str:
    """Short name for tables: ``table.h5:/x`` (HDF5), ``table.zarr`` or ``store.zarr/group/a`` (zarr)."""
    base = Path(ds.file).name
    if ds.library == "hdf5":
        return f"{base}:{ds.path}"
    return f"{base}/{ds.path}" if ds.path else base


def _filters_name(filters: Sequence[Filter]) -> str | None:
    names = [f.name for f in filters if f.name not in ("bytes", "sharding_indexed")]
    return "+".join(names) or None


def verify(trace_or_path: Trace | str | os.PathLike, top: int = 3, *, profile=None, dataset: str | None = None,
           workdir: str | os.PathLike | None = None, repeat: int = 1, budget: float | None = None,
           deadline: float | None = None, max_bytes: int = MAX_BYTES,
           advice=None, defaults: bool = False, layouts: Sequence[str] = (), **constraints) -> VerifyResult:
    """Rebuild each traced dataset in its current and top-``top`` recommended layouts and replay it for real.

    ``advice``: an ``advisor.advise`` result to verify (default: advise the trace
    now with ``profile`` and ``constraints``). ``dataset``: only this one (id,
    path or file::path). ``workdir``: where the arrays are built (default a
    temporary directory, removed afterwards). ``repeat``: replays per layout
    (the median is reported); ``budget``: seconds after which a layout's
    replays stop repeating; ``deadline``: seconds after which a replay is
    stopped (its time is then a lower bound). ``defaults``: also measure h5py's and zarr's
    default layouts. ``layouts``: more layouts to measure, as ``ioadvisor predict --layout`` specs
    (``iomodel.parse_layout``), each predicted by ``iomodel.predict``.
    """
    trace = trace_or_path if isinstance(trace_or_path, Trace) else load_trace(trace_or_path)
    if top < 0:
        raise VerifyError(f"top must be >= 0, got {top}")
    if dataset is not None:
        targets = [pick_dataset(trace, dataset)]
    else:
        targets = trace.accessed()
    if not targets:
        raise VerifyError(f"{trace.source or 'trace'}: no accesses recorded, nothing to verify")
    bar = progress.current()
    if advice is None and (top > 0 or defaults):
        from advisor.api import advise

        with progress.task("advise"):  # its own bar: layouts evaluated, not replayed
            advice = advise(trace, profile=profile, dataset=dataset, top=max(top, 1), **constraints)
    if advice is not None:  # scalars, vlen strings, minor datasets: no layouts to rebuild
        advised = {d.name for d in advice.datasets}
        targets = [ds for ds in targets if ds.label in advised]
        if not targets:
            raise VerifyError(advice.nothing_line() if not advice.datasets else
                              f"{trace.source or 'trace'}: the advice covers none of the datasets to verify")
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="ioadvisor-verify-")
        workdir = tmp.name
    try:
        rows = []
        for ds in targets:
            choices = (choices_from_advice(advice, trace, ds, top, defaults=defaults) if advice is not None
                       else [current_choice(ds)])
            bar.describe(f"replaying {dataset_name(ds)}")
            choices += given_choices(trace, ds, layouts, profile)
            rows += verify_choices(trace, ds, choices, workdir, repeat=repeat, budget=budget, deadline=deadline,
                                   max_bytes=max_bytes)
            for rewritten, choice in (whatif_choices(advice, trace, ds) if advice is not None else []):
                rows += verify_choices(rewritten, ds, [choice], workdir, repeat=repeat, budget=budget,
                                       deadline=deadline, max_bytes=max_bytes)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return VerifyResult(trace.source or str(trace_or_path), tuple(rows), str(workdir), repeat)


__all__ = ["Choice", "MAX_BYTES", "ReplayPool", "ReplayTimeout", "VerifyError", "VerifyResult", "VerifyRow",
           "build_choice", "choice_of", "choices_from_advice", "current_choice", "dataset_advice", "dataset_name",
           "given_choices",
           "load_data", "measure_all", "synthetic", "verify", "verify_choices", "whatif_choices"]
