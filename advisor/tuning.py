"""The advisor's tuning constants: thresholds and sizes the search, the choice and the rewrites use, in one
leaf module (imports nothing of the project) so that every part reads the same value."""

BATCH = 64
"""Samples per mini-batch assumed by the ``batched`` rewrite (PyTorch's common default order of size)."""
CHUNK_MEMORY = 64 << 20
"""Memory the ``whole-chunks`` rewrite holds chunks in."""
SINGLE_INDEX_SHARE = 0.8
"""``batched`` applies when at least this share of the reads select a single index on the first axis."""
CALL_DOMINATES = 0.5
"""Per-call overhead 'dominates' from this share of the current layout's time."""
