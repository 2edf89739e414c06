"""The test server and the delaying proxy (benchmarks/helpers/s3local.py): a real S3 round trip, and the proxy adds
the delay it is set to per request."""
from __future__ import annotations

import time


def _fs(endpoint: str):
    import s3fs

    return s3fs.S3FileSystem(key="k", secret="s", client_kwargs={"endpoint_url": endpoint}, skip_instance_cache=True)


def test_server_stores_and_returns_bytes(s3_server):
    fs = _fs(s3_server.url)
    fs.mkdir("roundtrip")
    fs.pipe("roundtrip/x", b"0123456789" * 1000)
    assert fs.cat_file("roundtrip/x", start=10, end=25) == b"0123456789012345"[:15]


def test_proxy_adds_its_delay_per_request(s3_server, s3_proxy):
    fs = _fs(s3_server.url)
    fs.mkdir("delay")
    fs.pipe("delay/x", b"x" * 100_000)
    via = _fs(s3_proxy.url)
    times = {}
    for delay in (0.0, 0.08, 0.0, 0.08):  # ABAB: the machine is shared
        s3_proxy.delay = delay
        via.cat_file("delay/x", start=0, end=1000)  # a connection in the pool first
        t = time.perf_counter()
        for _ in range(5):
            assert via.cat_file("delay/x", start=0, end=1000) == b"x" * 1000
        times.setdefault(delay, []).append((time.perf_counter() - t) / 5)
    added = min(times[0.08]) - min(times[0.0])
    assert 0.07 < added < 0.2, times
