"""Advice records: what the advisor recommends per dataset, why, and the code to apply it.

``Recommendation`` is one evaluated candidate (layout + predicted seconds with
its 95% interval, term breakdown, stored size); ``DatasetAdvice`` holds the
ranked candidates of one array with the current layout and the libraries'
defaults for comparison, and a plain-language explanation computed from those
predictions; ``Advice`` is the whole answer (``advisor.advise``). All are
frozen dataclasses with a JSON round trip (``get_config``/``from_config``).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

from advisor.candidates import Candidate
from advisor.idiom import Idiom, xarray_code
from advisor.terms import TERM_MEANING
from advisor.whatif import CALL_DOMINATES, WhatIf
from iomodel.layout import chunks_text, format_bytes
from compression_model.error_bound import ErrorBound


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

    def run_speedup(self, r: Recommendation | None = None, at: float | None = None) -> float | None:
        """Speed-up of the run (Amdahl: the time outside this array's calls unchanged) when ``r`` (default the
        recommendation) replaces the current layout; ``at``: ``r``'s seconds (an end of its interval)."""
        r = r or self.recommendation
        if not self.run_seconds:
            return None
        cur = self.current_seconds
        new = self.run_seconds - cur + (r.seconds if at is None else at)
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
            "run_seconds": self.run_seconds, "run_speedup": self.run_speedup(),
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
            "run_seconds": self.run_seconds,
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
            c.get("run_seconds"),
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
            kw.update(_codec(c, self).hdf5_kwargs())
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
            kw.update(_codec(c, self).zarr_codecs())
        return kw

    def xarray_code(self, rec: Recommendation | None = None) -> str | None:
        """The recommendation in xarray's terms (encoding and matching dask chunks) for netCDF-4 / xarray-Zarr
        data; None otherwise."""
        if self.idiom is None:
            return None
        c = (rec or self.recommendation).candidate
        cache = None if c.library != "hdf5" or c.chunks is None or c.cache_bytes is None else (
            c.cache_bytes, c.cache_slots or 8191)
        return xarray_code(self.idiom, c.library, c.chunks, c.shards, self.shape, self.blocking,
                           bool(c.compressor), cache, c.compressor)

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


def _codec(c: Candidate, adv: DatasetAdvice):
    from compression_model.codecs import get_codec

    if c.error_bound is None:
        return get_codec(c.compressor)
    return get_codec(c.compressor, ErrorBound("abs", resolved_bound(c, adv)))


def resolved_bound(c: Candidate, adv: DatasetAdvice) -> float:
    """Absolute error bound of a lossy candidate: abs as given, rel x the data range the search measured."""
    if c.error_bound.mode == "abs":
        return c.error_bound.value
    if adv.data_range is None:
        raise ValueError(f"{adv.name}: relative error bound but no data range was measured")
    return c.error_bound.absolute(adv.data_range)


def hdf5_codec_source(c: Candidate, adv: DatasetAdvice) -> tuple[str, bool]:
    """Source text of the create_dataset compression arguments, and whether hdf5plugin is needed."""
    codec = _codec(c, adv)
    cfg = codec.get_config()
    name = c.compressor
    if name == "gzip":
        return f"compression=\"gzip\", compression_opts={cfg['level']}", False
    if name == "sz3":
        return f"**hdf5plugin.SZ3(absolute={codec.tolerance!r})", True
    if name == "sz":
        return f"**hdf5plugin.SZ(absolute={codec.tolerance!r})", True
    if name == "zfp":
        return f"**hdf5plugin.Zfp(accuracy={codec.tolerance!r})", True
    if name.startswith("blosc-"):
        shuffle = {"noshuffle": "NOSHUFFLE", "shuffle": "SHUFFLE", "bitshuffle": "BITSHUFFLE"}[cfg["shuffle"]]
        return (f"**hdf5plugin.Blosc(cname={cfg['cname']!r}, clevel={cfg['clevel']}, "
                f"shuffle=hdf5plugin.Blosc.{shuffle})"), True
    if name == "zstd":
        return f"**hdf5plugin.Zstd(clevel={cfg['level']})", True
    if name == "lz4":
        return "**hdf5plugin.LZ4()", True
    if name == "bitshuffle-lz4":
        return "**hdf5plugin.Bitshuffle(cname=\"lz4\")", True
    raise ValueError(f"no HDF5 code for compressor {name!r}")


