"""Communication: a sharded program's collectives scored against the links between devices.

Per device: the wire bytes of every ``collective`` record (``costs/collectives.py``) over all
its executions, at the bandwidth of the spec's first (fastest) interconnect, plus its latency
once per collective execution. The step then has two bounds, both shown: *no overlap* —
compute/memory (the kernel bound) plus communication, what a program that waits for every
collective takes at least; *perfect overlap* — the larger of the two, what a program that
hides communication behind compute could reach. The headline bound is the perfect-overlap one
(a lower bound whatever the schedule), and the report says so.

Measured, beside the bound (with a profile): the time per run of the kernels that run
collective records, summed, and how it was measured (``measured_by``). For PyTorch with gloo a
collective kernel's time is its call and its transfer on gloo's worker thread, joined in order
(``adapters/_torch/profile_collectives.py``, whose profile notes name it); where the transfers
could not be joined, or a collective kernel has no profiled event, the time is not measured
(None) and ``measured_by`` says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.estimate import CostEstimate
from ..core.profile import Profile
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
    #: Measured time per run of the kernels that run collective records; None without a profile
    #: or when it could not be measured (``measured_by`` says why).
    measured_seconds: float | None = None
    #: How it was measured (``profiled: gloo worker events joined in order``) or why it was not.
    measured_by: str | None = None

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
            "measured_seconds": self.measured_seconds,
            "measured_by": self.measured_by,
        }


#: The start of the notes ``adapters/_torch/profile_collectives.py`` writes (joined, or not).
_TRANSFERS = "collective transfers: "


def measured(estimate: CostEstimate, profile: Profile | None) -> tuple[float | None, str | None]:
    """(seconds per run, how) of the kernels that run collective records; (None, None) without a profile."""
    if profile is None:
        return None, None
    kernels = [
        index
        for index, kernel in enumerate(estimate.kernels)
        if any(estimate.by_operation[j].kind == "collective" for j in kernel.operations)
    ]
    if not kernels:
        return None, "not measured: no kernel of the estimate runs a collective record"
    times = [profile.seconds_per_run(index) for index in kernels]
    if any(t is None for t in times):
        missing = sum(t is None for t in times)
        return None, f"not measured: {missing:,} of the {len(kernels):,} collective kernels have no profiled event"
    said = [note[len(_TRANSFERS) :].split(":")[0] for note in profile.notes if note.startswith(_TRANSFERS)]
    if any(s.startswith("not joined") for s in said):
        return None, "not measured: the transfers did not join their collective kernels (see the profile's notes)"
    return sum(t for t in times if t is not None), f"profiled: {said[0] if said else profile.source}"


def communication(
    estimate: CostEstimate, hardware: HardwareSpec, kernel_bound: float, profile: Profile | None = None
) -> Communication | None:
    """The device's communication, or None when the program has no collective."""
    rows = [row for row in estimate.by_operation if row.kind == "collective"]
    if not rows:
        return None
    wire = sum(row.wire_bytes for row in rows)
    executions = sum(row.operation.count for row in rows)
    took, how = measured(estimate, profile)
    if not hardware.interconnects:
        return Communication(wire, executions, None, None, None, None, kernel_bound, took, how)
    link = hardware.interconnects[0]
    seconds = executions * link.latency_seconds + as_float(wire, "the collectives' wire bytes") / link.bandwidth
    return Communication(
        wire, executions, link.name, link.bandwidth, link.latency_seconds, seconds, kernel_bound, took, how
    )
