"""Values that change a kernel's time: a sigmoid or SiLU on tiny inputs (eager PyTorch on a CPU).

The expected time reads a kernel's shapes, never its values. On this project's AMD EPYC VM PyTorch's
CPU sigmoid and SiLU took about 4× their time on float32 inputs of magnitude 1e-18 … 1e-36 (a
4×288×56² SiLU: 1.70 ms against 0.40 ms on standard-normal values; 1.5× at 1e-17, 2–3× at 1e-37,
full speed at 1e-16 and 1e-38; ``torch.set_flush_denormal(True)`` changed nothing; GELU, ReLU and a
multiply did not slow there) — where the activations of a random-weight EfficientNet built from its
`transformers` config sit, whose SiLUs then read 2.2× their expected time. The recorder shows each such
call's input to ``TinyValues`` as it runs, which samples it; the trace's note names the calls that ran on
such values, so a report on a random-weight model says why those rows can read slow.
"""

from __future__ import annotations

from typing import Any

import torch

#: The aten calls whose time was measured to move with their input's magnitude.
SLOWED = frozenset({"sigmoid", "sigmoid_", "silu", "silu_"})
#: The magnitudes they slowed on (median |x| of the input; standard-normal values scaled by 10^-6 …
#: 10^-38 in one sweep): 1.5× or more from 1e-17 down to 1e-37, at full speed at 1e-16 and under 1e-38.
TINY = (1e-37, 1e-17)
#: Elements read per call (a strided sample), and the smallest input sampled (a small call's time is
#: its overhead, whatever its values).
SAMPLE, SMALLEST = 1024, 4096


class TinyValues:
    """The ``SLOWED`` calls of one trace, and those of them whose input's median magnitude lies in ``TINY``."""

    __slots__ = ("calls", "largest", "smallest", "tiny")

    def __init__(self) -> None:
        self.calls = 0
        self.tiny = 0
        self.smallest = float("inf")
        self.largest = 0.0

    def see(self, name: str, args: tuple[Any, ...]) -> None:
        """Sample the input of one call ``name`` (called inside the recorder's dispatch, whose mode is off
        while it runs: these reads are not recorded)."""
        if name not in SLOWED or not args:
            return
        x = args[0]
        if type(x) is not torch.Tensor or x.is_meta or x.device.type != "cpu" or x.dtype != torch.float32:
            return
        if x.numel() < SMALLEST or not x.is_contiguous():  # a strided input would be copied to be sampled
            return
        self.calls += 1
        flat = x.detach().view(-1)
        median = float(flat[:: max(1, flat.numel() // SAMPLE)][:SAMPLE].abs().median())
        if TINY[0] <= median <= TINY[1]:
            self.tiny += 1
            self.smallest, self.largest = min(self.smallest, median), max(self.largest, median)

    def note(self) -> str | None:
        """The trace's note, or None when no call ran on such values."""
        if not self.tiny:
            return None
        return (
            f"values: {self.tiny} of {self.calls} sigmoid/SiLU calls ran on inputs of median magnitude "
            f"{self.smallest:.0e} … {self.largest:.0e}, where PyTorch's CPU sigmoid and SiLU took about 4× "
            f"their time on this project's AMD EPYC (random weights whose activations vanish?): their expected "
            f"time reads the shapes, not the values"
        )
