"""``read_raw_many``: a batch of logs read by one crash-isolated child gives every intact log what ``read_raw``
gives it alone, even when damaged logs in the batch crash libdarshan-util (while read, when freed, or by
leaving it broken for the next log). Damaged logs read or fail one by one: reading truncated compressed data
is undefined behaviour in libdarshan-util, so whether a given one crashes varies from run to run."""
import shutil

from instrumentation.darshan_raw import DarshanError, read_raw, read_raw_many


def _outcome(r):
    return (r.nprocs, r.job_id, r.run_time, tuple(sorted(r.modules)), sum(len(m.ids) for m in r.modules.values()),
            len(r.dxt))


def test_damaged_logs_never_take_an_intact_one_with_them(darshan_examples, tmp_path):
    paths, intact = [], []
    for p in sorted(darshan_examples.glob("*.darshan")):
        data = p.read_bytes()
        for frac in (3, 6):  # cut short, as a crashed job or a full disk leaves a log
            cut = tmp_path / f"cut{frac}_{p.name}"
            cut.write_bytes(data[: len(data) * frac // 10])
            paths.append(cut)
        shutil.copy(p, tmp_path / p.name)
        paths.append(tmp_path / p.name)
        intact.append(len(paths) - 1)
    paths.append(tmp_path / "missing.darshan")
    batch = read_raw_many(paths)
    assert len(batch) == len(paths)
    for i in intact:
        assert not isinstance(batch[i], DarshanError), batch[i]
        assert _outcome(batch[i]) == _outcome(read_raw(paths[i]))
    for r in batch:
        assert not isinstance(r, DarshanError) or "\n" not in str(r)
    assert isinstance(batch[-1], DarshanError) and "no such file" in str(batch[-1])
