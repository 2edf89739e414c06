"""Bytes the device really reads (the kernel's readahead) against the model's s_rdisk, per validation case.

Run: python -m benchmarks.investigations.iomodel_readahead [--shape tall-2d|cube-3d] [--profile PROFILE.json]

For each HDF5 read / slab-write case of ``benchmarks/validation/iomodel_validation.py --quick`` the array is built, its
pages evicted, and the accesses replayed (``iomodel.replay``) while ``/proc/thread-self/io`` counts
``read_bytes`` (bytes the device was asked for, readahead included) and ``rchar`` (bytes the program asked
for). Printed next to them: the model's s_rdisk with the profile's readahead (``readahead_bytes``) and without
it (every requested byte a device byte, no window). No coefficients are involved: this checks the variables.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path


from benchmarks.validation.iomodel_validation import shape_name, validation_cases

from iomodel import replay as _replay  # noqa: E402
from iomodel.cases import features_of, measure  # noqa: E402
from iomodel.profile import load_profile  # noqa: E402


def _io() -> tuple[int, int]:
    with open("/proc/thread-self/io") as fh:
        d = dict(line.split(": ") for line in fh.read().splitlines())
    return int(d["read_bytes"]), int(d["rchar"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="tall-2d", choices=("tall-2d", "cube-3d"))
    ap.add_argument("--profile", default=None)
    ap.add_argument("--workdir", default="/tmp/ioadvisor-readahead")
    args = ap.parse_args(argv)
    prof = load_profile(args.profile)
    opts = prof.replay_options
    if not opts["readahead"]:
        raise SystemExit("the profile records no readahead_bytes: nothing to compare")
    cases = [c for c in validation_cases(True) if c.library == "hdf5" and shape_name(c) == args.shape
             and c.pattern != "append"]
    work = Path(args.workdir)
    print("| chunks | pattern | device MiB (requested) | model s_rdisk MiB | without readahead |")
    print("|---|---|---|---|---|")
    built = None
    try:
        for c in cases:
            if c.group != built:
                measure(c, work, rebuild=True)
                built = c.group
            r0, c0 = _io()
            _replay.replay(c.accesses, c.spec(), work, rebuild=False, cold=True)
            r1, c1 = _io()
            with_ra = features_of(c, prof.page_cache_bytes, **opts)["s_rdisk"]
            without = features_of(c, prof.page_cache_bytes, **{**opts, "readahead": 0})["s_rdisk"]
            mib = 1 << 20
            print(f"| {'x'.join(map(str, c.chunks))} | {c.pattern} | {(r1 - r0) / mib:.2f} ({(c1 - c0) / mib:.2f}) "
                  f"| {with_ra / mib:.2f} | {without / mib:.2f} |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
