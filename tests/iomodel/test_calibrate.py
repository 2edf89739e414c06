"""iomodel.calibrate: patterns, the NNLS fit, and a real calibration on a tiny grid."""
import json

import numpy as np
import pytest

from instrumentation.records import READ, WRITE, AccessRecord, ResizeRecord
from iomodel.calibrate import (
    Cube,
    Grid,
    calibrate,
    calibration_cases,
    fit_library,
    machine_info,
    write_profile,
)
from iomodel.cases import pattern_accesses

TINY = Grid(shape=(8192, 16), chunks=((512, 4), (2048, 16)), n_rows=5, n_columns=2, n_boxes=4, n_slabs=3,
            box=(300, 4), slab_rows=300, codec_chunks=((2048, 16),),
            cube=Cube((16, 32, 32), ((4, 16, 16),), (3, 8, 8), 2, 4))


@pytest.mark.parametrize("shape", [(5000, 24), (60, 50, 40)])
@pytest.mark.parametrize("pattern", ["full", "columns", "rows", "box-aligned", "box-unaligned", "write-slabs",
                                     "write-rows", "write-full", "append"])
def test_patterns_stay_inside_the_array(shape, pattern):
    rng = np.random.default_rng(0)
    box = (30,) + (8,) * (len(shape) - 1)
    events = pattern_accesses(pattern, shape, rng=rng, n=20, box=box, slab_rows=7, call_bytes=1 << 14)
    accesses = [e for e in events if isinstance(e, AccessRecord)]
    assert accesses
    extent = list(shape)
    if pattern == "append":
        extent[0] = 0
    for e in events:
        if isinstance(e, ResizeRecord):
            extent = list(e.shape)
            continue
        lo, hi = e.selection.bounds()
        assert all(0 <= a < b <= s for a, b, s in zip(lo, hi, extent)), (lo, hi, extent)
        assert e.op == (WRITE if pattern.startswith("write") or pattern == "append" else READ)
    if pattern in ("full", "write-full", "append"):
        assert sum(a.nelements for a in accesses) == int(np.prod(shape))
        assert extent == list(shape)
    if pattern.startswith("box"):
        starts = np.array([a.selection.start[1:] for a in accesses])
        aligned = np.all(starts % 8 == 0, axis=1)
        assert aligned.all() if pattern == "box-aligned" else not aligned.any()


def test_write_rows_are_consecutive_single_rows():
    events = pattern_accesses("write-rows", (5000, 24), rng=np.random.default_rng(1), n=300)
    starts = [e.selection.start[0] for e in events]
    assert len(events) == 300 and np.all(np.diff(starts) == 1)
    assert {(e.selection.count, e.selection.block) for e in events} == {((1, 1), (1, 24))}


