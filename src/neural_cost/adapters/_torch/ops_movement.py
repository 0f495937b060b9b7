"""Table entries for PyTorch's data movement: concatenation, copies, pads, selects, sorts,
histograms, scans and the materialised backward of views.

Each builder turns one executed aten call into records of existing kinds, permuting
PyTorch's layouts into the ones the rules expect; the FLOP and byte arithmetic stays in
``neural_cost.costs``. Conventions beyond ARCHITECTURE.md are stated where they are used.
"""

from __future__ import annotations

from typing import Any

import torch

from .common import Ops, _arguments, _ints, _is_tensor, _record, _spec
from .table import EMPTY_REASONS, AtenCall, TorchContext, lowers

# --- copies, pads, selects --------------------------------------------------------------


@lowers("cat", "stack")
def _concatenate(call: AtenCall, ctx: TorchContext) -> Ops:
    """``copy``: every input read once, the output written once."""
    return [ctx.op(call, "copy", [t for t in call.args[0] if _is_tensor(t)], call.out)]


_COPIES = (
    "clone",
    "_to_copy",
    "lift_fresh_copy",
    "expand_copy",
    "permute_copy",
    "transpose_copy",
    "t_copy",
    "view_copy",
    "alias_copy",
    "detach_copy",
    "unsqueeze_copy",
    "squeeze_copy",
    "repeat",
    "repeat_interleave",
    "flip",
    "roll",
    "tril",
    "triu",
    "tril_",
    "triu_",
    "nonzero",
    "reflection_pad1d",
    "reflection_pad2d",
    "reflection_pad3d",
    "replication_pad1d",
    "replication_pad2d",
    "replication_pad3d",
    "_copy_from",
    "_copy_from_and_resize",
)


@lowers(*_COPIES)
def _copy(call: AtenCall, ctx: TorchContext) -> Ops:
    """``copy`` of the first tensor argument into the output: casts and device moves
    (_to_copy, _copy_from), materialised views (clone of a transpose, expand_copy,
    repeat, repeat_interleave, flip, roll), pads that reflect or replicate, tril/triu (the
    kept triangle copied, the rest written as zeros; the in-place forms are counted the
    same, an upper bound), nonzero (the input scanned, the indices written)."""
    out = call.outputs[0] if call.name == "_copy_from_and_resize" else call.out
    if call.name == "_copy_from":
        out = call.args[1]
    return [ctx.op(call, "copy", [call.args[0]], out)]


