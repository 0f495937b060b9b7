"""The links between devices: what a collective's wire bytes are scored against.

``Interconnect(name, bandwidth, latency_seconds, source)``: ``bandwidth`` is bytes per second one
device sends over the link (one direction, as wire bytes are counted: ``costs/collectives.py``),
``latency_seconds`` the fixed cost of one collective over it, ``source`` where both came
from (a datasheet row, a fit of measured all-reduces, the user). A collective of ``w`` wire
bytes over it takes at least ``latency_seconds + w / bandwidth``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import HardwareError

__all__ = ["Interconnect"]


@dataclass(frozen=True, slots=True)
class Interconnect:
    """One kind of link between devices, its per-device send bandwidth and its latency."""

    name: str
    bandwidth: float
    latency_seconds: float = 0.0
    source: str = "user-supplied"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise HardwareError(f"Interconnect.name={self.name!r} must be a non-empty string")
        bandwidth = self.bandwidth
        if isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float)) or not math.isfinite(bandwidth):
            raise HardwareError(f"Interconnect {self.name!r} bandwidth={bandwidth!r} must be a finite number (B/s)")
        if bandwidth <= 0:
            raise HardwareError(f"Interconnect {self.name!r} bandwidth={bandwidth!r} must be positive (B/s)")
        latency = self.latency_seconds
        if (
            isinstance(latency, bool)
            or not isinstance(latency, (int, float))
            or not math.isfinite(latency)
            or latency < 0
        ):
            raise HardwareError(f"Interconnect {self.name!r} latency_seconds={latency!r} must be a finite number ≥ 0")
        if not isinstance(self.source, str) or not self.source:
            raise HardwareError(f"Interconnect {self.name!r} source={self.source!r} must be a non-empty string")
        object.__setattr__(self, "bandwidth", float(bandwidth))
        object.__setattr__(self, "latency_seconds", float(latency))

    def seconds(self, wire_bytes: int, steps: int = 1) -> float:
        """The least time ``steps`` collectives moving ``wire_bytes`` in all take over this link."""
        return steps * self.latency_seconds + wire_bytes / self.bandwidth

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "bandwidth": self.bandwidth,
            "latency_seconds": self.latency_seconds,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Interconnect:
        if not isinstance(data, Mapping):
            raise HardwareError(f"an interconnect must be an object, not {data!r}")
        return cls(
            data.get("name"),  # type: ignore[arg-type]  # checked in __post_init__
            data.get("bandwidth"),  # type: ignore[arg-type]
            data.get("latency_seconds", 0.0),
            data.get("source", "user-supplied"),
        )
