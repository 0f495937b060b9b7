"""The per-machine calibration cache and the all-core DRAM probe.

Every test runs with ``NEURAL_COST_CACHE_DIR`` pointed at its own temporary directory
(``conftest.py``); no test reads or writes the user's cache, and none asserts a timing.
"""

import json
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

from neural_cost import MeasurementError
from neural_cost.hardware import host_cache, host_calibration
from neural_cost.hardware.dram import measure_dram_bandwidth, spread
from neural_cost.hardware.host_cache import (
    cache_dir,
    cache_path,
    forget_entry,
    machine_key,
    read_cache_levels,
    read_entry,
    write_entry,
)

FIXTURES = Path(__file__).parent / "fixtures"
ICELAKE = (FIXTURES / "cpuinfo_xeon_icelake_avx512_vm.txt").read_text()
SAPPHIRE = (FIXTURES / "cpuinfo_sapphire_rapids_amx.txt").read_text()
MEMINFO = "MemTotal:       24684092 kB\nMemFree:        23547560 kB\n"
# cpu0's caches on the 2-core AMD EPYC VM these tests were written on (sysfs index0..3).
EPYC_CACHES = (("1", "Data", "48K"), ("1", "Instruction", "32K"), ("2", "Unified", "1024K"), ("3", "Unified", "32768K"))
LEVELS = ("L1d 48K", "L1i 32K", "L2 1024K", "L3 32768K")
MIB = 1024 * 1024
LIVE_X86_LINUX = (
    sys.platform.startswith("linux")
    and platform.machine().lower() in {"x86_64", "amd64"}
    and Path("/proc/cpuinfo").exists()
)


def _sysfs(root: Path) -> Path:
    for index, (level, kind, size) in enumerate(EPYC_CACHES):
        folder = root / f"index{index}"
        folder.mkdir(parents=True)
        (folder / "level").write_text(level + "\n")
        (folder / "type").write_text(kind + "\n")
        (folder / "size").write_text(size + "\n")
    return root


def _dram(bandwidth: float, date: str = "2026-12-01") -> dict:
    return {"bytes_per_second": bandwidth, "samples": 9, "threads": 2, "spread": 0.05, "date": date}


# --- the key -----------------------------------------------------------------------------


def test_cache_levels_read_from_sysfs(tmp_path):
    assert read_cache_levels(_sysfs(tmp_path / "cache")) == LEVELS
    assert read_cache_levels(tmp_path / "absent") == ()


def test_machine_key_from_recorded_proc_files():
    key = machine_key(ICELAKE, LEVELS, MEMINFO)
    assert key == {
        "cpu_model": "Intel(R) Xeon(R) Processor @ 2.80GHz",
        "vendor": "GenuineIntel",
        "logical_cpus": 2,
        "physical_cores": 2,
        "sockets": 1,
        "caches": list(LEVELS),
        "memory_bytes": 25_276_510_208,  # 24,684,092 KiB × 1024
    }


def test_machines_that_share_a_model_string_get_different_files():
    key = machine_key(ICELAKE, LEVELS, MEMINFO)
    bigger_l3 = machine_key(ICELAKE, (*LEVELS[:3], "L3 65536K"), MEMINFO)
    more_memory = machine_key(ICELAKE, LEVELS, "MemTotal: 49368184 kB\n")
    paths = {cache_path(k) for k in (key, bigger_l3, more_memory, machine_key(SAPPHIRE, LEVELS, MEMINFO))}
    assert len(paths) == 4


