"""Typed cost rules: a rule's keyword-only parameters are the attributes its kind takes.

``def linear(op, *, weight_layout: Literal["in_out", "out_in"] = "in_out")`` declares one
attribute, its type and its default. ``AttrSpec.of`` reads the signature once, when the
rule is registered, and compiles each annotation into a check. ``AttrSpec.check`` runs
when a record is made, before any cached cost is looked up: an unknown attribute or an
ill-typed value (a float or a bool where an int is declared, a string outside a Literal's
values, a tuple of the wrong items, a number below ``Min``) is a RecordError naming the
operation, the attribute, its value and what it must be. The rule is then called with
every declared attribute as a keyword, defaults filled in.

What the annotation cannot say (one value per spatial dim of *this* input, an axis within
*this* rank) the rule still checks against the shapes.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeAlias, TypeVar, Union, get_args, get_origin, get_type_hints

from ..core.dtypes import canonical_dtype
from ..core.errors import DTypeError, RecordError
from ..core.records import Operation


@dataclass(frozen=True, slots=True)
class Min:
    """``Annotated[int, Min(1)]``: numbers below ``value`` are rejected (in tuples too)."""

    value: int


@dataclass(frozen=True, slots=True)
class Expect:
    """``Annotated[T, Expect("...")]``: what an error message says the value must be."""

    text: str


T = TypeVar("T")
NonNegative = Annotated[int, Min(0)]
Positive = Annotated[int, Min(1)]
#: One value for every spatial dim, or one per dim (the rule checks the count).
PerDim: TypeAlias = T | tuple[T, ...]


def where(op: Operation) -> str:
    return f"Operation {op.name!r} ({op.kind})"


@dataclass(frozen=True, slots=True)
class Check:
    """One attribute's test and, for messages, what a passing value looks like."""

    test: Callable[[Any], bool]
    expects: str
    choices: tuple[Any, ...] | None = None  # a Literal's values: the message lists them

    def failure(self, op: Operation, name: str, value: Any) -> RecordError:
        if self.choices is not None:
            listed = ", ".join(str(c) for c in self.choices)
            return RecordError(f"{where(op)} attrs[{name!r}]={value!r}; use one of {listed}")
        return RecordError(f"{where(op)} attrs[{name!r}]={value!r} must be {self.expects}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _at_least(value: Any, minimum: int) -> bool:
    if isinstance(value, tuple):
        return all(_at_least(v, minimum) for v in value)
    return not isinstance(value, (int, float)) or isinstance(value, bool) or value >= minimum


def _with_min(check: Check, minimum: int) -> Check:
    test = check.test
    return Check(lambda v: test(v) and _at_least(v, minimum), f"{check.expects} >= {minimum}")


_SCALARS: dict[Any, Check] = {
    bool: Check(lambda v: isinstance(v, bool), "true or false"),
    int: Check(_is_int, "an integer"),
    float: Check(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number"),
    str: Check(lambda v: isinstance(v, str), "a string"),
    type(None): Check(lambda v: v is None, "None"),
    None: Check(lambda v: v is None, "None"),
    Any: Check(lambda v: True, "any value"),
}


def compile_check(annotation: Any) -> Check:
    """The check for one annotation; a TypeError at registration for one it cannot read."""
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        check = compile_check(args[0])
        for meta in args[1:]:
            if isinstance(meta, Min):
                check = _with_min(check, meta.value)
            elif isinstance(meta, Expect):
                check = Check(check.test, meta.text, check.choices)
        return check
    if origin is Literal:
        values = tuple(args)
        # type() as well as ==: True == 1, and Literal[1] must not admit True.
        return Check(lambda v: any(type(v) is type(c) and v == c for c in values), "", values)
    if origin in (Union, types.UnionType):
        parts = tuple(compile_check(a) for a in args)
        return Check(
            lambda v: any(p.test(v) for p in parts),
            " or ".join(p.expects if p.choices is None else f"one of {p.choices}" for p in parts),
        )
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = compile_check(args[0])
            return Check(lambda v: type(v) is tuple and all(item.test(x) for x in v), f"a tuple, each {item.expects}")
        items = tuple(compile_check(a) for a in args)

        def fixed(v: Any) -> bool:
            return type(v) is tuple and len(v) == len(items) and all(c.test(x) for c, x in zip(items, v, strict=True))

        return Check(
            fixed,
            f"a tuple of {len(items)}: ({', '.join(c.expects for c in items)})",
        )
    if origin is Mapping:
        key, value = (compile_check(a) for a in args)
        return Check(
            lambda v: isinstance(v, Mapping) and all(key.test(k) and value.test(x) for k, x in v.items()),
            f"a mapping of {key.expects} to {value.expects}",
        )
    raise TypeError(f"cannot check an attribute annotated {annotation!r}; use bool, int, float, str, Literal, tuple")


def _is_dtype(value: Any) -> bool:
    try:
        canonical_dtype(value)
    except DTypeError:
        return False
    return True


#: Attributes every kind takes, never passed to a rule: ``op`` names the framework op for
#: readers (a keyword parameter cannot be called ``op``: that is the record's name),
#: ``compute_dtype`` is read by ``Operation.compute_dtype`` for every kind, and ``loop`` and
#: ``source`` tell apart, for readers, records that share a name, and ``function`` groups
#: unscoped records by the user's function that made them (``adapters/_labels.py``); ``recompute``
#: marks activations a training step recomputes, ``phase`` a JAX backward's records (``analysis/utilization.py``).
COMMON_ATTRS: dict[str, Check] = {
    "op": Check(lambda v: isinstance(v, str), "a string (the framework op's name, for readers)"),
    "compute_dtype": Check(_is_dtype, "an element type name such as 'float32' or 'bfloat16'"),
    "loop": Check(lambda v: isinstance(v, str), "a string (the loops the record runs in, for readers)"),
    "source": Check(lambda v: isinstance(v, str), "a string (where the record came from, for readers)"),
    "function": Check(lambda v: isinstance(v, str), "a string (the user's function that made it, for readers)"),
    "recompute": Check(lambda v: v == "true", "'true' (recomputed activations: hardware FLOPs, not model FLOPs)"),
    "phase": Check(lambda v: v in ("forward", "backward", "optimizer"), "'forward', 'backward' or 'optimizer'"),
}


@dataclass(frozen=True, slots=True)
class AttrSpec:
    """The attributes one kind takes, read from its rule's keyword-only parameters."""

    kind: str
    checks: Mapping[str, Check]
    defaults: Mapping[str, Any]
    required: tuple[str, ...]

    @classmethod
    def of(cls, kind: str, rule: Callable[..., Any]) -> AttrSpec:
        hints = get_type_hints(rule, include_extras=True)
        checks: dict[str, Check] = dict(COMMON_ATTRS)
        defaults: dict[str, Any] = {}
        required: list[str] = []
        for name, parameter in list(inspect.signature(rule).parameters.items())[1:]:  # [0] is the record
            if parameter.kind is not inspect.Parameter.KEYWORD_ONLY or name not in hints or name in COMMON_ATTRS:
                raise TypeError(
                    f"cost rule for {kind!r}: parameter {name!r} must be keyword-only (after *), annotated, "
                    f"and not one of the attributes every kind takes ({', '.join(COMMON_ATTRS)})"
                )
            checks[name] = compile_check(hints[name])
            if parameter.default is inspect.Parameter.empty:
                required.append(name)
            else:
                defaults[name] = parameter.default
        return cls(kind, checks, defaults, tuple(required))

    def check(self, op: Operation) -> None:
        """Raise RecordError for a missing, unknown or ill-typed attribute of ``op``."""
        checks = self.checks
        for name, value in op.attrs.items():
            check = checks.get(name)
            if check is None:
                raise RecordError(
                    f"{where(op)} has an unknown attribute attrs[{name!r}]={value!r}; {self.kind} takes "
                    f"{', '.join(checks)}"
                )
            if not check.test(value):
                raise check.failure(op, name, value)
        for name in self.required:
            if name not in op.attrs:
                raise RecordError(f"{where(op)} needs attrs[{name!r}]: {checks[name].expects}")

    def keywords(self, op: Operation) -> dict[str, Any]:
        """Every declared attribute of ``op``, defaults filled in (the common ones left out)."""
        values = dict(self.defaults)
        for name, value in op.attrs.items():
            if name not in COMMON_ATTRS:
                values[name] = value
        return values
