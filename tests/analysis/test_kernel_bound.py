"""The kernel bound, scored by hand: levels, unmeasured caches, unmapped records, fallback.

The spec (kind cpu): peak 1 TFLOP/s, main memory 100 GB/s, levels
  L1d 32,768 B at 1e12 B/s · L2 1,048,576 B at 500e9 B/s · L3 33,554,432 B, no bandwidth · DRAM.
The records (float32):
  0 mm   (64,64)@(64,64): 2·64³ = 524,288 FLOPs; read 2·64·64·4 = 32,768 B, write 16,384 B
  1 add  (64,64)+(64,64):          4,096 FLOPs; read 32,768 B, write 16,384 B
  2 big  (1024,1024)+(1024,1024): 1,048,576 FLOPs; read 8,388,608 B, write 4,194,304 B
The kernels:
  fusion.0 executes records 0 and 1: 528,384 FLOPs; 49,152 B per execution, footprint 49,152 B
    (> L1d 32,768, ≤ L2) → L2: memory 49,152 / 500e9 = 98.304 ns, compute 528,384 / 1e12 = 528.384 ns
    → 528.384 ns, compute-bound
  copy.1 executes no record: 2,000,000 B, footprint 2,000,000 (> L2, fits L3, which has no bandwidth:
    skipped) → DRAM: 2e6 / 100e9 = 20 µs
  loop.2 executes no record, 1,000 B × 10 executions, footprint 1,000 → L1d: 10,000 / 1e12 = 10 ns
  record 2 is unmapped: scored by the unfused rule at DRAM: 12,582,912 / 100e9 = 125.82912 µs
    (compute 1,048,576 / 1e12 = 1.048576 µs)
Kernel bound = 528.384 ns + 20 µs + 10 ns + 125.82912 µs = 146.367504 µs.
Program roofline: compute (528,384 + 1,048,576) / 1e12 = 1.57696 µs; compiled traffic
  49,152 + 2,000,000 + 10,000 + 12,582,912 = 14,642,064 B → 146.42064 µs at DRAM.
Unfused traffic: 49,152 + 49,152 + 12,582,912 = 12,681,216 B.
"""

import pytest

from neural_cost import Coverage, HardwareSpec, Kernel, Operation, Trace, analyze_gap, estimate_trace
from neural_cost.analysis.kernels import UNMAPPED
from neural_cost.core.errors import RecordError
from neural_cost.hardware.spec import MemoryLevel
from tests.helpers import cpu_measurement

OPS = (
    Operation("mm", "matmul", ((64, 64), (64, 64)), (64, 64), "float32"),
    Operation("add", "elementwise", ((64, 64), (64, 64)), (64, 64), "float32", attrs={"op": "add"}),
    Operation("big", "elementwise", ((1024, 1024), (1024, 1024)), (1024, 1024), "float32", attrs={"op": "add"}),
)
KERNELS = (
    Kernel("fusion.0", (0, 1), traffic_bytes=49_152, footprint_bytes=49_152, kind="fusion"),
    Kernel("copy.1", (), traffic_bytes=2_000_000, footprint_bytes=2_000_000, kind="copy"),
    Kernel("loop.2", (), traffic_bytes=1_000, footprint_bytes=1_000, executions=10, kind="fusion"),
)
LEVELS = (
    MemoryLevel("L1d", 32_768, 1e12, per_core=True, instances=2),
    MemoryLevel("L2", 1_048_576, 500e9, per_core=True, instances=2),
    MemoryLevel("L3", 33_554_432, None),
    MemoryLevel("DRAM", 1 << 36, 100e9),
)
SPEC = HardwareSpec("T", peak_flops=1e12, memory_bandwidth=100e9, kind="cpu", memory_levels=LEVELS)


def _report(kernels=KERNELS, spec=SPEC, samples=(200e-6,) * 5):
    trace = Trace(OPS, Coverage.full(OPS), kernels=kernels, kernel_source="hand-written")
    return analyze_gap(estimate_trace(trace), cpu_measurement(samples), spec)


