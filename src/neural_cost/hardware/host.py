"""The host CPU's peaks: cores × clock × SIMD FLOPs/cycle, and a measured copy bandwidth.

The compute peak is a formula over /proc/cpuinfo (see ``cpuinfo.py`` for its rate table
and known inaccuracies); the bandwidth is a single-thread numpy copy, timed and verified.
Nothing here guesses: where the formula's inputs are missing (macOS, ARM, POWER) it
raises and asks for an explicit ``HardwareSpec``.
"""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..core.attrs import FrozenAttrs
from ..core.errors import HardwareError, MeasurementError
from ..core.units import format_si
from .cpuinfo import parse_cpuinfo, parse_meminfo_total, x86_simd_rates
from .spec import HardwareSpec

_CPUINFO_PATH = Path("/proc/cpuinfo")
_MEMINFO_PATH = Path("/proc/meminfo")
_MAX_FREQ_PATH = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
_CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
_X86_MACHINES = frozenset({"x86_64", "amd64", "i386", "i686"})

_MIB = 1024 * 1024
_MIN_COPY_BYTES = 64 * _MIB
_MAX_COPY_BYTES = 1024 * _MIB
_FALLBACK_COPY_BYTES = 256 * _MIB
# 4099 elements (a prime, ~16 KB apart) so the sample lands on varied offsets within pages.
_SAMPLE_STRIDE = 4099
# Source data is uniform in [0, 1): a negative value in the destination is never a copied one.
_POISON = np.float32(-1.0)

CopyFunction = Callable[[NDArray[np.float32], NDArray[np.float32]], object]


def _formula_unavailable(reason: str) -> HardwareError:
    return HardwareError(
        f"the host-CPU peak formula is not available yet for {reason}; pass "
        f"HardwareSpec(name=..., peak_flops=..., memory_bandwidth=..., kind='cpu') explicitly "
        f"(peak FLOP/s and bytes/s from the vendor's datasheet or your own measurement)"
    )


@dataclass(frozen=True, slots=True)
class BandwidthMeasurement:
    """A timed, verified memory copy: ``bytes_per_second`` = 2 × nbytes / best time.

    Bytes are counted as read + written (STREAM's copy convention). A write-allocate cache
    also reads the destination before writing it unless the copy uses streaming stores;
    that extra read is not counted, so this can understate the traffic the bus carried.
    """

    bytes_per_second: float
    nbytes: int
    bytes_moved: int
    repeats: int
    samples_seconds: tuple[float, ...]
    best_seconds: float
    method: str
    size_source: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "bytes_per_second": self.bytes_per_second,
            "nbytes": self.nbytes,
            "bytes_moved": self.bytes_moved,
            "repeats": self.repeats,
            "samples_seconds": list(self.samples_seconds),
            "best_seconds": self.best_seconds,
            "method": self.method,
            "size_source": self.size_source,
        }


def _parse_cache_size(text: str) -> int | None:
    """sysfs cache sizes read like '48K', '1280K', '32M' (binary units)."""
    text = text.strip().upper()
    scale = {"K": 1024, "M": _MIB, "G": 1024 * _MIB}.get(text[-1:], 1)
    digits = text.rstrip("KMG")
    return int(digits) * scale if digits.isdigit() and int(digits) > 0 else None


def _last_level_cache() -> tuple[int, int] | None:
    """(size in bytes, level) of cpu0's largest cache level, from sysfs; None when unreadable."""
    best: tuple[int, int] | None = None
    for index in sorted(_CACHE_DIR.glob("index*")):
        try:
            level = int((index / "level").read_text().strip())
            size = _parse_cache_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if size is not None and (best is None or (level, size) > (best[1], best[0])):
            best = (size, level)
    return best


def _default_copy_bytes() -> tuple[int, str]:
    """4 × the last-level cache, within [64 MiB, 1 GiB], so the copy streams from DRAM."""
    cache = _last_level_cache()
    if cache is None:
        return _FALLBACK_COPY_BYTES, "256 MiB (no cache size in sysfs)"
    size, level = cache
    nbytes = min(max(4 * size, _MIN_COPY_BYTES), _MAX_COPY_BYTES)
    return nbytes, f"4 × L{level} cache {size // 1024} KiB, within [64 MiB, 1 GiB]"


def _check_sample(dst: NDArray[np.float32], src: NDArray[np.float32], when: str) -> None:
    if not np.array_equal(dst[::_SAMPLE_STRIDE], src[::_SAMPLE_STRIDE]):
        raise MeasurementError(
            f"bandwidth probe: after the {when}, the destination differs from the source at sampled "
            f"elements; the copy function did not copy, so its time is not a bandwidth"
        )


