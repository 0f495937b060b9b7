"""The host CPU's peaks: cores × clock × SIMD FLOPs/cycle, and a measured copy bandwidth.

The compute peak is a formula over /proc/cpuinfo (see ``cpuinfo.py`` for its rate table
and known inaccuracies), or a measured rate where calibration found the formula's clock
nominal; the bandwidth is an all-core numpy copy, timed, verified and cached per machine
(``host_calibration.py``); the copy probes live in ``dram.py``.
Nothing here guesses: where the formula's inputs are missing (macOS, ARM, POWER) it
raises and asks for an explicit ``HardwareSpec``.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.attrs import FrozenAttrs
from ..core.errors import HardwareError
from .cpuinfo import parse_cpuinfo, parse_meminfo_total, x86_simd_rates
from .dram import BandwidthMeasurement
from .spec import HardwareSpec

_CPUINFO_PATH = Path("/proc/cpuinfo")
_MEMINFO_PATH = Path("/proc/meminfo")
_MAX_FREQ_PATH = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
_X86_MACHINES = frozenset({"x86_64", "amd64", "i386", "i686"})


def _formula_unavailable(reason: str) -> HardwareError:
    return HardwareError(
        f"the host-CPU peak formula is not available yet for {reason}; pass "
        f"HardwareSpec(name=..., peak_flops=..., memory_bandwidth=..., kind='cpu') explicitly "
        f"(peak FLOP/s and bytes/s from the vendor's datasheet or your own measurement)"
    )


@dataclass(frozen=True, slots=True)
class HostDetails:
    """Where each number in the host CPU's ``HardwareSpec`` came from."""

    cpu_name: str
    cpuinfo_source: str
    physical_cores: int
    cores_source: str
    logical_cpus: int
    clock_hz: float
    clock_source: str
    flops_per_cycle: FrozenAttrs
    isa_by_dtype: FrozenAttrs
    peak_flops_by_dtype: FrozenAttrs
    memory_bandwidth: float
    bandwidth_source: str
    bandwidth_measurement: BandwidthMeasurement | None
    memory_capacity: int | None
    memory_capacity_source: str | None
    calibration_cache: str | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "cpu_name": self.cpu_name,
            "cpuinfo_source": self.cpuinfo_source,
            "physical_cores": self.physical_cores,
            "cores_source": self.cores_source,
            "logical_cpus": self.logical_cpus,
            "clock_hz": self.clock_hz,
            "clock_source": self.clock_source,
            "flops_per_cycle": self.flops_per_cycle.to_json(),
            "isa_by_dtype": self.isa_by_dtype.to_json(),
            "peak_flops_by_dtype": self.peak_flops_by_dtype.to_json(),
            "memory_bandwidth": self.memory_bandwidth,
            "bandwidth_source": self.bandwidth_source,
            "bandwidth_measurement": (
                self.bandwidth_measurement.to_dict() if self.bandwidth_measurement is not None else None
            ),
            "memory_capacity": self.memory_capacity,
            "memory_capacity_source": self.memory_capacity_source,
            "calibration_cache": self.calibration_cache,
            "notes": list(self.notes),
        }


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _sysfs_max_freq_hz() -> float | None:
    """cpufreq's cpuinfo_max_freq (kHz) in Hz; None where there is no cpufreq (most VMs)."""
    text = _read_text(_MAX_FREQ_PATH)
    if text is None or not text.strip().isdigit() or int(text) <= 0:
        return None
    return int(text) * 1e3


def _live_cpuinfo() -> str:
    if sys.platform == "darwin":
        raise _formula_unavailable("macOS (no /proc/cpuinfo)")
    if not sys.platform.startswith("linux"):
        raise _formula_unavailable(f"platform {sys.platform!r} (it reads Linux /proc/cpuinfo)")
    machine = platform.machine().lower()
    if machine not in _X86_MACHINES:
        raise _formula_unavailable(f"{machine or 'this'} CPUs (it knows x86 SIMD rates only)")
    text = _read_text(_CPUINFO_PATH)
    if text is None:
        raise _formula_unavailable("this machine (/proc/cpuinfo is unreadable)")
    return text


