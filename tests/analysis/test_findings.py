"""Findings name the operations and scopes that decide the numbers, not generic advice."""

import pytest

from neural_cost import (
    Coverage,
    HardwareSpec,
    LoopAssumption,
    Measurement,
    Operation,
    TensorSpec,
    Trace,
    analyze_gap,
    estimate_operations,
    estimate_trace,
)
from neural_cost.analysis.findings import FINDING_RULES, build_findings

CPU = Measurement((1e-3,) * 5, device="cpu0", device_kind="cpu")


def codes(report):
    return [f.code for f in report.findings]


def test_compute_bound_names_the_biggest_scope_and_a_faster_dtype():
    ops = [
        Operation("head", "matmul", ((128, 4096), (4096, 4672)), (128, 4672), scope="policy"),
        Operation("trunk", "matmul", ((128, 512), (512, 512)), (128, 512), scope="trunk"),
    ]
    spec = HardwareSpec("gpu0", 60e12, 1e15, kind="cpu", peak_flops_by_dtype={"float32": 60e12, "bfloat16": 240e12})
    report = analyze_gap(estimate_operations(ops), CPU, spec)
    message = report.finding("compute_bound").message
    # policy: 2·128·4096·4672 = 4,898,947,072; trunk: 2·128·512·512 = 67,108,864 → 98.6% and 1.4%
    assert "policy 98.6%, trunk 1.4% (of 2 scopes" in message
    assert "4.0× higher in bfloat16 than in float32" in message  # 240e12 / 60e12


def test_memory_bound_reports_fusion_headroom_against_the_floor():
    n = 1_000_000
    ops = [Operation(name, "elementwise", ((n,),), (n,), scope=name) for name in ("exp", "mul", "add")]
    boundary = [TensorSpec("x", (n,)), TensorSpec("y", (n,), role="output")]
    report = analyze_gap(estimate_operations(ops, boundary=boundary), CPU, HardwareSpec("c", 1e15, 1e11, kind="cpu"))
    message = report.finding("memory_bound").message
    # each op moves 8 MB of 24 MB; unfused 24 MB vs compulsory 8 MB → 3.0×
    assert "exp 33.3%, mul 33.3%, add 33.3% (of 3 scopes)" in message
    assert "Unfused traffic is 3.0× the compulsory floor" in message


def test_assumed_loop_and_unmodeled_ops_are_findings():
    op = Operation("body", "elementwise", ((8,),), (8,), count=8)
    trace = Trace(
        (op,),
        Coverage(total=12, modeled=8, free=1, unmodeled=(("sort", 3),), static_total=4, unit="equations"),
        loop_assumptions=(
            LoopAssumption("while_0", 8, "default", scope="search", location="search.py:41"),
            LoopAssumption("scan_0", 16, "static"),
        ),
    )
    report = analyze_gap(estimate_trace(trace), CPU, HardwareSpec("c", 1e12, 1e11))
    loop = report.finding("assumed_loop_count").message
    assert "Loop while_0 (search, search.py:41) was counted 8 times by default" in loop
    assert codes(report).count("assumed_loop_count") == 1  # the static scan is not an assumption
    assert "3 of 12 equations have no cost rule (sort x3)" in report.finding("unmodeled_ops").message
    assert (  # (8 + 1) / 12 = 75%; sort's size is not recorded, so the work share is unknown
        "coverage: operations 75.0% · work unknown (of 12 executed equations, 4 in the program: modeled 8, free 1, "
        "unmodeled 3: sort x3; the size of an unmodeled op was not recorded)"
    ) in report.render()


def test_coverage_threshold_is_configurable():
    trace = Trace((), Coverage(total=10, modeled=0, free=8, unmodeled=(("x", 2),)))
    estimate = estimate_trace(trace)
    spec = HardwareSpec("c", 1e12, 1e11)
    assert "low_coverage" in codes(analyze_gap(estimate, CPU, spec))  # (0 + 8) / 10 = 80% < the 90% default
    assert "low_coverage" not in codes(analyze_gap(estimate, CPU, spec, coverage_threshold=0.75))


def test_dispatch_overhead_is_named_for_many_tiny_ops():
    ops = [Operation(f"op{i}", "elementwise", ((4,),), (4,)) for i in range(100)]
    # bound = 100 × 32 B / 1e11 B/s = 32 ns; observed 1 ms → 10 µs per op, below the 20 µs dispatch threshold
    report = analyze_gap(estimate_operations(ops), CPU, HardwareSpec("c", 1e12, 1e11))
    assert "dispatch and launch overhead" in report.finding("large_gap").message


