"""The types of ``advisor.verify``: a layout to rebuild (``Choice``), one measured row (``VerifyRow``) and a
whole run (``VerifyResult``, with its table), and ``VerifyError``."""
from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from instrumentation.errors import IoadvisorError
from instrumentation.records import DatasetRecord, Filter
from iomodel.layout import Layout, layout_text


class VerifyError(IoadvisorError, ValueError):
    """A dataset cannot be rebuilt or replayed; the message names the dataset and the reason."""


@dataclass(frozen=True)
class Choice:
    """One layout to rebuild: the recorded one ("current") or a recommended candidate.

    Compression is given either as the recorded filter pipeline (``filters``,
    the current layout) or as a compression_model codec name and error bound
    (candidates); the bound is resolved against the data's range when built.
    ``stack``: what builds and replays it ("": the library's own, h5py or zarr; "netcdf4": netCDF4-python, for a
    program that read the dataset through netCDF-C, ``advisor.verify_stack``). ``default_cache``: the program (or
    the recipe) leaves the chunk cache to its library, so a netCDF4 replay sets none (h5py is given the layout's).
    """

    label: str
    layout: Layout
    predicted_seconds: float | None = None
    predicted_ci: tuple[float, float] | None = None
    filters: tuple[Filter, ...] = ()
    compressor: str | None = None
    error_bound: str | None = None
    stack: str = ""
    default_cache: bool = False


@dataclass(frozen=True)
class VerifyRow:
    """Predicted and measured time of one dataset in one layout."""

    dataset: str
    label: str
    library: str
    chunks: tuple[int, ...] | None
    shards: tuple[int, ...] | None
    cache_bytes: int | None
    compressor: str | None
    error_bound: str | None
    predicted_seconds: float | None
    measured_seconds: float
    measured_all: tuple[float, ...]
    stored_bytes: int
    data: str  # "user" | "synthetic"
    max_error: float | None  # largest |read or stored - original| (user data only)
    parallel: bool = False
    timed_out: bool = False  # stopped at the deadline: measured_seconds is a lower bound
    stack: str = ""  # built and replayed through: "" the library's own (h5py, zarr), "netcdf4" netCDF4-python
    process_groups: tuple[int, ...] = ()
    """The traced processes (MPI ranks, followed workers) replayed each in a process of its own: how many in each
    group, the groups one after another, a group's processes at the same time (``advisor.verify_measure``); ()
    when every access replayed in one process."""

    @property
    def description(self) -> str:
        """``hdf5 1000x16 cache=8MiB blosc-zstd``: the library, layout and codec measured."""
        text = f"{self.library} {layout_text(self.chunks, self.shards, self.cache_bytes)}"
        if self.compressor:
            text += f" {self.compressor}" + (f"({self.error_bound})" if self.error_bound else "")
        return text

    @property
    def ratio(self) -> float | None:
        """measured / predicted (> 1: the model is optimistic)."""
        if not self.predicted_seconds:
            return None
        return self.measured_seconds / self.predicted_seconds

    def get_config(self) -> dict:
        cfg = {f.name: getattr(self, f.name) for f in fields(self)}
        for k in ("chunks", "shards", "measured_all", "process_groups"):
            cfg[k] = None if cfg[k] is None else list(cfg[k])
        cfg["ratio"] = self.ratio
        return cfg

    @classmethod
    def from_config(cls, config: dict) -> "VerifyRow":
        kw = {f.name: config.get(f.name) for f in fields(cls)}
        for k in ("chunks", "shards", "measured_all"):
            kw[k] = None if kw[k] is None else tuple(kw[k])
        kw["stack"] = kw["stack"] or ""
        kw["process_groups"] = tuple(kw["process_groups"] or ())
        return cls(**kw)


