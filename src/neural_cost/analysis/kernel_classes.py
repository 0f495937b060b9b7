"""The class of a scored kernel, whose fitted curves give its expected time (``analysis/expected.py``).

Kernel classes: the kinds of the records a kernel executes, the heaviest group first — attention, conv, matmul, norm,
softmax, pool, reduce, gather, elementwise, copy — so a matmul fused with its bias and activation is a matmul, a loop
fusion of pointwise ops elementwise, or ``transcendental`` when one of its records evaluates exp, tanh, erf... (each a
polynomial per element that the FLOP count calls one: at the same roofline time such kernels run several times longer
than an add) — ``transcendental:tanh`` for one call of a function the grids time alone (``FUNCTIONS``), which falls back
to the family's curve; a convolution whose input channels × taps or output channels (per group) are under 64 is
``conv:narrow`` (``conv_views.NARROW``), another of stride 1 ``conv:wide``, a strided one ``conv:strided`` or
``conv:subsampled`` (``STRIDED``), a wide one of under 256 output positions ``conv:thin`` (``THIN``; ``conv:small_map``
on maps of at most 4 × 4, ``SMALL_MAP``), each ``:pooled``
when its kernel pools its result (``POOLED``: it reads its plain class without a curve of its own); all fall back to the
family's ``conv``, which a transposed or input-dilated convolution reads (a depthwise layer's input gradient is
``depthwise_conv:stride1``, a strided one's ``:dilated``). A pointwise kernel that reads a dynamic slice through two or
more slices (a GRU's gates) is ``elementwise:sliced`` or ``transcendental:sliced``, one that reads an operand
across its layout ``:transposed`` (``pointwise_views``), and a convolution XLA runs as a lone HLO instruction
``:generic`` (``GENERIC``), a JAX kernel of two or more contractions, no pool, whose heaviest convolution is thin or on
small maps ``conv:chained`` (read as a whole, ``conv_views.CHAINED``; ``conv:chained:few`` under 64 positions); a batch
norm ``norm:batch`` (a Keras layer TensorFlow runs as its graph ops ``norm:batch:keras``), a layer norm ``norm:layer``
(``norm_views``; the family ``norm``). A product of two matrices
4096 or more wide (a vocabulary projection) is ``wide_matmul`` (``WIDE_MATMUL``), and a PyTorch one of fewer than 256
rows ``thin_matmul`` (``THIN_MATMUL``), a JAX dot with batch dimensions ``batched_matmul`` (``BATCHED_MATMUL``); each
reads ``matmul``'s curve without one of its own; attention is read once per query head, off 16-row blocks
``unaligned_attention`` (``attention_views``); a TensorFlow graph op that may write over its input
``elementwise:forwarded``. A kernel that runs a whole recurrent layer in one call (PyTorch's
``aten::lstm``) is its own class, ``rnn``: its records are what it computes, not how long it takes. A kernel that runs
none of our records is ``conv`` or ``matmul`` when it computes a contraction XLA made at its compiled work, ``copy``,
``reduce``, ``elementwise`` or ``transcendental`` by the opcodes XLA names it by (``recordless_kind``), else ``other``:
scored at its bound, noted. A kernel that runs more than once per run (a compiled loop's body) is its class ``@loop``
(``matmul@loop``, its members ``loop_dots.py``'s): its executions follow one another inside one launch, without the
entry cost a standalone program's kernel pays; without a curve a memory-bound one (``LOOP_POINTWISE``: a copy, gather,
reduction...) reads the loop's pointwise curve (``elementwise@loop``), else the standalone pointwise curve, and any
other falls back to its class. A TensorFlow kernel XLA compiled (a ``jit_compile`` function's) is its class ``@xla``
(``XLA``): it reads the XLA classes first, then the graph op's (``read_class``). A training step's own kernels are
classes of their own (``TRAINING_CLASSES``): a convolution's backward (both gradients in one call), a batch norm that
computes its batch's statistics, a norm's backward — at the same roofline time each runs slower than its forward class
(a training-mode batch norm 6× an inference one in a ResNet step); a calibration without them reads them off the
forward class's curve, noted. A convolution's backward is ``conv_backward:narrow`` or ``conv_backward:wide`` by the
forward convolution's view (a 32-channel layer's ran at 0.67 of its roofline where the grid's wide ones ran at
0.9–1.1), and a strided layer's, forward or backward, ``:strided`` or ``:subsampled`` (``STRIDED``), a depthwise one's
``depthwise_conv_backward:stride1`` or ``:strided`` (``DEPTHWISE``). A kernel that only draws random numbers (a
dropout's ``bernoulli_``) is ``random`` — drawn inside a fusion with other work, it is that work's class: PyTorch's CPU
generator runs one element at a time on one core, 2–6 ns an element where an add takes a fraction of one; without a
curve of its own it reads the pointwise ops' (``FALLBACK_CLASSES``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..core.errors import NeuralCostError
from ..core.estimate import CostEstimate, OperationCost
from ..core.kernels import Kernel, recordless_kind
from ..hardware.kernel_model import WAYS, ClassModel, KernelCalibration, Point, family, main_memory_candidate
from ..hardware.spec import HardwareSpec
from .attention_views import UNALIGNED, attention_class, query_heads
from .conv_views import CHAINED, backward_width, chain_class, conv_class, record_view, width
from .kernels import UNMAPPED, KernelTime
from .loop_dots import LOOP_DOTS, loop_dot_class
from .matmul_views import matmul_class
from .norm_views import norm_class
from .pointwise_views import TRANSPOSED, pointwise_view, strided_memory
from .rnn_views import recurrent, rnn_member
from .rows import compute_seconds

#: Record kinds → the kernel class they make, heaviest class first in ``PRIORITY``.
CLASS_OF_KIND: Mapping[str, str] = {
    "attention": "attention", "attention_backward": "attention",
    "conv": "conv", "grouped_matmul": "matmul",
    "matmul": "matmul", "linear": "matmul", "decomposition": "matmul", "fft": "matmul", "cdist": "matmul",
    "layernorm": "norm", "rmsnorm": "norm", "batchnorm": "norm", "groupnorm": "norm", "norm_backward": "norm_backward",
    "softmax": "softmax", "safe_softmax": "softmax", "softmax_backward": "softmax",
    "pooling": "pool", "pooling_backward": "pool_backward", "pooling_gradient": "pool", "adaptive_pooling": "pool",
    "reduce": "reduce", "cumulative": "reduce", "foreach_reduce": "reduce", "nll_loss": "reduce",
    "nll_loss_backward": "reduce", "sort": "reduce", "histogram": "reduce",
    "gather": "gather", "scatter": "gather", "embedding": "gather", "embedding_bag": "gather", "grid_sample": "gather",
    "interpolate": "gather", "interpolate_backward": "gather",
    "elementwise": "elementwise", "foreach_elementwise": "elementwise", "rng": "random",
    "dequantize": "elementwise", "rnn_gate_backward": "elementwise", "qkv_bias_rescale": "elementwise",
    "copy": "copy", "pad_backward": "copy", "collective": "collective",
}  # fmt: skip
PRIORITY = (
    "rnn", "attention", "conv", "matmul", "norm", "norm_backward", "softmax", "pool_backward", "pool", "reduce",
    "gather", "random", "transcendental", "elementwise", "copy", "collective", "other",
)  # fmt: skip
#: Kernels that run a whole recurrent layer in one call (their records are its matmuls and gates),
#: matched on the call's own name (``mkldnn_rnn_layer``, ``_thnn_fused_lstm_cell``, ``CudnnRNNV3``),
#: never on the module path (``lstm/zeros`` is a fill).
_FUSED_RNN = re.compile(r"^_?(thnn_fused_|cudnn_?|mkldnn_)?(rnn|lstm|gru)", re.IGNORECASE)


#: The suffix of a kernel that runs more than once per run (a compiled loop's body): its
#: executions follow one another inside one launch, without a standalone program's entry cost.
LOOP = "@loop"
#: The suffix of a TensorFlow kernel that XLA compiled (a ``jit_compile`` function's fusions, dots
#: and convolutions): not the graph ops (oneDNN's, Eigen's) TensorFlow runs by default, which are
#: the rest of its calibration. Without XLA points of its kind it reads the graph op's curve, noted.
XLA = "@xla"


def kernel_class(estimate: CostEstimate, row: KernelTime) -> str:
    """The class of one scored kernel (the module docstring), ``@xla`` added for a TensorFlow
    kernel XLA compiled and ``@loop`` for a kernel that runs more than once per run."""
    return _suffixed(estimate, row, _base_class(estimate, row))


def _suffixed(estimate: CostEstimate, row: KernelTime, base: str) -> str:
    if base in ("unmapped", "other"):
        return base
    if estimate.framework == "tensorflow" and (estimate.kernel_source or "").startswith("XLA"):
        base += XLA
    return base + LOOP if row.executions > 1 else base


#: Record kinds that are contractions. A kernel that runs several (a library's fused subgraph:
#: XLA's ``ynn_fusion`` of a CNN's convolutions, pools and norms) runs them one after another,
#: each with its own entry cost and at its own size's efficiency (``parts``).
CONTRACTIONS = frozenset({"conv", "matmul", "linear", "grouped_matmul"})


#: Classes whose kernels may run several contractions, each read as a part (``parts``).
_SPLIT = frozenset({"conv", "matmul", "wide_matmul", "thin_matmul", "batched_matmul", "depthwise_conv"})

#: A convolution whose kernel pools its result (a window reduction after it in the same kernel: XLA:CPU's
#: ``ynn_fusion`` of a CNN block, conv → norm → relu → max pool) is its class ``:pooled`` (``conv:wide:pooled``): JAX
#: 0.10.2's YNNPACK ran 22 of 24 such fusions on both cores of a 2-core VM (1.1–1.5× their bound), where it ran 19 of
#: the same 24 convolutions ending in their own result, a relu or a mean on one (1.8–2.3×, as fast as pinned to one
#: core) — a Flax CNN's 32→64 and 64→128 blocks were read at twice their time off the plain curves. Without a curve of
#: its own it reads its plain class's (``conv:wide``), noted.
POOLED = ":pooled"
#: The qualifier of a convolution that XLA runs as a lone HLO ``convolution`` instruction, not a library's fusion
#: (``conv:wide:generic``): XLA:CPU 0.10.2 leaves YNNPACK out where the input is smaller than the window (a
#: ResNet-50's 512-channel 3×3 layers on a 2×2 map, its last stage at 64 pixels: 33 ms each, read 0.55 ms off the
#: YNNPACK curve — the whole model expected at a third of its time) and for some narrow ones (16 output channels); the
#: former ran at 2–55 GFLOP/s where YNNPACK's ran at 40–150. Not depthwise classes, whose grids time both kinds
#: already. Without a curve of its own it reads its plain class's, noted. A plain product XLA runs as a lone HLO ``dot``
#: (``matmul:generic``, run once a run) is one too: XLA:CPU 0.10.2 gives YNNPACK a dot whose left operand contracts its
#: minor-most dim, and runs one that contracts its major-most (a dense layer's weight gradient, xᵀ·dy) itself — 1.2–2.5×
#: the time of the same product as ``x @ w`` (a Flax GPT step's 1024 tokens × 256 → 2048 gradient: 11.2 ms, 5.0). A
#: TensorFlow ``jit_compile`` function's dots, lone too, are its grid's ``matmul@xla`` points already.
GENERIC = ":generic"


def _pooled(base: str, costs: list[OperationCost]) -> str:
    """``base`` + ``POOLED`` for a forward convolution class (``conv``, ``conv:wide``...) when a record of ``costs``
    (the kernel's, or its part's, in order) after its first convolution pools (one before it pools its input)."""
    return base + POOLED if _pools(costs) and base.partition(":")[0] == "conv" else base


def _pools(costs: list[OperationCost]) -> bool:
    """Whether a record of ``costs`` (a kernel's, or its part's, in order) after its first convolution pools."""
    first = next((i for i, cost in enumerate(costs) if cost.kind == "conv"), len(costs))
    return any(CLASS_OF_KIND.get(cost.kind) == "pool" for cost in costs[first + 1 :])


@dataclass(frozen=True, slots=True)
class Part:
    """A piece of a kernel read off one class's curve ``repeats`` times, at its roofline times ÷ repeats."""

    kernel_class: str
    compute_seconds: float
    memory_seconds: float
    repeats: int
    #: Its memory time at main memory's bandwidth, whatever level holds it (None: ``memory_seconds``).
    main_memory_seconds: float | None = None

    def memory_on(self, model: ClassModel) -> float:
        """Its memory time on the axis of the class ``model`` it is read off (``ClassModel.memory_axis``): a
        curve's points and the kernels read off it on one axis. Its bound stays ``memory_seconds``'."""
        main = self.main_memory_seconds
        return main if main is not None and model.memory_axis == "main" else self.memory_seconds

    def point(self, seconds: float, program: str) -> Point:
        """A point of its class measured at ``seconds`` in all (its ``repeats`` reads of the curve), with its
        memory time at main memory's bandwidth where its class may be read so (``main_memory_candidate``)."""
        n, main = self.repeats, self.main_memory_seconds
        keep = main is not None and main_memory_candidate(self.kernel_class)
        return Point(self.kernel_class, self.compute_seconds / n, self.memory_seconds / n, seconds / n, program,
                     main_memory_seconds=main / n if keep and main is not None else None)  # fmt: skip


