"""Error bounds: absolute or relative-to-range, their resolution, and choosing one for a target.

A relative bound is always resolved with the range of the *whole field* (SZ's relative mode, when run by an
HDF5/Zarr filter, would use each chunk's own range: a different bound per chunk).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from instrumentation.errors import IoadvisorError

MODES = ("abs", "rel")


class ErrorBoundError(IoadvisorError, ValueError):
    """An error bound that cannot be read or met (one line naming it)."""


@dataclass(frozen=True)
class ErrorBound:
    """Point-wise error bound |x - x'| <= value ("abs") or <= value * (max - min) ("rel")."""

    mode: str
    value: float

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ErrorBoundError(f"error bound mode must be abs or rel, not {self.mode!r}")
        if not (isinstance(self.value, (int, float)) and math.isfinite(self.value) and self.value > 0):
            raise ErrorBoundError(f"error bound value must be a positive finite number, not {self.value!r}")
        object.__setattr__(self, "value", float(self.value))

    @classmethod
    def parse(cls, text: str) -> "ErrorBound":
        """``"rel:1e-3"`` / ``"abs:0.01"`` -> ErrorBound."""
        mode, sep, value = str(text).partition(":")
        try:
            number = float(value)
        except ValueError:
            number = None
        if not sep or mode not in MODES or number is None:
            raise ErrorBoundError(f"bad error bound {text!r}: expected abs:VALUE or rel:VALUE, e.g. rel:1e-3")
        return cls(mode, number)

    def absolute(self, data_range: float | None) -> float:
        """The absolute bound; ``data_range`` = max - min of the finite, non-fill values."""
        if self.mode == "abs":
            return self.value
        if data_range is None or not math.isfinite(data_range):
            raise ErrorBoundError(f"relative bound {self} needs a finite data range, got {data_range!r}")
        # a constant field has range 0: any positive bound is exact enough, keep it strictly positive
        return self.value * data_range if data_range > 0 else self.value

    def __str__(self) -> str:
        return f"{self.mode}:{self.value:g}"

    def get_config(self) -> dict:
        return {"mode": self.mode, "value": self.value}

    @classmethod
    def from_config(cls, config: dict) -> "ErrorBound":
        return cls(config["mode"], config["value"])


@dataclass(frozen=True)
class ErrorStats:
    """Error of a lossy reconstruction: max |x - x'|, RMSE, and PSNR = 20 log10(range / RMSE) in dB."""

    max_error: float
    rmse: float
    psnr: float

    @classmethod
    def measure(cls, original: np.ndarray, decoded: np.ndarray, data_range: float) -> "ErrorStats":
        """Measured on finite values; a NaN/Inf that did not come back identical counts as an infinite error."""
        original = np.asarray(original)
        decoded = np.asarray(decoded).reshape(original.shape)
        finite = np.isfinite(original)
        lost = ~finite & ~((original == decoded) | (np.isnan(original) & np.isnan(decoded)))
        if lost.any():
            return cls(math.inf, math.inf, -math.inf)
        diff = np.abs(original[finite].astype(np.float64) - decoded[finite].astype(np.float64))
        if diff.size == 0:
            return cls(0.0, 0.0, math.inf)
        max_error = float(diff.max()) if np.isfinite(diff).all() else math.inf
        rmse = float(np.sqrt(np.mean(diff**2)))
        return cls(max_error, rmse, _psnr(data_range, rmse))

    @classmethod
    def expected(cls, tolerance: float, data_range: float) -> "ErrorStats":
        """A-priori errors of error-bounded quantization: errors uniform on [-e, e], so RMSE = e / sqrt(3).

        An upper-side expectation: ZFP's errors are usually well below its tolerance; measure them
        (``ErrorStats.measure`` on a decoded sample) when the codec is known.
        """
        rmse = tolerance / math.sqrt(3.0)
        return cls(tolerance, rmse, _psnr(data_range, rmse))

    def get_config(self) -> dict:
        return {"max_error": self.max_error, "rmse": self.rmse, "psnr": self.psnr}

    @classmethod
    def from_config(cls, config: dict) -> "ErrorStats":
        return cls(config["max_error"], config["rmse"], config["psnr"])


def _psnr(data_range: float, rmse: float) -> float:
    if rmse == 0:
        return math.inf
    return 20.0 * math.log10(data_range / rmse) if data_range > 0 else -math.inf


def bound_for_target(
    fn: Callable[[ErrorBound], float],
    target: float,
    *,
    mode: str = "rel",
    lo: float = 1e-6,
    hi: float = 1e-1,
    increasing: bool = True,
    rtol: float = 0.02,
    max_iter: int = 40,
) -> ErrorBound:
    """The bound in [lo, hi] at which ``fn(bound)`` reaches ``target``, by bisection on log(bound).

    ``fn`` is monotone in the bound: ``increasing=True`` for the ratio (looser bound, higher ratio: returns the
    *tightest* bound with fn >= target), ``increasing=False`` for compressed bytes or seconds (returns the
    tightest bound with fn <= target). Raises ValueError when even ``hi`` (the loosest) misses the target;
    returns ``lo`` when the tightest bound already meets it.
    """
    def meets(value: float) -> bool:
        return value >= target if increasing else value <= target

    if not meets(fn(ErrorBound(mode, hi))):
        raise ErrorBoundError(f"target {target:g} not reachable with bounds up to {mode}:{hi:g}")
    if meets(fn(ErrorBound(mode, lo))):
        return ErrorBound(mode, lo)
    a, b = math.log(lo), math.log(hi)  # fn(a) misses, fn(b) meets
    for _ in range(max_iter):
        if b - a <= math.log1p(rtol):
            break
        mid = 0.5 * (a + b)
        if meets(fn(ErrorBound(mode, math.exp(mid)))):
            b = mid
        else:
            a = mid
    return ErrorBound(mode, math.exp(b))
