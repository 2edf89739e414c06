"""The trace model (docs/trace-format.md): a loaded trace (``Trace``: header(s), datasets, accesses as
``AccessColumns``, resizes), its errors, and what combines traces (ids unified by array, clocks aligned).

Apart from its codecs (instrumentation/jsonl.py, columnar.py), which both build on it; instrumentation/tracefile.py
chooses the codec by path."""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from .errors import IoadvisorError
from .jsonvalue import json_value
from .columns import KINDS, AccessColumns, as_columns, fold_runs
from .opens import mark_epochs
from .records import AccessRecord, DatasetRecord, TraceHeader


class TraceError(IoadvisorError, ValueError):
    """A trace file cannot be read; str() is one line naming file and line."""


def _json_default(obj):
    value = json_value(obj)
    return repr(obj) if value is obj else value


def dumps(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), default=_json_default, allow_nan=True)


@dataclass(init=False, eq=False)
class Trace:
    """A loaded trace: header(s), datasets by id, accesses as columns, resizes.

    ``columns`` (``AccessColumns``) is what the models read; ``accesses``, one
    AccessRecord per access, is made on first use for code that replays
    accesses one by one. A merged multi-rank trace has one header per rank
    (``headers``), datasets renumbered so that one key has one id, and a rank
    on each access. ``Trace(headers, datasets, accesses, ...)`` takes
    AccessColumns or a list of AccessRecords; records are held as a columnar
    trace stores them (``fold_runs``).
    """

    headers: list
    datasets: dict
    accesses: list  # the property below: dataclasses.replace(trace, accesses=...) works
    resizes: list
    complete: bool
    source: str
    opens: list
    """The opens and closes of files and datasets recorded (``instrumentation.opens.OpenRecord``); the accesses'
    ``epoch`` comes from them."""

    def __init__(self, headers: list[TraceHeader], datasets: dict[int, DatasetRecord],
                 accesses: "AccessColumns | Sequence[AccessRecord]" = (), resizes=(), complete: bool = True,
                 source: str = "", opens=()):
        self.headers = list(headers)
        self.datasets = datasets
        self.resizes = list(resizes)
        self.complete = complete
        self.source = source
        self.opens = list(opens)
        if accesses is None:
            accesses = ()
        if isinstance(accesses, AccessColumns):
            self.columns, self._records = accesses, None
        else:
            self.accesses = accesses
        if self.opens:
            self.columns = mark_epochs(self.columns, self.opens, datasets)

    @property
    def accesses(self) -> list[AccessRecord]:
        if self._records is None:
            self._records = self.columns.records()
        return self._records

    @accesses.setter
    def accesses(self, records: Sequence[AccessRecord]) -> None:
        records = list(records)
        unfolded = AccessColumns.from_records(records)
        if getattr(self, "opens", None):  # no run folded across a close (``opens.cut_at``)
            unfolded = mark_epochs(unfolded, self.opens, self.datasets)
        self.columns = fold_runs(unfolded)
        # records in another order than the columns' (ranks regrouped) are made again from the columns
        self._records = records if self.columns is unfolded else None

    @property
    def n_access(self) -> int:
        return self.columns.n_access

    @property
    def header(self) -> TraceHeader:
        return self.headers[0]

    @property
    def nprocs(self) -> int:
        return max(h.size for h in self.headers)

    @property
    def missed(self) -> tuple[str, ...]:
        """What is known not to be in the trace, over all ranks (empty: nothing known to be missing)."""
        return tuple(m for h in self.headers for m in h.missed)

    def dataset_by_key(self, key: str) -> DatasetRecord:
        for d in self.datasets.values():
            if d.key == key:
                return d
        raise KeyError(key)

    def same_array(self, dataset_id: int) -> list[int]:
        """Ids of the records of ``dataset_id``'s array (``array_identities``: its key, not recreated between)."""
        identity = array_identities(self.datasets)
        return [i for i in sorted(self.datasets) if identity[i] == identity[dataset_id]]

    def accesses_of(self, dataset_id: int) -> list[AccessRecord]:
        return [a for a in self.accesses if a.dataset == dataset_id]

    def columns_of(self, dataset_id: int) -> AccessColumns:
        cols = self.columns
        mine = cols.ds == dataset_id
        return cols if mine.all() else cols.take(mine)

    def accessed(self) -> list[DatasetRecord]:
        """Datasets with at least one access, in id order."""
        used = set(np.unique(self.columns.ds).tolist())
        return [d for i, d in sorted(self.datasets.items()) if i in used]

    def to_dataframe(self, *, runs: bool = False):
        """The accesses as a pandas DataFrame, one column per field: dataset (key), op, rank, t_start,
        duration, nelements, nbytes, kind, and start/count/stride/block per dimension (``start_0``, ...; for an
        index-list or point selection its bounding box). One row per access; ``runs=True``: one per stored row,
        a run of ``rep`` alike accesses ``step`` apart kept as one (with ``rep``, ``t_step`` and ``step_*``)."""
        import pandas as pd

        cols = self.columns if runs else self.columns.expanded()
        keys = {i: d.key for i, d in self.datasets.items()}
        ids = sorted(keys)
        out = {
            "dataset": pd.Categorical.from_codes(np.searchsorted(ids, cols.ds), [keys[i] for i in ids])
            if ids and cols.rows else pd.Categorical([]),
            "op": pd.Categorical.from_codes(cols.write.astype(np.int8), ["read", "write"]),
            "rank": cols.rank, "t_start": cols.t0, "duration": cols.dt, "nelements": cols.n, "nbytes": cols.nbytes,
            "kind": pd.Categorical.from_codes(cols.kind, list(KINDS)), "collective": cols.collective,
        }
        if runs:
            out.update(rep=cols.rep, t_step=cols.t_step)
        fields = ("start", "count", "stride", "block") + (("step",) if runs else ())
        for name in fields:
            values = getattr(cols, name)
            for d in range(cols.width):
                out[f"{name}_{d}"] = values[:, d]
        return pd.DataFrame(out)

    def extent(self, dataset_id: int) -> tuple[int, ...]:
        """Largest extent the dataset reaches in the trace (see ``extent``); kept while ``columns`` and the
        dataset's resizes are the same (an advise asks for it once per phase: a pass over 10M rows each)."""
        ds = self.datasets[dataset_id]
        resized = tuple(s for r in self.resizes if r.dataset == dataset_id for s in r.extents)
        cached = self.__dict__.get("_extents")
        if cached is None or cached[0] is not self.columns:
            cached = self._extents = (self.columns, {})
        got = cached[1].get(dataset_id)
        if got is None or got[0] is not ds or got[1] != resized:
            got = cached[1][dataset_id] = (ds, resized, extent(ds, self.columns_of(dataset_id), resized))
        return got[2]


