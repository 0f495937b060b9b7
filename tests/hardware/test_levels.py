"""Memory levels: detection from recorded sysfs/sysctl trees, the record's JSON, the probes' checks."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from neural_cost.core.errors import HardwareError, MeasurementError
from neural_cost.hardware.host_cache import LEVEL_PROBE_REVISION, read_entry, write_entry
from neural_cost.hardware.level_probes import (
    NUMPY_KERNELS,
    LevelKernels,
    _marginal,
    check_section,
    measure_level,
    working_set,
)
from neural_cost.hardware.levels import (
    apple_levels,
    dram_level,
    gpu_levels,
    host_levels,
    parse_cpu_list,
    read_cpu_levels,
    with_measured,
)
from neural_cost.hardware.spec import HardwareSpec, MemoryLevel
from neural_cost.hardware.tables import match_gpu

FIXTURES = Path(__file__).parent / "fixtures"
KIB, MIB = 1024, 1024 * 1024
MEMINFO = "MemTotal:       24683584 kB\nMemFree:        19513280 kB\n"  # 24,683,584 × 1024 = 25,276,030,016 B


def test_cpu_lists():
    assert parse_cpu_list("0-3,8,10-11") == frozenset({0, 1, 2, 3, 8, 10, 11})
    assert parse_cpu_list("5") == frozenset({5})
    assert parse_cpu_list("garbage") == frozenset()


def test_amd_epyc_two_cpu_vm_from_sysfs():
    levels, notes = read_cpu_levels(FIXTURES / "sysfs_amd_epyc_2cpu")
    assert notes == ()
    assert [(lv.name, lv.capacity_bytes, lv.per_core, lv.shared_by, lv.instances) for lv in levels] == [
        ("L1d", 48 * KIB, True, 1, 2),  # 48K = 49,152 B, one per CPU; L1i left out
        ("L2", 1024 * KIB, True, 1, 2),  # 1024K = 1,048,576 B
        ("L3", 32 * MIB, False, 2, 1),  # 32768K = 33,554,432 B, shared_cpu_list 0-1
    ]
    assert levels[0].source == "sysfs cpu0/cache/index0: 48K, per core, 2 instance(s)"
    assert all(lv.bandwidth is None for lv in levels)


def test_intel_hyperthreaded_vm_counts_sibling_sharing_as_per_core():
    levels, notes = read_cpu_levels(FIXTURES / "sysfs_xeon_icelake_4cpu")
    assert notes == ()
    assert [(lv.name, lv.capacity_bytes, lv.per_core, lv.shared_by, lv.instances) for lv in levels] == [
        ("L1d", 48 * KIB, True, 2, 2),  # shared by the two hyperthreads of one core: still per core
        ("L2", 1280 * KIB, True, 2, 2),  # 1280K = 1,310,720 B
        ("L3", 54 * MIB, False, 4, 1),  # 55296K = 56,623,104 B
    ]


def test_a_level_without_a_size_is_a_note_and_left_out(tmp_path):
    root = tmp_path / "cpu"
    shutil.copytree(FIXTURES / "sysfs_amd_epyc_2cpu", root)
    for cpu in (0, 1):
        (root / f"cpu{cpu}/cache/index2/size").unlink()
    levels, notes = read_cpu_levels(root)
    assert [lv.name for lv in levels] == ["L1d", "L3"]
    assert notes == ("L2: sysfs gives no size for CPU 0, 1; the level is left out, never guessed",)
    assert read_cpu_levels(tmp_path / "missing") == (
        (),
        (f"no CPU cache sizes in sysfs ({tmp_path / 'missing'}); cache levels are left out, never guessed",),
    )


def test_host_levels_end_with_dram_and_attach_measured_figures():
    figure = {
        "bytes_per_second": 2.5e11,
        "pattern": "in-place",
        "threads": 2,
        "bytes_per_thread": 24 * KIB,
        "capacity_bytes": 48 * KIB,
        "samples": 5,
        "spread": 0.031,
        "method": "m",
        "probe_revision": LEVEL_PROBE_REVISION,
        "date": "2026-12-01",
    }
    levels, notes = host_levels(
        meminfo_text=MEMINFO,
        dram_bandwidth=4.2e10,
        dram_source="measured",
        logical_cpus=2,
        measured={"L1d": figure, "L2": {**figure, "capacity_bytes": 512 * KIB}},  # L2's was another size
        root=FIXTURES / "sysfs_amd_epyc_2cpu",
    )
    assert [(lv.name, lv.bandwidth) for lv in levels] == [("L1d", 2.5e11), ("L2", None), ("L3", None), ("DRAM", 4.2e10)]
    assert levels[-1].capacity_bytes == 24683584 * 1024
    assert levels[0].bandwidth_source == (
        "measured, in-place on 2 thread(s), 24.0 KiB per thread, best of 5, spread 3.1%, m, cached 2026-12-01"
    )
    assert notes == ("no measured bandwidth yet for L2, L3: `neural-cost hardware --calibrate` measures it",)
    assert dram_level(None, 4.2e10, "x") == (
        None,
        "DRAM: /proc/meminfo has no MemTotal; the level is left out, never guessed",
    )
    assert with_measured(levels, None) == levels


def _epyc_levels(measured, dram_bandwidth):
    return host_levels(
        meminfo_text=MEMINFO,
        dram_bandwidth=dram_bandwidth,
        dram_source="measured",
        logical_cpus=2,
        measured=measured,
        root=FIXTURES / "sysfs_amd_epyc_2cpu",
    )


def test_a_level_measured_below_a_farther_one_is_scored_at_the_farther_figure():
    """Two `hardware --calibrate` runs on a 2-vCPU Zen 3 guest read L1d 167 then 114 GB/s, L2 132 then
    192, L3 81 then 128: a slow spell, not the caches. L1d read 114 beside L2's 192 is scored at 192
    (the fastest farther level), L2 keeps its 192, L3 its 128 (above DRAM's 31); one note, for L1d."""
    fixture = {
        "pattern": "in-place",
        "threads": 2,
        "samples": 5,
        "spread": 0.1,
        "method": "m",
        "probe_revision": LEVEL_PROBE_REVISION,
        "date": "2026-12-07",
    }
    measured = {
        "L1d": {**fixture, "bytes_per_second": 114e9, "bytes_per_thread": 24 * KIB, "capacity_bytes": 48 * KIB},
        "L2": {**fixture, "bytes_per_second": 192e9, "bytes_per_thread": 512 * KIB, "capacity_bytes": MIB},
        "L3": {**fixture, "bytes_per_second": 128e9, "bytes_per_thread": 8 * MIB, "capacity_bytes": 32 * MIB},
    }
    levels, notes = _epyc_levels(measured, dram_bandwidth=31e9)
    assert [(lv.name, lv.bandwidth) for lv in levels] == [("L1d", 192e9), ("L2", 192e9), ("L3", 128e9), ("DRAM", 31e9)]
    assert levels[0].bandwidth_source == (
        "L2's 192 GB/s: a nearer level is never slower (measured 114 GB/s: measured, in-place on 2 thread(s), "
        "24.0 KiB per thread, best of 5, spread 10.0%, m, cached 2026-12-07)"
    )
    assert notes == (
        "L1d measured 114 GB/s, below L2's 192 GB/s: scored at 192 GB/s, since data held nearer is never slower "
        "to reach (the probe ran slow; `neural-cost hardware --recalibrate` measures again)",
    )
    # Caches are compared among themselves: L3 read below DRAM is left for the bound to set aside
    # (`Levels.implausible`), and L1d beside an unmeasured L2 is compared with the L3 beyond it
    measured["L3"] = {**measured["L3"], "bytes_per_second": 20e9}
    del measured["L2"]
    levels, notes = _epyc_levels(measured, dram_bandwidth=31e9)
    assert [lv.bandwidth for lv in levels] == [114e9, None, 20e9, 31e9]
    assert notes == ("no measured bandwidth yet for L2: `neural-cost hardware --calibrate` measures it",)


def test_a_level_figure_an_older_probe_measured_is_not_used_and_said():
    """Revision 1 had read one call's fixed cost into the rate (a VM's L3 at 3.7 GB/s beside
    main memory's 60): its figures are dropped with a note, and the level reads unmeasured."""
    figure = {
        "bytes_per_second": 3.7e9,
        "pattern": "copy",
        "threads": 1,
        "bytes_per_thread": 16 * MIB,
        "capacity_bytes": 32 * MIB,
        "samples": 5,
        "spread": 0.02,
        "method": "m",
        "date": "2026-11-30",
    }  # no probe_revision: written before the field existed
    levels, notes = host_levels(
        meminfo_text=MEMINFO,
        dram_bandwidth=4.2e10,
        dram_source="measured",
        logical_cpus=2,
        measured={"L3": figure, "L2": {**figure, "capacity_bytes": 512 * KIB, "probe_revision": 1}},
        root=FIXTURES / "sysfs_amd_epyc_2cpu",
    )
    assert [lv.bandwidth for lv in levels] == [None, None, None, 4.2e10]
    assert notes == (
        f"cached bandwidths of L3 (revision 1), L2 (revision 1) were measured by another level probe (this is "
        f"revision {LEVEL_PROBE_REVISION}) and are not used",
        "no measured bandwidth yet for L1d, L2, L3: `neural-cost hardware --calibrate` measures it",
    )
    fresh = {**figure, "probe_revision": LEVEL_PROBE_REVISION}
    assert with_measured(levels, {"L3": fresh})[2].bandwidth == 3.7e9


def test_json_round_trip_is_exact_and_old_specs_still_load():
    levels, _ = host_levels(
        meminfo_text=MEMINFO,
        dram_bandwidth=4.2e10,
        dram_source="measured",
        logical_cpus=2,
        root=FIXTURES / "sysfs_xeon_icelake_4cpu",
    )
    spec = HardwareSpec("cpu", 1e12, 4.2e10, "cpu", memory_levels=levels)
    data = json.loads(json.dumps(spec.to_dict()))
    assert HardwareSpec.from_dict(data) == spec
    assert HardwareSpec.from_dict(data).to_dict() == data
    old = HardwareSpec("cpu", 1e12, 4.2e10, "cpu")
    assert "memory_levels" not in old.to_dict()  # reports without levels read back byte for byte
    assert HardwareSpec.from_dict(old.to_dict()).memory_levels == ()


def test_levels_run_nearest_first_and_are_validated():
    small, big = MemoryLevel("L1d", 48 * KIB), MemoryLevel("L2", MIB)
    with pytest.raises(HardwareError, match="nearest first: L1d"):
        HardwareSpec("cpu", 1e12, 1e10, memory_levels=(big, small))
    with pytest.raises(HardwareError, match="names a level twice"):
        HardwareSpec("cpu", 1e12, 1e10, memory_levels=(small, small))
    with pytest.raises(HardwareError, match="capacity_bytes=0"):
        MemoryLevel("L1d", 0)
    with pytest.raises(HardwareError, match="bandwidth"):
        MemoryLevel("L1d", 4096, bandwidth=-1.0)


def test_apple_levels_from_recorded_sysctl():
    text = (FIXTURES / "sysctl_apple_m1.txt").read_text()
    levels, notes = apple_levels(text, 6.8e10, "table")
    assert [(lv.name, lv.capacity_bytes, lv.per_core, lv.shared_by, lv.instances) for lv in levels] == [
        ("L1d", 131072, True, 1, 4),  # hw.perflevel0.l1dcachesize, 4 performance cores
        ("L2", 12582912, False, 4, 1),  # hw.perflevel0.l2cachesize = 12 MiB, cpusperl2 = 4
        ("unified memory", 8 * 1024**3, False, 8, 1),  # hw.memsize, hw.ncpu
    ]
    assert levels[-1].bandwidth == 6.8e10
    assert "the system level cache is not reported by sysctl; it is left out, never guessed" in notes


def test_gpu_levels_without_an_l2_in_the_table_say_so():
    row = match_gpu("NVIDIA H100 80GB HBM3")
    assert row is not None
    levels, notes = gpu_levels(row, 85520809984, "nvml: memory total")
    assert [(lv.name, lv.capacity_bytes, lv.bandwidth) for lv in levels] == [
        ("device memory", 85520809984, row.memory_bandwidth)
    ]
    assert notes == (f"L2: chips.toml states no L2 size for the {row.name}; the level is left out, never guessed",)


def test_working_sets_are_inside_the_level():
    l1 = MemoryLevel("L1d", 48 * KIB, per_core=True)
    l3 = MemoryLevel("L3", 32 * MIB, shared_by=2)
    assert working_set(l1, 2) == 24 * KIB  # half of one core's 48 KiB, whatever the thread count
    assert working_set(l3, 2) == 8 * MIB  # 32 MiB / (2 × 2 threads)


def _broken_copy(dst, src, passes):
    dst[: dst.size // 2] = src[: src.size // 2]  # copies half: its time is not a bandwidth
    return dst


def _skipping_in_place(x, passes):
    np.add(x, np.float32(1.0), out=x)  # one pass whatever it was asked
    return x


def test_a_copy_that_does_not_copy_is_rejected():
    level = MemoryLevel("L1d", 48 * KIB, per_core=True)
    with pytest.raises(MeasurementError, match="destination differs from the source"):
        measure_level(level, kernels=LevelKernels("broken", _broken_copy, NUMPY_KERNELS.in_place), max_threads=1)


def test_an_in_place_loop_that_skips_passes_is_rejected():
    level = MemoryLevel("L1d", 48 * KIB, per_core=True)
    with pytest.raises(MeasurementError, match=r"x is not x0 \+ "):
        measure_level(level, kernels=LevelKernels("skips", NUMPY_KERNELS.copy, _skipping_in_place), max_threads=1)


def test_a_level_probe_is_verified_and_cached(private_calibration_cache):
    level = MemoryLevel("L1d", 48 * KIB, per_core=True)
    figure = measure_level(level, max_threads=1, samples=2)
    assert figure["bytes_per_thread"] == 24 * KIB and figure["capacity_bytes"] == 48 * KIB
    assert set(figure["rates"]) == {"copy, 1 thread(s)", "in-place, 1 thread(s)"}
    assert figure["samples"] == 2 and check_section({"L1d": figure}) is None
    assert figure["probe_revision"] == LEVEL_PROBE_REVISION
    key = {"machine": "test"}
    write_entry(key, {"levels": {"L1d": figure}})
    assert read_entry(key).entry["levels"]["L1d"] == figure
    write_entry(key, {"levels": {"L1d": {**figure, "bytes_per_second": -1.0}}})
    assert read_entry(key).note.endswith("(levels['L1d'] has no positive bytes_per_second); measured afresh")


def test_the_compiled_jax_loops_pass_the_same_checks():
    pytest.importorskip("jax")
    from neural_cost.adapters._jax.level_probe import jax_level_kernels

    kernels = jax_level_kernels()
    src = np.random.default_rng(0).random(1024, dtype=np.float32)
    assert np.array_equal(kernels.copy(np.zeros_like(src), src, 7), src)
    x0 = np.arange(1024, dtype=np.float32)
    assert np.array_equal(kernels.in_place(x0, 1000), x0 + 1000)  # x·1 + 1, a thousand passes
    figure = measure_level(MemoryLevel("L1d", 48 * KIB, per_core=True), kernels=kernels, max_threads=1, samples=2)
    assert figure["method"].endswith("fori_loop (one compiled call per sample)")


def test_a_level_probes_rate_is_its_passes_own_not_its_calls_fixed_cost():
    """A compiled loop's call copies its buffer in and takes a fresh result: a fixed cost per call.
    A fake sample of 50 ms per call + 1 ms per pass, 10 passes: 60 ms a sample, which read as the
    passes' time gives a sixth of their rate. Twice the passes (70 ms) less the fastest at the
    passes (60 ms) is 10 ms for 10 passes: 1 ms a pass, the fixed cost gone."""

    def sample(passes):
        return 0.050 + 0.001 * passes

    moved, seconds, passes = _marginal(sample, 4096, 10, [sample(10), sample(10)], "fake")
    assert (moved, passes) == (4096 * 10, 10)
    assert seconds == [pytest.approx(0.010), pytest.approx(0.010)]  # 4,096 B a pass ÷ 1 ms: 4.1 MB/s
    # 0.1 ms a pass: 10 more passes take 1 ms, under half of MIN_SAMPLE_SECONDS (5 ms), so the passes
    # double again (40: 3 ms; 80: 70 more passes, 7 ms)
    moved, seconds, passes = _marginal(lambda p: 0.050 + 0.0001 * p, 4096, 10, [0.051], "fake")
    assert (moved, passes, seconds) == (4096 * 70, 70, [pytest.approx(0.007)])
    with pytest.raises(MeasurementError, match="4194304 passes took no longer than 10"):
        _marginal(lambda passes: 0.05, 4096, 10, [0.05], "fake")  # passes that cost nothing: noise, to the limit
