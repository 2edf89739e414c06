"""What-if rewrites of a per-sample reading program: predicted through the model, measured by verify."""
import numpy as np
import pytest

import advisor
from advisor.whatif import BATCH, batched, whole_chunks
from instrumentation.tracefile import load_trace

from test_search import profile


@pytest.fixture(scope="module")
def loader(tmp_path_factory):
    """A Dataset-style loop: one h5py read per sample, shuffled, from (1024, 16) chunks."""
    import h5py

    d = tmp_path_factory.mktemp("loader")
    with h5py.File(d / "train.h5", "w") as f:
        f.create_dataset("x", data=np.arange(4096 * 16, dtype="f4").reshape(4096, 16), chunks=(1024, 16))
    order = np.random.default_rng(0).permutation(4096)[:640]
    with advisor.trace(d / "t.jsonl"):
        with h5py.File(d / "train.h5", "r") as f:
            ds = f["x"]
            for i in order:
                ds[int(i)]
    return d, order


def test_rewrites_of_the_accesses(loader):
    d, order = loader
    trace = load_trace(d / "t.jsonl")
    accs = trace.accesses_of(trace.accessed()[0].id)
    b = batched(accs)
    assert len(b) == 640 // BATCH
    first = b[0].selection
    assert first.kind == "orthogonal" and list(first.indices[0]) == sorted(int(i) for i in order[:BATCH])
    assert sum(a.nelements for a in b) == 640 * 16
    w = whole_chunks(accs, (1024, 16), (4096, 16), 4)
    assert len(w) == 4 and all(a.selection.shape == (1024, 16) for a in w)  # each chunk read once, kept
    assert whole_chunks(accs, (1024, 16), (4096, 16), 4, memory=32 << 10) is None  # a 64 KiB chunk does not fit
    assert whole_chunks(accs, None, (4096, 16), 4) is None


def test_advice_and_verify_show_the_whatif_rows(loader):
    d, _ = loader
    adv = advisor.advise(d / "t.jsonl", profile=profile(), read_data=False)
    entry = adv.dataset()
    kinds = {w.kind: w for w in entry.whatifs}
    assert set(kinds) == {"batched", "whole-chunks"}
    assert kinds["batched"].n_calls == 10 and kinds["whole-chunks"].n_calls == 4
    # fewer calls, same layout: the model predicts less time than the traced per-sample loop
    assert kinds["batched"].seconds < entry.current.seconds
    text = str(adv)
    assert "what-if batched" in text and "What-if (program change, same layout)" in text
    if entry.current.terms["t_call"] >= 0.5 * entry.current.seconds:
        assert "Per-call overhead dominates" in text
    from advisor.verify import verify

    result = verify(d / "t.jsonl", top=1, advice=adv)
    rows = {r.label: r for r in result.rows}
    assert {"current", "#1", "what-if batched", "what-if whole-chunks"} <= set(rows)
    assert rows["what-if batched"].predicted_seconds == pytest.approx(kinds["batched"].seconds)
    assert rows["what-if batched"].max_error == 0  # the rewritten reads return the user's data
    assert rows["what-if batched"].measured_seconds < rows["current"].measured_seconds
