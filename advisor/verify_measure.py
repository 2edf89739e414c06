"""How ``advisor.verify`` measures one dataset's layouts: every layout replayed ``repeat`` times round robin,
ranks at once when they only read, checked against the data when it is the user's (``measure_all``)."""
from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from advisor import progress
from advisor.verify_data import build_choice, layout_spec
from advisor.verify_pool import ReplayPool, ReplayTimeout
from advisor.verify_results import Choice, VerifyError, dataset_name
from instrumentation.opener import open_array
from instrumentation.opens import close_times
from instrumentation.records import READ, AccessRecord, DatasetRecord, ResizeRecord
from instrumentation.tracefile import Trace
from iomodel.replay import (DATASET_NAME, LayoutSpec, Reopen, ReplayError, data_path, evict, index_of, replay,
                            stored_bytes)


def replay_events(trace: Trace, ds: DatasetRecord, unit: tuple[int, int] | None = None) -> list:
    """The dataset's accesses and resizes in time order (one traced process's, ``unit`` = (rank, process), or
    every process's), a ``Reopen`` where the process had closed the dataset or its file since its previous access
    (the trace's open and close records: the chunk cache starts empty again, as the model's does). The accesses and resizes of a folded run carry interpolated start times, which can put an
    access just before the resize that made room for it: an access beyond the array's shape comes after the
    resizes that precede it."""
    accesses = sorted((a for a in trace.accesses if a.dataset == ds.id
                       and (unit is None or (a.rank, a.process) == unit)), key=lambda e: e.t_start)
    resizes = sorted((one for r in trace.resizes if r.dataset == ds.id and (unit is None or r.rank == unit[0])
                      for one in r.expanded()), key=lambda e: e.t_start)
    closes = close_times(trace.opens, {ds.id: ds})
    spans: dict[tuple[int, int], int] = {}  # (rank, process) -> the open span of its last access
    shape, ev, i = tuple(ds.shape), [], 0
    for a in accesses:
        while i < len(resizes) and (resizes[i].t_start <= a.t_start
                                    or any(h > s for h, s in zip(a.selection.bounds()[1], shape))):
            shape = tuple(resizes[i].shape)
            ev.append(resizes[i])
            i += 1
        times = closes.get((a.rank, a.process, ds.id))
        if times is not None:  # the process closed the dataset (or its file) since its last access: reopened
            span = int(np.searchsorted(times, a.t_start, side="right"))
            if span > spans.setdefault((a.rank, a.process), span):
                ev.append(Reopen())
            spans[(a.rank, a.process)] = span
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
        if not isinstance(e, AccessRecord):  # resizes, reopens
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
    with open_array(data_path(spec, workdir), DATASET_NAME if spec.library == "hdf5" else "", spec.library) as built:
        stored = built.array[...]
    expected = data[tuple(slice(0, s) for s in stored.shape)]
    mask = _written_mask(events, data.shape, created)
    if mask is not None:
        expected = np.where(mask[tuple(slice(0, s) for s in stored.shape)], expected, 0)
    return _error(stored, expected)


def process_groups(accesses: Sequence[AccessRecord]) -> list[list[tuple[int, int]]]:
    """The traced processes, (rank, process), grouped as they ran: the groups one after another, the processes of
    a group at the same time. Within a rank, processes whose spans of accesses (first start to last end, on the
    rank's clock) overlap, directly or through another, form a group (a DataLoader's workers; the main process
    that read before forking them is a group of its own). MPI ranks run at once: a rank's k-th group runs with
    every other rank's k-th (ranks' clocks are not compared)."""
    spans: dict[tuple[int, int], list[float]] = {}
    for a in accesses:
        span = spans.setdefault((a.rank, a.process), [a.t_start, a.t_start + a.duration])
        span[0], span[1] = min(span[0], a.t_start), max(span[1], a.t_start + a.duration)
    out: list[list[tuple[int, int]]] = []
    for rank in sorted({u[0] for u in spans}):
        k, end = -1, None
        for unit in sorted((u for u in spans if u[0] == rank), key=lambda u: spans[u][0]):
            if end is None or spans[unit][0] >= end:  # starts after every process so far has ended
                k, end = k + 1, spans[unit][1]
                if k == len(out):
                    out.append([])
            else:
                end = max(end, spans[unit][1])
            out[k].append(unit)
    return out


