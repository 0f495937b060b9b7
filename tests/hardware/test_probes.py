"""Device probes: NVIDIA through NVML and nvidia-smi, Apple Silicon through sysctl and system_profiler.

Nothing here needs a GPU or a Mac: NVML is a fake module and the commands a fake runner,
both answering with recorded values. Fixtures (tests/hardware/fixtures/):

- nvidia_smi_8x_h100_sxm.csv: hand-assembled in nvidia-smi's `--format=csv,noheader,nounits`
  layout for our query's column order. Name, memory.total (81559 MiB), max clocks (1980 /
  2619 MHz) and driver (580.126.20) match a public recording of an 8×H100 SXM box's
  `nvidia-smi --query-gpu=...` output (another column order, with units); the UUIDs are
  made up.
- nvidia_smi_a100_sxm4_80gb.csv: hand-written; 81920 MiB and 1410 / 1593 MHz as recorded in
  public nvidia-smi outputs of A100-SXM4-80GB machines; UUID and driver made up.
- nvidia_smi_rtx_4090.csv: hand-written from a public recording of
  `name, driver_version, memory.total, compute_cap, clocks.max.sm, clocks.max.memory`
  (24564 MiB, 8.9, 3165 MHz, 10501 MHz, 580.159.03) reordered; UUID made up.
- sysctl_apple_m1.txt, sysctl_apple_m2_pro.txt, sysctl_apple_m3_max_binned.txt: hand-written
  `sysctl -a` excerpts (kern/vm neighbours, the hw. and machdep.cpu. keys) in the layout of a
  real `sysctl hw` dump of an unbinned M3 Max (16 cores, 12P + 4E) published on Qiita. The
  binned M3 Max's brand, hw.memsize 38654705664, hw.ncpu 14 and 30 GPU cores match a public
  recording of that machine; its 10P + 4E split is Apple's spec. None has hw.cpufrequency:
  Apple Silicon does not have it.
- system_profiler_displays_m1.json, system_profiler_displays_m3_max_binned.json: hand-written
  in the `system_profiler SPDisplaysDataType -json` layout seen in published outputs
  (M1 7-core GPU, as in the base MacBook Air; M3 Max 30-core GPU).
- system_profiler_displays_m2_pro.txt: hand-written in the plain-text layout (19-core GPU).
"""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from neural_cost.core.errors import HardwareError
from neural_cost.hardware.apple import parse_gpu_cores, parse_sysctl, probe_apple
from neural_cost.hardware.nvidia import (
    NVIDIA_SMI_FIELDS,
    NvidiaGpu,
    parse_nvidia_smi_csv,
    probe_nvidia,
)

FIXTURES = Path(__file__).parent / "fixtures"
MIB = 1024 * 1024
INSTALL_NOTE = "NVML unavailable: nvidia-ml-py is not installed (pip install 'neural-cost[nvidia]')"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


H100_CSV = fixture("nvidia_smi_8x_h100_sxm.csv")
A100_CSV = fixture("nvidia_smi_a100_sxm4_80gb.csv")
RTX4090_CSV = fixture("nvidia_smi_rtx_4090.csv")
M1_SYSCTL = fixture("sysctl_apple_m1.txt")
M2_PRO_SYSCTL = fixture("sysctl_apple_m2_pro.txt")
M3_MAX_SYSCTL = fixture("sysctl_apple_m3_max_binned.txt")
M1_DISPLAYS_JSON = fixture("system_profiler_displays_m1.json")
M3_MAX_DISPLAYS_JSON = fixture("system_profiler_displays_m3_max_binned.json")
M2_PRO_DISPLAYS_TEXT = fixture("system_profiler_displays_m2_pro.txt")


# --- fakes -------------------------------------------------------------------------------


class FakeNVMLError(Exception):
    """pynvml.NVMLError's shape: a numeric value, and str() is NVML's message."""

    _messages: ClassVar[dict[int, str]] = {
        3: "Not Supported",
        9: "Driver Not Loaded",
        12: "NVML Shared Library Not Found",
        15: "GPU is lost",
    }

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return self._messages.get(self.value, f"NVML Error with code {self.value}")


