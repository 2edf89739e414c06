"""Fit the compression profile on this machine: gray-box ratio coefficients and per-stage time coefficients.

Only synthetic fields are used (Gaussian random fields with power spectra k^-beta, rough to smooth, 2-D
and 3-D, with and without a flat masked region), so the validation on real fields
(benchmarks/validation/compression_validation.py) stays out of sample. Everything goes through the real HDF5
filters (h5py + hdf5plugin, in-memory files) with the chunk shapes the advisor considers.

    python -m compression_model.calibrate [--quick] [--out compression_model/profiles/default.json]
"""
from __future__ import annotations

import argparse
import datetime
import math
import platform
import statistics
import time

import numpy as np

from .graybox import TERMS, StageCounts, graybox_ratio, tile_terms
from .profile import CompressionProfile, DEFAULT_PATH, save_profile
from .sampling_estimator import measure_blocks, scale_up, steady_allocator
from .sampling import sample_blocks
from .timemodel import fit_stage_model, stage_counts

LOSSY = ("sz3", "sz", "zfp")
REL_BOUNDS = (1e-2, 1e-3, 1e-4, 1e-5)


def synthetic_field(shape, beta: float, rng, masked: bool = False) -> np.ndarray:
    """Gaussian random field with isotropic power spectrum ~ k^-beta (float32); optional flat region."""
    k2 = sum(np.meshgrid(*[np.fft.fftfreq(n) ** 2 for n in shape], indexing="ij", sparse=True))
    amp = np.where(k2 > 0, np.power(np.maximum(k2, 1e-12), -beta / 4.0), 0.0)
    noise = rng.standard_normal(shape)
    f = np.real(np.fft.ifftn(np.fft.fftn(noise) * amp))
    f = (f - f.mean()) / (f.std() or 1.0)
    if masked:  # land/ocean-like mask filled with a constant, as fill-replaced real fields look
        f[f > 0.8] = 0.8
    return np.ascontiguousarray(f, dtype=np.float32)


def _fields(quick: bool, rng):
    # sizes vary with the smoothness so that the per-call, per-chunk and per-byte time terms are separable
    # (all-equal sizes left the per-byte terms at 0 and the per-call term to carry everything)
    s2 = ((256, 384), (768, 1024)) if quick else ((512, 512), (1024, 1024), (1536, 2048))
    s3 = ((32, 48, 48), (64, 96, 96)) if quick else ((48, 64, 64), (96, 128, 128), (128, 192, 192))
    betas = (2.0, 4.0) if quick else (2.0, 3.0, 4.0)
    out = []
    for beta, a, b in zip(betas, s2, s3):
        out.append((f"grf2d_b{beta:g}", synthetic_field(a, beta, rng)))
        out.append((f"grf3d_b{beta:g}", synthetic_field(b, beta + 1.0, rng)))
    out.append(("grf2d_masked", synthetic_field((384, 512), 3.0, rng, masked=True)))
    return out


def _chunkings(shape, quick: bool):
    if len(shape) == 2:
        c = [(64, 64), (256, 256)] + ([] if quick else [(128, 512)])
    else:
        c = [(16, 32, 32), (32, 64, 64)] + ([] if quick else [(16, 128, 128)])
    return [tuple(min(a, s) for a, s in zip(ch, shape)) for ch in c] + [tuple(shape)]


def measure_hdf5(x: np.ndarray, filter_kwargs: dict, chunks, repeats: int, workdir=None):
    """(compress s, its log sd, decompress s, its log sd, stored bytes, {chunk origin: bytes}).

    As a user would: a real HDF5 file (page cache), ``ds[...] = x`` timed with the flush, then ``ds[...]``
    read back; process CPU seconds (= wall seconds on an idle core), medians of ``repeats``.
    """
    import os
    import tempfile

    import h5py

    workdir = workdir or tempfile.gettempdir()
    fd, path = tempfile.mkstemp(suffix=".h5", dir=workdir)
    os.close(fd)
    tcs, tds = [], []
    try:
        for _ in range(repeats):
            with h5py.File(path, "w") as f:
                ds = f.create_dataset("x", shape=x.shape, dtype=x.dtype, chunks=chunks, **filter_kwargs)
                t0 = time.process_time()  # CPU time: stable on the shared machine (single-threaded filters)
                ds[...] = x
                f.flush()
                tcs.append(time.process_time() - t0)
            with h5py.File(path, "r") as f:
                t0 = time.process_time()
                f["x"][...]
                tds.append(time.process_time() - t0)
        with h5py.File(path, "r") as f:
            d = f["x"]
            sizes = {}
            d.id.chunk_iter(lambda info: sizes.__setitem__(tuple(info.chunk_offset), info.size))
            stored = d.id.get_storage_size()
    finally:
        os.unlink(path)
    tc, td = statistics.median(tcs), statistics.median(tds)
    log_sd = lambda ts, m: float(np.std(np.log(np.array(ts) / m))) if len(ts) > 1 else 0.0  # noqa: E731
    return tc, log_sd(tcs, tc), td, log_sd(tds, td), stored, sizes