def test_write_rows_cases_only_where_a_rows_chunks_fit_the_default_cache():
    from iomodel.calibrate import QUICK, row_chunk_bytes
    from iomodel.layout import HDF5_DEFAULT_CACHE

    assert row_chunk_bytes(QUICK, (4096, 1)) == 4096 * 32 * 4 and row_chunk_bytes(QUICK, None) == 32 * 4
    rows = [c for c in calibration_cases(QUICK) if c.pattern == "write-rows"]
    assert {c.library for c in rows} == {"hdf5", "zarr"} and all(c.warm for c in rows)
    assert (262144, 4) not in {c.chunks for c in rows} and None in {c.chunks for c in rows}
    assert all(row_chunk_bytes(QUICK, c.chunks) <= HDF5_DEFAULT_CACHE[0] // 2 for c in rows)


def test_fit_recovers_known_nonnegative_coefficients():
    from iomodel.cost import TERMS
    from iomodel.variables import FEATURES

    rng = np.random.default_rng(3)
    truth = {f: 0.0 for f in FEATURES}
    truth.update({"n_calls": 2e-5, "s_memcpy": 1e-10, "n_rdisk": 5e-5, "s_rdisk": 5e-10})
    rows = [{f: float(rng.integers(0, 1000)) * (1e6 if f.startswith("s_") else 1) for f in FEATURES}
            for _ in range(60)]
    y = [sum(truth[f] * r[f] for f in FEATURES) + 1e-6 for r in rows]
    fit = fit_library("hdf5", rows, y, ["p"] * len(rows))
    assert all(v >= 0 for v in fit.coefficients.values())
    assert fit.r2 > 0.99 and fit.median_rel_error < 0.05
    for f in ("n_calls", "n_rdisk", "s_rdisk"):
        assert fit.coefficients[f] == pytest.approx(truth[f], rel=0.1)
    assert set(fit.per_term) == set(TERMS)


def test_cases_build_each_array_once_and_write_last():
    cases = calibration_cases(TINY)
    groups = [c.group for c in cases]
    # each group's cases are consecutive, reads before writes
    assert len(set(groups)) == len([g for i, g in enumerate(groups) if i == 0 or groups[i - 1] != g])
    for g in set(groups):
        pats = [c.pattern for c in cases if c.group == g]
        first_write = min(i for i, p in enumerate(pats) if p.startswith("write"))
        assert all(p.startswith("write") for p in pats[first_write:])
    assert {c.cache for c in cases if c.library == "hdf5"} == {"default", "none", "large"}
    assert any(c.warm for c in cases) and any(not c.warm for c in cases)
    # the 3-D array: both libraries, the same accesses on the same chunk shapes
    cube = {c.library: [c.accesses for c in cases if len(c.shape) == 3 and c.chunks] for c in cases}
    assert cube["hdf5"] and cube["hdf5"] == cube["zarr"]
    # HDF5's contiguous storage on both arrays, read cold and warm and written (no chunk to price it by)
    contiguous = [c for c in cases if c.chunks is None]
    assert {c.library for c in contiguous} == {"hdf5"} and {len(c.shape) for c in contiguous} == {2, 3}
    assert {"write-full", "write-slabs"} <= {c.pattern for c in contiguous} and any(c.warm for c in contiguous)
    assert all("chunks=contiguous" in c.label for c in contiguous)


def test_tiny_calibration_gives_a_loadable_profile(tmp_path):
    from iomodel.profile import SystemProfile, load_profile

    result = calibrate(grid=TINY, workdir=tmp_path / "work", progress=None)
    assert len(result.seconds) == len(result.cases) and all(s > 0 for s in result.seconds)
    # compressed cases carry their measured ratio; the machine's curve, overlap and probe are recorded
    assert all(0 < c.ratio < 1 for c in result.cases if c.codec) and any(c.codec for c in result.cases)
    curve = result.profile.page_cache_curve
    assert len(curve.sizes) >= 8 and list(curve.seconds) == sorted(curve.seconds)
    assert curve.memory_bps > 0  # hits of arrays beyond the CPU's cache (PageCacheCurve.for_footprint)
    assert result.profile.zarr_overlap >= 1.0
    assert result.profile.probe["page_cache_bps"] > result.profile.probe["disk_bps"] > 0
    for lib in ("hdf5", "zarr"):
        coefs = result.profile.coefficients[lib]
        assert all(v >= 0 for v in coefs.values())
        assert any(v > 0 for v in coefs.values())
        assert np.isfinite(result.fits[lib].r2)
    cfg = result.profile.get_config()
    assert SystemProfile.from_config(json.loads(json.dumps(cfg))) == result.profile
    path = tmp_path / "profile.json"
    write_profile(path, result, compression={"codecs": {}})
    doc = json.loads(path.read_text())
    assert doc["schema"] == 1 and doc["compression"] == {"codecs": {}}
    assert doc["machine"]["cores"] >= 1
    loaded = load_profile(path)
    assert loaded.coefficients == result.profile.coefficients
    assert loaded.page_cache_curve == curve and loaded.probe == result.profile.probe


def test_machine_info_names_the_machine():
    info = machine_info()
    assert info["cores"] >= 1 and info["memory_bytes"] > 0 and info["kernel"]
    assert {"h5py", "zarr", "numpy", "hdf5"} <= set(info["versions"])


def test_cli_has_the_calibrate_command():
    from advisor.cli import build_parser

    args = build_parser("calibrate").parse_args(["calibrate", "--quick", "-o", "p.json", "--skip-compression"])
    assert args.quick and args.output == "p.json" and args.skip_compression and callable(args.func)


def test_time_band_holds_95_percent_of_the_fit_runs_and_brackets_one():
    from iomodel.calibrate import LibraryFit, time_band
    from iomodel.profile import SystemProfile

    rng = np.random.default_rng(0)
    measured = rng.lognormal(0.0, 0.4, 400)
    runs = tuple((f"r{i}", float(m), 1.0) for i, m in enumerate(measured))
    fit = LibraryFit("hdf5", {}, len(runs), 0.9, 0.3, {}, {}, runs)
    lo, hi = time_band(fit)
    inside = np.mean((measured >= lo) & (measured <= hi))
    assert lo <= 1.0 <= hi and 0.93 <= inside <= 0.97
    prof = SystemProfile({"hdf5": {}}, time_band={"hdf5": (lo, hi)})
    assert SystemProfile.from_config(prof.get_config()).band("hdf5") == (lo, hi)
    assert prof.band("zarr") == (1.0, 1.0)
    with pytest.raises(ValueError, match="time_band"):
        SystemProfile({"hdf5": {}}, time_band={"hdf5": (1.5, 2.0)})


def test_this_machines_profile_replaces_the_shipped_one_once_calibrated(tmp_path, monkeypatch):
    from iomodel.profile import DEFAULT_PROFILE, SystemProfile, default_profile_path, load_profile, save_profile

    mine = tmp_path / "machine.json"
    monkeypatch.setenv("IOADVISOR_PROFILE", str(mine))
    assert default_profile_path() == DEFAULT_PROFILE
    save_profile(SystemProfile({"hdf5": {"n_calls": 1.0}}, page_cache_bytes=1 << 30), mine)
    assert default_profile_path() == mine
    assert load_profile().coefficient("hdf5", "n_calls") == 1.0
