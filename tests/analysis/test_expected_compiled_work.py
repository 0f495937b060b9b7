"""A kernel that computes more than the records it runs is expected at its compiled work.

On the test spec of test_kernel_bound.py (peak 1 TFLOP/s; L1d 1e12 B/s, L2 500e9 B/s, DRAM
100e9 B/s) with one curve for every class, y = x in log10 between 10⁻⁸ and 10⁻³ s (a kernel is
expected at its roofline time there):
  fusion.0 runs mm + add (528,384 FLOPs: 2·64³ + 64²) and compiles just the mm, 524,288 FLOPs:
    not beyond 2× its records, so read at its records: 528.384 ns of compute;
  ynn_fusion.3 runs no record and compiles a 100 MFLOP convolution: class conv, 100e6 / 1e12 =
    100 µs (its 1 MB footprint fits L2: 2 µs of memory); before, class other at its bound, 2 µs;
  fusion.4 runs the big add (1,048,576 FLOPs) and compiles a 3,000,000-FLOP dot, above 2× its
    records: 3 µs of compute against 12,582,912 B at DRAM = 125.829 µs of memory: its memory time.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from neural_cost import Coverage, Kernel, Trace, estimate_trace
from neural_cost.analysis.expected import expected_time, installed_versions
from neural_cost.hardware.kernel_model import ClassModel, Curve, KernelCalibration
from tests.analysis.test_kernel_bound import OPS, SPEC

IDENTITY = Curve((-8.0, -3.0), (-8.0, -3.0))
KERNELS = (
    Kernel("fusion.0", (0, 1), traffic_bytes=49_152, footprint_bytes=49_152, kind="fusion",
           compiled_flops_by_dtype={"float32": 524_288}, compiled_contraction="dot"),
    Kernel("ynn_fusion.3", (), traffic_bytes=1_000_000, footprint_bytes=1_000_000, kind="fusion",
           compiled_flops_by_dtype={"float32": 100_000_000}, compiled_contraction="convolution"),
    Kernel("fusion.4", (2,), traffic_bytes=12_582_912, footprint_bytes=12_582_912, kind="fusion",
           compiled_flops_by_dtype={"float32": 3_000_000}, compiled_contraction="dot"),
)  # fmt: skip


def _expected(kernels=KERNELS):
    classes = {name: ClassModel(name, IDENTITY, None, points=2) for name in ("matmul", "conv", "elementwise")}
    calibration = KernelCalibration("jax", SPEC, classes, machine={}, versions=installed_versions("jax"), date="d")
    trace = Trace(OPS, Coverage.full(OPS), kernels=kernels, kernel_source="hand-written", framework="jax")
    return expected_time(estimate_trace(trace), calibration, machine={})


def test_a_kernel_computing_more_than_its_records_is_expected_at_its_compiled_work():
    expected = _expected()
    rows = {row.name: row for row in expected.rows}
    assert rows["fusion.0"].kernel_class == "matmul"
    assert rows["fusion.0"].seconds == pytest.approx(528.384e-9)
    assert rows["ynn_fusion.3"].kernel_class == "conv" and rows["ynn_fusion.3"].basis == "model"
    assert rows["ynn_fusion.3"].seconds == pytest.approx(100e-6)
    assert rows["ynn_fusion.3"].bound_seconds == pytest.approx(2e-6)  # the bound stays the program's
    assert rows["fusion.4"].kernel_class == "elementwise"  # its records say what it is
    assert rows["fusion.4"].seconds == pytest.approx(125.82912e-6)
    note = next(note for note in expected.notes if "more than the records they run" in note)
    # beyond: ynn_fusion.3's 100 MFLOP and fusion.4's 3 MFLOP − 1.048576 MFLOP: 101.951424 MFLOP
    assert note.startswith("in 2 kernels XLA computes 102 MFLOP more than the records they run (ynn_fusion.3 100 MFLOP")


def test_without_compiled_work_a_recordless_kernel_is_scored_at_its_bound():
    plain = tuple(Kernel(k.name, k.operations, k.flops_by_dtype, k.traffic_bytes, k.footprint_bytes, kind=k.kind)
                  for k in KERNELS)  # fmt: skip
    rows = {row.name: row for row in _expected(plain).rows}
    assert rows["ynn_fusion.3"].kernel_class == "other" and rows["ynn_fusion.3"].basis == "roofline"
    assert rows["ynn_fusion.3"].seconds == pytest.approx(2e-6)


def test_compiled_work_survives_a_saved_trace():
    kernel = KERNELS[1]
    again = Kernel.from_dict(kernel.to_dict())
    assert again == kernel and again.compiled_flops == 100_000_000
    assert Kernel.from_dict({"name": "old"}).compiled_flops_by_dtype == {}  # written before the field


def test_the_report_says_the_compiled_program_computes_more_than_the_program_asks():
    """Program: 2·64³ + 64² + 1024² = 1,576,960 FLOPs. Beyond: ynn_fusion.3's 100,000,000 and
    fusion.4's 3,000,000 − 1,048,576 = 1,951,424: 101,951,424 FLOPs more; fusion.0 (524,288
    compiled for 528,384) is not beyond."""
    from neural_cost import analyze_gap
    from tests.helpers import cpu_measurement

    trace = Trace(OPS, Coverage.full(OPS), kernels=KERNELS, kernel_source="hand-written", framework="jax")
    report = analyze_gap(estimate_trace(trace), cpu_measurement((1e-3,) * 5), SPEC)
    found = [f for f in report.findings if f.code == "compiled_work"]
    assert len(found) == 1 and found[0].severity == "note"
    assert found[0].message.startswith(
        "The compiled program computes 102 MFLOP more than the program asks (1.58 MFLOP): 2 kernels run dots or "
        "convolutions of over 2× their records' FLOPs (ynn_fusion.3 100 MFLOP for 0 FLOP, fusion.4 3.00 MFLOP for "
        "1.05 MFLOP)."
    )
    assert (
        report.bound_seconds
        == analyze_gap(
            estimate_trace(replace(trace, kernels=tuple(replace(k, compiled_flops_by_dtype={}) for k in KERNELS))),
            cpu_measurement((1e-3,) * 5),
            SPEC,
        ).bound_seconds
    )  # the bound is the program's work, whatever the compiler computes
