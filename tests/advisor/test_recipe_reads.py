"""The reads a dask-blocked xarray program makes once the recipe gives it new dask chunks (advisor/recipe_reads.py),
and ``verify`` replaying them in each recommended layout."""
from dataclasses import replace
from types import SimpleNamespace

import h5py
import numpy as np

import advisor
from advisor.choice import program_blocking
from advisor.recipe_reads import recipe_reads
from advisor.verify import Choice, current_choice, recipe_groups, synthetic, verify_choices
from instrumentation.records import READ, WRITE, AccessRecord, Selection
from instrumentation.tracefile import load_trace
from iomodel.layout import Layout

SHAPE = (96, 18, 36)
REGION = ((6, 10), (10, 16))  # lat, lon of a regional mean; time read in blocks of 12 steps


def _blocks(op=READ, probe=True):
    """What xarray + dask records for ``ds.v.isel(lat=6:10, lon=10:16).mean('time')`` with chunks={'time': 12}."""
    out = []
    if probe:  # another read, off the grid (every 4th step of one point): kept as traced
        sel = Selection((0, 0, 0), (24, 1, 1), (4, 1, 1), (1, 1, 1))
        out.append(AccessRecord(0, op, sel, sel.nelements, 4 * sel.nelements, 0.0, 1e-4))
    (a, b), (c, d) = REGION
    for k, t in enumerate(range(0, SHAPE[0], 12)):
        sel = Selection.box((t, a, c), (12, b - a, d - c))
        out.append(AccessRecord(0, op, sel, sel.nelements, 4 * sel.nelements, 0.01 * (k + 1), 1e-3))
    return out


def test_the_recipes_dask_blocks_replace_the_traced_ones():
    accesses = _blocks()
    blocking = program_blocking(accesses, SHAPE)
    assert blocking.shape == (12, 4, 6)
    # chunks 96x2x2: the recipe's dask chunks are 96x4x6 from the origin, which cut lat 6:10 at 8 and lon 10:16 at 12
    got = recipe_reads(accesses, SHAPE, (96, 2, 2), blocking)
    boxes = sorted((a.selection.start, a.selection.block) for a in got if a.selection.count == (1, 1, 1))
    assert boxes == [((0, 6, 10), (96, 2, 2)), ((0, 6, 12), (96, 2, 4)), ((0, 8, 10), (96, 2, 2)),
                     ((0, 8, 12), (96, 2, 4))]
    assert [a.selection for a in got if a.selection.count != (1, 1, 1)] == [accesses[0].selection]
    assert sum(a.nbytes for a in got) == sum(a.nbytes for a in accesses)
    assert [a.t_start for a in got] == sorted(a.t_start for a in got)


def test_the_recipes_blocks_go_in_the_direction_the_program_read_its_blocks():
    """dask's scheduler reads a reduction's blocks from the last key back (r04: 15, 12, 13, 14, 3, 2, 1, 0, ...);
    cold reads depend on the direction (readahead), so the recipe's blocks are replayed the same way."""
    forwards = _blocks(probe=False)
    starts = [a.t_start for a in forwards]
    backwards = [replace(a, t_start=t) for a, t in zip(forwards, starts[::-1])]
    blocking = program_blocking(forwards, SHAPE)

    def order(accesses):
        return [a.selection.start for a in recipe_reads(accesses, SHAPE, (96, 2, 2), blocking)]

    ahead = [(0, 6, 10), (0, 6, 12), (0, 8, 10), (0, 8, 12)]
    assert order(forwards) == ahead
    assert order(backwards) == ahead[::-1]
    # mostly backwards, as dask.order gave r04's traced blocks: backwards
    mixed = [3, 0, 1, 2, 7, 6, 5, 4]
    assert order([replace(forwards[k], t_start=starts[i]) for i, k in enumerate(mixed)]) == ahead[::-1]


