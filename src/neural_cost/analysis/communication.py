"""Communication: a sharded program's collectives scored against the links between devices.

Per device: the wire bytes of every ``collective`` record (``costs/collectives.py``) over all
its executions, at the bandwidth of the spec's first (fastest) interconnect, plus its latency
once per collective execution. The step then has two bounds, both shown: *no overlap* —
compute/memory (the kernel bound) plus communication, what a program that waits for every
collective takes at least; *perfect overlap* — the larger of the two, what a program that
hides communication behind compute could reach. The headline bound is the perfect-overlap one
(a lower bound whatever the schedule), and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.estimate import CostEstimate
from ..hardware.spec import HardwareSpec
from .rows import as_float


@dataclass(frozen=True, slots=True)
class Communication:
    """One device's collectives on one link, and the two step bounds they give."""

    wire_bytes: int
    #: Collective executions (each pays the link's latency once).
    collectives: int
    link: str | None
    bandwidth: float | None
    latency_seconds: float | None
    #: None when the spec lists no interconnect (the bytes are known, their time is not).
    seconds: float | None
    compute_memory_seconds: float

    @property
    def no_overlap_seconds(self) -> float | None:
        return None if self.seconds is None else self.compute_memory_seconds + self.seconds

    @property
    def overlap_seconds(self) -> float | None:
        return None if self.seconds is None else max(self.compute_memory_seconds, self.seconds)

    @property
    def share(self) -> float | None:
        """Communication's share of the no-overlap step bound."""
        total = self.no_overlap_seconds
        return None if self.seconds is None or not total else self.seconds / total

    def to_dict(self) -> dict[str, Any]:
        return {
            "wire_bytes": self.wire_bytes,
            "collectives": self.collectives,
            "link": self.link,
            "bandwidth": self.bandwidth,
            "latency_seconds": self.latency_seconds,
            "seconds": self.seconds,
            "no_overlap_seconds": self.no_overlap_seconds,
            "overlap_seconds": self.overlap_seconds,
            "share": self.share,
        }


def communication(estimate: CostEstimate, hardware: HardwareSpec, kernel_bound: float) -> Communication | None:
    """The device's communication, or None when the program has no collective."""
    rows = [row for row in estimate.by_operation if row.kind == "collective"]
    if not rows:
        return None
    wire = sum(row.wire_bytes for row in rows)
    executions = sum(row.operation.count for row in rows)
    if not hardware.interconnects:
        return Communication(wire, executions, None, None, None, None, kernel_bound)
    link = hardware.interconnects[0]
    seconds = executions * link.latency_seconds + as_float(wire, "the collectives' wire bytes") / link.bandwidth
    return Communication(wire, executions, link.name, link.bandwidth, link.latency_seconds, seconds, kernel_bound)