def test_each_kernel_is_scored_at_the_nearest_measured_level_holding_its_footprint():
    report = _report()
    rows = {row.name: row for row in report.kernel_rows}
    assert set(rows) == {"fusion.0", "copy.1", "loop.2", UNMAPPED}
    assert rows["fusion.0"].flops == 528_384 and rows["fusion.0"].level == "L2"
    assert rows["fusion.0"].memory_seconds == pytest.approx(98.304e-9)
    assert rows["fusion.0"].compute_seconds == pytest.approx(528.384e-9)
    assert rows["fusion.0"].bound_side == "compute"
    assert rows["copy.1"].level == "DRAM" and rows["copy.1"].bound_seconds == pytest.approx(20e-6)
    assert rows["loop.2"].level == "L1d" and rows["loop.2"].traffic_bytes == 10_000
    assert rows["loop.2"].bound_seconds == pytest.approx(10e-9)
    assert rows[UNMAPPED].level == "DRAM" and rows[UNMAPPED].footprint_bytes is None
    assert rows[UNMAPPED].bound_seconds == pytest.approx(125.82912e-6)
    assert report.bound_seconds == pytest.approx(146.367504e-6)
    assert report.roofline_seconds == pytest.approx(146.42064e-6)
    assert report.compute_seconds == pytest.approx(1.57696e-6)
    assert report.bound_side == "memory"
    assert report.efficiency == pytest.approx(146.367504e-6 / 200e-6)
    assert report.traffic_by_level == {"L2": 49_152, "DRAM": 14_582_912, "L1d": 10_000}
    assert report.estimate.compiled_bytes == 14_642_064
    assert report.estimate.bytes == 12_681_216  # unfused
    assert [row.name for row in report.kernel_rows] == [UNMAPPED, "copy.1", "fusion.0", "loop.2"]  # costliest first
    assert sum(row.share for row in report.kernel_rows) == pytest.approx(1.0)


def test_a_cache_without_a_measured_bandwidth_is_skipped_and_said():
    (note,) = _report().kernel_notes
    assert note.startswith("L3 has no measured bandwidth: 1 kernel(s)")  # copy.1 fits L3
    assert "neural-cost hardware --calibrate" in note


def test_kernel_flops_come_from_their_records_never_from_the_adapter():
    lying = (Kernel("fusion.0", (0, 1), {"float32": 1}, traffic_bytes=49_152, footprint_bytes=49_152),)
    report = _report(lying)
    assert report.estimate.kernels[0].flops == 528_384  # 524,288 + 4,096
    assert report.estimate.flops == 524_288 + 4_096 + 1_048_576  # identical with and without kernels
    assert _report(()).estimate.flops == report.estimate.flops


def test_without_kernels_each_record_is_its_own_kernel_at_unfused_traffic():
    report = _report(())
    rows = {row.name: row for row in report.kernel_rows}
    assert set(rows) == {"mm", "add", "big"}
    # mm: 49,152 B per execution → L2 (> L1d); compute 524.288 ns > memory 98.304 ns
    assert rows["mm"].level == "L2" and rows["mm"].bound_seconds == pytest.approx(524.288e-9)
    # add: 49,152 B → L2: 98.304 ns > compute 4.096 ns
    assert rows["add"].bound_seconds == pytest.approx(98.304e-9)
    # big: 12,582,912 B fits L3 (unmeasured) → DRAM: 125.82912 µs
    assert rows["big"].level == "DRAM" and rows["big"].bound_seconds == pytest.approx(125.82912e-6)
    assert report.bound_seconds == pytest.approx(524.288e-9 + 98.304e-9 + 125.82912e-6)
    assert report.estimate.compiled_bytes == report.estimate.bytes == 12_681_216


def test_a_spec_without_levels_scores_every_kernel_at_its_bandwidth():
    flat = HardwareSpec("T", peak_flops=1e12, memory_bandwidth=100e9, kind="cpu")
    report = _report(spec=flat)
    assert {row.level for row in report.kernel_rows} == {"main memory"}
    # fusion.0: max(528.384 ns, 49,152/100e9 = 491.52 ns); copy.1 20 µs; loop.2 10,000/100e9 = 100 ns; unmapped
    assert report.bound_seconds == pytest.approx(528.384e-9 + 20e-6 + 100e-9 + 125.82912e-6)
    # the kernel bound is never below the program roofline when every byte is scored at one bandwidth
    assert report.bound_seconds >= report.roofline_seconds


