"""Where the time went, as users read it: the time share of coverage, the measured line, the
measured/eff columns, the findings a profile changes, and the JSON. Every number is derived in
``tests/report/profiled.py`` (a hand-built estimate with four kernels and a hand-built Profile)."""

import json
from dataclasses import replace

from pytest import approx

from neural_cost.analysis.suspects import percent_down
from neural_cost.core.profile import MeasuredKernel, Profile, ProfileEvent
from tests.report.profiled import PROFILE, US, profiled_report


def _table(text):
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  top "))
    return lines[start:]


def test_time_coverage_and_each_rows_measured_time_by_hand():
    report = profiled_report()
    coverage = report.time_coverage
    # per run: kernels 600 / 2 = 300 µs, modeled 2 + 25 + 250 = 277 µs, sort 23 µs; outside 200 / 2 = 100 µs
    assert coverage.kernel_seconds == approx(300 * US) and coverage.modeled_seconds == approx(277 * US)
    assert coverage.fraction == approx(277 / 300)
    assert [name for name, _ in coverage.unmodeled] == ["sort"] and coverage.unmodeled[0][1] == approx(23 * US)
    assert coverage.outside_seconds == approx(100 * US) and coverage.wall_seconds == approx(400 * US)
    ops = {row.name: row for row in report.operation_rows}
    # fusion.0's 2 µs split by the rows' bounds, 524.288 : 491.52 = 16 : 15 → 32/31 µs and 30/31 µs, both shared
    assert ops["mm"].measured_seconds == approx(32 / 31 * US) and ops["mm"].shared
    assert ops["add"].measured_seconds == approx(30 / 31 * US) and ops["add"].shared
    assert ops["mm"].measured_efficiency is None  # a share of a fused kernel has no efficiency of its own
    assert ops["big"].measured_seconds == approx(250 * US) and not ops["big"].shared
    assert ops["big"].measured_efficiency == approx(125.82912 / 250)
    scopes = {row.name: row for row in report.scope_rows}
    assert scopes["layer"].measured_seconds == approx(2 * US)  # mm + add
    # the kernel bound behind its time (fusion.0, 528.384 ns), never its unfused bound (983.04 ns)
    assert scopes["layer"].measured_efficiency == approx(528.384e-9 / 2e-6)
    kernels = {row.name: row for row in report.kernel_rows}
    assert [(kernels[n].measured_seconds, kernels[n].events) for n in ("fusion.0", "copy.1", "big.2", "sort.3")] == [
        (approx(2 * US), 2),
        (approx(25 * US), 2),
        (approx(250 * US), 2),
        (approx(23 * US), 2),
    ]
    assert kernels["copy.1"].measured_efficiency == approx(0.8)  # 20 / 25


def test_the_coverage_line_gains_time_and_a_measured_line_follows():
    lines = profiled_report().render(top=0).splitlines()
    # operations 3/4 = 75.0%; work ≤ 99.9% (sort at its floor, 1,024 FLOPs, 8,192 B); time 277/300 = 92.33% → 92.3%
    assert lines[1] == (
        "  coverage: operations 75.0% · work ≤ 99.9% · time 92.3% (of 4 operations: modeled 3, free 0, "
        "unmodeled 1: sort x1)"
    )
    # sort 23/300 = 7.67% of the kernel time; outside 100 µs of the 400 µs run = 25.0%
    assert lines[2] == (
        "  measured: 300.0 µs per run in kernels (4 of 4 kernels had events; 2 profiled runs, test profiler) · "
        "unmodeled by time: sort 7.7% of measured time · outside kernels 100.0 µs (25.0% of the run)"
    )
    assert lines[3].startswith("  device: ")  # no warning at the report's 0.7 threshold


