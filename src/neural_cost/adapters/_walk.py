"""The running tally a graph walker keeps: records, executed/static counts, coverage, loops.

Shared by the JAX and TensorFlow walkers, which walk nested programs (loop bodies, branches,
called functions) into one tally, and cost a conditional's branches in separate ones.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..core.errors import AdapterError
from ..core.records import LoopAssumption, Operation


@dataclass
class WalkState:
    operations: list[Operation] = field(default_factory=list)
    executed: int = 0
    static: int = 0
    modeled: int = 0
    free: int = 0
    unmodeled: Counter[str] = field(default_factory=Counter)
    loops: list[LoopAssumption] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    free_reasons: dict[str, str] = field(default_factory=dict)

    def absorb(self, other: WalkState) -> None:
        self.operations += other.operations
        self.executed += other.executed
        self.static += other.static
        self.modeled += other.modeled
        self.free += other.free
        self.unmodeled.update(other.unmodeled)
        self.loops += other.loops
        self.notes += other.notes
        self.free_reasons.update(other.free_reasons)

    def weight(self) -> tuple[int, int]:
        """(FLOPs, bytes) of the records: how a cond picks its most expensive branch."""
        flops = sum(op.cost.flops * op.count for op in self.operations)
        moved = sum((op.cost.read_bytes + op.cost.write_bytes) * op.count for op in self.operations)
        return flops, moved


def check_trip_counts(trip_counts: Mapping[int | str, int], loop_labels: list[tuple[int, str]]) -> None:
    """Every key of ``trip_counts`` must name a while loop of the program, by index or label."""
    known = {index for index, _ in loop_labels} | {label for _, label in loop_labels}
    unknown = [key for key in trip_counts if key not in known]
    if unknown:
        listed = ", ".join(f"{i} ({label})" for i, label in loop_labels) or "none"
        raise AdapterError(
            f"trip_counts names no loop of this program: {unknown!r}; its while loops (index, label) are: {listed}"
        )
