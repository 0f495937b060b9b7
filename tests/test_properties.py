"""Property-based tests over every kind ``neural_cost.known_kinds()`` registers (issue 12).

For each kind, Hypothesis draws valid records (``tests/property_cases*``: small shapes, attrs
from the rule's typed signature) and checks that

- the cost is finite, non-negative Python ints (FLOPs per dtype, bytes, transcendentals) and,
  for the main kinds, equal to the closed form the strategy computes on its own;
- a record broken in one field (an unknown attr, an ill-typed attr, a missing required attr,
  a negative or non-integer dim, an output that does not fit) raises the project's error
  (a NeuralCostError) whose message names that field;
- the JSON round trip is exact, types of attribute values included, and gives the same cost
  from a cold cost cache;
- a cache hit never changes validity: an attribute given as 1, 1.0 or True is valid or not by
  its type alone, whichever of the three was built first.

Derandomised (the same cases every run) and bounded: the whole module runs in well under a minute.
"""

from __future__ import annotations

import inspect
import json
import math
from itertools import permutations
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tests.property_cases_misc
import tests.property_cases_more  # noqa: F401  (registers the rest of the strategies)
from neural_cost import NeuralCostError, Operation, RecordError, ShapeError, known_kinds
from neural_cost.core import records
from neural_cost.core.kinds import entry_for
from tests.property_cases import CLOSED_FORM, STRATEGIES, Case

