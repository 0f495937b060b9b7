"""The command line: the bundled example end to end, JSON output, and clear errors."""

import json
import subprocess
import sys

import pytest

from neural_cost.cli.main import main
from neural_cost.cli.output import write_json_atomic


def test_example_prints_the_full_report_and_writes_json(tmp_path, capsys):
    out = tmp_path / "nested" / "report.json"
    code = main(
        [
            "example",
            "--framework",
            "numpy",
            "--batch",
            "8",
            "--warmup",
            "1",
            "--repeats",
            "3",
            "--peak-flops",
            "1e11",
            "--memory-bandwidth",
            "1e10",
            "--json",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0
    assert text.startswith(
        "Neural cost gap analysis\n  coverage: operations 100.0% · work 100.0% (of 5 operations: modeled 5, free 0)\n"
    )
    assert "inputs: x (8, 1024) · batch 8" in text and "timed runs: 3 after 1 warmup" in text
    data = json.loads(out.read_text())
    # fc1 2·8·1024·4096 + fc2 2·8·4096·1024 + bias1 8·4096 + relu 8·4096 + bias2 8·1024
    assert data["estimate"]["flops"] == 2 * 2 * 8 * 1024 * 4096 + 2 * 8 * 4096 + 8 * 1024
    assert data["hardware"]["peak_flops"] == 1e11 and data["measurement"]["runs"] == 3


def test_example_with_the_detected_host_spec(capsys):
    assert main(["example", "--batch", "4", "--warmup", "0", "--repeats", "2", "--group-by-scope"]) == 0
    text = capsys.readouterr().out
    assert "(cpu): float32 " in text and "(formula: " in text and "top 2 of 2 scopes" in text


def test_bad_input_is_a_clear_error_not_a_traceback(capsys):
    # refused by argparse before anything runs (issue 12 item 5), no longer by benchmark() afterwards
    with pytest.raises(SystemExit) as exit_info:
        main(["example", "--repeats", "0", "--peak-flops", "1e11", "--memory-bandwidth", "1e10"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == "neural-cost example: error: argument --repeats: 0 must be an integer >= 1\n"


def test_negative_peak_is_rejected(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["example", "--batch", "2", "--repeats", "1", "--peak-flops", "-5", "--memory-bandwidth", "1e10"])
    assert exit_info.value.code == 2
    assert (
        capsys.readouterr().err
        == "neural-cost example: error: argument --peak-flops: -5 must be a positive number of FLOP/s\n"
    )


def test_kinds_lists_every_rule(capsys):
    from neural_cost import known_kinds

    assert main(["kinds"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == sorted(known_kinds())


def test_console_script_entry_point():
    result = subprocess.run([sys.executable, "-m", "neural_cost.cli.main", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("neural-cost ")


def test_json_is_written_atomically(tmp_path):
    target = tmp_path / "r.json"
    write_json_atomic(target, {"a": 1})
    with pytest.raises(ValueError):
        write_json_atomic(target, {"a": float("nan")})  # not valid JSON: the old file stays whole
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary file left behind


def test_example_through_the_jax_adapter(capsys):
    pytest.importorskip("jax")
    assert main(["example", "--framework", "jax", "--batch", "4", "--warmup", "1", "--repeats", "2"]) == 0
    text = capsys.readouterr().out
    # 9 equations: 2 dot_generals, 2 bias adds, the relu composite (since issue 11 a wrapper of it and
    # its max both count as modeled) = 6 modeled; 2 bias broadcasts and 1 call wrapper free. (Issue 15: the
    # example is profiled by default; every kernel runs modeled records, so all its kernel time is modeled.)
    assert "coverage: operations 100.0% · work 100.0% · time 100.0% (of 9 equations: modeled 6, free 3)" in text
    assert "sync: block_until_ready · compile " in text and "cross-check: XLA cost_analysis reports" in text
    assert "layer1/dot_general" in text
    assert (
        main(["example", "--framework", "jax", "--batch", "4", "--warmup", "1", "--repeats", "2", "--no-profile"]) == 0
    )
    assert "coverage: operations 100.0% · work 100.0% (of 9 equations" in capsys.readouterr().out


def test_hardware_command_prints_sources_and_ridge_points(capsys, tmp_path):
    out = tmp_path / "hw.json"
    assert main(["hardware", "--calibrate", "--size", "64", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ridge (FLOP/B)" in text and "formula:" in text and "calibration on cpu (numpy):" in text
    data = json.loads(out.read_text())
    assert data["spec"]["kind"] == "cpu" and data["calibration"]["matmuls"][0]["size"] == 64


def test_hardware_command_names_unavailable_devices(capsys):
    assert main(["hardware", "--device", "cuda:7"]) == 2
    assert "cuda:7 is not available" in capsys.readouterr().err
