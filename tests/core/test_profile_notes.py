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
        "the profiler slowed this program: its kernels took 10.000 ms a run under it, the whole timed run 2.000 ms "
        "(5.0×), over 10,000 kernel events a run — its cost per event, not the kernels' work, fills the measured "
        "column; the expected time and the observed run are not the profiler's"
    )
    assert slowed_note(profile, 0.0067) is None  # 10 ms ≤ 1.5 × 6.7 ms
    assert slowed_note(profile, 0.0) is None
