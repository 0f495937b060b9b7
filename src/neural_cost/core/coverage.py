"""How much of a traced program the cost rules describe, and the loop counts it assumed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import RecordError
from .shapes import check_name

if TYPE_CHECKING:
    from .records import Operation

LOOP_SOURCES = ("explicit", "inferred", "static", "default")


@dataclass(frozen=True, slots=True)
class Coverage:
    """How much of a traced program the cost rules describe.

    ``total`` counts executed operations (after loop multiplication); ``static_total``
    counts them in the program text. ``unmodeled`` ranks what no rule describes as
    ``(name, executed count)`` pairs, most frequent first.
    """

    total: int
    modeled: int
    free: int = 0
    unmodeled: tuple[tuple[str, int], ...] = ()
    static_total: int | None = None
    unit: str = "operations"

    def __post_init__(self) -> None:
        for name in ("total", "modeled", "free"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise RecordError(f"Coverage.{name}={value!r} must be a non-negative integer")
        pairs = []
        for item in self.unmodeled:
            if isinstance(item, Sequence) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], int):
                if isinstance(item[1], bool) or item[1] < 0:
                    raise RecordError(
                        f"Coverage.unmodeled count for {item[0]!r} is {item[1]!r}; it must be a non-negative integer"
                    )
                pairs.append((item[0], item[1]))
            else:
                raise RecordError(f"Coverage.unmodeled entry {item!r} must be a (name, count) pair")
        pairs.sort(key=lambda p: (-p[1], p[0]))
        object.__setattr__(self, "unmodeled", tuple(pairs))
        unmodeled_count = sum(c for _, c in pairs)
        if self.modeled + self.free + unmodeled_count != self.total:
            raise RecordError(
                f"Coverage does not add up: modeled {self.modeled} + free {self.free} + unmodeled "
                f"{unmodeled_count} != total {self.total}"
            )
        if self.static_total is not None and (
            isinstance(self.static_total, bool) or not isinstance(self.static_total, int) or self.static_total < 0
        ):
            raise RecordError(f"Coverage.static_total={self.static_total!r} must be a non-negative integer or None")
        check_name(self.unit, "Coverage.unit")

    @classmethod
    def full(cls, operations: Sequence[Operation], unit: str = "operations") -> Coverage:
        """Every operation modeled: what a hand-written list or an operations-only adapter gives."""
        executed = sum(op.count for op in operations)
        return cls(total=executed, modeled=executed, static_total=len(operations), unit=unit)

    @property
    def unmodeled_count(self) -> int:
        return sum(c for _, c in self.unmodeled)

    @property
    def fraction(self) -> float:
        """(modeled + free) / total; an empty program is fully covered."""
        return 1.0 if self.total == 0 else (self.modeled + self.free) / self.total

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "static_total": self.static_total,
            "modeled": self.modeled,
            "free": self.free,
            "unmodeled": [[n, c] for n, c in self.unmodeled],
            "unit": self.unit,
            "fraction": self.fraction,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Coverage:
        return cls(
            total=data["total"],
            modeled=data["modeled"],
            free=data.get("free", 0),
            unmodeled=tuple((n, c) for n, c in data.get("unmodeled", ())),
            static_total=data.get("static_total"),
            unit=data.get("unit", "operations"),
        )


@dataclass(frozen=True, slots=True)
class LoopAssumption:
    """How many times a loop body was counted, and where that number came from."""

    label: str
    trip_count: int
    source: str  # explicit | inferred | static | default
    scope: str | None = None
    location: str | None = None

    def __post_init__(self) -> None:
        check_name(self.label, "LoopAssumption.label")
        if isinstance(self.trip_count, bool) or not isinstance(self.trip_count, int) or self.trip_count < 0:
            raise RecordError(
                f"LoopAssumption {self.label!r} trip_count={self.trip_count!r} must be a non-negative integer"
            )
        if self.source not in LOOP_SOURCES:
            raise RecordError(
                f"LoopAssumption {self.label!r} source={self.source!r}; use one of {', '.join(LOOP_SOURCES)}"
            )

    @property
    def assumed(self) -> bool:
        return self.source == "default"

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "trip_count": self.trip_count,
            "source": self.source,
            "scope": self.scope,
            "location": self.location,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoopAssumption:
        return cls(data["label"], data["trip_count"], data["source"], data.get("scope"), data.get("location"))
