"""``ioadvisor report LOG``: every log gets a report; findings carry codes, thresholds and seconds at stake."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.darshan_findings import THRESHOLDS, find
from advisor.darshan_report import LogReport, report_darshan
from instrumentation.darshan_files import FileIO, InterfaceIO, LogFiles

ROOT = Path(__file__).resolve().parents[2]


def test_log_without_h5d_reports_files_and_findings(darshan_examples, capsys):
    log = darshan_examples / "example.darshan"  # VPIC-IO: POSIX, MPI-IO, STDIO; no H5D
    assert main(["report", str(log), "--no-files"]) == 0
    out = capsys.readouterr().out
    assert "hdf5    /scratch2/scratchdirs/glock/tokioabc-s.4478544/vpicio/vpicio.hdf5" in out
    assert "[P08] misaligned file offsets" in out and "H5Pset_alignment" in out
    assert "mpiexec -n 2048 ioadvisor run -o run.jsonl --" in out
    assert main(["report", str(log), "--json", "--no-files"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rep = LogReport.from_config(doc)
    assert rep.get_config() == doc
    p08 = next(f for f in rep.findings if f.code == "P08")
    assert 0 < p08.seconds <= rep.run_time and p08.seconds_from == "counter time share"


def test_html_written_once(darshan_examples, tmp_path, capsys):
    page = tmp_path / "r.html"
    assert main(["report", str(darshan_examples / "dxt.darshan"), "--html", str(page)]) == 0
    assert "<h2>Findings</h2>" in page.read_text() and "P05" in page.read_text()
    assert main(["report", str(darshan_examples / "dxt.darshan"), "--html", str(page)]) == 2
    assert "exists" in capsys.readouterr().err


def test_h5d_records_all_accounted_for(scalar_log, capsys):
    assert main(["report", str(scalar_log)]) == 0
    out = capsys.readouterr().out
    assert "test123.h5:/step: imported: scalar, 0 read(s), 1 write(s)" in out
    assert "test123.h5:/unused: not imported: opened, never read or written" in out
    assert "test123.h5:/Dataset-0000.0000: imported: 1-D" in out


def _files(reads: int, small: int, seconds: float = 10.0) -> LogFiles:
    sizes = (0, 0, 0, 0, small, reads - small, 0, 0, 0, 0)
    io = InterfaceIO("POSIX", reads=reads, read_time=seconds, read_sizes=sizes, seq_reads=reads,
                     rank_seconds={0: seconds}, rank_bytes={0: 1})
    return LogFiles("x.darshan", "a.out", 1, 100.0, "3.4.0", {"POSIX": 4}, {}, (FileIO("/d/f.h5", "hdf5", (),
                                                                                         {"POSIX": io}),))


@pytest.mark.parametrize("reads, small, fires", [(2000, 1900, True), (2000, 150, False), (1500, 900, False)])
def test_small_read_threshold_is_share_and_count(reads, small, fires):
    found = {f.code: f for f in find(_files(reads, small))}
    assert ("P05" in found) == fires
    if fires:  # 10 s of reads, 95% of them small: 9.5 s at stake on the one rank
        assert found["P05"].seconds == pytest.approx(10.0 * small / reads)
        assert str(THRESHOLDS["small_count"]) in found["P05"].threshold
        assert any("H5Pset_chunk_cache" in a for a in found["P05"].advice)  # the file is HDF5


def test_empty_log_is_one_line(tmp_path):
    from instrumentation.darshan_raw import DarshanError

    empty = tmp_path / "e.txt"
    empty.write_text("# darshan log version: 3.41\n# nprocs: 1\n")
    with pytest.raises(DarshanError, match="no I/O to report"):
        report_darshan(empty)


def _variants(data: bytes):
    yield data[:len(data) // 3]
    for k, pos in enumerate((40, 200, len(data) // 2, len(data) - 50)):
        b = bytearray(data)
        b[pos] ^= 0x5A
        yield bytes(b)


@pytest.mark.parametrize("command", ["report", "import"])
def test_corrupt_logs_exit_with_one_line_never_a_crash(darshan_examples, tmp_path, command):
    data = (darshan_examples / "ior_hdf5_example.darshan").read_bytes()
    for k, variant in enumerate(_variants(data)):
        log = tmp_path / f"v{k}.darshan"
        log.write_bytes(variant)
        argv = ["report", str(log)] if command == "report" else ["import", "darshan", str(log), "-o",
                                                                  str(tmp_path / f"v{k}.jsonl")]
        p = subprocess.run([sys.executable, "-m", "advisor", *argv], cwd=tmp_path, capture_output=True, text=True)
        assert 0 <= p.returncode < 128, p.stderr
        if p.returncode:
            lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
            assert len(lines) == 1 and str(log) in lines[0], p.stderr
    assert not list(tmp_path.glob("core*"))


def test_dxt_offsets_replayed_through_the_file_level_model(darshan_examples, capsys):
    log = darshan_examples / "dxt.darshan"  # DXT_POSIX segments: every read's and write's offset and length
    assert main(["report", str(log), "--no-files", "--json"]) == 0
    rep = LogReport.from_config(json.loads(capsys.readouterr().out))
    modelled = [f for f in rep.findings if f.modelled is not None]
    assert {f.code for f in modelled} >= {"P05", "P06"}
    for f in modelled:
        assert 0 <= f.modelled <= f.replayed and f.replayed > 0
    # findings the model does not replay keep the log's time only
    assert all(f.modelled is None for f in rep.findings if f.code not in ("P05", "P06", "P08", "P11", "P13"))
    assert main(["report", str(log), "--no-files"]) == 0
    out = capsys.readouterr().out
    p05 = next(f for f in modelled if f.code == "P05")
    assert (f"at stake: {p05.seconds:.3g} s (DXT segment times); modelled: {p05.modelled:.3g} s of "
            f"{p05.replayed:.3g} s replayed") in out
