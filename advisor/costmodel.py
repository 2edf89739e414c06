"""Joint cost of one candidate layout of one traced array: the I/O model on the stored bytes plus the codec's
(de)compression time, with its 95% interval (see ``advisor.search`` for the formula and the staged search
that calls it); the traced array's own data (``DataSource``) that the codec costs are estimated on.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields, replace
from typing import Sequence

import numpy as np

from advisor import progress
from advisor.candidates import Candidate, CodecChoice
from advisor.results import Recommendation
from instrumentation import settings
from instrumentation.columns import AccessColumns
from instrumentation.errors import InputError
from instrumentation.opener import open_recorded
from instrumentation.records import AccessRecord, DatasetRecord
from instrumentation.tracefile import Trace
from iomodel.chunks import trace_visits
from iomodel.intrace import TraceCalibration
from iomodel.layout import Layout
from iomodel.profile import SystemProfile
from iomodel.predict import Workload
from iomodel.variables import Variables

SAMPLE_BLOCKS = 20
"""Runs of consecutive accesses per rank in a block sample (``CostModel.blocks``)."""
PROBE_ACCESSES = 4096
"""Accesses walked to weigh each layout's replay when sharing the replays out over threads or ranks."""
ESTIMATE_CHUNK_BYTES = 1 << 20
"""Compression is estimated on chunks of at most this size (larger chunk shapes halved, largest axis first):
ratio and throughput per byte change little above it, and a 64 MiB chunk costs the estimator 5-20 s."""
FULL_READ_BYTES = 512 << 20
"""Arrays up to this size are read into memory once and scanned whole for NaN/Inf/fill (else a 1% sample)."""
SAMPLE_REGION_BYTES = 64 << 20
"""A larger array is sampled for compression from one region of whole stored chunks of at most this size, read
once (issue 30: blocks shaped like a candidate's pencil chunks, cut from map-chunked storage, read 1,460 stored
chunks each, and an advise took minutes: benchmarks/validation/realsize.py, r01)."""
REGION_SAMPLE_CAP = 0.1
"""Share of that region the estimator samples at most (1% of the whole array, up to this)."""

BYTE_VARIABLES = ("s_rdisk", "s_cache", "x_cache", "s_wdisk")
"""Variables proportional to the stored (compressed) bytes (x_cache about so: copy time of the hits)."""


# ---------------------------------------------------------------------------- compression side

@dataclass(frozen=True)
class CodecCost:
    """What a codec does to the cost: ratio (raw/stored) with its 95% interval, throughputs of raw bytes."""

    ratio: float
    ratio_ci: tuple[float, float]
    compress_bps: float | None
    """Raw bytes per second; None when not modelled (a recorded filter we cannot run)."""
    decompress_bps: float | None
    time_band: tuple[float, float] = (1.0, 1.0)
    """95% interval of the codec seconds relative to the estimate."""
    source: str = ""

    @classmethod
    def from_estimate(cls, est) -> "CodecCost":
        band = (1.0, 1.0)
        if est.compress_seconds > 0:
            band = (est.time_ci[0] / est.compress_seconds, est.time_ci[1] / est.compress_seconds)
        return cls(est.ratio, tuple(est.ratio_ci), est.compress_mbps * 1e6, est.decompress_mbps * 1e6,
                   band, f"{est.method} estimate, {100 * est.sample_fraction:g}% sample")


