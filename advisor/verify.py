"""``advisor.verify``: rebuild the traced arrays in the current and the recommended layouts, replay for real.

For each dataset of a trace, the current layout and the top-K layouts of
``advisor.advise`` are built on disk (with the user's data when the recorded
file is readable, else a smooth random field of the same shape and dtype),
the page cache is emptied and the recorded accesses are replayed through h5py
or zarr (``iomodel.replay``). The measured seconds sit next to the predicted
ones; that closes the loop for the user (does the advice hold here?) and for
the models (``measured / predicted``).

Traces of several processes (MPI ranks; the workers a program forked, such as
a PyTorch DataLoader's or a multiprocessing pool's, each access carrying its
process): when every access of a dataset is a read, each traced process
replays in a process of its own (its own open file and chunk cache, set as
the layout sets it), those that ran at the same time together
(``advisor.verify_measure.process_groups``). A group's time is the time
inside at least one call, as the trace counts it: each process's replayed
calls laid on its traced timeline (its traced gaps between calls kept), the
union per rank, the slowest rank's (``verify_measure.overlapped_seconds``);
the run's is the sum over the groups.
Serial h5py cannot have two writers on one file, so a trace with writes
replays its accesses in time order in one process (``VerifyRow.parallel`` is
False then; ``VerifyRow.process_groups`` says what ran concurrently).

With a ``deadline`` every replay runs in a separate process that is killed
when it runs past it (some default layouts take minutes); its time is then a
lower bound (``VerifyRow.timed_out``).

The work is split by job: the types (``advisor.verify_results``), the data and the built arrays
(``advisor.verify_data``), the replay processes (``advisor.verify_pool``) and the measuring loop
(``advisor.verify_measure``); this module picks the layouts and holds the API (``verify`` with
``VerifyOptions``, ``verify_choices``), and re-exports the others' public names.
"""
from __future__ import annotations

import os
import statistics
import tempfile
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from advisor import progress
from advisor.api import AdviseOptions, options_config
from advisor.verify_data import build_choice, load_data, synthetic
from advisor.verify_measure import measure_all
from advisor.verify_pool import ReplayPool, ReplayTimeout
from advisor.verify_results import Choice, VerifyError, VerifyResult, VerifyRow, dataset_name
from advisor.verify_stack import on_program_stack
from instrumentation.records import DatasetRecord, Filter
from instrumentation.tracefile import Trace, load_trace
from iomodel.layout import Layout
from iomodel.predict import pick_dataset

MAX_BYTES = 2 << 30
"""Largest array region verify rebuilds per layout (the user's data is held in memory once)."""



# ---- the options -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerifyOptions:
    """What ``verify`` is asked for (every field as ``verify``'s keyword of the same name documents it); a
    frozen dataclass with a JSON round trip (``get_config``/``from_config``). ``constraints``: the options of
    the advice made when none is given (``AdviseOptions``; its ``dataset`` and ``top`` are verify's)."""

    top: int = 3
    dataset: str | int | None = None
    workdir: str | os.PathLike | None = None
    repeat: int = 1
    budget: float | None = None
    deadline: float | None = None
    max_bytes: int = MAX_BYTES
    defaults: bool = False
    layouts: Sequence[str] = ()
    constraints: AdviseOptions = field(default_factory=AdviseOptions)

    @classmethod
    def of(cls, **kwargs) -> "VerifyOptions":
        """From ``verify``'s keywords: its own, and any other as an ``AdviseOptions`` field (the constraints)."""
        own = {f.name for f in fields(cls)} - {"constraints"}
        mine = {k: v for k, v in kwargs.items() if k in own}
        if "layouts" in mine:
            mine["layouts"] = tuple(mine["layouts"])
        advise = {k: v for k, v in kwargs.items() if k not in own}
        return cls(**mine, constraints=AdviseOptions(**advise))

    def get_config(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["workdir"] = None if self.workdir is None else os.fspath(self.workdir)
        out["layouts"] = list(self.layouts)
        out["constraints"] = self.constraints.get_config()
        return out

    @classmethod
    def from_config(cls, c: dict) -> "VerifyOptions":
        c = options_config(cls, c, "verify")
        c["layouts"] = tuple(c.get("layouts", ()))
        c["constraints"] = AdviseOptions.from_config(c.get("constraints") or {})
        return cls(**c)


# ---- choices from the advice ------------------------------------------------------------------------


def current_choice(ds: DatasetRecord, predicted: float | None = None,
                   ci: tuple[float, float] | None = None) -> Choice:
    """The recorded layout, built with the recorded filters (zarr's default zstd included)."""
    return Choice("current", Layout.from_dataset(ds), predicted, ci, filters=tuple(ds.filters),
                  default_cache=ds.cache is None)


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
                  compressor=c.compressor, error_bound=None if c.error_bound is None else str(c.error_bound),
                  default_cache=c.cache_bytes is None)


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
    runs, groups = measure_all(choices, trace, ds, data, Path(workdir) / f"ds{ds.id}", repeat=repeat,
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
            parallel=bool(groups), timed_out=r.timed_out, stack=choice.stack, process_groups=groups))
    return rows



