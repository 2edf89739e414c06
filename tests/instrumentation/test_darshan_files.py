"""Darshan logs without H5D: reading in a child process, per-file characterization, HDF5/netCDF identification."""
import numpy as np
import pytest

from instrumentation.darshan_files import characterize, identify, signature
from instrumentation.darshan_raw import DarshanError, read_parser_text, read_raw


def test_hdf5_and_netcdf_told_by_signature_records_and_name(tmp_path):
    h5 = tmp_path / "data.bin"
    h5.write_bytes(b"\0" * 512 + b"\x89HDF\r\n\x1a\n" + b"\0" * 100)  # a 512-byte user block first
    nc = tmp_path / "classic.dat"
    nc.write_bytes(b"CDF\x02" + b"\0" * 100)
    assert signature(str(h5)) == "HDF5" and signature(str(nc)) == "netCDF"
    assert identify(str(h5))[0] == "hdf5" and "HDF5 signature in the file" in identify(str(h5))[1]
    assert identify(str(h5), reach_file=False)[0] == "other"  # not by its name
    assert identify(str(nc))[0] == "netcdf"
    assert identify("/gone/out.nc")[0] == "netcdf-or-hdf5"  # netCDF-4 is HDF5, classic is not: name alone
    assert identify("/gone/x.dat", in_h5f=True) == ("hdf5", ("H5F/H5D records",))


def test_posix_counters_per_file(darshan_examples):
    raw = read_raw(darshan_examples / "example.darshan")
    files = characterize(raw, reach_files=False)
    (vpic,) = [f for f in files.files if f.name.endswith("vpicio.hdf5")]
    assert vpic.kind == "hdf5" and vpic.evidence == ("name ends .hdf5",)
    io = vpic.posix
    posix = raw.modules["POSIX"]
    row = np.flatnonzero(posix.ids == posix.ids[0])
    assert io.shared and io.writes == int(posix.column("POSIX_WRITES")[row].sum())
    assert io.write_sizes == tuple(int(posix.column(f"POSIX_SIZE_WRITE_{b}")[row].sum()) for b in
                                   ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M",
                                    "10M_100M", "100M_1G", "1G_PLUS"))
    assert io.slowest_rank[2] >= io.fastest_rank[2] > 0
    assert io.file_alignment == 1048576


def test_dxt_segments_measure_small_requests(darshan_examples):
    raw = read_raw(darshan_examples / "dxt.darshan")
    files = characterize(raw, reach_files=False)
    with_dxt = [f for f in files.files if f.dxt is not None]
    assert with_dxt
    segs = [s for s in raw.dxt if s.op == "read"]
    small = sum(float((s.end - s.start)[s.length < 1 << 20].sum()) for s in segs)
    assert sum(f.dxt.small.get("read", (0, 0.0, 0))[1] for f in with_dxt) == pytest.approx(small)


@pytest.mark.parametrize("cut", [0.02, 0.3, 0.7])
def test_truncated_log_is_one_error_from_the_child(darshan_examples, tmp_path, cut):
    data = (darshan_examples / "ior_hdf5_example.darshan").read_bytes()
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(data[:int(len(data) * cut)])
    try:
        raw = read_raw(bad)
    except DarshanError as exc:
        assert str(exc).startswith(str(bad)) and "\n" not in str(exc)
    else:  # a cut past the module maps: what is left must read as a log with modules missing
        assert raw.unread


def test_parser_text_holds_every_module(darshan_examples, tmp_path):
    from instrumentation.darshan import to_parser_text

    path = tmp_path / "ior.txt"
    path.write_text(to_parser_text(str(darshan_examples / "ior_hdf5_example.darshan")))
    raw = read_parser_text(str(path))
    assert set(raw.modules) == {"H5F", "H5D"} and raw.nprocs == 4
    bad = tmp_path / "bad.txt"
    bad.write_text("# darshan log version: 3.21\nPOSIX\tx\t1\tPOSIX_READS\t1\tf\t/\tufs\n")
    with pytest.raises(DarshanError, match=r"bad.txt:2: bad rank"):
        read_parser_text(str(bad))


def test_cuts_that_can_crash_libdarshan_util_end_in_one_line(darshan_examples, tmp_path, capsys):
    """The wheel's logs cut between 369 and 700 bytes made libdarshan-util segfault while reading in the
    benchmark's runs (pydarshan 3.5.0; whether it does depends on memory layout): whatever the reader child
    does, this process gets a log or one line, and the reader keeps serving."""
    from advisor.cli import main

    data = (darshan_examples / "ior_hdf5_example.darshan").read_bytes()
    outcomes = set()
    for cut in range(369, 700, 29):
        bad = tmp_path / f"cut{cut}.darshan"
        bad.write_bytes(data[:cut])
        try:
            read_raw(bad)
            outcomes.add("read")
        except DarshanError as exc:
            assert str(exc).startswith(str(bad)) and "\n" not in str(exc)
            outcomes.add("crashed" if "libdarshan-util crashed" in str(exc) else "error")
        assert main(["report", str(bad)]) in (0, 2)
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert len(err) <= 1
    assert read_raw(darshan_examples / "dxt.darshan").nprocs == 1  # the reader still serves
    print("outcomes:", sorted(outcomes))