NOT_SUPPORTED = FakeNVMLError(3)

# Values an H100 SXM and an A100-SXM4-80GB report through NVML. 85520809984 B = 81559 MiB and
# 85899345920 B = 81920 MiB are the totals nvidia-smi prints for them; bus widths are HBM's 5120.
H100_DEVICE = {
    "name": "NVIDIA H100 80GB HBM3",
    "uuid": "GPU-6f1c2a90-3d4e-5b7a-8c91-0a2b3c4d5e60",
    "memory": 85_520_809_984,
    "sm_clock": 1980,
    "memory_clock": 2619,
    "bus_width": 5120,
    "capability": (9, 0),
}
A100_DEVICE = {
    "name": "NVIDIA A100-SXM4-80GB",
    "uuid": "GPU-2d7e9b14-8a35-4c6f-b0d2-7e91a4c35f08",
    "memory": 85_899_345_920,
    "sm_clock": 1410,
    "memory_clock": 1593,
    "bus_width": 5120,
    "capability": (8, 0),
}


class FakeNvml:
    """The slice of pynvml that probe_nvidia calls, answering from a list of device dicts.

    ``as_bytes`` makes string getters return bytes, as nvidia-ml-py did before 11.515. A device
    value that is an exception is raised by its getter instead of returned.
    """

    NVMLError = FakeNVMLError
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2

    def __init__(
        self,
        devices: Sequence[dict[str, Any]],
        *,
        as_bytes: bool = False,
        init_error: Exception | None = None,
        driver: str = "550.54.15",
    ) -> None:
        self.devices = list(devices)
        self.as_bytes = as_bytes
        self.init_error = init_error
        self.driver = driver
        self.initialised = False
        self.shutdowns = 0

    def _answer(self, value: Any) -> Any:
        if isinstance(value, Exception):
            raise value
        if self.as_bytes and isinstance(value, str):
            return value.encode()
        return value

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error
        self.initialised = True

    def nvmlShutdown(self) -> None:
        assert self.initialised, "nvmlShutdown without a successful nvmlInit"
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlSystemGetDriverVersion(self) -> Any:
        return self._answer(self.driver)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> dict[str, Any]:
        return self._answer(self.devices[index].get("handle", self.devices[index]))  # type: ignore[no-any-return]

    def nvmlDeviceGetName(self, handle: dict[str, Any]) -> Any:
        return self._answer(handle["name"])

    def nvmlDeviceGetUUID(self, handle: dict[str, Any]) -> Any:
        return self._answer(handle["uuid"])

    def nvmlDeviceGetMemoryInfo(self, handle: dict[str, Any]) -> SimpleNamespace:
        total = self._answer(handle["memory"])
        return SimpleNamespace(total=total, free=total // 2, used=total - total // 2)

    def nvmlDeviceGetMaxClockInfo(self, handle: dict[str, Any], clock: int) -> int:
        key = {self.NVML_CLOCK_SM: "sm_clock", self.NVML_CLOCK_MEM: "memory_clock"}[clock]
        return self._answer(handle[key])  # type: ignore[no-any-return]

    def nvmlDeviceGetMemoryBusWidth(self, handle: dict[str, Any]) -> int:
        return self._answer(handle["bus_width"])  # type: ignore[no-any-return]

    def nvmlDeviceGetCudaComputeCapability(self, handle: dict[str, Any]) -> tuple[int, int]:
        return self._answer(handle["capability"])  # type: ignore[no-any-return]


class FakeRunner:
    """subprocess.run's shape; answers by program name and records every argv it was given."""

    def __init__(self, answers: dict[str, Callable[[list[str]], Any]]) -> None:
        self.answers = answers
        self.calls: list[list[str]] = []

    def __call__(self, args: Sequence[str], **kwargs: Any) -> Any:
        argv = list(args)
        self.calls.append(argv)
        assert kwargs == {"capture_output": True, "text": True, "timeout": kwargs["timeout"], "check": False}
        answer = self.answers.get(argv[0])
        if answer is None:
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        return answer(argv)


def completed(stdout: str = "", returncode: int = 0, stderr: str = "") -> Callable[[list[str]], Any]:
    return lambda argv: subprocess.CompletedProcess(argv, returncode, stdout=stdout, stderr=stderr)


def raises(error: BaseException) -> Callable[[list[str]], Any]:
    def answer(argv: list[str]) -> Any:
        raise error

    return answer


def no_commands() -> FakeRunner:
    return FakeRunner({})


# --- NVML --------------------------------------------------------------------------------


@pytest.mark.parametrize("as_bytes", [False, True], ids=["str-names", "bytes-names"])
def test_nvml_reads_every_field_of_each_gpu(as_bytes: bool) -> None:
    nvml = FakeNvml([H100_DEVICE, A100_DEVICE], as_bytes=as_bytes)
    runner = no_commands()
    probe = probe_nvidia(nvml=nvml, run=runner)

    assert probe.notes == ()
    assert runner.calls == []  # NVML answered: nvidia-smi is not run
    assert nvml.shutdowns == 1
    assert probe.gpus == (
        NvidiaGpu(
            index=0,
            name="NVIDIA H100 80GB HBM3",
            uuid="GPU-6f1c2a90-3d4e-5b7a-8c91-0a2b3c4d5e60",
            memory_total_bytes=81559 * MIB,
            max_sm_clock_mhz=1980,
            max_memory_clock_mhz=2619,
            memory_bus_width_bits=5120,
            compute_capability=(9, 0),
            driver_version="550.54.15",
            source="nvml",
        ),
        NvidiaGpu(
            index=1,
            name="NVIDIA A100-SXM4-80GB",
            uuid="GPU-2d7e9b14-8a35-4c6f-b0d2-7e91a4c35f08",
            memory_total_bytes=81920 * MIB,
            max_sm_clock_mhz=1410,
            max_memory_clock_mhz=1593,
            memory_bus_width_bits=5120,
            compute_capability=(8, 0),
            driver_version="550.54.15",
            source="nvml",
        ),
    )
    assert all(type(gpu.name) is str and type(gpu.uuid) is str for gpu in probe.gpus)
    assert type(probe.gpus[0].driver_version) is str


def test_nvml_clocks_that_raise_become_none_with_a_note() -> None:
    vgpu = dict(A100_DEVICE, sm_clock=NOT_SUPPORTED, memory_clock=NOT_SUPPORTED)
    probe = probe_nvidia(nvml=FakeNvml([H100_DEVICE, vgpu]), run=no_commands())

    assert [gpu.name for gpu in probe.gpus] == ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"]
    assert probe.gpus[0].max_sm_clock_mhz == 1980
    a100 = probe.gpus[1]
    assert (a100.max_sm_clock_mhz, a100.max_memory_clock_mhz) == (None, None)
    assert (a100.memory_bus_width_bits, a100.compute_capability) == (5120, (8, 0))  # the rest is still read
    assert probe.notes == (
        "NVML device 1 (NVIDIA A100-SXM4-80GB): unavailable: max SM clock (Not Supported); "
        "max memory clock (Not Supported)",
    )


def test_nvml_zero_clock_is_unknown_not_zero() -> None:
    probe = probe_nvidia(nvml=FakeNvml([dict(H100_DEVICE, sm_clock=0)]), run=no_commands())
    assert probe.gpus[0].max_sm_clock_mhz is None


def test_nvml_without_bus_width_function_keeps_the_gpu() -> None:
    class OldNvml(FakeNvml):
        nvmlDeviceGetMemoryBusWidth = None  # type: ignore[assignment]  # older nvidia-ml-py

    probe = probe_nvidia(nvml=OldNvml([H100_DEVICE]), run=no_commands())
    assert probe.gpus[0].memory_bus_width_bits is None
    assert probe.gpus[0].max_sm_clock_mhz == 1980
    assert probe.notes == (
        "NVML device 0 (NVIDIA H100 80GB HBM3): unavailable: memory bus width "
        "(this nvidia-ml-py has no nvmlDeviceGetMemoryBusWidth)",
    )


def test_nvml_device_that_cannot_be_named_is_skipped_with_a_note() -> None:
    lost = dict(H100_DEVICE, handle=FakeNVMLError(15))
    nvml = FakeNvml([lost, A100_DEVICE])
    probe = probe_nvidia(nvml=nvml, run=no_commands())
    assert [gpu.index for gpu in probe.gpus] == [1]
    assert probe.notes == ("NVML device 0 skipped: GPU is lost",)
    assert nvml.shutdowns == 1


def test_nvml_with_no_gpus_is_an_answer_and_nvidia_smi_is_not_run() -> None:
    runner = no_commands()
    probe = probe_nvidia(nvml=FakeNvml([]), run=runner)
    assert probe.gpus == ()
    assert probe.notes == ("NVML found no NVIDIA GPU",)
    assert runner.calls == []


def test_nvml_init_failure_is_a_note_then_nvidia_smi_is_tried() -> None:
    nvml = FakeNvml([H100_DEVICE], init_error=FakeNVMLError(12))
    runner = FakeRunner({"nvidia-smi": completed(A100_CSV)})
    probe = probe_nvidia(nvml=nvml, run=runner)

    assert probe.notes == ("NVML init failed: NVML Shared Library Not Found",)
    assert nvml.shutdowns == 0  # never initialised, so never shut down
    assert [gpu.name for gpu in probe.gpus] == ["NVIDIA A100-SXM4-80GB"]
    assert probe.gpus[0].source == "nvidia-smi"
    assert runner.calls == [
        [
            "nvidia-smi",
            "--query-gpu=index,name,uuid,memory.total,clocks.max.sm,clocks.max.memory,driver_version,compute_cap",
            "--format=csv,noheader,nounits",
        ]
    ]


def test_nvml_count_failure_and_shutdown_failure_are_both_notes() -> None:
    class BrokenNvml(FakeNvml):
        def nvmlDeviceGetCount(self) -> int:
            raise FakeNVMLError(9)

        def nvmlShutdown(self) -> None:
            raise FakeNVMLError(999)

    runner = FakeRunner({"nvidia-smi": completed(H100_CSV)})
    probe = probe_nvidia(nvml=BrokenNvml([H100_DEVICE]), run=runner)
    assert probe.notes == (
        "NVML could not count GPUs: Driver Not Loaded",
        "NVML shutdown failed: NVML Error with code 999",
    )
    assert len(probe.gpus) == 8 and probe.gpus[0].source == "nvidia-smi"


def test_programming_errors_are_not_swallowed() -> None:
    # A TypeError is not an NVML outcome: it propagates instead of becoming a note.
    nvml = FakeNvml([H100_DEVICE], init_error=TypeError("nvmlInit() takes no arguments"))
    with pytest.raises(TypeError):
        probe_nvidia(nvml=nvml, run=no_commands())


def test_absent_nvml_names_the_package_and_the_extra_then_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` raises ImportError
    runner = FakeRunner({"nvidia-smi": completed(RTX4090_CSV)})
    probe = probe_nvidia(run=runner)

    assert probe.notes == (INSTALL_NOTE,)
    assert "nvidia-ml-py" in probe.notes[0] and "neural-cost[nvidia]" in probe.notes[0]
    assert [(gpu.name, gpu.source) for gpu in probe.gpus] == [("NVIDIA GeForce RTX 4090", "nvidia-smi")]


def test_importing_the_probes_does_not_try_to_import_pynvml() -> None:
    # In a fresh interpreter, a finder that records every attempt to import pynvml.
    script = (
        "import sys\n"
        "attempts = []\n"
        "class Spy:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pynvml':\n"
        "            attempts.append(name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Spy())\n"
        "import neural_cost.hardware.nvidia, neural_cost.hardware.apple\n"
        "assert attempts == [], attempts\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


# --- nvidia-smi failures -----------------------------------------------------------------


@pytest.fixture
def no_pynvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)


@pytest.mark.usefixtures("no_pynvml")
@pytest.mark.parametrize(
    ("answer", "note"),
    [
        (None, "nvidia-smi not found on PATH"),
        (raises(subprocess.TimeoutExpired(["nvidia-smi"], 30)), "nvidia-smi timed out after 30 s"),
        (raises(PermissionError(13, "Permission denied")), "nvidia-smi could not be run: [Errno 13] Permission denied"),
        (
            completed(
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                "Make sure that the latest NVIDIA driver is installed and running.\n\n",
                returncode=9,
            ),
            "nvidia-smi exited with status 9: NVIDIA-SMI has failed because it couldn't communicate with the "
            "NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
        ),
        (completed("No devices were found\n", returncode=6), "nvidia-smi exited with status 6: No devices were found"),
        (completed(""), "nvidia-smi listed no GPUs"),
        (
            completed("garbage\n"),
            "nvidia-smi output could not be read: nvidia-smi line has 1 columns, expected 8 "
            "(index, name, uuid, memory.total, clocks.max.sm, clocks.max.memory, driver_version, compute_cap): "
            "'garbage'",
        ),
    ],
    ids=["absent", "timeout", "permission", "driver-failed", "no-devices", "empty", "garbage"],
)
def test_nvidia_smi_failures_are_notes(answer: Callable[[list[str]], Any] | None, note: str) -> None:
    runner = FakeRunner({} if answer is None else {"nvidia-smi": answer})
    probe = probe_nvidia(run=runner)
    assert probe.gpus == ()
    assert probe.notes == (INSTALL_NOTE, note)


@pytest.mark.usefixtures("no_pynvml")
def test_old_driver_without_compute_cap_is_asked_again_without_it() -> None:
    def answer(argv: list[str]) -> Any:
        if "compute_cap" in argv[1]:
            return subprocess.CompletedProcess(argv, 2, stdout='Field "compute_cap" is not a valid field to query.\n')
        return subprocess.CompletedProcess(
            argv,
            0,
            stdout="0, Tesla V100-SXM2-16GB, GPU-0b1e6c33-2a4d-4f18-9c77-5e80d1f2a3b4, 16160, 1530, 877, 470.82.01",
        )

    runner = FakeRunner({"nvidia-smi": answer})
    probe = probe_nvidia(run=runner)
    assert len(runner.calls) == 2
    assert "compute_cap" not in runner.calls[1][1]
    assert probe.notes == (
        INSTALL_NOTE,
        "nvidia-smi does not know the compute_cap field (driver older than R510); asked without it",
    )
    (v100,) = probe.gpus
    assert (v100.name, v100.memory_total_bytes, v100.max_sm_clock_mhz, v100.compute_capability) == (
        "Tesla V100-SXM2-16GB",
        16160 * MIB,
        1530,
        None,
    )


# --- nvidia-smi CSV ----------------------------------------------------------------------


def test_parse_8x_h100_sxm() -> None:
    gpus = parse_nvidia_smi_csv(H100_CSV)
    assert [gpu.index for gpu in gpus] == list(range(8))
    assert {gpu.name for gpu in gpus} == {"NVIDIA H100 80GB HBM3"}
    assert len({gpu.uuid for gpu in gpus}) == 8
    assert gpus[7].uuid == "GPU-6f1c2a90-3d4e-5b7a-8c91-0a2b3c4d5e67"
    for gpu in gpus:
        assert gpu.memory_total_bytes == 85_520_809_984  # 81559 MiB × 1048576
        assert (gpu.max_sm_clock_mhz, gpu.max_memory_clock_mhz) == (1980, 2619)
        assert gpu.compute_capability == (9, 0)
        assert gpu.driver_version == "580.126.20"
        assert gpu.memory_bus_width_bits is None  # nvidia-smi cannot be asked for it
        assert gpu.source == "nvidia-smi"


def test_parse_a100_sxm4_80gb() -> None:
    (gpu,) = parse_nvidia_smi_csv(A100_CSV)
    assert gpu == NvidiaGpu(
        index=0,
        name="NVIDIA A100-SXM4-80GB",
        uuid="GPU-2d7e9b14-8a35-4c6f-b0d2-7e91a4c35f08",
        memory_total_bytes=85_899_345_920,  # 81920 MiB × 1048576
        max_sm_clock_mhz=1410,
        max_memory_clock_mhz=1593,
        memory_bus_width_bits=None,
        compute_capability=(8, 0),
        driver_version="550.90.07",
        source="nvidia-smi",
    )


def test_parse_rtx_4090() -> None:
    (gpu,) = parse_nvidia_smi_csv(RTX4090_CSV)
    assert gpu.name == "NVIDIA GeForce RTX 4090"
    assert gpu.memory_total_bytes == 25_757_220_864  # 24564 MiB × 1048576
    assert (gpu.max_sm_clock_mhz, gpu.max_memory_clock_mhz) == (3165, 10501)
    assert gpu.compute_capability == (8, 9)
    assert gpu.driver_version == "580.159.03"


def test_parse_not_available_fields_become_none() -> None:
    line = (
        "0, NVIDIA H100 80GB HBM3, GPU-6f1c2a90-3d4e-5b7a-8c91-0a2b3c4d5e60, 81559, [N/A], [Not Supported], N/A, [N/A]"
    )
    (gpu,) = parse_nvidia_smi_csv(line)
    assert (gpu.max_sm_clock_mhz, gpu.max_memory_clock_mhz, gpu.driver_version, gpu.compute_capability) == (
        None,
        None,
        None,
        None,
    )
    assert gpu.memory_total_bytes == 81559 * MIB


def test_parse_custom_field_order() -> None:
    (gpu,) = parse_nvidia_smi_csv("NVIDIA L4, 1, GPU-x, 23034\n", fields=("name", "index", "uuid", "memory.total"))
    assert (gpu.index, gpu.name, gpu.memory_total_bytes, gpu.max_sm_clock_mhz) == (1, "NVIDIA L4", 23034 * MIB, None)


@pytest.mark.parametrize(
    ("text", "fields", "message"),
    [
        ("0, NVIDIA L4, GPU-x\n", NVIDIA_SMI_FIELDS, "has 3 columns, expected 8"),
        ("0, NVIDIA L4, GPU-x, lots, 2040, 6251, 550.54.15, 8.9\n", NVIDIA_SMI_FIELDS, "memory.total='lots'"),
        ("0, NVIDIA L4, GPU-x, 23034, 2040, 6251, 550.54.15, 8\n", NVIDIA_SMI_FIELDS, "compute_cap='8'"),
        ("0, NVIDIA L4, GPU-x, [N/A], 2040, 6251, 550.54.15, 8.9\n", NVIDIA_SMI_FIELDS, "lacks an index"),
        ("0, NVIDIA L4\n", ("index", "name"), "lack memory.total, uuid"),
    ],
)
def test_parse_rejects_text_that_is_not_this_query(text: str, fields: Sequence[str], message: str) -> None:
    with pytest.raises(HardwareError, match=message.replace("[", r"\[").replace(".", r"\.").replace("(", r"\(")):
        parse_nvidia_smi_csv(text, fields)


def test_to_dict_is_json_ready() -> None:
    (gpu,) = parse_nvidia_smi_csv(A100_CSV)
    assert gpu.to_dict()["compute_capability"] == [8, 0]
    assert probe_nvidia(nvml=FakeNvml([]), run=no_commands()).to_dict() == {
        "gpus": [],
        "notes": ["NVML found no NVIDIA GPU"],
    }


# --- Apple: sysctl -----------------------------------------------------------------------


def test_parse_sysctl_m1() -> None:
    info = parse_sysctl(M1_SYSCTL)
    assert info.brand == "Apple M1"
    assert info.is_apple_silicon
    assert (info.performance_cores, info.efficiency_cores) == (4, 4)
    assert (info.physical_cores, info.logical_cpus) == (8, 8)
    assert info.memory_bytes == 8 * 1024**3  # 8589934592: an 8 GB MacBook Air
    assert [(p.level, p.name, p.physical_cores, p.logical_cores) for p in info.perf_levels] == [
        (0, "Performance", 4, 4),
        (1, "Efficiency", 4, 4),
    ]
    # The seed's bug: hw.cpufrequency does not exist on Apple Silicon, and no clock is guessed.
    assert "hw.cpufrequency" not in M1_SYSCTL
    assert info.cpu_frequency_hz is None


def test_parse_sysctl_m3_max_binned() -> None:
    info = parse_sysctl(M3_MAX_SYSCTL)
    assert info.brand == "Apple M3 Max"
    assert (info.performance_cores, info.efficiency_cores) == (10, 4)  # 14-core CPU: 10P + 4E
    assert (info.physical_cores, info.logical_cpus) == (14, 14)
    assert info.memory_bytes == 36 * 1024**3  # 38654705664
    assert info.cpu_frequency_hz is None


def test_parse_sysctl_m2_pro() -> None:
    info = parse_sysctl(M2_PRO_SYSCTL)
    assert info.brand == "Apple M2 Pro"
    assert (info.performance_cores, info.efficiency_cores) == (8, 4)  # 12-core CPU: 8P + 4E
    assert info.physical_cores == 12
    assert info.memory_bytes == 32 * 1024**3  # 34359738368


def test_parse_sysctl_intel_mac_has_a_clock_and_no_perf_levels() -> None:
    text = (
        "hw.ncpu: 16\nhw.physicalcpu: 8\nhw.memsize: 34359738368\nhw.cpufrequency: 2400000000\n"
        "hw.cpufrequency_max: 2400000000\nmachdep.cpu.brand_string: Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz\n"
    )
    info = parse_sysctl(text)
    assert not info.is_apple_silicon
    assert (info.performance_cores, info.efficiency_cores, info.perf_levels) == (None, None, ())
    assert info.cpu_frequency_hz == 2_400_000_000


def test_parse_sysctl_three_core_types() -> None:
    text = (
        "hw.perflevel0.name: Super\nhw.perflevel0.physicalcpu: 2\nhw.perflevel1.name: Performance\n"
        "hw.perflevel1.physicalcpu: 4\nhw.perflevel2.name: Efficiency\nhw.perflevel2.physicalcpu: 6\n"
        "hw.optional.arm64: 1\n"
    )
    info = parse_sysctl(text)
    assert [(p.name, p.physical_cores) for p in info.perf_levels] == [
        ("Super", 2),
        ("Performance", 4),
        ("Efficiency", 6),
    ]
    assert info.is_apple_silicon and info.brand is None


def test_parse_sysctl_rejects_text_that_is_not_sysctl() -> None:
    with pytest.raises(HardwareError, match="no 'key: value' lines"):
        parse_sysctl("processor\t: 0\nmodel name\t: Intel\n")
    with pytest.raises(HardwareError, match=r"hw\.memsize='lots' is not an integer"):
        parse_sysctl("hw.memsize: lots\n")


# --- Apple: system_profiler --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cores"),
    [(M1_DISPLAYS_JSON, 7), (M3_MAX_DISPLAYS_JSON, 30), (M2_PRO_DISPLAYS_TEXT, 19)],
    ids=["m1-json", "m3-max-binned-json", "m2-pro-text"],
)
def test_parse_gpu_cores(text: str, cores: int) -> None:
    assert parse_gpu_cores(text) == cores


def test_parse_gpu_cores_ignores_the_cpu_core_line_of_other_sections() -> None:
    # `system_profiler SPHardwareDataType SPDisplaysDataType`: the hardware overview counts CPU
    # cores on a line of the same name, as a bare number on Intel Macs.
    hardware = "Hardware:\n\n    Hardware Overview:\n\n      Chip: Apple M2 Pro\n      Total Number of Cores: 12\n\n"
    memory = "Memory:\n\n    Memory:\n\n      Total Number of Cores: 99\n"
    assert parse_gpu_cores(hardware + M2_PRO_DISPLAYS_TEXT + memory) == 19
    intel_displays = "Graphics/Displays:\n\n    AMD Radeon Pro 5500M:\n\n      Type: GPU\n      VRAM (Total): 8 GB\n\n"
    assert parse_gpu_cores(hardware.replace("Apple M2 Pro", "Intel") + intel_displays) is None


def test_parse_gpu_cores_without_a_count() -> None:
    intel = '{"SPDisplaysDataType": [{"sppci_model": "Intel UHD Graphics 630", "spdisplays_vram_shared": "1536 MB"}]}'
    assert parse_gpu_cores(intel) is None
    assert parse_gpu_cores("Graphics/Displays:\n\n    Intel UHD Graphics 630:\n\n      Type: GPU\n") is None
    with pytest.raises(HardwareError, match="not JSON"):
        parse_gpu_cores('{"SPDisplaysDataType": [')


# --- Apple: probe ------------------------------------------------------------------------


def test_probe_apple_on_an_m3_max() -> None:
    runner = FakeRunner({"sysctl": completed(M3_MAX_SYSCTL), "system_profiler": completed(M3_MAX_DISPLAYS_JSON)})
    probe = probe_apple(run=runner)
    assert probe.notes == ()
    assert probe.sysctl is not None and probe.sysctl.brand == "Apple M3 Max"
    assert probe.gpu_cores == 30  # the binned variant: 300 GB/s, not the 40-core's 400 GB/s
    assert runner.calls == [["sysctl", "-a"], ["system_profiler", "SPDisplaysDataType", "-json"]]
    assert probe.to_dict()["sysctl"]["performance_cores"] == 10


def test_probe_apple_on_this_machine_is_a_note_not_an_exception() -> None:
    if platform.system() == "Darwin":
        pytest.skip("this test describes a machine that is not a Mac")
    probe = probe_apple()
    assert probe.sysctl is None and probe.gpu_cores is None
    assert probe.notes == (f"not macOS ({platform.system()}): Apple Silicon probing reads sysctl and system_profiler",)


def test_probe_apple_runs_nothing_off_macos(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_run(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("probe_apple ran a command on a machine that is not a Mac")

    monkeypatch.setattr(platform, "system", lambda: "Windows")
    monkeypatch.setattr(subprocess, "run", no_run)
    assert probe_apple().notes == ("not macOS (Windows): Apple Silicon probing reads sysctl and system_profiler",)


def test_probe_apple_failures_are_notes() -> None:
    probe = probe_apple(run=no_commands())
    assert probe.sysctl is None
    assert probe.notes == ("sysctl not found on PATH",)

    runner = FakeRunner(
        {"sysctl": completed(M1_SYSCTL), "system_profiler": raises(subprocess.TimeoutExpired(["system_profiler"], 30))}
    )
    probe = probe_apple(run=runner)
    assert probe.sysctl is not None and probe.sysctl.performance_cores == 4
    assert probe.gpu_cores is None
    assert probe.notes == ("system_profiler timed out after 30 s",)

    runner = FakeRunner({"sysctl": completed(M1_SYSCTL), "system_profiler": completed('{"SPDisplaysDataType": [')})
    assert probe_apple(run=runner).notes[0].startswith("system_profiler output could not be read: ")

    runner = FakeRunner({"sysctl": completed("not sysctl output\n")})
    assert probe_apple(run=runner).notes == (
        "sysctl output could not be read: sysctl text has no 'key: value' lines; pass the output of `sysctl -a`",
    )


def test_probe_apple_on_an_intel_mac_skips_the_gpu() -> None:
    intel = "hw.ncpu: 16\nhw.physicalcpu: 8\nmachdep.cpu.brand_string: Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz\n"
    runner = FakeRunner({"sysctl": completed(intel)})
    probe = probe_apple(run=runner)
    assert probe.notes == ("not Apple Silicon (Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz): GPU cores not probed",)
    assert runner.calls == [["sysctl", "-a"]]


def test_probe_apple_on_macos_11_notes_the_missing_split() -> None:
    old = "hw.ncpu: 8\nhw.physicalcpu: 8\nhw.memsize: 17179869184\nhw.optional.arm64: 1\n"
    old += "machdep.cpu.brand_string: Apple M1\n"
    runner = FakeRunner({"sysctl": completed(old), "system_profiler": completed(M1_DISPLAYS_JSON)})
    probe = probe_apple(run=runner)
    assert probe.gpu_cores == 7
    assert probe.notes == (
        "sysctl has no hw.perflevel0/1.physicalcpu (macOS 11?): performance/efficiency split unknown",
    )
