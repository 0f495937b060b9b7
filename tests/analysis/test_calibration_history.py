"""Kernel calibrations merged over time (``analysis/calibration_history.py``).

Hand-made calibrations of two points on ``SPEC`` (their roofline inputs fixed; only the measured
times differ), merged as ``kernel_calibration`` merges them:

- "mm" at 1.0, 1.2, 0.9 ms (and "mm2", "mm4" at twice and four times that) and "add" at 2, 3,
  4 ms in three calibrations → medians 1.0 (2.0, 4.0) and 3.0 ms; against them, the first
  calibration's points ran at 1, 1, 1 and 2/3 (median of the four: 1.00×), the second's at 1.2,
  1.2, 1.2 and 1.0 (1.20×), the third's at 0.9, 0.9, 0.9 and 1.333 (0.90×);
- drift probe "mm" (a matmul kernel) at 1.0, 1.2, 0.9 ms → 1.0 ms; first-touch 1, 3, 2 (×1e-10
  s/B) → 2e-10.
"""

from __future__ import annotations

import json

import pytest

from neural_cost.analysis import calibrate_kernels
from neural_cost.analysis.calibrate_kernels import calibration_path, kernel_calibration
from neural_cost.analysis.calibration_history import (
    HISTORY,
    NOTE_PREFIX,
    Entry,
    entry_of,
    history_path,
    load_history,
    merged,
    point_keys,
    probes_before,
    save_history,
)
from neural_cost.hardware.kernel_model import Point, fit_calibration, load_calibration
from neural_cost.report.expected_text import calibration_lines
from tests.analysis.test_kernel_bound import SPEC

MS = 1e-3
MM = "mm | matmul | 0.0005 | 0.0001 | 1"  # the key of the point "mm" (class, roofline times, rank)
VERSIONS = {"torch": "2.13.0", "neural-cost kernel model": "26"}
MACHINE = {"cpu_model": "Test CPU", "logical_cpus": 2, "caches": ["L2 1024K"]}


def _calibration(mm: float, add: float, touch: float = 1e-10, versions=VERSIONS, machine=MACHINE, probe="matmul"):
    from dataclasses import replace

    points = [
        Point("matmul", 5e-4, 1e-4, mm, "mm"),
        Point("matmul", 1e-3, 2e-4, 2 * mm, "mm2"),
        Point("matmul", 2e-3, 4e-4, 4 * mm, "mm4"),
        Point("elementwise", 1e-5, 1e-3, add, "add"),
    ]
    made = fit_calibration(
        "torch", SPEC, points, machine=machine, versions=versions, date="2026-12-03",
        method="wall", notes=("2 micro-programs, 2 kernel points in 1 s",), first_touch_seconds_per_byte=touch,
    )  # fmt: skip
    return replace(made, probes={"mm": (probe, mm)})


def _merge_three():
    history: list[Entry] = []
    for mm, add, touch in ((1.0, 2.0, 1e-10), (1.2, 3.0, 3e-10), (0.9, 4.0, 2e-10)):
        calibration, history = merged(_calibration(mm * MS, add * MS, touch), history)
    return calibration, history


def test_one_calibration_alone_is_kept_as_it_is():
    made = _calibration(1 * MS, 2 * MS)
    calibration, entries = merged(made, [])
    assert calibration is made and len(entries) == 1
    assert entries[0].seconds == {
        "mm | matmul | 0.0005 | 0.0001 | 1": 1 * MS,
        "mm2 | matmul | 0.001 | 0.0002 | 1": 2 * MS,
        "mm4 | matmul | 0.002 | 0.0004 | 1": 4 * MS,
        "add | elementwise | 1e-05 | 0.001 | 1": 2 * MS,
    }
    assert entries[0].probes == {"mm": ("matmul", 1 * MS)}


def test_three_calibrations_fit_each_points_median_and_say_how_fast_each_ran():
    calibration, history = _merge_three()
    assert len(history) == 3
    assert [p.measured_seconds for p in calibration.points] == pytest.approx([1.0 * MS, 2.0 * MS, 4.0 * MS, 3.0 * MS])
    assert calibration.probes == {"mm": ("matmul", pytest.approx(1.0 * MS))}
    assert calibration.first_touch_seconds_per_byte == pytest.approx(2e-10)
    # the curves are refitted on the medians: as a calibration measured at them is fitted
    assert set(calibration.classes) == {"matmul"}
    assert calibration.classes == _calibration(1.0 * MS, 3.0 * MS).classes
    note = next(n for n in calibration.notes if n.startswith(NOTE_PREFIX))
    assert "the 3 calibrations made on this machine" in note
    assert "points took 1.00×, 1.20×, 0.90× those medians (median; a loop's kernels left out)" in note
    assert "and a point's times read a median 33% apart" in note
    assert "--fresh" in note
    assert any(line == f"note: {note}" for line in calibration_lines(calibration))


