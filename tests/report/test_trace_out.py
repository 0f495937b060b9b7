"""``write_trace``: a profiled pass as a Chrome/Perfetto trace (the Trace Event Format). The report
is ``tests/report/profiled.py``'s: 8 events, two runs of fusion.0, copy.1, big.2, sort.3 in turn."""

import json
import os

import pytest

from neural_cost import NeuralCostError
from neural_cost.core.profile import Profile
from neural_cost.report.trace_out import write_trace
from tests.report.profiled import EVENTS, PROFILE, US, profiled_report


def _written(tmp_path, report=None):
    path = write_trace(report or profiled_report(), tmp_path / "trace.json")
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def test_one_complete_event_per_profiled_execution_with_the_formats_fields(tmp_path):
    trace = _written(tmp_path)
    assert trace["displayTimeUnit"] == "ms" and isinstance(trace["traceEvents"], list)
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == len(EVENTS) == 8
    for event in complete:
        assert isinstance(event["name"], str) and isinstance(event["cat"], str)
        assert all(type(event[key]) in (int, float) for key in ("ts", "dur"))
        assert type(event["pid"]) is int and type(event["tid"]) is int
        assert set(event["args"]) == {"kernel", "flops", "bytes", "level", "bound", "bound_side", "efficiency"}
    names = [e["name"] for e in complete]
    assert names == ["fusion.0", "copy.1", "big.2", "sort.3"] * 2
    # ts and dur in microseconds: big.2 of run 2 starts at 400 + 27 µs and lasts 250 µs
    big = complete[6]
    assert big["ts"] == pytest.approx(427) and big["dur"] == pytest.approx(250) and big["cat"] == "fusion"


def test_each_events_args_are_its_kernels_figures_per_execution(tmp_path):
    complete = [e for e in _written(tmp_path)["traceEvents"] if e["ph"] == "X"]
    fusion, copy = complete[0]["args"], complete[1]["args"]
    # fusion.0: 524,288 + 4,096 = 528,384 FLOPs and 49,152 B per execution (1 execution); bound 528.384 ns
    # = 0.528384 µs against a 2 µs execution → 26.4192%
    assert (fusion["kernel"], fusion["flops"], fusion["bytes"], fusion["level"]) == (0, 528_384, 49_152, "main memory")
    assert fusion["bound"] == pytest.approx(0.528384) and fusion["bound_side"] == "compute"
    assert fusion["efficiency"] == pytest.approx(0.264192)
    # copy.1: no FLOPs, 2,000,000 B, bound 20 µs against 25 µs → 80%
    assert (copy["flops"], copy["bytes"], copy["bound_side"]) == (0, 2_000_000, "memory")
    assert copy["bound"] == pytest.approx(20) and copy["efficiency"] == pytest.approx(0.8)


def test_the_counter_track_is_the_achieved_flops_over_time(tmp_path):
    counters = [e for e in _written(tmp_path)["traceEvents"] if e["ph"] == "C"]
    assert {e["name"] for e in counters} == {"achieved FLOP/s"}
    steps = [(round(e["ts"], 6), e["args"]["FLOP/s"]) for e in counters]
    # run 1: fusion.0 528,384 FLOPs over 2 µs = 264.192 GFLOP/s from 0 to 2 µs; copy.1 no FLOPs (2–27 µs);
    # big.2 1,048,576 FLOPs over 250 µs = 4.194304 GFLOP/s (27–277 µs); sort.3 none; idle from 300 µs
    assert steps[:5] == [
        (0.0, pytest.approx(264.192e9)),
        (2.0, 0.0),
        (27.0, pytest.approx(4.194304e9)),
        (277.0, 0.0),
        (300.0, 0.0),
    ]
    assert len(steps) == 10 and steps[5] == (400.0, pytest.approx(264.192e9))  # run 2, the same 400 µs later


def test_the_write_is_atomic_and_leaves_no_temporary_file(tmp_path):
    (tmp_path / "trace.json").write_text("old")
    _written(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["trace.json"]
    folder = tmp_path / "a_folder"
    folder.mkdir()
    with pytest.raises(NeuralCostError, match="cannot write"):  # a folder where the file should go
        write_trace(profiled_report(), folder)
    assert sorted(os.listdir(tmp_path)) == ["a_folder", "trace.json"] and not os.listdir(folder)


def test_no_profile_or_no_events_is_a_clear_error(tmp_path):
    with pytest.raises(NeuralCostError, match=r"no profiled pass \(X has no profiler\)"):
        write_trace(profiled_report(None, profile_notes=("X has no profiler",)), tmp_path / "t.json")
    totals_only = Profile(2, 800 * US, PROFILE.kernels, 600 * US, "test profiler")
    with pytest.raises(NeuralCostError, match="kept no per-execution events"):
        write_trace(profiled_report(totals_only), tmp_path / "t.json")
    assert not os.listdir(tmp_path)
