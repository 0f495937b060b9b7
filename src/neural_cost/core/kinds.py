"""The registry of operation kinds: one cost rule per kind.

The rules themselves live in ``neural_cost.costs``, which fills this table when it is
imported (dependency inversion): records in ``core`` look a kind up here, check its
attributes and compute its cost without importing anything above ``core``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import UnknownKindError

if TYPE_CHECKING:
    from .records import Operation


@dataclass(frozen=True, slots=True)
class OpCost:
    """The cost of one execution of one operation, as a cost rule computes it."""

    flops_by_dtype: Mapping[str, int]
    read_bytes: int
    write_bytes: int
    #: FLOPs a dense (non-skipping) kernel would execute; only attention differs from flops.
    dense_flops: int | None = None
    transcendentals: int = 0
    notes: tuple[str, ...] = field(default=())
    #: A collective's bytes: what one device contributes, and what it sends over its links
    #: (``costs/collectives.py``); 0 for every other kind.
    payload_bytes: int = 0
    wire_bytes: int = 0

    @property
    def flops(self) -> int:
        return sum(self.flops_by_dtype.values())


CostRule = Callable[["Operation"], OpCost]
#: Checks a record's attributes against what its kind declares; raises RecordError.
AttrCheck = Callable[["Operation"], None]


@dataclass(frozen=True, slots=True)
class KindEntry:
    """A kind's cost rule, its one-line convention, and its attribute check. Every rule in
    ``neural_cost.costs`` has a check, built from its keyword parameters; None is left for a
    rule registered here directly, which reads ``op.attrs`` itself and checks what it reads."""

    rule: CostRule
    summary: str
    check_attrs: AttrCheck | None = None


_ENTRIES: dict[str, KindEntry] = {}


def register_rule(kind: str, rule: CostRule, summary: str, check_attrs: AttrCheck | None = None) -> None:
    if kind in _ENTRIES:
        raise ValueError(f"a cost rule for kind {kind!r} is already registered")
    _ENTRIES[kind] = KindEntry(rule, summary, check_attrs)


def entry_for(kind: str) -> KindEntry:
    try:
        return _ENTRIES[kind]
    except KeyError:
        raise UnknownKindError(
            f"kind={kind!r} has no cost rule; known kinds: {', '.join(sorted(_ENTRIES))}. "
            f"Use kind='custom' with attrs={{'flops': ...}} for work no rule describes"
        ) from None


def rule_for(kind: str) -> CostRule:
    return entry_for(kind).rule


def known_kinds() -> dict[str, str]:
    """Each registered kind with a one-line summary of its convention."""
    return {kind: entry.summary for kind, entry in _ENTRIES.items()}
