"""What ``apply`` reports: per array bytes in and out, the ratio reached, the largest error, the time."""
from __future__ import annotations

from dataclasses import dataclass, field


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


@dataclass(frozen=True)
class ArraySummary:
    """One array copied: ``layout`` is the new one ('as is' when not advised)."""

    path: str
    layout: str
    plan: str
    """``direct`` (one pass) or ``two-pass`` (through an intermediate), with the block shapes."""
    raw_bytes: int
    bytes_in: int
    """Stored bytes of the source array."""
    bytes_out: int
    """Stored bytes of the copy."""
    max_error: float
    seconds: float
    blocks: int
    blocks_resumed: int = 0
    """Blocks finished and verified by an earlier, interrupted run (not done again)."""

    @property
    def ratio(self) -> float:
        """Raw / stored bytes of the copy."""
        return self.raw_bytes / self.bytes_out if self.bytes_out else float("inf")

    def get_config(self) -> dict:
        return {"path": self.path, "layout": self.layout, "plan": self.plan, "raw_bytes": self.raw_bytes,
                "bytes_in": self.bytes_in, "bytes_out": self.bytes_out, "ratio": self.ratio,
                "max_error": self.max_error, "seconds": self.seconds, "blocks": self.blocks,
                "blocks_resumed": self.blocks_resumed}

    @classmethod
    def from_config(cls, c: dict) -> "ArraySummary":
        return cls(c["path"], c["layout"], c["plan"], int(c["raw_bytes"]), int(c["bytes_in"]), int(c["bytes_out"]),
                   float(c["max_error"]), float(c["seconds"]), int(c["blocks"]), int(c.get("blocks_resumed", 0)))


@dataclass(frozen=True)
class ApplyResult:
    """The whole copy: source, destination (and backup of an in-place run), arrays, notes."""

    source: str
    dest: str
    arrays: tuple[ArraySummary, ...]
    seconds: float
    resumed: bool = False
    backup: str | None = None
    notes: tuple[str, ...] = field(default=())

    def get_config(self) -> dict:
        return {"source": self.source, "dest": self.dest, "seconds": self.seconds, "resumed": self.resumed,
                "backup": self.backup, "notes": list(self.notes), "arrays": [a.get_config() for a in self.arrays]}

    @classmethod
    def from_config(cls, c: dict) -> "ApplyResult":
        return cls(c["source"], c["dest"], tuple(ArraySummary.from_config(a) for a in c["arrays"]),
                   float(c["seconds"]), bool(c.get("resumed", False)), c.get("backup"), tuple(c.get("notes", ())))

    def table(self) -> str:
        head = ["array", "layout", "plan", "in", "out", "ratio", "max error", "seconds"]
        rows = [[a.path, a.layout, a.plan, _mb(a.bytes_in), _mb(a.bytes_out), f"{a.ratio:.3g}",
                 f"{a.max_error:.3g}", f"{a.seconds:.3g}" + (f" ({a.blocks_resumed}/{a.blocks} blocks resumed)"
                                                           if a.blocks_resumed else "")]
                for a in self.arrays]
        widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
                 for r in [head] + rows]
        lines.append(f"{self.source} -> {self.dest}: {len(self.arrays)} arrays copied and verified in "
                     f"{self.seconds:.3g} s" + (" (resumed)" if self.resumed else "")
                     + (f"; the original kept as {self.backup}" if self.backup else ""))
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)
