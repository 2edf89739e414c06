"""From ranked candidates to a verdict: near-ties, keep-or-change, the rewrite's cost, the program's blocking.

Kept apart from the search (``advisor.search``) so that how candidates are
evaluated and how one of them is chosen change independently.

- Near-ties: the candidates whose predicted time is within the model's
  resolution of the best (``TraceCalibration.resolution``: what the in-trace
  calibration left unexplained, at least 10%) are ordered by ``TIE_RULES``
  (the current layout, no extreme chunk, then the predictions that rest on
  what the trace measured, then robust layouts), and the rule that decided
  is named.
- Verdict: change only when the gain over the traced current time is at least
  ``MIN_GAIN``, and at least ``MIN_SURE_GAIN`` at the slow end of the
  recommended layout's 95% interval; else keep.
- Rewrite cost: the copy (read the array in its current layout, write it in the
  recommended one) replayed through the same calibrated model.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from typing import Callable, Sequence

from advisor.results import Recommendation
from advisor.candidates import Candidate
from advisor.costmodel import CostModel, storage_path
from instrumentation.columns import SLAB, as_columns
from instrumentation.records import READ, WRITE, AccessRecord, DatasetRecord, Selection
from iomodel.cost import TERMS
from iomodel.intrace import MIN_RESOLUTION, PRIOR_SPREAD, SHARED_TERMS, Z95
from iomodel.layout import HDF5_DEFAULT_CACHE, chunks_text

KiB, MiB = 1 << 10, 1 << 20

MIN_GAIN = 1.2
"""A change is recommended only for a predicted speed-up of at least this over the traced current time."""
MIN_SURE_GAIN = 1.1
"""... and only when the slow end of its 95% interval still gains this much: a rewrite whose gain may be noise
(a measured 1.05x) is not worth its cost."""

CHUNK_RANGE = (64 * KiB, 16 * MiB)
"""Chunk sizes that are neither a per-chunk-overhead trap nor a whole-array read for a small selection."""

CACHE_ALLOWANCE = 2 * HDF5_DEFAULT_CACHE[0]
"""Chunk-cache memory no program must be spared at the price of a layout predicted faster (16 MiB: the largest
chunk of CHUNK_RANGE; the fragile extremes ask for 64 MiB and more)."""

MAX_PADDING = 0.01
"""A chunk shape 'divides' the array when its edge chunks add at most this share of padding."""

AMPLIFICATION_STEP = 0.1
"""Read amplifications are compared to this step (a tenth of the bytes asked for): a compressed chunk's stored
bytes rounded up to whole pages made 1.14 against the uncompressed 1.13 on the regret benchmark's w02, and
that 1% decided against a layout predicted 10% faster."""

TIE_RULES = (
    "the current layout",
    "chunks of 64 KiB-16 MiB",
    "a prediction resting on what the trace measured",
    "less cache memory",
    "chunks that divide the array and line up with the program's blocks",
    "less read amplification",
)
"""Order in which near-ties are broken (module docstring): the current layout, no extreme chunk (a whole-array
chunk is read whole by any selection that touches it, and is fast only with a cache the reader must know to
set: regret's w01 took a 64 MiB chunk of its whole 1M x 16 array with a 64 MiB cache over 16 MiB chunks predicted
1% slower, and replayed 1.2x slower), a prediction made of what the trace's timings checked
(``measured_share``), then the other preferences for robust layouts."""

MEASURED_SHARE = 0.5
"""A prediction rests on what the trace measured when at least this share of it is (``measured_share``)."""
SIGNIFICANT = 0.05
"""A variable of the current layout's prediction was checked by the traced times when it holds this share of it."""
SHARED_VARIABLES = frozenset(v for t in SHARED_TERMS for v in TERMS[t])
"""Variables of the device, page-cache and copy terms: checked for the other library too."""

COPY_SLAB_BYTES = 64 * MiB
"""The rewrite is modelled as a copy in slabs of whole chunk rows of about this size."""


