"""A calibrated model of how long a kernel takes on this device: fitted curves per kernel class.

The roofline gives each kernel a compute time (its FLOPs at the dtype's peak) and a memory time (its traffic at the
bandwidth of the level its footprint fits, ``analysis/kernels.py``). Real kernels reach neither: a small one pays a
fixed overhead, a mid-sized matmul runs at a fraction of the peak that grows with its size. So per *kernel class*
(matmul, conv, elementwise, norm..., ``analysis/expected.py`` names them) the model holds two curves measured on this
device:

    expected seconds per execution = max(C(compute seconds), M(memory seconds))

``C`` and ``M`` are monotone piecewise-linear curves in log-log space — measured time against roofline time — fitted
by isotonic regression over the calibration's micro-benchmarks, each point on the side (compute or memory) its
roofline says dominates. Below its first knot (the median of a few smallest points) a curve falls with the work down
to the class's quickest point (``Curve.scaled``, ``KernelCalibration.floors``; read flat, a depthwise class put its
first knot's 2.4 ms on layers XLA ran in 0.9–1.9 ms). Above the largest, time grows by the last segment's marginal
cost (``Curve._beyond``; four or five points over a 2× span make two knots, ``kernel_curve.SPLIT_SPAN``, so a slope,
not the peak, goes on). Each curve is monotone in its argument, and the max of the two is monotone in both: more FLOPs
or more bytes never predict less time within a class. A class with points on one side only uses that curve for both.
No neural network, nothing hidden: the curves are printed by ``neural-cost calibrate --kernels`` and saved as numbers.

The fit is k-fold cross-validated: median and p90 of |predicted − measured| / measured on unseen points. A pointwise
class (``main_memory_candidate``) keeps whichever memory axis predicts its own held-out points better: the level's
bandwidth, or main memory's whatever level holds the kernel (``ClassModel.memory_axis``, ``_axis``).

A ``KernelCalibration`` holds the curves with the spec their roofline times were computed on (the calibrating
machine's peaks and levels: a file brought from another machine predicts for that machine), the machine key, the
framework and its version, the date, and the fit quality — and, for a loop's kernel classes, a second pair of curves
fitted on their points' usual times (the median of their programs' passes, not the fastest:
``KernelCalibration.usual_state``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.errors import HardwareError
from ._isotonic import median as _median
from ._isotonic import percentile as _percentile
from ._isotonic import relative_error
from .host_cache import write_json
from .kernel_curve import POINTS_PER_KNOT, Curve, fit_curve
from .spec import HardwareSpec

SCHEMA = 1
FOLDS = 5
AXES = ("level", "main")


@dataclass(frozen=True, slots=True)
class Point:
    """One measured kernel execution: its class, roofline times on the spec, and measured time."""

    kernel_class: str
    compute_seconds: float
    memory_seconds: float
    measured_seconds: float
    name: str = ""
    #: A loop's kernel: its time at the median of its program's passes, not their smallest (``usual_state``).
    usual_seconds: float | None = None
    #: A pointwise kernel's memory time at main memory's bandwidth, whatever level holds it (``main_memory_candidate``).
    main_memory_seconds: float | None = None
    #: A recurrent layer's cost per call beside its steps' time (``wall_points.per_call``), and its weights' bytes.
    call_seconds: float | None = None
    call_bytes: int | None = None

    @property
    def side(self) -> str:
        return "compute" if self.compute_seconds >= self.memory_seconds else "memory"

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.kernel_class,
            "compute_seconds": self.compute_seconds,
            "memory_seconds": self.memory_seconds,
            "measured_seconds": self.measured_seconds,
            "name": self.name,
            **({} if self.usual_seconds is None else {"usual_seconds": self.usual_seconds}),
            **({} if self.main_memory_seconds is None else {"main_memory_seconds": self.main_memory_seconds}),
            **({} if self.call_seconds is None else {"call_seconds": self.call_seconds, "call_bytes": self.call_bytes}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Point:
        usual, main, call = (data.get(key) for key in ("usual_seconds", "main_memory_seconds", "call_seconds"))
        compute, memory, measured = (float(data[k]) for k in ("compute_seconds", "memory_seconds", "measured_seconds"))
        usual, main, call = (None if value is None else float(value) for value in (usual, main, call))
        size = None if data.get("call_bytes") is None else int(data["call_bytes"])
        return cls(str(data["class"]), compute, memory, measured, str(data.get("name", "")), usual, main, call, size)

    def on_main_memory(self) -> Point:
        """This point with its memory time at main memory's bandwidth, where it has one."""
        main = self.main_memory_seconds
        return self if main is None else replace(self, memory_seconds=main)


