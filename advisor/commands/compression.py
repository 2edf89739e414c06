"""``ioadvisor compression``: predicted ratio and throughput of compressors on a stored dataset.

    ioadvisor compression FILE.h5:/dataset | STORE.zarr[/array] [--compressor sz3,zfp,...]
        [--error-bound rel:1e-3 --error-bound abs:0.01 ...] [--chunks 64x64x64] [--sample 0.01]
        [--target-ratio R] [--range R] [--verify] [--json]

Only sampled blocks are compressed. Relative bounds (rel:X) resolve against the range of the whole field's
valid values, scanned chunk by chunk (or given with --range). ``--verify`` compresses a sample for real,
decompresses it and checks the error bound on the decompressed values.
"""
from __future__ import annotations

import base64
import json
import struct
import sys
import time

import numpy as np

from advisor import progress
from compression_model.codecs import CODEC_NAMES, LOSSY_NAMES, get_codec, unavailable
from compression_model.error_bound import ErrorBound, ErrorStats, bound_for_target
from compression_model.estimate import estimate
from compression_model.safety import FieldTooLarge, field_safety, scan
from compression_model.sampling import sample_blocks
from compression_model.sampling_estimator import codec_calls

from . import add_quiet_option, with_progress
from instrumentation.errors import InputError
from instrumentation.opener import open_target

DEFAULT_BOUNDS = ("rel:1e-2", "rel:1e-3", "rel:1e-4")
LOSSLESS_BASELINE = "blosc-zstd"


def register(sub) -> None:
    p = sub.add_parser("compression", help="predict compression ratio/throughput per compressor and error bound")
    p.add_argument("target", metavar="FILE.h5:/dataset | STORE.zarr[/array]",
                   help="the stored data: an HDF5 dataset, or a Zarr array (the store's only one when not named)")
    p.add_argument("--compressor", default=None,
                   help=f"comma-separated, from {','.join(CODEC_NAMES)} (default: the lossy ones + "
                        f"{LOSSLESS_BASELINE})")
    p.add_argument("--error-bound", action="append", default=None, metavar="MODE:VALUE",
                   help="abs:VALUE or rel:VALUE (relative to the data range); repeatable "
                        f"(default {' '.join(DEFAULT_BOUNDS)})")
    p.add_argument("--chunks", default=None, help="chunk shape, e.g. 64x64x64 (default: the dataset's own)")
    p.add_argument("--sample", type=float, default=0.01, help="fraction of the data to sample (default 0.01)")
    p.add_argument("--range", type=float, default=None, metavar="R", dest="value_range",
                   help="max - min of the field's valid values, for rel: bounds (default: scanned over the "
                        "whole field, chunk by chunk)")
    p.add_argument("--library", choices=("hdf5", "zarr"), default=None,
                   help="library the data would be written with (default: the input's)")
    p.add_argument("--method", choices=("auto", "sampling", "graybox", "hybrid"), default="auto",
                   help="how ratios are estimated: sampling (compress sampled blocks with the real codec), graybox "
                        "(lossy codecs: a model of the codec on sampled blocks, zPerf-style), hybrid (both, "
                        "weighted by their uncertainty), auto (measured best per codec and field; default)")
    p.add_argument("--target-ratio", type=float, default=None, metavar="R",
                   help="for each lossy compressor, find the tightest relative bound reaching ratio R "
                        "(bisection on the estimate) instead of using --error-bound")
    p.add_argument("--verify", action="store_true",
                   help="compress a sample for real, check the error bound on the decompressed values")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per (compressor, bound)")
    add_quiet_option(p)
    p.set_defaults(func=with_progress("compression estimates", run))


def parse_chunks(text: str | None, ndim: int) -> tuple | None:
    if text is None:
        return None
    try:
        chunks = tuple(int(v) for v in text.lower().split("x"))
    except ValueError:
        raise InputError(f"bad --chunks {text!r}: expected e.g. 64x64x64") from None
    if len(chunks) != ndim or min(chunks) < 1:
        raise InputError(f"bad --chunks {text!r}: need {ndim} positive integers for a {ndim}-d dataset")
    return chunks


def parse_compressors(text: str | None, library: str) -> list[str]:
    if text is None:
        names = [n for n in LOSSY_NAMES if not (library == "zarr" and n == "sz")] + [LOSSLESS_BASELINE]
        for n in [n for n in names if unavailable(n, library)]:  # named ones fail below with the same line
            print(f"ioadvisor compression: left out: {unavailable(n, library)}", file=sys.stderr)
            names.remove(n)
        return names
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in CODEC_NAMES:
            raise InputError(f"unknown compressor {n!r}; known: {', '.join(CODEC_NAMES)}")
    return names


