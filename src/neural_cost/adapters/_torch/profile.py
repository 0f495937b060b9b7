"""Measured time per kernel for eager PyTorch: ``torch.profiler``'s events joined to the trace's kernels.

What runs (``TorchAdapter.profile``): inside ``preserved`` (``preserve.py``: everything is put
back afterwards, as after ``trace``) and with the trace's module hooks attached (a module with
hooks can take another path than without: ``TransformerEncoderLayer`` skips its fused fast
path), in the grad mode the trace ran in (``no_grad`` for inference, ``enable_grad`` for a
training step: forward, backward of ``loss_fn(output)``, ``optimizer.step()`` and
``zero_grad``):

1. with an optimizer, one plain training step, so that the optimizer state exists (the trace
   also traced a second step);
2. one recorded warm run, under the trace's own recorder, outside the profiler: the kernels it
   makes must be the trace's kernels, and it notes each one's input shapes;
3. ``runs`` runs under ``torch.profiler.profile(activities=[CPU] (+ CUDA when available),
   record_shapes=True)``, each inside a ``record_function`` marking the run; the wall time is
   ``perf_counter`` around them (after a device sync, for CUDA).

How events are joined, per run: an operator event (``aten::addmm``, ``mylib::slow``) whose op
name and input shapes (tensor arguments with a dimension) are a kernel's is that kernel's
execution, with all it calls (an in-place op joins as its out-of-place form: ``_joins_as``);
any other event is looked inside. Not the leaf events: ``aten::addmm`` calls ``aten::copy_``
for its bias — the kernel is the call the recorder saw, the outermost below autograd. An
operator event that calls no other and is no kernel is *free* when the aten table says so
(views) or it is a composite that reached no kernel (``aten::dropout`` in eval): skipped, its
time outside kernels; else *unmatched* (name, seconds, events), never dropped. The run's
kernel events are aligned with the trace's kernels in execution order (difflib, when they
differ: a data-dependent path): what aligns is joined, the rest is unmatched, with a note. A
run whose shapes are not the warm run's (``nonzero`` of random data) joins by op name alone,
with a note. Sequence numbers are not used (-1 under ``no_grad``). The warm run is taken to
be the trace's program: kernels of one op whose shapes swap places would swap their times.

Time: on the CPU, a kernel execution's interval is its event's. When its event (or anything
it calls) launched device work (CUDA kernels, copies, memsets, linked by correlation id), its
intervals are those of the device work instead; an execution that launched none keeps its
CPU interval. A kernel's seconds are the union of its intervals over the runs, its events
its executions (for eager PyTorch, once per run each); ``ProfileEvent`` keeps each interval
(``thread`` numbers CPU threads and device streams in order of first appearance). A collective
run by gloo also has its transfer on a worker thread, joined in order: ``profile_collectives.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cache
from typing import Any

import torch

from ...core.errors import AdapterError
from ...core.profile import MeasuredKernel, Profile, ProfileEvent, runs_merged, union_seconds
from ...core.records import Trace
from ...core.units import plural
from ...measure.timing import keep_warm
from .preserve import WriteGuard, WriteWatch, graph_leaves, input_tensors, preserved
from .profile_collectives import Collectives, collective_kernels, interval, join_transfers, transfer_events
from .recorder import Recorder, module_scopes
from .table import TABLE, Free

RUN_MARK = "neural-cost profiled run"

Key = tuple[str, tuple[tuple[int, ...], ...] | None]
Interval = tuple[float, float, tuple[str, int]]  # start, end (µs), (cpu|device, thread or stream)


def op_name(kind: str) -> str:
    """``aten.addmm.default`` → ``aten::addmm``: how the profiler names a kernel's op."""
    parts = kind.split(".")
    return f"{parts[0]}::{parts[1]}" if len(parts) >= 2 else kind


def _joins_as(name: str) -> str:
    """An in-place op joins as its out-of-place form (``aten::add_`` → ``aten::add``): under the recorder
    composites take their out-of-place path (linear's bias add, gradient accumulation), eager runs in place."""
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def _shape_key(shapes: Sequence[Any]) -> tuple[tuple[int, ...], ...]:
    """The tensor arguments with at least one dimension (a scalar, a 0-d tensor and a tensor list
    all read as ``[]`` in the profiler), in order."""
    return tuple(tuple(s) for s in shapes if isinstance(s, (list, tuple)) and s and all(type(d) is int for d in s))


def _call_shapes(args: Any, kwargs: Any) -> tuple[tuple[int, ...], ...]:
    return _shape_key([list(v.shape) for v in [*args, *(kwargs or {}).values()] if isinstance(v, torch.Tensor)])