@lowers("copy_")
def _copy_into(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, src): ``copy`` of src (which may broadcast: read once) into self; the scalar
    overloads fill self (written, nothing read)."""
    dst, src = call.args[:2]
    if _is_tensor(src):
        return [ctx.op(call, "copy", [src], dst)]
    return [ctx.op(call, "elementwise", [], dst, attrs={"op": "fill"})]


@lowers("to")
def _to(call: AtenCall, ctx: TorchContext) -> Ops:
    """aten.to, when it reaches dispatch (it is normally resolved to _to_copy or to
    nothing): free when it returns its input, else a ``copy``."""
    x = call.args[0]
    if call.out is x:
        return []
    return [ctx.op(call, "copy", [x], call.out)]


EMPTY_REASONS["to"] = "the tensor already has the dtype, device and layout asked for: it is returned as is"


@lowers("constant_pad_nd")
def _constant_pad(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, pad, value): ``copy`` reading the elements that survive (a negative pad
    crops) and writing the padded output."""
    x = call.args[0]
    pad = _ints(call.arg(1, "pad"))
    shape = list(ctx.shape(x))
    for i in range(len(pad) // 2):
        dim = len(shape) - 1 - i
        shape[dim] = max(0, shape[dim] + min(pad[2 * i], 0) + min(pad[2 * i + 1], 0))
    return [_record(ctx, call.name, "copy", [(tuple(shape), ctx.dtype(x))], _spec(ctx, call.out))]


_PAD_BACKWARDS = tuple(f"{kind}_pad{n}d_backward" for kind in ("reflection", "replication") for n in (1, 2, 3))


@lowers(*_PAD_BACKWARDS)
def _pad_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """(grad_output, self, padding) → grad of self: ``pad_backward``, each padded position's
    gradient added into the element it copied."""
    return [ctx.op(call, "pad_backward", [call.args[0]], call.out)]


@lowers("where")
def _where(call: AtenCall, ctx: TorchContext) -> Ops:
    """where(condition, self, other): ``elementwise`` select, 1 per element, reading the
    boolean condition and the tensor operands (scalars are free). where(condition) alone
    is nonzero as a tuple: a ``copy`` scanning the condition and writing the indices."""
    if call.overload == "default":
        outputs = call.outputs
        if not outputs:
            return []
        return [ctx.op(call, "copy", [call.args[0]], outputs[0], extra_outputs=outputs[1:])]
    inputs = [t for t in call.args[:3] if _is_tensor(t)]
    return [ctx.op(call, "elementwise", inputs, call.out, attrs={"op": "where"})]


EMPTY_REASONS["where"] = "where(condition) of a 0-d condition returns no index tensors"


@lowers("masked_fill", "masked_fill_")
def _masked_fill(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, mask, value): ``elementwise`` select, 1 per element, reading self, the
    boolean mask and a tensor value."""
    inputs = [t for t in call.args[:3] if _is_tensor(t)]
    return [ctx.op(call, "elementwise", inputs, call.out, attrs={"op": "where"})]


# --- sorting, selection, scans ----------------------------------------------------------


@lowers("sort", "topk")
def _sort(call: AtenCall, ctx: TorchContext) -> Ops:
    """``sort`` along dim: ⌈L·log2 L⌉ comparisons per row; topk the rule's top-k form
    (L-1 for k = 1, else ⌈L·log2 k⌉); values written, indices an extra output. A 0-d input
    is a copy."""
    a = _arguments(call)
    x = a["self"]
    values, indices = call.outputs
    if x.dim() == 0:
        return [ctx.op(call, "copy", [x], values, extra_outputs=[indices])]
    attrs: dict[str, Any] = {"axis": int(a["dim"])}
    if call.name == "topk":
        attrs["k"] = int(a["k"])
    return [ctx.op(call, "sort", [x], values, attrs=attrs, extra_outputs=[indices])]


@lowers("isin")
def _isin(call: AtenCall, ctx: TorchContext) -> Ops:
    """``isin(elements, test_elements)``: whether each of the n elements is among the m test
    elements — a language model's ``generate`` asks whether each row's last token is an
    end-of-sequence id (n = batch, m = 1). ATen's CPU kernel compares pairs or sorts, by the
    sizes (the ``membership`` rule); either way it reads both and writes n
    booleans: one ``membership`` record (a Python number on either side is one element)."""
    elements, test, out = call.args[0], call.args[1], call.outputs[0]
    attrs: dict[str, Any] = {"op": "isin"}
    inputs: list[Any]
    if isinstance(elements, torch.Tensor):
        attrs["compute_dtype"] = ctx.dtype(elements)
        inputs = [elements] + ([test] if isinstance(test, torch.Tensor) else [])
    else:  # a number among a tensor's values: one element, the tensor the test set
        attrs["compute_dtype"] = ctx.dtype(test)
        inputs = [(), test]
    return [ctx.op(call, "membership", inputs, out, attrs=attrs)]


@lowers("histc")
def _histc(call: AtenCall, ctx: TorchContext) -> Ops:
    """``histc(x, bins, min, max)``: a ``histogram`` record, x counted into ``bins`` equal bins — a mixture of
    experts' tokens per expert (``transformers``' Mixtral). With min = max (the default 0, 0) the range is x's
    own min and max (``range_from_data``)."""
    a = _arguments(call)
    attrs = {"range_from_data": bool(a.get("min", 0) == a.get("max", 0))}
    return [ctx.op(call, "histogram", [a["self"]], call.out, attrs=attrs)]


@lowers("argmax", "argmin")
def _arg_reduction(call: AtenCall, ctx: TorchContext) -> Ops:
    """``reduce``: n-1 comparisons per reduced row of n (all elements when dim is None).
    (max/min, whose packets also hold the binary and whole-tensor forms, are ops_pointwise's.)"""
    x, dim = call.args[0], call.arg(1, "dim")
    attrs = {} if dim is None or x.dim() == 0 else {"axes": (int(dim),)}
    return [ctx.op(call, "reduce", [x], call.out, attrs=attrs)]


#: logcumsumexp combines with PyTorch's log-add-exp: min, max, a finiteness test, the
#: difference, exp, log1p and the add — 7 FLOPs, 2 of them transcendental.
_LOG_ADD_EXP = {"flops_per_combine": 7, "transcendentals_per_combine": 2}


@lowers("cumsum", "cumsum_", "cumprod", "cumprod_", "cummax", "cummin", "logcumsumexp")
def _cumulative(call: AtenCall, ctx: TorchContext) -> Ops:
    """``cumulative`` along dim: L-1 combining steps per row (cummax/cummin also write
    the indices); a 0-d input is a copy."""
    x = call.args[0]
    outputs = call.outputs
    if x.dim() == 0:
        return [ctx.op(call, "copy", [x], outputs[0], extra_outputs=outputs[1:])]
    attrs: dict[str, Any] = {"axis": int(call.arg(1, "dim")), "op": call.name}
    if call.name == "logcumsumexp":
        attrs.update(_LOG_ADD_EXP)
    return [ctx.op(call, "cumulative", [x], outputs[0], attrs=attrs, extra_outputs=outputs[1:])]


# --- materialising the backward of views ------------------------------------------------


@lowers("slice_backward", "select_backward", "diagonal_backward")
def _view_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """(grad_output, input_sizes, ...): a zero gradient of the input's size with
    grad_output copied into the viewed part: a ``copy`` writing it whole."""
    return [ctx.op(call, "copy", [call.args[0]], call.out)]


@lowers("slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter")
def _view_scatter(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, src, ...): self copied with src written into a view of it: a ``copy`` of
    both into the output."""
    return [ctx.op(call, "copy", [call.args[0], call.args[1]], call.out)]


# --- resampling: interpolation and grid sampling ------------------------------------------

_INTERPOLATIONS = {
    **{f"upsample_nearest{n}d": "nearest" for n in (1, 2, 3)},
    **{f"_upsample_nearest_exact{n}d": "nearest" for n in (1, 2, 3)},
    "upsample_linear1d": "linear",
    "upsample_bilinear2d": "bilinear",
    "upsample_trilinear3d": "trilinear",
    "upsample_bicubic2d": "bicubic",
    "_upsample_bilinear2d_aa": "bilinear",
    "_upsample_bicubic2d_aa": "bicubic",
}


@lowers(*_INTERPOLATIONS)
def _interpolate(call: AtenCall, ctx: TorchContext) -> Ops:
    """(input, output_size, ...) in every overload (.default and .vec): ``interpolate`` by the
    op's mode (nearest-exact differs from nearest only in its index rounding); the ``_aa``
    forms antialias."""
    attrs: dict[str, Any] = {"mode": _INTERPOLATIONS[call.name]}
    if call.name.endswith("_aa"):
        attrs["antialias"] = True
    return [ctx.op(call, "interpolate", [call.args[0]], call.out, attrs=attrs)]


@lowers(*(f"{name}_backward" for name in _INTERPOLATIONS if not name.endswith("_aa")))
def _interpolate_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """(grad_output, output_size, input_size, ...): ``interpolate_backward``, each gradient
    added into its taps of the input gradient."""
    mode = _INTERPOLATIONS[call.name.removesuffix("_backward")]
    return [ctx.op(call, "interpolate_backward", [call.args[0]], call.out, attrs={"mode": mode})]


#: grid_sampler's interpolation_mode argument, as aten numbers it.
_GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}


@lowers("grid_sampler_2d", "grid_sampler_3d")
def _grid_sample(call: AtenCall, ctx: TorchContext) -> Ops:
    """(input, grid, interpolation_mode, padding_mode, align_corners): ``grid_sample``."""
    mode = _GRID_MODES[int(call.args[2])]
    return [ctx.op(call, "grid_sample", list(call.args[:2]), call.out, attrs={"mode": mode})]


@lowers("eye")
def _eye(call: AtenCall, ctx: TorchContext) -> Ops:
    """An identity matrix: a fill (0 FLOPs, nothing read, the output written)."""
    return [ctx.op(call, "elementwise", [], call.out, attrs={"op": "fill"})]
