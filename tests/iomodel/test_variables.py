"""Hand-computable cases of the serial variable counting (Algorithm 1 and analogues)."""
from dataclasses import replace

import numpy as np
import pytest

from instrumentation.records import AccessRecord, DatasetRecord, Selection
from iomodel.cache import hash_bits, hash_slot
from iomodel.chunks import chunk_visits
from iomodel.layout import Layout
from iomodel.variables import FEATURES, PAGE, Variables, count_variables

BIG = 1 << 34


def _ds(created=False, library="hdf5", shape=(1000, 100), chunks=(100, 100), offsets=None):
    return DatasetRecord(0, library, "x", "f", "/d", shape, "float32", chunks=chunks, created=created,
                         chunk_offsets=offsets)


def _acc(sel, op="read"):
    return AccessRecord(0, op, sel, sel.nelements, sel.nelements * 4, 0.0, 0.0)


def _row(i, width=100):
    return _acc(Selection.box((i, 0), (1, width)))


def _col(j, height=1000):
    return _acc(Selection.box((0, j), (height, 1)))


def test_row_read_one_chunk_one_run():
    ds = _ds()
    v = count_variables([_row(5)], ds, Layout.from_dataset(ds), BIG)
    assert (v.n_chunks, v.n_memcpy, v.s_memcpy) == (1, 1, 400)
    assert (v.n_rdisk, v.s_rdisk) == (1, 100 * 100 * 4)  # whole chunk into the chunk cache


def test_column_read_ten_chunks_thousand_runs():
    ds = _ds()
    v = count_variables([_col(3)], ds, Layout.from_dataset(ds), BIG)
    assert (v.n_chunks, v.n_memcpy, v.s_memcpy) == (10, 1000, 4000)
    assert v.n_rdisk == 10 and v.n_rseek == 1  # row-major chunks follow each other in the file


def test_second_read_served_by_chunk_cache():
    ds = _ds()
    lay = Layout.from_dataset(ds)
    one = count_variables([_row(5)], ds, lay, BIG)
    two = count_variables([_row(5), _row(6)], ds, lay, BIG)
    assert two.n_rdisk == one.n_rdisk and two.n_cache == 0
    assert two.n_memcpy == 2 * one.n_memcpy


def test_chunk_larger_than_cache_unfiltered_reads_only_the_runs():
    ds = _ds()
    lay = replace(Layout.from_dataset(ds), rdcc_nbytes=1000)
    v = count_variables([_row(5), _row(5)], ds, lay, BIG)
    # a row is one run contiguous in chunk and buffer: one request of exactly 400 bytes, not the chunk
    assert (v.n_rdisk, v.s_rdisk) == (1, 400)
    assert (v.n_cache, v.s_cache) == (1, 400)  # the second read: page cache, nothing kept in the chunk cache
    col = count_variables([_col(3)], ds, lay, BIG)
    assert col.n_rdisk + col.n_cache == 1000 and col.s_rdisk + col.s_cache == 4000


def test_small_reads_of_an_uncached_chunk_bring_in_their_own_page_only():
    # (1024, 64) float32 chunks without a chunk cache: HDF5 reads just the selected row (256 bytes), so the
    # page cache holds that row's page, not the 64 KiB sieve-sized window around it (16 rows per page)
    ds = _ds(shape=(4096, 64), chunks=(1024, 64))
    lay = replace(Layout.from_dataset(ds), rdcc_nbytes=0)
    pages = [9, 2, 14, 5, 11, 7, 12]  # all in the chunk's first 64 KiB, never right after the previous one
    rows = [_row(16 * p + 3, width=64) for p in pages]
    for readahead in (0, 128 << 10):
        cold = count_variables(rows, ds, lay, BIG, readahead=readahead)
        assert (cold.n_rdisk, cold.s_rdisk, cold.n_cache) == (len(pages), len(pages) * (PAGE if readahead else 256), 0)
        # another row of each page read: page-cache hits
        again = count_variables(rows + [_row(16 * p + 8, width=64) for p in pages], ds, lay, BIG, readahead=readahead)
        assert (again.n_rdisk, again.n_cache) == (len(pages), len(pages))
    assert count_variables(rows, ds, lay, BIG, warm=True).n_rdisk == 0


def test_uncached_partial_write_is_one_write_per_run_without_read():
    ds = _ds()
    lay = replace(Layout.from_dataset(ds), rdcc_nbytes=0)
    v = count_variables([_acc(Selection.box((0, 0), (10, 50)), "write")], ds, lay, BIG)
    assert (v.n_wdisk, v.s_wdisk, v.n_cache) == (10, 2000, 0)
    # HDF5 reads nothing first; the kernel reads the one page on disk the runs (bytes 0-3800) cover in part
    assert (v.n_rdisk, v.s_rdisk) == (1, PAGE)
    warm = count_variables([_acc(Selection.box((0, 0), (10, 50)), "write")], ds, lay, BIG, warm=True)
    assert (warm.n_rdisk, warm.s_wnew) == (0, 0)  # over cached pages: no read, no new page
    assert v.s_wnew > 0


