"""Host memory bandwidth probes: one thread (``measure_copy_bandwidth``), or every core
(``measure_dram_bandwidth``, what ``detect_hardware()`` measures and caches).

One thread cannot keep enough cache misses in flight to saturate memory on most machines,
and its figure swings with where the scheduler puts it. So each logical CPU copies its own
disjoint chunk of one buffer (numpy's copy releases the GIL, so the threads run at once);
a sample is the wall time from the shared start until the last chunk lands. The best of
``samples`` (at least 9) is the figure, and the spread of the samples is kept beside it.
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

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
POISON = np.float32(-1.0)

Array = NDArray[np.float32]
CopyFunction = Callable[[Array, Array], object]
T = TypeVar("T")


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


def require_positive_int(value: object, what: str) -> int:
    """``value`` when it is an int of at least 1 (a bool is not one); else ``MeasurementError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise MeasurementError(f"{what}={value!r} must be a positive int")
    return value


def _copy_size(nbytes: int | None, function: str) -> tuple[int, str]:
    """(bytes copied, a whole number of float32, and where the size came from)."""
    if nbytes is None:
        nbytes, size_source = _default_copy_bytes()
    else:
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 4096:
            raise MeasurementError(f"{function} nbytes={nbytes!r} must be an int of at least 4096 bytes")
        size_source = "passed in"
    return nbytes // 4 * 4, size_source


def _check_sample(dst: Array, src: Array, when: str) -> None:
    if not np.array_equal(dst[::_SAMPLE_STRIDE], src[::_SAMPLE_STRIDE]):
        raise MeasurementError(
            f"bandwidth probe: after {when}, the destination differs from the source at sampled "
            f"elements; the copy function did not copy, so its time is not a bandwidth"
        )


def _verified_copy_samples(
    nbytes: int, seed: int, samples: int, timed_copy: Callable[[Array, Array], float], sample_name: str
) -> list[float]:
    """``samples`` timings of ``timed_copy(dst, src)`` over one fresh random buffer, after an
    untimed warm-up. The destination is poisoned whole first (touching every page, so no
    sample pays for page faults) and on a strided sample before every copy, checked on that
    sample after it, and compared whole at the end: a copy that does not copy raises."""
    src = np.random.default_rng(seed).random(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    dst.fill(POISON)
    timed_copy(dst, src)
    _check_sample(dst, src, "the warm-up copy")
    timed: list[float] = []
    for sample in range(samples):
        dst[::_SAMPLE_STRIDE] = POISON
        timed.append(timed_copy(dst, src))
        _check_sample(dst, src, f"{sample_name} {sample + 1}")
    if not np.array_equal(dst, src):
        raise MeasurementError(
            "bandwidth probe: the destination differs from the source after the timed copies; "
            "the copy function did not copy the whole buffer, so its time is not a bandwidth"
        )
    return timed


def _measurement(nbytes: int, timed: list[float], method: str, size_source: str) -> BandwidthMeasurement:
    best = min(timed)
    if best <= 0:
        raise MeasurementError(f"bandwidth probe: a {nbytes}-byte copy took no measurable time; pass a larger nbytes")
    return BandwidthMeasurement(
        bytes_per_second=2 * nbytes / best,
        nbytes=nbytes,
        bytes_moved=2 * nbytes,
        repeats=len(timed),
        samples_seconds=tuple(timed),
        best_seconds=best,
        method=method,
        size_source=size_source,
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
    nbytes, size_source = _copy_size(nbytes, "measure_copy_bandwidth")
    repeats = require_positive_int(repeats, "measure_copy_bandwidth repeats")

    def timed_copy(dst: Array, src: Array) -> float:
        start = time.perf_counter()
        copy(dst, src)
        return time.perf_counter() - start

    timed = _verified_copy_samples(nbytes, seed, repeats, timed_copy, "the timed copy")
    method = "single-thread numpy copy of random float32, read + written, best of repeats"
    return _measurement(nbytes, timed, method, size_source)


def default_threads() -> int:
    """One thread per CPU this process may run on (its affinity), not per CPU of the machine."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def timed_together(work: Sequence[Callable[[], T]]) -> tuple[float, list[T]]:
    """Start every piece of ``work`` on its own thread at one barrier: the wall time until the
    last one ends, and the results that are not None, in order. An error in any is re-raised
    here, on the caller's thread."""
    start_line = threading.Barrier(len(work) + 1)
    results: list[T | None] = [None] * len(work)
    errors: list[BaseException] = []

    def run(slot: int) -> None:
        start_line.wait()
        try:
            results[slot] = work[slot]()
        except BaseException as error:  # re-raised on the caller's thread below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(slot,), daemon=True) for slot in range(len(work))]
    for thread in threads:
        thread.start()
    start_line.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return elapsed, [result for result in results if result is not None]


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
    nbytes, size_source = _copy_size(nbytes, "measure_dram_bandwidth")
    samples = require_positive_int(samples, "measure_dram_bandwidth samples")
    workers = default_threads() if threads is None else require_positive_int(threads, "measure_dram_bandwidth threads")
    allocations = require_positive_int(allocations, "measure_dram_bandwidth allocations")
    bounds = [int(b) for b in np.linspace(0, nbytes // 4, workers + 1)]
    chunks = [(low, high) for low, high in itertools.pairwise(bounds) if high > low]

    def timed_copy(dst: Array, src: Array) -> float:
        return timed_together([functools.partial(copy, dst[low:high], src[low:high]) for low, high in chunks])[0]

    timed: list[float] = []
    for allocation in range(allocations):
        timed += _verified_copy_samples(nbytes, seed + allocation, samples, timed_copy, "sample")
    method = f"numpy copy of random float32 on {len(chunks)} threads (all cores), read + written, best of {samples}"
    if allocations > 1:
        method += f" on each of {allocations} fresh buffers"
    return _measurement(nbytes, timed, method, size_source)


def spread(measurement: BandwidthMeasurement) -> float:
    """(slowest − fastest) / fastest sample: how much the machine moved while it was measured."""
    return (max(measurement.samples_seconds) - measurement.best_seconds) / measurement.best_seconds
