"""``neural-cost predict --batch 8,32,128``: one program's expected time at several batch sizes, as a table.

Each batch is traced and scored on its own (``predict``'s single-batch expectation, the same calibration and floor);
the table puts them side by side with what a user picks a batch by — the time per example and the examples a
second — and the kernels' roofline bound beside the expected time. The line under it says how much the largest
batch gains over the smallest and over the batch before it (``throughput_line``): past the batch where the
kernels stop getting more efficient, a larger batch costs latency and buys little.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.units import format_seconds, format_si

if TYPE_CHECKING:
    from ..analysis.expected import Expected

__all__ = ["sweep_notes", "sweep_table", "throughput_line"]


def _bound(expected: Expected) -> float:
    return sum(row.bound_seconds for row in expected.rows)


def sweep_table(batches: Sequence[int], expecteds: Sequence[Expected]) -> list[str]:
    """Per batch: the expected time, per example, examples a second, the kernels' roofline bound and the expected
    time over it; ``as usual`` and ``now`` columns where a batch has those figures (a program with a loop's kernels:
    ``Expected.usual_seconds``, ``Expected.now_seconds``)."""
    usual = any(e.usual_seconds is not None for e in expecteds)
    now = any(e.now_seconds is not None for e in expecteds)
    head = f"{'batch':>7}  {'expected':>10}  {'per example':>11}  {'examples/s':>10}  {'bound':>10}  {'÷ bound':>7}"
    head += f"  {'as usual':>10}" * usual + f"  {'now':>10}" * now
    lines = [head]
    for batch, expected in zip(batches, expecteds, strict=True):
        seconds, bound = expected.seconds, _bound(expected)
        rate = format_si(batch / seconds, "") if seconds > 0 else "—"
        ratio = f"{seconds / bound:.2f}×" if bound > 0 else "—"
        line = (
            f"{batch:>7}  {format_seconds(seconds):>10}  {format_seconds(seconds / batch):>11}  {rate:>10}  "
            f"{format_seconds(bound):>10}  {ratio:>7}"
        )
        if usual:
            line += f"  {'—' if expected.usual_seconds is None else format_seconds(expected.usual_seconds):>10}"
        if now:
            line += f"  {'—' if expected.now_seconds is None else format_seconds(expected.now_seconds):>10}"
        lines.append(line)
    return lines


def throughput_line(batches: Sequence[int], expecteds: Sequence[Expected]) -> str | None:
    """``throughput: batch 128 runs 5.20× the examples a second of batch 8; 1.12× batch 32's`` (the largest batch
    against the smallest, and against the one before it); None with one batch or a batch expected at 0 s."""
    if len(batches) < 2 or any(e.seconds <= 0 for e in expecteds):
        return None
    rates = [batch / expected.seconds for batch, expected in zip(batches, expecteds, strict=True)]
    line = (
        f"throughput: batch {batches[-1]} runs {rates[-1] / rates[0]:.2f}× the examples a second of batch {batches[0]}"
    )
    if len(batches) > 2:
        line += f"; {rates[-1] / rates[-2]:.2f}× batch {batches[-2]}'s"
    return line


def sweep_notes(batches: Sequence[int], notes: Sequence[Sequence[str]]) -> list[str]:
    """Every batch's notes once, in order: a note all batches share as it is, one only some have prefixed with
    them (``batch 8, 32: …``)."""
    seen: dict[str, list[int]] = {}
    for batch, own in zip(batches, notes, strict=True):
        for note in own:
            having = seen.setdefault(note, [])
            if batch not in having:
                having.append(batch)
    return [
        note if len(having) == len(batches) else f"batch {', '.join(map(str, having))}: {note}"
        for note, having in seen.items()
    ]