class _ShapeRecorder(Recorder):  # type: ignore[no-untyped-call]
    """The trace's recorder, noting each kernel's input shapes as it records the call."""

    def __init__(self, scopes: list[str], guard: WriteGuard) -> None:
        super().__init__(scopes, guard)
        self.shapes: dict[int, tuple[tuple[int, ...], ...]] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        before = len(self.kernels.calls)
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if len(self.kernels.calls) == before + 1 and self.kernels.calls[before][0] is func:
            self.shapes[before] = _call_shapes(args, kwargs)
        return out


@dataclass
class _Workload:
    """One run of the workload as the trace ran it: inference or a training step."""

    model: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    training: bool
    loss_fn: Callable[[Any], Any] | None
    optimizer: Any | None
    loss: Callable[[Any, Callable[[Any], Any] | None], Any]
    set_aside: Callable[[list[torch.Tensor]], None]
    leaves: list[torch.Tensor] | None = None

    def __call__(self) -> None:
        if not self.training:
            with torch.no_grad():
                self.model(*self.args, **self.kwargs)
            return
        with torch.enable_grad():
            loss = self.loss(self.model(*self.args, **self.kwargs), self.loss_fn)
            if self.leaves is None:  # inputs or closed-over tensors that require grad, found once
                self.leaves = graph_leaves(loss)
                self.set_aside(self.leaves)
            loss.backward()
            if self.optimizer is not None:
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
        for leaf in self.leaves:  # each step writes fresh gradients, as the traced step did
            leaf.grad = None


def profile_eager(
    model: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    trace: Trace,
    runs: int,
    training: bool,
    loss_fn: Callable[[Any], Any] | None,
    optimizer: Any | None,
    loss: Callable[[Any, Callable[[Any], Any] | None], Any],
    device: Any,
) -> Profile:
    """``TorchAdapter.profile``: see the module docstring."""
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise AdapterError(f"TorchAdapter.profile: runs={runs!r} must be a positive integer")
    if not trace.kernels:
        raise AdapterError("TorchAdapter.profile: the trace has no kernels to join the profiler's events to")
    if not callable(model):
        raise AdapterError(f"TorchAdapter.profile: model={model!r} is not callable")
    inputs = input_tensors(args, kwargs)
    guard = WriteGuard(model if isinstance(model, torch.nn.Module) else None, inputs)
    scopes: list[str] = []
    optimizer_ = optimizer if training else None
    on_cuda = device is not None and getattr(device, "type", None) == "cuda"
    with preserved(model, optimizer_, guard, training, inputs) as kept, module_scopes(model, scopes):
        work = _Workload(model, args, kwargs, training, loss_fn, optimizer_, loss, kept.grads.set_aside)
        recorder = _ShapeRecorder(scopes, guard)
        try:
            if optimizer_ is not None:  # the profiled steps, like the traced one, find the optimizer state
                with WriteWatch(guard):
                    work()
            with recorder:
                work()
            keep_warm(work)  # analyze's warm_seconds: the profiled runs start on awake threads, as the timed ones
        except Exception as error:
            raise AdapterError(f"TorchAdapter.profile: the warm run raised {type(error).__name__}: {error}") from error
        events, wall = _profiled_runs(work, runs, device if on_cuda else None)
    keys, notes = _expected(trace, recorder)
    return _join(events, keys, runs, wall, notes, collective_kernels(trace))


