"""The report schema, checked whole before any record is built.

Each check names the JSON path of what is wrong and why, as one ``Invalid`` that
``load.py`` turns into one SchemaError (``estimate.flops_by_dtype.float32: -5 must be a
non-negative integer``). Version 1 is checked in three passes (version 2 adds the work share
of coverage, the compiled program's kernels and a profiled pass's measured time per kernel,
``docs/report-schema.md``, checked in the same passes):

1. types: every field the schema defines has its JSON type; counts are integers (never
   booleans, floats or strings), numbers are finite and non-negative, free-form fields
   (``provenance``, ``attrs``, ``allocator``, ``cross_check``) hold only finite numbers and
   64-bit integers. Unknown keys are ignored: adding a field does not bump the version.
2. bounds: shape dimensions, element counts, executions and trip counts fit in 64 bits (as
   in every framework); FLOP and byte counts stay below ``MAX_WORK``, so every time derived
   from them is a finite float.
3. totals: every total equals the sum of its rows (``totals.py``).

Derived values (``flops``, ``runs``, ``median_seconds``, ``fraction``, ``compiled_bytes``,
the ``analysis`` section, findings, table rows, ``kernel_rows``, their measured times) are
recomputed on load; their saved copies are type-checked and, where they are sums, checked
against their rows. The building blocks of the checks are in ``checks.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..core.coverage import LOOP_SOURCES
from ..core.records import TENSOR_ROLES
from ..hardware.spec import DEVICE_KINDS as HARDWARE_KINDS
from ..measure.timing import DEVICE_KINDS as MEASURED_KINDS
from .checks import (
    BOOL,
    COUNT,
    DTYPE,
    FLOPS_BY_DTYPE,
    FRACTION,
    JSON_OBJECT,
    NAME,
    NUMBER,
    POSITIVE,
    POSITIVE_COUNT,
    SECONDS,
    SHAPE,
    TEXT,
    WORK,
    array,
    choice,
    dtype_key,
    mapping,
    nullable,
    pair,
    record,
    triple,
)
from .totals import check_totals_v1, check_totals_v2
from .values import Invalid, json_value

__all__ = ["VALIDATORS", "Invalid", "validate_v1", "validate_v2"]


# Another tool's figures: free-form, but the text report reads these keys.
CROSS_CHECK = nullable(
    record(
        {},
        {
            "source": TEXT,
            "note": TEXT,
            "error": TEXT,
            "flops": nullable(NUMBER),
            "bytes": nullable(NUMBER),
            "transcendentals": nullable(NUMBER),
        },
        rest=json_value,
    )
)

# -- version 1 --------------------------------------------------------------------------
OPERATION = record(
    {"name": NAME, "kind": NAME, "inputs": array(SHAPE), "output": SHAPE},
    {
        "dtype": DTYPE,
        "scope": nullable(NAME),
        "attrs": JSON_OBJECT,
        "count": COUNT,
        "input_dtypes": nullable(array(DTYPE)),
        "extra_outputs": array(SHAPE),
        "extra_output_dtypes": nullable(array(DTYPE)),
    },
)
OPERATION_COST = record(
    {
        "operation": OPERATION,
        "flops_by_dtype": FLOPS_BY_DTYPE,
        "read_bytes": WORK,
        "write_bytes": WORK,
        "dense_flops": WORK,
    },
    {"flops": WORK, "transcendentals": WORK, "wire_bytes": WORK},
)
SCOPE_COST = record(
    {
        "scope": NAME,
        "kinds": array(NAME),
        "operations": WORK,
        "executions": WORK,
        "flops_by_dtype": FLOPS_BY_DTYPE,
        "read_bytes": WORK,
        "write_bytes": WORK,
        "dense_flops": WORK,
    },
    {"flops": WORK},
)
COVERAGE = record(
    {"total": WORK, "modeled": WORK},
    {
        "free": WORK,
        "unmodeled": array(pair(TEXT, WORK)),
        "static_total": nullable(WORK),
        "unit": NAME,
        "fraction": FRACTION,
    },
)
LOOP_ASSUMPTION = record(
    {"label": NAME, "trip_count": COUNT, "source": choice(LOOP_SOURCES, "a loop-count source")},
    {"scope": nullable(TEXT), "location": nullable(TEXT)},
)
TENSOR = record(
    {"name": NAME, "shape": SHAPE, "dtype": DTYPE, "role": choice(TENSOR_ROLES, "a tensor role")},
    {"shard_shape": SHAPE},
)
ESTIMATE = record(
    {
        "flops_by_dtype": FLOPS_BY_DTYPE,
        "read_bytes": WORK,
        "write_bytes": WORK,
        "coverage": COVERAGE,
        "by_operation": array(OPERATION_COST),
        "by_scope": array(SCOPE_COST),
    },
    {
        "flops": WORK,
        "dense_flops": WORK,
        "transcendentals": WORK,
        "wire_bytes": WORK,
        "compulsory_bytes": nullable(WORK),
        "arithmetic_intensity": nullable(NUMBER),
        "framework": nullable(TEXT),
        "input_shapes": array(pair(TEXT, SHAPE)),
        "loop_assumptions": array(LOOP_ASSUMPTION),
        "boundary": array(TENSOR),
        "notes": array(TEXT),
        "cross_check": CROSS_CHECK,
    },
)
MEASUREMENT = record(
    {"samples_seconds": array(SECONDS, nonempty=True)},
    {
        "warmup_seconds": array(SECONDS),
        "runs": WORK,
        "median_seconds": SECONDS,
        "mean_seconds": SECONDS,
        "stdev_seconds": SECONDS,
        "device": TEXT,
        "device_kind": choice(MEASURED_KINDS, "a device kind"),
        "device_source": TEXT,
        "peak_memory_bytes": nullable(COUNT),
        "allocator": JSON_OBJECT,
        "sync": TEXT,
        "clock": TEXT,
        "compile_seconds": nullable(SECONDS),
    },
)
# The memory hierarchy, nearest first (issue 14); written only when the spec has levels.
MEMORY_LEVEL = record(
    {"name": NAME, "capacity_bytes": POSITIVE_COUNT},
    {
        "bandwidth": nullable(POSITIVE),
        "source": NAME,
        "per_core": BOOL,
        "shared_by": POSITIVE_COUNT,
        "instances": POSITIVE_COUNT,
        "bandwidth_source": nullable(NAME),
    },
)
# The links between devices (issue 16); written only when the spec has some.
INTERCONNECT = record(
    {"name": NAME, "bandwidth": POSITIVE},
    {"latency_seconds": SECONDS, "source": NAME},
)
HARDWARE = record(
    {"name": NAME, "peak_flops": POSITIVE, "memory_bandwidth": POSITIVE},
    {
        "kind": choice(HARDWARE_KINDS, "a hardware kind"),
        "peak_flops_by_dtype": nullable(mapping(POSITIVE, dtype_key)),
        "memory_capacity": nullable(COUNT),
        "source": TEXT,
        "memory_levels": array(MEMORY_LEVEL),
        "interconnects": array(INTERCONNECT),
    },
)
ANALYSIS = nullable(
    record(
        {},
        {
            "bound_seconds": SECONDS,
            "compute_seconds": SECONDS,
            "memory_seconds": SECONDS,
            "compulsory_seconds": nullable(SECONDS),
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
FINDING = record({"code": NAME, "message": TEXT}, {"severity": TEXT, "header": BOOL})
TABLE_ROW = record(
    {"name": TEXT, "kind": TEXT, "executions": WORK, "flops": WORK, "bytes": WORK},
    {"scope": nullable(TEXT), "compute_seconds": SECONDS, "memory_seconds": SECONDS, "share": NUMBER},
)
REPORT_V1 = record(
    {"estimate": ESTIMATE, "measurement": MEASUREMENT, "hardware": HARDWARE},
    {
        "provenance": JSON_OBJECT,
        "analysis": ANALYSIS,
        "findings": array(FINDING),
        "operation_rows": array(TABLE_ROW),
        "scope_rows": array(TABLE_ROW),
    },
)


def validate_v1(data: Mapping[str, Any]) -> None:
    """Raise Invalid at the first field of a version-1 report that is wrong."""
    REPORT_V1(data, "")
    # Version 1 recorded no unmodeled sizes (its work share is unknown): sizes in a file that
    # says version 1 are an edit, not something to half-believe.
    if "unmodeled_work" in data["estimate"]["coverage"]:
        raise Invalid("estimate.coverage.unmodeled_work", "is a version-2 field in a version-1 report")
    if data["estimate"].get("kernels"):  # the same for kernels, which change the bound (an empty list is none)
        raise Invalid("estimate.kernels", "is a version-2 field in a version-1 report")
    if data.get("profile") is not None:  # and for a profile, which gives the rows measured times
        raise Invalid("profile", "is a version-2 field in a version-1 report")
    check_totals_v1(data)


# -- version 2: version 1, the work share of coverage, kernels ---------------------------
# The executed units of the compiled program (``core/kernels.py``); optional, as version-2
# files written before kernels existed have none.
KERNEL = record(
    {
        "name": NAME,
        "operations": array(COUNT),
        "flops_by_dtype": FLOPS_BY_DTYPE,
        "traffic_bytes": WORK,
        "footprint_bytes": WORK,
        "executions": COUNT,
    },
    {
        "scopes": array(NAME),
        "level": nullable(NAME),
        "kind": nullable(NAME),
        "source": nullable(NAME),
        "unmodeled": array(TEXT),
        "compiled_flops_by_dtype": FLOPS_BY_DTYPE,
        "compiled_contraction": nullable(NAME),
        "compiled_traits": array(NAME),
        "reuse": array(record({"bytes": WORK, "written": BOOL}, {"since": nullable(WORK)})),
    },
)
KERNEL_ROW = record(
    {"name": NAME, "executions": WORK, "flops": WORK, "traffic_bytes": WORK, "level": NAME},
    {
        "kind": nullable(TEXT),
        "scopes": array(TEXT),
        "source": nullable(TEXT),
        "operations": WORK,
        "footprint_bytes": nullable(WORK),
        "bandwidth": POSITIVE,
        "compute_seconds": SECONDS,
        "memory_seconds": SECONDS,
        "share": NUMBER,
        "index": nullable(COUNT),
        "unmodeled": array(TEXT),
        "measured_seconds": nullable(SECONDS),
        "events": nullable(COUNT),
    },
)
# Measured time (issue 15): a profiled pass, saved whole; what is derived from it is recomputed.
MEASURED_KERNEL = record({"kernel": COUNT, "seconds": SECONDS, "events": COUNT})
PROFILE_EVENT = record({"kernel": COUNT, "start_seconds": SECONDS, "duration_seconds": SECONDS}, {"thread": COUNT})
PROFILE = record(
    {"runs": POSITIVE_COUNT, "wall_seconds": SECONDS, "kernel_seconds": SECONDS, "source": NAME},
    {
        "outside_seconds": SECONDS,
        "kernels": array(MEASURED_KERNEL),
        "unmatched": array(triple(TEXT, SECONDS, COUNT, "[name, seconds, events]")),
        "notes": array(TEXT),
        "events": array(PROFILE_EVENT),
        "fused": array(array(COUNT)),
    },
)
TIME_COVERAGE = record(
    {
        "fraction": nullable(FRACTION),
        "modeled_seconds": SECONDS,
        "kernel_seconds": SECONDS,
        "unmodeled": array(pair(TEXT, SECONDS)),
        "outside_seconds": SECONDS,
        "wall_seconds": SECONDS,
    },
    {
        "union_seconds": SECONDS,
        "unmatched_seconds": SECONDS,
        "unattributed": array(TEXT),
        "upper_bound": BOOL,
    },
)
MEASURED_ROW = record({}, {"measured_seconds": nullable(SECONDS), "shared": BOOL, "expected_seconds": SECONDS})
# One device's memory in a distributed program (issue 16; ``analysis/memory.py``), derived: type-checked.
MEMORY = record(
    {
        "parameter_bytes": WORK,
        "gradient_bytes": WORK,
        "optimizer_state_bytes": nullable(WORK),
        "devices": POSITIVE_COUNT,
    },
    {
        "training_minimum_bytes": nullable(WORK),
        "input_bytes": WORK,
        "output_bytes": WORK,
        "activation_minimum_peak_bytes": WORK,
        "activation_conservative_peak_bytes": WORK,
        "activation_liveness_peak_bytes": nullable(WORK),
        "measured_peak_bytes": nullable(WORK),
        "training": BOOL,
        "optimizer_state_multiplier": nullable(NUMBER),
        "notes": array(TEXT),
        "findings": array(TEXT),
    },
)
# A distributed program's communication (``analysis/communication.py``), derived: type-checked.
COMMUNICATION = record(
    {"wire_bytes": WORK, "collectives": COUNT},
    {
        "link": nullable(NAME),
        "bandwidth": nullable(NUMBER),
        "latency_seconds": nullable(SECONDS),
        "seconds": nullable(SECONDS),
        "no_overlap_seconds": nullable(SECONDS),
        "overlap_seconds": nullable(SECONDS),
        "share": nullable(FRACTION),
        "measured_seconds": nullable(SECONDS),
        "measured_by": nullable(TEXT),
    },
)
EXPECTED_ROW = record(
    {"name": TEXT, "class": NAME, "executions": WORK, "seconds": SECONDS, "bound_seconds": SECONDS, "basis": NAME},
    {"index": nullable(WORK), "measured_seconds": nullable(SECONDS)},
)
# The expected time from a kernel model (``analysis/expected.py``): stored, since the calibration is not.
EXPECTED = record(
    {"seconds": SECONDS, "kernel_seconds": SECONDS, "rows": array(EXPECTED_ROW)},
    {
        "floor_seconds": nullable(SECONDS),
        "framework": TEXT,
        "median_error": nullable(NUMBER),
        "p90_error": nullable(NUMBER),
        "calibration_date": TEXT,
        "notes": array(TEXT),
        "flags": array(TEXT),
        "first_touch_seconds": nullable(SECONDS),
        "fresh_page_seconds": SECONDS,
        "first_touch_seconds_per_byte": nullable(SECONDS),
        "usual_seconds": nullable(SECONDS),
        "now_seconds": nullable(SECONDS),
        "wake_seconds": nullable(SECONDS),
        "loop_wakes": nullable(pair(SECONDS, SECONDS)),
        "wake_around_seconds": nullable(pair(SECONDS, SECONDS)),
    },
)
REPORT_V2_ADDITIONS = record(
    {
        "estimate": record(
            {
                "coverage": record(
                    {"unmodeled_work": array(triple(NAME, WORK, WORK, "[name, FLOPs, bytes]"))},
                    {"unmodeled_flops": nullable(WORK), "unmodeled_bytes": nullable(WORK)},
                )
            },
            {
                "work_fraction": nullable(FRACTION),
                "kernels": array(KERNEL),
                "kernel_source": nullable(TEXT),
                "compiled_bytes": WORK,
                "devices": POSITIVE_COUNT,
                "global_model_flops": WORK,
            },
        )
    },
    {
        "analysis": nullable(
            record(
                {},
                {
                    "roofline_seconds": SECONDS,
                    "unfused_memory_seconds": SECONDS,
                    "compiled_bytes": WORK,
                    "traffic_by_level": mapping(WORK, NAME),
                    "kernel_notes": array(TEXT),
                    "time_coverage": nullable(TIME_COVERAGE),
                    "memory": nullable(MEMORY),
                    "communication": nullable(COMMUNICATION),
                },
            )
        ),
        "kernel_rows": array(KERNEL_ROW),
        "operation_rows": array(MEASURED_ROW),
        "scope_rows": array(MEASURED_ROW),
        "profile": nullable(PROFILE),
        "profile_notes": array(TEXT),
        "expected": nullable(EXPECTED),
    },
)


def validate_v2(data: Mapping[str, Any]) -> None:
    """Raise Invalid at the first field of a version-2 report that is wrong."""
    REPORT_V1(data, "")
    REPORT_V2_ADDITIONS(data, "")
    check_totals_v2(data)


#: schema_version → its validator (docs/report-schema.md defines each version). Older
#: versions stay, so older reports keep loading.
VALIDATORS: dict[int, Callable[[Mapping[str, Any]], None]] = {1: validate_v1, 2: validate_v2}
