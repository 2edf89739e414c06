"""iomodel.filelevel: a POSIX request sequence on one file priced by term, and its coalesced replay."""
import dataclasses

import numpy as np
import pytest

from iomodel.filelevel import FileTerms, Replay, coalesce, predict_requests, replay
from iomodel.profile import load_profile


@pytest.fixture(scope="module")
def profile():
    return load_profile()


@pytest.fixture(scope="module")
def seek_profile(profile):
    """The profile with a per-seek price (the shipped one fits n_rseek to 0 and prices seeks by bytes)."""
    coefs = {lib: dict(c) for lib, c in profile.coefficients.items()}
    coefs["hdf5"]["n_rseek"] = 1e-4
    return dataclasses.replace(profile, coefficients=coefs)


def _random_requests(rng, n, size_max=1 << 20, file_bytes=1 << 30):
    off = rng.integers(0, file_bytes, n)
    ln = rng.integers(1, size_max, n)
    return off, ln, rng.random(n) < 0.3


def test_more_requests_cost_more(profile):
    ln = np.full(200, 65536)
    off = np.arange(200) * 65536
    fewer = predict_requests(off[:100], ln[:100], False, profile)
    more = predict_requests(off, ln, False, profile)
    assert more.total > fewer.total and more.requests == 200
    # the same bytes in more, smaller requests cost more too
    small = predict_requests(np.arange(800) * 16384, np.full(800, 16384), False, profile)
    assert small.nbytes == more.nbytes and small.total > more.total


@pytest.mark.parametrize("seed", range(20))
def test_coalescing_never_increases_predicted_time(profile, seek_profile, seed):
    rng = np.random.default_rng(seed)
    off, ln, wr = _random_requests(rng, int(rng.integers(1, 400)), size_max=int(rng.choice([4096, 1 << 16, 1 << 22])))
    for p in (profile, seek_profile):
        r = replay(off, ln, wr, p)
        assert r.fixed.total <= r.recorded.total * (1 + 1e-9)
        # the same bytes per op, each once: never more bytes than recorded, and every recorded byte
        o2, l2, w2 = coalesce(off, ln, wr, r.block)
        for op in (False, True):
            assert l2[w2 == op].sum() <= ln[wr == op].sum() and (l2 > 0).all()
            if (wr == op).any():
                assert o2[w2 == op].min() == off[wr == op].min()
                assert (o2 + l2)[w2 == op].max() == (off + ln)[wr == op].max()


def test_coalesce_merges_and_aligns():
    off, ln, wr = coalesce([5, 0, 100, 9], [10, 5, 3, 2], [0, 0, 1, 0], 8)
    assert off.tolist() == [0, 8, 100] and ln.tolist() == [8, 7, 3] and wr.tolist() == [False, False, True]


def test_sequential_cheaper_than_random_when_seeks_priced(seek_profile):
    n, size = 512, 65536
    seq = np.arange(n) * size
    rnd = np.random.default_rng(1).permutation(seq)
    a = predict_requests(seq, np.full(n, size), False, seek_profile)
    b = predict_requests(rnd, np.full(n, size), False, seek_profile)
    assert a.t_seek < b.t_seek and a.total < b.total
    assert a.nbytes == b.nbytes


def test_misaligned_overwrite_prices_read_modify_write(profile):
    size = 10_000  # not a multiple of the 4 KiB page
    off = np.arange(100) * size
    append = predict_requests(off, np.full(100, size), True, profile)  # new data: nothing to read first
    assert append.t_partial == 0
    # after a read past them, misaligned writes land in pages that hold data not in the page cache
    mark = predict_requests([10 * size * 100], [4096], False, profile)
    back = np.concatenate([[10 * size * 100], off[::-2]])
    over = predict_requests(back, np.concatenate([[4096], np.full(50, size)]),
                            np.concatenate([[False], np.ones(50, bool)]), profile)
    assert over.t_partial > 0
    aligned = predict_requests(back // 4096 * 4096, np.concatenate([[4096], np.full(50, 8192)]),
                               np.concatenate([[False], np.ones(50, bool)]), profile)
    assert aligned.t_partial == 0 and mark.t_partial == 0


def test_round_trip(profile):
    r = replay([0, 8192], [4096, 4096], [False, True], profile)
    assert Replay.from_config(r.get_config()) == r
    assert FileTerms.from_config(r.recorded.get_config()) == r.recorded
    assert predict_requests([], [], False, profile).total == 0
