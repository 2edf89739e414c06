"""Investigations: one-off measurements behind a modelling decision (``benchmarks/__init__.py``)."""
