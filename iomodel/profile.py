"""System profile: the fitted cost coefficients and the machine they describe.

A profile file is JSON ``{"schema": 1, "machine": {...}, "io": <SystemProfile
config>, "compression": {...}}``; this module reads and writes the ``"io"``
section only (the compression model owns its own). The default profile,
measured on the development machine by ``ioadvisor calibrate``, ships as
package data ``iomodel/profiles/default.json``; ``ioadvisor calibrate`` writes
this machine's own (``user_profile_path``), which is used from then on.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from instrumentation import settings
from instrumentation.errors import IoadvisorError

PROFILE_SCHEMA = 1
IO_SCHEMA = 2
"""Version of the ``"io"`` section: 2 added the page-cache curve, zarr's overlap, the allocation term
and the machine probe; a schema-1 section lacks coefficients the model now needs."""
DEFAULT_PROFILE = Path(__file__).with_name("profiles") / "default.json"
"""Measured on the development machine; used when this machine has no profile of its own."""


def user_profile_path() -> Path:
    """This machine's profile, written by ``ioadvisor calibrate``: $IOADVISOR_PROFILE or ~/.config/ioadvisor/profile.json."""
    return settings.profile_path()


def default_profile_path() -> Path:
    """The profile used when none is given: this machine's if it was calibrated, else the shipped one."""
    user = user_profile_path()
    return user if user.exists() else DEFAULT_PROFILE


class ProfileError(IoadvisorError, ValueError):
    """A profile cannot be read or is inconsistent; one line naming file and field."""