def _positive_bandwidth(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise HardwareError(f"memory_bandwidth={value!r} must be a positive number of bytes/s")
    return float(value)


def host_cpu_spec(
    cpuinfo_text: str | None = None,
    max_freq_hz: float | None = None,
    memory_bandwidth: float | None = None,
    measure_bandwidth: bool = True,
    *,
    meminfo_text: str | None = None,
    calibrated: bool = True,
) -> tuple[HardwareSpec, HostDetails]:
    """The host CPU's peaks: physical cores × clock × FLOPs/cycle per dtype, and its bandwidth.

    With no ``cpuinfo_text`` it reads this machine: /proc/cpuinfo, cpufreq's max frequency
    (when ``max_freq_hz`` is None) and /proc/meminfo. A passed ``cpuinfo_text`` may describe
    another machine, so nothing of this one is read: memory capacity comes only from
    ``meminfo_text``, and the bandwidth must be passed (the copy probe measures this host).

    ``memory_bandwidth`` (bytes/s) wins when given; otherwise ``measure_bandwidth`` reads
    this machine's calibration cache, or measures the all-core copy bandwidth once (about a
    second) and caches it. ``peak_flops`` is the float32 peak. For this machine and with
    ``calibrated`` (the default), compute figures cached by ``neural-cost hardware
    --calibrate`` replace a formula peak they exceed (see ``host_calibration.py``).

    Known inaccuracy: the clock is the maximum (turbo) frequency where cpufreq reports one;
    all-core AVX-512 and AMX work runs at a lower licence clock, so the peak is an upper
    bound. The SIMD rates assume two FMA ports, halved for AMD cores with narrower units (see ``cpuinfo.py``).
    """
    live = cpuinfo_text is None
    meminfo_source = "meminfo_text MemTotal"
    if cpuinfo_text is None:
        cpuinfo_text = _live_cpuinfo()
        if max_freq_hz is None:
            max_freq_hz = _sysfs_max_freq_hz()
        if meminfo_text is None:
            meminfo_text, meminfo_source = _read_text(_MEMINFO_PATH), "/proc/meminfo MemTotal"
    info = parse_cpuinfo(cpuinfo_text, max_freq_hz)
    rates = x86_simd_rates(info.flags, info.vendor, info.family, info.model)
    if not rates:
        raise _formula_unavailable(f"{info.model_name or 'this CPU'} (cpuinfo lists no x86 SIMD flags)")
    if info.clock_hz is None or info.clock_source is None:
        raise _formula_unavailable(
            f"{info.model_name or 'this CPU'} (no clock: cpuinfo has no 'cpu MHz' and no max_freq_hz was passed)"
        )
    clock_hz = info.clock_hz
    name = info.model_name or "x86 CPU (cpuinfo has no model name)"
    peaks = {dtype: info.physical_cores * clock_hz * rate.flops_per_cycle for dtype, rate in rates.items()}

    measurement: BandwidthMeasurement | None = None
    cache_path: str | None = None
    notes: list[str] = []
    formula_sources = {
        dtype: (
            f"formula: {info.physical_cores} physical cores ({info.cores_source}) × {clock_hz / 1e9:.4g} GHz "
            f"({info.clock_source}) × {rate.flops_per_cycle} FLOP/cycle ({rate.isa})"
        )
        for dtype, rate in rates.items()
    }
    scored, sources = peaks, formula_sources
    if live and calibrated:
        from .host_calibration import cached_compute, live_machine_key, scored_peaks

        scored, sources = scored_peaks(peaks, formula_sources, clock_hz, cached_compute(live_machine_key(cpuinfo_text)))
    if memory_bandwidth is not None:
        bandwidth = _positive_bandwidth(memory_bandwidth)
        bandwidth_source = "user-supplied"
        bandwidth_summary = "bandwidth user-supplied"
    elif not measure_bandwidth:
        raise HardwareError("host_cpu_spec(measure_bandwidth=False) needs memory_bandwidth= (bytes/s)")
    elif not live:
        raise HardwareError(
            "host_cpu_spec: cpuinfo_text may describe another machine, and the copy probe can only "
            "measure this one; pass memory_bandwidth= (bytes/s), e.g. measure_copy_bandwidth().bytes_per_second"
        )
    else:
        from .host_calibration import host_dram, live_machine_key

        key = live_machine_key(cpuinfo_text)
        figure = host_dram(key)
        bandwidth, bandwidth_source = figure.bytes_per_second, figure.source
        bandwidth_summary = f"bandwidth {figure.source}"
        cache_path = figure.cache_path
        notes += [figure.note] if figure.note else []

    memory_capacity = parse_meminfo_total(meminfo_text) if meminfo_text is not None else None
    fp32 = rates["float32"]
    compute_summary = (
        f"formula: {info.physical_cores} cores × {clock_hz / 1e9:.3g} GHz × {fp32.flops_per_cycle} "
        f"FP32 FLOP/cycle ({fp32.isa})"
    )
    if scored != peaks:
        compute_summary = "measured peaks (calibration cache) above the formula's nominal clock"
    spec = HardwareSpec(
        name=name,
        peak_flops=scored["float32"],
        memory_bandwidth=bandwidth,
        kind="cpu",
        peak_flops_by_dtype=FrozenAttrs(scored),
        memory_capacity=memory_capacity,
        source=f"{compute_summary}; {bandwidth_summary}",
        sources={**{f"peak_flops[{d}]": text for d, text in sources.items()}, "memory_bandwidth": bandwidth_source},
    )
    details = HostDetails(
        cpu_name=name,
        cpuinfo_source="/proc/cpuinfo" if live else "cpuinfo_text argument",
        physical_cores=info.physical_cores,
        cores_source=info.cores_source,
        logical_cpus=info.logical_cpus,
        clock_hz=clock_hz,
        clock_source=info.clock_source,
        flops_per_cycle=FrozenAttrs({dtype: rate.flops_per_cycle for dtype, rate in rates.items()}),
        isa_by_dtype=FrozenAttrs({dtype: rate.isa for dtype, rate in rates.items()}),
        peak_flops_by_dtype=FrozenAttrs(peaks),
        memory_bandwidth=bandwidth,
        bandwidth_source=bandwidth_source,
        bandwidth_measurement=measurement,
        memory_capacity=memory_capacity,
        memory_capacity_source=None if memory_capacity is None else meminfo_source,
        calibration_cache=cache_path,
        notes=tuple(notes),
    )
    return spec, details
