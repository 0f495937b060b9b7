"""Where did the work run? Answered from the arrays themselves, by their attributes.

No framework is imported: a torch tensor has ``.device.type``, a JAX array has
``.devices()`` whose members have ``.platform``, a TensorFlow tensor has a ``.device``
string, and a numpy 2 array has ``.device == "cpu"``.
"""

from __future__ import annotations

import functools
import platform
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

_KIND_BY_PLATFORM = {
    "cpu": "cpu",
    "cuda": "gpu",
    "gpu": "gpu",
    "rocm": "gpu",
    "mps": "gpu",
    "metal": "gpu",
    "xpu": "gpu",
    "tpu": "tpu",
    "npu": "npu",
}


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    name: str
    kind: str  # cpu | gpu | tpu | npu | unknown | mixed
    source: str  # how we know


@functools.lru_cache(maxsize=1)
def host_cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "host CPU"


def host_device(source: str) -> DeviceInfo:
    return DeviceInfo(host_cpu_name(), "cpu", source)


def _leaves(value: Any, depth: int = 0) -> Iterator[Any]:
    if depth > 6:
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item, depth + 1)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item, depth + 1)
    elif value is not None and not isinstance(value, (str, bytes, int, float, bool)):
        yield value


def array_device(value: Any) -> DeviceInfo | None:
    """The device one array lives on, or None when ``value`` does not look like an array."""
    devices = getattr(value, "devices", None)
    if callable(devices) and hasattr(value, "shape"):  # JAX array
        try:
            found = list(devices())
        except Exception:  # a deleted or abstract array
            return None
        if found:
            dev = found[0]
            plat = str(getattr(dev, "platform", "unknown")).lower()
            kind = _KIND_BY_PLATFORM.get(plat, "unknown")
            label = str(getattr(dev, "device_kind", plat))
            name = host_cpu_name() if kind == "cpu" else label
            suffix = f" ×{len(found)}" if len(found) > 1 else ""
            return DeviceInfo(f"{name}{suffix}", kind, f"jax array on {plat}:{getattr(dev, 'id', 0)}")
    device = getattr(value, "device", None)
    if device is None or not hasattr(value, "shape"):
        return None
    dev_type = getattr(device, "type", None)
    if isinstance(dev_type, str):  # torch.device
        kind = _KIND_BY_PLATFORM.get(dev_type.lower(), "unknown")
        index = getattr(device, "index", None)
        label = dev_type if index is None else f"{dev_type}:{index}"
        name = host_cpu_name() if kind == "cpu" else label
        return DeviceInfo(name, kind, f"tensor on {label}")
    if isinstance(device, str):
        text = device.lower()
        if "device:" in text:  # TensorFlow: /job:localhost/replica:0/task:0/device:GPU:0
            plat = text.rsplit("device:", 1)[1].split(":", 1)[0]
            kind = _KIND_BY_PLATFORM.get(plat, "unknown")
            name = host_cpu_name() if kind == "cpu" else device.rsplit("device:", 1)[1]
            return DeviceInfo(name, kind, f"tensor on {device}")
        kind = _KIND_BY_PLATFORM.get(text, "unknown")  # numpy 2: "cpu"
        return DeviceInfo(host_cpu_name() if kind == "cpu" else device, kind, f"array on {device}")
    return None


def infer_device(*values: Any) -> DeviceInfo:
    """The device the arrays among ``values`` live on; the host CPU when there are none."""
    found: dict[tuple[str, str], DeviceInfo] = {}
    for leaf in _leaves(values):
        info = array_device(leaf)
        if info is not None:
            found.setdefault((info.kind, info.name), info)
    if not found:
        return host_device("assumed: no array arguments, so plain Python on the host")
    if len(found) == 1:
        return next(iter(found.values()))
    names = ", ".join(f"{i.name} ({i.kind})" for i in found.values())
    kinds = {i.kind for i in found.values()}
    kind = kinds.pop() if len(kinds) == 1 else "mixed"
    return DeviceInfo(names, kind, "arguments live on several devices")
