"""Calibration: measure what a device achieves — a large matmul per dtype, a large copy.

Inputs are random, never constants (a backend may store a constant array as one broadcast
value and time nothing); buffers are warmed first; every probe's result is checked
against a reference computed another way, and a probe that returns a wrong result is
rejected. The result compares each measurement with the table or formula figure and
warns when a measurement exceeds it: then one of the two is wrong.

This module measures the host with numpy (float32 and float64). A framework's adapter
measures the devices and dtypes it owns — ``JaxAdapter().calibrate()`` — through the same
engine, ``calibrate_with``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..core.attrs import FrozenAttrs
from ..core.dtypes import canonical_dtype
from ..core.errors import HardwareError, MeasurementError
from ..core.units import format_percent, format_si
from .spec import HardwareSpec

DEFAULT_MATMUL_SIZE = 2048
_SAMPLE_ROWS = 8
#: Largest error allowed, relative to the largest sampled value: rounding of each dtype, with room.
RELATIVE_TOLERANCE = {"float64": 1e-10, "float32": 1e-3, "tfloat32": 1e-2, "bfloat16": 5e-2, "float16": 2e-2}


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One verified probe: what it did, every timed sample, and the rate of the best one."""

    probe: str  # "matmul" | "conv" | "copy"
    dtype: str
    size: int  # matmul: n of an n×n·n×n product; conv: the batch; copy: bytes copied
    work: int  # matmul: 2·n³ FLOPs; conv: 2·output elements·C_in·kh·kw; copy: bytes read + written
    samples_seconds: tuple[float, ...]
    verified: str

    @property
    def best_seconds(self) -> float:
        return min(self.samples_seconds)

    @property
    def rate(self) -> float:
        """FLOP/s (matmul) or bytes/s (copy) of the best sample."""
        return self.work / self.best_seconds

    def to_dict(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "dtype": self.dtype,
            "size": self.size,
            "work": self.work,
            "samples_seconds": list(self.samples_seconds),
            "best_seconds": self.best_seconds,
            "rate": self.rate,
            "verified": self.verified,
        }


@dataclass(frozen=True, slots=True)
class CalibrationResult:
    """Measured rates beside the table/formula figures they are compared with."""

    device: str
    framework: str
    matmuls: tuple[ProbeResult, ...]
    copy: ProbeResult
    reference: HardwareSpec | None
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    ratios: FrozenAttrs = field(default_factory=FrozenAttrs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "framework": self.framework,
            "matmuls": [p.to_dict() for p in self.matmuls],
            "copy": self.copy.to_dict(),
            "reference": self.reference.to_dict() if self.reference is not None else None,
            "ratios": dict(self.ratios),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        }

    def render(self) -> str:
        lines = [f"calibration on {self.device} ({self.framework}):"]
        for probe in (*self.matmuls, self.copy):
            unit = "B/s" if probe.probe == "copy" else "FLOP/s"
            key = "memory_bandwidth" if probe.probe == "copy" else probe.dtype
            what = f"{probe.size}² matmul" if probe.probe == "matmul" else f"copy of {format_si(probe.size, 'B')}"
            if self.reference is not None and key in self.ratios:
                table = self.reference.memory_bandwidth if probe.probe == "copy" else self.reference.peak(probe.dtype)
                versus = f" = {format_percent(self.ratios[key])} of {format_si(table, unit)}"
            elif self.reference is not None:
                versus = " (no reference figure)"
            else:
                versus = ""
            best = f"best of {len(probe.samples_seconds)}"
            lines.append(f"  {key:17s} {format_si(probe.rate, unit)}{versus}  [{what}, {best}; {probe.verified}]")
        lines += [f"  WARNING: {w}" for w in self.warnings]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


MatmulProbe = Callable[[str, int, int], ProbeResult]
CopyProbe = Callable[[int, int], ProbeResult]


def refuse_constant(array: Any, what: str) -> None:
    """A probe's input must vary: a backend may store a constant array as one broadcast value."""
    values = np.asarray(array, dtype=np.float64) if not isinstance(array, np.ndarray) else array
    if values.size and float(np.min(values)) == float(np.max(values)):
        raise MeasurementError(
            f"calibration: the {what} input is constant ({float(np.min(values))!r} everywhere); a backend may "
            f"store it as a single broadcast value and time nothing — probes need random data"
        )