def test_layouts_whose_dask_blocks_are_the_traced_ones_and_writes_are_left_alone():
    accesses = _blocks()
    blocking = program_blocking(accesses, SHAPE)
    assert recipe_reads(accesses, SHAPE, (12, 18, 36), blocking) is None  # dask chunks 12x18x36: the same blocks
    writes = _blocks(WRITE, probe=False)
    assert recipe_reads(writes, SHAPE, (96, 2, 2), program_blocking(writes, SHAPE)) is None
    assert recipe_reads(accesses, SHAPE, (96, 2, 2), None) is None


def test_verify_replays_the_recipes_reads_in_each_recommended_layout(tmp_path):
    data = synthetic(SHAPE, "f4", seed=3)
    with h5py.File(tmp_path / "v.h5", "w") as f:
        f.create_dataset("v", data=data, chunks=(1, 18, 36))
    (a, b), (c, d) = REGION
    with advisor.trace(tmp_path / "t.jsonl"):
        with h5py.File(tmp_path / "v.h5", "r") as f:
            for t in range(0, SHAPE[0], 12):
                f["v"][t:t + 12, a:b, c:d]
    trace = load_trace(tmp_path / "t.jsonl")
    ds = next(iter(trace.datasets.values()))
    choices = [current_choice(ds), Choice("#1", Layout("hdf5", SHAPE, 4, (96, 2, 2)))]
    entry = SimpleNamespace(idiom=SimpleNamespace(dask=True))
    groups = recipe_groups(trace, ds, choices, entry)
    assert [picked for _, picked in groups] == [[0], [1]]
    assert groups[0][0] is trace
    boxes = sorted(x.selection.block for x in groups[1][0].accesses_of(ds.id))
    assert boxes == [(96, 2, 2), (96, 2, 2), (96, 2, 4), (96, 2, 4)]
    rows = verify_choices(groups[1][0], ds, [choices[1]], tmp_path / "w")
    assert rows[0].max_error == 0.0 and rows[0].measured_seconds > 0
    # without an xarray + dask program every layout replays the traced reads
    assert recipe_groups(trace, ds, choices, SimpleNamespace(idiom=None)) == [(trace, [0, 1])]


def test_the_recommendation_is_priced_on_the_recipes_reads():
    """Without a chunk cache, each traced 12-step block of 96x2x2 chunks reads every chunk it touches whole, eight
    times over; the recipe's four 96-step blocks read each once: priced on them, the layout costs less."""
    from dataclasses import replace

    from advisor.advice import Recommendation
    from advisor.candidates import Candidate
    from advisor.costmodel import CostModel
    from advisor.recipe_reads import priced_as_recipe
    from instrumentation.records import DatasetRecord
    from test_search import profile

    accesses = _blocks(probe=False)
    ds = DatasetRecord(0, "hdf5", "2", "/nowhere/v.h5", "/v", SHAPE, "float32", chunks=(1, 18, 36))
    prof = profile()
    cand = Candidate("hdf5", (96, 2, 2), None, 0, 1, None)
    traced = CostModel(ds, accesses, SHAPE, prof).evaluate(cand)
    rec = replace(traced, seconds=2 * traced.seconds, seconds_ci=(traced.seconds, 3 * traced.seconds))
    got = priced_as_recipe(rec, ds, accesses, SHAPE, program_blocking(accesses, SHAPE), prof)
    assert isinstance(got, Recommendation) and got.candidate == cand
    assert 0 < got.seconds < rec.seconds
    # the same factor on the whole prediction: the calibration of the traced seconds carries over
    f = got.seconds / rec.seconds
    assert np.allclose([got.seconds_ci[0] / rec.seconds_ci[0], got.seconds_ci[1] / rec.seconds_ci[1]], f)
    same = Candidate("hdf5", (12, 18, 36), None, 0, 1, None)  # the recipe's blocks are the traced ones
    kept = CostModel(ds, accesses, SHAPE, prof).evaluate(same)
    assert priced_as_recipe(kept, ds, accesses, SHAPE, program_blocking(accesses, SHAPE), prof) is kept
