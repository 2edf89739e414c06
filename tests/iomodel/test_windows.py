"""A replay fed window by window (bounded memory for long traces) counts exactly what one replay of the whole
trace counts: the caches, device positions and allocation order carry over between windows."""
import importlib

import h5py
import numpy as np
import pytest
import zarr

import advisor
import iomodel.variables as variables
from instrumentation import load_trace
from iomodel.layout import Layout
from iomodel.predict import Workload
from iomodel.profile import SystemProfile
from iomodel.variables import count_variables

predict = importlib.import_module("iomodel.predict")  # the package's ``predict`` attribute is the function
SHAPE = (3000, 48)


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """A real program traced: appends, random and strided row reads, column reads, index lists, rewrites."""
    tmp = tmp_path_factory.mktemp("windows")
    rng = np.random.default_rng(3)
    data = rng.random(SHAPE, dtype=np.float32)
    with advisor.trace(tmp / "t.parquet"):
        with h5py.File(tmp / "a.h5", "w") as f:
            d = f.create_dataset("x", shape=SHAPE, dtype="f4", chunks=(128, 16))
            for i in range(0, SHAPE[0], 100):  # appends of partial chunks
                d[i:i + 100] = data[i:i + 100]
        with h5py.File(tmp / "a.h5", "r+") as f:
            d = f["x"]
            for i in rng.integers(0, SHAPE[0], 400).tolist():
                d[i]
            for i in range(0, SHAPE[0], 7):  # a strided scan: folded into runs
                d[i, 8:40]
            for j in range(0, 48, 5):
                d[:, j]
            for _ in range(20):
                d[sorted(rng.choice(SHAPE[0], 5, replace=False).tolist()), 3:9]
            for i in rng.integers(0, SHAPE[0] - 10, 60).tolist():  # rewrites: dirty chunks, evictions
                d[i:i + 10, 4:20] = 1.0
        z = zarr.create_array(tmp / "a.zarr", shape=SHAPE, chunks=(256, 16), dtype="f4")
        z[:] = data
        for i in rng.integers(0, SHAPE[0], 300).tolist():
            z[i]
        for i in range(0, SHAPE[0], 11):
            z[i:i + 3, 5:30] = 2.0
    return load_trace(tmp / "t.parquet")


def _datasets(trace):
    return {d.library: d for d in trace.datasets.values()}


LAYOUTS = [
    Layout("hdf5", SHAPE, 4, (128, 16)),  # the recorded one: chunk offsets as traced
    Layout("hdf5", SHAPE, 4, (128, 16), rdcc_nbytes=3 * 128 * 16 * 4, rdcc_nslots=7),  # evictions, collisions
    Layout("hdf5", SHAPE, 4, (512, 48), rdcc_nbytes=0),  # piecewise
    Layout("hdf5", SHAPE, 4, None),  # contiguous, sieve windows
    Layout("hdf5", SHAPE, 4, (64, 48), filtered=True, ratio=3.0),
    Layout("zarr", SHAPE, 4, (256, 16)),
    Layout("zarr", SHAPE, 4, (100, 12), shards=(400, 48)),
]


@pytest.mark.parametrize("library", ["hdf5", "zarr"])
@pytest.mark.parametrize("page_cache", [1 << 34, 200_000])  # room for everything / LRU evictions, few entries
@pytest.mark.parametrize("warm", [False, True])
def test_windowed_replay_counts_what_the_whole_replay_counts(traced, monkeypatch, library, page_cache, warm):
    ds = _datasets(traced)[library]
    cols = traced.columns.of_dataset(ds.id)
    assert cols.n_access > 500 and cols.rows < cols.n_access  # long enough for many windows; runs folded
    for lay in LAYOUTS:
        whole = count_variables(cols, ds, lay, page_cache, warm=warm)
        monkeypatch.setattr(variables, "WINDOW_ACCESSES", 7)
        windowed = count_variables(cols, ds, lay, page_cache, warm=warm)
        monkeypatch.undo()
        assert windowed == whole, lay.label
        assert whole.n_calls == cols.n_access


def test_windowed_parallel_replay(traced, monkeypatch):
    ds = _datasets(traced)["hdf5"]
    cols = traced.columns.of_dataset(ds.id)
    lay = LAYOUTS[2]
    whole = count_variables(cols, ds, lay, 1 << 34, parallel=True)
    monkeypatch.setattr(variables, "WINDOW_ACCESSES", 13)
    assert count_variables(cols, ds, lay, 1 << 34, parallel=True) == whole


def test_workload_shares_each_window_walk_across_cache_variants(traced, monkeypatch):
    ds = _datasets(traced)["hdf5"]
    work = Workload(ds, traced.columns, SHAPE)
    variants = LAYOUTS[:2] + [Layout("hdf5", SHAPE, 4, (128, 16), rdcc_nbytes=0)]
    whole = work.variables_many(variants, 1 << 30)
    monkeypatch.setattr(predict, "WINDOW_ACCESSES", 5)
    assert work.variables_many(variants, 1 << 30) == whole
    assert whole[0] != whole[1]  # the variants differ: the comparison is not of one result with itself


