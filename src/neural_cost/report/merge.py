"""One view of a multi-process run: the saved report of every rank, side by side.

``torchrun`` and ``jax.distributed`` run one process per device; each writes its own report
(``neural-cost analyze ... --json rank0.json``). ``merge_reports`` puts them in one table: per
rank the observed time, the bound, the efficiency, the communication time and the wire bytes;
the slowest rank (a synchronous step waits for it, so the step time is its observed time);
the imbalance, (slowest − fastest) / fastest; and the FLOPs summed over ranks.

Only ranks of one program on one spec merge. Every rank must have the same framework, the
same operation names and the same multiset of operation kinds (a data-parallel rank has the
same FLOPs as the others; a tensor-parallel shard may not, so unequal FLOPs are noted, not
refused), and be scored against a spec of the same name and peaks. ``merge_files`` reads the
files: one that cannot be read (the rank crashed: no file, an empty or half-written one) is
listed as missing and the others still merge.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import NeuralCostError, SchemaError
from ..core.units import format_percent, format_seconds, format_si, plural
from .diff import spec_changes
from .load import load_report
from .printable import printable

if TYPE_CHECKING:
    from ..analysis.gap import GapReport
    from ..hardware.spec import HardwareSpec

__all__ = ["MergeError", "MergedReport", "MissingRank", "RankRow", "merge_files", "merge_reports"]

#: Program differences named at most in one refusal (the rest are counted).
_MAX_SHOWN = 5


class MergeError(NeuralCostError, ValueError):
    """Reports that cannot be merged: different programs or specs, or none readable."""


@dataclass(frozen=True, slots=True)
class RankRow:
    """One rank's figures, from its report."""

    name: str
    observed_seconds: float
    bound_seconds: float
    efficiency: float
    #: None when the rank's spec lists no interconnect (its wire bytes have no time).
    communication_seconds: float | None
    wire_bytes: int
    flops: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "observed_seconds": self.observed_seconds,
            "bound_seconds": self.bound_seconds,
            "efficiency": self.efficiency,
            "communication_seconds": self.communication_seconds,
            "wire_bytes": self.wire_bytes,
            "flops": self.flops,
        }


