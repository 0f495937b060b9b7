"""Expected time: the program's kernels through this device's calibrated kernel model.

``expected_time(estimate, calibration, floor_seconds)`` scores each kernel of the estimate on the calibration's own
spec (``analysis/kernels.py``: its compute time, and its traffic at the level its footprint fits), names its *class*
(below), reads its expected time from that class's fitted curves (``hardware/kernel_model.py``; PyTorch's few-row
products by their rows, ``linear_rows``), per execution, times its executions. The program's expected time is the sum
over kernels plus the framework *floor*: what a run costs beyond its kernels (Python between eager ops, a jitted
call's dispatch), measured once with a tiny input of the same program (``analysis.workload.framework_floor``). It
reads nothing of the timed runs of the program it describes: only the trace, the calibration and the floor.

Kernels are named by class (``analysis/kernel_classes.py``). A kernel of a class the calibration lacks is scored at its
bound, noted; a kernel running an unmodeled operation has no expectation for that part (the total is a floor, said).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from ..core.errors import RecordError
from ..core.estimate import CostEstimate
from ..core.units import format_seconds
from ..hardware.kernel_model import KernelCalibration
from ..hardware.spec import HardwareSpec
from .extrapolated import PAST, ceilings, extrapolated_note, under_bound_note
from .fresh_pages import FRESH_THRESHOLD_BYTES, Allocator, glibc_allocator, large_result_bytes, mapped_note
from .kernel_classes import borrowed_class, call_name, class_model, kernel_class, parts
from .kernel_extras import (
    REUSED_GRID,
    call_cost,
    compiled_work,
    compiled_work_note,
    evicted_bytes,
    evicted_note,
    layer_weight_bytes,
)
from .kernel_revision import revision
from .kernels import UNMAPPED, KernelTime, kernel_rows
from .linear_rows import fitted, rows_note, thin_seconds
from .rows import share_fused, split_by_bounds
from .usual_loops import loops_as_usual

#: The distribution each framework's version is read from (without importing it).
_DISTRIBUTIONS = {"torch": ("torch",), "jax": ("jax", "jaxlib"), "tensorflow": ("tensorflow", "tensorflow-cpu")}


@dataclass(frozen=True, slots=True)
class ExpectedRow:
    """One kernel's expected time per run, beside its bound (and its measured time, when profiled)."""

    name: str
    kernel_class: str
    executions: int
    seconds: float
    bound_seconds: float
    #: "model" (the class's curves) or "roofline" (no calibration for the class: its bound).
    basis: str
    index: int | None = None
    measured_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "class": self.kernel_class,
            "executions": self.executions,
            "seconds": self.seconds,
            "bound_seconds": self.bound_seconds,
            "basis": self.basis,
            "index": self.index,
            "measured_seconds": self.measured_seconds,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExpectedRow:
        return cls(
            str(data["name"]),
            str(data["class"]),
            int(data["executions"]),
            float(data["seconds"]),
            float(data["bound_seconds"]),
            str(data["basis"]),
            data.get("index"),
            data.get("measured_seconds"),
        )


