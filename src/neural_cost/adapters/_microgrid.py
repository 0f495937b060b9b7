"""The size grids the kernel calibration's micro-programs share across frameworks.

``_jax/microbench.py``, ``_tf/microbench.py`` and ``_torch/microbench.py`` each build their own
programs (a jitted function, a tf.function, an eager call) over these sizes, so a grid is written
once here, with the fixed random inputs (``Inputs``); every shape is plain integers and this
module imports no framework (only numpy). ``quick`` keeps
every class at a few sizes (for tests). A framework that wants other points adds its own beside
these (a tail of convolutions, another largest pointwise size).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

import numpy as np

T = TypeVar("T")


class Inputs(Generic[T]):
    """Fixed random arrays, one per shape and slot, shared by the programs that take them (the
    grid's inputs stay a few hundred megabytes), made a framework's by ``put`` (``tf.constant``,
    ``jax.device_put``): ``rand(*shape, k=1)`` is a second array."""

    def __init__(self, put: Callable[[np.ndarray], T]) -> None:
        self.put = put
        self.rng = np.random.default_rng(0)
        self.kept: dict[tuple[tuple[int, ...], int], T] = {}

    def __call__(self, *shape: int, k: int = 0) -> T:
        if (shape, k) not in self.kept:
            self.kept[(shape, k)] = self.put(self.rng.standard_normal(shape, dtype=np.float32))
        return self.kept[(shape, k)]

    def ids(self, count: int, high: int) -> T:
        return self.put(self.rng.integers(0, high, count, dtype=np.int32))


#: Contractions ``m×k @ k×n``: rows ``m`` and (``k``, ``n``) widths, full and quick.
DOT_ROWS = (1, 4, 16, 64, 256, 1024, 4096)
DOT_ROWS_QUICK = (1, 16, 256, 2048)
DOT_WIDTHS = ((32, 64), (64, 256), (256, 256), (256, 1024), (1024, 256), (768, 3072), (2048, 2048))
DOT_WIDTHS_QUICK = ((64, 64), (512, 512))

#: Batched contractions (batch, m, k, n); quick keeps the first two.
BATCHED_DOTS = ((8, 64, 64, 64), (16, 128, 64, 128), (32, 256, 64, 256), (8, 512, 512, 512))

#: Convolutions (batch, in channels, out channels, size, kernel) every framework runs; each adds
#: its own points after these (and JAX a layout); the strided and depthwise ones are below.
CONVS = (
    (1, 3, 16, 32, 3), (4, 16, 32, 32, 3), (4, 64, 64, 16, 3), (8, 32, 32, 32, 1), (2, 64, 128, 14, 3),
    (8, 3, 32, 56, 3), (4, 128, 128, 8, 3), (16, 16, 16, 32, 3), (1, 64, 64, 56, 3), (4, 256, 256, 8, 1),
)  # fmt: skip
#: Convolutions of 0.18-2.1 GFLOP, after each framework's own (none in the quick grid): a CNN layer
#: at a training or serving batch — narrow and wide, large and small maps. Without them the grid
#: stopped at 0.17 GFLOP and a 1.2 GFLOP layer was read off the last segment's slope; without the
#: last three (0.18-0.24 GFLOP) PyTorch's narrow curve had no point between 0.34 and 2.0 ms of
#: roofline and read a 0.3 GFLOP 32-channel layer 20% slower than it ran.
LARGE_CONVS = (
    (12, 32, 32, 56, 3), (8, 48, 48, 56, 3), (6, 96, 96, 28, 3), (24, 64, 64, 28, 3), (4, 192, 192, 28, 3),
    (8, 256, 256, 14, 3), (6, 32, 32, 40, 3), (4, 24, 48, 48, 3), (2, 64, 64, 40, 3),
)  # fmt: skip

#: Convolutions of fewer than 256 output positions (``conv_views.THIN``; batch, in channels, out channels, size,
#: kernel) every framework runs at stride 1 (none in the quick grid): a ResNet's last stages at batch 1–16, 3 × 3 to
#: 14 × 14 maps, 16–196 rows, 0.15–9.4 MB of weights; eight on maps of 3² and 4² (``conv_views.SMALL_MAP``), the last
#: four 18–108 rows of 30–460 µs of roofline time. None is a held-out model's layer.
THIN_CONVS = ((1, 512, 512, 7, 3), (4, 512, 512, 3, 3), (2, 256, 256, 7, 3), (8, 512, 2048, 3, 1),
              (1, 2048, 512, 7, 1), (4, 256, 256, 6, 3), (1, 128, 128, 14, 3), (2, 64, 64, 8, 3),
              (1, 1024, 1024, 4, 1), (16, 128, 128, 3, 3), (2, 1024, 256, 3, 1), (6, 384, 384, 3, 3),
              (12, 256, 256, 3, 3), (3, 256, 1024, 4, 1))  # fmt: skip

#: 3-channel 3×3 stems (K 27: ``conv:shallow`` below 64 outputs, ``conv_views.SHALLOW``) every framework
#: runs after its large ones (none in the quick grid), 0.26–0.5 ms of roofline for the largest three:
#: JAX's pooled 32-output ones are six, two knots (five made one, below a batch-16 CNN's stem).
STEM_CONVS = ((2, 3, 32, 96, 3), (16, 3, 16, 40, 3), (4, 3, 64, 48, 3), (32, 3, 32, 32, 3), (16, 3, 16, 80, 3),
              (8, 3, 32, 112, 3), (4, 3, 32, 128, 3))  # fmt: skip

#: Strided convolutions (batch, in channels, out channels, size, kernel, stride) every framework runs
#: (none in the quick grid), for ``conv_views.STRIDED``: ten whose stride the kernel spans
#: (3×3, 7×7 stems), nine 1×1 shortcuts that skip pixels; 0.01–3.1 ms of roofline time. The last
#: three strided and two subsampled are layers at a training batch: with the grid stopping at 0.7 ms, the two efficient
#: points there (128→256, a 7×7 stem: 0.94–1.04× their bound) set the curve past it, and
#: PyTorch's 32→64 3×3 stride-2 layer at batch 16 on 64² maps (1.8 ms of roofline time, 1.6× it
#: alone) was read at 1.03×.
STRIDED_CONVS = (
    (4, 32, 64, 16, 3, 2), (12, 24, 48, 56, 3, 2), (8, 48, 96, 28, 3, 2), (2, 128, 256, 28, 3, 2),
    (16, 16, 32, 48, 3, 2), (1, 3, 64, 224, 7, 2), (1, 3, 32, 64, 7, 2),
    (8, 32, 64, 80, 3, 2), (12, 64, 128, 40, 3, 2), (4, 96, 192, 56, 3, 2),
    (4, 64, 128, 16, 1, 2), (12, 48, 96, 56, 1, 2), (6, 96, 192, 28, 1, 2), (8, 24, 48, 48, 1, 2),
    (2, 128, 256, 28, 1, 2), (16, 48, 96, 28, 1, 2), (32, 16, 32, 32, 1, 2),
    (24, 32, 64, 80, 1, 2), (16, 96, 192, 48, 1, 2),
)  # fmt: skip

#: Depthwise convolutions (batch, channels, size, kernel, stride) every framework runs (none in the
#: quick grid), for ``conv_views.DEPTHWISE``: 3×3 at strides 1 and 2, 5×5 and 7×7 (MobileNet's,
#: EfficientNet's, ConvNeXt's), 0.005–0.3 ms of roofline time; seven of stride 2, enough for
#: ``depthwise_conv:strided``'s own curve (the last five added for it).
DEPTHWISE_CONVS = (
    (4, 64, 56, 3, 1), (8, 128, 28, 3, 1), (2, 256, 14, 3, 1), (16, 32, 56, 3, 1), (1, 512, 7, 3, 1),
    (4, 96, 56, 3, 2), (8, 192, 28, 3, 2), (2, 96, 56, 7, 1), (4, 384, 14, 7, 1), (8, 240, 14, 5, 1),
    (2, 32, 112, 3, 2), (4, 144, 56, 3, 2), (8, 576, 14, 3, 2), (4, 240, 28, 5, 2), (1, 672, 14, 5, 2),
)  # fmt: skip

#: Depthwise convolutions (batch, channels, size, kernel, stride) for grids whose compiler runs them
#: through its generic convolution emitter: TensorFlow 2.21's XLA:CPU took 33–61 ns an output (a
#: 3×3 on 4×56²×64: 26.6 ms, where the graph op took 0.46), so these are small — 0.3–8 ms, six of
#: each stride (a curve of two knots: one of five points was flat, 1.1 ms for layers of 2–10 ms),
#: a 5×5 among them.
XLA_DEPTHWISE_CONVS = (
    (1, 64, 14, 3, 1), (2, 32, 28, 3, 1), (4, 64, 14, 3, 1), (4, 32, 28, 3, 1), (8, 32, 28, 3, 1), (2, 96, 14, 5, 1),
    (2, 144, 14, 3, 2), (1, 96, 28, 3, 2), (4, 144, 14, 3, 2), (4, 96, 28, 3, 2), (2, 240, 14, 5, 2), (8, 96, 28, 3, 2),
)  # fmt: skip

#: A stride-2 depthwise layer's input gradient as XLA computes it: an input-dilated grouped
#: convolution (batch, channels, input size, kernel; dilation 2, output 2 × size), ``depthwise_conv:
#: dilated``. XLA:CPU's generic emitter took 52–64 ns an output for 3×3 (123 for 5×5) — a
#: MobileNetV2 step's 4×49²×96 one 59 — where the forward curve read 13: 0.8–5 ms each.
DILATED_DEPTHWISE_CONVS = ((1, 64, 7, 3), (2, 32, 14, 3), (2, 96, 7, 3), (1, 144, 7, 3), (4, 32, 14, 3), (2, 64, 7, 5))

#: Pooled feature maps (batch, height = width, channels).
POOL_MAPS = ((1, 32, 16), (4, 56, 64), (8, 112, 64), (16, 28, 128), (2, 64, 32), (32, 14, 256), (1, 224, 3))

#: Attention shapes (batch, sequence, heads, head dim); quick keeps the first two.
ATTENTION = ((1, 32, 4, 64), (2, 128, 4, 64), (4, 128, 8, 32), (2, 512, 4, 64), (8, 256, 8, 64), (1, 1024, 8, 64))
#: PyTorch's further ones, read per query head (``kernel_classes.repeats``): PyTorch's CPU flash kernel took
#: a time proportional to batch × heads at one sequence and head size (4, 16 and 64 heads of 120 × 60 within 6%
#: a head), and a head's time depends on its own size, more slowly off sequences and head sizes that are no
#: multiples of 16 (120 × 64 at 2.2–2.4× its roofline, 128 × 64 at 1.7–1.8×, both 11–12 µs of it): heads of
#: 1–90 µs of roofline time, unaligned ones among them, and as many heads as models run.
ATTENTION_HEADS = ((8, 77, 8, 64), (4, 197, 12, 64), (16, 50, 8, 40), (2, 300, 6, 80), (8, 100, 4, 48), (4, 64, 16, 96))


def dots(quick: bool) -> Iterator[tuple[int, int, int, int]]:
    """``(i + j, m, k, n)`` for row ``i`` and width ``j`` of the grid, skipping contractions over
    4096·1024·1024 multiply-adds and results of 32 MiB or more; ``i + j`` alternates a plain dot
    with a fused one."""
    rows, widths = (DOT_ROWS_QUICK, DOT_WIDTHS_QUICK) if quick else (DOT_ROWS, DOT_WIDTHS)
    for i, m in enumerate(rows):
        for j, (k, n) in enumerate(widths):
            if m * k * n <= 4096 * 1024 * 1024 and 4 * m * n < LARGEST_RESULT_BYTES:
                yield i + j, m, k, n


def batched_dots(quick: bool) -> tuple[tuple[int, int, int, int], ...]:
    return BATCHED_DOTS[: 2 if quick else None]


#: The compiled frameworks' largest pointwise result (elements): 32,000,000 B of float32 stays
#: under the 32 MiB from which glibc maps every result anew (``analysis/fresh_pages.py``), so no
#: point measures page faults instead of its kernel (XLA's add of 10⁷ elements: 19.6 ms, 9,766
#: faults a call, against 2.8 ms warm). PyTorch's grid goes further and takes the faults out.
LARGEST = 8_000_000
#: The largest result of a calibration dot (bytes of float32): under those 32 MiB too.
LARGEST_RESULT_BYTES = 32 * 1024 * 1024


def sizes(quick: bool, largest: int = LARGEST) -> tuple[int, ...]:
    """Element counts of pointwise ops, reductions and copies, from 10³ to ``largest``."""
    if quick:
        return (1_000, 100_000, 3_000_000)
    return (1_000, 4_000, 16_000, 64_000, 256_000, 1_000_000, 4_000_000, largest)


def flat_shape(size: int) -> tuple[int, int]:
    """``size`` elements as rows of 250 (a pointwise op's input)."""
    return (size // 250, 250) if size >= 250 else (1, size)


def pointwise(
    names: tuple[str, ...], quick_names: tuple[str, ...], quick: bool, largest: int = LARGEST
) -> Iterator[tuple[str, int, tuple[int, int]]]:
    """``(name, size, shape)`` for every op (``quick_names`` when quick) at every size."""
    for name in quick_names if quick else names:
        for size in sizes(quick, largest):
            yield name, size, flat_shape(size)


def rows_of(size: int, width: int) -> tuple[int, int]:
    return max(1, size // width), width


def reduction_widths(quick: bool) -> tuple[int, ...]:
    """Row widths of the reductions and norms over the last axis."""
    return (256,) if quick else (64, 1024)


def reductions(names: tuple[str, ...], quick: bool) -> Iterator[tuple[tuple[int, int], tuple[str, ...]]]:
    """Per reduction shape (rows holding each of ``sizes`` elements), the reductions it runs: all
    of ``names`` (sum, mean, max, softmax) at width 1024, only the first and last (sum and
    softmax) at width 64 and when quick."""
    for size in sizes(quick):
        for width in reduction_widths(quick):
            yield rows_of(size, width), (names[0], names[-1]) if quick or width == 64 else names


def transpose_shape(size: int) -> tuple[int, int]:
    """``size`` elements as rows of 512 (of 32 below 8,192 elements), transposed as a copy."""
    width = 512 if size >= 512 * 16 else 32
    return size // width, width


def head_split(size: int) -> tuple[int, int, int]:
    """``(batch·seq, heads, dim)`` of about ``size`` elements: 8 heads of 64."""
    return max(2, size // 512), 8, 64


#: Layer norms (rows × width): PyTorch's backward ones, TensorFlow's Keras layers (``norm:layer``).
LAYER_NORM_ROWS = ((64, 256), (512, 768), (2048, 256), (4096, 1024), (16, 512), (256, 2048), (1024, 512))


#: A loop program's twin runs this many times fewer trips (``MicroProgram.shorter``): the two wall
#: times apart are the loop's own time, profiler-free.
SHORTER = 8


def embeddings(quick: bool) -> list[tuple[int, int]]:
    """Embedding lookups (tokens, dim) from a table of 8,192 rows."""
    grid = [(tokens, dim) for tokens in (16, 64, 256, 1024, 4096, 16384) for dim in (128, 768)]
    return grid[:: 5 if quick else 1]
