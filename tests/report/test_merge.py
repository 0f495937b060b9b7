"""Merging the saved reports of a run's ranks, every figure derived by hand.

The seed program (tests/helpers.py): Linear(768→1000) at batch 32, float16 —
2·32·768·1000 = 49,152,000 FLOPs per rank. Observed times are medians of five equal samples,
so rank0 observed 40 µs and rank1 50 µs exactly.
"""

import json

import pytest

from neural_cost import Coverage, HardwareSpec, Operation, Trace, analyze_gap, estimate_operations, estimate_trace
from neural_cost.hardware.interconnect import Interconnect
from neural_cost.report.merge import MergeError, merge_files, merge_reports
from tests.helpers import M3_PRO, SEED_BOUNDARY, SEED_OP, cpu_measurement, seed_estimate

SEED_FLOPS = 49_152_000  # 2·32·768·1000


def rank(observed, estimate=None, spec=M3_PRO):
    return analyze_gap(estimate or seed_estimate(), cpu_measurement((observed,) * 5), spec)


def save(report, path):
    path.write_text(json.dumps(report.to_dict()))
    return str(path)


def with_ops(*ops):
    trace = Trace(ops, Coverage.full(ops), input_shapes=[("x", (32, 768))], boundary=SEED_BOUNDARY, framework="custom")
    return estimate_trace(trace)


def test_slowest_rank_imbalance_and_totals():
    merged = merge_reports([rank(40e-6), rank(50e-6)])
    assert merged.slowest.name == "rank1" and merged.fastest.name == "rank0"
    assert merged.step_seconds == 50e-6  # the slowest rank's observed time
    assert merged.imbalance == pytest.approx(0.25, rel=1e-12)  # (50 - 40) / 40
    assert merged.total_flops == 2 * SEED_FLOPS == 98_304_000
    rows = merged.to_dict()["ranks"]
    assert [r["observed_seconds"] for r in rows] == [40e-6, 50e-6]
    assert [r["flops"] for r in rows] == [SEED_FLOPS, SEED_FLOPS]
    # no collective: no communication time, nothing on the wire
    assert [(r["communication_seconds"], r["wire_bytes"]) for r in rows] == [(None, 0), (None, 0)]
    # the bound is a property of program and spec, so equal on both; efficiency = bound / observed
    assert rows[0]["bound_seconds"] == rows[1]["bound_seconds"] == rank(40e-6).bound_seconds
    assert rows[1]["efficiency"] == pytest.approx(rows[1]["bound_seconds"] / 50e-6, rel=1e-12)
    text = merged.render()
    assert "step time 50.0 µs (the slowest rank, rank1)" in text
    assert "imbalance 25.0% (slowest 50.0 µs vs fastest rank0 40.0 µs)" in text
    assert "total over ranks: 98.3 MFLOP" in text  # 98,304,000 to three digits
    assert "rank1" in next(line for line in text.splitlines() if "← slowest" in line)


def test_three_ranks_named_and_saved(tmp_path):
    paths = [save(rank(t), tmp_path / f"r{i}.json") for i, t in enumerate((40e-6, 60e-6, 50e-6))]
    merged = merge_files(paths)
    assert [r.name for r in merged.ranks] == paths
    assert merged.slowest.name == paths[1]
    assert merged.imbalance == pytest.approx(0.5, rel=1e-12)  # (60 - 40) / 40
    assert merged.total_flops == 3 * SEED_FLOPS == 147_456_000
    assert merged.to_dict()["missing"] == []


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "cannot read"),  # the rank crashed before writing anything
        ("", "not JSON"),
        ('{"schema": "neural-cost', "not JSON"),  # killed while writing
        ("[]", "a report is a JSON object"),
    ],
)
def test_a_rank_without_a_readable_report_is_missing_and_the_rest_merge(tmp_path, content, reason):
    good = [save(rank(40e-6), tmp_path / "r0.json"), save(rank(50e-6), tmp_path / "r1.json")]
    bad = tmp_path / "r2.json"
    if content is not None:
        bad.write_text(content)
    merged = merge_files([*good, str(bad)])
    assert [r.name for r in merged.ranks] == good
    missing = merged.to_dict()["missing"]
    assert [m["name"] for m in missing] == [str(bad)] and missing[0]["reason"].startswith(reason)
    assert f"MISSING: {bad}" in merged.render() and "(2 ranks, 1 missing)" in merged.render()
    assert merged.total_flops == 2 * SEED_FLOPS


