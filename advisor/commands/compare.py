"""``ioadvisor compare --substitute SRC=DEST -- python app.py ...``: the program on the original and on the
copy (``advisor.apply.compare``), cold, alternating; the measured speed-up beside the advice's claim."""
from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser("compare", help="run a program on the original data and on the rewritten copy, cold, "
                                       "alternating; measured vs claimed speed-up")
    p.add_argument("--substitute", action="append", default=[], metavar="SRC=DEST", required=True,
                   help="serve opens of SRC from DEST (repeatable; same library)")
    p.add_argument("--runs", type=int, default=3, metavar="N", help="runs on each side (default 3)")
    p.add_argument("--trace", metavar="TRACE", help="the trace the advice came from: its claim for the copy's library (the run's speed-up, Amdahl: "
                        "the rest of the run unchanged), shown with the traced run it rests on")
    p.add_argument("--claim", type=float, metavar="X", help="the claimed speed-up, if known")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("program", nargs="+", help="-- python app.py args...")
    p.set_defaults(func=run)


def run(args) -> int:
    from advisor.apply.compare import (claim_note, claimed_run, claimed_saving, claimed_speedup, compare,
                                       parse_substitutions)

    subs = parse_substitutions(args.substitute)
    claimed, saved, traced, note = args.claim, None, None, None
    if claimed is None and args.trace:
        from advisor.api import advise
        from advisor.apply.targets import library_of_path

        advice, library = advise(args.trace), library_of_path(next(iter(subs.values())))
        claimed, saved = claimed_speedup(advice, library), claimed_saving(advice, library)
        traced, note = claimed_run(advice, library), claim_note(advice, library)
    command = args.program[1:] if args.program and args.program[0] == "--" else args.program
    result = compare(command, subs, runs=args.runs, claimed=claimed, saved_seconds=saved, traced_run=traced,
                     note=note)
    print(json.dumps(result.get_config()) if args.json else result.table())
    return 0
