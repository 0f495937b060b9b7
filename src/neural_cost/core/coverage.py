"""How much of a traced program the cost rules describe, and the loop counts it assumed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
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

    ``unmodeled_work`` estimates the work of unmodeled operations from their shapes, as
    ``(name, FLOPs, bytes)`` over all their executions: the *elementwise floor* — every input
    read once, every output written once, 1 FLOP per output element (what the cheapest
    elementwise rule charges; an SVD or a sort does far more, a pure gather does no
    arithmetic). An unmodeled name without an entry has an unknown size (a version-1 report,
    a shape the adapter could not read), and then so is the work share.
    """

    total: int
    modeled: int
    free: int = 0
    unmodeled: tuple[tuple[str, int], ...] = ()
    static_total: int | None = None
    unit: str = "operations"
    unmodeled_work: tuple[tuple[str, int, int], ...] = ()

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
        object.__setattr__(self, "unmodeled_work", _work_entries(self.unmodeled_work, dict(pairs)))

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

    @property
    def work_known(self) -> bool:
        """Whether every unmodeled operation has a size estimate (trivially, when there is none)."""
        return len(self.unmodeled_work) == len(self.unmodeled)

    @property
    def unmodeled_flops(self) -> int | None:
        """The elementwise-floor FLOPs of the unmodeled operations; None when a size is unknown."""
        return sum(f for _, f, _ in self.unmodeled_work) if self.work_known else None

    @property
    def unmodeled_bytes(self) -> int | None:
        """The elementwise-floor bytes of the unmodeled operations; None when a size is unknown."""
        return sum(b for _, _, b in self.unmodeled_work) if self.work_known else None

    def work_share(self, modeled_flops: int, modeled_bytes: int) -> tuple[int, int] | None:
        """The work share as an exact ratio ``(part, whole)``: the lower of the FLOP share and
        the byte share (an unmodeled op can hide in either), with the unmodeled operations at
        their elementwise floor; None when an unmodeled size is unknown. Free operations do
        no work, so a program without unmodeled operations has all of its work modeled. The
        floor is the least an unmodeled operation does, so with anything unmodeled this share
        is a ceiling (the report prints it with ``≤``); an unmodeled pure data movement that
        reads less than its inputs (a gather) is the exception, over-sized by the floor."""
        unmodeled_flops, unmodeled_bytes = self.unmodeled_flops, self.unmodeled_bytes
        if unmodeled_flops is None or unmodeled_bytes is None:
            return None
        shares = [(modeled_flops, modeled_flops + unmodeled_flops), (modeled_bytes, modeled_bytes + unmodeled_bytes)]
        shares = [(part, whole) for part, whole in shares if whole > 0]
        # part/whole < p2/w2 exactly, in integers: a share of 10^30 bytes must not round.
        return min(shares, key=lambda s: Fraction(*s)) if shares else (1, 1)

    def work_fraction(self, modeled_flops: int, modeled_bytes: int) -> float | None:
        """``work_share`` as a fraction in [0, 1]; None when an unmodeled size is unknown."""
        share = self.work_share(modeled_flops, modeled_bytes)
        return None if share is None else share[0] / share[1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "static_total": self.static_total,
            "modeled": self.modeled,
            "free": self.free,
            "unmodeled": [[n, c] for n, c in self.unmodeled],
            "unit": self.unit,
            "fraction": self.fraction,
            "unmodeled_work": [[n, f, b] for n, f, b in self.unmodeled_work],
            "unmodeled_flops": self.unmodeled_flops,
            "unmodeled_bytes": self.unmodeled_bytes,
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
            unmodeled_work=tuple((n, f, b) for n, f, b in data.get("unmodeled_work", ())),
        )


def _work_entries(entries: object, counts: Mapping[str, int]) -> tuple[tuple[str, int, int], ...]:
    """``(name, FLOPs, bytes)`` entries, one per unmodeled name at most, in the ranking's order."""
    if isinstance(entries, (str, bytes)) or not isinstance(entries, Iterable):
        raise RecordError(f"Coverage.unmodeled_work={entries!r} must be a sequence of (name, FLOPs, bytes)")
    found: dict[str, tuple[str, int, int]] = {}
    for item in entries:
        if not (isinstance(item, Sequence) and len(item) == 3 and isinstance(item[0], str)):
            raise RecordError(f"Coverage.unmodeled_work entry {item!r} must be a (name, FLOPs, bytes) triple")
        name, flops, moved = item
        for what, value in (("FLOPs", flops), ("bytes", moved)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise RecordError(f"Coverage.unmodeled_work {what} for {name!r} is {value!r}; give an integer >= 0")
        if name not in counts:
            raise RecordError(f"Coverage.unmodeled_work names {name!r}, which is not among the unmodeled operations")
        if name in found:
            raise RecordError(f"Coverage.unmodeled_work names {name!r} twice")
        found[name] = (name, flops, moved)
    position = {name: i for i, name in enumerate(counts)}
    return tuple(sorted(found.values(), key=lambda e: position[e[0]]))


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
