"""Every total of a report (versions 1 and 2) equals the sum of its rows.

Run after the type checks (``validate.py``), so every field read here has its type. The
row tables and what they add up to:

- ``estimate.by_operation`` → ``estimate.flops_by_dtype``, ``read_bytes``, ``write_bytes``,
  ``dense_flops``, ``transcendentals``; each row's ``flops`` is the sum of its own dtypes;
- ``estimate.by_operation`` grouped by scope → ``estimate.by_scope``, row by row, in order;
- ``estimate.boundary`` (each tensor once) → ``estimate.compulsory_bytes``;
- ``estimate.coverage``: modeled + free + each unmodeled count → total; in version 2, each
  ``unmodeled_work`` entry names an unmodeled operation, once, and ``unmodeled_flops`` and
  ``unmodeled_bytes`` are their sums (null when an unmodeled operation has no entry);
- ``measurement.samples_seconds`` → ``runs``;
- ``operation_rows`` and ``scope_rows`` → the estimate's FLOPs and bytes;
- (version 2) ``estimate.kernels``: each names operations of ``estimate.by_operation``, each
  record in one kernel at most, and its ``flops_by_dtype`` is the sum of its records';
  ``estimate.compiled_bytes`` is every kernel's traffic over its executions plus the unfused
  traffic of the records no kernel executes; ``kernel_rows`` and ``analysis`` add up to the
  estimate's FLOPs and compiled bytes;
- (version 2) ``profile``: each measured kernel and each event names a kernel of
  ``estimate.kernels``, each kernel measured once; ``outside_seconds`` is the wall time less the
  kernel time; ``analysis.time_coverage`` is there exactly when a profile is, and its kernel and
  wall times are the profile's, per run.

Rows are not recounted from their operations: cost rules change between versions, and a
report keeps the counts of the version that wrote it.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from ..analysis.kernels import UNMAPPED
from ..core.dtypes import dtype_info
from ..core.shapes import num_elements
from .values import MAX_WORK, Invalid, child, show

#: The scope row of operations recorded without a scope (``costs.estimate.NO_SCOPE``; the
#: report layer may not import ``costs``).
NO_SCOPE = "(no scope)"


def _sum_flops(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for row in rows:
        for dtype, value in row["flops_by_dtype"].items():
            total[dtype] = total.get(dtype, 0) + value
    return total


def _equal(path: str, saved: Any, expected: Any, what: str) -> None:
    if saved != expected:
        raise Invalid(path, f"{show(saved)} is not {what} ({show(expected)})")


def _equal_flops(path: str, saved: Mapping[str, int], expected: Mapping[str, int], what: str) -> None:
    for dtype in sorted(set(saved) | set(expected)):
        if dtype not in saved:
            raise Invalid(child(path, dtype), f"missing: {what} is {show(expected[dtype])}")
        if dtype not in expected:
            raise Invalid(child(path, dtype), f"{show(saved[dtype])} is not {what} (they have no {dtype} FLOPs)")
        _equal(child(path, dtype), saved[dtype], expected[dtype], what)


def _own_flops(row: Mapping[str, Any], path: str) -> None:
    if "flops" in row:
        _equal(f"{path}.flops", row["flops"], sum(row["flops_by_dtype"].values()), "the sum of its flops_by_dtype")


def _check_estimate(estimate: Mapping[str, Any]) -> None:
    rows = estimate["by_operation"]
    for i, row in enumerate(rows):
        _own_flops(row, f"estimate.by_operation[{i}]")
    _equal_flops(
        "estimate.flops_by_dtype", estimate["flops_by_dtype"], _sum_flops(rows), "the sum over estimate.by_operation"
    )
    _own_flops(estimate, "estimate")
    for field in ("read_bytes", "write_bytes", "dense_flops", "transcendentals", "wire_bytes"):
        expected = sum(row.get(field, 0) for row in rows)  # the last three are optional, 0 when absent
        _equal(f"estimate.{field}", estimate.get(field, 0), expected, f"the sum of estimate.by_operation[*].{field}")
    _check_scopes(estimate["by_scope"], rows)
    _check_coverage(estimate["coverage"])
    _check_compulsory(estimate)


def _check_scopes(saved: list[Mapping[str, Any]], rows: list[Mapping[str, Any]]) -> None:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        operation = row["operation"]
        function = (operation.get("attrs") or {}).get("function")
        unscoped = f"{function}()" if isinstance(function, str) and function else NO_SCOPE
        groups.setdefault(operation.get("scope") or unscoped, []).append(row)
    if len(saved) != len(groups):
        raise Invalid(
            "estimate.by_scope",
            f"has {len(saved)} rows, but estimate.by_operation names {len(groups)} scopes",
        )
    for i, (row, (scope, members)) in enumerate(zip(saved, groups.items(), strict=True)):
        path = f"estimate.by_scope[{i}]"
        what = f"the sum over the operations of scope {show(scope)}"
        _equal(f"{path}.scope", row["scope"], scope, "the scope of the operations in this position")
        _equal(f"{path}.kinds", row["kinds"], sorted({m["operation"]["kind"] for m in members}), "their kinds")
        _equal(f"{path}.operations", row["operations"], len(members), "the number of its operations")
        executions = sum(m["operation"].get("count", 1) for m in members)
        _equal(f"{path}.executions", row["executions"], executions, what)
        _equal_flops(f"{path}.flops_by_dtype", row["flops_by_dtype"], _sum_flops(members), what)
        _own_flops(row, path)
        for field in ("read_bytes", "write_bytes", "dense_flops"):
            _equal(f"{path}.{field}", row[field], sum(m[field] for m in members), what)


def _check_coverage(coverage: Mapping[str, Any]) -> None:
    modeled, free = coverage["modeled"], coverage.get("free", 0)
    unmodeled = sum(count for _, count in coverage.get("unmodeled", ()))
    _equal(
        "estimate.coverage.total",
        coverage["total"],
        modeled + free + unmodeled,
        f"modeled {modeled} + free {free} + unmodeled {unmodeled}",
    )


def _check_compulsory(estimate: Mapping[str, Any]) -> None:
    boundary = estimate.get("boundary", ())
    if not boundary:
        expected = None  # without a boundary the floor is unknown
    else:
        seen: dict[str, int] = {}  # a tensor listed twice (an input that is also an output) moves once
        for tensor in boundary:
            nbytes = dtype_info(tensor["dtype"]).nbytes(
                num_elements(tuple(tensor.get("shard_shape") or tensor["shape"]))
            )
            seen.setdefault(f"{tensor['role']}:{tensor['name']}", nbytes)
        expected = sum(seen.values())
    _equal(
        "estimate.compulsory_bytes",
        estimate.get("compulsory_bytes"),
        expected,
        "the bytes of estimate.boundary, each tensor once",
    )


def _check_measurement(measurement: Mapping[str, Any]) -> None:
    samples = measurement["samples_seconds"]
    if "runs" in measurement:
        _equal("measurement.runs", measurement["runs"], len(samples), "the number of samples_seconds")
    if statistics.median(samples) <= 0:
        raise Invalid(
            "measurement.samples_seconds",
            "the median is 0 s: the clock did not resolve the work, so there is no time to score",
        )


def _check_table(data: Mapping[str, Any], table: str, estimate_rows: str) -> None:
    if table not in data:
        return
    rows, estimate = data[table], data["estimate"]
    if len(rows) != len(estimate[estimate_rows]):
        raise Invalid(table, f"has {len(rows)} rows for the {len(estimate[estimate_rows])} of estimate.{estimate_rows}")
    flops = sum(estimate["flops_by_dtype"].values())
    _equal(f"{table}[*].flops", sum(r["flops"] for r in rows), flops, "the estimate's FLOPs")
    nbytes = estimate["read_bytes"] + estimate["write_bytes"]
    _equal(f"{table}[*].bytes", sum(r["bytes"] for r in rows), nbytes, "the estimate's read + written bytes")


def check_totals_v1(data: Mapping[str, Any]) -> None:
    _check_estimate(data["estimate"])
    _check_measurement(data["measurement"])
    _check_table(data, "operation_rows", "by_operation")
    _check_table(data, "scope_rows", "by_scope")


def _nonzero(flops: Mapping[str, int]) -> dict[str, int]:
    return {dtype: value for dtype, value in flops.items() if value}


def _check_kernels(estimate: Mapping[str, Any]) -> tuple[int, list[str]]:
    """Each kernel's operations and FLOPs against ``estimate.by_operation``; the compiled bytes,
    and the names of the rows the kernel table must have."""
    rows = estimate["by_operation"]
    owner: dict[int, str] = {}
    compiled = 0
    for k, kernel in enumerate(estimate.get("kernels", ())):
        path = f"estimate.kernels[{k}]"
        for j, index in enumerate(kernel["operations"]):
            where = f"{path}.operations[{j}]"
            if index >= len(rows):
                raise Invalid(where, f"{index} is not an operation: estimate.by_operation has {len(rows)} rows")
            if index in owner:
                raise Invalid(
                    where,
                    f"operation {index} is executed by {owner[index]} already; a record belongs to one kernel at most",
                )
            owner[index] = path
        members = [rows[index] for index in kernel["operations"]]
        # zero entries say nothing: a kernel whose records do no float32 work may list float32: 0
        _equal_flops(
            f"{path}.flops_by_dtype",
            _nonzero(kernel["flops_by_dtype"]),
            _nonzero(_sum_flops(members)),
            "the sum over its operations' flops_by_dtype",
        )
        traffic = kernel["traffic_bytes"] * kernel["executions"]
        if traffic > MAX_WORK:
            raise Invalid(
                f"{path}.traffic_bytes",
                f"{show(kernel['traffic_bytes'])} bytes × {show(kernel['executions'])} executions is above 10^60, "
                f"more than any program moves",
            )
        compiled += traffic
    if not estimate.get("kernels"):  # no compiled program read: each record is its own kernel, unfused
        return estimate["read_bytes"] + estimate["write_bytes"], [row["operation"]["name"] for row in rows]
    unmapped = [row for i, row in enumerate(rows) if i not in owner]
    names = [kernel["name"] for kernel in estimate["kernels"]] + ([UNMAPPED] if unmapped else [])
    return compiled + sum(row["read_bytes"] + row["write_bytes"] for row in unmapped), names


def _check_kernel_tables(data: Mapping[str, Any], compiled: int, names: list[str]) -> None:
    estimate = data["estimate"]
    what = "every kernel's traffic over its executions, plus the unfused bytes of the records no kernel executes"
    if "compiled_bytes" in estimate:
        _equal("estimate.compiled_bytes", estimate["compiled_bytes"], compiled, what)
    analysis = data.get("analysis") or {}
    if "compiled_bytes" in analysis:
        _equal("analysis.compiled_bytes", analysis["compiled_bytes"], compiled, what)
    if "traffic_by_level" in analysis:
        total = sum(analysis["traffic_by_level"].values())
        _equal("analysis.traffic_by_level", total, compiled, "the compiled bytes, in sum")
    if "kernel_rows" in data:
        rows = data["kernel_rows"]
        # one row per kernel (and one for the records none executes): a kernel deleted whose traffic
        # was its records' unfused bytes leaves every sum as it was, but not the rows' names
        missing = Counter(names)
        for i, row in enumerate(rows):
            if not missing[row["name"]]:
                raise Invalid(f"kernel_rows[{i}].name", f"{show(row['name'])} is not a row the estimate's kernels make")
            missing[row["name"]] -= 1
        if sum(missing.values()):
            left = next(name for name, count in missing.items() if count)
            raise Invalid("kernel_rows", f"has no row for {show(left)}, which the estimate's kernels make")
        flops = sum(estimate["flops_by_dtype"].values())
        _equal("kernel_rows[*].flops", sum(r["flops"] for r in rows), flops, "the estimate's FLOPs")
        _equal("kernel_rows[*].traffic_bytes", sum(r["traffic_bytes"] for r in rows), compiled, "the compiled bytes")


def _close(path: str, saved: float, expected: float, what: str) -> None:
    """Saved seconds against the same figure recomputed (a float sum may differ in its last bits)."""
    if not math.isclose(saved, expected, rel_tol=1e-9, abs_tol=1e-15):
        raise Invalid(path, f"{show(saved)} is not {what} ({show(expected)})")


def _check_profile(data: Mapping[str, Any]) -> None:
    """The profile's kernels and events name kernels of the estimate; its derived figures agree."""
    profile = data.get("profile")
    analysis = data.get("analysis") or {}
    if "time_coverage" in analysis and (analysis["time_coverage"] is None) != (profile is None):
        has = "has no profile" if profile is None else "has a profile"
        raise Invalid("analysis.time_coverage", f"{show(analysis['time_coverage'])}, but the report {has}")
    if profile is None:
        return
    kernels = len(data["estimate"].get("kernels", ()))
    seen: set[int] = set()
    for i, measured in enumerate(profile.get("kernels", ())):
        path = f"profile.kernels[{i}].kernel"
        if measured["kernel"] >= kernels:
            raise Invalid(path, f"{measured['kernel']} is not a kernel: estimate.kernels has {kernels}")
        if measured["kernel"] in seen:
            raise Invalid(path, f"kernel {measured['kernel']} is measured twice")
        seen.add(measured["kernel"])
    for i, event in enumerate(profile.get("events", ())):
        if event["kernel"] >= kernels:
            raise Invalid(
                f"profile.events[{i}].kernel", f"{event['kernel']} is not a kernel: estimate.kernels has {kernels}"
            )
    wall, inside, runs = profile["wall_seconds"], profile["kernel_seconds"], profile["runs"]
    if "outside_seconds" in profile:
        _close("profile.outside_seconds", profile["outside_seconds"], max(wall - inside, 0.0), "wall − kernel seconds")
    coverage = analysis.get("time_coverage")
    if coverage is not None:
        per_run = sum(measured["seconds"] / runs for measured in profile.get("kernels", ()))
        what = "the profile's kernels' seconds per run, summed"
        _close("analysis.time_coverage.kernel_seconds", coverage["kernel_seconds"], per_run, what)
        _close("analysis.time_coverage.wall_seconds", coverage["wall_seconds"], wall / runs, "the profile's, per run")


