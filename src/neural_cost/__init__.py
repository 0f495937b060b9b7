"""neural-cost: how fast should this network run here, how fast did it, and how much does that cover."""

from .core import (
    CostEstimate,
    Coverage,
    LoopAssumption,
    NeuralCostError,
    Operation,
    OperationCost,
    ScopeCost,
    TensorSpec,
    Trace,
)
from .costs import estimate_model, estimate_operations, estimate_trace, known_kinds
from .hardware import HardwareSpec

__version__ = "0.1.0"

__all__ = [
    "CostEstimate",
    "Coverage",
    "HardwareSpec",
    "LoopAssumption",
    "NeuralCostError",
    "Operation",
    "OperationCost",
    "ScopeCost",
    "TensorSpec",
    "Trace",
    "__version__",
    "estimate_model",
    "estimate_operations",
    "estimate_trace",
    "known_kinds",
]