class DataSource:
    """The traced array's own data, opened lazily: safety scan, data range, cached compression estimates."""

    def __init__(self, ds: DatasetRecord, enabled: bool = True):
        self.ds = ds
        self.problem: str | None = None if enabled else "reading the data was switched off"
        self._array = None
        self._handle = None
        self._safety = None
        self._region: np.ndarray | None = None
        self._estimates: dict[tuple, object] = {}
        self.estimate_seconds = 0.0
        self.range_problem: str | None = None
        """Why the whole field's range is unknown (too large to scan); relative bounds are then refused."""
        self.whole_scan = True
        """Scan every value for ``safety`` (a lossy codec's relative bound needs the whole field's range); False: the
        sample's scan serves (lossless codecs keep NaN, Inf and fill values whatever they are): a 1 GB gzip'd array
        is not decompressed whole for it (realsize r02: 18 of advise's 25 s)."""

    @property
    def array(self):
        """h5py Dataset / zarr Array, or None (``problem`` says why)."""
        if self._array is None and self.problem is None:
            try:
                self._array = self._open()
            except InputError as exc:  # the opener's one line names the file and the dataset
                self.problem = f"data not readable ({exc})"
            except Exception as exc:  # any other failure to open means: no data, say why
                self.problem = f"data not readable ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})"
        return self._array

    def _open(self):
        ds = self.ds
        opened = open_recorded(ds)
        self._handle = opened.file  # the HDF5 file (None for zarr), closed by close()
        arr = opened.array
        if np.dtype(arr.dtype) != np.dtype(ds.dtype) or len(arr.shape) != len(ds.shape):
            raise ValueError(f"{ds.key} is now {arr.dtype} {arr.shape}, the trace saw {ds.dtype} {ds.shape}")
        if int(np.prod(arr.shape)) == 0:
            raise ValueError(f"{ds.key} is empty on disk")
        if int(np.prod(arr.shape)) * np.dtype(arr.dtype).itemsize <= FULL_READ_BYTES:
            # read once: the scan needs every value, and the estimator's blocks would otherwise be read
            # through the current (possibly badly chunked) layout again and again
            arr = np.asarray(arr[...])
        return arr

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
            self._array = None
            self._region = None

    @property
    def ds_nbytes(self) -> int:
        return int(np.prod(self.array.shape, dtype=np.int64)) * np.dtype(self.array.dtype).itemsize

    @property
    def region(self) -> np.ndarray:
        """A box of whole stored chunks around the array's centre, at most SAMPLE_REGION_BYTES, read once: what
        a large array's compression is estimated on (the chunk grid doubled round robin over the axes)."""
        if self._region is None:
            arr = self.array
            shape = [int(x) for x in arr.shape]
            stored = getattr(arr, "chunks", None) or self.ds.chunks
            unit = [max(1, min(int(c), n)) for c, n in zip(stored, shape)] if stored else [1] + shape[1:]
            item = np.dtype(arr.dtype).itemsize
            box = list(unit)
            grown = True
            while grown:
                grown = False
                for d in range(len(box)):
                    bigger = min(shape[d], box[d] * 2)
                    if bigger > box[d] and int(np.prod(box)) // box[d] * bigger * item <= SAMPLE_REGION_BYTES:
                        box[d], grown = bigger, True
            start = [((n - b) // 2) // u * u for n, b, u in zip(shape, box, unit)]
            self._region = np.asarray(arr[tuple(slice(a, a + b) for a, b in zip(start, box))])
        return self._region

    @property
    def safety(self):
        """DataSafety of the whole array (``field_safety``, streamed): NaN, Inf, fill, the valid values' range;
        of a 1% sample when the array is too large to scan (``range_problem``)."""
        if self._safety is None and self.array is not None:
            from compression_model.safety import FieldTooLarge, field_safety, scan
            from compression_model.sampling import sample_blocks

            arr = self.array
            fill = self.ds.fillvalue
            fill = float(fill) if isinstance(fill, (int, float)) and fill and math.isfinite(fill) else None

            # fill detection on a sample (it sorts the values), exact counts and range over every value; a large
            # array's sample is cut from its region of whole stored chunks
            src = arr if isinstance(arr, np.ndarray) else self.region
            sample = scan(list(sample_blocks(src, 0.01 if src is arr else REGION_SAMPLE_CAP, rng=0).blocks),
                          fill_value=fill)
            if not self.whole_scan and src is not arr:
                self._safety = sample
                return self._safety
            try:
                self._safety = field_safety(arr, sample.fill_value)
            except FieldTooLarge as exc:
                self._safety = sample
                self.range_problem = f"{exc}: relative error bounds not resolved (give an abs: bound)"
        return self._safety

    def cost(self, codec: CodecChoice, chunks: tuple[int, ...], library: str) -> tuple[CodecCost | None, str | None]:
        """(CodecCost, None), or (None, why the codec cannot be used on this data)."""
        if self.array is None:
            return None, self.problem
        if codec.error_bound is not None and codec.error_bound.mode == "rel" and self.safety and self.range_problem:
            return None, self.range_problem
        chunks = estimate_chunks(chunks, self.array.dtype.itemsize)
        key = (codec.name, codec.error_bound, chunks, library)
        if key not in self._estimates:
            from compression_model.estimate import estimate

            data, fraction = self.array, 0.01
            if not isinstance(data, np.ndarray):  # too large to hold: a region of whole stored chunks, read once
                data = self.region
                fraction = min(REGION_SAMPLE_CAP, 0.01 * self.ds_nbytes / max(data.nbytes, 1))
                chunks = fit_region(chunks, data.shape)
            try:
                est = estimate(data, codec.name, codec.error_bound, chunks, target=library,
                               data_range=self.safety.data_range, safety=self.safety, sample_fraction=fraction)
                self.estimate_seconds += est.cost_seconds
                self._estimates[key] = est
            except Exception as exc:  # a codec that fails on this data is not a candidate; keep the reason
                self._estimates[key] = f"{codec.name}: estimate failed ({type(exc).__name__}: {exc})"[:200]
        est = self._estimates[key]
        if isinstance(est, str):
            return None, est
        if est.problems:
            return None, "; ".join(est.problems)
        return CodecCost.from_estimate(est), None


def fit_region(chunks: Sequence[int], region: Sequence[int]) -> tuple[int, ...]:
    """``chunks`` clipped to the sampled region, the other axes grown (within it) to keep the chunk's element
    count: a pencil (5840, 1, 2) in a 256-step region is sampled as (256, 5, 10), not as 2 KiB blocks (thousands
    of codec calls: benchmarks/validation/realsize.py's r01 spent most of its advise on them)."""
    c = [max(1, min(int(a), int(r))) for a, r in zip(chunks, region)]
    want = int(np.prod([int(x) for x in chunks], dtype=np.int64))
    for d in sorted(range(len(c)), key=lambda d: c[d]):  # the thinnest axes first
        have = int(np.prod(c, dtype=np.int64))
        if have >= want:
            break
        c[d] = min(int(region[d]), c[d] * max(1, -(-want // have)))
    return tuple(c)


def estimate_chunks(chunks: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """The chunk shape compression is estimated on: ``chunks`` halved (largest axis first) to ESTIMATE_CHUNK_BYTES."""
    c = [int(x) for x in chunks]
    while int(np.prod(c)) * itemsize > ESTIMATE_CHUNK_BYTES and max(c) > 1:
        d = int(np.argmax(c))
        c[d] = -(-c[d] // 2)
    return tuple(c)


# ---------------------------------------------------------------------------- I/O side

def scale_bytes(v: Variables, factor: float) -> Variables:
    """Variables with the stored-byte counts (BYTE_VARIABLES) multiplied by ``factor``."""
    return replace(v, **{k: getattr(v, k) * factor for k in BYTE_VARIABLES})


class CostModel:
    """The traced accesses of one array, ready to be replayed against many layouts.

    Equivalent to ``iomodel.predict`` (same ranks, contention and per-rank
    maximum) with the extent and the per-rank split computed once, and the
    counted variables cached per layout. ``accesses`` and ``others`` as
    ``Workload``'s: given the process's other arrays (``iomodel.predict.process_arrays``),
    they share the simulated page cache with this one, as in ``predict``.
    """

    def __init__(self, ds: DatasetRecord, accesses: "AccessColumns | Sequence[AccessRecord]", shape: Sequence[int],
                 profile: SystemProfile, procs: int = 1, warm: bool = False,
                 calibration: dict[str, TraceCalibration] | None = None, jobs: int | None = None, comm=None,
                 others: Sequence[tuple[DatasetRecord, Layout]] = ()):
        self._attach(Workload(ds, accesses, shape, procs, warm, others), profile, calibration, jobs, comm)

    @classmethod
    def of_trace(cls, trace: Trace, ds: DatasetRecord, profile: SystemProfile, procs: int = 1, warm: bool = False,
                 calibration: dict[str, TraceCalibration] | None = None, jobs: int | None = None,
                 comm=None, work: Workload | None = None) -> "CostModel":
        """The model of ``ds`` in ``trace`` as ``iomodel.predict`` reads it (``Workload.of_trace``: the
        process's other arrays sharing the page cache, a reopened array's records as one), so that the
        search and ``predict`` price every layout alike. ``work``: that Workload, already built (and
        replayed) by the caller."""
        model = cls.__new__(cls)
        model._attach(work if work is not None else Workload.of_trace(trace, ds, procs, warm), profile, calibration,
                      jobs, comm)
        return model

    def _attach(self, work: Workload, profile: SystemProfile, calibration, jobs, comm) -> None:
        self.work = work
        self.calibration = calibration
        """In-trace calibration per library applied to the I/O terms (None: the profile's predictions as they are)."""
        self.jobs = default_jobs() if jobs is None else jobs
        self.comm = comm
        self.ds, self.shape, self.profile, self.warm = work.dataset, work.shape, profile, work.warm
        self.procs = work.procs
        self.maxshape = self.ds.maxshape if self.ds.library == "hdf5" else None
        self.n_replays = 0
        self.notes: list[str] = []
        self._vars: dict[Layout, list[Variables]] = {}
        cols = self.work.columns
        self.writes = cols.take(cols.write)
        self.read_bytes = cols.total_bytes(~cols.write)
        self.n_accesses = cols.n_access
        self.recorded_path = storage_path(Layout.from_dataset(self.ds))
        """The code path of the recorded layout's calls, which the trace's timings are of."""

    def subsample(self, n: int) -> "CostModel":
        """The same model on every k-th access of each rank (order kept) so that at most about ``n`` remain:
        for screening."""
        k = -(-self.n_accesses // n)
        accs = AccessColumns.concat([acc.every(k) for acc in self.work.by_rank])
        return CostModel(self.ds, accs, self.shape, self.profile, procs=self.procs, warm=self.warm,
                         calibration=self.calibration, jobs=1)

    def blocks(self, n: int, count: int = SAMPLE_BLOCKS) -> "CostModel":
        """The same model on ``count`` evenly spaced runs of consecutive accesses of each rank, about ``n``
        accesses in all: the caches see real reuse within each block (every k-th access would destroy it)."""
        parts = []
        for acc in self.work.by_rank:
            total = acc.n_access
            length = max(1, n // (count * len(self.work.by_rank)))
            starts = np.linspace(0, max(total - length, 0), count).astype(np.int64)
            parts += [acc.window(int(a), int(a) + length) for a in np.unique(starts)]
        return CostModel(self.ds, AccessColumns.concat(parts), self.shape, self.profile, procs=self.procs,
                         warm=self.warm, calibration=self.calibration, jobs=self.jobs, comm=self.comm)

    def layout(self, cand: Candidate, ratio: float = 1.0) -> Layout:
        return cand.layout(self.shape, self.ds.itemsize, maxshape=self.maxshape, ratio=ratio)

    def variables(self, layout: Layout) -> list[Variables]:
        """Counted variables per rank (cached)."""
        if layout not in self._vars:
            self.prefetch([layout])
        return self._vars[layout]

    def prefetch(self, layouts: Sequence[Layout]) -> None:
        """Count the variables of these layouts at once: spread over ``comm``'s ranks when it has several
        (each rank takes a share, every rank gets all), else over ``jobs`` threads (the compiled replay
        releases the GIL). Layouts sharing a chunk walk stay together."""
        todo = list(dict.fromkeys(lay for lay in layouts if lay not in self._vars))
        if not todo:
            return
        size = self.comm.Get_size() if self.comm is not None else 1
        if size > 1:
            shares = split_layouts(todo, size, size, self._visits_per_access)
            mine = self._count(shares[self.comm.Get_rank()], 1)
            for got in self.comm.allgather(mine):
                self._vars.update(got)
        else:
            self._vars.update(self._count(todo, self.jobs))
        self.n_replays += len(todo)
        progress.current().advance(len(todo))

    def _visits_per_access(self, layout: Layout) -> float:
        """Chunk visits per access of ``layout`` on the first PROBE_ACCESSES accesses: what one walk and one
        replay of it cost relative to others (zarr's default chunks of a row read: 8 visits, a row chunk's: 1)."""
        probe = self.work.by_rank[0].window(0, PROBE_ACCESSES)
        return max(len(trace_visits(probe, layout)), 1) / max(probe.n_access, 1)

    def _count(self, layouts: list[Layout], jobs: int) -> dict:
        pcb = self.profile.page_cache_bytes
        kw = self.profile.replay_options
        tasks = split_layouts(layouts, jobs, len(layouts), self._visits_per_access)
        tasks = [t for t in tasks if t]
        if len(tasks) <= 1:
            return dict(zip(layouts, self.work.variables_many(layouts, pcb, **kw)))
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(tasks), thread_name_prefix="ioadvisor-eval") as ex:
            results = list(ex.map(lambda t: self.work.variables_many(t, pcb, **kw), tasks))
        return {lay: v for t, r in zip(tasks, results) for lay, v in zip(t, r)}

    def io_terms(self, v: Variables, library: str, codec: CodecCost | None = None) -> dict[str, float]:
        """The I/O model's terms; its own codec term is left out when the compression model prices the codec."""
        terms = self.work.terms(v, library, self.profile)
        if codec is not None and codec.compress_bps:
            terms["t_codec"] = 0.0
        cal = self.calibration.get(library) if self.calibration else None
        return terms if cal is None else cal.scale(terms, self.within(v, library))

    def within(self, v: Variables, library: str) -> dict[str, float]:
        """Term -> multiplier of its calibrated factor for ``v``'s own mix of the term's variables
        (``TraceCalibration.within_terms``; empty when the calibration split no term)."""
        cal = self.calibration.get(library) if self.calibration else None
        if cal is None or not cal.split:
            return {}
        return cal.within_terms(v.as_features(), lambda name: self.profile.coefficient(library, name))

    def band(self, layout: Layout, terms: dict[str, float], within: dict | None = None) -> tuple[float, float]:
        """95% band of the I/O seconds made of ``terms`` (calibrated): what the in-trace calibration left
        unexplained, widened by the uncertainty of each term's factor (``TraceCalibration.interval``; all of
        a layout's own terms when its calls take another code path than the recorded layout's) when it covers
        the library, else the profile's own measured band."""
        cal = self.calibration.get(layout.library) if self.calibration else None
        if cal is not None and cal.covers:
            return cal.interval(terms, storage_path(layout) == self.recorded_path, within)
        return self.profile.band(layout.library)

    def stored_bytes(self, layout: Layout, ratio: float) -> int:
        """Bytes on disk when every chunk is written: full-size chunks / ratio (+ zarr shard indexes)."""
        if layout.chunks is None:
            return int(np.prod(layout.shape, dtype=np.int64)) * layout.itemsize
        total = layout.nchunks * layout.chunk_nbytes / ratio
        cps = layout.chunks_per_shard
        if cps is not None:
            n_inner = int(np.prod(cps))
            total += -(-layout.nchunks // n_inner) * (16 * n_inner + 4)
        return int(math.ceil(total))

    def facts(self, layout: Layout, v: Variables) -> dict:
        """Geometry the explanation quotes: chunk size, chunks per access, read amplification, partial writes."""
        out = {
            "chunk_bytes": layout.chunk_nbytes,
            "cache_bytes": layout.rdcc_nbytes if layout.library == "hdf5" and layout.chunks is not None else None,
            "chunks_per_access": v.n_chunks / max(v.n_calls, 1),
            "files_per_access": v.n_zopen / max(v.n_calls, 1),
            "read_amplification": (v.s_rdisk + v.s_cache) / self.read_bytes if self.read_bytes else 0.0,
            "nchunks": layout.nchunks,
        }
        if self.writes.rows:
            vis = trace_visits(self.writes, layout)
            out["partial_writes"] = float(np.mean(~vis.full)) if len(vis) else 0.0
        return out

    def evaluate(self, cand: Candidate, codec: CodecCost | None = None, *, exact: bool = True,
                 with_facts: bool = False, notes: Sequence[str] = ()) -> Recommendation:
        """Joint cost of one candidate (see the module docstring)."""
        ratio = codec.ratio if codec is not None else 1.0
        ratio_ci = codec.ratio_ci if codec is not None else (1.0, 1.0)
        layout = self.layout(cand, 1.0 / ratio)
        if exact or cand.compressor is None:
            base, scale = self.variables(layout), 1.0
        else:
            base, scale = self.variables(self.layout(cand, 1.0)), 1.0 / ratio
        per_rank = []
        for v0 in base:
            v = scale_bytes(v0, scale) if scale != 1.0 else v0
            terms = self.io_terms(v, cand.library, codec)
            t_c = t_d = 0.0
            priced = codec is not None and bool(codec.compress_bps)
            if priced:
                t_c = v.s_encode / codec.compress_bps
                t_d = v.s_decode / codec.decompress_bps
            raw_codec = t_c + t_d
            cal = self.calibration.get(cand.library) if self.calibration else None
            if cal is not None:
                t_c, t_d = t_c * cal.factors.get("t_compress", 1.0), t_d * cal.factors.get("t_decompress", 1.0)
            terms = {**terms, "t_compress": t_c, "t_decompress": t_d}
            io = sum(t for k, t in terms.items() if k not in ("t_compress", "t_decompress"))
            lo = hi = io
            if codec is not None:  # stored bytes at the ratio's interval ends
                lo = sum(self.io_terms(scale_bytes(v, ratio / ratio_ci[1]), cand.library, codec).values())
                hi = sum(self.io_terms(scale_bytes(v, ratio / ratio_ci[0]), cand.library, codec).values())
            band = codec.time_band if codec is not None else (1.0, 1.0)
            io_lo, io_hi = self.band(layout, {k: t for k, t in terms.items()
                                                    if k not in ("t_compress", "t_decompress")},
                                     self.within(v, cand.library))
            ci = (lo * io_lo + (t_c + t_d) * band[0], hi * io_hi + (t_c + t_d) * band[1])
            model = sum(t for k, t in self.work.terms(v, cand.library, self.profile).items()
                        if k != "t_codec" or not priced) + raw_codec
            per_rank.append((io + t_c + t_d, ci, terms, v, model))
        seconds, ci, terms, v, model = max(per_rank, key=lambda x: x[0])
        ci = (min(ci[0], seconds), max(ci[1], seconds))
        all_notes = tuple(notes)
        if codec is not None and not codec.compress_bps:
            all_notes += ("(de)compression time of this filter not modelled",)
        return Recommendation(
            candidate=cand, seconds=float(seconds), seconds_ci=(float(ci[0]), float(ci[1])),
            terms={k: float(t) for k, t in terms.items()},
            stored_bytes=self.stored_bytes(layout, ratio), ratio=float(ratio),
            ratio_ci=(float(ratio_ci[0]), float(ratio_ci[1])),
            variables=v.as_features(), facts=self.facts(layout, v) if with_facts else {},
            exact=exact or cand.compressor is None, notes=all_notes, model_seconds=float(model),
        )


def default_jobs() -> int:
    """Workers for candidate evaluation: ``IOADVISOR_JOBS``, else the cores this process may use."""
    env = settings.jobs()
    if env is not None:
        return env
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1


def split_layouts(layouts: list[Layout], parts: int, max_parts: int, visits) -> list[list[Layout]]:
    """``layouts`` in ``parts`` shares (deterministic: every MPI rank computes the same split).

    Layouts that share a chunk walk (``visits_key``) go together; when there are fewer such groups than
    shares, the largest groups are halved (their walk is then done twice, their replays in parallel).
    ``visits``: a layout's chunk visits per access; a group costs one walk and one replay per layout of them,
    and the costliest groups go first, each to the least loaded share (layouts of one replay key, ``replay_key``,
    replay once)."""
    from iomodel.chunks import visits_key
    from iomodel.variables import replay_key

    groups: dict[tuple, list[Layout]] = {}
    for lay in layouts:
        groups.setdefault(visits_key(lay), []).append(lay)
    tasks = list(groups.values())
    while len(tasks) < min(parts, max_parts) and max(map(len, tasks)) > 1:
        big = max(range(len(tasks)), key=lambda i: len(tasks[i]))
        g = tasks.pop(big)
        tasks += [g[: len(g) // 2], g[len(g) // 2:]]
    shares: list[list[Layout]] = [[] for _ in range(parts)]
    load = [0.0] * parts
    per_visit = {visits_key(t[0]): visits(t[0]) for t in tasks}
    cost = [per_visit[visits_key(t[0])] * (1 + len(set(map(replay_key, t)))) for t in tasks]
    for i in sorted(range(len(tasks)), key=lambda i: -cost[i]):  # stable: equal costs keep their order
        j = min(range(parts), key=lambda j: load[j])
        shares[j].extend(tasks[i])
        load[j] += cost[i]
    return shares


def storage_path(layout: Layout) -> tuple[str, str]:
    """The library's code path a layout's calls take: HDF5 reads a contiguous dataset through its sieve buffer,
    an unfiltered chunk larger than its chunk cache (no cache at all included) piecewise, one request per
    selected run straight from the file, other chunks whole through the chunk cache (field notes: 28x apart
    for aligned boxes); a trace of one path never timed the others' calls."""
    if layout.library != "hdf5":
        return layout.library, "chunks"
    if layout.chunks is None:
        return "hdf5", "contiguous"
    fits = layout.rdcc_nslots > 0 and layout.chunk_nbytes <= layout.rdcc_nbytes
    return "hdf5", "chunk cache" if layout.filtered or fits else "piecewise"



def with_facts(model: CostModel, r: Recommendation) -> Recommendation:
    """``r`` with the geometry facts the explanation quotes (``CostModel.facts``), computed once for it."""
    if r.facts:
        return r
    layout = model.layout(r.candidate, 1.0 / r.ratio)
    v = Variables(**{f.name: float(r.variables.get(f.name, 0.0)) for f in fields(Variables)})
    return replace(r, facts=model.facts(layout, v))


__all__ = ["BYTE_VARIABLES", "CodecCost", "CostModel", "DataSource", "default_jobs", "estimate_chunks", "fit_region",
           "scale_bytes", "split_layouts", "storage_path", "with_facts"]
