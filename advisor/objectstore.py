"""Advice that stays on the object store holding the data (issue #35).

For an array whose trace names it by a URL (``s3://bucket/key``), the candidates are layouts on the same store,
priced by the object-store model (``iomodel.objectstore``) from the requests each would send for the traced
accesses: Zarr with MB-sized chunks, with shards (the chunk is the read unit, the shard the write unit; a
read covering a whole shard is one request, a partial one reads the shard index first), HDF5 read through
fsspec with a block size and cache type (``h5py.File(fs.open(url, block_size=..., cache_type=...))``) and
with paged aggregation (``fs_strategy="page"``: metadata in a few pages instead of small reads scattered over
the file). Another storage is priced only when the user names it (``--target``).

The store's model comes from the profile (``ioadvisor calibrate --store``), else from the trace's own request
log (``instrumentation.storerequests``): time to first byte and bandwidth of the requests the program sent.
Stored bytes per chunk follow the compression the program's own requests show (bytes fetched per chunk key
over its raw size); other compressors come from a sample of the data read where it is
(``advisor.objectstore_codecs``) and are priced with their estimated ratio.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from advisor import objectstore_reference as reference
from advisor.objectstore_http import as_s3, reads_directly
from advisor.objectstore_tiles import follows_chunks
from instrumentation.errors import InputError
from iomodel.objectstore import ObjectStoreModel

STORE_SCHEMES = ("s3", "gs", "gcs", "az", "abfs", "http", "https")
ZARR_CONCURRENCY = 10
"""zarr 3's ``async.concurrency`` default: chunk requests of one call in flight together."""
FSSPEC_BLOCK = 50 * 2**20
"""s3fs's default block size (``S3FileSystem.default_block_size``) with its default ``readahead`` cache."""
HDF5_OPEN_READS = (8, 48, 48, 512, 512, 544, 328, 512, 2616)
"""The small reads h5py 3.16 (HDF5 2.0) makes through a file object before a dataset's first chunk, in the first
4 KiB of a non-paged file (superblock, root group, dataset header, ...; seen in the request log of
tests/objectstore/test_capture_s3.py's file). Dependent: one round each unless a cache serves them."""
OPEN_ROUNDS = {"hdf5": 1, "zarr": 1}
"""Requests before the first read: fsspec's ``info`` (HEAD) of an HDF5 file; Zarr's consolidated metadata."""
BTREE_FANOUT = 64
"""Chunks per v1 B-tree leaf (K = 32 by default: 2K entries)."""
MiB = 2**20
KEEP_MARGIN = 0.10
"""A layout ranks before the current one only when predicted faster by more than the store model's own error: the
median |error| of its fit (``calibrate --store``), else this share (a model fitted on the trace's requests). A
change the model cannot resolve costs a rewrite for nothing (benchmarks/validation/objectstore.py workloads: at
0 ms, where the fit's error is 9-14%, fsspec settings and paged layouts predicted within a few percent of the
current ones ran 1.4-2x slower)."""


def on_store(url: str) -> bool:
    """Whether ``url`` names data on an object store (not a local path, not memory://)."""
    return "://" in url and url.split("://", 1)[0].lower() in STORE_SCHEMES


