"""Each process of a rank (its followed DataLoader or pool workers: ``AccessColumns.proc``) replays through its own
HDF5 chunk cache; the rank's page cache stays shared."""
import numpy as np

from instrumentation.columns import AccessColumns
from instrumentation.records import AccessRecord, DatasetRecord, Selection
from iomodel.layout import Layout
from iomodel.predict import Workload
from iomodel.replayer import Replay

SHAPE, CHUNKS = (400, 4), (50, 4)  # 8 chunks of 1,600 bytes: all fit the default chunk cache
DS = DatasetRecord(0, "hdf5", "2", "/nowhere/x.h5", "/x", SHAPE, "float64", chunks=CHUNKS)
LAYOUT = Layout.from_dataset(DS)
CHUNK_BYTES = 50 * 4 * 8


def reads(rows, process, t0=0.0, op="read"):
    out = []
    for k, r in enumerate(rows):
        s = Selection.box((r, 0), (1, 4))
        out.append(AccessRecord(0, op, s, 4, 32, t0 + 1e-3 * k, 1e-4, 0, process=process))
    return out


def variables(records, *, page_cache=1 << 30):
    return Workload(DS, AccessColumns.from_records(records), SHAPE).variables(LAYOUT, page_cache)[0]


def test_two_processes_reading_the_same_chunks_each_load_them():
    rows = range(0, 400, 7)
    one = variables(reads(rows, 0) + reads(rows, 0, t0=1.0))   # one process reads the rows twice: cached
    two = variables(reads(rows, 1) + reads(rows, 2, t0=1.0))   # two workers, one after the other
    assert one.s_alloc == 8 * CHUNK_BYTES
    assert two.s_alloc == 16 * CHUNK_BYTES  # each worker's cache starts empty
    # the second worker's loads come from the page cache the first one filled (one page cache per rank)
    assert two.s_rdisk == one.s_rdisk and two.n_cache > one.n_cache
    assert one.n_calls == two.n_calls


def test_interleaved_processes_count_as_process_after_process():
    """A window holding several processes' accesses (time order) is fed a process at a time: each access meets
    its own process's cache, whatever the order."""
    rows = list(range(0, 400, 7))
    a, b = reads(rows, 1), reads(rows, 2, t0=5e-4)
    mixed = AccessColumns.from_records([x for pair in zip(a, b) for x in pair])
    assert len(np.flatnonzero(np.diff(mixed.proc))) == 2 * len(rows) - 1
    replay = Replay(DS, LAYOUT, 1 << 30)
    replay.feed(mixed)
    together = replay.result()
    assert together.s_alloc == variables(a + b).s_alloc == 16 * CHUNK_BYTES


def test_each_process_writes_back_its_own_dirty_chunks():
    w1 = reads([0], 1, op="write")
    w2 = reads([1], 2, t0=1.0, op="write")
    shared = variables([AccessRecord(**{**r.__dict__, "process": 0}) for r in w1 + w2])
    own = variables(w1 + w2)
    assert own.n_wdisk == shared.n_wdisk + 1  # chunk 0 written back by each process at its close
    replay = Replay(DS, LAYOUT, 1 << 30)
    replay.feed(AccessColumns.from_records(w1 + w2))
    assert replay.snapshot().n_wdisk == replay.result().n_wdisk == own.n_wdisk


def test_the_process_survives_json_lines():
    (r,) = reads([3], 2)
    assert r.get_config()["proc"] == 2 and AccessRecord.from_config(r.get_config()) == r
    assert "proc" not in reads([3], 0)[0].get_config()  # the run's own process: as before
