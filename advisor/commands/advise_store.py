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
    advice = advise_store(trace, stores, args.top)
    savings = metadata_savings(load_requests(trace.source)) if trace.source else []

    def group_of(url):
        return next((s.get_config() for s in savings if url == s.root or url.startswith(s.root + "/")), None)

    if args.json:
        print(json.dumps([{"dataset": a.label, "url": a.url, "host": a.host, "model": a.model_source,
                           "current": {**a.current.layout.get_config(), "seconds": a.current.seconds},
                           "ranked": [{**c.layout.get_config(), "seconds": c.seconds, "terms": c.terms,
                                       "requests": c.requests} for c in a.ranked],
                           "consolidated_metadata": group_of(a.url)} for a in advice]))
    else:
        for a in advice:
            print(a.render(args.top))
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