def test_only_the_last_two_earlier_calibrations_of_this_machine_and_versions_are_merged():
    """Four earlier: the oldest is dropped (mm 100 ms there would move no median of 1, 1.2, 0.9);
    one of other versions and one of another machine are never merged."""
    earlier = [entry_of(_calibration(100 * MS, 2 * MS), when="2026-12-01T00:00")]
    earlier.append(entry_of(_calibration(50 * MS, 2 * MS, versions={**VERSIONS, "torch": "2.12.0"})))
    earlier.append(entry_of(_calibration(50 * MS, 2 * MS, machine={**MACHINE, "cpu_model": "Other"})))
    for mm in (1.0, 1.2):
        earlier.append(entry_of(_calibration(mm * MS, 3 * MS)))
    calibration, kept = merged(_calibration(0.9 * MS, 4 * MS), earlier)
    assert HISTORY == 3 and len(kept) == 3
    assert [e.seconds[MM] for e in kept] == pytest.approx([1.0 * MS, 1.2 * MS, 0.9 * MS])
    assert calibration.points[0].measured_seconds == pytest.approx(1.0 * MS)


def test_point_keys_rank_a_programs_kernels_of_one_class():
    """A JAX layer norm runs kernels of one class: each has a key of its own, by its roofline times
    and then its rank among those alike; one that drops out shifts no other's key."""
    points = [Point("elementwise", 1, 2, 1, "ln"), Point("reduce", 1, 1, 1, "ln"), Point("elementwise", 1, 1, 1, "ln"),
              Point("elementwise", 1, 1, 1, "ln")]  # fmt: skip
    assert point_keys(points) == ["ln | elementwise | 1 | 2 | 1", "ln | reduce | 1 | 1 | 1",
                                  "ln | elementwise | 1 | 1 | 1", "ln | elementwise | 1 | 1 | 2"]  # fmt: skip
    assert point_keys(points[1:]) == point_keys(points)[1:]


def test_a_probe_is_merged_only_with_probes_of_the_same_kernel_class():
    """Two earlier calibrations probed "mm" at 5 and 7 ms, one as a matmul kernel and one as an
    elementwise one (another kernel of the program): the merged probe is the median of the
    matmul's 5 ms and this calibration's 1 ms, 3 ms, not of all three (5 ms)."""
    earlier = [entry_of(_calibration(5 * MS, 2 * MS)), entry_of(_calibration(7 * MS, 2 * MS, probe="elementwise"))]
    calibration, _ = merged(_calibration(1 * MS, 2 * MS), earlier)
    assert calibration.probes == {"mm": ("matmul", pytest.approx(3 * MS))}


def _loop_calibrations(wakes: list[tuple[float, float] | None], before: tuple[float, float] | None = None):
    """Three calibrations of a loop dot "scan" (``matmul:kept@loop``) at 1.0, 1.8 and 1.7 ms (its
    probe the same) beside "mm" at 1.0, 1.2 and 0.9 ms, each with its loop wake-ups ``wakes``, merged
    (``before``: the wake-ups of a calibration made first, its scan at 0.5 ms, out of the last three)."""
    from dataclasses import replace

    def made(mm: float, scan: float, wake: tuple[float, float] | None):
        base = _calibration(mm * MS, 2 * MS)
        points = (*base.points, Point("matmul:kept@loop", 2e-5, 1e-5, scan * MS, "scan"))
        fitted = fit_calibration("torch", SPEC, points, machine=MACHINE, versions=VERSIONS, date="2026-12-03")
        probes = {"mm": ("matmul", mm * MS), "scan": ("matmul:kept@loop", scan * MS)}
        return replace(fitted, probes=probes, loop_wakes=wake)

    history: list[Entry] = []
    if before is not None:
        _, history = merged(made(1.0, 0.5, before), history)
    for (mm, scan), wake in zip(((1.0, 1.0), (1.2, 1.8), (0.9, 1.7)), wakes, strict=True):
        calibration, history = merged(made(mm, scan, wake), history)
    return calibration, {point.name: point.measured_seconds for point in calibration.points}


