"""Table entries for TensorFlow's free ops: constants, arguments, identities, variable handles and
reads, shape metadata, reshapes and TensorList metadata, each with its reason.

Ops free only for some inputs (a ``Transpose`` that keeps the order of the non-size-1 dims, a
slice that keeps every element, a ``Cast`` to the same dtype...) are builders in their own
family, with their reasons in ``EMPTY_REASONS`` beside them.
"""

from __future__ import annotations

from .table import free

# -- free ------------------------------------------------------------------------------------

free("a constant baked into the graph: its consumer reads it", "Const")
free("a function argument: its consumer reads it", "Placeholder")
free("orders execution only (control dependencies)", "NoOp")
free("returns its inputs unchanged", "Identity", "IdentityN")
free("the identity in the forward pass (it only affects gradients)", "StopGradient", "PreventGradient")
free(
    "hands out the variable's buffer: the op that consumes the value reads it, once (parameters are inputs "
    "of the ops that use them)",
    "ReadVariableOp",
)
free("creates a resource handle; no tensor data", "VarHandleOp")
free("reads shape metadata only", "Shape", "ShapeN", "Size", "Rank", "EnsureShape")
free("same elements in a new shape: TensorFlow shares the input's buffer", "Reshape", "Squeeze", "ExpandDims")
free("the same bytes read as another type: TensorFlow shares the input's buffer", "Bitcast")
free("allocates a list of empty elements; the elements are written by TensorListSetItem", "TensorListReserve")
free("reads list metadata only", "TensorListElementShape", "TensorListLength")
