"""The building blocks of the report schema (``validate.py``): leaf checks and combinators.

Each check takes a JSON value and its path and raises ``Invalid`` naming the path and the
problem; combinators build record, array and mapping checks out of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.dtypes import known_dtypes
from .values import MAX_INT64, MAX_NUMBER, MAX_WORK, Check, Invalid, child, json_object, show


# -- leaf checks ------------------------------------------------------------------------
def integer(limit: int, limit_text: str) -> Check:
    def check(value: Any, path: str) -> None:
        if type(value) is not int or value < 0:
            raise Invalid(path, f"{show(value)} must be a non-negative integer")
        if value > limit:
            raise Invalid(path, f"{show(value)} is above {limit_text}")

    return check


#: Executions, trip counts, shape dimensions: what a framework holds in a 64-bit integer.
COUNT = integer(MAX_INT64, "2^63 - 1, the largest count a framework can hold")
#: FLOP and byte counts, and sums of executions.
WORK = integer(MAX_WORK, "10^60, more than any program does")


def POSITIVE_COUNT(value: Any, path: str) -> None:
    COUNT(value, path)
    if value == 0:
        raise Invalid(path, "0 must be a positive integer")


def number(positive: bool = False, at_most: float = MAX_NUMBER) -> Check:
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


NUMBER = number()
SECONDS = NUMBER
POSITIVE = number(positive=True)
FRACTION = number(at_most=1.0)


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


def choice(options: tuple[str, ...], what: str, list_them: bool = True) -> Check:
    allowed = frozenset(options)
    listed = f" ({', '.join(options)})" if list_them else ""

    def check(value: Any, path: str) -> None:
        if type(value) is not str or value not in allowed:
            raise Invalid(path, f"{show(value)} is not {what}{listed}")

    return check


# Canonical names only: the writer canonicalises every dtype, so an alias means an edit.
DTYPE = choice(known_dtypes(), "a dtype name neural-cost knows", list_them=False)


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
def nullable(check: Check) -> Check:
    def nullable(value: Any, path: str) -> None:
        if value is not None:
            check(value, path)

    return nullable


def array(item: Check, nonempty: bool = False) -> Check:
    def array(value: Any, path: str) -> None:
        if type(value) is not list:
            raise Invalid(path, f"{show(value)} must be an array")
        if nonempty and not value:
            raise Invalid(path, "must not be empty")
        for i, element in enumerate(value):
            item(element, f"{path}[{i}]")

    return array


def pair(first: Check, second: Check) -> Check:
    def pair(value: Any, path: str) -> None:
        if type(value) is not list or len(value) != 2:
            raise Invalid(path, f"{show(value)} must be a [name, value] pair")
        first(value[0], f"{path}[0]")
        second(value[1], f"{path}[1]")

    return pair


def triple(first: Check, second: Check, third: Check, what: str) -> Check:
    def triple(value: Any, path: str) -> None:
        if type(value) is not list or len(value) != 3:
            raise Invalid(path, f"{show(value)} must be a {what} triple")
        for i, check in enumerate((first, second, third)):
            check(value[i], f"{path}[{i}]")

    return triple


def mapping(value_check: Check, key_check: Check) -> Check:
    def mapping(value: Any, path: str) -> None:
        if type(value) is not dict:
            raise Invalid(path, f"{show(value)} must be an object")
        for key, item in value.items():
            where = child(path, key)
            key_check(key, where)
            value_check(item, where)

    return mapping


def record(
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


def dtype_key(key: Any, path: str) -> None:
    DTYPE(key, path)


FLOPS_BY_DTYPE = mapping(WORK, dtype_key)
JSON_OBJECT = nullable(json_object)
