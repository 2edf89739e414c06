"""What ``ioadvisor apply`` writes: the destination's library and each advised array's new layout.

A layout comes from the advice (``advisor.advise``: the recommendation of
each dataset) or from ``--layout`` in ``predict``'s syntax
(``iomodel.parse_layout``), which ``apply`` extends with two keys:
``codec=NAME`` (a ``compression_model.codecs`` name, or ``none``) and
``error=abs:X|rel:Y`` (a lossy codec's point-wise bound). Without ``codec=``
a layout in the source's own library keeps the source's filters and one in the
other library is stored uncompressed.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from advisor.storage import ArrayStorage
from instrumentation.errors import IoadvisorError

HDF5_SUFFIXES = (".h5", ".hdf5", ".hdf", ".he5", ".nc", ".nc4", ".cdf")
ZARR_SUFFIXES = (".zarr",)
KEEP = "keep"
"""``ArrayLayout.compressor`` of a layout that keeps the source's own filters."""


class ApplyError(IoadvisorError, ValueError):
    """A one-line reason ``apply`` cannot go on (bad input, mismatch, verification failure)."""


def library_of_path(path: str | Path) -> str:
    """``hdf5`` or ``zarr`` from a file or store name."""
    suffix = Path(str(path).rstrip("/")).suffix.lower()
    if suffix in HDF5_SUFFIXES:
        return "hdf5"
    if suffix in ZARR_SUFFIXES:
        return "zarr"
    raise ApplyError(f"--out {path}: name an HDF5 file ({', '.join(HDF5_SUFFIXES)}) or a Zarr store (.zarr)")


@dataclass(frozen=True)
class ArrayLayout(ArrayStorage):
    """The new layout of one array. ``chunks`` None: HDF5 contiguous. ``error_bound``: the bound as given
    (abs:X / rel:Y), resolved to ``abs_bound`` against the data's valid range."""

    error_bound: str | None = None
    abs_bound: float | None = None
    origin: str = "advice"
    """``advice`` or ``--layout``."""

    @property
    def lossy(self) -> bool:
        return self.error_bound is not None

    @property
    def label(self) -> str:
        chunks = "contiguous" if self.chunks is None else "x".join(map(str, self.chunks))
        parts = [self.library, chunks]
        if self.shards:
            parts.append("shards " + "x".join(map(str, self.shards)))
        if self.compressor and self.compressor != KEEP:
            parts.append(self.compressor + (f"({self.error_bound})" if self.error_bound else ""))
        elif self.compressor == KEEP:
            parts.append("source codec")
        return " ".join(parts)

    def get_config(self) -> dict:
        return {**self.storage_config(), "error_bound": self.error_bound, "abs_bound": self.abs_bound,
                "origin": self.origin}

    @classmethod
    def from_config(cls, c: dict) -> "ArrayLayout":
        return cls(*cls.storage_args(c), c.get("error_bound"), c.get("abs_bound"), c.get("origin", "advice"))

    def codec(self):
        """The ``compression_model`` codec (None: uncompressed or the source's own)."""
        if not self.compressor or self.compressor == KEEP:
            return None
        from compression_model.codecs import get_codec

        if self.error_bound is None:
            return get_codec(self.compressor)
        if self.abs_bound is None:
            raise ApplyError(f"{self.label}: the error bound {self.error_bound} is not resolved")
        return get_codec(self.compressor, f"abs:{self.abs_bound!r}")


def split_layout_spec(spec: str) -> tuple[str, str | None, str | None]:
    """``predict`` layout text without apply's ``codec=``/``error=`` keys, and those two values."""
    lib, sep, rest = spec.strip().partition(":")
    kept, codec, error = [], None, None
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, _, value = item.partition("=")
        key = key.strip().lower()
        if key in ("codec", "compressor"):
            codec = value.strip().lower()
        elif key in ("error", "bound", "max_error"):
            error = value.strip()
        else:
            kept.append(item)
    return lib + (sep + ",".join(kept) if kept else ""), codec, error