def test_a_loops_kernels_keep_their_smallest_time_where_their_fastest_passes_ran_in_two_states():
    """The first calibration's fastest loop passes ran at a wake-up of 9 µs, the two others' at 18 and 17 µs
    (2× apart: two host states, ``WAKES_APART`` 1.5): the loop point and probe keep 1.0 ms (their smallest,
    the quiet host's; the median, 1.7 ms, is the busy state two of the three caught); "mm" its median, 1.0 ms."""
    calibration, found = _loop_calibrations([(9e-6, 9e-6), (18e-6, 18e-6), (17e-6, 18e-6)])
    assert found["scan"] == pytest.approx(1.0 * MS) and found["mm"] == pytest.approx(1.0 * MS)
    assert calibration.probes == {"mm": ("matmul", pytest.approx(1.0 * MS)),
                                  "scan": ("matmul:kept@loop", pytest.approx(1.0 * MS))}  # fmt: skip
    assert "(a loop's kernel: the smallest, its fastest passes run in two host states)" in calibration.notes[-1]


@pytest.mark.parametrize(
    ("wakes", "before"),
    [
        ([(70e-6, 71e-6), (72e-6, 73e-6), (71e-6, 75e-6)], None),
        ([(74e-6, 74e-6), (72e-6, 75e-6), (56.7e-6, 65e-6)], None),
        ([None, None, None], None),
        ([(9e-6, 18e-6), (9.5e-6, 18e-6), (10e-6, 18e-6)], None),
        ([(9e-6, 9e-6), (9.5e-6, 9.5e-6), (10e-6, 10e-6)], (18e-6, 18e-6)),
    ],
)
def test_a_loops_kernels_take_their_median_where_their_fastest_passes_ran_in_one_state(wakes, before):
    """On an Intel VM every wake-up read 70–75 µs, while a 512-wide scanned dot read 12.4 µs in one calibration
    and 31.4 and 25.2 in the next two (and 33–36 µs for the hour after): a fast spell no wake-up names is not a
    state to expect. Fastest passes in one state — 70–72 µs; 74, 72 and 56.7 µs (1.3× apart, under
    ``WAKES_APART``: that VM's readings spanned 50–90 µs in one state, and its scan at batch 4, expected from the
    56.7 µs calibration's fastest passes at 1.19 ms, ran 2.88 ms); none measured; all quiet (9–10 µs) though the
    usual ones ran busy; quiet with a busy calibration kept from before them (its 0.5 ms not merged) —: the
    loop point and probe take their median, 1.7 ms, as "mm" does (1.0 ms)."""
    calibration, found = _loop_calibrations(wakes, before)
    assert found["scan"] == pytest.approx(1.7 * MS) and found["mm"] == pytest.approx(1.0 * MS)
    assert calibration.probes == {"mm": ("matmul", pytest.approx(1.0 * MS)),
                                  "scan": ("matmul:kept@loop", pytest.approx(1.7 * MS))}  # fmt: skip
    assert "(a loop's kernel's too: its fastest passes run in one host state)" in calibration.notes[-1]
    assert before is None or "kept from before them" in calibration.notes[-1]


def test_a_history_entry_that_cannot_be_read_is_left_out_and_another_schema_is_none(tmp_path):
    """Of three saved entries, one with a NaN time and one with a string time are dropped; a file
    of schema 1 (probes without their class) is no history at all."""
    path = tmp_path / "history.json"
    good = entry_of(_calibration(1 * MS, 2 * MS), when="2026-12-03T08:00")
    save_history([good, good, good], path)
    data = json.loads(path.read_text())
    data["entries"][1]["seconds"][MM] = float("nan")
    data["entries"][2]["seconds"][MM] = "0.001"
    path.write_text(json.dumps(data))
    assert load_history(path) == [good]
    path.write_text(json.dumps({**data, "schema": 1}))
    assert load_history(path) == []


