"""A profiled pass as a Chrome / Perfetto trace: every kernel execution on a timeline, with its bound.

``write_trace(report, path)`` writes the Trace Event Format (``{"traceEvents": [...],
"displayTimeUnit": "ms"}``; open it in ui.perfetto.dev or chrome://tracing) from
``report.profile.events`` joined to ``report.estimate.kernels``:

- one complete event (``"ph": "X"``) per profiled kernel execution: ``name`` the kernel's,
  ``cat`` its kind (``fusion``, ``copy``, an aten op...; ``kernel`` when unknown), ``ts`` its start
  and ``dur`` its duration in microseconds (the start is relative to the profile's first event),
  ``pid`` 1 (the device), ``tid`` the profiler's thread or stream; ``args``: ``kernel`` (its index
  in ``estimate.kernels``), ``flops`` and ``bytes`` (its FLOPs and traffic per execution: the
  kernel's totals over its executions), ``level`` (where its footprint was scored), ``bound`` (its
  bound per execution, in microseconds like ``ts`` and ``dur``), ``bound_side``, and ``efficiency``
  (that bound ÷ this execution's duration, a fraction; null for a zero duration);
- a counter track (``"ph": "C"``, ``achieved FLOP/s``): the FLOP/s the running kernels achieve,
  each execution's FLOPs spread evenly over its duration and summed over concurrent executions,
  a step at every start and end;
- metadata events (``"ph": "M"``) naming the process after the device and the profiler.

The file is written atomically (a temporary file in the same folder, then renamed): it is
complete or absent, never half-written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import NeuralCostError
from .figure import unwritable, write_atomically
from .kernel_text import level_name

if TYPE_CHECKING:
    from ..analysis.gap import GapReport
    from ..analysis.kernels import KernelTime

__all__ = ["trace_events", "write_trace"]

PID = 1
US = 1e6
COUNTER = "achieved FLOP/s"


def _kernel_rows(report: GapReport) -> dict[int, KernelTime]:
    return {row.index: row for row in report.kernel_rows if row.index is not None}


def _execution_args(report: GapReport, index: int, row: KernelTime | None) -> tuple[dict[str, Any], float, float]:
    """A kernel's per-execution figures: its args (without efficiency), its bound and FLOPs per execution."""
    kernel = report.estimate.kernels[index]
    executions = max(kernel.executions, 1)
    flops: float = kernel.flops // executions if kernel.flops % executions == 0 else kernel.flops / executions
    bound = row.bound_seconds / executions if row is not None else 0.0
    args: dict[str, Any] = {
        "kernel": index,
        "flops": flops,
        "bytes": kernel.traffic_bytes,
        "level": level_name(report, row.level) if row is not None else None,
        "bound": bound * US,
        "bound_side": row.bound_side if row is not None else None,
    }
    return args, bound, flops


def _counter(steps: list[tuple[float, float, int]]) -> Iterator[dict[str, Any]]:
    """``(time s, FLOP/s change, running change)`` steps as counter events, one per distinct time."""
    rate, running = 0.0, 0
    steps.sort(key=lambda step: (step[0], step[2]))  # at one instant, ends before starts
    i = 0
    while i < len(steps):
        time = steps[i][0]
        while i < len(steps) and steps[i][0] == time:
            rate += steps[i][1]
            running += steps[i][2]
            i += 1
        if running == 0:
            rate = 0.0  # nothing runs: exactly zero, whatever the float sums left
        yield {"name": COUNTER, "ph": "C", "ts": time * US, "pid": PID, "args": {"FLOP/s": max(rate, 0.0)}}


def trace_events(report: GapReport) -> dict[str, Any]:
    """The trace as a JSON-ready dict (``write_trace`` writes it); NeuralCostError without a profile."""
    profile = report.profile
    if profile is None:
        notes = "; ".join(report.profile_notes) or "it was analyzed without one"
        raise NeuralCostError(f"no trace to write: the report has no profiled pass ({notes})")
    if not profile.events:
        raise NeuralCostError(
            f"no trace to write: the profile ({profile.source}) kept no per-execution events, only totals per kernel"
        )
    kernels = len(report.estimate.kernels)
    rows = _kernel_rows(report)
    device = report.measurement.device
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PID, "args": {"name": f"{device} ({profile.source})"}},
    ]
    per_kernel: dict[int, tuple[dict[str, Any], float, float]] = {}
    steps: list[tuple[float, float, int]] = []
    for event in profile.events:
        if event.kernel >= kernels:
            raise NeuralCostError(
                f"no trace to write: a profiled event names kernel {event.kernel}, but the estimate has {kernels}"
            )
        if event.kernel not in per_kernel:
            per_kernel[event.kernel] = _execution_args(report, event.kernel, rows.get(event.kernel))
        args, bound, flops = per_kernel[event.kernel]
        duration = event.duration_seconds
        kernel = report.estimate.kernels[event.kernel]
        events.append(
            {
                "name": kernel.name,
                "cat": kernel.kind or "kernel",
                "ph": "X",
                "ts": event.start_seconds * US,
                "dur": duration * US,
                "pid": PID,
                "tid": event.thread,
                "args": {**args, "efficiency": bound / duration if duration > 0 else None},
            }
        )
        if duration > 0:
            rate = flops / duration
            steps += [(event.start_seconds, rate, 1), (event.start_seconds + duration, -rate, -1)]
    events.extend(_counter(steps))
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def write_trace(report: GapReport, path: str | os.PathLike[str]) -> Path:
    """Write ``report``'s profiled pass to ``path`` as a Chrome/Perfetto trace (see the module
    docstring); atomically. NeuralCostError without a profile, or when the path cannot be written."""
    text = json.dumps(trace_events(report), allow_nan=False) + "\n"
    try:
        return write_atomically(path, lambda handle: handle.write(text), binary=False)
    except OSError as error:  # a folder at that path, a full disk
        raise unwritable("trace path", path, error) from error