def zarr_codec_source(c: Candidate, adv: DatasetAdvice) -> tuple[str, list[str]]:
    """Source text of the create_array codec arguments and the imports they need."""
    codec = _codec(c, adv)
    cfg = codec.get_config()
    name = c.compressor
    if name == "sz3":
        return (f"serializer=SZ3Codec(mode=\"abs\", value={codec.tolerance!r}), compressors=None",
                ["from compression_model.zarr_sz3 import SZ3Codec"])
    if name == "zfp":
        return (f"serializer=zarr.codecs.numcodecs.ZFPY(mode=4, tolerance={codec.tolerance!r}), compressors=None",
                ["import zarr.codecs.numcodecs"])
    if name.startswith("blosc-"):
        return (f"compressors=[zarr.codecs.BloscCodec(cname={cfg['cname']!r}, clevel={cfg['clevel']}, "
                f"shuffle={cfg['shuffle']!r})]", [])
    if name == "bitshuffle-lz4":
        return "compressors=[zarr.codecs.BloscCodec(cname=\"lz4\", clevel=5, shuffle=\"bitshuffle\")]", []
    if name == "zstd":
        return f"compressors=[zarr.codecs.ZstdCodec(level={cfg['level']})]", []
    if name == "gzip":
        return f"compressors=[zarr.codecs.GzipCodec(level={cfg['level']})]", []
    if name == "lz4":
        return (f"compressors=[zarr.codecs.numcodecs.LZ4(acceleration={cfg['acceleration']})]",
                ["import zarr.codecs.numcodecs"])
    raise ValueError(f"no Zarr code for compressor {name!r}")


# ---------------------------------------------------------------------------- explanation

def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole > 0 else "0%"


def _dominant(r: Recommendation) -> tuple[str, float]:
    return max(r.terms.items(), key=lambda kv: kv[1]) if r.terms else ("", 0.0)


def pitfalls(r: Recommendation, pattern_reads=None) -> list[str]:
    """What makes a layout slow, read off its predicted variables and geometry (empty when nothing stands out)."""
    f, v, c = r.facts, r.variables, r.candidate
    out = []
    if c.library == "hdf5" and c.chunks is not None and f.get("cache_bytes") is not None:
        if f["chunk_bytes"] > f["cache_bytes"] and f["cache_bytes"] > 0:
            if c.compressor:
                out.append(f"its {format_bytes(f['chunk_bytes'])} chunks are larger than the "
                           f"{format_bytes(f['cache_bytes'])} HDF5 chunk cache, so every access decompresses "
                           f"whole chunks again ({format_bytes(v.get('s_decode', 0))} decoded)")
            else:
                out.append(f"its {format_bytes(f['chunk_bytes'])} chunks are larger than the "
                           f"{format_bytes(f['cache_bytes'])} HDF5 chunk cache, so HDF5 bypasses the cache and "
                           f"reads piecewise ({v.get('n_rdisk', 0) + v.get('n_cache', 0):.0f} file requests)")
    if c.library == "zarr" and f.get("files_per_access", 0) >= 8:
        out.append(f"each access opens about {f['files_per_access']:.0f} chunk files")
    elif f.get("chunks_per_access", 0) >= 8:
        out.append(f"each access visits about {f['chunks_per_access']:.0f} chunks")
    if f.get("read_amplification", 0) >= 4:
        out.append(f"it reads {f['read_amplification']:.0f}x the bytes the program asked for "
                   + ("(sieve-buffer windows around small selections)" if c.chunks is None
                      else "(whole chunks around small selections)"))
    if f.get("partial_writes", 0) >= 0.2:
        out.append(f"{100 * f['partial_writes']:.0f}% of the chunk writes are partial: "
                   "read-modify-write of the chunk" + (" (the whole shard for Zarr)" if c.shards else ""))
    return out


def _gain_interval(adv: DatasetAdvice, r: Recommendation) -> str:
    """The speed-up's 95% interval: the current time over the ends of ``r``'s interval."""
    lo, hi = r.seconds_ci
    if not (lo > 0 and hi > 0):
        return "interval unknown"
    return f"95% interval {adv.current_seconds / hi:.3g}-{adv.current_seconds / lo:.3g}x"