def recipe_groups(trace: Trace, ds: DatasetRecord, choices: Sequence[Choice],
                  entry=None) -> list[tuple[Trace, list[int]]]:
    """The choices grouped by the reads the program makes in each once the recipe is applied
    (``advisor.recipe_reads``: an xarray program reading in dask blocks gets the recipe's dask chunks), each group
    with its trace: the traced one for the current layout and every layout the recipe leaves the reads of.
    ``entry``: the dataset's ``DatasetAdvice`` (None: every choice replays the traced reads)."""
    if entry is None or entry.idiom is None or not entry.idiom.dask:
        return [(trace, list(range(len(choices))))]
    from advisor.choice import program_blocking
    from advisor.recipe_reads import recipe_reads
    from advisor.whatif import rewritten_trace

    accesses = [a for a in trace.accesses if a.dataset == ds.id]
    shape = trace.extent(ds.id)
    blocking = program_blocking(accesses, shape)
    groups: dict = {}
    for i, c in enumerate(choices):
        reads = None if c.label == "current" else recipe_reads(accesses, shape, c.layout.chunks, blocking)
        key = None if reads is None else tuple((a.selection.start, a.selection.block) for a in reads)
        if key not in groups:
            groups[key] = (trace if reads is None else rewritten_trace(trace, ds.id, reads), [])
        groups[key][1].append(i)
    return list(groups.values())


def _filters_name(filters: Sequence[Filter]) -> str | None:
    names = [f.name for f in filters if f.name not in ("bytes", "sharding_indexed")]
    return "+".join(names) or None