def test_dtype_fallback_and_executed_vs_dense_notes():
    attention = Operation(
        "sdpa",
        "attention",
        ((1, 8, 128, 64), (1, 2, 128, 64), (1, 2, 128, 64)),
        (1, 8, 128, 64),
        "bfloat16",
        attrs={"causal": True, "skips_masked": True},
    )
    spec = HardwareSpec("g", 1e12, 1e11, kind="gpu", peak_flops_by_dtype={"float32": 1e12})
    report = analyze_gap(estimate_operations([attention]), Measurement((1e-3,) * 5, device_kind="gpu"), spec)
    assert "g has no peak for bfloat16" in report.finding("dtype_peak_fallback").message
    # executed pairs 128·129/2 = 8,256; dense 128² = 16,384; FLOPs = 8 heads·(pairs·(2·(64+64) matmul
    # + 1 scale + 5 softmax) − 2 per query row) = 8·(8,256·262 − 256) = 17,302,528; dense: matmuls only
    assert report.estimate.flops == 8 * (8_256 * 262 - 2 * 128) == 17_302_528
    assert report.estimate.dense_flops == 2 * 8 * 16_384 * 128
    assert "executed_vs_dense" in codes(report)


def test_spread_and_few_runs():
    spec = HardwareSpec("c", 1e12, 1e11)
    estimate = estimate_operations([Operation("a", "elementwise", ((4,),), (4,))])
    noisy = Measurement((1e-3, 2e-3, 1e-3, 3e-3, 1e-3))
    assert "high_spread" in codes(analyze_gap(estimate, noisy, spec))
    assert "few_runs" in codes(analyze_gap(estimate, Measurement((1e-3,)), spec))


def test_group_by_scope_sums_each_scope():
    ops = [
        Operation("fc", "linear", ((32, 768), (768, 1000)), (32, 1000), scope="classifier"),
        Operation("bias", "elementwise", ((32, 1000), (1000,)), (32, 1000), scope="classifier"),
        Operation("relu", "elementwise", ((32, 1000),), (32, 1000), scope="act"),
    ]
    report = analyze_gap(estimate_operations(ops), CPU, HardwareSpec("c", 1e12, 1e11))
    classifier = next(r for r in report.scope_rows if r.name == "classifier")
    assert classifier.flops == 2 * 32 * 768 * 1000 + 32 * 1000  # linear + bias add = 49,184,000
    # linear reads 4·(32·768 + 768·1000) and writes 4·32·1000; the bias add reads 4·(32·1000 + 1000), writes 4·32·1000
    assert classifier.bytes == 4 * (32 * 768 + 768 * 1000) + 4 * 32_000 + 4 * (32_000 + 1000) + 4 * 32_000
    text = report.render(group_by_scope=True, top=1)
    assert "top 1 of 2 scopes by share of bound:" in text and "classifier  mixed" in text


@pytest.mark.parametrize("top", [0, 1, 3])
def test_top_limits_the_table(top):
    ops = [Operation(f"op{i}", "elementwise", ((4 * (i + 1),),), (4 * (i + 1),)) for i in range(3)]
    text = analyze_gap(estimate_operations(ops), CPU, HardwareSpec("c", 1e12, 1e11)).render(top=top)
    assert ("by share of bound" in text) == (top > 0)
    assert text.count("elementwise") == top


def test_a_single_peak_spec_says_it_scores_every_dtype_at_one_rate():
    ops = [
        Operation("mm", "matmul", ((4, 4), (4, 4)), (4, 4), "bfloat16"),
        Operation("bits", "rng", (), (64,), "uint32", attrs={"generator": "philox4x32-10"}),
    ]
    report = analyze_gap(estimate_operations(ops), CPU, HardwareSpec("M3 Pro", 7.4e12, 150e9))
    assert "M3 Pro has one peak (7.40 TFLOP/s) for every dtype: the bfloat16, uint32 FLOPs" in (
        report.finding("single_peak").message
    )


def test_a_select_charges_its_flops_to_the_values_not_the_predicate():
    op = Operation(
        "where", "elementwise", ((8,), (8,), (8,)), (8,), "float32", input_dtypes=("bool", "float32", "float32")
    )
    assert op.cost.flops_by_dtype == {"float32": 8}  # 1 per element, on the float32 values