def parts(estimate: CostEstimate, row: KernelTime, hardware: HardwareSpec) -> tuple[Part, ...]:
    """How a kernel's expected time is read off the curves: the whole kernel as one part of its class — a recurrent
    layer's as ``rnn:kept`` or ``rnn:streamed`` (``rnn:streamed:few`` of at most ``FEW_STEP_ROWS`` rows a step) at its
    step's roofline time, the larger of its compute time and its memory time with streamed weights read again at
    every step (``rnn_views``) — except a conv or matmul kernel that
    runs two or more contraction records (not ``conv:chained``, read as a whole), which is one part per contraction,
    each with the records that follow it up to the next one (its epilogue; records before the first join the first),
    of that contraction's own class (``conv:narrow`` for a 3-channel stem beside ``conv:wide`` layers). Each part
    gets the kernel's roofline compute time in proportion to its records' (their FLOPs, each at its dtype's peak)
    and its memory time in proportion to their bytes. Read as one, a CNN's three convolutions fused into one kernel
    were one large convolution: one entry cost, the largest layer's efficiency for all (a Flax CNN at batch 1:
    expected 0.37 ms, ran 0.73 ms)."""
    name = loop_dot_class(estimate, row, kernel_class(estimate, row), hardware)
    n = repeats(estimate, row, name)
    if name.split("@", 1)[0] == "rnn":
        member, step = rnn_member(estimate, row, hardware)
        return (Part(name.replace("rnn", member, 1), step, 0.0, n),)
    main = row.bandwidth / hardware.memory_bandwidth  # its memory time ÷ at main memory's bandwidth
    if TRANSPOSED in name:  # its lines beyond its operands' bytes, at the level that holds them between reuses
        return (Part(name, row.compute_seconds, strided_memory(estimate, row, hardware), n),)
    whole = (Part(name, row.compute_seconds, row.memory_seconds, n, row.memory_seconds * main),)
    qualifiers = name.split("@", 1)[0].split(":")
    if row.index is None or qualifiers[0] not in _SPLIT or CHAINED in qualifiers:
        return whole
    costs = [estimate.by_operation[i] for i in estimate.kernels[row.index].operations]
    if sum(cost.kind in CONTRACTIONS for cost in costs) < 2:
        return whole
    groups: list[list[OperationCost]] = []
    for cost in costs:
        if cost.kind in CONTRACTIONS or not groups:
            groups.append([cost])
        else:
            groups[-1].append(cost)
    if groups[0][0].kind not in CONTRACTIONS and len(groups) > 1:  # records before the first contraction
        lead = groups.pop(0)
        groups[0][:0] = lead

    def compute(group: list[OperationCost]) -> float:  # each FLOP at its own dtype's peak (bf16 beside f32)
        return sum(compute_seconds(cost.flops_by_dtype, hardware) for cost in group)

    busy, moved = compute(costs), sum(cost.bytes for cost in costs)
    found = []
    for group in groups:
        head = next(cost for cost in group if cost.kind in CONTRACTIONS)
        base = CLASS_OF_KIND[head.kind]
        if base == "conv":
            base = _pooled(conv_class(record_view(estimate, head)), group)
        elif base == "matmul":
            base = matmul_class(head, estimate.framework, row.executions)
        share = (
            compute(group) / busy if busy else 1 / len(groups),
            sum(cost.bytes for cost in group) / moved if moved else 1 / len(groups),
        )
        found.append(Part(loop_dot_class(estimate, row, _suffixed(estimate, row, base), hardware, head),
                          row.compute_seconds * share[0], row.memory_seconds * share[1], row.executions,
                          row.memory_seconds * share[1] * main))  # fmt: skip
    return tuple(found)


