import io

import advisor
from advisor.commands import demo
from advisor.workloads import demo_rows
from instrumentation.patterns import summarize


def test_demo_workload_traced_and_shown(tmp_path):
    """The tracing and ``show`` steps of ``ioadvisor demo`` (the recommendation step is tested with the advisor)."""
    with advisor.trace(tmp_path / "demo.jsonl") as tracer:
        demo_rows.main(str(tmp_path))
    trace = tracer.load()
    (usage,) = summarize(trace)
    n_stats = len(range(0, demo_rows.N_BATCHES, demo_rows.STATS_EVERY))
    assert usage.dataset.chunks == demo_rows.CHUNKS and usage.dataset.created
    assert usage.n_reads == demo_rows.N_BATCHES + n_stats
    assert usage.n_writes == demo_rows.ROWS // 20_000
    # the few whole-column reads move enough bytes to make the read pattern mixed
    assert usage.reads.kind == "mixed"
    assert [(c.name, c.n, c.shape) for c in usage.reads.classes] == [
        ("rows", demo_rows.N_BATCHES, (demo_rows.BATCH, demo_rows.COLS)), ("columns", n_stats, (demo_rows.ROWS, 1))]
    out = io.StringIO()
    demo.show(trace, out, None)
    assert "mixed: rows 98% (1000x32), columns 2% (200000x1)" in out.getvalue()
