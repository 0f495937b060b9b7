"""Cost rules, one per operation kind, registered in one table (``known_kinds()``)."""

from ..core.kinds import known_kinds, rule_for
from . import (  # noqa: F401  (each module registers its rules)
    callbacks,
    collectives,
    conv,
    decompositions,
    distances,
    interpolate,
    linalg,
    lists,
    losses,
    movement,
    norms,
    other,
    pointwise,
    sequence,
    softmax_pool,
    spectral,
)
from .estimate import compulsory_bytes, estimate_model, estimate_operations, estimate_trace
from .linalg import causal_pairs
from .other import sort_comparisons

__all__ = [
    "causal_pairs",
    "compulsory_bytes",
    "estimate_model",
    "estimate_operations",
    "estimate_trace",
    "known_kinds",
    "rule_for",
    "sort_comparisons",
]