#: A training step's kernel classes → the forward class a calibration without them reads them off.
TRAINING_CLASSES: Mapping[str, str] = {"conv_backward": "conv", "norm_training": "norm", "norm_backward": "norm"}
#: Classes a calibration without them reads off another's curve: the training classes, random numbers off the
#: pointwise ops' (as read before the grids drew any), depthwise convolutions off the family's (``DEPTHWISE``: no
#: member), a depthwise backward off the depthwise forward's (not ``conv_backward``), a max pool's backward (JAX's and
#: TensorFlow's record, XLA:CPU's reduce-window of several arrays: ``kernels.VARIADIC_WINDOW``) off the pools'.
FALLBACK_CLASSES: Mapping[str, str] = {
    **TRAINING_CLASSES, "random": "elementwise", "depthwise_conv": "conv", "depthwise_conv_backward": "depthwise_conv",
    "wide_matmul": "matmul", "thin_matmul": "matmul", "batched_matmul": "matmul", UNALIGNED: "attention",
    "pool_backward": "pool"}  # fmt: skip


#: Functions whose kernels are a ``transcendental:`` class of their own (``transcendental:tanh``): at
#: the same roofline time PyTorch's tanh runs 28× its bound on this CPU, gelu, silu and sigmoid 4×,
#: exp 10×; one curve for all was a compromise that put GPT-2's tanh at a third of its time.
#: Another function, or an XLA fusion, is the family's ``transcendental``.
FUNCTIONS = frozenset({"tanh", "exp", "sigmoid", "silu", "gelu"})


