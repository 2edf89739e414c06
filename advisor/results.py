"""Advice records: what the advisor recommends per dataset, why, and the code to apply it.

``Recommendation`` is one evaluated candidate (layout + predicted seconds with
its 95% interval, term breakdown, stored size); ``DatasetAdvice`` holds the
ranked candidates of one array with the current layout and the libraries'
defaults for comparison, and a plain-language explanation computed from those
predictions; ``Advice`` is the whole answer (``advisor.advise``); ``WhatIf`` is one
rewrite of the program's accesses (``advisor.whatif``). All are frozen dataclasses
with a JSON round trip (``get_config``/``from_config``). Their text and code
forms are rendered by ``advisor.render.text`` and ``advisor.render.code``.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from advisor.candidates import Candidate
from advisor.idiom import Idiom, xarray_code
from advisor.render.code import codec_of, hdf5_codec_source, zarr_codec_source
from advisor.render.text import format_table
from advisor.terms import TERM_MEANING
from advisor.tuning import BATCH, CHUNK_MEMORY
from instrumentation.errors import InputError

KINDS = {
    "batched": f"one sorted fancy-index read per mini-batch of {BATCH} reads",
    "whole-chunks": f"read whole chunks (kept in {CHUNK_MEMORY >> 20} MiB of memory) and slice them in memory",
}


@dataclass(frozen=True)
class WhatIf:
    """One rewrite of the program's accesses and its predicted time on the current layout."""

    kind: str
    seconds: float
    seconds_ci: tuple[float, float]
    n_calls: int
    terms: dict

    @property
    def description(self) -> str:
        return KINDS[self.kind]

    def get_config(self) -> dict:
        return {"kind": self.kind, "description": self.description, "seconds": self.seconds,
                "seconds_ci": list(self.seconds_ci), "n_calls": self.n_calls, "terms": dict(self.terms)}

    @classmethod
    def from_config(cls, c: dict) -> "WhatIf":
        return cls(c["kind"], float(c["seconds"]), tuple(c["seconds_ci"]), int(c["n_calls"]), dict(c["terms"]))


@dataclass(frozen=True)
class Recommendation:
    """One evaluated candidate: its layout, predicted seconds (95% interval), terms and stored size."""

    candidate: Candidate
    seconds: float
    seconds_ci: tuple[float, float]
    terms: dict = field(compare=False)
    """Seconds per term of the slowest rank: the I/O model's terms plus t_compress / t_decompress."""
    stored_bytes: int
    ratio: float = 1.0
    """Raw / stored bytes (1 = uncompressed)."""
    ratio_ci: tuple[float, float] = (1.0, 1.0)
    variables: dict = field(default_factory=dict, compare=False)
    """The I/O model's counted variables (slowest rank)."""
    facts: dict = field(default_factory=dict, compare=False)
    """Geometry behind the explanation: chunk_bytes, chunks_per_access, read_amplification, partial_writes."""
    exact: bool = True
    """False when the I/O part was scaled from the uncompressed layout (screening) rather than replayed."""
    notes: tuple[str, ...] = ()
    model_seconds: float | None = None
    """The profile's prediction before the in-trace calibration (``seconds`` is after it)."""

    @property
    def label(self) -> str:
        return self.candidate.label

    @property
    def library(self) -> str:
        return self.candidate.library

    def to_json_obj(self) -> dict:
        """The ``--json`` recommendation object."""
        c = self.candidate
        return {
            "library": c.library,
            "chunks": None if c.chunks is None else list(c.chunks),
            "shards": None if c.shards is None else list(c.shards),
            "cache_bytes": c.cache_bytes,
            "cache_slots": c.cache_slots,
            "compressor": c.compressor,
            "error_bound": None if c.error_bound is None else str(c.error_bound),
            "seconds": self.seconds,
            "seconds_ci": list(self.seconds_ci),
            "stored_bytes": self.stored_bytes,
            "ratio": self.ratio,
            "ratio_ci": list(self.ratio_ci),
            "terms": dict(self.terms),
            "origin": list(c.origin),
            "exact": self.exact,
            "notes": list(self.notes),
            "model_seconds": self.model_seconds,
        }

    def get_config(self) -> dict:
        return {**self.to_json_obj(), "variables": dict(self.variables), "facts": dict(self.facts),
                "candidate": self.candidate.get_config()}

    @classmethod
    def from_config(cls, c: dict) -> "Recommendation":
        return cls(
            Candidate.from_config(c["candidate"]), float(c["seconds"]), tuple(c["seconds_ci"]),
            dict(c["terms"]), int(c["stored_bytes"]), float(c.get("ratio", 1.0)),
            tuple(c.get("ratio_ci", (1.0, 1.0))), dict(c.get("variables", {})), dict(c.get("facts", {})),
            bool(c.get("exact", True)), tuple(c.get("notes", ())), c.get("model_seconds"),
        )


