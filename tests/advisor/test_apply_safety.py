"""``ioadvisor apply`` is safe: the source is never changed, nothing half-written appears under the final
name, a killed run resumes from its journal, errors are one line."""
import hashlib
import json
import resource
import signal
import subprocess
import time

import numpy as np
import pytest

from advisor.apply.journal import Journal
from tests.advisor.conftest import IOADVISOR, apply_cli, trace_program, write_netcdf


def sha1(path):
    return hashlib.sha1(path.read_bytes()).hexdigest()


def assert_equal_arrays(a, b):
    import h5py

    with h5py.File(a, "r") as x, h5py.File(b, "r") as y:
        for name in ("tas", "time", "lat", "lon"):
            assert np.array_equal(x[name][...].view(np.uint8), y[name][...].view(np.uint8))


@pytest.fixture
def big_case(tmp_path):
    src, trace = tmp_path / "big.nc", tmp_path / "big.jsonl"
    write_netcdf(src, nt=600, ny=36, nx=72)  # 6 MB; with 1MiB of memory: two passes of about 50 blocks each
    trace_program(src, trace)
    return src, trace


LAYOUT = ["--dataset", "tas", "--layout", "hdf5:chunks=600x2x2,codec=none", "--max-memory", "1MiB", "--json"]


def test_resume_after_sigkill_redoes_no_finished_block(big_case, tmp_path):
    src, trace = big_case
    before = sha1(src)
    dest = tmp_path / "out.nc"
    journal = tmp_path / "out.nc.ioadvisor-partial" / "journal.jsonl"
    proc = subprocess.Popen([str(IOADVISOR), "apply", str(trace), "--out", str(dest), *LAYOUT],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_text().count('"kind": "block"') >= 3:
            break
        time.sleep(0.002)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not dest.exists() and sha1(src) == before
    finished = journal.read_text().count('"kind": "block"')
    r = apply_cli(trace, "--out", dest, *LAYOUT)
    assert r.returncode == 0, r.stderr
    tas = next(a for a in json.loads(r.stdout)["arrays"] if a["path"] == "/tas")
    assert tas["blocks_resumed"] == finished >= 3
    assert sha1(src) == before
    assert_equal_arrays(src, dest)
    assert not journal.parent.exists()


def test_journal_ignores_a_line_cut_by_a_kill(tmp_path):
    j, resumed = Journal.open(tmp_path, {"source": "x"})
    j.record({"kind": "block", "array": "/a", "stage": 0, "block": 0})
    j.close()
    with open(tmp_path / "journal.jsonl", "a") as fh:
        fh.write('{"kind": "block", "array": "/a", "sta')
    j2, resumed = Journal.open(tmp_path, {"source": "x"})
    assert resumed and set(j2.blocks_done("/a", 0)) == {0}
    j3, resumed = Journal.open(tmp_path, {"source": "y"})  # another run's journal is not resumed
    assert not resumed and j3.entries == []


def test_in_place_swaps_after_verification_and_keeps_a_backup(netcdf_case, tmp_path):
    import h5py

    src, trace, _ = netcdf_case
    original = src.read_bytes()
    r = apply_cli(trace, "--in-place", "--dataset", "tas", "--layout", "hdf5:chunks=24x6x6,codec=gzip")
    assert r.returncode == 0, r.stderr
    backup = src.with_name(src.name + ".ioadvisor-backup")
    assert backup.read_bytes() == original
    with h5py.File(src, "r") as f:
        assert f["tas"].chunks == (24, 6, 6)
    assert_equal_arrays(backup, src)


def test_in_place_without_backup(netcdf_case):
    src, trace, _ = netcdf_case
    r = apply_cli(trace, "--in-place", "--no-backup", "--dataset", "tas", "--layout", "hdf5:chunks=24x6x6")
    assert r.returncode == 0, r.stderr
    assert not src.with_name(src.name + ".ioadvisor-backup").exists() and src.exists()


def test_existing_dest_is_never_overwritten(netcdf_case, tmp_path):
    src, trace, _ = netcdf_case
    dest = tmp_path / "taken.nc"
    dest.write_bytes(b"someone's data")
    r = apply_cli(trace, "--out", dest, "--dataset", "tas", "--layout", "hdf5:chunks=24x6x6")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "exists" in r.stderr
    assert dest.read_bytes() == b"someone's data"


def test_unwritable_dest_is_one_line(netcdf_case, tmp_path):
    src, trace, _ = netcdf_case
    (tmp_path / "file").write_text("not a directory")
    for dest in (tmp_path / "no" / "such" / "x.nc", tmp_path / "file" / "x.nc"):
        r = apply_cli(trace, "--out", dest, "--dataset", "tas", "--layout", "hdf5:chunks=24x6x6")
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


def test_disk_full_leaves_nothing_under_the_final_name(big_case, tmp_path):
    src, trace = big_case
    dest = tmp_path / "full.nc"

    def small_disk():  # writes past 2 MB fail with EFBIG, as on a full disk (Python ignores SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2 << 20, 2 << 20))

    r = subprocess.run([str(IOADVISOR), "apply", str(trace), "--out", str(dest), *LAYOUT], capture_output=True,
                       text=True, timeout=300, preexec_fn=small_disk)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert not dest.exists()


def test_unreadable_source_is_one_line(netcdf_case, tmp_path):
    src, trace, _ = netcdf_case
    data = src.read_bytes()
    src.write_bytes(data[: len(data) // 2])  # cut: the data chunks at the end cannot be read
    dest = tmp_path / "x.nc"
    r = apply_cli(trace, "--out", dest, "--dataset", "tas", "--layout", "hdf5:chunks=24x6x6")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert not dest.exists()


@pytest.mark.parametrize("layout", [["--layout", "hdf5:chunks=24x6x6"], []], ids=["layout", "advice"])
def test_in_place_killed_between_its_renames_is_finished_by_a_rerun(netcdf_case, tmp_path, layout):
    """Also without --layout: the rerun finishes before advising (the advice would read the moved source)."""
    import h5py

    src, trace, _ = netcdf_case
    args = ["--dataset", "tas", *layout]
    done = tmp_path / "done.nc"
    assert apply_cli(trace, "--out", done, *args).returncode == 0
    with h5py.File(done, "r") as f:
        made = f["tas"].chunks  # without --layout, the advice may keep the source's chunks on this small array
    # the state a kill leaves after ``source -> backup`` and before ``copy -> source``
    work = src.with_name(src.name + ".ioadvisor-partial")
    work.mkdir()
    done.rename(work / "copy.h5")
    (work / "journal.jsonl").write_text('{"header": {}}\n{"kind": "complete"}\n')
    backup = src.with_name(src.name + ".ioadvisor-backup")
    src.rename(backup)
    r = apply_cli(trace, "--in-place", *args)
    assert r.returncode == 0, r.stderr
    with h5py.File(src, "r") as f, h5py.File(backup, "r") as g:
        assert f["tas"].chunks == made  # the first run's copy, moved into place by the rerun
        assert not layout or (made == (24, 6, 6) and f["tas"].chunks != g["tas"].chunks)
    assert backup.exists() and not work.exists()
    assert_equal_arrays(backup, src)
