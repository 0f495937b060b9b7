"""Measured time per kernel of the executable ``JaxAdapter.benchmark`` timed, from ``jax.profiler``.

``profile_executable`` runs the kept executable once outside the profiler (warm), then ``runs``
times under ``jax.profiler.trace`` (each run waits on its outputs), reads the XPlane file the
profiler wrote (``ProfileData.from_file``) and joins its events to ``Trace.kernels`` by HLO
instruction name (``core/profile.py`` has the conventions).

What the profiler records on XLA:CPU (jaxlib 0.10.2, read 2026; the GPU layout is not verified):

- every kernel execution (a thunk: a fusion, copy, custom call, convolution...) is one event
  whose stats carry ``hlo_op`` (the instruction name in the optimized module), ``hlo_module``
  (the module's name as ``compiled.as_text()`` prints it: ``jit_<fn>``) and ``run_id``; a
  kernel in a loop body has one event per iteration;
- a kernel that hands its work to the thread pool (an Eigen convolution or dot) returns at
  once: its event spans the launch only. The executor's ``end: <op>`` event (the kernel event's
  flow id ``_p``, as ``_c``) then comes on the thread that finished the work, after that thread
  ran the kernels the completion made ready; such an execution is taken to end at the first
  kernel that thread started in the same pool task, else at the marker (``_finished``), so its
  time is the work's, not the launch's (without this a convolution in a loop measured 6 µs of
  its 270 µs);
- a ``while``, ``conditional`` or ``call`` is itself an event enclosing its body's events: a
  *container*, never summed and never listed (it is not a kernel of ``Trace.kernels``);
- the condition of a while loop with a known trip count has no events: XLA runs such a loop
  as a counted loop (the trace counts its condition ``trips + 1`` times; a note names it);
- instructions inside a fusion have no events of their own;
- events lie on several threads (lines): the Python thread and the client's thread pool;
  ``ProfileEvent.thread`` numbers the lines in the order the file lists them.

A kernel's time is the union of its executions' intervals; ``kernel_seconds`` the union of every
matched event. ``wall_seconds`` is ``time.perf_counter`` around the ``runs`` runs inside the
trace (dispatch and the waits included). Events of another module (a jitted function a
callback runs) or of an instruction of this module that is neither a kernel nor a container
are listed in ``unmatched``; which instructions are containers, and which lie in a counted
loop's condition, comes from a light scan of the module's text (``Module.scan``). The profiler
runs without its Python tracer and at host level 1 (the kernel and thread-pool events are there;
the Python call events, which cost a little on every call, are not).
"""

from __future__ import annotations

import bisect
import math
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jax

from ...core.errors import AdapterError
from ...core.kernels import Kernel
from ...core.profile import MeasuredKernel, Profile, ProfileEvent, count_mismatch_note, union_seconds
from ...core.records import Trace
from ...measure.timing import display_name, keep_warm
from .compiled import Executables
from .hlo import hlo_text

__all__ = ["MAX_EVENTS", "Module", "join", "profile_executable"]

#: Per-execution events kept for a trace viewer; beyond this the profile keeps its totals only.
MAX_EVENTS = 100_000
_SHOWN = 5

_wait: Callable[[Any], Any] = jax.block_until_ready  # waits on every array of an output pytree

_STATS = frozenset({"hlo_op", "hlo_module", "_p", "_c"})
_HEADER = re.compile(r"^(?:ENTRY\s+)?%?([^\s(]+)\s*\(.*\{\s*$")
_DEFINED = re.compile(r"^\s+(?:ROOT\s+)?%?([^\s=]+)\s*=")
_CONTAINER = re.compile(r"\s(while|conditional|call)\(")
_CONDITION = re.compile(r"\bcondition=%?([^\s,}]+)")

#: ``(hlo_module, hlo_op, start_ns, end_ns, thread)``: one kernel execution the profiler saw.
Event = tuple[str, str, float, float, int]


@dataclass(frozen=True, slots=True)
class Module:
    """What the join needs of the optimized HLO module, read by a light scan of its text (the
    full parse, with every instruction's bytes, is the trace's)."""

    name: str
    #: Instructions whose event encloses the events of what they call: ``while``, ``conditional``, ``call``.
    containers: frozenset[str]
    #: Instructions of the condition of a while loop with a known trip count: they never run.
    counted: frozenset[str]

    @classmethod
    def scan(cls, text: str) -> Module:
        lines = text.splitlines()
        if not lines or not lines[0].startswith("HloModule "):
            raise AdapterError("the text does not start with 'HloModule': not an HLO module")
        containers: set[str] = set()
        conditions: set[str] = set()
        computations: dict[str, list[str]] = defaultdict(list)
        current = ""
        for line in lines[1:]:
            header = _HEADER.match(line)
            if header is not None:
                current = header.group(1)
                continue
            defined = _DEFINED.match(line)
            if defined is None:
                continue
            computations[current].append(defined.group(1))
            opcode = _CONTAINER.search(line)
            if opcode is not None:
                containers.add(defined.group(1))
                condition = _CONDITION.search(line)
                if opcode.group(1) == "while" and condition is not None and "known_trip_count" in line:
                    conditions.add(condition.group(1))
        counted = frozenset(name for condition in conditions for name in computations.get(condition, ()))
        return cls(lines[0].split()[1].rstrip(","), frozenset(containers), counted)