def test_no_readable_report_is_an_error(tmp_path):
    with pytest.raises(MergeError, match=r"no report to merge \(1 could not be read: '.*gone.json'\)"):
        merge_files([str(tmp_path / "gone.json")])
    with pytest.raises(MergeError, match="no report to merge"):
        merge_reports([])


def test_an_extra_operation_is_another_program():
    extra = Operation("extra", "linear", ((32, 1000), (1000, 10)), (32, 10), 2)
    with pytest.raises(MergeError) as error:
        merge_reports([rank(40e-6), rank(50e-6, with_ops(SEED_OP, extra))])
    message = str(error.value)
    assert "cannot merge rank1 with rank0: not the same program" in message
    assert "linear ×1 in rank0, ×2 in rank1" in message and "operations only in rank1: 'extra'" in message


def test_a_different_framework_is_another_program():
    other = estimate_operations([SEED_OP], input_shapes=[("x", (32, 768))])
    assert other.framework != "custom"
    with pytest.raises(MergeError, match="framework 'custom' in rank0"):
        merge_reports([rank(40e-6), rank(50e-6, other)])


def test_a_different_spec_is_refused_naming_the_number():
    slower = HardwareSpec("M3 Pro", peak_flops=7.4e12, memory_bandwidth=100e9)
    with pytest.raises(MergeError, match=r"different specs \(bandwidth 150 GB/s → 100 GB/s \(-33.3%\)\)"):
        merge_reports([rank(40e-6), rank(50e-6, spec=slower)])
    renamed = HardwareSpec("M4", peak_flops=7.4e12, memory_bandwidth=150e9)
    with pytest.raises(MergeError, match=r"device M3 Pro \(unknown\) → M4 \(unknown\)"):
        merge_reports([rank(40e-6), rank(50e-6, spec=renamed)])


def test_a_shard_with_other_flops_merges_with_a_note():
    # a tensor-parallel half: the same operation, N = 500 → 2·32·768·500 = 24,576,000 FLOPs
    half = Operation("classifier", "linear", ((32, 768), (768, 500)), (32, 500), 2)
    merged = merge_reports([rank(40e-6), rank(40e-6, with_ops(half))], names=["a", "b"])
    assert merged.total_flops == SEED_FLOPS + 24_576_000 == 73_728_000
    assert merged.imbalance == 0.0 and merged.slowest.name == "a"  # equal times: the first
    assert "ranks differ in FLOPs" in merged.notes[0]


def test_names_must_match_the_reports():
    with pytest.raises(MergeError, match="1 name for 2 reports"):
        merge_reports([rank(40e-6), rank(50e-6)], names=["a"])
    with pytest.raises(MergeError, match="given more than once: 'a'"):
        merge_reports([rank(40e-6), rank(50e-6)], names=["a", "a"])


def test_communication_per_rank():
    # tests/analysis/test_communication.py: a psum of 16,384 B over 8 devices on a 1 GB/s link
    # with 10 µs latency: wire 2·7/8·16,384 = 28,672 B, time 10 µs + 28,672 / 1e9 = 38.672 µs
    ops = (
        Operation("mm", "matmul", ((64, 64), (64, 64)), (64, 64), "float32"),
        Operation(
            "psum", "collective", ((64, 64),), (64, 64), "float32", attrs={"collective": "all_reduce", "group_size": 8}
        ),
    )
    spec = HardwareSpec("T", 1e12, 1e11, kind="cpu", interconnects=(Interconnect("ring", 1e9, 10e-6, "test"),))
    reports = [analyze_gap(estimate_operations(ops), cpu_measurement((t,) * 5), spec) for t in (50e-6, 55e-6)]
    merged = merge_reports(reports)
    assert [r.wire_bytes for r in merged.ranks] == [28_672, 28_672]
    assert merged.ranks[0].communication_seconds == pytest.approx(38.672e-6, rel=1e-12)
    assert merged.total_wire_bytes == 57_344  # 2 · 28,672
    assert "38.7 µs" in merged.render() and "57.3 kB on the wire" in merged.render()