def read_class(calibration: KernelCalibration, name: str) -> str | None:
    """The class whose curve a kernel of class ``name`` reads: its own; else a pooled, sliced or
    generic kernel its plain class's (``POOLED``, ``:sliced``, ``:transposed``, ``GENERIC``), a loop's kernel its
    class's, a function's its family's (``transcendental:tanh`` → ``transcendental``), a training
    kernel its forward class's; and an XLA kernel with none of those among the XLA classes the
    graph op's, by the same steps (``conv:wide@xla`` → ``conv@xla`` → ``conv:wide``). None: no curve."""
    found = _read(calibration, name)
    return _read(calibration, name.replace(XLA, "", 1)) if found is None and XLA in name else found


#: Memory-bound kernel classes that, in a loop body and without a loop curve of their own, read the
#: loop's pointwise curve (``LOOP_POINTWISE_CURVE``), else the standalone pointwise curve (``@xla``'s
#: for an XLA kernel), not their standalone class's: each of its points pays a launch, which a loop
#: body's kernel does not (JAX's quickest standalone gather took 3.9 µs on a 2-core VM, an mctx search's
#: loop gathers 0.2 µs: the search was expected at 49× its run), and a class's curve can be of another
#: op (TensorFlow's ``copy`` is fitted on 8 µs transposes; a Keras LSTM's loop slices took about 3 µs).
LOOP_POINTWISE = frozenset({"copy", "gather", "reduce", "softmax", "norm", "pool", "random"})
LOOP_POINTWISE_CURVE = "elementwise" + LOOP


