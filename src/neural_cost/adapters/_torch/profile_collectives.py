"""Collectives' transfers in a torch.profiler pass, joined to their kernels (``profile.py``).

With the gloo backend a collective call (``c10d::allreduce_`` on the calling thread, DDP's
bucket all-reduce inside autograd's ``AccumulateGrad``) only enqueues the work: the transfer
runs on one of gloo's worker threads as a ``gloo:<collective>`` event (``gloo:all_reduce``,
``gloo:all_gather``, ``gloo:broadcast``, ``gloo:barrier``...; a reduce-scatter runs as
``gloo:all_reduce`` in torch 2.13), with no parent linking it to the call. The ops a worker
runs inside its transfer (``aten::copy_`` into an all-gather's outputs) are part of it.

Join, per profiled run: the run's transfers (worker events that start in it), by start time,
and the run's executions of collective kernels that ran on the CPU alone (no device work: a
NCCL kernel is already the call's device work, linked by correlation id), in execution order.
The n-th transfer joins the n-th execution when the counts agree and every pair agrees: the
transfer's collective is the kernel's (or a known alias) and its tensors' elements are the
operands' of the kernel's collective records. Then a collective kernel's time is its call and
its transfer together (the transfer includes any wait for slower ranks). Otherwise the run's
transfers are left unmatched, named, with a note — the order is never guessed — and the
kernels keep their calls' time alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...core.records import Trace, num_elements
from ...core.units import plural

WORKER = "gloo:"
#: The start of the notes this module writes (``analysis/communication.py`` reads them).
TRANSFERS = "collective transfers: "
JOINED = TRANSFERS + "gloo worker events joined in order, waits for slower ranks included"
UNJOINED = TRANSFERS + "not joined"
#: gloo's name for the transfer → the collectives it may carry besides its own.
_ALIASES = {"all_reduce": {"reduce_scatter"}, "barrier": {"all_reduce"}}

Interval = tuple[float, float, tuple[str, int]]


@dataclass(frozen=True, slots=True)
class Collective:
    """A kernel that runs collective records: what its transfer must agree with."""

    kinds: frozenset[str]
    elements: int

    def fits(self, event: Any) -> bool:
        kind = event.name[len(WORKER) :]
        known = any(kind.startswith(k) for k in self.kinds) or bool(_ALIASES.get(kind, set()) & self.kinds)
        return known and _elements(event) == self.elements


Collectives = dict[int, Collective]


def collective_kernels(trace: Trace) -> Collectives:
    """Each kernel that runs collective records, by index."""
    found: Collectives = {}
    for index, kernel in enumerate(trace.kernels):
        ops = [trace.operations[j] for j in kernel.operations if trace.operations[j].kind == "collective"]
        if ops:
            kinds = frozenset(str(op.attrs.get("collective")) for op in ops)
            found[index] = Collective(kinds, sum(num_elements(op.inputs[0]) if op.inputs else 0 for op in ops))
    return found


def _elements(event: Any) -> int:
    return sum(math.prod(s) for s in event.input_shapes or () if isinstance(s, (list, tuple)))


def transfer_events(events: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Other threads' root events: the transfers (by start time), and the rest — less the ops a
    worker ran inside a transfer on its thread (part of it: they join nothing else)."""
    transfers = sorted((e for e in events if e.name.startswith(WORKER)), key=lambda e: e.time_range.start)

    def held(event: Any) -> bool:
        return any(
            event.thread == t.thread
            and t.time_range.start <= event.time_range.start
            and event.time_range.end <= t.time_range.end
            for t in transfers
        )

    return transfers, [e for e in events if not e.name.startswith(WORKER) and not held(e)]


def interval(event: Any) -> Interval:
    return (event.time_range.start, event.time_range.end, ("cpu", int(event.thread)))


def join_transfers(
    run: int, transfers: list[Any], executions: list[tuple[int, list[Interval]]], collectives: Collectives
) -> tuple[list[Any], list[str]]:
    """One run: join its transfers to its kernel executions (in order, with their intervals: a
    joined transfer's interval is appended to its execution's); the transfers left unmatched,
    and the note."""
    on_cpu = [
        (index, intervals)
        for index, intervals in executions
        if index in collectives and all(kind == "cpu" for _, _, (kind, _) in intervals)
    ]
    if not transfers and not on_cpu:
        return [], []
    said = ""
    if len(transfers) != len(on_cpu):
        said = (
            f"{plural(len(transfers), 'gloo worker events')} for {plural(len(on_cpu), 'collective kernel executions')}"
            f" on the CPU"
        )
    for n, (event, (index, _)) in enumerate(zip(transfers, on_cpu, strict=False)):
        want = collectives[index]
        if not said and not want.fits(event):
            said = (
                f"its transfer {n + 1} ({event.name}, {_elements(event):,} elements) does not fit its collective "
                f"kernel execution {n + 1} ({'/'.join(sorted(want.kinds))}, {want.elements:,} elements)"
            )
    if said:
        return transfers, [
            f"{UNJOINED}: profiled run {run + 1}: {said}: the order cannot be trusted; the transfers are left "
            f"unmatched and those kernels' time is their calls' alone"
        ]
    for event, (_, intervals) in zip(transfers, on_cpu, strict=True):
        intervals.append(interval(event))
    return [], [
        f"{JOINED}: a collective kernel's time is its call on the calling thread and its transfer on a gloo "
        f"worker thread (the n-th transfer of a run joins the run's n-th collective kernel execution on the CPU; "
        f"their collectives and element counts agree)"
    ]


__all__ = [
    "JOINED",
    "TRANSFERS",
    "UNJOINED",
    "Collective",
    "Collectives",
    "collective_kernels",
    "join_transfers",
    "transfer_events",
]