def test_kernels_that_ran_at_once_say_so_and_share_their_time():
    """copy.1 runs on thread 1 over [27, 52) µs of each run, beside big.2 on thread 0 over [27, 277): the kernels'
    union a run is 2 + 250 + 23 = 275 µs, their events summed 300 µs. copy.1 runs its 25 µs beside big.2, half
    each: copy.1 reads 12.5 µs a run, big.2 225 + 12.5 = 237.5 µs. Outside kernels: (800 − 550) / 2 = 125 µs,
    125 / 400 = 31.25% → "31.3%" (half up) of the run; sort 23 / 300 = 7.7% of the summed time, as before."""
    events = tuple(
        ProfileEvent(kernel, (offset + start) * US, duration * US, thread)
        for offset in (0, 400)
        for kernel, start, duration, thread in ((0, 0, 2, 0), (1, 27, 25, 1), (2, 27, 250, 0), (3, 277, 23, 0))
    )
    profile = replace(PROFILE, kernel_seconds=550 * US, events=events)
    report = profiled_report(profile)
    assert report.render(top=0).splitlines()[2] == (
        "  measured: 275.0 µs per run in kernels (4 of 4 kernels had events; 2 profiled runs, test profiler) · "
        "kernels overlapped: 300.0 µs summed, each kernel's measured time its share of the time it ran beside others "
        "· unmodeled by time: sort 7.7% of measured time · outside kernels 125.0 µs (31.3% of the run)"
    )
    kernels = {row.name: row.measured_seconds for row in report.kernel_rows}
    assert kernels["copy.1"] == approx(12.5 * US) and kernels["big.2"] == approx(237.5 * US)


def test_without_a_profile_the_report_is_unchanged_and_its_notes_say_why():
    plain = profiled_report(None)
    text = plain.render()
    assert "time" not in text.splitlines()[1] and "measured" not in text
    assert _table(text)[1].split() == ["#", "operation", "kind", "FLOPs", "bytes", "FLOP/B", "share"]
    noted = profiled_report(None, profile_notes=("no measured time per kernel: X has no profiler",)).render()
    assert noted.splitlines()[2] == "  note: no measured time per kernel: X has no profiler"
    assert noted.replace(noted.splitlines()[2] + "\n", "") == text


def test_the_tables_gain_measured_and_eff_columns():
    report = profiled_report()
    assert _table(report.render()) == [
        "  top 3 of 3 operations by share of bound; measured per run, eff = bound ÷ measured:",
        "  #  operation  kind              FLOPs    bytes  FLOP/B  share  measured     eff",
        "  1  tail/big   elementwise  1.05 MFLOP  12.6 MB    0.08  80.5%  250.0 µs   50.3%",  # 125.83 / 250
        "  2  layer/mm   matmul        524 kFLOP  49.2 kB   10.67   0.3%    1.0 µs  shared",  # 32/31 µs
        "  3  layer/add  elementwise  4.10 kFLOP  49.2 kB    0.08   0.3%  967.7 ns  shared",  # 30/31 µs
    ]
    assert _table(report.render(by="scope")) == [
        "  top 2 of 2 scopes by share of bound; measured per run, eff = bound ÷ measured:",
        "  #  scope  kind         executed ops       FLOPs    bytes  FLOP/B  share  measured    eff",
        "  1  tail   elementwise             1  1.05 MFLOP  12.6 MB    0.08  80.5%  250.0 µs  50.3%",
        "  2  layer  mixed                   2   528 kFLOP  98.3 kB    5.38   0.6%    2.0 µs  26.4%",  # 528.384 / 2,000
    ]
    # sorted by bound, as without a profile; each kernel's own efficiency: 20/25, 10/23, 528.384/2,000
    assert _table(report.render(by="kernel")) == [
        "  top 4 of 4 kernels by share of bound (hand-written; measured per run, eff = bound ÷ measured):",
        "  #  kernel    scopes  runs       FLOPs  traffic  level           bound  share  measured    eff",
        "  1  big.2     tail      ×1  1.05 MFLOP  12.6 MB  main memory  125.8 µs  80.5%  250.0 µs  50.3%",
        "  2  copy.1    -         ×1      0 FLOP  2.00 MB  main memory   20.0 µs  12.8%   25.0 µs  80.0%",
        "  3  sort.3    -         ×1      0 FLOP  1.00 MB  main memory   10.0 µs   6.4%   23.0 µs  43.5%",
        "  4  fusion.0  layer     ×1   528 kFLOP  49.2 kB  main memory  528.4 ns   0.3%    2.0 µs  26.4%",
    ]


