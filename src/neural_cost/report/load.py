"""Reading a saved report back: real records, re-scorable against another device.

``load_report(path)`` needs no framework: the estimate, measurement, hardware and profiled
pass (when there was one) are rebuilt from plain data, and the analysis is recomputed from
them (identically, since it is a pure function of those records); the provenance is the
saved one.

A saved file is untrusted input, so nothing is built before the whole document is checked:
the file's size, UTF-8 and nesting depth (``document.py``), then every field's type and
bounds and every total against its rows (``validate.py``, ``totals.py``). Each failure is one
SchemaError naming the file, the JSON path and the problem; no other exception escapes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any, TypeVar

from ..analysis.expected import Expected
from ..analysis.gap import DEFAULT_COVERAGE_THRESHOLD, SCHEMA, GapReport, analyze_gap
from ..core.attrs import FrozenAttrs
from ..core.coverage import Coverage, LoopAssumption
from ..core.errors import NeuralCostError, SchemaError
from ..core.estimate import CostEstimate, OperationCost, ScopeCost
from ..core.kernels import Kernel
from ..core.profile import Profile
from ..core.records import TensorSpec
from ..hardware.spec import HardwareSpec
from ..measure.timing import Measurement
from .document import DEFAULT_MAX_BYTES, MAX_DEPTH, check_max_bytes, parse_document, read_limited
from .validate import VALIDATORS
from .values import Invalid, json_type, show

__all__ = ["DEFAULT_MAX_BYTES", "MAX_DEPTH", "load_report", "read_report", "report_from_dict"]

T = TypeVar("T")

# What a record's own checks (or arithmetic on a value the schema let through) may raise.
# The validator should leave none of these to happen; if one does, it still leaves as a
# SchemaError naming the part of the report, never as a traceback.
_UNREADABLE = (NeuralCostError, ArithmeticError, LookupError, TypeError, ValueError, AttributeError, RecursionError)


def _failure(where: str, path: str, error: BaseException) -> SchemaError:
    if isinstance(error, NeuralCostError):
        return SchemaError(f"{where}: {path}: {error}")
    return SchemaError(f"{where}: {path}: cannot be read ({type(error).__name__}: {error})")


def _build(
    where: str,
    path: str,
    make: Callable[[], T],
    parts: Callable[[], Iterator[tuple[str, Callable[[], object]]]] | None = None,
) -> T:
    """``make()``; if it fails, the first of ``parts`` that fails alone names the place."""
    try:
        return make()
    except _UNREADABLE as error:
        for part_path, part in parts() if parts is not None else ():
            try:
                part()
            except _UNREADABLE as inner:
                raise _failure(where, part_path, inner) from inner
        raise _failure(where, path, error) from error


def _estimate_parts(estimate: Mapping[str, Any]) -> Iterator[tuple[str, Callable[[], object]]]:
    for i, row in enumerate(estimate["by_operation"]):
        yield f"estimate.by_operation[{i}]", partial(OperationCost.from_dict, row)
    for i, row in enumerate(estimate["by_scope"]):
        yield f"estimate.by_scope[{i}]", partial(ScopeCost.from_dict, row)
    yield "estimate.coverage", lambda: Coverage.from_dict(estimate["coverage"])
    for i, item in enumerate(estimate.get("loop_assumptions", ())):
        yield f"estimate.loop_assumptions[{i}]", partial(LoopAssumption.from_dict, item)
    for i, item in enumerate(estimate.get("boundary", ())):
        yield f"estimate.boundary[{i}]", partial(TensorSpec.from_dict, item)
    for i, item in enumerate(estimate.get("kernels") or ()):
        yield f"estimate.kernels[{i}]", partial(Kernel.from_dict, item)


def _check_finite(report: GapReport, where: str) -> None:
    """Counts and rates that are each finite can still divide to infinity (1e60 FLOPs at a
    peak of 1e-300 FLOP/s): blame the rate that did it."""
    hardware, estimate = report.hardware, report.estimate
    if not math.isfinite(report.compute_seconds):
        path = "hardware.peak_flops_by_dtype" if hardware.peak_flops_by_dtype else "hardware.peak_flops"
        raise SchemaError(
            f"{where}: {path}: {show(hardware.peak_flops)} FLOP/s makes the compute time of "
            f"{show(estimate.flops)} FLOPs infinite"
        )
    if not math.isfinite(report.memory_seconds) or not math.isfinite(report.compulsory_seconds or 0.0):
        raise SchemaError(
            f"{where}: hardware.memory_bandwidth: {show(hardware.memory_bandwidth)} bytes/s makes the memory time "
            f"of {show(estimate.compiled_bytes)} bytes infinite"
        )
    for row in report.kernel_rows:  # a cache level's bandwidth of 1e-300 B/s makes one kernel's time infinite
        if not math.isfinite(row.memory_seconds):
            names = [level.name for level in hardware.memory_levels]
            path = (
                f"hardware.memory_levels[{names.index(row.level)}].bandwidth"
                if row.level in names and hardware.memory_levels[names.index(row.level)].bandwidth is not None
                else "hardware.memory_bandwidth"
            )
            raise SchemaError(
                f"{where}: {path}: {show(row.bandwidth)} bytes/s makes the memory time of kernel {row.name!r} "
                f"({show(row.traffic_bytes)} bytes at {row.level}) infinite"
            )
    derived = (report.efficiency, report.achieved_flops_per_second, report.achieved_bytes_per_second)
    if not all(math.isfinite(value) for value in derived):
        raise SchemaError(
            f"{where}: measurement.samples_seconds: a median of {show(report.observed_seconds)} s makes the "
            f"efficiency or the achieved rates infinite"
        )


def report_from_dict(data: Any, where: str = "report") -> GapReport:
    """The report in ``data`` (a parsed JSON document), checked whole, then rebuilt."""
    if not isinstance(data, dict):
        raise SchemaError(f"{where}: a report is a JSON object, not {json_type(data)}")
    if data.get("schema") != SCHEMA:
        found = f"{show(data['schema'])} is not" if "schema" in data else "missing; it should be"
        raise SchemaError(f"{where}: schema: {found} {show(SCHEMA)}; is this a neural-cost report?")
    version = data.get("schema_version")
    if type(version) is not int or version not in VALIDATORS:
        readable = " or ".join(str(v) for v in sorted(VALIDATORS))
        found = show(version) if "schema_version" in data else "missing"
        raise SchemaError(f"{where}: schema_version: {found}; this neural-cost reads version {readable}")
    try:
        VALIDATORS[version](data)
    except Invalid as error:
        raise SchemaError(f"{where}: {error.path}: {error.problem}") from None
    except RecursionError:  # only a dict built in code can get here: files are depth-checked first
        raise SchemaError(f"{where}: nested more than {MAX_DEPTH} levels deep") from None
    estimate_data = data["estimate"]
    estimate = _build(
        where, "estimate", lambda: CostEstimate.from_dict(estimate_data), lambda: _estimate_parts(estimate_data)
    )
    measurement = _build(where, "measurement", lambda: Measurement.from_dict(data["measurement"]))
    hardware = _build(where, "hardware", lambda: HardwareSpec.from_dict(data["hardware"]))
    provenance = _build(where, "provenance", lambda: FrozenAttrs(data.get("provenance") or {}, "provenance"))
    profile_data = data.get("profile")  # a profiled pass: the rows' measured times are recomputed from it
    profile = None if profile_data is None else _build(where, "profile", lambda: Profile.from_dict(profile_data))
    notes = tuple(data.get("profile_notes", ()))
    expected_data = data.get("expected")  # stored whole: the kernel model it came from is not in the file
    expected = None if expected_data is None else _build(where, "expected", lambda: Expected.from_dict(expected_data))
    analysis = data.get("analysis") or {}
    threshold = analysis.get("coverage_threshold", DEFAULT_COVERAGE_THRESHOLD)
    report = _build(
        where,
        "estimate, measurement and hardware",
        lambda: analyze_gap(
            estimate,
            measurement,
            hardware,
            coverage_threshold=threshold,
            profile=profile,
            profile_notes=notes,
            expected=expected,
        ),
    )
    _check_finite(report, where)
    object.__setattr__(report, "provenance", provenance)
    return report


def load_report(path: str | os.PathLike[str], *, max_bytes: int | None = None) -> GapReport:
    """The report saved at ``path`` (``report.to_dict()`` / ``--json``), as real objects.

    A file larger than ``max_bytes`` (default ``DEFAULT_MAX_BYTES``, 400 MB) is refused
    before it is read whole; every other problem is a SchemaError naming where it is.
    """
    return read_report(path, max_bytes=max_bytes)[0]


def read_report(path: str | os.PathLike[str], *, max_bytes: int | None = None) -> tuple[GapReport, int]:
    """``load_report``, and the ``schema_version`` the file was written in (``diff`` says when two differ)."""
    limit = check_max_bytes(max_bytes)
    data = parse_document(read_limited(path, limit), path)
    report = report_from_dict(data, str(path))
    version: int = data["schema_version"]  # report_from_dict checked it is one this version reads
    return report, version