def explain(adv: DatasetAdvice, reads=None, writes=None) -> list[str]:
    """Why the winner wins, in sentences computed from the predictions."""
    rec, cur = adv.recommendation, adv.current
    out = []
    ci = rec.seconds_ci
    if adv.traced_seconds:
        model = f", {cur.model_seconds:.3g} s before calibration" if cur.model_seconds is not None else ""
        out.append(f"The traced calls took {adv.traced_seconds:.3g} s; the model predicts {cur.seconds:.3g} s "
                   f"for the current layout{model}.")
    if adv.verdict == "keep":
        out.append(f"Verdict: keep the current layout ({cur.label}): {adv.verdict_reason}.")
        alt = adv.best_change
        if alt is not None:
            out.append(f"Best change: {alt.label}, predicted {alt.seconds:.3g} s (95% interval "
                       f"{alt.seconds_ci[0]:.3g}-{alt.seconds_ci[1]:.3g} s), {adv.speedup_vs_current(alt):.3g}x "
                       f"({_gain_interval(adv, alt)}).")
    else:
        head = (f"Verdict: change to {rec.label}, predicted {rec.seconds:.3g} s (95% interval {ci[0]:.3g}-"
                f"{ci[1]:.3g} s) for the traced {adv.pattern or 'accesses'}")
        cmp = [f"{adv.speedup_vs_current():.3g}x faster than the current layout "
               f"({adv.current_seconds:.3g} s {'traced' if adv.traced_seconds and adv.calibrated else 'predicted'}; "
               f"{_gain_interval(adv, rec)})"]
        for k, d in adv.defaults.items():
            cmp.append(f"{adv.speedup(d):.3g}x vs {k}'s default {d.label} ({d.seconds:.3g} s)")
        out.append(head + ": " + "; ".join(cmp) + ".")
        run = adv.run_speedup()
        if run is not None:
            lo, hi = adv.run_speedup(at=ci[1]), adv.run_speedup(at=ci[0])
            out.append(f"For the run ({adv.run_seconds:.3g} s from its start to its last call, and to its exit when "
                       "measured (notes), "
                       f"{_pct(adv.run_seconds - adv.current_seconds, adv.run_seconds)} of it outside this array's "
                       f"calls, which no layout changes): {run:.3g}x (95% interval {lo:.3g}-{hi:.3g}x).")
        if adv.rewrite_seconds is not None:
            out.append(f"Rewriting the array into it costs about {adv.rewrite_seconds:.3g} s (read in the current "
                       "layout, write in the new one); it pays off after "
                       f"{adv.rewrite_seconds / max(adv.current_seconds - rec.seconds, 1e-12):.2g} runs like this one.")
    call = cur.terms.get("t_call", 0.0)
    if cur.seconds > 0 and call >= CALL_DOMINATES * cur.seconds:
        out.append(f"Per-call overhead dominates: t_call is {_pct(call, cur.seconds)} of the current layout's time "
                   f"({cur.variables.get('n_calls', 0):.0f} library calls); no layout removes it, fewer calls do.")
    for w in adv.whatifs:
        gain = adv.current_seconds / w.seconds if w.seconds > 0 else math.inf
        out.append(f"What-if (program change, same layout): {w.description}: {w.n_calls} calls, predicted "
                   f"{w.seconds:.3g} s, {gain:.3g}x faster than the current {adv.current_seconds:.3g} s "
                   "(`ioadvisor verify` measures it).")
    if adv.tie_rule:
        out.append(f"Several layouts are predicted within the model's resolution of the fastest; chosen by the "
                   f"near-tie rule: {adv.tie_rule}.")
    if adv.blocking is not None:
        # "dask-style" only where the program is known to be xarray/dask; a C or MPI program tiles by rank or step
        how = " (dask-style chunks)" if adv.idiom is not None else ""
        out.append(f"The program reads regular {'x'.join(map(str, adv.blocking))} blocks on a grid{how}: "
                   "chunk shapes that line up with them are preferred among near-ties.")
    term, t = _dominant(rec)
    if term:
        out.append(f"Its time is dominated by {term} ({_pct(t, rec.seconds)}: {TERM_MEANING.get(term, term)}).")
    if adv.verdict == "keep":
        return out
    if cur.candidate != rec.candidate and cur.seconds > rec.seconds:
        gains = {k: cur.terms.get(k, 0.0) - rec.terms.get(k, 0.0) for k in set(cur.terms) | set(rec.terms)}
        k = max(gains, key=gains.get)
        why = pitfalls(cur)
        out.append(f"Against the current layout ({cur.label}) the biggest saving is in {k} "
                   f"({cur.terms.get(k, 0.0):.3g} s -> {rec.terms.get(k, 0.0):.3g} s: {TERM_MEANING.get(k, k)})"
                   + (": " + "; ".join(why) if why else "") + ".")
    for k, d in adv.defaults.items():
        why = pitfalls(d)
        if why and d.candidate != rec.candidate and d.seconds > rec.seconds:
            out.append(f"{k}'s default ({d.label}) is slower because " + "; ".join(why) + ".")
    other = next((r for r in adv.candidates if r.library != rec.library), None)
    if other is not None:
        oterm, ot = _dominant(other)
        out.append(f"Best {other.library} alternative: {other.label} at {other.seconds:.3g} s "
                   f"({other.seconds / rec.seconds if rec.seconds > 0 else float('inf'):.3g}x slower; dominated by "
                   f"{oterm}, {_pct(ot, other.seconds)}).")
    if rec.candidate.compressor:
        codec_t = rec.terms.get("t_compress", 0.0) + rec.terms.get("t_decompress", 0.0)
        plain = next((r for r in adv.candidates if r.candidate == rec.candidate.with_codec(None, None)), None)
        tail = f"; uncompressed it would take {plain.seconds:.3g} s" if plain is not None else ""
        out.append(f"{rec.candidate.compressor} stores {rec.ratio:.3g}x less ({format_bytes(rec.stored_bytes)}) "
                   f"for {codec_t:.3g} s of (de)compression{tail}.")
    else:
        coded = next((r for r in adv.candidates if r.candidate.compressor), None)
        if coded is not None:
            out.append(f"Compression does not pay here: the best compressed candidate ({coded.label}) "
                       f"is predicted at {coded.seconds:.3g} s for {format_bytes(coded.stored_bytes)} stored.")
    mine = pitfalls(rec)
    if mine:
        out.append("Caveat for the recommended layout: " + "; ".join(mine) + ".")
    return out


