"""neural-cost: how fast should this network run here, how fast did it, and how much does that cover.

The public API is curated here; everything else is private. No framework is imported.
"""

from collections.abc import Sequence
from typing import Any

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
from .hardware.calibrate import CalibrationResult
from .hardware.calibrate import calibrate as _calibrate_host
from .hardware.detect import DetectionResult, detect_hardware
from .hardware.kernel_model import KernelCalibration
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
    "KernelCalibration",
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


def calibrate(
    device: Any = None,
    dtypes: Sequence[str] = ("float32",),
    size: int | None = None,
    copy_bytes: int | None = None,
    repeats: int = 3,
    *,
    matmul: Any = None,
    kernels: bool = False,
    framework: str = "torch",
    fresh: bool = False,
) -> tuple[HardwareSpec, CalibrationResult | KernelCalibration]:
    """Measure this device. By default the host CPU's peaks and copy bandwidth with numpy
    (``hardware.calibrate.calibrate``: ``(spec, CalibrationResult)``). With ``kernels=True``
    the kernel model of ``framework`` ("torch", "jax", "tensorflow") that expected times are read
    from, measured afresh (a few minutes), each point the median of this and the machine's last two
    calibrations (``fresh=True``: this one alone, the history started over), and cached:
    ``(spec, KernelCalibration)``."""
    if kernels:
        from .adapters import adapter_for
        from .analysis.calibrate_kernels import kernel_calibration

        adapter = adapter_for(framework)
        calibration = kernel_calibration(adapter, recalibrate=True, fresh=fresh)
        return calibration.hardware, calibration
    if size is None:
        return _calibrate_host(device, dtypes, copy_bytes=copy_bytes, repeats=repeats, matmul=matmul)
    return _calibrate_host(device, dtypes, size, copy_bytes, repeats, matmul=matmul)
