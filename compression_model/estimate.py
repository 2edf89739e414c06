"""Public API: what a compressor would give on this data, for this error bound and chunk shape.

``method``:
- ``"sampling"``: black-box, compress sampled blocks with the real codec (``sampling_estimator``);
- ``"graybox"``: the zPerf-style model (``compression_model.graybox`` + ``timemodel``), lossy codecs;
- ``"hybrid"``: both, combined by inverse-variance weighting of log ratio / log time (each 95% interval
  gives the variance), so the model is corrected by a few real compressions;
- ``"auto"``: the shipped choice, per codec by measurement (:func:`auto_method`; docs/compression-sampling.md):
  gray-box for ZFP on fields of >= 32 chunks too small for the sampling minimum (exact bit count of zfp's
  coder on sampled blocks: within 8% there, at about half the sampling cost), sampling for other fields, for SZ/SZ3 (the gray-box SZ models miss by 17-23% median and by
  up to 276% on NaN-masked fields) and for the lossless codecs (no gray-box model); the hybrid was not
  measured better for any codec.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from instrumentation.errors import InputError

from compression_model import sampling_estimator as se
from compression_model.codecs import Codec, get_codec
from compression_model.codecs.plugin import estimate_target
from compression_model.error_bound import ErrorBound, ErrorStats
from compression_model.safety import DataSafety, codec_problems, field_safety, scan

METHODS = ("auto", "sampling", "graybox", "hybrid")
Z95 = 1.959964


@dataclass(frozen=True)
class Estimate:
    """Predicted ratio and throughput of one (compressor, error bound, chunk shape) on one field.

    Throughputs are MB/s (1e6 B) of raw bytes; ``compress_seconds``/``time_ci`` are for the whole field;
    ``cost_seconds`` is what the estimate itself took (wall clock). Timings behind the throughputs are
    process CPU seconds (the time on an idle core: the codecs are single-threaded).
    """

    compressor: str
    error_bound: ErrorBound | None
    chunks: tuple
    ratio: float
    ratio_ci: tuple
    compress_mbps: float
    decompress_mbps: float
    compress_seconds: float
    time_ci: tuple
    method: str
    errors: ErrorStats | None
    problems: tuple  # reasons (safety.codec_problems) never to use this codec on this data
    cost_seconds: float
    sample_fraction: float
    notes: tuple = ()  # how the estimate was made when it could not follow the request (e.g. the cost budget)

    @property
    def safe(self) -> bool:
        return not self.problems

    def get_config(self) -> dict:
        return {
            "compressor": self.compressor,
            "error_bound": None if self.error_bound is None else self.error_bound.get_config(),
            "chunks": list(self.chunks), "ratio": self.ratio, "ratio_ci": list(self.ratio_ci),
            "compress_mbps": self.compress_mbps, "decompress_mbps": self.decompress_mbps,
            "compress_seconds": self.compress_seconds, "time_ci": list(self.time_ci), "method": self.method,
            "errors": None if self.errors is None else self.errors.get_config(),
            "problems": list(self.problems), "cost_seconds": self.cost_seconds,
            "sample_fraction": self.sample_fraction, "notes": list(self.notes),
        }

    @classmethod
    def from_config(cls, c: dict) -> "Estimate":
        return cls(
            c["compressor"], None if c["error_bound"] is None else ErrorBound.from_config(c["error_bound"]),
            tuple(c["chunks"]), c["ratio"], tuple(c["ratio_ci"]), c["compress_mbps"], c["decompress_mbps"],
            c["compress_seconds"], tuple(c["time_ci"]), c["method"],
            None if c["errors"] is None else ErrorStats.from_config(c["errors"]), tuple(c["problems"]),
            c["cost_seconds"], c["sample_fraction"], tuple(c.get("notes", ())),
        )


def resolve_codec(codec, error_bound, data_range) -> tuple[Codec, ErrorBound | None]:
    if isinstance(error_bound, str):
        error_bound = ErrorBound.parse(error_bound)
    if isinstance(codec, Codec):
        return codec, error_bound
    codec = get_codec(codec, error_bound, data_range)
    return codec, error_bound if codec.lossy else None


def estimate(data, codec, error_bound=None, chunks=None, method: str = "auto", *, sample_fraction: float = 0.01,
             data_range: float | None = None, target: str = "hdf5", seed: int = 0,
             safety: DataSafety | None = None) -> Estimate:
    """Estimate ratio and throughput of ``codec`` on ``data`` stored with chunk shape ``chunks``.

    ``data``: numpy array, h5py Dataset or zarr Array (only sampled blocks are read, except for the range).
    ``codec``: registry name or Codec. ``data_range``: range of the valid values for relative bounds; None
    -> scanned over the whole field (``safety.field_safety``, FieldTooLarge above its limit: pass the
    range). ``target``: "hdf5" compresses the
    sample through the real HDF5 filter, "zarr" through the Python binding zarr uses.
    """
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    if not 0 < sample_fraction <= 1:
        raise InputError(f"sample fraction must be in (0, 1], not {sample_fraction}")
    t0 = time.perf_counter()
    shape = tuple(int(s) for s in data.shape)
    chunks = shape if chunks is None else tuple(int(c) for c in chunks)
    if len(chunks) != len(shape) or any(c < 1 for c in chunks):
        raise InputError(f"chunks {chunks} do not fit an array of shape {shape}")
    chunks = tuple(min(c, s) for c, s in zip(chunks, shape))
    if safety is None:
        from compression_model.sampling import sample_blocks

        safety = scan(sample_blocks(data, sample_fraction, rng=seed).blocks)
    if data_range is None:
        bound = ErrorBound.parse(error_bound) if isinstance(error_bound, str) else error_bound
        # rel:X is X times the whole field's range: a sample can miss the extremes
        data_range = (field_safety(data, sample=safety).data_range if bound is not None and bound.mode == "rel"
                      and not isinstance(codec, Codec) else safety.data_range)
    codec, error_bound = resolve_codec(codec, error_bound, data_range)
    problems = tuple(codec_problems(codec, safety, target))
    if target == "hdf5" and safety.n_nan and not codec.hdf5_handles_nan:
        target = "zarr"  # measure with the Python binding rather than crash in the HDF5 filter
    n_chunks = math.prod(se.chunk_grid(shape, chunks))
    n_points = math.prod(shape)
    chosen = auto_method(codec, safety, n_chunks, sample_fraction * n_points) if method == "auto" else method
    if chosen != "sampling" and not codec.lossy:
        chosen = "sampling"  # the gray-box model covers the lossy codecs only
    notes = []

    raw = int(np.prod(shape, dtype=np.int64)) * np.dtype(data.dtype).itemsize
    if chosen in ("sampling", "hybrid"):
        target, binding_note = estimate_target(codec, target)  # no hdf5plugin: the codec's Python binding
        notes += [binding_note] if binding_note else []
        m = se.measure_blocks(data, codec, chunks, sample_fraction=sample_fraction, target=target, seed=seed,
                              data_range=data_range)
        (stored,), (comp,), (decomp,) = se.scale_up(m, shape, chunks)
        b_stored, b_comp, _ = se.bootstrap(m, shape, chunks, seed=seed)
        ratio = raw / stored
        ratio_ci = tuple(float(v) for v in np.percentile(raw / b_stored, [2.5, 97.5]))
        lo, hi = np.percentile(b_comp, [2.5, 97.5])
        # content variability (bootstrap), widened by this estimate's own timing noise (anchor, the two timings
        # of each block) and the estimator's time error measured by calibrate against whole-field writes
        q_lo, q_hi = _sampling_log_q(codec.codec_id)
        own = Z95 * math.hypot(se.anchor_log_sd(m), m.repeat_log_sd)
        time_ci = (float(min(lo, comp) * math.exp(-math.hypot(min(q_lo, 0.0), own))),
                   float(max(hi, comp) * math.exp(math.hypot(max(q_hi, 0.0), own))))
        errors = m.errors
        notes += se.budget_notes(m, shape, chunks, sample_fraction)
    if chosen in ("graybox", "hybrid"):
        if codec.codec_id in ("sz", "sz3") and safety.has_nonfinite:
            notes.append("the gray-box SZ model is far off on NaN-masked fields (ratio ~1.8 where the filter "
                         "gives 10-25: docs/compression-sampling.md); method=auto samples instead")
        g_ratio, g_ratio_ci, g_comp, g_decomp, g_time_ci = _graybox(data, codec, chunks, sample_fraction, seed)
        if chosen == "graybox":
            ratio, ratio_ci, comp, decomp, time_ci = g_ratio, g_ratio_ci, g_comp, g_decomp, g_time_ci
            errors = ErrorStats.expected(codec.tolerance, data_range)
        else:
            ratio, ratio_ci = _combine(ratio, ratio_ci, g_ratio, g_ratio_ci)
            new_comp, time_ci = _combine(comp, time_ci, g_comp, g_time_ci)
            decomp *= new_comp / comp
            comp = new_comp
    return Estimate(
        compressor=codec.codec_id, error_bound=error_bound, chunks=chunks, ratio=float(ratio),
        ratio_ci=ratio_ci, compress_mbps=raw / comp / 1e6, decompress_mbps=raw / decomp / 1e6,
        compress_seconds=float(comp), time_ci=time_ci, method=chosen, errors=errors, problems=problems,
        cost_seconds=time.perf_counter() - t0, sample_fraction=sample_fraction, notes=tuple(notes),
    )


def _sampling_log_q(codec_id: str) -> tuple[float, float]:
    """2.5/97.5% quantiles of log(sampling estimate / real whole-field compression time), from calibration."""
    from compression_model.profile import load_profile

    try:
        return tuple(load_profile().time_params(codec_id, "compress")["sampling_log_q"])
    except KeyError:
        return 0.0, 0.0  # uncalibrated codec: the interval holds the content and timing variability only


GRAYBOX_MIN_CHUNKS = 32
"""ZFP's gray-box ratio held within 8% on every field of >= 32 chunks at about half the sampling cost; on
fewer chunks (edge-chunk effects) it reached 36% (docs/compression-sampling.md)."""


def auto_method(codec: Codec, safety: DataSafety, n_chunks: int, sample_points: float) -> str:
    """The estimator measured best for this codec (docs/compression-sampling.md, 22 real fields and a 256 MB
    field vs the HDF5 filters): gray-box for ZFP on finite data with many chunks while the requested sample is
    below the sampling estimator's minimum (its fixed work dominates there: cost 7-37% vs 8-125%); sampling
    otherwise (on 256 MB it was cheaper, 4.1% vs 6.5%, and its time 17% vs 47% off)."""
    if (codec.codec_id == "zfp" and not safety.has_nonfinite and n_chunks >= GRAYBOX_MIN_CHUNKS
            and sample_points < se.MIN_BLOCKS * se.MIN_TILE_POINTS):
        return "graybox"
    return "sampling"


def _graybox(data, codec, chunks, sample_fraction, seed):
    """(ratio, ratio_ci, compress s, decompress s, time_ci) from the gray-box ratio and time models."""
    try:
        from compression_model.graybox import MIN_SAMPLE_POINTS, graybox_ratio
        from compression_model.sampling import sample_blocks
        from compression_model.timemodel import predict_time
    except ImportError as exc:
        raise ValueError(f"gray-box model not available ({exc}); use method=sampling") from exc
    # chunk-aligned pieces, with the point floor the gray-box was validated with (docs/compression-validation.md)
    sample = sample_blocks(data, sample_fraction, chunks=chunks, rng=seed, min_points=MIN_SAMPLE_POINTS)
    r = graybox_ratio(sample, codec.codec_id, codec.tolerance, chunks=chunks)
    t = predict_time(r.counts, codec.codec_id)
    return (float(r.ratio), tuple(float(v) for v in r.ratio_ci), float(t.compress_s), float(t.decompress_s),
            tuple(float(v) for v in t.compress_ci))


def _combine(x1, ci1, x2, ci2):
    """Inverse-variance combination in log space of two estimates with 95% intervals."""
    def log_sd(ci):
        lo, hi = ci
        return max((math.log(hi) - math.log(lo)) / (2 * Z95), 1e-6)

    s1, s2 = log_sd(ci1), log_sd(ci2)
    w1, w2 = 1 / s1**2, 1 / s2**2
    mu = (w1 * math.log(x1) + w2 * math.log(x2)) / (w1 + w2)
    sd = (w1 + w2) ** -0.5
    return math.exp(mu), (math.exp(mu - Z95 * sd), math.exp(mu + Z95 * sd))
