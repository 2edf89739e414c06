"""The text forms of a dataset's advice: the explanation in sentences and the ranked table."""
from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from advisor.terms import TERM_MEANING
from advisor.tuning import CALL_DOMINATES
from iomodel.layout import chunks_text, format_bytes

if TYPE_CHECKING:
    from advisor.results import DatasetAdvice, Recommendation


# ---------------------------------------------------------------------------- explanation

def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole > 0 else "0%"


def _dominant(r: Recommendation) -> tuple[str, float]:
    return max(r.terms.items(), key=lambda kv: kv[1]) if r.terms else ("", 0.0)


def pitfalls(r: Recommendation, pattern_reads=None) -> list[str]:
    """What makes a layout slow, read off its predicted variables and geometry (empty when nothing stands out)."""
    f, v, c = r.facts, r.variables, r.candidate
    out = []
    if c.library == "hdf5" and c.chunks is not None and f.get("cache_bytes") is not None:
        if f["chunk_bytes"] > f["cache_bytes"] and f["cache_bytes"] > 0:
            if c.compressor:
                out.append(f"its {format_bytes(f['chunk_bytes'])} chunks are larger than the "
                           f"{format_bytes(f['cache_bytes'])} HDF5 chunk cache, so every access decompresses "
                           f"whole chunks again ({format_bytes(v.get('s_decode', 0))} decoded)")
            else:
                out.append(f"its {format_bytes(f['chunk_bytes'])} chunks are larger than the "
                           f"{format_bytes(f['cache_bytes'])} HDF5 chunk cache, so HDF5 bypasses the cache and "
                           f"reads piecewise ({v.get('n_rdisk', 0) + v.get('n_cache', 0):.0f} file requests)")
    if c.library == "zarr" and f.get("files_per_access", 0) >= 8:
        out.append(f"each access opens about {f['files_per_access']:.0f} chunk files")
    elif f.get("chunks_per_access", 0) >= 8:
        out.append(f"each access visits about {f['chunks_per_access']:.0f} chunks")
    if f.get("read_amplification", 0) >= 4:
        out.append(f"it reads {f['read_amplification']:.0f}x the bytes the program asked for "
                   + ("(sieve-buffer windows around small selections)" if c.chunks is None
                      else "(whole chunks around small selections)"))
    if f.get("partial_writes", 0) >= 0.2:
        out.append(f"{100 * f['partial_writes']:.0f}% of the chunk writes are partial: "
                   "read-modify-write of the chunk" + (" (the whole shard for Zarr)" if c.shards else ""))
    return out


def _gain_interval(adv: DatasetAdvice, r: Recommendation) -> str:
    """The speed-up's 95% interval: the current time over the ends of ``r``'s interval."""
    lo, hi = r.seconds_ci
    if not (lo > 0 and hi > 0):
        return "interval unknown"
    return f"95% interval {adv.current_seconds / hi:.3g}-{adv.current_seconds / lo:.3g}x"


