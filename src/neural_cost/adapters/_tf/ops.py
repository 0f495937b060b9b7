"""The TensorFlow graph-op table's entries: importing this module registers them all in
``table.TABLE``.

The entries live in three modules: ``ops_compute`` (contractions, convolutions, pooling,
norms, softmax, reductions, gathers, scatters, scans, top-k, random), ``ops_pointwise``
(arithmetic, activations, selects, casts, fills) and ``ops_movement`` (copies, TensorLists,
free ops). Function-call and control-flow ops (``PartitionedCall``, ``While``, ``If``...)
are not in the table: the walker descends into their bodies.

A builder raises ``UnmodeledOp`` for a form of its op it cannot describe (an einsum it
cannot map to a contraction, a window that is not a constant): the lowering driver
(``adapters._walk.lower``) counts that op as unmodeled, by its type, with a note saying why —
as it does for any exception a builder raises — never as free.
"""

from __future__ import annotations

from . import ops_compute, ops_movement, ops_pointwise
from .ops_compute import UnmodeledOp
from .table import EMPTY_REASONS, TABLE, Free

__all__ = ["EMPTY_REASONS", "TABLE", "Free", "UnmodeledOp", "ops_compute", "ops_movement", "ops_pointwise"]