@dataclass(frozen=True, slots=True)
class ClassModel:
    """The two curves of one kernel class and how well they predicted unseen points."""

    name: str
    compute: Curve | None
    memory: Curve | None
    points: int
    #: Cross-validated |predicted − measured| / measured: median and 90th percentile (None: too few points).
    median_error: float | None = None
    p90_error: float | None = None
    #: Its memory curve's axis: "level" (a kernel's traffic at the bandwidth of the level its footprint fits) or
    #: "main" (at main memory's, whatever level holds it: ``main_memory_candidate``).
    memory_axis: str = "level"

    def __post_init__(self) -> None:
        if self.compute is None and self.memory is None:
            raise HardwareError(f"kernel class {self.name!r} has no curve")
        if self.memory_axis not in AXES:
            raise HardwareError(f"kernel class {self.name!r}: memory axis {self.memory_axis!r} is not one of {AXES}")

    def seconds(self, compute_seconds: float, memory_seconds: float, floor: float | None = None) -> float:
        """Expected seconds of one execution with these roofline times. ``floor``: the quickest
        point of this class the calibration measured (``KernelCalibration.floors``): below its
        first knot (the median of a few of its smallest points) a curve falls with the work down
        to it, where it is less than the knot's time. Without one, a two-curve class falls to its
        smaller first time and a one-curve class is flat there (a calibration without points)."""
        compute, memory = self.compute or self.memory, self.memory or self.compute
        assert compute is not None and memory is not None
        own = 10 ** min(compute.ys[0], memory.ys[0])
        if floor is None and (self.compute is None or self.memory is None):
            return max(compute(compute_seconds), memory(memory_seconds))
        lowest = own if floor is None else min(own, floor)
        return max(compute.scaled(compute_seconds, lowest), memory.scaled(memory_seconds, lowest))

    def to_dict(self) -> dict[str, Any]:
        return {
            "compute": self.compute.to_dict() if self.compute else None,
            "memory": self.memory.to_dict() if self.memory else None,
            "points": self.points,
            "median_error": self.median_error,
            "p90_error": self.p90_error,
            **({} if self.memory_axis == "level" else {"memory_axis": self.memory_axis}),
        }

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> ClassModel:
        return cls(
            name,
            Curve.from_dict(data["compute"]) if data.get("compute") else None,
            Curve.from_dict(data["memory"]) if data.get("memory") else None,
            int(data["points"]),
            data.get("median_error"),
            data.get("p90_error"),
            str(data.get("memory_axis", "level")),
        )


def main_memory_candidate(name: str) -> bool:
    """Whether a class's memory curve may be read at main memory's bandwidth (``ClassModel.memory_axis``):
    ``elementwise`` and the ``transcendental`` family, whose ops ran far under a cache's bandwidth on a 2-core VM
    (docs/expected.md, "A pointwise class's memory axis")."""
    return "@" not in name and (name == "elementwise" or (family(name) or name) == "transcendental")


def fit_class(name: str, points: Sequence[Point], axis: str = "level") -> ClassModel | None:
    """Both curves of one class from its points, or None when no side has enough; the compute side's knots by ratio
    (a bin's median time and median work can be two kernels': docs/expected.md). On main memory's axis (``axis``
    "main") the points' memory times are at its bandwidth (``Point.on_main_memory``) and the memory curve has a
    knot a decade at least: a pointwise class's few points spread over decades."""
    on = [p.on_main_memory() for p in points] if axis == "main" else points
    compute = fit_curve([(p.compute_seconds, p.measured_seconds) for p in on if p.side == "compute"], by_ratio=True)
    memory = fit_curve(
        ((p.memory_seconds, p.measured_seconds) for p in on if p.side == "memory"), per_decade=axis == "main"
    )
    if compute is None and memory is None:
        return None
    return ClassModel(name, compute, memory, len(points), memory_axis=axis)