def test_a_fill_with_no_inputs_does_no_arithmetic_by_default():
    assert Operation("zeros", "elementwise", (), (3, 4)).cost.flops == 0  # it only writes 3·4·4 = 48 bytes


def test_one_registered_rule_per_code_in_report_order():
    # The report prints findings in registration order: header warnings first, then the other
    # warnings, the notes on peaks and counts, the advice, and the notes on timing.
    # (issue 15 adds low_time_coverage, a header warning like low_coverage, printed right after it;
    # issue 17 above_expected and page_faults, advice after large_gap)
    assert list(FINDING_RULES) == [
        "low_coverage",
        "low_time_coverage",
        "device_mismatch",
        "efficiency_above_100",
        "unmodeled_ops",
        "assumed_loop_count",
        "dtype_peak_fallback",
        "single_peak",
        "executed_vs_dense",
        "compiled_work",
        "memory_bound",
        "compute_bound",
        "large_gap",
        "above_expected",
        "page_faults",
        "first_touch",
        "few_runs",
        "high_spread",
    ]
    assert [code for code, entry in FINDING_RULES.items() if entry.header] == [
        "low_coverage",
        "low_time_coverage",
        "device_mismatch",
    ]


def test_findings_come_in_rule_order_with_each_rules_severity():
    # 12 operations, 8 modeled: 66.6% < 90% (low_coverage); ran on a cpu, scored on a gpu (device_mismatch);
    # one assumed loop; 4 runs × (32 B read + 32 B written) = 256 B at 1e11 B/s = 2.56 ns bound, memory-side
    # (32 FLOPs / 1e12 = 32 ps), vs 1 ms observed (large_gap); one timed run (few_runs).
    op = Operation("body", "elementwise", ((8,),), (8,), count=4)
    trace = Trace(
        (op,),
        Coverage(total=12, modeled=8, unmodeled=(("sort", 4),)),
        loop_assumptions=(LoopAssumption("while_0", 4, "default"),),
    )
    spec = HardwareSpec("g", 1e12, 1e11, kind="gpu")
    report = analyze_gap(estimate_trace(trace), Measurement((1e-3,), device_kind="cpu"), spec)
    assert report.bound_seconds == report.memory_seconds == 256 / 1e11
    assert [(f.code, f.severity, f.header) for f in report.findings] == [
        ("low_coverage", "warning", True),
        ("device_mismatch", "warning", True),
        ("unmodeled_ops", "warning", False),
        ("assumed_loop_count", "warning", False),
        ("memory_bound", "next", False),
        ("large_gap", "next", False),
        ("few_runs", "note", False),
    ]
    assert build_findings(report) == report.findings


def _matmul_program():
    # (64, 64) @ (64, 64) float32: 2·64·64·64 = 524,288 FLOPs; reads 4·(4,096 + 4,096) = 32,768 B,
    # writes 4·4,096 = 16,384 B → 49,152 B unfused, and the same 49,152 B compulsory (x, w, y once).
    op = Operation("mm", "matmul", ((64, 64), (64, 64)), (64, 64), scope="mm")
    boundary = [
        TensorSpec("x", (64, 64)),
        TensorSpec("w", (64, 64), role="parameter"),
        TensorSpec("y", (64, 64), role="output"),
    ]
    return estimate_operations([op], boundary=boundary)


def test_compute_bound_above_100_is_not_explained_by_fusion():
    # Was (efficiency_above_100): whenever the observed time was above the compulsory *memory* floor
    # the finding said "a compiler that fused operations ... can explain it". Fusion removes memory
    # traffic, never FLOPs: beating the compute time means the peak or the count is wrong. Compute
    # 524,288 / 1e9 = 524.3 µs; memory and floor 49,152 / 1e12 = 49.2 ns; observed 100 µs is above
    # the floor but 5.2× faster than the compute time.
    estimate = _matmul_program()
    spec = HardwareSpec("slow", 1e9, 1e12, kind="cpu")
    report = analyze_gap(estimate, Measurement((100e-6,) * 5, device_kind="cpu"), spec)
    assert report.bound_side == "compute" and report.compute_seconds == 524_288 / 1e9
    assert report.efficiency == pytest.approx(524_288 / 1e9 / 100e-6)  # 5.24
    message = report.finding("efficiency_above_100").message
    assert "fuse" not in message
    assert "the peak or the FLOP count: observed is below the compute time alone (524.3 µs" in message
    assert "the peak: float32 is scored at 1.00 GFLOP/s (user-supplied), not a measured rate" in message