def lossy_for_dtype(names: list[str], dtype, *, named: bool, target: str) -> list[str]:
    """``names`` without the lossy codecs when the data is not float32/float64 (they take nothing else): an
    error when the user named one, else a note on stderr."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" and dtype.itemsize in (4, 8):
        return names
    lossy = [n for n in names if n in LOSSY_NAMES]
    if lossy and named:
        raise InputError(f"{target}: {lossy[0]} is lossy: lossy codecs take float32/float64 data, not {dtype}")
    if lossy:
        print(f"ioadvisor compression: {', '.join(lossy)} left out: lossy codecs take float32/float64 data, "
              f"not {dtype}", file=sys.stderr)
    return [n for n in names if n not in LOSSY_NAMES]


def open_dataset(target: str):
    """(array-like, library, fill value or None) for ``FILE.h5:/dataset`` or ``STORE.zarr[/array]``."""
    opened = open_target(target)  # the HDF5 file stays open while the command reads the array
    return opened.array, opened.library, _missing_value(opened.array.attrs)


def _missing_value(attrs) -> float | None:
    """The netCDF-convention marker of missing data (``_FillValue``/``missing_value``), if any."""
    fill = next((attrs[a] for a in ("_FillValue", "missing_value") if a in attrs), None)
    if isinstance(fill, str):  # xarray's Zarr 3 form of a float: the little-endian float64, base64 ("AAAAAAAA+H8=")
        try:
            return struct.unpack("<d", base64.b64decode(fill, validate=True))[0]
        except (ValueError, struct.error):
            raise InputError(f"_FillValue {fill!r} is neither a number nor xarray's base64 float") from None
    return None if fill is None else float(np.ravel(fill)[0])


def verify(data, codec, library: str, fraction: float, data_range: float, seed: int = 0) -> dict:
    """Compress a sample for real with the target library's codec path; check the bound on decoded data."""
    blocks = sample_blocks(data, fraction, rng=seed).blocks
    encode, decode = codec_calls(codec, library, [b.shape for b in blocks], blocks[0].dtype)
    raw = stored = 0
    t_comp = t_dec = 0.0
    decoded = []
    for block in blocks:
        t0 = time.process_time()  # CPU seconds, as the estimate's (single-threaded codecs)
        buf = encode(block)
        t_comp += time.process_time() - t0
        out, t = decode(buf, block.shape, block.dtype)  # as the estimate times it (what decoding adds)
        decoded.append(np.asarray(out).ravel())
        t_dec += t
        raw += block.nbytes
        stored += len(buf)
    original = np.concatenate([b.ravel() for b in blocks])
    errors = ErrorStats.measure(original, np.concatenate(decoded), data_range)
    # the bound is on float values: allow the rounding of the bound itself to the data's precision
    slack = np.finfo(original.dtype).eps * max(abs(float(np.nanmax(np.abs(original)))), 1.0) if original.dtype.kind == "f" else 0
    bound = codec.tolerance if codec.lossy else 0.0
    return {"ratio": raw / stored, "compress_mbps": raw / max(t_comp, 1e-12) / 1e6,
            "decompress_mbps": raw / max(t_dec, 1e-12) / 1e6, "sample_bytes": int(raw),
            "max_error": errors.max_error, "rmse": errors.rmse, "psnr": errors.psnr,
            "bound_abs": bound, "bound_held": bool(errors.max_error <= bound + slack)}