def _read(calibration: KernelCalibration, name: str) -> str | None:
    if name in calibration.classes:
        return name
    if name in LOOP_DOTS:  # matmul:kept@loop → matmul@loop
        return _read(calibration, family(name) or "")
    head, at, suffix = name.partition("@")
    way = head.rpartition(":")[2]  # conv:wide:pooled@xla → conv:wide@xla, transcendental:sliced@loop → …@loop
    if way in WAYS and ":" in head:
        return _read(calibration, head.removesuffix(":" + way) + at + suffix)
    if name.endswith(LOOP):
        base = name[: -len(LOOP)]
        kind, at, suffix = base.partition("@")  # copy@xla: an XLA kernel reads elementwise@xla
        if kind.partition(":")[0] in LOOP_POINTWISE:
            for pointwise in (LOOP_POINTWISE_CURVE, "elementwise" + at + suffix):
                if pointwise in calibration.classes:
                    return pointwise
        return _read(calibration, base)
    if family(name):
        return _read(calibration, family(name) or "")
    base, at, suffix = name.partition("@")  # norm_training@xla → norm@xla
    other = FALLBACK_CLASSES.get(base)
    return _read(calibration, other + at + suffix) if other is not None else None


def class_model(calibration: KernelCalibration, name: str) -> ClassModel | None:
    """The calibration's model for a class (``read_class``: whose curve it reads)."""
    found = read_class(calibration, name)
    return None if found is None else calibration.classes[found]