def profile_executable(
    executables: Executables,
    program: tuple[Any, tuple[Any, ...], Mapping[str, Any], tuple[int, ...]],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    *,
    trace: Trace,
    runs: int = 3,
) -> Profile:
    """``runs`` profiled runs of the executable kept for ``program`` (``(fn, args, kwargs,
    static_argnums)``, as ``Executables.find`` takes it; compiled now when none is kept) on
    ``(args, kwargs)``: the dynamic arguments, on the device. Joined to ``trace.kernels``.
    AdapterError when there is nothing to join to or the profiler is unavailable or fails."""
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise AdapterError(f"JaxAdapter.profile: runs={runs!r}; pass a positive number of profiled runs")
    if not trace.kernels:
        raise AdapterError(
            "JaxAdapter.profile: the trace has no kernels to join the profiler's events to; trace the program "
            "after timing it with the same adapter"
        )
    try:
        executable = executables.compile(*program)
    except Exception as error:
        raise AdapterError(
            f"JaxAdapter.profile: compiling {display_name(program[0])} failed ({type(error).__name__}): {error}"
        ) from error
    try:
        module = Module.scan(hlo_text(executable.compiled))
    except AdapterError as error:
        raise AdapterError(f"JaxAdapter.profile: the executable's HLO cannot be read ({error})") from error
    compiled = executable.compiled
    _wait(compiled(*args, **kwargs))  # warm, outside the trace
    keep_warm(lambda: _wait(compiled(*args, **kwargs)))  # analyze's warm_seconds: the threads awake
    events, wall = _record(compiled, args, kwargs, runs)
    profile = join(events, wall, runs, trace.kernels, module)
    platform = jax.default_backend()
    if platform != "cpu":  # said, so that a count that does not add up is read with it
        note = f"the profiler's event layout was verified on XLA:CPU only; this ran on {platform}"
        profile = replace(profile, notes=(*profile.notes, note))
    return profile


def _record(compiled: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], runs: int) -> tuple[list[Event], float]:
    """The kernel events of ``runs`` runs under ``jax.profiler.trace``, and their wall time."""
    with tempfile.TemporaryDirectory(prefix="neural-cost-profile-") as directory:
        try:
            options = jax.profiler.ProfileOptions()
            options.python_tracer_level = 0
            options.host_tracer_level = 1
            options.enable_hlo_proto = False
            with jax.profiler.trace(directory, profiler_options=options):
                start = time.perf_counter()
                for _ in range(runs):
                    _wait(compiled(*args, **kwargs))
                wall = time.perf_counter() - start
        except Exception as error:
            hint = "; stop the jax.profiler trace already running first" if "already" in str(error) else ""
            reason = f"{type(error).__name__}: {error}"
            raise AdapterError(f"jax.profiler could not record the runs ({reason}){hint}") from error
        files = sorted(Path(directory).rglob("*.xplane.pb"))
        if not files:
            raise AdapterError(f"jax.profiler wrote no .xplane.pb file under its log directory ({directory})")
        try:
            data = jax.profiler.ProfileData.from_file(str(files[-1]))
            events = _kernel_events(data)
        except Exception as error:
            raise AdapterError(
                f"the profiler's XPlane file cannot be read ({type(error).__name__}: {error})"
            ) from error
    return events, wall


def _kernel_events(data: Any) -> list[Event]:
    """Every event that carries ``hlo_op`` and ``hlo_module`` stats, with its line's number, its
    end moved to where its work finished when the work went on after the event (``_finished``)."""
    kernels: list[tuple[str, str, float, float, int, Any]] = []  # (module, op, start, end, line, flow)
    markers: dict[Any, tuple[int, float]] = {}  # flow → (line, start) of its "end: <op>" event
    lines: list[tuple[list[float], list[tuple[float, float]]]] = []  # kernel starts, task spans
    for thread, line in enumerate(line for plane in data.planes for line in plane.lines):
        starts: list[float] = []
        tasks: list[tuple[float, float]] = []
        task: float | None = None
        for event in sorted(line.events, key=lambda event: float(event.start_ns)):
            name = str(event.name)
            begin = float(event.start_ns)
            if name == "ThreadpoolListener::StartRegion" or name == "ThreadpoolListener::StopRegion":
                if task is not None:
                    tasks.append((task, begin))
                task = begin if name.endswith("StartRegion") else None
                continue
            stats = {key: value for key, value in event.stats if key in _STATS}
            if name.startswith("end: "):
                if "_c" in stats:
                    markers[stats["_c"]] = (thread, begin)
            elif "hlo_op" in stats and "hlo_module" in stats:
                module, op, flow = str(stats["hlo_module"]), str(stats["hlo_op"]), stats.get("_p")
                kernels.append((module, op, begin, float(event.end_ns), thread, flow))
                starts.append(begin)
        if task is not None:
            tasks.append((task, math.inf))
        starts.sort()
        tasks.sort()
        lines.append((starts, tasks))
    return [
        (module, op, start, _finished(stop, markers.get(flow), lines), thread)
        for module, op, start, stop, thread, flow in kernels
    ]