def test_contiguous_storage_reads_through_sieve_windows():
    ds = _ds(chunks=None)
    lay = Layout.from_dataset(ds)
    assert lay.chunks is None
    v = count_variables([_col(3)], ds, lay, BIG)  # span of 400 KB -> 7 windows of 64 KiB
    assert v.n_rdisk == -(-(999 * 400 + 4) // 65536)
    w = count_variables([_acc(Selection.box((0, 0), (1, 100)), "write")], ds, lay, BIG)
    assert w.n_wdisk == 1 and w.n_rdisk == 1  # the sieve window is read before it is written back


def test_contiguous_runs_longer_than_the_sieve_buffer_bypass_it():
    ds = _ds(chunks=None)
    lay = Layout.from_dataset(ds)
    block = _acc(Selection.box((0, 0), (200, 100)))  # one 80,000-byte run
    v = count_variables([block], ds, lay, BIG)
    assert (v.n_rdisk + v.n_cache, v.s_rdisk + v.s_cache) == (1, 80_000)
    assert v.n_memcpy == 0 and v.s_memcpy == 0  # read straight into the user's buffer
    w = count_variables([replace(block, op="write")], ds, lay, BIG)
    assert (w.n_wdisk, w.s_wdisk, w.n_memcpy, w.s_wnew) == (1, 80_000, 0, 80_000)
    assert (w.n_rdisk, w.s_rdisk) == (1, PAGE)  # the page holding its end (byte 80,000) is read first
    fresh = count_variables([replace(block, op="write")], _ds(created=True, chunks=None), lay, BIG)
    assert (fresh.n_rdisk, fresh.s_wnew) == (0, 80_000)  # a new dataset's space: nothing on disk to read
    row = count_variables([_row(5)], ds, lay, BIG)  # through the buffer: one 64 KiB refill, then a copy
    assert (row.s_rdisk + row.s_cache, row.n_memcpy, row.s_memcpy) == (65536, 1, 400)


def test_chunk_larger_than_cache_filtered_is_read_whole_every_time():
    ds = _ds()
    lay = replace(Layout.from_dataset(ds), rdcc_nbytes=1000, filtered=True, ratio=0.25)
    v = count_variables([_row(5), _row(5)], ds, lay, BIG)
    assert v.n_rdisk + v.n_cache == 2
    assert v.s_rdisk == 10000 and v.s_cache == 10000
    assert v.s_decode == 2 * 40000


def test_hash_slot_collision_evicts():
    # 1-D: slot = chunk index % nslots; chunks 0 and 4 collide with 4 slots
    ds = _ds(shape=(1000,), chunks=(100,))
    lay = replace(Layout.from_dataset(ds), rdcc_nslots=4, rdcc_nbytes=BIG)
    a, b = _acc(Selection.box((0,), (1,))), _acc(Selection.box((400,), (1,)))
    v = count_variables([a, b, a], ds, lay, BIG)
    assert v.n_rdisk + v.n_cache == 3  # a was evicted by b
    c = _acc(Selection.box((100,), (1,)))
    v = count_variables([a, c, a], ds, lay, BIG)
    assert v.n_rdisk + v.n_cache == 2


def test_hash_slot_bit_packing():
    grid = (10, 3)  # 3 chunks along dim 1 -> 2 bits
    bits = hash_bits(grid)
    assert bits.tolist() == [4, 2]
    assert hash_slot(2 * 3 + 1, np.array(grid), bits, 1000) == (2 << 2) ^ 1


def test_w0_preemption_prefers_fully_read_chunks():
    # the cache holds 2 chunks of 400 bytes; chunk 0 is read fully, chunk 1 partially
    ds = _ds(shape=(300,), chunks=(100,))
    base = replace(Layout.from_dataset(ds), rdcc_nbytes=800, rdcc_nslots=101)
    full0 = _acc(Selection.box((0,), (100,)))
    part1 = _acc(Selection.box((100,), (1,)))
    third = _acc(Selection.box((200,), (1,)))
    seq = [part1, full0, third, full0, part1, third]
    # w0=1: only fully read/written entries may go: chunk 0 (not the LRU head, chunk 1) is evicted;
    # reloading it finds nothing preemptable and HDF5 overfills the cache, so the rest hit
    v1 = count_variables(seq, ds, replace(base, rdcc_w0=1.0), BIG)
    assert v1.n_rdisk + v1.n_cache == 4
    # w0=0: the last-resort pointer starts at the head at once: chunk 1 goes, later chunk 2 for it
    v0 = count_variables(seq, ds, replace(base, rdcc_w0=0.0), BIG)
    assert v0.n_rdisk + v0.n_cache == 5


def test_hdf5_partial_write_of_new_chunk_needs_no_read_and_writes_back_at_close():
    ds = _ds(created=True)
    v = count_variables([_acc(Selection.box((0, 0), (1, 100)), "write")], ds, Layout.from_dataset(ds), BIG)
    assert v.n_rdisk == 0 and v.n_cache == 0
    assert (v.n_wdisk, v.s_wdisk) == (1, 40000)
    assert v.n_windex == 1


def test_hdf5_partial_write_of_existing_chunk_reads_it_once():
    ds = _ds(created=False)
    w = [_acc(Selection.box((i, 0), (1, 100)), "write") for i in range(3)]
    v = count_variables(w, ds, Layout.from_dataset(ds), BIG)
    assert v.n_rdisk == 1 and v.n_wdisk == 1  # cached dirty chunk, one write-back


def test_zarr_partial_write_reads_and_rewrites_whole_chunk():
    ds = _ds(library="zarr")
    w = _acc(Selection.box((0, 0), (1, 100)), "write")
    v = count_variables([w, w], ds, Layout.from_dataset(ds), BIG)
    assert v.n_wdisk == 2 and v.s_wdisk == 2 * 40000
    assert v.n_rdisk + v.n_cache == 2 and v.n_zopen == 4


def test_zarr_full_chunk_write_needs_no_read():
    ds = _ds(library="zarr")
    v = count_variables([_acc(Selection.box((0, 0), (100, 100)), "write")], ds, Layout.from_dataset(ds), BIG)
    assert v.n_rdisk == 0 and v.n_cache == 0 and v.n_wdisk == 1


def test_zarr_edge_chunk_covering_valid_region_is_complete():
    ds = _ds(library="zarr", shape=(150, 100))
    v = count_variables([_acc(Selection.box((100, 0), (50, 100)), "write")], ds, Layout.from_dataset(ds), BIG)
    assert v.n_rdisk == 0 and v.n_wdisk == 1


def test_zarr_reads_whole_chunk_every_time():
    ds = _ds(library="zarr")
    v = count_variables([_row(5), _row(5)], ds, Layout.from_dataset(ds), BIG)
    assert v.n_rdisk == 1 and v.n_cache == 1 and v.s_cache == 40000 and v.n_zopen == 2


def test_zarr_shards_partial_read_fetches_index_and_inner_chunks():
    ds = _ds(library="zarr")
    lay = replace(Layout.from_dataset(ds), chunks=(10, 100), shards=(100, 100))
    v = count_variables([_row(5)], ds, lay, BIG)
    assert v.n_rindex == 1 and v.n_zopen == 2  # index get + one inner chunk get
    full = count_variables([_acc(Selection.box((0, 0), (100, 100)))], ds, lay, BIG)
    assert full.n_rindex == 0 and full.n_zopen == 1 and full.n_chunks == 10


def test_page_cache_lru_evicts_at_capacity():
    ds = _ds(library="zarr")
    lay = Layout.from_dataset(ds)
    cap = 2 * 40000
    reads = [_row(0), _row(100), _row(200), _row(0)]  # chunks 0, 1, 2, 0 with room for 2
    v = count_variables(reads, ds, lay, cap)
    assert v.n_rdisk == 4 and v.n_cache == 0
    v = count_variables([_row(0), _row(100), _row(0), _row(200), _row(0)], ds, lay, cap)
    assert v.n_cache == 2  # 0 was used recently, so 1 went


def test_warm_start_serves_everything_from_page_cache():
    ds = _ds(library="zarr")
    v = count_variables([_col(3)], ds, Layout.from_dataset(ds), BIG, warm=True)
    assert v.n_rdisk == 0 and v.n_cache == 10


def test_seeks_follow_recorded_chunk_offsets():
    # chunks stored in reverse order: reading forward seeks at every chunk
    offs = np.array([[i, 0, (9 - i) * 40000, 40000] for i in range(10)], np.int64)
    ds = _ds(offsets=offs)
    v = count_variables([_col(3)], ds, Layout.from_dataset(ds), BIG)
    assert v.n_rseek == 10
    ds2 = _ds(offsets=np.array([[i, 0, 1000 + i * 40000, 40000] for i in range(10)], np.int64))
    assert count_variables([_col(3)], ds2, Layout.from_dataset(ds2), BIG).n_rseek == 1


def test_seeking_reads_count_their_bytes_apart_from_streamed_ones():
    ds = _ds()
    lay = Layout.from_dataset(ds)
    v = count_variables([_col(3)], ds, lay, BIG)  # ten chunks in file order: only the first seeks
    assert v.s_rdisk == 10 * 40000 and v.s_rseek == 40000
    rows = count_variables([_row(950), _row(50), _row(550)], ds, lay, BIG)  # each row's chunk elsewhere
    assert rows.n_rseek == 3 and rows.s_rseek == rows.s_rdisk == 3 * 40000


def test_writes_in_trace_are_allocated_in_write_order():
    ds = _ds(created=True, library="zarr")
    w = [_acc(Selection.box((i * 100, 0), (100, 100)), "write") for i in (3, 1, 2)]
    v = count_variables(w, ds, Layout.from_dataset(ds), BIG)
    assert v.n_wseek == 1  # appended one after the other


def test_orthogonal_and_points_selections():
    lay = Layout("hdf5", (1000, 200), 4, (100, 100))
    sel = Selection((0, 3), (3, 1), (1, 1), (1, 1), indices=((0, 1, 150), None))
    v = chunk_visits(sel, lay)
    assert v.cid.tolist() == [0, 2] and v.nsel.tolist() == [2, 1] and v.nrun.tolist() == [2, 1]
    pts = Selection((0, 0), (0, 0), (1, 1), (0, 0), points=np.array([[0, 0], [0, 1], [150, 150], [5, 5]]))
    v = chunk_visits(pts, lay)
    assert v.cid.tolist() == [0, 3] and v.nsel.tolist() == [3, 1]


def test_memcpy_runs_merge_only_when_contiguous_in_both_buffers():
    lay = Layout("hdf5", (1000, 200), 4, (100, 100))
    v = chunk_visits(Selection.box((0, 0), (100, 200)), lay)
    assert v.nrun.tolist() == [100, 100] and v.nfrun.tolist() == [1, 1]  # chunk rows are half a buffer row
    v = chunk_visits(Selection.box((0, 0), (200, 100)), lay)
    assert v.nrun.tolist() == [1, 1]


def test_hyperslab_and_orthogonal_paths_agree():
    lay = Layout("zarr", (1000, 200), 4, (64, 48))
    rng = np.random.default_rng(0)
    for _ in range(20):
        start = rng.integers(0, 200, 2)
        stride = rng.integers(1, 9, 2)
        block = np.minimum(rng.integers(1, 5, 2), stride)
        count = rng.integers(1, 20, 2)
        slab = Selection(tuple(start), tuple(count), tuple(stride), tuple(block))
        idx = tuple(tuple(slab.dim_indices(d).tolist()) for d in range(2))
        orth = Selection(tuple(start), tuple(count), tuple(stride), tuple(block), indices=idx)
        a, b = chunk_visits(slab, lay), chunk_visits(orth, lay)
        for f in ("cid", "nsel", "nrun", "nfrun", "lo", "hi", "full"):
            assert getattr(a, f).tolist() == getattr(b, f).tolist(), f


def test_variables_json_round_trip():
    v = Variables(*range(len(FEATURES)))
    assert Variables.from_config(v.get_config()) == v
    with pytest.raises(ValueError, match="unknown variable"):
        Variables.from_config({"n_bogus": 1})


def test_replay_options_count_as_their_keywords_and_round_trip_json():
    import json

    from iomodel.profile import PageCacheCurve
    from iomodel.variables import ReplayOptions

    ds = _ds()
    lay = Layout.from_dataset(ds)
    acc = [_row(i) for i in range(0, 1000, 7)] + [_col(3)]
    curve = PageCacheCurve((4096, 1 << 20), (2e-6, 1.8e-4))
    kw = dict(cache_curve=curve, readahead=128 << 10, device_request=64 << 10, zarr_overlap=2.0)
    opts = ReplayOptions(**kw)
    assert ReplayOptions.from_config(json.loads(json.dumps(opts.get_config()))) == opts
    with pytest.raises(ValueError, match="unknown replay option"):
        ReplayOptions.from_config({"cached": True})
    by_kw = count_variables(acc, ds, lay, 1 << 26, **kw)
    assert count_variables(acc, ds, lay, 1 << 26, opts) == by_kw
    assert by_kw.x_cache > 0 and by_kw != count_variables(acc, ds, lay, 1 << 26)  # the options reach the kernel
    warm = count_variables(acc, ds, lay, 1 << 26, opts, warm=True)  # keywords override the options' fields
    assert warm == count_variables(acc, ds, lay, 1 << 26, warm=True, **kw) and warm.n_rdisk == 0
    with pytest.raises(TypeError):
        count_variables(acc, ds, lay, 1 << 26, cached=True)