def test_cache_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("NEURAL_COST_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("NEURAL_COST_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "neural-cost"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "neural-cost"


# --- read, write, corrupt ------------------------------------------------------------------


def test_write_then_read_merges_sections_atomically(private_calibration_cache):
    key = machine_key(ICELAKE, LEVELS, MEMINFO)
    assert read_entry(key).entry is None and read_entry(key).note is None  # no file: no entry, no note
    write_entry(key, {"dram": _dram(40e9)})
    compute = {"float32": {"flops_per_second": 480e9, "kernel": "torch conv 16", "date": "2026-12-01"}}
    path = write_entry(key, {"compute": compute})
    entry = read_entry(key).entry
    assert entry == {"schema": 1, "key": key, "dram": _dram(40e9), "compute": compute}
    assert path.parent == private_calibration_cache
    assert [p.name for p in private_calibration_cache.iterdir()] == [path.name]  # no temporary file left
    forget_entry(key)
    assert read_entry(key).entry is None


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{not json", "is not JSON"),
        ("[1, 2]", "not a schema-1 entry"),
        ('{"schema": 1, "key": {"cpu_model": "other"}}', "written for another machine"),
        ("KEY_DRAM_NEGATIVE", "no positive bytes_per_second"),
        ("KEY_COMPUTE_NO_KERNEL", "names no kernel and date"),
    ],
)
def test_a_corrupt_cache_is_ignored_with_a_note(text, why):
    key = machine_key(ICELAKE, LEVELS, MEMINFO)
    base = {"schema": 1, "key": key}
    text = {
        "KEY_DRAM_NEGATIVE": json.dumps({**base, "dram": _dram(-1.0)}),
        "KEY_COMPUTE_NO_KERNEL": json.dumps({**base, "compute": {"float32": {"flops_per_second": 1e9}}}),
    }.get(text, text)
    path = cache_path(key)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    read = read_entry(key)
    assert read.entry is None and why in read.note and "measured afresh" in read.note


def test_a_corrupt_cache_is_measured_afresh_and_replaced(monkeypatch):
    key = machine_key(ICELAKE, LEVELS, MEMINFO)
    path = cache_path(key)
    path.parent.mkdir(parents=True)
    path.write_text("\x00garbage")
    monkeypatch.setattr(host_calibration, "dram_entry", lambda: _dram(30e9))
    figure = host_calibration.host_dram(key)
    assert figure.measured_now and figure.bytes_per_second == 30e9 and "is not JSON" in figure.note
    assert figure.source == "measured, all cores (2 threads), best of 9, spread 5.0%, cached 2026-12-01"
    again = host_calibration.host_dram(key)  # now read, not measured: same words, same number
    assert not again.measured_now and (again.bytes_per_second, again.source) == (30e9, figure.source)


# --- the all-core probe ----------------------------------------------------------------------


def test_all_core_probe_copies_disjoint_chunks_and_verifies():
    seen = []

    def recording_copy(dst, src):
        seen.append(len(src))
        np.copyto(dst, src)

    result = measure_dram_bandwidth(8 * MIB, samples=9, threads=3, copy=recording_copy)
    count = 8 * MIB // 4  # 2,097,152 float32 elements
    assert result.nbytes == 8 * MIB and result.bytes_moved == 16 * MIB  # read + written
    assert len(result.samples_seconds) == 9 and result.repeats == 9
    assert result.bytes_per_second == 16 * MIB / min(result.samples_seconds)
    # 10 passes (a warm-up, 9 samples) over 3 chunks that tile the buffer: 699,050 + 699,051 + 699,051
    assert len(seen) == 30 and sum(seen) == 10 * count and sorted(set(seen)) == [699_050, 699_051]
    assert spread(result) == (max(result.samples_seconds) - min(result.samples_seconds)) / min(result.samples_seconds)
    assert "3 threads (all cores)" in result.method


def test_all_core_probe_rejects_a_copy_that_skips_a_chunk():
    def skips_the_first_chunk(dst, src):  # 3 threads: chunks of 699,050, 699,051, 699,051 elements
        if dst.size != 699_050:
            np.copyto(dst, src)

    with pytest.raises(MeasurementError, match="did not copy"):
        measure_dram_bandwidth(8 * MIB, threads=3, copy=skips_the_first_chunk)


