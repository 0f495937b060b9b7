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

__all__ = ["first_touch_probe"]


def first_touch_probe(nbytes: int = 64 * 1024 * 1024, repeats: int = 9) -> float:
    """Seconds per byte: a float32 fill of ``nbytes`` on pages mapped for it (an anonymous private
    ``mmap``, as glibc maps a large block) less the same fill on warm pages, the smallest
    difference of ``repeats`` (a stall only ever adds). One thread fills, as one kernel's
    thread writes one buffer."""
    import numpy as np

    elements = nbytes // 4
    warm = np.ones(elements, dtype=np.float32)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        warm.fill(2.0)
        warm_seconds = time.perf_counter() - start
        pages = mmap.mmap(-1, 4 * elements, flags=mmap.MAP_PRIVATE)
        start = time.perf_counter()
        fresh = np.frombuffer(pages, dtype=np.float32)
        fresh.fill(1.0)
        fresh_seconds = time.perf_counter() - start
        del fresh
        pages.close()
        best = min(best, max(0.0, fresh_seconds - warm_seconds) / (4 * elements))
    return best
