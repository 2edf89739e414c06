"""Keep numba's on-disk cache of the compiled kernels consistent across modules.

numba invalidates a cached function only when its own source file changes; the
replay kernel in kernel.py inlines cache.py, chunks.py and osio.py helpers, so an edit
there would silently leave a stale kernel. We hash these sources and drop
the package's cached kernels when the hash changes.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

_SOURCES = ("cache.py", "chunks.py", "osio.py", "kernel.py", "replayer.py")


def invalidate_if_stale() -> None:
    here = Path(__file__).parent
    digest = hashlib.sha1(b"".join((here / name).read_bytes() for name in _SOURCES)).hexdigest()
    cache_dir = here / "__pycache__"
    stamp = cache_dir / "numba-sources.sha1"
    try:
        if stamp.read_text() == digest:
            return
    except OSError:
        pass
    try:
        cache_dir.mkdir(exist_ok=True)
        for f in list(cache_dir.glob("*.nbi")) + list(cache_dir.glob("*.nbc")):
            f.unlink(missing_ok=True)
        stamp.write_text(digest)
    except OSError:
        pass  # read-only install: numba then caches elsewhere (NUMBA_CACHE_DIR) or not at all


def kernels() -> list:
    """The package's compiled kernels (numba dispatchers; inlined helpers, never compiled alone, left out)."""
    import importlib

    from numba.core.registry import CPUDispatcher

    seen: dict[int, object] = {}
    for name in _SOURCES:
        module = importlib.import_module(f"{__package__}.{name[:-3]}")
        for obj in vars(module).values():
            if isinstance(obj, CPUDispatcher) and obj.targetoptions.get("inline") != "always":
                seen.setdefault(id(obj), obj)
    return list(seen.values())


def uncached_kernels() -> list:
    """The kernels with no on-disk cache yet: what the first model run after an install or an edit compiles
    (tens of seconds; a few serve paths a run may never take). [] when numba's cache layout cannot be read."""
    try:
        return [d for d in kernels() if not Path(d._cache._cache_file._index_path).exists()]
    except AttributeError:  # another numba's cache internals
        return []
