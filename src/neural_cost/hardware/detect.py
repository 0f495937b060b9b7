"""detect_hardware: the spec of the device the work ran on, and where each number came from.

The device is named by a string (``"cpu"``, ``"cuda:1"``, ``"gpu"``, ``"mps"``...), a JAX or
torch device, or an array/tensor living on one — recognised by attributes, never by
importing a framework. No device means the host CPU.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.attrs import FrozenAttrs, attrs_to_json
from ..core.errors import HardwareError
from ..core.units import format_si
from .spec import HardwareSpec

DEVICE_STRINGS = "'cpu', 'cuda', 'cuda:N', 'gpu', 'gpu:N', 'mps', 'tpu'"


@dataclass(frozen=True, slots=True)
class DeviceRef:
    """A device named by the caller, resolved to a kind and an index."""

    kind: str  # cpu | gpu | tpu
    platform: str  # cpu | cuda | mps | tpu | rocm ...
    index: int = 0
    name_hint: str | None = None  # what the framework calls the chip (JAX device_kind)
    described_as: str = ""


@dataclass(frozen=True, slots=True)
class DetectionResult:
    """How each number of a detected spec was obtained, for the report to cite."""

    device: str
    kind: str
    name: str
    sources: Mapping[str, str] = field(default_factory=FrozenAttrs)
    notes: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(default_factory=FrozenAttrs)

    def __post_init__(self) -> None:
        if not isinstance(self.sources, FrozenAttrs):
            object.__setattr__(self, "sources", FrozenAttrs(self.sources, "DetectionResult.sources"))
        if not isinstance(self.details, FrozenAttrs):
            object.__setattr__(self, "details", FrozenAttrs(self.details, "DetectionResult.details"))
        object.__setattr__(self, "notes", tuple(self.notes))

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "kind": self.kind,
            "name": self.name,
            "sources": attrs_to_json(self.sources),
            "notes": list(self.notes),
            "details": attrs_to_json(self.details),
        }


_PLATFORM_KIND = {"cpu": "cpu", "cuda": "gpu", "gpu": "gpu", "rocm": "gpu", "mps": "gpu", "metal": "gpu", "tpu": "tpu"}


def _from_string(text: str) -> DeviceRef:
    raw = text.strip().lower()
    platform, _, index_text = raw.partition(":")
    if platform not in _PLATFORM_KIND or (index_text and not index_text.isdigit()):
        raise HardwareError(
            f"device={text!r} is not a device neural-cost knows; use one of {DEVICE_STRINGS}, a JAX or torch "
            f"device, or an array that lives on one. Available here: {', '.join(available_devices())}"
        )
    platform = {"gpu": "cuda", "metal": "mps"}.get(platform, platform)
    return DeviceRef(_PLATFORM_KIND[platform], platform, int(index_text or 0), described_as=text)


def resolve_device(device: Any) -> DeviceRef:
    """A device string, JAX/torch device, or array → DeviceRef (by attributes only)."""
    if device is None:
        return DeviceRef("cpu", "cpu", described_as="host CPU (no device given)")
    if isinstance(device, str):
        return _from_string(device)
    devices = getattr(device, "devices", None)
    if callable(devices) and hasattr(device, "shape"):  # a JAX array: the device it lives on
        found = sorted(devices(), key=lambda d: getattr(d, "id", 0))
        if not found:
            raise HardwareError("the array given as device= lives on no device")
        return resolve_device(found[0])
    platform = getattr(device, "platform", None)
    if isinstance(platform, str):  # a JAX device
        plat = platform.lower()
        kind = _PLATFORM_KIND.get(plat, "unknown")
        if kind == "unknown":
            raise HardwareError(f"JAX device {device!r} has platform {platform!r}, which neural-cost has no peaks for")
        hint = getattr(device, "device_kind", None)
        return DeviceRef(kind, "cuda" if plat == "gpu" else plat, int(getattr(device, "id", 0)), hint, repr(device))
    dev_type = getattr(device, "type", None)
    if isinstance(dev_type, str):  # a torch.device
        index = getattr(device, "index", None)
        return _from_string(dev_type if index is None else f"{dev_type}:{index}")
    inner = getattr(device, "device", None)
    if inner is not None and hasattr(device, "shape"):  # a tensor: torch.device, TF "/device:GPU:0", numpy "cpu"
        if isinstance(inner, str) and "device:" in inner:
            plat, _, index = inner.rsplit("device:", 1)[1].partition(":")
            return _from_string(f"{plat.lower()}:{index or 0}")
        return resolve_device(inner)
    raise HardwareError(
        f"device={device!r} ({type(device).__name__}) is not a device: pass one of {DEVICE_STRINGS}, a JAX or torch "
        f"device, or an array that lives on one"
    )


def available_devices() -> list[str]:
    """What this machine offers, as device strings with names (never raises)."""
    found = ["cpu"]
    try:
        from .nvidia import probe_nvidia

        found += [f"cuda:{gpu.index} ({gpu.name})" for gpu in probe_nvidia().gpus]
    except Exception:  # a probe failure only shortens the list
        pass
    if sys.platform == "darwin":
        found.append("mps")
    return found


def detect_hardware(
    device: Any = None, *, memory_bandwidth: float | None = None, calibrated: bool = True
) -> tuple[HardwareSpec, DetectionResult]:
    """The spec of ``device`` (default: the host CPU) and how each number was obtained.

    The host CPU's bandwidth is read from this machine's calibration cache, or measured
    with all cores once (about a second) and cached; ``memory_bandwidth`` overrides it.
    ``calibrated=False`` keeps the host's formula peaks even where a cached calibration
    measured faster kernels. GPU bandwidths come from their table rows.
    """
    ref = resolve_device(device)
    if ref.kind == "cpu":
        return _cpu(ref, memory_bandwidth, calibrated)
    if ref.platform == "cuda":
        return _nvidia(ref)
    if ref.platform == "mps":
        return _apple_gpu(ref)
    raise HardwareError(
        f"{ref.described_as or ref.platform}: neural-cost has no {ref.platform.upper()} peak table yet; pass "
        f"HardwareSpec(name, peak_flops, memory_bandwidth, kind={ref.kind!r}) with your chip's datasheet figures"
    )


def _cpu(ref: DeviceRef, memory_bandwidth: float | None, calibrated: bool) -> tuple[HardwareSpec, DetectionResult]:
    if sys.platform == "darwin":
        return _apple_cpu(ref)
    from .host import host_cpu_spec

    spec, host = host_cpu_spec(memory_bandwidth=memory_bandwidth, calibrated=calibrated)
    sources = {f"peak_flops[{dtype}]": spec.source_of(f"peak_flops[{dtype}]") for dtype in host.peak_flops_by_dtype}
    sources["memory_bandwidth"] = spec.source_of("memory_bandwidth")
    if host.memory_capacity_source:
        sources["memory_capacity"] = host.memory_capacity_source
    notes = list(host.notes)
    spec, level_notes = _with_host_levels(spec, host.logical_cpus)
    notes += level_notes
    if "bfloat16" not in host.peak_flops_by_dtype:
        notes.append(
            "no bfloat16 peak: this CPU has neither AMX nor AVX512_BF16, so bfloat16 runs at FP32 rates or slower"
        )
    return spec, DetectionResult("cpu", "cpu", spec.name, sources, tuple(notes), host.to_dict())


def _with_host_levels(spec: HardwareSpec, logical_cpus: int) -> tuple[HardwareSpec, tuple[str, ...]]:
    """The host's caches (sysfs, measured bandwidths from the calibration cache) and DRAM."""
    from pathlib import Path

    from .host_cache import read_entry
    from .host_calibration import live_machine_key
    from .levels import host_levels

    try:
        meminfo: str | None = Path("/proc/meminfo").read_text()
    except OSError:
        meminfo = None
    entry = read_entry(live_machine_key()).entry
    measured = entry.get("levels") if entry is not None else None
    levels, notes = host_levels(
        meminfo_text=meminfo,
        dram_bandwidth=spec.memory_bandwidth,
        dram_source=spec.source_of("memory_bandwidth"),
        logical_cpus=logical_cpus,
        measured=measured if isinstance(measured, dict) else None,
    )
    return dataclasses.replace(spec, memory_levels=levels), notes