def test_all_core_probe_verifies_the_warm_up_copy_like_the_single_thread_probe():
    # both probes share one verified-sample loop: a copy that does nothing fails at the warm-up
    with pytest.raises(MeasurementError, match="after the warm-up copy"):
        measure_dram_bandwidth(8 * MIB, threads=2, copy=lambda dst, src: None)
    stops_after_warm_up = []

    def copies_once(dst, src):  # 2 threads: the warm-up is the first two chunk copies
        if len(stops_after_warm_up) < 2:
            np.copyto(dst, src)
        stops_after_warm_up.append(1)

    with pytest.raises(MeasurementError, match="after sample 1,"):
        measure_dram_bandwidth(8 * MIB, threads=2, copy=copies_once)


def test_all_core_probe_rejects_bad_arguments():
    with pytest.raises(MeasurementError, match="samples"):
        measure_dram_bandwidth(8 * MIB, samples=0)
    with pytest.raises(MeasurementError, match="threads"):
        measure_dram_bandwidth(8 * MIB, threads=0)


def test_a_failing_copy_raises_on_the_calling_thread():
    def broken(dst, src):
        raise RuntimeError("copy failed")

    with pytest.raises(RuntimeError, match="copy failed"):
        measure_dram_bandwidth(8 * MIB, threads=2, copy=broken)


# --- this machine ----------------------------------------------------------------------------


@pytest.mark.skipif(not LIVE_X86_LINUX, reason="reads an x86 Linux host's /proc files")
def test_detection_measures_once_then_reads_the_cache(monkeypatch):
    from neural_cost import detect_hardware

    calls = []

    def once():
        calls.append(1)
        if len(calls) > 1:
            raise AssertionError("measured twice: the cache was not read")
        return _dram(23.5e9)

    monkeypatch.setattr(host_calibration, "dram_entry", once)
    first, detection = detect_hardware()
    second, _ = detect_hardware()
    assert calls == [1] and first == second and first.memory_bandwidth == 23.5e9
    assert first.source_of("memory_bandwidth").endswith("cached 2026-12-01")
    assert detection.details["calibration_cache"] == str(cache_path(host_calibration.live_machine_key()))


@pytest.mark.skipif(not LIVE_X86_LINUX, reason="reads an x86 Linux host's /proc files")
def test_two_cached_analyses_of_a_memory_bound_build_have_identical_bounds(monkeypatch):
    from neural_cost import analyze_gap, detect_hardware
    from tests.helpers import cpu_measurement, seed_estimate

    monkeypatch.setattr(host_calibration, "dram_entry", lambda: _dram(1e9))
    reports = [analyze_gap(seed_estimate(), cpu_measurement(), detect_hardware()[0]) for _ in range(2)]
    # memory: 1,649,152 bytes / 1e9 B/s = 1.649 ms; compute: 49,152,000 FLOPs would need a peak below
    # 29.8 GFLOP/s to take longer, far under any AVX host's formula
    assert reports[0].bound_side == "memory"
    assert reports[0].memory_seconds == 1_649_152 / 1e9
    assert (reports[0].bound_seconds, reports[0].hardware) == (reports[1].bound_seconds, reports[1].hardware)
    assert reports[0].render() == reports[1].render()
    assert host_cache.read_entry(host_calibration.live_machine_key()).entry["dram"] == _dram(1e9)


def test_all_core_probe_measures_each_fresh_buffer_and_keeps_the_best():
    # 3 allocations × (1 warm-up + 4 samples) × 2 chunks = 30 chunk copies; 12 timed samples in all
    seen = []

    def recording_copy(dst, src):
        seen.append(len(src))
        np.copyto(dst, src)

    result = measure_dram_bandwidth(8 * MIB, samples=4, threads=2, copy=recording_copy, allocations=3)
    assert len(seen) == 30 and len(result.samples_seconds) == 12 and result.repeats == 12
    assert result.bytes_per_second == 16 * MIB / min(result.samples_seconds)
    assert "best of 4 on each of 3 fresh buffers" in result.method
    with pytest.raises(MeasurementError, match="allocations=0"):
        measure_dram_bandwidth(8 * MIB, allocations=0)
