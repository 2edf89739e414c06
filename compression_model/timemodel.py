"""Compression/decompression time with a 95% interval (Liu, Yang, Jin's per-stage surrogate).

t = sum over stages of coef_stage * count_stage, the counts coming from the gray-box model
(:class:`~compression_model.graybox.StageCounts`). Every codec has a per-call term (one ``ds[...] = x``:
dataset/pipeline set-up, the filter's own initialisation, e.g. the HDF5 SZ3 filter's ~15 ms) and a
per-chunk term, then:

- SZ3/SZ: per chunk (filter call, header, zstd frame), prediction+quantization (n points),
  histogram+codebook (n chunks x distinct codes), Huffman encoding (encoded bytes), lossless pass (bytes
  into zstd);
- ZFP: per chunk, per 4^d block (transform), output bytes (bit-plane coding);
- lossless codecs: per chunk, input bytes, output bytes.

Coefficients are fitted on this machine by :func:`compression_model.calibrate.calibrate` (non-negative
least squares on relative error, through the real HDF5 filters). The 95% interval combines the 2.5/97.5%
quantiles q of the model's leave-one-out log residuals (asymmetric: the fit is biased on some chunk shapes)
and the system's repeat-timing spread s_s: t * exp(-sqrt(q_lo^2 + (1.96 s_s)^2)) .. t * exp(+sqrt(q_hi^2 + ...)).
"""
from __future__ import annotations

from dataclasses import dataclass, asdict
import math

import numpy as np

_Z95 = 1.959964
#: stage name -> count it multiplies, per codec family
STAGES = {
    "sz": ("per_call", "per_chunk", "predict_quantize", "histogram_codebook", "huffman_encode", "lossless"),
    "zfp": ("per_call", "per_chunk", "transform", "bitplane_coding"),
    "lossless": ("per_call", "per_chunk", "input", "output"),
}


def family(codec: str) -> str:
    return "sz" if codec in ("sz", "sz3") else "zfp" if codec == "zfp" else "lossless"


def stage_counts(counts, codec: str) -> np.ndarray:
    """The counted quantities multiplying each stage coefficient (STAGES[family(codec)] order)."""
    f = family(codec)
    if f == "sz":
        return np.array([1.0, counts.n_chunks, counts.n_points, counts.n_chunks * counts.n_codes,
                         counts.huffman_bytes, counts.lossless_in_bytes], dtype=float)
    if f == "zfp":
        return np.array([1.0, counts.n_chunks, counts.n_blocks, counts.out_bytes], dtype=float)
    return np.array([1.0, counts.n_chunks, counts.n_points * counts.itemsize, counts.out_bytes], dtype=float)


def lossless_counts(n_points: int, itemsize: int, n_chunks: int, ratio: float):
    """StageCounts of a lossless codec whose ratio is known (e.g. from the sampling estimator)."""
    from .graybox import StageCounts

    return StageCounts(n_points=int(n_points), itemsize=int(itemsize), n_chunks=int(n_chunks),
                       out_bytes=n_points * itemsize / ratio)


@dataclass(frozen=True)
class TimeEstimate:
    """Predicted whole-field seconds with 95% intervals, and the compression time per stage."""

    codec: str
    n_bytes: int
    compress_s: float
    compress_ci: tuple
    decompress_s: float
    decompress_ci: tuple
    stages: dict  # stage name -> predicted compression seconds

    @property
    def compress_mbps(self) -> float:
        return self.n_bytes / self.compress_s / 1e6

    @property
    def decompress_mbps(self) -> float:
        return self.n_bytes / self.decompress_s / 1e6

    def get_config(self) -> dict:
        d = asdict(self)
        d["compress_ci"] = list(self.compress_ci)
        d["decompress_ci"] = list(self.decompress_ci)
        return d

    @classmethod
    def from_config(cls, c: dict) -> "TimeEstimate":
        c = dict(c)
        c["compress_ci"] = tuple(c["compress_ci"])
        c["decompress_ci"] = tuple(c["decompress_ci"])
        return cls(**c)


def _interval(t: float, params: dict) -> tuple:
    sys_ = _Z95 * params["log_sigma_sys"]
    q_lo, q_hi = params["log_q"]
    return (t * math.exp(-math.hypot(min(q_lo, 0.0), sys_)), t * math.exp(math.hypot(max(q_hi, 0.0), sys_)))


def predict_time(counts, codec_name: str, profile=None) -> TimeEstimate:
    """Seconds to compress/decompress the whole field through the HDF5 filter, with 95% intervals."""
    from .profile import load_profile

    profile = profile or load_profile()
    x = stage_counts(counts, codec_name)
    out = {}
    for direction in ("compress", "decompress"):
        params = profile.time_params(codec_name, direction)
        if len(params["coef"]) != x.size or "log_q" not in params:
            raise KeyError(f"compression profile's {codec_name} time model predates the per-call term; "
                           f"run `ioadvisor calibrate`")
        contrib = x * np.asarray(params["coef"], dtype=float)
        t = max(float(contrib.sum()), 1e-9)
        out[direction] = (t, _interval(t, params), contrib)
    stages = dict(zip(STAGES[family(codec_name)], (float(c) for c in out["compress"][2])))
    return TimeEstimate(codec_name, int(counts.n_points * counts.itemsize), out["compress"][0],
                        out["compress"][1], out["decompress"][0], out["decompress"][1], stages)


def fit_stage_model(X: np.ndarray, t: np.ndarray, repeat_log_sd: np.ndarray) -> dict:
    """Non-negative least squares of t ~ X @ coef on relative error; leave-one-out log residuals (spread and
    2.5/97.5% quantiles).

    ``repeat_log_sd``: per-row spread of log(repeat time / median) (system variability).
    """
    from iomodel.nnls import nnls

    X = np.asarray(X, float)
    t = np.asarray(t, float)
    colscale = np.maximum(X.max(axis=0), 1e-30)  # conditioning: columns span 1 .. 1e9
    A = (X / colscale) / t[:, None]
    coef_s, _ = nnls(A, np.ones(len(t)))
    loo = []
    for i in range(len(t)):
        keep = np.arange(len(t)) != i
        c_i, _ = nnls(A[keep], np.ones(keep.sum()))
        loo.append(math.log(t[i] / max(float((X[i] / colscale) @ c_i), 1e-12)))
    loo = np.array(loo)
    return {"coef": list(coef_s / colscale), "log_sigma_model": float(np.sqrt(np.mean(loo ** 2))),
            "log_q": [float(v) for v in np.percentile(loo, [2.5, 97.5])],
            "log_sigma_sys": float(np.sqrt(np.mean(np.square(repeat_log_sd)))), "n_fit": int(len(t))}
