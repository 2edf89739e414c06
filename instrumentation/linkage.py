"""Programs whose libhdf5 is linked in statically: telling them apart, and the link-time wrapper for them.

The interposer (interpose.py) reaches a program's libhdf5 calls through LD_PRELOAD, which only works when
the program loads a shared libhdf5. Debian's ``h5cc`` (and most HPC builds) link ``libhdf5.a`` into the
program instead: its calls never leave it, and a trace of it would hold nothing while saying nothing of
what it missed. ``inspect`` reads a program's file for the library linked in (HDF5 keeps its version
string, ``HDF5 library version: X.Y.Z``, in every build, stripped or not) and for the link-time wrapper
(interposer/h5wrap.c: the interposer's code linked into the program with ``-Wl,--wrap``, as Darshan does
for static binaries), which marks itself with ``WRAP_MARKER``. ``link_flags`` is what to add to the link
line to get the wrapper; it records into the same files as the interposer, so ``ioadvisor run`` reads a
wrapped program as any other.
"""
from __future__ import annotations

import mmap
import os
import re
from collections import namedtuple
from pathlib import Path

from .nativestart import HDF5_VERSION_MARK

WRAPPED = ("H5Dread", "H5Dwrite", "H5Dread_multi", "H5Dwrite_multi", "H5Dcreate2", "H5Dset_extent",
           "H5Sselect_hyperslab", "H5Sselect_all", "H5Sselect_none", "H5Sselect_elements", "H5Sselect_adjust",
           "H5Sselect_copy", "H5Smodify_select", "H5Soffset_simple", "H5Sset_extent_simple",
           "H5Sset_extent_none", "H5Sextent_copy", "H5Sclose", "H5Dclose", "H5Idec_ref", "H5close", "H5Iclear_type",
           "H5Idestroy_type")
"""The functions the wrapper hooks (``__wrap_<name>`` in interposer/h5wrap.c): each needs its ``--wrap``."""
WRAPPER_NAME = "ioadvisor_wrap.o"
"""The wrapper's object file, built at install time next to this module (setup.py)."""
WRAP_MARKER = b"ioadvisor link-time wrapper v1"
"""The string the wrapper puts into every program it is linked into (h5wrap.c's ``wrap_marker``)."""
_VERSION = re.compile(re.escape(HDF5_VERSION_MARK) + rb"(\d+\.\d+\.\d+)")
_ELF = b"\x7fELF"


class Linkage(namedtuple("Linkage", "static_hdf5 wrapped")):
    """What a program's file holds of libhdf5: the version linked into it (``static_hdf5``, str; None: none is,
    it loads a shared one or uses none) and whether the link-time wrapper is linked in too (``wrapped``).

    Immutable; a named tuple, not a dataclass: ``ioadvisor run`` inspects a native program before starting it,
    and the dataclasses module's import was a third of that start (benchmarks/speed/tracing_overhead.py)."""

    __slots__ = ()

    def get_config(self) -> dict:
        return {"static_hdf5": self.static_hdf5, "wrapped": self.wrapped}

    @classmethod
    def from_config(cls, config: dict) -> "Linkage":
        return cls(config.get("static_hdf5"), bool(config.get("wrapped")))


def inspect(path: str | Path) -> Linkage | None:
    """The program's linkage, or None when ``path`` is not a readable ELF file (a script, say)."""
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != _ELF:
                return None
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                # bytes.find-style scans of the mapped file (the page cache's pages, not a copy): a few ms for
                # a 100 MB binary
                found = _VERSION.search(data)
                return Linkage(found.group(1).decode() if found else None, data.find(WRAP_MARKER) >= 0)
    except (OSError, ValueError):
        return None


def wrapper_object() -> Path | None:
    """The wrapper's object file, or None when it was not built (no C compiler at install time)."""
    path = Path(__file__).parent / WRAPPER_NAME
    return path if path.exists() else None


def link_flags(wrapper: Path) -> list[str]:
    """What to add to a program's link line (after its own objects) so that ``wrapper`` records its calls."""
    return [f"-Wl,--wrap={name}" for name in WRAPPED] + [str(wrapper)]


def reach(path: str | Path) -> tuple[dict[str, str], str | None]:
    """How a run reaches the calls of the program at ``path`` when its libhdf5 is linked in without the wrapper:
    (the variables that load the VOL connector into it, where it can be: volconnector.py; else, for
    ``TraceHeader.missed``, what tracing misses). ({}, None) when nothing is out of reach (a shared libhdf5,
    the wrapper linked in, no HDF5)."""
    linkage = inspect(path)
    if linkage is None or linkage.static_hdf5 is None or linkage.wrapped:
        return {}, None
    from . import volconnector

    version = linkage.static_hdf5
    env = volconnector.environment_for(path, version)
    if env is not None:
        return env, None
    return {}, gap_note(os.path.realpath(path), version)


def gap_note(path: str, version: str) -> str:
    """The ``TraceHeader.missed`` note of a program at ``path`` with HDF5 ``version`` linked in, unseen (also
    written for a program the interposer found so at its exit: interpose.ProcessLog.linked_in)."""
    vol = ""
    if re.fullmatch(r"\d+\.\d+\.\d+", version) and tuple(map(int, version.split("."))) >= (1, 14, 0):
        vol = (f", or (HDF5 >= 1.14) link it with -rdynamic and build the VOL connector for HDF5 {version} "
               "(instrumentation/volconnector.py, docs/static-programs.md)")
    return (f"libhdf5 calls of {path}: HDF5 {version} is linked into it statically, where the interposer "
            "cannot reach: none of its calls are in this trace; link it again with the wrapper: add "
            f"`ioadvisor link-flags` to its link line (h5cc -o PROG PROG.c $(ioadvisor link-flags)){vol}")


def static_note(path: str | Path) -> str | None:
    """For ``TraceHeader.missed``: what tracing misses of the program at ``path`` (``reach``)."""
    return reach(path)[1]


__all__ = ["Linkage", "WRAPPED", "WRAPPER_NAME", "WRAP_MARKER", "gap_note", "inspect", "link_flags", "reach",
           "static_note", "wrapper_object"]