def _nvidia(ref: DeviceRef) -> tuple[HardwareSpec, DetectionResult]:
    from .nvidia import probe_nvidia
    from .tables import gpu_spec, match_gpu

    probe = probe_nvidia()
    notes = list(probe.notes)
    gpu = next((g for g in probe.gpus if g.index == ref.index), None)
    name = gpu.name if gpu is not None else ref.name_hint
    if name is None:
        listed = ", ".join(f"cuda:{g.index} ({g.name})" for g in probe.gpus) or "no NVIDIA GPU"
        raise HardwareError(
            f"{ref.described_as or f'cuda:{ref.index}'} is not available: {listed} found"
            f"{' (' + '; '.join(notes) + ')' if notes else ''}. Available devices: {', '.join(available_devices())}"
        )
    row = match_gpu(name)
    if row is None:
        raise HardwareError(
            f"{name!r} has no row in neural-cost's GPU table; pass HardwareSpec(...) with its datasheet figures, "
            f"or calibrate(device={ref.described_as or 'cuda'!r}) through a framework that runs on it"
        )
    spec = gpu_spec(row)
    sources = {f"peak_flops[{dtype}]": spec.source for dtype in spec.peak_flops_by_dtype or {}}
    sources["memory_bandwidth"] = spec.source
    details: dict[str, Any] = {"table_row": row.key}
    if gpu is not None:
        details.update(
            {"index": gpu.index, "uuid": gpu.uuid, "probe": gpu.source, "memory_total_bytes": gpu.memory_total_bytes}
        )
        if gpu.memory_total_bytes:
            spec = HardwareSpec(
                spec.name,
                spec.peak_flops,
                spec.memory_bandwidth,
                spec.kind,
                spec.peak_flops_by_dtype,
                gpu.memory_total_bytes,
                spec.source,
            )
            sources["memory_capacity"] = f"{gpu.source}: memory total {format_si(gpu.memory_total_bytes, 'B')}"
    else:
        notes.append(f"named by the framework as {name!r}; not seen by NVML or nvidia-smi")
        sources["memory_capacity"] = spec.source
    from .levels import gpu_levels

    total = gpu.memory_total_bytes if gpu is not None else None
    levels, level_notes = gpu_levels(row, total, f"{gpu.source}: memory total" if gpu is not None else "")
    spec = dataclasses.replace(spec, memory_levels=levels)
    notes += level_notes
    spec = _with_nvlink(spec, row.key, sources, notes)
    return spec, DetectionResult(f"cuda:{ref.index}", "gpu", spec.name, sources, tuple(notes), details)


