"""Hardware descriptions: the spec record, host-CPU detection (detection and calibration build on it)."""

from .cpuinfo import parse_cpuinfo
from .dram import measure_copy_bandwidth
from .host import host_cpu_spec
from .spec import DEVICE_KINDS, HardwareSpec, MemoryLevel

__all__ = ["DEVICE_KINDS", "HardwareSpec", "MemoryLevel", "host_cpu_spec", "measure_copy_bandwidth", "parse_cpuinfo"]