@dataclass(frozen=True, slots=True)
class Expected:
    """The expected time of one run of a program, how it was obtained, and what it could not see."""

    seconds: float
    kernel_seconds: float
    floor_seconds: float | None
    rows: tuple[ExpectedRow, ...]
    framework: str
    #: The calibration's own cross-validated error (median, p90) on points it did not fit.
    median_error: float | None
    p90_error: float | None
    calibration_date: str
    notes: tuple[str, ...] = ()
    #: What makes the calibration not this program's: another machine, framework or version.
    flags: tuple[str, ...] = ()
    #: What the large results would add if every one landed on freshly mapped pages (an eager framework's
    #: allocator state decides, and varies by process); None where it does not apply.
    first_touch_seconds: float | None = None
    #: The part of ``seconds`` (and of its kernels' rows) that is first-touch page faults on results glibc maps
    #: anew every run (``analysis/fresh_pages.py``); 0 where none.
    fresh_page_seconds: float = 0.0
    #: The calibration's cost of a fresh byte, which prices the measured page faults (every framework).
    first_touch_seconds_per_byte: float | None = None
    #: The expected time with its loops' kernels as the machine usually ran them while calibrated (the median of
    #: their passes, ``KernelCalibration.usual_state``), not at their fastest; None without loop kernels or curves.
    usual_seconds: float | None = None
    #: The expected time in the host's state when the program ran (``usual_loops.loops_now``): its loop kernels
    #: in the state the host's cross-core wake-up measured then (``wake_seconds``) reads against the calibration's
    #: (``loop_wakes``: before its fastest and its usual passes); None without them. ``wake_around``: the
    #: wake-ups just before and just after the timed runs, where both were measured; ``wake_seconds`` is then
    #: their mean.
    now_seconds: float | None = None
    wake_seconds: float | None = None
    loop_wakes: tuple[float, float] | None = None
    wake_around: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "kernel_seconds": self.kernel_seconds,
            "floor_seconds": self.floor_seconds,
            "framework": self.framework,
            "median_error": self.median_error,
            "p90_error": self.p90_error,
            "calibration_date": self.calibration_date,
            "notes": list(self.notes),
            "flags": list(self.flags),
            "first_touch_seconds": self.first_touch_seconds,
            "fresh_page_seconds": self.fresh_page_seconds,
            "first_touch_seconds_per_byte": self.first_touch_seconds_per_byte,
            "usual_seconds": self.usual_seconds,
            "now_seconds": self.now_seconds,
            "wake_seconds": self.wake_seconds,
            "loop_wakes": None if self.loop_wakes is None else list(self.loop_wakes),
            "wake_around_seconds": None if self.wake_around is None else list(self.wake_around),
            "rows": [row.to_dict() for row in self.rows],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Expected:
        return cls(
            seconds=float(data["seconds"]),
            kernel_seconds=float(data["kernel_seconds"]),
            floor_seconds=data.get("floor_seconds"),
            rows=tuple(ExpectedRow.from_dict(row) for row in data.get("rows") or ()),
            framework=str(data.get("framework", "")),
            median_error=data.get("median_error"),
            p90_error=data.get("p90_error"),
            calibration_date=str(data.get("calibration_date", "")),
            notes=tuple(data.get("notes") or ()),
            flags=tuple(data.get("flags") or ()),
            first_touch_seconds=data.get("first_touch_seconds"),
            fresh_page_seconds=float(data.get("fresh_page_seconds") or 0.0),
            first_touch_seconds_per_byte=data.get("first_touch_seconds_per_byte"),
            usual_seconds=data.get("usual_seconds"),
            now_seconds=data.get("now_seconds"),
            wake_seconds=data.get("wake_seconds"),
            loop_wakes=None if data.get("loop_wakes") is None else tuple(data["loop_wakes"]),
            wake_around=None if data.get("wake_around_seconds") is None else tuple(data["wake_around_seconds"]),
        )

    def with_measured(self, measured: Mapping[int, float], fused: tuple[tuple[int, ...], ...] = ()) -> Expected:
        """The rows with the measured time per run of their kernel (by kernel index), where profiled; kernels the
        profiler timed as one op (``fused``, ``Profile.fused``) share its time in proportion to their expected
        time, so each reads the op's ratio to its expectation."""
        expected = {row.index: row.seconds for row in self.rows if row.index is not None}
        measured = share_fused(measured, fused, expected)
        rows = tuple(
            replace(row, measured_seconds=measured.get(row.index)) if row.index is not None else row
            for row in self.rows
        )
        return replace(self, rows=rows)

    @property
    def cold_seconds(self) -> float | None:
        """The expected time with every large result on fresh pages (None where that does not apply):
        ``first_touch_seconds`` is what all of them cost, of which ``fresh_page_seconds`` is
        already in ``seconds``."""
        if self.first_touch_seconds is None:
            return None
        return self.seconds - self.fresh_page_seconds + self.first_touch_seconds

    def basis(self) -> str:
        """``calibrated model; ±9% on its own held-out calibration points`` and the floor."""
        error = (
            "" if self.median_error is None else f"; ±{self.median_error:.0%} on its own held-out calibration points"
        )
        floor = "" if self.floor_seconds is None else f"; framework floor {format_seconds(self.floor_seconds)}"
        return f"calibrated model{error}{floor}"