def _with_nvlink(spec: HardwareSpec, gpu_key: str, sources: dict[str, str], notes: list[str]) -> HardwareSpec:
    """The NVLink generation links.toml lists for this chip row, as the spec's interconnect (if any)."""
    from .links import gpu_link

    try:
        row = gpu_link(gpu_key)
    except HardwareError as exc:  # a broken link table costs the interconnect, never the detection
        notes.append(f"no interconnect attached: {exc}")
        return spec
    if row is None:
        return spec
    link = row.interconnect()
    sources["interconnects"] = link.source
    notes.append(
        f"interconnect: {link.name}, {format_si(link.bandwidth, 'B/s')} per direction, from the link table for this "
        f"chip; whether this GPU's peers are reached over NVLink (and over how many links) was not checked"
    )
    return dataclasses.replace(spec, interconnects=(link,))


def _apple_gpu(ref: DeviceRef) -> tuple[HardwareSpec, DetectionResult]:
    from .apple import probe_apple
    from .tables import apple_gpu_spec, match_apple_gpu

    probe = probe_apple()
    if probe.sysctl is None or not probe.sysctl.brand:
        raise HardwareError(
            f"mps: no Apple Silicon chip found ({'; '.join(probe.notes) or 'not macOS'}). "
            f"Available devices: {', '.join(available_devices())}"
        )
    row = match_apple_gpu(probe.sysctl.brand, probe.gpu_cores)
    if row is None:
        raise HardwareError(f"{probe.sysctl.brand} ({probe.gpu_cores} GPU cores) has no row in the Apple GPU table")
    spec = apple_gpu_spec(row)
    sources = {"peak_flops[float32]": spec.source, "memory_bandwidth": spec.source}
    return spec, DetectionResult("mps", "gpu", spec.name, sources, probe.notes, {"gpu_cores": probe.gpu_cores})


def _apple_cpu(ref: DeviceRef) -> tuple[HardwareSpec, DetectionResult]:
    """Apple Silicon CPU: P·clock_P·32 + E·clock_E·16 FP32 FLOPs/s from the per-generation table
    (Apple Silicon has no clock sysctl, so the clocks come from the table, never a guess)."""
    from .apple import probe_apple
    from .tables import apple_cpu_row, match_apple_gpu

    probe = probe_apple()
    info = probe.sysctl
    if info is None or not info.brand or info.performance_cores is None or info.efficiency_cores is None:
        raise HardwareError(
            f"cpu: this Mac's core counts could not be read ({'; '.join(probe.notes) or 'no sysctl output'}); "
            f"pass HardwareSpec(...) with its peaks"
        )
    row = apple_cpu_row(info.brand, info.performance_cores, info.efficiency_cores)
    peak = row.peak_fp32_flops if row is not None else None
    if row is None or peak is None:
        raise HardwareError(
            f"{info.brand} ({info.performance_cores}P+{info.efficiency_cores}E): chips.toml has no confirmed core "
            f"clocks for it, so no CPU peak; measure one with calibrate() or pass HardwareSpec(...)"
        )
    gpu = match_apple_gpu(info.brand, probe.gpu_cores)
    if gpu is None:
        raise HardwareError(f"{info.brand}: no unified-memory bandwidth in chips.toml; pass HardwareSpec(...)")
    formula = (
        f"formula: {row.p_cores} P cores × {(row.p_clock_hz or 0) / 1e9:.4g} GHz × {row.p_flops_per_cycle} + "
        f"{row.e_cores} E cores × {(row.e_clock_hz or 0) / 1e9:.4g} GHz × {row.e_flops_per_cycle} FP32 FLOP/cycle "
        f"(NEON; table: {row.source})"
    )
    from .levels import unified_memory_level

    unified = unified_memory_level(info.memory_bytes, info.logical_cpus, gpu.memory_bandwidth, f"table: {gpu.source}")
    spec = HardwareSpec(
        name=row.name,
        peak_flops=peak,
        memory_bandwidth=gpu.memory_bandwidth,
        kind="cpu",
        peak_flops_by_dtype={"float32": peak},
        memory_capacity=info.memory_bytes,
        source=formula,
        memory_levels=(unified,) if unified is not None else (),
    )
    sources = {
        "peak_flops[float32]": formula,
        "memory_bandwidth": f"table: {gpu.source} (unified memory, shared with the GPU)",
        "memory_capacity": "sysctl hw.memsize",
    }
    return spec, DetectionResult("cpu", "cpu", spec.name, sources, probe.notes, {"table_row": row.key})