def test_memory_bound_above_100_but_below_compute_time_is_not_explained_by_fusion():
    # Was (same rule): memory-bound program, observed between the compulsory floor and the compute
    # time. x → a → b → y, 1,000,000 float32 elements, 5 FLOPs per element per op:
    # unfused 3 × 8 MB = 24 MB → 240 µs at 1e11 B/s; compulsory x + y = 8 MB → 80 µs;
    # compute 3 × 5e6 = 15e6 FLOPs / 1e11 = 150 µs. Observed 100 µs beats the compute time, which no
    # fusion can reduce.
    n = 1_000_000
    ops = [Operation(name, "elementwise", ((n,),), (n,), attrs={"flops_per_element": 5}) for name in "abc"]
    estimate = estimate_operations(ops, boundary=[TensorSpec("x", (n,)), TensorSpec("y", (n,), role="output")])
    spec = HardwareSpec("cpu", 1e11, 1e11, kind="cpu")
    report = analyze_gap(estimate, Measurement((100e-6,) * 5, device_kind="cpu"), spec)
    assert report.memory_seconds == 24_000_000 / 1e11 and report.compute_seconds == 15_000_000 / 1e11
    assert report.compulsory_seconds == 8_000_000 / 1e11
    message = report.finding("efficiency_above_100").message
    assert "fuse" not in message and "observed is below the compute time alone (150.0 µs" in message


def test_precision_advice_knows_tfloat32_is_a_floating_point_dtype():
    # Was (compute_bound, _precision_advice): faster dtypes were filtered by the prefix
    # "float"/"bfloat", so a spec listing TF32 (the tensor-core path for float32 matmuls) got the false
    # statement "lists no faster floating-point dtype than float32". 480e12 / 60e12 = 8.0×.
    spec = HardwareSpec("gpu", 60e12, 1e18, kind="gpu", peak_flops_by_dtype={"float32": 60e12, "tfloat32": 480e12})
    report = analyze_gap(_matmul_program(), Measurement((1e-3,) * 5, device_kind="gpu"), spec)
    message = report.finding("compute_bound").message
    assert "lists no faster" not in message
    assert "8.0× higher in tfloat32 than in float32" in message


def test_memory_bound_advice_does_not_promise_fusion_headroom_at_the_floor():
    # Was (memory_bound): any unfused traffic above the compulsory floor, by however little, printed
    # "Unfused traffic is 1.0× the compulsory floor: fusing ... is the headroom". Here unfused
    # 49,152 + 8 B (a 1-element elementwise op) vs compulsory 49,152 B: 49,160 / 49,152 = 1.0002×,
    # nothing to gain from fusing.
    estimate = _matmul_program()
    tiny = Operation("tiny", "elementwise", ((1,),), (1,), scope="tiny")  # reads 4 B, writes 4 B
    estimate = estimate_operations([*estimate.operations, tiny], boundary=estimate.boundary)
    assert (estimate.bytes, estimate.compulsory_bytes) == (49_160, 49_152)
    spec = HardwareSpec("c", 1e15, 1e9, kind="cpu")
    report = analyze_gap(estimate, Measurement((1e-3,) * 5, device_kind="cpu"), spec)
    message = report.finding("memory_bound").message
    assert "headroom" not in message and "1.0×" not in message


def test_a_profile_adds_the_time_warning_after_low_coverage_and_changes_the_gap_advice():
    # tests/report/profiled.py: operations 3/4 = 75% and time 277/300 = 92.3%, both below a 0.95 threshold;
    # observed 400 µs against a 156.36 µs bound (39.1%: large_gap); 5 runs of 400 µs (no spread, not few)
    from tests.report.profiled import profiled_report

    report = profiled_report(threshold=0.95)
    assert [(f.code, f.severity, f.header) for f in report.findings] == [
        ("low_coverage", "warning", True),
        ("low_time_coverage", "warning", True),
        ("unmodeled_ops", "warning", False),
        ("memory_bound", "next", False),
        ("large_gap", "next", False),
    ]
    assert "big.2 250.0 µs against a bound of 125.8 µs (2.0×)" in report.finding("large_gap").message
    plain = profiled_report(None, threshold=0.95)
    assert "low_time_coverage" not in [f.code for f in plain.findings]
