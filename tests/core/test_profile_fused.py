"""Kernels the profiler timed as one op (``Profile.fused``): checked, saved, and their time shared by a yardstick."""

import pytest

from neural_cost.analysis.rows import share_fused
from neural_cost.core.errors import RecordError
from neural_cost.core.profile import MeasuredKernel, Profile


def _profile(fused):
    kernels = tuple(MeasuredKernel(k, 3e-3, 1) for k in range(4))
    return Profile(1, 0.02, kernels, 0.012, "hand", fused=fused)


def test_a_fusion_of_a_convolution_with_its_bias_add_and_relu_shares_its_time_by_each_ones_yardstick():
    """A fusion (kernels 0, 1, 2) the profiler timed at 9 ms, split evenly: 3 ms each. Their bounds are 6, 1 and
    1 ms (8 in all): shared by them, 9 × 6/8 = 6.75 ms, 9 × 1/8 = 1.125 ms twice — each at 1.125× its bound, the
    fusion's 9/8. Kernel 3, timed alone at 3 ms, keeps its time."""
    measured = {0: 3e-3, 1: 3e-3, 2: 3e-3, 3: 3e-3}
    shared = share_fused(measured, ((0, 1, 2),), {0: 6e-3, 1: 1e-3, 2: 1e-3, 3: 5e-3})
    assert shared == pytest.approx({0: 6.75e-3, 1: 1.125e-3, 2: 1.125e-3, 3: 3e-3})
    assert measured[0] == 3e-3  # the caller's mapping is not changed


def test_a_fusion_with_a_member_unmeasured_or_no_weight_keeps_the_profilers_split():
    measured = {0: 3e-3, 1: 3e-3}
    assert share_fused(measured, ((0, 1, 2),), {0: 1.0, 1: 1.0, 2: 1.0}) == measured  # kernel 2 has no time
    assert share_fused(measured, ((0, 1),), {0: 0.0}) == measured  # no yardstick above zero


def test_fused_groups_round_trip_and_are_checked():
    profile = _profile(((0, 1, 2),))
    assert Profile.from_dict(profile.to_dict()) == profile
    assert "fused" not in _profile(()).to_dict()  # an older reader sees the profile it knew
    for bad in (((0,),), ((0, 0),), ((0, 1), (1, 2)), ((0, -1),)):
        with pytest.raises(RecordError, match=r"Profile\.fused"):
            _profile(bad)
    with pytest.raises(RecordError, match=r"Profile\.fused names kernel 3, but the estimate has 3 kernels"):
        _profile(((2, 3),)).check_against(3)


def test_an_expected_time_shares_a_fusions_time_by_the_members_expectations():
    """The same fusion expected at 4, 0.5 and 0.5 ms (5 in all) and measured 9 ms in three even slices: each member
    reads 9/5 = 1.8× its expectation (7.2, 0.9, 0.9 ms), where the slices would read the ReLU at 6× and the
    convolution at 0.75×."""
    from neural_cost.analysis.expected import Expected, ExpectedRow

    rows = tuple(
        ExpectedRow(name, "conv" if i == 0 else "elementwise", 1, seconds, seconds / 2, "model", index=i)
        for i, (name, seconds) in enumerate((("conv", 4e-3), ("bias", 5e-4), ("relu", 5e-4)))
    )
    expected = Expected(5e-3, 5e-3, None, rows, "tensorflow", None, None, "2026-12-06")
    measured = {0: 3e-3, 1: 3e-3, 2: 3e-3}
    shared = expected.with_measured(measured, ((0, 1, 2),))
    assert [row.measured_seconds for row in shared.rows] == pytest.approx([7.2e-3, 9e-4, 9e-4])
    assert [row.measured_seconds for row in expected.with_measured(measured).rows] == [3e-3] * 3