def measure_copy_bandwidth(
    nbytes: int | None = None,
    repeats: int = 5,
    *,
    copy: CopyFunction = np.copyto,
    seed: int = 0,
) -> BandwidthMeasurement:
    """Time ``copy(dst, src)`` on random float32 buffers; bandwidth = 2 × nbytes / best time.

    The default size is 4 × the last-level cache (sysfs), capped at 1 GiB and at least
    64 MiB, so the copy streams from memory rather than cache. The source is random (a
    constant could be stored as one broadcast value by some backends); both buffers are
    touched and one untimed copy warms them; each timed copy is checked on a strided
    sample (poisoned before the copy, so a copy that stops copying is caught) and the
    whole destination is compared once at the end. Raises ``MeasurementError`` when the
    copy is wrong. ``copy`` is injectable for tests.

    Known inaccuracy: one thread copies, so on a many-core server this is well below the
    socket's bandwidth (one core cannot keep enough misses in flight); on a laptop or a
    small VM it is close.
    """
    if nbytes is None:
        nbytes, size_source = _default_copy_bytes()
    else:
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 4096:
            raise MeasurementError(f"measure_copy_bandwidth nbytes={nbytes!r} must be an int of at least 4096 bytes")
        size_source = "passed in"
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise MeasurementError(f"measure_copy_bandwidth repeats={repeats!r} must be a positive int")
    count = nbytes // 4
    nbytes = count * 4

    src = np.random.default_rng(seed).random(count, dtype=np.float32)
    dst = np.empty_like(src)
    dst.fill(_POISON)  # touches every page, so no timed copy pays for page faults
    copy(dst, src)
    _check_sample(dst, src, "warm-up copy")
    samples: list[float] = []
    for repeat in range(repeats):
        dst[::_SAMPLE_STRIDE] = _POISON
        start = time.perf_counter()
        copy(dst, src)
        samples.append(time.perf_counter() - start)
        _check_sample(dst, src, f"timed copy {repeat + 1}")
    if not np.array_equal(dst, src):
        raise MeasurementError(
            "bandwidth probe: the destination differs from the source after the timed copies; "
            "the copy function did not copy the whole buffer, so its time is not a bandwidth"
        )
    best = min(samples)
    if best <= 0:
        raise MeasurementError(f"bandwidth probe: a {nbytes}-byte copy took no measurable time; pass a larger nbytes")
    return BandwidthMeasurement(
        bytes_per_second=2 * nbytes / best,
        nbytes=nbytes,
        bytes_moved=2 * nbytes,
        repeats=repeats,
        samples_seconds=tuple(samples),
        best_seconds=best,
        method="single-thread numpy copy of random float32, read + written, best of repeats",
        size_source=size_source,
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
) -> tuple[HardwareSpec, HostDetails]:
    """The host CPU's peaks: physical cores × clock × FLOPs/cycle per dtype, and its bandwidth.

    With no ``cpuinfo_text`` it reads this machine: /proc/cpuinfo, cpufreq's max frequency
    (when ``max_freq_hz`` is None) and /proc/meminfo. A passed ``cpuinfo_text`` may describe
    another machine, so nothing of this one is read: memory capacity comes only from
    ``meminfo_text``, and the bandwidth must be passed (the copy probe measures this host).

    ``memory_bandwidth`` (bytes/s) wins when given; otherwise ``measure_bandwidth`` runs
    ``measure_copy_bandwidth()`` (about a second). ``peak_flops`` is the float32 peak.

    Known inaccuracy: the clock is the maximum (turbo) frequency where cpufreq reports one;
    all-core AVX-512 and AMX work runs at a lower licence clock, so the peak is an upper
    bound. The SIMD rates assume two FMA ports (see ``cpuinfo.py``).
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
    rates = x86_simd_rates(info.flags)
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
        measurement = measure_copy_bandwidth()
        bandwidth = measurement.bytes_per_second
        bandwidth_source = f"measured: {measurement.method}"
        bandwidth_summary = (
            f"bandwidth measured: single-thread numpy copy {format_si(measurement.nbytes, 'B')}, "
            f"best of {measurement.repeats}"
        )

    memory_capacity = parse_meminfo_total(meminfo_text) if meminfo_text is not None else None
    fp32 = rates["float32"]
    source = (
        f"formula: {info.physical_cores} cores × {clock_hz / 1e9:.3g} GHz × {fp32.flops_per_cycle} "
        f"FP32 FLOP/cycle ({fp32.isa}); {bandwidth_summary}"
    )
    spec = HardwareSpec(
        name=name,
        peak_flops=peaks["float32"],
        memory_bandwidth=bandwidth,
        kind="cpu",
        peak_flops_by_dtype=FrozenAttrs(peaks),
        memory_capacity=memory_capacity,
        source=source,
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
    )
    return spec, details
