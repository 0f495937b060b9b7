"""Review findings: each test exposes a defect where a number could lie or a user be misled.

Every test names the defect it guards in a comment; the expected numbers are derived by
hand beside the assertions.
"""

from __future__ import annotations

import json

import pytest

from neural_cost import (
    Coverage,
    HardwareError,
    HardwareSpec,
    LoopAssumption,
    Measurement,
    MeasurementError,
    Operation,
    RecordError,
    ShapeError,
    TensorSpec,
    Trace,
    analyze_gap,
    benchmark,
    estimate_operations,
)
from neural_cost.cli.main import main

FIVE_RUNS = 5


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


# --- efficiency above 100% ---------------------------------------------------------------------


def test_compute_bound_above_100_is_not_explained_by_fusion():
    # DEFECT (analysis/findings.py, efficiency_above_100): whenever the observed time was above the
    # compulsory *memory* floor the finding said "a compiler that fused operations ... can explain it".
    # Fusion removes memory traffic, never FLOPs: beating the compute time means the peak or the count
    # is wrong. Compute 524,288 / 1e9 = 524.3 µs; memory and floor 49,152 / 1e12 = 49.2 ns; observed
    # 100 µs is above the floor but 5.2× faster than the compute time.
    estimate = _matmul_program()
    spec = HardwareSpec("slow", 1e9, 1e12, kind="cpu")
    report = analyze_gap(estimate, Measurement((100e-6,) * FIVE_RUNS, device_kind="cpu"), spec)
    assert report.bound_side == "compute" and report.compute_seconds == 524_288 / 1e9
    assert report.efficiency == pytest.approx(524_288 / 1e9 / 100e-6)  # 5.24
    message = report.finding("efficiency_above_100").message
    assert "fused" not in message
    assert "The peak or the count must be wrong" in message


def test_memory_bound_above_100_but_below_compute_time_is_not_explained_by_fusion():
    # DEFECT (same place): memory-bound program, observed between the compulsory floor and the compute
    # time. x → a → b → y, 1,000,000 float32 elements, 5 FLOPs per element per op:
    # unfused 3 × 8 MB = 24 MB → 240 µs at 1e11 B/s; compulsory x + y = 8 MB → 80 µs;
    # compute 3 × 5e6 = 15e6 FLOPs / 1e11 = 150 µs. Observed 100 µs beats the compute time, which no
    # fusion can reduce.
    n = 1_000_000
    ops = [Operation(name, "elementwise", ((n,),), (n,), attrs={"flops_per_element": 5}) for name in "abc"]
    estimate = estimate_operations(ops, boundary=[TensorSpec("x", (n,)), TensorSpec("y", (n,), role="output")])
    spec = HardwareSpec("cpu", 1e11, 1e11, kind="cpu")
    report = analyze_gap(estimate, Measurement((100e-6,) * FIVE_RUNS, device_kind="cpu"), spec)
    assert report.memory_seconds == 24_000_000 / 1e11 and report.compute_seconds == 15_000_000 / 1e11
    assert report.compulsory_seconds == 8_000_000 / 1e11
    message = report.finding("efficiency_above_100").message
    assert "fused" not in message and "The peak or the count must be wrong" in message


# --- compute-bound advice -----------------------------------------------------------------------


def test_precision_advice_knows_tfloat32_is_a_floating_point_dtype():
    # DEFECT (analysis/findings.py, _precision_advice): faster dtypes were filtered by the prefix
    # "float"/"bfloat", so a spec listing TF32 (the tensor-core path for float32 matmuls) got the false
    # statement "lists no faster floating-point dtype than float32". 480e12 / 60e12 = 8.0×.
    spec = HardwareSpec("gpu", 60e12, 1e18, kind="gpu", peak_flops_by_dtype={"float32": 60e12, "tfloat32": 480e12})
    report = analyze_gap(_matmul_program(), Measurement((1e-3,) * FIVE_RUNS, device_kind="gpu"), spec)
    message = report.finding("compute_bound").message
    assert "lists no faster" not in message
    assert "8.0× higher in tfloat32 than in float32" in message