def installed_versions(framework: str) -> dict[str, str]:
    """The installed versions of a framework's distributions (read from metadata, never imported) and
    neural-cost's kernel-model revision for it (its grid and kernel classes change between them)."""
    from importlib import metadata

    found = {"neural-cost kernel model": revision(framework)}
    for name in _DISTRIBUTIONS.get(framework, (framework,)):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def calibration_flags(
    calibration: KernelCalibration,
    framework: str | None,
    machine: Mapping[str, Any] | None = None,
    hardware: HardwareSpec | None = None,
) -> tuple[str, ...]:
    """Why ``calibration`` is not this program's own: another framework, framework version or
    machine (``machine``: this machine's key, default read from the host; not compared when unknown)."""
    flags = []
    spec = calibration.hardware
    if hardware is not None and (hardware.kind != spec.kind or hardware.name != spec.name):
        flags.append(
            f"the calibration is of {spec.name} ({spec.kind}), the program runs on {hardware.name} ({hardware.kind})"
        )
    if framework is not None and calibration.framework != framework:
        flags.append(f"the calibration is of {calibration.framework} kernels, the program runs in {framework}")
    here = installed_versions(calibration.framework)
    for name, version in calibration.versions.items():
        if name in here and here[name] != version:
            flags.append(f"calibrated with {name} {version}, installed {here[name]}")
    unsaid = [name for name in here if name not in calibration.versions]
    if unsaid:
        flags.append(f"the calibration does not say which {' and '.join(unsaid)} version(s) made it")
    if machine is None and sys.platform.startswith("linux"):
        from ..hardware.host_calibration import live_machine_key

        machine = live_machine_key()
    if machine and not calibration.machine:
        flags.append("the calibration does not say which machine it was made on")
    elif machine and dict(machine) != dict(calibration.machine):
        flags.append(
            f"calibrated on another machine ({calibration.machine.get('cpu_model', 'unknown')}, "
            f"{calibration.date or 'undated'}): the expectation is that machine's"
        )
    return tuple(flags)


