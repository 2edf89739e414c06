"""``ioadvisor trace show|merge|convert|plot``: inspect a trace, merge per-rank traces, change its format, draw its
access map."""
from __future__ import annotations

import json
import os
import sys

import numpy as np

from advisor import progress
from instrumentation.formats import untraced_inputs
from instrumentation.patterns import DatasetUsage, summarize
from instrumentation.records import ProcessInfo
from instrumentation.tracefile import Trace, is_jsonl, load_trace, write_trace

from . import add_quiet_option, with_progress
from instrumentation.errors import InputError


def _size(nbytes: float) -> str:
    if nbytes < 1000:
        return f"{nbytes:.0f} B"
    for unit in ("KB", "MB"):
        nbytes /= 1000
        if nbytes < 1000:
            return f"{nbytes:.1f} {unit}"
    return f"{nbytes / 1000:.1f} GB"


def _dims(shape) -> str:
    return "contiguous" if shape is None else "(" + ", ".join(map(str, shape)) + ")"


def _ranks(ranks: tuple[int, ...]) -> str:
    if not ranks:
        return "-"
    if ranks == tuple(range(ranks[0], ranks[-1] + 1)) and len(ranks) > 2:
        return f"{ranks[0]}-{ranks[-1]}"
    return ",".join(map(str, ranks))


def _type(d) -> str:
    """The element type as a user would name it: ``float32``, ``vlen-string``, ``compound (12 B)``."""
    dt = np.dtype(d.dtype)
    tclass = d.type_class or "float"
    if tclass in ("integer", "float", "complex", "bool", "time"):
        return dt.name
    if tclass in ("vlen-string", "vlen", "reference", "object"):
        return tclass
    return f"{tclass} ({dt.itemsize} B)" if tclass != "enum" else f"enum of {dt.name}"


def format_usage(u: DatasetUsage) -> str:
    """A few lines describing one dataset's use in a trace."""
    d = u.dataset
    filters = ",".join(f.name for f in d.filters) or "none"
    lines = [
        f"[{d.id}] {d.library} {d.label}",
        f"    shape {_dims(d.shape)} {_type(d)}, chunks {_dims(d.chunks)}"
        + (f", shards {_dims(d.shards)}" if d.shards else "") + f", filters {filters}",
    ]
    for op, n, nbytes, seconds, pattern in (
        ("reads ", u.n_reads, u.bytes_read, u.read_seconds, u.reads),
        ("writes", u.n_writes, u.bytes_written, u.write_seconds, u.writes),
    ):
        if n:
            lines.append(f"    {op} {n:>8}  {_size(nbytes):>9}  {seconds:8.3f} s  {pattern.describe()}")
    if not u.n_reads and not u.n_writes:
        from advisor.screening import why_not_advised

        lines.append(f"    {why_not_advised(d, d.shape, 0)}")
    lines.append(f"    ranks {_ranks(u.ranks)}")
    return "\n".join(lines)


def _process_tree(processes: tuple[ProcessInfo, ...]) -> list[str]:
    """One line per process, each under its parent (processes whose parent is not in the trace at the top)."""
    children: dict[int, list[ProcessInfo]] = {}
    pids = {p.pid for p in processes}
    for p in processes:
        children.setdefault(p.ppid if p.ppid in pids and p.ppid != p.pid else None, []).append(p)
    lines = []

    def walk(p: ProcessInfo, depth: int) -> None:
        command = " ".join(p.argv)[:60] or "?"
        lines.append(f"    {'  ' * depth}{p.pid} ({p.state}) {p.accesses} accesses: {command}")
        for c in children.get(p.pid, []):
            walk(c, depth + 1)

    for top in children.get(None, []):
        walk(top, 0)
    return lines


