"""The work a compiled kernel's own contractions do (``adapters/_jax/hlo_work.py``), and the
metadata-less convolutions XLA makes of gradients: which record each runs, and what it computes."""

import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
lax = pytest.importorskip("jax.lax")

from neural_cost.adapters import JaxAdapter  # noqa: E402
from neural_cost.adapters._jax.hlo import compiled_kernels  # noqa: E402
from neural_cost.adapters._jax.hlo_text import parse_hlo  # noqa: E402
from neural_cost.adapters._jax.hlo_work import contraction_flops, kernel_work  # noqa: E402
from neural_cost.core.kernels import BODY  # noqa: E402

MODULE = "\n".join(
    [
        "HloModule m, entry_computation_layout={()->f32[1]}",
        "",
        "%fused (p0: f32[960,3,3,4], p1: f32[3,3,4,960]) -> f32[960,3,3,960] {",
        "  %p0 = f32[960,3,3,4] parameter(0)",
        "  %p1 = f32[3,3,4,960] parameter(1)",
        "  ROOT %dense = f32[960,3,3,960] convolution(%p0, %p1), window={size=3x3 pad=1_1x1_1}, "
        "dim_labels=b01f_01io->b01f",
        "}",
        "",
        "ENTRY %main () -> f32[1] {",
        "  %a = f32[960,3,3,4] constant({...})",
        "  %b = f32[3,3,4,960] constant({...})",
        "  %ynn = f32[960,3,3,960] fusion(%a, %b), kind=kCustom, calls=%fused",
        "  %x = f32[4,6,6,576] constant({...})",
        "  %w = f32[3,3,1,576] constant({...})",
        "  %grad = f32[4,13,13,576] convolution(%x, %w), "
        "window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f, feature_group_count=576",
        "  %l = bf16[8,32,64] constant({...})",
        "  %r = bf16[8,64,16] constant({...})",
        "  %bmm = bf16[8,32,16] dot(%l, %r), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
        "rhs_batch_dims={0}, rhs_contracting_dims={1}",
        "  ROOT %out = f32[1] constant({...})",
        "}",
        "",
    ]
)


def test_contractions_are_counted_from_their_hlo_shapes():
    module = parse_hlo(MODULE)
    entry = {i.name: i for i in module.computations["main"]}
    # XLA:CPU's dense filter gradient of a 960-channel 3×3 depthwise layer at batch 4 on 3×3 maps:
    # 960·3·3·960 outputs, each summing the kernel's 3·3·4 elements less its 960 output features
    # (36 taps): 2 · 8,294,400 · 36 = 597,196,800 FLOPs (the layer's own gradient is 960× less).
    work = kernel_work(module, entry["ynn"], entry)
    assert work.flops_by_dtype == {"float32": 2 * 960 * 3 * 3 * 960 * 3 * 3 * 4} == {"float32": 597_196_800}
    assert work.opcode == "convolution"
    # A stride-2 depthwise layer's input gradient, its 2×2 input dilation's holes multiplying nothing:
    # each of the 4·6·6 input positions × the kernel's 3·3·1·576 elements (every tap of every
    # channel, one input feature per group), as a transposed record counts: 2 · 144 · 5,184.
    assert contraction_flops(entry["grad"], entry) == ("float32", 2 * 4 * 6 * 6 * 3 * 3 * 576) == ("float32", 1_492_992)
    # A batched dot: 8·32·16 outputs, each over the 64 contracted elements.
    assert contraction_flops(entry["bmm"], entry) == ("bfloat16", 2 * 8 * 32 * 16 * 64)
    assert contraction_flops(entry["a"], entry) is None  # no contraction
    assert kernel_work(module, entry["out"], entry).flops_by_dtype == {}


SOFTMAX_SUM = "\n".join(
    [
        "HloModule m, entry_computation_layout={()->f32[4,4,128]}",
        "",
        "%inner (q0: f32[4,4,128,128]) -> f32[4,4,128,128] {",
        "  %q0 = f32[4,4,128,128] parameter(0)",
        "  ROOT %e = f32[4,4,128,128] exponential(%q0)",
        "}",
        "",
        "%plus (lhs: f32[], rhs: f32[]) -> f32[] {",
        "  %lhs = f32[] parameter(0)",
        "  %rhs = f32[] parameter(1)",
        "  ROOT %total = f32[] add(%lhs, %rhs)",
        "}",
        "",
        "%summed (p0: f32[4,4,128,128], p1: f32[]) -> f32[4,4,128] {",
        "  %p0 = f32[4,4,128,128] parameter(0)",
        "  %p1 = f32[] parameter(1)",
        "  %x = f32[4,4,128,128] fusion(%p0), kind=kLoop, calls=%inner",
        "  ROOT %r = f32[4,4,128] reduce(%x, %p1), dimensions={3}, to_apply=%plus",
        "}",
        "",
        "%dotted (d0: f32[8,16], d1: f32[16,8]) -> f32[8,8] {",
        "  %d0 = f32[8,16] parameter(0)",
        "  %d1 = f32[16,8] parameter(1)",
        "  ROOT %d = f32[8,8] dot(%d0, %d1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        "}",
        "",
        "ENTRY %main () -> f32[4,4,128] {",
        "  %s = f32[4,4,128,128] constant({...})",
        "  %zero = f32[] constant(0)",
        "  %l = f32[8,16] constant({...})",
        "  %m = f32[16,8] constant({...})",
        "  %ynn_fusion.1 = f32[8,8] fusion(%l, %m), kind=kCustom, calls=%dotted",
        "  %reduce_fusion = f32[4,4,128] fusion(%s, %zero), kind=kInput, calls=%summed",
        "  ROOT %ynn_fusion = f32[4,4,128] fusion(%s, %zero), kind=kCustom, calls=%summed",
        "}",
        "",
    ]
)


