"""Layout parsing, validation and JSON round-trips; profile files."""
import json

import pytest

from instrumentation.records import ChunkCache, DatasetRecord, Filter
from iomodel.layout import Layout, LayoutError, format_bytes, layout_text, parse_layout
from iomodel.profile import ProfileError, SystemProfile, load_profile, save_profile

DS = DatasetRecord(3, "hdf5", "2.0", "f.h5", "/x", (1_000_000, 64), "float32", chunks=(65536, 8),
                   cache=ChunkCache(64 << 20, 8191, 0.75), maxshape=(None, 64))


def test_current_layout_takes_the_recorded_one():
    lay = parse_layout("current", DS)
    assert (lay.library, lay.chunks, lay.rdcc_nbytes, lay.itemsize) == ("hdf5", (65536, 8), 64 << 20, 4)


def test_layouts_named_alike_everywhere():
    """Advice, verify tables and benchmarks name a layout with one function: the same text for the same storage."""
    assert [format_bytes(n) for n in (0, 512, 1536, 8 << 20, 3 << 30)] == ["0B", "512B", "1.5KiB", "8MiB", "3GiB"]
    assert layout_text((65536, 8), cache_bytes=8 << 20) == "65536x8 cache=8MiB"
    assert layout_text(None, cache_bytes=8 << 20) == "contiguous"  # no chunk cache without chunks
    assert layout_text((64, 64), shards=(512, 512)) == "64x64 shards=512x512"
    hdf5 = parse_layout("hdf5:chunks=1000x64,cache=1MiB", DS)
    zarr = parse_layout("zarr:chunks=1000x8,shards=65000x64", DS)
    assert (hdf5.label, zarr.label) == ("hdf5 1000x64 cache=1MiB", "zarr 1000x8 shards=65000x64")


def test_parse_hdf5_and_zarr_specs():
    lay = parse_layout("hdf5:chunks=1000x64,cache=1MiB,slots=521,w0=0.5", DS)
    assert (lay.chunks, lay.rdcc_nbytes, lay.rdcc_nslots, lay.rdcc_w0) == ((1000, 64), 1 << 20, 521, 0.5)
    z = parse_layout("zarr:chunks=1000x8,shards=65000x64", DS)
    assert z.library == "zarr" and z.shards == (65000, 64) and z.chunks_per_shard == (65, 8)
    assert parse_layout("hdf5:contiguous", DS).chunks is None


@pytest.mark.parametrize("spec, needle", [
    ("hdf5:chunks=0x8", "positive"),
    ("hdf5:chunks=-4x8", "positive"),
    ("hdf5:chunks=100", "rank"),
    ("hdf5:chunks=100x128", "maximum extent"),
    ("zarr:chunks=100x8,shards=150x8", "multiples"),
    ("zarr", "needs chunks"),
    ("netcdf:chunks=1x1", "library"),
    ("hdf5:chunks=1x1,bogus=3", "unknown key"),
    ("hdf5:chunks=axb", "integers"),
    ("hdf5:chunks=10x10,cache=lots", "byte size"),
    ("hdf5:chunks=10x10,w0=2", "w0"),
])
def test_impossible_layouts_give_one_line_errors(spec, needle):
    with pytest.raises(LayoutError, match=needle) as exc:
        parse_layout(spec, DS)
    assert "\n" not in str(exc.value)


def test_layout_json_round_trip():
    for spec in ("current", "zarr:chunks=1000x8,shards=65000x64", "hdf5:contiguous",
                 "hdf5:chunks=10x10,ratio=0.3,filtered=1"):
        lay = parse_layout(spec, DS)
        cfg = json.loads(json.dumps(lay.get_config()))
        assert Layout.from_config(cfg) == lay


def test_filters_make_layout_filtered():
    ds = DatasetRecord(0, "zarr", "3", "s.zarr", "/", (100,), "float64", chunks=(10,),
                       filters=(Filter("bytes"), Filter("zstd")), zarr_format=3)
    assert Layout.from_dataset(ds).filtered
    ds2 = DatasetRecord(0, "zarr", "3", "s.zarr", "/", (100,), "float64", chunks=(10,), filters=(Filter("bytes"),))
    assert not Layout.from_dataset(ds2).filtered


def test_profile_round_trip_and_file_sections(tmp_path):
    prof = SystemProfile({"hdf5": {"n_rdisk": 1e-4, "s_rdisk": 1e-9}, "zarr": {"n_zopen": 2e-5}},
                         page_cache_bytes=1 << 30, data_servers=4, stripe_count=2, machine={"host": "h"})
    assert SystemProfile.from_config(json.loads(json.dumps(prof.get_config()))) == prof
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"schema": 1, "machine": {}, "compression": {"keep": True}}))
    save_profile(prof, path)
    doc = json.loads(path.read_text())
    assert doc["compression"] == {"keep": True}
    loaded = load_profile(path)
    assert loaded == prof and loaded.coefficient("zarr", "n_zopen") == 2e-5
    assert loaded.coefficient("zarr", "n_rdisk") == 0.0


def test_profile_errors(tmp_path):
    with pytest.raises(ProfileError, match="not found"):
        load_profile(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": 1, "io": {"coefficients": {"hdf5": {"n_bogus": 1.0}}}}))
    with pytest.raises(ProfileError, match="n_bogus"):
        load_profile(bad)
    neg = tmp_path / "neg.json"
    neg.write_text(json.dumps({"schema": 1, "io": {"coefficients": {"hdf5": {"n_rdisk": -1.0}}}}))
    with pytest.raises(ProfileError, match=">= 0"):
        load_profile(neg)


def test_hdf5_contiguous_drops_the_recorded_filters():
    """`predict --layout hdf5:contiguous` on a gzip dataset kept the filter: the whole array priced as one
    filtered chunk, decoded on every read (265 s against advise's 0.225 s). HDF5 filters chunks only."""
    gz = DatasetRecord(4, "hdf5", "2.0", "f.h5", "/g", (10_000, 64), "float32", chunks=(1000, 64),
                       filters=(Filter.hdf5(1, 0, (4,), "deflate"),))
    assert parse_layout("current", gz).filtered
    assert not parse_layout("hdf5:contiguous", gz).filtered
    assert not parse_layout("hdf5:chunks=contiguous", gz).filtered
    with pytest.raises(LayoutError, match="contiguous storage cannot be filtered"):
        parse_layout("hdf5:contiguous,filtered=1", gz)
