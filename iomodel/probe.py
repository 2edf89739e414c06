"""Measure this machine's file-read speeds: the page-cache curve for the model, a probe to compare machines.

``measure_page_cache_curve``: seconds per read request served by the page cache,
by request size (the ``x_cache`` variable prices hits with it). ``measure_probe``:
page-cache and device read speed of 1 MiB requests, recorded in the profile by
``ioadvisor calibrate`` and re-measured by ``advise``/``predict`` (about 0.2 s)
so they can say when the profile was fitted on a machine of other speeds.
Plain ``os`` reads: no h5py or zarr (``fit_to_machine`` also rescales per-chunk CPU
prices by ``iomodel.cpuprobe``, which runs both).
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from instrumentation import settings

from .profile import PageCacheCurve, SystemProfile

MiB = 1 << 20
CURVE_SIZES = tuple(1 << k for k in range(6, 26))
"""Request sizes of the curve: 64 B to 32 MiB, powers of two. Below 4 KiB a hit costs the system call, not
the copy: HDF5 reading a chunk piecewise sends requests of a few bytes, which a curve starting at 4 KiB
priced as 4 KiB ones (and the fit then preferred a flat price per hit, ``n_cache``, leaving x_cache 0)."""
PROBE_REQUEST = MiB
PROBE_TOLERANCE = 2.0
"""Speeds further apart than this factor (either way) are reported as a different machine. The load of
other jobs moves the probe of one machine by up to about 2x (its page-cache and device speeds probed at load
average 1-10), so closer speeds cannot be told apart from load."""


def _queue_kib(path: str | os.PathLike, name: str) -> int:
    """A block-queue setting in KiB of the device holding ``path`` (a partition's is its disk's), as bytes; 0
    when it cannot be read (no such sysfs entry)."""
    dev = os.stat(path).st_dev
    base = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    for q in (base / "queue" / name, base / ".." / "queue" / name):
        try:
            return int(q.read_text()) * 1024
        except (OSError, ValueError):
            continue
    return 0


def readahead_bytes(path: str | os.PathLike) -> int:
    """The kernel's largest readahead window on the block device holding ``path`` (``read_ahead_kb``)."""
    return _queue_kib(path, "read_ahead_kb")


def device_request_bytes(path: str | os.PathLike) -> int:
    """The largest request the block layer sends the device holding ``path`` (``max_sectors_kb``)."""
    return _queue_kib(path, "max_sectors_kb")


