"""A wall-timed micro-program's point: an eager framework's kernels are timed by the wall of their one-kernel
programs, a whole recurrent layer (``rnn``) as a loop's: its passes' medians and the host's state before
each kept, for its usual time (``Point.usual_seconds``) and the calibration's ``loop_wakes``."""

from __future__ import annotations

from dataclasses import replace

from ..hardware.kernel_model import Point
from .calibration_history import is_loop
from .expected import allocated_records
from .fresh_pages import glibc_allocator, large_result_bytes
from .kernel_classes import kernel_class, one_part, parts
from .kernel_extras import layer_weight_bytes
from .profiled_points import _Pending, _Prepared, all_trips, usual_pass, usual_ratio


def looped(prepared: _Prepared) -> bool:
    """Whether a program is a loop's: one with a shorter twin, or one whose costliest kernel is a whole
    recurrent layer (``rnn``: an eager framework's, timed by its wall)."""
    if prepared.program.shorter is not None:
        return True
    return _layer(prepared)


def _layer(prepared: _Prepared) -> bool:
    rows = [row for row in prepared.scored if row.operations and row.executions]
    return bool(rows) and kernel_class(prepared.estimate, rows[0]).split(":", 1)[0] == "rnn"


def wall_points(prepared: _Prepared, first_touch: float | None = None) -> list[Point | _Pending]:
    """The wall-timed program's point (or pending entry). ``first_touch``: seconds per fresh byte;
    the page faults of its results glibc maps anew on every run (≥ 32 MiB by default:
    ``fresh_pages.glibc_allocator``) are taken out (a prediction adds them back for such
    results), never below the program's roofline bound. Only those: what a prediction adds back
    is what comes out (counted faults would take out a scratch buffer's too, and count a huge
    page as one)."""
    estimate, program = prepared.estimate, prepared.program
    rows = [row for row in prepared.scored if row.operations and row.executions]
    if not rows or None not in prepared.best:
        return []
    best = prepared.best[None]
    mapped_from = glibc_allocator().mapped_from
    if first_touch and mapped_from is not None:
        fresh = large_result_bytes(estimate, allocated_records(estimate), mapped_from) * first_touch
        best = max(best - fresh, sum(row.bound_seconds for row in rows)) if fresh else best
    main = one_part(estimate, rows[0], prepared.hardware)  # the costliest bound first
    ratio = usual_of(prepared) if is_loop(main.kernel_class) else None
    usual = None if ratio is None else best * ratio
    call = per_call(prepared, best)
    size = None if call is None or rows[0].index is None else layer_weight_bytes(estimate, rows[0].index)
    if len(rows) > 1:
        others = tuple(part for row in rows[1:] for part in parts(estimate, row, prepared.hardware))
        return [_Pending(program.name, main, others, best, usual, None if call is None else best - call, size)]
    point = main.point(best if call is None else best - call, program.name)  # per read of its curve: a layer's step
    point = replace(point, call_seconds=call, call_bytes=size)
    return [point if ratio is None else replace(point, usual_seconds=point.measured_seconds * ratio)]


def per_call(prepared: _Prepared, best: float) -> float | None:
    """A recurrent layer's cost per call: its wall (``best``) less its steps' own time — its wall less its
    wall at fewer steps (``MicroProgram.fewer_steps``), the smallest of the passes each, per step apart,
    times its steps. ``nn.LSTM`` 128 → 256 at batch 16 took 440–458 µs a call and 48–49 µs a step on a
    2-core VM: 71 µs a step at 32 steps, 53–55 at 64, read on one per-step curve. None without those
    walls, or when the steps would take none or all of the wall (a stall in one of the two)."""
    program, fewer = prepared.program, prepared.program.fewer_steps
    if fewer is None or not prepared.fewer_walls or not prepared.walls or program.trips <= fewer.trips:
        return None
    steps = all_trips(min(prepared.walls) - min(prepared.fewer_walls), program.trips, fewer.trips)
    return best - steps if 0 < steps < best else None


def usual_of(prepared: _Prepared) -> float | None:
    """A loop program's usual ÷ fastest time (``usual_ratio``); a wall-timed one's (no twin): the higher
    middle of its passes' medians ÷ the smallest, at least 1; None without two passes, or for a wall-timed
    program that is no recurrent layer."""
    if prepared.program.shorter is not None:
        return usual_ratio(prepared)
    if not _layer(prepared):
        return None
    walls = prepared.walls
    return max(1.0, walls[usual_pass(walls)] / min(walls)) if len(walls) > 1 and min(walls) > 0 else None