def extent(dataset: DatasetRecord, accesses, resized=()) -> tuple[int, ...]:
    """Largest extent an array reaches: its recorded shape, resizes, and every selection's upper corner.

    ``accesses``: AccessColumns or AccessRecords of this dataset."""
    ndim = len(dataset.shape)
    if not ndim:
        return ()
    cols = as_columns(accesses)
    tops = [np.asarray(dataset.shape, np.int64)]
    tops += [np.asarray(s, np.int64) for s in resized if len(s) == ndim]
    top = cols.upper_corner(ndim) if cols.width >= ndim else None
    if top is not None:
        tops.append(top)
    return tuple(int(v) for v in np.max(np.stack(tops), axis=0))


def array_identities(datasets: dict[int, DatasetRecord]) -> dict[int, tuple[str, int]]:
    """Each record's array: (key, generation). A file recreated under the same name makes new arrays: each
    creation of a key after its first starts a generation; records that only opened it (another library,
    reopened) belong to the generation before them (records in id order, the order the tracer saw them)."""
    created: dict[str, int] = {}
    out = {}
    for i in sorted(datasets):
        d = datasets[i]
        if d.created:
            created[d.key] = created.get(d.key, 0) + 1
        out[i] = (d.key, max(created.get(d.key, 0) - 1, 0))
    return out


