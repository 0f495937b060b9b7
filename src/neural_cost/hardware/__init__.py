"""Hardware descriptions: the spec record, host-CPU detection (detection and calibration build on it)."""

from .cpuinfo import parse_cpuinfo
from .dram import measure_copy_bandwidth
from .host import host_cpu_spec
from .interconnect import Interconnect
from .interconnect_calibration import calibrate_interconnect
from .links import link
from .spec import DEVICE_KINDS, HardwareSpec, MemoryLevel

__all__ = [
    "DEVICE_KINDS",
    "HardwareSpec",
    "Interconnect",
    "MemoryLevel",
    "calibrate_interconnect",
    "host_cpu_spec",
    "link",
    "measure_copy_bandwidth",
    "parse_cpuinfo",
]