def borrowed_class(calibration: KernelCalibration, name: str) -> str | None:
    """The class whose curve a kernel of class ``name`` is read off because the calibration has no
    curve of its own (a function's family, a training kernel's forward class, an XLA kernel's graph
    op); None when it has its own, or none at all. (A loop's kernel reading its class's curve is not
    borrowing.)"""
    found = read_class(calibration, name)
    return None if found in (None, name, name.removesuffix(LOOP)) else found


def repeats(estimate: CostEstimate, row: KernelTime, name: str) -> int:
    """How many times the class's curve is read for one row: its executions, and for a whole
    recurrent layer (class ``rnn``) times its steps (``rnn_views.recurrent``: every layer and direction's
    steps; a kernel without per-step matmul records, its records' largest ``count``) — a layer's
    time is its steps one after another, each a small matmul and its gates, so its curve is per
    step (a 64-step layer at batch 4 is 64 small steps, not one large matmul); attention's times its query
    heads (``attention_views.query_heads``): PyTorch's flash kernel took a time in proportion to them."""
    base = name.split("@", 1)[0].split(":", 1)[0]
    if base in ("attention", UNALIGNED) and row.index is not None:
        ops = [estimate.by_operation[i].operation for i in estimate.kernels[row.index].operations]
        return row.executions * query_heads(ops)
    if base != "rnn" or row.index is None:
        return row.executions
    steps, _ = recurrent(estimate, row.index)
    if not steps:
        operations = estimate.kernels[row.index].operations
        return row.executions * max(1, max((estimate.by_operation[i].operation.count for i in operations), default=1))
    return row.executions * sum(steps.values())