def _filter_kwargs(codec: str, abs_error: float | None) -> dict:
    from .codecs.plugin import hdf5plugin as plugin

    hdf5plugin = plugin(f"calibrating the HDF5 {codec} filter")
    if codec == "sz3":
        return dict(hdf5plugin.SZ3(absolute=abs_error))
    if codec == "sz":
        return dict(hdf5plugin.SZ(absolute=abs_error))
    if codec == "zfp":
        return dict(hdf5plugin.Zfp(accuracy=abs_error))
    from .codecs import get_codec

    return get_codec(codec).hdf5_kwargs()


def _fit_ratio(codec, rows):
    """NNLS of chunk bytes ~ terms @ coef on relative error; log spread of per-case totals.

    Unpredictable values are stored raw (coefficient fixed at 1): few calibration chunks have any, so a
    free coefficient would be fitted on noise.
    """
    from iomodel.nnls import nnls

    T = np.array([r[0] for r in rows], dtype=float)
    y = np.array([r[1] for r in rows], dtype=float)
    fixed = np.zeros(T.shape[1])
    if "unpred" in TERMS[codec]:
        fixed[TERMS[codec].index("unpred")] = 1.0
    free = fixed == 0
    scale = np.maximum(T[:, free].max(axis=0), 1e-30)
    c, _ = nnls((T[:, free] / scale) / y[:, None], (y - T @ fixed) / y)
    coef = fixed.copy()
    coef[free] = c / scale
    groups = {}
    for (terms, actual, key) in rows:
        a, p = groups.get(key, (0.0, 0.0))
        groups[key] = (a + actual, p + float(np.asarray(terms) @ coef))  # per (field, chunks, bound)
    logs = np.array([math.log(a / p) for a, p in groups.values() if p > 0])
    return {"coef": [float(v) for v in coef], "log_sigma": float(np.sqrt(np.mean(logs ** 2))),
            "n_fit": int(len(y))}


def _sampling_log_error(x, codec: str, abs_error, chunks, compress_s: float) -> float:
    """log(sampling estimator's compression seconds / measured seconds) of one case: its time-interval input."""
    from .codecs import get_codec

    c = get_codec(codec, None if abs_error is None else f"abs:{float(abs_error)!r}")
    m = measure_blocks(x, c, chunks, sample_fraction=0.01, target="hdf5")
    (_,), (comp,), _ = scale_up(m, x.shape, chunks)
    return math.log(max(comp, 1e-9) / compress_s)


