"""Calibration: random inputs, verified probes, measurements beside the formula."""

import numpy as np
import pytest

from neural_cost import MeasurementError
from neural_cost.hardware.calibrate import calibrate, numpy_matmul_probe

SMALL = {"size": 128, "copy_bytes": 8 << 20, "repeats": 2}


def test_host_calibration_measures_float32_and_copy_beside_the_formula():
    spec, result = calibrate(**SMALL)
    (matmul,) = result.matmuls
    assert matmul.dtype == "float32" and matmul.work == 2 * 128**3  # 4,194,304 FLOPs per product
    assert spec.kind == "cpu" and spec.peak("float32") == matmul.rate
    assert spec.memory_bandwidth == result.copy.rate and result.copy.work == 2 * (8 << 20)  # read + written
    assert result.ratios["float32"] == pytest.approx(matmul.rate / result.reference.peak("float32"))
    assert "memory_bandwidth" not in result.ratios  # a CPU has no independent bandwidth figure
    from neural_cost.core.units import format_percent

    assert "float32           " in result.render()
    assert f"= {format_percent(result.ratios['float32'])} of " in result.render()


def test_a_wrong_matmul_probe_is_rejected():
    wrong = numpy_matmul_probe(matmul=lambda a, b: a @ b.T)  # the wrong product, fast or not
    with pytest.raises(MeasurementError, match=r"returned a wrong product .* rejected"):
        calibrate(matmul=wrong, **SMALL)


def test_a_constant_input_is_refused():
    constant = numpy_matmul_probe(fill=lambda shape, dtype, rng: np.ones(shape, dtype))
    with pytest.raises(MeasurementError, match=r"input is constant .* random data"):
        calibrate(matmul=constant, **SMALL)


def test_bfloat16_on_the_host_points_to_a_framework():
    from neural_cost import HardwareError

    with pytest.raises(HardwareError, match=r"JaxAdapter\(\).calibrate\(dtypes=\('bfloat16',\)\)"):
        calibrate(dtypes=("bfloat16",), **SMALL)


def test_measurements_above_the_reference_are_warned(monkeypatch):
    from neural_cost.hardware import calibrate as module
    from neural_cost.hardware.calibrate import ProbeResult

    def impossible(dtype, n, repeats):  # claims 10 PFLOP/s: more than any CPU formula
        return ProbeResult("matmul", dtype, n, 2 * n**3, (2 * n**3 / 1e16,), "test")

    _, result = module.calibrate(matmul=impossible, **SMALL)
    assert any("cannot beat a true peak" in w or "is wrong" in w for w in result.warnings)


def test_jax_calibration_measures_bfloat16_through_the_framework():
    pytest.importorskip("jax")
    from neural_cost.adapters import JaxAdapter

    spec, result = JaxAdapter().calibrate(dtypes=("float32", "bfloat16"), size=128, copy_bytes=8 << 20, repeats=2)
    assert [p.dtype for p in result.matmuls] == ["float32", "bfloat16"]
    assert spec.has_peak("bfloat16") and spec.kind == "cpu"
    assert "in place" in result.copy.verified
