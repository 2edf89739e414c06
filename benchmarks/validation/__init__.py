"""Validation benchmarks: the models' predictions and the advice against measured runs (``benchmarks/__init__.py``)."""
