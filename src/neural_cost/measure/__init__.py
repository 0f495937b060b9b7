"""Timing: benchmark(), Measurement, and where the work ran."""

from .device import DeviceInfo, host_cpu_name, infer_device
from .timing import Measurement, Telemetry, auto_sync, benchmark, display_name, reporting_progress

__all__ = [
    "DeviceInfo",
    "Measurement",
    "Telemetry",
    "auto_sync",
    "benchmark",
    "display_name",
    "host_cpu_name",
    "infer_device",
    "reporting_progress",
]