def test_above_100_names_the_deciding_kernels_and_their_assumptions():
    report = _report(samples=(50e-6,) * 5)  # bound 146.4 µs > observed 50 µs
    finding = report.finding("efficiency_above_100")
    assert finding is not None
    assert "decided by (unmapped records)" in finding.message and "copy.1" in finding.message
    assert "no compiled program" not in finding.message  # kernels were read
    flat = HardwareSpec("T", peak_flops=1e12, memory_bandwidth=100e9, kind="cpu")
    message = _report(spec=flat, samples=(50e-6,) * 5).finding("efficiency_above_100").message
    assert "lists no cache levels" in message and "copy.1 (footprint 2.00 MB)" in message


def test_kernels_are_checked_against_the_records():
    with pytest.raises(RecordError, match="executes operation 7, but there are only 3"):
        Trace(OPS, Coverage.full(OPS), kernels=(Kernel("k", (7,)),))
    with pytest.raises(RecordError, match="operation 0 is executed by kernel 'a' and by 'b'"):
        Trace(OPS, Coverage.full(OPS), kernels=(Kernel("a", (0,)), Kernel("b", (0, 1))))


def test_kernels_round_trip_through_the_trace_and_estimate_json():
    trace = Trace(OPS, Coverage.full(OPS), kernels=KERNELS, kernel_source="hand-written")
    again = Trace.from_dict(trace.to_dict())
    assert again.kernels == trace.kernels and again.kernel_source == "hand-written"
    estimate = estimate_trace(trace)
    from neural_cost import CostEstimate

    assert CostEstimate.from_dict(estimate.to_dict()) == estimate


def test_a_cache_level_measured_slower_than_main_memory_is_not_used():
    """An L3 "measured" at 3.9 GB/s beside DRAM's 100 GB/s is no cache's figure (a level probe whose
    working set faulted in fresh pages every pass read one so, on a VM reporting a 480 MiB L3):
    copy.1 (2 MB: over L2's 1 MiB, inside L3's 32 MiB) is scored at DRAM, 2,000,000 B ÷ 100 GB/s
    = 20 µs, not 2,000,000 ÷ 3.9e9 = 513 µs, and a note names the level and both figures."""
    import dataclasses

    from neural_cost.analysis.kernels import kernel_rows

    slow = tuple(dataclasses.replace(lv, bandwidth=3.9e9) if lv.name == "L3" else lv for lv in LEVELS)
    spec = dataclasses.replace(SPEC, memory_levels=slow)
    rows, notes = kernel_rows(estimate_trace(Trace(OPS, Coverage.full(OPS), kernels=KERNELS)), spec)
    copy = next(row for row in rows if row.name == "copy.1")
    assert (copy.level, copy.memory_seconds) == ("DRAM", pytest.approx(2_000_000 / 100e9))
    said = "L3's measured bandwidth (3.90 GB/s) is below main memory's (100 GB/s)"
    assert any(note.startswith(said) for note in notes), notes


def test_hardware_command_names_a_cache_measured_below_main_memory():
    """`neural-cost hardware` says what the kernel view does with such a level. On an Intel VM the
    guest's sysfs reported its host's whole 480 MiB L3; probed at 120 MiB a thread it read 46.7 GB/s
    beside DRAM's 55.5: here L3 at 3.9 GB/s beside 100 GB/s gets the same note as the kernel view's,
    and a level above main memory (L1d, L2) gets none."""
    import dataclasses

    from neural_cost.cli.hardware import _payload, render_hardware
    from neural_cost.hardware.detect import DetectionResult

    slow = tuple(dataclasses.replace(lv, bandwidth=3.9e9) if lv.name == "L3" else lv for lv in LEVELS)
    spec, detection = dataclasses.replace(SPEC, memory_levels=slow), DetectionResult("cpu", "cpu", "T")
    text = render_hardware(spec, detection)
    assert _payload(spec, detection)["level_notes"] == [note.removeprefix("  note: ") for note in text.splitlines()
                                                        if "below main memory" in note]  # fmt: skip
    assert _payload(SPEC, detection)["level_notes"] == []
    notes = [line for line in text.splitlines() if "below main memory" in line]
    assert notes == [
        "  note: L3's measured bandwidth (3.90 GB/s) is below main memory's (100 GB/s): no cache's figure, not used "
        "(a kernel that fits there is scored at the next level measured; a VM can report its host's whole shared "
        "cache, more than its share; `neural-cost hardware --calibrate` measures the caches again)"
    ]
