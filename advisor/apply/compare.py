"""``ioadvisor compare``: the user's own program on the original data and on the rewritten copy, cold,
alternating, several times each; the measured speed-up beside the one the advice claimed.

The program runs unchanged: a start-up hook (``site/sitecustomize.py``) serves opens of SRC from DEST
through h5py.File, zarr.open* and netCDF4.Dataset. Both variants load the same hook (an empty map for the
original), and the page cache of every file of SRC and DEST is emptied before each run. HDF5_PLUGIN_PATH
points at hdf5plugin's filters on both sides, so a copy compressed with one reads without the program
importing hdf5plugin.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from instrumentation import settings
from instrumentation.extras import installed

from .targets import ApplyError, library_of_path

SITE = Path(__file__).parent / "site"


def parse_substitutions(texts: Sequence[str]) -> dict[str, str]:
    """``SRC=DEST`` pairs: both must exist and be of one library (the program's own calls open DEST)."""
    out = {}
    for text in texts:
        src, eq, dest = text.partition("=")
        if not eq or not src or not dest:
            raise ApplyError(f"--substitute {text!r}: expected SRC=DEST")
        for p in (src, dest):
            if not Path(p).exists():
                raise ApplyError(f"--substitute {text!r}: {p} does not exist")
        if library_of_path(src) != library_of_path(dest):
            raise ApplyError(f"--substitute {text!r}: a program opening {library_of_path(src)} data cannot read a "
                             f"{library_of_path(dest)} copy unchanged")
        out[os.path.realpath(src)] = os.path.realpath(dest)
    return out


def substitution_environment(substitutions: dict[str, str], env: dict) -> dict:
    """``env`` for a program whose opens of each SRC are served from DEST: the start-up hook first on PYTHONPATH
    and the pairs in ``IOADVISOR_SUBSTITUTE`` (empty: the hook loads, nothing is swapped) for Python, and in
    ``IOADVISOR_H5_SUBSTITUTE`` for the libhdf5 interposer's H5Fopen (netCDF-C, C programs)."""
    env = dict(env)
    env["PYTHONPATH"] = os.pathsep.join([str(SITE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env[settings.SUBSTITUTE] = os.pathsep.join(f"{a}={b}" for a, b in substitutions.items())
    # the libhdf5 interposer's H5Fopen (when preloaded: ioadvisor run) reads the same pairs, ':'-separated
    env[settings.H5_SUBSTITUTE] = ":".join(f"{a}={b}" for a, b in substitutions.items())
    return env


def substitute_here(substitutions: dict[str, str]) -> None:
    """Serve opens of each SRC from DEST in this process (``ioadvisor run --substitute``: the program runs here)
    and in the Python programs it starts (they inherit the environment)."""
    import importlib.util

    os.environ.update(substitution_environment(substitutions, os.environ))
    spec = importlib.util.spec_from_file_location("ioadvisor_substitute", SITE / "sitecustomize.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # installs the redirection (IOADVISOR_SUBSTITUTE is set)


def claimed_speedup(advice, library: str) -> float | None:
    """The advice's claim for the program's run, for the copy's library: the run-level (Amdahl) speed-up of the
    recommendation, or of the best candidate of ``library`` when the recommendation is of the other one (the
    program opens one library), for the array with the most traced time; the traced-calls speed-up only when
    the trace has no run time."""
    datasets = [d for d in advice.datasets if d.best_of(library) is not None]
    if not datasets:
        return None
    adv = max(datasets, key=lambda d: d.current_seconds)
    r = adv.recommendation if adv.recommendation.library == library else adv.best_of(library)
    run = adv.run_speedup(r)
    return run if run is not None else adv.speedup_vs_current(r)


def claimed_run(advice, library: str) -> tuple[float, float] | None:
    """(the traced run's seconds, its traced calls' seconds) of the array ``claimed_speedup`` claims for: what the
    claim rests on, shown beside the measured runs (a traced run on a busier machine than the compared ones is
    slower in seconds; the claim is a ratio of that run's parts)."""
    datasets = [d for d in advice.datasets if d.best_of(library) is not None]
    if not datasets:
        return None
    adv = max(datasets, key=lambda d: d.current_seconds)
    return None if not adv.run_seconds else (adv.run_seconds, adv.current_seconds)


def claim_note(advice, library: str) -> str | None:
    """What the claim assumes that running the program unchanged on the copy does not give it: the advised HDF5
    chunk cache is an opening setting (``rdcc_nbytes``, netCDF4's ``set_var_chunk_cache``), not stored in the
    file, so the unchanged program opens the copy with its library's default cache (benchmarks/validation/apply.py
    --real, r04: 5840x20x20 chunks are predicted 0.18 s with the advised 64 MiB and 0.85 s with the default)."""
    datasets = [d for d in advice.datasets if d.best_of(library) is not None]
    if not datasets:
        return None
    adv = max(datasets, key=lambda d: d.current_seconds)
    r = adv.recommendation if adv.recommendation.library == library else adv.best_of(library)
    c = r.candidate
    if c.library != "hdf5" or c.chunks is None or c.cache_bytes is None:
        return None
    return (f"the claim is for {r.label}, whose chunk cache ({c.cache_bytes} bytes) the program sets when it opens "
            "the file (the printed recipe shows how); run unchanged, it opens the copy with its library's default "
            "cache, which this measurement then has")


def claimed_saving(advice, library: str) -> float | None:
    """Seconds the advice claims the copy saves, summed over its arrays: the current layout's time (traced when
    calibrated) less the predicted time of what was applied (the recommendation, or the best candidate of
    ``library``). ``Comparison`` puts it against the measured original run, so claim and measurement cover the
    same window: the whole process, its interpreter start, imports and exit included (the trace's run time
    starts at the tracer and ends at the last traced call, and compare's runs also pay the substitution hook's
    imports: fixed costs that grow with the machine's load, left out of the traced window; benchmarks/validation/apply.py
    --real measures both claims)."""
    saved = None
    for d in advice.datasets:
        r = d.recommendation if d.recommendation.library == library else d.best_of(library)
        if r is not None:
            saved = (saved or 0.0) + d.current_seconds - r.seconds
    return saved


def _evict(paths) -> None:
    for root in paths:
        p = Path(root)
        for f in ([p] if p.is_file() else [q for q in p.rglob("*") if q.is_file()]):
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


@dataclass(frozen=True)
class Comparison:
    """Wall seconds of each run of the program on the original and on the copy."""

    command: tuple[str, ...]
    substitutions: dict
    original: tuple[float, ...]
    copy: tuple[float, ...]
    claimed: float | None = None
    """The claim as given (``--claim``), or the advice's run-level claim over the traced window."""
    saved_seconds: float | None = None
    """Seconds the advice claims the copy saves (``claimed_saving``): the claim for the window measured here
    (``claimed_measured_window``), shown beside ``claimed``."""
    traced_run: tuple[float, float] | None = None
    """(seconds, seconds in the claimed array's calls) of the traced run the claim came from (``claimed_run``)."""
    note: str | None = None
    """What the claim assumes that the unchanged program does not do (``claim_note``)."""

    @property
    def speedup(self) -> float:
        return statistics.median(self.original) / statistics.median(self.copy)

    @property
    def claimed_measured_window(self) -> float | None:
        """The claimed saving against the measured original run: the claim for the whole process."""
        if self.saved_seconds is None:
            return None
        t = statistics.median(self.original)
        # None when the saving is not below the measured run: the traced run was slower (a heavier load) than
        # these runs, so its seconds do not transfer to them; the traced window's ratio is the claim then
        return t / (t - self.saved_seconds) if t > self.saved_seconds else None

    @property
    def claim(self) -> float | None:
        """The claim the measurement is checked against: the run-level ratio of the traced window, which holds
        whatever the load (benchmarks/validation/apply.py --real: the same program's runs spread 2-4x between loads, so
        seconds traced at one load do not transfer to runs at another); the measured-window claim, which also
        covers the fixed start-up, is shown beside it and used only without a ratio."""
        return self.claimed if self.claimed is not None else self.claimed_measured_window

    def get_config(self) -> dict:
        return {"command": list(self.command), "substitutions": dict(self.substitutions),
                "original_seconds": list(self.original), "copy_seconds": list(self.copy),
                "original_median": statistics.median(self.original), "copy_median": statistics.median(self.copy),
                "speedup": self.speedup, "claimed_speedup": self.claim, "claimed_traced_window": self.claimed,
                "saved_seconds": self.saved_seconds, "claimed_measured_window": self.claimed_measured_window,
                "traced_run_seconds": None if self.traced_run is None else self.traced_run[0],
                "traced_calls_seconds": None if self.traced_run is None else self.traced_run[1],
                "claim_note": self.note}

    def table(self) -> str:
        fmt = lambda xs: ", ".join(f"{x:.3g}" for x in xs)  # noqa: E731
        claim = self.claim
        lines = [f"original: {fmt(self.original)} s (median {statistics.median(self.original):.3g})",
                 f"copy:     {fmt(self.copy)} s (median {statistics.median(self.copy):.3g})",
                 f"measured speed-up {self.speedup:.3g}x"
                 + (f"; the advice claimed {claim:.3g}x (measured / claimed {self.speedup / claim:.3g})"
                    if claim else "")]
        if self.traced_run is not None:
            run, calls = self.traced_run
            lines.append(f"(the claim is a ratio of the traced run's parts: {run:.3g} s from its start to its last "
                         f"traced call, with start and exit, {calls:.3g} s of it in the calls the copy changes; the "
                         f"original measured here: {statistics.median(self.original):.3g} s)")
        elif self.saved_seconds is not None:
            whole = self.claimed_measured_window
            lines.append(f"(the claim is for the traced window, from the tracer's start to the last traced call; "
                         f"the claimed {self.saved_seconds:.3g} s saved against the measured original run: "
                         + (f"{whole:.3g}x)" if whole else "more than that run)"))
        if self.note:
            lines.append(f"note: {self.note}")
        return "\n".join(lines)


def compare(command: Sequence[str], substitutions: dict[str, str], runs: int = 3,
            claimed: float | None = None, saved_seconds: float | None = None,
            traced_run: tuple[float, float] | None = None, note: str | None = None) -> Comparison:
    """Run ``command`` ``runs`` times on each side, alternating, each run cold."""
    if runs < 1:
        raise ApplyError("--runs must be >= 1")
    if not command:
        raise ApplyError("no program given: ioadvisor compare --substitute SRC=DEST -- python app.py ...")
    files = list(substitutions) + list(substitutions.values())
    # a copy written with an hdf5plugin filter is readable by a program that does not import hdf5plugin
    # (apply's summary says so); both sides get the same environment
    plugin_path = os.environ.get("HDF5_PLUGIN_PATH")
    if not plugin_path and installed("hdf5plugin"):
        import hdf5plugin

        plugin_path = hdf5plugin.PLUGIN_PATH
    times: dict[str, list[float]] = {"original": [], "copy": []}
    for _ in range(runs):
        for side in ("original", "copy"):
            env = substitution_environment({} if side == "original" else substitutions, os.environ)
            if plugin_path:
                env["HDF5_PLUGIN_PATH"] = plugin_path
            _evict(files)
            t0 = time.perf_counter()
            proc = subprocess.run(list(command), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            times[side].append(time.perf_counter() - t0)
            if proc.returncode != 0:
                tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
                raise ApplyError(f"the program exited with {proc.returncode} on the {side}: {tail[0]}")
    return Comparison(tuple(command), dict(substitutions), tuple(times["original"]), tuple(times["copy"]), claimed,
                      saved_seconds, traced_run, note)
