"""``ioadvisor apply`` against h5repack on the same data: time, peak memory, output equal; kill and resume.

Cases (sizes of the issue; ``--scale`` shrinks them for a quick look):

- pencil: a 2 GB netCDF-4 file (float32 (2000, 360, 720), map chunks (1, 360, 720), time/lat/lon
  coordinates with attributes, global attributes) to pencils (1460, 8, 8): two passes, ``--max-memory
  512MiB``; against ``h5repack -l /tas:CHUNK=1460x8x8``;
- gzip: a 1 GB gzip'd HDF5 array (4096, 256, 256) chunks (16, 256, 256) to the same chunks uncompressed;
  against ``h5repack -f /x:NONE``;
- shards: a 1 GB Zarr 3 array (zstd, chunks (64, 256, 256)) to chunks (16, 64, 64) in shards (64, 256, 256);
- h5-zarr-h5: the gzip case's file to Zarr (chunks (16, 128, 128), zstd) and that store back to HDF5;
- ``--real WORKLOAD``: a program of benchmarks/workloads/real/ traced, applied and compared
  (``ioadvisor compare --trace``): the measured whole-program speed-up against the claimed run speed-up;
- kill: ``--kills N`` runs of a smaller pencil case (512 MB, ``--max-memory 128MiB``) SIGKILLed at a random
  point, each followed by the same command again: the source's checksum unchanged, no DEST after the kill,
  DEST equal to the source after the rerun.

Every run is the CLI a user runs, as a subprocess (``ioadvisor apply TRACE --out DEST --layout ...``) on a
trace of a program reading the file; the page cache of the inputs is emptied before each run; peak RSS is
the child's ``ru_maxrss`` (os.wait4). Equal: every array compared block by block (NaN-aware, bitwise),
and xarray's view (variables, coordinates, attributes) identical where the file is netCDF/xarray data.

    python -m benchmarks.validation.apply [--cases pencil,gzip,shards,h5-zarr-h5,kill] [--kills 10] [--scale 1.0]
                               [--workdir DIR] [--repeat 1] [--real r02_h5py_minibatch_gzip --runs 3]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BIN = Path(sys.executable).parent
RESULTS = Path(__file__).parents[1] / "results"


# ---------------------------------------------------------------------------- data

def smooth_slab(t: int, shape: tuple[int, int], rng) -> np.ndarray:
    ny, nx = shape
    y = np.linspace(0, np.pi, ny, dtype=np.float32)[:, None]
    x = np.linspace(0, 2 * np.pi, nx, dtype=np.float32)[None, :]
    base = 280 + 20 * np.sin(y) * np.cos(x + 0.01 * t) + 5 * np.sin(0.05 * t)
    return (base + rng.standard_normal((ny, nx), dtype=np.float32) * 0.5).astype(np.float32)


def make_netcdf(path: Path, nt: int, ny: int, nx: int) -> None:
    import netCDF4

    rng = np.random.default_rng(0)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.title = "apply benchmark: synthetic surface temperature"
        nc.history = "benchmarks/validation/apply.py"
        for name, n in (("time", nt), ("lat", ny), ("lon", nx)):
            nc.createDimension(name, n)
        t = nc.createVariable("time", "f8", ("time",))
        t.units, t.calendar = "days since 2000-01-01", "standard"
        t[:] = np.arange(nt)
        lat = nc.createVariable("lat", "f4", ("lat",))
        lat.units, lat.standard_name = "degrees_north", "latitude"
        lat[:] = np.linspace(-89.75, 89.75, ny)
        lon = nc.createVariable("lon", "f4", ("lon",))
        lon.units, lon.standard_name = "degrees_east", "longitude"
        lon[:] = np.linspace(0.25, 359.75, nx)
        v = nc.createVariable("tas", "f4", ("time", "lat", "lon"), chunksizes=(1, ny, nx), fill_value=np.float32(1e20))
        v.units, v.long_name = "K", "near-surface air temperature"
        for i in range(nt):
            slab = smooth_slab(i, (ny, nx), rng)
            slab[: ny // 20, : nx // 10] = np.float32(1e20)  # a masked corner: fill values
            v[i] = slab


def make_h5_gzip(path: Path, nt: int, n: int) -> None:
    import h5py

    rng = np.random.default_rng(1)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=(nt, n, n), dtype="f4", chunks=(16, n, n), compression="gzip",
                             compression_opts=4)
        d.attrs["units"] = "m/s"
        f.attrs["source"] = "benchmarks/validation/apply.py"
        for i in range(0, nt, 16):
            d[i:i + 16] = np.stack([smooth_slab(i + k, (n, n), rng) for k in range(min(16, nt - i))])


def make_zarr(path: Path, nt: int, n: int) -> None:
    import zarr

    rng = np.random.default_rng(2)
    g = zarr.open_group(str(path), mode="w-", zarr_format=3)
    g.attrs["source"] = "benchmarks/validation/apply.py"
    a = g.create_array("x", shape=(nt, n, n), dtype="f4", chunks=(64, n, n), attributes={"units": "K"})
    for i in range(0, nt, 64):
        a[i:i + 64] = np.stack([smooth_slab(i + k, (n, n), rng) for k in range(min(64, nt - i))])


def trace_reads(path: Path, array: str, trace: Path) -> None:
    """A program reading a few regions of the array, traced (the user's path to ``apply``)."""
    code = (
        "import advisor, sys\n"
        f"lib = {'zarr' if path.suffix == '.zarr' else 'h5py'!r}\n"
        "with advisor.trace(sys.argv[3], overwrite=True):\n"
        "    if lib == 'h5py':\n"
        "        import h5py\n"
        "        f = h5py.File(sys.argv[1], 'r')\n"
        "    else:\n"
        "        import zarr\n"
        "        f = zarr.open_group(sys.argv[1], mode='r')\n"
        "    a = f[sys.argv[2]]\n"
        "    for i in range(3):\n"
        "        a[: min(a.shape[0], 8), 8 * i: 8 * i + 8, 8 * i: 8 * i + 8]\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path), array, str(trace)], check=True)


# ---------------------------------------------------------------------------- running and checking

def evict(path: Path) -> None:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for p in files:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def timed(cmd: list[str], env: dict | None = None) -> dict:
    """Run ``cmd``; wall seconds, peak RSS (MB, the process tree's, sampled every 20 ms: a child's ru_maxrss
    starts at its parent's RSS at fork on Linux, so it would report this script's) and exit status."""
    import tempfile

    import psutil

    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        ps = psutil.Process(proc.pid)
        peak = 0
        while proc.poll() is None:
            try:
                peak = max(peak, sum(p.memory_info().rss for p in [ps] + ps.children(recursive=True)))
            except psutil.Error:
                pass
            time.sleep(0.02)
        seconds = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        o, e = out.read().decode(), err.read().decode()
    return {"seconds": seconds, "peak_rss_mb": peak / 2**20, "rc": proc.returncode, "stdout": o[-100000:],
            "stderr": e[-2000:]}


def _arrays(root, lib: str, prefix: str = "") -> dict:
    out = {}
    if lib == "hdf5":
        import h5py

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out["/" + name] = obj
        root.visititems(visit)
    else:
        import zarr

        for name, obj in root.members(max_depth=None):
            if isinstance(obj, zarr.Array):
                out["/" + name] = obj
    return out


def _open(path: Path):
    import hdf5plugin  # noqa: F401

    if path.suffix == ".zarr":
        import zarr

        return zarr.open_group(str(path), mode="r"), "zarr"
    import h5py

    return h5py.File(path, "r"), "hdf5"


def arrays_equal(a_path: Path, b_path: Path, skip_phony: bool = True) -> tuple[bool, str]:
    """Every array of ``a`` in ``b`` with equal shape, dtype and values (bitwise, block by block)."""
    a, la = _open(a_path)
    b, lb = _open(b_path)
    aa, bb = _arrays(a, la), _arrays(b, lb)
    for name, x in aa.items():
        if name not in bb:
            if skip_phony and la == "hdf5" and lb == "zarr" and "NAME" in x.attrs and \
                    bytes(x.attrs["NAME"]).startswith(b"This is a netCDF dimension"):
                continue
            return False, f"{name} missing"
        y = bb[name]
        if x.shape != y.shape or x.dtype != y.dtype:
            return False, f"{name}: {x.shape} {x.dtype} vs {y.shape} {y.dtype}"
        if not x.shape:
            if not np.array_equal(np.asarray(x[()]), np.asarray(y[()])):
                return False, f"{name}: differs"
            continue
        # blocks aligned to the second file's chunks (its last pass, ``advisor.apply.plan``): a pencil file
        # read in rows would read every pencil once per row block
        from advisor.apply.plan import plan_copy

        grid = lambda arr: getattr(arr, "shards", None) or arr.chunks  # noqa: E731
        stage = plan_copy(x.shape, x.dtype.itemsize, grid(x), grid(y), 128 << 20).stages[-1]
        for _, region in stage.regions():
            u, v = np.ascontiguousarray(x[region]), np.ascontiguousarray(y[region])
            if not np.array_equal(u.view(np.uint8), v.view(np.uint8)):
                return False, f"{name}: values differ in {region}"
    return True, ""


def xarray_identical(a_path: Path, b_path: Path) -> tuple[bool, str]:
    """xarray's view of both: variables, coordinates, attributes, encoding dtypes (data compared lazily above)."""
    import xarray as xr

    kw = lambda p: {"engine": "zarr"} if p.suffix == ".zarr" else {}  # noqa: E731
    with xr.open_dataset(a_path, **kw(a_path)) as x, xr.open_dataset(b_path, **kw(b_path)) as y:
        if set(x.variables) != set(y.variables) or set(x.coords) != set(y.coords):
            return False, f"variables {sorted(x.variables)} vs {sorted(y.variables)}"
        if x.attrs != y.attrs:
            return False, "global attributes differ"
        for v in x.variables:
            if x[v].dims != y[v].dims or x[v].attrs != y[v].attrs or x[v].dtype != y[v].dtype:
                return False, f"{v}: dims/attrs/dtype differ"
            if x[v].ndim <= 1 and not x[v].equals(y[v]):
                return False, f"{v}: coordinate values differ"
    return True, ""


def sha1(path: Path) -> str:
    h = hashlib.sha1()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for p in files:
        h.update(p.name.encode())
        with open(p, "rb") as fh:
            while chunk := fh.read(1 << 24):
                h.update(chunk)
    return h.hexdigest()


def apply_cmd(trace: Path, dest: Path, layout: str, dataset: str, max_memory: str) -> list[str]:
    return [str(BIN / "ioadvisor"), "apply", str(trace), "--out", str(dest), "--dataset", dataset,
            "--layout", layout, "--max-memory", max_memory, "--json"]


def _rm(p: Path) -> None:
    if p.is_dir():
        shutil.rmtree(p)
    elif p.exists():
        p.unlink()


RECHUNKER = """
import sys, h5py, zarr, dask.array as da
from rechunker import rechunk
src, name, out, tmp, mem = sys.argv[1:6]
target = tuple(int(c) for c in sys.argv[6].split("x"))
f = h5py.File(src, "r")
ds = f[name]
arr = da.from_array(ds, chunks=ds.chunks or ds.shape, lock=True)
zarr.open_group(out, mode="w")  # a group, so that the output opens like the others
plan = rechunk(arr, target, mem, out + "/" + name.strip("/"), temp_store=tmp, target_options={"compressor": None},
               temp_options={"compressor": None})
plan.execute()
"""


def rechunker_cmd(python: str, src: Path, dataset: str, out: Path, max_memory: str, chunks: str) -> list[str]:
    mem = str(int(float(max_memory[:-3]) * {"MiB": 2**20, "GiB": 2**30}[max_memory[-3:]]))
    return [python, "-c", RECHUNKER, str(src), dataset, str(out), str(out) + ".tmp", mem, chunks]


def compare_case(name: str, src: Path, trace: Path, dataset: str, layout: str, dest: Path, max_memory: str,
                 repack: list[str] | None, repeat: int, xr_view: bool, tools: tuple[str, ...] = ("apply", "h5repack"),
                 rechunker: str | None = None) -> dict:
    rows = {"apply": [], "h5repack": [], "rechunker": []}
    chunks = layout.split("chunks=")[1].split(",")[0]
    for r in range(repeat):
        for tool in tools:  # interleaved: ABAB
            if (tool == "h5repack" and repack is None) or (tool == "rechunker" and rechunker is None):
                continue
            out = dest if tool == "apply" else dest.with_name(f"{tool}-" + dest.name)
            if tool == "rechunker":
                out = out.with_suffix(".zarr")
            _rm(out)
            _rm(Path(str(out) + ".tmp"))
            evict(src)
            if tool == "apply":
                cmd = apply_cmd(trace, out, layout, dataset, max_memory)
            elif tool == "h5repack":
                cmd = repack + [str(src), str(out)]
            else:
                cmd = rechunker_cmd(rechunker, src, dataset, out, max_memory, chunks)
            res = timed(cmd)
            if res["rc"] != 0:
                raise RuntimeError(f"{name} {tool}: exit {res['rc']}: {res['stderr'].strip()[-500:]}")
            if tool == "rechunker":  # one array, in Zarr 2: compared with the source's
                eq, why = arrays_equal(out, src)
            else:
                eq, why = arrays_equal(src, out)
            if eq and xr_view and tool != "rechunker":
                eq, why = xarray_identical(src, out)
            res.update(equal=eq, why=why)
            res.pop("stdout") if tool != "apply" else None
            rows[tool].append(res)
            print(f"{name} {tool} run {r + 1}: {res['seconds']:.1f} s, peak RSS {res['peak_rss_mb']:.0f} MB, "
                  f"equal {eq} {why}", flush=True)
            if tool != "apply":
                _rm(out)
                _rm(Path(str(out) + ".tmp"))
    med = {t: {"seconds": statistics.median(x["seconds"] for x in v),
               "peak_rss_mb": max(x["peak_rss_mb"] for x in v), "equal": all(x["equal"] for x in v)}
           for t, v in rows.items() if v}
    return {"case": name, "layout": layout, "max_memory": max_memory, "runs": rows, "median": med}


def kill_case(workdir: Path, kills: int, scale: float, seed: int) -> dict:
    src = workdir / "kill-src.nc"
    nt = max(8, int(500 * scale))
    if not src.exists():
        make_netcdf(src, nt, 360, 720)
    trace = workdir / "kill.jsonl"
    trace_reads(src, "/tas", trace)
    before = sha1(src)
    dest = workdir / "kill-dst.nc"
    cmd = apply_cmd(trace, dest, "hdf5:chunks=%dx8x8,codec=none" % min(nt, 1460), "/tas", "128MiB")
    _rm(dest)
    full = timed(cmd)  # the reference duration (warm page cache, as the runs below): kills land inside it
    if full["rc"]:
        raise RuntimeError(full["stderr"])
    _rm(dest)
    full = timed(cmd)
    _rm(dest)
    rng = random.Random(seed)
    out = []
    for k in range(kills):
        at = rng.uniform(0.05, 0.95) * full["seconds"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(at)
        killed = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        dest_after_kill = dest.exists()
        journal = dest.with_name(dest.name + ".ioadvisor-partial") / "journal.jsonl"
        blocks_before = sum(1 for line in journal.read_text().splitlines() if '"block"' in line) if journal.exists() else 0
        if dest_after_kill:  # killed after the rename (removing the work directory): DEST must be whole
            eq, why = arrays_equal(src, dest)
            out.append({"kill_at_s": at, "killed_running": killed, "dest_after_kill": True, "equal": eq,
                        "why": why, "source_intact": sha1(src) == before, "ok": eq and sha1(src) == before})
            print(f"kill {k + 1}: at {at:.1f} s: after the rename; DEST equal {eq}", flush=True)
            _rm(dest)
            shutil.rmtree(dest.with_name(dest.name + ".ioadvisor-partial"), ignore_errors=True)
            continue
        rerun = timed(cmd)
        summary = json.loads(rerun["stdout"]) if rerun["rc"] == 0 else None
        resumed = sum(a["blocks_resumed"] for a in summary["arrays"]) if summary else 0
        eq, why = arrays_equal(src, dest) if rerun["rc"] == 0 else (False, rerun["stderr"][-300:])
        if eq:
            eq, why = xarray_identical(src, dest)
        intact = sha1(src) == before
        ok = killed and not dest_after_kill and eq and intact and rerun["rc"] == 0
        out.append({"kill_at_s": at, "killed_running": killed, "dest_after_kill": dest_after_kill,
                    "journal_blocks": blocks_before, "blocks_resumed": resumed, "rerun_s": rerun["seconds"],
                    "equal": eq, "why": why, "source_intact": intact, "ok": ok})
        print(f"kill {k + 1}: at {at:.1f} s of {full['seconds']:.1f}; DEST after kill {dest_after_kill}; "
              f"{blocks_before} blocks journaled, {resumed} resumed; rerun {rerun['seconds']:.1f} s; "
              f"equal {eq} {why}; source intact {intact}", flush=True)
        _rm(dest)
    return {"case": "kill", "full_seconds": full["seconds"], "runs": out, "ok": sum(r["ok"] for r in out),
            "of": kills}


def real_compare_case(workdir: Path, workload: str, runs: int) -> dict:
    """A realistic-size workload of benchmarks/workloads/real/ through the user's whole path: prepare its data,
    ``ioadvisor run`` it (cold), ``ioadvisor apply TRACE --out DEST`` (the advice, in the program's library),
    ``ioadvisor compare --substitute SRC=DEST --trace TRACE --runs N``: measured vs claimed run speed-up."""
    from advisor.api import advise

    prog = Path(__file__).parents[1] / "workloads" / "real" / f"{workload}.py"
    data, trace = workdir / workload, workdir / f"{workload}.trace"
    subprocess.run([sys.executable, str(prog), "prepare", str(data)], check=True)
    evict(data)
    program = [sys.executable, str(prog), "run", str(data)]
    load = [os.getloadavg()[0]]  # the 1-minute load when the traced run and compare start
    subprocess.run([str(BIN / "ioadvisor"), "run", "--force", "-o", str(trace), "--", *program], check=True)
    src = Path(advise(str(trace)).datasets[0].name.split("::")[0])
    dest = workdir / f"{workload}-copy{src.suffix}"
    t0 = time.perf_counter()
    subprocess.run([str(BIN / "ioadvisor"), "apply", str(trace), "--out", str(dest)], check=True)
    apply_s = time.perf_counter() - t0
    load.append(os.getloadavg()[0])
    out = subprocess.run([str(BIN / "ioadvisor"), "compare", "--substitute", f"{src}={dest}", "--trace", str(trace),
                          "--runs", str(runs), "--json", "--", *program], check=True, capture_output=True, text=True)
    r = json.loads(out.stdout)
    print(f"compare {workload}: measured {r['speedup']:.3g}x, claimed {r['claimed_speedup']:.3g}x", flush=True)
    _rm(dest)
    return {"case": f"compare {workload}", "apply_seconds": apply_s, "load": load, **r}


def render(results: list[dict]) -> str:
    """The reference table of docs/apply.md (markdown) from the results."""
    lines = ["| case | tool | seconds | peak RSS (MB) | max memory | output equal |", "|---|---|---|---|---|---|"]
    for r in results:
        if r["case"] == "kill":
            continue
        if r["case"].startswith("compare "):
            continue
        for tool, m in r["median"].items():
            lines.append(f"| {r['case']} | {tool} | {m['seconds']:.1f} | {m['peak_rss_mb']:.0f} | {r['max_memory']} | "
                         f"{'yes' if m['equal'] else 'NO'} |")
        if "equal_to_original" in r:
            lines.append(f"| h5 -> zarr -> h5 | apply | | | | {'yes' if r['equal_to_original'] else 'NO'} "
                         "(to the original) |")
    compared = [r for r in results if r["case"].startswith("compare ")]
    if compared:
        lines += ["", "| workload | original (s) | copy (s) | measured | claimed | measured / claimed | traced run / its "
                      "calls (s) | load: trace / compare |", "|---|---|---|---|---|---|---|---|"]
    for r in compared:
        ratio = r["speedup"] / r["claimed_speedup"]
        fmt = lambda xs: ", ".join(f"{x:.3g}" for x in xs)  # noqa: E731
        run, calls = r.get("traced_run_seconds"), r.get("traced_calls_seconds")
        traced = "-" if run is None else f"{run:.3g} / {calls:.3g}"
        load = "" if "load" not in r else f"{r['load'][0]:.1f} / {r['load'][1]:.1f}"
        lines.append(f"| {r['case'][len('compare '):]} | {fmt(r['original_seconds'])} | {fmt(r['copy_seconds'])} | "
                     f"{r['speedup']:.3g}x | {r['claimed_speedup']:.3g}x | {ratio:.2f} "
                     f"({'within' if 1 / 1.5 <= ratio <= 1.5 else 'NOT within'} 1.5x) | {traced} | {load} |")
    for r in results:
        if r["case"] == "kill":
            lines.append("")
            lines.append(f"Kill and resume: {r['ok']}/{r['of']} runs SIGKILLed at a random point then rerun: source "
                         "intact, no DEST after the kill, DEST equal after the rerun (full run "
                         f"{r['full_seconds']:.1f} s).")
            lines.append("")
            lines.append("| kill at (s) | DEST after kill | blocks journaled | blocks resumed | rerun (s) | equal | "
                         "source intact |")
            lines.append("|---|---|---|---|---|---|---|")
            for k in r["runs"]:
                lines.append(f"| {k['kill_at_s']:.1f} | {k['dest_after_kill']} | {k.get('journal_blocks', '')} | "
                             f"{k.get('blocks_resumed', '')} | {k.get('rerun_s', 0):.1f} | {k['equal']} | "
                             f"{k['source_intact']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="pencil,gzip,shards,h5-zarr-h5,kill")
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the issue's sizes")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/ioadvisor-apply-bench"))
    ap.add_argument("--keep", action="store_true", help="keep the generated data")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tools", default="apply,h5repack,rechunker")
    ap.add_argument("--render", type=Path, nargs="+", help="only print the table of these result files")
    ap.add_argument("--rechunker-python", help="python of a venv with rechunker 0.5.4 and zarr<3 (see docs/apply.md)")
    ap.add_argument("--out", type=Path, default=RESULTS / "apply.json")
    ap.add_argument("--real", default="", help="realistic-size workloads of benchmarks/workloads/real/ to run through "
                                               "run/apply/compare, e.g. r02_h5py_minibatch_gzip")
    ap.add_argument("--runs", type=int, default=3, help="compare's runs on each side (--real)")
    args = ap.parse_args(argv)
    if args.render:
        print(render([r for p in args.render for r in json.loads(p.read_text())]))
        return 0
    cases = args.cases.split(",")
    tools = tuple(args.tools.split(","))
    w = args.workdir
    w.mkdir(parents=True, exist_ok=True)
    repack = shutil.which("h5repack")
    results = []
    s = args.scale
    try:
        if "pencil" in cases:
            nt = max(16, int(2000 * s))
            src = w / "pencil.nc"
            if not src.exists():
                make_netcdf(src, nt, 360, 720)
            trace = w / "pencil.jsonl"
            trace_reads(src, "/tas", trace)
            c = min(1460, nt)
            results.append(compare_case("pencil", src, trace, "/tas", f"hdf5:chunks={c}x8x8", w / "pencil-out.nc",
                                        "512MiB", [repack, "-l", f"/tas:CHUNK={c}x8x8"] if repack else None,
                                        args.repeat, True, tools, args.rechunker_python))
            _rm(w / "pencil-out.nc")
        if "gzip" in cases or "h5-zarr-h5" in cases:
            nt = max(16, int(4096 * s)) // 16 * 16
            gz = w / "gzip.h5"
            if not gz.exists():
                make_h5_gzip(gz, nt, 256)
            trace = w / "gzip.jsonl"
            trace_reads(gz, "/x", trace)
            if "gzip" in cases:
                results.append(compare_case("gzip", gz, trace, "/x", "hdf5:chunks=16x256x256,codec=none",
                                            w / "gzip-out.h5", "1GiB", [repack, "-f", "/x:NONE"] if repack else None,
                                            args.repeat, False, tools, args.rechunker_python))
                _rm(w / "gzip-out.h5")
            if "h5-zarr-h5" in cases:
                z = w / "h5z.zarr"
                r1 = compare_case("h5-to-zarr", gz, trace, "/x", "zarr:chunks=16x128x128,codec=zstd", z, "1GiB",
                                  None, args.repeat, False)
                results.append(r1)
                tz = w / "h5z.jsonl"
                trace_reads(z, "/x", tz)
                back = w / "h5z-back.h5"
                r2 = compare_case("zarr-to-h5", z, tz, "/x", "hdf5:chunks=16x256x256,codec=lz4", back, "1GiB",
                                  None, args.repeat, False)
                eq, why = arrays_equal(gz, back)
                r2["equal_to_original"] = eq
                print(f"h5 -> zarr -> h5 equal to the original: {eq} {why}", flush=True)
                results.append(r2)
                _rm(z)
                _rm(back)
        if "shards" in cases:
            nt = max(64, int(4096 * s)) // 64 * 64
            zs = w / "shards-src.zarr"
            if not zs.exists():
                make_zarr(zs, nt, 256)
            trace = w / "shards.jsonl"
            trace_reads(zs, "/x", trace)
            results.append(compare_case("shards", zs, trace, "/x", "zarr:chunks=16x64x64,shards=64x256x256",
                                        w / "shards-out.zarr", "1GiB", None, args.repeat, False))
            _rm(w / "shards-out.zarr")
        if "kill" in cases:
            results.append(kill_case(w, args.kills, s, args.seed))
        for workload in filter(None, args.real.split(",")):
            results.append(real_compare_case(w, workload, args.runs))
    finally:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))
        if not args.keep:
            shutil.rmtree(w, ignore_errors=True)
    print(render(results))
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
