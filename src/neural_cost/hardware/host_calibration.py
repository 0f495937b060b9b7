"""The host's cached figures applied to its spec: the DRAM bandwidth, and measured compute peaks.

``detect_hardware()`` for the host reads this machine's entry in the calibration cache
(``host_cache.py``): the bandwidth measured with all cores, and, once ``neural-cost hardware
--calibrate`` has run, the fastest kernel per dtype. A measured rate above the formula's means
the formula's clock is nominal (boost clocks run higher): the spec then scores against the
measured rate and says so, rather than report efficiencies above 100%. A measured rate below
the formula is shown beside it, and the formula, an upper bound, still scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import MeasurementError
from ..core.units import format_percent, format_si
from .dram import default_threads, measure_dram_bandwidth, spread
from .host_cache import machine_key, read_cache_levels, read_entry, today, write_entry
from .level_probes import NUMPY_KERNELS, LevelKernels

_CPUINFO = Path("/proc/cpuinfo")
_MEMINFO = Path("/proc/meminfo")


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def live_machine_key(cpuinfo_text: str | None = None) -> dict[str, Any]:
    """This machine's cache key from /proc/cpuinfo, sysfs cache sizes and /proc/meminfo."""
    text = cpuinfo_text if cpuinfo_text is not None else _read(_CPUINFO) or ""
    return machine_key(text, read_cache_levels(), _read(_MEMINFO))


@dataclass(frozen=True, slots=True)
class DramFigure:
    """The host's DRAM bandwidth, where it came from, and any note about the cache."""

    bytes_per_second: float
    source: str
    entry: Mapping[str, Any]
    cache_path: str
    measured_now: bool
    note: str | None = None


def dram_source(dram: Mapping[str, Any]) -> str:
    """``measured, all cores (2 threads), best of 9, spread 12.0%, cached 2026-12-01``: the same
    words whether this run measured it or read it, so two runs on one cache score alike."""
    pattern = dram.get("pattern")
    how = f"{pattern}, " if isinstance(pattern, str) and pattern != "copy" else ""
    return (
        f"measured, {how}all cores ({dram['threads']} threads), best of {dram['samples']}, "
        f"spread {format_percent(dram['spread'])}, cached {dram['date']}"
    )


DRAM_ALLOCATIONS = 4


def dram_entry(samples: int = 9, nbytes: int | None = None) -> dict[str, Any]:
    """Measure the host's DRAM bandwidth now, as a cache section."""
    threads = default_threads()
    # four fresh buffers: on a VM the bandwidth one allocation sees depends on where its pages land
    measured = measure_dram_bandwidth(nbytes, samples, threads=threads, allocations=DRAM_ALLOCATIONS)
    rates = [measured.bytes_moved / s for s in measured.samples_seconds]
    # An in-place stream (x = x * 1 + 1: each line read, then written back while still cached)
    # moves the bytes it counts; a copy's write also reads its destination line first unless the
    # copy streams its stores. The figure is the better of the two, as for the cache levels.
    in_place = _in_place_dram(measured.nbytes, threads)
    best_in_place = in_place is not None and in_place["bytes_per_second"] > measured.bytes_per_second
    return {
        "bytes_per_second": in_place["bytes_per_second"] if best_in_place and in_place else measured.bytes_per_second,
        "pattern": "in-place" if best_in_place else "copy",
        "copy_bytes_per_second": measured.bytes_per_second,
        "in_place": in_place,
        "samples_bytes_per_second": rates,
        "spread": in_place["spread"] if best_in_place and in_place else spread(measured),
        "samples": in_place["samples"] if best_in_place and in_place else measured.repeats,
        "threads": threads,
        "allocations": DRAM_ALLOCATIONS,
        "nbytes": measured.nbytes,
        "size_source": measured.size_source,
        "method": measured.method,
        "date": today(),
    }


def _in_place_dram(nbytes: int, threads: int) -> dict[str, Any] | None:
    """The best verified in-place (and copy) rate over 1..N threads on a working set of
    ``nbytes`` in all (level_probes' probe), or None when the machine is too noisy for it."""
    from .level_probes import measure_level
    from .spec import MemoryLevel

    try:
        return measure_level(MemoryLevel("DRAM", 2 * nbytes, shared_by=max(threads, 1)), max_threads=threads)
    except MeasurementError:
        return None


def host_dram(key: Mapping[str, Any], *, refresh: bool = False) -> DramFigure:
    """The cached DRAM figure, else one measured now and written to the cache."""
    read = read_entry(key)
    dram = None if refresh or read.entry is None else read.entry.get("dram")
    if isinstance(dram, dict):
        return DramFigure(dram["bytes_per_second"], dram_source(dram), dram, str(read.path), False)
    dram = dram_entry()
    path = write_entry(key, {"dram": dram})
    return DramFigure(dram["bytes_per_second"], dram_source(dram), dram, str(path), True, read.note)


def cached_compute(key: Mapping[str, Any]) -> Mapping[str, Any]:
    """The cached compute figures by dtype ({} before any ``--calibrate``)."""
    entry = read_entry(key).entry
    compute = entry.get("compute") if entry is not None else None
    return compute if isinstance(compute, dict) else {}


def scored_peaks(
    formula: Mapping[str, float], formula_sources: Mapping[str, str], clock_hz: float, compute: Mapping[str, Any]
) -> tuple[dict[str, float], dict[str, str]]:
    """The peak each dtype scores against and its source, given the formula and measured figures."""
    peaks, sources = dict(formula), dict(formula_sources)
    for dtype, peak in formula.items():
        figure = compute.get(dtype)
        if not isinstance(figure, Mapping):
            continue
        rate, kernel, date = float(figure["flops_per_second"]), figure["kernel"], figure["date"]
        measured = f"{format_si(rate, 'FLOP/s')} ({kernel}, {date})"
        if rate > peak:
            peaks[dtype] = rate
            sources[dtype] = (
                f"measured {measured}, above the formula's {format_si(peak, 'FLOP/s')}: the formula's "
                f"{clock_hz / 1e9:.3g} GHz is a nominal clock; the measured rate scored"
            )
        else:
            sources[dtype] = (
                f"{formula_sources[dtype]}; calibrated {measured} = {format_percent(rate / peak)} of it; "
                f"the formula scored"
            )
    return peaks, sources


def calibrate_host_levels(kernels: LevelKernels = NUMPY_KERNELS, **options: Any) -> tuple[dict[str, Any], str]:
    """Measure this host's cache levels (sysfs) and write them to its cache entry's ``levels``
    section; the section and the entry's path. The DRAM figure is left as it is."""
    from .level_probes import measure_levels
    from .levels import read_cpu_levels

    levels, _ = read_cpu_levels()
    section = measure_levels(levels, kernels=kernels, **options)
    path = write_entry(live_machine_key(), {"levels": section})
    return section, str(path)
