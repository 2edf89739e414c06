"""The object-store model: seconds of a batch of HTTP range requests to an S3-compatible store.

A third storage model beside the local one (``cost``/``variables``) and the parallel one (``parallel``).
Terms follow the cloud-storage analyses (Durner, Leis, Neumann, *Exploiting Cloud Object Storage for
High-Performance Analytics*, VLDB 2023: latency-bound small requests, bandwidth-bound large ones, throughput
from requests in flight): ``n`` requests of ``s`` bytes, ``k`` of them in flight (k <= min(n, k_max)), cost

    t = (n / k) * L + n * c_req + n * s / B_agg + (n / k) * s / B_req

latency overlaps across the requests in flight, the client's CPU per request and the bytes all requests share
(network, server, client copies) do not, and one request's own stream adds its bytes at B_req. Linear in the
four coefficients: fitted by non-negative least squares on relative error. Reads that depend on each other
(HDF5 metadata before data, a shard index before its chunks, unconsolidated zarr metadata) are ``rounds`` of
their own (k = 1).

How the libraries turn array accesses into requests (``requests_*`` helpers) is counted by the object-store
advice (``advisor.objectstore``); fitted by ``iomodel.objectstore_calibrate`` (``ioadvisor calibrate --store``).
Pure computation: no client library is imported here.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from instrumentation.errors import IoadvisorError

STORES_SECTION = "stores"
"""Top-level section of a profile file holding the object-store models, keyed by ``store_key``."""


class StoreProfileError(IoadvisorError, ValueError):
    """An object-store section cannot be read; one line naming file and field."""


def store_key(host: str, url: str) -> str:
    """The key of a store in a profile: endpoint host and bucket (``127.0.0.1:8333/bucket``; ``s3/bucket``
    for the provider's default endpoint)."""
    rest = url.split("://", 1)[-1]
    bucket = rest.split("/", 1)[0]
    return f"{host or url.split('://', 1)[0]}/{bucket}"


@dataclass(frozen=True)
class ObjectStoreModel:
    """Fitted coefficients of one store, seen from this client."""

    ttfb: float
    """L: seconds from sending a request to its first byte (latency plus the server's first-byte time)."""
    request_bandwidth: float
    """B_req: bytes per second of one request's own stream (``UNLIMITED`` when the fit finds no such limit)."""
    aggregate_bandwidth: float
    """B_agg: bytes per second all requests share (network, server, the client's copies)."""
    request_cpu: float = 0.0
    """c_req: client seconds per request that do not overlap with others (signing, parsing, event loop)."""
    zarr_call: float = 0.0
    """Seconds zarr spends per read call through its FsspecStore beyond the requests (its event-loop hand-over,
    codec pipeline, Python per chunk); 0: not measured."""
    reference_call: float = 0.0
    """Seconds a read call through a virtual Zarr reference (fsspec's ``reference://`` filesystem under zarr) takes
    beyond the model's price of its ranged GET; 0: not measured."""
    max_inflight: int = 10
    """Requests in flight beyond which throughput no longer grows (the client's connection pool: botocore's
    ``max_pool_connections`` is 10 unless configured)."""
    fitted: dict = field(default_factory=dict, compare=False)
    """How it was fitted: endpoint host, grid, median |error| on the fitting points."""

    def __post_init__(self) -> None:
        for name in ("ttfb", "request_bandwidth", "aggregate_bandwidth", "request_cpu", "zarr_call", "reference_call"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
                raise StoreProfileError(f"field '{name}' must be a finite number >= 0, got {v!r}")
        if self.request_bandwidth <= 0 or self.aggregate_bandwidth <= 0:
            raise StoreProfileError("fields 'request_bandwidth' and 'aggregate_bandwidth' must be > 0")
        if not isinstance(self.max_inflight, int) or self.max_inflight < 1:
            raise StoreProfileError(f"field 'max_inflight' must be an integer >= 1, got {self.max_inflight!r}")

    def seconds(self, n: float, size: float, inflight: float = 1) -> float:
        """Seconds of ``n`` requests of ``size`` bytes with at most ``inflight`` in flight."""
        return sum(self.terms(n, size, inflight).values())

    def terms(self, n: float, size: float, inflight: float = 1) -> dict[str, float]:
        """``seconds`` split by term: first byte (latency), transfer (bandwidth), client (CPU per request)."""
        if n <= 0:
            return {"first byte": 0.0, "transfer": 0.0, "client": 0.0}
        k = max(1.0, min(float(inflight), float(n), self.max_inflight))
        return {"first byte": n / k * self.ttfb,
                "transfer": n * size / self.aggregate_bandwidth + n / k * size / self.request_bandwidth,
                "client": n * self.request_cpu}

    def batch(self, sizes, inflight: float = 1) -> float:
        """Seconds of requests of the given sizes issued together, at most ``inflight`` in flight (their mean
        size stands for each)."""
        sizes = list(sizes)
        if not sizes:
            return 0.0
        return self.seconds(len(sizes), sum(sizes) / len(sizes), inflight)

    def rounds(self, n_rounds: int, size: float = 4096) -> float:
        """Seconds of ``n_rounds`` dependent small requests (each waits for the previous one)."""
        return self.seconds(n_rounds, size, 1)

    def get_config(self) -> dict:
        return asdict(self)

    @classmethod
    def from_config(cls, config: dict) -> "ObjectStoreModel":
        if not isinstance(config, dict):
            raise StoreProfileError("an object-store model must be a JSON object")
        known = {"ttfb", "request_bandwidth", "aggregate_bandwidth", "request_cpu", "zarr_call", "reference_call",
                 "max_inflight",
                 "fitted"}
        missing = {"ttfb", "request_bandwidth", "aggregate_bandwidth"} - set(config)
        if missing:
            raise StoreProfileError(f"missing field '{sorted(missing)[0]}'")
        unknown = set(config) - known
        if unknown:
            raise StoreProfileError(f"unknown field '{sorted(unknown)[0]}'")
        return cls(**config)


UNLIMITED = 1e12
"""A bandwidth the fit found no limit of (bytes per second; JSON has no infinity)."""


def fit(points, pools=(2, 4, 8, 10, 16, 32, 64)) -> ObjectStoreModel:
    """Non-negative least squares on relative error over measured ``(n, size, inflight, seconds)`` points; the
    connection pool (``max_inflight``) is the best of ``pools`` by median |error|."""
    import numpy as np

    from iomodel.nnls import nnls

    pts = np.asarray([(n, s, k, t) for n, s, k, t in points], np.float64)
    if len(pts) < 5 or (pts[:, 3] <= 0).any():
        raise StoreProfileError("need at least 5 measured points with positive times to fit an object-store model")
    n, s, k_asked, t = pts.T
    best = None
    for pool in pools:
        k = np.maximum(1, np.minimum(np.minimum(k_asked, n), pool))
        x = np.stack([n / k, n, n * s, n / k * s], 1)
        coef, _ = nnls(x / t[:, None], np.ones(len(t)))
        err = float(np.median(np.abs(x @ coef / t - 1)))
        if best is None or err < best[0] - 1e-9:
            best = (err, pool, coef)
    err, pool, (lat, cpu, per_byte, per_stream_byte) = best
    inv = lambda c: float(min(UNLIMITED, 1 / c)) if c > 0 else UNLIMITED  # noqa: E731
    return ObjectStoreModel(float(lat), inv(per_stream_byte), inv(per_byte), float(cpu), max_inflight=int(pool),
                            fitted={"points": int(len(pts)), "median_abs_error": err})


def load_stores(path: str | os.PathLike) -> dict[str, ObjectStoreModel]:
    """The object-store models of a profile file, by ``store_key`` (empty if it has none)."""
    p = Path(path)
    if not p.exists():
        return {}
    try:
        doc = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise StoreProfileError(f"{p}: not a readable JSON profile ({exc})") from None
    section = doc.get(STORES_SECTION, {}) if isinstance(doc, dict) else {}
    if not isinstance(section, dict):
        raise StoreProfileError(f"{p}: field '{STORES_SECTION}' must be an object {{store: model}}")
    out = {}
    for key, config in section.items():
        try:
            out[key] = ObjectStoreModel.from_config(config)
        except (StoreProfileError, TypeError) as exc:
            raise StoreProfileError(f"{p}: field '{STORES_SECTION}.{key}': {exc}") from None
    return out


def save_store(path: str | os.PathLike, key: str, model: ObjectStoreModel) -> None:
    """Add or replace store ``key``'s model in the profile file ``path``, keeping every other section."""
    p = Path(path)
    doc: dict = {"schema": 1}
    if p.exists():
        try:
            doc = json.loads(p.read_text())
        except json.JSONDecodeError:
            raise StoreProfileError(f"{p}: existing file is not JSON; refusing to overwrite it") from None
        if not isinstance(doc, dict):
            raise StoreProfileError(f"{p}: existing file is not a profile object; refusing to overwrite it")
    doc.setdefault(STORES_SECTION, {})[key] = model.get_config()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, p)


def model_for(stores: dict[str, ObjectStoreModel], host: str, url: str) -> ObjectStoreModel | None:
    """The model of the store holding ``url`` at ``host``: its bucket's, else any of the same host."""
    key = store_key(host, url)
    if key in stores:
        return stores[key]
    prefix = key.split("/", 1)[0] + "/"
    same_host = [m for k, m in stores.items() if k.startswith(prefix)]
    return same_host[0] if same_host else None


__all__ = ["ObjectStoreModel", "STORES_SECTION", "StoreProfileError", "UNLIMITED", "fit", "load_stores", "model_for",
           "save_store", "store_key"]