def _finished(stop: float, marker: tuple[int, float] | None, lines: list[Any]) -> float:
    """When a kernel event's work finished: its end, unless its ``end: <op>`` marker comes later.

    On XLA:CPU a kernel that hands its work to the thread pool (an Eigen convolution or dot)
    returns at once: its event spans the launch only. The executor marks its completion with an
    ``end: <op>`` event (the flow id the kernel event carries), on the thread that finished the
    work, after that thread has gone on to run the kernels the completion made ready. So a
    marker after the event's end means the work went on: it finished at the first kernel that
    thread started after the launch ended, within the same pool task (``StartRegion`` to
    ``StopRegion``) as the marker, else at the marker."""
    if marker is None or marker[1] <= stop:
        return stop
    thread, at = marker
    starts, tasks = lines[thread]
    position = bisect.bisect_right(tasks, (at, math.inf)) - 1
    if position < 0 or not tasks[position][0] <= at <= tasks[position][1]:
        return at  # not in a pool task: the thread's earlier kernels are not the continuation
    after = max(stop, tasks[position][0])
    first = bisect.bisect_right(starts, after)
    return starts[first] if first < len(starts) and starts[first] < at else at


def join(events: list[Event], wall: float, runs: int, kernels: tuple[Kernel, ...], module: Module) -> Profile:
    """The profile of ``events`` (``runs`` runs of ``module``, ``wall`` seconds) over ``kernels``."""
    index = {kernel.name: i for i, kernel in enumerate(kernels)}
    matched: dict[int, list[tuple[float, float]]] = defaultdict(list)
    unmatched: dict[str, list[tuple[float, float]]] = defaultdict(list)
    kept: list[tuple[int, float, float, int]] = []
    for name, op, start, end, thread in events:
        if name != module.name:
            unmatched[f"{op} ({name})"].append((start, end))
            continue
        position = index.get(op)
        if position is None:
            if op not in module.containers:
                unmatched[op].append((start, end))
            continue
        matched[position].append((start, end))
        kept.append((position, start, end, thread))
    notes = _notes(matched, runs, kernels, module, len(kept))
    origin = min((start for _, start, _, _ in kept), default=0.0)
    measured = tuple(MeasuredKernel(i, union_seconds(matched[i]) * 1e-9, len(matched[i])) for i in sorted(matched))
    return Profile(
        runs=runs,
        wall_seconds=wall,
        kernels=measured,
        kernel_seconds=union_seconds(iv for intervals in matched.values() for iv in intervals) * 1e-9,
        source="jax.profiler XPlane",
        unmatched=tuple(
            sorted(
                ((name, union_seconds(iv) * 1e-9, len(iv)) for name, iv in unmatched.items()),
                key=lambda entry: -entry[1],
            )
        ),
        notes=notes,
        events=tuple(
            ProfileEvent(k, (start - origin) * 1e-9, (end - start) * 1e-9, thread)
            for k, start, end, thread in sorted(kept, key=lambda e: e[1])[:MAX_EVENTS]
        ),
    )


def _notes(
    matched: Mapping[int, list[tuple[float, float]]],
    runs: int,
    kernels: tuple[Kernel, ...],
    module: Module,
    kept: int,
) -> tuple[str, ...]:
    """What the events say that the trace's kernels did not: counted-loop conditions that never
    ran, and kernels whose measured executions differ from the trace's."""
    counted = module.counted
    silent: list[str] = []
    differ: list[tuple[str, float, int]] = []
    for i, kernel in enumerate(kernels):
        seen = len(matched.get(i, ()))
        if seen == kernel.executions * runs:
            continue
        if seen == 0 and kernel.name in counted:
            silent.append(kernel.name)
        else:
            differ.append((kernel.name, seen / runs, kernel.executions))
    notes = []
    if silent:
        notes.append(
            f"{len(silent)} kernel(s) in the condition of a while loop with a known trip count had no event "
            f"({_shown(silent)}): XLA runs such a loop as a counted loop, without its condition"
        )
    if differ:
        notes.append(count_mismatch_note(differ))
    if kept > MAX_EVENTS:
        notes.append(f"{kept:,} kernel events: the first {MAX_EVENTS:,} are kept for the trace viewer")
    return tuple(notes)


def _shown(names: list[str]) -> str:
    return ", ".join(names[:_SHOWN]) + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")
