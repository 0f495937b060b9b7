"""What every framework's op table shares: free entries with reasons, and one registry type.

Each adapter keeps its own table (JAX primitives, aten op packets, TensorFlow op types) of
builders and free entries; anything absent from a table is unmodeled — counted and named.
``_walk.lower`` applies a table to one op, with the one policy every adapter follows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..core.errors import NeuralCostError

B = TypeVar("B", bound=Callable[..., object])


@dataclass(frozen=True, slots=True)
class Free:
    """An op that only aliases memory or reads metadata: no FLOPs, no traffic."""

    reason: str


class OpTable(Generic[B]):
    """Op name → builder or ``Free``; ``empty_reasons`` explain builders that may return [].

    ``unit`` names one executed op in this framework ("call", "equation", "op"): the
    default reason a builder's empty result is free reads "aliases its input for this <unit>".
    """

    def __init__(self, what: str, unit: str = "op") -> None:
        self.what = what
        self.entries: dict[str, B | Free] = {}
        self.empty_reasons: dict[str, str] = {}
        self.empty_default = f"aliases its input for this {unit}"

    def _claim(self, name: str) -> None:
        if name in self.entries:
            raise NeuralCostError(f"{self.what} {name!r} is in the table twice")

    def lowers(self, *names: str) -> Callable[[B], B]:
        """Register the decorated builder for each name in ``names``."""

        def register(builder: B) -> B:
            for name in names:
                self._claim(name)
                self.entries[name] = builder
            return builder

        return register

    def free(self, reason: str, *names: str) -> None:
        """Register each name in ``names`` as free, for ``reason``."""
        for name in names:
            self._claim(name)
            self.entries[name] = Free(reason)