def format_capture(trace: Trace) -> list[str]:
    """What the trace saw and what it knows it missed (per rank when there are several)."""
    lines = []
    for h in trace.headers:
        rank = f"rank {h.rank}: " if len(trace.headers) > 1 else ""
        if h.capture:
            lines.append(f"{rank}captured: {'; '.join(h.capture)}")
        for lib in h.libraries:
            lines.append(f"{rank}libhdf5 hooked: {lib}")
        if len(h.processes) > 1:
            lines.append(f"{rank}processes ({len(h.processes)}, by parent):")
            lines += _process_tree(h.processes)
        for note in h.missed:
            lines.append(f"{rank}missed: {note}")
    return lines


def format_trace(trace: Trace, usages: list[DatasetUsage]) -> str:
    """The text ``ioadvisor trace show`` prints: "complete" only when nothing is known to be missing."""
    if not trace.complete:
        state = "truncated: prefix only"
    elif trace.missed:
        state = f"incomplete: {len(trace.missed)} known miss{'es' if len(trace.missed) > 1 else ''}"
    else:
        state = "complete"
    n_read = sum(u.n_reads for u in usages)
    n = trace.n_access
    head = (f"{trace.source}: {len(trace.datasets)} datasets, {n} accesses "
            f"({n_read} reads, {n - n_read} writes), {trace.nprocs} rank(s), "
            f"host {trace.header.host} ({state})")
    facts = trace.header.facts if trace.header.synthetic else ()
    lines = [head] + format_capture(trace)
    if trace.header.synthetic:
        lines += ["synthetic trace: accesses rebuilt from a summary, not captured; "
                  f"{len(trace.header.guessed())} facts guessed (marked ?)"]
        lines += [f"  {'?' if f.guessed else '-'} {f.fact}: {f.detail}" for f in facts if not f.dataset]
    for u in usages:
        lines.append(format_usage(u))
        lines += [f"    {'?' if f.guessed else '-'} {f.fact}: {f.detail}" for f in facts if f.dataset == u.dataset.key]
    lines += [f"{path}: {what}" for path, _, what in untraced_inputs(trace)]
    return "\n".join(lines)


def register(sub) -> None:
    p = sub.add_parser("trace", help="show or merge trace files")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = actions.add_parser("show", help="summarise a trace: datasets, reads/writes, bytes, access pattern")
    show.add_argument("trace", metavar="TRACE", help="trace (columnar directory or JSON Lines file)")
    show.add_argument("--allow-truncated", action="store_true",
                      help="use the readable prefix of a trace whose process did not finish")
    show.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_quiet_option(show)
    show.set_defaults(func=with_progress("trace show", run_show))
    merge = actions.add_parser("merge", help="merge per-rank traces into one view")
    merge.add_argument("traces", nargs="+", metavar="TRACE", help="the traces to merge (say, one per rank)")
    merge.add_argument("-o", "--output", required=True, metavar="OUT",
                       help="merged trace to write: OUT ending in .jsonl gives JSON Lines, any other name a "
                            "columnar trace directory")
    merge.add_argument("--allow-truncated", action="store_true",
                       help="merge the readable prefix of traces whose process did not finish")
    merge.set_defaults(func=run_merge)
    convert = actions.add_parser(
        "convert", help="convert a trace: OUT ending in .jsonl gives JSON Lines, any other name a columnar trace")
    convert.add_argument("input", metavar="IN", help="trace to read (columnar directory or JSON Lines file)")
    convert.add_argument("output", metavar="OUT", help="trace to write: *.jsonl for JSON Lines, else columnar")
    convert.add_argument("--allow-truncated", action="store_true",
                         help="convert the readable prefix of a trace whose process did not finish")
    convert.set_defaults(func=run_convert)
    plot = actions.add_parser(
        "plot", help="draw the access map: bytes per chunk on the array, and positions read/written over time")
    plot.add_argument("trace", metavar="TRACE", help="trace to draw (columnar directory or JSON Lines file)")
    plot.add_argument("-o", "--output", required=True, metavar="IMAGE",
                      help="picture to write; the format follows the name (.png, .svg, .pdf)")
    plot.add_argument("--dataset", metavar="NAME",
                      help="dataset (id, path or file::path; default: the one with the most bytes accessed)")
    plot.add_argument("--chunks", metavar="A,B,...", help="also draw this chunk grid (e.g. a recommended one)")
    plot.add_argument("--allow-truncated", action="store_true",
                      help="use the readable prefix of a trace whose process did not finish")
    add_quiet_option(plot)
    plot.set_defaults(func=with_progress("trace plot", run_plot))


