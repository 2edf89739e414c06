"""Every ``IOADVISOR_*`` environment variable: its name, meaning, default and who reads it, in one place.

A leaf module (no project imports): every package may import it. Each accessor reads ``os.environ`` when it is
called; a module that reads a variable once (at its import, e.g. ``mpi.WAIT_SECONDS``) calls the accessor once,
at its import, as before. Variables set for child processes are written by their users under these names
(``H5_DIR``, ``H5_SUBSTITUTE``, ``FOLLOW``, ``SUBSTITUTE``); the child reads them from its environment (the
libhdf5 interposer in C, the ``.pth`` start-up hook, ``advisor/apply/site/sitecustomize.py``, which runs in a
program's interpreter before the project is importable and so spells its one name itself).

The table in README.md ("Environment variables") lists the same variables; ``VARIABLES`` below is the source.
"""
from __future__ import annotations

import os

CACHE = "IOADVISOR_CACHE"
CONVERT_WAIT = "IOADVISOR_CONVERT_WAIT"
DEBUG = "IOADVISOR_DEBUG"
FOLLOW = "IOADVISOR_FOLLOW"
FRONT_ARGV0 = "IOADVISOR_FRONT_ARGV0"
FRONT_STARTED = "IOADVISOR_FRONT_STARTED"
H5_DIR = "IOADVISOR_H5_DIR"
H5_SUBSTITUTE = "IOADVISOR_H5_SUBSTITUTE"
JOBS = "IOADVISOR_JOBS"
MPI_MISSING = "IOADVISOR_MPI_MISSING"
MPI_WAIT = "IOADVISOR_MPI_WAIT"
PART_WAIT = "IOADVISOR_PART_WAIT"
PENDING_BYTES = "IOADVISOR_PENDING_BYTES"
PROFILE = "IOADVISOR_PROFILE"
QUIET = "IOADVISOR_QUIET"
RESCALE = "IOADVISOR_RESCALE"
SIGTERM_WAIT = "IOADVISOR_SIGTERM_WAIT"
SUBSTITUTE = "IOADVISOR_SUBSTITUTE"
TRIAGE_KEY = "IOADVISOR_TRIAGE_KEY"

VARIABLES = {
    # name: (meaning, default, who reads it and when)
    CACHE: ("cache directory: the VOL connector built per HDF5 version (hdf5-VERSION/plugins)", "~/.cache/ioadvisor",
            "instrumentation/volconnector.py, at each build"),
    CONVERT_WAIT: ("longest wait (seconds) at a tracer's exit for its converter to convert the rest", "120",
                   "instrumentation/convert.py, once at import"),
    DEBUG: ("set (non-empty): errors show their traceback", "unset",
            "advisor/cli.py, api.py, report.py, commands/apply.py, iomodel/intrace.py, at each error"),
    FOLLOW: ("parts directories of the active tracers (os.pathsep-separated): set means 'trace me'", "unset",
             "set for children by instrumentation/partsdir.py; read by the .pth hook (startup.py) and "
             "follow.start_part in the child"),
    FRONT_ARGV0: ("the `ioadvisor` command's own argv[0], set by its native front end when it execs the Python entry "
                  "point", "unset", "set by instrumentation/frontend/ioadvisor.c; read (and removed) by advisor/entry.py"),
    FRONT_STARTED: ("the state of the native program the front end started before it execs the Python entry point "
                    "(nativestart.NativeStart.resumed)", "unset",
                    "set by instrumentation/frontend/ioadvisor.c; read (and removed) by advisor/entry.py"),
    H5_DIR: ("directory the libhdf5 interposer writes its logs to", "unset",
             "set for children by instrumentation/preload.py; read by interposer/h5interpose.c, h5wrap.c"),
    H5_SUBSTITUTE: ("SRC=DEST pairs (':'-separated) the libhdf5 interposer's H5Fopen serves from DEST", "unset",
                    "set by advisor/apply/compare.py; read by interposer/h5interpose.c"),
    JOBS: ("worker threads for candidate evaluation", "the usable cores",
           "advisor/costmodel.py default_jobs, at each call"),
    MPI_MISSING: ("seconds to wait for a rank that has no trace file", "60",
                  "instrumentation/mpi.py, once at import"),
    MPI_WAIT: ("longest wait in seconds for the other ranks at finish", "600",
               "instrumentation/mpi.py, once at import"),
    PART_WAIT: ("longest wait (seconds) at the end of a run for a live child to flush what it recorded", "10",
                "instrumentation/parts.py, once at import"),
    PENDING_BYTES: ("unconverted bytes of a process's libhdf5 .acc log that make a poll convert them while it records", str(16 << 20),
                    "instrumentation/h5log.py, once at import"),
    PROFILE: ("this machine's profile file (ioadvisor calibrate)", "~/.config/ioadvisor/profile.json",
              "iomodel/profile.py user_profile_path, at each call (empty: the default)"),
    QUIET: ("set (non-empty): no progress bars", "unset", "advisor/progress.py, at each configure"),
    RESCALE: ("'0': use a profile as it is (no rescale by this machine's speed probe): runs whose figures must match", "1",
              "iomodel/probe.py, at each call"),
    SIGTERM_WAIT: ("longest seconds a child killed by SIGTERM spends closing its part", "5",
                   "instrumentation/sigterm.py, once at import"),
    SUBSTITUTE: ("SRC=DEST pairs (os.pathsep-separated) Python opens are served from", "unset",
                 "set by advisor/apply/compare.py; read by advisor/apply/site/sitecustomize.py in the program"),
    TRIAGE_KEY: ("key of the hash that hides file names in ioadvisor triage", "'' (unkeyed)",
                 "advisor/commands/triage.py, at each run"),
}
"""name -> (meaning, default, reader). ``tests/instrumentation/test_settings.py`` checks that each is read by its
accessor and that no other module spells an ``IOADVISOR_`` name."""


