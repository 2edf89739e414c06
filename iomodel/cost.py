"""Serial cost, formulas (1)-(7) of Kang et al.: t = sum of terms, each linear in its variables.

A term's seconds are sum(coefficient[library][v] * v) over its variables; the
coefficients are fitted per library (``ioadvisor calibrate``). Terms after
t_cache are additions measured to matter on this machine (docs/iomodel.md). t_cache
prices page-cache hits by the measured copy-time curve (``x_cache``, seconds by request
size) and what the library adds per hit (``n_cache``). The hits' bytes (``s_cache``) are
counted, not priced apart: the curve prices them, and with both the fit could not tell
them apart (x_cache came out 0).
"""
from __future__ import annotations

from .profile import SystemProfile
from .variables import Variables

TERMS: dict[str, tuple[str, ...]] = {
    "t_memcpy": ("n_memcpy", "s_memcpy", "s_mtouch", "s_ospill"),
    "t_rdisk": ("n_rdisk", "s_rdisk", "n_rseek", "s_rseek", "n_rindex"),
    "t_wdisk": ("n_wdisk", "s_wdisk", "s_wnew", "n_wseek", "n_windex"),
    "t_cache": ("n_cache", "x_cache"),
    "t_call": ("n_calls", "n_wcalls"),
    "t_chunk": ("n_chunks",),
    "t_zopen": ("n_zopen",),
    "t_codec": ("s_decode", "s_encode"),
    "t_alloc": ("s_alloc",),
}
"""Term -> the variables it is linear in (coefficient names are the variable names)."""

PRICED = tuple(v for names in TERMS.values() for v in names)
"""Variables with a coefficient; the others (``s_cache``) are counted for reports only."""

DISK_TERMS = ("t_rdisk", "t_wdisk")
"""Terms multiplied by the contention factor cf in the parallel model (formula 8)."""

METADATA_TERMS = ("t_zopen",)
"""Zarr metadata terms multiplied by p in the parallel model (formula 9)."""


def term_seconds(variables: Variables, library: str, profile: SystemProfile) -> dict[str, float]:
    """Seconds per term for one library (formulas 1-7 plus the added terms)."""
    feats = variables.as_features()
    return {
        term: sum(profile.coefficient(library, v) * feats[v] for v in names)
        for term, names in TERMS.items()
    }
