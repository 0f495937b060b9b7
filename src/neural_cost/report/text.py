"""The text report: a pure function of a GapReport's numbers.

Header order (ARCHITECTURE.md, "The report says what it doesn't know"): title, coverage (with
a profile, the measured line below it: ``time_text.py``), the profile's notes, WARNING lines,
device, Device mismatch, inputs, timed runs; then the work, the three traffic figures, the
kernel bound beside the program roofline, traffic by memory level, the floor, observed time,
efficiency, achieved rates, a training step's MFU and HFU (``utilization_text.py``), findings,
and the per-operation (per-scope, per-kernel) table. The kernel lines and table are in
``kernel_text.py``; the measured time in ``time_text.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..analysis.utilization import batch_input
from ..core.units import format_int, format_percent, format_percent_down, format_seconds, format_si, plural
from .expected_text import expected_line, flag_lines, host_note, now_line, page_fault_line, usual_line
from .kernel_text import bound_line, communication_line, kernel_table, level_lines, table_view, traffic_line
from .labels import operation_labels
from .memory_text import memory_lines
from .printable import printable
from .time_text import MEASURED_HEADS, measured_line, note_lines, row_cells, table_note, time_figure
from .utilization_text import utilization_line

if TYPE_CHECKING:
    from ..analysis.gap import GapReport
    from ..analysis.rows import RowTime
    from ..core.estimate import CostEstimate
    from ..hardware.spec import HardwareSpec

TITLE = "Neural cost gap analysis"
#: A compile faster than this most likely came from JAX's in-process compilation cache.
CACHED_COMPILE_SECONDS = 0.01
INDENT = "  "
#: Header findings printed as ``WARNING:`` lines under the coverage line (the others print as they are).
WARNING_CODES = ("low_coverage", "low_time_coverage")


def coverage_figures(estimate: CostEstimate) -> tuple[str, str]:
    """The operation and work shares as every view prints them (report, diff, plot), both
    rounded down, so 99.96% never prints as a complete 100.0%. Operations: (modeled + free) /
    executed. Work: the lower of the FLOP and byte shares in modeled operations, unmodeled ones
    at their elementwise floor (``Coverage.work_share``), ``unknown`` when an unmodeled size was
    not recorded (a version-1 report). The floor is the least an unmodeled operation can move
    and, unless it only moves data, compute: a 512×512 matrix_exp (~10 matmuls, 2.7 GFLOP) is
    sized at 262,144 FLOPs. So once anything is unmodeled the work share is a ceiling, and is
    printed ``≤ 77.7%``; exactly ``100.0%`` only when nothing is unmodeled."""
    coverage, share = estimate.coverage, estimate.work_share
    operations = format_percent_down(coverage.modeled + coverage.free, coverage.total)
    if share is None:
        return operations, "unknown"
    return operations, ("≤ " if coverage.unmodeled else "") + format_percent_down(*share)


def _coverage_line(report: GapReport) -> str:
    """``coverage: operations 96.7% · work ≤ 26.6% (of 31 aten ops: modeled 30, free 0,
    unmodeled 1: aten._linalg_svd x1)``; the figures are ``coverage_figures``, and with a profile
    ``· time 92.3%`` follows the work (``time_text.py``)."""
    coverage, share = report.estimate.coverage, report.estimate.work_share
    operations, work = coverage_figures(report.estimate)
    executed = plural(coverage.total, coverage.unit)
    if coverage.static_total is not None and coverage.static_total != coverage.total:
        executed = (
            f"{format_int(coverage.total)} executed {coverage.unit}, {format_int(coverage.static_total)} in the program"
        )
    counts = f"modeled {format_int(coverage.modeled)}, free {format_int(coverage.free)}"
    if coverage.unmodeled:
        # Heaviest first where sizes are known: the op that holds the missing work is named.
        weight = {name: moved for name, _, moved in coverage.unmodeled_work}
        ranked = (
            sorted(coverage.unmodeled, key=lambda pair: -weight.get(pair[0], 0))
            if share is not None
            else coverage.unmodeled
        )
        names = ", ".join(f"{n} x{c}" for n, c in ranked[:3]) + (", ..." if len(ranked) > 3 else "")
        counts += f", unmodeled {format_int(coverage.unmodeled_count)}: {names}"
        if share is None:
            counts += "; the size of an unmodeled op was not recorded"
    return f"coverage: operations {operations} · work {work}{time_figure(report)} (of {executed}: {counts})"


def peaks_text(h: HardwareSpec, dtypes: Iterable[str]) -> str:
    """``peaks for X (cpu): float32 459 GFLOP/s (source); bandwidth 42.3 GB/s (source)``: the
    numbers a bound was scored with, each beside its source — the peak of every dtype in
    ``dtypes`` and the bandwidth. A spec whose numbers share one source names it once. A dtype
    without a peak of its own says whose peak scored it and cites that peak's source, unless
    that peak is on the line already, beside the same source. The report's device line and the
    pipeline table's peaks line both print this."""
    kind = "kind unknown" if h.kind == "unknown" else h.kind
    figures: list[tuple[str, str, str]] = []  # (figure, note, source)
    cited_already: set[int] = set()
    dtypes = tuple(dtypes)
    for dtype in dtypes:
        figure, note, source = f"{dtype} {format_si(h.peak(dtype), 'FLOP/s')}", "", h.source_of(f"peak_flops[{dtype}]")
        if not (h.has_peak(dtype) or h.peak_flops_by_dtype is None):
            twin = h.fallback_dtype()
            figure += f" scored at the {f'{twin} peak' if twin else 'default peak_flops'}"
            note = f"no {dtype} peak of its own"
            if twin in dtypes and h.source_of(f"peak_flops[{twin}]") == source:
                cited_already.add(len(figures))
        figures.append((figure, note, source))
    figures.append((f"bandwidth {format_si(h.memory_bandwidth, 'B/s')}", "", h.source_of("memory_bandwidth")))
    if all(source == h.source for _, _, source in figures):
        shown = [f"{figure} ({note})" if note else figure for figure, note, _ in figures]
        return f"peaks for {h.name} ({kind}; {h.source}): " + "; ".join(shown)
    shown = [
        f"{figure} ({note if i in cited_already else '; '.join(filter(None, (note, source)))})"
        for i, (figure, note, source) in enumerate(figures)
    ]
    return f"peaks for {h.name} ({kind}): " + "; ".join(shown)


