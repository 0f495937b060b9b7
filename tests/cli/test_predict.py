"""``neural-cost predict`` and ``calibrate --kernels`` from the shell, on a calibration file
made here by hand (no micro-benchmark runs: the model's numbers are the test's).

The calibration: one class, matmul, whose compute curve is flat at 10 µs up to a roofline of
5 µs, then 2× its roofline time (knots (-6 - log10 2, -5), (-5, -5 + log10 2), (-4, -4 + log10 2));
scored on a spec of 1 TFLOP/s and 100 GB/s. Past the last knot (100 µs → 200 µs) time grows by the
last segment's marginal cost: (200 − 20) µs / (100 − 10) µs = 2 per roofline second.
The workload is ``torch.nn.Linear(256, 256, bias=False)`` at batch N:
one ``mm`` kernel of 2·N·256·256 FLOPs. At N = 4096: 536,870,912 FLOPs → 536.87 µs at the peak,
past the last knot: 200 µs + 2 × (536.87 − 100) µs = 1.07374 ms = 2 × 536.87 µs. Its memory side (4·(N·256·2 +
256²) = 8,650,752 B → 86.5 µs at 100 GB/s) through the same curve is less.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from neural_cost.cli.main import main
from neural_cost.hardware.kernel_model import ClassModel, Curve, KernelCalibration, load_calibration, save_calibration
from neural_cost.hardware.spec import HardwareSpec

pytest.importorskip("torch")

BUILD = """
import torch

def build(batch=4):
    torch.manual_seed(0)
    return torch.nn.Linear(256, 256, bias=False).eval(), (torch.randn(batch, 256),)

def by_keyword(batch=4):
    torch.manual_seed(0)
    return torch.nn.Linear(256, 256, bias=False).eval(), (), {"input": torch.randn(batch, 256)}

def fixed():
    return torch.nn.Linear(256, 256, bias=False).eval(), (torch.randn(4, 256),)
"""


def _here() -> str:
    """This machine's spec name: a calibration of another device is flagged, and the test's hand
    calibration stands for this machine's own."""
    from neural_cost.adapters import TorchAdapter

    return TorchAdapter().hardware().name


SPEC = HardwareSpec(_here(), peak_flops=1e12, memory_bandwidth=100e9, kind="cpu")
CURVE = Curve((-6 - math.log10(2), -5.0, -4.0), (-5.0, -5 + math.log10(2), -4 + math.log10(2)))


def _calibration(tmp_path, machine=None):
    from neural_cost.analysis.expected import installed_versions
    from neural_cost.hardware.host_calibration import live_machine_key

    model = ClassModel("matmul", CURVE, None, points=12, median_error=0.08, p90_error=0.2)
    thin = ClassModel("thin_matmul", CURVE, None, points=12, median_error=0.08, p90_error=0.2)  # under 256 rows
    few = replace(thin, name="thin_matmul:few")  # under 32 rows (the script's batches)
    calibration = KernelCalibration(
        "torch", SPEC, {"matmul": model, "thin_matmul": thin, few.name: few}, machine=machine or live_machine_key(),
        versions=installed_versions("torch"), date="2026-12-01", median_error=0.08, p90_error=0.2,
    )  # fmt: skip
    return save_calibration(calibration, tmp_path / "cal.json")


@pytest.fixture()
def script(tmp_path):
    path = tmp_path / "bench.py"
    path.write_text(BUILD)
    return path