def test_memory_bound_advice_does_not_promise_fusion_headroom_at_the_floor():
    # DEFECT (analysis/findings.py, memory_bound): any unfused traffic above the compulsory floor, by
    # however little, printed "Unfused traffic is 1.0× the compulsory floor: fusing ... is the
    # headroom". Here unfused 49,152 + 8 B (a 2-element elementwise op) vs compulsory 49,152 B:
    # 49,160 / 49,152 = 1.0002×, nothing to gain from fusing.
    estimate = _matmul_program()
    tiny = Operation("tiny", "elementwise", ((1,),), (1,), scope="tiny")  # reads 4 B, writes 4 B
    ops = [*estimate.operations, tiny]
    estimate = estimate_operations(ops, boundary=estimate.boundary)
    assert (estimate.bytes, estimate.compulsory_bytes) == (49_160, 49_152)
    spec = HardwareSpec("c", 1e15, 1e9, kind="cpu")
    report = analyze_gap(estimate, Measurement((1e-3,) * FIVE_RUNS, device_kind="cpu"), spec)
    message = report.finding("memory_bound").message
    assert "headroom" not in message and "1.0×" not in message


# --- observed time of zero --------------------------------------------------------------------


def test_zero_observed_time_is_a_clear_error_not_an_infinite_efficiency():
    # DEFECT (analysis/gap.py): a median of 0 s (a clock too coarse for the work) gave efficiency inf,
    # "roofline efficiency: inf%", and a to_dict() that is not valid JSON (Infinity), so the CLI's
    # strict writer would crash with a traceback.
    with pytest.raises(MeasurementError, match=r"median_seconds=0"):
        analyze_gap(_matmul_program(), Measurement((0.0,) * FIVE_RUNS), HardwareSpec("c", 1e12, 1e11))

    # One zero sample among others is a coarse clock, not an error: the median is 1 ms and every
    # figure in the report is finite, so the JSON is strict.
    report = analyze_gap(_matmul_program(), Measurement((1e-3, 0.0, 1e-3)), HardwareSpec("c", 1e12, 1e11))
    json.dumps(report.to_dict(), allow_nan=False)


# --- duplicate dtype spellings silently dropped numbers -------------------------------------------


def test_custom_flops_naming_one_dtype_twice_is_an_error():
    # DEFECT (costs/other.py, custom): {"fp16": 10, "float16": 5} canonicalised both keys to float16
    # and kept only the last value, silently dropping 10 FLOPs.
    with pytest.raises(RecordError, match=r"attrs\['flops'\] names float16 twice"):
        Operation("c", "custom", ((2,),), (2,), attrs={"flops": {"fp16": 10, "float16": 5}})


def test_peak_flops_by_dtype_naming_one_dtype_twice_is_an_error():
    # DEFECT (hardware/spec.py): {"bf16": 1e13, "bfloat16": 2e13} silently kept 2e13; which peak the
    # user meant is unknowable, so the spec must refuse it.
    with pytest.raises(HardwareError, match=r"names bfloat16 twice"):
        HardwareSpec("x", 1e12, 1e9, peak_flops_by_dtype={"bf16": 1e13, "bfloat16": 2e13})


# --- bad input: a neural_cost error naming the field, never a traceback from deep inside ---------


def test_huge_peak_is_a_hardware_error():
    # DEFECT (hardware/spec.py, _positive): float(10**400) raised OverflowError from inside.
    with pytest.raises(HardwareError, match=r"peak_flops=1000"):
        HardwareSpec("x", 10**400, 1e9)


def test_huge_sample_is_a_measurement_error():
    # DEFECT (measure/timing.py): math.isfinite(10**400) raised OverflowError from inside.
    with pytest.raises(MeasurementError, match=r"samples_seconds\[0\]=1000"):
        Measurement((10**400,))


