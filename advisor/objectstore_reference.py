"""Keep the HDF5 file and add a virtual Zarr reference (issue #35): kerchunk's map of each chunk to its byte range in
the file, read through zarr.

Read through the reference, the file's chunks are what they are (same chunk shape, same codec: kerchunk translates
the HDF5 filters to numcodecs) but the reads change: zarr asks for each chunk's byte range directly (one ranged GET
per chunk, ``async.concurrency`` of them in flight, no HEAD since the range is known), after one GET of the
reference itself; none of HDF5's metadata round trips (superblock, object headers, B-tree nodes) and no fsspec
read-ahead. So the advice prices it as Zarr in the file's chunks without a rewrite (``advisor.objectstore``).

Building needs the ``virtual-zarr`` extra (``pip install ioadvisor[virtual-zarr]``: kerchunk, which works with
zarr 3.1 and reads the file once, its metadata only); reading needs fsspec's ``reference://`` filesystem only.
"""
from __future__ import annotations

REFERENCE = "reference"
"""``StoreLayout.library`` of a virtual Zarr reference to the current HDF5 file."""
SUFFIX = ".refs.json"
"""Where the reference is written beside the file (``s3://bucket/f.h5.refs.json``)."""


def describe(chunks) -> str:
    ch = "contiguous" if chunks is None else "x".join(map(str, chunks))
    return f"virtual zarr reference to the hdf5 file (kerchunk), chunks {ch}"


def code(url: str) -> str:
    """How to build the reference once and read the file through it."""
    refs = url + SUFFIX
    return (f'pip install "ioadvisor[virtual-zarr]"; '
            f'with fsspec.open("{url}", "rb", **opts) as f: refs = kerchunk.hdf.SingleHdf5ToZarr(f, "{url}").translate(); '
            f'with fsspec.open("{refs}", "w", **opts) as out: out.write(ujson.dumps(refs)); '
            f'then read: zarr.open_group(zarr.storage.FsspecStore.from_url("reference://", storage_options=dict('
            f'fo="{refs}", target_options=opts, remote_protocol="{url.split("://", 1)[0]}", '
            f'remote_options={{**opts, "asynchronous": True}}), read_only=True), mode="r", zarr_format=2)[NAME]')


def build_reference(url: str, storage_options: dict, refs_url: str | None = None) -> str:
    """Write the reference to the HDF5 file at ``url`` (its metadata read once) beside it; returns its URL."""
    import fsspec
    import kerchunk.hdf
    import ujson

    refs_url = refs_url or url + SUFFIX
    with fsspec.open(url, "rb", **storage_options) as f:
        refs = kerchunk.hdf.SingleHdf5ToZarr(f, url).translate()
    with fsspec.open(refs_url, "w", **storage_options) as out:
        out.write(ujson.dumps(refs))
    return refs_url


def open_reference(refs_url: str, storage_options: dict):
    """The Zarr group a reference describes, its chunks read from the HDF5 file on the store."""
    import zarr

    protocol = refs_url.split("://", 1)[0] if "://" in refs_url else "file"
    opts = dict(fo=refs_url, target_options=storage_options, remote_protocol=protocol,
                remote_options={**storage_options, "asynchronous": True})
    store = zarr.storage.FsspecStore.from_url("reference://", storage_options=opts, read_only=True)
    return zarr.open_group(store, mode="r", zarr_format=2)


__all__ = ["REFERENCE", "SUFFIX", "build_reference", "code", "describe", "open_reference"]