def test_cache_variants_that_cache_no_chunk_are_replayed_once(traced, monkeypatch):
    """Chunk-cache settings change nothing when no chunk fits the cache: such variants of one chunk shape are
    replayed once (``replay_key``) and get what replaying each alone gives; a variant whose chunks fit is
    replayed apart."""
    ds = _datasets(traced)["hdf5"]
    chunk = 512 * 48 * 4
    variants = [Layout("hdf5", SHAPE, 4, (512, 48), rdcc_nbytes=0),
                Layout("hdf5", SHAPE, 4, (512, 48), rdcc_nbytes=chunk - 1),
                Layout("hdf5", SHAPE, 4, (512, 48), rdcc_nbytes=chunk // 2, rdcc_nslots=7, rdcc_w0=0.1),
                Layout("hdf5", SHAPE, 4, (512, 48), rdcc_nbytes=chunk)]  # fits: its own replay
    alone = [Workload(ds, traced.columns, SHAPE).variables(lay, 1 << 30) for lay in variants]
    replays = []
    monkeypatch.setattr(predict, "Replay", lambda *a, **k: replays.append(a[1]) or variables.Replay(*a, **k))
    together = Workload(ds, traced.columns, SHAPE).variables_many(variants, 1 << 30)
    assert together == alone
    assert replays == [variants[0], variants[3]]
    assert alone[0] != alone[3]  # the cache matters once a chunk fits: the comparison is not of one result


@pytest.mark.parametrize("library", ["hdf5", "zarr"])
def test_prefix_predictions_from_one_replay_equal_replays_of_each_prefix(traced, library):
    """In-trace calibration predicts growing prefixes; one replay snapshotted at each end (the close's write-back
    of dirty chunks included) gives what replaying each prefix from the start gives."""
    per = {"n_calls": 1.5e-4, "s_memcpy": 2e-10, "s_cache": 2e-10, "n_rdisk": 2e-5, "s_rdisk": 7e-10,
           "n_wdisk": 1e-5, "s_wdisk": 3e-10, "n_rseek": 7e-5, "n_wseek": 1e-4, "n_chunks": 2e-5, "n_zopen": 5e-5}
    profile = SystemProfile({"hdf5": per, "zarr": per}, page_cache_bytes=300_000)  # evictions along the trace
    ds = _datasets(traced)[library]
    cols = traced.columns.of_dataset(ds.id)
    ends = [1, 40, cols.n_access // 3, cols.n_access // 2, cols.n_access - 3, cols.n_access]
    for lay in (LAYOUTS[1], LAYOUTS[5]) if library == "zarr" else LAYOUTS[:3]:
        lay = lay if lay.library == library else Layout(library, SHAPE, 4, lay.chunks)
        got = Workload(ds, cols, SHAPE, 2).predict_prefixes(lay, profile, ends)
        for end, p in zip(ends, got):
            want = Workload(ds, cols.window(0, end), SHAPE, 2).predict(lay, profile)
            assert p.variables == want.variables and p.seconds == want.seconds, (lay.label, end)


def test_whole_prefix_replay_is_reused_by_variables_with_the_same_settings(traced, monkeypatch):
    """The in-trace calibration's replay of the whole trace serves the search's later replay of the same layout,
    and only under the replay settings it was made with."""
    per = {"n_calls": 1.5e-4, "s_memcpy": 2e-10, "n_rdisk": 2e-5, "s_rdisk": 7e-10, "n_wdisk": 1e-5}
    profile = SystemProfile({"hdf5": per, "zarr": per}, page_cache_bytes=300_000)
    ds = _datasets(traced)["hdf5"]
    cols = traced.columns.of_dataset(ds.id)
    lay = LAYOUTS[2]  # no chunk cache: what the page cache holds counts
    work = Workload(ds, cols, SHAPE)
    work.predict_prefixes(lay, profile, [cols.n_access // 2, cols.n_access])
    replays = []
    monkeypatch.setattr(predict, "Replay", lambda *a, **k: replays.append(a) or variables.Replay(*a, **k))
    reused = work.variables(lay, profile.page_cache_bytes, **profile.replay_options)
    assert not replays
    fresh = Workload(ds, cols, SHAPE)
    assert reused == fresh.variables(lay, profile.page_cache_bytes, **profile.replay_options) and replays
    # not the calibration's page cache: replayed anew
    assert work.variables(lay, 1 << 30, **profile.replay_options) == fresh.variables(lay, 1 << 30,
                                                                                     **profile.replay_options)
    assert fresh.variables(lay, 300_000, **profile.replay_options) != fresh.variables(lay, 1 << 30,
                                                                                     **profile.replay_options)