def test_samples_that_are_not_a_sequence_are_a_measurement_error():
    # DEFECT (measure/timing.py): Measurement(None) raised TypeError "'NoneType' object is not iterable".
    with pytest.raises(MeasurementError, match=r"samples_seconds=None"):
        Measurement(None)  # type: ignore[arg-type]


def test_numpy_numbers_are_numbers():
    # DEFECT (hardware/spec.py, measure/timing.py): np.float32 seconds and np.int64 peaks were refused
    # with "must be a number", which they are.
    np = pytest.importorskip("numpy")
    assert Measurement((np.float32(0.5),)).median_seconds == 0.5  # 0.5 is exact in float32
    assert HardwareSpec("x", np.int64(10**12), np.float32(2.0**30)).peak_flops == 1e12


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"unmodeled": (("sort", True),)}, r"unmodeled count for 'sort'"),
        ({"static_total": True}, r"static_total=True"),
    ],
)
def test_coverage_counts_are_not_bools(kwargs, match):
    # DEFECT (core/records.py, Coverage): True was accepted as a count (total 2 = 1 modeled + True).
    total = 2 if "unmodeled" in kwargs else 1
    with pytest.raises(RecordError, match=match):
        Coverage(total=total, modeled=1, **kwargs)


def test_trace_boundary_and_loops_must_be_records():
    # DEFECT (core/records.py, Trace; costs/estimate.py): a boundary of ints or loop assumptions of
    # strings were accepted and crashed later with AttributeError deep in the estimate or findings.
    with pytest.raises(RecordError, match=r"Trace.boundary\[0\] is a int, not a TensorSpec"):
        Trace((), Coverage(0, 0), boundary=[1])
    with pytest.raises(RecordError, match=r"Trace.loop_assumptions\[0\] is a str, not a LoopAssumption"):
        Trace((), Coverage(0, 0), loop_assumptions=["while_0"])
    with pytest.raises(RecordError, match=r"boundary\[0\] is a int, not a TensorSpec"):
        estimate_operations([], boundary=[1])
    with pytest.raises(RecordError, match=r"loop_assumptions\[0\] is a str, not a LoopAssumption"):
        estimate_operations([], loop_assumptions=["while_0"])
    with pytest.raises(RecordError, match=r"operations=5 is not a sequence of Operation records"):
        estimate_operations(5)  # type: ignore[arg-type]
    assert Trace((), Coverage(0, 0), loop_assumptions=[LoopAssumption("l", 2, "explicit")]).loop_assumptions


def test_attention_mask_must_broadcast_to_the_scores():
    # DEFECT (costs/linalg.py, attention): a mask of any shape was accepted and its bytes added to the
    # traffic; (99, 99) for scores (1, 1, 4, 4) inflated reads by 4·99·99 = 39,204 B.
    q = (1, 1, 4, 2)
    with pytest.raises(ShapeError, match=r"mask \(99, 99\) does not broadcast to the scores \(1, 1, 4, 4\)"):
        Operation("a", "attention", (q, q, q, (99, 99)), q)
    ok = Operation("a", "attention", (q, q, q, (4, 4)), q, input_dtypes=("float32",) * 3 + ("bool",))
    assert ok.cost.read_bytes == 3 * 4 * 8 + 16  # q, k, v 32 B each + a 16-element bool mask


# --- the rendered coverage never rounds up to look complete ------------------------------------


def test_coverage_percent_is_rounded_down():
    # DEFECT (report/text.py, analysis/findings.py): 9,999 of 10,000 modeled printed "100.0%", and
    # 89,996 of 100,000 printed "WARNING: only 90.0%" under a 90% threshold. Shown rounded down:
    # 99.99% → 99.9%, 89.996% → 89.9%.
    op = Operation("a", "elementwise", ((4,),), (4,), count=9_999)
    spec = HardwareSpec("c", 1e12, 1e11)
    run = Measurement((1e-3,) * FIVE_RUNS)
    coverage = Coverage(total=10_000, modeled=9_999, unmodeled=(("foo", 1),))
    report = analyze_gap(estimate_operations([op], coverage=coverage), run, spec)
    assert "coverage: 99.9% of 10,000 operations modeled" in report.render()
    op = Operation("a", "elementwise", ((4,),), (4,), count=89_996)
    coverage = Coverage(total=100_000, modeled=89_996, unmodeled=(("foo", 10_004),))
    text = analyze_gap(estimate_operations([op], coverage=coverage), run, spec).render()
    assert "coverage: 89.9% of 100,000 operations modeled" in text
    assert "WARNING: Low coverage: only 89.9% of the traced operations" in text


