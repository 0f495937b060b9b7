"""A row's efficiency compares its measured time with the kernel bound behind it, never with its
unfused bound: a record alone in a kernel placed in a cache is not "174.8% efficient".

Spec: peak 1e12 FLOP/s, DRAM 1e11 B/s, L2 1 MiB at 1e12 B/s.
Record relu on (128, 512) float32: reads 262,144 B, writes 262,144 B = 524,288 B.
  Its unfused row bound: 524,288 B / 1e11 = 5.24288 µs (the per-operation table's).
Kernel relu.0 executes it: 524,288 B, footprint 524,288 B ≤ 1 MiB → L2: 524,288 / 1e12 = 524.288 ns
  (compute 65,536 elements × at most a few FLOPs / 1e12 is below it).
Profiled: 2 runs, 6 µs in the kernel → 3 µs per run. Kernel efficiency 524.288 / 3,000 = 17.4763%.
"""

import pytest

from neural_cost import Coverage, HardwareSpec, Kernel, MemoryLevel, Operation, Trace, analyze_gap, estimate_trace
from neural_cost.core.profile import MeasuredKernel, Profile
from tests.helpers import cpu_measurement

OP = Operation("relu", "elementwise", ((128, 512),), (128, 512), "float32", scope="act", attrs={"op": "relu"})
LEVELS = (MemoryLevel("L2", 1 << 20, 1e12), MemoryLevel("DRAM", 1 << 34, 1e11))
SPEC = HardwareSpec("S", peak_flops=1e12, memory_bandwidth=1e11, kind="cpu", memory_levels=LEVELS)


def test_a_record_alone_in_a_cached_kernel_shows_the_kernels_efficiency():
    trace = Trace(
        (OP,), Coverage.full((OP,)), kernels=(Kernel("relu.0", (0,), traffic_bytes=524_288, footprint_bytes=524_288),)
    )
    profile = Profile(2, 10e-6, (MeasuredKernel(0, 6e-6, 2),), 6e-6, "test profiler")
    report = analyze_gap(estimate_trace(trace), cpu_measurement((5e-6,) * 5), SPEC, profile=profile)
    (kernel,) = report.kernel_rows
    assert kernel.level == "L2" and kernel.bound_seconds == pytest.approx(524.288e-9)
    assert kernel.measured_efficiency == pytest.approx(524.288e-9 / 3e-6)  # 17.48%
    (row,) = report.operation_rows
    assert row.bound_seconds == pytest.approx(5.24288e-6)  # the unfused row bound, at DRAM
    assert not row.shared and row.measured_seconds == pytest.approx(3e-6)
    assert row.measured_efficiency == pytest.approx(524.288e-9 / 3e-6)  # the kernel's, not 5.24288 / 3 = 174.8%
    (scope,) = report.scope_rows
    assert scope.measured_efficiency == pytest.approx(524.288e-9 / 3e-6)
