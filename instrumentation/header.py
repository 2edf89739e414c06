"""The header of a trace (its first line) and what it holds: the processes merged, the facts an imported trace rests
on. Part of the records (instrumentation/records.py re-exports them)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from .validation import RecordError, require, typed

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ImportedFact:
    """One fact an imported trace (``synthetic``) states beyond its records, and whether it was guessed.

    ``dataset`` is the dataset's key (``file::path``), or "" for the whole trace;
    ``fact`` a short name ("shape", "placement", "read/write split", ...).
    """

    dataset: str
    fact: str
    detail: str
    guessed: bool = True

    def get_config(self) -> dict:
        return {"dataset": self.dataset, "fact": self.fact, "detail": self.detail, "guessed": self.guessed}

    @classmethod
    def from_config(cls, config: dict) -> "ImportedFact":
        require(config, cls)
        return cls(typed(config["dataset"], str, "facts.dataset"), typed(config["fact"], str, "facts.fact"),
                   typed(config["detail"], str, "facts.detail"), bool(config.get("guessed", True)))


@dataclass(frozen=True)
class ProcessInfo:
    """One process whose accesses a trace holds (the run's own or one it started, at any depth).

    ``state``: "exited" (its part was closed), "running" (still alive when the run's
    trace was merged; its part was read as of the end of the run) or "lost" (it ended
    without closing its part: accesses after its last flush are missing).
    """

    pid: int
    ppid: int
    argv: tuple[str, ...] = ()
    accesses: int = 0
    state: str = "exited"

    STATES: ClassVar[tuple[str, ...]] = ("exited", "running", "lost")

    def get_config(self) -> dict:
        return {"pid": self.pid, "ppid": self.ppid, "argv": list(self.argv), "accesses": self.accesses,
                "state": self.state}

    @classmethod
    def from_config(cls, config: dict) -> "ProcessInfo":
        require(config, cls)
        state = config.get("state", "exited")
        if state not in cls.STATES:
            raise RecordError(f"field 'state' must be one of {', '.join(cls.STATES)}, got {state!r:.40}")
        return cls(typed(config["pid"], int, "pid"), typed(config["ppid"], int, "ppid"),
                   tuple(config.get("argv") or ()), typed(config.get("accesses", 0), int, "accesses"), state)


@dataclass(frozen=True)
class TraceHeader:
    """First line of every trace file.

    ``synthetic``: the accesses were not captured but rebuilt from a summary (a
    Darshan log); ``facts`` then says what the rebuild rests on, guessed or not.
    ``ppid``: the parent process. ``capture``: the capture levels in force (which
    calls were hooked, whether child processes were followed). ``processes``: every
    process merged into this trace, this one first (empty: this process only).
    ``missed``: what is known not to be in the trace, one line each. ``libraries``: the
    libhdf5 copies the interposer recorded calls through, ``HDF5 VERSION: PATH`` each
    (both learnt while the process ran: written in the end record, read back here).
    """

    schema: int
    host: str
    pid: int
    rank: int
    size: int
    t_origin_unix: float
    versions: dict = field(default_factory=dict, compare=False)
    argv: tuple[str, ...] = ()
    clock: str = "time.perf_counter"
    ppid: int = 0
    capture: tuple[str, ...] = ()
    processes: tuple[ProcessInfo, ...] = ()
    missed: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()
    synthetic: bool = False
    facts: tuple[ImportedFact, ...] = ()

    def guessed(self, dataset: str | None = None) -> tuple[ImportedFact, ...]:
        """The guessed facts (of one dataset key, plus the trace-wide ones, when given)."""
        return tuple(f for f in self.facts if f.guessed and (dataset is None or f.dataset in ("", dataset)))

    def get_config(self) -> dict:
        return {
            "schema": self.schema,
            "host": self.host,
            "pid": self.pid,
            "ppid": self.ppid,
            "rank": self.rank,
            "size": self.size,
            "t_origin_unix": self.t_origin_unix,
            "versions": self.versions,
            "argv": list(self.argv),
            "clock": self.clock,
            **({"synthetic": True, "facts": [f.get_config() for f in self.facts]} if self.synthetic else {}),
            "capture": list(self.capture),
            "processes": [p.get_config() for p in self.processes],
            "missed": list(self.missed),
            **({"libraries": list(self.libraries)} if self.libraries else {}),
        }

    @classmethod
    def from_config(cls, config: dict) -> "TraceHeader":
        require(config, cls)
        schema = typed(config["schema"], int, "schema")
        if schema != SCHEMA_VERSION:
            raise RecordError(f"unknown schema version {schema} (this ioadvisor reads {SCHEMA_VERSION})")
        return cls(
            schema=schema,
            host=typed(config["host"], str, "host"),
            pid=typed(config["pid"], int, "pid"),
            rank=typed(config["rank"], int, "rank"),
            size=typed(config["size"], int, "size"),
            t_origin_unix=float(typed(config["t_origin_unix"], (int, float), "t_origin_unix")),
            versions=dict(config.get("versions") or {}),
            argv=tuple(config.get("argv") or ()),
            clock=config.get("clock", "time.perf_counter"),
            synthetic=bool(config.get("synthetic", False)),
            facts=tuple(ImportedFact.from_config(f) for f in config.get("facts") or ()),
            ppid=typed(config.get("ppid", 0), int, "ppid"),
            capture=tuple(config.get("capture") or ()),
            processes=tuple(ProcessInfo.from_config(p) for p in config.get("processes") or ()),
            missed=tuple(config.get("missed") or ()),
            libraries=tuple(config.get("libraries") or ()),
        )


__all__ = ["SCHEMA_VERSION", "ImportedFact", "ProcessInfo", "TraceHeader"]