def explain(adv: DatasetAdvice, reads=None, writes=None) -> list[str]:
    """Why the winner wins, in sentences computed from the predictions."""
    rec, cur = adv.recommendation, adv.current
    out = []
    ci = rec.seconds_ci
    if adv.traced_seconds:
        model = f", {cur.model_seconds:.3g} s before calibration" if cur.model_seconds is not None else ""
        out.append(f"The traced calls took {adv.traced_seconds:.3g} s; the model predicts {cur.seconds:.3g} s "
                   f"for the current layout{model}.")
    if adv.verdict == "keep":
        out.append(f"Verdict: keep the current layout ({cur.label}): {adv.verdict_reason}.")
        alt = adv.best_change
        if alt is not None:
            out.append(f"Best change: {alt.label}, predicted {alt.seconds:.3g} s (95% interval "
                       f"{alt.seconds_ci[0]:.3g}-{alt.seconds_ci[1]:.3g} s), {adv.speedup_vs_current(alt):.3g}x "
                       f"({_gain_interval(adv, alt)}).")
    else:
        head = (f"Verdict: change to {rec.label}, predicted {rec.seconds:.3g} s (95% interval {ci[0]:.3g}-"
                f"{ci[1]:.3g} s) for the traced {adv.pattern or 'accesses'}")
        cmp = [f"{adv.speedup_vs_current():.3g}x faster than the current layout "
               f"({adv.current_seconds:.3g} s {'traced' if adv.traced_seconds and adv.calibrated else 'predicted'}; "
               f"{_gain_interval(adv, rec)})"]
        for k, d in adv.defaults.items():
            cmp.append(f"{adv.speedup(d):.3g}x vs {k}'s default {d.label} ({d.seconds:.3g} s)")
        out.append(head + ": " + "; ".join(cmp) + ".")
        run = adv.run_speedup()
        if run is not None:
            lo, hi = adv.run_speedup(at=ci[1]), adv.run_speedup(at=ci[0])
            out.append(f"For the run ({adv.run_seconds:.3g} s from its start to its last call, and to its exit when "
                       "measured (notes), "
                       f"{_pct(adv.run_seconds - adv.current_seconds, adv.run_seconds)} of it outside this array's "
                       f"calls, which no layout changes"
                       + (f" but for the program's imports, {adv.switch_seconds[rec.library]:+.2g} s in {rec.library}"
                          if rec.library != adv.library and rec.library in adv.switch_seconds else "")
                       + f"): {run:.3g}x (95% interval {lo:.3g}-{hi:.3g}x).")
        if adv.rewrite_seconds is not None:
            out.append(f"Rewriting the array into it costs about {adv.rewrite_seconds:.3g} s (read in the current "
                       "layout, write in the new one); it pays off after "
                       f"{adv.rewrite_seconds / max(adv.current_seconds - rec.seconds, 1e-12):.2g} runs like this one.")
    call = cur.terms.get("t_call", 0.0)
    if cur.seconds > 0 and call >= CALL_DOMINATES * cur.seconds:
        out.append(f"Per-call overhead dominates: t_call is {_pct(call, cur.seconds)} of the current layout's time "
                   f"({cur.variables.get('n_calls', 0):.0f} library calls); no layout removes it, fewer calls do.")
    for w in adv.whatifs:
        gain = adv.current_seconds / w.seconds if w.seconds > 0 else math.inf
        out.append(f"What-if (program change, same layout): {w.description}: {w.n_calls} calls, predicted "
                   f"{w.seconds:.3g} s, {gain:.3g}x faster than the current {adv.current_seconds:.3g} s "
                   "(`ioadvisor verify` measures it).")
    if adv.tie_rule:
        out.append(f"Several layouts are predicted within the model's resolution of the fastest; chosen by the "
                   f"near-tie rule: {adv.tie_rule}.")
    if adv.blocking is not None:
        # "dask-style" only where the program is known to be xarray/dask; a C or MPI program tiles by rank or step
        how = " (dask-style chunks)" if adv.idiom is not None else ""
        out.append(f"The program reads regular {'x'.join(map(str, adv.blocking))} blocks on a grid{how}: "
                   "chunk shapes that line up with them are preferred among near-ties.")
    term, t = _dominant(rec)
    if term:
        out.append(f"Its time is dominated by {term} ({_pct(t, rec.seconds)}: {TERM_MEANING.get(term, term)}).")
    if adv.verdict == "keep":
        return out
    if cur.candidate != rec.candidate and cur.seconds > rec.seconds:
        gains = {k: cur.terms.get(k, 0.0) - rec.terms.get(k, 0.0) for k in set(cur.terms) | set(rec.terms)}
        k = max(gains, key=gains.get)
        why = pitfalls(cur)
        out.append(f"Against the current layout ({cur.label}) the biggest saving is in {k} "
                   f"({cur.terms.get(k, 0.0):.3g} s -> {rec.terms.get(k, 0.0):.3g} s: {TERM_MEANING.get(k, k)})"
                   + (": " + "; ".join(why) if why else "") + ".")
    for k, d in adv.defaults.items():
        why = pitfalls(d)
        if why and d.candidate != rec.candidate and d.seconds > rec.seconds:
            out.append(f"{k}'s default ({d.label}) is slower because " + "; ".join(why) + ".")
    other = next((r for r in adv.candidates if r.library != rec.library), None)
    if other is not None:
        oterm, ot = _dominant(other)
        out.append(f"Best {other.library} alternative: {other.label} at {other.seconds:.3g} s "
                   f"({other.seconds / rec.seconds if rec.seconds > 0 else float('inf'):.3g}x slower; dominated by "
                   f"{oterm}, {_pct(ot, other.seconds)}).")
    if rec.candidate.compressor:
        codec_t = rec.terms.get("t_compress", 0.0) + rec.terms.get("t_decompress", 0.0)
        plain = next((r for r in adv.candidates if r.candidate == rec.candidate.with_codec(None, None)), None)
        tail = f"; uncompressed it would take {plain.seconds:.3g} s" if plain is not None else ""
        out.append(f"{rec.candidate.compressor} stores {rec.ratio:.3g}x less ({format_bytes(rec.stored_bytes)}) "
                   f"for {codec_t:.3g} s of (de)compression{tail}.")
    else:
        coded = next((r for r in adv.candidates if r.candidate.compressor), None)
        if coded is not None:
            out.append(f"Compression does not pay here: the best compressed candidate ({coded.label}) "
                       f"is predicted at {coded.seconds:.3g} s for {format_bytes(coded.stored_bytes)} stored.")
    mine = pitfalls(rec)
    if mine:
        out.append("Caveat for the recommended layout: " + "; ".join(mine) + ".")
    return out