@dataclass(frozen=True)
class StoreLayout:
    """A layout on the store: the library, chunks (None: HDF5 contiguous), Zarr shards, HDF5 access through
    fsspec (block size, cache type) and paged aggregation."""

    library: str
    chunks: tuple[int, ...] | None
    shards: tuple[int, ...] | None = None
    block_size: int = FSSPEC_BLOCK
    cache_type: str = "readahead"
    paged: bool = False
    page_size: int = 256 * 1024
    codec: str | None = None
    """A compressor of the codec search on the store (``advisor.objectstore_codecs``; "none": uncompressed); None:
    the stored bytes per chunk the traced requests show."""
    error_bound: str | None = None

    def describe(self) -> str:
        ch = "contiguous" if self.chunks is None else "x".join(map(str, self.chunks))
        if self.library == reference.REFERENCE:
            return reference.describe(self.chunks)
        if self.library == "zarr":
            codec = f", {self.codec}" + (f"({self.error_bound})" if self.error_bound else "") if self.codec else ""
            return f"zarr chunks {ch}" + (f", shards {'x'.join(map(str, self.shards))}" if self.shards else "") + codec
        out = f"hdf5 chunks {ch}, fsspec {self.cache_type} block {_size(self.block_size)}"
        return out + (f", paged {_size(self.page_size)} pages" if self.paged else "")

    def code(self, url: str) -> str:
        """How to write (Zarr) or open (HDF5, a reference to it) it on the store."""
        if self.library == reference.REFERENCE:
            return reference.code(url)
        if self.library == "zarr":
            shards = f", shards={self.shards}" if self.shards else ""
            codec = "" if not self.codec else ", compressors=None" if self.codec == "none" else \
                f", **get_codec({self.codec!r}{', ' + repr(self.error_bound) if self.error_bound else ''}).zarr_codecs()"
            return (f'zarr.create_array(zarr.storage.FsspecStore.from_url("{url}", storage_options=opts), '
                    f"shape=..., dtype=..., chunks={self.chunks}{shards}{codec}); zarr.consolidate_metadata(group)")
        paged = (f'h5py.File(tmp, "w", fs_strategy="page", fs_page_size={self.page_size}) (then upload); '
                 f'read with page_buf_size={4 * self.page_size}; ' if self.paged else "")
        return (f"{paged}h5py.File(fs.open(\"{url}\", block_size={self.block_size}, "
                f"cache_type=\"{self.cache_type}\"), \"r\")")

    def get_config(self) -> dict:
        return {"library": self.library, "chunks": self.chunks, "shards": self.shards, "block_size": self.block_size,
                "cache_type": self.cache_type, "paged": self.paged, "page_size": self.page_size, "codec": self.codec,
                "error_bound": self.error_bound}


@dataclass(frozen=True)
class StoreCandidate:
    """A layout's predicted seconds for the traced accesses, by term, and the requests it sends."""

    layout: StoreLayout
    seconds: float
    terms: dict = field(compare=False)
    requests: int = 0
    bytes_moved: int = 0


@dataclass(frozen=True)
class StoreAdvice:
    """The ranked layouts on the store for one traced array."""

    label: str
    url: str
    host: str
    current: StoreCandidate
    ranked: tuple[StoreCandidate, ...]
    model: ObjectStoreModel
    model_source: str
    ratio: float
    calls_in_flight: float
    traced_seconds: float = 0.0
    """The traced calls' wall time in the current layout (shown beside its predicted time, which is the model's)."""
    follows: object = field(default=None, compare=False)
    """The program's grid-following blocks (``objectstore_tiles.ChunkFollowing``), None when it has none."""

    @property
    def recommendation(self) -> StoreCandidate:
        return self.ranked[0]

    def render(self, top: int = 5) -> str:
        best = self.recommendation
        gain = self.current.seconds / best.seconds if best.seconds > 0 else 1.0
        lines = [f"Recommendation for {self.label} (on the object store {self.host or self.url.split('://')[0]}; "
                 f"stays there): {best.layout.describe()}, predicted {best.seconds:.2f} s against "
                 f"{self.current.seconds:.2f} s now ({gain:.1f}x)",
                 f"  store model ({self.model_source}): first byte {self.model.ttfb * 1e3:.1f} ms, "
                 f"{self.model.request_bandwidth / 1e6:.0f} MB/s per request, "
                 f"{self.model.aggregate_bandwidth / 1e6:.0f} MB/s in all; stored/raw {self.ratio:.2f}; "
                 f"{self.calls_in_flight:.1f} calls in flight; the traced calls took {self.traced_seconds:.2f} s",
                 f"  code: {best.layout.code(self.url)}"]
        for c in (self.current, *self.ranked[:top]):
            terms = ", ".join(f"{k} {v:.2f}" for k, v in c.terms.items() if v > 0.0005)
            mark = "now " if c is self.current else "    "
            lines.append(f"  {mark}{c.seconds:8.2f} s  {c.requests:7d} requests  {_size(c.bytes_moved):>9}  "
                         f"{c.layout.describe()}  ({terms})")
        return "\n".join(lines)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


# ------------------------------------------------------------------------------------------ traced accesses

