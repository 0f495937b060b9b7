"""Notes said of single profiled runs, merged across the runs that said the same."""

from neural_cost.core.profile import count_mismatch_note, runs_merged


def test_the_same_note_of_several_runs_is_said_once():
    path = "4 of the trace's 877 kernels had no event"
    notes = [
        "the recorded warm run made 2 kernels",
        f"profiled run 1: {path}",
        "profiled run 2: joined by op name alone",
        f"profiled run 2: {path}",
        f"profiled run 3: {path}",
        "profiled run 3: joined by op name alone",
        "profiled run 3: joined by op name alone",  # said twice of one run: once
        "the recorded warm run made 2 kernels",  # and an unnumbered note said twice: once
    ]
    assert runs_merged(notes) == (
        "the recorded warm run made 2 kernels",
        f"profiled runs 1–3: {path}",
        "profiled runs 2–3: joined by op name alone",
    )
    # runs that are not consecutive are listed; a note of one run keeps its number; a note said
    # of no run stays beside the same words said of one
    assert runs_merged(["profiled run 1: x", "profiled run 3: x", "profiled run 2: y", "x"]) == (
        "profiled runs 1, 3: x",
        "profiled run 2: y",
        "x",
    )


def test_kernels_with_the_same_counts_are_one_group_the_largest_miss_first():
    """An mctx search's profile: 61 loop-body kernels ran 65 times a run where 256 were counted
    (a 32-step scan × a while loop counted 8 by default: it ran about 2 each), 16 ran 0 where 5
    (a branch not taken), 2 ran 97 where 288. Executions missed per group: 61 × 191 = 11,651,
    2 × 191 = 382, 16 × 5 = 80 — that order; three groups shown, two names each."""
    differ = [(f"fusion.{i}", 65.0, 256) for i in range(61)]
    differ += [(f"copy.{i}", 0.0, 5) for i in range(16)]
    differ += [("wrapped_reduce.5", 97.0, 288), ("wrapped_reduce.6", 97.0, 288)]
    assert count_mismatch_note(differ) == (
        "79 kernel(s) ran a different number of times than the trace counts: 61 ran 65 times a run where 256 were "
        "counted (fusion.0, fusion.1 and 59 more); 2 ran 97 times a run where 288 were counted (wrapped_reduce.5, "
        "wrapped_reduce.6); 16 ran 0 times a run where 5 were counted (copy.0, copy.1 and 14 more) — a loop's trip "
        "count or a conditional's branch differs from what the estimate assumed"
    )
    one_more = count_mismatch_note([*differ, ("dot.1", 2.5, 3)], groups=3)
    assert one_more.count(" ran ") == 4 and "1 more group(s) of other counts" in one_more  # 0.5 × 1: the least
    assert "dot.1" not in one_more


def test_a_profile_whose_kernels_outlast_the_timed_run_says_the_profiler_slowed_it():
    from neural_cost.core.profile import MeasuredKernel, Profile, slowed_note

    # 2 runs, 20 ms of kernel time and 20,000 events in all: 10 ms and 10,000 events a run
    profile = Profile(runs=2, wall_seconds=0.024, kernels=(MeasuredKernel(0, 0.02, 20_000),), kernel_seconds=0.02,
                      source="hand")  # fmt: skip
    assert slowed_note(profile, 0.002) == (  # 10 ms ÷ 2 ms = 5.0×
        "the profiler slowed this program: its kernels took 10.000 ms a run under the profiler, the whole timed run "
        "2.000 ms "
        "(5.0×), over 10,000 kernel events a run — its cost per event, not the kernels' work, fills the measured "
        "column; the expected time and the observed run are not the profiler's"
    )
    assert slowed_note(profile, 0.0067) is None  # 10 ms ≤ 1.5 × 6.7 ms
    assert slowed_note(profile, 0.0) is None
    # 93 kernel events a run (LLaMA's), 46 ms of kernels a run against a 17 ms timed run: the 29 ms excess
    # is more than 93 events × 2 µs = 186 µs could add — the machine, not the profiler
    few = Profile(runs=3, wall_seconds=0.15, kernels=(MeasuredKernel(0, 0.138, 279),), kernel_seconds=0.138,
                  source="hand")  # fmt: skip
    assert slowed_note(few, 0.017) == (
        "the profiled runs ran slower than the timed ones: its kernels took 46.000 ms a run under the profiler, the "
        "whole timed run 17.000 ms (2.7×), over 93 kernel events a run, more than a profiler's cost per event adds "
        "(≤ 2 µs each) — the machine ran slower while they ran (other load?), or the profiler slowed the kernels "
        "themselves; the measured column is of those runs, the expected time and the observed run are not"
    )


def _runs(per_run: list[list[float]], gap: float = 1e-4):
    """A profile of len(per_run) runs, one after another: per_run[r][k] is kernel k's one execution in run r."""
    from neural_cost.core.profile import MeasuredKernel, Profile, ProfileEvent

    events, at = [], 0.0
    for durations in per_run:
        for kernel, seconds in enumerate(durations):
            events.append(ProfileEvent(kernel, at, seconds))
            at += seconds + gap
    kernels = tuple(MeasuredKernel(k, sum(run[k] for run in per_run), len(per_run)) for k in range(len(per_run[0])))
    return Profile(len(per_run), at, kernels, sum(map(sum, per_run)), "hand", events=tuple(events))


