"""Before/after: two saved reports side by side, with deltas, and what makes them incomparable."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..analysis.suspects import percent_down
from ..core.units import format_percent, format_seconds, format_si, plural
from .printable import printable
from .text import coverage_figures

if TYPE_CHECKING:
    from ..analysis.gap import GapReport
    from ..core.estimate import CostEstimate
    from ..hardware.spec import HardwareSpec


def _points(before: float, after: float) -> str:
    """A change of a fraction in percentage points; one too small to show says so, never ``-0.0``."""
    if before == after:
        return "="
    points = (after - before) * 100
    return f"{points:+.1f} pp" if abs(points) >= 0.05 else f"{'+' if points > 0 else '-'}<0.1 pp"


def _delta(before: float, after: float, fmt: Callable[[float], str]) -> str:
    if before == after:
        return "="
    if fmt is format_percent:  # fractions differ by percentage points, not by a relative change
        return _points(before, after)
    change = f" ({(after - before) / before:+.1%})" if before else ""
    sign = "+" if after > before else "-"
    return f"{sign}{fmt(abs(after - before))}{change}"


def _change(label: str, before: float | None, after: float | None, unit: str) -> str:
    shown = [format_si(v, unit) if v is not None else "none" for v in (before, after)]
    relative = f" ({(after - before) / before:+.1%})" if before and after is not None else ""
    return f"{label} {shown[0]} → {shown[1]}{relative}"


def spec_changes(before: HardwareSpec, after: HardwareSpec) -> list[str]:
    """Every number of two specs that differs, with its relative change, then changed sources:
    ``bandwidth 43.0 GB/s → 23.5 GB/s (-45.3%)``."""
    changes = []
    if before.name != after.name or before.kind != after.kind:
        changes.append(f"device {before.name} ({before.kind}) → {after.name} ({after.kind})")
    peaks_before = dict(before.peak_flops_by_dtype or {})
    peaks_after = dict(after.peak_flops_by_dtype or {})
    if before.peak_flops != after.peak_flops:
        changes.append(_change("peak_flops (fallback)", before.peak_flops, after.peak_flops, "FLOP/s"))
    for dtype in sorted(set(peaks_before) | set(peaks_after)):
        if peaks_before.get(dtype) != peaks_after.get(dtype):
            changes.append(_change(f"{dtype} peak", peaks_before.get(dtype), peaks_after.get(dtype), "FLOP/s"))
    if before.memory_bandwidth != after.memory_bandwidth:
        changes.append(_change("bandwidth", before.memory_bandwidth, after.memory_bandwidth, "B/s"))
    if before.memory_capacity != after.memory_capacity:
        changes.append(_change("memory capacity", before.memory_capacity, after.memory_capacity, "B"))
    levels_before = {level.name: level for level in before.memory_levels}
    levels_after = {level.name: level for level in after.memory_levels}
    for name in dict.fromkeys([*levels_before, *levels_after]):  # nearest first, as the specs list them
        a, b = levels_before.get(name), levels_after.get(name)
        if a is None or b is None:
            changes.append(f"memory level {name} {'added' if a is None else 'removed'}")
            continue
        if a.capacity_bytes != b.capacity_bytes:
            changes.append(_change(f"{name} capacity", a.capacity_bytes, b.capacity_bytes, "B"))
        if a.bandwidth != b.bandwidth:
            changes.append(_change(f"{name} bandwidth", a.bandwidth, b.bandwidth, "B/s"))
    # A number whose value changed is named above; one whose value held but whose source moved
    # (a formula now beside a calibration) is named here.
    same = [d for d in sorted(set(peaks_before) & set(peaks_after)) if peaks_before[d] == peaks_after[d]]
    numbers = [f"peak_flops[{d}]" for d in same]
    if before.memory_bandwidth == after.memory_bandwidth:
        numbers.append("memory_bandwidth")
    for number in numbers:
        if before.source_of(number) != after.source_of(number):
            changes.append(f"{number} source {before.source_of(number)!r} → {after.source_of(number)!r}")
    if not changes:  # only the spec-wide source text differs
        changes.append(f"source {before.source!r} → {after.source!r}")
    return changes


#: How many differing inputs the diff names before it counts the rest.
SHOWN_INPUTS = 5


def _changed_inputs(before: GapReport, after: GapReport) -> str:
    """The inputs whose shapes differ, each ``name (before) → (after)`` (``absent`` on the side that
    has none), the first ``SHOWN_INPUTS`` named, the rest counted: a model's 262 parameter leaves
    that did not change are not listed beside the one batch that did."""
    shapes = [dict(report.estimate.input_shapes) for report in (before, after)]
    if not shapes[0] or not shapes[1]:
        return " → ".join(
            ", ".join(f"{name} {tuple(shape)}" for name, shape in side.items()) or "not recorded" for side in shapes
        )
    names = list(dict.fromkeys([*shapes[0], *shapes[1]]))
    changed = [name for name in names if shapes[0].get(name) != shapes[1].get(name)]
    if not changed:  # the same names and shapes, in another order (or a name given twice)
        return "the same shapes, listed in another order"
    shown = [
        f"{name} " + " → ".join(str(tuple(side[name])) if name in side else "absent" for side in shapes)
        for name in changed[:SHOWN_INPUTS]
    ]
    rest = len(changed) - len(shown)
    more = f" and {rest:,} more" if rest else ""
    same = len(names) - len(changed)
    return ", ".join(shown) + more + (f" ({same:,} other input(s) the same)" if same else "")


def _flops(value: float) -> str:
    return format_si(value, "FLOP")


def _bytes(value: float) -> str:
    return format_si(value, "B")


def _coverage_rows(before: CostEstimate, after: CostEstimate) -> list[tuple[str, str, str, str]]:
    """Both coverage figures as the report prints them (rounded down; work ``≤`` once anything
    is unmodeled), each with its change in percentage points of the exact shares (which may
    differ by 0.1 from the difference of the two figures, each rounded down on its own)."""
    shown = list(zip(coverage_figures(before), coverage_figures(after), strict=True))
    exact = [
        (before.coverage.fraction, after.coverage.fraction),
        (before.work_fraction, after.work_fraction),
    ]
    rows = []
    for label, (a, b), (x, y) in zip(("coverage (operations)", "coverage (work)"), shown, exact, strict=True):
        rows.append((label, a, b, "n/a" if x is None or y is None else _points(x, y)))
    return rows


def _time_row(before: GapReport, after: GapReport) -> list[tuple[str, str, str, str]]:
    """The time share of coverage, when either report was profiled (``-`` for one that was not)."""
    fractions = [r.time_coverage.fraction if r.time_coverage is not None else None for r in (before, after)]
    if before.profile is None and after.profile is None:
        return []
    shown = [percent_down(f) if f is not None else "-" for f in fractions]
    a, b = fractions
    return [("coverage (time)", shown[0], shown[1], "n/a" if a is None or b is None else _points(a, b))]


def _kernels(report: GapReport) -> str:
    e = report.estimate
    if not e.kernels:
        return "no compiled program read (each operation scored as its own kernel, at its unfused traffic)"
    return f"{plural(len(e.kernels), 'kernels')}{f' ({e.kernel_source})' if e.kernel_source else ''}"


def _method_notes(before: GapReport, after: GapReport, versions: tuple[int, int] | None) -> list[str]:
    """What differs in how the two were written: the schema version, and kernels read or not."""
    notes = []
    if versions is not None and versions[0] != versions[1]:
        notes.append(
            f"schema version {versions[0]} → {versions[1]}: version 1 recorded no unmodeled sizes (its work "
            f"share is unknown) and no kernels; both are re-scored by this neural-cost"
        )
    if bool(before.estimate.kernels) != bool(after.estimate.kernels):
        notes.append(f"kernels: {_kernels(before)} → {_kernels(after)}; the bound delta includes the change of method")
    return notes


def _kernel_lines(before: GapReport, after: GapReport, top: int) -> list[str]:
    """Each kernel's own bound, before → after, matched by name (both reports must have kernels)."""
    if not (before.estimate.kernels and after.estimate.kernels) or top <= 0:
        return []
    rows_a = {r.name: r.bound_seconds for r in before.kernel_rows}
    rows_b = {r.name: r.bound_seconds for r in after.kernel_rows}
    names = sorted(set(rows_a) | set(rows_b), key=lambda n: -max(rows_a.get(n, 0.0), rows_b.get(n, 0.0)))[:top]
    shown = {n: printable(n) for n in names}
    width = max(len(s) for s in shown.values())
    lines = [f"  per kernel (top {len(names)} by bound):"]
    for name in names:
        a, b = rows_a.get(name), rows_b.get(name)
        status = "" if a is not None and b is not None else (" (new)" if b is not None else " (gone)")
        cells = [format_seconds(v) if v is not None else "-" for v in (a, b)]
        delta = f"   {_delta(a, b, format_seconds)}" if a is not None and b is not None else ""
        lines.append(f"    {shown[name]:{width}s}  {cells[0]:>11s} → {cells[1]:>11s}{delta}{status}")
    return lines


