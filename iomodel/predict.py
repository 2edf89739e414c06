"""``predict``: a trace (or accesses) + a layout + a system profile -> Prediction."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from instrumentation.columns import AccessColumns, as_columns
from instrumentation.records import AccessRecord, DatasetRecord
from instrumentation.tracefile import Trace, extent

from .cost import term_seconds
from .chunks import trace_visits, visits_key
from .layout import Layout, LayoutError
from .parallel import contention_factor, mpio_uncached, parallel_terms
from .prediction import Prediction
from .profile import PageCacheCurve, SystemProfile
from .variables import WINDOW_ACCESSES, Replay, Variables, count_variables, replay_key
from instrumentation.errors import InputError


def pick_dataset(trace: Trace, dataset: int | str | None = None) -> DatasetRecord:
    """The dataset to model: by id, key ('file::path') or path; default the most accessed array (a scalar or
    an empty one has nothing to chunk: such are picked only by name)."""
    if not trace.datasets:
        raise InputError(f"{trace.source or 'trace'}: no datasets recorded")
    if dataset is None:
        cols = trace.columns
        if not cols.rows:
            raise InputError(f"{trace.source or 'trace'}: no accesses recorded")
        counts = np.bincount(cols.ds, weights=cols.rep)
        order = np.argsort(-counts, kind="stable")  # most accessed first; ties: the lowest id
        arrays = [int(i) for i in order if counts[i] and (shape := trace.extent(int(i))) and math.prod(shape)]
        if not arrays:
            raise InputError(f"{trace.source or 'trace'}: only scalar or empty datasets accessed: nothing to chunk")
        return trace.datasets[arrays[0]]
    if isinstance(dataset, int) or (isinstance(dataset, str) and dataset.isdigit()):
        if int(dataset) in trace.datasets:
            return trace.datasets[int(dataset)]
    for d in trace.datasets.values():
        if dataset in (d.key, d.path, d.path.lstrip("/")):
            return d
    names = ", ".join(sorted(d.path for d in trace.datasets.values()))
    raise InputError(f"{trace.source or 'trace'}: no dataset {dataset!r} (recorded: {names})")


def process_arrays(trace: Trace, dataset: DatasetRecord) -> tuple[AccessColumns, tuple[tuple[DatasetRecord, Layout], ...]]:
    """What shares the page cache with ``dataset`` in the traced process: the trace's accesses in order, those
    of every record of the same array (``Trace.same_array``: opened again, by another library) renumbered as
    ``dataset``,
    and the other arrays with their stored layouts (``count_variables(others=...)``). Arrays the model
    cannot lay out (scalars, empty) are left out."""
    same = trace.same_array(dataset.id)
    cols = trace.columns
    if len(same) > 1:
        ds_col = np.where(np.isin(cols.ds, same), dataset.id, cols.ds)
        cols = AccessColumns(**{**{n: getattr(cols, n) for n in cols.__dataclass_fields__}, "ds": ds_col})
    if len(trace.datasets) == 1:  # one array: nothing to share with (and no pass over a 10M-row trace)
        return cols, ()
    others = []
    grown: dict[int, list] = {}
    for r in trace.resizes:
        grown.setdefault(r.dataset, []).extend(r.extents)
    for i in np.unique(cols.ds).tolist():
        d = trace.datasets.get(i)
        if d is None or i in same:
            continue
        # recorded shape and resizes: the others' layouts only bound what they can hold in the page cache
        extents = [e for e in grown.get(i, ()) if len(e) == len(d.shape)]  # a bad record's other ranks: left out
        shape = tuple(np.max([d.shape, *extents], axis=0).tolist()) if d.shape else ()
        if not shape or not math.prod(shape):
            continue
        try:  # a record the model cannot lay out is left out: it never stops this array's prediction
            others.append((d, Layout.from_dataset(d).with_shape(tuple(shape))))
        except (LayoutError, ValueError):
            continue
    return cols, tuple(others)


def stored_bytes_bound(layout: Layout) -> int:
    """Bytes the simulated page cache can hold for one array at most: its chunks (and shards) whole, twice
    (a sharded array is cached as whole shards and as byte-ranged inner chunks)."""
    return 2 * layout.nchunks * (layout.stored_chunk_nbytes + layout.sieve_bytes)


class Workload:
    """The traced accesses of one array, split per rank, ready to replay against many layouts.

    Ranks are taken as recorded. ``procs`` > the recorded ranks models each
    recorded rank's pattern running on procs processes on their own data (weak
    scaling): contention from procs, variables from the recorded ranks.
    ``warm``: the array starts in the page cache (see ``count_variables``).
    ``others``: the process's other arrays (``process_arrays``), whose accesses among ``accesses`` share the
    page cache; replayed along (one process, one rank) when together they could overflow it.
    ``resized``: the shapes the array was resized to (the extent when ``shape`` is not given).
    ``Workload.of_trace`` reads all of these from a trace.
    """

    def __init__(self, dataset: DatasetRecord, accesses: "AccessColumns | Sequence[AccessRecord]",
                 shape: Sequence[int] | None = None, procs: int = 1, warm: bool = False,
                 others: Sequence[tuple[DatasetRecord, Layout]] = (), resized: Sequence[Sequence[int]] = ()):
        if procs < 1:
            raise InputError(f"procs must be >= 1, got {procs}")
        self.dataset, self.warm = dataset, warm
        cols = as_columns(accesses)
        self.others = tuple(others)
        self.process_columns = cols
        self.columns = cols if not (cols.ds != dataset.id).any() else cols.of_dataset(dataset.id)
        self.shape = tuple(shape) if shape is not None else extent(dataset, self.columns, resized)
        ranks = _ranks(self.columns.rank) or [0]
        self.by_rank = ([self.columns] if len(ranks) == 1
                        else [self.columns.take(self.columns.rank == r) for r in ranks])
        self.procs = max(procs, len(ranks))
        self._procs = procs
        self._replayed: dict[tuple, list[Variables]] = {}
        """Per-rank variables of the whole replays ``predict_prefixes`` did, by layout and replay settings:
        ``variables`` takes them from here (the in-trace calibration and the advisor's search both replay the
        recorded layout)."""

    @classmethod
    def of_trace(cls, trace: Trace, dataset: DatasetRecord, procs: int = 1, warm: bool = False) -> "Workload":
        """``dataset``'s accesses in ``trace`` with what shares its page cache (``process_arrays``) and its
        extent: the one way ``predict`` and the advisor's search (``CostModel.of_trace``) read a trace, so that
        both price a layout alike."""
        accesses, others = process_arrays(trace, dataset)
        return cls(dataset, accesses, trace.extent(dataset.id), procs, warm, others)  # the trace's, computed once

    @property
    def accesses(self) -> list[AccessRecord]:
        """One AccessRecord per access (made on demand: the models read ``columns``)."""
        return self.columns.records()

    def variables(self, layout: Layout, page_cache_bytes: int, *, cache_curve: PageCacheCurve | None = None,
                  zarr_overlap: float = 1.0, readahead: int = 0, device_request: int = 0,
                  llc: int = 0) -> list[Variables]:
        """Counted variables of each recorded rank."""
        return self.variables_many([layout], page_cache_bytes, cache_curve=cache_curve, zarr_overlap=zarr_overlap,
                                   readahead=readahead, device_request=device_request, llc=llc)[0]

    def variables_many(self, layouts: Sequence[Layout], page_cache_bytes: int, *,
                       cache_curve: PageCacheCurve | None = None, zarr_overlap: float = 1.0,
                       readahead: int = 0, device_request: int = 0, llc: int = 0) -> list[list[Variables]]:
        """``variables`` of several layouts; layouts that differ only in cache or shards share one chunk walk."""
        layouts = [lay if lay.shape == self.shape else lay.with_shape(self.shape) for lay in layouts]
        out: list = [None] * len(layouts)
        groups: dict[tuple, list[int]] = {}
        # the others' pages can evict this array's only when all of them do not fit the page cache together
        rest = sum(stored_bytes_bound(o) for _, o in self.others) if self.procs == 1 else 0
        settings = _settings(page_cache_bytes, cache_curve=cache_curve, zarr_overlap=zarr_overlap, readahead=readahead,
                             device_request=device_request, llc=llc)
        for i, lay in enumerate(layouts):
            if (lay, settings) in self._replayed:
                out[i] = self._replayed[lay, settings]
            elif rest and stored_bytes_bound(lay) + rest > page_cache_bytes:
                out[i] = [count_variables(self.process_columns, self.dataset, lay, page_cache_bytes, warm=self.warm,
                                          cache_curve=cache_curve, zarr_overlap=zarr_overlap, readahead=readahead,
                                          device_request=device_request, llc=llc, others=self.others)]
            else:
                groups.setdefault(visits_key(lay), []).append(i)
        for idx in groups.values():
            per_rank = []
            bypass = [mpio_uncached(layouts[i].library, self.procs, self.columns, self.dataset) for i in idx]
            keys = [replay_key(layouts[i], p) for i, p in zip(idx, bypass)]
            for acc in self.by_rank:
                replays = {}  # one per replay key: layouts whose variables are bound to be equal replay once
                for i, key, p in zip(idx, keys, bypass):
                    if key not in replays:
                        replays[key] = Replay(self.dataset, layouts[i], page_cache_bytes, warm=self.warm,
                                              cache_curve=cache_curve, zarr_overlap=zarr_overlap, readahead=readahead,
                                              device_request=device_request, llc=llc, parallel=p)
                for window, vis in _walked(acc.windows(WINDOW_ACCESSES), layouts[idx[0]]):  # shared by the group
                    for r in replays.values():
                        r.feed(window, vis)
                results = {key: r.result() for key, r in replays.items()}
                per_rank.append([results[key] for key in keys])
            for k, i in enumerate(idx):
                out[i] = [rank[k] for rank in per_rank]
        return out

    def terms(self, v: Variables, library: str, profile: SystemProfile, servers: int | None = None) -> dict[str, float]:
        """One rank's seconds per term among ``procs`` processes (formulas 1-10)."""
        terms = term_seconds(v, library, profile)
        if self.procs > 1:
            c = servers if servers is not None else profile.servers(library)
            terms = parallel_terms(terms, library, self.procs, c)
        return terms

    def predict(self, layout: Layout, profile: SystemProfile, servers: int | None = None) -> Prediction:
        """The job takes as long as its slowest rank."""
        if layout.shape != self.shape:
            layout = layout.with_shape(self.shape)
        return self._prediction(layout, profile, servers, self.variables(layout, profile.page_cache_bytes,
                                                                          **profile.replay_options))

    def _prediction(self, layout: Layout, profile: SystemProfile, servers: int | None,
                    variables: Sequence[Variables]) -> Prediction:
        per_rank = []
        for v in variables:
            terms = self.terms(v, layout.library, profile, servers)
            per_rank.append((sum(terms.values()), terms, v))
        seconds, terms, v = max(per_rank, key=lambda x: x[0])
        c = servers if servers is not None else profile.servers(layout.library)
        cf = contention_factor(self.procs, c)
        return Prediction(layout, seconds, terms, v, self.procs, cf, tuple(x[0] for x in per_rank))

    def predict_prefixes(self, layout: Layout, profile: SystemProfile, ends: Sequence[int],
                         servers: int | None = None) -> list[Prediction]:
        """``predict`` of the first ``end`` accesses (in this workload's order) for each of ``ends`` (increasing):
        what ``Workload(dataset, columns.window(0, end), shape, procs).predict(...)`` gives, from one replay per
        rank that goes on where the previous prefix stopped."""
        if self.others:
            raise ValueError("predict_prefixes replays one array alone (no others sharing its page cache)")
        if layout.shape != self.shape:
            layout = layout.with_shape(self.shape)
        cols = self.columns

        def works():  # made one at a time: a window that cuts a run copies its rows' repeat counts
            return (Workload(self.dataset, cols.window(0, end), self.shape, self._procs, self.warm) for end in ends)

        parallel = {mpio_uncached(layout.library, w.procs, w.columns, self.dataset) for w in works()}
        if len(parallel) > 1:  # the cache bypass changes along the trace: replay each prefix
            return [w.predict(layout, profile, servers) for w in works()]
        bypass = parallel.pop()
        ranks = _ranks(cols.rank)
        replays = {r: Replay(self.dataset, layout, profile.page_cache_bytes, parallel=bypass, warm=self.warm,
                             **profile.replay_options) for r in ranks}
        out, done = [], 0
        for end, work in zip(ends, works()):
            piece = cols.window(done, end)
            for r in ranks:
                mine = piece if len(ranks) == 1 else piece.take(piece.rank == r)
                for window, vis in _walked(mine.windows(WINDOW_ACCESSES), layout):
                    replays[r].feed(window, vis)
            done = end
            present = _ranks(work.columns.rank) or [0]
            whole = done >= cols.n_access
            variables = [replays[r].result() if whole else replays[r].snapshot() for r in present]
            if whole:
                self._replayed[layout, _settings(profile.page_cache_bytes, **profile.replay_options)] = variables
            out.append(work._prediction(layout, profile, servers, variables))
        return out


