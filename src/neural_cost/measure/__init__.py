"""Timing: benchmark(), Measurement, and where the work ran."""

from .device import DeviceInfo, host_cpu_name, infer_device
from .timing import Measurement, Telemetry, auto_sync, benchmark

__all__ = ["DeviceInfo", "Measurement", "Telemetry", "auto_sync", "benchmark", "host_cpu_name", "infer_device"]
