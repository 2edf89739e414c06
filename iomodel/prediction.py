"""Prediction: total seconds, seconds per term and the counted variables."""
from __future__ import annotations

from dataclasses import dataclass, field

from .layout import Layout
from .variables import Variables


@dataclass(frozen=True)
class Prediction:
    """Predicted cost of one trace under one layout.

    In the parallel model ``seconds`` is the slowest rank's time; ``terms`` and
    ``variables`` are that rank's.
    """

    layout: Layout
    seconds: float
    terms: dict = field(compare=False)
    variables: Variables
    procs: int = 1
    cf: float = 1.0
    per_rank_seconds: tuple[float, ...] = ()

    @property
    def library(self) -> str:
        return self.layout.library

    @property
    def chunks(self) -> tuple[int, ...] | None:
        return self.layout.chunks

    def to_json_obj(self) -> dict:
        """The CLI's ``--json`` object for this layout."""
        return {
            "library": self.library,
            "chunks": None if self.chunks is None else list(self.chunks),
            "seconds": self.seconds,
            "terms": dict(self.terms),
            "variables": self.variables.as_features(),
        }

    def get_config(self) -> dict:
        return {
            "layout": self.layout.get_config(),
            "seconds": self.seconds,
            "terms": dict(self.terms),
            "variables": self.variables.get_config(),
            "procs": self.procs,
            "cf": self.cf,
            "per_rank_seconds": list(self.per_rank_seconds),
        }

    @classmethod
    def from_config(cls, config: dict) -> "Prediction":
        if not isinstance(config, dict):
            raise ValueError("prediction must be a JSON object")
        for k in ("layout", "seconds", "terms", "variables"):
            if k not in config:
                raise ValueError(f"missing prediction field '{k}'")
        return cls(
            layout=Layout.from_config(config["layout"]),
            seconds=float(config["seconds"]),
            terms={k: float(v) for k, v in config["terms"].items()},
            variables=Variables.from_config(config["variables"]),
            procs=int(config.get("procs", 1)),
            cf=float(config.get("cf", 1.0)),
            per_rank_seconds=tuple(float(x) for x in config.get("per_rank_seconds", ())),
        )
