"""HardwareSpec refuses ambiguous or out-of-range figures with a HardwareError naming the field
(moved from tests/review/)."""

from __future__ import annotations

import pytest

from neural_cost import HardwareError, HardwareSpec


def test_peak_flops_by_dtype_naming_one_dtype_twice_is_an_error():
    # Was (hardware/spec.py): {"bf16": 1e13, "bfloat16": 2e13} silently kept 2e13; which peak the
    # user meant is unknowable, so the spec must refuse it.
    with pytest.raises(HardwareError, match=r"names bfloat16 twice"):
        HardwareSpec("x", 1e12, 1e9, peak_flops_by_dtype={"bf16": 1e13, "bfloat16": 2e13})


def test_huge_peak_is_a_hardware_error():
    # Was (hardware/spec.py, _positive): float(10**400) raised OverflowError from inside.
    with pytest.raises(HardwareError, match=r"peak_flops=1000"):
        HardwareSpec("x", 10**400, 1e9)


def test_numpy_numbers_are_peaks():
    # Was: np.int64 peaks and np.float32 bandwidths were refused with "must be a number", which they are.
    np = pytest.importorskip("numpy")
    spec = HardwareSpec("x", np.int64(10**12), np.float32(2.0**30))
    assert spec.peak_flops == 1e12 and spec.memory_bandwidth == 2.0**30  # 2³⁰ is exact in float32


def test_a_levels_bandwidth_cites_its_own_source_else_the_memory_bandwidths_and_measured_reads_the_source():
    """L2 has a bandwidth measured by a probe: ``bandwidth[L2]`` cites it; DRAM has none of its own, and an
    unknown level neither: both cite ``memory_bandwidth``'s. A float32 peak from a formula is not measured; one
    a probe measured, or a calibration made, is."""
    from neural_cost.hardware.spec import MemoryLevel

    levels = (
        MemoryLevel("L2", 1 << 20, 500e9, per_core=True, instances=2, bandwidth_source="measured: L2 probe"),
        MemoryLevel("DRAM", 1 << 36, 100e9),
    )
    sources = {"memory_bandwidth": "a table row", "peak_flops[float32]": "formula: 2 cores × 2.7 GHz"}
    spec = HardwareSpec("T", peak_flops=1e12, memory_bandwidth=100e9, kind="cpu", memory_levels=levels,
                        sources=sources)  # fmt: skip
    assert spec.source_of("bandwidth[L2]") == "measured: L2 probe"
    assert spec.source_of("bandwidth[DRAM]") == spec.source_of("bandwidth[L9]") == "a table row"
    assert spec.measured("bandwidth[L2]") and not spec.measured("bandwidth[DRAM]")
    assert not spec.measured("peak_flops[float32]")
    calibrated = HardwareSpec("T", peak_flops=1e12, memory_bandwidth=100e9, kind="cpu", source="calibrated: matmul")
    assert calibrated.measured("peak_flops[float32]")