def call_name(kernel: Kernel) -> str:
    """What the kernel runs, without its module path: ``aten.mkldnn_rnn_layer.default`` →
    ``mkldnn_rnn_layer``; ``lstm/zeros#2`` → ``zeros``."""
    if kernel.kind and kernel.kind.count(".") >= 2:
        return kernel.kind.split(".")[1]
    return (kernel.kind or kernel.name.rsplit("/", 1)[-1]).split("#", 1)[0]


def _base_class(estimate: CostEstimate, row: KernelTime) -> str:
    if row.name == UNMAPPED and row.index is None:
        return "unmapped"
    if row.index is None:  # a record scored as its own kernel
        return CLASS_OF_KIND.get(row.kind or "", "other")
    kernel = estimate.kernels[row.index]
    if _FUSED_RNN.search(call_name(kernel)):
        return "rnn"
    if not kernel.operations:  # a contraction, layout copy or split reduction XLA made: its kind's curve
        contraction = {"convolution": "conv", "dot": "matmul"}.get(kernel.compiled_contraction or "")
        if kernel.compiled_flops and contraction:
            return contraction
        return pointwise_view(kernel, recordless_kind(kernel) or "other")
    classes = {CLASS_OF_KIND.get(estimate.by_operation[i].kind, "other") for i in kernel.operations}
    if len(classes) > 1:  # draws fused with other work (XLA's threefry bits in a loop fusion): that work's class
        classes.discard("random")
    name = min(classes, key=PRIORITY.index)
    if name == "conv" and call_name(kernel).startswith("convolution_backward"):
        return conv_class(backward_width(estimate, kernel), "conv_backward")
    if name == "conv" and kernel.kind == "convolution":  # a lone HLO convolution: XLA's own, no library's
        found = conv_class(width(estimate, kernel))
        return found if found.startswith("depthwise") else found + GENERIC
    if name == "conv":
        costs = [estimate.by_operation[i] for i in kernel.operations]
        chain = chain_class(estimate, kernel, sum(cost.kind in CONTRACTIONS for cost in costs), _pools(costs))
        if chain is not None:
            return chain
        return _pooled(conv_class(width(estimate, kernel)), costs)
    if name == "matmul":  # its heaviest matmul record's view; a plain one XLA runs as a lone ``dot`` :generic
        costs = [estimate.by_operation[i] for i in kernel.operations]
        found = matmul_class(max((c for c in costs if CLASS_OF_KIND.get(c.kind) == name), key=lambda c: c.flops),
                             estimate.framework, row.executions)  # fmt: skip
        lone = kernel.kind == "dot" and row.executions <= 1 and estimate.framework == "jax"  # TensorFlow's XLA: @xla
        return found + GENERIC if found == "matmul" and lone else found
    if name == "attention":  # its sequences on the flash kernel's blocks or off them
        return attention_class([estimate.by_operation[i].operation for i in kernel.operations])
    if name == "norm":  # its norm records' member
        return norm_class([c.operation for c in map(estimate.by_operation.__getitem__, kernel.operations)
                           if CLASS_OF_KIND.get(c.kind) == "norm"], kernel.kind or "")  # fmt: skip
    if name == "elementwise" and any(estimate.by_operation[i].transcendentals for i in kernel.operations):
        # exp, tanh, erf...: a polynomial per element, not one FLOP; its own curve when calibrated
        function = call_name(kernel).lower().rstrip("_")  # tanh_ (in place) is tanh
        return pointwise_view(kernel, f"transcendental:{function}" if function in FUNCTIONS else "transcendental")
    return pointwise_view(kernel, name)


def one_part(estimate: CostEstimate, row: KernelTime, hardware: HardwareSpec) -> Part:
    """A calibration program's main kernel as one part; refused (``NeuralCostError``) when it runs several
    contractions one after another (``parts``): their time together is no one class's point."""
    found = parts(estimate, row, hardware)
    if len(found) > 1:
        raise NeuralCostError(
            f"its main kernel {row.name} runs {len(found)} contractions one after another: no one class's point"
        )
    return found[0]