def test_predict_at_another_batch_from_the_trace(tmp_path, script, capsys):
    cal = _calibration(tmp_path)
    out = tmp_path / "expected.json"
    argv = ["predict", f"{script}:build", "--batch", "4096", "--calibration", str(cal), "--no-floor"]
    assert main([*argv, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "batch 4096 (build(batch=4096))" in text and "not timed" in text
    assert "expected: 1.074 ms (calibrated model; ±8% on its own held-out calibration points)" in text
    expected = json.loads(out.read_text())["expected"]
    assert expected["seconds"] == pytest.approx(2 * 2 * 4096 * 256 * 256 / 1e12)
    (row,) = expected["rows"]
    assert (row["class"], row["basis"], row["executions"]) == ("matmul", "model", 1)
    assert "WARNING" not in text  # this machine's own calibration, made with the installed versions


def test_a_calibration_from_another_machine_is_flagged(tmp_path, script, capsys):
    cal = _calibration(tmp_path, machine={"cpu_model": "Some Other CPU", "logical_cpus": 999})
    assert main(["predict", f"{script}:build", "--calibration", str(cal)]) == 0
    text = capsys.readouterr().out
    assert "WARNING: calibrated on another machine (Some Other CPU, 2026-12-01)" in text
    # another machine's kernels plus a floor measured here would mix two machines: none is measured
    assert "note: no framework floor: the calibration is not this machine's" in text


def test_batch_needs_a_build_that_takes_it(tmp_path, script, capsys):
    cal = _calibration(tmp_path)
    assert main(["predict", f"{script}:fixed", "--batch", "8", "--calibration", str(cal)]) == 2
    err = capsys.readouterr().err
    assert "takes no batch argument" in err and "def fixed(batch=8)" in err


def test_a_missing_calibration_file_is_a_clear_error(tmp_path, script, capsys):
    assert main(["predict", f"{script}:build", "--calibration", str(tmp_path / "none.json")]) == 2
    assert "no such kernel calibration file" in capsys.readouterr().err


def test_calibrate_without_kernels_says_what_it_does(capsys):
    assert main(["calibrate"]) == 2
    assert "pass --kernels" in capsys.readouterr().err


def test_calibrate_kernels_fresh_starts_the_history_over(tmp_path, monkeypatch, capsys):
    """``calibrate --kernels`` measures afresh and merges with the history; ``--fresh`` asks
    ``kernel_calibration`` to start it over (the measuring replaced: a real one takes minutes),
    and the merge note is printed."""
    from neural_cost.analysis import calibrate_kernels

    made = replace(load_calibration(_calibration(tmp_path)), notes=("points: the median of its times in …",))
    seen = []

    def fake(adapter, *, recalibrate=False, fresh=False, progress=None):
        seen.append((adapter.framework, recalibrate, fresh))
        return made

    monkeypatch.setattr(calibrate_kernels, "kernel_calibration", fake)
    assert main(["calibrate", "--kernels"]) == 0
    assert main(["calibrate", "--kernels", "--fresh"]) == 0
    assert seen == [("torch", True, False), ("torch", True, True)]
    assert "note: points: the median of its times in …" in capsys.readouterr().out


def test_analyze_expected_uses_this_machines_cached_model(tmp_path, script, capsys, monkeypatch):
    """With the kernel model cached for this machine (the test's cache directory), ``analyze
    --expected`` prints the expected line between the bound and the observed time: the hand
    curve at batch 4: compute 2·4·256·256 = 524,288 FLOPs → 0.524 µs (flat part: 10 µs); memory
    4·(4·256 + 256·256 + 4·256) = 270,336 B → 2.70336 µs at 100 GB/s, between the first two knots
    (the memory side uses the compute curve: one side only) → the larger — plus the framework floor
    of a batch-1 run (never below 0)."""
    from neural_cost.analysis.calibrate_kernels import calibration_path
    from neural_cost.hardware.host_calibration import live_machine_key
    from neural_cost.hardware.kernel_model import load_calibration

    calibration = load_calibration(_calibration(tmp_path, machine=live_machine_key()))
    # one drift probe, a real program of torch's quick grid, re-run beside the floor
    save_calibration(replace(calibration, probes={"relu 100000": ("elementwise", 50e-6)}), calibration_path("torch"))
    out = tmp_path / "report.json"
    fast = ["--warmup", "1", "--repeats", "3", "--no-profile", "--json", str(out)]
    from neural_cost.hardware import wake

    readings = iter([7e-6, 17e-6])  # the host's state just before the timed runs, then just after them
    monkeypatch.setattr(wake, "cross_core_wake", lambda: next(readings))
    assert main(["analyze", f"{script}:build", "--expected", *fast]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("expected: "))
    assert "calibrated model; ±8% on its own held-out calibration points; framework floor" in lines[at]
    assert lines[at + 1].strip().startswith("note: framework floor")  # how the floor was measured
    assert "; machine now: 1 calibration probe re-run at " in lines[at + 1]  # the probe's ratio: timing, unasserted
    expected = json.loads(out.read_text())["expected"]
    x0, x1 = -6 - math.log10(2), -5.0
    between = -5 + math.log10(2) * (math.log10(2.70336e-6) - x0) / (x1 - x0)
    assert expected["kernel_seconds"] == pytest.approx(10**between)  # 14.777 µs
    assert expected["floor_seconds"] >= 0 and expected["flags"] == []
    assert expected["wake_around_seconds"] == [7e-6, 17e-6] and expected["wake_seconds"] == pytest.approx(12e-6)


def test_the_floor_reads_keyword_inputs_and_refuses_a_program_at_batch_1(tmp_path, script, capsys):
    """A model fed by keyword has its floor measured (its inputs are arrays too); at --batch 1 the
    floor's run would be the program itself, so none is measured and the note says why."""
    cal = _calibration(tmp_path)
    assert main(["predict", f"{script}:by_keyword", "--calibration", str(cal)]) == 0
    text = capsys.readouterr().out
    assert "note: framework floor " in text and "no framework floor" not in text
    assert main(["predict", f"{script}:by_keyword", "--batch", "1", "--calibration", str(cal)]) == 0
    assert "no framework floor: the program is at batch 1 already" in capsys.readouterr().out


def test_a_build_without_batch_still_gets_the_machines_drift(tmp_path, monkeypatch):
    """A ``build()`` with no batch has no floor, but the calibration's probes still say how fast the machine
    runs now (its loops can run slow as much as a batched program's); another machine's calibration gets no
    probe, and ``--no-floor`` none either."""
    import io

    from neural_cost.adapters import TorchAdapter
    from neural_cost.analysis import drift
    from neural_cost.cli.predict import measure_floor
    from neural_cost.cli.progress import Progress

    calls = []

    class Said:
        def note(self):
            return "machine now: as calibrated"

    def fake(adapter, calibration, **_):
        calls.append(calibration.framework)
        return Said()

    monkeypatch.setattr(drift, "machine_drift", fake)
    here = load_calibration(_calibration(tmp_path))
    progress = Progress(io.StringIO())

    def fixed():
        return None

    floor, note = measure_floor(fixed, None, TorchAdapter(), here, {}, progress, False, here.hardware)
    assert floor is None and calls == ["torch"]
    assert (
        note == "no framework floor: build() takes no batch argument to run it at batch 1; machine now: as calibrated"
    )
    assert measure_floor(fixed, None, TorchAdapter(), here, {}, progress, True, here.hardware)[1].startswith(
        "no framework floor (--no-floor)"
    )
    elsewhere = load_calibration(_calibration(tmp_path, machine={"cpu_model": "Some Other CPU", "logical_cpus": 999}))
    _, note = measure_floor(fixed, None, TorchAdapter(), elsewhere, {}, progress, False, elsewhere.hardware)
    assert note == "no framework floor: build() takes no batch argument to run it at batch 1" and calls == ["torch"]


def test_the_machines_drift_is_measured_before_the_batch_one_run_and_scales_it(tmp_path, monkeypatch):
    """The drift probes run first; their ratio (here 2.0: everything twice its calibrated time) reaches the
    floor's batch-1 run, whose time is taken at the calibrated speed (``Floor.drift``): a 3 ms run whose kernels
    are expected at 1 ms leaves 3 / 2 − 1 = 500 µs, not 2 ms."""
    import io

    import torch

    from neural_cost.adapters import TorchAdapter
    from neural_cost.analysis import drift, workload
    from neural_cost.cli.build import build_workload
    from neural_cost.cli.predict import measure_floor
    from neural_cost.cli.progress import Progress

    order = []

    class Slow:
        ratio = 2.0

        def note(self):
            return "machine now: 2.00×"

    def probes(adapter, calibration, **_):
        order.append("drift")
        return Slow()

    def floor(adapter, fn, args, kwargs, calibration, **options):
        order.append("floor")
        return workload.Floor.of(3e-3, 1e-3, drift=options["drift"])

    monkeypatch.setattr(drift, "machine_drift", probes)
    monkeypatch.setattr(workload, "framework_floor", floor)
    here = load_calibration(_calibration(tmp_path))

    def build(batch=8):
        return torch.nn.Linear(4, 2), (torch.ones(batch, 4),)

    seconds, note = measure_floor(
        build, build_workload(build, 8), TorchAdapter(), here, {}, Progress(io.StringIO()), False, here.hardware
    )
    assert order == ["drift", "floor"] and seconds == pytest.approx(500e-6)
    assert "(1.500 ms at the machine's calibrated speed: its drift probes ran 2.00× their calibrated time" in note
    assert note.endswith("; machine now: 2.00×")


def test_predict_at_several_batches_side_by_side(tmp_path, script, capsys):
    """``--batch 256,2,4096`` traces each batch (ascending) and prints them side by side. One ``mm`` kernel of
    2·N·256² FLOPs (N × 131.072 ns at 1 TFLOP/s) moving 4·(N·512 + 256²) bytes (at 100 GB/s).

    - Batch 2: 1.024 MFLOP = 262 ns, 266,240 B = 2.6624 µs: memory-bound, its roofline 2.6624 µs, read off the
      curve between its first two knots (0.5 µs → 10 µs, 10 µs → 20 µs; log-log): 10^(−5 + log10 2 ×
      (log10 2.6624e-6 + 6 + log10 2) / (1 + log10 2)) = 14.72 µs; 7.36 µs an example, 2 / 14.72 µs = 136 k
      examples a second; 14.72 / 2.6624 = 5.53× its bound.
    - Batches 256 (33.55 µs of compute, 786,432 B = 7.86 µs) and 4096 (536.87 µs, 86.5 µs): compute-bound on the
      curve's 2× part: 67.1 µs and 1.074 ms, N × 262.144 ns / N = 262.1 ns an example, 3.81 M a second, 2.00×.
    - Throughput: 3,814,697 / 135,825 = 28.09× batch 2's; 1.00× batch 256's."""
    cal = _calibration(tmp_path)
    out = tmp_path / "sweep.json"
    argv = ["predict", f"{script}:build", "--batch", "256,2,4096", "--calibration", str(cal), "--no-floor"]
    assert main([*argv, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "batches 2, 256, 4096 (build(batch=N)): traced, not timed" in text
    assert "expected by batch (calibrated model; ±8% on its own held-out calibration points):" in text
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.strip()[:1].isdigit()}
    assert rows["2"][1:9] == ["14.7", "µs", "7.4", "µs", "136", "k", "2.7", "µs"] and rows["2"][-1] == "5.53×"
    assert rows["256"][1:5] == ["67.1", "µs", "262.1", "ns"] and rows["256"][-1] == "2.00×"
    assert rows["4096"][1:5] == ["1.074", "ms", "262.1", "ns"] and rows["4096"][5:7] == ["3.81", "M"]
    assert "throughput: batch 4096 runs 28.09× the examples a second of batch 2; 1.00× batch 256's" in text
    # a note every batch shares is said once, unprefixed
    assert text.count("no framework floor (--no-floor)") == 1 and "batch 2, 256: no framework floor" not in text
    saved = json.loads(out.read_text())
    assert [entry["batch"] for entry in saved["batches"]] == [2, 256, 4096]
    seconds = [entry["expected"]["seconds"] for entry in saved["batches"]]
    assert seconds == pytest.approx([1.4724846e-5, 2 * 2 * 256 * 256 * 256 / 1e12, 2 * 2 * 4096 * 256 * 256 / 1e12])
    assert saved["floor_note"].startswith("no framework floor (--no-floor)")


def test_a_batch_list_must_name_each_batch_once_and_be_positive(tmp_path, script, capsys):
    cal = _calibration(tmp_path)
    for asked, said in (("8,8", "'8,8' names a batch twice"), ("8,0", "0 must be an integer >= 1"),
                        ("8,x", "'x' is not an integer")):  # fmt: skip
        with pytest.raises(SystemExit) as exit_:
            main(["predict", f"{script}:build", "--batch", asked, "--calibration", str(cal)])
        assert exit_.value.code == 2 and said in capsys.readouterr().err


def test_sweep_notes_say_which_batches_a_note_is_of():
    from neural_cost.report.sweep_text import sweep_notes, throughput_line

    notes = sweep_notes([4, 8, 16], [["shared", "small"], ["shared", "small"], ["shared", "large"]])
    assert notes == ["shared", "batch 4, 8: small", "batch 16: large"]
    assert throughput_line([4], []) is None


def test_a_sweep_names_the_batch_its_build_failed_at(tmp_path, capsys):
    """``build(batch=N)`` that raises at one batch of a sweep: the error names that batch, not only the function."""
    path = tmp_path / "big.py"
    path.write_text(
        "import torch\n\ndef build(batch=4):\n    if batch > 100:\n        raise MemoryError('too big')\n"
        "    return torch.nn.Linear(8, 8), (torch.randn(batch, 8),)\n"
    )
    cal = _calibration(tmp_path)
    assert main(["predict", f"{path}:build", "--batch", "8,512", "--calibration", str(cal), "--no-floor"]) == 2
    err = capsys.readouterr().err
    assert "at batch 512 (of 8, 512): build() in" in err and "raised MemoryError: too big" in err
