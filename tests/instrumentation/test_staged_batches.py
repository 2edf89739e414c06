"""A writer's staged batch (``ColumnarTraceWriter.stage``, what ``ioadvisor run``'s launcher does beside a native
program): its row groups are encoded as they come, the batch appears only when put in place, and reads back as
the accesses written, as a batch written whole does."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow.parquet as pq

from instrumentation import load_trace
from instrumentation.columnar import ColumnarTraceWriter, part_files
from instrumentation.columnar_writer import STAGE_ROWS

from test_tracefile import dataset, header


def _reads(w, starts, t0):
    for k, i in enumerate(starts):
        w.hyperslab_access(0, "read", (int(i), 0), (1, 1), (1, 1), (1, 8), 8, 32, t0 + 1e-4 * k, 1e-5)


def test_staged_row_groups_are_one_batch_in_place_only_once_flushed(tmp_path):
    path = tmp_path / "t.parquet"
    w = ColumnarTraceWriter(path, header())
    w.dataset(dataset())
    starts = np.random.default_rng(7).integers(0, 100, 3 * STAGE_ROWS + 10)
    _reads(w, starts[:10], 0.0)
    w.stage()  # fewer than STAGE_ROWS buffered: they wait
    assert not list(path.glob(".*.tmp"))
    chunks = [starts[:STAGE_ROWS + 10], starts[STAGE_ROWS + 10:2 * STAGE_ROWS + 10], starts[2 * STAGE_ROWS + 10:]]
    _reads(w, chunks[0][10:], 1.0)
    w.stage()
    _reads(w, chunks[1], 2.0)
    w.stage()
    assert part_files(path) == [] and len(list(path.glob(".part-*.parquet.tmp"))) == 1  # encoded, not in place
    assert load_trace(path, allow_truncated=True).n_access == 0  # a kill now loses what a flush would have
    _reads(w, chunks[2], 3.0)
    w.close()
    assert [f.name for f in part_files(path)] == ["part-000000.parquet"] and not list(path.glob(".*.tmp"))
    meta = pq.read_metadata(path / "part-000000.parquet")
    assert meta.num_row_groups == len(chunks)  # one per stage and the flush (runs folded in each)
    trace = load_trace(path)
    assert trace.complete and trace.columns.expanded().start[:, 0].tolist() == starts.tolist()


def test_a_staged_batch_is_put_in_place_when_due_and_a_table_that_does_not_fit_starts_another(tmp_path):
    path = tmp_path / "t.parquet"
    w = ColumnarTraceWriter(path, header())
    w.dataset(dataset())
    w.dataset(replace(dataset(id=1, file="/data/b.h5"), shape=(100, 8, 4), maxshape=(100, 8, 4), chunks=None,
                      chunk_offsets=None))
    starts = np.arange(STAGE_ROWS) % 97
    _reads(w, starts, 0.0)
    w.stage()
    for k in range(STAGE_ROWS):  # three dimensions: more columns, another batch
        w.hyperslab_access(1, "write", (k % 100, 0, 0), (1, 1, 1), (1, 1, 1), (1, 8, 4), 32, 128, 1.0 + k, 1e-5)
    w.stage()
    assert [f.name for f in part_files(path)] == ["part-000000.parquet"]
    w.flush(force=False)  # not due yet: the second stays staged
    assert len(part_files(path)) == 1
    w.flush()
    assert [f.name for f in part_files(path)] == ["part-000000.parquet", "part-000001.parquet"]
    w.close()
    trace = load_trace(path)
    assert trace.n_access == 2 * STAGE_ROWS and sorted(set(trace.columns.ndim.tolist())) == [2, 3]
