"""Time shared among kernels that ran at once: a profiled kernel's own time where other kernels ran beside it.

XLA:CPU runs independent branches of a program at once — a ResNet block's shortcut projection on one thread beside
its main branch's convolutions on the other, each sharing the cores, each event stretched. Counted whole, a Keras
ResNet50 on JAX (96-pixel images, batch 4) read its stage-5 first block's four convolutions at 9 ms a run, where the
model cut after that block ran 5.0 ms longer than cut before it. Shared, they read 5.8 ms, and the kernels' times
sum to the time the device spent in kernels (``Profile.kernel_seconds``).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["shared_durations"]


def shared_durations(events: Sequence[tuple[float, float, int, int]]) -> list[float]:
    """Each ``(start, duration, kernel, thread)`` event's duration with the time it ran beside other kernels shared:
    over each instant of it, one share of as many as the threads running another kernel's event then, plus its own.
    An event of the same thread (a loop's body inside the loop's event) or of the same kernel is no other kernel's
    time beside it."""
    order = sorted(range(len(events)), key=lambda i: events[i][0])
    shared = [duration for _, duration, _, _ in events]
    active: list[int] = []  # events started before the current one that may still run
    for at, i in enumerate(order):
        start, duration, kernel, thread = events[i]
        end = start + duration
        active = [j for j in active if events[j][0] + events[j][1] > start]
        later, k = [], at + 1
        while k < len(order) and events[order[k]][0] < end:  # events that start inside this one
            later.append(order[k])
            k += 1
        beside = [
            (max(events[j][0], start), min(events[j][0] + events[j][1], end), events[j][3])
            for j in active + later
            if events[j][2] != kernel and events[j][3] != thread
        ]
        if beside:
            shared[i] = _share(start, end, beside)
        active.append(i)
    return shared


def _share(start: float, end: float, beside: list[tuple[float, float, int]]) -> float:
    """The integral over ``[start, end]`` of 1 ÷ (1 + the threads with an interval of ``beside`` running)."""
    edges = sorted(
        [(a, 1, thread) for a, b, thread in beside if b > a] + [(b, -1, thread) for a, b, thread in beside if b > a]
    )
    running: dict[int, int] = {}
    total, at = 0.0, start
    for point, step, thread in edges:
        total += (point - at) / (1 + len(running))
        at = point
        running[thread] = running.get(thread, 0) + step
        if not running[thread]:
            del running[thread]
    return total + (end - at) / (1 + len(running))