def unify(traces: list[Trace]):
    """Datasets unified by array identity (``array_identities``; ids renumbered in order of first sight) and each
    trace's id map."""
    by_key: dict[tuple[str, int], DatasetRecord] = {}
    remaps = []
    for tr in traces:
        remap = {}
        identity = array_identities(tr.datasets)
        for ds in tr.datasets.values():
            ident = identity[ds.id]
            if ident not in by_key:
                by_key[ident] = replace(ds, id=len(by_key))
            remap[ds.id] = by_key[ident].id
        remaps.append(remap)
    return by_key, remaps


def remap_columns(cols: AccessColumns, remap: dict[int, int], shift: float, rank: int | None) -> AccessColumns:
    """Dataset ids mapped, times shifted by ``shift`` seconds, rank set (None: kept)."""
    if not cols.rows:
        return cols
    lut = np.zeros(max(max(remap, default=0), int(cols.ds.max())) + 1, np.int32)
    for old, new in remap.items():
        lut[old] = new
    changes = {"ds": lut[cols.ds], "t0": cols.t0 + shift}
    if rank is not None:
        changes["rank"] = np.full(cols.rows, rank, np.int32)
    return cols._with(**changes)


def clock_shift(cols: AccessColumns, headers: list[TraceHeader], origin: float) -> AccessColumns:
    """Times moved onto a clock starting at ``origin``: each process's accesses by its own header's origin
    (one header per rank; process parts of one rank each have their own trace)."""
    if not cols.rows:
        return cols
    by_rank = np.zeros(max(int(cols.rank.max()), max(h.rank for h in headers)) + 1)
    for h in headers:
        by_rank[h.rank] = h.t_origin_unix - origin
    return cols._with(t0=cols.t0 + by_rank[cols.rank])


def shift_opens(opens, headers: list[TraceHeader], origin: float, rank: int | None) -> list:
    """Open records moved onto a clock starting at ``origin`` (as ``clock_shift``), rank set (None: kept)."""
    by_rank = {h.rank: h.t_origin_unix - origin for h in headers}
    out = []
    for o in opens:
        r = o.rank if rank is None else rank
        out.append(replace(o, rank=r, t_start=o.t_start + by_rank.get(r, by_rank.get(o.rank, 0.0))))
    return out


def merge_traces(traces: list[Trace]) -> Trace:
    """One view of several ranks' traces: datasets unified by key, accesses keep their rank, in time order.

    Holds every rank in memory; ``merge.merge_files`` streams rank files into a columnar trace instead."""
    if not traces:
        raise ValueError("no traces to merge")
    by_key, remaps = unify(traces)
    origin = min(h.t_origin_unix for tr in traces for h in tr.headers)
    parts, resizes, opens = [], [], []
    for tr, remap in zip(traces, remaps):
        own = tr.header.rank if len(tr.headers) == 1 else None  # one process's own file: its accesses are its rank's
        parts.append(clock_shift(remap_columns(tr.columns, remap, 0.0, own), tr.headers, origin))
        resizes += [replace(r, dataset=remap[r.dataset]) for r in tr.resizes]
        opens += shift_opens(tr.opens, tr.headers, origin, own)
    cols = AccessColumns.concat(parts)
    if cols.rows:
        cols = cols.take(np.argsort(cols.t0, kind="stable"))
    return Trace(
        headers=sorted((h for tr in traces for h in tr.headers), key=lambda h: h.rank),
        datasets={d.id: d for d in by_key.values()},
        accesses=cols,
        resizes=resizes,
        complete=all(tr.complete for tr in traces),
        source=",".join(tr.source for tr in traces),
        opens=opens,
    )


__all__ = ["Trace", "TraceError", "array_identities", "clock_shift", "dumps", "extent", "merge_traces",
           "remap_columns", "shift_opens", "unify"]