@dataclass(frozen=True)
class Blocking:
    """Regular blocks on a grid (dask chunks): block shape and grid origin per dimension, and which
    dimensions the program steps through (more than one block position)."""

    shape: tuple[int, ...]
    origin: tuple[int, ...]
    stepped: tuple[bool, ...]

    def describe(self) -> str:
        return chunks_text(self.shape)

    def aligned(self, chunks: Sequence[int] | None) -> bool:
        """Chunk boundaries fall on block boundaries (or blocks on chunk boundaries) where the program steps."""
        if chunks is None:
            return True
        for c, b, o, step in zip(chunks, self.shape, self.origin, self.stepped):
            if step and not ((b % c == 0 and o % c == 0) or (c % b == 0 and o % b == 0)):
                return False
        return True


def program_blocking(accesses, shape: Sequence[int], share: float = 0.8) -> Blocking | None:
    """The blocks of a dask-driven (or any block-by-block) program: at least ``share`` of the reads are boxes
    of one shape whose starts sit on that shape's grid (edge blocks may be smaller); None otherwise.

    ``accesses``: AccessColumns or AccessRecords; a run of accesses counts access by access (its starts
    are ``start + k * step``)."""
    cols = as_columns(accesses)
    ndim = len(shape)
    reads = cols.take(~cols.write) if cols.write.any() else cols  # views, not a copy, when only reads
    n_reads = reads.n_access
    if reads.width < ndim:
        reads = reads.widen(ndim)
    box = (reads.kind == SLAB) & (reads.ndim == ndim) & (reads.count[:, :ndim] == 1).all(axis=1)
    boxes = reads if box.all() else reads.take(box)
    rep = boxes.rep
    n_boxes = int(rep.sum())
    if n_boxes < 2 or n_boxes < share * n_reads:
        return None
    start, step, blk = boxes.start[:, :ndim], boxes.step[:, :ndim], boxes.block[:, :ndim]
    block = []
    for d in range(ndim):  # the most common block length, weighted by accesses (ties: the smallest)
        if blk[:, d].min() == blk[:, d].max():  # one length (no sort of a long trace's rows)
            block.append(int(blk[0, d]))
            continue
        values, inverse = np.unique(blk[:, d], return_inverse=True)
        block.append(int(values[np.argmax(np.bincount(inverse, weights=rep))]))
    block = tuple(block)
    if any(x < 1 for x in block):
        return None
    last = start + step * (rep - 1)[:, None]
    origin = tuple(int(min(start[:, d].min(), last[:, d].min()) % block[d]) for d in range(ndim))
    ok = np.ones(len(rep), bool)
    for d in range(ndim):  # every start of a run on the grid: its first one and its step
        on_grid = ((start[:, d] - origin[d]) % block[d] == 0) & ((rep == 1) | (step[:, d] % block[d] == 0))
        edge = (rep == 1) & (start[:, d] + blk[:, d] == shape[d])
        ok &= on_grid & ((blk[:, d] == block[d]) | edge)
    fits = int(rep[ok].sum())
    if fits < share * n_boxes:
        return None
    stepped = tuple(bool(start[:, d].min() != start[:, d].max() or ((rep > 1) & (step[:, d] != 0)).any())
                    for d in range(ndim))
    # blocks are multi-element where the program steps (single rows or points are per-sample access, not blocks)
    if not any(stepped) or any(s and block[d] < 2 for d, s in enumerate(stepped)):
        return None
    return Blocking(block, origin, stepped)