def test_a_kernels_measured_time_is_its_median_run_a_stalled_run_moves_it_not():
    """Five runs of a 6.5 ms matmul (kernel 0) and a 0.2 ms add (kernel 1); in run 3 the matmul took
    37 ms (a 2-vCPU VM's host stalled it, as measured on LLaMA's lm_head). The runs' mean would be
    (4 × 6.5 + 37) / 5 = 12.6 ms; the median run is 6.5 ms. The add ran 0.2, 0.2, 0.2, 0.3, 0.2 ms:
    median 0.2 ms."""
    import pytest

    profile = _runs([[6.5e-3, 2e-4], [6.5e-3, 2e-4], [37e-3, 2e-4], [6.5e-3, 3e-4], [6.5e-3, 2e-4]])
    assert profile.run_seconds(0) == pytest.approx((6.5e-3, 6.5e-3, 37e-3, 6.5e-3, 6.5e-3))
    assert profile.seconds_per_run(0) == pytest.approx(6.5e-3)
    assert profile.seconds_per_run(1) == pytest.approx(2e-4)
    assert profile.seconds_per_run(2) is None  # no event
    # from JSON (the events travel with it) it reads the same
    from neural_cost.core.profile import Profile

    assert Profile.from_dict(profile.to_dict()).seconds_per_run(0) == pytest.approx(6.5e-3)


def test_without_every_event_of_a_kernel_its_time_is_the_runs_mean():
    """A kernel whose events the profile did not keep (a capped trace) or whose events do not divide
    into its runs reads its union over the runs ÷ runs: 12 ms over 3 runs = 4 ms; one run alone too."""
    import pytest

    from neural_cost.core.profile import MeasuredKernel, Profile, ProfileEvent

    kept_one = Profile(3, 0.02, (MeasuredKernel(0, 0.012, 3),), 0.012, "hand", events=(ProfileEvent(0, 0.0, 1e-3),))
    assert kept_one.run_seconds(0) is None and kept_one.seconds_per_run(0) == pytest.approx(4e-3)
    four = tuple(ProfileEvent(0, i * 0.01, 3e-3) for i in range(4))  # 4 events, 3 runs
    uneven = Profile(3, 0.05, (MeasuredKernel(0, 0.012, 4),), 0.012, "hand", events=four)
    assert uneven.run_seconds(0) is None and uneven.seconds_per_run(0) == pytest.approx(4e-3)
    single = Profile(1, 0.05, (MeasuredKernel(0, 0.012, 4),), 0.012, "hand", events=four)
    assert single.run_seconds(0) is None and single.seconds_per_run(0) == pytest.approx(0.012)


def test_a_stalled_run_is_said_naming_the_kernels_with_the_largest_excess():
    """Kernel 0 (6.5 ms, 37 ms in run 3): 37 ≥ 1.5 × 6.5 and its excess 30.5 ms is over 1% of a run's
    kernel time ((4 × 6.7 + 37.2 + 0.1) / 5 = 12.82 ms). Kernel 1 (0.2 ms, 0.4 ms once: 2× its median,
    but 0.2 ms excess ≥ 0.128 ms) is named second; kernel 2 (0.01 ms, 0.05 ms once: 5×, excess 0.04
    ms < 0.128 ms) is not. Without a stall, no note."""
    from neural_cost.core.profile import stalled_note

    runs = [[6.5e-3, 2e-4, 1e-5]] * 5
    runs[2] = [37e-3, 2e-4, 1e-5]
    runs[3] = [6.5e-3, 4e-4, 5e-5]
    note = stalled_note(_runs(runs), ["lm_head/mm", "mul", "add"])
    assert note == (
        "a profiled run stalled: lm_head/mm 37.000 ms in its slowest run, 6.500 ms in its median one, mul 400.0 µs "
        "in its slowest run, 200.0 µs in its median one (of 5 runs; other load on a shared machine?) — the measured "
        "column is each kernel's median run; the time per run in kernels and outside them, the runs' mean"
    )
    assert stalled_note(_runs([[6.5e-3, 2e-4, 1e-5]] * 5), ["lm_head/mm", "mul", "add"]) is None
    # add at 5 ms in run 5 (excess 4.99 ms) now comes before mul (0.2 ms): mul is counted, not named
    runs[4] = [6.5e-3, 2e-4, 5e-3]
    assert "add 5.000 ms in its slowest run, 10.0 µs in its median one and 1 more kernel (of 5 runs;" in (
        stalled_note(_runs(runs), ["lm_head/mm", "mul", "add"]) or ""
    )


def test_a_runs_time_counts_overlapping_executions_once():
    """Two runs of a kernel executed twice a run. Run 1: [0, 3] and [1, 4] ms on two threads overlap:
    their union is 4 ms. Run 2: [10, 11] and [12, 13] ms: 2 ms. The median of two runs is their mean, 3 ms."""
    import pytest

    from neural_cost.core.profile import MeasuredKernel, Profile, ProfileEvent

    events = (ProfileEvent(0, 0.0, 3e-3), ProfileEvent(0, 1e-3, 3e-3, 1), ProfileEvent(0, 10e-3, 1e-3),
              ProfileEvent(0, 12e-3, 1e-3))  # fmt: skip
    profile = Profile(2, 0.02, (MeasuredKernel(0, 6e-3, 4),), 6e-3, "hand", events=events)
    assert profile.run_seconds(0) == pytest.approx((4e-3, 2e-3))
    assert profile.seconds_per_run(0) == pytest.approx(3e-3)