def available_memory() -> int:
    """MemAvailable from /proc/meminfo (bytes): the default page-cache capacity."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 4 * 1024**3


@dataclass(frozen=True)
class PageCacheCurve:
    """Seconds of one read request served by the page cache, by request size (measured, increasing sizes).

    Copy speed depends on the request size (per-call cost, readahead, copy efficiency: 4 KiB
    requests copy at about half the speed of requests from 128 KiB), so one per-byte coefficient misprices either
    small or large hits. ``iomodel.calibrate.measure_page_cache_curve`` measures it.
    """

    sizes: tuple[int, ...] = ()
    seconds: tuple[float, ...] = ()
    memory_bps: float = 0.0
    """Copy speed of page-cache hits whose source is not in the CPU's caches (``iomodel.probe.measure_memory_bps``,
    random 1 MiB reads over a file several times the last-level cache, each offset once); 0: not measured. The
    curve itself is measured on a file the last-level cache nearly holds, re-reading the same offsets, so at large
    requests it prices a copy from the CPU's cache: a 1 GB array's warm re-reads of 512 KiB chunks cost several
    times that (realsize's r02: 1000x128 chunks through the 8 MiB cache, every 64-row batch a whole chunk)."""
    cpu_cache_bytes: int = 0
    """The last-level CPU cache (``iomodel.probe.cpu_cache_bytes``): an array stored in more bytes than this has its
    hits priced at least at ``memory_bps`` (``for_footprint``); 0: not known."""

    def for_footprint(self, nbytes: int) -> "PageCacheCurve":
        """The curve for an array stored in ``nbytes``: a hit never copies faster than ``memory_bps`` once the
        array outgrows the last-level cache (the hits then come from memory); unchanged otherwise."""
        if not self.memory_bps or not self.cpu_cache_bytes or nbytes <= self.cpu_cache_bytes or not self.sizes:
            return self
        return PageCacheCurve(self.sizes, tuple(max(t, b / self.memory_bps) for b, t in zip(self.sizes, self.seconds)))

    def __post_init__(self) -> None:
        if self.memory_bps < 0 or self.cpu_cache_bytes < 0:
            raise ProfileError("field 'io.page_cache_curve': memory_bps and cpu_cache_bytes must be >= 0")
        if len(self.sizes) != len(self.seconds):
            raise ProfileError("field 'io.page_cache_curve': sizes and seconds differ in length")
        if any(b <= a for a, b in zip(self.sizes, self.sizes[1:])) or any(x <= 0 for x in self.sizes):
            raise ProfileError("field 'io.page_cache_curve.sizes' must be positive and increasing")
        if any(not isinstance(t, (int, float)) or t <= 0 for t in self.seconds):
            raise ProfileError("field 'io.page_cache_curve.seconds' must be numbers > 0")

    def arrays(self):
        import numpy as np

        return np.asarray(self.sizes, np.float64), np.asarray(self.seconds, np.float64)

    def rate(self, nbytes: int) -> float:
        """Bytes per second at the measured size nearest ``nbytes`` (for reports)."""
        i = min(range(len(self.sizes)), key=lambda k: abs(self.sizes[k] - nbytes))
        return self.sizes[i] / self.seconds[i]

    def get_config(self) -> dict:
        out = {"sizes": list(self.sizes), "seconds": list(self.seconds)}
        if self.memory_bps or self.cpu_cache_bytes:
            out.update(memory_bps=self.memory_bps, cpu_cache_bytes=self.cpu_cache_bytes)
        return out

    @classmethod
    def from_config(cls, config: dict) -> "PageCacheCurve":
        if (not isinstance(config, dict) or not {"sizes", "seconds"} <= set(config)
                or not set(config) <= {"sizes", "seconds", "memory_bps", "cpu_cache_bytes"}):
            raise ProfileError("field 'io.page_cache_curve' must be {\"sizes\": [...], \"seconds\": [...]} "
                               "(optionally \"memory_bps\", \"cpu_cache_bytes\")")
        try:
            return cls(tuple(int(x) for x in config["sizes"]), tuple(float(x) for x in config["seconds"]),
                       float(config.get("memory_bps", 0.0)), int(config.get("cpu_cache_bytes", 0)))
        except (TypeError, ValueError):
            raise ProfileError("field 'io.page_cache_curve' must hold lists of numbers") from None


@dataclass(frozen=True)
class SystemProfile:
    """Coefficients of the cost formulas plus the machine's cache and server counts.

    ``coefficients[library][variable]`` is seconds per unit of that variable
    (per call, per request, per byte); names are ``iomodel.variables.FEATURES``.
    """

    coefficients: dict = field(compare=False)
    page_cache_bytes: int = field(default_factory=available_memory)
    data_servers: int = 1
    stripe_count: int = 1
    stripe_size: int = 1024 * 1024
    machine: dict = field(default_factory=dict, compare=False)
    time_band: dict = field(default_factory=dict, compare=False)
    page_cache_curve: PageCacheCurve = field(default_factory=PageCacheCurve, compare=False)
    """Page-cache copy time by request size (the ``x_cache`` variable)."""
    zarr_overlap: float = 1.0
    """How many of one zarr call's chunk reads overlap on the device (async fetches, measured)."""
    readahead_bytes: int = 0
    """The kernel's largest readahead window on the data's device (``read_ahead_kb``); 0: not modelled."""
    device_request_bytes: int = 0
    """The device's largest request (``max_sectors_kb``): a readahead window is read in requests of this size;
    0: a window is one request."""
    probe: dict = field(default_factory=dict, compare=False)
    """Quick speed probe on the fitting machine (``iomodel.probe``): compared at advise/predict time."""
    schema: int = IO_SCHEMA

    def __post_init__(self) -> None:
        from .features import FEATURES

        if self.schema != IO_SCHEMA:
            raise ProfileError(f"io profile schema {self.schema}: this ioadvisor reads {IO_SCHEMA} "
                               "(re-fit it with `ioadvisor calibrate --quick`)")
        if not 1.0 <= self.zarr_overlap <= 64:
            raise ProfileError(f"field 'io.zarr_overlap' must be in [1, 64], got {self.zarr_overlap}")
        if not isinstance(self.coefficients, dict):
            raise ProfileError("field 'io.coefficients' must be an object {library: {variable: seconds}}")
        for lib, coefs in self.coefficients.items():
            if lib not in ("hdf5", "zarr") or not isinstance(coefs, dict):
                raise ProfileError(f"field 'io.coefficients.{lib}' is not a known library's coefficient table")
            for name, value in coefs.items():
                if name not in FEATURES:
                    raise ProfileError(f"field 'io.coefficients.{lib}.{name}' is not a model variable")
                if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                    raise ProfileError(f"field 'io.coefficients.{lib}.{name}' must be a number >= 0")
        for lib, band in self.time_band.items():
            if (lib not in ("hdf5", "zarr") or not isinstance(band, (list, tuple)) or len(band) != 2
                    or not 0 < band[0] <= 1 <= band[1]):
                raise ProfileError(f"field 'io.time_band.{lib}' must be [lo <= 1, hi >= 1], got {band!r}")
        for name in ("page_cache_bytes", "data_servers", "stripe_count", "stripe_size", "readahead_bytes",
                     "device_request_bytes"):
            if getattr(self, name) < (0 if name in ("page_cache_bytes", "readahead_bytes", "device_request_bytes") else 1):
                raise ProfileError(f"field 'io.{name}' out of range: {getattr(self, name)}")

    def band(self, library: str) -> tuple[float, float]:
        """95% band of measured / predicted time for ``library`` (calibration residuals); (1, 1) if unknown."""
        lo, hi = self.time_band.get(library, (1.0, 1.0))
        return float(lo), float(hi)

    @property
    def replay_options(self) -> dict:
        """The measured behaviours a replay simulates (``Replay``/``Workload.variables`` keyword arguments)."""
        return {"cache_curve": self.page_cache_curve, "zarr_overlap": self.zarr_overlap,
                "readahead": self.readahead_bytes, "device_request": self.device_request_bytes,
                "llc": self.page_cache_curve.cpu_cache_bytes}

    def coefficient(self, library: str, variable: str) -> float:
        """Seconds per unit of ``variable`` for ``library`` (0 when not fitted)."""
        return float(self.coefficients.get(library, {}).get(variable, 0.0))

    def servers(self, library: str) -> int:
        """``c`` of the contention factor: stripe count for HDF5, data servers for Zarr."""
        return self.stripe_count if library == "hdf5" else self.data_servers

    def get_config(self) -> dict:
        return {
            "schema": self.schema,
            "coefficients": {lib: dict(c) for lib, c in self.coefficients.items()},
            "page_cache_bytes": self.page_cache_bytes,
            "data_servers": self.data_servers,
            "stripe_count": self.stripe_count,
            "stripe_size": self.stripe_size,
            "machine": dict(self.machine),
            "time_band": {lib: list(b) for lib, b in self.time_band.items()},
            "page_cache_curve": self.page_cache_curve.get_config(),
            "zarr_overlap": self.zarr_overlap,
            "readahead_bytes": self.readahead_bytes,
            "device_request_bytes": self.device_request_bytes,
            "probe": dict(self.probe),
        }

    @classmethod
    def from_config(cls, config: dict) -> "SystemProfile":
        if not isinstance(config, dict):
            raise ProfileError("field 'io' must be a JSON object")
        if "coefficients" not in config:
            raise ProfileError("missing field 'io.coefficients'")
        known = {"schema", "coefficients", "page_cache_bytes", "data_servers", "stripe_count",
                 "stripe_size", "machine", "time_band", "page_cache_curve", "zarr_overlap", "probe", "readahead_bytes",
                 "device_request_bytes"}
        kw = {k: v for k, v in config.items() if k in known}
        kw["schema"] = config.get("schema", IO_SCHEMA)
        if "page_cache_curve" in kw:
            kw["page_cache_curve"] = PageCacheCurve.from_config(kw["page_cache_curve"])
        if "zarr_overlap" in kw:
            if not isinstance(kw["zarr_overlap"], (int, float)) or isinstance(kw["zarr_overlap"], bool):
                raise ProfileError("field 'io.zarr_overlap' must be a number")
            kw["zarr_overlap"] = float(kw["zarr_overlap"])
        if not isinstance(kw.get("probe", {}), dict):
            raise ProfileError("field 'io.probe' must be an object")
        kw["coefficients"] = {lib: {k: float(v) if isinstance(v, int) and not isinstance(v, bool) else v
                                    for k, v in c.items()} if isinstance(c, dict) else c
                              for lib, c in config["coefficients"].items()}
        for k in ("page_cache_bytes", "data_servers", "stripe_count", "stripe_size", "schema", "readahead_bytes",
                  "device_request_bytes"):
            if k in kw and (not isinstance(kw[k], int) or isinstance(kw[k], bool)):
                raise ProfileError(f"field 'io.{k}' must be an integer")
        return cls(**kw)


def load_profile(path: str | os.PathLike | None = None) -> SystemProfile:
    """The ``"io"`` section of a profile file; ``None`` = ``default_profile_path()``."""
    p = Path(path) if path is not None else default_profile_path()
    if not p.exists():
        if path is None:
            raise ProfileError(
                f"{p}: no default I/O profile installed yet: run `ioadvisor calibrate` "
                "(or pass --profile FILE)"
            )
        raise ProfileError(f"{p}: profile file not found (create one with `ioadvisor calibrate -o {p}`)")
    try:
        doc = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ProfileError(f"{p}: not a readable JSON profile ({exc})") from None
    if not isinstance(doc, dict) or "io" not in doc:
        raise ProfileError(f"{p}: profile has no 'io' section")
    if doc.get("schema", PROFILE_SCHEMA) != PROFILE_SCHEMA:
        raise ProfileError(f"{p}: unknown profile schema {doc.get('schema')!r} (this ioadvisor reads {PROFILE_SCHEMA})")
    try:
        prof = SystemProfile.from_config(doc["io"])
    except ProfileError as exc:
        raise ProfileError(f"{p}: {exc}") from None
    except TypeError as exc:
        raise ProfileError(f"{p}: bad 'io' section ({exc})") from None
    if not prof.machine and isinstance(doc.get("machine"), dict):
        prof = SystemProfile(**{**prof.__dict__, "machine": doc["machine"]})
    return prof


def save_profile(profile: SystemProfile, path: str | os.PathLike) -> None:
    """Write ``profile`` as the ``"io"`` section of ``path``, keeping other sections."""
    p = Path(path)
    doc: dict = {"schema": PROFILE_SCHEMA, "machine": dict(profile.machine)}
    if p.exists():
        try:
            old = json.loads(p.read_text())
            if isinstance(old, dict):
                doc.update({k: v for k, v in old.items() if k != "io"})
        except json.JSONDecodeError:
            raise ProfileError(f"{p}: existing file is not JSON; refusing to overwrite it") from None
    doc["io"] = profile.get_config()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(p.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, p)