def _boxes(cols, limit: int = 20000) -> tuple[list[list[np.ndarray]], np.ndarray, float]:
    """Per access (runs expanded, at most ``limit``; the rest weigh as their run's first): the element indices
    it selects along each dimension, whether it writes, and the weight of each (accesses it stands for)."""
    out, writes, weights = [], [], []
    step = max(1, int(np.ceil(cols.rep.sum() / limit)))
    for r in range(cols.rows):
        nd = int(cols.ndim[r])
        reps = int(cols.rep[r])
        for k in range(0, reps, step):
            dims = []
            for d in range(nd):
                s = int(cols.start[r, d] + k * cols.step[r, d])
                c, st, b = int(cols.count[r, d]), int(cols.stride[r, d]), int(cols.block[r, d])
                idx = (s + st * np.arange(c)[:, None] + np.arange(b)[None, :]).ravel() if b > 1 or c > 1 \
                    else np.array([s])
                dims.append(idx)
            out.append(dims)
            writes.append(bool(cols.write[r]))
            weights.append(min(step, reps - k))
    return out, np.asarray(writes), np.asarray(weights, np.float64)


def calls_in_flight(cols) -> float:
    """Mean traced calls in progress while any was (dask threads reading blocks together): their summed time over
    the time covered by their union. A run of ``rep`` calls (``dt``: its total) is busy from its first call's start
    to its last call's end (``t0 + (rep - 1) * t_step + dt / rep``), as ``iomodel.intrace.traced_seconds`` counts
    it: dask threads' alike block reads fold into one run whose total is several times its span."""
    if cols.rows == 0:
        return 1.0
    t0, t1 = cols.t0, cols.t0 + cols.t_step * (cols.rep - 1) + cols.dt / cols.rep
    order = np.argsort(t0)
    covered, end = 0.0, -np.inf
    for a, b in zip(t0[order], t1[order]):
        if a > end:
            covered += b - a
            end = b
        elif b > end:
            covered += b - end
            end = b
    return max(1.0, float(cols.dt.sum() / covered)) if covered > 0 else 1.0


# ---------------------------------------------------------------------------------------------- pricing