def expected_time(
    estimate: CostEstimate,
    calibration: KernelCalibration,
    floor_seconds: float | None = None,
    *,
    machine: Mapping[str, Any] | None = None,
    hardware: HardwareSpec | None = None,
    floor_note: str | None = None,
) -> Expected:
    """The expected time of one run of ``estimate``'s program (the module docstring).
    ``hardware``: the device the program runs on, flagged when the calibration is of another
    kind or device; ``floor_note``: how the floor was obtained, or why there is none."""
    if not estimate.by_operation:
        raise RecordError(
            "expected time of a program with no operations: the trace modeled nothing, so there is nothing to "
            "expect (check the framework and that the model runs its work through it)"
        )
    if floor_seconds is not None and not floor_seconds >= 0:
        raise RecordError(f"floor_seconds={floor_seconds!r} must be a non-negative number of seconds")
    scored, _notes = kernel_rows(estimate, calibration.hardware)
    cost = calibration.first_touch_seconds_per_byte
    predicts = cost is not None and calibration.fresh_results  # a compiled program's faults: measured only
    allocator = glibc_allocator()
    mapped_from = allocator.mapped_from if predicts else None
    rows = []
    missing: dict[str, int] = {}
    borrowed: dict[str, int] = {}
    unmodeled: list[str] = []
    fresh_bytes, evicted = 0, (0, 0)  # kernels, bytes whose level no longer held them (``evicted_bytes``)
    measured_rate = calibration.evicted_seconds_per_byte  # an evicted operand's cost a byte (``_torch/evicted.py``)
    per_evicted_byte = 1 / calibration.hardware.memory_bandwidth if measured_rate is None else measured_rate
    floors = calibration.floors()  # where a curve falls to below its first knot
    beyond: list[tuple[str, int, int]] = []  # kernels read at their compiled work: (name, compiled, records)
    largest = ceilings(calibration)
    call = call_cost(calibration)  # a recurrent layer's cost per call, beside its per-step curve
    by_rows, thin = fitted(calibration), 0  # PyTorch's few-row products read by their rows (``linear_rows``)
    past: dict[str, tuple[str, float, float]] = {}  # kernels past their class's points: name → (class, ×, seconds)
    for row in scored:
        compiled = compiled_work(estimate, row, calibration.hardware, beyond)  # its bound stays the program's
        pieces = parts(estimate, compiled, calibration.hardware)
        name = pieces[0].kernel_class if len(pieces) == 1 else kernel_class(estimate, row)
        model = class_model(calibration, name)
        if row.unmodeled:
            unmodeled += [u for u in row.unmodeled if u not in unmodeled]
        if row.executions == 0:
            seconds, basis = 0.0, "model"
        elif model is None:  # its bound as its parts read it (a streamed layer's weights included)
            seconds, basis = sum(max(part.compute_seconds, part.memory_seconds) for part in pieces), "roofline"
            missing[name] = missing.get(name, 0) + 1
        else:
            seconds, basis = 0.0, "model"
            lacking: set[str] = set()  # a kernel counts once per class it lacks or borrows, whatever its parts
            borrowing: set[str] = set()
            for part in pieces:
                found = class_model(calibration, part.kernel_class)
                if found is None:  # a contraction of a class without a curve in a kernel whose class has one
                    seconds += max(part.compute_seconds, part.memory_seconds)
                    lacking.add(part.kernel_class)
                    continue
                n, memory = part.repeats, part.memory_on(found)  # on its curve's axis
                share = n * found.seconds(part.compute_seconds / n, memory / n, floors.get(found.name))
                if (read := thin_seconds(by_rows, estimate, row, part)) is not None:
                    share, thin = read, thin + 1
                if call is not None and row.index is not None and found.name.split(":")[0] == "rnn":
                    share += row.executions * (call[0] + call[1] * layer_weight_bytes(estimate, row.index))
                seconds += share
                ceiling = largest.get(found.name, float("inf")) if read is None else float("inf")  # by rows: no curve
                factor = max(part.compute_seconds, memory) / n / ceiling
                if factor > PAST:  # the row's farthest part names it; every past part's time counts
                    name_of, most, extra = past.get(row.name, (found.name, factor, 0.0))
                    name_of, most = (found.name, factor) if factor >= most else (name_of, most)
                    past[row.name] = (name_of, most, extra + share)
                if borrowed_class(calibration, part.kernel_class):
                    borrowing.add(part.kernel_class)
            for lacked in lacking:
                missing[lacked] = missing.get(lacked, 0) + 1
            for lent in borrowing:
                borrowed[lent] = borrowed.get(lent, 0) + 1
        if row.executions and row.index is not None:  # operands its level no longer holds: at an evicted byte's cost
            reused = name.split("@", 1)[0] in REUSED_GRID
            moved = evicted_bytes(estimate.kernels[row.index], row, calibration.hardware, reused) * row.executions
            seconds, evicted = seconds + moved * per_evicted_byte, (evicted[0] + bool(moved), evicted[1] + moved)
        if cost is not None and mapped_from is not None:  # results glibc maps anew every run: their faults
            fresh = large_result_bytes(estimate, _records(estimate, row), mapped_from)
            fresh_bytes += fresh
            seconds += fresh * cost
        rows.append(ExpectedRow(name=row.name, kernel_class=name, executions=row.executions, seconds=seconds,
                                bound_seconds=row.bound_seconds, basis=basis, index=row.index))  # fmt: skip
    notes = []
    unmapped = missing.pop("unmapped", 0)  # no class of its own: the records no kernel runs (named by their note)
    if missing:
        listed = ", ".join(f"{name} ({count})" for name, count in sorted(missing.items()))
        notes.append(f"no calibration for kernel class(es) {listed}: scored at their roofline bound")
    if unmapped:
        notes.append("the records no kernel of the compiled program runs are scored at their roofline bound")
    if borrowed:
        listed = ", ".join(f"{name} ({n}) off {borrowed_class(calibration, name)}" for name, n in borrowed.items())
        notes.append(f"kernels read off another class's curve (the calibration has none of theirs): {listed}")
    if unmodeled:
        notes.append(
            f"kernels running unmodeled operations ({', '.join(unmodeled[:5])}) are expected by their modeled "
            f"part only: the total is low"
        )
    if beyond:
        notes.append(compiled_work_note(beyond))
    notes += [rows_note(thin, by_rows)] if thin and by_rows is not None else []
    if evicted[0]:
        notes.append(evicted_note(evicted[0], evicted[1], evicted[1] * per_evicted_byte, measured_rate is not None))
    kernel_seconds = sum(row.seconds for row in rows)
    if past:
        notes.append(extrapolated_note([(kernel, *found) for kernel, found in past.items()], kernel_seconds))
    if under := under_bound_note(rows, scored, kernel_seconds, calibration, partial(_dtypes, estimate), past):
        notes.append(under)
    fresh_seconds = fresh_bytes * (cost or 0.0)
    upper_bytes, kept = _upper_fresh_bytes(estimate, allocator)
    upper = upper_bytes * cost if predicts and cost is not None else None
    if predicts:
        notes += mapped_note(allocator, fresh_bytes, fresh_seconds, kept=kept)
    if floor_seconds is None:
        notes.append(floor_note or "no framework floor measured: the expected time is the kernels' alone")
    elif floor_note:
        notes.append(floor_note)
    usual_seconds = loops_as_usual(estimate, calibration, rows, floor_seconds, hardware, expected_time)
    return Expected(
        seconds=kernel_seconds + (floor_seconds or 0.0),
        kernel_seconds=kernel_seconds,
        floor_seconds=floor_seconds,
        rows=tuple(sorted(rows, key=lambda r: -r.seconds)),
        framework=calibration.framework,
        median_error=calibration.median_error,
        p90_error=calibration.p90_error,
        calibration_date=calibration.date,
        notes=tuple(notes),
        flags=calibration_flags(calibration, estimate.framework, machine, hardware),
        first_touch_seconds=upper,
        fresh_page_seconds=fresh_seconds,
        first_touch_seconds_per_byte=cost,
        usual_seconds=usual_seconds,
    )


