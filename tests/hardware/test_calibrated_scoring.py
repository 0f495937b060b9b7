"""Scoring against calibrated figures, the report header that names them, and diff naming changes.

Peaks above the formula's score (the formula's clock was nominal); peaks below it are shown
beside it and the formula scores. No test asserts a timing.
"""

import json
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

from neural_cost import HardwareSpec, MeasurementError, analyze_gap
from neural_cost.hardware.calibrate import ProbeResult
from neural_cost.hardware.host_cache import read_entry, write_entry
from neural_cost.hardware.host_calibration import live_machine_key, scored_peaks
from neural_cost.hardware.kernels import best_by_dtype, check_conv, conv_flops, conv_positions
from neural_cost.report.diff import diff_reports, spec_changes
from tests.helpers import cpu_measurement, seed_estimate

LIVE_X86_LINUX = (
    sys.platform.startswith("linux")
    and platform.machine().lower() in {"x86_64", "amd64"}
    and Path("/proc/cpuinfo").exists()
)
FORMULA = {"float32": 332.8e9, "float64": 166.4e9}  # 2 cores × 2.6 GHz × 64 and × 32
FORMULA_SOURCES = {"float32": "formula: F32", "float64": "formula: F64"}
COMPUTE = {
    "float32": {"flops_per_second": 480e9, "kernel": "torch 2.13 conv 16", "date": "2026-12-01"},
    "float64": {"flops_per_second": 100e9, "kernel": "numpy 2048² matmul", "date": "2026-12-01"},
}


def test_a_measured_rate_above_the_formula_scores_and_says_why():
    peaks, sources = scored_peaks(FORMULA, FORMULA_SOURCES, 2.6e9, COMPUTE)
    assert peaks == {"float32": 480e9, "float64": 166.4e9}  # the higher of measured and formula, per dtype
    assert sources["float32"] == (
        "measured 480 GFLOP/s (torch 2.13 conv 16, 2026-12-01), above the formula's 333 GFLOP/s: "
        "the formula's 2.6 GHz is a nominal clock; the measured rate scored"
    )
    # 100e9 / 166.4e9 = 60.1%
    assert sources["float64"] == (
        "formula: F64; calibrated 100 GFLOP/s (numpy 2048² matmul, 2026-12-01) = 60.1% of it; the formula scored"
    )


def test_no_calibration_keeps_the_formula():
    assert scored_peaks(FORMULA, FORMULA_SOURCES, 2.6e9, {}) == (FORMULA, FORMULA_SOURCES)


@pytest.mark.skipif(not LIVE_X86_LINUX, reason="reads an x86 Linux host's /proc files")
def test_detection_scores_against_a_cached_rate_above_the_formula():
    from neural_cost import detect_hardware

    formula, _ = detect_hardware(memory_bandwidth=1e10, calibrated=False)
    fast = 10 * formula.peak("float32")
    write_entry(live_machine_key(), {"compute": {"float32": {**COMPUTE["float32"], "flops_per_second": fast}}})
    spec, detection = detect_hardware(memory_bandwidth=1e10)
    assert spec.peak("float32") == fast and spec.peak_flops == fast
    assert spec.peak("float64") == formula.peak("float64")  # no float64 figure cached: the formula
    assert "is a nominal clock; the measured rate scored" in detection.sources["peak_flops[float32]"]
    assert detect_hardware(memory_bandwidth=1e10, calibrated=False)[0] == formula


# --- the header ------------------------------------------------------------------------------

PER_NUMBER = HardwareSpec(
    "AMD EPYC",
    480e9,
    22.1e9,
    kind="cpu",
    peak_flops_by_dtype={"float32": 480e9, "float16": 960e9},
    source="measured peaks; bandwidth measured",
    sources={
        "peak_flops[float16]": "formula: 2 cores × 2.6 GHz × 128",
        "memory_bandwidth": "measured, all cores (2 threads), best of 9, spread 5.0%, cached 2026-12-01",
    },
)


def _device_line(spec):
    return next(
        line
        for line in analyze_gap(seed_estimate(), cpu_measurement(), spec).render().splitlines()
        if "device:" in line
    )


def test_header_prints_each_scored_number_beside_its_source():
    # The seed is float16 work: its peak (960e9 → "960 GFLOP/s") and the bandwidth (22.1e9 → "22.1 GB/s").
    assert _device_line(PER_NUMBER) == (
        "  device: ran on Intel Xeon Platinum 8480C (cpu) · peaks for AMD EPYC (cpu): float16 960 GFLOP/s "
        "(formula: 2 cores × 2.6 GHz × 128); bandwidth 22.1 GB/s (measured, all cores (2 threads), best of 9, "
        "spread 5.0%, cached 2026-12-01)"
    )


def test_header_names_a_dtype_that_falls_back_to_peak_flops():
    # peak_flops 100e9 is float32's own peak: float16 is scored at it, and says so.
    spec = HardwareSpec("X", 100e9, 10e9, kind="cpu", peak_flops_by_dtype={"float32": 100e9}, source="table")
    assert _device_line(spec) == (
        "  device: ran on Intel Xeon Platinum 8480C (cpu) · peaks for X (cpu; table): "
        "float16 100 GFLOP/s scored at the float32 peak (no float16 peak of its own); bandwidth 10.0 GB/s"
    )