def _chunk_ids(dims, chunks, shape) -> list[np.ndarray]:
    return [np.unique(idx // c) for idx, c in zip(dims, chunks)]


def _price_zarr(boxes, writes, weights, layout, shape, itemsize, ratio, model, inflight, head_first=False) -> tuple:
    """Zarr through FsspecStore: each call sends its chunks' requests ``ZARR_CONCURRENCY`` at a time; ``inflight``
    calls at once (dask threads) share the client's connection pool, so a round of ``n`` requests per call is priced
    as ``inflight * n`` requests with ``inflight`` times the call's concurrency in flight, each call paying its share.
    Only the first byte overlaps: the bytes and the client's CPU per request add up across calls."""
    chunks = layout.chunks or tuple(shape)
    chunk_bytes = math.prod(chunks) * itemsize * ratio
    first = transfer = client = 0.0
    n_req = moved = 0.0
    calls = max(1.0, float(inflight))
    k = ZARR_CONCURRENCY
    for dims, w, weight in zip(boxes, writes, weights):
        ids = _chunk_ids(dims, chunks, shape)
        if layout.shards is None:
            sizes = [(math.prod(len(i) for i in ids), chunk_bytes)]
            rounds = [(sizes, k)]
            if head_first and not w:  # s3fs asks a whole object's size (HEAD) before its GET: a round more
                rounds = [([(sizes[0][0], 0)], k)] + rounds
            if w:  # a chunk not written whole is read first (read, merge, write)
                partial = any(len(np.unique(d)) < sum(min(c, s - i * c) for i in idc.tolist())
                              for d, idc, c, s in zip(dims, ids, chunks, shape))
                rounds = ([(sizes, k)] if partial else []) + [(sizes, k)]
        else:
            m = [s // c for s, c in zip(layout.shards, chunks)]
            n_full = n_part = 1
            inner = 1
            for d, (idc, md) in enumerate(zip(ids, m)):
                grid_d = math.ceil(shape[d] / chunks[d])
                sh, counts = np.unique(idc // md, return_counts=True)
                per_shard = np.minimum(md, grid_d - sh * md)
                full_d = counts == per_shard
                n_full *= int(full_d.sum())
                n_part *= len(sh)
                inner *= float(counts.mean())
            n_part -= n_full
            shard_bytes = chunk_bytes * math.prod(m)
            index = 16 * math.prod(m) + 4
            if w:  # the shard is the write unit: a partial shard is read whole, merged and written whole
                rounds = [([(n_part, shard_bytes)], k), ([(n_full + n_part, shard_bytes)], k)] if n_part else \
                    [([(n_full, shard_bytes)], k)]
            else:  # zarr 3.1 reads a partial shard's chunks one after another (sharding.py, _decode_partial_single):
                # shards in parallel, each shard's chunks serial
                rounds = [([(n_full, shard_bytes), (n_part, index)], k),
                          ([(n_part * inner, chunk_bytes)], max(1.0, min(k, n_part)))]
                if head_first and n_full:
                    rounds = [([(n_full, 0)], k)] + rounds
        for rnd, k_rnd in rounds:
            n = sum(x for x, _ in rnd)
            if n <= 0:
                continue
            size = sum(x * s for x, s in rnd) / n
            t = model.terms(calls * n, size, calls * min(k_rnd, n))
            first += weight * t["first byte"] / calls
            transfer += weight * t["transfer"] / calls
            client += weight * t["client"] / calls
            n_req += weight * n
            moved += weight * n * size
    meta = model.terms(OPEN_ROUNDS["zarr"], 4096, 1)
    terms = {"first byte": first + meta["first byte"], "transfer": transfer + meta["transfer"],
             "client": client + meta["client"], "zarr calls": float(weights.sum()) * (
                 model.reference_call if layout.library == reference.REFERENCE else model.zarr_call)}
    return terms, int(n_req), int(moved)


def _price_hdf5(boxes, writes, weights, layout, shape, itemsize, ratio, model, inflight, head_first=False) -> tuple:
    chunks = layout.chunks or tuple(shape)
    chunk_bytes = math.prod(chunks) * itemsize * ratio
    grid = [math.ceil(s / c) for s, c in zip(shape, chunks)]
    n_chunks = math.prod(grid)
    node_bytes = BTREE_FANOUT * 8 * (len(shape) + 2)
    requests: list[float] = []
    window = (-1.0, -1.0)  # the readahead cache's bytes [a, b)
    blocks: dict[int, None] = {}  # blockcache: the blocks held (LRU by insertion, 32 of them as fsspec keeps)
    data_base = node_bytes * math.ceil(n_chunks / BTREE_FANOUT) + 4096
    file_bytes = data_base + n_chunks * chunk_bytes

    def read(offset: float, nbytes: float, weight: float) -> None:
        nonlocal window
        if layout.cache_type == "none":
            requests.extend([nbytes] * int(round(weight)))
        elif layout.cache_type == "readahead":
            if window[0] <= offset and offset + nbytes <= window[1]:
                return
            size = min(nbytes + layout.block_size, file_bytes - offset)  # fsspec stops at the end of the file
            window = (offset, offset + size)
            requests.extend([size] * int(round(weight)))
        else:  # blockcache
            b = layout.block_size
            for blk in range(int(offset // b), int((offset + nbytes - 1) // b) + 1):
                if blk in blocks:
                    continue
                blocks[blk] = None
                if len(blocks) > 32:
                    blocks.pop(next(iter(blocks)))
                requests.extend([b] * int(round(weight)))

    if layout.paged:  # the superblock's page and the metadata page: whole pages, through the page buffer
        read(0, layout.page_size, 1)
        read(layout.page_size, layout.page_size, 1)
    else:
        offset = 0
        for nbytes in HDF5_OPEN_READS:
            read(offset, nbytes, 1)
            offset += nbytes
    meta_rounds = OPEN_ROUNDS["hdf5"]
    seen_nodes: set[int] = set()
    for dims, w, weight in zip(boxes, writes, weights):
        ids = _chunk_ids(dims, chunks, shape)
        lin = np.ravel_multi_index(np.meshgrid(*ids, indexing="ij"), grid).ravel() if n_chunks > 1 else np.zeros(1, int)
        for c in np.sort(lin):
            node = int(c) // BTREE_FANOUT
            if node not in seen_nodes and layout.chunks is not None:
                seen_nodes.add(node)
                if not layout.paged:  # an index node read is a small read of its own, elsewhere in the file
                    read(node * node_bytes, node_bytes, 1)
            read(data_base + int(c) * chunk_bytes, chunk_bytes, weight)
    if layout.paged:  # chunk index aggregated in pages, held by the page buffer: one read per page beyond the first
        meta_rounds += max(0, math.ceil(len(seen_nodes) * node_bytes / layout.page_size) - 1)
    n = len(requests)  # serial requests: each term adds up over them, the mean size prices the bytes exactly
    t = model.terms(n, float(np.mean(requests)) if n else 0.0, 1)
    meta = model.terms(meta_rounds, 4096, 1)
    # h5py holds its global lock (phil) through each read, the file object's callbacks included: calls from several
    # threads run one after another, whatever ``inflight`` the trace shows
    terms = {k: t[k] + meta[k] for k in ("first byte", "transfer", "client")}
    return terms, n + meta_rounds, int(sum(requests))


def price(layout: StoreLayout, boxes, writes, weights, shape, itemsize, ratio, model, inflight=1.0,
          head_first: bool = False) -> StoreCandidate:
    """Predicted seconds of the traced accesses (``boxes`` from ``_boxes``) in ``layout`` on the store;
    ``head_first``: the client asks a whole object's size before reading it (``heads_before_gets``)."""
    fn = _price_hdf5 if layout.library == "hdf5" else _price_zarr  # a reference is read as Zarr, by known ranges:
    head_first = head_first and layout.library == "zarr"  # no HEAD before a ranged GET
    terms, n, moved = fn(boxes, writes, weights, layout, tuple(shape), itemsize, ratio, model, inflight, head_first)
    return StoreCandidate(layout, float(sum(terms.values())), terms, n, moved)


# ------------------------------------------------------------------------------------------ candidates

def chunk_shapes(boxes, shape, itemsize, targets=(MiB, 4 * MiB, 16 * MiB)) -> list[tuple[int, ...]]:
    """MB-sized chunk shapes following the accesses: each dimension's share grows from the typical extent an access
    selects along it until the chunk holds about ``target`` bytes."""
    ext = np.array([[len(np.unique(d)) for d in dims] for dims in boxes[:2000]], np.float64)
    typical = np.maximum(1, np.median(ext, axis=0)) if len(ext) else np.ones(len(shape))
    out = []
    for target in targets:
        elems = max(1, target // itemsize)
        c = np.minimum(typical, shape).astype(np.float64)
        for _ in range(64):  # grow the dimensions not yet whole, in proportion, until the target size
            if c.prod() >= elems or (c >= shape).all():
                break
            grow = c < shape
            f = (elems / c.prod()) ** (1 / grow.sum())
            c = np.where(grow, np.minimum(np.ceil(c * f), shape), c)
        while c.prod() > 2 * elems and (c > typical).any():  # over the target: shrink the grown dimensions back
            d = int(np.argmax(np.where(c > typical, c / np.maximum(typical, 1), 0)))
            c[d] = max(typical[d], math.floor(c[d] / 2))
        out.append(tuple(int(x) for x in c))
    return list(dict.fromkeys(out))


def candidates(current: StoreLayout, boxes, shape, itemsize) -> list[StoreLayout]:
    """Layouts on the store to price: the current one with other fsspec settings (HDF5), MB-sized chunks in
    either library, shards of them (Zarr), paged HDF5."""
    out = [current]
    shapes = chunk_shapes(boxes, shape, itemsize)
    cur_chunks = current.chunks or tuple(shape)
    chunk_bytes = math.prod(cur_chunks) * itemsize
    if current.library == "hdf5":
        for bs in sorted({max(64 * 1024, 2 ** math.ceil(math.log2(max(chunk_bytes, 1)))), MiB, 4 * MiB}):
            for cache in ("readahead", "none", "blockcache"):
                out.append(replace(current, block_size=bs, cache_type=cache))
        out.append(replace(current, paged=True, cache_type="none"))
        out.append(StoreLayout(reference.REFERENCE, current.chunks, cache_type="none"))  # the file kept as it is
    for ch in shapes + [cur_chunks]:
        cb = math.prod(ch) * itemsize
        out.append(StoreLayout("zarr", ch))
        grid = [math.ceil(s / c) for s, c in zip(shape, ch)]
        for per in (4, 16, 64):  # shards of `per` chunks along the dimensions with the most chunks
            m = [1] * len(shape)
            left = per
            for d in np.argsort(grid)[::-1]:
                take = min(left, grid[d])
                m[d], left = take, left // max(take, 1)
                if left <= 1:
                    break
            if math.prod(m) > 1 and cb * math.prod(m) <= 1024 * MiB:
                out.append(StoreLayout("zarr", ch, tuple(c * k for c, k in zip(ch, m))))
        if current.library == "hdf5":  # Zarr is the store's native format: never advised back into one HDF5 file
            bs = max(64 * 1024, 2 ** math.ceil(math.log2(max(cb, 1))))
            out.append(StoreLayout("hdf5", ch, block_size=bs, cache_type="none", paged=True))
    return list(dict.fromkeys(out))


# --------------------------------------------------------------------------------------------- advise

def store_model_from_requests(req: dict) -> ObjectStoreModel | None:
    """A store model from a trace's request log: first byte of its GETs, bandwidth of its larger ones."""
    get = req["op"] == "GET" if len(req.get("op", ())) else np.zeros(0, bool)
    if get.sum() < 3:
        return None
    ttfb = float(np.median(req["ttfb"][get]))
    body = np.maximum(req["dt"][get] - req["ttfb"][get], 1e-6)
    big = req["nbytes"][get] >= np.percentile(req["nbytes"][get], 75)
    bw = float(req["nbytes"][get][big].sum() / body[big].sum()) if big.any() else 1e8
    return ObjectStoreModel(ttfb=ttfb, request_bandwidth=max(bw, 1e6), aggregate_bandwidth=max(bw, 1e6) * 4,
                            fitted={"from": "the trace's requests", "requests": int(get.sum())})


def heads_before_gets(req: dict, url: str = "") -> bool:
    """Whether the client sends a HEAD of an object before a whole-object GET (s3fs 2026.9's ``_cat_file`` asks the
    size first when ``max_concurrency`` > 1): each such read is two round trips. Seen in the request log when the
    traced program read whole objects; otherwise (an HDF5 file read by ranges, or no log) s3fs's default
    (``max_concurrency`` 10) for ``s3://`` data, since the Zarr candidates are written for ``FsspecStore``."""
    ops = req.get("op", ())
    whole = {u for o, u, e in zip(ops, req.get("url", ()), req.get("end", ())) if o == "GET" and e < 0}
    if not whole:
        return url.split("://", 1)[0].lower() in ("s3", "s3a")
    headed = {u for o, u in zip(ops, req["url"]) if o == "HEAD"} & whole
    return len(headed) > len(whole) / 2


def observed_ratio(ds, req: dict) -> float:
    """Stored / raw bytes of the array's chunks as its GETs fetched them (Zarr chunk keys); 1 when unseen."""
    if ds.library != "zarr" or not ds.chunks or not len(req.get("url", ())):
        return 1.0
    base = ds.file.rstrip("/") + "/" + (ds.path.strip("/") + "/" if ds.path else "")
    urls = req["url"].astype(str)
    hit = (req["op"] == "GET") & np.char.startswith(urls, base + "c") & (req["end"] < 0)
    if not hit.any():
        return 1.0
    raw = math.prod(ds.shards or ds.chunks) * np.dtype(ds.dtype).itemsize
    return float(min(1.0, np.median(req["nbytes"][hit]) / raw)) if raw else 1.0


def advise_dataset(trace, ds, req: dict, stores: dict, top: int = 5, codecs=()) -> StoreAdvice:
    """Rank the layouts on ``ds``'s store for its traced accesses. ``codecs``: compressors estimated on a sample of
    the data (``advisor.objectstore_codecs.StoreCodec``: name, error bound, ratio, decode speed); each Zarr
    candidate is also priced with each of them (its stored bytes, and its decoding of the raw bytes read)."""
    from iomodel.objectstore import model_for

    cols = trace.columns_of(ds.id)
    shape = tuple(trace.extent(ds.id))
    itemsize = np.dtype(ds.dtype).itemsize
    hosts = [h for u, h in zip(req.get("url", ()), req.get("host", ())) if str(u).startswith(ds.file)]
    host = hosts[0] if hosts else ""
    model = model_for(stores, host, ds.file)
    if model is None and not host and as_s3(ds.file):  # read by libhdf5 over HTTP: the endpoint's calibrated model
        host = as_s3(ds.file)[0]
        model = model_for(stores, host, as_s3(ds.file)[1])
    source = f"calibrated: {host}" if model is not None else "fitted on the trace's requests"
    if model is None:
        model = store_model_from_requests(req)
    if model is None:
        where = (f"s3://{as_s3(ds.file)[1][5:].split('/')[0]}/SCRATCH --endpoint-url "
                 f"{ds.file.split('://')[0]}://{as_s3(ds.file)[0]}") if as_s3(ds.file) else ds.file
        raise InputError(f"{ds.label}: no model of its store: run `ioadvisor calibrate --store {where}`, "
                         "or trace with the request log (ioadvisor run)")
    boxes, writes, weights = _boxes(cols)
    ratio = observed_ratio(ds, req)
    inflight = calls_in_flight(cols)
    current = StoreLayout(ds.library, tuple(ds.chunks) if ds.chunks else None,
                          tuple(ds.shards) if ds.shards else None,
                          cache_type="none" if reads_directly(ds.library, ds.file, ds.driver) else "readahead")
    head_first = heads_before_gets(req, ds.file)
    follow = follows_chunks(boxes, writes, weights, current.chunks, shape)
    priced = []
    layouts = candidates(current, boxes, shape, itemsize)
    by_name = {(k.name, k.error_bound): k for k in codecs}
    layouts += [replace(c, codec=k.name, error_bound=k.error_bound) for c in layouts if c.library == "zarr"
                for k in codecs]
    for c in layouts:
        if c.library == reference.REFERENCE and writes.any():  # a reference is read-only
            continue
        k = by_name.get((c.codec, c.error_bound))
        r = ratio if k is None else 1.0 / k.ratio
        if follow is None:
            p = price(c, boxes, writes, weights, shape, itemsize, r, model, inflight, head_first)
        else:  # the program's blocks are so many of each layout's chunks (dask.array.from_zarr)
            b, w, wt = follow.tiles(c.chunks or shape, shape)
            p = price(c, b, w, wt, shape, itemsize, r, model, min(inflight, float(wt.sum())), head_first)
        if k is not None and k.decode_bps > 0:  # the raw bytes of the chunks fetched, decoded
            decode = p.bytes_moved * k.ratio / k.decode_bps
            p = replace(p, seconds=p.seconds + decode, terms={**p.terms, "decode": decode})
        priced.append(p)
    # every layout, the current one included, is priced by the same model: the traced calls' time is shown beside
    # the current layout's price, not put in its place (a traced run is slower than the program alone by the
    # tracer's work per request, and charging that excess per request to every candidate inflated the claimed gain
    # of layouts with fewer requests 1.7-3.8x: benchmarks/validation/objectstore.py workloads, the dask reduction)
    now = next(c for c in priced if c.layout == current)
    margin = keep_margin(model)
    ranked = sorted(priced, key=lambda c: (c.seconds * (1 + margin) if c is not now else c.seconds))
    return StoreAdvice(ds.label, ds.file, host, now, tuple(ranked[:max(top, 1)]), model, source, ratio, inflight,
                       traced_seconds=traced_wall(cols, inflight), follows=follow)


def keep_margin(model: ObjectStoreModel) -> float:
    """The share by which a layout must be predicted faster than the current one to rank before it (``KEEP_MARGIN``)."""
    err = model.fitted.get("median_abs_error") if isinstance(model.fitted, dict) else None
    return float(err) if isinstance(err, (int, float)) and 0 <= err < 1 else KEEP_MARGIN


def traced_wall(cols, inflight: float) -> float:
    """The traced calls' wall time, overlaps counted once (``calls_in_flight``: their summed time over this)."""
    return float(cols.dt.sum()) / max(inflight, 1.0)


def advise_store(trace, stores: dict | None = None, top: int = 5, codecs_of=None) -> list[StoreAdvice]:
    """Advice on the store for every accessed array of ``trace`` that lives on an object store; ``codecs_of(ds)``:
    the compressors estimated on its data (``advisor.objectstore_codecs``), none when not given."""
    from instrumentation.storerequests import load_requests

    req = load_requests(trace.source) if trace.source else {}
    out = []
    for ds in trace.datasets.values():
        if on_store(ds.file) and trace.columns_of(ds.id).rows:
            out.append(advise_dataset(trace, ds, req, stores or {}, top, codecs_of(ds) if codecs_of else ()))
    return out


__all__ = ["StoreAdvice", "StoreCandidate", "StoreLayout", "advise_dataset", "advise_store", "calls_in_flight",
           "candidates", "chunk_shapes", "on_store", "price"]
