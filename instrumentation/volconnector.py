"""ioadvisor's VOL connector: HDF5's own interception point (HDF5 >= 1.14), for programs with libhdf5 linked in.

HDF5 1.14 loads a VOL connector named by ``HDF5_VOL_CONNECTOR`` from ``HDF5_PLUGIN_PATH`` into any program,
its libhdf5 shared or linked in statically. The connector (interposer/h5vol_connector.c) is HDF5's own
pass-through connector, compiled from the source release of the program's HDF5 version, with its dataset
reads and writes recorded by the interposer's code (interposer/h5vol.c) into the interposer's files: a run
reads them as any other. A connector must be built against the headers of the very version it is loaded
into: ``build(SOURCE)`` configures an HDF5 source release (headers only: the library itself is not built)
and compiles the connector into ``~/.cache/ioadvisor/hdf5-<version>/plugins``.

A connector calls HDF5's functions, so it loads only where they are visible to it: a shared libhdf5, or a
static one in a program linked with ``-rdynamic``. Elsewhere HDF5 fails to start (every call of the program
fails), so ``environment_for`` sets the variables only for a program that exports them (``exports_hdf5``).
"""
from __future__ import annotations

import os
import re
import struct
import subprocess
import tempfile
from pathlib import Path

from . import settings

CONNECTOR = "ioadvisor under_vol=0;under_info={}"
"""``HDF5_VOL_CONNECTOR``: the connector's name, then the pass-through's own information (the native
connector below it)."""
PLUGIN_NAME = "libioadvisor_vol.so"
_HERE = Path(__file__).parent / "interposer"
_VERSION = re.compile(r"#define H5_VERS_(MAJOR|MINOR|RELEASE)\s+(\d+)")


def cache_root() -> Path:
    return settings.cache_root()


def plugin_dir(version: str) -> Path:
    """Where the connector for HDF5 ``version`` is (or would be) built."""
    return cache_root() / f"hdf5-{version}" / "plugins"


def source_version(source: Path) -> str:
    """The HDF5 version of a source release directory (its src/H5public.h)."""
    parts = dict(_VERSION.findall((Path(source) / "src" / "H5public.h").read_text()))
    if len(parts) != 3:
        raise ValueError(f"{source}/src/H5public.h: no HDF5 version found (not an HDF5 source release?)")
    return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['RELEASE']}"


def build(source: Path, cc: str = "cc") -> Path:
    """Compile the connector against the HDF5 source release ``source`` (configured here first if it is not:
    about a minute); returns its plugin directory. ValueError for a release before 1.14 (no stable VOL API)."""
    source = Path(source).resolve()
    version = source_version(source)
    if tuple(map(int, version.split("."))) < (1, 14, 0):
        raise ValueError(f"HDF5 {version}: a VOL connector needs HDF5 1.14 or newer")
    src = source / "src"
    if not (src / "H5pubconf.h").exists():
        subprocess.run(["./configure", "--disable-fortran", "--disable-cxx", "--disable-tests", "--disable-tools",
                        "--disable-hl"], cwd=source, check=True, capture_output=True)
    out = plugin_dir(version)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        lib = Path(tmp) / PLUGIN_NAME
        # -z now: a symbol missing from the process fails the load, never a later call; -fvisibility=hidden:
        # only the two plugin functions are exported (HDF5's pass-through code stays the connector's own)
        subprocess.run([cc, "-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-Wl,-z,now", f"-I{src}",
                        f"-I{src / 'H5FDsubfiling'}", "-o", str(lib), str(_HERE / "h5vol_connector.c"),
                        str(_HERE / "h5vol.c"), "-ldl", "-lpthread"], check=True, capture_output=True)
        os.replace(lib, out / PLUGIN_NAME)
    return out


def built(version: str) -> Path | None:
    """The plugin directory of the connector built for HDF5 ``version``, or None."""
    where = plugin_dir(version)
    return where if (where / PLUGIN_NAME).exists() else None


def exports_hdf5(path: str | Path) -> bool:
    """Whether the ELF program at ``path`` exports HDF5's VOL functions in its dynamic symbol table (linked
    with -rdynamic), so that a connector loaded into it reaches its libhdf5."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return False
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:  # 64-bit little-endian only
        return False
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind != 11 or not entsize:  # SHT_DYNSYM
            continue
        strtab = sections[link]
        for at in range(offset, offset + size, entsize):
            name, _stinfo, _other, shndx = struct.unpack_from("<IBBH", data, at)
            if shndx == 0:  # undefined here
                continue
            start = strtab[4] + name
            if data[start:data.index(b"\0", start)] == b"H5VLdataset_read":
                return True
    return False


def environment_for(path: str | Path, version: str, environ=None) -> dict[str, str] | None:
    """The variables that load the connector into the program at ``path`` (HDF5 ``version`` linked in), or None
    where it cannot be: before 1.14, not built for that version, the program does not export HDF5's functions,
    or the user already names a VOL connector (theirs stays)."""
    environ = os.environ if environ is None else environ
    if tuple(map(int, version.split("."))) < (1, 14, 0) or environ.get("HDF5_VOL_CONNECTOR"):
        return None
    where = built(version)
    if where is None or not exports_hdf5(path):
        return None
    search = [str(where), *filter(None, environ.get("HDF5_PLUGIN_PATH", "").split(":"))]
    return {"HDF5_VOL_CONNECTOR": CONNECTOR, "HDF5_PLUGIN_PATH": ":".join(search)}


__all__ = ["CONNECTOR", "PLUGIN_NAME", "build", "built", "environment_for", "exports_hdf5", "plugin_dir",
           "source_version"]