@dataclass(frozen=True)
class DatasetAdvice:
    """The advice for one traced array."""

    name: str
    """``file::path`` of the array."""
    path: str
    library: str
    shape: tuple[int, ...]
    dtype: str
    pattern: str
    """One-line access pattern (``rows (1x32)``, ``mixed: ...``), reads and writes."""
    n_accesses: int
    procs: int
    objective: str
    current: Recommendation
    defaults: dict
    """``{"h5py": Recommendation, "zarr": Recommendation}``: the libraries' own defaults."""
    recommendation: Recommendation
    candidates: tuple[Recommendation, ...]
    """Evaluated candidates, best first (by the objective)."""
    explanation: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    n_generated: int = 0
    n_evaluated: int = 0
    data_range: float | None = None
    """max - min of the valid values (resolves relative error bounds); None when the data was not read."""
    traced_seconds: float | None = None
    """Measured time of the traced calls (slowest rank's summed ``dt``): the current layout's real time."""
    verdict: str = "change"
    """``keep`` (the recommendation is the current layout) or ``change``."""
    verdict_reason: str = ""
    tie_rule: str | None = None
    """The near-tie rule (``advisor.choice.TIE_RULES``) that chose the recommendation over the fastest, if any."""
    best_change: Recommendation | None = None
    """The best layout other than the current one (what ``keep`` turned down)."""
    rewrite_seconds: float | None = None
    """Predicted seconds to copy the array into the recommended layout (``change`` only)."""
    blocking: tuple[int, ...] | None = None
    """Block shape of a block-by-block (dask) program, when its reads are regular blocks on a grid."""
    idiom: Idiom | None = None
    """netCDF-4 file or xarray-written Zarr store: the advice also has an xarray form (``xarray_code``)."""
    whatifs: tuple[WhatIf, ...] = ()
    """Rewrites of the program's accesses (``advisor.whatif``) predicted on the current layout."""
    calibrated: bool = True
    """The predictions were calibrated on the trace's timings: speed-ups are then stated against the traced
    time, else against the predicted current time (comparing a measured time with uncalibrated predictions
    would mix the profile's error into the speed-up)."""

    run_seconds: float | None = None
    """The run as the trace sees it (from the trace's origin, the program's start under ``ioadvisor run``, to the
    end of its last traced call): the time around the modelled calls (the program's own indexing, opens, compute) stays in a claim about
    the run (``run_speedup``)."""
    switch_seconds: dict = field(default_factory=dict)
    """``{library: seconds}``: what the program's imports gain (negative) or lose in a layout of that other library
    (``advisor.runspan.switch_seconds``; only for a whole traced program): part of the run's claim for it."""

    def run_speedup(self, r: Recommendation | None = None, at: float | None = None) -> float | None:
        """Speed-up of the run (Amdahl: the time outside this array's calls unchanged) when ``r`` (default the
        recommendation) replaces the current layout; ``at``: ``r``'s seconds (an end of its interval)."""
        r = r or self.recommendation
        if not self.run_seconds:
            return None
        cur = self.current_seconds
        new = self.run_seconds - cur + (r.seconds if at is None else at) + (
            self.switch_seconds.get(r.library, 0.0) if r.library != self.library else 0.0)
        return self.run_seconds / new if new > 0 else float("inf")

    def speedup(self, other: Recommendation) -> float:
        return other.seconds / self.recommendation.seconds if self.recommendation.seconds > 0 else float("inf")

    @property
    def current_seconds(self) -> float:
        """The current layout's time: traced when the trace measured it and the predictions were calibrated on
        it, else predicted."""
        return self.traced_seconds if self.traced_seconds and self.calibrated else self.current.seconds

    def speedup_vs_current(self, r: Recommendation | None = None) -> float:
        """Speed-up of ``r`` (default the recommendation) over the traced current time."""
        r = r or self.recommendation
        return self.current_seconds / r.seconds if r.seconds > 0 else float("inf")

    def best_of(self, library: str) -> Recommendation | None:
        return next((r for r in self.candidates if r.library == library), None)

    def summary(self) -> str:
        """One line: the array, the verdict, the recommended layout and its gain over the current one."""
        rec = self.recommendation
        head = f"{self.name} ({'x'.join(map(str, self.shape))} {self.dtype}, {self.n_accesses} accesses): "
        if self.verdict == "keep":
            return head + f"keep {self.current.label}, {self.current_seconds:.3g} s"
        return head + (f"change to {rec.label}, {rec.seconds:.3g} s, {self.speedup_vs_current():.3g}x faster than "
                       f"{self.current.label} ({self.current_seconds:.3g} s)")

    def __repr__(self) -> str:
        return f"<DatasetAdvice {self.summary()}>"

    def to_dataframe(self):
        """The ranked table as a pandas DataFrame: one row per candidate, then the current layout and the
        libraries' defaults; seconds with their interval, stored bytes, speed-up and seconds per term."""
        import pandas as pd

        rows = [(str(i), r) for i, r in enumerate(self.candidates, 1)]
        rows += [("current", self.current)] + [(f"{k} default", d) for k, d in self.defaults.items()]
        terms = [t for t in TERM_MEANING if any(t in r.terms for _, r in rows)]
        cols: dict[str, list] = {k: [] for k in (
            "dataset", "choice", "recommended", "library", "chunks", "shards", "cache_bytes", "compressor",
            "error_bound", "seconds", "seconds_lo", "seconds_hi", "speedup_vs_current", "stored_bytes", "ratio")}
        cols.update({t: [] for t in terms})
        for tag, r in rows:
            c = r.candidate
            for k, v in (("dataset", self.name), ("choice", tag), ("recommended", c == self.recommendation.candidate),
                         ("library", c.library), ("chunks", c.chunks), ("shards", c.shards),
                         ("cache_bytes", c.cache_bytes), ("compressor", c.compressor),
                         ("error_bound", None if c.error_bound is None else str(c.error_bound)),
                         ("seconds", r.seconds), ("seconds_lo", r.seconds_ci[0]), ("seconds_hi", r.seconds_ci[1]),
                         ("speedup_vs_current", self.current_seconds / r.seconds if r.seconds > 0 else math.inf),
                         ("stored_bytes", r.stored_bytes), ("ratio", r.ratio)):
                cols[k].append(v)
            for t in terms:
                cols[t].append(r.terms.get(t, 0.0))
        return pd.DataFrame(cols)

    def to_json_obj(self) -> dict:
        return {
            "name": self.name, "path": self.path, "library": self.library, "shape": list(self.shape),
            "dtype": self.dtype, "pattern": self.pattern, "n_accesses": self.n_accesses, "procs": self.procs,
            "objective": self.objective,
            "current": self.current.to_json_obj(),
            "defaults": {k: v.to_json_obj() for k, v in self.defaults.items()},
            "recommendation": self.recommendation.to_json_obj(),
            "verdict": self.verdict, "verdict_reason": self.verdict_reason, "tie_rule": self.tie_rule,
            "traced_seconds": self.traced_seconds,
            "predicted_current_seconds": self.current.seconds,
            "predicted_current_model_seconds": self.current.model_seconds,
            "best_change": None if self.best_change is None else self.best_change.to_json_obj(),
            "best_change_speedup": None if self.best_change is None else self.speedup_vs_current(self.best_change),
            "rewrite_seconds": self.rewrite_seconds,
            "blocking": None if self.blocking is None else list(self.blocking),
            "idiom": None if self.idiom is None else self.idiom.get_config(),
            "xarray_code": self.xarray_code(),
            "what_if": [w.get_config() for w in self.whatifs], "calibrated": self.calibrated,
            "run_seconds": self.run_seconds, "switch_seconds": dict(self.switch_seconds), "run_speedup": self.run_speedup(),
            "best_change_run_speedup": None if self.best_change is None else self.run_speedup(self.best_change),
            "speedup_vs_current": self.speedup_vs_current(),
            "speedup_vs_defaults": {k: self.speedup(v) for k, v in self.defaults.items()},
            "candidates": [r.to_json_obj() for r in self.candidates],
            "explanation": list(self.explanation), "notes": list(self.notes),
            "n_generated": self.n_generated, "n_evaluated": self.n_evaluated, "data_range": self.data_range,
        }

    def get_config(self) -> dict:
        return {
            "name": self.name, "path": self.path, "library": self.library, "shape": list(self.shape),
            "dtype": self.dtype, "pattern": self.pattern, "n_accesses": self.n_accesses, "procs": self.procs,
            "objective": self.objective, "current": self.current.get_config(),
            "defaults": {k: v.get_config() for k, v in self.defaults.items()},
            "recommendation": self.recommendation.get_config(),
            "candidates": [r.get_config() for r in self.candidates],
            "explanation": list(self.explanation), "notes": list(self.notes),
            "n_generated": self.n_generated, "n_evaluated": self.n_evaluated, "data_range": self.data_range,
            "traced_seconds": self.traced_seconds, "verdict": self.verdict, "verdict_reason": self.verdict_reason,
            "tie_rule": self.tie_rule, "best_change": None if self.best_change is None else self.best_change.get_config(),
            "rewrite_seconds": self.rewrite_seconds, "blocking": None if self.blocking is None else list(self.blocking),
            "idiom": None if self.idiom is None else self.idiom.get_config(),
            "what_if": [w.get_config() for w in self.whatifs], "calibrated": self.calibrated,
            "run_seconds": self.run_seconds, "switch_seconds": dict(self.switch_seconds),
        }

    @classmethod
    def from_config(cls, c: dict) -> "DatasetAdvice":
        r = Recommendation.from_config
        return cls(
            c["name"], c["path"], c["library"], tuple(c["shape"]), c["dtype"], c["pattern"], int(c["n_accesses"]),
            int(c["procs"]), c["objective"], r(c["current"]), {k: r(v) for k, v in c["defaults"].items()},
            r(c["recommendation"]), tuple(r(x) for x in c["candidates"]), tuple(c.get("explanation", ())),
            tuple(c.get("notes", ())), int(c.get("n_generated", 0)), int(c.get("n_evaluated", 0)),
            c.get("data_range"), c.get("traced_seconds"), c.get("verdict", "change"), c.get("verdict_reason", ""),
            c.get("tie_rule"), None if c.get("best_change") is None else r(c["best_change"]),
            c.get("rewrite_seconds"), None if c.get("blocking") is None else tuple(c["blocking"]),
            None if c.get("idiom") is None else Idiom.from_config(c["idiom"]),
            tuple(WhatIf.from_config(w) for w in c.get("what_if", ())), bool(c.get("calibrated", True)),
            c.get("run_seconds"), dict(c.get("switch_seconds") or {}),
        )

    # ---- code to apply it -------------------------------------------------------------
    def h5py_kwargs(self) -> dict:
        """``create_dataset`` keyword arguments of the recommended HDF5 layout (the best HDF5 candidate
        when Zarr is recommended): chunks, compression filter, chunk cache (rdcc_*)."""
        rec = self.recommendation if self.recommendation.library == "hdf5" else self.best_of("hdf5")
        if rec is None:
            raise ValueError(f"{self.name}: no HDF5 candidate was evaluated")
        c = rec.candidate
        kw: dict[str, Any] = {"chunks": c.chunks}
        if c.compressor:
            kw.update(codec_of(c, self).hdf5_kwargs())
        if c.chunks is not None and c.cache_bytes is not None:
            kw.update(rdcc_nbytes=c.cache_bytes, rdcc_nslots=c.cache_slots)
        return kw

    def zarr_kwargs(self) -> dict:
        """``zarr.create_array`` keyword arguments of the recommended Zarr layout (or the best Zarr one)."""
        rec = self.recommendation if self.recommendation.library == "zarr" else self.best_of("zarr")
        if rec is None:
            raise ValueError(f"{self.name}: no Zarr candidate was evaluated")
        c = rec.candidate
        kw: dict[str, Any] = {"chunks": c.chunks, "shards": c.shards, "compressors": None}
        if c.compressor:
            kw.update(codec_of(c, self).zarr_codecs())
        return kw

    def xarray_code(self, rec: Recommendation | None = None) -> str | None:
        """The recommendation in xarray's terms (encoding and matching dask chunks) for netCDF-4 / xarray-Zarr
        data; None otherwise."""
        if self.idiom is None:
            return None
        c = (rec or self.recommendation).candidate
        cache = None if c.library != "hdf5" or c.chunks is None or c.cache_bytes is None else (
            c.cache_bytes, c.cache_slots or 8191)
        h5py_filter = None
        if c.library == "hdf5" and c.compressor and self.idiom.engine != "netcdf4":  # h5netcdf: h5py's keywords
            h5py_filter = hdf5_codec_source(c, self)[0]
        return xarray_code(self.idiom, c.library, c.chunks, c.shards, self.shape, self.blocking,
                           bool(c.compressor), cache, c.compressor, h5py_filter)

    def code(self, rec: Recommendation | None = None, target: str | None = None) -> str:
        """Copy-paste Python that creates this array in the recommended (or given) layout."""
        rec = rec or self.recommendation
        c = rec.candidate
        target = target or ("out.h5" if c.library == "hdf5" else "out.zarr")
        name = self.path.strip("/") or "data"
        shape, dtype = tuple(self.shape), self.dtype
        if c.library == "hdf5":
            imports = ["import h5py"]
            fkw = ""
            if c.chunks is not None and c.cache_bytes is not None:
                fkw = f", rdcc_nbytes={c.cache_bytes}, rdcc_nslots={c.cache_slots}"
            extra = ""
            if c.compressor:
                text, needs_plugin = hdf5_codec_source(c, self)
                extra = ", " + text
                if needs_plugin:
                    imports.append("import hdf5plugin")
            chunks = "None" if c.chunks is None else repr(tuple(c.chunks))
            return "\n".join(imports + [
                f"with h5py.File({target!r}, \"a\"{fkw}) as f:",
                f"    ds = f.create_dataset({name!r}, shape={shape!r}, dtype={dtype!r}, chunks={chunks}{extra})",
            ])
        imports = ["import zarr"]
        codec_kw = "compressors=None"
        if c.compressor:
            codec_kw, more = zarr_codec_source(c, self)
            imports += more
        shards = "None" if c.shards is None else repr(tuple(c.shards))
        return "\n".join(imports + [
            f"arr = zarr.create_array({target!r}, name={name!r}, shape={shape!r}, dtype={dtype!r},",
            f"                        chunks={tuple(c.chunks)!r}, shards={shards}, {codec_kw})",
        ])


