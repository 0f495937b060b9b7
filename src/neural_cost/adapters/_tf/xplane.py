"""Read the events of a ``tf.profiler`` XPlane file (``*.xplane.pb``) with TensorFlow's own protobuf.

What ``tf.profiler`` records on the host (TensorFlow 2.21 on a CPU, host tracer level 1, read 2026;
a GPU's device planes are not read: their layout is not verified):

- every graph op a function runs is one event per execution on the thread that ran it, named
  ``node:OpType`` (its display name the op type as it ran: ``_MklNativeFusedConv2D`` when oneDNN
  rewrote it). Nodes of a called function are inlined, named ``call/node``; a lowered
  ``while`` loop's nodes ``while/body/_3/node`` (its condition's ``while/cond/_2/node``); a
  conditional's ``cond/then/_5/node``, ``cond/else/_6/node`` or ``case/branch2/_7/node``. The
  function itself is an event ``__inference_f_25:__inference_f_25``, enclosing everything;
- a ``jit_compile`` function runs as one XLA module: one event per kernel execution, carrying
  the stats ``hlo_op`` (the instruction's name) and ``hlo_module`` (the executed module's name,
  ``a_inference_f_25__XlaMustCompile_true_…``); a ``while`` is itself an event enclosing its
  body's; a kernel that hands its work to the thread pool (an Eigen dot or convolution) returns
  at once: its event spans the launch only, and the executor's ``end: <op>`` event (linked by
  the flow id ``_p``/``_c``) comes after the work finished (``_finished`` moves its end there);
- the Python thread's calls (``EagerExecute``...) and the thread pools' ``ThreadpoolListener``
  markers are neither: they are read only to place an ``end:`` marker in its pool task.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.errors import AdapterError

__all__ = ["Event", "read_events", "xplane_module"]

_STATS = frozenset({"hlo_op", "hlo_module", "_p", "_c"})
_REGION = ("ThreadpoolListener::StartRegion", "ThreadpoolListener::StopRegion")


@dataclass(frozen=True, slots=True)
class Event:
    """One graph-op or XLA-kernel execution: ``node`` and ``kind`` for a graph op (``hlo_op`` and
    ``hlo_module`` empty), ``hlo_op`` and ``hlo_module`` for an XLA kernel; times in ns."""

    node: str
    kind: str
    start: float
    end: float
    thread: int
    hlo_op: str = ""
    hlo_module: str = ""

    @property
    def name(self) -> str:
        """How the profiler names it: ``node:OpType``, or the instruction's name."""
        return self.hlo_op or f"{self.node}:{self.kind}"


def xplane_module() -> Any:
    """TensorFlow's ``xplane_pb2`` (it moved between releases), or AdapterError."""
    import importlib

    for where in (
        "tensorflow.tsl.profiler.protobuf.xplane_pb2",
        "tsl.profiler.protobuf.xplane_pb2",
        "tensorflow.core.profiler.protobuf.xplane_pb2",
    ):
        try:
            return importlib.import_module(where)
        except ImportError:
            continue
    raise AdapterError("this TensorFlow has no xplane_pb2 protobuf module to read the profiler's XPlane file with")


def read_events(directory: str) -> tuple[list[Event], list[str]]:
    """Every graph-op and XLA-kernel event of the host planes in the newest ``*.xplane.pb`` under
    ``directory``, and the names of the device planes with events, not read; AdapterError when
    there is no file or it cannot be read."""
    files = sorted(Path(directory).rglob("*.xplane.pb"), key=lambda path: path.stat().st_mtime)
    if not files:
        raise AdapterError(f"tf.profiler wrote no .xplane.pb file under its log directory ({directory})")
    xplane_pb2 = xplane_module()
    try:
        space = xplane_pb2.XSpace()
        space.ParseFromString(files[-1].read_bytes())
        devices = [str(p.name) for p in space.planes if p.name.startswith("/device:") and any(p.lines)]
        return _events(space), devices
    except AdapterError:
        raise
    except Exception as error:  # a truncated or foreign file
        raise AdapterError(f"the profiler's XPlane file cannot be read ({type(error).__name__}: {error})") from error


def _stat(stat: Any, names: Any) -> Any:
    which = stat.WhichOneof("value")
    if which == "ref_value":
        return names[stat.ref_value].name if stat.ref_value in names else None
    return getattr(stat, which) if which else None


def _events(space: Any) -> list[Event]:
    found: list[tuple[Event, Any]] = []  # (event, the flow id an XLA kernel carries)
    markers: dict[Any, tuple[int, float]] = {}  # flow → (line, start) of its "end: <op>" event
    lines: list[tuple[list[float], list[tuple[float, float]]]] = []  # kernel starts, pool tasks
    thread = -1
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        meta, stat_names = plane.event_metadata, plane.stat_metadata
        for line in plane.lines:
            thread += 1
            starts: list[float] = []
            tasks: list[tuple[float, float]] = []
            task: float | None = None
            base = float(line.timestamp_ns)
            for raw in sorted(line.events, key=lambda event: event.offset_ps):
                info = meta[raw.metadata_id]
                name, kind = str(info.name), str(info.display_name)
                begin = base + raw.offset_ps / 1000
                if name in _REGION:
                    if task is not None:
                        tasks.append((task, begin))
                    task = begin if name == _REGION[0] else None
                    continue
                stats: dict[str, Any] = {}
                for stat in (*info.stats, *raw.stats):
                    key = stat_names[stat.metadata_id].name if stat.metadata_id in stat_names else ""
                    if key in _STATS:
                        stats[key] = _stat(stat, stat_names)
                end = begin + raw.duration_ps / 1000
                if name.startswith("end: "):
                    if stats.get("_c") is not None:
                        markers[stats["_c"]] = (thread, begin)
                elif stats.get("hlo_op") and stats.get("hlo_module"):
                    op = str(stats["hlo_op"])
                    found.append((Event("", "", begin, end, thread, op, str(stats["hlo_module"])), stats.get("_p")))
                    starts.append(begin)
                elif kind and name.endswith(":" + kind) and len(name) > len(kind) + 1:
                    found.append((Event(name[: -len(kind) - 1], kind, begin, end, thread), None))
            if task is not None:
                tasks.append((task, math.inf))
            starts.sort()
            tasks.sort()
            lines.append((starts, tasks))
    result = []
    for event, flow in found:
        if event.hlo_op and flow is not None and flow in markers:
            stop = _finished(event.end, markers[flow], lines)
            if stop != event.end:
                event = Event(event.node, event.kind, event.start, stop, event.thread, event.hlo_op, event.hlo_module)
        result.append(event)
    return result


def _finished(stop: float, marker: tuple[int, float], lines: list[Any]) -> float:
    """When an XLA kernel event's work finished: its end, unless its ``end: <op>`` marker comes later.

    The executor marks the completion of work handed to the pool with an ``end: <op>`` event, on
    the thread that finished it, after that thread has gone on to run the kernels the completion
    made ready. So a marker after the event's end means the work went on: it finished at the
    first kernel that thread started after the launch ended, within the same pool task
    (``StartRegion`` to ``StopRegion``) as the marker, else at the marker (as
    ``adapters/_jax/profile.py`` reads XLA:CPU's events)."""
    line, at = marker
    if at <= stop:
        return stop
    starts, tasks = lines[line]
    position = bisect.bisect_right(tasks, (at, math.inf)) - 1
    if position < 0 or not tasks[position][0] <= at <= tasks[position][1]:
        return at
    after = max(stop, tasks[position][0])
    first = bisect.bisect_right(starts, after)
    return starts[first] if first < len(starts) and starts[first] < at else at
