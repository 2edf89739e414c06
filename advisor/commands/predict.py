"""``ioadvisor predict TRACE --layout ...``: predicted time per candidate layout, by term."""
from __future__ import annotations

import json
import sys

from instrumentation.tracefile import load_trace

from . import add_profile_option, add_quiet_option, with_progress
from instrumentation.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("predict", help="predict HDF5/Zarr time of a traced access pattern per layout")
    p.add_argument("trace", help="trace (columnar directory or JSON Lines file) from `ioadvisor run` / advisor.trace()")
    p.add_argument("--layout", action="append", metavar="SPEC",
                   help="candidate layout, repeatable: current | hdf5:chunks=65536x8[,cache=64MiB,slots=N,w0=X]"
                        " | hdf5:contiguous | zarr:chunks=1000x8[,shards=65536x8] (default: current). "
                        "cache, slots, w0: HDF5's chunk cache (bytes, hash slots, and w0 in [0, 1], the "
                        "preference for evicting chunks already read or written whole); filtered=0|1: chunks "
                        "pass a compression filter (whole-chunk decode); ratio=R: stored/raw bytes. Keys not "
                        "given keep the traced dataset's values (contiguous HDF5 drops its filters)")
    add_profile_option(p)
    p.add_argument("--procs", type=int, default=1, metavar="P", help="processes for the parallel model")
    p.add_argument("--servers", type=int, metavar="C", help="data servers / stripe count c (default: profile's)")
    p.add_argument("--dataset", metavar="NAME", help="dataset id, path or file::path (default: most accessed)")
    p.add_argument("--allow-truncated", action="store_true", help="use the readable prefix of a cut trace")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per layout")
    add_quiet_option(p)
    p.set_defaults(func=with_progress("predict", run, compiles=True))


def _format(preds, grounded=None) -> str:
    from iomodel.cost import TERMS

    used = [t for t in TERMS if any(p.terms.get(t, 0.0) > 0 for p in preds)] or list(TERMS)[:4]
    head = ["layout", "seconds"] + (["calibrated", "vs traced"] if grounded else []) + used
    rows = [[p.layout.label, f"{p.seconds:.4g}"]
            + ([f"{g['calibrated_seconds']:.4g}", f"{g['speedup_vs_traced']:.3g}x"] if grounded else [])
            + [f"{p.terms[t]:.3g}" for t in used] for p, g in zip(preds, grounded or [None] * len(preds))]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in [head] + rows]
    if preds and preds[0].procs > 1:
        lines.append(f"parallel model: p={preds[0].procs} processes, time = slowest rank")
    return "\n".join(lines)


def _grounded(trace, ds, preds, profile, procs) -> tuple[list[dict] | None, str]:
    """Per prediction: calibrated on the trace's own timings (``iomodel.intrace``) and its speed-up over the
    traced time of the layout the trace was recorded on; (None, "") for an imported (synthetic) trace or one
    without timings."""
    from iomodel.intrace import calibrate_in_trace, traced_seconds

    traced = traced_seconds([a for a in trace.accesses if a.dataset == ds.id])
    if trace.header.synthetic or traced <= 0:
        return None, ""
    cals = calibrate_in_trace(trace, profile, max(procs, trace.nprocs))
    out = []
    for p in preds:
        cal = cals.get(p.library)
        within = cal.within_terms(p.variables.as_features(), lambda v, lib=p.library: profile.coefficient(lib, v)) \
            if cal is not None else None
        seconds = sum(cal.scale(p.terms, within).values()) if cal is not None else p.seconds
        out.append({"calibrated_seconds": seconds, "traced_seconds": traced,
                    "speedup_vs_traced": traced / seconds if seconds > 0 else float("inf")})
    text = f"traced calls of {ds.path or ds.label} on the recorded layout: {traced:.4g} s; " + (
        cals[ds.library].describe() if ds.library in cals else "not calibrated")
    return out, text


def run(args) -> int:
    from advisor import progress
    from iomodel import load_profile, parse_layout, pick_dataset, predict
    from iomodel.probe import check_machine, fit_to_machine

    trace = load_trace(args.trace, allow_truncated=args.allow_truncated)
    ds = pick_dataset(trace, args.dataset)
    profile, machine_note = fit_to_machine(load_profile(args.profile))
    if args.procs < 1:
        raise InputError(f"--procs must be >= 1, got {args.procs}")
    if args.servers is not None and args.servers < 1:
        raise InputError(f"--servers must be >= 1, got {args.servers}")
    layouts = [parse_layout(spec, ds) for spec in (args.layout or ["current"])]
    bar = progress.current()
    bar.add_total(len(layouts))
    preds = []
    for lay in layouts:
        preds.append(predict(trace, lay, profile, procs=args.procs, servers=args.servers, dataset=ds))
        bar.advance()
    grounded, note_cal = _grounded(trace, ds, preds, profile, args.procs)
    if args.json:
        print(json.dumps([{**p.to_json_obj(), **(g or {})} for p, g in zip(preds, grounded or [None] * len(preds))]))
    else:
        print(f"{trace.source}: dataset {ds.label} {ds.library} shape {tuple(ds.shape)} {ds.dtype}, "
              f"{trace.columns_of(ds.id).n_access} accesses")
        print(_format(preds, grounded))
        if note_cal:
            print(note_cal)
        if machine_note:
            print(f"note: {machine_note}")
    note = check_machine(load_profile(args.profile), args.profile or "the default profile")
    if note:
        print(note, file=sys.stderr)
    return 0