def test_a_librarys_fusion_is_read_off_its_bodys_opcodes_when_its_name_says_nothing():
    """XLA:CPU's ``ynn_fusion`` of a softmax's sum (an exp fused in a nested fusion, then a reduce) reads
    ``body:reduce`` (its opcodes exponential and reduce; the reduction's combiner is not read); one of a dot reads
    none (a dot is no opcode the kind is read from); a fusion whose name says what it does (``reduce_fusion``) is
    read off its name and gets no trait."""
    module = parse_hlo(SOFTMAX_SUM)
    entry = {i.name: i for i in module.computations["main"]}
    assert kernel_work(module, entry["ynn_fusion"], entry).traits == {BODY + "reduce"}
    assert kernel_work(module, entry["ynn_fusion.1"], entry).traits == set()
    assert kernel_work(module, entry["reduce_fusion"], entry).traits == set()


N, HW, C, D = 2, 8, 16, 32


def _depthwise_then_pointwise(params, x):
    dw, pw = params
    numbers = ("NHWC", "HWIO", "NHWC")
    y = jnp.tanh(lax.conv_general_dilated(x, dw, (1, 1), "SAME", dimension_numbers=numbers, feature_group_count=C))
    y = lax.conv_general_dilated(y, pw, (1, 1), "SAME", dimension_numbers=numbers)
    return (y * y).sum()


def test_gradient_convolutions_xla_makes_without_metadata():
    params = (jnp.ones((3, 3, 1, C)), jnp.ones((1, 1, C, D)))
    x = jnp.ones((N, HW, HW, C))
    grad = jax.grad(_depthwise_then_pointwise)
    compiled = jax.jit(grad).lower(params, x).compile()
    trace = JaxAdapter(cross_check=False).trace(grad, (params, x))
    result = compiled_kernels(compiled, trace.operations, loops=trace.loop_assumptions)
    ops = trace.operations
    conv_kernels = [k for k in result.kernels if any(ops[i].kind == "conv" for i in k.operations)]
    # Five convolution records: two forward, the 1×1 layer's input and filter gradients, the depthwise
    # layer's filter gradient (the image asks no input gradient). The four that XLA computes as
    # convolutions are in a kernel of their own; the fifth sits in the kernel that keeps a diagonal.
    assert sorted(len(k.operations) for k in conv_kernels if k.compiled_flops) == [1, 1, 1, 1]
    pointwise_filter = next(i for i, op in enumerate(ops) if op.kind == "conv" and op.output == (C, D, 1, 1))
    holder = next(k for k in result.kernels if pointwise_filter in k.operations)
    # XLA:CPU computes the 1×1 filter gradient in a YNNPACK fusion without metadata, while the
    # forward fusion carries the name: before, the record went to the forward kernel (two records,
    # this one none). 2 · 16·32 outputs · 2·8·8 taps = 131,072, compiled as traced.
    assert holder.flops == holder.compiled_flops == 2 * C * D * N * HW * HW == 131_072
    for kernel in conv_kernels:
        if kernel.compiled_flops:  # every kernel that computes a record's convolution computes just it
            assert kernel.compiled_flops == kernel.flops
    # The depthwise filter gradient: a dense convolution over every channel pair, no record of ours
    # (its record, 2 · 16·3·3 outputs · 2·8·8 taps = 36,864, sits in the kernel that keeps the
    # diagonal): 2 · 16·3·3·16 outputs · 2·8·8 taps = 589,824, C = 16 times the layer's work.
    dense = [k for k in result.kernels if k.compiled_flops and not k.operations]
    assert [(k.compiled_flops, k.compiled_contraction) for k in dense] == [(589_824, "convolution")]
    depthwise_filter = next(i for i, op in enumerate(ops) if op.kind == "conv" and op.output == (1, C, 3, 3))
    assert ops[depthwise_filter].cost.flops * C == dense[0].compiled_flops == 2 * C * 9 * C * N * HW * HW


@pytest.mark.parametrize("size", [7, 8])
def test_a_strided_layers_input_gradient_computes_what_its_record_counts(size):
    """A stride-2 depthwise layer's input gradient: an input-dilated convolution in the HLO, a
    transposed convolution's record (input positions × taps) in the trace; on an odd map (SAME,
    7×7 → 4×4) its outputs ÷ the dilation would not be its input positions: the two must agree."""
    channels = 8

    def loss(x, w):
        y = lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                     feature_group_count=channels)  # fmt: skip
        return (y * y).sum()

    args = (jnp.ones((2, size, size, channels)), jnp.ones((3, 3, 1, channels)))
    grad = jax.grad(loss)  # the input's gradient
    compiled = jax.jit(grad).lower(*args).compile()
    trace = JaxAdapter(cross_check=False).trace(grad, args)
    result = compiled_kernels(compiled, trace.operations, loops=trace.loop_assumptions)
    convs = [k for k in result.kernels if any(trace.operations[i].kind == "conv" for i in k.operations)]
    assert len(convs) == 2  # the forward convolution and the input's gradient
    for kernel in convs:
        assert kernel.compiled_flops == kernel.flops > 0