def layout_from_spec(spec: str, ds) -> ArrayLayout:
    """``--layout SPEC`` for the traced array ``ds`` (a ``DatasetRecord``)."""
    from compression_model.codecs import CODEC_NAMES, LOSSY_NAMES
    from compression_model.error_bound import ErrorBound
    from iomodel import parse_layout

    text, codec, error = split_layout_spec(spec)
    lay = parse_layout(text, ds)
    if codec is None:
        codec = KEEP if lay.library == ds.library else None
    elif codec in ("none", ""):
        codec = None
    elif codec not in CODEC_NAMES:
        raise ApplyError(f"layout {spec!r}: unknown codec {codec!r} (known: none, {', '.join(CODEC_NAMES)})")
    if error is not None:
        ErrorBound.parse(error)
    if codec in LOSSY_NAMES and error is None:
        raise ApplyError(f"layout {spec!r}: {codec} is lossy: give error=abs:X or error=rel:Y")
    if error is not None and (not codec or codec == KEEP):
        raise ApplyError(f"layout {spec!r}: error= needs a lossy codec= (sz3, zfp, sz)")
    cache = lay.rdcc_nbytes if lay.library == "hdf5" and "cache=" in text else None
    slots = lay.rdcc_nslots if cache is not None else None
    return ArrayLayout(lay.library, None if lay.chunks is None else tuple(lay.chunks),
                       None if lay.shards is None else tuple(lay.shards), cache, slots, codec, error, None,
                       origin="--layout")


def layout_from_advice(adv, library: str | None = None) -> ArrayLayout:
    """The recommendation of a ``DatasetAdvice``, its error bound resolved with the measured data range; with
    ``library`` (the one --out names) the best candidate of that library when the recommendation is of the
    other (a program that opens Zarr reads a Zarr copy unchanged)."""
    from advisor.advice import resolved_bound

    r = adv.recommendation
    if library is not None and r.library != library:
        r = adv.best_of(library) or r
    c = r.candidate
    bound = None if c.error_bound is None else resolved_bound(c, adv)
    return ArrayLayout(c.library, None if c.chunks is None else tuple(c.chunks),
                       None if c.shards is None else tuple(c.shards), c.cache_bytes, c.cache_slots,
                       c.compressor, None if c.error_bound is None else str(c.error_bound), bound,
                       origin="advice" if r is adv.recommendation else f"advice (best {library})")


@dataclass(frozen=True)
class Targets:
    """The source file or store, and the new layout of each advised array (by its path inside it)."""

    source: str
    layouts: dict
    """``{array path: ArrayLayout}``."""

    def get_config(self) -> dict:
        return {"source": self.source, "layouts": {k: v.get_config() for k, v in self.layouts.items()}}


def _traced_arrays(trace, names: Sequence[str]) -> list:
    from iomodel.predict import pick_dataset

    if names:
        out = []
        for n in names:
            recorded = {d.path.strip("/") for d in trace.datasets.values()}
            out.append(pick_dataset(trace, n.strip("/") if n.strip("/") in recorded and n not in recorded else n))
        return out
    cols = trace.columns
    seen = {int(i) for i in set(cols.ds.tolist())} if cols.rows else set()
    out = [d for i, d in sorted(trace.datasets.items()) if i in seen and d.shape]
    if not out:
        raise ApplyError(f"{trace.source or 'trace'}: no array with recorded accesses")
    return out


def resolve_targets(trace, *, datasets: Sequence[str] = (), layouts: Sequence[str] = (), dest_library: str,
                    advise_kwargs: dict | None = None) -> Targets:
    """The arrays to lay out anew and how. ``layouts`` (``--layout``): one spec for every named (or every
    traced) array, or one per named array in order; without them the advice decides."""
    if layouts:
        arrays = _traced_arrays(trace, datasets)
        if len(layouts) not in (1, len(arrays)):
            raise ApplyError(f"{len(layouts)} --layout for {len(arrays)} datasets: give one, or one per --dataset")
        specs = list(layouts) * len(arrays) if len(layouts) == 1 else list(layouts)
        pairs = [(d.file, d.path, layout_from_spec(s, d)) for d, s in zip(arrays, specs)]
    else:
        from advisor.api import advise

        kw = dict(advise_kwargs or {})
        names = list(datasets) or [None]
        pairs = []
        for name in names:
            adv = advise(trace, dataset=name, **kw)
            if not adv.datasets:
                raise ApplyError(adv.nothing_line())
            for d in adv.datasets:
                pairs.append((d.name.split("::")[0], d.path, layout_from_advice(d, dest_library)))
    files = sorted({Path(f).resolve().as_posix() for f, _, _ in pairs})
    if len(files) != 1:
        raise ApplyError(f"the datasets to apply live in {len(files)} files ({', '.join(files)}): "
                         "name the datasets of one file with --dataset")
    for file, path, lay in pairs:
        if lay.library != dest_library:  # named with its file: the root array of a Zarr store has the path ""
            raise ApplyError(f"{file}:/{path.strip('/')}: the layout is {lay.library} ({lay.label}) but --out names a "
                             f"{'Zarr store' if dest_library == 'zarr' else 'HDF5 file'}: use a "
                             f"{'.zarr' if lay.library == 'zarr' else '.h5'} name or --layout {dest_library}:...")
    return Targets(files[0], {"/" + path.strip("/"): lay for _, path, lay in pairs})
