"""``predict``: a trace (or accesses) + a layout + a system profile -> Prediction."""
from __future__ import annotations

import math
from collections import Counter
from typing import Sequence


from instrumentation.records import AccessRecord, DatasetRecord
from instrumentation.tracefile import Trace, extent

from .cost import term_seconds
from .layout import Layout
from .parallel import contention_factor, mpio_uncached, parallel_terms
from .prediction import Prediction
from .profile import PageCacheCurve, SystemProfile
from .variables import Variables, count_variables


def pick_dataset(trace: Trace, dataset: int | str | None = None) -> DatasetRecord:
    """The dataset to model: by id, key ('file::path') or path; default the most accessed array (a scalar or
    an empty one has nothing to chunk: such are picked only by name)."""
    if not trace.datasets:
        raise ValueError(f"{trace.source or 'trace'}: no datasets recorded")
    if dataset is None:
        counts = Counter(a.dataset for a in trace.accesses)
        if not counts:
            raise ValueError(f"{trace.source or 'trace'}: no accesses recorded")
        arrays = [i for i, _ in counts.most_common() if (shape := trace.extent(i)) and math.prod(shape)]
        if not arrays:
            raise ValueError(f"{trace.source or 'trace'}: only scalar or empty datasets accessed: nothing to chunk")
        return trace.datasets[arrays[0]]
    if isinstance(dataset, int) or (isinstance(dataset, str) and dataset.isdigit()):
        if int(dataset) in trace.datasets:
            return trace.datasets[int(dataset)]
    for d in trace.datasets.values():
        if dataset in (d.key, d.path, d.path.lstrip("/")):
            return d
    names = ", ".join(sorted(d.path for d in trace.datasets.values()))
    raise ValueError(f"{trace.source or 'trace'}: no dataset {dataset!r} (recorded: {names})")


class Workload:
    """The traced accesses of one array, split per rank, ready to replay against many layouts.

    Ranks are taken as recorded. ``procs`` > the recorded ranks models each
    recorded rank's pattern running on procs processes on their own data (weak
    scaling): contention from procs, variables from the recorded ranks.
    ``warm``: the array starts in the page cache (see ``count_variables``).
    """

    def __init__(self, dataset: DatasetRecord, accesses: Sequence[AccessRecord],
                 shape: Sequence[int] | None = None, procs: int = 1, warm: bool = False):
        if procs < 1:
            raise ValueError(f"procs must be >= 1, got {procs}")
        self.dataset, self.warm = dataset, warm
        self.accesses = [a for a in accesses if a.dataset == dataset.id]
        self.shape = tuple(shape) if shape is not None else extent(dataset, self.accesses)
        ranks = sorted({a.rank for a in self.accesses}) or [0]
        self.by_rank = [[a for a in self.accesses if a.rank == r] for r in ranks]
        self.procs = max(procs, len(ranks))

    def variables(self, layout: Layout, page_cache_bytes: int, *, cache_curve: PageCacheCurve | None = None,
                  zarr_overlap: float = 1.0) -> list[Variables]:
        """Counted variables of each recorded rank (``cache_curve``, ``zarr_overlap``: the profile's)."""
        if layout.shape != self.shape:
            layout = layout.with_shape(self.shape)
        parallel = mpio_uncached(layout.library, self.procs, self.accesses, self.dataset)
        return [count_variables(acc, self.dataset, layout, page_cache_bytes, parallel=parallel, warm=self.warm,
                                cache_curve=cache_curve, zarr_overlap=zarr_overlap)
                for acc in self.by_rank]

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
        per_rank = []
        for v in self.variables(layout, profile.page_cache_bytes, cache_curve=profile.page_cache_curve,
                                zarr_overlap=profile.zarr_overlap):
            terms = self.terms(v, layout.library, profile, servers)
            per_rank.append((sum(terms.values()), terms, v))
        seconds, terms, v = max(per_rank, key=lambda x: x[0])
        c = servers if servers is not None else profile.servers(layout.library)
        cf = contention_factor(self.procs, c)
        return Prediction(layout, seconds, terms, v, self.procs, cf, tuple(x[0] for x in per_rank))


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
        accesses = [a for a in trace_or_accesses.accesses if a.dataset == ds.id]
        resized = [r.shape for r in trace_or_accesses.resizes if r.dataset == ds.id]
    else:
        if not isinstance(dataset, DatasetRecord):
            raise ValueError("predict(accesses, ...) needs dataset= the DatasetRecord they refer to")
        ds = dataset
        accesses = [a for a in trace_or_accesses if a.dataset == ds.id]
        resized = []
    work = Workload(ds, accesses, extent(ds, accesses, resized), procs, warm)
    return work.predict(layout, profile, servers)
