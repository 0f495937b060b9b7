"""What the TensorFlow profile joins share: the profile record built from matched events, the
notes on counts, the op types that are bookkeeping, and the join of a ``jit_compile``
function's XLA events (``profile.py`` has the conventions)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from ...core.kernels import Kernel
from ...core.profile import MeasuredKernel, Profile, ProfileEvent, count_mismatch_note, union_seconds
from .table import TABLE, Free
from .walker import CALLS, IFS, WHILES
from .xplane import Event

__all__ = [
    "CONTAINERS",
    "MAX_EVENTS",
    "base_type",
    "bookkeeping",
    "build_profile",
    "count_notes",
    "free_type",
    "join_xla",
    "shown",
]

#: Per-execution events kept for a trace viewer; beyond this the profile keeps its totals only.
MAX_EVENTS = 100_000
_SHOWN = 5
#: The executor's own ops: transfers, function arguments and results, loop frames.
RUNTIME_FREE = frozenset(
    {"_Send", "_Recv", "_HostSend", "_HostRecv", "_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "Enter", "Exit"}
    | {"Merge", "Switch", "_SwitchN", "NextIteration", "LoopCond", "RefEnter", "RefExit", "RefMerge", "RefSwitch"}
)
#: Op types whose event encloses the events of what they run.
CONTAINERS = frozenset({*CALLS, *WHILES, *IFS, "Case", "StatelessCase", "XlaLaunch", "_XlaRun"})
XLA_CONTAINERS = frozenset({"while", "conditional", "call"})
_MKL = re.compile(r"^_(?:MklNative|Mkl)?")

Interval = tuple[float, float, int]  # start, end (ns), thread


def base_type(kind: str) -> str:
    """An op type without oneDNN's or Grappler's rename prefix: ``_MklNativeMaxPool`` → ``MaxPool``."""
    return _MKL.sub("", kind)


def free_type(kind: str) -> bool:
    return kind in RUNTIME_FREE or any(isinstance(TABLE.get(k), Free) for k in (kind, base_type(kind)))


def bookkeeping(kind: str) -> bool:
    """An op type whose events are never listed: free, or a container of other events."""
    return kind in CONTAINERS or free_type(kind)


def shown(names: Sequence[str]) -> str:
    return ", ".join(names[:_SHOWN]) + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def build_profile(
    matched: dict[int, list[Interval]],
    unmatched: dict[str, list[Interval]],
    wall: float,
    runs: int,
    notes: list[str],
    counts: dict[int, int] | None = None,
    fused: tuple[tuple[int, ...], ...] = (),
) -> Profile:
    """The profile of the matched intervals; ``counts`` overrides a kernel's number of events
    (a folded library op: those of its graph op that ran most); ``fused``: ``Profile.fused``."""
    counts = counts or {}
    everything = [(start, end) for intervals in matched.values() for start, end, _ in intervals]
    kept = sorted((start, end, thread, k) for k, intervals in matched.items() for start, end, thread in intervals)
    origin = kept[0][0] if kept else 0.0
    if len(kept) > MAX_EVENTS:
        notes.append(f"{len(kept):,} kernel events: the first {MAX_EVENTS:,} are kept for the trace viewer")
    return Profile(
        runs=runs,
        wall_seconds=wall,
        kernels=tuple(
            MeasuredKernel(k, union_seconds((s, e) for s, e, _ in matched[k]) * 1e-9, counts.get(k, len(matched[k])))
            for k in sorted(matched)
        ),
        kernel_seconds=union_seconds(everything) * 1e-9,
        source="tf.profiler XPlane",
        unmatched=tuple(
            sorted(
                ((name, union_seconds((s, e) for s, e, _ in iv) * 1e-9, len(iv)) for name, iv in unmatched.items()),
                key=lambda entry: -entry[1],
            )
        ),
        notes=tuple(dict.fromkeys(notes)),
        events=tuple(
            ProfileEvent(k, (start - origin) * 1e-9, (end - start) * 1e-9, thread)
            for start, end, thread, k in kept[:MAX_EVENTS]
        ),
        fused=tuple(group for group in fused if all(k in matched for k in group)),
    )


def count_notes(
    matched: dict[int, list[Interval]],
    kernels: tuple[Kernel, ...],
    runs: int,
    notes: list[str],
    counts: dict[int, int] | None = None,
) -> None:
    """Notes naming the kernels with no event and those with another count than the trace's."""
    seen = {i: (counts or {}).get(i, len(intervals)) for i, intervals in matched.items() if intervals}
    silent = [k.name for i, k in enumerate(kernels) if i not in seen]
    differ = [
        (k.name, seen[i] / runs, k.executions)
        for i, k in enumerate(kernels)
        if i in seen and seen[i] != k.executions * runs
    ]
    if silent:
        notes.append(
            f"{len(silent)} kernel(s) had no event ({shown(silent)}): TensorFlow did not run them as traced "
            f"(Grappler removed or folded them, XLA runs a counted loop without its condition, or another branch ran)"
        )
    if differ:
        notes.append(count_mismatch_note(differ))


def join_xla(events: list[Event], wall: float, runs: int, kernels: tuple[Kernel, ...], function: str) -> Profile:
    """XLA-kernel events of the module named after ``function`` joined by instruction name (XLA
    writes a module's name with every character but letters, digits, ``_``, ``.`` and ``-`` as
    ``_``: a ``tf.function`` of a lambda, ``__inference_<lambda>_122``, runs as
    ``a_inference__lambda__122__…``)."""
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", function.lstrip("_"))
    pattern = re.compile(r"a?_*" + re.escape(name) + r"__")
    index = {kernel.name: i for i, kernel in enumerate(kernels)}
    ours = [e for e in events if e.hlo_op and pattern.match(e.hlo_module)]
    unmatched: dict[str, list[Interval]] = defaultdict(list)
    for event in events:
        if event.hlo_op and not pattern.match(event.hlo_module):
            unmatched[f"{event.hlo_op} ({event.hlo_module})"].append((event.start, event.end, event.thread))
        elif (
            not event.hlo_op and event.node != event.kind and event.kind not in CONTAINERS and not free_type(event.kind)
        ):
            unmatched[event.name].append((event.start, event.end, event.thread))
    ours = [e for e in ours if e.hlo_op in index or e.hlo_op.split(".")[0] not in XLA_CONTAINERS]
    foreign = sorted({e.hlo_op for e in ours if e.hlo_op not in index})
    notes: list[str] = []
    matched: dict[int, list[Interval]] = defaultdict(list)
    if not ours:
        notes.append(f"no XLA kernel event of a module named after {function}: no time is joined")
    elif foreign:
        module = ours[0].hlo_module
        notes.append(
            f"the executed module {module} has instructions the trace's module has not ({shown(foreign)}): the two "
            f"compilations do not line up, so no time is joined to the kernels"
        )
        for event in ours:
            unmatched[event.hlo_op].append((event.start, event.end, event.thread))
    else:
        for event in ours:
            matched[index[event.hlo_op]].append((event.start, event.end, event.thread))
        notes.append(
            f"XLA events of the executed module {ours[0].hlo_module} joined by instruction name to the module compiled "
            f"for the trace: every executed instruction is one of its kernels"
        )
        count_notes(matched, kernels, runs, notes)
    return build_profile(matched, unmatched, wall, runs, notes)
