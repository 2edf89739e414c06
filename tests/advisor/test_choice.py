"""Near-ties, the keep/change verdict and the program's blocking (advisor.choice)."""
import numpy as np
import pytest

from advisor.advice import Recommendation
from advisor.candidates import Candidate
from advisor.choice import (MIN_GAIN, MIN_SURE_GAIN, TIE_RULES, choose, copy_accesses, measured_share, padding,
                            program_blocking, storage_path, verdict)
from instrumentation.records import AccessRecord, Selection

SHAPE = (200_000, 64)


def rec(chunks, seconds, cache=8 << 20, amp=1.0, ci=None, library="hdf5"):
    c = Candidate(library, chunks, None, cache if library == "hdf5" and chunks else None, 8191)
    return Recommendation(c, seconds, ci or (seconds * 0.9, seconds * 1.1), {"t_call": seconds}, 0,
                          facts={"read_amplification": amp})


def test_whole_array_chunk_with_big_cache_loses_a_near_tie():
    whole = rec((200_000, 64), 1.00, cache=64 << 20)  # 49 MiB chunk, 64 MiB cache: the fastest by 2%
    small = rec((1024, 64), 1.02)
    current = rec((4096, 1), 3.0)
    chosen, rule, n = choose([whole, small, current], current, 0.1, SHAPE, 4)
    assert chosen is small and rule == "chunks of 64 KiB-16 MiB" and n == 2
    # chunks in range, but a 64 MiB cache the reader must know to set
    cached = rec((16384, 64), 1.00, cache=64 << 20)
    assert choose([cached, small, current], current, 0.1, SHAPE, 4)[:2] == (small, "less cache memory")
    # 16 MiB of cache is no fragile extreme: the layout predicted faster keeps the tie
    modest = rec((2048, 64), 1.00, cache=16 << 20)
    assert choose([modest, small, current], current, 0.1, SHAPE, 4)[:2] == (modest, None)


def test_current_layout_wins_a_near_tie():
    best = rec((1024, 64), 1.0)
    current = rec((4096, 64), 1.05)
    chosen, rule, _ = choose([best, current], current, 0.1, SHAPE, 4)
    assert chosen is current and rule == TIE_RULES[0]
    v = verdict(current, chosen, traced=1.1, tie_rule=rule)
    assert v.verdict == "keep" and "resolution" in v.reason


def test_chunk_size_range_then_padding_then_amplification():
    big = rec((131072, 64), 1.0)  # 32 MiB chunks: outside 64 KiB-16 MiB
    padded = rec((3500, 64), 1.01)  # 58 x 3500 = 203000 rows: 1.5% padding
    exact = rec((4000, 64), 1.02)  # divides the array
    current = rec((7, 1), 9.0)
    chosen, rule, _ = choose([big, padded, exact, current], current, 0.1, SHAPE, 4)
    assert padding((3500, 64), SHAPE) > 0.01 and padding((4000, 64), SHAPE) == 0
    assert chosen is exact and rule == "chunks of 64 KiB-16 MiB"
    a = rec((4000, 64), 1.0, amp=8.0)
    b = rec((4000, 32), 1.05, amp=2.0)
    chosen, rule, _ = choose([a, b, current], current, 0.1, SHAPE, 4)
    assert chosen is b and rule == "less read amplification"
    # a hundredth of the bytes asked for (page rounding of compressed chunks) does not outweigh the prediction
    slower = rec((4000, 64), 1.05, amp=1.13)
    faster = rec((4000, 32), 1.0, amp=1.14)
    chosen, rule, _ = choose([faster, slower, current], current, 0.1, SHAPE, 4)
    assert chosen is faster and rule is None


COEF = {"n_calls": 1e-4, "s_rdisk": 1e-9, "n_rdisk": 1e-5, "n_rseek": 1e-4, "n_chunks": 2e-5}


def coefficient(library, v):
    return COEF.get(v, 0.0) * (3 if library == "zarr" and v == "n_chunks" else 1)


def path(c):
    return storage_path(c.layout(SHAPE, 4))


def measured_rec(chunks, seconds, variables, library="hdf5", compressor=None, codec_seconds=0.0, ratio=1.0,
                 cache=8 << 20):
    c = Candidate(library, chunks, None, cache if library == "hdf5" and chunks else None, 8191, compressor)
    return Recommendation(c, seconds, (seconds * 0.9, seconds * 1.1),
                          {"t_rdisk": seconds - codec_seconds, "t_decompress": codec_seconds}, 0, ratio=ratio,
                          variables=variables, facts={"read_amplification": 1.0})


def test_near_ties_prefer_a_prediction_resting_on_what_the_trace_measured():
    # the current layout's time was whole-chunk bytes and calls; contiguous would be small seeks the trace never timed
    current = measured_rec((4096, 64), 2.0, {"n_calls": 10_000, "s_rdisk": 1e9})
    seeks = measured_rec(None, 0.50, {"n_calls": 1000, "n_rseek": 4000})
    bytes_ = measured_rec((1024, 64), 0.52, {"n_calls": 1000, "s_rdisk": 4e8})
    # contiguous is HDF5's other code path (sieve buffer, no chunk index): its calls were never timed either
    assert measured_share(seeks, current, coefficient, path) == pytest.approx(0.0)
    sieve = measured_rec(None, 0.5, {"n_calls": 1000, "s_rdisk": 4e8})
    assert measured_share(sieve, current, coefficient, path) == pytest.approx(0.4 / 0.5)
    assert measured_share(bytes_, current, coefficient, path) == pytest.approx(1.0)
    chosen, rule, _ = choose([seeks, bytes_, current], current, 0.1, SHAPE, 4, coefficient=coefficient)
    assert chosen is bytes_ and rule == "a prediction resting on what the trace measured"
    # another library: only the device terms were measured; a codec the current layout lacks: an estimate
    zarr = measured_rec((1024, 64), 0.5, {"n_calls": 1000, "s_rdisk": 4e8}, library="zarr")
    assert measured_share(zarr, current, coefficient, path) == pytest.approx(0.4 / 0.5)
    coded = measured_rec((1024, 64), 0.5, {"n_calls": 1000, "s_rdisk": 1e8}, compressor="zstd", codec_seconds=0.3,
                         ratio=4.0)
    assert measured_share(coded, current, coefficient, path) == pytest.approx(0.2 / 0.5)
    chosen, rule, _ = choose([coded, bytes_, current], current, 0.1, SHAPE, 4, coefficient=coefficient)
    assert chosen is bytes_ and rule == "a prediction resting on what the trace measured"


