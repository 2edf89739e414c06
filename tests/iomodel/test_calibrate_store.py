"""``ioadvisor calibrate --store``: fits the object-store model on a real S3 server behind the delaying proxy,
removes its scratch prefix, keeps one model per store in the profile and never writes a credential."""
from __future__ import annotations

import json

import pytest

from advisor.cli import main
from iomodel.objectstore import load_stores


def test_calibrate_store_fits_the_added_latency_and_cleans_up(tmp_path, s3_server, s3_proxy, capsys):
    import s3fs

    fs = s3fs.S3FileSystem(**s3_server.storage_options(), skip_instance_cache=True)
    fs.mkdir("calib")
    fs.pipe("calib/p/keep.txt", b"the user's object")
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"schema": 1, "io": {"kept": True}}))
    opts = json.dumps({"key": "k", "secret": "s3cr3t-not-in-profiles"})
    fitted = {}
    for delay in (0.08, 0.0):
        s3_proxy.delay = delay
        host = f"127.0.0.1:{s3_proxy.port}" if delay else f"127.0.0.1:{s3_server.port}"
        assert main(["calibrate", "--store", "s3://calib/p", "--endpoint-url", f"http://{host}", "--quick",
                     "--storage-options", opts, "-o", str(profile)]) == 0
        fitted[delay] = load_stores(profile)[f"{host}/calib"]
    stores = load_stores(profile)
    assert len(stores) == 2  # a profile holds several stores
    assert fitted[0.08].ttfb > 0.05 and fitted[0.0].ttfb < 0.05  # the proxy's 80 ms is latency, not bandwidth
    assert {m.max_inflight for m in stores.values()} == {10}  # botocore's pool, at either latency
    text = profile.read_text()
    assert "s3cr3t" not in text and json.loads(text)["io"] == {"kept": True}
    fs.invalidate_cache()
    assert fs.ls("calib/p") == ["calib/p/keep.txt"]  # the scratch prefix is gone, the user's object kept


@pytest.mark.parametrize("argv, says", [
    (["--store", "/tmp/x"], "not an object-store URL"),
    (["--store", "s3://b/p", "--storage-options", "{nope"], "--storage-options: not JSON"),
])
def test_calibrate_store_bad_input_is_one_line(tmp_path, capsys, argv, says):
    assert main(["calibrate", *argv, "-o", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_connection_pool_is_the_clients_not_fitted():
    """botocore's pool (10 unless ``config_kwargs`` says otherwise) caps s3fs's requests in flight; the quick grid
    cannot tell 4, 10 and 16 apart at short first bytes, so calibration reads it instead of fitting it."""
    from iomodel.objectstore_calibrate import connection_pool

    assert connection_pool("s3://b/p", {}) == 10
    assert connection_pool("s3://b/p", {"config_kwargs": {"max_pool_connections": 32}}) == 32
    assert connection_pool("gs://b/p", {}) is None  # another client: fitted
