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

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..core.attrs import FrozenAttrs
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
        another shares, when the labels tell those records apart; ``source(where)`` turns a
        mark into text (None: unknown). A group whose records all ran in the same loops from
        the same line (an unrolled Python loop's layers) gains nothing from labels: left alone."""
        shared = Counter((op.scope, op.name) for op in operations)
        found: dict[int, tuple[str | None, str | None]] = {}
        distinct: dict[tuple[str | None, str], set[tuple[str | None, str | None]]] = {}
        for op in operations:
            if shared[(op.scope, op.name)] < 2:
                continue
            origin = self._seen.get(id(op))
            if origin is None or origin[0] is not op:
                continue
            found[id(op)] = (origin[1], source(origin[2]))
            distinct.setdefault((op.scope, op.name), set()).add(found[id(op)])
        labeled = []
        # Records of one loop body share their attrs and labels: build each labeled attrs once.
        # The labels are for readers (no rule reads ``loop``/``source``, every kind accepts them),
        # so the cost and the checks of the record stay those of the unlabeled one.
        made: dict[tuple[Any, str | None, str | None], FrozenAttrs] = {}
        for op in operations:
            marked = found.get(id(op))
            if marked is None or len(distinct[(op.scope, op.name)]) < 2 or not any(marked):
                labeled.append(op)
                continue
            loop, text = marked
            key = (op.attrs, loop, text)
            attrs = made.get(key)
            if attrs is None:
                extra = {name: value for name, value in (("loop", loop), ("source", text)) if value}
                attrs = made[key] = FrozenAttrs({**op.attrs, **extra}, f"Operation {op.name!r} attrs")
            labeled.append(op.relabeled(attrs))
        return labeled

    def functions(self, operations: Sequence[Operation], function: Callable[[Any], str | None]) -> list[Operation]:
        """``operations`` with a ``function`` label (the user's function that made it, e.g.
        ``env_step``) on every record without a scope, so the per-scope table groups unscoped
        records by where they came from rather than into one "(no scope)" row."""
        names: dict[int, str | None] = {}
        made: dict[tuple[int, str], FrozenAttrs] = {}
        result = []
        for op in operations:
            origin = self._seen.get(id(op))
            if op.scope is not None or origin is None or origin[0] is not op or "function" in op.attrs:
                result.append(op)
                continue
            where = origin[2]
            key = id(getattr(where, "traceback", where))
            if key not in names:
                names[key] = function(where)
            name = names[key]
            if not name:
                result.append(op)
                continue
            made_key = (id(op.attrs), name)  # the records keep their attrs alive: an id is not reused here
            attrs = made.get(made_key)
            if attrs is None:
                attrs = made[made_key] = FrozenAttrs.trusted({**op.attrs, "function": name})
            labeled = op.relabeled(attrs)
            self._seen[id(labeled)] = (labeled, *origin[1:])  # ``label`` finds the labeled record's origin
            result.append(labeled)
        return result