def test_hdf5_code_paths():
    def lay(chunks, cache=8 << 20, compressor=None):
        return path(Candidate("hdf5", chunks, None, cache if chunks else None, 8191, compressor))

    assert lay(None) == ("hdf5", "contiguous")
    assert lay((4096, 64)) == ("hdf5", "chunk cache")  # 1 MiB chunks in an 8 MiB cache
    # unfiltered chunks larger than the cache, or no cache at all: read piecewise, straight from the file
    assert lay((65536, 64)) == lay((1024, 64), cache=0) == ("hdf5", "piecewise")
    # a filtered chunk is always read and decoded whole
    assert lay((1024, 64), cache=0, compressor="zstd") == ("hdf5", "chunk cache")
    assert path(Candidate("zarr", (1024, 64))) == ("zarr", "chunks")


def test_a_cacheless_layout_does_not_rest_on_a_trace_taken_through_the_cache():
    # the loader: the current layout's time is calls and chunk buffers through the cache; a cacheless layout
    # predicted 8% faster than a whole-array-cached one would take HDF5's piecewise path, never timed
    variables = {"n_calls": 10_000, "n_chunks": 10_000}
    current = measured_rec((4096, 64), 2.0, {**variables, "s_rdisk": 1e9})
    cacheless = measured_rec((1024, 64), 0.50, {**variables, "s_rdisk": 1e7}, cache=0)
    cached = measured_rec((16384, 64), 0.54, {**variables, "s_rdisk": 5e7}, cache=32 << 20)
    assert measured_share(cacheless, current, coefficient, path) < 0.5 <= measured_share(cached, current,
                                                                                         coefficient, path)
    chosen, rule, _ = choose([cacheless, cached, current], current, 0.1, SHAPE, 4, coefficient=coefficient)
    assert chosen is cached and rule == "a prediction resting on what the trace measured"
    # without the profile's coefficients every prediction counts as measured: the fastest, with less cache, stays
    assert choose([cacheless, cached, current], current, 0.1, SHAPE, 4)[:2] == (cacheless, None)


def test_beyond_resolution_the_fastest_wins():
    fast, slow = rec((1024, 64), 1.0, cache=64 << 20), rec((2048, 64), 1.3)
    current = rec((7, 1), 9.0)
    assert choose([fast, slow, current], current, 0.1, SHAPE, 4)[:2] == (fast, None)


def test_verdict_thresholds():
    current = rec((7, 1), 2.0)
    small_gain = rec((1024, 64), 2.0 / 1.01, ci=(1.9, 2.1))
    assert verdict(current, small_gain, traced=2.0).verdict == "keep"  # below MIN_GAIN
    inside = rec((1024, 64), 1.0, ci=(0.5, 2.5))
    v = verdict(current, inside, traced=2.0)
    assert v.verdict == "keep" and "interval" in v.reason and v.speedup == pytest.approx(2.0)
    # faster by 1.25x even at the slow end of its interval, but that is not a sure 1.1x (a measured 1.05x)
    unsure = rec((1024, 64), 1.4, ci=(1.1, 1.9))
    v = verdict(current, unsure, traced=2.0)
    assert v.verdict == "keep" and "slow end" in v.reason and 2.0 / 1.9 < MIN_SURE_GAIN
    clear = rec((1024, 64), 1.0, ci=(0.8, 1.3))
    v = verdict(current, clear, traced=2.0)
    assert v.verdict == "change" and v.speedup == pytest.approx(2.0) and v.speedup >= MIN_GAIN
    # the traced time, not the prediction, is the base of the speed-up
    assert verdict(rec((7, 1), 9.0), clear, traced=2.0).speedup == pytest.approx(2.0)


def _box(start, shape):
    n = int(np.prod(shape))
    return AccessRecord(0, "read", Selection.box(start, shape), n, 4 * n, 0.0, 1e-3)


def test_program_blocking_from_dask_blocks():
    # (30, 40, 60) blocks of a region starting at lat 60, lon 100, stepping in time; last block shorter
    accs = [_box((t, 60, 100), (min(30, 365 - t), 40, 60)) for t in range(0, 365, 30)]
    b = program_blocking(accs, (365, 180, 360))
    assert b is not None and b.shape == (30, 40, 60) and b.stepped == (True, False, False)
    assert b.aligned((30, 180, 360)) and b.aligned((15, 10, 10)) and not b.aligned((7, 40, 60))
    # single rows read at random are samples, not blocks
    rows = [_box((int(i), 0), (1, 64)) for i in np.random.default_rng(0).integers(0, 1000, 50)]
    assert program_blocking(rows, (1000, 64)) is None


def test_copy_accesses_cover_the_array_once():
    accs = copy_accesses(0, (100_000, 64), 4, (4096, 1), (1000, 64), "read")
    assert sum(a.nelements for a in accs) == 100_000 * 64
    assert all(a.selection.start[0] % 8192000 == 0 or a.selection.start[0] % 4096 == 0 for a in accs)
