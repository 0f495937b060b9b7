"""The aten calls a PyTorch backward runs only to recompute activations (``torch.utils.checkpoint``).

Both implementations recompute the checkpointed function inside the backward, in an autograd
node's execution, under ``torch.enable_grad()`` (so that the recomputed ops build the graph
the backward then walks): the non-reentrant one in the unpack hook of the first saved tensor
a node asks for (``_checkpoint_hook``/``_recomputation_hook``), stopping early once every saved
tensor is back (``set_checkpoint_early_stop``, on by default: the last op whose output nothing
saved is not run again); the reentrant one in ``CheckpointFunction.backward``, all of it,
before its own ``torch.autograd.backward``. The engine runs every other backward op with grad
mode *off* (``create_graph=False``, as the traced step's ``loss.backward()``), and the call that
starts the backward (``ones_like`` of the loss) runs outside any node. So an op dispatched in
the backward phase, inside a node, with grad mode on, is a recomputation. A backward with
``create_graph=True`` (double backward) would read as all recomputation; the traced training
step never asks for one.
"""

from __future__ import annotations

from typing import Any

import torch

from ...core.attrs import FrozenAttrs
from ...core.records import Operation

_current_node: Any = getattr(torch._C, "_current_autograd_node", None)


def recomputing() -> bool:
    """Whether the op being dispatched now (in a training step's backward) recomputes the forward."""
    return torch.is_grad_enabled() and _current_node is not None and _current_node() is not None


def mark_recomputed(operations: list[Operation], start: int) -> None:
    """Label ``operations[start:]`` ``recompute="true"`` (for readers: no rule reads it)."""
    for i in range(start, len(operations)):
        op = operations[i]
        if "recompute" not in op.attrs:
            operations[i] = op.relabeled(FrozenAttrs.trusted({**op.attrs, "recompute": "true"}))
