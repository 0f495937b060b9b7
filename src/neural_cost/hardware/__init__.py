"""Hardware descriptions: the spec record (detection and calibration build on it)."""

from .spec import DEVICE_KINDS, HardwareSpec

__all__ = ["DEVICE_KINDS", "HardwareSpec"]
