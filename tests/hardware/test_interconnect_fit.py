"""Fitting seconds = latency + wire bytes / bandwidth to timed collectives (framework-neutral)."""

from __future__ import annotations

import pytest

from neural_cost.core.errors import MeasurementError
from neural_cost.hardware.interconnect_calibration import calibrate_interconnect, fit_interconnect


def test_samples_on_the_model_give_back_its_latency_and_bandwidth():
    latency, bandwidth = 2.0**-17, 2.0**33  # 7.6 us, 8.6 GB/s: exact in binary, so are the times below
    wires = [6 * 2**10, 6 * 2**12, 6 * 2**14, 6 * 2**16, 6 * 2**18, 6 * 2**20]
    fit = fit_interconnect([(w, latency + w / bandwidth) for w in wires])
    # the normal equations are solved in floating point: equal to within a few ulp, not bit for bit
    assert fit.latency_seconds == pytest.approx(latency, rel=1e-12)
    assert fit.bandwidth == pytest.approx(bandwidth, rel=1e-12)
    assert fit.worst_residual < 1e-12 and not fit.latency_pinned


def test_the_worst_residual_of_three_points_by_hand():
    # samples (w, t) = (0, 1), (1, 2), (2, 4); minimise Σ(a·uᵢ + b·vᵢ − 1)² with u = 1/t, v = w/t:
    #   u = (1, 1/2, 1/4), v = (0, 1/2, 1/2)
    #   Σu² = 21/16, Σuv = 3/8, Σv² = 1/2, Σu = 7/4, Σv = 1, det = 21/32 − 9/64 = 33/64
    #   a = (Σu·Σv² − Σuv·Σv) / det = (7/8 − 3/8) · 64/33 = 32/33
    #   b = (Σu²·Σv − Σuv·Σu) / det = (21/16 − 21/32) · 64/33 = 42/33 = 14/11
    # predictions 32/33, 74/33, 116/33 → residuals −1/33, (74/33 − 2)/2 = 4/33, (116/33 − 4)/4 = −4/33
    fit = fit_interconnect([(0, 1.0), (1, 2.0), (2, 4.0)])
    assert fit.latency_seconds == pytest.approx(32 / 33, rel=1e-12)
    assert fit.bandwidth == pytest.approx(11 / 14, rel=1e-12)
    assert fit.residuals == pytest.approx((-1 / 33, 4 / 33, -4 / 33), rel=1e-12)
    assert fit.worst_residual == pytest.approx(4 / 33, rel=1e-12)  # 12.1%


def test_a_negative_latency_is_pinned_at_zero_and_said():
    # (1, 1), (2, 3): the line through them has intercept −1; through the origin with v = w/t = (1, 2/3):
    # b = Σv / Σv² = (5/3) / (13/9) = 15/13, so bandwidth 13/15 and residuals (15/13 − 1) = 2/13, (30/13 − 3)/3 = −3/13
    interconnect, fit = calibrate_interconnect([(1, 1.0), (2, 3.0)], name="test link", what="all-reduces")
    assert fit.latency_pinned and interconnect.latency_seconds == 0.0
    assert interconnect.bandwidth == pytest.approx(13 / 15, rel=1e-12)
    assert fit.worst_residual == pytest.approx(3 / 13, rel=1e-12)
    assert "pinned at 0" in interconnect.source


def test_the_source_says_measured_and_flags_a_poor_fit():
    good, _ = calibrate_interconnect([(0, 1.0), (1, 2.0), (2, 4.0)], name="l", what="all-reduces", method="timed")
    assert good.source.startswith("measured: fit of 3 all-reduces (0 B … 2 B wire bytes per device)")
    assert "worst residual 12.1%" in good.source and "POOR" not in good.source and good.source.endswith("; timed")
    # (0, 1), (1, 1), (2, 4): the fit misses one of them by more than 25%
    poor, fit = calibrate_interconnect([(0, 1.0), (1, 1.0), (2, 4.0)], name="l")
    assert fit.worst_residual > 0.25 and "a POOR fit (worst residual above 25%)" in poor.source


@pytest.mark.parametrize(
    ("samples", "message"),
    [
        ([(1024, 1e-3)], r"at least two sizes; got 1 sample\(s\) of 1 size"),
        ([(1024, 1e-3), (1024, 2e-3)], r"at least two sizes; got 2 sample\(s\) of 1 size"),
        ([(1024, 0.0), (2048, 1e-3)], r"sample \(1024, 0\.0\): seconds must be a finite positive number"),
        ([(-1, 1e-3), (2048, 1e-3)], r"sample \(-1, 0\.001\): wire bytes must be a finite number ≥ 0"),
        ([(1024, 2e-3), (2048, 1e-3)], r"do not take longer as they move more bytes"),
        ([(1024,), (2048, 1e-3)], r"a \(wire bytes, seconds\) pair, not \(1024,\)"),
    ],
)
def test_bad_samples_are_named(samples, message):
    with pytest.raises(MeasurementError, match=message):
        fit_interconnect(samples)
