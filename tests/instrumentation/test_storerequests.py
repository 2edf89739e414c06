"""The store request log beside a trace (instrumentation/storerequests.py): its helpers and its errors."""
from __future__ import annotations

import pytest

from instrumentation.storerequests import StoreRequest, byte_range, endpoint_host, load_requests, log_path


def test_endpoint_host_drops_credentials():
    assert endpoint_host("http://user:s3cr3t@minio.example:9000/path") == "minio.example:9000"
    assert endpoint_host("https://s3.amazonaws.com") == "s3.amazonaws.com"
    assert endpoint_host(None) == ""


def test_byte_range_is_half_open():
    assert byte_range("bytes=10-19") == (10, 20)
    assert byte_range(None) == (0, -1)
    assert byte_range("bytes=5-") == (5, -1)


def test_log_round_trip_in_time_order(tmp_path):
    trace = tmp_path / "run.parquet"
    recs = [StoreRequest("GET", "s3://b/k", "h:1", 0, 10, 10, t0, 0.01, 0.02, 1, 7) for t0 in (0.5, 0.1)]
    log_path(trace).write_text("".join(r.to_json() + "\n" for r in recs))
    cols = load_requests(trace)
    assert cols["t0"].tolist() == [0.1, 0.5] and cols["nbytes"].tolist() == [10, 10]
    assert load_requests(tmp_path / "other.parquet")["op"].size == 0


def test_a_bad_line_names_file_and_line(tmp_path):
    trace = tmp_path / "t.jsonl"
    rec = StoreRequest("GET", "s3://b/k", "", 0, -1, 3, 0.0, 0.0, 0.0, 1, 1)
    log_path(trace).write_text(rec.to_json() + "\n" + '{"t": "q", "op": "GET"}\n')
    with pytest.raises(ValueError, match=r"t\.jsonl\.requests\.jsonl:2: not a store request record"):
        load_requests(trace)