def padding(chunks: Sequence[int] | None, shape: Sequence[int]) -> float:
    """Share of the chunk grid's volume beyond the array's edges (0 for contiguous)."""
    if chunks is None:
        return 0.0
    grid = math.prod(-(-s // c) * c for s, c in zip(shape, chunks))
    return grid / max(math.prod(shape), 1) - 1.0


def extra_cache(c: Candidate) -> int:
    """Chunk-cache memory beyond CACHE_ALLOWANCE that the layout asks the program to spare."""
    if c.library != "hdf5" or c.chunks is None or c.cache_bytes is None:
        return 0
    return max(0, c.cache_bytes - CACHE_ALLOWANCE)


def measured_share(r: Recommendation, current: Recommendation, coefficient: Callable[[str, str], float],
                   path: Callable[[Candidate], tuple[str, str]]) -> float:
    """Share of ``r``'s predicted seconds that lies in what the trace's timings checked: the variables holding at
    least SIGNIFICANT of the current layout's prediction (which the in-trace calibration fitted), only the
    device, page-cache and copy ones (SHARED_VARIABLES) under another storage path (``path``: the candidate's
    ``storage_path``: the other library, or HDF5 contiguous, piecewise or through the chunk cache), and the
    codec's seconds only for the codec the current layout has (another codec is priced by an estimate on a 1%
    sample). ``coefficient(library, variable)``: the profile's seconds per unit."""
    def seconds(rec: Recommendation) -> dict[str, float]:
        return {v: coefficient(rec.library, v) * x for v, x in rec.variables.items()}

    cur = seconds(current)
    total = sum(cur.values())
    checked = {v for v, t in cur.items() if total > 0 and t >= SIGNIFICANT * total}
    if path(r.candidate) != path(current.candidate):
        checked &= SHARED_VARIABLES
    mine = seconds(r)
    io_model = sum(mine.values())
    io_share = sum(mine.get(v, 0.0) for v in checked) / io_model if io_model > 0 else 1.0
    codec = r.terms.get("t_compress", 0.0) + r.terms.get("t_decompress", 0.0)
    io = sum(t for k, t in r.terms.items() if k not in ("t_compress", "t_decompress"))
    same_codec = r.candidate.compressor == current.candidate.compressor
    whole = io + codec
    return (io * io_share + (codec if same_codec else 0.0)) / whole if whole > 0 else 1.0


def tie_key(r: Recommendation, current: Candidate, shape: Sequence[int], itemsize: int,
            blocking: Blocking | None, measured: float = 1.0) -> tuple:
    """One entry per TIE_RULES rule, smaller is preferred. ``measured``: ``measured_share`` of ``r``."""
    c = r.candidate
    nbytes = math.prod(c.chunks) * itemsize if c.chunks is not None else None
    in_range = nbytes is None or CHUNK_RANGE[0] <= nbytes <= CHUNK_RANGE[1]
    divides = padding(c.chunks, shape) <= MAX_PADDING and (blocking is None or blocking.aligned(c.chunks))
    # in raw bytes: compression shrinks what is read, not how much of each chunk the program did not ask for
    amplification = r.facts.get("read_amplification", 0.0) * r.ratio
    return (c != current, not in_range, measured < MEASURED_SHARE, extra_cache(c), not divides,
            round(amplification / AMPLIFICATION_STEP))


def change_band(fast: Recommendation, slow: Recommendation, sd: Callable[[str, str], float]) -> float:
    """95% factor of the predicted ratio slow / fast of two layouts in different libraries. The terms of the
    device, the page cache and memory copies (SHARED_TERMS) take one factor in both libraries
    (``TraceCalibration.for_dataset``): their error cancels in the ratio as far as both spend the same share of
    their time in them. Each library's own terms (calls, chunk work, codecs) err independently. ``sd(library,
    term)``: standard deviation of log(factor) (``TraceCalibration.term_sd``). Comparing one layout's whole
    interval with the other's point estimate counts the shared error as if it moved one of them alone (regret's
    w02: an HDF5 layout predicted 1.7x faster than zarr's, 97% of both in device reads, was kept out)."""
    tf, ts = sum(fast.terms.values()), sum(slow.terms.values())
    if tf <= 0 or ts <= 0:
        return math.inf
    var = 0.0
    for k in set(fast.terms) | set(slow.terms):
        wf, ws = fast.terms.get(k, 0.0) / tf, slow.terms.get(k, 0.0) / ts
        if k in SHARED_TERMS:
            var += ((wf - ws) * sd(fast.library, k)) ** 2
        else:
            var += (wf * sd(fast.library, k)) ** 2 + (ws * sd(slow.library, k)) ** 2
    return math.exp(Z95 * math.sqrt(var))


def own_library(best: Recommendation, tie_rule: str | None, library: str, ranked: Sequence[Recommendation],
                notes: list, choose_among: Callable, sd: Callable[[str, str], float] = lambda lib, k: PRIOR_SPREAD,
                resolution: float = MIN_RESOLUTION) -> tuple[Recommendation, str | None]:
    """The program's own library (issue 30: netCDF4 stays netCDF4, zarr stays zarr) unless ``best``, in
    another library, is predicted faster than the best layout of ``library`` (chosen among them by
    ``choose_among``, which returns (chosen, tie rule)) by more than the model's uncertainty of that ratio
    (``change_band``) and its resolution. A note says which way it went."""
    mine = [r for r in ranked if r.library == library]
    if not mine:
        return best, tie_rule
    same, same_rule = choose_among(mine)
    ratio = same.seconds / best.seconds if best.seconds > 0 else math.inf
    need = max(change_band(best, same, sd), 1.0 + resolution)
    if ratio > need:
        notes.append(f"changes library: {best.label} is predicted {ratio:.3g}x faster than the best {library} layout "
                     f"({same.label}, {same.seconds:.3g} s), beyond the model's uncertainty of that ratio "
                     f"({need:.3g}x)")
        return best, tie_rule
    notes.append(f"keeps the program's {library}: {best.label} is predicted {ratio:.3g}x faster than {same.label}, "
                 f"within the model's uncertainty of that ratio ({need:.3g}x)")
    return same, same_rule or "the program's own library"


def choose(ranked: Sequence[Recommendation], current: Recommendation, resolution: float, shape: Sequence[int],
           itemsize: int, blocking: Blocking | None = None,
           with_facts: Callable[[Recommendation], Recommendation] = lambda r: r,
           feasible: Callable[[Recommendation], bool] = lambda r: True,
           coefficient: Callable[[str, str], float] | None = None) -> tuple[Recommendation, str | None, int]:
    """(chosen, the tie rule that decided or None, number of near-ties) among ``ranked`` (best first).

    The near-ties are the feasible candidates (the current layout included) within ``resolution`` of the
    fastest feasible one. ``coefficient``: the profile's (``SystemProfile.coefficient``), for
    ``measured_share``; None: every prediction counts as measured."""
    pool = [r for r in ranked if feasible(r)]
    if not pool:
        return ranked[0], None, 0
    best = min(pool, key=lambda r: r.seconds)
    if feasible(current) and all(r.candidate != current.candidate for r in pool):
        pool.append(current)
    near = [with_facts(r) for r in pool if r.seconds <= best.seconds * (1.0 + resolution)]
    if len(near) < 2:
        return best, None, len(near)

    def path(c: Candidate) -> tuple[str, str]:
        return storage_path(c.layout(shape, itemsize))

    keys = {id(r): tie_key(r, current.candidate, shape, itemsize, blocking,
                           1.0 if coefficient is None else measured_share(r, current, coefficient, path))
            for r in near}
    chosen = min(near, key=lambda r: keys[id(r)] + (r.seconds,))
    if chosen.candidate == best.candidate:
        return chosen, None, len(near)
    # the first rule on which the chosen layout beats the fastest one decided
    kb, kc = keys[id(next(r for r in near if r.candidate == best.candidate))], keys[id(chosen)]
    rule = next((TIE_RULES[i] for i in range(len(TIE_RULES)) if kc[i] < kb[i]), None)
    return chosen, rule, len(near)


@dataclass(frozen=True)
class Verdict:
    """``keep`` or ``change``, why, and the speed-up over the traced (else predicted) current time."""

    verdict: str
    reason: str
    speedup: float


def verdict(current: Recommendation, chosen: Recommendation, traced: float | None,
            tie_rule: str | None = None) -> Verdict:
    """Keep unless the chosen layout is another one, at least MIN_GAIN faster than the traced current time,
    and still MIN_SURE_GAIN faster at the slow end of its 95% interval."""
    base = traced if traced else current.seconds
    gain = base / chosen.seconds if chosen.seconds > 0 else math.inf
    what = "traced" if traced else "predicted"
    if chosen.candidate == current.candidate:
        why = (f"the current layout is within the model's resolution of the fastest ({tie_rule} first)"
               if tie_rule else "the current layout is predicted fastest")
        return Verdict("keep", why, 1.0)
    if gain < MIN_GAIN:
        return Verdict("keep", f"the best change gains {gain:.2f}x over the {what} {base:.3g} s, below "
                               f"{MIN_GAIN:g}x", gain)
    sure = base / chosen.seconds_ci[1] if chosen.seconds_ci[1] > 0 else math.inf
    if sure < MIN_SURE_GAIN:
        return Verdict("keep", f"the best change's {gain:.2f}x is {sure:.2f}x at the slow end of its 95% interval "
                               f"({chosen.seconds_ci[0]:.3g}-{chosen.seconds_ci[1]:.3g} s against the {what} "
                               f"{base:.3g} s), below {MIN_SURE_GAIN:g}x", gain)
    return Verdict("change", f"{gain:.2f}x faster than the {what} {base:.3g} s", gain)


def copy_accesses(ds_id: int, shape: Sequence[int], itemsize: int, chunks_a: Sequence[int] | None,
                  chunks_b: Sequence[int] | None, op: str) -> list[AccessRecord]:
    """Slabs along the first dimension, whole rows of both layouts' chunks, about COPY_SLAB_BYTES each."""
    shape = tuple(int(s) for s in shape)
    if not shape:
        return [AccessRecord(ds_id, op, Selection.box((), ()), 1, itemsize, 0.0, 0.0)]
    step = math.lcm(*(int(c[0]) for c in (chunks_a, chunks_b) if c is not None)) if (chunks_a or chunks_b) else 1
    row_bytes = math.prod(shape[1:]) * itemsize
    rows = max(step, COPY_SLAB_BYTES // max(row_bytes, 1) // step * step)
    out = []
    for start in range(0, shape[0], rows):
        n = min(rows, shape[0] - start)
        box = (n,) + shape[1:]
        out.append(AccessRecord(ds_id, op, Selection.box((start,) + (0,) * (len(shape) - 1), box),
                                math.prod(box), math.prod(box) * itemsize, 0.0, 0.0))
    return out


def rewrite_seconds(ds: DatasetRecord, shape: Sequence[int], current: Recommendation, target: Recommendation,
                    profile, calibration=None, codec=None) -> float:
    """Predicted seconds to copy the array from its current layout into ``target`` (read + write)."""
    cur, new = current.candidate, target.candidate
    reads = copy_accesses(ds.id, shape, ds.itemsize, cur.chunks, new.chunks, READ)
    writes = copy_accesses(ds.id, shape, ds.itemsize, cur.chunks, new.chunks, WRITE)
    read = CostModel(ds, reads, shape, profile, calibration=calibration).evaluate(cur).seconds
    created = replace(ds, created=True, library=new.library, chunks=new.chunks, chunk_offsets=None)
    write = CostModel(created, writes, shape, profile, calibration=calibration).evaluate(new, codec).seconds
    return read + write


__all__ = ["Blocking", "CHUNK_RANGE", "MIN_GAIN", "MIN_SURE_GAIN", "TIE_RULES", "Verdict", "choose",
           "copy_accesses", "measured_share", "padding", "storage_path", "program_blocking", "rewrite_seconds",
           "tie_key", "verdict"]
