"""A profiled kernel's time with the time other kernels ran beside it shared (``core.overlap``), and a profile's
per-run kernel times made so (``Profile.run_seconds``). Each figure derived by hand beside it."""

from __future__ import annotations

import pytest

from neural_cost.core.overlap import shared_durations
from neural_cost.core.profile import MeasuredKernel, Profile, ProfileEvent


def test_two_kernels_on_two_threads_share_the_time_they_overlap():
    """A on thread 0 over [0, 4), B on thread 1 over [2, 6): each runs 2 alone and shares 2 → 2 + 2/2 = 3 each; the
    two sum to the union, 6."""
    assert shared_durations([(0.0, 4.0, 0, 0), (2.0, 4.0, 1, 1)]) == [pytest.approx(3.0), pytest.approx(3.0)]


def test_three_threads_share_each_instant_among_those_running():
    """A and B on threads 0 and 1 over [0, 3), C on thread 2 over [1, 2): A over [0, 1) with B (1/2), [1, 2) with B
    and C (1/3), [2, 3) with B (1/2): 4/3; B likewise; C 1/3. Together 3, the union."""
    found = shared_durations([(0.0, 3.0, 0, 0), (0.0, 3.0, 1, 1), (1.0, 1.0, 2, 2)])
    assert found == [pytest.approx(4 / 3), pytest.approx(4 / 3), pytest.approx(1 / 3)]


def test_events_of_one_thread_or_one_kernel_are_no_others_time_beside_it():
    """A loop's event on thread 0 over [0, 10) and its body's kernels inside it on the same thread, [1, 2) and [3, 5):
    nested, not beside — each keeps its duration. One kernel's two events on two threads, [0, 4) and [1, 3): its own
    work, kept. Events that only touch, [0, 1) and [1, 2) on two threads, share nothing."""
    assert shared_durations([(0.0, 10.0, 0, 0), (1.0, 1.0, 1, 0), (3.0, 2.0, 2, 0)]) == [10.0, 1.0, 2.0]
    assert shared_durations([(0.0, 4.0, 7, 0), (1.0, 2.0, 7, 1)]) == [4.0, 2.0]
    assert shared_durations([(0.0, 1.0, 0, 0), (1.0, 1.0, 1, 1)]) == [1.0, 1.0]


def test_a_long_event_beside_many_short_ones_shares_only_where_they_run():
    """A on thread 0 over [0, 100); 50 kernels on thread 1, each 1 long, starting at 0, 2, 4, ... 98: A shares 50
    units (1/2 each) and runs 50 alone → 75; each short one 1/2."""
    events = [(0.0, 100.0, 0, 0)] + [(2.0 * i, 1.0, 1 + i, 1) for i in range(50)]
    found = shared_durations(events)
    assert found[0] == pytest.approx(75.0) and found[1:] == [pytest.approx(0.5)] * 50


def test_a_profiles_run_times_share_overlapped_time():
    """Two runs; in each, kernel 0 on thread 0 for 4 units and kernel 1 on thread 1 for 4, starting 2 later: each
    reads 3 a run (above), where counted whole each read 4. Kernel 2, alone after them for 1: 1 a run."""
    events = []
    for run in range(2):
        base = 10.0 * run
        events += [
            ProfileEvent(0, base, 4.0, 0),
            ProfileEvent(1, base + 2.0, 4.0, 1),
            ProfileEvent(2, base + 7.0, 1.0, 0),
        ]
    kernels = (MeasuredKernel(0, 8.0, 2), MeasuredKernel(1, 8.0, 2), MeasuredKernel(2, 2.0, 2))
    profile = Profile(
        runs=2, wall_seconds=16.0, kernels=kernels, kernel_seconds=14.0, source="hand", events=tuple(events)
    )
    assert profile.run_seconds(0) == profile.run_seconds(1) == (pytest.approx(3.0), pytest.approx(3.0))
    assert profile.seconds_per_run(0) == pytest.approx(3.0) and profile.seconds_per_run(2) == pytest.approx(1.0)