def _device_line(report: GapReport) -> str:
    m = report.measurement
    ran = f"{m.device} ({m.device_kind})" if m.device_kind != "unknown" else m.device
    if m.device_source.startswith("assumed"):  # nothing said where it ran: say so rather than assert it
        ran += f" [{m.device_source}]"
    return f"device: ran on {ran} · " + peaks_text(report.hardware, report.estimate.flops_by_dtype)


#: Inputs the text names one by one; past that, the batch's first, then a count (the JSON has all).
LISTED_INPUTS = 6


def _inputs_line(report: GapReport) -> str:
    shapes = report.estimate.input_shapes
    if not shapes:
        return "inputs: not recorded"
    source = batch_input(report.estimate)
    shown = list(shapes)
    if len(shown) > LISTED_INPUTS:  # a model's parameters passed as a pytree: hundreds of leaves
        shown.sort(key=lambda item: source is None or item[0] != source[0])  # stable: the batch first
        shown = shown[: LISTED_INPUTS - 1]
    listed = ", ".join(f"{name} {tuple(shape)}" for name, shape in shown)
    if len(shown) < len(shapes):
        listed += f" and {len(shapes) - len(shown)} more arrays (--json lists every input)"
    batch = f" · batch {source[1][0]} (leading dim of {source[0]})" if source else ""
    return f"inputs: {listed}{batch}"


def _runs_line(report: GapReport) -> str:
    m = report.measurement
    warm = f" after {len(m.warmup_seconds)} warmup" if m.warmup_seconds else ""
    compiled = ""
    if m.compile_seconds is not None:
        cached = " — fast enough to be a compilation-cache hit" if m.compile_seconds < CACHED_COMPILE_SECONDS else ""
        compiled = f" · compile {format_seconds(m.compile_seconds)} before timing{cached}"
    return f"timed runs: {m.runs}{warm} · sync: {m.sync}{compiled}"


