"""Shared bits of the regret-benchmark workloads: arguments and a smooth test field.

Each workload is a plain h5py / zarr / mpi4py program run as
``python wNN_name.py prepare DIR`` (untraced: writes the input file a read
workload starts from) and ``ioadvisor run -- python wNN_name.py run DIR``
(the traced part). ``SCALE`` (env ``WORKLOAD_SCALE``, default 1.0) shrinks the
long dimension for quick runs.
"""
from __future__ import annotations

import os
import sys

import numpy as np

SCALE = float(os.environ.get("WORKLOAD_SCALE", "1.0"))


def scaled(n: int, multiple: int = 1) -> int:
    """n x SCALE, rounded down to a multiple, at least one multiple."""
    return max(multiple, int(n * SCALE) // multiple * multiple)


def smooth_field(shape, seed: int = 0, dtype="f4") -> np.ndarray:
    """A smooth random field plus a little noise (compresses like simulation output, not like white noise).

    Separable: a sum of a few low-frequency sinusoids per axis, multiplied, so it
    costs one pass over the array.
    """
    rng = np.random.default_rng(seed)
    out = np.zeros(shape, dtype=np.float32)
    for _ in range(3):
        term = np.ones((1,) * len(shape), dtype=np.float32)
        for d, n in enumerate(shape):
            k = rng.uniform(0.5, 4.0)
            phase = rng.uniform(0, 2 * np.pi)
            axis = np.cos(2 * np.pi * k * np.arange(n, dtype=np.float32) / max(n, 1) + phase)
            term = term * axis.reshape((1,) * d + (n,) + (1,) * (len(shape) - d - 1))
        out += term
    out += rng.standard_normal(shape, dtype=np.float32) * np.float32(0.01)
    return (out * 10 + 280).astype(dtype)


def main(prepare, run) -> None:
    """``prepare DIR`` / ``run DIR`` dispatch; ``prepare`` may be None for write workloads."""
    if len(sys.argv) != 3 or sys.argv[1] not in ("prepare", "run"):
        sys.exit(f"usage: {sys.argv[0]} prepare|run DIR")
    step, directory = sys.argv[1], sys.argv[2]
    os.makedirs(directory, exist_ok=True)
    if step == "prepare":
        if prepare is not None:
            prepare(directory)
    else:
        run(directory)