def _scratch_file(directory: str | os.PathLike | None, nbytes: int) -> Path:
    fd, name = tempfile.mkstemp(prefix="ioadvisor-probe-", dir=directory)
    block = np.random.default_rng(0).bytes(4 * MiB)
    with os.fdopen(fd, "wb") as fh:
        for _ in range(nbytes // len(block)):
            fh.write(block)
        fh.flush()
        os.fsync(fh.fileno())
    return Path(name)


def _evict(fd: int) -> None:
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def _warm(fd: int) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    while os.read(fd, 16 * MiB):
        pass


def _seconds_per_request(fd: int, size: int, offsets: np.ndarray, *, cold: bool, repeat: int) -> float:
    buf = bytearray(size)
    times = []
    for _ in range(repeat):
        _evict(fd) if cold else _warm(fd)
        t = time.perf_counter()
        for off in offsets.tolist():
            os.preadv(fd, [buf], off)
        times.append((time.perf_counter() - t) / len(offsets))
    return float(np.min(times))  # on a shared machine other jobs only ever add time


def measure_page_cache_curve(directory: str | os.PathLike | None = None, *, file_bytes: int = 64 * MiB,
                             repeat: int = 5, memory: bool = True) -> PageCacheCurve:
    """Seconds of one warm read request per size in CURVE_SIZES (random aligned offsets; best of ``repeat``);
    ``memory``: with the copy speed from memory and the last-level cache's size (``PageCacheCurve.for_footprint``)."""
    path = _scratch_file(directory, file_bytes)
    rng = np.random.default_rng(1)
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            seconds = []
            for size in CURVE_SIZES:
                n = max(4, min(2000, 32 * MiB // size))
                offsets = rng.integers(0, max(1, file_bytes // max(size, 4096) - 1), n) * max(size, 4096)
                seconds.append(_seconds_per_request(fd, size, offsets, cold=False, repeat=repeat))
        finally:
            os.close(fd)
    finally:
        path.unlink()
    # a larger request never takes less time: a point inflated by another job is lowered to the next one's
    seconds = np.minimum.accumulate(np.asarray(seconds)[::-1])[::-1]
    curve = PageCacheCurve(CURVE_SIZES, tuple(float(s) for s in seconds))
    return replace(curve, memory_bps=measure_memory_bps(directory), cpu_cache_bytes=cpu_cache_bytes()) if memory else curve


def cpu_cache_bytes() -> int:
    """The largest CPU cache (the last level) of this machine, from sysfs (0 when it says nothing)."""
    best = 0
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        unit = {"K": 1 << 10, "M": MiB, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * unit)
    if not best and hasattr(os, "sysconf"):
        try:
            best = max(0, int(os.sysconf("SC_LEVEL3_CACHE_SIZE")))
        except (ValueError, OSError):
            best = 0
    return best


def measure_output_spill(repeat: int = 5) -> dict[str, float]:
    """Seconds per byte of ``s_ospill`` (``iomodel.spill``) per library: 8 column pieces copied into one (R, 8)
    float32 output region of 1.5x the last-level cache, against the same pieces in 8 row blocks of it (each block's
    region stays cached), the excess over the bytes spilled (7 passes over the region); zarr copies with numpy,
    HDF5 through h5py (an in-memory file, a chunk cache holding the strip). Best of ``repeat``.
    ``python -m benchmarks.investigations.output_spill`` measures the same through both libraries."""
    import h5py

    rows = max(1 << 16, int(1.5 * (cpu_cache_bytes() or 32 * MiB)) // 32)
    pieces = [np.ones(rows, np.float32) for _ in range(8)]
    spilled = 7 * rows * 32

    def scatter(block: int) -> float:
        out = np.empty((rows, 8), np.float32)
        t = time.perf_counter()
        for lo in range(0, rows, block):
            for c in range(8):
                out[lo:lo + block, c] = pieces[c][lo:lo + block]
        return time.perf_counter() - t

    def through_hdf5(block: int) -> float:
        with h5py.File(f"spill-{block}", "w", driver="core", backing_store=False, rdcc_nbytes=1 << 30) as f:
            d = f.create_dataset("x", data=np.ones((rows, 8), np.float32), chunks=(block, 1))
            d[:, :]  # the chunks into the cache
            t = time.perf_counter()
            d[:, :]
            return time.perf_counter() - t

    out = {}
    for lib, fn in (("zarr", scatter), ("hdf5", through_hdf5)):
        whole = min(fn(rows) for _ in range(repeat))
        blocks = min(fn(-(-rows // 8)) for _ in range(repeat))
        out[lib] = max(0.0, whole - blocks) / spilled
    return out


def measure_memory_bps(directory: str | os.PathLike | None = None, *, file_bytes: int | None = None,
                       repeat: int = 3) -> float:
    """Bytes per second of warm 1 MiB reads that the CPU's caches cannot serve: random offsets over a file of
    at least 1 GiB (32x the last-level cache), each offset read once per pass (the page-cache curve re-reads
    32 MiB, which the last-level cache may hold); best of ``repeat``. A 256 MiB file still read about twice as
    fast as a 1 GiB one on the machine of the default profile (a virtual machine whose host caches more)."""
    nbytes = file_bytes or max(1024 * MiB, 32 * cpu_cache_bytes())
    path = _scratch_file(directory, nbytes)
    rng = np.random.default_rng(2)
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            offsets = rng.permutation(nbytes // PROBE_REQUEST).astype(np.int64) * PROBE_REQUEST
            seconds = _seconds_per_request(fd, PROBE_REQUEST, offsets, cold=False, repeat=repeat)
        finally:
            os.close(fd)
    finally:
        path.unlink()
    return PROBE_REQUEST / seconds


def measure_probe(directory: str | os.PathLike | None = None, *, file_bytes: int = 32 * MiB,
                  repeat: int = 3) -> dict:
    """Bytes per second of sequential 1 MiB reads, warm (page cache) and cold (device): best of ``repeat``."""
    path = _scratch_file(directory, file_bytes)
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            offsets = np.arange(0, file_bytes, PROBE_REQUEST, dtype=np.int64)
            warm = _seconds_per_request(fd, PROBE_REQUEST, offsets, cold=False, repeat=repeat)
            cold = _seconds_per_request(fd, PROBE_REQUEST, offsets, cold=True, repeat=repeat)
        finally:
            os.close(fd)
    finally:
        path.unlink()
    return {"page_cache_bps": PROBE_REQUEST / warm, "disk_bps": PROBE_REQUEST / cold}


def machine_differences(recorded: dict, current: dict, tolerance: float = PROBE_TOLERANCE) -> list[str]:
    """Readable differences between two probes (empty when every speed is within ``tolerance``)."""
    out = []
    for key, what in (("page_cache_bps", "page-cache reads"), ("disk_bps", "device reads")):
        a, b = recorded.get(key), current.get(key)
        if not a or not b:
            continue
        if max(a / b, b / a) > tolerance:
            out.append(f"{what} {b / 1e9:.2f} GB/s here vs {a / 1e9:.2f} GB/s in the profile")
    return out


RESCALE_VAR = settings.RESCALE
"""Set to 0 to use a profile as it is (no rescale by the probe): runs whose figures must match exactly."""
RESCALE_LIMIT = 8.0
"""Speeds further apart than this factor are not rescaled: beyond twice the load noise of PROBE_TOLERANCE
squared, the storage is of another kind (a network file system, another device class), whose per-request
costs a bandwidth ratio does not carry; the profile is used as it is, with the warning."""
PAGE_CACHE_TERMS = ("n_cache", "s_cache", "x_cache")
"""Coefficients priced by page-cache read speed (``x_cache`` through ``PageCacheCurve``, scaled with it)."""
DEVICE_READ_TERMS = ("n_rdisk", "s_rdisk", "n_rseek", "s_rseek")
"""Coefficients priced by device read speed; writes are not probed and stay as profiled."""

_CURRENT: dict | None = None
_CPU: dict | None = None


def current_probe() -> dict:
    """This machine's probe, measured once per process (about 0.2 s)."""
    global _CURRENT
    if _CURRENT is None:
        _CURRENT = measure_probe()
    return _CURRENT


def current_cpu_seconds() -> dict:
    """This machine's per-chunk CPU probe (``iomodel.cpuprobe``), measured once per process (about 2 s here)."""
    global _CPU
    if _CPU is None:
        from .cpuprobe import measure_cpu_seconds

        _CPU = measure_cpu_seconds()
    return _CPU


def _factors(recorded: dict, current: dict, tolerance: float) -> dict[str, float]:
    """{probe key: recorded / current speed} for the speeds outside ``tolerance`` (time scales inversely)."""
    out = {}
    for key in ("page_cache_bps", "disk_bps"):
        a, b = recorded.get(key), current.get(key)
        if a and b and max(a / b, b / a) > tolerance:
            out[key] = a / b
    return out


def _rescale_reads(profile: SystemProfile, current: dict, factors: dict[str, float]) -> tuple[SystemProfile, list]:
    """The profile with its page-cache and device-read terms times ``factors``, and what moved, said."""
    coefficients = {lib: dict(c) for lib, c in profile.coefficients.items()}
    curve = profile.page_cache_curve
    said = []
    for key, terms, what in (("page_cache_bps", PAGE_CACHE_TERMS, "page-cache"),
                             ("disk_bps", DEVICE_READ_TERMS, "device")):
        f = factors.get(key)
        if f is None:
            continue
        # x_cache is seconds read off the curve: where the curve is rescaled, its coefficient stays (scaling
        # both priced a page-cache hit at f squared)
        scaled = [t for t in terms if not (t == "x_cache" and key == "page_cache_bps" and curve.sizes)]
        for coefs in coefficients.values():
            for t in scaled:
                if t in coefs:
                    coefs[t] *= f
        if key == "page_cache_bps" and curve.sizes:
            curve = replace(curve, seconds=tuple(x * f for x in curve.seconds))
        said.append(f"{what} read terms x{f:.2g} ({current[key] / 1e9:.2f} GB/s here vs "
                    f"{profile.probe[key] / 1e9:.2f} in the profile)")
    rescaled = SystemProfile(**{**profile.__dict__, "coefficients": coefficients, "page_cache_curve": curve,
                                "probe": {**profile.probe, **{k: current[k] for k in factors}}})
    return rescaled, said


def _rescale_cpu(profile: SystemProfile, cpu_seconds: dict) -> tuple[SystemProfile, list]:
    """The profile with each probed library's CPU terms times the probe's factor where it is outside
    CPU_TOLERANCE (and within RESCALE_LIMIT), and what moved, said."""
    from .cpuprobe import CPU_TOLERANCE, PROBES, cpu_factors

    factors = {lib: f for lib, f in cpu_factors(profile, cpu_seconds).items()
               if CPU_TOLERANCE < max(f, 1 / f) <= RESCALE_LIMIT}
    if not factors:
        return profile, []
    coefficients = {lib: dict(c) for lib, c in profile.coefficients.items()}
    for lib, f in factors.items():
        for t in PROBES[lib].terms:
            if t in coefficients[lib]:
                coefficients[lib][t] *= f
    said = [f"{lib}'s {', '.join(PROBES[lib].terms)} x{f:.2g} (warm reads probed against the profile's prices)"
            for lib, f in factors.items()]
    return SystemProfile(**{**profile.__dict__, "coefficients": coefficients}), said


def fit_to_machine(profile: SystemProfile, current: dict | None = None, *,
                   tolerance: float = PROBE_TOLERANCE) -> tuple[SystemProfile, str | None]:
    """The profile with its page-cache and device-read terms rescaled by this machine's probe and the CPU
    terms ``iomodel.cpuprobe`` probes by its factors, and a note saying so (None when nothing moved beyond the
    tolerances, the profile has no probe, or a speed moved beyond RESCALE_LIMIT: ``check_machine`` warns
    about those). ``current``: this machine's probe (default: measured), with the CPU probe's seconds under
    "cpu_seconds" ({library: seconds}; the CPU terms stay as profiled when absent)."""
    if not profile.probe or (current is None and not settings.rescale()):
        return profile, None
    measured = current is None
    current = current_probe() if measured else current
    factors = _factors(profile.probe, current, tolerance)
    if any(max(f, 1 / f) > RESCALE_LIMIT for f in factors.values()):
        return profile, None  # another kind of machine: no CPU probe either (about 2 s spared)
    rescaled, said = _rescale_reads(profile, current, factors)
    cpu_seconds = current_cpu_seconds() if measured else current.get("cpu_seconds")
    if cpu_seconds:
        # after the reads: the probe's page-cache hits are then priced at this machine's speed
        rescaled, said_cpu = _rescale_cpu(rescaled, cpu_seconds)
        said += said_cpu
    if not said:
        return profile, None
    note = ("profile rescaled to this machine's speed probes: " + "; ".join(said)
            + "; writes as profiled (`ioadvisor calibrate --quick` fits them all)")
    return rescaled, note


def check_machine(profile: SystemProfile, source: str = "profile") -> str | None:
    """One line when this machine differs from the profile in a way ``fit_to_machine`` cannot fix: the
    profile records no probe, or a speed moved beyond RESCALE_LIMIT (probe measured once per process)."""
    if not profile.probe:
        return (f"note: {source} records no speed probe of the machine it was fitted on; "
                "run `ioadvisor calibrate --quick` to fit this machine")
    current = current_probe()
    factors = _factors(profile.probe, current, PROBE_TOLERANCE)
    if not any(max(f, 1 / f) > RESCALE_LIMIT for f in factors.values()):
        return None
    diffs = machine_differences(profile.probe, current)
    m = profile.machine
    where = f" (fitted on {m.get('host', '?')}, {m.get('date', '?')})" if m else ""
    return (f"warning: this machine differs from {source}{where}: {'; '.join(diffs)}, beyond what rescaling "
            f"the profile's read speeds covers ({RESCALE_LIMIT:g}x); predicted seconds may be off, run "
            "`ioadvisor calibrate --quick` to fit this machine")


__all__ = ["CURVE_SIZES", "check_machine", "cpu_cache_bytes", "current_cpu_seconds", "current_probe",
           "fit_to_machine", "machine_differences", "measure_memory_bps", "measure_page_cache_curve", "measure_probe"]
