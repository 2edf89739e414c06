"""What a notebook shows: a short repr, an HTML view, DataFrames."""
from dataclasses import replace

import numpy as np
import pytest

from advisor.advice import Advice
from instrumentation.columns import AccessColumns
from instrumentation.records import READ, WRITE, AccessRecord, DatasetRecord, Selection, TraceHeader
from instrumentation.tracefile import Trace, load_trace

from test_advice import advice, traced  # noqa: F401  (module fixtures)


def test_repr_is_short_and_says_the_verdict(advice):  # noqa: F811
    d = advice.dataset()
    text = repr(advice)
    assert len(text) < Advice.REPR_CHARS
    assert d.name in text and (d.recommendation.label in text or d.current.label in text)
    assert text.startswith("<Advice for ") and text.endswith(">")
    # a trace of 200 advised arrays: still under the limit, and says how many are left out
    many = replace(advice, datasets=tuple(replace(d, name=f"/data/run{i:03d}.h5::/a/very/long/variable/name/{i}")
                                          for i in range(200)))
    text = repr(many)
    assert len(text) < Advice.REPR_CHARS and "200 datasets advised" in text and "more (print(advice)" in text
    assert len(repr(d)) < 400 and d.name in repr(d)


def test_repr_html_has_verdict_table_and_access_map(advice):  # noqa: F811
    d = advice.dataset()
    text = advice._repr_html_()
    assert f"Verdict: {d.verdict}" in text and "<table>" in text
    assert text.count("<tr") == 1 + len(d.candidates) + 1 + len(d.defaults) + len(d.whatifs)
    assert f"alt='access map: {d.name}'" in text and "data:image/png;base64," in text
    assert "<html" not in text  # a fragment for the notebook's page


def test_advice_dataframe_is_the_ranked_table(advice):  # noqa: F811
    d = advice.dataset()
    df = advice.to_dataframe()
    assert len(df) == len(d.candidates) + 1 + len(d.defaults)
    assert list(df["choice"][: len(d.candidates)]) == [str(i) for i in range(1, len(d.candidates) + 1)]
    assert df["recommended"].sum() >= 1
    cur = df[df["choice"] == "current"].iloc[0]
    assert cur["seconds"] == d.current.seconds and cur["library"] == d.current.library
    for term, v in d.current.terms.items():
        assert cur[term] == v
    assert (df["seconds_lo"] <= df["seconds"]).all() and (df["seconds"] <= df["seconds_hi"]).all()
    assert df["speedup_vs_current"].iloc[0] == pytest.approx(d.speedup_vs_current(d.candidates[0]))


def test_trace_dataframe_one_row_per_access_columnar():
    ds = DatasetRecord(0, "hdf5", "2", "/f.h5", "/x", (1000, 8), "float64")
    recs = [AccessRecord(0, READ, Selection.box((10 * i, 0), (5, 8)), 40, 320, 0.1 * i, 0.01, 0)
            for i in range(50)]
    recs.append(AccessRecord(0, WRITE, Selection.box((0, 2), (1000, 1)), 1000, 8000, 9.0, 0.5, 0))
    trace = Trace([TraceHeader(1, "h", 1, 0, 1, 0.0)], {0: ds}, recs)
    assert trace.columns.rows < len(recs)  # the reads are stored as a run
    df = trace.to_dataframe()
    assert len(df) == 51 and list(df["op"].cat.categories) == ["read", "write"]
    assert (df["dataset"] == "/f.h5::/x").all()
    np.testing.assert_array_equal(df["start_0"][:50], np.arange(0, 500, 10))
    assert df["t_start"][49] == pytest.approx(4.9) and df["nbytes"].sum() == 50 * 320 + 8000
    assert list(df.iloc[50][["op", "start_1", "block_0", "block_1"]]) == ["write", 2, 1000, 1]
    runs = trace.to_dataframe(runs=True)
    assert len(runs) == trace.columns.rows and runs["rep"].sum() == 51 and "step_0" in runs


def test_trace_dataframe_of_an_empty_trace():
    trace = Trace([TraceHeader(1, "h", 1, 0, 1, 0.0)], {}, AccessColumns.empty())
    assert len(trace.to_dataframe()) == 0


def test_dataframe_of_a_traced_file(traced):  # noqa: F811
    d, _ = traced
    df = load_trace(d / "t.jsonl").to_dataframe()
    assert len(df) == 60 and set(df["op"]) == {"read"} and (df["count_0"] * df["block_0"] == 64).all()
