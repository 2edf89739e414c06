"""What a finding's fix gives back, the figure triage ranks by (a finding's seconds at stake are an upper bound).

A finding's seconds at stake (``advisor.darshan_findings``) are the time of the operations it concerns. What its
fix recovers can be far less: a misaligned request costs what an aligned one does when the file system's page
cache absorbs the partial blocks (a local file system: ext4, xfs, tmpfs, ...), while on a parallel file system
(Lustre, GPFS) partial stripes mean lock traffic and read-modify-write at the servers. So:

- where DXT recorded the requests, the file-level model's saving (``Finding.modelled``);
- P07/P08 (misaligned memory buffers / file offsets) on files that all sit on local file systems (the log's own
  mount table says which): nothing (measured: benchmarks/triage_confirm.py, the fix of a P08 on ext4 saved
  nothing, warm or cold);
- otherwise the seconds at stake.
"""
from __future__ import annotations

LOCAL_FS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "f2fs", "jfs", "reiserfs", "tmpfs", "ramfs",
                      "overlay", "devtmpfs"})
"""File system types whose page cache takes partial-block requests at memory cost (block devices and memory)."""
ALIGNMENT_CODES = ("P07", "P08")


def recovers(code: str, seconds: float, modelled: float | None, files, fs_type) -> float:
    """Seconds a finding's fix recovers: ``modelled`` where DXT gave it, none for misalignment on local file
    systems (``fs_type(name)`` gives a file's file system type, '' unknown), else the seconds at stake."""
    if modelled is not None:
        return max(float(modelled), 0.0)
    if code in ALIGNMENT_CODES and files and all(fs_type(n) in LOCAL_FS for n in files):
        return 0.0
    return max(float(seconds), 0.0)


__all__ = ["ALIGNMENT_CODES", "LOCAL_FS", "recovers"]
