"""detect_hardware: where the work ran, resolved by attributes; each number's source recorded."""

from pathlib import Path

import numpy as np
import pytest

from neural_cost import HardwareError, Measurement, analyze_gap, estimate_operations
from neural_cost.core import Operation
from neural_cost.hardware import detect as detect_module
from neural_cost.hardware import nvidia
from neural_cost.hardware.detect import detect_hardware, resolve_device

FIXTURES = Path(__file__).parent / "fixtures"


class TorchDevice:
    def __init__(self, type_, index=None):
        self.type, self.index = type_, index


class JaxDevice:
    def __init__(self, platform, device_kind, id_=0):
        self.platform, self.device_kind, self.id = platform, device_kind, id_


class JaxArray:
    shape = (2,)

    def __init__(self, *devices):
        self._devices = devices

    def devices(self):
        return set(self._devices)


class Tensor:
    shape = (2,)

    def __init__(self, device):
        self.device = device


@pytest.mark.parametrize(
    ("device", "kind", "platform", "index"),
    [
        (None, "cpu", "cpu", 0),
        ("cpu", "cpu", "cpu", 0),
        ("cuda", "gpu", "cuda", 0),
        ("cuda:1", "gpu", "cuda", 1),
        ("GPU:2", "gpu", "cuda", 2),
        ("mps", "gpu", "mps", 0),
        ("tpu", "tpu", "tpu", 0),
        (TorchDevice("cuda", 3), "gpu", "cuda", 3),
        (TorchDevice("cpu"), "cpu", "cpu", 0),
        (JaxDevice("gpu", "NVIDIA H100 80GB HBM3", 1), "gpu", "cuda", 1),
        (JaxArray(JaxDevice("cpu", "cpu")), "cpu", "cpu", 0),
        (Tensor(TorchDevice("cuda", 0)), "gpu", "cuda", 0),
        (Tensor("/job:localhost/replica:0/task:0/device:GPU:1"), "gpu", "cuda", 1),
        (np.zeros(3), "cpu", "cpu", 0),  # numpy 2 arrays say device == "cpu"
    ],
)
def test_devices_are_resolved_by_their_attributes(device, kind, platform, index):
    ref = resolve_device(device)
    assert (ref.kind, ref.platform, ref.index) == (kind, platform, index)


def test_unknown_device_strings_list_what_is_available():
    with pytest.raises(HardwareError, match=r"device='npu7' is not a device .* Available here: cpu"):
        resolve_device("npu7")
    with pytest.raises(HardwareError, match="is not a device"):
        resolve_device(3.5)


def test_host_cpu_detection_cites_the_formula():
    spec, detection = detect_hardware(memory_bandwidth=20e9)
    assert spec.kind == "cpu" and detection.kind == "cpu"
    assert detection.sources["peak_flops[float32]"].startswith("formula: ")
    assert detection.sources["memory_bandwidth"] == "user-supplied"
    assert spec.peak("float32") == detection.details["peak_flops_by_dtype"]["float32"]


def test_a_missing_gpu_is_a_clear_error_not_a_crash(monkeypatch):
    monkeypatch.setattr(nvidia, "probe_nvidia", lambda: nvidia.NvidiaProbe((), ("NVML unavailable: test",)))
    with pytest.raises(HardwareError, match=r"cuda:1 is not available: no NVIDIA GPU found \(NVML unavailable: test\)"):
        detect_hardware("cuda:1")


def _fixture_probe(name):
    gpus = nvidia.parse_nvidia_smi_csv((FIXTURES / name).read_text())
    return lambda: nvidia.NvidiaProbe(gpus, ())


def test_an_h100_box_is_scored_from_its_table_row(monkeypatch):
    monkeypatch.setattr(nvidia, "probe_nvidia", _fixture_probe("nvidia_smi_8x_h100_sxm.csv"))
    spec, detection = detect_hardware("cuda:3")
    # H100 SXM datasheet: BF16 tensor 1,979 TFLOPS with sparsity → 989.5 dense; 3.35 TB/s
    assert spec.kind == "gpu" and spec.peak("bfloat16") == pytest.approx(989.5e12) and spec.memory_bandwidth == 3.35e12
    assert detection.device == "cuda:3" and detection.details["table_row"]
    assert spec.memory_capacity == 81559 * 2**20  # nvidia-smi's memory.total, 81,559 MiB
    assert detection.sources["memory_capacity"].startswith("nvidia-smi")


