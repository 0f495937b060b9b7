"""analyze_gap: score an estimate and a measurement against a hardware spec."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.attrs import FrozenAttrs
from ..core.errors import MeasurementError, RecordError
from ..core.estimate import CostEstimate
from ..core.profile import Profile
from ..core.records import Operation
from ..hardware.spec import HardwareSpec
from ..measure.timing import Measurement
from .communication import Communication, communication
from .expected import Expected, record_expectations
from .findings import Finding, build_findings
from .kernels import KernelTime, kernel_rows, traffic_by_level
from .memory import MemoryProfile, memory_profile
from .presenter import presenter
from .provenance import collect_provenance
from .rows import RowTime, check_float_range, compute_seconds, operation_rows, scope_rows, seconds
from .timing import (
    TimeCoverage,
    kernel_rows_with_time,
    operation_rows_with_time,
    record_times,
    scope_rows_with_time,
    time_coverage,
)
from .utilization import Utilization, is_training_step, utilization

if TYPE_CHECKING:
    import os

    from matplotlib.figure import Figure

DEFAULT_COVERAGE_THRESHOLD = 0.9
SCHEMA = "neural-cost/report"
#: Version 2 (docs/report-schema.md) adds the work share of coverage; version 1 still loads.
SCHEMA_VERSION = 2
EMPTY_PROVENANCE = FrozenAttrs()


@dataclass(frozen=True, slots=True)
class GapReport:
    """The bound of an estimate on a spec, the observed time, and what to make of it.

    ``bound_seconds`` is the kernel bound: the sum over executed kernels of each one's
    max(compute, traffic at the memory level its footprint fits) (``analysis/kernels.py``).
    The program roofline — total FLOPs at the peaks against compiled traffic at main-memory
    bandwidth — is ``roofline_seconds`` = max(``compute_seconds``, ``memory_seconds``).
    ``efficiency`` is bound / observed as a fraction (1.5 means 150%) and is never clamped.
    """

    estimate: CostEstimate
    measurement: Measurement
    hardware: HardwareSpec
    compute_seconds: float
    memory_seconds: float
    compulsory_seconds: float | None
    observed_seconds: float
    findings: tuple[Finding, ...]
    operation_rows: tuple[RowTime, ...]
    scope_rows: tuple[RowTime, ...]
    coverage_threshold: float = DEFAULT_COVERAGE_THRESHOLD
    provenance: FrozenAttrs = EMPTY_PROVENANCE
    #: Every executed kernel scored at its level, costliest first (``analysis/kernels.py``).
    kernel_rows: tuple[KernelTime, ...] = ()
    #: What scoring the kernels had to assume (a cache level without a measured bandwidth...).
    kernel_notes: tuple[str, ...] = ()
    #: The profiled pass the rows' measured times come from (``core/profile.py``), or None.
    profile: Profile | None = None
    #: Why there is no profile, or what it could not join (a profiler that failed...).
    profile_notes: tuple[str, ...] = ()
    #: The expected time from this device's kernel model (``analysis/expected.py``), or None.
    expected: Expected | None = None

    @property
    def time_coverage(self) -> TimeCoverage | None:
        """Measured time in modeled kernels over measured time in all kernels; None without a profile."""
        return time_coverage(self.estimate, self.profile) if self.profile is not None else None

    @property
    def kernel_bound_seconds(self) -> float:
        """The kernel bound (the program roofline when there are no kernel rows): compute and memory."""
        if not self.kernel_rows:
            return self.roofline_seconds
        return sum(row.bound_seconds for row in self.kernel_rows)

    @property
    def communication(self) -> Communication | None:
        """The device's collectives on the spec's first link, and their measured time with a
        profile; None when the program has none."""
        return communication(self.estimate, self.hardware, self.kernel_bound_seconds, self.profile)

    @property
    def utilization(self) -> Utilization | None:
        """MFU and HFU of a training step, devices from its collectives (``analysis/utilization.py``);
        None for inference. ``utilization(report, devices=8)`` says how many devices it ran on."""
        return utilization(self)

    @property
    def memory(self) -> MemoryProfile:
        """One device's memory (``analysis/memory.py``) from the estimate's boundary: gradients for a
        training step, the optimizer state unknown (a report does not say which optimizer ran)."""
        return memory_profile(self.estimate, is_training_step(self.estimate), None, hardware=self.hardware)

    @property
    def bound_seconds(self) -> float:
        """The kernel bound; for a program with collectives scored on a link, the larger of it and
        the communication time (perfect overlap: a lower bound whatever the schedule)."""
        comm = self.communication
        overlap = comm.overlap_seconds if comm is not None else None
        return overlap if overlap is not None else self.kernel_bound_seconds

    @property
    def roofline_seconds(self) -> float:
        """The program roofline: max(total compute, compiled traffic at main-memory bandwidth)."""
        return max(self.compute_seconds, self.memory_seconds)

    @property
    def unfused_memory_seconds(self) -> float:
        """Unfused traffic (every record reads its inputs, writes its output) at main-memory bandwidth."""
        return seconds(self.estimate.bytes, self.hardware.memory_bandwidth, "the estimate's unfused bytes")

    @property
    def bound_side(self) -> str:
        """The side that decides most of the bound: kernels bound by compute against those by traffic."""
        comm = self.communication
        if comm is not None and comm.seconds is not None and comm.seconds > self.kernel_bound_seconds:
            return "communication"
        if not self.kernel_rows:
            return "compute" if self.compute_seconds >= self.memory_seconds else "memory"
        compute = sum(r.bound_seconds for r in self.kernel_rows if r.bound_side == "compute")
        memory = sum(r.bound_seconds for r in self.kernel_rows if r.bound_side == "memory")
        return "compute" if compute >= memory else "memory"

    @property
    def traffic_by_level(self) -> dict[str, int]:
        """Compiled traffic by the memory level each kernel was scored at."""
        return traffic_by_level(self.kernel_rows)

    @property
    def efficiency(self) -> float:
        return self.bound_seconds / self.observed_seconds if self.observed_seconds > 0 else float("inf")

    @property
    def achieved_flops_per_second(self) -> float:
        return self.estimate.flops / self.observed_seconds if self.observed_seconds > 0 else float("inf")

    @property
    def achieved_bytes_per_second(self) -> float:
        return self.estimate.compiled_bytes / self.observed_seconds if self.observed_seconds > 0 else float("inf")

    @property
    def device_mismatch(self) -> bool:
        return any(f.code == "device_mismatch" for f in self.findings)

    @property
    def work_fraction(self) -> float | None:
        """Share of the work (FLOPs and bytes) in modeled operations; None when unknown."""
        return self.estimate.work_fraction

    @property
    def gate_fraction(self) -> float:
        """What the WARNING line and ``--min-coverage`` gate on: the lower of the operation
        share and the work share (the operation share alone when the work share is unknown)."""
        operations = self.estimate.coverage.fraction
        work = self.work_fraction
        return operations if work is None else min(operations, work)

    @property
    def low_coverage(self) -> bool:
        return self.gate_fraction < self.coverage_threshold

    def finding(self, code: str) -> Finding | None:
        return next((f for f in self.findings if f.code == code), None)

    # Text, JSON and plots are drawn by report/ through the presenter slot: analysis never imports it.
    def render(self, top: int = 10, group_by_scope: bool = False, by: str | None = None) -> str:
        """The text report with its top ``top`` table rows: per operation (``by=None`` or
        ``"operation"``), per scope (``"scope"``; ``group_by_scope=True`` is its older spelling) or
        per kernel (``"kernel"``: each executed kernel's traffic, level and own bound)."""
        return presenter("GapReport.render").render_gap(self, top, group_by_scope, by)

    def plot(self, path: str | os.PathLike[str] | None = None, top: int = 8, group_by_scope: bool = False) -> Figure:
        """The roofline plot (matplotlib, the ``plot`` extra); saved as PNG or SVG when ``path`` is given."""
        return presenter("GapReport.plot").plot_gap(self, path, top, group_by_scope)

    def to_dict(self) -> dict[str, Any]:
        return presenter("GapReport.to_dict").gap_to_dict(self)


def analyze_gap(
    estimate: CostEstimate,
    measurement: Measurement,
    hardware: HardwareSpec,
    operations: Iterable[Operation] | None = None,
    *,
    coverage_threshold: float = DEFAULT_COVERAGE_THRESHOLD,
    profile: Profile | None = None,
    profile_notes: tuple[str, ...] = (),
    expected: Expected | None = None,
) -> GapReport:
    """Score ``estimate`` (what the program must do) and ``measurement`` (how long it took)
    against ``hardware`` (what the device can do).

    ``operations`` is accepted for the seed's call form; the estimate already carries its
    per-operation rows, and when given the operations must be the ones it was made from.
    ``profile`` (an adapter's ``profile(...)``) gives each kernel, operation and scope row its
    measured time per run and the report its time coverage; ``profile_notes`` say why a
    profile is missing or partial. ``expected`` (``analysis.expected.expected_time`` of the same
    estimate) is shown between the bound and the observed time, each kernel's beside its measured
    time when there is a profile.
    """
    if not isinstance(estimate, CostEstimate):
        raise RecordError(f"analyze_gap: estimate is a {type(estimate).__name__}, not a CostEstimate")
    if not isinstance(measurement, Measurement):
        raise MeasurementError(f"analyze_gap: measurement is a {type(measurement).__name__}, not a Measurement")
    if not isinstance(hardware, HardwareSpec):
        raise RecordError(f"analyze_gap: hardware is a {type(hardware).__name__}, not a HardwareSpec")
    if not 0 <= coverage_threshold <= 1:
        raise RecordError(f"analyze_gap: coverage_threshold={coverage_threshold!r} must be a fraction in [0, 1]")
    if measurement.median_seconds <= 0:
        raise MeasurementError(
            f"analyze_gap: measurement median_seconds=0 (samples {list(measurement.samples_seconds)}): the clock "
            f"did not resolve the work, so there is no efficiency to report; time a larger input or more work per "
            f"call, or use a finer clock"
        )
    if operations is not None:
        given = tuple(operations)
        if given != estimate.operations:
            raise RecordError(
                f"analyze_gap: operations= lists {len(given)} operations that are not the {len(estimate.operations)} "
                f"the estimate was made from; omit operations= (the estimate carries its rows)"
            )
    check_float_range(estimate)  # every count below becomes a float: fail here, naming the one that cannot
    compute = compute_seconds(estimate.flops_by_dtype, hardware, "the estimate's total FLOPs")
    memory = seconds(estimate.compiled_bytes, hardware.memory_bandwidth, "the estimate's compiled bytes")
    compulsory = (
        seconds(estimate.compulsory_bytes, hardware.memory_bandwidth, "the estimate's compulsory bytes")
        if estimate.compulsory_bytes is not None
        else None
    )
    kernels, kernel_notes = kernel_rows(estimate, hardware)
    bound = sum(row.bound_seconds for row in kernels) if kernels else max(compute, memory)
    op_rows, sc_rows = operation_rows(estimate, hardware, bound), scope_rows(estimate, hardware, bound)
    if profile is not None:
        if not isinstance(profile, Profile):
            raise RecordError(f"analyze_gap: profile is a {type(profile).__name__}, not a Profile")
        profile.check_against(len(estimate.kernels))
        kernels = kernel_rows_with_time(kernels, profile)
        times = record_times(estimate, op_rows, kernels)
        op_rows = operation_rows_with_time(op_rows, times)
        sc_rows = scope_rows_with_time(estimate, sc_rows, times)
    if expected is not None:
        if not isinstance(expected, Expected):
            raise RecordError(f"analyze_gap: expected is a {type(expected).__name__}, not an Expected")
        measured = {row.index: row.measured_seconds for row in kernels if row.index is not None}
        fused = profile.fused if profile is not None else ()
        expected = expected.with_measured({i: s for i, s in measured.items() if s is not None}, fused)
        op_rows, sc_rows = rows_with_expected(estimate, op_rows, sc_rows, expected)
    report = GapReport(
        estimate=estimate,
        measurement=measurement,
        hardware=hardware,
        compute_seconds=compute,
        memory_seconds=memory,
        compulsory_seconds=compulsory,
        observed_seconds=measurement.median_seconds,
        findings=(),
        operation_rows=op_rows,
        scope_rows=sc_rows,
        coverage_threshold=coverage_threshold,
        provenance=FrozenAttrs(collect_provenance(estimate.framework)),
        kernel_rows=kernels,
        kernel_notes=kernel_notes,
        profile=profile,
        profile_notes=tuple(profile_notes),
        expected=expected,
    )
    object.__setattr__(report, "findings", build_findings(report))
    return report


def findings_by_code(report: GapReport) -> Mapping[str, Finding]:
    return {f.code: f for f in report.findings}


def rows_with_expected(
    estimate: CostEstimate, op_rows: tuple[RowTime, ...], sc_rows: tuple[RowTime, ...], expected: Expected
) -> tuple[tuple[RowTime, ...], tuple[RowTime, ...]]:
    """Operation and scope rows with their expected time (``record_expectations``; a scope's is its records')."""
    from dataclasses import replace

    from ..costs.estimate import scope_of

    times = record_expectations(
        estimate, {row.index: row.bound_seconds for row in op_rows if row.index is not None}, expected
    )
    by_scope: dict[str, float] = {}
    for index, share in times.items():
        scope = scope_of(estimate.by_operation[index])
        by_scope[scope] = by_scope.get(scope, 0.0) + share
    ops = tuple(
        replace(row, expected_seconds=times[row.index]) if row.index is not None and row.index in times else row
        for row in op_rows
    )
    scopes = tuple(
        replace(row, expected_seconds=by_scope[row.name]) if row.name in by_scope else row for row in sc_rows
    )
    return ops, scopes