# --- timing label -----------------------------------------------------------------------------


def test_sync_label_does_not_claim_nothing_was_needed_when_nothing_was_seen():
    # DEFECT (measure/timing.py, auto_sync): a result with no arrays (None from an in-place GPU op)
    # was labelled "none needed", though nothing was checked; the report then vouched for a timing
    # that may have measured only kernel launches.
    m = benchmark(lambda: None, warmup=0, repeats=1)
    assert m.sync != "none needed" and "no arrays" in m.sync


# --- the CLI: odd flags give a clear error, not a traceback ------------------------------------


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--batch", "-1"], "--batch"),
        (["--batch", "0"], "--batch"),
        (["--top", "-3"], "--top"),
    ],
)
def test_cli_rejects_bad_sizes(flags, match, capsys):
    # DEFECT (cli): --batch -1 crashed inside numpy with a traceback; --batch 0 printed a report of an
    # empty computation at 12,735% efficiency; --top -3 silently dropped the table.
    with pytest.raises(SystemExit) as exit_info:
        main(["example", *flags, "--repeats", "1", "--peak-flops", "1e11", "--memory-bandwidth", "1e10"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err


def test_cli_unwritable_json_path_is_a_clear_error(tmp_path, capsys):
    # DEFECT (cli/example.py): --json into a missing directory of an unwritable tree, or onto a
    # directory, raised OSError with a traceback naming a temporary file.
    blocked = tmp_path / "file"
    blocked.write_text("x")
    for target in (blocked / "report.json", tmp_path):
        code = main(
            [
                *("example", "--batch", "2", "--warmup", "0", "--repeats", "1"),
                *("--peak-flops", "1e11", "--memory-bandwidth", "1e10", "--json", str(target)),
            ]
        )
        err = capsys.readouterr().err
        assert code == 2
        assert err.startswith(f"neural-cost: error: --json {target}: cannot write the report")


def test_an_assumed_device_is_shown_as_an_assumption():
    # DEFECT (measure/timing.py, report/text.py): a function called with no array arguments (a closure
    # over device arrays, a jitted function taking none) was recorded as "ran on <host CPU> (cpu)" with
    # the assumption hidden in device_source, which the report never printed; against a GPU spec it
    # then asserted a Device mismatch as fact.
    m = benchmark(lambda: None, warmup=0, repeats=FIVE_RUNS)
    assert m.device_kind == "cpu" and m.device_source.startswith("assumed")
    gpu = HardwareSpec("H100", 67e12, 3.35e12, kind="gpu")
    text = analyze_gap(_matmul_program(), Measurement((1e-3,) * FIVE_RUNS, "host", "cpu", m.device_source), gpu)
    rendered = text.render()
    assert "device: ran on host (cpu) [assumed: no array arguments" in rendered
    assert "Device mismatch: the work ran on a cpu (host, assumed: nothing said where it ran)" in rendered


def test_device_is_read_from_the_result_when_no_argument_is_an_array():
    # DEFECT (measure/timing.py, benchmark): the device was inferred from the arguments only; a closure
    # returning GPU arrays was recorded as run on the host CPU.
    class Device:
        type = "cuda"
        index = 0

    class Tensor:
        shape = (2,)
        device = Device()

    m = benchmark(lambda: Tensor(), warmup=0, repeats=1, sync=None)
    assert (m.device, m.device_kind) == ("cuda:0", "gpu")
    assert m.device_source == "the result: tensor on cuda:0"
