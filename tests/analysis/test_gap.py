"""analyze_gap on the seed's Linear(768→1000), float16, batch 32: every number by hand."""

import math

import pytest

from neural_cost import HardwareSpec, Measurement, Operation, RecordError, __version__, analyze_gap, estimate_operations
from tests.helpers import M3_PRO, SEED_OP, cpu_measurement, seed_estimate

FLOPS = 2 * 32 * 768 * 1000  # = 49,152,000
BYTES = 2 * (32 * 768 + 768 * 1000) + 2 * 32 * 1000  # read 1,585,152 + write 64,000 = 1,649,152


def test_bound_efficiency_and_rates():
    report = analyze_gap(seed_estimate(), cpu_measurement(), M3_PRO)
    assert report.estimate.flops == FLOPS == 49_152_000
    assert report.estimate.bytes == BYTES == 1_649_152
    assert report.compute_seconds == FLOPS / 7.4e12  # 6.642 µs
    assert report.memory_seconds == BYTES / 150e9  # 10.994 µs
    assert report.bound_seconds == report.memory_seconds and report.bound_side == "memory"
    assert report.observed_seconds == 40e-6  # median of 38, 40, 40, 42, 44 µs
    assert report.efficiency == pytest.approx((BYTES / 150e9) / 40e-6)  # 27.49%
    assert report.achieved_flops_per_second == pytest.approx(FLOPS / 40e-6)  # 1.2288 TFLOP/s
    assert report.achieved_bytes_per_second == pytest.approx(BYTES / 40e-6)  # 41.23 GB/s
    # compulsory: x 2·32·768 + weight 2·768·1000 + y 2·32·1000 = 1,649,152, equal to the unfused traffic
    assert report.estimate.compulsory_bytes == 1_649_152
    assert report.compulsory_seconds == 1_649_152 / 150e9


def test_per_dtype_peaks_charge_each_flop_to_its_dtype():
    ops = [
        Operation("a", "matmul", ((64, 64), (64, 64)), (64, 64), "bfloat16"),  # 2·64³ = 524,288 bf16 FLOPs
        Operation("b", "matmul", ((64, 64), (64, 64)), (64, 64), "float32"),  # 524,288 float32 FLOPs
    ]
    spec = HardwareSpec(
        "chip",
        peak_flops=1e12,
        memory_bandwidth=1e15,
        kind="gpu",
        peak_flops_by_dtype={"bfloat16": 4e12, "float32": 2e12},
    )
    report = analyze_gap(estimate_operations(ops), Measurement((1.0,), device_kind="gpu"), spec)
    assert report.compute_seconds == 524_288 / 4e12 + 524_288 / 2e12
    assert spec.ridge_point("bfloat16") == 4e12 / 1e15 and spec.ridge_point() == 1e12 / 1e15


def test_efficiency_above_100_percent_is_not_clamped():
    report = analyze_gap(seed_estimate(), cpu_measurement((5e-6, 5e-6, 5e-6)), M3_PRO)
    assert report.efficiency == pytest.approx((BYTES / 150e9) / 5e-6)  # 2.199, i.e. 219.9%
    assert report.efficiency > 2
    finding = report.finding("efficiency_above_100")
    # observed 5 µs < compulsory floor 1,649,152 B / 150e9 = 11.0 µs: only a cache or more bandwidth explains it
    assert finding is not None and "observed is below the compulsory floor (11.0 µs" in finding.message
    assert "classifier (100.0% of the bound, memory-bound, scored at main memory" in finding.message


def test_above_100_but_above_the_floor_points_at_fusion():
    # x → exp → mul → add on 1M float32 elements: unfused 3 × (4 MB read + 4 MB written) = 24 MB,
    # compulsory x + y = 8 MB. Observed between the floor (8 MB / 1e11 = 80 µs) and the bound (240 µs).
    from neural_cost import TensorSpec

    n = 1_000_000
    ops = [
        Operation(name, "elementwise", ((n,),), (n,), attrs={"transcendental": name == "exp"})
        for name in ("exp", "mul", "add")
    ]
    estimate = estimate_operations(ops, boundary=[TensorSpec("x", (n,)), TensorSpec("y", (n,), role="output")])
    spec = HardwareSpec("cpu", 1e15, 1e11, kind="cpu")
    report = analyze_gap(estimate, Measurement((100e-6,) * 5, device_kind="cpu"), spec)
    assert report.memory_seconds == 24_000_000 / 1e11 and report.compulsory_seconds == 8_000_000 / 1e11
    assert "a compiler that fuses them moves less" in report.finding("efficiency_above_100").message