def _dtypes(estimate: CostEstimate, row: KernelTime) -> tuple[str, ...]:
    """The dtypes a scored kernel computes in: its kernel's, or the program's for a record scored as its own."""
    flops = estimate.kernels[row.index].flops_by_dtype if row.index is not None else estimate.flops_by_dtype
    return tuple(dtype for dtype, count in flops.items() if count)


def _records(estimate: CostEstimate, row: KernelTime) -> tuple[int, ...]:
    """The record indices a scored kernel row runs whose results are allocated (the unmapped row:
    the unmapped records): none for a kernel that writes in place (``relu_``, ``add_``,
    ``copy_``: its result is its input's storage, no fresh pages)."""
    if row.index is not None:
        kernel = estimate.kernels[row.index]
        return () if call_name(kernel).endswith("_") else kernel.operations
    if row.name == UNMAPPED:
        return tuple(estimate.unmapped_operations)
    return ()


def allocated_records(estimate: CostEstimate) -> tuple[int, ...]:
    """The records whose results are allocated: all but those of kernels that write in place
    (``relu_``, ``copy_``); a trace without kernels cannot tell them apart and gives every record."""
    if not estimate.kernels:
        return tuple(range(len(estimate.by_operation)))
    allocated = [i for kernel in estimate.kernels if not call_name(kernel).endswith("_") for i in kernel.operations]
    return tuple(dict.fromkeys([*allocated, *estimate.unmapped_operations]))


def _upper_fresh_bytes(estimate: CostEstimate, allocator: Allocator) -> tuple[int, bool]:
    """Bytes of results on fresh pages at the range's upper end: every allocated result of at
    least ``FRESH_THRESHOLD_BYTES`` (or the allocator's mmap threshold, when lower) when none is
    reused; only those mapped anew every run when the allocator keeps the rest (its trim
    threshold set above all a run allocates below its mmap threshold). And whether it keeps them."""
    records, mapped_from = allocated_records(estimate), allocator.mapped_from
    mapped = 0 if mapped_from is None else large_result_bytes(estimate, records, mapped_from)
    if allocator.keeps(large_result_bytes(estimate, records, 1) - mapped):
        return mapped, True
    lowest = FRESH_THRESHOLD_BYTES if mapped_from is None else min(FRESH_THRESHOLD_BYTES, mapped_from)
    return large_result_bytes(estimate, records, lowest), False


def record_expectations(estimate: CostEstimate, bounds: Mapping[int, float], expected: Expected) -> dict[int, float]:
    """Each record's share of its kernel's expected time, split in proportion to the records'
    own bounds (``bounds``: record index → bound), as measured time is split; the unmapped
    records share the unmapped row's. Records scored as their own kernels (a trace without
    kernels) get none: their rows cannot be told apart by name."""
    result: dict[int, float] = {}

    def split(records: Sequence[int], seconds: float) -> None:
        for record, part in split_by_bounds(records, bounds):
            result[record] = result.get(record, 0.0) + seconds * part

    for row in expected.rows:
        if row.index is not None and estimate.kernels[row.index].operations:
            split(estimate.kernels[row.index].operations, row.seconds)
        elif row.index is None and row.kernel_class == "unmapped" and estimate.unmapped_operations:
            split(estimate.unmapped_operations, row.seconds)
    return result