def cross_validate(
    points: Sequence[Point], folds: int = FOLDS, axes: Mapping[str, str] | None = None
) -> dict[str, list[float]]:
    """Each point's relative error when predicted by a fit that did not see it, by class (k folds, point i in fold
    i mod k after ordering by class and roofline time), each class on its memory axis in ``axes`` (else "level")."""
    by_class: dict[str, list[Point]] = {}
    for point in points:
        by_class.setdefault(point.kernel_class, []).append(point)
    errors: dict[str, list[float]] = {}
    for name, members in by_class.items():
        axis = (axes or {}).get(name, "level")
        on_axis = [p.on_main_memory() for p in members] if axis == "main" else members
        ordered = sorted(on_axis, key=lambda p: max(p.compute_seconds, p.memory_seconds))
        found = []
        for fold in range(folds):
            held = [p for i, p in enumerate(ordered) if i % folds == fold]
            seen = [p for i, p in enumerate(ordered) if i % folds != fold]
            model = fit_class(name, seen, axis)  # on its axis already: ``on_main_memory`` changes them no more
            if model is None:
                continue
            floor = min((p.measured_seconds for p in seen if p.measured_seconds > 0), default=None)
            found += [
                relative_error(model.seconds(p.compute_seconds, p.memory_seconds, floor), p.measured_seconds)
                for p in held
            ]
        errors[name] = found
    return errors


def _axis(name: str, members: Sequence[Point]) -> str:
    """The memory axis of a class (``ClassModel.memory_axis``): "main" for a ``main_memory_candidate`` whose
    held-out points are predicted better so than on the level's bandwidth — a lower cross-validated median error
    and a 90th percentile no higher (TensorFlow's tanh: median 36.0% → 35.1% but p90 81% → 153%: "level") —, else
    "level". Measured, not assumed: where a pointwise op reaches a cache's bandwidth, the level's axis wins."""
    if not main_memory_candidate(name) or all(p.main_memory_seconds is None for p in members):
        return "level"
    own = [replace(p, kernel_class=name) for p in members]
    level, main = cross_validate(own).get(name) or [], cross_validate(own, axes={name: "main"}).get(name) or []
    better = level and main and _median(main) < _median(level)
    return "main" if better and _percentile(main, 0.9) <= _percentile(level, 0.9) else "level"


