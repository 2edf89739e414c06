"""``ioadvisor advise`` for arrays on an object store: their advice stays on the store (``advisor.objectstore``);
the rest of the trace goes on to the local model."""
from __future__ import annotations

import json
import sys


def advise_on_stores(trace, args):
    """Print the store advice of ``trace``'s arrays on object stores; the trace without them (None if nothing
    is left to advise)."""
    import numpy as np

    from advisor.objectstore import advise_store, on_store
    from advisor.objectstore_metadata import metadata_savings
    from instrumentation.storerequests import load_requests
    from instrumentation.tracefile import Trace
    from iomodel.objectstore import load_stores
    from iomodel.profile import default_profile_path

    on = {i for i, d in trace.datasets.items() if on_store(d.file)}
    if not on:
        return trace
    stores = load_stores(args.profile or default_profile_path())
    storage_options = store_options(getattr(args, "storage_options", None), getattr(args, "endpoint_url", None))
    codec_notes: list[str] = []
    estimated: dict = {}

    def codecs_of(ds):
        from advisor.objectstore_codecs import estimate_store_codecs

        found, notes = estimate_store_codecs(ds, storage_options, max_error=getattr(args, "max_error", None),
                                             lossless_only=bool(getattr(args, "lossless_only", False)))
        codec_notes.extend(notes)
        estimated[ds.label] = found
        return found

    no_data = getattr(args, "no_data", False)
    advice = advise_store(trace, stores, args.top, None if no_data else codecs_of)
    savings = metadata_savings(load_requests(trace.source)) if trace.source else []

    def group_of(url):
        return next((s.get_config() for s in savings if url == s.root or url.startswith(s.root + "/")), None)

    if args.json:
        print(json.dumps([{"dataset": a.label, "url": a.url, "host": a.host, "model": a.model_source,
                           "current": {**a.current.layout.get_config(), "seconds": a.current.seconds},
                           "ranked": [{**c.layout.get_config(), "seconds": c.seconds, "terms": c.terms,
                                       "requests": c.requests} for c in a.ranked],
                           "consolidated_metadata": group_of(a.url),
                           "codecs": [k.get_config() for k in estimated.get(a.label, ())]} for a in advice]))
    else:
        for a in advice:
            print(a.render(args.top))
            found = [k for k in estimated.get(a.label, ()) if k.name != "none"]
            if found:
                print("  compressors estimated on a sample read from the store: " + ", ".join(
                    f"{k.name}{'(' + k.error_bound + ')' if k.error_bound else ''} {k.ratio:.2f}x" for k in found))
        for note in dict.fromkeys(codec_notes):
            print(f"  note: {note}")
        for s in savings:
            print(s.render())
        print()
    sys.stdout.flush()
    rest = {i: d for i, d in trace.datasets.items() if i not in on}
    if not rest:
        return None
    cols = trace.columns
    keep = ~np.isin(cols.ds, sorted(on))
    return Trace(trace.headers, rest, cols.take(keep), [r for r in trace.resizes if r.dataset in rest],
                 trace.complete, trace.source)


def store_options(text: str | None, endpoint_url: str | None) -> dict | None:
    """``--storage-options JSON`` (an object) with ``--endpoint-url`` put in its ``client_kwargs``; None when
    neither is given (the client's own configuration: environment, ~/.aws)."""
    from instrumentation.errors import InputError

    if not text and not endpoint_url:
        return None
    try:
        options = json.loads(text) if text else {}
    except json.JSONDecodeError as exc:
        raise InputError(f"--storage-options: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(options, dict):
        raise InputError("--storage-options: must be a JSON object")
    if endpoint_url:
        options.setdefault("client_kwargs", {})["endpoint_url"] = endpoint_url
    return options