def run_show(args) -> int:
    bar = progress.current()
    bar.describe("loading rows")
    trace = load_trace(args.trace, allow_truncated=args.allow_truncated, times=("dt",), step=bar.set)
    bar.describe(f"summarizing {trace.n_access} accesses")
    usages = summarize(trace)
    if args.json:
        json.dump({"trace": trace.source, "complete": trace.complete and not trace.missed,
                   "nprocs": trace.nprocs, "missed": list(trace.missed),
                   "processes": [p.get_config() for h in trace.headers for p in h.processes],
                   "capture": sorted({c for h in trace.headers for c in h.capture}),
                   "synthetic": trace.header.synthetic, "facts": [f.get_config() for f in trace.header.facts],
                   "datasets": [u.get_config() for u in usages]}, sys.stdout, indent=1)
        print()
    else:
        print(format_trace(trace, usages))
    return 0


def run_plot(args) -> int:
    from advisor.accessmap import access_map, pick
    from advisor.render.accessmap import save_map

    recommended = None
    if args.chunks:
        try:
            recommended = tuple(int(c) for c in args.chunks.split(","))
        except ValueError:
            raise InputError(f"--chunks must be integers separated by commas, got {args.chunks!r}") from None
    bar = progress.current()
    bar.describe("loading rows")
    trace = load_trace(args.trace, allow_truncated=args.allow_truncated, step=bar.set)
    ds = pick(trace, args.dataset)
    bar.describe(f"mapping {trace.columns_of(ds.id).n_access} accesses")
    if recommended is not None and (len(recommended) != len(ds.shape) or min(recommended) < 1):
        raise InputError(f"--chunks {args.chunks}: {ds.key} has {len(ds.shape)} dimensions; "
                         "give one positive size per dimension")
    m = access_map(trace, ds, recommended=recommended)
    save_map(m, args.output)
    others = sorted(d.path for d in trace.accessed() if d.id != ds.id)
    print(f"ioadvisor: wrote {args.output}: {m.describe()}"
          + (f" (other datasets: {', '.join(others[:5])}{', ...' if len(others) > 5 else ''}; --dataset NAME)"
             if others and args.dataset is None else ""), file=sys.stderr)
    return 0


def run_merge(args) -> int:
    from instrumentation.merge import merge_files
    from instrumentation.pendingconvert import settle, settled_copy_done

    # a native run's raw logs are converted first (docs/trace-format.md, pending batch); where its directory is
    # read-only, a converted copy of it is merged
    copies = {p: settle(p) for p in args.traces if os.path.isdir(p)}
    traces = [copies.get(p) or p for p in args.traces]
    try:
        # columnar output batch by batch (the ranks' accesses never sit in memory together); JSON Lines is an export
        n_traces, n_access, n_ds = merge_files(traces, args.output, allow_truncated=args.allow_truncated)
    finally:
        for where in copies.values():
            if where is not None:
                settled_copy_done(where)
    print(f"ioadvisor: merged {n_traces} traces ({n_access} accesses, "
          f"{n_ds} datasets) into {args.output}", file=sys.stderr)
    return 0


def run_convert(args) -> int:
    trace = load_trace(args.input, allow_truncated=args.allow_truncated)
    write_trace(trace, args.output)
    print(f"ioadvisor: wrote {args.output} ({trace.n_access} accesses, {len(trace.datasets)} datasets, "
          f"{'JSON Lines' if is_jsonl(args.output) else 'columnar'})", file=sys.stderr)
    return 0