@dataclass(frozen=True, slots=True)
class KernelCalibration:
    """One device's kernel model for one framework (the module docstring)."""

    framework: str
    hardware: HardwareSpec
    classes: Mapping[str, ClassModel]
    machine: Mapping[str, Any] = field(default_factory=dict)
    versions: Mapping[str, str] = field(default_factory=dict)
    date: str = ""
    #: Cross-validated error over every point of every class (None: too few points).
    median_error: float | None = None
    p90_error: float | None = None
    points: tuple[Point, ...] = ()
    #: How the points were measured ("wall time of one-kernel programs", "profiled kernel time").
    method: str = ""
    notes: tuple[str, ...] = ()
    #: Seconds per byte a result on freshly mapped pages costs over a warm one (None: not measured).
    first_touch_seconds_per_byte: float | None = None
    #: Seconds per byte an operand its caches no longer hold adds to a kernel (None: not measured; main memory's rate).
    evicted_seconds_per_byte: float | None = None
    #: Whether every result is allocated per call (eager: faults predicted); False: compiled, measured only.
    fresh_results: bool = True
    #: Drift probes: a few programs of the framework's quick grid, their main kernel's class and
    #: time (the smallest of two passes) at calibration, re-run later to see how fast the machine is now.
    probes: Mapping[str, tuple[str, float]] = field(default_factory=dict)
    #: Loop classes' curves fitted on their points' ``usual_seconds`` (``usual_state``); {} before they were measured.
    usual_classes: Mapping[str, ClassModel] = field(default_factory=dict)
    #: The host's cross-core wake-up (``hardware.wake``, seconds) before the loop programs' fastest passes and
    #: before their usual ones (medians over them): the states of the fast and usual curves; None: not measured.
    loop_wakes: tuple[float, float] | None = None

    def usual_state(self) -> KernelCalibration | None:
        """This calibration with its loop kernels' curves and points at the median of their programs' passes instead
        of their smallest: the loops as the machine usually ran them while calibrated; None without such curves."""
        if not self.usual_classes:
            return None
        points = tuple(
            p if p.usual_seconds is None else replace(p, measured_seconds=p.usual_seconds) for p in self.points
        )
        return replace(self, classes={**self.classes, **self.usual_classes}, usual_classes={}, points=points)

    def floors(self) -> dict[str, float]:
        """Each class's quickest measured point (``ClassModel.seconds``' floor); none without points."""
        return self.by_class(lambda p: p.measured_seconds, min)

    def by_class(self, value: Callable[[Point], float], pick: Callable[[float, float], float]) -> dict[str, float]:
        """``pick`` (min, max) of ``value`` over each class's points and a family's members' (≤ 0, NaN: none),
        each point on that class's memory axis (``ClassModel.memory_axis``), as its curve was fitted."""
        found: dict[str, float] = {}
        for p in self.points:
            for name in (p.kernel_class, family(p.kernel_class)):
                model = self.classes.get(name) if name is not None else None
                main = model is not None and model.memory_axis == "main"
                if name is not None and (v := value(p.on_main_memory() if main else p)) > 0:  # NaN: no comparison
                    found[name] = pick(v, found.get(name, v))
        return found

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "framework": self.framework,
            "hardware": self.hardware.to_dict(),
            "classes": {name: model.to_dict() for name, model in sorted(self.classes.items())},
            "machine": dict(self.machine),
            "versions": dict(self.versions),
            "date": self.date,
            "median_error": self.median_error,
            "p90_error": self.p90_error,
            "method": self.method,
            "notes": list(self.notes),
            "first_touch_seconds_per_byte": self.first_touch_seconds_per_byte,
            "evicted_seconds_per_byte": self.evicted_seconds_per_byte,
            "fresh_results": self.fresh_results,
            "probes": {name: {"class": kind, "seconds": seconds} for name, (kind, seconds) in self.probes.items()},
            "usual_classes": {name: model.to_dict() for name, model in sorted(self.usual_classes.items())},
            "loop_wakes": None if (w := self.loop_wakes) is None else {"fastest": w[0], "usual": w[1]},
            "points": [p.to_dict() for p in self.points],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KernelCalibration:
        if not isinstance(data, Mapping) or data.get("schema") != SCHEMA:
            raise HardwareError(f"not a schema-{SCHEMA} kernel calibration (run neural-cost calibrate --kernels)")
        try:
            return cls(
                framework=str(data["framework"]),
                hardware=HardwareSpec.from_dict(data["hardware"]),
                classes={name: ClassModel.from_dict(name, model) for name, model in data["classes"].items()},
                machine=dict(data.get("machine") or {}),
                versions={str(k): str(v) for k, v in (data.get("versions") or {}).items()},
                date=str(data.get("date", "")),
                median_error=data.get("median_error"),
                p90_error=data.get("p90_error"),
                points=tuple(Point.from_dict(p) for p in data.get("points") or ()),
                method=str(data.get("method", "")),
                notes=tuple(data.get("notes") or ()),
                first_touch_seconds_per_byte=_finite_or_none(data, "first_touch_seconds_per_byte"),
                evicted_seconds_per_byte=_finite_or_none(data, "evicted_seconds_per_byte"),
                fresh_results=_boolean(data.get("fresh_results", True), "fresh_results"),
                probes={str(k): (str(v["class"]), float(v["seconds"])) for k, v in (data.get("probes") or {}).items()},
                usual_classes={k: ClassModel.from_dict(k, v) for k, v in (data.get("usual_classes") or {}).items()},
                loop_wakes=_wakes(data.get("loop_wakes")),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise HardwareError(f"a kernel calibration that cannot be read ({type(error).__name__}: {error})") from None


def _wakes(value: Any) -> tuple[float, float] | None:
    """``loop_wakes`` from its dict (absent in calibrations made before it was measured: None)."""
    if value is None:
        return None
    fast, usual = float(value["fastest"]), float(value["usual"])
    if not (fast > 0 and usual > 0 and math.isfinite(fast + usual)):
        raise ValueError(f"loop_wakes must be two positive numbers of seconds, got {value!r}")
    return fast, usual


def _finite_or_none(data: Mapping[str, Any], name: str) -> float | None:
    number = None if (value := data.get(name)) is None else float(value)
    if number is not None and (not math.isfinite(number) or number < 0):
        raise ValueError(f"{name}={value!r} is not a finite non-negative number")
    return number


def _boolean(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"{name}={value!r} is not true or false")


#: Qualifiers of another way to run (``conv:wide:pooled``, ``norm:batch:keras``): no family member.
WAYS = frozenset({"pooled", "sliced", "transposed", "generic", "forwarded", "keras", "1x1", "chained", "few"})
WAYS |= {"deep", "deeper"}


def family(name: str) -> str | None:
    """The family of a member class, ``@`` suffix kept (``transcendental:tanh@loop`` → ``transcendental@loop``);
    None for no member — two qualifiers, or a way to run (``WAYS``), whose points would bend the family's curve."""
    head, member, tail = name.partition(":")
    if not member or ":" in (qualifiers := tail.split("@", 1)[0]) or qualifiers in WAYS:
        return None
    return head + ("@" + tail.split("@", 1)[1] if "@" in tail else "")


def fit_calibration(
    framework: str,
    hardware: HardwareSpec,
    points: Sequence[Point],
    *,
    machine: Mapping[str, Any] | None = None,
    versions: Mapping[str, str] | None = None,
    date: str = "",
    method: str = "",
    notes: Sequence[str] = (),
    first_touch_seconds_per_byte: float | None = None,
    fresh_results: bool = True,
    evicted_seconds_per_byte: float | None = None,
) -> KernelCalibration:
    """Every class's curves from ``points``, with the cross-validated error per class and overall
    (each point counted once, in its own class; a family's own error is of the curve it serves,
    fitted on its members' points and its own)."""
    by_class: dict[str, list[Point]] = {}
    for point in points:
        by_class.setdefault(point.kernel_class, []).append(point)
        if family(point.kernel_class):  # a member's point (transcendental:tanh, conv:narrow@loop) is its family's too
            by_class.setdefault(family(point.kernel_class) or "", []).append(point)
    axes = {name: _axis(name, members) for name, members in by_class.items()}
    errors = cross_validate(points, axes=axes)
    classes = {}
    for name, members in sorted(by_class.items()):
        model = fit_class(name, members, axes[name])
        if model is None:
            continue
        whole = any(point.kernel_class != name for point in members)  # a family: its members' points too
        found = (cross_validate([replace(p, kernel_class=name) for p in members], axes=axes).get(name)
                 if whole else errors.get(name)) or []  # fmt: skip
        if len(found) >= POINTS_PER_KNOT:
            model = replace(model, median_error=_median(found), p90_error=_percentile(found, 0.9))
        classes[name] = model
    every = [e for name in classes for e in errors.get(name, ())]
    usual = {  # a loop class's curves again, its points at their usual time (``KernelCalibration.usual_state``)
        name: fit_class(
            name, [replace(p, measured_seconds=p.usual_seconds or p.measured_seconds) for p in members], axes[name]
        )
        for name, members in by_class.items()
        if name in classes and any(p.usual_seconds is not None for p in members)
    }
    return KernelCalibration(
        framework=framework,
        hardware=hardware,
        classes=classes,
        machine=dict(machine or {}),
        versions=dict(versions or {}),
        date=date,
        median_error=_median(every) if every else None,
        p90_error=_percentile(every, 0.9) if every else None,
        points=tuple(points),
        method=method,
        notes=tuple(notes),
        first_touch_seconds_per_byte=first_touch_seconds_per_byte,
        evicted_seconds_per_byte=evicted_seconds_per_byte,
        fresh_results=fresh_results,
        usual_classes={name: model for name, model in usual.items() if model is not None},
    )


def save_calibration(calibration: KernelCalibration, path: Path) -> Path:
    """Write atomically: a reader sees the old file or the new one."""
    return write_json(path, calibration.to_dict())


def load_calibration(path: Path) -> KernelCalibration:
    """A saved calibration, or a ``HardwareError`` naming the file and what is wrong with it."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise HardwareError(
            f"{path}: no such kernel calibration file (neural-cost calibrate --kernels writes one)"
        ) from None
    except (OSError, ValueError) as error:
        raise HardwareError(
            f"{path}: cannot read it as a kernel calibration ({type(error).__name__}: {error})"
        ) from None
    try:
        return KernelCalibration.from_dict(data)
    except HardwareError as error:
        raise HardwareError(f"{path}: {error}") from None