def _settings(page_cache_bytes: int, *, cache_curve, zarr_overlap, readahead, device_request, llc=0) -> tuple:
    """What a replay's variables depend on besides the accesses and the layout."""
    return page_cache_bytes, cache_curve, zarr_overlap, readahead, device_request, llc


def _ranks(rank: np.ndarray) -> list[int]:
    """The distinct ranks, ascending (one rank: two passes, not ``np.unique``'s hashing of every row)."""
    if len(rank) and rank.min() == rank.max():
        return [int(rank[0])]
    return np.unique(rank).tolist()


def _walked(windows, layout: Layout):
    """(window, its ``trace_visits``) in order; the next window is walked on another thread while the caller
    replays this one (both compiled, without the GIL): a long replay's walk is off its critical path when a core
    is free. One window ahead at most, so that chunk-visit memory stays bounded by two windows."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="ioadvisor-walk") as ex:
        it = iter(windows)
        window = next(it, None)
        ahead = None if window is None else ex.submit(trace_visits, window, layout)
        while ahead is not None:
            vis, current = ahead.result(), window
            window = next(it, None)
            ahead = None if window is None else ex.submit(trace_visits, window, layout)
            yield current, vis


def predict(
    trace_or_accesses: Trace | Sequence[AccessRecord],
    layout: Layout,
    profile: SystemProfile,
    procs: int = 1,
    servers: int | None = None,
    dataset: DatasetRecord | int | str | None = None,
    warm: bool = False,
) -> Prediction:
    """Predicted time of the traced accesses of one array stored as ``layout`` (see ``Workload``).

    ``servers`` overrides the profile's c.
    """
    if isinstance(trace_or_accesses, Trace):
        ds = dataset if isinstance(dataset, DatasetRecord) else pick_dataset(trace_or_accesses, dataset)
        work = Workload.of_trace(trace_or_accesses, ds, procs, warm)
    else:
        if not isinstance(dataset, DatasetRecord):
            raise ValueError("predict(accesses, ...) needs dataset= the DatasetRecord they refer to")
        work = Workload(dataset, as_columns(trace_or_accesses).of_dataset(dataset.id), None, procs, warm)
    return work.predict(layout, profile, servers)
