"""How an attention kernel is read off its curve (``kernel_classes``): per query head, and in a class of its own when
its sequences are off the flash kernel's blocks.

PyTorch 2.13's CPU flash attention took a time in proportion to batch × heads at one sequence and head size (4, 16
and 64 heads of 120 × 60 within 6% of each other a head, on a 2-core Intel VM), so its curve is read once per query
head, at one head's roofline time (``query_heads``; ``kernel_classes.repeats``): read once per call, a curve whose
larger points are longer sequences (more efficient a head) put 64 heads of 120 × 60 at 0.7× their time. A head's
time then depends on its own size, and more slowly off sequences that are no multiple of ``SEQUENCE_BLOCK``: 120 × 64
ran at 2.2–2.4× its roofline where 128 × 64 ran at 1.7–1.8× (11–12 µs of it each), 77 × 64 at 3.4× where 64 × 96 ran
at 2.0× (5 µs each). Such a kernel is ``unaligned_attention`` (``UNALIGNED``), a class apart, not a member whose
points would bend ``attention``'s; without a curve of its own it reads ``attention``'s, noted
(``kernel_classes.FALLBACK_CLASSES``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..core.records import Operation

#: Records whose first input is q, (batch, heads, sequence, head size): the catalog's ``attention`` convention.
HEADED = frozenset({"attention", "attention_backward"})
#: The class of an attention kernel whose query or key sequence is no multiple of ``SEQUENCE_BLOCK``.
UNALIGNED = "unaligned_attention"
#: The rows of a block: AVX-512 holds 16 float32 lanes.
SEQUENCE_BLOCK = 16


def attention_class(operations: Sequence[Operation]) -> str:
    """``unaligned_attention`` when a record's query or key sequence (its q's and k's second-to-last dim) is no
    multiple of ``SEQUENCE_BLOCK``, else ``attention``."""
    for op in operations:
        if op.kind in HEADED and any(len(shape) >= 2 and shape[-2] % SEQUENCE_BLOCK for shape in op.inputs[:2]):
            return UNALIGNED
    return "attention"


def query_heads(operations: Sequence[Operation]) -> int:
    """How many query heads a kernel's attention records run in all: batch × heads of each one's q (every dim but
    its last two), times its ``count``; at least 1."""
    return max(1, sum(math.prod(op.inputs[0][:-2]) * op.count for op in operations if op.kind in HEADED and op.inputs))
