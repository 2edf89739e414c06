"""ioadvisor's VOL connector (HDF5 >= 1.14) on programs with libhdf5 linked in statically: loaded only where it
can load, and then every selection recorded as the interposer records it.

The end-to-end tests need an HDF5 >= 1.14 source release (for the connector) and a static libhdf5 built from
it (for the program): IOADVISOR_HDF5_SOURCE and IOADVISOR_HDF5_PREFIX (its install prefix), by default the
newest ~/.cache/ioadvisor/src/hdf5-1.14* and ~/.cache/ioadvisor/hdf5-<version> (docs/static-programs.md says
how to make them). Without them they skip, saying so."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from instrumentation import volconnector

from test_interpose import C_DIR, elements, expected_selection, traced_run

CACHE = Path(os.environ.get("IOADVISOR_CACHE", Path.home() / ".cache" / "ioadvisor"))


def _source_and_prefix() -> tuple[Path, Path, str]:
    source = os.environ.get("IOADVISOR_HDF5_SOURCE")
    sources = [Path(source)] if source else sorted(CACHE.glob("src/hdf5-1.1[4-9]*")) + sorted(CACHE.glob("src/hdf5-2*"))
    sources = [s for s in sources if (s / "src" / "H5VLpassthru.c").exists()]
    if not sources:
        pytest.skip("no HDF5 >= 1.14 source release (IOADVISOR_HDF5_SOURCE, or ~/.cache/ioadvisor/src/hdf5-1.14*)")
    version = volconnector.source_version(sources[-1])
    prefix = Path(os.environ.get("IOADVISOR_HDF5_PREFIX", CACHE / f"hdf5-{version}"))
    if not (prefix / "lib" / "libhdf5.a").exists():
        pytest.skip(f"no static libhdf5 {version} to link a program with ({prefix}/lib/libhdf5.a: build the source "
                    "release with --prefix there, or set IOADVISOR_HDF5_PREFIX)")
    return sources[-1], prefix, version


def _static_program(tmp_path, source: str, prefix: Path, *, exported: bool) -> Path:
    settings = (prefix / "lib" / "libhdf5.settings").read_text() if (prefix / "lib" / "libhdf5.settings").exists() \
        else ""
    extra = re.search(r"Extra libraries:(.*)", settings)
    exe = tmp_path / (Path(source).stem + ("_exported" if exported else ""))
    subprocess.run(["cc", "-O1", *(["-rdynamic"] if exported else []), f"-I{prefix / 'include'}", "-o", str(exe),
                    str(C_DIR / source), str(prefix / "lib" / "libhdf5.a"),
                    *(extra.group(1).split() if extra else ["-lz", "-ldl", "-lm"])], check=True, timeout=300)
    return exe


def test_exports_hdf5_reads_the_dynamic_symbol_table(tmp_path):
    src = tmp_path / "p.c"
    src.write_text("int H5VLdataset_read(void) { return 1; }\nint main(void) { return H5VLdataset_read() - 1; }\n")
    plain, exported = tmp_path / "plain", tmp_path / "exported"
    subprocess.run(["cc", "-o", str(plain), str(src)], check=True)
    subprocess.run(["cc", "-rdynamic", "-o", str(exported), str(src)], check=True)
    assert volconnector.exports_hdf5(exported) and not volconnector.exports_hdf5(plain)
    assert not volconnector.exports_hdf5(src) and not volconnector.exports_hdf5(tmp_path / "missing")


def test_no_connector_where_it_cannot_load(tmp_path, monkeypatch):
    monkeypatch.setenv("IOADVISOR_CACHE", str(tmp_path))
    assert volconnector.environment_for("/bin/sh", "1.10.8") is None  # no stable VOL API before 1.14
    assert volconnector.environment_for("/bin/sh", "1.14.5") is None  # not built for it
    where = volconnector.plugin_dir("1.14.5")
    where.mkdir(parents=True)
    (where / volconnector.PLUGIN_NAME).write_bytes(b"")
    assert volconnector.environment_for("/bin/sh", "1.14.5") is None  # /bin/sh exports no HDF5
    src = tmp_path / "p.c"
    src.write_text("int H5VLdataset_read(void) { return 0; }\nint main(void) { return H5VLdataset_read(); }\n")
    exe = tmp_path / "p"
    subprocess.run(["cc", "-rdynamic", "-o", str(exe), str(src)], check=True)
    env = volconnector.environment_for(exe, "1.14.5", {"HDF5_PLUGIN_PATH": "/filters"})
    assert env == {"HDF5_VOL_CONNECTOR": volconnector.CONNECTOR, "HDF5_PLUGIN_PATH": f"{where}:/filters"}
    assert volconnector.environment_for(exe, "1.14.5", {"HDF5_VOL_CONNECTOR": "theirs"}) is None


@pytest.mark.slow
@pytest.mark.parametrize("source, n", [("row_bands.c", 20), ("known_accesses.c", 12)])
def test_a_static_program_through_the_vol_connector_every_selection(tmp_path, monkeypatch, source, n):
    hdf5_source, prefix, version = _source_and_prefix()
    env = {"IOADVISOR_CACHE": str(tmp_path / "cache")}
    monkeypatch.setenv("IOADVISOR_CACHE", env["IOADVISOR_CACHE"])
    volconnector.build(hdf5_source)
    exe = _static_program(tmp_path, source, prefix, exported=True)
    trace, truth = traced_run(tmp_path, exe, tmp_path / "data.h5", env=env)
    assert len(truth) == n and not trace.missed
    assert [a.op for a in trace.accesses] == [t["op"] for t in truth]
    (ds,) = trace.datasets.values()
    for access, line in zip(trace.accesses, truth):
        want = expected_selection(line)
        if line["kind"] == "hyperslab":
            assert access.selection == want
        else:
            assert elements(access.selection, ds.shape) == elements(want, ds.shape)
        assert access.nbytes == 8 * access.nelements
    assert trace.header.libraries == (f"HDF5 {version}: {exe} (VOL connector)",)
    # without its functions exported the connector cannot load: not set, the program runs as ever, the gap named
    plain = _static_program(tmp_path, source, prefix, exported=False)
    trace, truth = traced_run(tmp_path, plain, tmp_path / "plain.h5", env=env, output="p.jsonl")
    assert len(truth) == n and trace.n_access == 0
    assert any("linked into it statically" in m and "-rdynamic" in m for m in trace.missed)
