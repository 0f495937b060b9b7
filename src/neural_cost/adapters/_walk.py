"""The one lowering driver: the tally a walk keeps, the failure policy, loops and branches.

Every adapter — the JAX and TensorFlow graph walkers and the PyTorch dispatch recorder —
lowers each executed op through ``lower``, so one policy holds everywhere:

- an op absent from the table is *unmodeled*, counted under its name;
- a ``Free`` entry is free, with the entry's reason;
- a builder's records make the op *modeled*; an empty result makes it free (it only aliases);
- a builder that raises — any exception: it cannot read this call, a shape does not fit a
  rule, a form of the op it does not describe — makes the op *unmodeled*, with a note naming
  the op and the reason. Never an exception out of ``trace``, never a silent zero.
- an unmodeled op's work is estimated at its elementwise floor (``Coverage.unmodeled_work``)
  from the shapes its context reads: ``args`` ending in a context with ``operands(call)``,
  which returns the call's ``(shape, dtype)`` inputs and outputs; without one, its size is
  unknown, and so is the program's work share.

The JAX and TensorFlow walkers also share the trip-count resolution of ``while`` loops
(``Loops``: explicit, inferred, or the default, each a ``LoopAssumption`` the report turns
into a finding) and the rule that costs a conditional as its most expensive branch
(``take_costliest_branch``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.dtypes import dtype_info
from ..core.errors import AdapterError
from ..core.records import LoopAssumption, Operation
from ._registry import Free, OpTable


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
    #: name → [elementwise-floor FLOPs, bytes, executions sized] of unmodeled ops.
    unmodeled_work: dict[str, list[int]] = field(default_factory=dict)

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
        self.absorb_unmodeled_work(other)

    def absorb_unmodeled_work(self, other: WalkState) -> None:
        for name, (flops, moved, sized) in other.unmodeled_work.items():
            mine = self.unmodeled_work.setdefault(name, [0, 0, 0])
            mine[0], mine[1], mine[2] = mine[0] + flops, mine[1] + moved, mine[2] + sized

    def work_entries(self) -> tuple[tuple[str, int, int], ...]:
        """``Coverage.unmodeled_work``: names whose every execution was sized (an unmodeled
        count added outside ``lower`` leaves its name unsized, so unknown, never undercounted)."""
        return tuple(
            (name, flops, moved)
            for name, (flops, moved, sized) in self.unmodeled_work.items()
            if sized == self.unmodeled.get(name)
        )

    def weight(self) -> tuple[int, int]:
        """(FLOPs, bytes) of the records: how a conditional picks its most expensive branch."""
        flops = sum(op.cost.flops * op.count for op in self.operations)
        moved = sum((op.cost.read_bytes + op.cost.write_bytes) * op.count for op in self.operations)
        return flops, moved


def lower(
    state: WalkState,
    table: OpTable[Any],
    entry: object,
    name: str,
    count: int,
    args: tuple[Any, ...],
    *,
    label: str | None = None,
    where: str | None = None,
) -> None:
    """Tally one executed op (``count`` executions) whose table entry is ``entry`` (None when
    absent), building its records with ``entry(*args)``. ``name`` keys the table and the free
    reasons; ``label`` (default ``name``) is how coverage names it when unmodeled; ``where``
    (a scope, a graph op's name) locates it in the note a failing builder leaves."""
    if isinstance(entry, Free):
        state.free += count
        state.free_reasons[name] = entry.reason
        return
    if entry is None or not callable(entry):
        _unmodeled(state, label or name, count, args)
        return
    try:
        records = list(entry(*args))
        for record in records:
            record.cost  # noqa: B018  (a record its rule rejects fails here, inside the policy)
    except Exception as error:  # a builder that cannot read this call: unmodeled, and said so
        _unmodeled(state, label or name, count, args)
        site = f"{label or name} at {where}" if where else (label or name)
        state.notes.append(f"{site}: not modeled for this call ({type(error).__name__}: {error})"[:300])
        return
    if records:
        state.operations += records
        state.modeled += count
    else:  # the builder found this call only aliases (a reshape, a weak-type cast)
        state.free += count
        state.free_reasons.setdefault(name, table.empty_reasons.get(name, table.empty_default))


def _unmodeled(state: WalkState, name: str, count: int, args: tuple[Any, ...]) -> None:
    """Count an unmodeled op, with its elementwise floor when its context can read its operands:
    1 FLOP per output element, inputs read once, outputs written once."""
    state.unmodeled[name] += count
    read = getattr(args[-1], "operands", None) if args else None
    if read is None:
        return
    try:
        inputs, outputs = read(args[0])
        moved = sum(dtype_info(dtype).nbytes(math.prod(shape)) for shape, dtype in (*inputs, *outputs))
        flops = sum(math.prod(shape) for shape, _ in outputs)
    except Exception:  # a shape it cannot read (unknown dims): the size stays unknown, said so
        return
    entry = state.unmodeled_work.setdefault(name, [0, 0, 0])
    entry[0], entry[1], entry[2] = entry[0] + flops * count, entry[1] + moved * count, entry[2] + count


# -- loops ----------------------------------------------------------------------------------


def check_loop_options(owner: str, trip_counts: Mapping[int | str, int] | None, default_trip_count: int) -> None:
    """An adapter's loop options, checked when it is made: keys are loop indices or labels."""
    if isinstance(default_trip_count, bool) or not isinstance(default_trip_count, int) or default_trip_count < 0:
        raise AdapterError(f"{owner}: default_trip_count={default_trip_count!r} must be an integer >= 0")
    for key in trip_counts or {}:
        if isinstance(key, bool) or not isinstance(key, (int, str)):
            raise AdapterError(f"{owner}: trip_counts key {key!r} must be a while loop's index (int) or label (str)")


def check_trip_counts(trip_counts: Mapping[int | str, int], loop_labels: list[tuple[int, str]]) -> None:
    """Every key of ``trip_counts`` must name a while loop of the program, by index or label."""
    known = {index for index, _ in loop_labels} | {label for _, label in loop_labels}
    unknown = [key for key in trip_counts if key not in known]
    if unknown:
        listed = ", ".join(f"{i} ({label})" for i, label in loop_labels) or "none"
        raise AdapterError(
            f"trip_counts names no loop of this program: {unknown!r}; its while loops (index, label) are: {listed}"
        )


class Loops:
    """The while loops of one walk, in pre-order: each gets an index and a label
    (``scope/while_N``), and a trip count that is explicit (``trip_counts`` names its index or
    label), inferred (the walker's ``infer`` reads a counted loop), or the default."""

    def __init__(self, trip_counts: Mapping[int | str, int], default_trip_count: int) -> None:
        self.trip_counts = dict(trip_counts)
        self.default_trip_count = default_trip_count
        self.labels: list[tuple[int, str]] = []

    def enter(self, scope: str | None, infer: Callable[[], int | None], location: str | None) -> LoopAssumption:
        """The next while loop, at ``scope``: its label and resolved trip count."""
        index = len(self.labels)
        label = f"{scope}/while_{index}" if scope else f"while_{index}"
        self.labels.append((index, label))
        if index in self.trip_counts or label in self.trip_counts:
            trips = self.trip_counts[index] if index in self.trip_counts else self.trip_counts[label]
            if isinstance(trips, bool) or not isinstance(trips, int) or trips < 0:
                raise AdapterError(f"trip_counts[{index!r}] for loop {label} is {trips!r}; give a non-negative integer")
            source = "explicit"
        else:
            inferred = infer()
            trips, source = (inferred, "inferred") if inferred is not None else (self.default_trip_count, "default")
        return LoopAssumption(label, trips, source, scope=scope, location=location)

    def check(self) -> None:
        """After the walk: every key of ``trip_counts`` named a loop that exists."""
        check_trip_counts(self.trip_counts, self.labels)


def closed_form_trips(start: float, bound: float, step: float, relation: str) -> int | None:
    """Iterations of ``i = start; while i REL bound: i += step`` (REL: lt, le, gt, ge, ne), or
    None when the loop never ends by this counter (it steps away from its bound)."""
    if relation == "ne":
        span = (bound - start) / step
        return int(span) if span >= 0 and span == int(span) else None
    if relation in ("lt", "le"):
        if step < 0:
            return None if start < bound or (relation == "le" and start == bound) else 0
        span = bound - start
        trips = math.ceil(span / step) if relation == "lt" else math.floor(span / step) + 1
    else:  # gt, ge: counting down
        if step > 0:
            return None if start > bound or (relation == "ge" and start == bound) else 0
        span = start - bound
        trips = math.ceil(span / -step) if relation == "gt" else math.floor(span / -step) + 1
    return max(0, int(trips))


# -- conditionals ---------------------------------------------------------------------------


def take_costliest_branch(
    state: WalkState, branches: Sequence[WalkState], count: int, name: str, where: str, unit: str
) -> int:
    """Tally a conditional (``count`` executions) as its most expensive branch, by (FLOPs,
    bytes); returns the branch's index. The other branches' ops are in the program text
    (``static``) but not executed, except their unmodeled ones: an unmodeled op weighs nothing,
    so it could never make its branch the most expensive — it stays in coverage, as executed
    and unmodeled, rather than vanish with the choice. ``unit`` is the framework's noun for
    its ops ("equations", "ops"); ``where`` names the conditional in the notes."""
    chosen = max(range(len(branches)), key=lambda i: branches[i].weight())
    state.free += count
    state.free_reasons[name] = f"selects a branch; the most expensive branch's {unit} are counted"
    state.absorb(branches[chosen])
    state.static += sum(b.static for i, b in enumerate(branches) if i != chosen)
    if len(branches) > 1:
        state.notes.append(f"{where} costed as its most expensive branch ({chosen} of {len(branches)})")
    for i, branch in enumerate(branches):
        if i != chosen and branch.unmodeled:
            state.unmodeled.update(branch.unmodeled)
            state.absorb_unmodeled_work(branch)
            state.executed += sum(branch.unmodeled.values())
            names = ", ".join(f"{n} ({c})" for n, c in branch.unmodeled.most_common())
            state.notes.append(
                f"{where}: branch {i}, not costed, holds unmodeled {names}; its cost is unknown and may exceed "
                f"branch {chosen}'s"
            )
    return chosen
