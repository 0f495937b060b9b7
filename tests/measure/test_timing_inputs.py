"""Measurement and benchmark(): bad samples are a MeasurementError naming the field, and the
device and sync labels never claim what was not seen (moved from tests/review/)."""

from __future__ import annotations

import pytest

from neural_cost import Measurement, MeasurementError, benchmark


def test_huge_sample_is_a_measurement_error():
    # Was (measure/timing.py): math.isfinite(10**400) raised OverflowError from inside.
    with pytest.raises(MeasurementError, match=r"samples_seconds\[0\]=1000"):
        Measurement((10**400,))


def test_samples_that_are_not_a_sequence_are_a_measurement_error():
    # Was (measure/timing.py): Measurement(None) raised TypeError "'NoneType' object is not iterable".
    with pytest.raises(MeasurementError, match=r"samples_seconds=None"):
        Measurement(None)  # type: ignore[arg-type]


def test_numpy_numbers_are_samples():
    # Was: np.float32 seconds were refused with "must be a number", which they are.
    np = pytest.importorskip("numpy")
    assert Measurement((np.float32(0.5),)).median_seconds == 0.5  # 0.5 is exact in float32


def test_sync_label_does_not_claim_nothing_was_needed_when_nothing_was_seen():
    # Was (measure/timing.py, auto_sync): a result with no arrays (None from an in-place GPU op)
    # was labelled "none needed", though nothing was checked; the report then vouched for a timing
    # that may have measured only kernel launches.
    m = benchmark(lambda: None, warmup=0, repeats=1)
    assert m.sync != "none needed" and "no arrays" in m.sync


def test_device_is_read_from_the_result_when_no_argument_is_an_array():
    # Was (measure/timing.py, benchmark): the device was inferred from the arguments only; a closure
    # returning GPU arrays was recorded as run on the host CPU.
    class Device:
        type = "cuda"
        index = 0

    class Tensor:
        shape = (2,)
        device = Device()

    m = benchmark(lambda: Tensor(), warmup=0, repeats=1, sync=None)
    assert (m.device, m.device_kind) == ("cuda:0", "gpu")
    assert m.device_source == "the result: tensor on cuda:0"
