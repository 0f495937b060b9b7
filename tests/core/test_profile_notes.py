"""Notes said of single profiled runs, merged across the runs that said the same."""

from neural_cost.core.profile import runs_merged


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
