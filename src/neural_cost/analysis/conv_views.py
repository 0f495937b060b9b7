"""Convolution views: which member of the ``conv`` family (or the ``depthwise_conv`` one) a
convolution record is, read off its canonical weight (``costs/conv.py``) — ``kernel_classes``
names a kernel's class from them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..core.estimate import CostEstimate, OperationCost
from ..core.kernels import Kernel
from ..core.records import Operation
from ..costs.registry import spatial

__all__ = [
    "CHAINED",
    "DEEP",
    "DEEPER",
    "DEEPER_ROWS",
    "DEEP_ROWS",
    "DEPTHWISE",
    "DILATED",
    "FEW",
    "FEW_ROWS",
    "GRAD_WEIGHT",
    "NARROW",
    "NATIVE_ELEMENTS",
    "ONE_BY_ONE",
    "POINTWISE",
    "SHALLOW",
    "SMALL_MAP",
    "STRIDED",
    "STRIDED_STEM",
    "THIN",
    "UNALIGNED",
    "backward_width",
    "chain_class",
    "conv_class",
    "conv_width",
    "native",
    "record_view",
    "torch_view",
    "width",
]

#: A convolution whose matrix-multiply view (M = output positions, K = input channels per group ×
#: kernel taps, N = output channels per group) has K or N under this is ``conv:narrow``: a 3×3
#: convolution of 32 channels on 64² maps ran at half the rate of a 64- or 128-channel one of the
#: same FLOPs, a 3-channel stem at a fifth (PyTorch, this CPU); one curve for both read them
#: alike. Every other convolution of stride 1 is ``conv:wide``.
NARROW = 64
#: A forward convolution whose K is under this (a 3-channel 3×3 stem: 27) and whose N is under
#: ``NARROW`` is ``conv:shallow``: XLA:CPU ran such stems (3 → 16 or 32 channels) at 5.5–11× their
#: roofline where other narrow layers of the same work ran at 1.3–2.7×, and a 3 → 64 stem at 1.4×
#: (the narrow curve read a Flax CNN's stem at a fifth of its time). Its backward stays ``conv_backward:narrow``.
SHALLOW = 32
#: A convolution of stride above 1 is ``conv:strided`` whatever its width, or ``conv:subsampled``
#: when the stride steps past the kernel (``_stride_kind``), and so is its backward
#: (``conv_backward:strided``...): PyTorch's oneDNN calls ran a 1×1 stride-2 shortcut's backward at
#: 7–12× its roofline bound and a 3×3 stride-2 layer's at 1.3–2.3× where stride-1 layers of the same
#: FLOPs ran at 0.9–1.1× (this CPU); read off the width curves they were expected at a sixth and
#: half of their time. A calibration without them reads them off the family's curve, noted. A
#: depthwise convolution (one input channel per group: MobileNet's, ConvNeXt's) is of the
#: ``depthwise_conv`` family, its backward of ``depthwise_conv_backward``: PyTorch ran them
#: at 5–20× their roofline bound where the narrow curve that read them expected about 2× (a
#: MobileNetV2's depthwise and strided layers ran 2.7–5× their expectation). They are no members
#: of the ``conv`` family: their memory-bound points would bend the curve the family's transposed
#: and input-dilated convolutions read (JAX's family curve went from 37% to 256% median error).
#: ``:stride1`` or ``:strided`` by the stride: XLA's CPU depthwise convolutions take a time in
#: proportion to their outputs, and a stride-2 layer, which reads four times the input per
#: output, ran at half the time a curve of both read off its traffic (a Keras MobileNetV2's
#: first: 7.4 ms, 14.2 ms), and with the strided points in read stride-1 layers at under half.
STRIDED = ("strided", "subsampled")
DEPTHWISE = "depthwise"
#: A strided depthwise layer's input gradient (``_input_gradient``) is ``depthwise_conv:dilated``:
#: XLA:CPU runs it as an input-dilated grouped convolution through its generic emitter, 52–64 ns an
#: output (a 3×3), four times what the forward layers' curve reads; a stride-1 layer's is an
#: ordinary grouped convolution, ``depthwise_conv:stride1``.
DILATED = "dilated"
#: PyTorch's CPU convolutions (oneDNN) lay channels out in blocks of this many (AVX-512's float32 lanes): a
#: forward layer whose output channels per group are no multiple of it, or whose input channels per group are
#: more than it and no multiple, is ``conv:unaligned`` whatever its width and stride (``torch_view``). On this
#: project's AMD VM (8×48² maps, alone) a 3×3 24→24 layer ran at 1.83× its roofline bound where 32→32 ran at
#: 0.84× and 48→48 at 0.75×; 40→40 at 1.27×, 32→24 at 1.21×, 24→32 at 1.26×, 32→8 at 2.4×, a 24-per-group
#: grouped layer at 1.5× where 32 per group ran at 0.95×, a 1×1 64→56 at 1.85× where 64→64 ran at 1.29×, a
#: stride-2 24→24 at 2.7× where 32→32 ran at 1.08× — while 8- and 12-channel inputs (to 32 outputs) ran at
#: 0.93–0.96×. Read on the narrow and strided curves, the grid's three 24-channel layers (1.2–7.6× their
#: bound) raised the curves a 32→32 and a 32→64 stride-2 layer of a ResNet-style CNN read. XLA's CPU
#: convolutions (JAX, TensorFlow) step otherwise (20 and 24 channels at 1.8–1.9× as 16 at 1.9×; 28 and 56 at
#: 2.5–2.6× where 32 and 64 ran at 1.44–1.46×): they keep their width's class.
UNALIGNED = 16
#: A PyTorch forward convolution of a 1×1 kernel and stride 1 on the blocks (``UNALIGNED``) is ``conv:pointwise``
#: (``torch_view``): oneDNN runs it as a matrix product over the positions, at another rate than a 3×3 layer of
#: the same FLOPs — on this project's AMD VM a 1×1 64→64 layer on 8×48² maps at 1.29× its bound where the 3×3
#: one ran at 0.72×, and the 1×1 expansions and projections of an EfficientNet (``transformers``' default
#: config, 4×4 to 16×16 maps) at 1.02–1.39× where the wide curve, of 3×3 layers, read 0.90–1.07×.
POINTWISE = "pointwise"
#: A forward convolution of fewer output positions than this (batch × output map: a ResNet's last stage at batch 1,
#: 7 × 7 = 49; at batch 4 on 96-pixel images, 3 × 3 × 4 = 36) is ``conv:thin`` (``record_view``), as a product of
#: fewer rows is ``thin_matmul``: with few rows to share them, each call's weights dominate. TensorFlow 2.21's
#: oneDNN convolutions here (alone, 20 runs each) ran a 1×1 1024 → 1024 layer on 4 × 3 × 3 maps (36 rows, 75 MFLOP)
#: at 42 GFLOP/s where a 256 → 256 one on 64 × 3 × 3 (576 rows, 75 MFLOP) ran at 96, and 3×3 512 → 512 layers at
#: 68–105 GFLOP/s on 32–72 rows against 195–238 on 196–784; PyTorch's at 166–238 against 293–324. In a Keras
#: ResNet50 on 96-pixel images the conv curves read its 36-row layers at 0.12–0.5× their time. Of K and N
#: (``NARROW``) at least 64, whose weights dominate (a narrow one's are small: it keeps its class), strided or unaligned
#: too; PyTorch's 1×1 ones of stride 1 stay ``conv:pointwise`` (their grid has them on 1×1 to 14×14 maps).
THIN = 256
#: A thin convolution (``THIN``) whose output maps are at most this many positions along every spatial axis is
#: ``conv:small_map``. At the same roofline time, TensorFlow 2.21 ran a 3×3 512 → 512 layer on 4 × 3² maps at 5.3×
#: its compute time and a 256 → 256 one on 4 × 6² at 2.6×: its grid's four thin layers on 3² and 4² maps at 3.3–5.3×,
#: its six on 6² to 14² at 1.8–2.6× (a 30-µs one aside); PyTorch's at 1.5–2.2× against 1.2–1.8×, JAX's at 1.7–3.0×
#: against 1.5–2.7× (one calibration each, this CPU). One thin curve read a Keras ResNet50's 3² layers at 0.24–0.55×.
SMALL_MAP = 4
#: The qualifier of a TensorFlow graph's thin or small-map convolution (``THIN``, ``SMALL_MAP``) of a 1×1 kernel, of any
#: stride (``conv:thin:1x1``, ``conv:small_map:1x1``): oneDNN runs it as a product of its few rows by the weights, at a
#: rate set by its rows more than by its roofline time. TensorFlow 2.21 (Keras layers and ``tf.nn.conv2d`` alike, a
#: tf.function call's 250 µs taken out) ran 1×1 layers of 36 rows at 37–80 GFLOP/s (3.9–8.5× their compute bound; 1–17
#: MB of weights, 256 → 1024 to 2048 → 2048) and of 144 rows at 100–176 (1.8–3.2×), where the thin and small-map curves,
#: of 3×3 layers (9 taps a row to share each weight), read them at 1.8× and 2.5–3.3×: a Keras Xception on 96-pixel
#: images ran its 25 728 → 728 layers on 4 × 6² maps at 3.3× their bound (1.85× their expectation), a ResNet50 its 1×1
#: small-map layers at 4–12×. Its grid's twelve such layers (beside the shared grid's five) read 1.2–3.0× on 5² to 14²
#: maps and 2.5–9.2× on 2² to 4² (one calibration); off them the Xception's 728 → 728 layers read 1.29× their
#: expectation. Without a curve of its own it reads its plain class's, noted (``kernel_model.WAYS``). A graph op only:
#: XLA's kernels and other frameworks' keep their class.
ONE_BY_ONE = "1x1"
#: The qualifier of a JAX kernel that runs two or more contractions, the heaviest a thin or small-map convolution
#: (``THIN``, ``SMALL_MAP``): ``conv:chained``, read as a whole, not as one part per contraction (``chain_class``).
#: Where a global mean (and a dense head) follow a ResNet's last blocks, XLA:CPU 0.10.2 pulls the blocks before them
#: into one YNNPACK fusion (up to six convolutions and the head's dot), which ran its layers far slower than the same
#: layers as lone fusions on a 2-core VM: two 2048 → 512 → 2048 bottleneck blocks on 4 × 3² maps took 26–29 ms with the
#: head against 11–12 ms without it (on one core 53 against 23 ms), on 1 × 7² maps 25 against 10 (a Keras ResNet50 on
#: JAX, 96-pixel images at batch 4: its tail's fusion ran 23.5 ms where its parts read 5.0 ms off their classes). A
#: kernel that pools (a CNN's blocks, ``kernel_classes.POOLED``) stays one part per convolution. Without a curve of its
#: own it reads the ``conv`` family's, noted (``kernel_model.WAYS``).
CHAINED = "chained"
#: A chained kernel (``CHAINED``) whose heaviest convolution has fewer output positions than this is
#: ``conv:chained:few`` (``FEW``): such chains ran 4.8–10.2× their compute bound (two blocks of 1024 → 256 → 1024 to
#: 2048 → 512 → 2048 on 1 × 3² to 1 × 7² maps, 9–49 positions), those of 64–144 positions at 2.2–3.5× (256 → 64 → 256
#: to 2048 → 512 → 2048; three JAX calibrations merged) — one curve of a first grid's seven tails, in roofline time,
#: read its own held-out points at a median 45–50% off. Without a curve of its own it reads ``conv:chained``'s.
FEW_ROWS = 64
FEW = "few"
#: A JAX filter gradient (``record_view``: a backward convolution whose window, the layer's output map, spans more
#: positions than its output, the layer's kernel taps) is ``conv_backward:grad_weight``, ``:deep`` when its
#: contraction (batch × the layer's output positions) has ``DEEP_ROWS`` rows or more, ``:deeper`` from
#: ``DEEPER_ROWS``, and ``:1x1`` for a 1×1 layer's (``ONE_BY_ONE``). XLA:CPU 0.10.2 ran it slower the deeper its
#: contraction — on a 2-core VM (jitted alone, after its layer's forward convolution) 3×3 layers' of 196–3,136 rows at
#: 1.2–2.8× their compute bound, of 4,096–12,544 at 2.4–7.9×, of 16,384–131,072 at 5.9–15.8× (about as rows^0.4) —
#: and a 1×1 layer's at 2–3.6× a 3×3 one's of as many rows, where the forward curves it read expected its forward's
#: rate: a Flax CNN's training step ran its two filter gradients at 2.6× and 5.2× their expectation. Each tier is a
#: curve of its own in roofline time. A PyTorch backward runs both gradients in one call (``conv_backward:wide``...),
#: TensorFlow's graph ``Conv2DBackpropFilter`` as oneDNN's own kernel: both keep their classes. Without a curve of
#: its own a ``:1x1`` one reads its tier's class, a ``:deep`` or ``:deeper`` one ``conv_backward:grad_weight``'s
#: (``kernel_model.WAYS``: none bends another's curve), which reads the ``conv_backward`` family's, then ``conv``'s.
GRAD_WEIGHT = "grad_weight"
DEEP_ROWS = 4096
DEEP = "deep"
DEEPER_ROWS = 16384
DEEPER = "deeper"
#: PyTorch runs a float32 CPU convolution through oneDNN only past these (``ConvParams::use_mkldnn``, with more
#: than one thread): more than one image, groups, a kernel over 3×3 in both last dims, or an input of more than
#: this many elements (its first four dims); else its own im2col path, which has no channel blocks (``native``).
NATIVE_ELEMENTS = 20480


def width(estimate: CostEstimate, kernel: Kernel) -> str:
    """``narrow`` or ``wide`` (``NARROW``), ``strided`` or ``subsampled`` (``STRIDED``), or
    ``depthwise`` (``DEPTHWISE``, whatever its stride) for the kernel's heaviest convolution, read
    off its canonical weight (C_out, C_in/groups, *kernel; ``costs/conv.py``): K = its elements
    after the first, N = C_out ÷ groups — for PyTorch ``unaligned`` or ``pointwise`` where ``torch_view``
    says so. ``""`` where that view does not hold: a transposed convolution (its weight is laid out the
    other way) or an input-dilated or batch-grouped one (XLA's gradients)."""
    cost = _heaviest(estimate, kernel)
    return "" if cost is None else record_view(estimate, cost)


def _heaviest(estimate: CostEstimate, kernel: Kernel) -> OperationCost | None:
    """The kernel's convolution record of the most FLOPs (None: it runs none)."""
    convs = (estimate.by_operation[i] for i in kernel.operations if estimate.by_operation[i].kind == "conv")
    return max(convs, key=lambda c: c.flops, default=None)


def record_view(estimate: CostEstimate, cost: OperationCost) -> str:
    """``width`` of one convolution record of ``estimate``'s framework (``torch_view`` for PyTorch's), ``thin`` for
    a wide, strided or unaligned one of K and N at least ``NARROW`` and fewer than ``THIN`` output positions,
    ``small_map`` for such a one whose output maps are at most ``SMALL_MAP`` along every axis, each ``:1x1`` for a
    TensorFlow graph op's 1×1 one (``ONE_BY_ONE``)."""
    if estimate.framework == "jax" and _grad_weight(cost):
        rows = math.prod(cost.operation.inputs[1][1:])  # batch × the layer's output positions
        depth = f":{DEEPER}" if rows >= DEEPER_ROWS else f":{DEEP}" if rows >= DEEP_ROWS else ""
        return f"{GRAD_WEIGHT}{depth}{f':{ONE_BY_ONE}' if math.prod(cost.operation.output[2:]) == 1 else ''}"
    view = conv_width(cost)
    view = torch_view(cost, view) if estimate.framework == "torch" else view
    if view == "strided" and estimate.framework == "jax" and _shallow(cost):
        return STRIDED_STEM
    if view not in ("wide", "unaligned", *STRIDED) or len(output := cost.operation.output) < 3:
        return view
    weight, groups = cost.operation.inputs[1], int(cost.operation.attrs.get("groups", 1))
    wide = min(math.prod(weight[1:]), weight[0] // groups) >= NARROW
    if not wide or _positions(output) >= THIN:
        return view
    thin = "small_map" if max(output[2:]) <= SMALL_MAP else "thin"
    graph = estimate.framework == "tensorflow" and not (estimate.kernel_source or "").startswith("XLA")
    return f"{thin}:{ONE_BY_ONE}" if graph and math.prod(weight[2:]) == 1 else thin  # a graph op's 1×1 one


def chain_class(estimate: CostEstimate, kernel: Kernel, contractions: int, pools: bool) -> str | None:
    """``conv:chained`` for a kernel of ``contractions`` contraction records that is one (``CHAINED``): a JAX
    program's, of two or more, none of its records after the first convolution a pool (``pools``: a CNN's pooled
    blocks stay parts), whose heaviest convolution is thin or on small maps — ``conv:chained:few`` where that one has
    fewer than ``FEW_ROWS`` output positions. None for another kernel."""
    cost = _heaviest(estimate, kernel)
    if estimate.framework != "jax" or contractions < 2 or pools or cost is None:
        return None
    if record_view(estimate, cost) not in ("thin", "small_map"):
        return None
    return f"conv:{CHAINED}:{FEW}" if _positions(cost.operation.output) < FEW_ROWS else f"conv:{CHAINED}"


#: A JAX strided convolution that is shallow (``SHALLOW``: a 3-channel 3×3 stem of under 64 outputs, stride 2) reads
#: ``conv:shallow``, not ``conv:strided``: XLA:CPU 0.10.2 ran such stems at 14–27× their compute bound on a 2-core VM
#: (4 × 96² → 32 outputs 0.84 ms, 1 × 224² 0.95 ms, 8 × 64² → 16 outputs 0.62 ms), as its stride-1 stems (13–15×),
#: where the strided curve, of wide layers and 7×7 stems, read them at 2.6×: a Keras MobileNetV2's and
#: EfficientNetB0's stems on JAX ran 6.9× and 10.4× their expected time. JAX's grid times four
#: (``_jax/microbench._STRIDED_STEMS``). PyTorch's and TensorFlow's keep their stride's class.
STRIDED_STEM = "shallow"


def _shallow(cost: OperationCost) -> bool:
    """Whether a strided convolution record's matrix-multiply view is ``shallow`` (``_view_width``): K under
    ``SHALLOW`` and N under ``NARROW`` (a depthwise one is never ``strided``: ``_view`` names it first)."""
    weight, groups = cost.operation.inputs[1], int(cost.operation.attrs.get("groups", 1))
    return _view_width(math.prod(weight[1:]), weight[0] // groups) == "shallow"


def _grad_weight(cost: OperationCost) -> bool:
    """Whether a convolution record is a filter gradient as XLA computes it (``GRAD_WEIGHT``): of the backward, one
    group, its operand (the layer's input, as (C_in, N, *map)) convolved with the output gradient (its weight, as
    (C_out, N, *output map)) into the filter ((C_in, C_out, *kernel)): a window at least its output along every
    spatial axis and over more positions in all. An input gradient's window is the layer's kernel, its output a map."""
    op = cost.operation
    if op.attrs.get("phase") != "backward" or len(op.inputs) < 2 or len(op.output) < 3:
        return False
    if int(op.attrs.get("groups", 1)) != 1 or op.attrs.get("batch_groups", 1) != 1:
        return False
    window, output = op.inputs[1][2:], op.output[2:]
    if len(window) != len(output):
        return False
    return all(w >= o for w, o in zip(window, output, strict=True)) and math.prod(window) > math.prod(output)


def _positions(output: Sequence[int]) -> int:
    """A convolution's output positions, batch × its output map (its record's output is (N, C, *map))."""
    return output[0] * math.prod(output[2:])


def torch_view(cost: OperationCost, view: str) -> str:
    """``unaligned`` for a PyTorch float32 forward convolution that oneDNN runs (``native``: not its own path) of
    the width or stride ``view`` whose channels per group are off oneDNN's blocks (``UNALIGNED``), else
    ``pointwise`` for a 1×1 one of stride 1 (``POINTWISE``), else ``view``: a shallow stem, a depthwise or
    transposed layer keeps its own, and so does another dtype's (the grid's are float32). The rules are
    oneDNN's on a CPU; a record does not say its device, so a CUDA program's convolutions are split the same
    way, each part on its own curve as that device's grid measured it (none has been)."""
    if view not in ("narrow", "wide", *STRIDED) or cost.operation.dtype != "float32" or native(cost):
        return view
    weight, groups = cost.operation.inputs[1], int(cost.operation.attrs.get("groups", 1))
    outputs, inputs = weight[0] // groups, weight[1]
    if outputs % UNALIGNED or (inputs > UNALIGNED and inputs % UNALIGNED):
        return "unaligned"
    return POINTWISE if view in ("narrow", "wide") and math.prod(weight[2:]) == 1 else view


def native(cost: OperationCost) -> bool:
    """Whether PyTorch runs this float32 CPU convolution through its own path, not oneDNN (``NATIVE_ELEMENTS``):
    one image, one group, a kernel of at most 3 in one of its last two dims, an input of at most 20,480
    elements in its first four dims (a 1-D layer's (N, C, L); PyTorch views it as (N, C, 1, L)). Read as run
    on more than one thread: on one, a 1×1 layer of stride 1 under 16 images runs there too."""
    x, weight = cost.operation.inputs[0], cost.operation.inputs[1]
    kernel = weight[2:]
    large = len(kernel) >= 2 and kernel[-1] > 3 and kernel[-2] > 3
    groups = int(cost.operation.attrs.get("groups", 1))
    return groups == 1 and not large and x[0] == 1 and math.prod(x[:4]) <= NATIVE_ELEMENTS


def backward_width(estimate: CostEstimate, kernel: Kernel) -> str:
    """``width`` of the convolution a PyTorch ``convolution_backward`` call differentiates, from
    its records (``ops_conv``): the ``grad_input`` record's operand is the layer's weight, (C_out,
    C_in/groups, *kernel); without one (a stem, whose image asks no gradient) the ``grad_weight``
    record's output is the weight as (C_in/groups, C_out, *kernel). ``""`` for a transposed layer
    (its ``grad_input`` is no transposed convolution; its ``grad_weight`` is named apart)."""
    found: dict[str, Operation] = {}
    for i in kernel.operations:
        operation = estimate.by_operation[i].operation
        if operation.kind == "conv":
            found.setdefault(operation.name.rsplit(".", 1)[-1], operation)
    if "grad_input" in found:
        operation = found["grad_input"]
        if not operation.attrs.get("transposed"):
            return ""
        weight, groups = operation.inputs[1], int(operation.attrs.get("groups", 1))
        taps, outputs, per_group = math.prod(weight[1:]), weight[0] // groups, weight[1]
        stride, dilation = operation.attrs.get("stride", 1), operation.attrs.get("dilation", 1)
    elif "grad_weight" in found:  # its stride is the layer's dilation, its dilation the layer's stride
        operation = found["grad_weight"]
        weight, groups = operation.output, int(operation.attrs.get("batch_groups", 1))
        taps, outputs, per_group = weight[0] * math.prod(weight[2:]), weight[1] // groups, weight[0]
        stride, dilation = operation.attrs.get("dilation", 1), operation.attrs.get("stride", 1)
    else:
        return ""
    view = _view(operation, groups, per_group, taps, outputs, (stride, dilation), weight[2:])
    return "narrow" if view == "shallow" else view  # ``SHALLOW`` is of forward convolutions only


def _view(
    op: Operation, groups: int, per_group: int, taps: int, outputs: int, steps: tuple[Any, Any], kernel: Sequence[int]
) -> str:
    """``depthwise:stride1`` or ``depthwise:strided`` (one input channel per group, ``DEPTHWISE``),
    else the stride's class (``_stride_kind``: ``steps`` is the layer's (stride, dilation)), else
    the width (``_view_width``)."""
    stride = _stride_kind(op, *steps, kernel)
    if groups > 1 and per_group == 1:
        return f"{DEPTHWISE}:{'strided' if stride else 'stride1'}"
    return stride or _view_width(taps, outputs)


def conv_class(view: str, base: str = "conv") -> str:
    """A convolution's class from its view (``width``): ``conv:narrow``..., ``depthwise_conv:stride1``
    or ``depthwise_conv:strided`` (``conv_backward`` base: ``depthwise_conv_backward:stride1``...),
    or the base for none."""
    if view.split(":", 1)[0] == DEPTHWISE:
        return base.replace("conv", "depthwise_conv", 1) + view[len(DEPTHWISE) :]
    if view.split(":", 1)[0] == GRAD_WEIGHT:  # a JAX filter gradient (``record_view``), of the backward whatever base
        return f"conv_backward:{view}"
    return f"{base}:{view}" if view else base


def _stride_kind(op: Operation, stride: Any, dilation: Any, kernel: Sequence[int]) -> str:
    """``subsampled`` when a convolution's stride steps past its (dilated) kernel's extent in a
    spatial dim — input pixels no tap reads (a ResNet's 1×1 stride-2 shortcut) — else ``strided``
    for a stride above 1 in any dim; ``""`` for stride 1 (``STRIDED``)."""
    strides, dilations = spatial(op, "stride", stride, len(kernel)), spatial(op, "dilation", dilation, len(kernel))
    if max(strides, default=1) <= 1:
        return ""
    extents = [d * (k - 1) + 1 for d, k in zip(dilations, kernel, strict=False)]
    return "subsampled" if any(s > e for s, e in zip(strides, extents, strict=False)) else "strided"


def _view_width(taps: int, outputs: int) -> str:
    """``shallow`` when a convolution's matrix-multiply view has K (``taps``: input channels per
    group × kernel taps) under ``SHALLOW`` and N (``outputs``: output channels per group) under
    ``NARROW``, ``narrow`` when either is under ``NARROW``, else ``wide``."""
    if taps < SHALLOW and outputs < NARROW:
        return "shallow"
    return "narrow" if min(taps, outputs) < NARROW else "wide"


def conv_width(cost: OperationCost) -> str:
    """``width`` of one convolution record."""
    if len(cost.operation.inputs) < 2:
        return ""
    attrs, weight = cost.operation.attrs, cost.operation.inputs[1]
    dilated = spatial(cost.operation, "lhs_dilation", attrs.get("lhs_dilation", 1), len(weight) - 2)
    groups = int(attrs.get("groups", 1))
    if attrs.get("transposed") or attrs.get("batch_groups", 1) != 1 or max(dilated, default=1) > 1:
        return _input_gradient(cost.operation, groups, weight, dilated)
    taps, outputs = math.prod(weight[1:]), weight[0] // groups
    steps = (attrs.get("stride", 1), attrs.get("dilation", 1))
    return _view(cost.operation, groups, weight[1], taps, outputs, steps, weight[2:])


def _input_gradient(op: Operation, groups: int, weight: Sequence[int], dilated: Sequence[int]) -> str:
    """``depthwise:stride1``, or ``depthwise:dilated`` for a strided layer's (``DILATED``), for a
    depthwise layer's input gradient as JAX and TensorFlow record it — a transposed convolution of
    one channel per group in and out (TensorFlow's ``DepthwiseConv2dNativeBackpropInput``, weight
    (C_in, C_out/groups, *kernel)), or an input-dilated one of one input channel per group (JAX's,
    of a strided layer) — which XLA runs as a grouped convolution at the layer's input resolution,
    one output per input element (a Keras MobileNetV2's stride-2 layers' on JAX ran 7–54 ms where
    the family's curve read 0.03–0.07); else ``""``, the family's (a transposed or input-dilated convolution of
    several channels per group, a batch-grouped filter gradient). The rule reads the record alone:
    a PyTorch ``ConvTranspose2d`` of one channel per group, and the input gradient of a grouped
    convolution of one output channel per group, are read the same way."""
    attrs = op.attrs
    if groups <= 1 or attrs.get("batch_groups", 1) != 1 or weight[1] != 1:
        return ""
    if attrs.get("transposed") and weight[0] != groups:
        return ""
    steps = spatial(op, "stride", attrs.get("stride", 1), len(weight) - 2) if attrs.get("transposed") else dilated
    return f"{DEPTHWISE}:{DILATED if max(steps, default=1) > 1 else 'stride1'}"