def cache_root() -> Path:
    from pathlib import Path  # here: a native run's launcher starts its program before pathlib's import

    return Path(os.environ.get(CACHE, Path.home() / ".cache" / "ioadvisor"))


def convert_wait() -> float:
    return float(os.environ.get(CONVERT_WAIT, "120"))


def debug() -> bool:
    return bool(os.environ.get(DEBUG))


def follow_dirs() -> list[str]:
    return [d for d in os.environ.get(FOLLOW, "").split(os.pathsep) if d]


def jobs() -> int | None:
    """``IOADVISOR_JOBS`` as a count (at least 1), None when unset or empty."""
    env = os.environ.get(JOBS)
    return max(1, int(env)) if env else None


def mpi_missing() -> float:
    return float(os.environ.get(MPI_MISSING, "60"))


def mpi_wait() -> float:
    return float(os.environ.get(MPI_WAIT, "600"))


def part_wait() -> float:
    return float(os.environ.get(PART_WAIT, "10"))


def pending_bytes() -> int:
    return int(os.environ.get(PENDING_BYTES, 16 << 20))


def profile_path() -> Path:
    from pathlib import Path

    return Path(os.environ.get(PROFILE) or Path.home() / ".config" / "ioadvisor" / "profile.json")


def quiet() -> bool:
    return bool(os.environ.get(QUIET))


def rescale() -> bool:
    """False when ``IOADVISOR_RESCALE`` is ``0``."""
    return os.environ.get(RESCALE, "1") != "0"


def sigterm_wait() -> float:
    return float(os.environ.get(SIGTERM_WAIT, "5"))


def substitutions() -> str:
    """The raw ``IOADVISOR_SUBSTITUTE`` value ('' when unset); sitecustomize.py parses it in the program."""
    return os.environ.get(SUBSTITUTE, "")


def front_argv0() -> str | None:
    return os.environ.get(FRONT_ARGV0)


def front_started() -> str | None:
    return os.environ.get(FRONT_STARTED)


def h5_dir() -> str | None:
    return os.environ.get(H5_DIR)


def h5_substitutions() -> str:
    return os.environ.get(H5_SUBSTITUTE, "")


def triage_key() -> str:
    return os.environ.get(TRIAGE_KEY, "")


ACCESSORS = {CACHE: cache_root, CONVERT_WAIT: convert_wait, DEBUG: debug, FOLLOW: follow_dirs,
             FRONT_ARGV0: front_argv0, FRONT_STARTED: front_started,
             H5_DIR: h5_dir, H5_SUBSTITUTE: h5_substitutions, JOBS: jobs, MPI_MISSING: mpi_missing,
             MPI_WAIT: mpi_wait, PART_WAIT: part_wait, PENDING_BYTES: pending_bytes, PROFILE: profile_path,
             QUIET: quiet, RESCALE: rescale, SIGTERM_WAIT: sigterm_wait, SUBSTITUTE: substitutions,
             TRIAGE_KEY: triage_key}
"""name -> the accessor that reads it (H5_DIR, H5_SUBSTITUTE, SUBSTITUTE are read by the child processes they
are set for; their accessors serve tests and diagnostics)."""