def collect(quick: bool = False, progress=print, step=None) -> dict:
    """Measurements for :func:`fit`: {"ratio": {codec: [(terms, chunk bytes, case key)]},
    "time": {codec: [(stage counts, compress s, log sd, decompress s, log sd)]},
    "sampling_time": {codec: [log(sampling estimate / measured compress s)]}} (JSON-friendly lists).
    ``step(done, total)`` is called after each (field, chunking) measured (a progress bar's ETA)."""
    import tempfile

    steady_allocator()  # timings in the allocator state the sampling estimator times in
    rng = np.random.default_rng(20261122)
    repeats = 3 if quick else 5
    per_field_chunks = 4 if quick else 8
    ratio_rows = {c: [] for c in LOSSY}
    time_rows, sampling_rows = {}, {}
    lossless = _lossless_codecs()
    fields = _fields(quick, rng)
    total, done = sum(len(_chunkings(x.shape, quick)) for _, x in fields), 0
    with tempfile.TemporaryDirectory(prefix="ioadvisor-calibrate-") as work:
        for name, x in fields:
            rng_x = float(x.max() - x.min())
            for chunks in _chunkings(x.shape, quick):
                n_chunks = math.prod(-(-s // c) for s, c in zip(x.shape, chunks))
                sample = sample_blocks(x, 0.02, chunks=chunks, rng=rng)
                for codec in LOSSY:
                    for rel in REL_BOUNDS:
                        eb = rel * rng_x
                        tc, sc, td, sd, stored, sizes = measure_hdf5(x, _filter_kwargs(codec, eb), chunks,
                                                                     repeats, work)
                        # Ratio rows: a few full interior chunks, each modeled as one tile.
                        full = [o for o in sizes if all(a + c <= s for a, c, s in zip(o, chunks, x.shape))]
                        for i in rng.permutation(len(full))[:per_field_chunks]:
                            o = full[i]
                            tile = x[tuple(slice(a, a + c) for a, c in zip(o, chunks))][None].astype(np.float64)
                            terms, _ = tile_terms(tile, codec, eb, x.dtype.itemsize, rng)
                            ratio_rows[codec].append((terms[0].tolist(), sizes[o], f"{name}|{chunks}|{rel}"))
                        counts = graybox_ratio(sample, codec, eb, chunks, CompressionProfile(), rng).counts
                        counts = StageCounts(**{**counts.get_config(), "out_bytes": float(stored)})
                        time_rows.setdefault(codec, []).append(
                            (stage_counts(counts, codec).tolist(), tc, sc, td, sd))
                        sampling_rows.setdefault(codec, []).append(_sampling_log_error(x, codec, eb, chunks, tc))
                for codec in lossless:
                    tc, sc, td, sd, stored, _ = measure_hdf5(x, _filter_kwargs(codec, None), chunks, repeats, work)
                    counts = StageCounts(n_points=x.size, itemsize=x.dtype.itemsize, n_chunks=n_chunks,
                                         out_bytes=float(stored))
                    time_rows.setdefault(codec, []).append((stage_counts(counts, codec).tolist(), tc, sc, td, sd))
                    sampling_rows.setdefault(codec, []).append(_sampling_log_error(x, codec, None, chunks, tc))
                done += 1
                if step is not None:
                    step(done, total)
            progress(f"calibrate: {name} {x.shape} measured")
    return {"ratio": ratio_rows, "time": time_rows, "sampling_time": sampling_rows}


def fit(measured: dict, quick: bool = False, progress=print) -> CompressionProfile:
    """Fit the ratio and time coefficients from :func:`collect`'s measurements."""
    ratio = {c: _fit_ratio(c, rows) for c, rows in measured["ratio"].items() if rows}
    times = {}
    for codec, rows in measured["time"].items():
        X = np.array([r[0] for r in rows])
        times[codec] = {
            "compress": fit_stage_model(X, np.array([r[1] for r in rows]), np.array([r[2] for r in rows])),
            "decompress": fit_stage_model(X, np.array([r[3] for r in rows]), np.array([r[4] for r in rows])),
        }
        logs = measured["sampling_time"][codec]
        # 2.5/97.5% of the sampling estimator's own time error on these fields: its 95% time interval
        times[codec]["compress"]["sampling_log_q"] = [float(v) for v in np.percentile(logs, [2.5, 97.5])]
        progress(f"calibrate: {codec} time model: compress log sd "
                 f"{times[codec]['compress']['log_sigma_model']:.3f} (model), "
                 f"{times[codec]['compress']['log_sigma_sys']:.3f} (repeats); sampling estimator log error "
                 f"2.5/97.5%: {times[codec]['compress']['sampling_log_q']}")
    for codec, r in ratio.items():
        progress(f"calibrate: {codec} ratio terms {dict(zip(TERMS[codec], (round(v, 3) for v in r['coef'])))} "
                 f"log sd {r['log_sigma']:.3f}")
    return CompressionProfile(
        machine=platform.node(), created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        quick=quick, ratio=ratio, time=times)


def calibrate(quick: bool = False, progress=print, step=None) -> CompressionProfile:
    """Measure the real HDF5 filters on synthetic fields and fit the compression profile.

    quick: smaller fields, fewer chunkings and repeats (a few minutes on a shared 2-core machine).
    Ratio: per-chunk stored bytes against the gray-box terms of that chunk (:data:`graybox.TERMS`).
    Time: whole-dataset write/read seconds (real file, ``ds[...] = x``) against the stage counts of a
    2% gray-box estimate, and the sampling estimator's error on the same writes (its time interval).
    """
    return fit(collect(quick, progress, step), quick, progress)


def _lossless_codecs():
    try:
        from .codecs import CODEC_NAMES
    except ImportError:  # codecs package unavailable: lossy-only profile
        return []
    return [c for c in CODEC_NAMES if c not in LOSSY]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compression_model.calibrate", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(DEFAULT_PATH))
    ap.add_argument("--raw", help="also write the raw measurements (JSON) here")
    ap.add_argument("--from-raw", help="refit from raw measurements written by --raw (no measuring)")
    args = ap.parse_args(argv)
    if args.from_raw:
        import json

        with open(args.from_raw) as fh:
            measured = json.load(fh)
    else:
        measured = collect(args.quick)
    if args.raw and not args.from_raw:
        import json

        with open(args.raw, "w") as fh:
            json.dump(measured, fh)
    profile = fit(measured, args.quick)
    save_profile(profile, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
