"""The TensorFlow graph-op table's entries: importing this module registers them all in
``table.TABLE``.

The entries live in one module per family, named as in the PyTorch and JAX tables:
``ops_matmul`` (MatMul, BatchMatMul, Einsum), ``ops_conv`` (convolutions), ``ops_norms``
(FusedBatchNorm, Softmax/LogSoftmax, pooling), ``ops_reduce`` (reductions, scans, top-k),
``ops_indexing`` (gathers, scatters), ``ops_random_optim`` (random ops), ``ops_pointwise``
(arithmetic, activations, selects, casts, fills), ``ops_movement`` (copies, TensorLists) and
``ops_free`` (metadata, aliases, handles); ``common`` holds what they share. Function-call and
control-flow ops (``PartitionedCall``, ``While``, ``If``...) are not in the table: the walker
descends into their bodies.

A builder raises ``UnmodeledOp`` for a form of its op it cannot describe (an einsum it
cannot map to a contraction, a window that is not a constant): the lowering driver
(``adapters._walk.lower``) counts that op as unmodeled, by its type, with a note saying why —
as it does for any exception a builder raises — never as free.
"""

from __future__ import annotations

from . import (
    ops_conv,
    ops_free,
    ops_indexing,
    ops_linalg,
    ops_matmul,
    ops_movement,
    ops_norms,
    ops_pointwise,
    ops_random_optim,
    ops_reduce,
)
from .common import UnmodeledOp
from .table import EMPTY_REASONS, TABLE, Free

__all__ = [
    "EMPTY_REASONS",
    "TABLE",
    "Free",
    "UnmodeledOp",
    "ops_conv",
    "ops_free",
    "ops_indexing",
    "ops_linalg",
    "ops_matmul",
    "ops_movement",
    "ops_norms",
    "ops_pointwise",
    "ops_random_optim",
    "ops_reduce",
]
