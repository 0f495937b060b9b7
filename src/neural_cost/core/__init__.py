"""Records, dtypes, units and errors. Imports nothing else of ours and no framework."""

from .attrs import FrozenAttrs
from .dtypes import canonical_dtype, dtype_info, known_dtypes
from .errors import (
    AdapterError,
    DTypeError,
    FrameworkNotInstalledError,
    HardwareError,
    MeasurementError,
    NeuralCostError,
    RecordError,
    SchemaError,
    ShapeError,
    UnknownKindError,
)
from .estimate import CostEstimate, OperationCost, ScopeCost
from .kernels import Kernel
from .kinds import OpCost, known_kinds, register_rule, rule_for
from .profile import MeasuredKernel, Profile, ProfileEvent
from .records import Coverage, LoopAssumption, Operation, Shape, TensorSpec, Trace, as_shape, num_elements

__all__ = [
    "AdapterError",
    "CostEstimate",
    "Coverage",
    "DTypeError",
    "FrameworkNotInstalledError",
    "FrozenAttrs",
    "HardwareError",
    "Kernel",
    "LoopAssumption",
    "MeasuredKernel",
    "MeasurementError",
    "NeuralCostError",
    "OpCost",
    "Operation",
    "OperationCost",
    "Profile",
    "ProfileEvent",
    "RecordError",
    "SchemaError",
    "ScopeCost",
    "Shape",
    "ShapeError",
    "TensorSpec",
    "Trace",
    "UnknownKindError",
    "as_shape",
    "canonical_dtype",
    "dtype_info",
    "known_dtypes",
    "known_kinds",
    "num_elements",
    "register_rule",
    "rule_for",
]
