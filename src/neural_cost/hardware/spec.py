"""HardwareSpec: the peaks a roofline is scored against, and where they came from."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.attrs import FrozenAttrs
from ..core.dtypes import canonical_dtype
from ..core.errors import HardwareError

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
class HardwareSpec:
    """Peak compute (FLOP/s, per dtype where known) and memory bandwidth (bytes/s) of a device.

    ``peak_flops`` is the fallback for any dtype without its own entry in
    ``peak_flops_by_dtype``. ``kind`` is the device kind (cpu, gpu, tpu, npu, unknown);
    ``source`` says where the numbers came from ("user-supplied", a table row, a formula,
    a measurement) so a report can cite it. ``sources`` optionally cites each number on its
    own, keyed ``"peak_flops[float32]"`` or ``"memory_bandwidth"``; a number without an
    entry is cited by ``source``.
    """

    name: str
    peak_flops: float
    memory_bandwidth: float
    kind: str = "unknown"
    peak_flops_by_dtype: Mapping[str, float] | None = None
    memory_capacity: int | None = None
    source: str = "user-supplied"
    sources: Mapping[str, str] | None = None

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

    def source_of(self, number: str) -> str:
        """Where ``number`` (``"memory_bandwidth"``, ``"peak_flops[float32]"``) came from."""
        return self.sources.get(number, self.source) if self.sources else self.source

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
        )
