"""How a row of the per-operation table is named, for text and plots.

A row reads ``scope/name``. Where two rows would read the same (two ``dot_general`` at the
top level, one of them in a ``while`` body), each says the loop it ran in and where it came
from, as its adapter recorded them on the operation (attrs ``loop`` and ``source``, see
``adapters/_labels.py``): ``dot_general @ while_0 ×8 (model.py:42)``. The ``×8`` is the
row's executions, every enclosing loop's trips multiplied.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..analysis.gap import GapReport
    from ..analysis.rows import RowTime


def row_name(row: RowTime) -> str:
    """``scope/name``, or the name alone where there is no scope."""
    return f"{row.scope}/{row.name}" if row.scope else row.name


def _row_attrs(report: GapReport, rows: Sequence[RowTime]) -> list[Mapping[str, Any]]:
    """Each row's operation attributes. Rows are the estimate's operations sorted (stably) by
    time, so among records with the same name, scope, executions, FLOPs and bytes — the same
    time — the n-th row is the n-th such record."""
    queues: dict[tuple[Any, ...], deque[Mapping[str, Any]]] = {}
    for cost in report.estimate.by_operation:
        key = (cost.name, cost.scope, cost.operation.count, cost.flops, cost.bytes)
        queues.setdefault(key, deque()).append(cost.operation.attrs)
    found: list[Mapping[str, Any]] = []
    for row in rows:
        queue = queues.get((row.name, row.scope, row.executions, row.flops, row.bytes))
        found.append(queue.popleft() if queue else {})
    return found


def operation_labels(report: GapReport, rows: Sequence[RowTime]) -> list[str]:
    """One label per row of ``rows`` (all of the report's operation rows, so that a name shared
    with a row beyond the shown top still gets its context)."""
    names = [row_name(row) for row in rows]
    shared = Counter(names)
    if all(n == 1 for n in shared.values()):
        return names
    labels = []
    for row, name, attrs in zip(rows, names, _row_attrs(report, rows), strict=True):
        if shared[name] > 1:
            loop, source = attrs.get("loop"), attrs.get("source")
            if isinstance(loop, str) and loop:
                name += f" @ {loop} ×{row.executions}"
            if isinstance(source, str) and source:
                name += f" ({source})"
        labels.append(name)
    return labels
