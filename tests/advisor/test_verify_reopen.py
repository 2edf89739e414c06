"""verify replays a program's reopens: where the trace recorded that a process closed the dataset (or its file)
and opened it again, the replay reopens it there, so its chunk cache starts empty as the program's did."""
import h5py
import numpy as np

import advisor
from advisor.verify_measure import replay_events
from instrumentation.records import AccessRecord
from iomodel.replay import Reopen


def test_a_program_that_reopens_its_file_per_batch_is_replayed_with_its_reopens(tmp_path):
    data = tmp_path / "x.h5"
    with h5py.File(data, "w") as f:
        f.create_dataset("x", data=np.arange(4000, dtype="f4").reshape(1000, 4), chunks=(100, 4))
    with advisor.trace(tmp_path / "t.parquet") as t:
        for batch in range(3):
            with h5py.File(data, "r") as f:
                x = f["x"]
                for i in range(4):
                    x[10 * i:10 * i + 5]
        with h5py.File(data, "r") as f:
            x = f["x"]  # one handle held, two reads: no reopen between them
            x[0:5]
            x[5:10]
            del x
            f["x"][0:5]  # a temporary handle per read: HDF5 closes the dataset after each (its cache too)
            f["x"][5:10]
    trace = t.load()
    (ds,) = trace.datasets.values()
    events = replay_events(trace, ds)
    kinds = ["R" if isinstance(e, Reopen) else "a" for e in events]
    assert "".join(kinds) == "aaaa" + "Raaaa" * 2 + "Raa" + "RaRa"
    assert sum(isinstance(e, AccessRecord) for e in events) == 16


def test_a_trace_without_open_records_has_no_reopens(tmp_path):
    data = tmp_path / "x.h5"
    with h5py.File(data, "w") as f:
        f.create_dataset("x", data=np.zeros((100, 4), "f4"), chunks=(10, 4))
    with advisor.trace(tmp_path / "t.parquet") as t:
        with h5py.File(data, "r") as f:
            for i in range(5):
                f["x"][i]
    trace = t.load()
    trace.opens = []  # as a trace written before opens were recorded reads
    (ds,) = trace.datasets.values()
    assert not any(isinstance(e, Reopen) for e in replay_events(trace, ds))
