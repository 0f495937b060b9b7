"""TensorFlow's calibration probes: verified results, wrong ones rejected, constant inputs refused,
the adapter's calibrate(), and their lines in ``neural-cost hardware --calibrate``. No timing
thresholds: only what was run and how it was checked."""

import os
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")

from neural_cost import MeasurementError  # noqa: E402
from neural_cost.adapters import TensorFlowAdapter  # noqa: E402
from neural_cost.adapters._tf import calibrate as tf_calibrate  # noqa: E402
from neural_cost.adapters._tf.calibrate import tf_conv_probe, tf_copy_probe, tf_matmul_probe  # noqa: E402

LIVE_X86_LINUX = (
    sys.platform.startswith("linux")
    and platform.machine().lower() in {"x86_64", "amd64"}
    and Path("/proc/cpuinfo").exists()
)


@pytest.fixture(autouse=True)
def private_calibration_cache(tmp_path, monkeypatch):
    """``hardware --calibrate`` writes compute peaks: keep them out of the session's shared cache."""
    monkeypatch.setenv("NEURAL_COST_CACHE_DIR", str(tmp_path / "neural-cost-cache"))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_matmul_probe_is_verified(dtype):
    result = tf_matmul_probe()(dtype, 64, 2)
    assert (result.probe, result.dtype, result.size) == ("matmul", dtype, 64)
    assert result.work == 524_288  # 2·64³
    assert len(result.samples_seconds) == 2
    assert "rows checked against a float64 product" in result.verified


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_convolution_probe_is_verified(dtype):
    result = tf_conv_probe()(dtype, 1)
    assert (result.probe, result.dtype, result.size) == ("conv", dtype, 16)
    assert result.work == 3_699_376_128  # 2·16·28·28·128·128·3·3, as hardware.kernels.CONV_SHAPE
    assert result.verified.startswith("8 outputs checked against float64 sums")


def test_a_wrong_matmul_is_rejected(monkeypatch):
    right = tf.linalg.matmul
    monkeypatch.setattr(tf.linalg, "matmul", lambda a, b: right(a, tf.transpose(b)))  # fast, and wrong
    with pytest.raises(MeasurementError, match="float32 matmul probe returned a wrong product"):
        tf_matmul_probe()("float32", 64, 1)


def test_a_wrong_convolution_is_rejected(monkeypatch):
    right = tf.nn.conv2d
    monkeypatch.setattr(tf.nn, "conv2d", lambda x, w, **kw: right(x, w, **kw) + 1.0)
    with pytest.raises(MeasurementError, match="float32 convolution probe returned a wrong result"):
        tf_conv_probe()("float32", 1)


class _ConstantRng:
    """Draws ones: the input a backend could store as one broadcast value."""

    def standard_normal(self, shape, dtype=np.float64):
        return np.ones(shape, dtype)

    def integers(self, low, high, size):
        return np.arange(size) % high


@pytest.mark.parametrize("run", [lambda: tf_matmul_probe()("float32", 64, 1), lambda: tf_conv_probe()("float32", 1)])
def test_constant_inputs_are_refused(monkeypatch, run):
    monkeypatch.setattr(tf_calibrate.np.random, "default_rng", lambda seed: _ConstantRng())
    with pytest.raises(MeasurementError, match="input is constant"):
        run()


def test_unknown_dtypes_are_named():
    with pytest.raises(MeasurementError, match="no matmul probe for dtype 'int4'"):
        tf_matmul_probe()("int4", 64, 1)
    with pytest.raises(MeasurementError, match="no convolution probe for dtype 'float64'"):
        tf_conv_probe()("float64", 1)


def test_copy_probe_doubles_every_byte_once():
    result = tf_copy_probe()(1 << 20, 2)
    assert (result.probe, result.size) == ("copy", 1_048_576)
    assert result.work == 2_097_152  # each of 2^20 bytes read once and written once


def test_adapter_calibrate_measures_through_tensorflow():
    spec, result = TensorFlowAdapter().calibrate(size=64, copy_bytes=1 << 20, repeats=1)
    assert result.framework == f"tensorflow {tf.__version__}" and result.device == "/CPU:0"
    # bfloat16 only where the formula has a bfloat16 rate (AVX512_BF16 or AMX)
    has_bf16 = result.reference is not None and result.reference.has_peak("bfloat16")
    assert [p.dtype for p in result.matmuls] == (["float32", "bfloat16"] if has_bf16 else ["float32"])
    assert all(p.work == 524_288 for p in result.matmuls)  # 2·64³
    assert spec.name.endswith("(calibrated)") and spec.peak_flops == result.matmuls[0].rate
    assert spec.memory_bandwidth == result.copy.rate
    assert "copy measured with numpy on all cores" in "\n".join(result.notes)


def test_adapter_calibrate_takes_the_dtypes_asked_for():
    _, result = TensorFlowAdapter().calibrate(dtypes=("float32",), size=64, copy_bytes=1 << 20, repeats=1)
    assert [p.dtype for p in result.matmuls] == ["float32"]


@pytest.mark.skipif(not LIVE_X86_LINUX, reason="reads an x86 Linux host's /proc files")
def test_hardware_calibrate_lists_tensorflow_kernels(capsys):
    from neural_cost.cli.main import main

    assert main(["hardware", "--calibrate", "--size", "64"]) == 0
    out = capsys.readouterr().out
    framework = f"tensorflow {tf.__version__}"
    assert f"[{framework} 64² matmul, best of 5; " in out
    assert f"[{framework} conv 16, best of 5; 8 outputs checked" in out
