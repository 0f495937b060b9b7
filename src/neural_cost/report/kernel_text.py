"""The kernel bound in the text report: the traffic, bound and level lines, and the kernel table.

The lines (``analysis/kernels.py`` scores the rows they print):

- ``traffic:`` the three traffic figures side by side, compulsory ≤ compiled ≤ unfused;
- ``bound:`` the kernel bound (the sum of each kernel's own bound) with the program roofline
  beside it (total FLOPs at the peaks against compiled traffic at main-memory bandwidth);
- ``traffic by level:`` the compiled traffic by the level each kernel was scored at,
  nearest first, main memory last;
- the table of ``render(by="kernel")``: one row per kernel, costliest first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..analysis.kernels import UNMAPPED, Levels
from ..core.errors import RecordError
from ..core.units import format_int, format_percent, format_seconds, format_si, plural
from .printable import printable
from .time_text import MEASURED_HEADS, kernel_cells, table_note

if TYPE_CHECKING:
    from ..analysis.gap import GapReport
    from ..analysis.kernels import KernelTime

#: The tables ``render(by=...)`` draws: per operation (the default), per scope, per kernel.
TABLES = ("operation", "scope", "kernel")
#: Kernels named on the traffic line when compiled traffic is above unfused.
NAMED_KERNELS = 3
#: The widest the scopes cell of the kernel table gets, and how many scopes it names.
SCOPES_WIDTH = 40
SCOPES_NAMED = 2


def table_view(group_by_scope: bool, by: str | None) -> str:
    """The table ``render`` draws: ``by`` (None for operations); ``group_by_scope=True`` is the
    older spelling of ``by="scope"``, and asking for two different tables is an error."""
    if by is not None and by not in TABLES:
        raise RecordError(f"render: by={by!r} is not a table; use one of {', '.join(map(repr, TABLES))} (or None)")
    if group_by_scope:
        if by not in (None, "scope"):
            raise RecordError(
                f"render: group_by_scope=True and by={by!r} ask for two different tables; group_by_scope=True "
                f"is by='scope': pass by={by!r} alone, or by='scope'"
            )
        return "scope"
    return by or "operation"


def is_unmapped(row: KernelTime) -> bool:
    """The row of the records no kernel executes (``analysis/kernels.py``)."""
    return row.name == UNMAPPED and row.kind == "unmapped" and row.footprint_bytes is None


def main_memory(report: GapReport) -> str:
    """The name of the level the program roofline scores traffic at (``main memory`` when the
    spec names none)."""
    return level_name(report, Levels.of(report.hardware).main)


def level_name(report: GapReport, name: str) -> str:
    """A level as the report prints it: the unnamed main memory as ``main memory``."""
    return "main memory" if name == "memory" and name == Levels.of(report.hardware).main else name


def levels_in_order(report: GapReport) -> list[tuple[str, int]]:
    """``report.traffic_by_level`` nearest level first (the spec's order), main memory last."""
    names = [level.name for level in report.hardware.memory_levels]
    main = Levels.of(report.hardware).main

    def key(item: tuple[str, int]) -> tuple[int, int]:
        name = item[0]
        if name == main:
            return (1, 0)
        return (0, names.index(name) if name in names else len(names))

    return sorted(report.traffic_by_level.items(), key=key)


def _bytes(value: int) -> str:
    return format_si(value, "B")


def _their(count: int, noun: str) -> str:
    """``1, "kernels"`` → ``1 kernel's own bound``; ``12, "kernels"`` → ``12 kernels' own bounds``."""
    return f"{format_int(count)} {noun[:-1]}'s own bound" if count == 1 else f"{format_int(count)} {noun}' own bounds"


def traffic_line(report: GapReport) -> str:
    """``traffic: compulsory 1.65 MB · compiled 2.10 MB (12 kernels, XLA optimized HLO) · unfused
    3.20 MB (read ..., write ...)``; compiled above unfused names the kernels that move the most."""
    e = report.estimate
    compulsory = "compulsory unknown" if e.compulsory_bytes is None else f"compulsory {_bytes(e.compulsory_bytes)}"
    unfused = f"unfused {_bytes(e.bytes)} (read {_bytes(e.read_bytes)}, write {_bytes(e.write_bytes)})"
    if not e.kernels:
        return f"traffic: {compulsory} · compiled = unfused (no compiled program read) · {unfused}"
    what = plural(len(e.kernels), "kernels") + (f", {e.kernel_source}" if e.kernel_source else "")
    unmapped = len(e.unmapped_operations)
    if unmapped:
        what += f"; {plural(unmapped, 'records')} no kernel executes, at unfused traffic"
    line = f"traffic: {compulsory} · compiled {_bytes(e.compiled_bytes)} ({what}) · {unfused}"
    if e.compiled_bytes > e.bytes:
        # Unmodeled operations have no unfused traffic (no record), but their kernels move bytes:
        # that part of the excess is coverage, not copies.
        unmodeled = [r for r in report.kernel_rows if r.unmodeled and not is_unmapped(r)]
        unmodeled_bytes = sum(r.traffic_bytes for r in unmodeled)
        if unmodeled and e.compiled_bytes - unmodeled_bytes <= e.bytes:
            named = ", ".join(f"{r.name} {_bytes(r.traffic_bytes)}" for r in unmodeled[:NAMED_KERNELS])
            line += f" — compiled is above unfused by the bytes of unmodeled operations' kernels ({named})"
        else:
            kernels = sorted(
                (r for r in report.kernel_rows if not is_unmapped(r) and not r.unmodeled),
                key=lambda r: -r.traffic_bytes,
            )
            named = ", ".join(f"{r.name} {_bytes(r.traffic_bytes)}" for r in kernels[:NAMED_KERNELS])
            line += f" — compiled is above unfused (copies, recomputation); most traffic: {named}"
    return line


def bound_line(report: GapReport) -> str:
    """``bound: 11.0 µs, the sum of 12 kernels' own bounds (program roofline 9.1 µs: compute 6.6 µs,
    memory 9.1 µs at DRAM)``."""
    rows, e = report.kernel_rows, report.estimate
    compute, memory = format_seconds(report.compute_seconds), format_seconds(report.memory_seconds)
    roofline = (
        f"program roofline {format_seconds(report.roofline_seconds)}: compute {compute}, "
        f"memory {memory} at {main_memory(report)}"
    )
    bound = format_seconds(report.kernel_bound_seconds)
    if not rows:
        return f"bound: {bound} ({roofline})"
    if not e.kernels:
        return f"bound: {bound}, the sum of {_their(len(rows), 'operations')} (each its own kernel; {roofline})"
    kernels = sum(1 for r in rows if not is_unmapped(r))
    unmapped = len(e.unmapped_operations)
    rest = f" and that of {plural(unmapped, 'records')} no kernel executes" if unmapped else ""
    return f"bound: {bound}, the sum of {_their(kernels, 'kernels')}{rest} ({roofline})"


def communication_line(report: GapReport) -> str | None:
    """``communication: 1.79 kB per device over 2 collectives on host devices at 12.0 GB/s + 15.0 µs
    latency each: 30.1 µs (62.0% of the no-overlap step) · measured 41.2 µs (profiled: gloo worker
    events joined in order) · step bound 48.5 µs with no overlap, 30.1 µs with perfect overlap (the
    headline: a lower bound)``; the measured part only with a profile; None without collectives."""
    comm = report.communication
    if comm is None:
        return None
    head = f"communication: {_bytes(comm.wire_bytes)} per device over {plural(comm.collectives, 'collectives')}"
    took = ""
    if comm.measured_seconds is not None:
        took = f" · measured {format_seconds(comm.measured_seconds)} ({comm.measured_by})"
    elif comm.measured_by is not None:
        took = f" · {comm.measured_by}"
    if comm.seconds is None or comm.bandwidth is None:
        return head + " · not scored: the spec lists no interconnect (pass HardwareSpec(interconnects=...))" + took
    latency = f" + {format_seconds(comm.latency_seconds or 0.0)} latency each" if comm.latency_seconds else ""
    share = f" ({format_percent(comm.share)} of the no-overlap step)" if comm.share is not None else ""
    return (
        f"{head} on {comm.link} at {format_si(comm.bandwidth, 'B/s')}{latency}: {format_seconds(comm.seconds)}{share}"
        f"{took} · step bound {format_seconds(comm.no_overlap_seconds or 0.0)} with no overlap, "
        f"{format_seconds(comm.overlap_seconds or 0.0)} with perfect overlap (the headline: a lower bound)"
    )


def level_lines(report: GapReport) -> list[str]:
    """``traffic by level: L2 1.20 MB · DRAM 900 kB`` and each of the kernel notes as ``note:``."""
    levels = levels_in_order(report)
    lines = []
    if levels:
        shown = (f"{level_name(report, name)} {_bytes(nbytes)}" for name, nbytes in levels)
        line = "traffic by level: " + " · ".join(shown)
        if not report.hardware.memory_levels:
            line += " (the spec names no cache levels: every kernel is scored at main-memory bandwidth)"
        lines.append(line)
    lines += [f"note: {note}" for note in report.kernel_notes]
    return lines


def _scopes(scopes: tuple[str, ...]) -> str:
    """The scopes cell: the first two, ``+N more`` after them, at most SCOPES_WIDTH characters."""
    if not scopes:
        return "-"
    shown = ", ".join(printable(s) for s in scopes[:SCOPES_NAMED])
    more = f" +{len(scopes) - SCOPES_NAMED} more" if len(scopes) > SCOPES_NAMED else ""
    if len(shown) + len(more) > SCOPES_WIDTH:
        shown = shown[: max(SCOPES_WIDTH - len(more) - 1, 1)] + "…"
    return shown + more


def kernel_table(report: GapReport, top: int) -> list[str]:
    """The top kernels by bound: ``runs`` is the kernel's executions, ``traffic`` its bytes over
    all of them, ``level`` where its footprint was scored, ``share`` its bound ÷ the kernel bound;
    with a profile, ``measured`` (per run) and ``eff`` (the kernel's own bound ÷ measured); with an
    expected time, ``expected`` (per run, from the kernel model) beside them."""
    rows = report.kernel_rows
    shown = rows[:top]
    measured = table_note(report)
    expected = {} if report.expected is None else {r.index: r.seconds for r in report.expected.rows}
    head = ["#", "kernel", "scopes", "runs", "FLOPs", "traffic", "level", "bound", "share"]
    head += ["expected"] if expected else []
    head += list(MEASURED_HEADS) if measured else []
    body = [
        [
            str(i),
            printable(row.name),  # escaped before the widths are measured, so the columns still line up
            _scopes(row.scopes),
            f"×{format_int(row.executions)}",
            format_si(row.flops, "FLOP"),
            _bytes(row.traffic_bytes),
            printable(level_name(report, row.level)),
            format_seconds(row.bound_seconds),
            format_percent(row.share),
            *([_expected_cell(expected, row.index)] if expected else []),
            *(kernel_cells(row) if measured else []),
        ]
        for i, row in enumerate(shown, start=1)
    ]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    left = {1, 2, 6}

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    source = report.estimate.kernel_source or "the compiled program"
    what = source if report.estimate.kernels else "no compiled program read: each operation scored as its own kernel"
    title = f"top {len(shown)} of {plural(len(rows), 'kernels')} by share of bound ({what}{measured}):"
    lines = [title, fmt(head)]
    lines.extend(fmt(cells) for cells in body)
    return lines


def _expected_cell(expected: dict[int | None, float], index: int | None) -> str:
    seconds = expected.get(index) if index is not None else None
    return "—" if seconds is None else format_seconds(seconds)