KINDS = sorted(known_kinds())
#: The kinds the issue names for closed forms (each must have one in its strategy).
MAIN_KINDS = {
    "linear", "matmul", "conv", "attention", "elementwise", "reduce", "softmax", "layernorm", "rmsnorm",
    "groupnorm", "batchnorm", "pooling", "gather", "scatter", "sort", "cumulative", "copy", "embedding", "fft",
    "interpolate", "cdist", "decomposition",
}  # fmt: skip
#: Kinds whose output is whatever the caller or the program states, so no output "does not fit":
#: a host callback's results, a collective's (gathered, scattered, exchanged) result,
#: caller-described work, a gather's or copy's (concat, pad) result,
#: generated random values, the factors of a decomposition, gradients asked for by attrs, the
#: reduced values of a tensor list (any shape each), a list op's outputs its operands broadcast to, the
#: gradients (dQ first) a fused attention backward returns. A record with no inputs (a fill)
#: writes whatever shape it states.
FREE_OUTPUT = {
    "callback",
    "collective",
    "custom",
    "gather",
    "copy",
    "rng",
    "decomposition",
    "norm_backward",
    "attention_backward",
    "foreach_reduce",
    "foreach_elementwise",
}
EXAMPLES = settings(
    max_examples=25, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
#: The closed-form comparison is the heart of the module: more cases per kind.
MORE_EXAMPLES = settings(EXAMPLES, max_examples=60)


def case_of(kind: str) -> st.SearchStrategy[Case]:
    return STRATEGIES[kind]()


def declared_attrs(kind: str) -> dict[str, inspect.Parameter]:
    """The rule's typed keyword parameters: the attributes the kind takes."""
    rule = entry_for(kind).rule.__wrapped__  # type: ignore[attr-defined]
    return dict(list(inspect.signature(rule).parameters.items())[1:])


def test_every_kind_has_a_strategy_and_the_main_kinds_a_closed_form():
    assert sorted(STRATEGIES) == KINDS
    assert MAIN_KINDS <= CLOSED_FORM, sorted(MAIN_KINDS - CLOSED_FORM)


def assert_plain_int(value: Any, label: str) -> None:
    assert type(value) is int and value >= 0, f"{label}={value!r} must be a non-negative int"


@pytest.mark.parametrize("kind", KINDS)
@MORE_EXAMPLES
@given(data=st.data())
def test_valid_records_cost_finite_non_negative_ints_equal_to_closed_forms(kind, data):
    case = data.draw(case_of(kind))
    cost = case.build().cost
    for dtype, flops in cost.flops_by_dtype.items():
        assert_plain_int(flops, f"flops[{dtype}]")
    for name in ("read_bytes", "write_bytes", "transcendentals"):
        assert_plain_int(getattr(cost, name), name)
    if cost.dense_flops is not None:
        assert_plain_int(cost.dense_flops, "dense_flops")
    expected = case.expected
    if expected is None:
        return
    got = (cost.flops, cost.transcendentals, cost.read_bytes, cost.write_bytes)
    assert got == (expected.flops, expected.transcendentals, expected.read_bytes, expected.write_bytes), case
    by_dtype = expected.by_dtype or {expected.flops_dtype or case.dtype: expected.flops}
    assert dict(cost.flops_by_dtype) == {d: n for d, n in by_dtype.items() if n}
    if expected.dense_flops is not None:
        assert cost.dense_flops == expected.dense_flops


def raises_naming(case: Case, error: type[Exception], names: tuple[str, ...], **changes: Any) -> None:
    with pytest.raises(NeuralCostError) as caught:
        case.build(**changes)
    assert isinstance(caught.value, error), caught.value
    assert any(name in str(caught.value) for name in names), (names, str(caught.value))


@pytest.mark.parametrize("kind", KINDS)
@EXAMPLES
@given(data=st.data())
def test_invalid_records_raise_the_projects_error_naming_the_field(kind, data):
    case = data.draw(case_of(kind))
    raises_naming(case, RecordError, ("attrs['no_such_attr']",), attrs={**case.attrs, "no_such_attr": 1})
    declared = declared_attrs(kind)
    for name, parameter in declared.items():
        # a mapping is a valid value of no declared attribute but custom's flops (dtype → count)
        bad = {"bad": "value"}
        raises_naming(case, RecordError, (f"attrs[{name!r}]",), attrs={**case.attrs, name: bad})
        if parameter.default is inspect.Parameter.empty:
            missing = {k: v for k, v in case.attrs.items() if k != name}
            raises_naming(case, RecordError, (f"attrs[{name!r}]",), attrs=missing)
    if case.inputs:
        broken = (tuple(-1 if i == 0 else d for i, d in enumerate(case.inputs[0])) or (-1,), *case.inputs[1:])
        raises_naming(case, ShapeError, ("inputs[0]",), inputs=broken)
        raises_naming(case, ShapeError, ("inputs[0]",), inputs=((1.5,), *case.inputs[1:]))
    raises_naming(case, ShapeError, ("output",), output=(*case.output[:-1], -2))
    # One more dim: resampling and padding kinds take any output sizes, never another rank; a
    # kind that checks only its element count (q, k, v split into heads any way) sees 7× as many.
    counts_only = kind == "qkv_bias_rescale" and not math.prod(case.output)
    if kind not in FREE_OUTPUT and case.inputs and not counts_only:
        wrong = (*case.output, 7)
        raises_naming(case, NeuralCostError, ("output", str(wrong)), output=wrong)


@pytest.mark.parametrize("kind", KINDS)
@EXAMPLES
@given(data=st.data())
def test_json_round_trip_is_exact_and_costs_the_same_from_a_cold_cache(kind, data):
    op = data.draw(case_of(kind)).build()
    text = json.dumps(op.to_dict())
    records._COST_MEMO.clear()
    again = Operation.from_dict(json.loads(text))
    assert again == op and again.attrs.typed_key() == op.attrs.typed_key()
    assert json.dumps(again.to_dict()) == text
    assert again.cost == op.cost


def numeric_variants(value: Any) -> list[Any]:
    """1, 1.0 and True for one number: equal in Python, different to a typed attribute."""
    if isinstance(value, bool):
        return [value, int(value), float(value)]
    if isinstance(value, int):
        return [value, float(value)] + ([bool(value)] if value in (0, 1) else [])
    if isinstance(value, float) and value.is_integer():
        return [value, int(value)] + ([bool(value)] if value in (0, 1) else [])
    return []


def valid(op_build: Any) -> bool:
    try:
        op_build()
    except NeuralCostError:
        return False
    return True


@pytest.mark.parametrize("kind", KINDS)
@EXAMPLES
@given(data=st.data())
def test_a_cache_hit_never_changes_validity(kind, data):
    case = data.draw(case_of(kind))
    for name, value in case.attrs.items():
        variants = numeric_variants(value)
        if not variants:
            continue
        builds = [lambda v=v, name=name: case.build(attrs={**case.attrs, name: v}) for v in variants]
        fresh = []
        for build in builds:  # each alone, from a cold cache: the verdict its type alone earns
            records._COST_MEMO.clear()
            fresh.append(valid(build))
        assert fresh[0], f"the drawn value {value!r} of attrs[{name!r}] must be valid"
        for order in permutations(range(len(builds))):
            records._COST_MEMO.clear()
            for index in order:  # every order of building them: a warm cache must agree
                assert valid(builds[index]) == fresh[index], (name, variants[index], order)