def test_sources_round_trip_through_json():
    assert HardwareSpec.from_dict(json.loads(json.dumps(PER_NUMBER.to_dict()))) == PER_NUMBER


# --- diff ------------------------------------------------------------------------------------


def test_diff_names_every_spec_number_that_changed():
    before = HardwareSpec("AMD EPYC", 332e9, 43.0e9, "cpu", {"float32": 332e9, "float64": 166e9}, source="s")
    after = HardwareSpec("AMD EPYC", 480e9, 23.5e9, "cpu", {"float32": 480e9, "float64": 166e9}, source="s")
    # 480/332 − 1 = +44.6%; 23.5/43.0 − 1 = −45.3%
    assert spec_changes(before, after) == [
        "peak_flops (fallback) 332 GFLOP/s → 480 GFLOP/s (+44.6%)",
        "float32 peak 332 GFLOP/s → 480 GFLOP/s (+44.6%)",
        "bandwidth 43.0 GB/s → 23.5 GB/s (-45.3%)",
    ]
    text = diff_reports(
        analyze_gap(seed_estimate(), cpu_measurement(), before), analyze_gap(seed_estimate(), cpu_measurement(), after)
    )
    assert (
        "  NOTE: scored against different specs: AMD EPYC → AMD EPYC: peak_flops (fallback) 332 GFLOP/s → "
        "480 GFLOP/s (+44.6%); float32 peak 332 GFLOP/s → 480 GFLOP/s (+44.6%); bandwidth 43.0 GB/s → "
        "23.5 GB/s (-45.3%); bound and efficiency deltas include the change of spec\n"
    ) in text


def test_diff_names_a_source_that_changed_under_the_same_number():
    before = HardwareSpec("A", 1e9, 1e9, sources={"memory_bandwidth": "measured, cached 2026-11-30"})
    after = HardwareSpec("A", 1e9, 1e9, sources={"memory_bandwidth": "measured, cached 2026-12-01"})
    assert spec_changes(before, after) == [
        "memory_bandwidth source 'measured, cached 2026-11-30' → 'measured, cached 2026-12-01'"
    ]


# --- kernels ---------------------------------------------------------------------------------


def test_the_fastest_verified_kernel_per_dtype_is_kept():
    slow = ProbeResult("matmul", "float32", 64, 2 * 64**3, (1e-3,), "checked")  # 524,288 FLOPs in 1 ms
    fast = ProbeResult("conv", "float32", 16, conv_flops(), (1.0,), "checked")  # 3,699,376,128 FLOPs in 1 s
    compute = best_by_dtype([("numpy", slow), ("torch 2.13", fast)])
    assert list(compute) == ["float32"]
    assert compute["float32"]["flops_per_second"] == 3_699_376_128.0
    assert compute["float32"]["kernel"] == "torch 2.13 conv 16"
    assert conv_flops() == 2 * 16 * 128 * 28 * 28 * 128 * 9  # = 3,699,376,128


def test_a_wrong_convolution_is_rejected():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3, 5, 5)), rng.standard_normal((4, 3, 3, 3))
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    right = np.einsum("ncyxij,ocij->noyx", np.lib.stride_tricks.sliding_window_view(padded, (3, 3), (2, 3)), w)
    positions = conv_positions((2, 3, 5, 5), 4)
    assert "8 outputs checked" in check_conv(right, x, w, "float32", positions)
    with pytest.raises(MeasurementError, match="wrong result"):
        check_conv(right + 1.0, x, w, "float32", positions)


def test_torch_convolution_probe_is_verified():
    torch = pytest.importorskip("torch")
    from neural_cost.adapters._torch.calibrate import torch_conv_probe

    result = torch_conv_probe(torch.device("cpu"))("float32", 1)
    assert result.probe == "conv" and result.work == 3_699_376_128 and "8 outputs checked" in result.verified


# --- the command -----------------------------------------------------------------------------


@pytest.mark.skipif(not LIVE_X86_LINUX, reason="reads an x86 Linux host's /proc files")
def test_hardware_calibrate_writes_the_cache_and_recalibrate_refreshes_it(capsys):
    from neural_cost.cli.main import main

    assert main(["hardware", "--calibrate", "--size", "64"]) == 0
    out = capsys.readouterr().out
    entry = read_entry(live_machine_key()).entry
    assert set(entry) >= {"dram", "compute"} and entry["compute"]["float32"]["flops_per_second"] > 0
    assert "fastest float32:" in out and "now scoring against:" in out
    write_entry(live_machine_key(), {"dram": {**entry["dram"], "date": "1999-01-01"}})
    assert main(["hardware", "--recalibrate", "--size", "64"]) == 0
    assert read_entry(live_machine_key()).entry["dram"]["date"] != "1999-01-01"  # measured afresh