def test_device_mismatch_needs_two_known_different_kinds():
    gpu = HardwareSpec("H100 SXM", 67e12, 3.35e12, kind="gpu")
    assert analyze_gap(seed_estimate(), cpu_measurement(), gpu).device_mismatch
    assert not analyze_gap(seed_estimate(), cpu_measurement(), M3_PRO).device_mismatch  # spec kind unknown
    cpu = HardwareSpec("Xeon", 3e12, 3e11, kind="cpu")
    assert not analyze_gap(seed_estimate(), cpu_measurement(), cpu).device_mismatch
    unknown_run = Measurement((1e-3,), device_kind="unknown")
    assert not analyze_gap(seed_estimate(), unknown_run, gpu).device_mismatch


def test_operations_argument_must_match_the_estimate():
    estimate = seed_estimate()
    assert analyze_gap(estimate, cpu_measurement(), M3_PRO, operations=[SEED_OP]).bound_seconds > 0
    other = Operation("other", "matmul", ((2, 2), (2, 2)), (2, 2))
    with pytest.raises(RecordError, match="not the 1 the estimate was made from"):
        analyze_gap(estimate, cpu_measurement(), M3_PRO, operations=[other])


def test_row_share_is_own_bound_over_program_bound():
    ops = [
        Operation("big", "elementwise", ((1000,),), (1000,)),  # 8,000 bytes
        Operation("small", "elementwise", ((250,),), (250,)),  # 2,000 bytes
    ]
    spec = HardwareSpec("chip", 1e15, 1e9)
    report = analyze_gap(estimate_operations(ops), Measurement((1.0,)), spec)
    assert [r.name for r in report.operation_rows] == ["big", "small"]
    assert [r.share for r in report.operation_rows] == pytest.approx([8000 / 10000, 2000 / 10000], rel=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"peak_flops": 0, "memory_bandwidth": 1e9}, "peak_flops=0 must be a positive"),
        ({"peak_flops": -1.0, "memory_bandwidth": 1e9}, "peak_flops=-1.0"),
        ({"peak_flops": 1e12, "memory_bandwidth": math.inf}, "memory_bandwidth=inf"),
        ({"peak_flops": 1e12, "memory_bandwidth": 1e9, "kind": "cuda"}, "kind='cuda'"),
        (
            {"peak_flops": 1e12, "memory_bandwidth": 1e9, "peak_flops_by_dtype": {"bfloat16": 0}},
            r"peak_flops_by_dtype\['bfloat16'\]=0",
        ),
        ({"peak_flops": 1e12, "memory_bandwidth": 1e9, "peak_flops_by_dtype": {"float13": 1e12}}, "float13"),
    ],
)
def test_bad_hardware_specs(kwargs, match):
    from neural_cost import NeuralCostError

    with pytest.raises(NeuralCostError, match=match):  # HardwareError, or DTypeError for a dtype name
        HardwareSpec("chip", **kwargs)


def test_seed_hardware_form_keeps_working():
    spec = HardwareSpec("M3 Pro", peak_flops=7.4e12, memory_bandwidth=150e9)
    assert spec.kind == "unknown" and spec.peak("bfloat16") == 7.4e12 and spec.ridge_point() == 7.4e12 / 150e9


def test_report_to_dict_is_json_with_schema_and_provenance():
    import json

    data = json.loads(json.dumps(analyze_gap(seed_estimate(), cpu_measurement(), M3_PRO).to_dict()))
    assert data["schema"] == "neural-cost/report" and data["schema_version"] == 2
    assert {"versions", "threads", "date", "platform"} <= set(data["provenance"])
    assert data["estimate"]["flops"] == FLOPS and data["analysis"]["bound_side"] == "memory"
    assert data["measurement"]["samples_seconds"] == [40e-6, 44e-6, 40e-6, 42e-6, 38e-6]
    assert data["provenance"]["versions"]["neural_cost"] == __version__  # read from _version, not the root


def test_zero_observed_time_is_a_clear_error_not_an_infinite_efficiency():
    # Was: a median of 0 s (a clock too coarse for the work) gave efficiency inf, "roofline
    # efficiency: inf%", and a to_dict() that is not valid JSON (Infinity), so the CLI's strict
    # writer crashed with a traceback.
    import json

    from neural_cost import MeasurementError

    with pytest.raises(MeasurementError, match=r"median_seconds=0"):
        analyze_gap(seed_estimate(), Measurement((0.0,) * 5), HardwareSpec("c", 1e12, 1e11))

    # One zero sample among others is a coarse clock, not an error: the median is 1 ms and every
    # figure in the report is finite, so the JSON is strict.
    report = analyze_gap(seed_estimate(), Measurement((1e-3, 0.0, 1e-3)), HardwareSpec("c", 1e12, 1e11))
    assert report.observed_seconds == 1e-3
    json.dumps(report.to_dict(), allow_nan=False)
