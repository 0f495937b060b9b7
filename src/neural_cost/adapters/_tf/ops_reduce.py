"""Table entries for TensorFlow's reductions (``Sum``, ``Mean``, ``ArgMax``, ``EuclideanNorm``...),
cumulative scans and top-k (which ``tf.sort``/``tf.argsort`` lower to).

Each builder turns one graph op into a ``reduce``, ``cumulative`` or ``sort`` record; the
arithmetic lives in ``neural_cost.costs``. What the builders decide:

- Reductions: axes from the Const reduction indices (omitted when not constant: the rule
  then checks only the element counts); ``Mean`` adds 1 divide per output.
- ``BiasAddGrad`` sums the gradient over every dim but the channels: the ``reduce`` PyTorch's
  bias gradient is (``sum`` over the batch of a Linear, ``convolution_backward.grad_bias``).
- The softmax cross-entropy ops compute the loss and its gradient in one kernel, counted as
  the records PyTorch's ``cross_entropy`` runs for the same training step (see
  ``_sparse_cross_entropy``), so the step counts the same in both frameworks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...core.records import Operation
from .common import UnmodeledOp, const_ints
from .table import TfContext, attr, lowers

# -- reductions ------------------------------------------------------------------------------

_PER_OUTPUT = {"Mean": 1}


@lowers("Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin", "EuclideanNorm")
def _reduce(op: Any, ctx: TfContext) -> Sequence[Operation]:
    x = ctx.shape(op.inputs[0])
    attrs: dict[str, Any] = {}
    axes = const_ints(op.inputs[1])
    if axes is not None and all(-len(x) <= a < len(x) for a in axes):
        attrs["axes"] = axes
    if op.type == "EuclideanNorm":  # L squares and one root per output (sqrt of the sum of squares)
        length = math.prod(x) // max(math.prod(ctx.shape(op.outputs[0])), 1)
        attrs["flops_per_output"] = length + 1
        attrs["transcendentals_per_output"] = 1
    elif op.type in _PER_OUTPUT:
        attrs["flops_per_output"] = _PER_OUTPUT[op.type]
    return [ctx.op(op, "reduce", op.inputs[:1], attrs=attrs)]


# -- scans and top-k -------------------------------------------------------------------------


@lowers("Cumsum", "Cumprod")
def _cumulative(op: Any, ctx: TfContext) -> Sequence[Operation]:
    axis = const_ints(op.inputs[1])
    if axis is None or len(axis) != 1:
        raise UnmodeledOp(f"{op.type} with an axis that is not a constant")
    return [ctx.op(op, "cumulative", op.inputs[:1], attrs={"axis": axis[0]})]


@lowers("TopKV2", "TopK")
def _top_k(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """``tf.sort``/``tf.argsort`` lower to TopKV2 with k = the row length: a full sort's count."""
    values = ctx.shape(op.outputs[0])
    return [ctx.op(op, "sort", op.inputs[:1], attrs={"axis": -1, "k": values[-1]}, extra_outputs=op.outputs[1:2])]


@lowers("HistogramFixedWidth")
def _histogram(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """``tf.histogram_fixed_width(values, value_range, nbins)``: a ``histogram`` record over the values, each
    clamped into its bin (2 compares, as ATen's range test counts) — the range is given, not the data's."""
    return [ctx.op(op, "histogram", op.inputs[:1])]


@lowers("BiasAddGrad")
def _bias_add_grad(op: Any, ctx: TfContext) -> Sequence[Operation]:
    grad = ctx.shape(op.inputs[0])
    channel = 1 if str(attr(op, "data_format", "NHWC")).startswith("NC") and len(grad) > 2 else len(grad) - 1
    axes = tuple(i for i in range(len(grad)) if i != channel)
    return [ctx.op(op, "reduce", attrs={"axes": axes})]


# -- softmax cross-entropy -------------------------------------------------------------------


@lowers("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_cross_entropy(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """(logits (N, C), labels (N,)) → (loss (N,), backprop (N, C) = softmax - one-hot), as PyTorch's
    ``cross_entropy`` with reduction='none' and its backward: ``_log_softmax``, ``nll_loss_forward``
    (one log-probability read per label), ``nll_loss_backward`` (the gradient of each label's
    loss, from the N ones the gradient starts from and the total weight, as PyTorch's kernel
    reads them) and ``_log_softmax_backward_data``. TensorFlow's kernel derives the backprop from
    its forward's exponentials, fewer FLOPs than these records count; the mean over the batch
    and the chain rule's multiply by the incoming gradient are graph ops of their own."""
    logits, labels = op.inputs[:2]
    loss, backprop = op.outputs[:2]
    rows, name = ctx.shape(labels), str(op.type)
    dtype, label_dtype = ctx.dtype(logits), ctx.dtype(labels)
    none = {"reduction": "none"}
    return [
        ctx.op(op, "softmax", (logits,), backprop, attrs={"axis": -1, "log": True}, name=f"{name}.log_softmax"),
        ctx.op(op, "nll_loss", (logits, labels), loss, attrs=none, input_shapes=(rows, rows), name=f"{name}.nll_loss"),
        ctx.op(
            op, "nll_loss_backward", (), backprop, attrs=none, input_shapes=(rows, rows, ()),
            input_dtypes=(dtype, label_dtype, dtype), name=f"{name}.nll_loss_backward",
        ),
        ctx.op(
            op, "softmax_backward", (backprop, backprop), backprop, attrs={"axis": -1, "log": True},
            name=f"{name}.log_softmax_backward",
        ),
    ]  # fmt: skip


@lowers("SoftmaxCrossEntropyWithLogits")
def _cross_entropy(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """(logits (N, C), probabilities (N, C)) → (loss (N,), backprop (N, C)), as PyTorch's
    ``cross_entropy`` with probability targets runs it, -(log_softmax(x)·t).sum(1), and its
    backward: ``_log_softmax``, the product and the negated row sum (``mul``, ``sum``, ``neg``);
    then the gradient through them, -dy·t (``neg`` per row, ``mul``), and
    ``_log_softmax_backward_data``. The dense labels are read whole."""
    logits, labels = op.inputs[:2]
    loss, backprop = op.outputs[:2]
    shape, rows, name = ctx.shape(logits), ctx.shape(loss), str(op.type)
    column = (*rows, 1)
    return [
        ctx.op(op, "softmax", (logits,), backprop, attrs={"axis": -1, "log": True}, name=f"{name}.log_softmax"),
        ctx.op(op, "elementwise", (backprop, labels), backprop, attrs={"op": "mul"}, name=f"{name}.mul"),
        # the row sum with its negation, one per row
        ctx.op(op, "reduce", (backprop,), loss, attrs={"axes": (-1,), "flops_per_output": 1}, name=f"{name}.sum"),
        ctx.op(op, "elementwise", (loss,), loss, attrs={"op": "neg"}, name=f"{name}.neg_backward"),
        ctx.op(
            op, "elementwise", (loss, labels), backprop, attrs={"op": "mul"}, input_shapes=(column, shape),
            name=f"{name}.mul_backward",
        ),
        ctx.op(
            op, "softmax_backward", (backprop, backprop), backprop, attrs={"axis": -1, "log": True},
            name=f"{name}.log_softmax_backward",
        ),
    ]  # fmt: skip
