"""A loop fusion that computes and reads an operand across its layout (``_jax/strides.py``,
``core.kernels.STRIDED_READS``): read off the HLO XLA:CPU compiles, each figure derived by hand beside it."""

import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
jnp = jax.numpy

from neural_cost.adapters import JaxAdapter  # noqa: E402
from neural_cost.adapters._jax.hlo_text import parse_hlo  # noqa: E402
from neural_cost.adapters._jax.strides import LINE_BYTES, layout, strided_reads  # noqa: E402
from neural_cost.core import kernels as core_kernels  # noqa: E402


def _relu_of_two(permutation):
    return lambda a, x, y: jnp.transpose(jax.nn.relu(x * a + y), permutation)


def _figures(fn, *args):
    """Each entry kernel's ``strided_reads`` figures, by name, where it has them."""
    module = parse_hlo(jax.jit(fn).lower(*args).compile().as_text())
    found = {}
    for instruction in module.computations[module.entry]:
        figures = strided_reads(module, instruction)
        if figures is not None:
            found[instruction.name] = figures
    return found


def _arrays(shape, count=2):
    return (jnp.ones(shape[-1:]), *(jnp.full(shape, 1.0 + k) for k in range(count)))


def test_a_channel_to_batch_transpose_after_pointwise_work_reads_a_line_an_element():
    """relu(x·a + y) over 32 × 32² × 32 f32, written transposed (3, 1, 2, 0) (as XLA:CPU lays out a filter gradient's
    operand): the result [C][H][W][N] walks N fastest, 32·32·32 elements (128 kB) apart in x and y, so each of their
    32⁴ = 1,048,576 elements costs a 64 B line: extra 2 × 1,048,576 × (64 − 4) = 125,829,120 bytes. A line (16
    channels of one position) comes back when C moves on, after the H·W·N = 32,768 result elements: 32,768 lines ×
    64 B = 2,097,152 bytes an array, 4,194,304 for both. The vector ``a`` is read through a broadcast: not strided."""
    assert LINE_BYTES == 64
    (figures,) = _figures(_relu_of_two((3, 1, 2, 0)), *_arrays((32, 32, 32, 32))).values()
    assert figures == (2 * 32**4 * (64 - 4), 2 * 32**3 * 64) == (125_829_120, 4_194_304)


def test_an_nhwc_to_nchw_transpose_comes_back_to_its_lines_sooner():
    """(0, 3, 1, 2) over 4 × 32² × 32: the result [N][C][H][W] walks W fastest, C = 32 elements (128 B) apart in x
    and y: extra 2 × 131,072 × 60 = 15,728,640. A line comes back when C moves on, after W·H = 1,024 result elements:
    65,536 bytes an array, 131,072 for both."""
    (figures,) = _figures(_relu_of_two((0, 3, 1, 2)), *_arrays((4, 32, 32, 32))).values()
    assert figures == (2 * 4 * 32**3 * 60, 2 * 32 * 32 * 64) == (15_728_640, 131_072)


def test_no_strided_reads_without_work_a_transpose_or_a_line_of_stride():
    """A transpose alone (XLA:CPU copies it another way: 296–359 µs against 2,544 for the one after pointwise work,
    on a 2-core VM), pointwise work without one, a transpose that keeps the minor-most dim (H ↔ W of NHWC), and one
    whose stride is under a line (2 elements of 4 B: 8 B) read nothing across their layout."""
    shape = (32, 32, 32, 32)
    assert _figures(lambda x: jnp.transpose(x, (3, 1, 2, 0)), jnp.ones(shape)) == {}
    assert _figures(lambda a, x, y: jax.nn.relu(x * a + y), *_arrays(shape)) == {}
    assert _figures(_relu_of_two((0, 2, 1, 3)), *_arrays(shape)) == {}
    assert _figures(_relu_of_two((0, 2, 1)), *_arrays((64, 2, 2))) == {}


def test_the_figures_reach_the_traced_kernel_as_a_trait():
    """Traced with the adapter, the fusion's kernel carries ``strided_reads:EXTRA:REUSE`` and the core reads it back."""
    trace = JaxAdapter(cross_check=True).trace(jax.jit(_relu_of_two((3, 1, 2, 0))), _arrays((32, 32, 32, 32)))
    (kernel,) = [k for k in trace.kernels if core_kernels.strided_reads(k) is not None]
    assert f"{core_kernels.STRIDED_READS}125829120:4194304" in kernel.compiled_traits
    assert core_kernels.strided_reads(kernel) == (125_829_120, 4_194_304)


def test_layouts_read_minor_most_first():
    assert layout("f32[8,4]{0,1}") == (0, 1)
    assert layout("f32[2,3,4]") == (2, 1, 0)  # none printed: the last dim minor-most
    assert layout("(f32[2], s32[])") is None
    assert layout("f32[]") == ()
