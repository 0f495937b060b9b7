"""Host memory bandwidth probes: one thread (``measure_copy_bandwidth``), or every core
(``measure_dram_bandwidth``, what ``detect_hardware()`` measures and caches).

One thread cannot keep enough cache misses in flight to saturate memory on most machines,
and its figure swings with where the scheduler puts it. So each logical CPU copies its own
disjoint chunk of one buffer (numpy's copy releases the GIL, so the threads run at once);
a sample is the wall time from the shared start until the last chunk lands. The best of
``samples`` (at least 9) is the figure, and the spread of the samples is kept beside it.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..core.errors import MeasurementError

MIN_SAMPLES = 9
_CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
_MIB = 1024 * 1024
_MIN_COPY_BYTES = 64 * _MIB
_MAX_COPY_BYTES = 1024 * _MIB
_FALLBACK_COPY_BYTES = 256 * _MIB
# 4099 elements (a prime, ~16 KB apart) so the sample lands on varied offsets within pages.
_SAMPLE_STRIDE = 4099
# Source data is uniform in [0, 1): a negative value in the destination is never a copied one.
_POISON = np.float32(-1.0)

CopyFunction = Callable[[NDArray[np.float32], NDArray[np.float32]], object]


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


def default_threads() -> int:
    """One thread per CPU this process may run on (its affinity), not per CPU of the machine."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _timed_parallel(chunks: list[tuple[NDArray[np.float32], NDArray[np.float32]]], copy: CopyFunction) -> float:
    """Start every chunk's copy at one barrier; the time until the last one finishes."""
    start_line = threading.Barrier(len(chunks) + 1)
    errors: list[BaseException] = []

    def work(dst: NDArray[np.float32], src: NDArray[np.float32]) -> None:
        start_line.wait()
        try:
            copy(dst, src)
        except BaseException as error:  # re-raised on the caller's thread below
            errors.append(error)

    threads = [threading.Thread(target=work, args=pair, daemon=True) for pair in chunks]
    for thread in threads:
        thread.start()
    start_line.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return elapsed


def measure_dram_bandwidth(
    nbytes: int | None = None,
    samples: int = MIN_SAMPLES,
    *,
    threads: int | None = None,
    copy: CopyFunction = np.copyto,
    seed: int = 0,
    allocations: int = 1,
) -> BandwidthMeasurement:
    """Copy a random float32 buffer with ``threads`` (default: every CPU this process may use),
    each over its own chunk; bandwidth = 2 × nbytes / best sample (read + written).

    ``allocations`` fresh buffers are measured one after another (``samples`` each) and the
    best sample of all is the figure: on a virtual machine where a buffer's pages land, and
    so the bandwidth one allocation sees, changes from one allocation to the next (42 vs 80
    GB/s on the development VM), a peak from one allocation is a draw, not the machine's.

    The buffer defaults to 4 × the last-level cache (64 MiB to 1 GiB) so it streams from DRAM.
    Every sample is verified on a strided sample poisoned before it, and the whole buffer is
    compared at the end; a copy that does not copy raises ``MeasurementError``.
    """
    if nbytes is None:
        nbytes, size_source = _default_copy_bytes()
    else:
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 4096:
            raise MeasurementError(f"measure_dram_bandwidth nbytes={nbytes!r} must be an int of at least 4096 bytes")
        size_source = "passed in"
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise MeasurementError(f"measure_dram_bandwidth samples={samples!r} must be a positive int")
    workers = threads if threads is not None else default_threads()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise MeasurementError(f"measure_dram_bandwidth threads={threads!r} must be a positive int")
    if isinstance(allocations, bool) or not isinstance(allocations, int) or allocations < 1:
        raise MeasurementError(f"measure_dram_bandwidth allocations={allocations!r} must be a positive int")
    count = nbytes // 4
    nbytes = count * 4
    timed: list[float] = []
    chunk_count = 0
    for allocation in range(allocations):
        chunk_count = _measure_one_allocation(count, workers, samples, copy, seed + allocation, timed)
    best = min(timed)
    if best <= 0:
        raise MeasurementError(f"bandwidth probe: a {nbytes}-byte copy took no measurable time; pass a larger nbytes")
    return BandwidthMeasurement(
        bytes_per_second=2 * nbytes / best,
        nbytes=nbytes,
        bytes_moved=2 * nbytes,
        repeats=samples * allocations,
        samples_seconds=tuple(timed),
        best_seconds=best,
        method=f"numpy copy of random float32 on {chunk_count} threads (all cores), read + written, best of {samples}"
        + (f" on each of {allocations} fresh buffers" if allocations > 1 else ""),
        size_source=size_source,
    )


def spread(measurement: BandwidthMeasurement) -> float:
    """(slowest − fastest) / fastest sample: how much the machine moved while it was measured."""
    return (max(measurement.samples_seconds) - measurement.best_seconds) / measurement.best_seconds


def _measure_one_allocation(
    count: int, workers: int, samples: int, copy: CopyFunction, seed: int, timed: list[float]
) -> int:
    """Time ``samples`` copies of one fresh random buffer into ``timed``; the number of chunks."""
    src = np.random.default_rng(seed).random(count, dtype=np.float32)
    dst = np.empty_like(src)
    dst.fill(_POISON)  # every page touched before timing, so no sample pays for page faults
    bounds = [int(b) for b in np.linspace(0, count, workers + 1)]
    chunks = [(dst[a:b], src[a:b]) for a, b in itertools.pairwise(bounds) if b > a]
    _timed_parallel(chunks, copy)  # warm-up
    for sample in range(samples):
        dst[::_SAMPLE_STRIDE] = _POISON
        timed.append(_timed_parallel(chunks, copy))
        if not np.array_equal(dst[::_SAMPLE_STRIDE], src[::_SAMPLE_STRIDE]):
            raise MeasurementError(
                f"bandwidth probe: after sample {sample + 1} the destination differs from the source at sampled "
                f"elements; the copy function did not copy, so its time is not a bandwidth"
            )
    if not np.array_equal(dst, src):
        raise MeasurementError(
            "bandwidth probe: the destination differs from the source after the timed copies; "
            "the copy function did not copy the whole buffer, so its time is not a bandwidth"
        )
    return len(chunks)