# ---------------------------------------------------------------------------- table and Advice

def _ci(r: Recommendation) -> str:
    lo, hi = r.seconds_ci
    return f"{r.seconds:.3g} [{lo:.3g}, {hi:.3g}]" if hi > lo else f"{r.seconds:.3g}"


def _terms(r: Recommendation, n: int = 3) -> str:
    big = sorted(((k, t) for k, t in r.terms.items() if t > 0), key=lambda kv: -kv[1])[:n]
    return " ".join(f"{k[2:]}={_pct(t, r.seconds)}" for k, t in big)


def format_table(adv: DatasetAdvice) -> str:
    """The ranked table of one dataset: candidates, then the current layout and the defaults."""
    head = ["#", "library", "chunks", "cache/shards", "codec", "seconds [95% CI]", "terms", "stored",
            "vs current", "vs h5py", "vs zarr"]
    rows = []

    def row(tag: str, r: Recommendation) -> list[str]:
        c = r.candidate
        chunks = chunks_text(c.chunks)
        cs = c.cache_or_shards
        codec = "-" if not c.compressor else c.compressor + (f" {c.error_bound}" if c.error_bound else "")
        sp = [f"{o / r.seconds:.3g}x" if r.seconds > 0 and o is not None else "-"
              for o in (adv.current_seconds, *(d.seconds if d is not None else None
                                               for d in (adv.defaults.get("h5py"), adv.defaults.get("zarr"))))]
        return [tag, c.library, chunks, cs, codec, _ci(r), _terms(r), format_bytes(r.stored_bytes)] + sp

    for i, r in enumerate(adv.candidates, 1):
        rows.append(row(str(i), r))
    rows.append(row("current", adv.current))
    for k, d in adv.defaults.items():
        rows.append(row(f"{k} default", d))
    for w in adv.whatifs:  # the current layout, the program's accesses rewritten
        rows.append(row(f"what-if {w.kind}", replace(adv.current, seconds=w.seconds, seconds_ci=w.seconds_ci,
                                                     terms=w.terms)))
    widths = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]
    lines = ["  ".join(v.ljust(w) if i < 5 or i == 6 else v.rjust(w) for i, (v, w) in enumerate(zip(x, widths)))
             .rstrip() for x in [head] + rows]
    return "\n".join(lines)


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
                raise ValueError(f"{len(self.datasets)} datasets advised: name one of "
                                 f"{', '.join(d.path for d in self.datasets)}")
            return self.datasets[0]
        for d in self.datasets:
            if name in (d.name, d.path, d.path.lstrip("/")):
                return d
        raise KeyError(f"no advice for dataset {name!r} (advised: {', '.join(d.path for d in self.datasets)})")

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
        for n in self.not_advised:
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
