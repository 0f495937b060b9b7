"""HardwareSpec: the peaks a roofline is scored against, and where they came from."""

from __future__ import annotations

import itertools
import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.attrs import FrozenAttrs
from ..core.dtypes import canonical_dtype
from ..core.errors import HardwareError
from .interconnect import Interconnect

#: A source that says its number was measured (``HardwareSpec.measured``).
_MEASURED = re.compile(r"\bmeasured\b|\bcalibrat")

DEVICE_KINDS = ("cpu", "gpu", "tpu", "npu", "unknown")


def _positive(value: Any, field: str) -> float:
    # numbers.Real admits numpy scalars (np.float32, np.int64), which are numbers too.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise HardwareError(f"{field}={value!r} must be a positive number")
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        raise HardwareError(f"{field}={value!r} must be a positive, finite number") from None
    if not math.isfinite(number) or number <= 0:
        raise HardwareError(f"{field}={value!r} must be a positive, finite number")
    return number


@dataclass(frozen=True, slots=True)
class MemoryLevel:
    """One level of the memory hierarchy: its name, one instance's capacity, and its bandwidth.

    ``capacity_bytes`` is one instance: a per-core L2 of 1 MiB is 1 MiB even on a 64-core
    chip (``instances`` says how many there are), so a kernel's per-core footprint is
    compared with it. ``per_core`` is True when an instance serves one physical core (its
    SMT siblings included); ``shared_by`` counts the logical CPUs that share one instance.
    ``bandwidth`` (bytes/s, all threads together) is None until measured or read from a
    table; ``source`` cites the capacity and ``bandwidth_source`` the bandwidth.
    """

    name: str
    capacity_bytes: int
    bandwidth: float | None = None
    source: str = "user-supplied"
    per_core: bool = False
    shared_by: int = 1
    instances: int = 1
    bandwidth_source: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise HardwareError(f"MemoryLevel.name={self.name!r} must be a non-empty string")
        for field in ("capacity_bytes", "shared_by", "instances"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise HardwareError(f"MemoryLevel {self.name!r} {field}={value!r} must be a positive int")
        if self.bandwidth is not None:
            object.__setattr__(self, "bandwidth", _positive(self.bandwidth, f"MemoryLevel {self.name!r} bandwidth"))
        if not isinstance(self.per_core, bool):
            raise HardwareError(f"MemoryLevel {self.name!r} per_core={self.per_core!r} must be True or False")
        if not isinstance(self.source, str) or not self.source:
            raise HardwareError(f"MemoryLevel {self.name!r} source={self.source!r} must be a non-empty string")
        if self.bandwidth_source is not None and (
            not isinstance(self.bandwidth_source, str) or not self.bandwidth_source
        ):
            raise HardwareError(f"MemoryLevel {self.name!r} bandwidth_source must be a non-empty string or None")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "capacity_bytes": self.capacity_bytes,
            "bandwidth": self.bandwidth,
            "source": self.source,
            "per_core": self.per_core,
            "shared_by": self.shared_by,
            "instances": self.instances,
            "bandwidth_source": self.bandwidth_source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryLevel:
        if not isinstance(data, Mapping):
            raise HardwareError(f"a memory level must be an object, not {data!r}")
        return cls(
            name=data.get("name"),  # type: ignore[arg-type]  # checked in __post_init__
            capacity_bytes=data.get("capacity_bytes"),  # type: ignore[arg-type]
            bandwidth=data.get("bandwidth"),
            source=data.get("source", "user-supplied"),
            per_core=data.get("per_core", False),
            shared_by=data.get("shared_by", 1),
            instances=data.get("instances", 1),
            bandwidth_source=data.get("bandwidth_source"),
        )


def _memory_levels(levels: Any, spec_name: str) -> tuple[MemoryLevel, ...]:
    """Levels nearest first: no name twice, and no level smaller than the one before it
    (the bound scores a kernel at the first level that holds its footprint)."""
    if isinstance(levels, (str, bytes, Mapping)) or not hasattr(levels, "__iter__"):
        raise HardwareError(f"HardwareSpec {spec_name!r} memory_levels must be a sequence of MemoryLevel")
    result = tuple(levels)
    for level in result:
        if not isinstance(level, MemoryLevel):
            raise HardwareError(f"HardwareSpec {spec_name!r} memory_levels holds {level!r}, not a MemoryLevel")
    names = [level.name for level in result]
    if len(set(names)) != len(names):
        raise HardwareError(f"HardwareSpec {spec_name!r} memory_levels names a level twice: {names}")
    for near, far in itertools.pairwise(result):
        if far.capacity_bytes < near.capacity_bytes:
            raise HardwareError(
                f"HardwareSpec {spec_name!r} memory_levels must run nearest first: {far.name} "
                f"({far.capacity_bytes} B) is smaller than {near.name} ({near.capacity_bytes} B) before it"
            )
    return result


@dataclass(frozen=True, slots=True)
class HardwareSpec:
    """Peak compute (FLOP/s, per dtype where known) and memory bandwidth (bytes/s) of a device.

    ``peak_flops`` is the fallback for any dtype without its own entry in
    ``peak_flops_by_dtype``. ``kind`` is the device kind (cpu, gpu, tpu, npu, unknown);
    ``source`` says where the numbers came from ("user-supplied", a table row, a formula,
    a measurement) so a report can cite it. ``sources`` optionally cites each number on its
    own, keyed ``"peak_flops[float32]"`` or ``"memory_bandwidth"``; a number without an
    entry is cited by ``source`` (a dtype without a peak of its own: see ``source_of``).
    ``memory_levels`` is the hierarchy, nearest first and DRAM/HBM last (empty where
    unknown); ``memory_bandwidth`` stays the DRAM figure.
    """

    name: str
    peak_flops: float
    memory_bandwidth: float
    kind: str = "unknown"
    peak_flops_by_dtype: Mapping[str, float] | None = None
    memory_capacity: int | None = None
    source: str = "user-supplied"
    sources: Mapping[str, str] | None = None
    memory_levels: tuple[MemoryLevel, ...] = ()
    #: The links between devices (``hardware/interconnect.py``), fastest first; empty for one device.
    interconnects: tuple[Interconnect, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise HardwareError(f"HardwareSpec.name={self.name!r} must be a non-empty string")
        object.__setattr__(self, "peak_flops", _positive(self.peak_flops, f"HardwareSpec {self.name!r} peak_flops"))
        object.__setattr__(
            self, "memory_bandwidth", _positive(self.memory_bandwidth, f"HardwareSpec {self.name!r} memory_bandwidth")
        )
        if self.kind not in DEVICE_KINDS:
            raise HardwareError(f"HardwareSpec {self.name!r} kind={self.kind!r}; use one of {', '.join(DEVICE_KINDS)}")
        if self.peak_flops_by_dtype is not None:
            if not isinstance(self.peak_flops_by_dtype, Mapping):
                raise HardwareError(f"HardwareSpec {self.name!r} peak_flops_by_dtype must map dtype names to FLOP/s")
            peaks: dict[str, float] = {}
            spelled: dict[str, Any] = {}
            for d, v in self.peak_flops_by_dtype.items():
                dtype = canonical_dtype(d, f"HardwareSpec {self.name!r} peak_flops_by_dtype key")
                if dtype in peaks:  # "bf16" and "bfloat16": which peak was meant is unknowable
                    raise HardwareError(
                        f"HardwareSpec {self.name!r} peak_flops_by_dtype names {dtype} twice "
                        f"({spelled[dtype]!r} and {d!r}); give one peak per dtype"
                    )
                peaks[dtype] = _positive(v, f"HardwareSpec {self.name!r} peak_flops_by_dtype[{d!r}]")
                spelled[dtype] = d
            object.__setattr__(self, "peak_flops_by_dtype", FrozenAttrs(dict(sorted(peaks.items()))))
        if self.memory_capacity is not None and (
            isinstance(self.memory_capacity, bool)
            or not isinstance(self.memory_capacity, int)
            or self.memory_capacity <= 0
        ):
            raise HardwareError(
                f"HardwareSpec {self.name!r} memory_capacity={self.memory_capacity!r} must be a positive int (bytes)"
            )
        if not isinstance(self.source, str) or not self.source:
            raise HardwareError(f"HardwareSpec {self.name!r} source={self.source!r} must be a non-empty string")
        if self.sources is not None:
            if not isinstance(self.sources, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) and v for k, v in self.sources.items()
            ):
                raise HardwareError(
                    f"HardwareSpec {self.name!r} sources must map names like 'memory_bandwidth' to non-empty strings"
                )
            object.__setattr__(self, "sources", FrozenAttrs(dict(sorted(self.sources.items()))) or None)
        object.__setattr__(self, "memory_levels", _memory_levels(self.memory_levels, self.name))
        links = tuple(self.interconnects)
        if any(not isinstance(link, Interconnect) for link in links):
            raise HardwareError(f"HardwareSpec {self.name!r} interconnects must be Interconnect records")
        object.__setattr__(self, "interconnects", links)

    def source_of(self, number: str) -> str:
        """Where ``number`` (``"memory_bandwidth"``, ``"peak_flops[float32]"``, ``"bandwidth[L3]"``) came from.
        A dtype without a peak of its own is scored at ``peak_flops``, so it cites that number's source:
        ``sources["peak_flops"]``, else that of the dtype whose own peak the fallback is
        (``fallback_dtype``); the spec-wide ``source``, which may cite the bandwidth too, only
        when neither is given. A memory level's bandwidth cites its own ``bandwidth_source``, else the
        memory bandwidth's."""
        if number.startswith("bandwidth[") and number.endswith("]"):
            level = next((m for m in self.memory_levels if m.name == number[10:-1] and m.bandwidth_source), None)
            return level.bandwidth_source if level and level.bandwidth_source else self.source_of("memory_bandwidth")
        if not self.sources:
            return self.source
        if number in self.sources:
            return self.sources[number]
        own = self.peak_flops_by_dtype or {}
        if number.startswith("peak_flops[") and number.endswith("]") and number[11:-1] not in own:
            twin = self.fallback_dtype()
            return self.sources.get("peak_flops") or self.sources.get(f"peak_flops[{twin}]") or self.source
        return self.source

    def measured(self, number: str) -> bool:
        """Whether ``source_of(number)`` says the number was measured (or calibrated), not taken from a formula,
        a table or the user."""
        return _MEASURED.search(self.source_of(number)) is not None

    def fallback_dtype(self) -> str | None:
        """The dtype whose own peak ``peak_flops`` (the fallback) is, float32 first; None when
        no own peak equals it. A host spec's fallback is its float32 peak."""
        twins = [d for d, peak in (self.peak_flops_by_dtype or {}).items() if peak == self.peak_flops]
        return "float32" if "float32" in twins else (twins[0] if twins else None)

    def has_peak(self, dtype: str) -> bool:
        """True when ``dtype`` has its own peak (not the ``peak_flops`` fallback)."""
        return self.peak_flops_by_dtype is not None and canonical_dtype(dtype) in self.peak_flops_by_dtype

    def peak(self, dtype: str | None = None) -> float:
        """Peak FLOP/s for ``dtype``; ``peak_flops`` when the dtype has no entry of its own."""
        if dtype is None or self.peak_flops_by_dtype is None:
            return self.peak_flops
        return float(self.peak_flops_by_dtype.get(canonical_dtype(dtype), self.peak_flops))

    def ridge_point(self, dtype: str | None = None) -> float:
        """Arithmetic intensity (FLOP/byte) where compute and memory time are equal."""
        return self.peak(dtype) / self.memory_bandwidth

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "peak_flops": self.peak_flops,
            "peak_flops_by_dtype": dict(self.peak_flops_by_dtype) if self.peak_flops_by_dtype is not None else None,
            "memory_bandwidth": self.memory_bandwidth,
            "memory_capacity": self.memory_capacity,
            "source": self.source,
            **({"sources": dict(self.sources)} if self.sources else {}),
            # absent when empty, so reports written before levels existed read back byte for byte
            **({"memory_levels": [level.to_dict() for level in self.memory_levels]} if self.memory_levels else {}),
            **({"interconnects": [link.to_dict() for link in self.interconnects]} if self.interconnects else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HardwareSpec:
        return cls(
            name=data["name"],
            peak_flops=data["peak_flops"],
            memory_bandwidth=data["memory_bandwidth"],
            kind=data.get("kind", "unknown"),
            peak_flops_by_dtype=data.get("peak_flops_by_dtype"),
            memory_capacity=data.get("memory_capacity"),
            source=data.get("source", "user-supplied"),
            sources=data.get("sources"),
            memory_levels=tuple(MemoryLevel.from_dict(level) for level in data.get("memory_levels") or ()),
            interconnects=tuple(Interconnect.from_dict(link) for link in data.get("interconnects") or ()),
        )
