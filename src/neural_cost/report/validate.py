"""The report schema, checked whole before any record is built.

Each check names the JSON path of what is wrong and why, as one ``Invalid`` that
``load.py`` turns into one SchemaError (``estimate.flops_by_dtype.float32: -5 must be a
non-negative integer``). Version 1 is checked in three passes (version 2 adds the work share
of coverage, ``docs/report-schema.md``, checked in the same passes):

1. types: every field the schema defines has its JSON type; counts are integers (never
   booleans, floats or strings), numbers are finite and non-negative, free-form fields
   (``provenance``, ``attrs``, ``allocator``, ``cross_check``) hold only finite numbers and
   64-bit integers. Unknown keys are ignored: adding a field does not bump the version.
2. bounds: shape dimensions, element counts, executions and trip counts fit in 64 bits (as
   in every framework); FLOP and byte counts stay below ``MAX_WORK``, so every time derived
   from them is a finite float.
3. totals: every total equals the sum of its rows (``totals.py``).

Derived values (``flops``, ``runs``, ``median_seconds``, ``fraction``, the ``analysis``
section, findings, table rows) are recomputed on load; their saved copies are type-checked
and, where they are sums, checked against their rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..core.coverage import LOOP_SOURCES
from ..core.dtypes import known_dtypes
from ..core.records import TENSOR_ROLES
from ..hardware.spec import DEVICE_KINDS as HARDWARE_KINDS
from ..measure.timing import DEVICE_KINDS as MEASURED_KINDS
from .totals import check_totals_v1, check_totals_v2
from .values import (
    MAX_INT64,
    MAX_NUMBER,
    MAX_WORK,
    Check,
    Invalid,
    child,
    json_object,
    json_value,
    show,
)

__all__ = ["VALIDATORS", "Invalid", "validate_v1", "validate_v2"]


# -- leaf checks ------------------------------------------------------------------------
def _integer(limit: int, limit_text: str) -> Check:
    def check(value: Any, path: str) -> None:
        if type(value) is not int or value < 0:
            raise Invalid(path, f"{show(value)} must be a non-negative integer")
        if value > limit:
            raise Invalid(path, f"{show(value)} is above {limit_text}")

    return check


#: Executions, trip counts, shape dimensions: what a framework holds in a 64-bit integer.
COUNT = _integer(MAX_INT64, "2^63 - 1, the largest count a framework can hold")
#: FLOP and byte counts, and sums of executions.
WORK = _integer(MAX_WORK, "10^60, more than any program does")


def _number(positive: bool = False, at_most: float = MAX_NUMBER) -> Check:
    wanted = "a positive finite number" if positive else "a finite non-negative number"
    if at_most < MAX_NUMBER:
        wanted += f" no larger than {at_most:g}"

    def check(value: Any, path: str) -> None:
        # type() excludes booleans; ints are compared exactly (10**400 never becomes a float).
        if (
            type(value) not in (int, float)
            or not (value == value and 0 <= value <= at_most)
            or (positive and not value)
        ):
            if at_most == MAX_NUMBER and type(value) in (int, float) and MAX_NUMBER < value < float("inf"):
                raise Invalid(path, f"{show(value)} is above 1e+100, more than any time, rate or share in a report")
            raise Invalid(path, f"{show(value)} must be {wanted}")

    return check


NUMBER = _number()
SECONDS = NUMBER
POSITIVE = _number(positive=True)
FRACTION = _number(at_most=1.0)


# Leaf checks written as functions are named like the schema constants built from combinators.
def TEXT(value: Any, path: str) -> None:
    if type(value) is not str:
        raise Invalid(path, f"{show(value)} must be a string")


def NAME(value: Any, path: str) -> None:
    if type(value) is not str or not value:
        raise Invalid(path, f"{show(value)} must be a non-empty string")


def BOOL(value: Any, path: str) -> None:
    if type(value) is not bool:
        raise Invalid(path, f"{show(value)} must be true or false")


def _choice(options: tuple[str, ...], what: str, list_them: bool = True) -> Check:
    allowed = frozenset(options)
    listed = f" ({', '.join(options)})" if list_them else ""

    def check(value: Any, path: str) -> None:
        if type(value) is not str or value not in allowed:
            raise Invalid(path, f"{show(value)} is not {what}{listed}")

    return check


# Canonical names only: the writer canonicalises every dtype, so an alias means an edit.
DTYPE = _choice(known_dtypes(), "a dtype name neural-cost knows", list_them=False)


def SHAPE(value: Any, path: str) -> None:
    if type(value) is not list:
        raise Invalid(path, f"{show(value)} must be a shape (an array of non-negative integers)")
    elements = 1
    for i, dim in enumerate(value):
        COUNT(dim, f"{path}[{i}]")
        elements *= dim
    if elements > MAX_INT64:
        raise Invalid(path, f"has {show(elements)} elements, more than any framework can hold (2^63 - 1)")


# -- combinators ------------------------------------------------------------------------
def _nullable(check: Check) -> Check:
    def nullable(value: Any, path: str) -> None:
        if value is not None:
            check(value, path)

    return nullable


def _array(item: Check, nonempty: bool = False) -> Check:
    def array(value: Any, path: str) -> None:
        if type(value) is not list:
            raise Invalid(path, f"{show(value)} must be an array")
        if nonempty and not value:
            raise Invalid(path, "must not be empty")
        for i, element in enumerate(value):
            item(element, f"{path}[{i}]")

    return array


def _pair(first: Check, second: Check) -> Check:
    def pair(value: Any, path: str) -> None:
        if type(value) is not list or len(value) != 2:
            raise Invalid(path, f"{show(value)} must be a [name, value] pair")
        first(value[0], f"{path}[0]")
        second(value[1], f"{path}[1]")

    return pair


def _triple(first: Check, second: Check, third: Check, what: str) -> Check:
    def triple(value: Any, path: str) -> None:
        if type(value) is not list or len(value) != 3:
            raise Invalid(path, f"{show(value)} must be a {what} triple")
        for i, check in enumerate((first, second, third)):
            check(value[i], f"{path}[{i}]")

    return triple


def _mapping(value_check: Check, key_check: Check) -> Check:
    def mapping(value: Any, path: str) -> None:
        if type(value) is not dict:
            raise Invalid(path, f"{show(value)} must be an object")
        for key, item in value.items():
            where = child(path, key)
            key_check(key, where)
            value_check(item, where)

    return mapping


def _record(
    required: Mapping[str, Check], optional: Mapping[str, Check] | None = None, rest: Check | None = None
) -> Check:
    """An object with these keys; ``optional`` ones may be absent (older writers omit them).
    Other keys are ignored, or checked with ``rest`` where the object is kept whole."""
    extra = dict(optional or {})
    known = set(required) | set(extra)

    def record(value: Any, path: str) -> None:
        if type(value) is not dict:
            raise Invalid(path or "report", f"{show(value)} must be an object")
        for key, check in required.items():
            if key not in value:
                raise Invalid(child(path, key), "missing")
            check(value[key], child(path, key))
        for key, check in extra.items():
            if key in value:
                check(value[key], child(path, key))
        if rest is not None:
            for key, item in value.items():
                if key not in known:
                    rest(item, child(path, key))

    return record


def _dtype_key(key: Any, path: str) -> None:
    DTYPE(key, path)


FLOPS_BY_DTYPE = _mapping(WORK, _dtype_key)
JSON_OBJECT = _nullable(json_object)
# Another tool's figures: free-form, but the text report reads these keys.
CROSS_CHECK = _nullable(
    _record(
        {},
        {
            "source": TEXT,
            "note": TEXT,
            "error": TEXT,
            "flops": _nullable(NUMBER),
            "bytes": _nullable(NUMBER),
            "transcendentals": _nullable(NUMBER),
        },
        rest=json_value,
    )
)

# -- version 1 --------------------------------------------------------------------------
OPERATION = _record(
    {"name": NAME, "kind": NAME, "inputs": _array(SHAPE), "output": SHAPE},
    {
        "dtype": DTYPE,
        "scope": _nullable(NAME),
        "attrs": JSON_OBJECT,
        "count": COUNT,
        "input_dtypes": _nullable(_array(DTYPE)),
        "extra_outputs": _array(SHAPE),
        "extra_output_dtypes": _nullable(_array(DTYPE)),
    },
)
OPERATION_COST = _record(
    {
        "operation": OPERATION,
        "flops_by_dtype": FLOPS_BY_DTYPE,
        "read_bytes": WORK,
        "write_bytes": WORK,
        "dense_flops": WORK,
    },
    {"flops": WORK, "transcendentals": WORK},
)
SCOPE_COST = _record(
    {
        "scope": NAME,
        "kinds": _array(NAME),
        "operations": WORK,
        "executions": WORK,
        "flops_by_dtype": FLOPS_BY_DTYPE,
        "read_bytes": WORK,
        "write_bytes": WORK,
        "dense_flops": WORK,
    },
    {"flops": WORK},
)
COVERAGE = _record(
    {"total": WORK, "modeled": WORK},
    {
        "free": WORK,
        "unmodeled": _array(_pair(TEXT, WORK)),
        "static_total": _nullable(WORK),
        "unit": NAME,
        "fraction": FRACTION,
    },
)
LOOP_ASSUMPTION = _record(
    {"label": NAME, "trip_count": COUNT, "source": _choice(LOOP_SOURCES, "a loop-count source")},
    {"scope": _nullable(TEXT), "location": _nullable(TEXT)},
)
TENSOR = _record({"name": NAME, "shape": SHAPE, "dtype": DTYPE, "role": _choice(TENSOR_ROLES, "a tensor role")})
ESTIMATE = _record(
    {
        "flops_by_dtype": FLOPS_BY_DTYPE,
        "read_bytes": WORK,
        "write_bytes": WORK,
        "coverage": COVERAGE,
        "by_operation": _array(OPERATION_COST),
        "by_scope": _array(SCOPE_COST),
    },
    {
        "flops": WORK,
        "dense_flops": WORK,
        "transcendentals": WORK,
        "compulsory_bytes": _nullable(WORK),
        "arithmetic_intensity": _nullable(NUMBER),
        "framework": _nullable(TEXT),
        "input_shapes": _array(_pair(TEXT, SHAPE)),
        "loop_assumptions": _array(LOOP_ASSUMPTION),
        "boundary": _array(TENSOR),
        "notes": _array(TEXT),
        "cross_check": CROSS_CHECK,
    },
)
MEASUREMENT = _record(
    {"samples_seconds": _array(SECONDS, nonempty=True)},
    {
        "warmup_seconds": _array(SECONDS),
        "runs": WORK,
        "median_seconds": SECONDS,
        "mean_seconds": SECONDS,
        "stdev_seconds": SECONDS,
        "device": TEXT,
        "device_kind": _choice(MEASURED_KINDS, "a device kind"),
        "device_source": TEXT,
        "peak_memory_bytes": _nullable(COUNT),
        "allocator": JSON_OBJECT,
        "sync": TEXT,
        "clock": TEXT,
        "compile_seconds": _nullable(SECONDS),
    },
)
HARDWARE = _record(
    {"name": NAME, "peak_flops": POSITIVE, "memory_bandwidth": POSITIVE},
    {
        "kind": _choice(HARDWARE_KINDS, "a hardware kind"),
        "peak_flops_by_dtype": _nullable(_mapping(POSITIVE, _dtype_key)),
        "memory_capacity": _nullable(COUNT),
        "source": TEXT,
    },
)
ANALYSIS = _nullable(
    _record(
        {},
        {
            "bound_seconds": SECONDS,
            "compute_seconds": SECONDS,
            "memory_seconds": SECONDS,
            "compulsory_seconds": _nullable(SECONDS),
            "observed_seconds": SECONDS,
            "efficiency": NUMBER,
            "bound_side": TEXT,
            "achieved_flops_per_second": NUMBER,
            "achieved_bytes_per_second": NUMBER,
            "coverage_threshold": FRACTION,
            "device_mismatch": BOOL,
        },
    )
)
FINDING = _record({"code": NAME, "message": TEXT}, {"severity": TEXT, "header": BOOL})
TABLE_ROW = _record(
    {"name": TEXT, "kind": TEXT, "executions": WORK, "flops": WORK, "bytes": WORK},
    {"scope": _nullable(TEXT), "compute_seconds": SECONDS, "memory_seconds": SECONDS, "share": NUMBER},
)
REPORT_V1 = _record(
    {"estimate": ESTIMATE, "measurement": MEASUREMENT, "hardware": HARDWARE},
    {
        "provenance": JSON_OBJECT,
        "analysis": ANALYSIS,
        "findings": _array(FINDING),
        "operation_rows": _array(TABLE_ROW),
        "scope_rows": _array(TABLE_ROW),
    },
)


def validate_v1(data: Mapping[str, Any]) -> None:
    """Raise Invalid at the first field of a version-1 report that is wrong."""
    REPORT_V1(data, "")
    # Version 1 recorded no unmodeled sizes (its work share is unknown): sizes in a file that
    # says version 1 are an edit, not something to half-believe.
    if "unmodeled_work" in data["estimate"]["coverage"]:
        raise Invalid("estimate.coverage.unmodeled_work", "is a version-2 field in a version-1 report")
    check_totals_v1(data)


# -- version 2: version 1 and the work share of coverage ---------------------------------
REPORT_V2_ADDITIONS = _record(
    {
        "estimate": _record(
            {
                "coverage": _record(
                    {"unmodeled_work": _array(_triple(NAME, WORK, WORK, "[name, FLOPs, bytes]"))},
                    {"unmodeled_flops": _nullable(WORK), "unmodeled_bytes": _nullable(WORK)},
                )
            },
            {"work_fraction": _nullable(FRACTION)},
        )
    }
)


def validate_v2(data: Mapping[str, Any]) -> None:
    """Raise Invalid at the first field of a version-2 report that is wrong."""
    REPORT_V1(data, "")
    REPORT_V2_ADDITIONS(data, "")
    check_totals_v2(data)


#: schema_version → its validator (docs/report-schema.md defines each version). Older
#: versions stay, so older reports keep loading.
VALIDATORS: dict[int, Callable[[Mapping[str, Any]], None]] = {1: validate_v1, 2: validate_v2}
