"""Joint cost of a candidate and the staged search over candidates.

Joint cost (per rank, the job taking as long as its slowest rank):
    seconds = I/O model on the stored bytes (iomodel: Layout.ratio = stored/raw,
              filtered chunks read and decoded whole)
            + s_encode / compress throughput + s_decode / decompress throughput
where s_encode / s_decode are the raw bytes the I/O model says go through the
filter pipeline, and the throughputs come from ``compression_model.estimate``
on the real data (cached per codec, bound, chunk shape and library).

95% interval: the compression estimate's ratio interval moves the stored bytes
(the byte terms s_rdisk, s_cache, s_wdisk scale linearly with them) and its
time interval scales the (de)compression seconds; the I/O seconds are then
widened by the profile's measured band of the I/O model itself
(``SystemProfile.band``: 2.5-97.5% quantiles of measured/predicted in calibration).

Search (each stage evaluates with the I/O model; nothing is timed for real):
1. every chunk shape once per library, with its primary cache/shard variant
   (on a systematic subsample of SCREEN_ACCESSES accesses for long traces);
2. every cache / shard variant of the best SHAPES_KEPT shapes per library;
3. every allowed compressor on the best CODEC_LAYOUTS layouts per library,
   I/O bytes scaled from one filtered replay per layout (screening);
4. the best FINALISTS re-replayed exactly with their compression ratio.
Candidates outside these sets are pruned (counted, not evaluated);
``exhaustive=True`` evaluates every candidate exactly (tests, benchmarks).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

from advisor import progress
from advisor.costmodel import (SAMPLE_BLOCKS, CodecCost, CostModel, DataSource, default_jobs, estimate_chunks,
                               fit_region, scale_bytes, with_facts)
from advisor.results import Recommendation
from advisor.candidates import Candidate, CodecChoice
from iomodel.layout import HDF5_DEFAULT_CACHE
from instrumentation.errors import InputError

SHAPES_KEPT = 3
"""Chunk shapes per library whose cache/shard variants are evaluated (stage 2)."""
CODEC_LAYOUTS = 1
"""Uncompressed layouts per library (distinct chunk shapes) that get every compressor (stage 3)."""
SCREEN_ACCESSES = 2000
"""Stage 1 ranks chunk shapes on a systematic subsample of at most this many accesses (every k-th, in order)."""
LARGE_TRACE = 200_000
"""Above this many accesses stages 2-3 run on a block sample and only the finalists and baselines are replayed
whole (each whole replay of a million accesses takes seconds)."""
SAMPLE_ACCESSES = 50_000
"""Accesses in that block sample, in SAMPLE_BLOCKS runs of consecutive accesses per rank (``advisor.costmodel``)."""
FINALISTS = 6
"""Best candidates re-evaluated exactly at the end (stage 4), at least ``top``."""
# ---------------------------------------------------------------------------- objective

@dataclass(frozen=True)
class Objective:
    """``time`` (optionally under max_bytes), ``read`` (the same on the reads alone: data written once and read
    many times; the advisor replays only the trace's reads) or ``size`` (under max_seconds)."""

    kind: str = "time"
    max_seconds: float | None = None
    max_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("time", "size", "read"):
            raise InputError(f"objective must be 'time', 'read' or 'size', got {self.kind!r}")
        if self.kind == "size" and self.max_seconds is None:
            raise InputError("objective 'size' needs --max-seconds (smallest stored size within that time)")
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise InputError(f"--max-seconds must be positive, got {self.max_seconds}")
        if self.max_bytes is not None and not self.max_bytes > 0:
            raise InputError(f"--max-bytes must be positive, got {self.max_bytes}")

    @property
    def by_time(self) -> bool:
        """Ranked by predicted seconds (``time`` and ``read``)."""
        return self.kind != "size"

    def feasible(self, r: Recommendation) -> bool:
        return ((self.max_seconds is None or r.seconds <= self.max_seconds)
                and (self.max_bytes is None or r.stored_bytes <= self.max_bytes))

    def key(self, r: Recommendation) -> tuple:
        """Sort key: feasible first, then the objective, then the other quantity."""
        main = (r.stored_bytes, r.seconds) if self.kind == "size" else (r.seconds, r.stored_bytes)
        return (not self.feasible(r),) + main

    def describe(self) -> str:
        if self.kind == "size":
            return f"size (the smallest stored within {self.max_seconds:g} s)"
        what = "the fastest reads" if self.kind == "read" else "the fastest"
        return f"{self.kind} ({what}" + (f" within {self.max_bytes} stored bytes)" if self.max_bytes else ")")


# ---------------------------------------------------------------------------- the search

@dataclass
class SearchResult:
    ranked: list[Recommendation]
    baselines: dict[str, Recommendation]
    n_generated: int
    n_evaluated: int
    notes: list[str]

    def scaled(self, factors: dict[str, dict[str, float]]) -> "SearchResult":
        """Every prediction with each term times its factor in ``factors[library]`` (terms not there: 1; the
        order may move a little: re-rank)."""
        return replace(self, ranked=[scale_terms(r, factors[r.library]) for r in self.ranked],
                       baselines={k: scale_terms(r, factors[r.library]) for k, r in self.baselines.items()})


def scale_terms(r: Recommendation, factors: dict[str, float]) -> Recommendation:
    """``r`` with each term times its factor in ``factors`` (1 when not there), its seconds their new sum, its
    interval in proportion (its uncalibrated ``model_seconds`` kept)."""
    terms = {k: t * factors.get(k, 1.0) for k, t in r.terms.items()}
    seconds = sum(terms.values())
    g = seconds / r.seconds if r.seconds > 0 else 1.0
    return replace(r, seconds=seconds, seconds_ci=(r.seconds_ci[0] * g, r.seconds_ci[1] * g), terms=terms)


def _primary(variants: list[Candidate]) -> Candidate:
    """The variant that screens a chunk shape: the largest HDF5 cache; Zarr sharded when offered."""
    if variants[0].library == "hdf5":
        return max(variants, key=lambda c: c.cache_bytes or 0)
    return next((c for c in variants if c.shards is not None), variants[0])


def search_size(candidates: Sequence[Candidate], n_baselines: int, top: int, sampled: bool, exhaustive: bool) -> int:
    """About how many layouts ``search`` replays (the progress bar's total): the baselines, one per chunk shape,
    the variants of the kept shapes, the compressors on the best layouts, the finalists."""
    cands = set(candidates)
    if exhaustive:
        return len(cands) + n_baselines
    groups: dict[tuple, int] = {}
    codecs: dict[tuple, int] = {}
    for c in cands:
        key = (c.library, c.chunks)
        if c.compressor is None:
            groups[key] = groups.get(key, 0) + 1
        else:
            codecs[key] = codecs.get(key, 0) + 1
    n = n_baselines + len(groups)
    for lib in {k[0] for k in groups}:
        n += sum(sorted((v for k, v in groups.items() if k[0] == lib), reverse=True)[:SHAPES_KEPT])
    for lib in {k[0] for k in codecs}:
        n += CODEC_LAYOUTS * max(v for k, v in codecs.items() if k[0] == lib)
    return n + (max(FINALISTS, top) + n_baselines if sampled else min(FINALISTS, sum(codecs.values())))


def search(model: CostModel, candidates: Sequence[Candidate], baselines: dict[str, Candidate],
           data: DataSource, objective: Objective = Objective(), *, top: int = 5,
           exhaustive: bool = False) -> SearchResult:
    """Evaluate candidates in stages (module docstring); baselines are always evaluated exactly."""
    notes: list[str] = []
    evaluated: dict[Candidate, Recommendation] = {}
    refused: dict[str, str] = {}

    def codec_cost(c: Candidate) -> CodecCost | None | str:
        if c.compressor is None:
            return None
        comm = model.comm if model.comm is not None and model.comm.Get_size() > 1 else None
        if comm is None or comm.Get_rank() == 0:
            cost, why = data.cost(CodecChoice(c.compressor, c.error_bound), c.chunks, c.library)
        if comm is not None:  # estimates include timings: rank 0's are everyone's, so all ranks search alike
            cost, why = comm.bcast((cost, why) if comm.Get_rank() == 0 else None, root=0)
        if cost is None:
            refused.setdefault(f"{c.compressor}({c.error_bound})" if c.error_bound else c.compressor, why)
            return "refused"
        return cost

    # long traces: stages 2-3 on a block sample (``staged``), the finalists then replayed whole (``evaluated``)
    sample = model.blocks(SAMPLE_ACCESSES) if model.n_accesses > LARGE_TRACE and not exhaustive else None
    staged: dict[Candidate, Recommendation] = {} if sample is not None else evaluated
    stage_model = sample if sample is not None else model
    bar, models = progress.current(), [model] + ([sample] if sample is not None else [])
    estimate = search_size(candidates, len(baselines), top, sample is not None, exhaustive)
    bar.add_total(estimate)

    def run(c: Candidate, exact: bool = True, m: CostModel = model, store=evaluated) -> Recommendation | None:
        if c in store and (store[c].exact or not exact):
            return store[c]
        cost = codec_cost(c)
        if cost == "refused":
            return None
        store[c] = m.evaluate(c, cost, exact=exact)
        return store[c]

    def prefetch(cands, exact: bool = True, m: CostModel = model, store=evaluated) -> None:
        """Count the variables of these candidates' layouts together (in parallel) before ``run`` uses them."""
        lays = []
        for c in cands:
            if c in store and (store[c].exact or not exact):
                continue
            cost = codec_cost(c)
            if cost == "refused":
                continue
            ratio = cost.ratio if cost is not None else 1.0
            lays.append(m.layout(c, 1.0 / ratio if exact or c.compressor is None else 1.0))
        m.prefetch(lays)

    def run_baselines() -> dict[str, Recommendation | None]:
        recs = {}
        for name, c in baselines.items():
            r = run(c)
            if r is None and c.compressor is not None:  # zarr's default zstd cannot be estimated: compare bare
                r = run(replace(c, compressor=None))
            recs[name] = r
        return recs

    # a long trace's baselines are replayed whole with its finalists (stage 4), one prefetch sharing all the
    # replays out over the jobs: alone, one costly baseline (zarr's default chunks) kept the other jobs idle
    late = sample is not None
    if late:
        for c in baselines.values():
            codec_cost(c)  # asked now, as the baselines' evaluation would: estimates and refusals in the same order
    else:
        prefetch(baselines.values())
        base_recs = run_baselines()

    plain = [c for c in candidates if c.compressor is None]
    coded = [c for c in candidates if c.compressor is not None]
    if exhaustive:
        prefetch(plain + coded)
        for c in plain + coded:
            run(c)
    else:
        # 1. one primary variant per (library, chunk shape)
        groups: dict[tuple, list[Candidate]] = {}
        for c in plain:
            groups.setdefault((c.library, c.chunks), []).append(c)
        if model.n_accesses > SCREEN_ACCESSES:
            sub = model.subsample(SCREEN_ACCESSES)
            models.append(sub)
            sub.prefetch([sub.layout(_primary(v)) for v in groups.values()])
            screened = {k: sub.evaluate(_primary(v)) for k, v in groups.items()}
        else:
            prefetch([_primary(v) for v in groups.values()])
            screened = {k: run(_primary(v)) for k, v in groups.items()}
        # 2. every variant of the best shapes per library
        kept = []
        for lib in sorted({k[0] for k in groups}):
            best = sorted((k for k in groups if k[0] == lib), key=lambda k: objective.key(screened[k]))
            kept += [c for k in best[:SHAPES_KEPT] for c in groups[k]]
        prefetch(kept, m=stage_model, store=staged)
        for c in kept:
            run(c, m=stage_model, store=staged)
        # 3. compressors on the best uncompressed layouts (distinct chunk shapes) per library
        for lib in sorted({c.library for c in coded}):
            mine = sorted((r for c, r in staged.items() if c.library == lib and c.compressor is None
                           and c.chunks is not None), key=objective.key)
            keep, shapes = [], set()
            for r in mine:
                if r.candidate.chunks not in shapes:
                    shapes.add(r.candidate.chunks)
                    keep.append(r.candidate)
                if len(keep) == CODEC_LAYOUTS:
                    break
            mine = [c for c in coded if any(c.with_codec(None, None) == k for k in keep)]
            prefetch(mine, exact=False, m=stage_model, store=staged)
            for c in mine:
                run(c, exact=False, m=stage_model, store=staged)
        # 4. the finalists exactly (on a long trace: whole, as the sample only ranked them)
        order = sorted(staged.values(), key=objective.key)
        finalists = [r.candidate for r in order[:max(FINALISTS, top)] if sample is not None or not r.exact]
        if late:
            bare = [replace(c, compressor=None) for c in baselines.values() if codec_cost(c) == "refused"]
            prefetch(finalists + list(baselines.values()) + bare)
            base_recs = run_baselines()  # before the finalists: ``evaluated`` in the order ties are ranked by
        else:
            prefetch(finalists)
        for c in finalists:
            run(c, exact=True)
        n_pruned = len(set(candidates)) - len([c for c in set(candidates) if c in evaluated or c in staged])
        if sample is not None:
            notes.append(f"{model.n_accesses} accesses: {len(staged)} candidates ranked on a sample of "
                         f"{sample.n_accesses} accesses in {SAMPLE_BLOCKS} blocks per rank; the best "
                         f"{len(finalists)} and the baselines replayed on every access")
        if n_pruned:
            notes.append(f"{n_pruned} of {len(set(candidates))} candidates pruned: cache/shard variants kept for "
                         f"the best {SHAPES_KEPT} chunk shapes per library, compressors tried on the best "
                         f"{CODEC_LAYOUTS} uncompressed layouts per library")
    done = sum(m.n_replays for m in models)  # the bar ends at what was done: the estimate made exact
    if done > estimate:
        bar.add_total(done - estimate)
    else:
        bar.advance(estimate - done)
    notes += model.notes + (sample.notes if sample is not None else [])
    for name, why in refused.items():
        notes.append(f"compressor {name} not used: {why}")
    ranked, seen = [], set()
    for r in sorted(evaluated.values(), key=lambda r: objective.key(r) + (_cache_distance(r.candidate),)):
        c = r.candidate
        key = (c.library, c.chunks, c.shards, c.compressor, c.error_bound)
        if key not in seen:  # one row per layout: its best cache variant
            seen.add(key)
            ranked.append(r)
    # facts for the explanation: winners and the baselines they are compared with
    for i, r in enumerate(ranked[:top]):
        ranked[i] = with_facts(model, r)
    base_recs = {k: with_facts(model, r) for k, r in base_recs.items()}
    return SearchResult(ranked, base_recs, len(set(candidates) | set(baselines.values())),
                        len(set(evaluated) | set(staged)), notes)


def _cache_distance(c: Candidate) -> float:
    """Tie-break between equally fast cache variants: the one closest to HDF5's default."""
    return abs(math.log2((c.cache_bytes or 0) + 1) - math.log2(HDF5_DEFAULT_CACHE[0] + 1))


__all__ = ["CodecCost", "CostModel", "DataSource", "Objective", "SearchResult", "default_jobs", "estimate_chunks",
           "fit_region", "scale_bytes", "search"]
