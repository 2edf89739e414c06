"""``advisor.advise``: a trace in, a recommended layout per dataset out (library, chunks, cache/shards, codec).

    import advisor
    adv = advisor.advise("run.jsonl", max_error="rel:1e-3")
    print(adv)                      # ranked table + explanation
    adv.h5py_kwargs("/x")           # create_dataset(**...) of the recommended HDF5 layout
"""
from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Sequence

import numpy as np

from instrumentation import settings
from instrumentation.tracefile import Trace, load_trace
from instrumentation.errors import InputError

MODELS_FAILED = "the models failed on it"
"""The start of a ``NotAdvised.reason`` when the models raised on that dataset (the others are advised)."""
MIN_SHARE = 0.01
"""Datasets with less than this share of the run's traced I/O time are summed up, not advised in full."""

if TYPE_CHECKING:  # the models (numba) load on the first advise() call, not on `import advisor`
    from advisor.results import Advice, DatasetAdvice
    from compression_model.error_bound import ErrorBound
    from iomodel.profile import SystemProfile


@dataclass(frozen=True)
class AdviseOptions:
    """What ``advise`` is asked for (every field as ``advise``'s keyword of the same name documents it); a
    frozen dataclass with a JSON round trip (``get_config``/``from_config``)."""

    dataset: str | int | None = None
    objective: str = "time"
    max_seconds: float | None = None
    max_bytes: int | None = None
    max_error: "ErrorBound | str | None" = None
    lossless_only: bool = False
    compressors: Sequence[str] | None = None
    libraries: Sequence[str] = ("hdf5", "zarr")
    top: int = 5
    allow_truncated: bool = False
    read_data: bool = True
    procs: int | None = None
    exhaustive: bool = False
    calibrate: bool = True
    min_share: float = MIN_SHARE
    jobs: int | None = None
    cache_budget: int | None = -1
    """-1: the default budget (``advisor.candidates.CACHE_BUDGET``); None: no budget."""

    def get_config(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["max_error"] = None if self.max_error is None else str(self.max_error)
        out["compressors"] = None if self.compressors is None else list(self.compressors)
        out["libraries"] = list(self.libraries)
        return out

    @classmethod
    def from_config(cls, c: dict) -> "AdviseOptions":
        c = options_config(cls, c, "advise")
        for k in ("compressors", "libraries"):
            if c.get(k) is not None:
                c[k] = tuple(c[k])
        return cls(**c)


def options_config(cls, c: dict, what: str) -> dict:
    """A copy of the JSON object ``c`` for ``cls.from_config``; a name that is not a field of ``cls`` is an
    InputError naming it (``what``: the command the options are for)."""
    unknown = sorted(set(c) - {f.name for f in fields(cls)})
    if unknown:
        raise InputError(f"unknown {what} option(s): {', '.join(unknown)}")
    return dict(c)


def advise(trace_or_path: Trace | str | os.PathLike, options: AdviseOptions | None = None, *,
           profile: "SystemProfile | str | os.PathLike | None" = None, comm=None, **kwargs) -> "Advice":
    """Recommend a layout for each accessed dataset of a trace (or the named one).

    A dataset the models cannot advise (a scalar, variable-length strings, a
    read that failed, ...) goes to ``Advice.not_advised`` with the reason; the
    others are advised regardless. The models' warnings become notes.

    ``profile``: SystemProfile or profile file (default: this machine's from ``ioadvisor calibrate``, else the shipped one);
    a file's page-cache and device read terms are rescaled by this machine's speed probe
    (``iomodel.probe.fit_to_machine``; the first dataset's notes say so).
    ``objective``: "time" (default; optionally under ``max_bytes``) or "size"
    (needs ``max_seconds``). ``max_error`` ("abs:X" / "rel:Y") allows lossy
    compressors with that point-wise bound; ``lossless_only`` forbids them;
    ``compressors`` restricts the codecs tried (names of
    ``compression_model.codecs.CODEC_NAMES``). ``read_data=False`` never opens
    the traced files (no compression is then considered). ``procs``: processes
    for the parallel model (default: the trace's rank count).
    ``calibrate``: fit the predictions to the trace's own timings first
    (``iomodel.intrace``; False: the profile's predictions as they are).
    Datasets are advised in full, most traced time first, when they hold at
    least ``min_share`` of the run's traced I/O time (or are named by
    ``dataset``); the others are summed up in ``Advice.minor``. Candidates are
    evaluated on ``jobs`` threads (default: the usable cores, ``IOADVISOR_JOBS``),
    or split over the ranks of ``comm`` (mpi4py) when it has several: every
    rank must call ``advise`` alike and every rank gets the same Advice.
    ``cache_budget``: chunk-cache bytes one process may spend (default ``CACHE_BUDGET``, 64 MiB; None: no
    budget), shared by the datasets the trace shows open at the same time (``advisor.budget``); a candidate
    whose cache exceeds its dataset's share is not ranked.

    The options come as ``options`` (``AdviseOptions``) or as keyword arguments of the same names, not both.
    """
    if options is None:
        options = AdviseOptions(**kwargs)
    elif kwargs:
        raise TypeError(f"advise() takes options or keyword options, not both (got {', '.join(sorted(kwargs))})")
    o = options
    dataset, objective, max_seconds, max_bytes = o.dataset, o.objective, o.max_seconds, o.max_bytes
    max_error, lossless_only, compressors, libraries = o.max_error, o.lossless_only, o.compressors, o.libraries
    top, allow_truncated, read_data, procs, exhaustive = o.top, o.allow_truncated, o.read_data, o.procs, o.exhaustive
    calibrate, min_share, jobs, cache_budget = o.calibrate, o.min_share, o.jobs, o.cache_budget
    from advisor.results import Advice, MinorDataset, NotAdvised
    from advisor.budget import CacheShare, cache_shares
    from advisor.candidates import CACHE_BUDGET, allowed_codecs
    from advisor.runspan import traced_program
    from advisor.screening import compression_note, why_not_advised
    from compression_model.error_bound import ErrorBound
    from instrumentation.formats import untraced_inputs
    from iomodel.intrace import calibrate_in_trace, traced_seconds
    from iomodel.predict import Workload, pick_dataset
    from iomodel.profile import SystemProfile, load_profile

    from advisor import progress

    t0 = time.perf_counter()
    bar = progress.current()  # the caller's bar (a command's), if any: told what is being done
    trace = trace_or_path if isinstance(trace_or_path, Trace) else load_trace(
        trace_or_path, allow_truncated=allow_truncated)
    machine_note = None
    if not isinstance(profile, SystemProfile):  # a profile file: its read speeds follow this machine's probe
        from iomodel.probe import fit_to_machine

        loaded = load_profile(profile)
        if comm is not None and comm.Get_size() > 1:  # every rank must price alike: rank 0's probe
            profile, machine_note = comm.bcast(fit_to_machine(loaded) if comm.Get_rank() == 0 else None, root=0)
        else:
            profile, machine_note = fit_to_machine(loaded)
    if isinstance(max_error, str):
        max_error = ErrorBound.parse(max_error)
    bad = [lib for lib in libraries if lib not in ("hdf5", "zarr")]
    if bad or not libraries:
        raise InputError(f"libraries must be hdf5 and/or zarr, got {list(libraries)!r}")
    if top < 1:
        raise InputError(f"top must be >= 1, got {top}")
    from advisor.search import Objective

    goal = Objective(objective, max_seconds, max_bytes)
    if cache_budget == -1:
        cache_budget = CACHE_BUDGET
    if cache_budget is not None and cache_budget <= 0:
        raise InputError(f"cache budget must be positive, got {cache_budget}")
    allowed_codecs("<f8", max_error=max_error, lossless_only=lossless_only, compressors=compressors)  # user errors
    cols = trace.columns
    shares = cache_shares(cols, cache_budget)
    rewritten = _read_back(trace)
    if goal.kind == "read" and cols.write.any():  # write once, read many: the reads alone are ranked, of data
        # that is on disk (not chunks the model would take for never written: fill values, no I/O)
        trace = Trace(trace.headers, {i: replace(d, created=False) for i, d in trace.datasets.items()},
                      cols.take(~cols.write), trace.resizes, trace.complete, trace.source)
        cols = trace.columns
    counts = np.bincount(cols.ds, weights=cols.rep, minlength=max(trace.datasets, default=-1) + 1)
    n_accesses = {i: int(counts[i]) for i in trace.datasets}
    traced = {i: traced_seconds(trace.columns_of(i)) for i, n in n_accesses.items() if n}
    total = sum(traced.values())
    if dataset is not None:
        targets = [pick_dataset(trace, dataset)]
    else:  # most traced time first
        targets = sorted((d for _, d in sorted(trace.datasets.items())), key=lambda d: -traced.get(d.id, 0.0))
    nprocs = procs if procs is not None else trace.nprocs
    # an imported (synthetic) trace's per-call times are spread from a summary: nothing to fit per call
    fit = calibrate and total > 0 and not trace.header.synthetic
    extents = {i: trace.extent(i) for i in trace.datasets}  # each a pass over the dataset's accesses
    reasons = {i: why_not_advised(d, extents[i], n_accesses[i]) for i, d in trace.datasets.items()}
    # an array alone in its trace: one Workload for the calibration and the search, whose recorded layout is
    # then replayed once (a tenth of a 10M-access advise)
    works = {i: Workload.of_trace(trace, d, nprocs) for i, d in trace.datasets.items()
             if reasons[i] is None} if len(trace.datasets) == 1 else {}
    if goal.kind == "read":  # the reads of data the run has just written find it in the page cache, as traced
        works.update({i: Workload.of_trace(trace, d, nprocs, warm=True) for i, d in trace.datasets.items()
                      if reasons[i] is None and i in rewritten})
    calibrations, uncalibrated = {}, None
    if fit:
        bar.describe("calibrating on the trace's timings")
        try:
            calibrations = calibrate_in_trace(trace, profile, nprocs, layout_of=_current_layout,
                                              datasets=[i for i, r in reasons.items() if r is None], workloads=works)
        except Exception as exc:  # noqa: BLE001 - the advice stands on the profile's predictions then, and says so
            if settings.debug():
                raise
            uncalibrated = (f"predictions not calibrated on the trace ({type(exc).__name__}: "
                            f"{str(exc).splitlines()[0][:160] if str(exc) else ''}): speed-ups against the prediction")
    run = _run_seconds(cols, from_first=goal.kind == "read")
    run = max(run, total) if run is not None else None
    out, skipped, minor = [], [], []
    file_library: dict[str, tuple[str, str]] = {}  # file -> (library, path) of its dataset advised first
    for ds in targets:
        shape = extents[ds.id]
        reason = reasons[ds.id]
        if reason is None and dataset is None and out and traced[ds.id] < min_share * total:
            minor.append(MinorDataset(ds.label, traced[ds.id], n_accesses[ds.id]))
            continue
        if reason is None:
            bar.describe(f"layouts for {ds.path or ds.key}")
            no_codec = compression_note(ds)
            follows = file_library.get(ds.file)
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    mine = replace(options, max_error=max_error, top=top, exhaustive=exhaustive, jobs=jobs,
                                   libraries=libraries if follows is None else (follows[0],),
                                   read_data=read_data and no_codec is None, procs=nprocs)
                    adv = _advise_one(trace, ds, shape, profile, mine, RunContext(
                        CacheShare(shares.get(ds.id), cache_budget), run, goal, calibrations, traced[ds.id], comm,
                        works.get(ds.id), follows,
                        program=goal.kind != "read" and traced_program(trace.header.argv)))
            except Exception as exc:  # noqa: BLE001 - one dataset never stops the advice for the others
                if settings.debug():
                    raise
                reason = f"{MODELS_FAILED} ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})"
            else:
                said = [] if ds.id not in rewritten else [
                    "the program wrote this array and then read it: ranked by the reads alone (--objective read); "
                    "write it as now and copy it into the recommended layout afterwards (the rewrite cost above): "
                    "the program's own writes into it were not priced (--objective time prices them)"
                    if goal.kind == "read" else
                    "the program wrote this array and then read it: ranked by its writes and reads (--objective "
                    f"{goal.kind}); --objective read ranks by the reads alone (write once, read many)"]
                extra = said + ([no_codec] if no_codec else []) + ([uncalibrated] if uncalibrated else []) \
                    + ([machine_note] if machine_note and not out else []) + _warning_notes(caught)
                out.append(replace(adv, notes=adv.notes + tuple(extra)) if extra else adv)
                if adv.recommendation.library in libraries:
                    file_library.setdefault(ds.file, (adv.recommendation.library, ds.path))
        if reason is not None:
            skipped.append(NotAdvised(ds.label, ds.path, ds.library, tuple(shape), ds.dtype, reason))
    if not trace.datasets:
        skipped += [NotAdvised(path, path, fmt, (), "", what) for path, fmt, what in untraced_inputs(trace)]
    return Advice(tuple(out), trace.source, goal.describe(), time.perf_counter() - t0,
                  {"max_error": None if max_error is None else str(max_error), "lossless_only": lossless_only,
                   "compressors": None if compressors is None else list(compressors),
                   "max_seconds": max_seconds, "max_bytes": max_bytes, "libraries": list(libraries),
                  "cache_budget": cache_budget},
                  tuple(skipped), minor=tuple(minor), traced_seconds=total,
                  calibrations={k: v.get_config() for k, v in calibrations.items()})


def _switch_seconds(library: str, idiom, stack, libraries, notes: list) -> dict:
    """``{other library: seconds}`` the program's imports change by in a layout of that library (its note added)."""
    from advisor.runspan import describe_switch, program_stack, switch_seconds

    out = {}
    for lib in (x for x in libraries if x != library):
        other = program_stack([(lib, idiom)])
        seconds = switch_seconds(stack, other) if other != stack else None
        if seconds is not None:
            out[lib] = seconds
            notes.append(describe_switch(lib, seconds, stack, other))
    return out


def _run_seconds(cols, from_first: bool = False) -> float | None:
    """The run as the trace sees it: from the trace's clock origin (the tracer's start: the program's start under
    ``ioadvisor run``, imports included) to the end of the last traced call; what follows it is not seen.
    ``from_first``: from the first traced call instead (``--objective read``: the reading part of the run)."""
    if not cols.rows:
        return None
    end = cols.t0 + np.where(cols.rep > 1, cols.t_step * (cols.rep - 1), 0.0) + cols.dt
    start = float(cols.t0.min()) if from_first else 0.0
    return float(max(end.max() - start, 0.0)) or None


def _read_back(trace: Trace) -> set[int]:
    """Datasets the traced program wrote and then read."""
    cols = trace.columns
    out = set()
    for i in np.unique(cols.ds[cols.write]).tolist() if cols.rows else []:
        mine = cols.ds == i
        w, r = mine & cols.write, mine & ~cols.write
        if r.any() and cols.t0[r].max() > cols.t0[w].min():
            out.add(int(i))
    return out


@dataclass(frozen=True)
class RunContext:
    """What one dataset's advice takes from the whole run: its chunk-cache share, the run's traced time, the
    objective, the calibrations, and what the run already computed for it."""

    share: object = None
    """``advisor.budget.CacheShare`` (None: no budget)."""
    run_seconds: float | None = None
    goal: object = None
    """``advisor.search.Objective``."""
    calibrations: dict = field(default_factory=dict)
    """In-trace calibration per library (``iomodel.intrace.calibrate_in_trace``)."""
    traced: float = 0.0
    """The dataset's traced seconds."""
    comm: object = None
    """mpi4py communicator whose ranks share the candidates out (None: this process alone)."""
    work: object = None
    """The dataset's ``iomodel.predict.Workload``, already built (None: built by the cost model)."""
    follows: tuple[str, str] | None = None
    """(library, path) recommended for the dataset of the same file with more traced time (``_advise_one``)."""
    program: bool = False
    """The trace holds a whole Python program (``ioadvisor run``): its interpreter's start and exit, outside the
    trace's window, are measured and added to the run (``advisor.runspan``)."""


WHATIF_ACCESSES = 200_000
"""Traces of a dataset up to this many accesses get the what-if rewrites (``advisor.whatif`` works per access)."""


def _current_layout(ds):
    """The recorded layout as the advisor evaluates it (its ``current`` baseline candidate)."""
    from advisor.candidates import baselines

    return baselines(ds, ds.shape, False)["current"].layout(ds.shape, ds.itemsize, maxshape=ds.maxshape)


def _warning_notes(caught) -> list[str]:
    """The models' warnings (overflow in a float16 cast, ...) as advice notes, once each, never on stderr."""
    seen = dict.fromkeys(f"{w.category.__name__}: {str(w.message).splitlines()[0]}" for w in caught)
    return [f"while modelling: {m}" for m in seen]


def _advise_one(trace, ds, shape, profile, options: AdviseOptions, context: RunContext) -> "DatasetAdvice":
    """One dataset's advice under ``options`` (its ``libraries``, ``read_data`` and ``procs`` already resolved for
    it). ``context.follows``: (library, path) recommended for the dataset of the same file or store
    with more traced time: one file holds one library (a coordinate never moves to another format than its data
    variable), so ``libraries`` is that library alone, and when the file moves to it this dataset moves too.
    ``context``: the dataset's chunk-cache share, the run's traced time and the rest (``RunContext``)."""
    share, goal, calibrations, traced = context.share, context.goal, context.calibrations, context.traced
    comm, work, follows = context.comm, context.work, context.follows
    max_error, lossless_only, compressors = options.max_error, options.lossless_only, options.compressors
    libraries, top, read_data, nprocs = options.libraries, options.top, options.read_data, options.procs
    exhaustive, jobs = options.exhaustive, options.jobs
    from advisor.render.text import explain
    from advisor.results import DatasetAdvice
    from advisor.candidates import CodecChoice, allowed_codecs, baselines, generate, needs_resizable, within_budget
    from advisor.choice import choose, own_library, program_blocking, rewrite_seconds, verdict
    from advisor.idiom import NETCDF4_CODECS, read_through_netcdf4
    from advisor.idiom import detect as detect_idiom
    from advisor.costmodel import CostModel, DataSource, with_facts
    from advisor.search import search
    from advisor.whatif import predict_rewrites
    from instrumentation.patterns import classify
    from iomodel.intrace import CODEC_TERMS, MIN_RESOLUTION, PRIOR_SPREAD

    accesses = trace.columns_of(ds.id)
    pattern = classify(accesses, shape)
    # a trace of only reads (or only writes) is classified once, never copied whole (a 10M-row loader trace: 1.4 GB)
    n_writes = int(accesses.write.sum())
    reads = pattern if n_writes == 0 else classify(accesses.take(~accesses.write), shape)
    writes = pattern if n_writes == accesses.rows else classify(accesses.take(accesses.write), shape)
    described = "; ".join(f"{k} {p.describe()}" for k, p in (("reads", reads), ("writes", writes))
                          if p.kind != "none")
    notes: list[str] = []
    data = DataSource(ds, enabled=read_data)
    try:
        codecs, codec_notes = allowed_codecs(ds.dtype, max_error=max_error, lossless_only=lossless_only,
                                             compressors=compressors)
        notes += codec_notes
        trace_libs = [x for h in trace.headers for x in h.libraries]
        if read_through_netcdf4(ds, trace_libs):  # the program's stack writes only its own compressors
            dropped = [k.name for k in codecs if k.name not in NETCDF4_CODECS]
            codecs = [k for k in codecs if k.name in NETCDF4_CODECS]
            if dropped:
                notes.append(f"read through netCDF4-python: {', '.join(dropped)} not tried (netCDF4-python writes "
                             f"{', '.join(NETCDF4_CODECS)})")
        data.whole_scan = any(k.error_bound is not None for k in codecs)  # lossless only: the sample's scan serves
        if codecs and data.array is None:
            notes.append(f"{data.problem}: compression not considered (no ratio can be justified without data)")
            codecs = []
        data_range = data.safety.data_range if data.array is not None else None
        if data.safety is not None and (data.safety.has_nonfinite or data.safety.has_fill):
            s = data.safety
            notes.append(f"data has {s.n_nan} NaN, {s.n_inf} Inf, {s.n_fill} fill values among {s.n} scanned: "
                         "codecs that would lose them are excluded")
        resizable = needs_resizable(ds, any(r.dataset == ds.id for r in trace.resizes))
        base = baselines(ds, shape, resizable)
        if data.array is not None:  # zarr.create_array's default compressor is zstd
            base["zarr"] = base["zarr"].with_codec("zstd", None)
        base = {k: v for k, v in base.items() if k == "current" or v.library in libraries}
        blocking = program_blocking(accesses, shape)
        cands = generate(ds, pattern, shape, codecs=codecs, libraries=libraries, resizable=resizable,
                         blocks=None if blocking is None else blocking.shape,
                         cache_budget=None if share is None else share.bytes, accesses=accesses)
        cal = calibrations.get(ds.library)
        calibrated = cal is not None and cal.covers
        # each term the trace exercised at its fitted factor, the others as profiled (TraceCalibration.for_dataset);
        # searched so, then the fitted terms of every prediction scaled so that the current layout meets this
        # dataset's fit
        scaled = cal.for_dataset(1.0) if calibrated else None
        # the trace read as ``ioadvisor predict`` reads it (the process's other arrays share the page cache)
        model = CostModel.of_trace(trace, ds, profile, procs=nprocs, calibration=scaled, jobs=jobs, comm=comm,
                                   work=work)
        result = search(model, cands, base, data, goal, top=top, exhaustive=exhaustive)
        if calibrated:
            f, f_codec = cal.dataset_factors(ds.id, result.baselines["current"].terms)
            scaled = model.calibration = cal.for_dataset(f, f_codec)
            result = result.scaled({lib: {k: f_codec if k in CODEC_TERMS else f for k in c.fitted}
                                    for lib, c in scaled.items()})
        current = result.baselines["current"]
        resolution = cal.resolution if calibrated else MIN_RESOLUTION
        # ranked again on the calibrated seconds (and a time budget is on them); a cache above the dataset's share
        # of the process's budget is not ranked (the recorded layout stays what the program has)
        ranked = sorted((r for r in result.ranked if r.candidate == current.candidate
                         or within_budget(r.candidate, None if share is None else share.bytes)), key=goal.key)
        if share is not None and share.bytes is not None:
            notes.append(share.describe())
        moves = follows is not None and follows[0] != ds.library
        feasible = goal.feasible if not moves else lambda r: goal.feasible(r) and r.candidate != current.candidate
        if goal.by_time:
            best, tie_rule, _ = choose(ranked, current, resolution, shape, ds.itemsize, blocking,
                                       with_facts=lambda r: with_facts(model, r), feasible=feasible,
                                       coefficient=profile.coefficient)
        else:
            best, tie_rule = next((r for r in ranked if feasible(r)), ranked[0]), None
        if best.library != ds.library and ds.library in libraries and follows is None:
            best, tie_rule = own_library(best, tie_rule, ds.library, ranked, notes, lambda rs: choose(
                rs, current, resolution, shape, ds.itemsize, blocking, with_facts=lambda r: with_facts(model, r),
                feasible=feasible, coefficient=profile.coefficient)[:2] if goal.by_time else (rs[0], None),
                lambda lib, k: scaled[lib].term_sd(k) if scaled else PRIOR_SPREAD, resolution)
        if goal.by_time and best.candidate != current.candidate and not moves:
            from advisor.robust import at_size
            from advisor.search import FINALISTS

            # within the chosen library: the program's own, unless another won beyond its interval
            sized = at_size(model, best, [r for r in ranked if feasible(r) and r.library == best.library][:FINALISTS])
            if sized.replaced is not None:
                best, tie_rule = sized.chosen, "robust at size"
                notes.append(sized.line)
        change = best if best.candidate != current.candidate else next(
            (r for r in ranked if r.candidate != current.candidate), None)
        judged = verdict(current, best, traced if calibrated else None, tie_rule)
        if moves:
            judged = replace(judged, verdict="change", reason=f"its file moves to {follows[0]} with {follows[1]}")
        if follows is not None:
            notes.append(f"advised within {follows[0]}, the library recommended for {follows[1]} (the file's dataset "
                         "with more traced time): one file, one library")
        rewrite = codec = None
        if judged.verdict == "change":
            if best.candidate.compressor:
                codec, _ = data.cost(CodecChoice(best.candidate.compressor, best.candidate.error_bound),
                                     best.candidate.chunks, best.candidate.library)
            rewrite = rewrite_seconds(ds, shape, current, best, profile, scaled, codec)
        else:
            best = current
        if accesses.n_access <= WHATIF_ACCESSES:  # the rewrites are built access by access
            whatifs = predict_rewrites(ds, accesses.records(), shape, profile, current, nprocs, scaled)
        else:
            whatifs = ()
            notes.append(f"what-if rewrites of the program not evaluated above {WHATIF_ACCESSES} accesses")
        if data.estimate_seconds:
            notes.append(f"compression estimates took {data.estimate_seconds:.2f} s")
            from compression_model.codecs.plugin import without_plugin_note

            notes += [n for n in [without_plugin_note()] if n]
    finally:
        data.close()
    notes += result.notes
    if not goal.feasible(best):
        notes.append(f"no candidate meets the constraint ({goal.describe()}): showing the closest")
    if cal is not None:
        notes.append(cal.describe())
    if calibrated:
        mine = scaled[ds.library].factors
        fitted = ", ".join(f"{k[2:]} x{v:.2g}" for k, v in sorted(mine.items()) if k in cal.factors)
        if "t_codec" in mine and mine["t_decompress"] != mine["t_codec"]:
            fitted += f"; the codec's estimated seconds x{mine['t_decompress']:.2g}"
        notes.append(f"every candidate's terms calibrated as the trace's for this dataset ({fitted}), the others "
                     "as profiled; each interval widened by the uncertainty of the terms it moves time into")
    other = calibrations.get("zarr" if ds.library == "hdf5" else "hdf5")
    if not calibrated and other is not None and other.borrowed and other.library in libraries:
        notes.append(other.describe())
    idiom = detect_idiom(ds, trace_libs, dask=blocking is not None) if read_data else None
    if idiom is not None and idiom.dask and judged.verdict == "change":  # the recipe gives the program dask chunks
        from advisor.recipe_reads import priced_as_recipe

        best = priced_as_recipe(best, ds, accesses.records(), shape, blocking, profile, procs=nprocs,
                                calibration=scaled, codec=codec)
    run_seconds = context.run_seconds if context is not None and calibrated and traced > 0 else None
    switch = {}
    if run_seconds and context.program:
        from advisor.runspan import describe, program_stack, start_and_exit_seconds

        stack = program_stack([(ds.library, idiom)])
        beyond = start_and_exit_seconds(stack)
        if beyond is not None:
            run_seconds += beyond
            notes.append(describe(beyond, stack))
        switch = _switch_seconds(ds.library, idiom, stack, libraries, notes)
    adv = DatasetAdvice(
        name=ds.label, path=ds.path, library=ds.library, shape=tuple(shape), dtype=ds.dtype, pattern=described,
        n_accesses=accesses.n_access, procs=model.procs, objective=goal.describe(),
        current=result.baselines["current"],
        defaults={k: v for k, v in result.baselines.items() if k != "current"},
        recommendation=best, candidates=_shortlist(_first(ranked, change or best), top, libraries),
        notes=tuple(notes), n_generated=result.n_generated, n_evaluated=result.n_evaluated,
        data_range=data_range, traced_seconds=traced if traced > 0 else None, verdict=judged.verdict,
        verdict_reason=judged.reason, tie_rule=tie_rule, best_change=change,
        rewrite_seconds=rewrite, blocking=None if blocking is None else blocking.shape,
        idiom=idiom, whatifs=whatifs, calibrated=calibrated, run_seconds=run_seconds,
        switch_seconds=switch,
    )
    if trace.header.synthetic:
        from advisor.synthetic import widen

        adv = widen(adv, trace.header)
    return replace(adv, explanation=tuple(explain(adv, reads, writes)))


def _first(ranked, chosen) -> list:
    """The ranking with the chosen layout first (a near-tie rule may have preferred it over the fastest)."""
    return [chosen] + [r for r in ranked if r.candidate != chosen.candidate]


def _shortlist(ranked, top, libraries) -> tuple:
    """The top candidates, plus the best of each library and the best compressed one when not among them."""
    out = list(ranked[:top])
    for lib in libraries:
        if not any(r.library == lib for r in out):
            best = next((r for r in ranked if r.library == lib), None)
            if best is not None:
                out.append(best)
    if not any(r.candidate.compressor for r in out):  # so the explanation can say what compression would cost
        coded = next((r for r in ranked if r.candidate.compressor), None)
        if coded is not None:
            out.append(coded)
    return tuple(out)


__all__ = ["advise"]
