"""The member of a pointwise class (``elementwise``, ``transcendental``) a kernel is read off, by how its compiled code
reads its operands (``core.kernels``' traits):

- ``:sliced`` (``SLICED``): it reads a dynamic slice through two or more slices (a GRU's gates in a loop step), which
  XLA:CPU ran 4–7× slower than the same math on a row sliced once;
- ``:transposed`` (``TRANSPOSED``): a loop fusion that computes and reads an operand across its layout, a cache line an
  element (``STRIDED_READS``: a transpose fused after pointwise work, as XLA:CPU lays out a filter gradient's
  operand). Its memory time is its traffic's plus the lines it loads beyond its operands' bytes, at the bandwidth of
  the level that holds the lines it touches before each comes back (``strided_memory``): on a 2-core VM a 32⁴ f32
  ``relu(x·a + y)`` ran 331 µs, transposed (3, 1, 2, 0) in the same fusion 2,544 µs — 126 MB of lines beyond its
  operands, 4 MiB of them between reuses, at L3's 54 GB/s: 2.33 ms more. The cache's sets are not modeled (a
  power-of-two stride maps a column to a few of them): the class's curve carries what they cost;
- ``elementwise:forwarded`` (``FORWARDED``): a TensorFlow graph op that may write over its input's buffer.

Each falls back to its plain class's curve without one of its own (``kernel_model.WAYS``), noted; a ``:transposed``
kernel read so keeps its lines' memory time.
"""

from __future__ import annotations

from ..core.estimate import CostEstimate
from ..core.kernels import FORWARDS_INPUT, SLICED_DYNAMIC_SLICE, Kernel, strided_reads
from ..hardware.spec import HardwareSpec
from .kernels import KernelTime, Levels

__all__ = ["FORWARDED", "SLICED", "TRANSPOSED", "pointwise_view", "strided_memory"]

SLICED = ":sliced"
TRANSPOSED = ":transposed"
FORWARDED = ":forwarded"
#: A level holds a strided kernel's lines between reuses where it holds this many times their bytes: a loop that
#: cycles through as many lines as its cache holds hits none of them (least recently used goes first), and its other
#: reads, its writes and the cache's sets take their share. On a 2-core VM (2 MiB L2s) the grid's fusions whose lines
#: came back within 2 MiB read them at L3's rate (1.6 ms for one 32⁴ f32 array, 0.8 ms expected at L2's).
REUSE_ROOM = 2
_POINTWISE = ("elementwise", "transcendental")


def pointwise_view(kernel: Kernel, name: str) -> str:
    """``name``'s pointwise family + ``SLICED`` or ``STRIDED`` (the module docstring); an ``elementwise`` one that may
    write into its input's buffer (``FORWARDS_INPUT``) ``elementwise:forwarded``; any other class as it is."""
    head = name.partition(":")[0]
    if head in _POINTWISE and SLICED_DYNAMIC_SLICE in kernel.compiled_traits:
        return head + SLICED
    if head in _POINTWISE and strided_reads(kernel) is not None:
        return head + TRANSPOSED
    return name + FORWARDED if name == "elementwise" and FORWARDS_INPUT in kernel.compiled_traits else name


def strided_memory(estimate: CostEstimate, row: KernelTime, hardware: HardwareSpec) -> float:
    """A ``:transposed`` kernel's memory time (the module docstring): its row's, plus its extra lines over all its
    executions at the bandwidth of the level that holds ``REUSE_ROOM`` × its reuse bytes (``Levels.place``); the
    row's for any other, and on a device other than a CPU."""
    found = strided_reads(estimate.kernels[row.index]) if row.index is not None else None
    if found is None or hardware.kind != "cpu":  # a GPU's XLA transposes through shared memory, a tile at a time
        return row.memory_seconds
    extra, reuse = found
    return row.memory_seconds + extra * row.executions / Levels.of(hardware).place(REUSE_ROOM * reuse)[1]