# ---------------------------------------------------------------------------- table and Advice

def _ci(r: Recommendation) -> str:
    lo, hi = r.seconds_ci
    return f"{r.seconds:.3g} [{lo:.3g}, {hi:.3g}]" if hi > lo else f"{r.seconds:.3g}"


def _terms(r: Recommendation, n: int = 3) -> str:
    big = sorted(((k, t) for k, t in r.terms.items() if t > 0), key=lambda kv: -kv[1])[:n]
    return " ".join(f"{k[2:]}={_pct(t, r.seconds)}" for k, t in big)


def format_table(adv: DatasetAdvice) -> str:
    """The ranked table of one dataset: candidates, then the current layout and the defaults."""
    head = ["#", "library", "chunks", "cache/shards", "codec", "seconds [95% CI]", "terms", "stored",
            "vs current", "vs h5py", "vs zarr"]
    rows = []

    def row(tag: str, r: Recommendation) -> list[str]:
        c = r.candidate
        chunks = chunks_text(c.chunks)
        cs = c.cache_or_shards
        codec = "-" if not c.compressor else c.compressor + (f" {c.error_bound}" if c.error_bound else "")
        sp = [f"{o / r.seconds:.3g}x" if r.seconds > 0 and o is not None else "-"
              for o in (adv.current_seconds, *(d.seconds if d is not None else None
                                               for d in (adv.defaults.get("h5py"), adv.defaults.get("zarr"))))]
        return [tag, c.library, chunks, cs, codec, _ci(r), _terms(r), format_bytes(r.stored_bytes)] + sp

    for i, r in enumerate(adv.candidates, 1):
        rows.append(row(str(i), r))
    rows.append(row("current", adv.current))
    for k, d in adv.defaults.items():
        rows.append(row(f"{k} default", d))
    for w in adv.whatifs:  # the current layout, the program's accesses rewritten
        rows.append(row(f"what-if {w.kind}", replace(adv.current, seconds=w.seconds, seconds_ci=w.seconds_ci,
                                                     terms=w.terms)))
    widths = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]
    lines = ["  ".join(v.ljust(w) if i < 5 or i == 6 else v.rjust(w) for i, (v, w) in enumerate(zip(x, widths)))
             .rstrip() for x in [head] + rows]
    return "\n".join(lines)
