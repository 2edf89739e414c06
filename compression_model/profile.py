"""CompressionProfile: the machine-specific fitted coefficients of the compression models.

Stored as the "compression" section of a profile file ``{"schema": 1, "machine": ..., "io": ...,
"compression": ...}``; the shipped default (compression_model/profiles/default.json) is written by
``python -m compression_model.calibrate`` on this machine, never by hand.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import json
from pathlib import Path

from instrumentation.errors import InputError

SCHEMA = 1
DEFAULT_PATH = Path(__file__).parent / "profiles" / "default.json"

#: Neutral ratio coefficients used before calibration (graybox.TERMS order): no per-chunk header, modeled
#: stream as is, a Huffman tree node as a 4-byte code plus two 4-byte child indices, raw unpredictable
#: values; no model spread.
_NEUTRAL_RATIO = {"sz3": {"coef": [0.0, 1.0, 12.0, 1.0], "log_sigma": 0.0},
                  "sz": {"coef": [0.0, 1.0, 12.0, 1.0], "log_sigma": 0.0},
                  "zfp": {"coef": [0.0, 1.0], "log_sigma": 0.0}}


@dataclass(frozen=True)
class CompressionProfile:
    """Fitted coefficients: per codec ratio corrections and per-stage time coefficients.

    ratio[codec] = {"coef": [...] (graybox.TERMS[codec] order), "log_sigma": spread of log(actual/model)}
    time[codec] = {"compress": {"names": [...], "coef": [...], "log_sigma_model": s, "log_sigma_sys": s},
                   "decompress": {...}}
    """

    machine: str = ""
    created: str = ""
    quick: bool = True
    ratio: dict = field(default_factory=dict)
    time: dict = field(default_factory=dict)

    @property
    def calibrated(self) -> bool:
        return bool(self.time)

    def ratio_params(self, codec: str) -> dict:
        return {**_NEUTRAL_RATIO.get(codec, {}), **self.ratio.get(codec, {})}

    def time_params(self, codec: str, direction: str) -> dict:
        """Stage coefficients of ``codec`` for "compress"/"decompress"; KeyError if not calibrated."""
        try:
            return self.time[codec][direction]
        except KeyError:
            raise KeyError(f"compression profile has no {direction} time model for {codec!r}; "
                           f"run `ioadvisor calibrate`") from None

    def get_config(self) -> dict:
        return {"machine": self.machine, "created": self.created, "quick": self.quick,
                "ratio": self.ratio, "time": self.time}

    @classmethod
    def from_config(cls, config: dict) -> "CompressionProfile":
        unknown = set(config) - {"machine", "created", "quick", "ratio", "time"}
        if unknown:
            raise InputError(f"compression profile: unknown field(s) {sorted(unknown)}")
        return cls(**config)


def load_profile(path=None) -> CompressionProfile:
    """The "compression" section of the profile at ``path``.

    Default: this machine's profile (``iomodel.profile.user_profile_path``) when it has a compression
    section, else the shipped one; with neither, an uncalibrated profile (neutral ratio parameters, no
    time model).
    """
    if path is None:
        from iomodel.profile import user_profile_path  # one place for "this machine's profile"

        user = user_profile_path()
        if user.exists() and "compression" in json.loads(user.read_text()):
            path = user
    p = Path(path) if path is not None else DEFAULT_PATH
    if path is None and not p.exists():
        return CompressionProfile()
    try:
        doc = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"{p}: cannot read compression profile: {e}") from None
    if doc.get("schema") != SCHEMA:
        raise InputError(f"{p}: unknown profile schema {doc.get('schema')!r} (expected {SCHEMA})")
    if "compression" not in doc:
        raise InputError(f"{p}: profile has no 'compression' section")
    return CompressionProfile.from_config(doc["compression"])


def save_profile(profile: CompressionProfile, path) -> None:
    """Write/merge ``profile`` as the "compression" section of the profile file at ``path``."""
    p = Path(path)
    doc = json.loads(p.read_text()) if p.exists() else {"schema": SCHEMA, "machine": profile.machine}
    doc["schema"] = SCHEMA
    doc["compression"] = profile.get_config()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
