"""Speed benchmarks: how fast tracing, advising, the models and triage are (``benchmarks/__init__.py``)."""