def _profiled_runs(work: _Workload, runs: int, device: Any) -> tuple[list[Any], float]:
    try:
        import torch.profiler as profiler

        activities = [profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(profiler.ProfilerActivity.CUDA)
        with profiler.profile(activities=activities, record_shapes=True) as prof:
            wall = _timed(profiler, work, runs, device)
        events = list(prof.events() or ())
    except AdapterError:  # the model's own failure
        raise
    except Exception as error:
        raise AdapterError(f"torch.profiler failed: {type(error).__name__}: {error}") from error
    if not events:
        raise AdapterError("torch.profiler recorded no events (a build without Kineto?)")
    return events, wall


def _timed(profiler: Any, work: _Workload, runs: int, device: Any) -> float:
    """The wall time of ``runs`` marked runs, synced with the device before and after."""
    try:
        if device is not None:
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        for run in range(runs):
            with profiler.record_function(f"{RUN_MARK} {run}"):
                work()
        if device is not None:
            torch.cuda.synchronize(device)
    except Exception as error:
        raise AdapterError(f"TorchAdapter.profile: a profiled run raised {type(error).__name__}: {error}") from error
    return time.perf_counter() - start


def _expected(trace: Trace, recorder: _ShapeRecorder) -> tuple[list[Key], list[str]]:
    """The kernels' join keys: op name and input shapes when the recorded warm run made the
    trace's kernels, else op name alone (and a note saying so)."""
    kinds = [str(call[0]) for call in recorder.kernels.calls]
    if kinds == [k.kind for k in trace.kernels] and len(recorder.shapes) == len(kinds):
        return [(_joins_as(op_name(kind)), recorder.shapes[i]) for i, kind in enumerate(kinds)], []
    note = (
        f"the recorded warm run made {plural(len(kinds), 'kernels')}, the trace {len(trace.kernels):,}: "
        f"events were joined to kernels by op name alone, not input shapes"
    )
    return [(_joins_as(op_name(k.kind or k.name)), None) for k in trace.kernels], [note]


@dataclass
class _Unit:
    """An operator event that is a kernel's execution, or a leaf that is none."""

    key: Key
    event: Any
    kernel: bool
    intervals: list[Interval] = field(default_factory=list)


def _is_op(event: Any) -> bool:
    name = event.name
    head, sep, tail = name.partition("::")
    return bool(sep) and head.isidentifier() and tail.isidentifier() and _cpu(event)


def _cpu(event: Any) -> bool:
    return str(getattr(event.device_type, "name", event.device_type)) == "CPU"


@cache
def _composite(name: str) -> bool:
    """Whether an overload of ``ns::op`` is a CompositeImplicitAutograd: it only calls other ops."""
    namespace, _, op = name.partition("::")
    try:
        packet = getattr(getattr(torch.ops, namespace), op)
        overloads = packet.overloads()
    except (AttributeError, RuntimeError):
        return False
    key = torch._C.DispatchKey.CompositeImplicitAutograd
    for overload in overloads:
        qualified = name if overload == "default" else f"{name}.{overload}"
        try:
            if torch._C._dispatch_has_kernel_for_dispatch_key(qualified, key):
                return True
        except RuntimeError:
            continue
    return False


def _free(name: str) -> bool:
    namespace, _, op = name.partition("::")
    if namespace == "profiler":
        return True
    return (namespace == "aten" and isinstance(TABLE.get(op), Free)) or _composite(name)


class _Events:
    """The profiled events by run, with device work by correlation id."""

    def __init__(self, events: list[Any], runs: int) -> None:
        self.device: dict[int, list[Any]] = {}
        for event in events:
            if not _cpu(event):
                linked = int(getattr(event, "linked_correlation_id", 0) or 0)
                if linked > 0:
                    self.device.setdefault(linked, []).append(event)
        marks = sorted(
            (e for e in events if _cpu(e) and e.cpu_parent is None and e.name.startswith(RUN_MARK)),
            key=lambda e: e.time_range.start,
        )
        if len(marks) != runs:
            raise AdapterError(f"torch.profiler kept {len(marks)} of the {runs} profiled runs")
        self.roots: list[list[Any]] = [list(mark.cpu_children) for mark in marks]
        starts = [mark.time_range.start for mark in marks]
        main = {mark.thread for mark in marks}
        others = [e for e in events if _cpu(e) and e.cpu_parent is None and e.thread not in main]
        self.transfers: list[list[Any]] = [[] for _ in marks]  # gloo's worker threads: profile_collectives.py
        for found, into in zip(transfer_events(others), (self.transfers, self.roots), strict=True):
            for event in found:  # another thread's work (CUDA's backward runs on its own), by start time
                run = sum(1 for s in starts if s <= event.time_range.start) - 1
                if run >= 0:
                    into[run].append(event)
        for roots in self.roots:
            roots.sort(key=lambda e: e.time_range.start)

    def units(self, roots: list[Any], with_shapes: bool, wanted: set[Key]) -> list[_Unit]:
        units: list[_Unit] = []

        def walk(event: Any) -> bool:
            op = _is_op(event)
            key: Key = (_joins_as(event.name), _shape_key(event.input_shapes) if with_shapes else None)
            if op and key in wanted:
                units.append(_Unit(key, event, True, self.intervals(event)))
                return True
            below = False
            for child in event.cpu_children:
                below = walk(child) or below
            if op and not below:
                intervals = self.intervals(event)
                launched = any(kind == "device" for _, _, (kind, _) in intervals)
                if launched or not _free(event.name):
                    units.append(_Unit(key, event, False, intervals))
            return below or op

        for root in roots:
            walk(root)
        return units

    def intervals(self, event: Any) -> list[Interval]:
        """The device work ``event`` launched, else its own CPU interval."""
        found: list[Interval] = []
        if self.device:
            pending = [event]
            while pending:
                current = pending.pop()
                if getattr(current, "kernels", None):
                    for work in self.device.get(int(current.id), ()):
                        stream = int(getattr(work, "device_resource_id", 0) or 0)
                        found.append((work.time_range.start, work.time_range.end, ("device", stream)))
                pending.extend(current.cpu_children)
        if found:
            return found
        return [(event.time_range.start, event.time_range.end, ("cpu", int(event.thread)))]


def _align(units: list[_Unit], keys: list[Key]) -> Iterator[tuple[int, int]]:
    """(unit position, kernel index) pairs, in order."""
    found = [u.key for u in units]
    if found == keys:
        yield from ((i, i) for i in range(len(keys)))
        return
    for block in SequenceMatcher(None, found, keys, autojunk=False).get_matching_blocks():
        yield from ((block.a + j, block.b + j) for j in range(block.size))


def _join_run(by_run: _Events, roots: list[Any], keys: list[Key]) -> tuple[list[_Unit], list[_Unit], list[int]]:
    """One run's units, its kernel units, and the kernel index each kernel unit joined (-1: none)."""
    units = by_run.units(roots, keys[0][1] is not None, set(keys))
    kernel_units = [u for u in units if u.kernel]
    joined = [-1] * len(kernel_units)
    for position, index in _align(kernel_units, keys):
        joined[position] = index
    return units, kernel_units, joined


def _join(events: list[Any], keys: list[Key], runs: int, wall: float, notes: list[str], groups: Collectives) -> Profile:
    by_run = _Events(events, runs)
    by_name: list[Key] = [(name, None) for name, _ in keys]
    matched: dict[int, list[Interval]] = {}
    executions: dict[int, int] = {}
    unmatched: dict[str, list[Interval]] = {}
    unmatched_events: dict[str, int] = {}
    for run, roots in enumerate(by_run.roots):
        units, kernel_units, joined = _join_run(by_run, roots, keys)
        count = sum(index >= 0 for index in joined)
        if keys[0][1] is not None and (count < len(keys) or len(units) > count):
            # shapes that change from run to run (nonzero, masked_select of random data): by name
            retry = _join_run(by_run, roots, by_name)
            if sum(index >= 0 for index in retry[2]) > count:
                units, kernel_units, joined = retry
                count = sum(index >= 0 for index in joined)
                notes.append(
                    f"profiled run {run + 1}: input shapes other than the warm run's (data-dependent shapes?): "
                    f"joined by op name alone"
                )
        executed = [(index, unit.intervals) for unit, index in zip(kernel_units, joined, strict=True) if index >= 0]
        left, said = join_transfers(run, by_run.transfers[run], executed, groups)  # extends their intervals
        notes += said
        units += [_Unit((event.name, None), event, False, [interval(event)]) for event in left]
        for unit, index in zip(kernel_units, joined, strict=True):
            if index >= 0:
                matched.setdefault(index, []).extend(unit.intervals)
                executions[index] = executions.get(index, 0) + 1
        for unit in [u for u, index in zip(kernel_units, joined, strict=True) if index < 0] + [
            u for u in units if not u.kernel
        ]:
            unmatched.setdefault(unit.event.name, []).extend(unit.intervals)
            unmatched_events[unit.event.name] = unmatched_events.get(unit.event.name, 0) + 1
        missing, extra = len(keys) - count, len(kernel_units) - count
        if missing or extra:
            said = [f"{missing:,} of the trace's {len(keys):,} kernels had no event"] if missing else []
            said += [f"{plural(extra, 'events')} of kernel ops joined no kernel in order"] if extra else []
            notes.append(
                f"profiled run {run + 1}: {' and '.join(said)}: the run took another path than the trace "
                f"(data-dependent control flow?); what aligned is joined"
            )
    return _profile(matched, executions, unmatched, unmatched_events, runs, wall, notes)


def _seconds(intervals: list[Interval]) -> float:
    return union_seconds((start, end) for start, end, _ in intervals) / 1e6


def _profile(
    matched: dict[int, list[Interval]],
    executions: dict[int, int],
    unmatched: dict[str, list[Interval]],
    unmatched_events: dict[str, int],
    runs: int,
    wall: float,
    notes: list[str],
) -> Profile:
    everything = [interval for intervals in matched.values() for interval in intervals]
    executed = sorted(
        (start, index, end - start, where) for index, found in matched.items() for start, end, where in found
    )
    origin = executed[0][0] if executed else 0.0
    threads: dict[tuple[str, int], int] = {}
    kept = [
        (start, index, duration, threads.setdefault(where, len(threads))) for start, index, duration, where in executed
    ]
    return Profile(
        runs=runs,
        wall_seconds=wall,
        kernels=tuple(MeasuredKernel(index, _seconds(matched[index]), executions[index]) for index in sorted(matched)),
        kernel_seconds=_seconds(everything),
        source="torch.profiler",
        unmatched=tuple(
            sorted(
                ((name, _seconds(found), unmatched_events[name]) for name, found in unmatched.items()),
                key=lambda item: -item[1],
            )
        ),
        notes=runs_merged(notes),
        events=tuple(
            ProfileEvent(index, (start - origin) / 1e6, duration / 1e6, thread)
            for start, index, duration, thread in kept
        ),
    )


__all__ = ["RUN_MARK", "op_name", "profile_eager"]
