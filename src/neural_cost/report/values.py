"""What the report checks share: the failure they raise, JSON paths, and how a bad value is shown."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

#: Shape dimensions, element counts, executions: every framework holds them in int64.
MAX_INT64 = 2**63 - 1
#: FLOP and byte counts. Int64 shapes and trip counts cannot reach it in practice (a
#: 10^30-FLOP program runs 30,000 years at an exaFLOP/s), and 10^60 is far inside float
#: range (1.8·10^308), so every time derived from a count, and every sum of rows, is finite.
MAX_WORK = 10**60
#: Seconds, FLOP/s, bytes/s and shares: sums and squares of these stay finite floats.
MAX_NUMBER = 1e100

Check = Callable[[Any, str], None]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SHOWN_CHARS = 40
_SHOWN_DIGITS = 24


class Invalid(Exception):
    """A field of a report is wrong: ``path`` is where (``estimate.read_bytes``), ``problem`` why."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def child(path: str, key: Any) -> str:
    """``path.key``, or ``path["key"]`` when the key is not a plain name (escaped: a key may hold
    control characters, and the path ends up on a terminal)."""
    if isinstance(key, str) and _IDENTIFIER.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{show(str(key))}]"


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


def show(value: Any) -> str:
    """``value`` as it would be spelled in the JSON file, shortened and with control characters escaped."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        if abs(value) < 10**_SHOWN_DIGITS:
            return str(value)
        sign = "-" if value < 0 else ""
        if value.bit_length() > 13_000:  # str() of an int refuses past 4,300 digits
            return f"{sign}an integer of more than 3,900 digits"
        return f"{sign}a {len(str(abs(value)))}-digit integer"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, str):
        if len(value) > _SHOWN_CHARS:
            return json.dumps(value[:_SHOWN_CHARS])[:-1] + '..."'
        return json.dumps(value)
    return json_type(value)


def json_object(value: Any, path: str) -> None:
    """A free-form object (provenance, attrs, allocator): any JSON, with finite numbers and
    64-bit integers only. The depth was bounded before parsing, so recursing is safe."""
    if type(value) is not dict:
        raise Invalid(path, f"{show(value)} must be an object")
    json_value(value, path)


def json_value(value: Any, path: str) -> None:
    """Any JSON value, with finite numbers and 64-bit integers only."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            json_value(item, child(path, key))
    elif kind is list:
        for i, item in enumerate(value):
            json_value(item, f"{path}[{i}]")
    elif kind is float:
        if not math.isfinite(value):
            raise Invalid(path, f"{show(value)} must be a finite number")
    elif kind is int:
        if not -MAX_INT64 - 1 <= value <= MAX_INT64:
            raise Invalid(path, f"{show(value)} is outside the 64-bit integer range")
    elif kind not in (str, bool, type(None)):
        raise Invalid(path, f"{show(value)} is not a JSON value")
