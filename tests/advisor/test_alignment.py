"""Chunk grids aligned to where the reads start (advisor.alignment): a region read at an offset gets chunk
shapes that do not cut it, counted by the I/O model's own chunk walk."""
import numpy as np

from advisor.alignment import aligned_shape, covered, grid_steps
from advisor.candidates import generate
from instrumentation.patterns import classify
from instrumentation.records import AccessRecord, DatasetRecord, Selection
from iomodel.chunks import chunk_visits
from iomodel.layout import Layout

SHAPE = (5840, 180, 360)


def acc(start, shape):
    s = Selection.box(start, shape)
    return AccessRecord(0, "read", s, s.nelements, s.nelements * 4, 0.0, 0.0)


def region_blocks():
    """A dask climatology of a 40 x 60 region at (60, 100): 365-step blocks over the whole time axis."""
    return [acc((t, 60, 100), (365, 40, 60)) for t in range(0, SHAPE[0], 365)]


def ds():
    return DatasetRecord(0, "hdf5", "2", "/nowhere/tas.nc", "/tas", SHAPE, "float32", chunks=(1, 180, 360))


def test_grid_steps_of_a_region_read_at_an_offset():
    accs = region_blocks()
    assert grid_steps(accs, SHAPE) == (365, 20, 20)  # gcd of starts and lengths: 60 and 40, 100 and 60
    assert covered(accs, SHAPE) == (True, False, False)  # time is read whole, block after block


def test_random_starts_have_no_grid():
    rng = np.random.default_rng(0)
    accs = [acc((int(s), 0, 0), (64, 180, 360)) for s in rng.integers(0, SHAPE[0] - 64, 50)]
    steps = grid_steps(accs, SHAPE)
    assert steps[1:] == (0, 0)  # whole extent
    assert steps[0] in (0,) or steps[0] < 2 or all(int(a.selection.start[0]) % steps[0] == 0 for a in accs)


def test_aligned_shape_divides_the_region_and_keeps_the_bytes():
    a = aligned_shape((730, 23, 45), (365, 20, 20), (True, False, False), SHAPE, 4)
    assert a[1:] == (20, 20)
    assert 0.5 <= np.prod(a) / (730 * 23 * 45) <= 1.5  # grown back along time, the dimension read whole
    assert aligned_shape((730, 20, 20), (365, 20, 20), (True, False, False), SHAPE, 4) is None


def test_candidates_include_chunks_that_do_not_cut_the_region():
    accs = region_blocks()
    cands = generate(ds(), classify(accs, SHAPE), SHAPE, accesses=accs)
    shapes = {c.chunks for c in cands if c.chunks is not None}
    # the region's 40 x 60 box never starts on a 40 x 60 grid: its size-matched shapes touch 4x the chunks
    exact = [s for s in shapes if 60 % s[1] == 0 and 40 % s[1] == 0 and 100 % s[2] == 0 and 60 % s[2] == 0]
    assert exact, sorted(shapes)
    for s in exact:  # the model's chunk walk: each block visits only chunks inside the region along lat and lon
        first = accs[1]  # (365..730, 60..100, 100..160)
        t_chunks = (730 - 1) // s[0] - 365 // s[0] + 1
        assert len(chunk_visits(first.selection, Layout("hdf5", SHAPE, 4, s))) == t_chunks * (40 // s[1]) * (60 // s[2])
    without = generate(ds(), classify(accs, SHAPE), SHAPE)
    assert not any(60 % c.chunks[1] == 0 and 40 % c.chunks[1] == 0 and 100 % c.chunks[2] == 0
                   and 60 % c.chunks[2] == 0 and c.chunks[1] < 180 and c.chunks[2] < 360
                   for c in without if c.chunks is not None)
