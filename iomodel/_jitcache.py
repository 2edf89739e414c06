"""Keep numba's on-disk cache of the compiled kernels consistent across modules.

numba invalidates a cached function only when its own source file changes; the
replay kernel in variables.py inlines cache.py and chunks.py helpers, so an edit
there would silently leave a stale kernel. We hash the three sources and drop
the package's cached kernels when the hash changes.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

_SOURCES = ("cache.py", "chunks.py", "variables.py")


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
