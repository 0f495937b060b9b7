"""The host's cross-core wake-up: how long a thread takes to wake a thread on another core and hear back.

A virtual machine's cores are the host's threads; when the host is busy, one core waking another
waits for the host to run it. On this project's 2-core VM a jitted ``lax.scan`` of small dots ran at
0.97 ms (batch 4) and 2.56 ms (batch 16) while this round trip took a median 6.5 µs, and at 2.51 ms and
5.66 ms while it took 16.7 µs, every round of 348 in two minutes (docs/expected.md, "The host's state
now"); the scan's kernels hand work between the cores every trip. A C round trip over a futex read
3.9 µs and 8.6 µs in the same two states: the host, not Python, moved. Kernels that run long on both
cores, or on one, barely moved.

``cross_core_wake`` measures it from Python in a few milliseconds, with no framework: two threads,
each pinned to its own core of those this process may use, pass an event back and forth.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from .levels import SYSFS_CPU, _read, parse_cpu_list

#: Round trips per measurement (about 1.5–4 ms in all on that VM); the median is kept. The first
#: ``_WARM`` are not kept: the peer thread is still starting and moving to its core.
ROUND_TRIPS = 200
_WARM = 2
#: The whole measurement gets at most this long: on a machine too busy to pass an event 200 times in half
#: a second, or with a peer that never answers, there is no figure (None), never a guess.
_PATIENCE = 0.5


def cross_core_wake(round_trips: int = ROUND_TRIPS) -> float | None:
    """The median round trip, in seconds, of an event passed to a thread on another core and back;
    None where it cannot be measured: fewer than two cores allowed to this process, no way to pin a
    thread (``os.sched_setaffinity``: Linux), or round trips that take longer than ``_PATIENCE`` in
    all. The two threads are pinned to two cores of those this process may use (``core_pair``: on two
    physical cores where it can). The calling thread's core mask is restored."""
    if round_trips < 1:
        raise ValueError(f"cross_core_wake(round_trips={round_trips}): at least one round trip is needed")
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        return None
    cores = core_pair(sorted(allowed))
    go, back, stop = threading.Event(), threading.Event(), threading.Event()

    def peer() -> None:
        try:
            os.sched_setaffinity(0, {cores[1]})  # 0: the calling thread (Linux)
        except OSError:
            stop.set()
            back.set()
            return
        while not stop.is_set():
            if go.wait(_PATIENCE):
                go.clear()
                back.set()

    thread = threading.Thread(target=peer, name="neural-cost-wake", daemon=True)
    times: list[float] = []
    deadline = time.perf_counter() + _PATIENCE
    try:
        os.sched_setaffinity(0, {cores[0]})
        thread.start()
        for _ in range(round_trips + _WARM):
            start = time.perf_counter()
            go.set()
            if not back.wait(max(0.0, deadline - start)) or stop.is_set():
                return None
            times.append(time.perf_counter() - start)
            back.clear()
    except OSError:
        return None
    finally:
        stop.set()
        go.set()
        with contextlib.suppress(OSError):  # the allowed cores changed meanwhile: left where the system put it
            os.sched_setaffinity(0, allowed)
        if thread.ident is not None:  # started
            thread.join(_PATIENCE)
    return statistics.median(times[_WARM:])


def mean_wake(before: float | None, after: float | None) -> float | None:
    """The wake-up around a timed stretch: the mean of the one before and the one after it, either alone
    where the other was not measured, None with neither."""
    found = [wake for wake in (before, after) if wake is not None]
    return sum(found) / len(found) if found else None


def core_pair(cores: Sequence[int], root: Path = SYSFS_CPU) -> tuple[int, int]:
    """The two cores ``cross_core_wake`` pins its threads to, of ``cores`` (sorted, at least two): the
    lowest-numbered, and the lowest-numbered after it that is no hyper-thread sibling of it (sysfs'
    ``topology/thread_siblings_list`` under ``root``): siblings share one physical core and its caches: their
    round trip is not the one a framework's threads on two physical cores make. Where every allowed core is
    its sibling, or sysfs cannot say, the next one."""
    first = cores[0]
    siblings = parse_cpu_list(_read(root / f"cpu{first}/topology/thread_siblings_list") or "")
    apart = [core for core in cores[1:] if core not in siblings]
    return first, apart[0] if apart else cores[1]
