"""What an operand its caches no longer hold costs a PyTorch kernel, per byte (``KernelCalibration.
evicted_seconds_per_byte``): the grid times each program on operands it reused a moment before, and in a model a
layer's weights were last read a whole run before, its result lands on memory the allocator last handed out long
ago (``analysis/kernel_extras.py``).

Each probe program runs on one set of operands over and over (hot), then on the next of as many sets as span
``RING_BYTES`` each call (cold: each set last touched 64 MiB of traffic before, as a model's weights are), in
alternating rounds; its cost per byte is (cold − hot) ÷ the bytes one call touches. On a 2-core Intel VM (KVM,
2 MiB of L2 a core) linears of 2.6–10 MB took 0.13–0.82 ms more cold, 4–34 GB/s of their bytes, a multiply of three
0.46–1.8 MB tensors 28–44 GB/s, where main memory streams 55 GB/s on both cores: a kernel does not overlap reading
its cold operands with its work.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

#: The traffic between two uses of one operand set in the cold runs: past a core's L2 and a host's L3 slice.
RING_BYTES = 64 * 1024 * 1024


def _linear(m: int, k: int, n: int) -> tuple[Callable[[], tuple[Any, ...]], Callable[..., Any], int]:
    def operands() -> tuple[Any, ...]:
        return torch.randn(n), torch.randn(m, k), torch.randn(k, n), torch.empty(m, n)

    return operands, lambda b, x, w, out: torch.addmm(b, x, w, out=out), 4 * (m * k + k * n + m * n)


def _multiply(elements: int) -> tuple[Callable[[], tuple[Any, ...]], Callable[..., Any], int]:
    def operands() -> tuple[Any, ...]:
        return torch.randn(elements), torch.randn(elements), torch.empty(elements)

    return operands, lambda x, y, out: torch.mul(x, y, out=out), 12 * elements


#: The probes: two linears (2.6 and 5.2 MB a call) and a multiply of 3 MB; none a held-out model's shape.
PROBES = ((384, 320, 768), (1024, 512, 512), 262_144)


def _median_call(fn: Callable[..., Any], sets: Sequence[tuple[Any, ...]], calls: int, start: int) -> float:
    found = []
    for i in range(calls):
        args = sets[(start + i) % len(sets)]
        began = time.perf_counter()
        fn(*args)
        found.append(time.perf_counter() - began)
    return statistics.median(found)


def evicted_probe(calls: int = 12, rounds: int = 3) -> float | None:
    """Seconds per byte an evicted operand adds to a kernel (the module docstring): the median over the probes of
    (cold − hot) ÷ bytes, each side the median of its rounds' medians; None when no probe ran slower cold."""
    costs = []
    with torch.no_grad():
        for probe in PROBES:
            operands, fn, size = _linear(*probe) if isinstance(probe, tuple) else _multiply(probe)
            sets = [operands() for _ in range(max(2, RING_BYTES // size + 2))]
            for args in sets:  # every page touched once before timing
                fn(*args)
            hot, cold = [], []
            for r in range(rounds):
                hot.append(_median_call(fn, sets[:1], calls, 0))
                cold.append(_median_call(fn, sets[1:], calls, r * calls))
            extra = statistics.median(cold) - statistics.median(hot)
            if extra > 0:
                costs.append(extra / size)
            del sets
    return statistics.median(costs) if costs else None