def diff_reports(before: GapReport, after: GapReport, top: int = 10, *, versions: tuple[int, int] | None = None) -> str:
    """Before → after: the totals with their deltas, what makes the two incomparable (devices,
    specs, inputs, coverage, schema ``versions`` when given, kernels read in one and not the
    other), the per-scope FLOPs and bytes, and each kernel's bound when both have kernels."""
    rows: list[tuple[str, float, float, Callable[[float], str]]] = [
        ("FLOPs", before.estimate.flops, after.estimate.flops, _flops),
        ("bytes (unfused)", before.estimate.bytes, after.estimate.bytes, _bytes),
    ]
    if before.estimate.kernels or after.estimate.kernels:
        rows.append(("bytes (compiled)", before.estimate.compiled_bytes, after.estimate.compiled_bytes, _bytes))
    rows += [
        ("bound", before.bound_seconds, after.bound_seconds, format_seconds),
        ("program roofline", before.roofline_seconds, after.roofline_seconds, format_seconds),
        ("observed", before.observed_seconds, after.observed_seconds, format_seconds),
        ("efficiency", before.efficiency, after.efficiency, format_percent),
    ]
    table = [(label, fmt(a), fmt(b), _delta(a, b, fmt)) for label, a, b, fmt in rows]
    table += _coverage_rows(before.estimate, after.estimate)
    table += _time_row(before, after)
    lines = ["Neural cost diff (before → after)"]
    notes = _method_notes(before, after, versions)
    if (before.measurement.device, before.measurement.device_kind) != (
        after.measurement.device,
        after.measurement.device_kind,
    ):
        notes.append(
            f"measured on different devices: {before.measurement.device} ({before.measurement.device_kind}) → "
            f"{after.measurement.device} ({after.measurement.device_kind}); observed times are not comparable as a "
            f"speed-up of the same machine"
        )
    if before.hardware.to_dict() != after.hardware.to_dict():
        notes.append(
            f"scored against different specs: {before.hardware.name} → {after.hardware.name}: "
            + "; ".join(spec_changes(before.hardware, after.hardware))
            + "; bound and efficiency deltas include the change of spec"
        )
    if before.estimate.input_shapes != after.estimate.input_shapes:
        notes.append(
            f"different inputs: {_changed_inputs(before, after)}; FLOP and byte deltas include "
            f"the change of size, not only a change of code"
        )
    cov_before, cov_after = before.estimate.coverage, after.estimate.coverage
    figures = [coverage_figures(before.estimate), coverage_figures(after.estimate)]
    held = [(e.coverage.fraction, e.coverage.total, e.work_fraction) for e in (before.estimate, after.estimate)]
    if held[0] != held[1]:
        notes.append(
            f"different coverage: operations {figures[0][0]} of {plural(cov_before.total, cov_before.unit)}, work "
            f"{figures[0][1]} → operations {figures[1][0]} of {plural(cov_after.total, cov_after.unit)}, work "
            f"{figures[1][1]}; FLOP and byte deltas include what became (un)modeled"
        )
    lines += [f"  NOTE: {n}" for n in notes]
    width = max(len(r[0]) for r in table)
    for label, a, b, delta in table:
        lines.append(f"  {label:{width}s}  {a:>12s} → {b:>12s}   {delta}")
    scopes_a = {s.scope: s for s in before.estimate.by_scope}
    scopes_b = {s.scope: s for s in after.estimate.by_scope}
    names = sorted(
        set(scopes_a) | set(scopes_b),
        key=lambda n: -max(scopes_a[n].flops if n in scopes_a else 0, scopes_b[n].flops if n in scopes_b else 0),
    )[:top]
    if names:
        lines.append(f"  per scope (top {len(names)} by FLOPs):")
        shown = {n: printable(n) for n in names}  # escaped before the widths are measured
        name_width = max(len(s) for s in shown.values())
        for name in names:
            fa = scopes_a[name].flops if name in scopes_a else 0
            fb = scopes_b[name].flops if name in scopes_b else 0
            ba = scopes_a[name].bytes if name in scopes_a else 0
            bb = scopes_b[name].bytes if name in scopes_b else 0
            status = "" if name in scopes_a and name in scopes_b else (" (new)" if name in scopes_b else " (gone)")
            lines.append(
                f"    {shown[name]:{name_width}s}  {_flops(fa):>11s} → {_flops(fb):>11s}  "
                f"{_bytes(ba):>9s} → {_bytes(bb):>9s}{status}"
            )
    lines += _kernel_lines(before, after, top)
    # Device, hardware, input, scope and kernel names come from saved files, which may be hostile.
    return "\n".join(printable(line) for line in lines) + "\n"
