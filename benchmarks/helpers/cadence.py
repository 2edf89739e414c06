"""Per-call tracing cost as a traced program pays it (benchmarks/speed/tracing_overhead.py, section 1).

A traced program enters its tracer once, describes each dataset at its first access, then for every call pays
the hook's work in the loop, and, off the loop, the ``ioadvisor-flush`` thread's: it takes the records at each
pass (``hub.QUIET_PASS_SECONDS``, the traced calls handing it the GIL: hotpath/passes.c) and writes a batch every
``columnar_writer.BATCH_SECONDS`` (or BATCH_ROWS records). Its exit writes what is left and closes the trace. Three figures, kept apart:

- in the loop: paired repetitions (traced, untraced), each traced one in a tracer of its own that has already
  seen the dataset; the process's CPU during the loop minus the flusher thread's (which the next figure counts);
- writing at the tracer's cadence: the flusher thread's CPU over ``seconds`` of calls, per call (its takes and
  its batches as it writes them, the first batch included), the median of ``runs`` runs;
- fixed: entering the tracer, the dataset's first access (its description), a forced ``Tracer.flush()`` of the
  repetition's records (a batch written early: what the earlier method counted per 5,000 calls) and the exit
  (closing the trace).

The earlier method (each repetition's tracer entered untimed, then the calls with the first access, then a
forced ``Tracer.flush()``, timed together) is computed from the same repetitions.
"""
from __future__ import annotations

import statistics
import threading
import time

import advisor

FLUSHER = "ioadvisor-flush"
"""The name of the tracer's flusher thread (instrumentation/hub.py)."""


def _flusher_clock():
    """A function giving the flusher thread's CPU seconds (0.0 where it is not running)."""
    for th in threading.enumerate():
        if th.name == FLUSHER and th.ident is not None:
            clock = time.pthread_getcpuclockid(th.ident)
            return lambda: time.clock_gettime(clock) if th.is_alive() else 0.0
    return lambda: 0.0


def _traced_rep(fn, loop, n_calls: int, tracer_path) -> dict:
    """One traced repetition: CPU seconds of each step."""
    pt = time.process_time
    c0 = pt()
    with advisor.trace(tracer_path, overwrite=True) as t:
        c1 = pt()
        fn()  # the first access: the dataset described
        c2 = pt()
        flusher = _flusher_clock()
        f0 = flusher()
        loop(n_calls - 1)
        f1 = flusher()
        c3 = pt()
        t.flush()
        c4 = pt()
    c5 = pt()
    return {"enter": c1 - c0, "first": c2 - c1, "loop": c3 - c2 - (f1 - f0), "loop_with_flusher": c3 - c2,
            "flush": c4 - c3, "exit": c5 - c4}


def per_call(name: str, fn, n_calls: int, reps: int, tracer_path) -> dict:
    """``fn()`` repeated ``n_calls`` times, traced against untraced, ``reps`` pairs (ABBA)."""

    def loop(n):
        for _ in range(n):
            fn()

    loop(n_calls)  # warm up
    plain, traced = [], []
    for i in range(reps):
        for t in ((False, True) if i % 2 == 0 else (True, False)):
            if t:
                traced.append(_traced_rep(fn, loop, n_calls, tracer_path))
            else:
                c = time.process_time()
                loop(n_calls)
                plain.append(time.process_time() - c)
    med = statistics.median
    us = 1e6
    row = {"case": name, "calls": n_calls, "reps": reps, "cpu_untraced_us": med(plain) / n_calls * us,
           # in the loop: per call, the untraced call's time taken off (its loop is one call longer)
           "loop_added_us": med(t["loop"] / (n_calls - 1) - p / n_calls for p, t in zip(plain, traced)) * us,
           # the earlier method: the first access, the calls and a forced batch, timed together
           "forced_added_us": med(t["first"] + t["loop_with_flusher"] + t["flush"] - p
                                  for p, t in zip(plain, traced)) / n_calls * us}
    for step in ("enter", "first", "flush", "exit"):
        row[f"{step}_ms"] = med(t[step] for t in traced) * 1e3
    return row


def writing(fn, seconds: float, runs: int, tracer_path) -> dict:
    """The flusher thread's CPU per call over ``seconds`` of ``fn()`` calls in one tracer (its takes and batches
    at the tracer's cadence), the median of ``runs``; the exit (the last batch, closing) is not counted."""
    per_call_us, calls_per_run = [], []
    for _ in range(runs):
        with advisor.trace(tracer_path, overwrite=True):
            fn()  # the first access
            flusher = _flusher_clock()
            f0, n = flusher(), 0
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                for _ in range(1000):
                    fn()
                n += 1000
            per_call_us.append((flusher() - f0) / n * 1e6)
            calls_per_run.append(n)
    return {"writing_us": statistics.median(per_call_us), "writing_runs_us": per_call_us,
            "writing_calls": statistics.median(calls_per_run), "writing_seconds": seconds}