def _work_line(report: GapReport) -> str:
    """FLOPs by dtype and the intensity of compiled traffic (the traffic the program roofline scores)."""
    e = report.estimate
    if len(e.flops_by_dtype) > 1:
        dtypes = ", ".join(f"{d} {format_si(n, 'FLOP')}" for d, n in e.flops_by_dtype.items())
    else:
        dtypes = ", ".join(e.flops_by_dtype)
    intensity = f"{e.flops / e.compiled_bytes:.2f} FLOP/B of compiled traffic" if e.compiled_bytes else "n/a"
    return f"work: {format_si(e.flops, 'FLOP')}{f' ({dtypes})' if dtypes else ''}, intensity {intensity}"


def _cross_check_line(report: GapReport) -> str | None:
    check = report.estimate.cross_check
    if not check:
        return None
    figures = []
    if check.get("flops") is not None:
        figures.append(format_si(float(check["flops"]), "FLOP"))
    if check.get("bytes") is not None:
        figures.append(f"{format_si(float(check['bytes']), 'B')} accessed")
    if check.get("error"):
        return f"cross-check: {check.get('source', 'another tool')} unavailable ({check['error']})"
    shown = ", ".join(figures) or "no figures"
    note = f" — {check['note']}" if check.get("note") else ""
    return f"cross-check: {check.get('source', 'another tool')} reports {shown} (shown, not used){note}"


def _floor_line(report: GapReport) -> str:
    e = report.estimate
    if report.compulsory_seconds is None or e.compulsory_bytes is None:
        return "compulsory floor: unknown (the trace does not name the program's inputs, parameters and outputs)"
    return (
        f"compulsory floor: {format_seconds(report.compulsory_seconds)} "
        f"({format_si(e.compulsory_bytes, 'B')} of inputs, parameters and outputs moved once)"
    )


def _observed_line(report: GapReport) -> str:
    m = report.measurement
    return (
        f"observed: {format_seconds(report.observed_seconds)} ± {format_seconds(m.stdev_seconds)} "
        f"(median ± stdev of {m.runs} runs; min {format_seconds(m.min_seconds)})"
    )


def _efficiency_line(report: GapReport) -> str:
    line = f"roofline efficiency: {format_percent(report.efficiency)} ({report.bound_side}-bound"
    if report.device_mismatch:
        line += f"; scored against {report.hardware.kind} peaks, ran on {report.measurement.device_kind}"
    line += ")"
    if report.efficiency > 1:
        line += " — above 100%: see findings"
    return line


def _table(rows: tuple[RowTime, ...], top: int, noun: str, names: list[str], measured: str = "") -> list[str]:
    """The top rows by bound. Operations: ``runs`` is how many times the row's operation executed
    (``×8`` in an 8-trip loop). Scopes: ``executed ops`` is how many operations ran in the
    scope, each once per execution — a layer of a matmul and a bias add, run once, reads 2.
    ``measured`` (the title's note when the report has a profile) adds the ``measured`` and
    ``eff`` columns (``time_text.row_cells``)."""
    shown = rows[:top]
    expected = any(row.expected_seconds is not None for row in rows)
    header = ("#", noun.rstrip("s"), "kind", "FLOPs", "bytes", "FLOP/B", "share") + (("expected",) if expected else ())
    header += MEASURED_HEADS if measured else ()
    show_runs = any(r.executions > 1 for r in shown)
    body = []
    for i, (row, name) in enumerate(zip(shown, names, strict=False), start=1):
        intensity = f"{row.arithmetic_intensity:.2f}" if row.arithmetic_intensity is not None else "-"
        cells = [
            str(i),
            printable(name),  # escaped before the widths are measured, so the columns still line up
            printable(row.kind),
            format_si(row.flops, "FLOP"),
            format_si(row.bytes, "B"),
            intensity,
            format_percent(row.share),
        ]
        if expected:
            cells.append(format_seconds(row.expected_seconds) if row.expected_seconds is not None else "-")
        if measured:
            cells += row_cells(row)
        if show_runs:
            cells.insert(3, f"×{format_int(row.executions)}" if noun == "operations" else format_int(row.executions))
        body.append(cells)
    head = list(header)
    if show_runs:
        head.insert(3, "runs" if noun == "operations" else "executed ops")
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    left = {1, 2}

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    lines = [f"top {len(shown)} of {len(rows)} {noun} by share of bound{measured}:", fmt(head)]
    lines.extend(fmt(cells) for cells in body)
    return lines


