"""A finding's ``saves`` is what its fix recovers: misalignment on files that all sit on local file systems
recovers nothing (the page cache takes partial blocks; benchmarks/triage_confirm.py measures it), elsewhere
the seconds at stake (or DXT's modelled saving). The file system comes from the log's own mount table."""
import shutil

from advisor.triage.logrow import RowOptions, summarize_many
from advisor.triage.recover import LOCAL_FS, recovers
from instrumentation.darshan import to_parser_text
from instrumentation.darshan_raw import RawLog, read_parser_text, read_raw


def _log(mounts):
    return RawLog("x", "", 1, 0.0, 1.0, "", "", {}, {}, mounts=tuple(mounts))


def test_file_system_is_the_longest_mount_point():
    log = _log([("/", "ext4"), ("/scratch", "lustre"), ("/scratch/tmp", "tmpfs")])
    assert log.fs_type("/scratch/u/a.h5") == "lustre"
    assert log.fs_type("/scratch/tmp/a.h5") == "tmpfs"
    assert log.fs_type("/scratchy/a.h5") == "ext4"
    assert _log([]).fs_type("/a") == ""


def test_misalignment_recovers_nothing_only_where_every_file_is_local():
    fs = {"/home/a": "ext4", "/lus/b": "lustre"}.get
    assert recovers("P08", 2.0, None, ("/home/a",), lambda n: fs(n, "")) == 0.0
    assert recovers("P08", 2.0, None, ("/home/a", "/lus/b"), lambda n: fs(n, "")) == 2.0
    assert recovers("P08", 2.0, None, ("/x",), lambda n: "") == 2.0  # unknown: the seconds at stake
    assert recovers("P05", 2.0, None, ("/home/a",), lambda n: fs(n, "")) == 2.0
    assert recovers("P08", 2.0, 0.5, ("/lus/b",), lambda n: fs(n, "")) == 0.5  # DXT's model
    assert "ext4" in LOCAL_FS and "lustre" not in LOCAL_FS


def test_real_logs_mount_tables_decide_the_misalignment_saving(darshan_examples, tmp_path):
    rows, raws = [], []
    for p in sorted(darshan_examples.glob("*.darshan")):
        shutil.copy(p, tmp_path / p.name)
        raws.append(read_raw(tmp_path / p.name, dxt=False))
        rows.append(summarize_many([(str(tmp_path / p.name), "")], RowOptions(dxt=False))[0])
    assert any(r.mounts for r in raws)
    seen = 0
    for raw, row in zip(raws, rows):
        for x in row["findings"]:
            if x["code"] == "P08":
                seen += 1
                assert x["saves"] == x["seconds"]  # these centres' logs: Lustre/GPFS scratch, not local
    assert seen
    text = tmp_path / "ior.txt"
    text.write_text(to_parser_text(str(darshan_examples / "ior_hdf5_example.darshan")))
    assert read_parser_text(str(text)).mounts  # darshan-parser's per-line mount point and type