@dataclass(frozen=True)
class NotAdvised:
    """A traced dataset (or input file) that gets no layout advice, and the one-line reason."""

    name: str
    """``file::path`` of the array, or the file."""
    path: str
    library: str
    shape: tuple[int, ...]
    dtype: str
    reason: str

    def get_config(self) -> dict:
        return {"name": self.name, "path": self.path, "library": self.library, "shape": list(self.shape),
                "dtype": self.dtype, "reason": self.reason}

    to_json_obj = get_config

    @classmethod
    def from_config(cls, c: dict) -> "NotAdvised":
        return cls(c["name"], c["path"], c["library"], tuple(c["shape"]), c["dtype"], c["reason"])


@dataclass(frozen=True)
class MinorDataset:
    """A dataset holding too little of the run's traced I/O time to be advised in full."""

    name: str
    traced_seconds: float
    n_accesses: int

    def get_config(self) -> dict:
        return {"name": self.name, "traced_seconds": self.traced_seconds, "n_accesses": self.n_accesses}

    @classmethod
    def from_config(cls, c: dict) -> "MinorDataset":
        return cls(c["name"], float(c["traced_seconds"]), int(c["n_accesses"]))


@dataclass(frozen=True)
class Advice:
    """The advisor's answer for a trace: one DatasetAdvice per dataset advised in full (most traced time
    first), and the rest summed up in ``minor``."""

    datasets: tuple[DatasetAdvice, ...]
    source: str = ""
    objective: str = "fastest"
    seconds: float = 0.0
    """Wall time the advisor took."""
    constraints: dict = field(default_factory=dict, compare=False)
    not_advised: tuple[NotAdvised, ...] = ()
    """Datasets of the trace the models cannot advise (scalars, vlen strings, ...), each with why."""
    minor: tuple[MinorDataset, ...] = ()
    traced_seconds: float = 0.0
    """The run's traced I/O time: every traced call of every dataset."""
    calibrations: dict = field(default_factory=dict, compare=False)
    """``{library: TraceCalibration.get_config()}`` applied to the predictions."""

    def minor_line(self) -> str:
        """One line for the datasets not advised in full ('' when there are none)."""
        if not self.minor:
            return ""
        t = sum(m.traced_seconds for m in self.minor)
        share = f"{100 * t / self.traced_seconds:.2g}%" if self.traced_seconds > 0 else "no"
        names = ", ".join(m.name.split("::")[-1] for m in self.minor[:6]) + (", ..." if len(self.minor) > 6 else "")
        return (f"{len(self.minor)} other dataset{'s' if len(self.minor) > 1 else ''} ({names}): "
                f"{sum(m.n_accesses for m in self.minor)} accesses, {t:.3g} s traced, {share} of the run's "
                "traced I/O time: not worth changing (pass --dataset NAME to advise one)")

    def dataset(self, name: str | None = None) -> DatasetAdvice:
        """The advice for dataset ``name`` (key, path or path without '/'); the only one when None."""
        if name is None:
            if len(self.datasets) != 1:
                raise InputError(f"{len(self.datasets)} datasets advised: name one of "
                                 f"{', '.join(d.path for d in self.datasets)}")
            return self.datasets[0]
        for d in self.datasets:
            if name in (d.name, d.path, d.path.lstrip("/")):
                return d
        raise InputError(f"no advice for dataset {name!r} (advised: {', '.join(d.path for d in self.datasets)})")

    def h5py_kwargs(self, name: str | None = None) -> dict:
        """``create_dataset`` kwargs: of dataset ``name``, or ``{path: kwargs}`` for every dataset."""
        if name is not None:
            return self.dataset(name).h5py_kwargs()
        return {d.path or d.name: d.h5py_kwargs() for d in self.datasets}  # a store-root zarr array: the store

    def zarr_kwargs(self, name: str | None = None) -> dict:
        """``zarr.create_array`` kwargs: of dataset ``name``, or ``{path: kwargs}`` for every dataset."""
        if name is not None:
            return self.dataset(name).zarr_kwargs()
        return {d.path or d.name: d.zarr_kwargs() for d in self.datasets}

    def to_json_obj(self) -> dict:
        """The ``--json`` document."""
        return {"source": self.source, "objective": self.objective, "seconds": self.seconds,
                "constraints": dict(self.constraints), "traced_seconds": self.traced_seconds,
                "calibrations": dict(self.calibrations), "datasets": [d.to_json_obj() for d in self.datasets],
                "not_advised": [n.to_json_obj() for n in self.not_advised],
                "minor": [m.get_config() for m in self.minor]}

    def to_json(self) -> str:
        return json.dumps(self.to_json_obj(), indent=1, allow_nan=True)

    def get_config(self) -> dict:
        return {"source": self.source, "objective": self.objective, "seconds": self.seconds,
                "constraints": dict(self.constraints), "datasets": [d.get_config() for d in self.datasets],
                "not_advised": [n.get_config() for n in self.not_advised],
                "minor": [m.get_config() for m in self.minor], "traced_seconds": self.traced_seconds,
                "calibrations": dict(self.calibrations)}

    @classmethod
    def from_config(cls, c: dict) -> "Advice":
        return cls(tuple(DatasetAdvice.from_config(d) for d in c["datasets"]), c.get("source", ""),
                   c.get("objective", "fastest"), float(c.get("seconds", 0.0)), dict(c.get("constraints", {})),
                   tuple(NotAdvised.from_config(n) for n in c.get("not_advised", ())),
                   tuple(MinorDataset.from_config(m) for m in c.get("minor", ())),
                   float(c.get("traced_seconds", 0.0)), dict(c.get("calibrations", {})))

    REPR_CHARS = 2000
    """``repr(advice)`` stays under this many characters (a notebook cell's echo)."""

    def __repr__(self) -> str:
        head = (f"<Advice for {self.source or 'a trace'}: {len(self.datasets)} dataset"
                f"{'s' if len(self.datasets) != 1 else ''} advised"
                + (f", {len(self.not_advised)} not advised" if self.not_advised else "")
                + (f", {len(self.minor)} minor" if self.minor else "") + f"; objective {self.objective}")
        lines = [head]
        budget = self.REPR_CHARS - len(head) - 120
        for i, d in enumerate(self.datasets):
            line = "  " + d.summary()
            line = line if len(line) <= 200 else line[:197] + "..."
            if len(line) + 1 > budget:
                lines.append(f"  ... and {len(self.datasets) - i} more (print(advice) shows them all)")
                break
            lines.append(line)
            budget -= len(line) + 1
        if not self.datasets:
            lines.append("  " + self.nothing_line()[:300])
        return "\n".join(lines) + ">"

    def _repr_html_(self) -> str:
        """Notebook display: per dataset the verdict, the ranked table and the access map
        (``advisor.report.fragment``)."""
        from advisor.report import fragment

        return fragment(self)

    def to_dataframe(self):
        """Every advised dataset's ranked table in one pandas DataFrame (``DatasetAdvice.to_dataframe``)."""
        import pandas as pd

        frames = [d.to_dataframe() for d in self.datasets]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def nothing_line(self) -> str:
        """The one line for a trace with nothing advisable: what was there and why none of it is advised."""
        where = self.source or "trace"
        if not self.not_advised:
            return f"nothing to advise in {where}: no h5py or zarr data access was recorded"
        by_reason: dict[str, list[str]] = {}
        for n in sorted(self.not_advised, key=lambda n: n.path):  # one order whatever the trace's id order
            by_reason.setdefault(n.reason, []).append(n.path)
        parts = [f"{', '.join(paths[:3])}{f' and {len(paths) - 3} more' if len(paths) > 3 else ''}: {reason}"
                 for reason, paths in by_reason.items()]
        return f"nothing to advise in {where}: " + "; ".join(parts)

    def __str__(self) -> str:
        if not self.datasets:
            return self.nothing_line() + "\n"
        parts = []
        for d in self.datasets:
            share = (f", {d.traced_seconds:.3g} s traced ({100 * d.traced_seconds / self.traced_seconds:.0f}% of "
                     "the run's I/O time)" if d.traced_seconds and self.traced_seconds > 0 else "")
            parts.append(f"{d.name}: {d.library} {'x'.join(map(str, d.shape))} {d.dtype}, {d.n_accesses} accesses"
                         + (f" on {d.procs} processes" if d.procs > 1 else "") + f" ({d.pattern}){share}")
            parts.append(f"verdict: {d.verdict}" + (f" ({d.verdict_reason})" if d.verdict_reason else ""))
            parts.append(f"objective: {d.objective}; {d.n_evaluated} of {d.n_generated} candidates evaluated")
            parts.append(format_table(d))
            parts.append("")
            parts += ["  " + s for s in d.explanation]
            parts.append("")
            parts.append("  Code:")
            parts += ["    " + line for line in d.code().splitlines()]
            xr_code = d.xarray_code()
            if xr_code:
                kind = "netCDF-4 file" if d.idiom.kind == "netcdf4" else "Zarr store written by xarray"
                parts.append(f"  In xarray ({kind}; dims {', '.join(d.idiom.dims)}):")
                parts += ["    " + line for line in xr_code.splitlines()]
            if d.notes:
                parts.append("")
                parts += ["  note: " + n for n in d.notes]
            parts.append("")
        parts += [f"{n.name}: not advised: {n.reason}" for n in self.not_advised]
        if self.minor:
            parts.append(self.minor_line())
        return "\n".join(parts).rstrip() + "\n"