def test_a_jax_gpu_device_is_matched_by_its_device_kind_without_nvml(monkeypatch):
    monkeypatch.setattr(nvidia, "probe_nvidia", lambda: nvidia.NvidiaProbe((), ("NVML unavailable",)))
    spec, detection = detect_hardware(JaxDevice("gpu", "NVIDIA A100-SXM4-80GB"))
    # A100 SXM4 80GB datasheet: 2,039 GB/s
    assert spec.memory_bandwidth == pytest.approx(2.039e12)
    assert any("not seen by NVML" in note for note in detection.notes)


def test_an_unknown_gpu_name_has_no_row(monkeypatch):
    monkeypatch.setattr(detect_module, "available_devices", lambda: ["cpu"])
    with pytest.raises(HardwareError, match="has no row in neural-cost's GPU table"):
        detect_hardware(JaxDevice("gpu", "Imaginary GPU 9000"))


def test_no_tpu_table_is_said_plainly():
    with pytest.raises(HardwareError, match="no TPU peak table yet"):
        detect_hardware("tpu")


def test_device_mismatch_from_a_detected_gpu_spec(monkeypatch):
    monkeypatch.setattr(nvidia, "probe_nvidia", _fixture_probe("nvidia_smi_a100_sxm4_80gb.csv"))
    gpu, _ = detect_hardware("cuda")
    estimate = estimate_operations([Operation("mm", "matmul", ((64, 64), (64, 64)), (64, 64))])
    cpu_run = Measurement((1e-3,) * 5, device="host", device_kind="cpu")
    report = analyze_gap(estimate, cpu_run, gpu)
    assert report.device_mismatch and "Device mismatch" in report.render()
    gpu_run = Measurement((1e-3,) * 5, device="cuda:0", device_kind="gpu")
    assert not analyze_gap(estimate, gpu_run, gpu).device_mismatch


def _apple(monkeypatch, sysctl_name, displays_name):
    from neural_cost.hardware import apple

    sysctl = apple.parse_sysctl((FIXTURES / sysctl_name).read_text())
    cores = apple.parse_gpu_cores((FIXTURES / displays_name).read_text())
    monkeypatch.setattr(apple, "probe_apple", lambda: apple.AppleProbe(sysctl, cores, ()))
    monkeypatch.setattr(detect_module.sys, "platform", "darwin")


def test_an_apple_m1_cpu_from_its_sysctl_dump(monkeypatch):
    _apple(monkeypatch, "sysctl_apple_m1.txt", "system_profiler_displays_m1.json")
    spec, detection = detect_hardware("cpu")
    # 4 performance cores × 3.2 GHz × 32 + 4 efficiency cores × 2.064 GHz × 16 (NEON) = 541.696 GFLOP/s
    assert spec.kind == "cpu" and spec.peak("float32") == pytest.approx(541.696e9)
    assert "4 P cores × 3.2 GHz × 32 + 4 E cores × 2.064 GHz × 16" in detection.sources["peak_flops[float32]"]
    assert spec.memory_bandwidth == pytest.approx(68.25e9)  # LPDDR4X-4266 on a 128-bit bus, shared with the GPU
    assert spec.memory_capacity == 8 * 2**30  # hw.memsize of the 8 GB M1


def test_a_binned_m3_max_gpu_is_told_apart_by_core_count(monkeypatch):
    _apple(monkeypatch, "sysctl_apple_m3_max_binned.txt", "system_profiler_displays_m3_max_binned.json")
    from neural_cost.hardware.tables import match_apple_gpu

    row = match_apple_gpu("Apple M3 Max", 30)
    assert row.memory_bandwidth == 300e9  # the 30-core GPU variant: 300 GB/s, not the 40-core's 400 GB/s
    with pytest.raises(HardwareError, match="no FP32 peak for the"):  # M3 GPU clocks are not confirmed: no guess
        detect_hardware("mps")
