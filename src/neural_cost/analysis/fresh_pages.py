"""Results an eager framework writes on pages the OS maps anew: what the expected time adds.

An eager PyTorch program allocates every result with ``posix_memalign``. glibc serves a request
from its heap when a free chunk or the heap's top fits it, and maps fresh pages otherwise
(``mmap``, or growing the heap); the first write to each fresh 4 KiB page faults, about a
microsecond a page on the machines measured, which the micro-benchmarks (warm buffers) never pay.

Two parts, as measured here (glibc 2.36, minor page faults per run of the same program):

- **Always**: a request of at least 32 MiB (``DEFAULT_MMAP_THRESHOLD_MAX`` on 64-bit) is mapped
  anew every time: glibc raises its dynamic mmap threshold only up to that size, so such a chunk
  is never kept for reuse (a 32 MiB tensor written and freed in a loop faults its 8,193 pages on
  every run; a GPT-2-style model at batch 16 faults its 67 MB of logits, 16,384 pages, on every
  forward, and little else). This part is in the expected time.
- **Sometimes**: every smaller result of at least 128 KiB (glibc's initial mmap threshold) may
  land on fresh pages or on reused ones, depending on the heap's state, which differs from one
  process to the next (the same ResNet-style forward at batch 16 faulted 16.6 MB per run in one
  process and nothing in another). The expected time's upper end counts them all.

Neither applies when glibc is not the allocator (another C library, or a preloaded jemalloc or
tcmalloc), nor when its thresholds are set through the environment (``MALLOC_*_`` variables or
``GLIBC_TUNABLES``): a note says so and only the range remains.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping

from ..core.estimate import CostEstimate
from ..core.units import format_seconds, format_si

#: glibc's initial mmap threshold: a result at least this large may be handed out on fresh pages.
FRESH_THRESHOLD_BYTES = 128 * 1024
#: glibc's largest dynamic mmap threshold on 64-bit (``4·1024·1024·sizeof(long)``): a result at
#: least this large is mapped anew on every run.
ALWAYS_MAPPED_BYTES = 32 * 1024 * 1024
_ENVIRONMENT = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")
_PRELOADED = ("jemalloc", "tcmalloc", "mimalloc")


def allocator_caveat(environ: Mapping[str, str] | None = None) -> str | None:
    """Why glibc's default behaviour cannot be assumed for this process, or None when it can."""
    env = os.environ if environ is None else environ
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return "the C library is not glibc"
    preloaded = [name for name in _PRELOADED if name in env.get("LD_PRELOAD", "")]
    if preloaded:
        return f"{preloaded[0]} is preloaded (LD_PRELOAD)"
    tuned = [name for name in _ENVIRONMENT if name in env]
    if "glibc.malloc." in env.get("GLIBC_TUNABLES", ""):
        tuned.append("GLIBC_TUNABLES")
    if tuned:
        return f"glibc's thresholds are set by {', '.join(tuned)}"
    return None


def large_result_bytes(estimate: CostEstimate, operations: tuple[int, ...], at_least: int) -> int:
    """Bytes of the results of ``operations`` (record indices) of at least ``at_least`` bytes each,
    over all their executions. The records do not say which results are written in place: pass
    the allocated ones (``expected.allocated_records``)."""
    total = 0
    for i in operations:
        operation = estimate.by_operation[i].operation
        if operation.output_bytes >= at_least:
            total += operation.output_bytes * operation.count
    return total


def always_mapped_note(fresh_bytes: int, seconds: float) -> str:
    return (
        f"fresh pages: {format_si(fresh_bytes, 'B')} of results of ≥ 32 MiB each are mapped anew on every run by "
        f"glibc (never kept for reuse): {format_seconds(seconds)} of first-touch page faults in the expected time"
    )