def overlapped_seconds(units: Sequence[tuple[int, int]], events: Sequence[list], calls: Sequence[np.ndarray]) -> float:
    """The seconds of a group of processes replayed at once, as the trace's time counts them
    (``iomodel.intrace.traced_seconds``): per rank, the time inside at least one call of its processes; the slowest
    rank's. A replay runs its calls back to back, while the program's processes spent time of their own between
    calls (a DataLoader worker's sample loop and collation), so two workers' calls overlapped only partly: each
    process's replayed calls are laid on its traced timeline, starting at its traced offset within its rank's
    group and separated by its traced gaps (the time between one call's end and the next call's start), and the
    union of those intervals is taken. One process per rank: the sum of its calls.

    ``units``: (rank, process) of each replayed process; ``events``: its traced events (time order); ``calls``:
    the replayed seconds of each of its accesses."""
    by_rank: dict[int, list] = {}
    for unit, ev, d in zip(units, events, calls):
        by_rank.setdefault(unit[0], []).append(([e for e in ev if isinstance(e, AccessRecord)], d))
    best = 0.0
    for procs in by_rank.values():
        if len(procs) == 1:
            best = max(best, float(procs[0][1].sum()))
            continue
        origin = min(acc[0].t_start for acc, _ in procs if acc)
        begins, ends = [], []
        for acc, d in procs:
            if not acc:
                continue
            t0 = np.array([a.t_start for a in acc])
            dt = np.array([a.duration for a in acc])
            gaps = np.clip(t0[1:] - (t0[:-1] + dt[:-1]), 0.0, None)
            begin = (t0[0] - origin) + np.concatenate([[0.0], np.cumsum(d[:-1] + gaps)])
            begins.append(begin)
            ends.append(begin + d)
        b, e = np.concatenate(begins), np.concatenate(ends)
        order = np.argsort(b, kind="stable")
        b, e = b[order], e[order]
        before = np.maximum.accumulate(np.concatenate([[-np.inf], e[:-1]]))  # latest end of the earlier calls
        best = max(best, float(np.clip(e - np.maximum(b, before), 0.0, None).sum()))
    return best


@dataclass
class LayoutRuns:
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
                deadline: float | None = None) -> tuple[list[LayoutRuns], tuple[int, ...]]:
    """Replay every choice ``repeat`` times, round robin (repeat i of every layout before repeat i+1, so a
    burst of load on the shared machine hits all layouts alike; each round after the first in a new order, so
    no layout always follows the same one); identical layouts are measured once.

    A layout stops repeating once its replays took ``budget`` seconds; a replay
    still running after ``deadline`` seconds is stopped and counts as
    ``deadline`` (a lower bound, ``timed_out``).

    A trace that only reads is replayed in new processes every time, as each run of the program starts (one for a
    single traced process). A trace of several processes (MPI ranks, followed workers) that only read replays each
    process in its own process (its own chunk cache and open file, the layout's cache settings), those that ran at
    the same time together (``process_groups``): the time is the sum over the groups of each group's time inside the
    calls as they overlapped (``overlapped_seconds``). Returns the runs per
    choice and the sizes of those groups (() when replayed as one process, in time order: one traced process,
    or writes, which serial h5py cannot share between processes, replayed in this one).
    """
    events = replay_events(trace, ds)
    accesses = [e for e in events if isinstance(e, AccessRecord)]
    reads_only = all(e.op == READ for e in accesses)
    resizes = [e for e in events if isinstance(e, ResizeRecord)]
    groups = process_groups(accesses)
    parallel = sum(map(len, groups)) > 1 and reads_only and not resizes
    shape = tuple(int(s) for s in (ds.shape if ds.created else data.shape))
    distinct: dict[tuple, LayoutRuns] = {}
    keys = []
    for c in choices:
        key = (c.layout, c.filters, c.compressor, c.error_bound, c.stack, c.default_cache)
        keys.append(key)
        if key not in distinct:
            distinct[key] = LayoutRuns(workdir / f"layout{len(distinct)}")
    keep_built = reads_only and data.nbytes * len(distinct) <= ROUND_ROBIN_BYTES
    first = {k: choices[keys.index(k)] for k in distinct}
    if not parallel:
        groups = [[(0, 0)]]
    jobs = [[replay_events(trace, ds, u) for u in g] for g in groups] if parallel else [[events]]
    # a read trace is replayed in new processes, each replay its own (``ReplayPool``'s ``fresh``): one long-lived
    # process met the memory of its earlier replays, which the program's run touches for the first time
    pooled = parallel or deadline is not None or reads_only
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
            evict(data_path(layout_spec(first[key], ds), runs.workdir))
    order = list(distinct)
    rounds = np.random.default_rng(ROUND_ORDER_SEED)
    bar = progress.current()
    bar.add_total(len(order) * max(1, repeat))
    with ReplayPool(max(map(len, jobs)), fresh=True) if pooled else contextlib.nullcontext() as pool:
        for k in range(max(1, repeat)):
            if k:  # the layout replayed after a long one ran slower (w09: 5-20%): no layout keeps one place
                order = [order[i] for i in rounds.permutation(len(order))]
            for key in order:
                runs = distinct[key]
                if runs.timed_out or (budget is not None and runs.times and sum(runs.times) > budget):
                    bar.advance()
                    continue  # a slow layout: more replays would not change its rank, only the run time
                choice, spec = first[key], layout_spec(first[key], ds)
                if not keep_built:
                    build_choice(choice, ds, runs.workdir, data, fill=not ds.created, shape=shape,
                                 resizable=bool(resizes))
                want = check and runs.error is None
                try:
                    if pooled:
                        calls = pool.run(jobs, spec, runs.workdir, data_file=data_file, timeout=deadline)
                        runs.times.append(sum(overlapped_seconds(g, ev, c) for g, ev, c in zip(groups, jobs, calls)))
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
    return [distinct[k] for k in keys], tuple(map(len, jobs)) if parallel else ()

__all__ = ["LayoutRuns", "ROUND_ORDER_SEED", "ROUND_ROBIN_BYTES", "measure_all", "overlapped_seconds",
           "process_groups"]
