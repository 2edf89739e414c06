"""``osio.os_read_repeat`` / ``os_write_repeat`` (the requests of one page-cache key counted at once) count exactly
what ``os_read`` / ``os_write`` count request by request: hits, device reads, readahead windows, seeks."""
import numpy as np
import pytest

from iomodel.cache import copy_int64_dict, new_page_cache
from iomodel.features import FEATURES
from iomodel.osio import (WRITE_NEW_FILE, WRITE_NEW_SPACE, WRITE_OVER_CACHED, WRITE_OVER_DATA, os_read,
                          os_read_repeat, os_write, os_write_repeat, readahead_state)

CURVE_B = np.array([64.0, 4096.0, 65536.0, 1 << 20], np.float64)
CURVE_S = np.array([6e-7, 9e-7, 3e-6, 3e-5], np.float64)
SIEVE = 64 << 10


def _state(rng, capacity):
    pc = new_page_cache(capacity, 4096)
    ra = readahead_state(8 << 20, 64 << 20, 4 << 20)
    out = np.zeros(len(FEATURES), np.float64)
    dev = 0
    for _ in range(int(rng.integers(0, 40))):  # some history: cached windows, a readahead stream under way
        off = int(rng.integers(0, 64 << 20))
        dev = os_read(out, pc, 1 + off // SIEVE, int(rng.integers(1, 70000)), off, dev, CURVE_B, CURVE_S, 1.0, ra)
    return pc, ra, dev


def _copy(pc, ra):
    nodes, free, st, index = pc
    return (nodes.copy(), free.copy(), st.copy(), copy_int64_dict(index)), ra.copy()


def _batch(rng):
    window = int(rng.integers(0, 1024))
    run = int(rng.choice([4, 12, 16, 64, 300, 4096]))
    step = int(rng.choice([run, run + 4, 2 * run, 1000, 4096 * 3]))
    lo = window * SIEVE + int(rng.integers(0, SIEVE // 2))
    count = max(1, min(int(rng.integers(1, 5000)), ((window + 1) * SIEVE - lo - run) // step))
    return 1 + window, run, lo, step, count


@pytest.mark.parametrize("seed", range(40))
def test_repeated_reads_count_as_one_by_one(seed):
    rng = np.random.default_rng(seed)
    pc, ra, dev = _state(rng, int(rng.choice([1 << 20, 16 << 20, 1 << 30])))
    key, run, lo, step, count = _batch(rng)
    (pc1, ra1), (pc2, ra2) = _copy(pc, ra), _copy(pc, ra)
    out1, out2 = np.zeros(len(FEATURES)), np.zeros(len(FEATURES))
    d1 = d2 = dev
    for r in range(count + 1):
        d1 = os_read(out1, pc1, key, run, lo + r * step, d1, CURVE_B, CURVE_S, 1.0, ra1)
    d2 = os_read(out2, pc2, key, run, lo, d2, CURVE_B, CURVE_S, 1.0, ra2)
    d2 = os_read_repeat(out2, pc2, key, run, (lo + step, step, count), d2, (CURVE_B, CURVE_S), 1.0, ra2)
    assert d1 == d2
    np.testing.assert_allclose(out2, out1, rtol=1e-12)
    np.testing.assert_array_equal(ra2, ra1)
    assert dict(pc2[3]) == dict(pc1[3]) and np.array_equal(pc2[2], pc1[2])


@pytest.mark.parametrize("seed", range(40))
def test_repeated_writes_count_as_one_by_one(seed):
    rng = np.random.default_rng(seed)
    pc, ra, _ = _state(rng, int(rng.choice([1 << 20, 1 << 30])))
    key, run, lo, step, count = _batch(rng)
    lands_on = int(rng.choice([WRITE_NEW_SPACE, WRITE_OVER_DATA, WRITE_OVER_CACHED, WRITE_NEW_FILE]))
    (pc1, _), (pc2, _) = _copy(pc, ra), _copy(pc, ra)
    out1, out2 = np.zeros(len(FEATURES)), np.zeros(len(FEATURES))
    end = int(rng.choice([0, lo]))
    e1 = e2 = end
    for r in range(count + 1):
        e1 = os_write(out1, pc1, key, run, lo + r * step, e1, lands_on)
    e2 = os_write(out2, pc2, key, run, lo, e2, lands_on)
    e2 = os_write_repeat(out2, pc2, key, run, (lo + step, step, count), e2, lands_on)
    assert e1 == e2
    np.testing.assert_allclose(out2, out1, rtol=1e-12)
    assert dict(pc2[3]) == dict(pc1[3])
