"""Cache-level bandwidth probes: verified random-data loops at working sets inside each level.

One Python call costs about as much as copying 32 KiB, so a level's sample is many passes
inside one call (``LevelKernels``: a numpy loop here, a compiled ``fori_loop`` in the JAX
adapter, which holds no Python per pass and reads L1 several times faster on this VM).
Each sample runs at least ``MIN_SAMPLE_SECONDS``. Two patterns: *copy* (``dst = src``, read
+ write) and *in-place* (``x = x * a + b`` with ``a = b = 1`` passed at run time, read +
write). Working sets: half a per-core level's capacity per thread; half a shared level's
capacity split over the threads. The figure is the best over both patterns and 1..N
threads (N: the CPUs this process may use), all threads' bytes together.

Verification: copy sources are random; the destination is poisoned before every sample
and compared whole after it, so a copy that does not copy is rejected. In-place data are
random integers below 2**22, so after k passes x must equal x0 + k exactly: a loop that
skips passes is rejected too.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.errors import MeasurementError
from .dram import POISON, default_threads, require_positive_int, timed_together
from .dram import Array as Array  # re-exported: the JAX adapter's loops are typed by it
from .host_cache import LEVEL_PROBE_REVISION, check_section, today  # noqa: F401  (check_section: re-exported)
from .spec import MemoryLevel

MIN_SAMPLE_SECONDS = 0.010
DEFAULT_SAMPLES = 5
_INTEGER_LIMIT = 2**22  # x0 + passes stays an exact float32 integer below 2**24

CopyLoop = Callable[[Array, Array, int], Array]  # (dst, src, passes) → dst after the passes
InPlaceLoop = Callable[[Array, int], Array]  # (x, passes) → x after x = x * 1 + 1, passes times


@dataclasses.dataclass(frozen=True, slots=True)
class LevelKernels:
    """How the passes run: a name for the method, and the two loops."""

    name: str
    copy: CopyLoop
    in_place: InPlaceLoop


def _numpy_copy(dst: Array, src: Array, passes: int) -> Array:
    for _ in range(passes):
        np.copyto(dst, src)
    return dst


def _numpy_in_place(x: Array, passes: int) -> Array:
    # x * 1 + 1 as one pass: numpy's multiply and add would be two passes over x.
    one = np.float32(1.0)
    for _ in range(passes):
        np.add(x, one, out=x)
    return x


NUMPY_KERNELS = LevelKernels("numpy loop (one call per pass)", _numpy_copy, _numpy_in_place)


def _probe(
    kernels: LevelKernels, pattern: str, bytes_per_thread: int, threads: int, samples: int, seed: int
) -> tuple[float, list[float], int]:
    """(bytes per sample, sample seconds, passes): ``samples`` verified samples of ``threads`` loops."""
    rng = np.random.default_rng(seed)
    if pattern == "copy":
        count = max(bytes_per_thread // 8, 1)  # src and dst share the working set
        sources = [rng.random(count, dtype=np.float32) for _ in range(threads)]
        buffers = [np.full(count, POISON, dtype=np.float32) for _ in range(threads)]
    else:
        count = max(bytes_per_thread // 4, 1)
        sources = [rng.integers(0, _INTEGER_LIMIT, count).astype(np.float32) for _ in range(threads)]
        buffers = [s.copy() for s in sources]
    pass_bytes = 2 * 4 * count * threads  # every pass reads and writes each thread's count elements

    def sample(passes: int) -> float:
        for buffer, source in zip(buffers, sources, strict=True):
            if pattern == "copy":
                buffer.fill(POISON)
            else:
                np.copyto(buffer, source)
        work: list[Callable[[], Array]] = [
            functools.partial(kernels.copy, d, s, passes)
            if pattern == "copy"
            else functools.partial(kernels.in_place, d, passes)
            for d, s in zip(buffers, sources, strict=True)
        ]
        elapsed, results = timed_together(work)
        _verify(pattern, results, sources, passes, kernels.name)
        return elapsed

    passes = 1
    elapsed = sample(passes)  # warm-up, and a wrong kernel is rejected before any timing counts
    timed: list[float] = []
    for _ in range(60):  # raise the passes until a sample reaches MIN_SAMPLE_SECONDS, then keep samples
        if elapsed < MIN_SAMPLE_SECONDS:
            passes = min(max(2 * passes, int(passes * 1.5 * MIN_SAMPLE_SECONDS / max(elapsed, 1e-7))), _INTEGER_LIMIT)
            timed.clear()
        elapsed = sample(passes)
        if elapsed >= MIN_SAMPLE_SECONDS:
            timed.append(elapsed)
            if len(timed) == samples:
                return _marginal(sample, pass_bytes, passes, timed, kernels.name)
    raise MeasurementError(
        f"level probe ({kernels.name}): {pattern} samples of {bytes_per_thread} B per thread never reached "
        f"{MIN_SAMPLE_SECONDS * 1e3:g} ms in a row; the machine is too noisy to measure this level"
    )


def _marginal(
    sample: Callable[[int], float], pass_bytes: int, passes: int, timed: list[float], method: str
) -> tuple[float, list[float], int]:
    """(bytes, seconds, passes) of the passes alone: samples at more passes (twice, and doubled
    again until the extra passes take half of ``MIN_SAMPLE_SECONDS``), each less the fastest at the
    passes, so a call's fixed cost cancels; the two counts are sampled in turn, so a drift of the
    machine moves both. A compiled loop's call copies its buffer in and takes a fresh result: at a
    working set of 120 MiB per thread one call cost more than a pass, and with one pass a sample a
    480 MiB "L3" read 3.7 GB/s beside DRAM's 60. At the passes' integer limit (no doubling left)
    the samples are kept as they are."""
    more, base, extra = passes, list(timed), [0.0]
    while min(extra) < MIN_SAMPLE_SECONDS / 2 and more < _INTEGER_LIMIT:
        more, doubled = min(2 * more, _INTEGER_LIMIT), []
        for _ in timed:
            doubled.append(sample(more))
            base.append(sample(passes))
        extra = [seconds - min(base) for seconds in doubled]
    if more == passes:
        return pass_bytes * passes, timed, passes
    if min(extra) <= 0:
        raise MeasurementError(
            f"level probe ({method}): {more} passes took no longer than {passes}; the machine is too noisy to "
            f"measure this level"
        )
    return pass_bytes * (more - passes), extra, more - passes


def _verify(pattern: str, results: list[Array], sources: list[Array], passes: int, method: str) -> None:
    for result, source in zip(results, sources, strict=True):
        got = np.asarray(result)
        expected = source if pattern == "copy" else source + np.float32(passes)
        if got.shape != source.shape or not np.array_equal(got, expected):
            what = "the destination differs from the source" if pattern == "copy" else f"x is not x0 + {passes}"
            raise MeasurementError(
                f"level probe ({method}): after {passes} {pattern} pass(es) {what}; the loop did not do its "
                f"passes, so its time is not a bandwidth and it is rejected"
            )


def working_set(level: MemoryLevel, threads: int) -> int:
    """Bytes each thread touches: half a per-core level, or half a shared level split over threads."""
    return level.capacity_bytes // 2 if level.per_core else level.capacity_bytes // (2 * threads)


def measure_level(
    level: MemoryLevel,
    *,
    kernels: LevelKernels = NUMPY_KERNELS,
    max_threads: int | None = None,
    samples: int = DEFAULT_SAMPLES,
    below: MemoryLevel | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """One level's cache-entry figure: the best verified rate over patterns and 1..N threads.

    ``below`` is the nearer level: a thread count whose working set would fit in it (less
    than twice its per-thread capacity) is not run, since it would measure that level.
    """
    require_positive_int(samples, "measure_level samples")
    top = max_threads if max_threads is not None else default_threads()
    rates: dict[str, float] = {}
    best: tuple[float, str, int, int, list[float]] | None = None
    for threads in range(1, top + 1):
        size = working_set(level, threads)
        nearer = 0 if below is None else below.capacity_bytes // (1 if below.per_core else threads)
        if size < max(2 * nearer, 4096):
            continue
        for pattern in ("copy", "in-place"):
            moved, timed, _ = _probe(kernels, pattern, size, threads, samples, seed + threads)
            rate = moved / min(timed)
            rates[f"{pattern}, {threads} thread(s)"] = rate
            if best is None or rate > best[0]:
                best = (rate, pattern, threads, size, timed)
    if best is None:
        raise MeasurementError(
            f"{level.name}: no thread count gives a working set inside it and beyond {below.name if below else '4 KiB'}"
        )
    rate, pattern, threads, size, timed = best
    return {
        "bytes_per_second": rate,
        "pattern": pattern,
        "threads": threads,
        "bytes_per_thread": size,
        "capacity_bytes": level.capacity_bytes,
        "samples": len(timed),
        "spread": (max(timed) - min(timed)) / min(timed),
        "rates": rates,
        "method": kernels.name,
        "probe_revision": LEVEL_PROBE_REVISION,
        "date": today(),
    }


def measure_levels(
    levels: Sequence[MemoryLevel], *, kernels: LevelKernels = NUMPY_KERNELS, **options: Any
) -> dict[str, dict[str, Any]]:
    """The ``levels`` cache section: every cache level (DRAM keeps its own probe and section)."""
    section: dict[str, dict[str, Any]] = {}
    below: MemoryLevel | None = None
    for level in levels:
        if level.name in ("DRAM", "unified memory", "device memory"):
            continue
        section[level.name] = measure_level(level, kernels=kernels, below=below, **options)
        below = level
    return section
