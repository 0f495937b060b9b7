"""The trace's own notes (how it read the program) are printed in the text report, not only saved
in the JSON: a torch.compile'd module traced eagerly, a branch costed as its costliest, ops
TensorFlow prunes. They were saved but never printed before (docs said "the report says so")."""

from __future__ import annotations

from dataclasses import replace

from neural_cost import analyze_gap
from neural_cost.report.text import TRACE_NOTES_SHOWN
from tests.helpers import M3_PRO, cpu_measurement, seed_estimate


def _lines(notes):
    report = analyze_gap(replace(seed_estimate(), notes=tuple(notes)), cpu_measurement(), M3_PRO)
    return report.render().splitlines()


def test_each_trace_note_is_a_note_line_under_the_coverage_line():
    lines = _lines(["the model is a torch.compile'd module: traced eagerly", "cond at top level: costliest branch"])
    assert "coverage:" in lines[1]
    assert lines[2] == "  note: the model is a torch.compile'd module: traced eagerly"
    assert lines[3] == "  note: cond at top level: costliest branch"


def test_many_trace_notes_are_cut_with_a_count_of_the_rest():
    notes = [f"op{i}: attrs name no catalog entry" for i in range(TRACE_NOTES_SHOWN + 4)]
    lines = [line for line in _lines(notes) if line.startswith("  note: ")]
    assert lines[:TRACE_NOTES_SHOWN] == [f"  note: {note}" for note in notes[:TRACE_NOTES_SHOWN]]
    assert "  note: … and 4 more trace notes (the --json report has them all)" in lines
    assert f"  note: {notes[-1]}" not in lines


def test_a_report_without_trace_notes_prints_none():
    """Two notes add exactly two lines, at positions 2 and 3; none add none."""
    bare, noted = _lines([]), _lines(["a", "b"])
    assert len(noted) == len(bare) + 2 and noted[:2] + noted[4:] == bare
    assert not any(line.startswith("  note: … and") for line in bare)