def test_a_kernel_without_events_shows_dashes_and_the_line_counts_it():
    # copy.1 dropped: kernels 2 + 250 + 23 = 275 µs per run, modeled 2 + 250 = 252 → 91.636% → "91.6%"
    partial = Profile(2, 800 * US, tuple(k for k in PROFILE.kernels if k.kernel != 1), 550 * US, "test profiler")
    report = profiled_report(partial)
    assert " · time 91.6% (" in report.render(top=0).splitlines()[1]
    assert "(3 of 4 kernels had events;" in report.render(top=0).splitlines()[2]
    row = next(line for line in _table(report.render(by="kernel")) if "copy.1" in line)
    assert row.split()[-2:] == ["-", "-"]


def test_percent_down_never_rounds_up_to_complete():
    assert percent_down(0.99999) == "99.9%" and percent_down(1.0) == "100.0%"
    assert percent_down(0.961) == "96.1%"  # 0.961 · 1000 is 960.9999... in floats
    assert percent_down(277 / 300) == "92.3%" and percent_down(0.0) == "0.0%"


def test_low_time_coverage_is_a_header_warning_naming_the_unmodeled_by_time():
    assert profiled_report().finding("low_time_coverage") is None  # 92.3% ≥ 0.7
    report = profiled_report(threshold=0.95)
    finding = report.finding("low_time_coverage")
    assert (finding.severity, finding.header) == ("warning", True)
    assert finding.message == (
        "Low time coverage: 92.3% of the measured time (300.0 µs per run in kernels and unmatched events) is in "
        "modeled kernels; unmodeled by time: sort 7.7%. The bound leaves their time out: the efficiency describes "
        "part of the run."
    )
    lines = report.render(top=0).splitlines()
    # the two coverage warnings follow the measured line, before the device line
    assert lines[3].startswith("  WARNING: Low coverage: only 75.0%")
    assert lines[4] == f"  WARNING: {finding.message}"
    assert lines[5].startswith("  device: ")
    assert profiled_report(None, threshold=0.95).finding("low_time_coverage") is None  # no profile, no figure


def test_large_gap_names_the_kernels_furthest_above_their_bounds():
    # observed 400 µs / bound 156.357504 µs = 2.56× → "2.6×"; gap 243.64 µs over 3 executed operations = 81.2 µs.
    # measured − bound: big.2 250 − 125.83 = 124.2 µs, sort.3 23 − 10 = 13 µs, copy.1 25 − 20 = 5 µs,
    # fusion.0 2 − 0.53 = 1.5 µs (fourth: not named). Ratios 250/125.83 = 1.99, 23/10 = 2.3, 25/20 = 1.25.
    message = profiled_report().finding("large_gap").message
    assert message == (
        "Observed is 2.6× the bound: 243.6 µs above it, 81.2 µs per executed operation (3) — measured per kernel, "
        "the furthest above their bounds: big.2 250.0 µs against a bound of 125.8 µs (2.0×), sort.3 23.0 µs against "
        "10.0 µs (2.3×), copy.1 25.0 µs against 20.0 µs (1.2×); outside kernels (dispatch, syncs, idle gaps) "
        "100.0 µs per run (25.0% of the profiled run)."
    )
    # without a profile it keeps its old advice
    assert "profile the largest rows (tail first)" in profiled_report(None).finding("large_gap").message


def test_large_gap_with_every_kernel_at_its_bound_blames_the_time_outside_kernels():
    # each kernel measured at exactly its bound per run (×2 runs): 0.528384, 20, 125.82912, 10 µs;
    # wall 2 × 400 µs, kernels 2 × 156.357504 µs → outside 243.642496 µs per run, 60.9% of the run
    bounds = (0.528384, 20, 125.82912, 10)
    at_bound = Profile(
        2, 800 * US, tuple(MeasuredKernel(i, 2 * b * US, 2) for i, b in enumerate(bounds)), 312.715008 * US, "p"
    )
    message = profiled_report(at_bound).finding("large_gap").message
    assert message.endswith(
        "— no kernel is measured above its bound: the time is outside kernels (dispatch, syncs, idle gaps) "
        "243.6 µs per run (60.9% of the profiled run)."
    )


