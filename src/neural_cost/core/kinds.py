"""The registry of operation kinds: one cost rule per kind.

The rules themselves live in ``neural_cost.costs``; this module only holds the table so
that records in ``core`` can validate an operation against its kind without importing
anything above ``core``.
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

    @property
    def flops(self) -> int:
        return sum(self.flops_by_dtype.values())


CostRule = Callable[["Operation"], OpCost]

_RULES: dict[str, CostRule] = {}
_DOCS: dict[str, str] = {}


def register_rule(kind: str, rule: CostRule, summary: str) -> None:
    if kind in _RULES:
        raise ValueError(f"a cost rule for kind {kind!r} is already registered")
    _RULES[kind] = rule
    _DOCS[kind] = summary


def rule_for(kind: str) -> CostRule:
    try:
        return _RULES[kind]
    except KeyError:
        raise UnknownKindError(
            f"kind={kind!r} has no cost rule; known kinds: {', '.join(sorted(_RULES))}. "
            f"Use kind='custom' with attrs={{'flops': ...}} for work no rule describes"
        ) from None


def known_kinds() -> dict[str, str]:
    """Each registered kind with a one-line summary of its convention."""
    return dict(_DOCS)
