"""Context for records that share a name: the loop they ran in and where they came from.

Two rows of the per-operation table both called ``dot_general`` at the same scope (one in
the forward, one in a ``while`` body) cannot be told apart by name and scope. A walker marks
each record with the loops around it and where it came from (``Origins.mark``); at the end
of the walk, the records whose (scope, name) another record shares gain two attributes for
readers, never read by a rule: ``loop`` (the loops around it, outermost first:
``scan_0/while_1``) and ``source`` (the user's ``model.py:42``, or a graph op's own name).
Only those records carry them: a name that is already unique needs no context.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..core.records import Operation


class Origins:
    """Where each record of one walk came from, by the record's identity (records are kept
    alive here, so an identity is never reused during the walk)."""

    def __init__(self) -> None:
        self.loops: list[str] = []
        self._seen: dict[int, tuple[Operation, str | None, Any]] = {}

    @contextmanager
    def inside(self, loop: str) -> Iterator[None]:
        """Records marked in this block run inside ``loop`` (``while_0``, ``scan_1``)."""
        self.loops.append(loop)
        try:
            yield
        finally:
            self.loops.pop()

    def mark(self, records: Sequence[Operation], where: Any) -> None:
        """``records`` came from ``where`` (a JAX equation's source info, a graph op's name);
        a record already marked (by the walk of a body inside this op) keeps its own."""
        loop = "/".join(self.loops) or None
        for op in records:
            self._seen.setdefault(id(op), (op, loop, where))

    def label(self, operations: Sequence[Operation], source: Callable[[Any], str | None]) -> list[Operation]:
        """``operations`` with ``loop``/``source`` attrs on every record whose (scope, name)
        another shares; ``source(where)`` turns a mark into text (None: unknown)."""
        shared = Counter((op.scope, op.name) for op in operations)
        labeled = []
        for op in operations:
            origin = self._seen.get(id(op)) if shared[(op.scope, op.name)] > 1 else None
            if origin is None or origin[0] is not op:
                labeled.append(op)
                continue
            attrs = dict(op.attrs)
            if origin[1]:
                attrs["loop"] = origin[1]
            text = source(origin[2])
            if text:
                attrs["source"] = text
            labeled.append(dataclasses.replace(op, attrs=attrs) if len(attrs) != len(op.attrs) else op)
        return labeled