def check_matmul(result: Any, a: Any, b: Any, dtype: str, rows: Sequence[int]) -> str:
    """Compare sampled rows of ``result`` with a float64 product of the same inputs."""
    a64 = np.asarray(a, dtype=np.float64)
    b64 = np.asarray(b, dtype=np.float64)
    got = np.asarray(result, dtype=np.float64)
    if got.shape != (a64.shape[0], b64.shape[1]):
        raise MeasurementError(
            f"calibration: the {dtype} matmul probe returned shape {got.shape}, not {(a64.shape[0], b64.shape[1])}; "
            f"it is rejected"
        )
    reference = a64[list(rows)] @ b64
    scale = max(1.0, float(np.max(np.abs(reference))))
    error = float(np.max(np.abs(got[list(rows)] - reference)))
    if not error <= RELATIVE_TOLERANCE.get(dtype, 5e-2) * scale:  # also rejects NaN
        raise MeasurementError(
            f"calibration: the {dtype} matmul probe returned a wrong product (largest error {error:.3g} on "
            f"{len(rows)} sampled rows whose values reach {scale:.3g}); its time is not a FLOP rate, so it is rejected"
        )
    return f"{len(rows)} rows checked against a float64 product (max error {error:.2g})"


def _random(shape: tuple[int, ...], dtype: str, rng: np.random.Generator) -> NDArray[Any]:
    return rng.standard_normal(shape).astype(dtype)


def numpy_matmul_probe(
    matmul: Callable[[Any, Any], Any] = np.matmul,
    fill: Callable[[tuple[int, ...], str, np.random.Generator], NDArray[Any]] = _random,
) -> MatmulProbe:
    """A host matmul probe through numpy (float32, float64); ``matmul``/``fill`` injectable for tests."""

    def probe(dtype: str, n: int, repeats: int) -> ProbeResult:
        if dtype not in ("float32", "float64"):
            raise HardwareError(
                f"calibrate: numpy has no fast {dtype} matmul on the host (and no bfloat16 at all); measure it "
                f"through a framework: JaxAdapter().calibrate(dtypes=({dtype!r},))"
            )
        rng = np.random.default_rng(0)
        a, b = fill((n, n), dtype, rng), fill((n, n), dtype, rng)
        refuse_constant(a, f"{dtype} matmul")
        refuse_constant(b, f"{dtype} matmul")
        rows = sorted({int(r) for r in rng.integers(0, n, _SAMPLE_ROWS)})
        check_matmul(matmul(a, b), a, b, dtype, rows)  # warm-up, and reject a wrong probe before timing
        samples = []
        result = None
        for _ in range(repeats):
            start = time.perf_counter()
            result = matmul(a, b)
            samples.append(time.perf_counter() - start)
        verified = check_matmul(result, a, b, dtype, rows)
        return ProbeResult("matmul", dtype, n, 2 * n**3, tuple(samples), verified)

    return probe


def numpy_copy_probe() -> CopyProbe:
    """The host's all-core copy probe (``measure_dram_bandwidth``, at least 9 samples) as a ProbeResult."""

    def probe(nbytes: int, repeats: int) -> ProbeResult:
        from .dram import MIN_SAMPLES, measure_dram_bandwidth

        measured = measure_dram_bandwidth(nbytes or None, max(repeats, MIN_SAMPLES))
        return ProbeResult(
            "copy",
            "float32",
            measured.nbytes,
            measured.bytes_moved,
            measured.samples_seconds,
            f"all cores; sampled after every copy, whole buffer at the end ({measured.size_source})",
        )

    return probe