#: Trace notes printed at most; the --json report keeps them all.
TRACE_NOTES_SHOWN = 6


def trace_note_lines(notes: Sequence[str]) -> list[str]:
    """What the trace says about how it read the program (a torch.compile'd module traced eagerly,
    a branch costed as its most expensive one, ops TensorFlow prunes, a backward of the sum of the
    output): one ``note:`` each, the first ``TRACE_NOTES_SHOWN``, then how many more."""
    lines = [f"note: {note}" for note in notes[:TRACE_NOTES_SHOWN]]
    if len(notes) > TRACE_NOTES_SHOWN:
        lines.append(f"note: … and {len(notes) - TRACE_NOTES_SHOWN} more trace notes (the --json report has them all)")
    return lines


def render_report(report: GapReport, top: int = 10, group_by_scope: bool = False, by: str | None = None) -> str:
    """The text report; the table is per operation, per scope or per kernel (``by``, see ``table_view``)."""
    view = table_view(group_by_scope, by)
    lines = [_coverage_line(report), *trace_note_lines(report.estimate.notes)]
    measured = measured_line(report)
    if measured:
        lines.append(measured)
    lines += note_lines(report)
    lines += [f"WARNING: {f.message}" for f in report.findings if f.header and f.code in WARNING_CODES]
    lines.append(_device_line(report))
    lines += [f.message for f in report.findings if f.header and f.code not in WARNING_CODES]
    lines += [_inputs_line(report), _runs_line(report), _work_line(report), traffic_line(report)]
    cross_check = _cross_check_line(report)
    if cross_check:
        lines.append(cross_check)
    lines.append(bound_line(report))
    comm = communication_line(report)
    if comm is not None:
        lines.append(comm)
    lines += memory_lines(report)  # one device's memory, for a distributed program
    lines += level_lines(report)
    lines.append(_floor_line(report))
    if report.expected is not None:  # between the bound and the observed time
        expected = report.expected
        lines += [*flag_lines(expected), expected_line(expected, report.observed_seconds)]
        observed = report.observed_seconds
        lines += filter(None, [usual_line(expected, observed), now_line(expected, observed)])
        lines += [f"note: {note}" for note in (*expected.notes, *filter(None, [host_note(expected)]))]
        faults = page_fault_line(expected, report.measurement.allocator)
        if faults is not None:
            lines.append(f"note: {faults}")
    lines += [_observed_line(report), _efficiency_line(report)]
    traffic = "compiled" if report.estimate.kernels else "unfused"
    lines.append(
        f"achieved: {format_si(report.achieved_flops_per_second, 'FLOP/s')}, "
        f"{format_si(report.achieved_bytes_per_second, 'B/s')} of {traffic} traffic"
    )
    utilization = utilization_line(report)  # a training step's MFU and HFU
    lines += [utilization] if utilization else []
    lines += [f"{f.severity}: {f.message}" for f in report.findings if not f.header]
    if top > 0 and view == "kernel" and report.kernel_rows:
        lines += kernel_table(report, top)
    elif top > 0 and view != "kernel":
        rows = report.scope_rows if view == "scope" else report.operation_rows
        if rows:
            names = [row.name for row in rows] if view == "scope" else operation_labels(report, rows)
            lines += _table(rows, top, "scopes" if view == "scope" else "operations", names, table_note(report))
    # Names, devices and notes come from the report, which may come from a hostile file.
    return "\n".join([TITLE] + [INDENT + printable(line) for line in lines]) + "\n"
