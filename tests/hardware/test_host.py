"""Host-CPU detection: /proc/cpuinfo parsing, the SIMD rate table, the peak formula, the copy probe.

Fixtures (tests/hardware/fixtures/):
- cpuinfo_xeon_icelake_avx512_vm.txt: recorded verbatim on the 2-vCPU Ice Lake Xeon VM this
  was written on (AVX-512 + VNNI, no AMX, no cpufreq: only `cpu MHz`).
- cpuinfo_xeon_emerald_rapids_masked_vm.txt: recorded verbatim on a 2-vCPU Firecracker guest
  (family 6 model 207, an Emerald Rapids part) whose hypervisor hides AMX, AVX512_BF16 and
  AVX512_FP16 from the flags: the flags, not the model number, decide the rates.
- cpuinfo_amd_epyc_milan_zen3_vm.txt: recorded verbatim on a 2-vCPU KVM guest of an AMD
  EPYC of family 25 model 1 (Zen 3, Milan; the model name masked to "AMD EPYC"): AVX2+FMA,
  no AVX-512.
- cpuinfo_i9_9900k_avx2.txt: a Core i9-9900K (8 cores, 16 threads, 3.6 GHz, AVX2+FMA) in the
  kernel's layout, trimmed to the lines the parser reads (plus a few neighbours).
- cpuinfo_sapphire_rapids_amx.txt: a 2-core Sapphire Rapids VM (AMX, AVX512_BF16, VNNI) in
  the kernel's layout; its `cpu MHz` (2000) is below the cpufreq maximum the test passes.
- cpuinfo_aarch64_neoverse_v2.txt: an ARM kernel's layout (no model name, flags or clock).
The last three are reconstructed in the kernel's format, not captured on those machines.
- cpuinfo_amd_epyc_genoa_zen4_block.txt: one processor's block of an AMD EPYC 9R14 (family
  25 model 17, Zen 4, AVX-512 with BF16 and VNNI; an AWS m7a guest) as a public benchmark
  write-up printed it, cut to the lines the parser reads.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

from neural_cost.core.errors import HardwareError, MeasurementError
from neural_cost.hardware import HardwareSpec, host_cpu_spec, measure_copy_bandwidth, parse_cpuinfo
from neural_cost.hardware import dram as copy_probes
from neural_cost.hardware.cpuinfo import x86_flops_per_cycle
from neural_cost.hardware.dram import BandwidthMeasurement

FIXTURES = Path(__file__).parent / "fixtures"
MIB = 1024 * 1024


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


AVX2 = fixture("cpuinfo_i9_9900k_avx2.txt")
ICELAKE = fixture("cpuinfo_xeon_icelake_avx512_vm.txt")
EMERALD_MASKED = fixture("cpuinfo_xeon_emerald_rapids_masked_vm.txt")
SAPPHIRE = fixture("cpuinfo_sapphire_rapids_amx.txt")
AARCH64 = fixture("cpuinfo_aarch64_neoverse_v2.txt")
MILAN = fixture("cpuinfo_amd_epyc_milan_zen3_vm.txt")
GENOA = fixture("cpuinfo_amd_epyc_genoa_zen4_block.txt")
MEMINFO = "MemTotal:       24684092 kB\nMemFree:        23547560 kB\n"


# --- the SIMD rate table ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({"sse", "sse2"}, {"float32": 8, "float64": 4}),  # (4 add + 4 mul) lanes
        ({"sse", "avx"}, {"float32": 16, "float64": 8}),  # (8 add + 8 mul) lanes
        ({"sse", "avx", "avx2"}, {"float32": 16, "float64": 8}),  # AVX2 without FMA: still add + mul
        ({"sse", "avx", "avx2", "fma"}, {"float32": 32, "float64": 16}),  # 2 FMA × 8 lanes × 2
        ({"avx2", "fma", "avx512f"}, {"float32": 64, "float64": 32}),  # 2 FMA × 16 lanes × 2
        ({"avx512f", "avx512_vnni"}, {"float32": 64, "float64": 32, "int8": 256}),  # 4 × 64
        ({"avx512f", "avx512_bf16", "avx512_vnni"}, {"float32": 64, "float64": 32, "bfloat16": 128, "int8": 256}),
        (
            {"avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8", "amx_tile"},
            {"float32": 64, "float64": 32, "bfloat16": 1024, "int8": 2048},
        ),
        ({"fp", "asimd", "sve2"}, {}),  # ARM features: not an x86 rate
        (set(), {}),
    ],
)
def test_x86_flops_per_cycle(flags: set[str], expected: dict[str, int]) -> None:
    assert x86_flops_per_cycle(flags) == expected


@pytest.mark.parametrize(
    ("flags", "maker", "family", "model", "expected"),
    [
        # Zen 4: AVX-512 as two 256-bit halves: 1 × 16 lanes × 2 = 32; vdpbf16ps 32 pairs × 2 = 64
        # a cycle; vpdpbusd 64 products × 2 = 128.
        (
            {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"},
            "AuthenticAMD",
            25,
            17,
            {"float32": 32, "float64": 16, "bfloat16": 64, "int8": 128},
        ),
        ({"avx2", "fma"}, "AuthenticAMD", 25, 1, {"float32": 32, "float64": 16}),  # Zen 3: full AVX2
        ({"avx2", "fma"}, "AuthenticAMD", 23, 1, {"float32": 16, "float64": 8}),  # Zen 1: 2 × 4 lanes × 2
        ({"avx2", "fma"}, "AuthenticAMD", 23, 0x31, {"float32": 32, "float64": 16}),  # Zen 2 (Rome)
        ({"avx2", "fma"}, "AuthenticAMD", 23, None, {"float32": 32, "float64": 16}),  # no model line: not halved
        ({"avx2", "fma"}, "HygonGenuine", 24, 0, {"float32": 16, "float64": 8}),  # Hygon: Zen 1's units
        ({"avx2", "fma", "avx512f"}, "AuthenticAMD", 26, 2, {"float32": 64, "float64": 32}),  # Zen 5: 512-bit
        ({"avx2", "fma", "avx512f"}, "GenuineIntel", 25, 1, {"float32": 64, "float64": 32}),  # only AMD's 25
    ],
)
def test_amd_narrow_units_halve_their_widest_tier(
    flags: set[str], maker: str, family: int, model: int | None, expected: dict[str, int]
) -> None:
    assert x86_flops_per_cycle(flags, maker, family, model) == expected


def test_zen3_milan_recording_peaks() -> None:
    spec, details = host_cpu_spec(MILAN, memory_bandwidth=24e9)
    info = parse_cpuinfo(MILAN)
    assert (info.vendor, info.family, info.model) == ("AuthenticAMD", 25, 1)
    assert details.physical_cores == 2  # core ids 0 and 1 on physical id 0
    assert details.clock_hz == 2_445_412_000.0  # cpu MHz 2445.412 × 10⁶
    assert dict(details.flops_per_cycle) == {"float32": 32, "float64": 16}  # no avx512f: 2 × 8 lanes × 2
    assert spec.peak_flops == 156_506_368_000.0  # 2 × 2.445412e9 × 32
    assert not spec.has_peak("bfloat16")
    assert details.isa_by_dtype["float32"] == "AVX2+FMA, 2 FMA"


def test_zen4_genoa_avx512_is_half_of_two_512_bit_ports() -> None:
    spec, details = host_cpu_spec(GENOA, memory_bandwidth=60e9)
    assert details.physical_cores == 1  # one processor block: (0, 0)
    assert dict(details.flops_per_cycle) == {"float32": 32, "float64": 16, "bfloat16": 64, "int8": 128}
    assert details.isa_by_dtype["float32"] == "AVX-512, 512-bit ops on 256-bit units (AMD family 25)"
    assert spec.peak_flops == 118_345_312_000.0  # 1 × 3.698291e9 × 32, not × 64
    assert spec.peak("bfloat16") == 236_690_624_000.0  # 1 × 3.698291e9 × 64


# --- parsing ---------------------------------------------------------------------------


def test_parse_avx2_desktop_with_hyperthreading() -> None:
    info = parse_cpuinfo(AVX2)
    assert info.model_name == "Intel(R) Core(TM) i9-9900K CPU @ 3.60GHz"
    assert info.vendor == "GenuineIntel"
    assert info.logical_cpus == 16
    assert info.physical_cores == 8  # core ids 0..7 on physical id 0, each listed twice
    assert info.cores_source == "unique (physical id, core id) pairs"
    assert info.sockets == 1
    assert info.clock_hz == 3.6e9  # cpu MHz 3600.000 × 10⁶
    assert info.clock_source == "cpuinfo 'cpu MHz'"
    assert {"avx2", "fma", "avx"} <= info.flags
    assert "avx512f" not in info.flags


def test_parse_this_vm_recording() -> None:
    info = parse_cpuinfo(ICELAKE)
    assert info.model_name == "Intel(R) Xeon(R) Processor @ 2.80GHz"
    assert info.logical_cpus == 2
    assert info.physical_cores == 2  # (0, 0) and (0, 1)
    assert info.clock_hz == 2793436000.0  # cpu MHz 2793.436 × 10⁶
    assert {"avx512f", "avx512_vnni"} <= info.flags
    assert not info.flags & {"amx_bf16", "amx_int8", "avx512_bf16"}


def test_max_frequency_is_preferred_over_cpu_mhz() -> None:
    info = parse_cpuinfo(SAPPHIRE, max_freq_hz=2_600_000 * 1e3)  # cpuinfo_max_freq is in kHz
    assert info.clock_hz == 2.6e9  # not the 2000 MHz line
    assert info.clock_source == "cpufreq cpuinfo_max_freq"
    assert parse_cpuinfo(SAPPHIRE).clock_hz == 2.0e9  # cpu MHz 2000.000 without it


def _without(text: str, *keys: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.partition(":")[0].strip() not in keys)


def test_core_count_falls_back_to_cpu_cores_times_sockets() -> None:
    info = parse_cpuinfo(_without(AVX2, "core id"))
    assert info.physical_cores == 8  # cpu cores 8 × 1 socket
    assert info.cores_source == "cpu cores 8 × 1 socket(s)"


def test_core_count_falls_back_to_logical_cpus() -> None:
    info = parse_cpuinfo(_without(AVX2, "core id", "cpu cores", "physical id"))
    assert info.physical_cores == 16  # 16 processor entries
    assert info.cores_source == "logical CPU count (cpuinfo has no core topology)"


def test_two_sockets_count_both() -> None:
    socket_1 = AVX2.replace("physical id\t: 0", "physical id\t: 1").replace("processor\t: ", "processor\t: 1")
    info = parse_cpuinfo(AVX2 + "\n" + socket_1)
    assert info.logical_cpus == 32
    assert info.physical_cores == 16  # 8 core ids × 2 physical ids
    assert info.sockets == 2


def test_arm_layout_parses_without_x86_fields() -> None:
    info = parse_cpuinfo(AARCH64)
    assert info.logical_cpus == 4
    assert info.model_name is None
    assert info.clock_hz is None
    assert info.flags == frozenset()


def test_parse_rejects_text_without_processors() -> None:
    with pytest.raises(HardwareError, match="no 'processor' entries"):
        parse_cpuinfo("MemTotal: 1 kB\n")


# --- the peak formula ------------------------------------------------------------------


def test_avx2_desktop_peaks() -> None:
    spec, details = host_cpu_spec(AVX2, memory_bandwidth=41.6e9, meminfo_text=MEMINFO)
    assert details.physical_cores == 8
    assert details.clock_hz == 3.6e9
    assert dict(details.flops_per_cycle) == {"float32": 32, "float64": 16}
    assert details.isa_by_dtype["float32"] == "AVX2+FMA, 2 FMA"
    assert spec.peak_flops == 921.6e9  # 8 cores × 3.6e9 Hz × 32 FLOP/cycle
    assert dict(spec.peak_flops_by_dtype or {}) == {
        "float32": 921.6e9,  # 8 × 3.6e9 × 32
        "float64": 460.8e9,  # 8 × 3.6e9 × 16
    }
    assert not spec.has_peak("bfloat16") and not spec.has_peak("int8")  # no AVX512_BF16, no VNNI
    assert spec.kind == "cpu"
    assert spec.name == "Intel(R) Core(TM) i9-9900K CPU @ 3.60GHz"
    assert spec.memory_bandwidth == 41.6e9
    assert spec.memory_capacity == 25_276_510_208  # 24684092 KiB × 1024
    assert spec.source == ("formula: 8 cores × 3.6 GHz × 32 FP32 FLOP/cycle (AVX2+FMA, 2 FMA); bandwidth user-supplied")
    assert details.cpuinfo_source == "cpuinfo_text argument"
    assert details.memory_capacity_source == "meminfo_text MemTotal"


def test_avx512_vm_peaks() -> None:
    spec, details = host_cpu_spec(ICELAKE, memory_bandwidth=20e9)
    assert details.physical_cores == 2
    assert details.clock_hz == 2793436000.0
    assert dict(details.flops_per_cycle) == {"float32": 64, "float64": 32, "int8": 256}
    assert details.isa_by_dtype["int8"] == "AVX512_VNNI, 2 FMA"
    assert spec.peak_flops == 357_559_808_000.0  # 2 × 2.793436e9 × 64
    assert dict(spec.peak_flops_by_dtype or {}) == {
        "float32": 357_559_808_000.0,  # 2 × 2.793436e9 × 64
        "float64": 178_779_904_000.0,  # 2 × 2.793436e9 × 32
        "int8": 1_430_239_232_000.0,  # 2 × 2.793436e9 × 256
    }
    assert not spec.has_peak("bfloat16")  # Ice Lake has no AVX512_BF16
    assert spec.memory_capacity is None  # a passed cpuinfo never reads this machine's meminfo
    assert spec.source.startswith("formula: 2 cores × 2.79 GHz × 64 FP32 FLOP/cycle (AVX-512, 2 FMA); ")


def test_masked_emerald_rapids_vm_peaks_from_its_flags() -> None:
    spec, details = host_cpu_spec(EMERALD_MASKED, memory_bandwidth=44e9)
    assert details.physical_cores == 2  # core ids 0 and 1 on physical id 0
    assert details.clock_hz == 2.3e9  # cpu MHz 2300.000 × 10⁶, no cpufreq passed
    # A model-207 part has AMX on bare metal; this guest's flags list none of amx_*, avx512_bf16:
    assert dict(details.flops_per_cycle) == {"float32": 64, "float64": 32, "int8": 256}
    assert spec.peak_flops == 294.4e9  # 2 × 2.3e9 × 64
    assert spec.peak("int8") == 1177.6e9  # 2 × 2.3e9 × 256 (AVX512_VNNI)
    assert not spec.has_peak("bfloat16")


def test_sapphire_rapids_amx_peaks() -> None:
    spec, details = host_cpu_spec(SAPPHIRE, max_freq_hz=2.6e9, memory_bandwidth=30e9)
    assert details.physical_cores == 2
    assert details.clock_hz == 2.6e9
    assert details.clock_source == "cpufreq cpuinfo_max_freq"
    assert dict(details.flops_per_cycle) == {"float32": 64, "float64": 32, "bfloat16": 1024, "int8": 2048}
    assert details.isa_by_dtype["bfloat16"] == "AMX-BF16"
    assert spec.peak_flops == 332.8e9  # 2 × 2.6e9 × 64
    assert spec.peak("bfloat16") == 5.3248e12  # 2 × 2.6e9 × 1024
    assert spec.peak("int8") == 10.6496e12  # 2 × 2.6e9 × 2048
    assert spec.peak("float64") == 166.4e9  # 2 × 2.6e9 × 32


def test_details_to_dict_is_json() -> None:
    _, details = host_cpu_spec(SAPPHIRE, max_freq_hz=2.6e9, memory_bandwidth=30e9)
    data = json.loads(json.dumps(details.to_dict()))
    assert data["physical_cores"] == 2
    assert data["flops_per_cycle"]["bfloat16"] == 1024
    assert data["bandwidth_source"] == "user-supplied"
    assert data["bandwidth_measurement"] is None


def test_non_x86_cpuinfo_asks_for_an_explicit_spec() -> None:
    with pytest.raises(HardwareError, match=r"not available yet.*HardwareSpec\("):
        host_cpu_spec(AARCH64, memory_bandwidth=1e11)


def test_missing_clock_asks_for_an_explicit_spec() -> None:
    with pytest.raises(HardwareError, match=r"no clock.*HardwareSpec\("):
        host_cpu_spec(_without(AVX2, "cpu MHz"), memory_bandwidth=1e10)


def test_macos_asks_for_an_explicit_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(HardwareError, match=r"not available yet for macOS.*HardwareSpec\("):
        host_cpu_spec(measure_bandwidth=False, memory_bandwidth=1e10)


def test_bandwidth_must_come_from_somewhere() -> None:
    with pytest.raises(HardwareError, match="needs memory_bandwidth="):
        host_cpu_spec(AVX2, measure_bandwidth=False)
    with pytest.raises(HardwareError, match="can only measure this one"):
        host_cpu_spec(AVX2)  # a passed cpuinfo may be another machine's
    with pytest.raises(HardwareError, match="positive number of bytes/s"):
        host_cpu_spec(AVX2, memory_bandwidth=0.0)


# --- this machine ----------------------------------------------------------------------

LIVE_X86_LINUX = (
    sys.platform.startswith("linux")
    and platform.machine().lower() in {"x86_64", "amd64"}
    and Path("/proc/cpuinfo").exists()
)


@pytest.mark.skipif(not LIVE_X86_LINUX, reason="reads an x86 Linux host's /proc/cpuinfo")
def test_this_host_peak_is_cores_times_clock_times_rate(capsys: pytest.CaptureFixture[str]) -> None:
    # Recount from the raw text, independently of the parser.
    blocks = [block for block in Path("/proc/cpuinfo").read_text().split("\n\n") if block.strip()]
    fields = [dict((k.strip(), v.strip()) for k, _, v in (ln.partition(":") for ln in b.splitlines())) for b in blocks]
    cores = len({(f["physical id"], f["core id"]) for f in fields})
    max_freq = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    clock_hz = int(max_freq.read_text()) * 1e3 if max_freq.exists() else max(float(f["cpu MHz"]) for f in fields) * 1e6
    flags = set(fields[0]["flags"].split())
    amd_25 = (fields[0].get("vendor_id"), fields[0].get("cpu family")) == ("AuthenticAMD", "25")
    if "avx512f" in flags:
        rate = 32 if amd_25 else 64  # two 512-bit FMA ports × 16 lanes × 2; Zen 4 splits each op in two
    elif {"avx2", "fma"} <= flags:
        rate = 32  # two 256-bit FMA ports × 8 lanes × 2 (Zen 3 included)
    else:
        pytest.skip("the check knows AVX-512 and AVX2+FMA hosts")

    spec, details = host_cpu_spec(measure_bandwidth=False, memory_bandwidth=1e10)

    assert spec.kind == "cpu"
    assert details.physical_cores == cores
    assert details.clock_hz == clock_hz
    assert spec.peak_flops == cores * clock_hz * rate  # e.g. 2 × 2.793436e9 × 64 = 357.56 GFLOP/s on Ice Lake
    assert spec.memory_bandwidth == 1e10
    assert details.cpuinfo_source == "/proc/cpuinfo"
    assert spec.memory_capacity is None or spec.memory_capacity > 0
    assert capsys.readouterr() == ("", "")  # the library never prints


# --- the copy probe --------------------------------------------------------------------


def test_copy_probe_measures_and_verifies(capsys: pytest.CaptureFixture[str]) -> None:
    result = measure_copy_bandwidth(8 * MIB, repeats=3)
    assert isinstance(result, BandwidthMeasurement)
    assert result.nbytes == 8 * MIB
    assert result.bytes_moved == 16 * MIB  # read + written
    assert result.repeats == 3 and len(result.samples_seconds) == 3
    assert result.best_seconds == min(result.samples_seconds)
    assert result.bytes_per_second == 2 * 8 * MIB / result.best_seconds
    assert result.bytes_per_second > 0
    assert result.size_source == "passed in"
    assert capsys.readouterr() == ("", "")


def test_copy_probe_passes_data_through_the_copy_function() -> None:
    seen: list[tuple[int, float]] = []

    def recording_copy(dst: np.ndarray, src: np.ndarray) -> None:
        seen.append((src.size, float(np.ptp(src[:1000]))))
        np.copyto(dst, src)

    measure_copy_bandwidth(8 * MIB, repeats=2, copy=recording_copy)
    assert len(seen) == 3  # one warm-up + 2 timed copies
    assert all(size == 2 * MIB for size, _ in seen)  # 8 MiB of float32
    assert all(spread > 0 for _, spread in seen)  # random data, never a constant


def test_copy_that_does_nothing_is_rejected() -> None:
    with pytest.raises(MeasurementError, match="warm-up copy"):
        measure_copy_bandwidth(8 * MIB, copy=lambda dst, src: None)


def test_copy_that_stops_copying_is_rejected() -> None:
    calls: list[int] = []

    def copies_once(dst: np.ndarray, src: np.ndarray) -> None:
        if not calls:
            np.copyto(dst, src)
        calls.append(1)

    with pytest.raises(MeasurementError, match="timed copy 1"):
        measure_copy_bandwidth(8 * MIB, copy=copies_once)


def test_copy_that_misses_an_element_is_rejected() -> None:
    def drops_one(dst: np.ndarray, src: np.ndarray) -> None:
        np.copyto(dst, src)
        dst[1] = -2.0  # element 1 is off the strided sample; the source is in [0, 1)

    with pytest.raises(MeasurementError, match="whole buffer"):
        measure_copy_bandwidth(8 * MIB, copy=drops_one)


def test_copy_probe_rejects_bad_arguments() -> None:
    with pytest.raises(MeasurementError, match="nbytes"):
        measure_copy_bandwidth(100)
    with pytest.raises(MeasurementError, match="repeats"):
        measure_copy_bandwidth(8 * MIB, repeats=0)


def _fake_caches(root: Path, sizes: dict[int, str]) -> None:
    for index, (level, size) in enumerate(sorted(sizes.items())):
        folder = root / f"index{index}"
        folder.mkdir()
        (folder / "level").write_text(f"{level}\n")
        (folder / "size").write_text(f"{size}\n")


@pytest.mark.parametrize(
    ("caches", "expected_bytes"),
    [
        ({1: "48K", 2: "1280K", 3: "49152K"}, 192 * MIB),  # 4 × 48 MiB L3
        ({1: "32K", 2: "1024K"}, 64 * MIB),  # 4 × 1 MiB = 4 MiB, raised to the 64 MiB floor
        ({1: "32K", 3: "512M"}, 1024 * MIB),  # 4 × 512 MiB = 2 GiB, capped at 1 GiB
        ({}, 256 * MIB),  # no sysfs cache info
    ],
)
def test_default_copy_size_from_last_level_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caches: dict[int, str], expected_bytes: int
) -> None:
    _fake_caches(tmp_path, caches)
    monkeypatch.setattr(copy_probes, "_CACHE_DIR", tmp_path)
    nbytes, _ = copy_probes._default_copy_bytes()
    assert nbytes == expected_bytes


def test_spec_round_trips() -> None:
    spec, _ = host_cpu_spec(SAPPHIRE, max_freq_hz=2.6e9, memory_bandwidth=30e9)
    assert HardwareSpec.from_dict(spec.to_dict()) == spec