@dataclass(frozen=True)
class VerifyResult:
    """All rows of one ``verify`` run, dataset by dataset, current layout first."""

    source: str
    rows: tuple[VerifyRow, ...]
    workdir: str
    repeat: int = 1

    def rows_of(self, dataset: str) -> tuple[VerifyRow, ...]:
        return tuple(r for r in self.rows if r.dataset == dataset)

    @property
    def datasets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.dataset for r in self.rows))

    def get_config(self) -> dict:
        return {"source": self.source, "workdir": self.workdir, "repeat": self.repeat,
                "rows": [r.get_config() for r in self.rows]}

    @classmethod
    def from_config(cls, config: dict) -> "VerifyResult":
        return cls(config["source"], tuple(VerifyRow.from_config(r) for r in config["rows"]),
                   config["workdir"], int(config.get("repeat", 1)))

    def table(self) -> str:
        """Predicted vs measured, one block per dataset, with the measured speed-up over the current layout."""
        out = []
        for name in self.datasets:
            rows = self.rows_of(name)
            src = rows[0].data
            upto = "up to " if any(len(r.measured_all) < self.repeat for r in rows) else ""
            ranks = next((" " + concurrency_text(r.process_groups) + "," for r in rows if r.process_groups),
                         " replayed concurrently," if any(r.parallel for r in rows) else "")
            if any(r.stack == "netcdf4" for r in rows):  # the program's own stack
                ranks += " built and read through netCDF4-python" + ("," if all(r.stack for r in rows)
                                                                    else " where it writes the layout,")
            out.append(f"{name}  ({'user data' if src == 'user' else 'synthetic data: file not readable'},"
                       f"{ranks} cold page cache, " + (f"median of {upto}{self.repeat} replays)" if self.repeat > 1
                                                       else "one replay)"))
            out.append(f"  {'':<12} {'library':<7} {'layout (chunks, cache/shards)':<32} {'codec':<18} "
                       f"{'predicted':>10} {'measured':>10} {'meas/pred':>9} {'stored':>10} {'speed-up':>8}")
            base = next((r.measured_seconds for r in rows if r.label == "current"), None)
            for r in rows:
                chunks = layout_text(r.chunks, r.shards, r.cache_bytes)
                codec = r.compressor or "none"
                if r.error_bound:
                    codec += f" {r.error_bound}"
                pred = "-" if r.predicted_seconds is None else f"{r.predicted_seconds:.3f} s"
                ratio = "-" if r.ratio is None else f"{r.ratio:.2f}"
                speed = "-" if not base or not r.measured_seconds else f"{base / r.measured_seconds:.2f}x"
                meas = (">" if r.timed_out else "") + f"{r.measured_seconds:.3f}"
                out.append(f"  {r.label:<12} {r.library:<7} {chunks:<32} {codec:<18} {pred:>10} "
                           f"{meas:>8} s {ratio:>9} {_mb(r.stored_bytes):>10} {speed:>8}")
            errs = [r for r in rows if r.max_error is not None]
            if errs:
                worst = max(errs, key=lambda r: r.max_error)
                out.append(f"  data read back: max |error| {worst.max_error:.3g} ({worst.label})")
            if any(not r.parallel for r in rows) and any(r.parallel for r in rows):
                out.append("  note: some layouts replayed sequentially (writes from several processes)")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()


def concurrency_text(groups: tuple[int, ...]) -> str:
    """``3 processes replayed, each its own: 1, then 2 at once`` (``VerifyRow.process_groups``)."""
    n = sum(groups)
    if len(groups) == 1:
        return f"{n} processes replayed concurrently, each its own chunk cache"
    return (f"{n} processes replayed, each its own chunk cache, as they overlapped: "
            + ", then ".join(str(g) if g == 1 else f"{g} at once" for g in groups))


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def dataset_name(ds: DatasetRecord) -> str:
    """Short name for tables: ``table.h5:/x`` (HDF5), ``table.zarr`` or ``store.zarr/group/a`` (zarr)."""
    base = Path(ds.file).name
    if ds.library == "hdf5":
        return f"{base}:{ds.path}"
    return f"{base}/{ds.path}" if ds.path else base


__all__ = ["Choice", "VerifyError", "VerifyResult", "VerifyRow", "concurrency_text", "dataset_name"]
