"""What a write to freshly mapped pages costs over a write to warm ones, measured with NumPy.

A compiled program (XLA's executables under JAX or TensorFlow) takes its buffers from the same
glibc ``malloc`` an eager framework does: when glibc returns freed memory to the system and maps
it again on the next run, every first write to a 4 KiB page faults, whoever writes it. On this
2-core machine a Flax CNN at batch 16 ran 10–14 ms a call in a fresh process under glibc's
defaults and 6 ms with every page kept (``MALLOC_MMAP_MAX_=0`` and a large trim threshold):
XLA's worker threads allocated megabytes per run that glibc mapped anew each time. Such faults
are counted during the timed runs (``Measurement.allocator``) and priced at this cost; the
per-byte figure is the machine's (the kernel zeroes and maps the page), so NumPy measures it
for frameworks whose own allocation cannot be asked for one fresh buffer.
"""

from __future__ import annotations

import mmap
import time
from collections.abc import Callable

__all__ = ["first_touch_cost", "first_touch_probe"]


def first_touch_cost(
    fill_warm: Callable[[], object], fill_fresh: Callable[[mmap.mmap], object], nbytes: int, repeats: int = 9
) -> float:
    """Seconds per byte: ``fill_fresh(pages)`` on ``nbytes`` of pages mapped for it (an anonymous
    private ``mmap``, as glibc maps a large block, whatever the allocator's settings) less
    ``fill_warm()`` of the same size on warm pages, the smallest difference of ``repeats`` (a
    stall only ever adds: the smallest of 3 read 2.9 µs a page once, against 0.9 µs in the
    processes around it). ``fill_fresh`` returns what holds the pages, dropped before they are."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fill_warm()
        warm_seconds = time.perf_counter() - start
        pages = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)
        start = time.perf_counter()
        held = fill_fresh(pages)
        fresh_seconds = time.perf_counter() - start
        del held
        pages.close()
        best = min(best, max(0.0, fresh_seconds - warm_seconds) / nbytes)
    return best


def first_touch_probe(nbytes: int = 64 * 1024 * 1024, repeats: int = 9) -> float:
    """``first_touch_cost`` of a float32 fill through NumPy, on one thread (as one kernel's
    thread writes one buffer)."""
    import numpy as np

    warm = np.ones(nbytes // 4, dtype=np.float32)

    def fresh(pages: mmap.mmap) -> object:
        array = np.frombuffer(pages, dtype=np.float32)
        array.fill(1.0)
        return array

    return first_touch_cost(lambda: warm.fill(2.0), fresh, 4 * (nbytes // 4), repeats)