@dataclass(frozen=True, slots=True)
class MissingRank:
    """A rank whose report could not be read, and why."""

    name: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class MergedReport:
    """Every readable rank of one run; ``missing`` names the ranks without a report."""

    ranks: tuple[RankRow, ...]
    missing: tuple[MissingRank, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def slowest(self) -> RankRow:
        """The rank with the largest observed time (the first of equals)."""
        return max(self.ranks, key=lambda row: row.observed_seconds)

    @property
    def fastest(self) -> RankRow:
        return min(self.ranks, key=lambda row: row.observed_seconds)

    @property
    def step_seconds(self) -> float:
        """A synchronous step ends when its slowest rank does."""
        return self.slowest.observed_seconds

    @property
    def imbalance(self) -> float | None:
        """(slowest − fastest) / fastest observed time; None when the fastest took no time."""
        fastest = self.fastest.observed_seconds
        return (self.slowest.observed_seconds - fastest) / fastest if fastest > 0 else None

    @property
    def total_flops(self) -> int:
        return sum(row.flops for row in self.ranks)

    @property
    def total_wire_bytes(self) -> int:
        return sum(row.wire_bytes for row in self.ranks)

    def render(self) -> str:
        return render_merged(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ranks": [row.to_dict() for row in self.ranks],
            "slowest": self.slowest.name,
            "fastest": self.fastest.name,
            "step_seconds": self.step_seconds,
            "imbalance": self.imbalance,
            "total_flops": self.total_flops,
            "total_wire_bytes": self.total_wire_bytes,
            "missing": [m.to_dict() for m in self.missing],
            "notes": list(self.notes),
        }


def _row(name: str, report: GapReport) -> RankRow:
    comm = report.communication
    return RankRow(
        name=name,
        observed_seconds=report.observed_seconds,
        bound_seconds=report.bound_seconds,
        efficiency=report.efficiency,
        communication_seconds=None if comm is None else comm.seconds,
        wire_bytes=report.estimate.wire_bytes,
        flops=report.estimate.flops,
    )


def _spec_key(spec: HardwareSpec) -> tuple[object, ...]:
    return (spec.name, spec.peak_flops, sorted(dict(spec.peak_flops_by_dtype or {}).items()), spec.memory_bandwidth)


def _shown(items: Sequence[str]) -> str:
    head = ", ".join(repr(item) for item in items[:_MAX_SHOWN])
    return head + (f" and {len(items) - _MAX_SHOWN} more" if len(items) > _MAX_SHOWN else "")


def _program_differences(first: str, a: GapReport, other: str, b: GapReport) -> list[str]:
    """What makes ``b`` (rank ``other``) another program than ``a`` (rank ``first``)."""
    found = []
    if a.estimate.framework != b.estimate.framework:
        found.append(f"framework {a.estimate.framework!r} in {first}, {b.estimate.framework!r} in {other}")
    kinds_a = Counter(op.kind for op in a.estimate.operations)
    kinds_b = Counter(op.kind for op in b.estimate.operations)
    if kinds_a != kinds_b:
        changes = [
            f"{kind} ×{kinds_a.get(kind, 0)} in {first}, ×{kinds_b.get(kind, 0)} in {other}"
            for kind in sorted(set(kinds_a) | set(kinds_b))
            if kinds_a.get(kind, 0) != kinds_b.get(kind, 0)
        ]
        found.append("operation kinds differ: " + "; ".join(changes[:_MAX_SHOWN]))
    names_a = {op.name for op in a.estimate.operations}
    names_b = {op.name for op in b.estimate.operations}
    if only := sorted(names_b - names_a):
        found.append(f"operations only in {other}: {_shown(only)}")
    if only := sorted(names_a - names_b):
        found.append(f"operations only in {first}: {_shown(only)}")
    return found


def _check_same(names: Sequence[str], reports: Sequence[GapReport]) -> None:
    """Refuse ranks of different programs or specs, naming what differs from the first rank."""
    first, ref = names[0], reports[0]
    for name, report in zip(names[1:], reports[1:], strict=True):
        if _spec_key(report.hardware) != _spec_key(ref.hardware):
            raise MergeError(
                f"cannot merge {name} with {first}: scored against different specs ("
                + "; ".join(spec_changes(ref.hardware, report.hardware))
                + "); analyze every rank against one spec (the same --device, --peak-flops, --memory-bandwidth)"
            )
        differences = _program_differences(first, ref, name, report)
        if differences:
            raise MergeError(
                f"cannot merge {name} with {first}: not the same program (" + "; ".join(differences) + "); "
                "merge only the reports of one run's ranks"
            )


def _notes(rows: Sequence[RankRow]) -> tuple[str, ...]:
    notes = []
    if len({row.flops for row in rows}) > 1:
        notes.append(
            "ranks differ in FLOPs (not data-parallel replicas: tensor- or pipeline-parallel shards?); "
            "the total is their sum"
        )
    return tuple(notes)


def merge_reports(
    reports: Sequence[GapReport],
    names: Sequence[str] | None = None,
    *,
    missing: Sequence[MissingRank] = (),
) -> MergedReport:
    """The ranks' reports as one view (``names`` default to ``rank0``, ``rank1``...; ``missing``
    lists the ranks whose report could not be read). Raises MergeError when there is no report,
    when the names do not match the reports one to one, or when two ranks differ in program or spec."""
    reports = list(reports)
    names = [f"rank{i}" for i in range(len(reports))] if names is None else list(names)
    if not reports:
        gone = f" ({len(missing)} could not be read: {_shown([m.name for m in missing])})" if missing else ""
        raise MergeError(f"no report to merge{gone}; pass at least one readable report")
    if len(names) != len(reports):
        raise MergeError(f"{plural(len(names), 'names')} for {plural(len(reports), 'reports')}; pass one name a report")
    if len(set(names)) != len(names):
        repeated = sorted(name for name, n in Counter(names).items() if n > 1)
        raise MergeError(f"rank names must differ; given more than once: {_shown(repeated)}")
    _check_same(names, reports)
    rows = tuple(_row(name, report) for name, report in zip(names, reports, strict=True))
    return MergedReport(rows, tuple(missing), _notes(rows))


def merge_files(paths: Sequence[str | os.PathLike[str]], *, max_bytes: int | None = None) -> MergedReport:
    """``merge_reports`` of the reports saved at ``paths``, each named by its path; a path that
    cannot be read (no file, empty, half-written, not a report) is listed as missing."""
    names = [os.fspath(path) for path in paths]
    if len(set(names)) != len(names):
        repeated = sorted(name for name, n in Counter(names).items() if n > 1)
        raise MergeError(f"a report is given more than once: {_shown(repeated)}; pass each rank's file once")
    reports, found, missing = [], [], []
    for name in names:
        try:
            reports.append(load_report(name, max_bytes=max_bytes))
        except SchemaError as error:
            reason = str(error)  # "PATH: not JSON (...)": the path is the rank's name, said once
            missing.append(MissingRank(name, reason.removeprefix(f"{name}: ")))
            continue
        found.append(name)
    return merge_reports(reports, found, missing=missing)


def _comm(row: RankRow) -> str:
    if row.communication_seconds is None:
        return "-" if not row.wire_bytes else "no link"
    return format_seconds(row.communication_seconds)


def render_merged(merged: MergedReport) -> str:
    """The per-rank table, then the slowest rank, the imbalance, the totals and what is missing."""
    ranks, slowest = merged.ranks, merged.slowest
    title = f"Neural cost merge ({plural(len(ranks), 'ranks')}"
    title += f", {len(merged.missing)} missing)" if merged.missing else ")"
    header = ("rank", "observed", "bound", "efficiency", "communication", "wire bytes", "FLOPs")
    cells = [
        (
            printable(row.name),
            format_seconds(row.observed_seconds),
            format_seconds(row.bound_seconds),
            format_percent(row.efficiency),
            _comm(row),
            format_si(row.wire_bytes, "B"),
            format_si(row.flops, "FLOP"),
        )
        for row in ranks
    ]
    widths = [max(len(line[i]) for line in (header, *cells)) for i in range(len(header))]

    def line(values: Sequence[str]) -> str:
        first = f"{values[0]:{widths[0]}s}"
        return "  " + "  ".join([first, *(f"{v:>{w}s}" for v, w in zip(values[1:], widths[1:], strict=True))])

    lines = [title, line(header)]
    for row, values in zip(ranks, cells, strict=True):
        lines.append(line(values) + ("  ← slowest" if row is slowest and len(ranks) > 1 else ""))
    imbalance = merged.imbalance
    fastest = merged.fastest
    lines.append(f"  step time {format_seconds(merged.step_seconds)} (the slowest rank, {printable(slowest.name)})")
    if imbalance is not None:
        lines.append(
            f"  imbalance {format_percent(imbalance)} (slowest {format_seconds(slowest.observed_seconds)} vs fastest "
            f"{printable(fastest.name)} {format_seconds(fastest.observed_seconds)})"
        )
    lines.append(
        f"  total over ranks: {format_si(merged.total_flops, 'FLOP')}, "
        f"{format_si(merged.total_wire_bytes, 'B')} on the wire"
    )
    lines += [f"  NOTE: {note}" for note in merged.notes]
    lines += [f"  MISSING: {printable(m.name)}: {printable(m.reason)}" for m in merged.missing]
    return "\n".join(lines) + "\n"