def check_totals_v2(data: Mapping[str, Any]) -> None:
    """Version 1's totals, each ``unmodeled_work`` entry an unmodeled name, once, the kernels and the profile."""
    check_totals_v1(data)
    _check_kernel_tables(data, *_check_kernels(data["estimate"]))
    _check_profile(data)
    coverage = data["estimate"]["coverage"]
    names = {name for name, _ in coverage.get("unmodeled", ())}
    seen: set[str] = set()
    for i, (name, _, _) in enumerate(coverage["unmodeled_work"]):
        path = f"estimate.coverage.unmodeled_work[{i}][0]"
        if name not in names:
            raise Invalid(path, f"{show(name)} is not among estimate.coverage.unmodeled")
        if name in seen:
            raise Invalid(path, f"{show(name)} is listed twice")
        seen.add(name)
    # The sums are derived, but saved: a nudged entry disagrees with them and is refused.
    complete = len(seen) == len(names)
    for i, field in ((1, "unmodeled_flops"), (2, "unmodeled_bytes")):
        if field in coverage:
            expected = sum(entry[i] for entry in coverage["unmodeled_work"]) if complete else None
            what = "the sum over unmodeled_work" if complete else "null: an unmodeled operation has no size"
            _equal(f"estimate.coverage.{field}", coverage[field], expected, what)