def test_kernel_calibration_caches_the_merge_and_its_history(monkeypatch, tmp_path):
    """Through ``kernel_calibration`` (its measuring replaced: a real one takes minutes), in a cache
    of its own: the cached file holds the medians, the history file the last three, ``fresh``
    starts over, and an unreadable history is none. Each calibration after the first measures the
    newest entry's drift probe ("mm") again (``probes_before``) rather than choosing its own; one
    with the history started over, or unreadable, chooses its own."""
    from neural_cost.hardware import host_calibration

    monkeypatch.setenv("NEURAL_COST_CACHE_DIR", str(tmp_path))
    made = iter([_calibration(t * MS, 2 * MS) for t in (1.0, 1.2, 0.9, 5.0, 7.0, 3.0)])
    asked: list[tuple[str, ...]] = []

    def measure(adapter, progress=None, probes_of=()):
        asked.append(tuple(probes_of))
        return next(made)

    monkeypatch.setattr(calibrate_kernels, "calibrate_kernels", measure)
    monkeypatch.setattr(calibrate_kernels, "installed_versions", lambda framework: VERSIONS)
    monkeypatch.setattr(host_calibration, "live_machine_key", lambda: MACHINE)

    class Adapter:
        framework = "torch"

    path = calibration_path("torch")
    for expected in (1.0, 1.1, 1.0, 1.2):  # medians of (1), (1, 1.2), (1, 1.2, 0.9), (1.2, 0.9, 5)
        returned = kernel_calibration(Adapter(), recalibrate=True)
        assert returned.points[0].measured_seconds == pytest.approx(expected * MS)
        assert load_calibration(path).points[0].measured_seconds == pytest.approx(expected * MS)
    assert [e.seconds[MM] for e in load_history(history_path(path))] == pytest.approx([1.2 * MS, 0.9 * MS, 5.0 * MS])
    fresh = kernel_calibration(Adapter(), recalibrate=True, fresh=True)
    assert fresh.points[0].measured_seconds == pytest.approx(7.0 * MS)
    assert len(load_history(history_path(path))) == 1
    history_path(path).write_text("{not json")
    assert load_history(history_path(path)) == []
    alone = kernel_calibration(Adapter(), recalibrate=True)
    assert alone.points[0].measured_seconds == pytest.approx(3.0 * MS)
    assert json.loads(history_path(path).read_text())["schema"] == 2
    assert asked == [(), ("mm",), ("mm",), ("mm",), (), ()]


def test_the_cost_of_an_evicted_operand_is_kept_saved_and_merged_as_a_median():
    """Three calibrations measured an evicted byte at 3e-11, 5e-11 and 4e-11 s (``_torch/evicted.py``): the merged
    one reads their median, 4e-11; an entry saves and reads it back, and one without it (made before it was
    measured) is left out of the median. A saved calibration keeps it, `calibrate --kernels` prints it as a rate, and
    a negative one is refused by name."""
    from dataclasses import replace

    from neural_cost.hardware.kernel_model import KernelCalibration

    history: list[Entry] = []
    for mm, cost in ((1.0, 3e-11), (1.2, 5e-11), (0.9, 4e-11)):
        calibration, history = merged(replace(_calibration(mm * MS, 2 * MS), evicted_seconds_per_byte=cost), history)
    assert calibration.evicted_seconds_per_byte == pytest.approx(4e-11)
    assert [Entry.from_dict(e.to_dict()).evicted for e in history] == [3e-11, 5e-11, 4e-11]
    earlier = [replace(history[1], evicted=None), history[2]]  # an older entry without it: 4e-11 and 6e-11 left
    calibration, _ = merged(replace(_calibration(1 * MS, 2 * MS), evicted_seconds_per_byte=6e-11), earlier)
    assert calibration.evicted_seconds_per_byte == pytest.approx(5e-11)  # the median of two: their mean
    saved = calibration.to_dict()
    assert KernelCalibration.from_dict(saved).evicted_seconds_per_byte == pytest.approx(5e-11)
    lines = calibration_lines(calibration)  # 1 / 5e-11 = 20 GB/s; SPEC's main memory 100 GB/s
    assert any(line.startswith("evicted operands: 20.0 GB/s (an operand last in use") for line in lines), lines
    assert not any(line.startswith("evicted operands") for line in calibration_lines(_calibration(1 * MS, 2 * MS)))
    with pytest.raises(Exception, match=r"evicted_seconds_per_byte=-1 is not a finite non-negative number"):
        KernelCalibration.from_dict({**saved, "evicted_seconds_per_byte": -1})


def test_the_drift_probes_measured_again_are_the_newest_entry_s_of_this_machine_and_versions():
    """``probes_before``: of entries probing "mm" (this machine, these versions, 1 ms), "add" (the same, newer)
    and "conv" (newest, another framework version), the newest of this machine and versions, "add"; on another
    machine, or with no entry, none."""
    from dataclasses import replace

    older, newer = (
        _calibration(1 * MS, 2 * MS),
        replace(_calibration(1 * MS, 2 * MS), probes={"add": ("elementwise", 2 * MS)}),
    )
    other = replace(
        _calibration(1 * MS, 2 * MS, versions={**VERSIONS, "torch": "2.12.0"}), probes={"conv": ("conv", MS)}
    )
    earlier = [
        entry_of(older, "2026-12-07T10:00"),
        entry_of(newer, "2026-12-07T11:00"),
        entry_of(other, "2026-12-07T12:00"),
    ]
    assert probes_before(earlier, VERSIONS, MACHINE) == ("add",)
    assert probes_before(earlier, VERSIONS, {**MACHINE, "logical_cpus": 4}) == ()
    assert probes_before([], VERSIONS, MACHINE) == ()
