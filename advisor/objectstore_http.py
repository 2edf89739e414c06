"""Files libhdf5 reads from a server itself (issue #35): netCDF4's ``#mode=bytes`` (netCDF-C's HTTP driver) and
HDF5's read-only S3 driver (ros3), named by their URL (``http://host:port/bucket/key``).

Neither goes through fsspec: no read-ahead or block cache (netCDF-C 4.10's driver and HDF5 1.10's ros3 send one
ranged GET per read libhdf5 makes, its metadata reads included), and no request log (their HTTP client is libcurl,
below Python). Their store is an S3 endpoint reached by path-style URLs: the profile's model of that endpoint
(``ioadvisor calibrate --store s3://BUCKET/scratch --endpoint-url http://host:port``) prices them.
"""
from __future__ import annotations

from urllib.parse import urlsplit

HTTP_SCHEMES = ("http", "https")


def reads_directly(library: str, url: str, driver: str | None) -> bool:
    """Whether libhdf5 itself reads the file at ``url`` from its server (each read one request, nothing cached)."""
    return library == "hdf5" and url.split("://", 1)[0].lower() in HTTP_SCHEMES and driver != "fileobj"


def as_s3(url: str) -> tuple[str, str] | None:
    """The endpoint host and ``s3://bucket/key`` of a path-style URL of an S3 endpoint; None for other URLs."""
    if url.split("://", 1)[0].lower() not in HTTP_SCHEMES:
        return None
    u = urlsplit(url)
    path = u.path.lstrip("/")
    return (u.netloc, f"s3://{path}") if path else None


__all__ = ["HTTP_SCHEMES", "as_s3", "reads_directly"]