def calibrate_with(
    *,
    device: str,
    kind: str,
    name: str,
    framework: str,
    matmul: MatmulProbe,
    copy: CopyProbe,
    dtypes: Sequence[str],
    size: int,
    copy_bytes: int,
    repeats: int,
    reference: HardwareSpec | None,
    notes: Sequence[str] = (),
    compare_bandwidth: bool = True,
) -> tuple[HardwareSpec, CalibrationResult]:
    """Run the probes, compare with ``reference``, and build the calibrated spec."""
    if not dtypes:
        raise HardwareError("calibrate: dtypes is empty; name at least one, e.g. ('float32',)")
    names = [canonical_dtype(d, "calibrate dtypes") for d in dtypes]
    for label, value, minimum in (("size", size, 16), ("repeats", repeats, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise HardwareError(f"calibrate: {label}={value!r} must be an integer >= {minimum}")
    matmuls = tuple(matmul(dtype, size, repeats) for dtype in names)
    copied = copy(copy_bytes, repeats)
    ratios: dict[str, float] = {}
    warnings = []
    if reference is not None:
        for probe in matmuls:
            if reference.has_peak(probe.dtype) or reference.peak_flops_by_dtype is None:
                ratios[probe.dtype] = probe.rate / reference.peak(probe.dtype)
        if compare_bandwidth:
            ratios["memory_bandwidth"] = copied.rate / reference.memory_bandwidth
        for key, ratio in ratios.items():
            if ratio > 1:
                warnings.append(
                    f"measured {key} is {format_percent(ratio)} of the reference ({reference.source}): a measurement "
                    f"cannot beat a true peak, so the reference or the probe is wrong"
                )
        if not compare_bandwidth:
            notes = (
                *notes,
                "memory bandwidth has no independent reference on a CPU: the copy probe is the measurement",
            )
    peaks = {p.dtype: p.rate for p in matmuls}
    fp32 = peaks.get("float32", max(peaks.values()))
    spec = HardwareSpec(
        name=f"{name} (calibrated)",
        peak_flops=fp32,
        memory_bandwidth=copied.rate,
        kind=kind,
        peak_flops_by_dtype=peaks,
        memory_capacity=reference.memory_capacity if reference is not None else None,
        source=(
            f"calibrated with {framework}: "
            + ", ".join(f"{p.size}² {p.dtype} matmul" for p in matmuls)
            + f", {format_si(copied.size, 'B')} copy, best of {repeats}"
        ),
    )
    result = CalibrationResult(
        device, framework, matmuls, copied, reference, tuple(warnings), tuple(notes), FrozenAttrs(ratios)
    )
    return spec, result


def calibrate(
    device: Any = None,
    dtypes: Sequence[str] = ("float32",),
    size: int = DEFAULT_MATMUL_SIZE,
    copy_bytes: int | None = None,
    repeats: int = 3,
    *,
    matmul: MatmulProbe | None = None,
) -> tuple[HardwareSpec, CalibrationResult]:
    """Measure the host CPU with numpy: a ``size``² matmul per dtype and a large copy.

    Other devices and dtypes (bfloat16, GPUs) are measured through the framework that owns
    them: ``JaxAdapter().calibrate(...)``. ``copy_bytes`` defaults to 4 × the last-level
    cache (at least 64 MiB, at most 1 GiB).
    """
    from .detect import detect_hardware, resolve_device

    ref = resolve_device(device)
    if ref.kind != "cpu":
        raise HardwareError(
            f"calibrate({ref.described_as!r}): numpy only runs on the host CPU; calibrate a {ref.kind} through the "
            f"framework that owns it, e.g. JaxAdapter().calibrate()"
        )
    notes = []
    try:
        # the formula's peaks (not a cached calibration's); its bandwidth is unused
        reference, _ = detect_hardware(None, memory_bandwidth=1.0, calibrated=False)
        reference = HardwareSpec(
            reference.name,
            reference.peak_flops,
            reference.memory_bandwidth,
            "cpu",
            reference.peak_flops_by_dtype,
            reference.memory_capacity,
            reference.source.split(";")[0],
        )
    except HardwareError as error:
        reference = None
        notes.append(f"no formula reference for this CPU: {error}")
    spec, result = calibrate_with(
        device="cpu",
        kind="cpu",
        name=reference.name if reference is not None else "host CPU",
        framework="numpy",
        matmul=matmul or numpy_matmul_probe(),
        copy=numpy_copy_probe(),
        dtypes=dtypes,
        size=size,
        copy_bytes=copy_bytes or 0,
        repeats=repeats,
        reference=reference,
        notes=notes,
        compare_bandwidth=False,
    )
    return spec, result
