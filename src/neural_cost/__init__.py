"""neural-cost: how fast should this network run here, how fast did it, and how much does that cover.

The public API is curated here; everything else is private. No framework is imported.
"""

from . import report as _report  # noqa: F401  registers the presenter that renders analysis reports
from ._version import __version__
from .analysis import Finding, GapReport, analyze_gap
from .analysis.memory import MemoryProfile, ModelProfile, profile_model
from .analysis.pipeline import Pipeline, PipelineReport, Stage
from .analysis.workload import analyze_workload
from .core import (
    AdapterError,
    CostEstimate,
    Coverage,
    DTypeError,
    HardwareError,
    Kernel,
    LoopAssumption,
    MeasurementError,
    NeuralCostError,
    Operation,
    OperationCost,
    Profile,
    RecordError,
    SchemaError,
    ScopeCost,
    ShapeError,
    TensorSpec,
    Trace,
    UnknownKindError,
)
from .costs import estimate_model, estimate_operations, estimate_trace, known_kinds
from .hardware import HardwareSpec, MemoryLevel
from .hardware.calibrate import CalibrationResult, calibrate
from .hardware.detect import DetectionResult, detect_hardware
from .measure import Measurement, benchmark
from .report.diff import diff_reports
from .report.load import load_report
from .report.merge import MergedReport, merge_reports

__all__ = [
    "AdapterError",
    "CalibrationResult",
    "CostEstimate",
    "Coverage",
    "DTypeError",
    "DetectionResult",
    "Finding",
    "GapReport",
    "HardwareError",
    "HardwareSpec",
    "Kernel",
    "LoopAssumption",
    "Measurement",
    "MeasurementError",
    "MemoryLevel",
    "MemoryProfile",
    "MergedReport",
    "ModelProfile",
    "NeuralCostError",
    "Operation",
    "OperationCost",
    "Pipeline",
    "PipelineReport",
    "Profile",
    "RecordError",
    "SchemaError",
    "ScopeCost",
    "ShapeError",
    "Stage",
    "TensorSpec",
    "Trace",
    "UnknownKindError",
    "__version__",
    "analyze_gap",
    "analyze_workload",
    "benchmark",
    "calibrate",
    "detect_hardware",
    "diff_reports",
    "estimate_model",
    "estimate_operations",
    "estimate_trace",
    "known_kinds",
    "load_report",
    "merge_reports",
    "profile_model",
]
