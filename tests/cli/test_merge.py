"""``neural-cost merge``: exit 0 with the table (and a warning for missing ranks), 2 on refusal."""

import json

from neural_cost import HardwareSpec, analyze_gap
from neural_cost.cli.main import main
from tests.helpers import M3_PRO, cpu_measurement, seed_estimate


def save(path, observed, spec=M3_PRO):
    report = analyze_gap(seed_estimate(), cpu_measurement((observed,) * 5), spec)
    path.write_text(json.dumps(report.to_dict()))
    return str(path)


def test_merge_prints_the_slowest_rank_and_imbalance(tmp_path, capsys):
    r0, r1 = save(tmp_path / "rank0.json", 40e-6), save(tmp_path / "rank1.json", 50e-6)
    assert main(["merge", r0, r1]) == 0
    out, err = capsys.readouterr()
    assert "Neural cost merge (2 ranks)" in out
    assert f"step time 50.0 µs (the slowest rank, {r1})" in out
    assert "imbalance 25.0%" in out  # (50 - 40) / 40
    assert "total over ranks: 98.3 MFLOP" in out  # 2 · 49,152,000
    assert err == ""


def test_a_missing_rank_warns_and_still_exits_0(tmp_path, capsys):
    r0, r1 = save(tmp_path / "rank0.json", 40e-6), save(tmp_path / "rank1.json", 50e-6)
    half = tmp_path / "rank2.json"
    half.write_text('{"schema": "neural-cost-report", "sche')  # a rank killed while writing
    assert main(["merge", r0, r1, str(half)]) == 0
    out, err = capsys.readouterr()
    assert f"MISSING: {half}" in out and "(2 ranks, 1 missing)" in out
    assert "warning: 1 of 3 reports could not be read" in err and str(half) in err


def test_different_specs_exit_2_naming_the_difference(tmp_path, capsys):
    r0 = save(tmp_path / "rank0.json", 40e-6)
    r1 = save(tmp_path / "rank1.json", 50e-6, HardwareSpec("M3 Pro", peak_flops=3.7e12, memory_bandwidth=150e9))
    assert main(["merge", r0, r1]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "different specs" in err and "peak_flops (fallback) 7.40 TFLOP/s → 3.70 TFLOP/s" in err


def test_no_readable_report_and_repeated_files_exit_2(tmp_path, capsys):
    assert main(["merge", str(tmp_path / "none.json")]) == 2
    assert "no report to merge" in capsys.readouterr().err
    r0 = save(tmp_path / "rank0.json", 40e-6)
    assert main(["merge", r0, r0]) == 2
    assert "given more than once" in capsys.readouterr().err
