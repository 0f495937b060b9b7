"""Reading a saved report back: real records, re-scorable against another device.

``load_report(path)`` needs no framework: the estimate, measurement and hardware are
rebuilt from plain data, and the analysis is recomputed from them (identically, since it is
a pure function of those records); the provenance is the saved one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from ..analysis.gap import SCHEMA, SCHEMA_VERSION, GapReport, analyze_gap
from ..core.attrs import FrozenAttrs
from ..core.errors import SchemaError
from ..core.estimate import CostEstimate
from ..hardware.spec import HardwareSpec
from ..measure.timing import Measurement


def report_from_dict(data: Mapping[str, Any], where: str = "report") -> GapReport:
    if data.get("schema") != SCHEMA:
        raise SchemaError(f"{where}: schema={data.get('schema')!r}, not {SCHEMA!r}; is this a neural-cost report?")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise SchemaError(
            f"{where}: schema_version={data.get('schema_version')!r}; this neural-cost reads version {SCHEMA_VERSION}"
        )
    try:
        estimate = CostEstimate.from_dict(data["estimate"])
        measurement = Measurement.from_dict(data["measurement"])
        hardware = HardwareSpec.from_dict(data["hardware"])
        analysis = data.get("analysis") or {}
        threshold = float(analysis.get("coverage_threshold", 0.9)) if isinstance(analysis, Mapping) else 0.9
    except (KeyError, TypeError, AttributeError, ValueError) as error:
        raise SchemaError(
            f"{where}: a required field is missing or malformed ({type(error).__name__}: {error})"
        ) from error
    report = analyze_gap(estimate, measurement, hardware, coverage_threshold=threshold)
    object.__setattr__(report, "provenance", FrozenAttrs(data.get("provenance") or {}))
    return report


def load_report(path: str | os.PathLike[str]) -> GapReport:
    """The report saved at ``path`` (``report.to_dict()`` / ``--json``), as real objects."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as error:
        raise SchemaError(f"{path}: cannot read ({error.strerror or error})") from error
    except json.JSONDecodeError as error:
        raise SchemaError(f"{path}: not JSON ({error})") from error
    if not isinstance(data, Mapping):
        raise SchemaError(f"{path}: a report is a JSON object, not {type(data).__name__}")
    return report_from_dict(data, str(path))