def run(args) -> int:
    if not 0 < args.sample <= 1:
        raise InputError(f"bad --sample {args.sample}: must be in (0, 1]")
    bounds = [ErrorBound.parse(b) for b in (args.error_bound or DEFAULT_BOUNDS)]
    data, library, fill = open_dataset(args.target)
    library = args.library or library
    names = parse_compressors(args.compressor, library)
    if data.dtype.kind not in "fiu":
        raise InputError(f"{args.target}: dtype {data.dtype} is not numeric")
    names = lossy_for_dtype(names, data.dtype, named=args.compressor is not None, target=args.target)
    chunks = parse_chunks(args.chunks, data.ndim) or (tuple(data.chunks) if data.chunks else None)
    safety = scan(sample_blocks(data, args.sample, rng=0).blocks, fill_value=fill)
    if args.target_ratio is not None and not args.target_ratio > 1:
        raise InputError(f"bad --target-ratio {args.target_ratio}: must be > 1")
    data_range, range_source = field_range(args, data, safety, bounds, names)

    bar = progress.current()
    bar.add_total(sum(1 if n not in LOSSY_NAMES else len(bounds) for n in names))

    def run_estimate(name, bound):
        e = estimate(data, name, bound, chunks, method=args.method, sample_fraction=args.sample,
                     data_range=data_range, target=library, safety=safety)
        bar.advance()
        return e

    results = []
    for name in names:
        lossy = name in LOSSY_NAMES
        if lossy and args.target_ratio is not None:
            try:
                bounds = [bound_for_target(lambda eb: run_estimate(name, eb).ratio, args.target_ratio,
                                           mode="rel", lo=1e-7, hi=1e-1, rtol=0.05)]
            except ValueError:
                bounds = [ErrorBound("rel", 1e-1)]  # unreachable: report the loosest bound tried
        for bound in bounds if lossy else [None]:
            e = run_estimate(name, bound)
            row = {
                "compressor": name,
                "error_bound": None if bound is None else bound.get_config(),
                "chunks": list(e.chunks), "ratio": e.ratio, "ratio_ci": list(e.ratio_ci),
                "compress_mbps": e.compress_mbps, "decompress_mbps": e.decompress_mbps,
                "time_ci": list(e.time_ci), "compress_seconds": e.compress_seconds, "method": e.method,
                "errors": None if e.errors is None else e.errors.get_config(),
                "problems": list(e.problems), "cost_seconds": e.cost_seconds, "notes": list(e.notes),
            }
            if lossy and args.target_ratio is not None:
                row["target_ratio_met"] = bool(e.ratio >= args.target_ratio)
            if args.verify:
                codec = get_codec(name, bound, data_range)
                if not e.problems:
                    row["measured"] = verify(data, codec, library, args.sample, data_range)
                else:
                    row["measured"] = None  # unsafe for this data (e.g. the HDF5 SZ3 filter crashes on NaN)
            results.append(row)
    if args.json:
        for row in results:
            row.update(value_range=data_range, value_range_source=range_source)
        print(json.dumps(results, indent=1, default=_json_number))
    else:
        print(format_table(args.target, data, library, safety, results, data_range, range_source))
    return 0


def field_range(args, data, safety, bounds, names) -> tuple[float, str]:
    """(range of the valid values relative bounds resolve against, where it comes from)."""
    if args.value_range is not None:
        if not (args.value_range > 0 and np.isfinite(args.value_range)):
            raise InputError(f"bad --range {args.value_range}: must be a positive number")
        return float(args.value_range), "--range"
    relative = args.target_ratio is not None or any(b.mode == "rel" for b in bounds)
    if not relative or not any(n in LOSSY_NAMES for n in names):
        return safety.data_range, "sample"
    try:
        return field_safety(data, sample=safety).data_range, "whole field"
    except FieldTooLarge as exc:
        raise InputError(f"{args.target}: {exc}: pass --range MAX-MIN, or abs: error bounds") from None


def _json_number(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def format_table(target, data, library, safety, results, data_range, range_source) -> str:
    lines = [f"{target}: shape {tuple(data.shape)} {data.dtype}, target {library}, value range "
             f"{data_range:.6g} ({range_source}), NaN {safety.n_nan}, Inf {safety.n_inf}, fill "
             f"{'-' if safety.fill_value is None else f'{safety.fill_value:g} x{safety.n_fill}'} (in sample)",
             f"{'compressor':14s} {'bound':10s} {'ratio':>8s} {'95% CI':>17s} {'comp MB/s':>9s} "
             f"{'dec MB/s':>9s} {'method':8s} notes"]
    for r in results:
        eb = "-" if r["error_bound"] is None else f"{r['error_bound']['mode']}:{r['error_bound']['value']:g}"
        notes = "; ".join(r["problems"] + r.get("notes", [])
                          + (["target ratio not reached"] if r.get("target_ratio_met") is False else []))
        m = r.get("measured")
        if m:
            notes = (notes + "; " if notes else "") + (
                f"verified: ratio {m['ratio']:.2f}, max err {m['max_error']:.3g} "
                f"{'<=' if m['bound_held'] else 'EXCEEDS'} {m['bound_abs']:.3g}")
        lo, hi = r["ratio_ci"]
        lines.append(f"{r['compressor']:14s} {eb:10s} {r['ratio']:8.2f} [{lo:7.2f},{hi:7.2f}] "
                     f"{r['compress_mbps']:9.1f} {r['decompress_mbps']:9.1f} {r['method']:8s} {notes}")
    return "\n".join(lines)