def verify(trace_or_path: Trace | str | os.PathLike, options: VerifyOptions | int | None = None, *, profile=None,
           advice=None, storage_options: dict | None = None, **kwargs) -> VerifyResult:
    """Rebuild each traced dataset in its current and top-``top`` recommended layouts and replay it for real.

    ``advice``: an ``advisor.advise`` result to verify (default: advise the trace
    now with ``profile`` and the ``constraints``). ``dataset``: only this one (id,
    path or file::path). ``workdir``: where the arrays are built (default a
    temporary directory, removed afterwards). ``repeat``: replays per layout
    (the median is reported); ``budget``: seconds after which a layout's
    replays stop repeating; ``deadline``: seconds after which a replay is
    stopped (its time is then a lower bound). ``defaults``: also measure h5py's and zarr's
    default layouts. ``layouts``: more layouts to measure, as ``ioadvisor predict --layout`` specs
    (``iomodel.parse_layout``), each predicted by ``iomodel.predict``.

    The options come as ``options`` (``VerifyOptions``) or as keyword arguments of the same names (any other
    keyword is an ``advise`` option: ``max_error``, ``libraries``, ...), not both; an int in place of
    ``options`` is ``top``, as the second positional argument was before ``VerifyOptions``.

    Arrays on an object store (``s3://...``) are verified on that store (``advisor.objectstore_verify``): their
    layouts rebuilt under a scratch prefix of the data's bucket (or of ``workdir`` when it is such a URL),
    reached with ``storage_options`` (fsspec's; never kept in the options or the result).
    """
    if isinstance(options, int) and not isinstance(options, bool):
        kwargs = {"top": options, **kwargs}
        options = None
    if options is None:
        options = VerifyOptions.of(**kwargs)
    elif kwargs:
        raise TypeError(f"verify() takes options or keyword options, not both (got {', '.join(sorted(kwargs))})")
    o = options
    trace = trace_or_path if isinstance(trace_or_path, Trace) else load_trace(trace_or_path)
    if o.top < 0:
        raise VerifyError(f"top must be >= 0, got {o.top}")
    if o.dataset is not None:
        targets = [pick_dataset(trace, o.dataset)]
    else:
        targets = trace.accessed()
    if not targets:
        raise VerifyError(f"{trace.source or 'trace'}: no accesses recorded, nothing to verify")
    from advisor.objectstore import on_store

    stored = [ds for ds in targets if on_store(ds.file)]
    targets = [ds for ds in targets if not on_store(ds.file)]
    store_rows = []
    if stored:
        from advisor.objectstore_verify import verify_on_store

        store_rows = verify_on_store(trace, stored, top=o.top, repeat=o.repeat, profile=profile,
                                     storage_options=storage_options, max_bytes=o.max_bytes,
                                     constraints=o.constraints,
                                     scratch_parent=str(o.workdir) if o.workdir and on_store(str(o.workdir)) else None)
        if not targets:
            return VerifyResult(trace.source or str(trace_or_path), tuple(store_rows), str(o.workdir or ""), o.repeat)
    bar = progress.current()
    if advice is None and (o.top > 0 or o.defaults):
        from advisor.api import advise

        with progress.task("advise"):  # its own bar: layouts evaluated, not replayed
            advice = advise(trace, replace(o.constraints, dataset=o.dataset, top=max(o.top, 1)), profile=profile)
    if advice is not None:  # scalars, vlen strings, minor datasets: no layouts to rebuild
        advised = {d.name for d in advice.datasets}
        targets = [ds for ds in targets if ds.label in advised]
        if not targets:
            raise VerifyError(advice.nothing_line() if not advice.datasets else
                              f"{trace.source or 'trace'}: the advice covers none of the datasets to verify")
    workdir, tmp = (None if o.workdir is not None and on_store(str(o.workdir)) else o.workdir), None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="ioadvisor-verify-")
        workdir = tmp.name
    measure = dict(repeat=o.repeat, budget=o.budget, deadline=o.deadline, max_bytes=o.max_bytes)
    try:
        rows = []
        for ds in targets:
            choices = (choices_from_advice(advice, trace, ds, o.top, defaults=o.defaults) if advice is not None
                       else [current_choice(ds)])
            bar.describe(f"replaying {dataset_name(ds)}")
            choices += given_choices(trace, ds, o.layouts, profile)
            choices = on_program_stack(trace, ds, choices)  # netCDF4-python's own, when the program read through it
            # each layout replays the reads the program makes there once the recipe is applied
            measured = []
            for replayed, picked in recipe_groups(trace, ds, choices, dataset_advice(advice, ds) if advice else None):
                measured += zip(picked, verify_choices(replayed, ds, [choices[i] for i in picked], workdir, **measure))
            rows += [row for _, row in sorted(measured, key=lambda m: m[0])]
            for rewritten, choice in (whatif_choices(advice, trace, ds) if advice is not None else []):
                rows += verify_choices(rewritten, ds, on_program_stack(trace, ds, [choice]), workdir, **measure)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return VerifyResult(trace.source or str(trace_or_path), tuple(store_rows + rows), str(workdir), o.repeat)


__all__ = ["Choice", "MAX_BYTES", "ReplayPool", "ReplayTimeout", "VerifyError", "VerifyOptions", "VerifyResult",
           "VerifyRow", "build_choice", "choice_of", "choices_from_advice", "current_choice", "dataset_advice",
           "dataset_name", "given_choices", "load_data", "measure_all", "recipe_groups", "synthetic", "verify",
           "verify_choices", "whatif_choices"]
