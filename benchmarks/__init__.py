"""Benchmarks: scripts that measure the system, run from the repository root as modules, e.g.
``python -m benchmarks.validation.regret --quick`` (the package imports of ``benchmarks.helpers`` need the root on
the path; ``-m`` puts it there).

- ``validation/``: the models' predictions against measured runs (I/O, parallel, compression, object stores,
  Darshan, regret of the advice), and ``apply``/``corpus`` checks on real data;
- ``speed/``: how fast the tool itself is (tracing overhead, advise, model, scale, triage, first-run UX);
- ``investigations/``: one-off measurements behind a modelling decision;
- ``helpers/``: what they share (real fields and their download, paired timing, the local S3 server, the
  pseudo-terminal runner, long jobs in CPU-lock holds, the Darshan build);
- ``workloads/`` (programs the regret benchmarks trace) and ``c/`` (C sources) are inputs, run by path.

Results go to ``benchmarks/results/`` (not in git); the reference tables in ``docs/`` name the command.
"""