def test_the_json_carries_the_profile_and_time_coverage_and_loads_the_same(tmp_path):
    from neural_cost import load_report

    report = profiled_report(profile_notes=("a note",))
    data = report.to_dict()
    assert data["profile"] == PROFILE.to_dict() and data["profile_notes"] == ["a note"]
    coverage = data["analysis"]["time_coverage"]
    assert set(coverage) == {
        "fraction",
        "modeled_seconds",
        "kernel_seconds",
        "unmodeled",
        "outside_seconds",
        "wall_seconds",
        "union_seconds",
        "unmatched_seconds",
        "unattributed",
        "upper_bound",
    }
    assert coverage["fraction"] == approx(277 / 300) and coverage["unmodeled"] == [["sort", approx(23 * US)]]
    row = next(r for r in data["kernel_rows"] if r["name"] == "sort.3")
    assert (row["index"], row["unmodeled"], row["events"]) == (3, ["sort"], 2)
    assert row["measured_seconds"] == approx(23 * US)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    loaded = load_report(path)
    assert loaded.profile == report.profile and loaded.profile_notes == ("a note",)
    for by in (None, "scope", "kernel"):
        assert loaded.render(by=by) == report.render(by=by)
    assert loaded.to_dict() | {"provenance": None} == data | {"provenance": None}


def test_a_report_without_a_profile_writes_nulls_and_older_files_without_the_keys_load(tmp_path):
    from neural_cost import load_report

    data = profiled_report(None).to_dict()
    assert data["profile"] is None and data["profile_notes"] == [] and data["analysis"]["time_coverage"] is None
    for key in ("profile", "profile_notes"):
        del data[key]
    del data["analysis"]["time_coverage"]
    for table in ("operation_rows", "scope_rows"):
        for row in data[table]:
            del row["measured_seconds"], row["shared"]
    for row in data["kernel_rows"]:
        for key in ("index", "unmodeled", "measured_seconds", "events"):
            del row[key]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    loaded = load_report(path)
    assert loaded.profile is None and loaded.time_coverage is None
    assert loaded.render() == profiled_report(None).render()


def test_diff_shows_the_time_share_when_either_report_was_profiled():
    from neural_cost.report.diff import diff_reports

    text = diff_reports(profiled_report(None), profiled_report())
    assert "  coverage (time)                   - →        92.3%   n/a\n" in text
    # copy.1 dropped (test above): 252 / 275 = 91.64% → 92.33%: +0.7 pp of the exact shares
    partial = Profile(2, 800 * US, tuple(k for k in PROFILE.kernels if k.kernel != 1), 550 * US, "test profiler")
    assert "  coverage (time)               91.6% →        92.3%   +0.7 pp\n" in diff_reports(
        profiled_report(partial), profiled_report()
    )
    assert "coverage (time)" not in diff_reports(profiled_report(None), profiled_report(None))


def test_unmatched_events_and_the_profiles_own_notes_are_said():
    # 2 memset events matched no kernel: 6 µs over 2 runs = 3 µs per run, inside the 100 µs outside kernels
    profile = Profile(
        2,
        800 * US,
        PROFILE.kernels,
        600 * US,
        "test profiler",
        unmatched=(("memset", 6 * US, 2),),
        notes=("events joined by name",),
    )
    lines = profiled_report(profile, profile_notes=("partial",)).render(top=0).splitlines()
    # the unmatched 3 µs per run count against time coverage: 277 / (300 + 3) = 91.42% → 91.4%
    assert " · time 91.4% " in lines[1]
    assert lines[2].endswith(
        "· 2 events matched no kernel: 3.0 µs, counted against time coverage · outside kernels 100.0 µs "
        "(25.0% of the run)"
    )
    assert lines[3:5] == ["  note: partial", "  note: events joined by name"]
