"""`--profile/--no-profile`, `--profile-runs`, `--min-time-coverage` and `--trace-out`.

The gates and the trace are driven with the hand-built profiled report of ``tests/report/profiled.py``
in place of ``analyze_workload`` (its time coverage is 277 / 300 µs = 92.3%, sort 7.7% of the kernel
time; operations 3/4 = 75.0%, work ≤ 99.9%); one test runs a real JAX workload with its profiler."""

import json

import pytest

from neural_cost.analysis import workload
from neural_cost.cli.main import main
from tests.cli.test_analyze import FAST, JAX_SCRIPT, script
from tests.report.profiled import profiled_report

NO_PROFILER = "no measured time per kernel: X has no profiler"


@pytest.fixture
def analyzed(monkeypatch):
    """Replace analyze_workload by one returning ``analyzed.report``; the keywords it got are in ``analyzed.calls``."""

    class Fake:
        def __init__(self):
            self.report = profiled_report()
            self.calls = []

        def __call__(self, *args, **kwargs):
            self.calls.append(kwargs)
            return self.report

    fake = Fake()
    monkeypatch.setattr(workload, "analyze_workload", fake)
    return fake


@pytest.mark.parametrize("flag", [["--trace-out", "t.json"], ["--min-time-coverage", "0.5"]])
def test_what_needs_a_profile_cannot_go_with_no_profile(flag, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["analyze", "work.py:build", "--no-profile", *flag])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {flag[0]} needs the profiled pass that --no-profile turns off" in err


def test_profile_flags_reach_analyze_workload(tmp_path, analyzed):
    pytest.importorskip("jax")  # the script's arrays tell the framework; the timing is real
    target = script(tmp_path, JAX_SCRIPT)
    assert main(["analyze", target, *FAST]) == 0
    assert main(["analyze", target, *FAST, "--no-profile"]) == 0
    assert main(["analyze", target, *FAST, "--profile-runs", "5"]) == 0
    assert [(c["profile"], c["profile_runs"]) for c in analyzed.calls] == [(True, 3), (False, 3), (True, 5)]
    with pytest.raises(SystemExit):
        main(["analyze", target, "--profile-runs", "0"])


def test_min_time_coverage_is_a_ci_gate(tmp_path, capsys, analyzed):
    pytest.importorskip("jax")
    target = script(tmp_path, JAX_SCRIPT)
    assert main(["analyze", target, *FAST, "--min-time-coverage", "0.9"]) == 0  # 92.3% ≥ 90%
    capsys.readouterr()
    assert main(["analyze", target, *FAST, "--min-time-coverage", "0.95"]) == 1
    assert capsys.readouterr().err == (
        "neural-cost: time coverage 92.3% is below --min-time-coverage 95.0%; the unmodeled operation with the "
        "most time is sort (7.7%)\n"
    )
    # both gates fail: both say so, exit 1 (operations 75.0% < 80%)
    assert main(["analyze", target, *FAST, "--min-coverage", "0.8", "--min-time-coverage", "0.95"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "neural-cost: coverage (operations) 75.0% is below --min-coverage 80.0%",
        "neural-cost: time coverage 92.3% is below --min-time-coverage 95.0%; the unmodeled operation with the "
        "most time is sort (7.7%)",
    ]


def test_min_time_coverage_without_measured_time_cannot_gate(tmp_path, capsys, analyzed):
    pytest.importorskip("jax")
    analyzed.report = profiled_report(None, profile_notes=(NO_PROFILER,))
    assert main(["analyze", script(tmp_path, JAX_SCRIPT), *FAST, "--min-time-coverage", "0.5"]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("Neural cost gap analysis\n")  # the report is printed before the gate is read
    assert err == (
        f"neural-cost: error: --min-time-coverage 50.0%: no time coverage was measured, so it cannot gate "
        f"({NO_PROFILER}); analyze with the profiler on (--profile, the default) and a framework whose adapter "
        f"profiles\n"
    )


def test_trace_out_writes_the_profiled_kernels_or_says_why_not(tmp_path, capsys, analyzed):
    pytest.importorskip("jax")
    target, path = script(tmp_path, JAX_SCRIPT), tmp_path / "out" / "trace.json"
    assert main(["analyze", target, *FAST, "--trace-out", str(path)]) == 0
    assert capsys.readouterr().out.endswith(f"wrote {path}\n")
    events = json.loads(path.read_text())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == 8  # 4 kernels × 2 profiled runs
    analyzed.report = profiled_report(None, profile_notes=(NO_PROFILER,))
    other = tmp_path / "other.json"
    assert main(["analyze", target, *FAST, "--trace-out", str(other)]) == 2
    assert capsys.readouterr().err == (
        f"neural-cost: error: --trace-out {other}: no trace to write: the report has no profiled pass ({NO_PROFILER})\n"
    )
    assert not other.exists()


def test_a_real_jax_workload_profiles_by_default_and_traces(tmp_path, capsys):
    pytest.importorskip("jax")
    out, trace = tmp_path / "r.json", tmp_path / "t.json"
    assert main(["analyze", script(tmp_path, JAX_SCRIPT), *FAST, "--json", str(out), "--trace-out", str(trace)]) == 0
    printed = capsys.readouterr().out
    # tanh(x @ w): every kernel runs modeled records, so all the kernel time is modeled
    assert " · time 100.0% (of " in printed.splitlines()[1]
    assert printed.splitlines()[2].startswith("  measured: ")
    saved = json.loads(out.read_text())
    runs = saved["profile"]["runs"]
    assert runs == 3 and saved["analysis"]["time_coverage"]["fraction"] == 1.0
    # one complete event per execution of each profiled kernel, in every profiled run
    executions = sum(
        saved["estimate"]["kernels"][k["kernel"]]["executions"] * runs for k in saved["profile"]["kernels"]
    )
    assert sum(e["ph"] == "X" for e in json.loads(trace.read_text())["traceEvents"]) == executions


def test_compare_shows_the_time_share_beside_operations_and_work(monkeypatch):
    from neural_cost.cli import compare

    ok = {"platform": "cpu", "status": "ok", "framework": "jax", "report": profiled_report().to_dict()}
    text = compare.render_table("x.py:build", [ok])
    header, cpu = text.splitlines()[1], text.splitlines()[2]
    assert "coverage (ops · work · time)" in header and "75.0% · ≤ 99.9% · 92.3%" in cpu  # time 277/300
    plain = {**ok, "report": profiled_report(None).to_dict()}
    text = compare.render_table("x.py:build", [plain])
    assert "coverage (ops · work)" in text.splitlines()[1] and "75.0% · ≤ 99.9%  " in text.splitlines()[2]
    # --no-profile and --profile-runs reach the child's command line
    seen = []
    monkeypatch.setattr(compare, "run_command", lambda command, env, timeout: (seen.append(command), (1, "", ""))[1])
    compare.run_child("x.py:build", "cpu", 1, 2, 10.0, profile=False, profile_runs=4)
    assert seen[0][-3:] == ["--profile-runs", "4", "--no-profile"]
    from neural_cost.cli.child import _parser

    parsed = _parser().parse_args(["x.py:build", "--platform", "cpu", "--json", "o.json", *seen[0][-3:]])
    assert (parsed.profile, parsed.profile_runs) == (False, 4)
