"""Table entries for the free aten ops (views, metadata, allocation) and the conditionally free
ones (``reshape``, ``contiguous``...).

A builder returns an empty list only when the call does no work: it aliases its input
(``reshape``/``flatten`` of a viewable tensor, ``contiguous`` of a contiguous one, ``dropout``
when not training), its output_mask asks for nothing, or its tensor list is empty; the reason
is in ``EMPTY_REASONS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.records import Operation
from .table import EMPTY_REASONS, AtenCall, TorchContext, free, lowers

# -- conditionally free ------------------------------------------------------------------------


def _shares_storage(a: Any, b: Any) -> bool:
    try:
        return bool(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):  # storage-less tensors: a view only if the same object
        return a is b


@lowers("reshape", "flatten", "unflatten", "contiguous", "resolve_conj", "resolve_neg")
def _maybe_copy(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    source, out = call.args[0], call.outputs[0]
    if _shares_storage(source, out):
        return []  # a view of the input: see EMPTY_REASONS
    return [ctx.op(call, "copy", [source], out, attrs={"op": call.name})]


for _name in ("reshape", "flatten", "unflatten"):
    EMPTY_REASONS[_name] = "the input's strides allow it: a view, no data moves (otherwise it copies, counted)"
EMPTY_REASONS["contiguous"] = "already contiguous: returns the input itself (otherwise a copy, counted)"
EMPTY_REASONS["resolve_conj"] = "no lazy conjugate bit: returns the input itself (otherwise a copy, counted)"
EMPTY_REASONS["resolve_neg"] = "no lazy negation bit: returns the input itself (otherwise a copy, counted)"


# -- free: views, metadata, allocation ----------------------------------------------------------

_VIEW = "a view: the output aliases the input's storage with new sizes/strides"
FREE_REASONS: dict[str, str] = {
    "view": _VIEW,
    "_unsafe_view": "a view the autograd graph does not track; aliases the input's storage",
    "_reshape_alias": _VIEW,
    "view_as": _VIEW,
    "t": "a view with the two dims' strides swapped",
    "transpose": "a view with two dims' strides swapped",
    "permute": "a view with the dims' strides reordered",
    "movedim": "a view with the dims' strides reordered",
    "swapaxes": "a view with two dims' strides swapped",
    "swapdims": "a view with two dims' strides swapped",
    "expand": "a view that repeats elements with stride 0",
    "expand_as": "a view that repeats elements with stride 0",
    "alias": "another tensor over the same storage",
    "detach": "the same storage without autograd history",
    "lift_fresh": "marks a constant as a fresh input; returns it unchanged",
    "unsqueeze": "a view with a size-1 dim inserted",
    "squeeze": "a view with size-1 dims dropped",
    "select": "a view at an offset with one dim dropped",
    "slice": "a view at an offset with a new size and stride",
    "narrow": "a view at an offset with a new size",
    "split": "views of consecutive slices",
    "split_with_sizes": "views of consecutive slices",
    "chunk": "views of consecutive slices",
    "unsafe_split": "views of consecutive slices (split without autograd view tracking)",
    "unsafe_split_with_sizes": "views of consecutive slices (split without autograd view tracking)",
    "unsafe_chunk": "views of consecutive slices (chunk without autograd view tracking)",
    "tensor_split": "views of consecutive slices",
    "unbind": "views of each index along a dim",
    "as_strided": "a view with explicit sizes, strides and offset",
    "diagonal": "a view of the diagonal (offset and summed strides)",
    "unfold": "a view of sliding windows (a new dim with the step's stride)",
    "view_as_real": "a view of complex values as (real, imag) pairs",
    "view_as_complex": "a view of (real, imag) pairs as complex values",
    "real": "a view of the real parts",
    "imag": "a view of the imaginary parts",
    "conj": "sets a lazy conjugate bit on a view; no data moves",
    "positive": "unary plus: returns the input itself",
    "_conj": "sets a lazy conjugate bit on a view; no data moves",
    "_neg_view": "sets a lazy negation bit on a view; no data moves",
    "detach_": "drops autograd history in place: metadata only",
    "squeeze_": "changes sizes/strides in place: metadata only",
    "unsqueeze_": "changes sizes/strides in place: metadata only",
    "t_": "changes sizes/strides in place: metadata only",
    "transpose_": "changes sizes/strides in place: metadata only",
    "as_strided_": "changes sizes/strides in place: metadata only",
    "sym_size": "reads a size: metadata",
    "sym_stride": "reads a stride: metadata",
    "sym_numel": "reads the element count: metadata",
    "sym_storage_offset": "reads the storage offset: metadata",
    "size": "reads a size: metadata",
    "stride": "reads a stride: metadata",
    "numel": "reads the element count: metadata",
    "dim": "reads the rank: metadata",
    "is_contiguous": "reads the layout: metadata",
    "is_same_size": "compares two tensors' sizes: metadata",
    "_assert_tensor_metadata": "checks sizes, strides and dtype: metadata",
    "empty": "allocates without writing: no bytes moved",
    "empty_like": "allocates without writing: no bytes moved",
    "empty_strided": "allocates without writing: no bytes moved",
    "empty_permuted": "allocates without writing: no bytes moved",
    "new_empty": "allocates without writing: no bytes moved",
    "new_empty_strided": "allocates without writing: no bytes moved",
}
for _name, _reason in FREE_REASONS.items():
    free(_reason, _name)
